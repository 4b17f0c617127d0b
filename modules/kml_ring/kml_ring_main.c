// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring - a kernel-to-user ring buffer shared through mmap.
 *
 * The mechanism taught here is zero-copy hand-off: the kernel writes
 * records straight into pages that are also mapped into the consumer's
 * address space, and the two sides coordinate through two counters on a
 * shared control page, as perf does with data_head/data_tail. The
 * producer publishes a record with a store-release of head; the consumer
 * reads head with a load-acquire, reads the records, and frees the space
 * with a store-release of tail, which the producer reads with a
 * load-acquire before reusing it. No lock is shared with userspace, and
 * no system call is needed per record.
 *
 * Writers on the kernel side take the ring's wlock, with interrupts off
 * because other modules may write from interrupts (kml_ring_write()). A
 * record is reserved under the lock, filled, and committed under the
 * lock; head only moves when no reserved record is still being filled,
 * so a consumer never sees a half-written record. The built-in producer
 * fills its (up to 64 KiB) samples between the two, with interrupts on.
 * A writer in a probe handler (kml_ring_write_file()) may have
 * interrupted a write section on its own CPU: it gives its record up,
 * counted, rather than wait for a lock that will never be let go.
 *
 * Wakeups are the other cost. poll() reports readable only once a
 * watermark of bytes is waiting; a sleeper arms the ring when it checks,
 * and a writer wakes the queue only when it is armed and the level is
 * reached (or when a read() is blocked, which wants any record). Both
 * checks run under wlock, which orders them: either the writer sees the
 * sleeper, or the sleeper sees the record. A busy consumer that never
 * sleeps costs no wakeups at all. read() on the same file copies records
 * out instead, for comparison.
 *
 * Each open file has its own ring. The data pages are mapped read-only;
 * only the control page is writable, and the kernel never trusts what it
 * reads there beyond clamping tail into range.
 *
 * Any user may open the device, so what a user can make it do is bounded:
 * ring memory is charged to the opener's memory cgroup and counted
 * against a per-user budget (user_pages, which the opener's CAP_IPC_LOCK
 * lifts, as RLIMIT_MEMLOCK is for perf's rings) and a module-wide one
 * (max_pages), -ENOSPC beyond either. A quarter of max_pages is kept for
 * openers with CAP_IPC_LOCK, so however many users fill the rest, root's
 * rings (kml-probe record, the filter's log) still get their pages; and
 * the uids of a user namespace are charged to the user who made it, so a
 * range of subordinate uids is one user. The built-in producer, a kernel
 * thread that can spin on any CPU outside the caller's cgroup, is a test
 * and benchmark feature reserved to CAP_SYS_ADMIN; read() copies
 * straight from the ring with no bounce buffer; and interrupts are off
 * for at most one record's copy (64 KiB) per ring.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "../include/kml_compat.h"
#include "../include/kml_ioctl.h"
#include "../include/kml_ring.h"
#include "../include/kml_stats.h"
#include "kml_ring_logic.h"
#include "kml_ring_trace.h"

static unsigned int max_pages = 16384;
module_param(max_pages, uint, 0644);
MODULE_PARM_DESC(max_pages,
		 "pages all rings together may use, control pages included (default 16384)");

static unsigned int user_pages = 4096;
module_param(user_pages, uint, 0644);
MODULE_PARM_DESC(user_pages,
		 "pages one user's rings may use, unless CAP_IPC_LOCK (default 4096)");

static atomic_t kml_ring_ids = ATOMIC_INIT(0);

/* Pages allocated to rings now; at most max_pages. */
static atomic_long_t kml_pages_used = ATOMIC_LONG_INIT(0);

/* Pages each user's rings hold, indexed by uid (xa_mk_value() counts). */
static DEFINE_XARRAY(kml_user_used);
static DEFINE_MUTEX(kml_user_lock);

/* Closed rings are freed here, after a grace period (see release). */
static struct workqueue_struct *kml_ring_wq;

enum { ST_RECORDS, ST_BYTES, ST_LOST, ST_WAKEUPS, ST_READS, ST_MMAPS };

static const struct kml_stats_desc kml_ring_stats_desc[] = {
	[ST_RECORDS]	= { "records", KML_STAT_COUNTER },
	[ST_BYTES]	= { "bytes", KML_STAT_COUNTER },
	[ST_LOST]	= { "lost", KML_STAT_COUNTER },
	[ST_WAKEUPS]	= { "wakeups", KML_STAT_COUNTER },
	[ST_READS]	= { "read_calls", KML_STAT_COUNTER },
	[ST_MMAPS]	= { "mmaps", KML_STAT_COUNTER },
};

static struct kml_stats_set *kml_ring_stats;

struct kml_ring {
	struct list_head node;		/* on kml_rings once sized (RCU) */
	bool listed;
	/*
	 * Lock order: read_lock, then mmap_lock (user copies), then lock,
	 * then wlock. mmap() runs under mmap_lock and takes lock, so nothing
	 * may touch user memory while holding lock. read() copies straight
	 * from the data area holding only read_lock, so SET_SIZE takes
	 * read_lock too before it swaps the area.
	 */
	struct mutex read_lock;		/* read() and SET_SIZE */
	struct mutex lock;		/* mappings, producer, watermark */
	/*
	 * wlock guards the fields from pages to poll_armed; it is taken
	 * with interrupts off (kml_ring_write() may run in an IRQ), and it
	 * is a raw spinlock because probe handlers take it (through
	 * kml_ring_write_file()) in any context, NMIs and other raw
	 * spinlocks' sections included, where a sleeping lock (what
	 * spinlock_t is on PREEMPT_RT) may not be taken.
	 * pages, data, ctrl and size change only under read_lock, lock and
	 * wlock together, so holding any one keeps them stable.
	 */
	raw_spinlock_t wlock;
	struct page **pages;		/* [0] control, [1..npages] data */
	unsigned int npages;
	struct kml_ring_ctrl *ctrl;
	u8 *data;			/* vmap of the data pages */
	u64 size;			/* 0 until sized */
	u64 head;			/* published: read() loads it locklessly */
	u64 resv;			/* end of the reserved records */
	unsigned int filling;		/* reserved records not committed yet */
	u64 lost;
	u64 produced;			/* records reserved, lost ones excluded */
	u64 watermark;			/* 1..size/2 once sized */
	bool poll_armed;		/* a poller wants the watermark */
	atomic_t read_waiters;		/* read() calls sleeping for a record */
	wait_queue_head_t wq;
	atomic_t mapped;		/* live vmas of this ring */
	struct task_struct *producer;	/* under lock */
	struct kml_ring_produce prod;	/* set before the producer starts */
	void *trace_rec;		/* KML_RING_PRODUCE_TRACE's record, likewise */
	kuid_t uid;			/* charged for the pages (kml_charged()) */
	bool unlimited;			/* the opener had CAP_IPC_LOCK */
	u32 id;				/* in open order, for the tracepoints */
	struct irq_work wake_work;	/* kml_ring_write_file()'s wake-ups */
	struct rcu_work free_work;
};

/*
 * How many ring write sections (wlock) this CPU is inside. A recorder
 * writes from kprobe handlers (kml_ring_write_file()), and a handler can
 * run in the middle of a section: a probe on a function called under
 * wlock, or an NMI. Spinning there on a lock its own CPU holds would
 * never end, so every holder marks its CPU before it takes the lock and
 * the recorder, finding the mark, drops its record (counted) instead.
 */
static DEFINE_PER_CPU(unsigned int, kml_wlock_depth);

static void kml_wlock(struct kml_ring *r, unsigned long *flags)
	__acquires(&r->wlock)
{
	local_irq_save(*flags);
	this_cpu_inc(kml_wlock_depth);
	raw_spin_lock(&r->wlock);
}

static void kml_wunlock(struct kml_ring *r, unsigned long flags)
	__releases(&r->wlock)
{
	raw_spin_unlock(&r->wlock);
	this_cpu_dec(kml_wlock_depth);
	local_irq_restore(flags);
}

/*
 * Every sized ring, for kml_ring_write(): walked under RCU, changed under
 * the mutex. Only sized rings are listed, and each costs at least two
 * pages of the budget, so the walk is bounded by max_pages / 2 rings.
 */
static DEFINE_MUTEX(kml_rings_mutex);
static LIST_HEAD(kml_rings);

/*
 * Takes @n pages from the module-wide budget: 0 or -ENOSPC. Only an
 * @unlimited opener may use its last quarter.
 */
static int kml_budget_take(unsigned long n, bool unlimited)
{
	unsigned long max = READ_ONCE(max_pages);
	long used = atomic_long_read(&kml_pages_used);

	if (!unlimited)
		max -= max / 4;

	do {
		if (n > max || used > max - n)
			return -ENOSPC;
	} while (!atomic_long_try_cmpxchg(&kml_pages_used, &used, used + n));
	return 0;
}

static void kml_budget_give(unsigned long n)
{
	atomic_long_sub(n, &kml_pages_used);
}

/*
 * Whom @cred's rings are charged to: its uid, or, inside a user namespace
 * a user made, that user. Each uid a namespace maps is a kuid of its own,
 * and one user may map a whole range of them. Namespaces root made (a
 * container runtime's) keep each uid apart: charging them all to root
 * would let one container's user take every other's budget.
 */
static kuid_t kml_charged(const struct cred *cred)
{
	const struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return uid_eq(ns->owner, GLOBAL_ROOT_UID) ? cred->uid : ns->owner;
}

/*
 * Charges @n pages to @uid: 0, or -ENOSPC past user_pages unless
 * @unlimited. Always counted, so giving back is the same either way.
 */
static int kml_user_take(kuid_t uid, unsigned long n, bool unlimited)
{
	unsigned long idx = from_kuid(&init_user_ns, uid), used, max;
	void *old;
	int ret;

	mutex_lock(&kml_user_lock);
	old = xa_load(&kml_user_used, idx);
	used = old ? xa_to_value(old) : 0;
	max = READ_ONCE(user_pages);
	if (!unlimited && (n > max || used > max - n))
		ret = -ENOSPC;
	else
		ret = xa_err(xa_store(&kml_user_used, idx, xa_mk_value(used + n),
				      GFP_KERNEL_ACCOUNT));
	mutex_unlock(&kml_user_lock);
	return ret;
}

static void kml_user_give(kuid_t uid, unsigned long n)
{
	unsigned long idx = from_kuid(&init_user_ns, uid), used;

	mutex_lock(&kml_user_lock);
	used = xa_to_value(xa_load(&kml_user_used, idx)) - n;
	if (used)
		/* The entry exists: replacing it allocates nothing. */
		xa_store(&kml_user_used, idx, xa_mk_value(used), GFP_KERNEL);
	else
		xa_erase(&kml_user_used, idx);
	mutex_unlock(&kml_user_lock);
}

static void kml_ring_free_pages(struct page **pages, unsigned int n, void *data)
{
	unsigned int i;

	if (data)
		vunmap(data);
	/* Mappings hold their own references: pages outlive us if mapped. */
	for (i = 0; pages && i < n; i++)
		__free_page(pages[i]);
	kfree(pages);
}

/*
 * The consumer's tail, made safe: never past what is published, and
 * never so far behind that the reserved records would not fit.
 */
static u64 kml_tail_locked(struct kml_ring *r)
{
	/* Pairs with the consumer's store-release: it is done with the space. */
	u64 tail = smp_load_acquire(&r->ctrl->tail);

	lockdep_assert_held(&r->wlock);
	tail = kml_ring_clamp_tail(r->resv, tail, r->size);
	return min(tail, r->head);
}

/*
 * Reserve @need bytes (header included) and return the record, or NULL
 * (counted as lost) if the ring is full. Caller holds wlock and must
 * kml_publish_locked() after filling it. The PAD record and the header are
 * written here; head moves only at publication, so nobody ever sees the
 * padding without the record after it.
 */
static struct kml_ring_rec *kml_reserve_locked(struct kml_ring *r, u32 type,
					       u32 need)
{
	struct kml_ring_rec *rec;
	u32 pad;

	lockdep_assert_held(&r->wlock);
	if (kml_ring_place(r->resv, kml_tail_locked(r), r->size, need, &pad)) {
		r->lost++;
		WRITE_ONCE(r->ctrl->lost, r->lost);
		trace_record_lost(r->id, type, need, r->lost);
		kml_stats_inc(kml_ring_stats, ST_LOST);
		return NULL;
	}
	if (pad) {
		rec = (void *)(r->data + (r->resv & (r->size - 1)));
		rec->type = KML_RING_REC_PAD;
		rec->size = pad;
		r->resv += pad;
	}
	rec = (void *)(r->data + (r->resv & (r->size - 1)));
	rec->type = type;
	rec->size = need;
	/* The NMI-safe reading of CLOCK_MONOTONIC: writers may be probes. */
	rec->timestamp_ns = ktime_get_mono_fast_ns();
	r->resv += need;
	r->produced++;
	kml_stats_inc(kml_ring_stats, ST_RECORDS);
	kml_stats_add(kml_ring_stats, ST_BYTES, need);
	return rec;
}

/* Publish every reserved record, unless one is still being filled. */
static void kml_publish_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->wlock);
	/* LAB ring 3: nothing while a reserved record is still being filled
	 * (filling); else move head to resv with smp_store_release(), both
	 * the kernel's copy (read() loads it) and the consumer's in the
	 * control page, so that whoever load-acquires the new head also sees
	 * the records written before it; then show produced there too
	 */
	if (r->filling)
		return;
	/* Pairs with read()'s load-acquire of the kernel's head. */
	smp_store_release(&r->head, r->resv);
	/* Pairs with the consumer's load-acquire: the records are written. */
	smp_store_release(&r->ctrl->head, r->resv);
	WRITE_ONCE(r->ctrl->produced, r->produced);
	/* LAB ring 3 end */
}

