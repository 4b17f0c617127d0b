/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_ring's own header: a ring (struct kml_ring) and its write lock,
 * which every file of the module works on, and what each file offers the
 * others. kml_ring_main.c is the mechanism the ring lab teaches; the
 * other files are handed over complete.
 */
#ifndef KML_RING_PRIV_H
#define KML_RING_PRIV_H

#include <linux/atomic.h>
#include <linux/compiler_types.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/irqflags.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include "../../uapi/linux/kml_ring.h"

struct cred;
struct file;
struct inode;
struct kml_stats_set;
struct page;
struct task_struct;

struct kml_ring {
	struct list_head node;		/* on kml_ring_list once sized (RCU) */
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
	kuid_t uid;			/* charged for the pages (kml_ring_charged()) */
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
DECLARE_PER_CPU(unsigned int, kml_ring_wlock_depth);

static inline void kml_wlock(struct kml_ring *r, unsigned long *flags)
	__acquires(&r->wlock)
{
	local_irq_save(*flags);
	this_cpu_inc(kml_ring_wlock_depth);
	raw_spin_lock(&r->wlock);
}

static inline void kml_wunlock(struct kml_ring *r, unsigned long flags)
	__releases(&r->wlock)
{
	raw_spin_unlock(&r->wlock);
	this_cpu_dec(kml_ring_wlock_depth);
	local_irq_restore(flags);
}

/* kml_ring_main.c: the mechanism the lab teaches, the device, init, exit */
enum { ST_RECORDS, ST_BYTES, ST_LOST, ST_WAKEUPS, ST_READS, ST_MMAPS };

extern struct kml_stats_set *kml_ring_stats;
extern struct workqueue_struct *kml_ring_wq;
extern const struct file_operations kml_ring_fops;

void kml_ring_free_pages(struct page **pages, unsigned int n, void *data);
struct kml_ring_rec *kml_ring_reserve_locked(struct kml_ring *r,
					     u32 type, u32 need);
void kml_ring_publish_locked(struct kml_ring *r);
bool kml_ring_need_wake_locked(struct kml_ring *r);
void kml_ring_wake(struct kml_ring *r);
int kml_ring_set_size_locked(struct kml_ring *r, u32 npages);
bool kml_ring_readable(struct kml_ring *r, bool arm);

/* kml_ring_budget.c: the module's and each user's page budgets */
extern struct xarray kml_ring_user_used;

int kml_ring_budget_take(unsigned long n, bool unlimited);
void kml_ring_budget_give(unsigned long n);
kuid_t kml_ring_charged(const struct cred *cred);
int kml_ring_user_take(kuid_t uid, unsigned long n, bool unlimited);
void kml_ring_user_give(kuid_t uid, unsigned long n);

/* kml_ring_api.c: other modules' writes (modules/include/kml_ring.h) */
extern struct mutex kml_ring_list_mutex;
extern struct list_head kml_ring_list;

void kml_ring_wake_work(struct irq_work *work);

/* kml_ring_producer.c: the built-in producer (START, STOP) */
int kml_ring_start_locked(struct kml_ring *r, struct kml_ring_produce p);
void kml_ring_stop_locked(struct kml_ring *r);

/* kml_ring_read.c: read(), the copying consumer */
ssize_t kml_ring_read(struct file *file, char __user *buf, size_t count,
		      loff_t *ppos);

/* kml_ring_ctl.c: open, the ioctls, release */
int kml_ring_open(struct inode *inode, struct file *file);
long kml_ring_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
int kml_ring_release(struct inode *inode, struct file *file);

#endif /* KML_RING_PRIV_H */
