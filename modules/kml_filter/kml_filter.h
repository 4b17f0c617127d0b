/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_filter's own header: the rule set and a namespace's state, which
 * kml_filter_main.c (the hook, the lab's file) publishes and reads, and
 * what each of the module's files offers the others. The ioctls
 * (kml_filter_ctl.c) and the generic netlink family (kml_filter_nl.c)
 * come down to the same calls, so the two can never disagree about what
 * a change means.
 */
#ifndef KML_FILTER_H
#define KML_FILTER_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <asm/local64.h>
#include "../../uapi/linux/kml_filter.h"
#include "kml_filter_logic.h"

struct file;
struct net;
struct nf_hook_state;
struct sk_buff;
struct sock;
struct kml_filter_net;
struct kml_filter_set;

struct kml_filter_net *kml_filter_pernet(const struct net *net);

/**
 * struct kml_filter_state - a namespace's filter at one moment
 * @info: what KML_FILTER_IOC_GET_INFO reports (its policy is the in/out one)
 * @mem_bytes: bytes its sets take, the current one and any being built
 * @mem_limit: what they may take (net_mem_max)
 * @policy_fwd: the forward hook's policy
 * @policy_fwd_packets: forwarded packets it decided
 * @policy_fwd_bytes: their bytes
 * @log_attached: a ring takes the log
 * @log_records: log records written
 * @log_suppressed: held back by the rules' limits
 * @log_lost: within the limits, but no ring took them
 */
struct kml_filter_state {
	struct kml_filter_info info;
	u64 mem_bytes;
	u64 mem_limit;
	u32 policy_fwd;
	u64 policy_fwd_packets;
	u64 policy_fwd_bytes;
	bool log_attached;
	u64 log_records;
	u64 log_suppressed;
	u64 log_lost;
};

void kml_filter_get_state(struct kml_filter_net *fn,
			  struct kml_filter_state *st);
int kml_filter_insert(struct kml_filter_net *fn,
		      const struct kml_filter_rule *rule, u32 position);
int kml_filter_delete(struct kml_filter_net *fn,
		      const struct kml_filter_rule *match, u32 index);
int kml_filter_flush(struct kml_filter_net *fn);
int kml_filter_set_policy(struct kml_filter_net *fn, u32 policy,
			  u32 policy_fwd);
void kml_filter_rejected(void);

/*
 * Calls @emit for each rule from @from on, with its counters and the
 * generation the set belongs to, all under the namespace's lock (one
 * generation per call), until @emit returns non-zero; then sets @nrules
 * and @generation to the set's. The counters are the rule's in all, or
 * what possible CPU @cpu counted in this generation if @cpu >= 0.
 * Return: the index of the first rule not emitted.
 */
u32 kml_filter_walk(struct kml_filter_net *fn, u32 from, int cpu,
		    int (*emit)(void *arg, u32 index,
				const struct kml_filter_entry *e, u64 generation),
		    void *arg, u32 *nrules, u64 *generation);

/* @nrules at most KML_FILTER_MAX_RULES, policies 0 or valid: the caller checks */
int kml_filter_stage_begin(struct kml_filter_net *fn, struct sock *sk,
			   u32 nrules, u32 policy, u32 policy_fwd, u32 *id);
int kml_filter_stage_rules(struct kml_filter_net *fn, struct sock *sk, u32 id,
			   const struct kml_filter_rule *rules, u32 n);
int kml_filter_stage_commit(struct kml_filter_net *fn, struct sock *sk, u32 id);
int kml_filter_stage_abort(struct kml_filter_net *fn, struct sock *sk, u32 id);
void kml_filter_stage_release(struct kml_filter_net *fn);

/* ---- logging (kml_filter_log.c) ---- */

/* A logging rule's limiter (kml_filter_log_admit()), one per rule of a set. */
struct kml_filter_logst {
	atomic64_t tat;		/* when its bucket is next full, ns */
	atomic64_t held;	/* records held back since its last one */
};

struct kml_filter_sink;

/**
 * struct kml_filter_log - a namespace's log
 * @sink: where records go (a kml_ring), or NULL; read by the hook under RCU
 * @ns_lock: the namespace's lock, which attach, detach and gone need held
 * @owner: the netlink socket that attached it, held; changed under @lock
 *	and the namespace's lock, read by the netlink close notifier
 * @lock: for @owner
 * @records: packets in records written (a GSO packet: its segments)
 * @suppressed: packets the rules' limits kept out of the log
 * @lost: packets within the limits that no ring took
 */
struct kml_filter_log {
	struct kml_filter_sink __rcu *sink;
	struct mutex *ns_lock;	/* the namespace's: changes hold it */
	struct sock *owner;
	spinlock_t lock;	/* for @owner, as the notifier reads it */
	atomic64_t records;
	atomic64_t suppressed;
	atomic64_t lost;
};

void kml_filter_log_init(struct kml_filter_log *log, struct mutex *ns_lock);
void kml_filter_log_rule(struct kml_filter_log *log,
			 struct kml_filter_logst *st,
			 const struct kml_filter_rule *r, u32 index,
			 u64 generation, const struct kml_filter_pkt *p,
			 u32 verdict, u64 packets, u64 bytes);
void kml_filter_log_carry(struct kml_filter_logst *to,
			  struct kml_filter_logst *from);
/* the namespace's lock held, for these four */
int kml_filter_log_attach(struct kml_filter_log *log, int fd, struct sock *sk);
int kml_filter_log_detach(struct kml_filter_log *log);
void kml_filter_log_gone(struct kml_filter_log *log);
bool kml_filter_log_closing(struct kml_filter_log *log);

/* the netlink commands' way in: they take the namespace's lock */
int kml_filter_log_start(struct kml_filter_net *fn, int fd, struct sock *sk);
int kml_filter_log_stop(struct kml_filter_net *fn);

int kml_filter_nl_init(void);
void kml_filter_nl_exit(void);

/* ---- the rule set and a namespace's state ---- */

/* Sized per CPU by hand: one __alloc_percpu() stops at 32 KiB, 2048 rules. */
struct kml_filter_ctr {
	local64_t packets;
	local64_t bytes;
};

struct kml_filter_count {
	u64 packets;
	u64 bytes;
};

/*
 * One immutable rule set. @policy decides the in and out packets no rule
 * matched, @policy_fwd the forwarded ones; counter slots nrules and
 * nrules + 1 are theirs (kml_filter_policy_slot()). @base holds counts
 * carried over from earlier sets; only updaters touch it, under the
 * namespace's lock. @logst are the logging rules' limiters (one slot per
 * rule, so that the hook finds a rule's at its index).
 */
struct kml_filter_set {
	u32 nrules;
	u32 policy;
	u32 policy_fwd;
	struct kml_filter_rule *rules;
	void *ixmem;
	struct kml_filter_ctr **ctr;
	struct kml_filter_count *base;
	struct kml_filter_logst *logst;
	u64 generation;
	struct kml_filter_index ix;
};

/*
 * A replace sent in parts (netlink: one message cannot hold 65536
 * rules): the set it builds, allocated and reserved when it begins.
 */
struct kml_filter_txn {
	u32 id;
	struct sock *sk;	/* the socket that began it, held */
	u32 policy;		/* 0: keep the current one */
	u32 policy_fwd;		/* the forward hook's; 0: keep it */
	u32 have;		/* rules received so far, of set->nrules */
	u64 generation;		/* the namespace's when it began */
	struct kml_filter_set *set;
};

struct kml_filter_net {
	struct kml_filter_set __rcu *set;
	struct mutex lock;	/* serialises updates; protects the rest */
	struct net *net;	/* whose this is (it lives as long) */
	bool ct_held;		/* conntrack taken for the namespace */
	u64 generation;
	u64 building;		/* bytes of sets being built, not yet published */
	struct kml_filter_txn *txn;	/* a replace in parts, or NULL */
	spinlock_t txn_lock;	/* with lock, for changes of txn */
	struct work_struct reap;	/* ends a closed socket's replace or log */
	u32 txn_seq;
	struct kml_filter_log log;
};

/* How a new set's counters follow from the old one's. */
enum kml_filter_carry {
	KML_CARRY_NONE,		/* replace: new rules start at zero */
	KML_CARRY_ALL,		/* same rules (policy change) */
	KML_CARRY_INSERT,	/* one rule inserted at @at */
	KML_CARRY_DELETE,	/* the rule at @at deleted */
};

enum {
	ST_PACKETS_IN,
	ST_PACKETS_OUT,
	ST_ACCEPTED,
	ST_DROPPED,
	ST_UPDATES,
	ST_REJECTED,
	ST_MALFORMED,
	ST_FRAGMENTS_PASSED,
	ST_PACKETS_FWD,
	KML_FILTER_NR_STATS
};

/*
 * The hook counts every packet twice in kml_stats (seen, and its
 * verdict): the counters' per-CPU slots are looked up once, at load
 * (kml_filter_stats_init()), so that each count is one inline
 * this_cpu_add() rather than a call into kml_stats and its checks.
 */
extern u64 __percpu *kml_filter_slot[KML_FILTER_NR_STATS];

static inline void kml_filter_count(unsigned int id, u64 n)
{
	this_cpu_add(*kml_filter_slot[id], n); /* LCOV_EXCL_BR_LINE: compile-time switch */
}

static inline struct kml_filter_set *kml_filter_current(struct kml_filter_net *fn)
{
	return rcu_dereference_protected(fn->set, lockdep_is_held(&fn->lock));
}

/* kml_filter_main.c: the mechanism the lab teaches */
struct kml_filter_count kml_filter_sum(const struct kml_filter_set *set,
				       u32 idx);
void kml_filter_commit(struct kml_filter_net *fn, struct kml_filter_set *set,
		       enum kml_filter_carry carry, u32 at);
bool kml_filter_capable(struct file *file);

/* kml_filter_set.c: a set's memory, and net_mem_max */
struct kml_filter_set *kml_filter_set_alloc(u32 nrules);
void kml_filter_set_build(struct kml_filter_set *set, u32 policy,
			  u32 policy_fwd);
void kml_filter_set_free(struct kml_filter_set *set);
u64 kml_filter_bytes(u32 nrules);
unsigned long kml_filter_mem_limit(void);
int kml_filter_reserve(struct kml_filter_net *fn, u32 nrules);
void kml_filter_unreserve(struct kml_filter_net *fn, u32 nrules);
u32 kml_filter_old_index(enum kml_filter_carry carry, u32 at, u32 i);
void kml_filter_log_seed(struct kml_filter_net *fn, struct kml_filter_set *set,
			 enum kml_filter_carry carry, u32 at);

/* kml_filter_pkt.c: reading a packet (@p->dir set), and conntrack */
u32 kml_filter_parse(const struct sk_buff *skb,
		     const struct nf_hook_state *state,
		     const struct kml_filter_set *set, struct kml_filter_pkt *p);
int kml_filter_ct_get(struct net *net);
void kml_filter_ct_put(struct net *net);
void kml_filter_ct_exit(void);
u8 kml_filter_ct_state(const struct sk_buff *skb);

/* kml_filter_ctl.c: the device, the changes, the counters' registration */
int kml_filter_publish(struct kml_filter_net *fn, struct kml_filter_set *set,
		       enum kml_filter_carry carry, u32 at);
int kml_filter_stats_init(void);
void kml_filter_stats_exit(void);
int kml_filter_dev_init(void);
void kml_filter_dev_exit(void);

/* kml_filter_stage.c: a replace in parts */
void kml_filter_txn_gone(struct kml_filter_net *fn);
void kml_filter_txn_free(struct kml_filter_txn *txn);
void kml_filter_txn_reap(struct work_struct *work);

/* kml_filter_log.c: a matching packet's records */
void kml_filter_log_match(struct net *net, const struct kml_filter_set *set,
			  const struct kml_filter_pkt *p, u32 idx,
			  u32 verdict, u64 packets, u64 bytes);

#endif /* KML_FILTER_H */