/*
 * Should a writer that just published wake the queue? Sleepers announce
 * what they wait for under wlock, after queueing and before sleeping
 * (kml_ring_poll(), kml_readable()), and we decide under wlock too, so
 * either we see the announcement or they saw our record. A blocked read()
 * wants any record; a poller wants the watermark, and is woken once per
 * poll() that armed the ring, however many records land meanwhile. A
 * sleeper the watermark crossing missed is woken by the next record.
 */
static bool kml_need_wake_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->wlock);
	/* LAB ring 4: wake nobody unless someone is on the queue
	 * (waitqueue_active()); always for a blocked read() (read_waiters);
	 * for an armed poller only once the watermark's bytes wait between
	 * head and kml_tail_locked(), disarming it
	 */
	/* No barrier needed: sleepers queue before they take wlock to check. */
	if (!waitqueue_active(&r->wq))
		return false;
	if (atomic_read(&r->read_waiters))
		return true;
	if (r->poll_armed && r->head - kml_tail_locked(r) >= r->watermark) {
		r->poll_armed = false;
		return true;
	}
	return false;
	/* LAB ring 4 end: return true; */
}

static void kml_wake(struct kml_ring *r)
{
	kml_stats_inc(kml_ring_stats, ST_WAKEUPS);
	trace_wakeup(r->id, READ_ONCE(r->head), atomic_read(&r->read_waiters));
	wake_up_interruptible(&r->wq);
}

