// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe - function latency with kretprobes, and jprobe-style arguments.
 *
 * The mechanism taught here is the kretprobe: the kernel plants a
 * breakpoint at a function's entry and hijacks its return address, so a
 * module gets a callback when the function is entered and another when it
 * returns. Timing lives in per-instance data (struct kretprobe_instance's
 * data[], one per in-flight call), never in a per-task or per-CPU slot,
 * so nested and recursive calls each get their own start time. When every
 * instance (maxactive) is busy, the kernel counts the call in nmissed
 * rather than measure it wrongly; so it does for a call that arrives while
 * another probe's handler runs on that CPU (kp.nmissed: a handler calling
 * a probed function). We report both, never hide them.
 *
 * jprobes, which handed a handler the probed function's arguments, were
 * removed in 4.15. The entry handler does the same here with
 * regs_get_kernel_argument(), and filters calls by thread, process or
 * argument value before any instance is spent on them.
 *
 * Handlers run wherever the probed function runs: in IRQs, in NMIs, with
 * locks held, and inside this module's own ioctls if someone probes a
 * function those call. So a handler never waits: counters are per-CPU,
 * and the one shared record (the last call's arguments) is written under
 * a trylock (a busy lock means "skip it and count it") and read by a
 * seqcount reader who retries instead of locking out the writers.
 *
 * Functions are attached by name at run time through ioctls on
 * /dev/kml_probe; latencies go to per-CPU log2 histograms published
 * through kml_stats and readable in binary form by the client. A target
 * function of controllable duration (kml_probe_target.ko, called through
 * the CALL ioctl) lets tests check the buckets.
 *
 * A histogram forgets each call; a recording keeps them. RECORD names a
 * kml_ring descriptor, and the return handler then also writes one record
 * per measured call into that ring (kml_ring_write_file(), which, like
 * everything here, never waits), for `kml-probe record` to copy to a
 * file: perf record's design, in miniature.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "../include/kml_ioctl.h"
#include "../include/kml_ring.h"
#include "../include/kml_stats.h"
#include "../kml_stats/kml_stats_logic.h"
#include "kml_probe_logic.h"
#include "kml_probe_trace.h"
/* Only for symbol_get(): kml_probe_target.ko may come and go. */
#include "kml_probe_target.h"

enum { ST_LATENCY, ST_CALLS, ST_FILTERED, ST_LAST_LOST, ST_BACKWARDS };

static const struct kml_stats_desc kml_fn_stats[] = {
	[ST_LATENCY]	= { "latency_ns", KML_STAT_HIST },
	[ST_CALLS]	= { "calls", KML_STAT_COUNTER },
	[ST_FILTERED]	= { "filtered", KML_STAT_COUNTER },
	[ST_LAST_LOST]	= { "last_lost", KML_STAT_COUNTER },
	[ST_BACKWARDS]	= { "clock_backwards", KML_STAT_COUNTER },
};

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

/* What the entry handler leaves for the return handler, per call. */
struct kml_inst {
	u64 t0;
	u64 args[KML_PROBE_MAX_ARGS];
};

/* Guards kml_fns[] and the probes' lifetimes; never taken by handlers. */
static DEFINE_MUTEX(kml_probe_lock);
static struct kml_fn *kml_fns[KML_PROBE_MAX_FUNCS];

static bool kml_fn_pass(struct kml_fn *fn, struct pt_regs *regs)
{
	bool task = true;
	u64 arg = 0;

	/* struct pid, not a number: the filter's PID namespace is moot. */
	if (fn->cfg.flags & KML_PROBE_F_PID)
		task = task_pid(current) == fn->task;
	else if (fn->cfg.flags & KML_PROBE_F_TGID)
		task = task_tgid(current) == fn->task;
	if (fn->cfg.flags & KML_PROBE_F_ARG)
		arg = regs_get_kernel_argument(regs, fn->cfg.arg_index);
	if (kml_probe_pass(&fn->cfg, task, arg))
		return true;
	kml_stats_inc(fn->stats, ST_FILTERED);
	return false;
}

static int kml_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kml_fn *fn = container_of(get_kretprobe(ri), struct kml_fn, krp);
	struct kml_inst *in = (struct kml_inst *)ri->data;
	unsigned int i;

	/* LAB probe 3: jprobe-style arguments. A call kml_fn_pass() rejects
	 * is not measured: return non-zero, and kprobes gives the instance
	 * back without calling the return handler. Otherwise copy the first
	 * cfg.nargs arguments into the instance (regs_get_kernel_argument()).
	 */
	if (!kml_fn_pass(fn, regs))
		return 1;
	for (i = 0; i < fn->cfg.nargs; i++)
		in->args[i] = regs_get_kernel_argument(regs, i);
	/* LAB probe 3 end */
	/* LAB probe 2: stamp the start time into this call's own instance
	 * data (ri->data, data_size bytes), last, so the handler's own work
	 * is not part of the latency. Handlers run from the int3 trap, which
	 * may have interrupted the timekeeping code itself: only the NMI-safe
	 * clock, ktime_get_mono_fast_ns(), may be read here (lockdep says so
	 * on the debug kernel; BPF uses the same clock).
	 */
	in->t0 = ktime_get_mono_fast_ns();
	/* LAB probe 2 end */
	return 0;
}

