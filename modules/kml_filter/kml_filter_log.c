// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's log: a record per packet a logging rule matches, limited
 * per rule, written to a kml_ring an administrator attached.
 *
 * Why not printk: a flood of matching packets would flood the kernel log
 * and the console, and the console is slow enough to stall the CPU that
 * writes to it. A ring is a memory copy, and a full one costs a counter.
 * Why a limiter per rule even so: a record is a dozen times the work of
 * a match, and a reader that cannot keep up learns nothing from a
 * million records. Whatever the limiter holds back is counted, in the
 * namespace's totals and in the next record of the rule, so nobody has to
 * guess what was not written. The limiter is one 64-bit number updated
 * with compare-and-exchange (kml_filter_log_admit()): the hook runs in
 * softirq and, for LOCAL_OUT, in process context, and takes no lock.
 *
 * kml_ring is optional: its two functions are looked up (symbol_get())
 * when a ring is attached, and the one that writes is held while it is,
 * so kml_filter loads without it and kml_ring cannot go under a sink.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <net/sock.h>

#include "../include/kml_ring.h"
#include "kml_filter.h"
#include "kml_filter_logic.h"

struct kml_filter_sink {
	struct file *ring;
	int (*write)(struct file *ring, u32 type, const void *data, u32 len);
};

void kml_filter_log_init(struct kml_filter_log *log, struct mutex *ns_lock)
{
	spin_lock_init(&log->lock);
	log->ns_lock = ns_lock;
	RCU_INIT_POINTER(log->sink, NULL);
}

/*
 * Called for a packet rule @r (at @index) matched, under rcu_read_lock().
 * @packets and @bytes are what the rule counted: a GSO packet is one
 * record (one token) but its segments are counted, in the record and in
 * the totals, so that what is written, held back and lost adds up to the
 * rule's packets.
 */