/**
 * kml_ring_write() - write a record to every sized ring
 * @type: record type, at least %KML_RING_REC_USER_BASE
 * @data: payload
 * @len: payload bytes; the record is padded to a multiple of 8
 *
 * Each ring is written under its own lock with interrupts off for one
 * copy of at most %KML_RING_MAX_PAYLOAD bytes (and at most a quarter of
 * that ring); rings too small for the record are skipped. The cost of a
 * call grows with the number of rings, which the page budgets bound: it
 * is a walk of up to max_pages / 2 rings in one RCU read section, too
 * long for hard interrupt context. Every ring gets every record, and any
 * user may open a ring: write nothing a user may not see.
 *
 * Context: process or softirq context; not hardirq, not NMI, and not
 * from a probe on anything this function calls (it would spin on the
 * ring lock it already holds).
 * Return: number of rings written to (full rings count the record lost),
 * or -EINVAL for a reserved type or a payload over %KML_RING_MAX_PAYLOAD.
 */
int kml_ring_write(u32 type, const void *data, u32 len)
{
	u32 need = kml_ring_align(sizeof(struct kml_ring_rec) + len);
	struct kml_ring_rec *rec;
	unsigned long flags;
	struct kml_ring *r;
	int n = 0;

	if (type < KML_RING_REC_USER_BASE || len > KML_RING_MAX_PAYLOAD)
		return -EINVAL;
	rcu_read_lock();
	list_for_each_entry_rcu(r, &kml_rings, node) {
		bool wake = false;

		kml_wlock(r, &flags);
		if (need <= r->size / 4) {
			rec = kml_reserve_locked(r, type, need);
			if (rec) {
				memcpy(rec + 1, data, len);
				memset((u8 *)(rec + 1) + len, 0,
				       need - sizeof(*rec) - len);
				kml_publish_locked(r);
				n++;
			}
			wake = kml_need_wake_locked(r);
		}
		kml_wunlock(r, flags);
		/* The ring outlives the RCU read section: see release. */
		if (wake)
			kml_wake(r);
	}
	rcu_read_unlock();
	return n;
}
EXPORT_SYMBOL_GPL(kml_ring_write);