/* A probe on its own handler would recurse: keep kprobes off it. */
NOKPROBE_SYMBOL(kml_entry);

/*
 * Publish the call's arguments as the last ones. The lock only keeps two
 * writers apart; a handler that finds it taken (another CPU publishing,
 * a reset, or this very CPU interrupted by an NMI mid-update) drops its
 * record and counts it rather than spin: whoever holds the lock may be
 * the code this handler interrupted.
 */
static void kml_publish_last(struct kml_fn *fn, const struct kml_inst *in,
			     u64 ret)
{
	unsigned long flags;

	/* LAB probe 3: publish in->args and @ret as fn->last without ever
	 * waiting: raw_spin_trylock_irqsave() on fn->last_lock (busy: count
	 * ST_LAST_LOST and give up), then write inside fn->last_seq's
	 * raw_write_seqcount_begin()/end() so that kml_read_last() retries.
	 */
	if (!raw_spin_trylock_irqsave(&fn->last_lock, flags)) {
		kml_stats_inc(fn->stats, ST_LAST_LOST);
		return;
	}
	raw_write_seqcount_begin(&fn->last_seq);
	memcpy(fn->last.args, in->args, sizeof(fn->last.args));
	fn->last.ret = ret;
	raw_write_seqcount_end(&fn->last_seq);
	raw_spin_unlock_irqrestore(&fn->last_lock, flags);
	/* LAB probe 3 end */
}

NOKPROBE_SYMBOL(kml_publish_last);

/*
 * Recording: one record per measured call, into the recorder's ring.
 * kml_ring_write_file() is made for this context: it never waits on its
 * own CPU. A record it cannot write is counted lost, never dropped
 * silently.
 */
static void kml_record_call(struct kml_fn *fn, const struct kml_inst *in,
			    u64 ns, u64 ret)
{
	struct kml_probe_event ev = {
		.start_ns = in->t0,
		.duration_ns = ns,
		.ret = ret,
		.pid = task_pid_nr(current),
		.tgid = task_tgid_nr(current),
		.cpu = smp_processor_id(),
		.nargs = fn->cfg.nargs,
	};
	struct kml_rec *rec;

	rcu_read_lock();
	rec = rcu_dereference(fn->rec);
	if (rec) {
		/* The instance is reused: only nargs of its args are ours. */
		memcpy(ev.args, in->args, fn->cfg.nargs * sizeof(ev.args[0]));
		ev.id = rec->id;
		if (rec->write(rec->ring, KML_PROBE_REC_CALL, &ev, sizeof(ev)))
			atomic64_inc(&rec->lost);
		else
			atomic64_inc(&rec->written);
	}
	rcu_read_unlock();
}

NOKPROBE_SYMBOL(kml_record_call);

