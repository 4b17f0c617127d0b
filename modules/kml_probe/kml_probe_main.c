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
 *
 * This file is the mechanism: the handlers, planting and removing the
 * probe, what GET may show and who may change what. The rest is handed
 * over complete: the structs every part shares (kml_probe.h), the table
 * of probed functions, the reset and the ioctls that attach, detach,
 * list, read and call (kml_probe_ctl.c), starting and stopping a
 * recording (kml_probe_rec.c), and the pure checks and filter, also
 * built on the host (kml_probe_logic.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seqlock.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "../include/kml_ioctl.h"
#include "../include/kml_stats.h"
#include "kml_probe.h"
#include "kml_probe_logic.h"
#include "kml_probe_trace.h"

/* What the entry handler leaves for the return handler, per call. */
struct kml_inst {
	u64 t0;
	u64 args[KML_PROBE_MAX_ARGS];
};

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

	/* LAB probe 3: publish in->args and @ret as fn->last, the one
	 * record every CPU's handlers share. Two rules: a reader
	 * (kml_read_last(), which takes no lock) never keeps half of one
	 * call and half of another, and this handler never waits, since
	 * what it would wait for may be the code it interrupted. So keep
	 * writers apart with fn->last_lock without ever spinning on it (a
	 * record that cannot be published at once is dropped and counted
	 * as ST_LAST_LOST), and let readers see a write with fn->last_seq.
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

void kml_probe_fn_detach(struct kml_fn *fn)
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
	kml_probe_fn_free(fn);
}

int kml_probe_fn_register(struct kml_fn *fn)
{
	struct kprobe *kp = kml_fn_kprobe(fn);
	int ret;

	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY) {
		fn->kp.symbol_name = fn->cfg.func;
		fn->kp.pre_handler = kml_pre;
		ret = register_kprobe(&fn->kp);
	} else {
		/* LAB probe 1: plant a kretprobe on the function named
		 * cfg.func, with kml_entry() and kml_return() as its two
		 * handlers, and leave register_kretprobe()'s result in ret.
		 * Size it: how much private memory each call in flight needs
		 * (what kml_entry() leaves for kml_return()), and how many
		 * calls may be in flight (what the caller asked, cfg.maxactive;
		 * 0 lets the kernel choose, and GET must report the number in
		 * force, so leave it in cfg.maxactive).
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
		ret = kml_probe_in_module(kp->addr);
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

void kml_probe_fill_result(struct kml_fn *fn, struct kml_probe_result *r,
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
	r->nmissed = kml_probe_fn_nmissed(fn) - READ_ONCE(fn->nmissed_base);
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
		return kml_probe_ioc_list(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_GET):
		return kml_probe_ioc_get(up, usize);
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
		return kml_probe_ioc_attach(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_DETACH):
		return kml_probe_ioc_detach(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_CALL):
		return kml_probe_ioc_call(up, usize);
	case KML_IOC_NOSIZE(KML_PROBE_IOC_RECORD):
		return kml_probe_ioc_record(file, up, usize);
	default:
		return kml_probe_ioc_reset();
	}
}

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
	int ret = register_module_notifier(&kml_probe_module_nb);

	if (ret)
		return ret;
	ret = misc_register(&kml_probe_misc);
	if (ret)
		unregister_module_notifier(&kml_probe_module_nb);
	return ret;
}

static void __exit kml_probe_exit(void)
{
	unsigned int i;

	/* No file is open (fops.owner), but probes outlive their files. */
	misc_deregister(&kml_probe_misc);
	unregister_module_notifier(&kml_probe_module_nb);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_probe_fns[i])
			kml_probe_fn_detach(kml_probe_fns[i]);
}

module_init(kml_probe_init);
module_exit(kml_probe_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel function latency with kretprobes and jprobe-style arguments");