/* ---- one ring, named by its file: the recorder's way in ---- */

static const struct file_operations kml_ring_fops;

/**
 * kml_ring_fget() - the ring behind a descriptor of the calling process
 * @fd: a descriptor of /dev/kml_ring
 *
 * The file reference pins the ring, and through the file's owner this
 * module, until the caller fput()s it; nothing else is needed to call
 * kml_ring_write_file() meanwhile.
 *
 * Return: the file, or ERR_PTR(-EBADF) (not open) or ERR_PTR(-EINVAL)
 * (some other file).
 */
struct file *kml_ring_fget(int fd)
{
	struct file *f = fget(fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->f_op != &kml_ring_fops) {
		fput(f);
		return ERR_PTR(-EINVAL);
	}
	return f;
}
EXPORT_SYMBOL_GPL(kml_ring_fget);

/* Wake-ups asked for by kml_ring_write_file(), from a safe context. */
static void kml_wake_work(struct irq_work *work)
{
	kml_wake(container_of(work, struct kml_ring, wake_work));
}

/**
 * kml_ring_write_file() - write one record to one ring, from any context
 * @ring: a file from kml_ring_fget()
 * @type: record type, at least %KML_RING_REC_USER_BASE
 * @data: payload
 * @len: payload bytes, at most a quarter of the ring
 *
 * Unlike kml_ring_write(), this one is made for probe handlers, which run
 * wherever the probed function runs: in hard interrupts, in NMIs, with
 * any lock held, even inside this module's own write sections. So it
 * never waits for this CPU: it gives the record up if the CPU is already
 * inside a ring write section (kml_wlock_depth) and, in an NMI, if the
 * lock is taken at all; it only spins on a lock another CPU holds, which
 * holds it for one record. And it never wakes a sleeper itself (that
 * takes the wait queue's lock, and the scheduler's): an irq_work does it
 * as soon as interrupts are on again.
 *
 * Return: 0 when written; -ENOSPC when the ring was full (counted in its
 * &kml_ring_ctrl.lost), unsized or too small for the record, -EBUSY when
 * this CPU could not write without waiting on itself, -EINVAL for a
 * reserved type. Every failure is a record lost: the caller counts it.
 */
int kml_ring_write_file(struct file *ring, u32 type, const void *data, u32 len)
{
	u32 need = kml_ring_align(sizeof(struct kml_ring_rec) + len);
	struct kml_ring *r = ring->private_data;
	struct kml_ring_rec *rec = NULL;
	unsigned long flags;
	bool wake;

	if (type < KML_RING_REC_USER_BASE || len > KML_RING_MAX_PAYLOAD)
		return -EINVAL;
	local_irq_save(flags);
	/* This CPU is inside a write section: waiting would be forever. */
	if (this_cpu_read(kml_wlock_depth))
		goto busy;
	/* Marked before locking, as kml_wlock() does. */
	this_cpu_inc(kml_wlock_depth);
	/* Another CPU's section is one record long: wait, but not in an NMI. */
	if (in_nmi()) {
		if (!raw_spin_trylock(&r->wlock)) {
			this_cpu_dec(kml_wlock_depth);
			goto busy;
		}
	} else {
		raw_spin_lock(&r->wlock);
	}
	if (r->size && need <= r->size / 4)
		rec = kml_reserve_locked(r, type, need);
	if (rec) {
		memcpy(rec + 1, data, len);
		memset((u8 *)(rec + 1) + len, 0, need - sizeof(*rec) - len);
		kml_publish_locked(r);
	}
	wake = r->size && kml_need_wake_locked(r);
	kml_wunlock(r, flags);
	if (wake)
		irq_work_queue(&r->wake_work);
	return rec ? 0 : -ENOSPC;
busy:
	local_irq_restore(flags);
	return -EBUSY;
}
EXPORT_SYMBOL_GPL(kml_ring_write_file);

/* ---- the built-in producer ---- */

/* The sample after @rec's header, wherever the record is going. */
static void kml_fill_sample(struct kml_ring *r, struct kml_ring_rec *rec,
			    u64 seq, u32 size)
{
	struct kml_ring_sample *s = (void *)(rec + 1);

	s->seq = seq;
	s->len = size - sizeof(*rec) - sizeof(*s);
	if (r->prod.flags & KML_RING_PRODUCE_NOFILL) {
		s->csum = 0;
	} else {
		kml_ring_fill(seq, s->data, s->len);
		s->csum = kml_ring_csum(s->data, s->len);
	}
}

/*
 * Reserve, fill, commit: the filling and checksumming, which cost as much
 * as the record is long, run with interrupts on. kml_ring_write() may
 * reserve and publish meanwhile; its records become visible with ours.
 */