static int kml_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kml_fn *fn = container_of(get_kretprobe(ri), struct kml_fn, krp);
	struct kml_inst *in = (struct kml_inst *)ri->data;
	struct kml_minmax *mm;
	/* Set by step 2 of the lab: its skeleton records latencies of 0. */
	u64 ns = 0;
	s64 d;

	/* LAB probe 2: the latency is now minus in->t0
	 * (kml_probe_elapsed(): -1 if the clock stepped back, to count as
	 * ST_BACKWARDS and take as 0). Add it to the
	 * ST_LATENCY histogram and count ST_CALLS (kml_stats: per-CPU, any
	 * context), then update this CPU's fn->minmax. Handlers run with
	 * preemption off, so this_cpu_ptr() is stable; but a reset may write
	 * the slot from another CPU and GET reads it unlocked: READ_ONCE()
	 * and WRITE_ONCE(). No lock, no sleeping, no allocation here.
	 */
	d = kml_probe_elapsed(in->t0, ktime_get_mono_fast_ns());
	if (unlikely(d < 0)) { /* LCOV_EXCL_BR_LINE: only across a clock update */
		kml_stats_inc(fn->stats, ST_BACKWARDS);
		d = 0;
	}
	ns = d;
	kml_stats_hist_add(fn->stats, ST_LATENCY, ns);
	kml_stats_inc(fn->stats, ST_CALLS);
	mm = this_cpu_ptr(fn->minmax);
	if (ns < READ_ONCE(mm->min))
		WRITE_ONCE(mm->min, ns);
	if (ns > READ_ONCE(mm->max))
		WRITE_ONCE(mm->max, ns);
	trace_call(fn->cfg.func, ns, regs_return_value(regs), fn->cfg.nargs,
		   in->args);
	/* LAB probe 2 end */
	if (fn->cfg.nargs)
		kml_publish_last(fn, in, regs_return_value(regs));
	/* Only when someone records (kml-probe record); RCU-checked. */
	if (rcu_access_pointer(fn->rec))
		kml_record_call(fn, in, ns, regs_return_value(regs));
	return 0;
}

NOKPROBE_SYMBOL(kml_return);

static int kml_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct kml_fn *fn = container_of(kp, struct kml_fn, kp);

	if (kml_fn_pass(fn, regs))
		kml_stats_inc(fn->stats, ST_CALLS);
	return 0;
}

NOKPROBE_SYMBOL(kml_pre);

/* The guard's only job is to exist (see struct kml_fn). */
static void kml_guard_post(struct kprobe *p, struct pt_regs *regs,
			   unsigned long flags)
{
}

NOKPROBE_SYMBOL(kml_guard_post);

static struct kprobe *kml_fn_kprobe(struct kml_fn *fn)
{
	return fn->cfg.flags & KML_PROBE_F_COUNT_ONLY ? &fn->kp : &fn->krp.kp;
}

/*
 * Calls kprobes dropped: recursion (kp.nmissed) and no free instance.
 * kprobes bumps both with a plain ++ from its handlers on any CPU; we
 * read a statistic that may be one call behind, a race KCSAN is told
 * about (data_race()) because the writer is not ours to mark.
 */
static u64 kml_fn_nmissed(struct kml_fn *fn)
{
	/* kprobes' plain ++ of a statistic: see above */
	u64 n = data_race(READ_ONCE(kml_fn_kprobe(fn)->nmissed));

	if (!(fn->cfg.flags & KML_PROBE_F_COUNT_ONLY))
		/* the same for the kretprobe's instances */
		n += data_race(READ_ONCE(fn->krp.nmissed));
	return n;
}

/*
 * The probe's own part of a reset. kml_stats calls it with its lock held,
 * right after zeroing the set, for "reset kp.<func>" on the control file
 * as for our RESET ioctl (which goes through kml_stats_reset()): one
 * operation, one lock, whoever asks. It takes only the handlers' lock.
 */
static void kml_fn_reset_hook(void *data)
{
	struct kml_fn *fn = data;
	unsigned long flags;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct kml_minmax *mm = per_cpu_ptr(fn->minmax, cpu);

		WRITE_ONCE(mm->min, U64_MAX);
		WRITE_ONCE(mm->max, 0);
	}
	WRITE_ONCE(fn->nmissed_base, kml_fn_nmissed(fn));
	/* May spin, briefly: holders are handlers, which never wait. */
	raw_spin_lock_irqsave(&fn->last_lock, flags);
	raw_write_seqcount_begin(&fn->last_seq);
	memset(&fn->last, 0, sizeof(fn->last));
	raw_write_seqcount_end(&fn->last_seq);
	raw_spin_unlock_irqrestore(&fn->last_lock, flags);
}

static struct kml_fn *kml_find_locked(const char *func, unsigned int *slot)
{
	unsigned int i;

	lockdep_assert_held(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i] && !strcmp(kml_fns[i]->cfg.func, func)) {
			if (slot)
				*slot = i;
			return kml_fns[i];
		}
	return NULL;
}

/*
 * A recording's end: its counts to @rc, then the ring and kml_ring.ko
 * are let go. No handler may be using @rec any more.
 */