void kml_filter_log_rule(struct kml_filter_log *log,
			 struct kml_filter_logst *st,
			 const struct kml_filter_rule *r, u32 index,
			 u64 generation, const struct kml_filter_pkt *p,
			 u32 verdict, u64 packets, u64 bytes)
{
	struct kml_filter_log_event ev;
	struct kml_filter_sink *sink;
	u64 now = ktime_get_mono_fast_ns();
	s64 tat = atomic64_read(&st->tat);
	u64 next;

	do {
		if (!kml_filter_log_admit(tat, now, r->log_rate, r->log_burst,
					  &next)) {
			atomic64_add(packets, &st->held);
			atomic64_add(packets, &log->suppressed);
			return;
		}
	} while (!atomic64_try_cmpxchg(&st->tat, &tat, next));

	sink = rcu_dereference(log->sink);
	if (!sink) {
		atomic64_add(packets, &log->lost);
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.rule = index;
	ev.len = min_t(u64, bytes, U32_MAX);
	ev.packets = min_t(u64, packets, U32_MAX);
	ev.suppressed = atomic64_xchg(&st->held, 0);
	ev.generation = generation;
	ev.family = p->family;
	ev.proto = p->proto;
	ev.dir = p->dir;
	ev.verdict = verdict;
	ev.action = r->action;
	ev.ct_state = p->ct;
	ev.has_ports = p->has_ports;
	ev.sport = p->sport;
	ev.dport = p->dport;
	memcpy(ev.src, p->src, sizeof(ev.src));
	memcpy(ev.dst, p->dst, sizeof(ev.dst));
	if (!sink->write(sink->ring, KML_FILTER_REC_LOG, &ev, sizeof(ev))) {
		atomic64_add(packets, &log->records);
		return;
	}
	/* what it carried is told by the rule's next record instead */
	atomic64_add(ev.suppressed, &st->held);
	atomic64_add(packets, &log->lost);
}

/*
 * A rule that stays across an update (its counters are carried over)
 * keeps its limit: the new set's limiter takes the later of the two
 * times and what the old one held back. The new set is published, so
 * the hook may be using @to already: merged, not overwritten. @from is
 * the old set's, which no packet sees any more.
 */
void kml_filter_log_carry(struct kml_filter_logst *to,
			  struct kml_filter_logst *from)
{
	s64 want = atomic64_read(&from->tat);
	s64 cur = atomic64_read(&to->tat);

	while ((u64)want > (u64)cur && !atomic64_try_cmpxchg(&to->tat, &cur, want))
		;
	atomic64_add(atomic64_read(&from->held), &to->held);
}

static void kml_filter_sink_free(struct kml_filter_sink *sink)
{
	fput(sink->ring);
	symbol_put(kml_ring_write_file);
	kfree(sink);
}

/*
 * Attach the ring at descriptor @fd of the calling process, for as long
 * as socket @sk (held meanwhile) is open. One per namespace.
 */
int kml_filter_log_attach(struct kml_filter_log *log, int fd, struct sock *sk)
{
	struct file *(*fget_ring)(int fd);
	struct kml_filter_sink *sink;
	int ret;

	lockdep_assert_held(log->ns_lock);
	kml_filter_log_gone(log);
	if (rcu_access_pointer(log->sink))
		return -EBUSY;
	sink = kzalloc(sizeof(*sink), GFP_KERNEL_ACCOUNT);
	if (!sink)
		return -ENOMEM;
	/*
	 * A process with a ring open has kml_ring.ko loaded: no
	 * request_module(). Holding the first symbol holds its module, so
	 * the second, of the same module, is there too.
	 */
	fget_ring = symbol_get(kml_ring_fget);
	if (!fget_ring) {
		kfree(sink);
		return -ENODEV;
	}
	sink->write = symbol_get(kml_ring_write_file);
	sink->ring = fget_ring(fd);
	symbol_put(kml_ring_fget);
	if (IS_ERR(sink->ring)) {
		ret = PTR_ERR(sink->ring);
		symbol_put(kml_ring_write_file);
		kfree(sink);
		return ret;
	}
	sock_hold(sk);
	spin_lock(&log->lock);
	log->owner = sk;
	spin_unlock(&log->lock);
	rcu_assign_pointer(log->sink, sink);
	return 0;
}

/* Stop writing to the ring; it is let go after the hooks done with it. */
int kml_filter_log_detach(struct kml_filter_log *log)
{
	struct kml_filter_sink *sink;
	struct sock *owner;

	sink = rcu_replace_pointer(log->sink, NULL,
				   lockdep_is_held(log->ns_lock));
	if (!sink)
		return -ENOENT;
	spin_lock(&log->lock);
	owner = log->owner;
	log->owner = NULL;
	spin_unlock(&log->lock);
	sock_put(owner);
	/* fput() may sleep-free; after a grace period, from process context */
	synchronize_rcu();
	kml_filter_sink_free(sink);
	return 0;
}

/* Detach if the socket that attached the ring has been closed. */
void kml_filter_log_gone(struct kml_filter_log *log)
{
	lockdep_assert_held(log->ns_lock);
	if (rcu_access_pointer(log->sink) && sock_flag(log->owner, SOCK_DEAD))
		kml_filter_log_detach(log);
}

/* From the netlink close notifier: must the log be detached? No waiting. */
bool kml_filter_log_closing(struct kml_filter_log *log)
{
	bool dead;

	spin_lock(&log->lock);
	dead = log->owner && sock_flag(log->owner, SOCK_DEAD);
	spin_unlock(&log->lock);
	return dead;
}

/*
 * Logging, kept out of the lesson's way: only a set with a logging rule
 * comes here. First the log-only rules before the one that decided (in
 * order, as nftables' log statements would run), each counted as a
 * match, then the deciding rule if it logs. @idx is the rule that
 * decided, or a policy's slot (>= nrules).
 */
void kml_filter_log_match(struct net *net, const struct kml_filter_set *set,
			  const struct kml_filter_pkt *p, u32 idx,
			  u32 verdict, u64 packets, u64 bytes)
{
	struct kml_filter_log *log = &kml_filter_pernet(net)->log;
	const struct kml_filter_index *ix = &set->ix;
	u32 best = min(idx, set->nrules), i;
	struct kml_filter_ctr *c;

	for (i = kml_filter_tap(ix, ix->taps, p, best); i < best;
	     i = kml_filter_tap(ix, ix->next[i], p, best)) {
		c = &set->ctr[get_cpu()][i];
		local64_add(packets, &c->packets);
		local64_add(bytes, &c->bytes);
		put_cpu();
		kml_filter_log_rule(log, &set->logst[i], &set->rules[i], i,
				    set->generation, p, verdict, packets, bytes);
	}
	if (idx < set->nrules && set->rules[idx].log_rate)
		kml_filter_log_rule(log, &set->logst[idx], &set->rules[idx],
				    idx, set->generation, p, verdict, packets,
				    bytes);
}