static void kml_emit_sample(struct kml_ring *r, u64 seq, u32 size)
{
	struct kml_ring_rec *rec;
	unsigned long flags;
	bool wake;

	kml_wlock(r, &flags);
	rec = kml_reserve_locked(r, KML_RING_REC_SAMPLE, size);
	if (!rec) {
		/* Lost: perhaps a sleeper the last crossing missed. */
		wake = kml_need_wake_locked(r);
		kml_wunlock(r, flags);
		goto out;
	}
	r->filling++;
	kml_wunlock(r, flags);

	/* Ours alone until published; the area stays (SET_SIZE stops us). */
	kml_fill_sample(r, rec, seq, size);

	kml_wlock(r, &flags);
	r->filling--;
	kml_publish_locked(r);
	wake = kml_need_wake_locked(r);
	kml_wunlock(r, flags);
out:
	if (wake)
		kml_wake(r);
}

/*
 * KML_RING_PRODUCE_TRACE, for `make bench`: the same record, built in a
 * buffer of the producer's own, goes to the kml_ring:produced tracepoint,
 * which copies it into each listener's buffer (perf's ring, ftrace's).
 * The ring is not touched. The buffer was zeroed at START, so NOFILL
 * hands out zeros, never stale kernel memory.
 */
static void kml_trace_sample(struct kml_ring *r, u64 seq, u32 size)
{
	struct kml_ring_rec *rec = r->trace_rec;

	rec->type = KML_RING_REC_SAMPLE;
	rec->size = size;
	rec->timestamp_ns = ktime_get_ns();
	kml_fill_sample(r, rec, seq, size);
	trace_produced(seq, rec, size);
}

static int kml_producer(void *arg)
{
	struct kml_ring *r = arg;
	u64 period = r->prod.rate ? NSEC_PER_SEC / r->prod.rate : 0;
	u64 seq = 0, next = ktime_get_ns();

	while (!kthread_should_stop()) {
		if (r->prod.count && seq >= r->prod.count) {
			/* Done: idle until STOP, which wakes us. */
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
			continue;
		}
		/* Decided per run, so the ring's path pays one test, no more. */
		if (r->trace_rec)
			kml_trace_sample(r, seq++, r->prod.record_size);
		else
			kml_emit_sample(r, seq++, r->prod.record_size);
		/*
		 * Every record, not only when there is time to spare: a
		 * producer that cannot keep up with its rate (a slow kernel,
		 * a large record) would otherwise never give up the CPU on a
		 * kernel without preemption.
		 */
		cond_resched();
		if (!period)
			continue;
		/* Catch up in a burst rather than drift when we were late. */
		next += period;
		if (next > ktime_get_ns()) {
			ktime_t until = ns_to_ktime(next);

			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule_hrtimeout(&until, HRTIMER_MODE_ABS);
			__set_current_state(TASK_RUNNING);
		}
	}
	return 0;
}

static void kml_stop_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->lock);
	if (r->producer) {
		kthread_stop(r->producer);
		r->producer = NULL;
	}
	kfree(r->trace_rec);
	r->trace_rec = NULL;
}

static int kml_start_locked(struct kml_ring *r, struct kml_ring_produce p)
{
	struct task_struct *t;

	lockdep_assert_held(&r->lock);
	p.record_size = kml_ring_align(p.record_size);
	if (kml_ring_check_produce(&p, r->size))
		return -EINVAL;
	if (p.cpu >= 0 && (p.cpu >= nr_cpu_ids || !cpu_online(p.cpu)))
		return -EINVAL;
	if (r->producer)
		return -EBUSY;
	r->prod = p;
	if (p.flags & KML_RING_PRODUCE_TRACE) {
		r->trace_rec = kzalloc(p.record_size, GFP_KERNEL_ACCOUNT);
		if (!r->trace_rec)
			return -ENOMEM;
	}
	t = kthread_create(kml_producer, r, "kml_ring/%d", p.cpu);
	if (IS_ERR(t)) {
		kfree(r->trace_rec);
		r->trace_rec = NULL;
		return PTR_ERR(t);
	}
	if (p.cpu >= 0)
		kthread_bind(t, p.cpu);
	r->producer = t;
	wake_up_process(t);
	return 0;
}

/* ---- sizing and mapping ---- */