static void kml_rec_free(struct kml_rec *rec, struct kml_probe_record *rc)
{
	if (rc) {
		rc->written = atomic64_read(&rec->written);
		rc->lost = atomic64_read(&rec->lost);
	}
	fput(rec->ring);
	symbol_put(kml_ring_write_file);
	kfree(rec);
}

static void kml_fn_free(struct kml_fn *fn)
{
	/* Its probes are gone (or never were): so are their handlers. */
	struct kml_rec *rec = rcu_dereference_protected(fn->rec, true);

	if (rec)
		kml_rec_free(rec, NULL);
	kml_stats_unregister(fn->stats);
	put_pid(fn->task);
	free_percpu(fn->minmax);
	kfree(fn);
}

static void kml_fn_detach(struct kml_fn *fn)
{
	/* Waits until no handler of this probe is running anywhere. */
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY) {
		unregister_kprobe(&fn->kp);
	} else {
		/* LAB probe 1: take the kretprobe out. unregister_kretprobe()
		 * returns once no handler of it runs anywhere, so @fn may be
		 * freed right after; skip it and the handlers run on in freed
		 * memory (or in an unloaded module) at the next call.
		 */
		unregister_kretprobe(&fn->krp);
		/* LAB probe 1 end */
	}
	/* Last, so the probe was never optimized, down to its removal. */
	if (fn->guarded)
		unregister_kprobe(&fn->guard);
	kml_fn_free(fn);
}

/*
 * Is @addr in a module? is_module_text_address() and __module_address()
 * are not exported to modules; %pS's text is, and names the module:
 * "func+0x0/0x40 [mod]".
 */
static int kml_in_module(void *addr)
{
	char *sym = kmalloc(KSYM_SYMBOL_LEN, GFP_KERNEL);
	int ret;

	if (!sym)
		return -ENOMEM;
	sprint_symbol(sym, (unsigned long)addr);
	ret = !!strchr(sym, '[');
	kfree(sym);
	return ret;
}

static int kml_fn_register(struct kml_fn *fn)
{
	struct kprobe *kp = kml_fn_kprobe(fn);
	int ret;

	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY) {
		fn->kp.symbol_name = fn->cfg.func;
		fn->kp.pre_handler = kml_pre;
		ret = register_kprobe(&fn->kp);
	} else {
		/* LAB probe 1: plant a kretprobe on the function named
		 * cfg.func: kml_entry() as its entry_handler, kml_return() as
		 * its handler, a struct kml_inst of instance data per call
		 * (data_size), cfg.maxactive instances; register_kretprobe().
		 * For maxactive 0 the kernel picks a default: report it back
		 * in cfg.maxactive.
		 */
		fn->krp.kp.symbol_name = fn->cfg.func;
		fn->krp.entry_handler = kml_entry;
		fn->krp.handler = kml_return;
		fn->krp.data_size = sizeof(struct kml_inst);
		fn->krp.maxactive = fn->cfg.maxactive;
		ret = register_kretprobe(&fn->krp);
		fn->cfg.maxactive = fn->krp.maxactive;
		/* LAB probe 1 end: ret = -EOPNOTSUPP; */
	}
	if (ret)
		return ret;	/* -ENOENT: no such symbol; -EINVAL: refused */

	/*
	 * Optimization is queued for later (a delayed worker), and adding
	 * a probe with a post_handler undoes it synchronously if it already
	 * happened: either way it is a breakpoint probe from here on. A
	 * probe on an ftrace call site is never optimized, and kprobes
	 * cannot add a post_handler to one already armed: no guard there.
	 */
	ret = 0;
	if (IS_ENABLED(CONFIG_OPTPROBES) && !(kp->flags & KPROBE_FLAG_FTRACE))
		ret = kml_in_module(kp->addr);
	if (ret > 0) {
		fn->guard.addr = kp->addr;
		fn->guard.post_handler = kml_guard_post;
		ret = register_kprobe(&fn->guard);
		fn->guarded = !ret;
	}
	if (ret) {
		if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY)
			unregister_kprobe(&fn->kp);
		else
			unregister_kretprobe(&fn->krp);
	}
	return ret;
}

