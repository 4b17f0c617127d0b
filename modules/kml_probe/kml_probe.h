/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_probe's own header: a probed function's state, which the handlers
 * of kml_probe_main.c (the lab's file) write and the rest of the module
 * sets up, resets and reads, and what each of the module's files offers
 * the others.
 */
#ifndef KML_PROBE_H
#define KML_PROBE_H

#include <linux/atomic.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "../../uapi/linux/kml_probe.h"

struct file;
struct inode;
struct notifier_block;
struct pid;
struct kml_stats_hist;
struct kml_stats_set;

/* The counters of a function's kml_stats set ("kp.<func>"). */
enum { ST_LATENCY, ST_CALLS, ST_FILTERED, ST_LAST_LOST, ST_BACKWARDS };

/* Per CPU; written by this CPU's handlers, reset from anywhere. */
struct kml_minmax {
	u64 min;
	u64 max;
};

/* The most recent measured call: the only state handlers share. */
struct kml_last {
	u64 args[KML_PROBE_MAX_ARGS];
	u64 ret;
};

/*
 * A recording (KML_PROBE_IOC_RECORD): where this function's calls go.
 * kml_ring is optional, so its writer is looked up at run time
 * (symbol_get()), and the ring's file pins ring and module until the
 * recording ends.
 */
struct kml_rec {
	const struct file *owner;	/* who started it: compared, never used */
	struct file *ring;
	int (*write)(struct file *ring, u32 type, const void *data, u32 len);
	u32 id;
	atomic64_t written;
	atomic64_t lost;
};

/* One probed function. */
struct kml_fn {
	struct kml_probe_attach cfg;
	union {
		struct kretprobe krp;
		struct kprobe kp;		/* KML_PROBE_F_COUNT_ONLY */
	};
	/*
	 * For a function in a module: a second kprobe at the same address
	 * whose post_handler keeps kprobes from jump-optimizing the probe.
	 * An optimized probe is retired lazily by a worker after unregister;
	 * if its module goes away first, the stale probe stays behind and
	 * the next probe at that address (the module loaded again) trips a
	 * WARN in kprobes' reuse_unused_kprobe() (6.12). Breakpoint probes
	 * are removed at once.
	 */
	struct kprobe guard;
	bool guarded;
	bool gone;			/* its module was unloaded; kml_probe_lock */
	struct pid *task;		/* F_PID/F_TGID filter, pinned */
	struct kml_stats_set *stats;	/* counts, sum, histogram */
	struct kml_minmax __percpu *minmax;
	u64 nmissed_base;		/* kprobes' nmissed at the last reset */
	/* last: written under last_lock (trylock only), read under last_seq */
	raw_spinlock_t last_lock;
	seqcount_t last_seq;
	struct kml_last last;
	struct kml_rec __rcu *rec;	/* set under kml_probe_lock */
};

static inline struct kprobe *kml_fn_kprobe(struct kml_fn *fn)
{
	return fn->cfg.flags & KML_PROBE_F_COUNT_ONLY ? &fn->kp : &fn->krp.kp;
}

static inline u32 kml_fn_state(struct kml_fn *fn)
{
	return fn->gone ? KML_PROBE_S_GONE : 0;
}

/* kml_probe_main.c: the probe itself, and what GET may show */
int kml_probe_fn_register(struct kml_fn *fn);
void kml_probe_fn_detach(struct kml_fn *fn);
void kml_probe_fill_result(struct kml_fn *fn, struct kml_probe_result *r,
			   struct kml_stats_hist *h);

/*
 * kml_probe_ctl.c: the table of probed functions and the ioctls on it.
 * kml_probe_lock guards the table and the probes' lifetimes; handlers
 * never take it.
 */
extern struct mutex kml_probe_lock;
extern struct kml_fn *kml_probe_fns[KML_PROBE_MAX_FUNCS];
extern struct notifier_block kml_probe_module_nb;
u64 kml_probe_fn_nmissed(struct kml_fn *fn);
struct kml_fn *kml_probe_find_locked(const char *func, unsigned int *slot);
void kml_probe_fn_free(struct kml_fn *fn);
int kml_probe_in_module(void *addr);
int kml_probe_ioc_attach(void __user *ua, unsigned int usize);
int kml_probe_ioc_detach(void __user *uf, unsigned int usize);
int kml_probe_ioc_list(void __user *ul, unsigned int usize);
int kml_probe_ioc_get(void __user *ur, unsigned int usize);
int kml_probe_ioc_call(void __user *uc, unsigned int usize);
int kml_probe_ioc_reset(void);

/* kml_probe_rec.c: recordings into a kml_ring */
void kml_probe_rec_free(struct kml_rec *rec, struct kml_probe_record *rc);
int kml_probe_ioc_record(struct file *file, void __user *ur,
			 unsigned int usize);
int kml_probe_release(struct inode *inode, struct file *file);

#endif /* KML_PROBE_H */