static int kml_set_size_locked(struct kml_ring *r, u32 npages)
{
	struct page **pages, **old_pages;
	unsigned int i, n, old_n;
	unsigned long flags;
	u8 *data, *old_data;
	int ret;

	lockdep_assert_held(&r->read_lock);
	lockdep_assert_held(&r->lock);
	if (kml_ring_check_pages(npages))
		return -EINVAL;
	if (atomic_read(&r->mapped) || r->producer)
		return -EBUSY;

	/* LAB ring 1: charge n = npages + 1 pages (pages[0] is the control
	 * page) to the module's budget (kml_budget_take()) and to the
	 * opener's (kml_user_take(); r->unlimited lifts its limit) before the
	 * old ring is freed; allocate the page array and zeroed pages charged
	 * to the opener's memory cgroup (GFP_KERNEL_ACCOUNT), and vmap() the
	 * data pages into one contiguous kernel view. On failure free what was
	 * allocated (kml_ring_free_pages()) and give back what was taken
	 * (unbudget, unbudget_global)
	 */
	n = npages + 1;
	ret = kml_budget_take(n, r->unlimited);
	if (ret)
		return ret;
	ret = kml_user_take(r->uid, n, r->unlimited);
	if (ret)
		goto unbudget_global;
	ret = -ENOMEM;
	/* _ACCOUNT: charged to the opener's memory cgroup. */
	pages = kcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		goto unbudget;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i]) {
			kml_ring_free_pages(pages, i, NULL);
			goto unbudget;
		}
	}
	/* One contiguous kernel view of the data, so records are one memcpy. */
	data = vmap(pages + 1, npages, VM_MAP, PAGE_KERNEL);
	if (!data) {
		kml_ring_free_pages(pages, n, NULL);
		goto unbudget;
	}
	/* LAB ring 1 end: return -EOPNOTSUPP; */

	kml_wlock(r, &flags);
	old_pages = r->pages;
	old_n = r->pages ? r->npages + 1 : 0;
	old_data = r->data;
	r->pages = pages;
	r->npages = npages;
	r->data = data;
	r->ctrl = page_address(pages[0]);
	r->size = (u64)npages * PAGE_SIZE;
	r->head = 0;
	r->resv = 0;
	r->lost = 0;
	r->produced = 0;
	/* A smaller ring could never reach a larger watermark. */
	r->watermark = min(r->watermark, kml_ring_watermark_max(r->size));
	r->ctrl->version = KML_RING_ABI_VERSION;
	r->ctrl->page_size = PAGE_SIZE;
	r->ctrl->data_size = r->size;
	r->ctrl->watermark = r->watermark;
	kml_wunlock(r, flags);
	kml_ring_free_pages(old_pages, old_n, old_data);
	kml_budget_give(old_n);
	kml_user_give(r->uid, old_n);

	if (!r->listed) {
		mutex_lock(&kml_rings_mutex);
		list_add_tail_rcu(&r->node, &kml_rings);
		mutex_unlock(&kml_rings_mutex);
		r->listed = true;
	}
	return 0;

unbudget:
	kml_user_give(r->uid, n);
unbudget_global:
	kml_budget_give(n);
	return ret;
}

static void kml_vm_open(struct vm_area_struct *vma)
{
	struct kml_ring *r = vma->vm_private_data;

	atomic_inc(&r->mapped);
}

static void kml_vm_close(struct vm_area_struct *vma)
{
	struct kml_ring *r = vma->vm_private_data;

	atomic_dec(&r->mapped);
}

static vm_fault_t kml_vm_fault(struct vm_fault *vmf)
{
	struct kml_ring *r = vmf->vma->vm_private_data;
	struct page *page;

	/* LAB ring 2: hand the faulting address its page: file page pgoff
	 * is r->pages[pgoff] (0 the control page, then the data), anything
	 * past them VM_FAULT_SIGBUS; take a reference for the mapping
	 * (get_page()) and return it in vmf->page
	 */
	/* The buffer cannot change while mapped (SET_SIZE says -EBUSY). */
	if (vmf->pgoff > r->npages)
		return VM_FAULT_SIGBUS;
	page = r->pages[vmf->pgoff];
	/*
	 * No page->mapping: a char device's address_space has no
	 * dirty_folio, and unmapping a dirtied page would call it.
	 */
	get_page(page);
	vmf->page = page;
	return 0;
	/* LAB ring 2 end: return VM_FAULT_SIGBUS; */
}

static const struct vm_operations_struct kml_ring_vm_ops = {
	.open	= kml_vm_open,
	.close	= kml_vm_close,
	.fault	= kml_vm_fault,
};

static int kml_ring_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kml_ring *r = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	int ret = -EINVAL;

	mutex_lock(&r->lock);
	/* LAB ring 2: -EINVAL unless the ring is sized, the mapping shared
	 * and not executable, and it is the control page (offset 0, one
	 * page) or the whole data area (offset one page, r->size bytes); the
	 * data is never writable: -EPERM for VM_WRITE, and clear VM_MAYWRITE
	 * so that mprotect() cannot add it. Clear VM_MAYEXEC, set
	 * VM_DONTEXPAND | VM_DONTDUMP: with vm_flags_clear() and
	 * vm_flags_set(), as vm_flags is read-only since 6.3 (kml_compat.h
	 * has them for 6.1). Install kml_ring_vm_ops and the ring, and count
	 * the mapping: kml_vm_open(), ST_MMAPS
	 */
	/*
	 * VM_MAYSHARE, not VM_SHARED: the kernel clears VM_SHARED on a
	 * shared mapping of a file opened read-only, which is still shared.
	 */
	if (!r->size || !(vma->vm_flags & VM_MAYSHARE) ||
	    (vma->vm_flags & VM_EXEC))
		goto out;
	if (vma->vm_pgoff == 0) {
		if (len != PAGE_SIZE)
			goto out;
	} else if (vma->vm_pgoff == 1) {
		if (len != r->size)
			goto out;
		/* The data belongs to the producer: never writable. */
		ret = -EPERM;
		if (vma->vm_flags & VM_WRITE)
			goto out;
		vm_flags_clear(vma, VM_MAYWRITE);
	} else {
		goto out;
	}
	vm_flags_clear(vma, VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &kml_ring_vm_ops;
	vma->vm_private_data = r;
	kml_vm_open(vma);
	kml_stats_inc(kml_ring_stats, ST_MMAPS);
	ret = 0;
	/* LAB ring 2 end */
out:
	mutex_unlock(&r->lock);
	return ret;
}

/* ---- read() and poll(): the copying consumer ---- */

/*
 * Are @wm bytes waiting? Under wlock, so a concurrent SET_SIZE cannot
 * free the control page under us, and so a writer's wake-up decision is
 * ordered against our check (see kml_need_wake_locked()). @arm says the
 * caller is a poller about to sleep for the watermark.
 */