static int kml_fn_set_task(struct kml_fn *fn)
{
	struct task_struct *t;

	if (!(fn->cfg.flags & (KML_PROBE_F_PID | KML_PROBE_F_TGID)))
		return 0;
	/* The number is the caller's view, in the caller's PID namespace. */
	fn->task = find_get_pid(fn->cfg.pid);
	rcu_read_lock();
	t = fn->task ? pid_task(fn->task, fn->cfg.flags & KML_PROBE_F_PID ?
				PIDTYPE_PID : PIDTYPE_TGID) : NULL;
	rcu_read_unlock();
	return t ? 0 : -ESRCH;
}

static int kml_attach(const struct kml_probe_attach *cfg)
{
	char set_name[KML_STATS_NAME_MAX + 1];
	unsigned int slot;
	struct kml_fn *fn;
	int ret;

	mutex_lock(&kml_probe_lock);
	ret = -EEXIST;
	if (kml_find_locked(cfg->func, NULL))
		goto unlock;
	ret = -ENOSPC;
	for (slot = 0; slot < KML_PROBE_MAX_FUNCS; slot++)
		if (!kml_fns[slot])
			break;
	if (slot == KML_PROBE_MAX_FUNCS)
		goto unlock;

	ret = -ENOMEM;
	fn = kzalloc(sizeof(*fn), GFP_KERNEL_ACCOUNT);
	if (!fn)
		goto unlock;
	fn->cfg = *cfg;
	raw_spin_lock_init(&fn->last_lock);
	seqcount_init(&fn->last_seq);
	fn->minmax = alloc_percpu_gfp(struct kml_minmax, GFP_KERNEL_ACCOUNT);
	if (!fn->minmax)
		goto free;
	ret = kml_fn_set_task(fn);
	if (ret)
		goto free;
	/* The handlers publish here: it must exist before they can run. */
	kml_probe_set_name(cfg->func, slot, set_name, sizeof(set_name));
	fn->stats = kml_stats_register(set_name, kml_fn_stats,
				       ARRAY_SIZE(kml_fn_stats));
	if (IS_ERR(fn->stats)) {
		ret = PTR_ERR(fn->stats);
		fn->stats = NULL;
		goto free;
	}
	kml_stats_on_reset(fn->stats, kml_fn_reset_hook, fn);
	kml_stats_reset(fn->stats);

	ret = kml_fn_register(fn);
	if (ret)
		goto free;
	kml_fns[slot] = fn;
	mutex_unlock(&kml_probe_lock);
	return 0;
free:
	kml_fn_free(fn);
unlock:
	mutex_unlock(&kml_probe_lock);
	return ret;
}

static int kml_ioc_attach(void __user *ua, unsigned int usize)
{
	struct kml_probe_attach cfg;
	int ret;

	ret = kml_copy_struct_in(&cfg, sizeof(cfg), ua, usize, sizeof(cfg));
	if (ret)
		return ret;
	if (kml_probe_check_attach(&cfg))
		return -EINVAL;
	return kml_attach(&cfg);
}

static int kml_ioc_detach(void __user *uf, unsigned int usize)
{
	struct kml_probe_func f;
	unsigned int slot;
	struct kml_fn *fn;
	int ret;

	ret = kml_copy_struct_in(&f, sizeof(f), uf, usize, sizeof(f));
	if (ret)
		return ret;
	if (kml_probe_check_name(f.func, sizeof(f.func)))
		return -EINVAL;
	/*
	 * The slot and the stats set's name are given back together, at
	 * the end: an ATTACH of the same function waits for the lock and
	 * then succeeds, instead of finding the name still taken.
	 */
	mutex_lock(&kml_probe_lock);
	fn = kml_find_locked(f.func, &slot);
	if (fn) {
		kml_fn_detach(fn);
		kml_fns[slot] = NULL;
	}
	mutex_unlock(&kml_probe_lock);
	return fn ? 0 : -ENOENT;
}

static u32 kml_fn_state(struct kml_fn *fn)
{
	return fn->gone ? KML_PROBE_S_GONE : 0;
}

static int kml_ioc_list(void __user *ul, unsigned int usize)
{
	struct kml_probe_list *l;
	unsigned int i;
	int ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	ret = kml_copy_struct_in(l, sizeof(*l), ul, usize, sizeof(*l));
	if (ret)
		goto out;
	ret = -EINVAL;
	if (l->flags)
		goto out;
	memset(l, 0, sizeof(*l));
	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++) {
		struct kml_probe_list_entry *e = &l->funcs[l->count];

		if (!kml_fns[i])
			continue;
		strscpy(e->func, kml_fns[i]->cfg.func, sizeof(e->func));
		e->flags = kml_fns[i]->cfg.flags;
		e->state = kml_fn_state(kml_fns[i]);
		l->count++;
	}
	mutex_unlock(&kml_probe_lock);
	ret = kml_copy_struct_out(ul, usize, l, sizeof(*l));
out:
	kfree(l);
	return ret;
}

static void kml_read_last(struct kml_fn *fn, struct kml_probe_result *r)
{
	unsigned int seq;

	/* Lockless: a writer that lands meanwhile makes us read again. */
	do {
		seq = read_seqcount_begin(&fn->last_seq);
		memcpy(r->last_args, fn->last.args, sizeof(r->last_args));
		r->last_ret = fn->last.ret;
	} while (read_seqcount_retry(&fn->last_seq, seq));
}

static void kml_fill_result(struct kml_fn *fn, struct kml_probe_result *r,
			    struct kml_stats_hist *h)
{
	int cpu;

	r->flags = fn->cfg.flags;
	r->state = kml_fn_state(fn);
	r->nargs = fn->cfg.nargs;
	r->maxactive = fn->cfg.maxactive;
	kml_stats_hist_read(fn->stats, ST_LATENCY, h);
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY) {
		r->count = kml_stats_read(fn->stats, ST_CALLS);
	} else {
		r->count = h->count;
		r->sum_ns = h->sum;
		memcpy(r->hist, h->buckets, sizeof(r->hist));
	}
	r->nmissed = kml_fn_nmissed(fn) - READ_ONCE(fn->nmissed_base);
	r->filtered = kml_stats_read(fn->stats, ST_FILTERED);
	r->last_lost = kml_stats_read(fn->stats, ST_LAST_LOST);
	r->min_ns = U64_MAX;
	for_each_possible_cpu(cpu) {
		struct kml_minmax *mm = per_cpu_ptr(fn->minmax, cpu);

		r->min_ns = min(r->min_ns, READ_ONCE(mm->min));
		r->max_ns = max(r->max_ns, READ_ONCE(mm->max));
	}
	/* A reset racing a handler must not leave a minimum without calls. */
	if (r->min_ns == U64_MAX || !r->count) {
		r->min_ns = 0;
		r->max_ns = 0;
	}
	/* LAB probe 4: arguments and return values are kernel pointers as
	 * often as not: read them (kml_read_last()) for a caller with
	 * CAP_SYS_ADMIN in the initial user namespace only (quietly:
	 * ns_capable_noaudit()); for anyone else leave them zero and set
	 * KML_PROBE_S_REDACTED, as %p's hashing and kptr_restrict do for the
	 * rest of the kernel.
	 */
	if (ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN))
		kml_read_last(fn, r);
	else
		r->state |= KML_PROBE_S_REDACTED;
	/* LAB probe 4 end: kml_read_last(fn, r); */
}

struct kml_fill {
	struct kml_fn *fn;
	struct kml_probe_result *r;
	struct kml_stats_hist *h;
};

static void kml_fill_cb(void *data)
{
	struct kml_fill *f = data;

	kml_fill_result(f->fn, f->r, f->h);
}

static int kml_ioc_get(void __user *ur, unsigned int usize)
{
	struct kml_probe_result *r;
	struct kml_stats_hist *h;
	struct kml_fn *fn;
	int ret;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	ret = -ENOMEM;
	if (!r || !h)
		goto out;
	/* Everything past func is output, whatever the caller left there. */
	ret = kml_copy_struct_in(r, sizeof(*r), ur, usize, sizeof(*r));
	if (ret)
		goto out;
	ret = -EINVAL;
	if (kml_probe_check_name(r->func, sizeof(r->func)))
		goto out;
	memset((char *)r + sizeof(r->func), 0, sizeof(*r) - sizeof(r->func));
	mutex_lock(&kml_probe_lock);
	fn = kml_find_locked(r->func, NULL);
	if (fn) {
		struct kml_fill f = { .fn = fn, .r = r, .h = h };

		/*
		 * Every value subtracts a reset's baseline: read them all
		 * where no reset (RESET, or the control file) can land.
		 */
		kml_stats_without_resets(kml_fill_cb, &f);
	}
	mutex_unlock(&kml_probe_lock);
	ret = -ENOENT;
	if (!fn)
		goto out;
	ret = kml_copy_struct_out(ur, usize, r, sizeof(*r));
out:
	kfree(h);
	kfree(r);
	return ret;
}