static bool kml_readable(struct kml_ring *r, bool arm)
{
	unsigned long flags;
	bool ret = false;

	kml_wlock(r, &flags);
	/*
	 * Armed even when readable: an edge-triggered epoll rechecks only
	 * when woken, and must be woken at the next crossing. And armed
	 * before sizing, for the records that come after it.
	 */
	if (arm)
		r->poll_armed = true;
	if (r->size)
		ret = r->head - kml_tail_locked(r) >= (arm ? r->watermark : 1);
	kml_wunlock(r, flags);
	return ret;
}

/*
 * Copy whole records to @buf. Caller holds read_lock, so the area cannot
 * change; the producer writes only past head. Return: bytes, 0 if only
 * padding (now consumed) or nothing was there, -EINVAL if the next record
 * does not fit in @count or the ring is unsized or garbled by a bad tail,
 * -EFAULT if nothing could be copied. A failed record stays in the ring.
 */
static ssize_t kml_read_records(struct kml_ring *r, char __user *buf,
				size_t count)
{
	ssize_t ret = 0;
	size_t done = 0;
	u64 head, tail;
	u32 sz;

	lockdep_assert_held(&r->read_lock);
	if (!r->size)
		return -EINVAL;
	/* Pairs with kml_publish_locked(): records up to head are written. */
	head = smp_load_acquire(&r->head);
	/* A tail moved by the consumer too: its reads are done. */
	tail = smp_load_acquire(&r->ctrl->tail);
	tail = kml_ring_clamp_tail(head, tail, r->size);
	while (tail < head) {
		const struct kml_ring_rec *rec;

		if (kml_ring_next(r->data, r->size, tail, head, &sz)) {
			ret = -EINVAL;
			break;
		}
		rec = (const void *)(r->data + (tail & (r->size - 1)));
		if (rec->type != KML_RING_REC_PAD) {
			/* Whole records only: -EINVAL if none fits. */
			if (sz > count - done) {
				ret = -EINVAL;
				break;
			}
			if (copy_to_user(buf + done, rec, sz)) {
				ret = -EFAULT;
				break;
			}
			done += sz;
		}
		tail += sz;
		cond_resched();
	}
	/* Pairs with the producer's load-acquire of tail: we are done. */
	smp_store_release(&r->ctrl->tail, tail);
	return done ? done : ret;
}

/*
 * read() returns what there is, like a pipe: it blocks only while the
 * ring is empty, whatever the watermark. It sleeps without read_lock, so
 * SET_SIZE is not held up by a blocked reader.
 */
static ssize_t kml_ring_read(struct file *file, char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct kml_ring *r = file->private_data;
	ssize_t ret;

	kml_stats_inc(kml_ring_stats, ST_READS);
	if (!count)
		return 0;
	for (;;) {
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		ret = kml_read_records(r, buf, count);
		mutex_unlock(&r->read_lock);
		if (ret)
			return ret;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		/* Announced before queueing: a writer wakes us per record. */
		atomic_inc(&r->read_waiters);
		ret = wait_event_interruptible(r->wq, kml_readable(r, false));
		atomic_dec(&r->read_waiters);
		if (ret)
			return ret;
	}
}

static __poll_t kml_ring_poll(struct file *file, poll_table *wait)
{
	struct kml_ring *r = file->private_data;

	/* LAB ring 4: put the caller on r->wq with poll_wait() first, then
	 * check, arming the ring for the watermark (kml_readable()):
	 * EPOLLIN | EPOLLRDNORM if readable, else 0. Check first, and a
	 * record published in between would wake nobody
	 */
	/* Queued first, then checked and armed under wlock. */
	poll_wait(file, &r->wq, wait);
	return kml_readable(r, true) ? EPOLLIN | EPOLLRDNORM : 0;
	/* LAB ring 4 end: return DEFAULT_POLLMASK; */
}

/* The watermark is set under lock and wlock: wlock for its readers. */
static long kml_set_watermark(struct kml_ring *r, u64 wm)
{
	u64 max = kml_ring_watermark_max(r->size ? r->size :
				(u64)KML_RING_MAX_PAGES * PAGE_SIZE);
	unsigned long flags;

	lockdep_assert_held(&r->lock);
	if (wm < 1 || wm > max)
		return -EINVAL;
	kml_wlock(r, &flags);
	r->watermark = wm;
	if (r->ctrl)
		WRITE_ONCE(r->ctrl->watermark, wm);
	kml_wunlock(r, flags);
	/* A lower watermark may already be met: let them look. */
	wake_up_interruptible(&r->wq);
	return 0;
}

/*
 * START takes an extensible struct (modules/include/kml_ioctl.h): the
 * size in the ioctl number is the caller's sizeof, fields it lacks are
 * zero, and a larger caller's extra bytes must be zero.
 */