static int kml_ioc_call(void __user *uc, unsigned int usize)
{
	u64 (*target)(u64 arg, u32 depth, u64 delay_ns);
	struct kml_probe_call c;
	int ret;
	u32 i;

	ret = kml_copy_struct_in(&c, sizeof(c), uc, usize, sizeof(c));
	if (ret)
		return ret;
	if (kml_probe_check_call(&c))
		return -EINVAL;
	/* A reference for the loop's length: the target may be unloaded. */
	target = symbol_get(kml_probe_target);
	if (!target)
		return -ENODEV;
	for (i = 0; i < c.count; i++) {
		target(c.arg, c.depth, c.delay_ns);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
	symbol_put(kml_probe_target);
	return ret;
}

/* RECORD, to start: the ring the caller names gets @fn's calls. */
static int kml_rec_start_locked(struct kml_fn *fn,
				const struct kml_probe_record *rc,
				const struct file *owner)
{
	struct file *(*fget_ring)(int fd);
	struct kml_rec *rec;
	int ret;

	lockdep_assert_held(&kml_probe_lock);
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY)
		return -EINVAL;
	if (rcu_access_pointer(fn->rec))
		return -EBUSY;
	rec = kzalloc(sizeof(*rec), GFP_KERNEL_ACCOUNT);
	if (!rec)
		return -ENOMEM;
	/* kml_ring is optional: looked up now, not linked against. */
	fget_ring = symbol_get(kml_ring_fget);
	rec->write = symbol_get(kml_ring_write_file);
	ret = -ENODEV;
	if (!fget_ring || !rec->write)
		goto out;
	rec->ring = fget_ring(rc->ring_fd);
	ret = PTR_ERR_OR_ZERO(rec->ring);
	if (ret)
		goto out;
	rec->id = rc->id;
	rec->owner = owner;
	/* Handlers see a whole kml_rec or none (rcu_dereference()). */
	rcu_assign_pointer(fn->rec, rec);
	symbol_put(kml_ring_fget);
	return 0;
out:
	if (fget_ring)
		symbol_put(kml_ring_fget);
	if (rec->write)
		symbol_put(kml_ring_write_file);
	kfree(rec);
	return ret;
}

/*
 * RECORD, to stop: unpublish, wait for the handlers, report the counts.
 * -ESRCH if @fn is not recording (never was, or someone stopped it).
 */
static int kml_rec_stop_locked(struct kml_fn *fn, struct kml_probe_record *rc)
{
	struct kml_rec *rec;

	rec = rcu_replace_pointer(fn->rec, NULL,
				  lockdep_is_held(&kml_probe_lock));
	if (!rec)
		return -ESRCH;
	/* Handlers run with preemption off, inside rcu_read_lock() too. */
	synchronize_rcu();
	kml_rec_free(rec, rc);
	return 0;
}

static int kml_ioc_record(struct file *file, void __user *ur,
			  unsigned int usize)
{
	struct kml_probe_record rc;
	struct kml_fn *fn;
	int ret;

	ret = kml_copy_struct_in(&rc, sizeof(rc), ur, usize, sizeof(rc));
	if (ret)
		return ret;
	if (kml_probe_check_record(&rc))
		return -EINVAL;
	rc.written = 0;
	rc.lost = 0;
	mutex_lock(&kml_probe_lock);
	fn = kml_find_locked(rc.func, NULL);
	ret = -ENOENT;
	if (fn && rc.ring_fd >= 0)
		ret = kml_rec_start_locked(fn, &rc, file);
	else if (fn)
		ret = kml_rec_stop_locked(fn, &rc);
	mutex_unlock(&kml_probe_lock);
	if (ret)
		return ret;
	return kml_copy_struct_out(ur, usize, &rc, sizeof(rc));
}

static int kml_ioc_reset(void)
{
	unsigned int i;

	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i])
			kml_stats_reset(kml_fns[i]->stats);	/* + the hook */
	mutex_unlock(&kml_probe_lock);
	return 0;
}

/*
 * A recording lasts as long as the file that started it is open: a
 * recorder that is killed must not leave the kernel writing into its
 * orphaned ring (which would also pin the ring and kml_ring.ko).
 */