static long kml_ioctl_start(struct kml_ring *r, void __user *up, size_t usize)
{
	struct kml_ring_produce p;
	long ret;

	/* A kernel thread at any rate, on any CPU, outside the caller's cgroup. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = kml_copy_struct_in(&p, sizeof(p), up, usize,
				 KML_RING_PRODUCE_SIZE_VER0);
	if (ret)
		return ret;
	mutex_lock(&r->lock);
	ret = kml_start_locked(r, p);
	mutex_unlock(&r->lock);
	return ret;
}

static long kml_ring_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kml_ring *r = file->private_data;
	void __user *up = (void __user *)arg;
	u32 npages;
	u64 wm;
	long ret;

	if (KML_IOC_NOSIZE(cmd) == KML_IOC_NOSIZE(KML_RING_IOC_START))
		return kml_ioctl_start(r, up, _IOC_SIZE(cmd));

	switch (cmd) {
	case KML_RING_IOC_GET_VERSION:
		return put_user(KML_RING_ABI_VERSION, (u32 __user *)up);
	case KML_RING_IOC_SET_WATERMARK:
		if (get_user(wm, (u64 __user *)up))
			return -EFAULT;
		mutex_lock(&r->lock);
		ret = kml_set_watermark(r, wm);
		mutex_unlock(&r->lock);
		return ret;
	case KML_RING_IOC_SET_SIZE:
		/* Copy arguments in before taking locks: see struct kml_ring. */
		if (get_user(npages, (u32 __user *)up))
			return -EFAULT;
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		mutex_lock(&r->lock);
		ret = kml_set_size_locked(r, npages);
		mutex_unlock(&r->lock);
		mutex_unlock(&r->read_lock);
		return ret;
	case KML_RING_IOC_STOP:
		mutex_lock(&r->lock);
		kml_stop_locked(r);
		mutex_unlock(&r->lock);
		return 0;
	default:
		return -ENOTTY;
	}
}

static int kml_ring_open(struct inode *inode, struct file *file)
{
	struct kml_ring *r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!r)
		return -ENOMEM;
	mutex_init(&r->read_lock);
	mutex_init(&r->lock);
	raw_spin_lock_init(&r->wlock);
	init_waitqueue_head(&r->wq);
	atomic_set(&r->read_waiters, 0);
	atomic_set(&r->mapped, 0);
	r->watermark = 1;
	/*
	 * The opener's, not each caller's: an fd handed to a privileged
	 * process must not lift its opener's limits.
	 */
	r->uid = kml_charged(current_cred());
	r->unlimited = capable(CAP_IPC_LOCK);
	r->id = atomic_inc_return(&kml_ring_ids);
	init_irq_work(&r->wake_work, kml_wake_work);
	file->private_data = r;
	return 0;
}

static void kml_ring_free(struct kml_ring *r)
{
	kml_ring_free_pages(r->pages, r->pages ? r->npages + 1 : 0, r->data);
	mutex_destroy(&r->lock);
	mutex_destroy(&r->read_lock);
	kfree(r);
}

static void kml_ring_free_work(struct work_struct *work)
{
	kml_ring_free(container_of(to_rcu_work(work), struct kml_ring, free_work));
}

/*
 * Runs only when no mapping is left (each vma holds a file reference)
 * and no read(), poll() or ioctl() is in progress.
 */
static int kml_ring_release(struct inode *inode, struct file *file)
{
	struct kml_ring *r = file->private_data;

	mutex_lock(&r->lock);
	kml_stop_locked(r);
	mutex_unlock(&r->lock);
	/* Recorders held the file: their last wake-up may still be queued. */
	irq_work_sync(&r->wake_work);
	/*
	 * The budgets count rings, not pages in flight: a closed ring's
	 * pages go back at once, even though they are freed a grace period
	 * later.
	 */
	if (r->pages) {
		kml_budget_give(r->npages + 1);
		kml_user_give(r->uid, r->npages + 1);
	}
	if (!r->listed) {
		kml_ring_free(r);
		return 0;
	}
	mutex_lock(&kml_rings_mutex);
	list_del_rcu(&r->node);
	mutex_unlock(&kml_rings_mutex);
	/*
	 * A kml_ring_write() may still be writing to it: free it after a
	 * grace period, in a worker (vunmap() sleeps, so not in an RCU
	 * callback), rather than make every close() wait for one.
	 */
	INIT_RCU_WORK(&r->free_work, kml_ring_free_work);
	queue_rcu_work(kml_ring_wq, &r->free_work);
	return 0;
}

static const struct file_operations kml_ring_fops = {
	.owner		= THIS_MODULE,
	.open		= kml_ring_open,
	.release	= kml_ring_release,
	.read		= kml_ring_read,
	.poll		= kml_ring_poll,
	.mmap		= kml_ring_mmap,
	.unlocked_ioctl	= kml_ring_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/*
 * Rings are private to their opener: any user may have one, within the
 * page budgets and its memory cgroup; only START needs CAP_SYS_ADMIN.
 */
static struct miscdevice kml_ring_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_ring",
	.fops	= &kml_ring_fops,
	.mode	= 0666,
};

static int __init kml_ring_init(void)
{
	int ret;

	kml_ring_wq = alloc_workqueue("kml_ring_free", WQ_UNBOUND, 0);
	if (!kml_ring_wq)
		return -ENOMEM;
	kml_ring_stats = kml_stats_register("kml_ring", kml_ring_stats_desc,
					    ARRAY_SIZE(kml_ring_stats_desc));
	if (IS_ERR(kml_ring_stats)) {
		destroy_workqueue(kml_ring_wq);
		return PTR_ERR(kml_ring_stats);
	}
	ret = misc_register(&kml_ring_misc);
	if (ret) {
		kml_stats_unregister(kml_ring_stats);
		destroy_workqueue(kml_ring_wq);
	}
	return ret;
}

static void __exit kml_ring_exit(void)
{
	/* Open files and mappings pin the module: no ring is open. */
	misc_deregister(&kml_ring_misc);
	/* Closed rings may still wait for their grace period: free them. */
	rcu_barrier();
	destroy_workqueue(kml_ring_wq);
	kml_stats_unregister(kml_ring_stats);
	xa_destroy(&kml_user_used);
}

module_init(kml_ring_init);
module_exit(kml_ring_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel-to-user ring buffer shared through mmap");