static int kml_probe_release(struct inode *inode, struct file *file)
{
	unsigned int i;

	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++) {
		struct kml_rec *rec;

		if (!kml_fns[i])
			continue;
		rec = rcu_dereference_protected(kml_fns[i]->rec,
						lockdep_is_held(&kml_probe_lock));
		if (rec && rec->owner == file)
			kml_rec_stop_locked(kml_fns[i], NULL);
	}
	mutex_unlock(&kml_probe_lock);
	return 0;
}

static long kml_probe_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	unsigned int usize = _IOC_SIZE(cmd);
	void __user *up = (void __user *)arg;

	/* Fixed-size commands: the whole number must match. */
	if (cmd == KML_PROBE_IOC_GET_VERSION)
		return put_user(KML_PROBE_ABI_VERSION, (u32 __user *)up);
	/* Everyone may read results, with captured values withheld. */
	switch (KML_IOC_NOSIZE(cmd)) {
	case KML_IOC_NOSIZE(KML_PROBE_IOC_LIST):
		return kml_ioc_list(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_GET):
		return kml_ioc_get(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_ATTACH):
	case KML_IOC_NOSIZE(KML_PROBE_IOC_DETACH):
	case KML_IOC_NOSIZE(KML_PROBE_IOC_CALL):
	case KML_IOC_NOSIZE(KML_PROBE_IOC_RECORD):
		break;
	default:
		if (cmd != KML_PROBE_IOC_RESET)
			return -ENOTTY;
	}
	/* LAB probe 4: planting probes in the kernel (and CALL, RESET,
	 * RECORD) is for the administrator only: -EPERM without
	 * CAP_SYS_ADMIN.
	 */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	/* LAB probe 4 end */
	switch (KML_IOC_NOSIZE(cmd)) {
	case KML_IOC_NOSIZE(KML_PROBE_IOC_ATTACH):
		return kml_ioc_attach(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_DETACH):
		return kml_ioc_detach(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_CALL):
		return kml_ioc_call(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_RECORD):
		return kml_ioc_record(file, up, usize);
	default:
		return kml_ioc_reset();
	}
}

/*
 * A probed module going away takes its probes' breakpoints with it
 * (kprobes marks them gone in its own notifier, which runs before ours);
 * ours stay listed, flagged gone, counting nothing, until detached. A
 * detach then unregisters a gone probe, which kprobes handles cleanly.
 * So does a module going live, for probes in its init text: that text
 * is about to be freed.
 */
static int kml_module_notify(struct notifier_block *nb, unsigned long action,
			     void *data)
{
	struct module *mod = data;
	unsigned long addr;
	unsigned int i;

	if (action != MODULE_STATE_GOING && action != MODULE_STATE_LIVE)
		return NOTIFY_DONE;
	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++) {
		if (!kml_fns[i])
			continue;
		addr = (unsigned long)kml_fn_kprobe(kml_fns[i])->addr;
		if (within_module_init(addr, mod) ||
		    (action == MODULE_STATE_GOING && within_module(addr, mod)))
			kml_fns[i]->gone = true;
	}
	mutex_unlock(&kml_probe_lock);
	return NOTIFY_DONE;
}

static struct notifier_block kml_module_nb = {
	.notifier_call	= kml_module_notify,
	.priority	= -1,	/* after kprobes' own (0) */
};

static const struct file_operations kml_probe_fops = {
	.owner		= THIS_MODULE,
	.release	= kml_probe_release,
	.unlocked_ioctl	= kml_probe_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/* 0666: results are for everyone; changing probes checks CAP_SYS_ADMIN. */
static struct miscdevice kml_probe_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_probe",
	.fops	= &kml_probe_fops,
	.mode	= 0666,
};

static int __init kml_probe_init(void)
{
	int ret = register_module_notifier(&kml_module_nb);

	if (ret)
		return ret;
	ret = misc_register(&kml_probe_misc);
	if (ret)
		unregister_module_notifier(&kml_module_nb);
	return ret;
}

static void __exit kml_probe_exit(void)
{
	unsigned int i;

	/* No file is open (fops.owner), but probes outlive their files. */
	misc_deregister(&kml_probe_misc);
	unregister_module_notifier(&kml_module_nb);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i])
			kml_fn_detach(kml_fns[i]);
}

module_init(kml_probe_init);
module_exit(kml_probe_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel function latency with kretprobes and jprobe-style arguments");
