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
 * rather than measure it wrongly; we report that number, never hide it.
 *
 * jprobes, which handed a handler the probed function's arguments, were
 * removed in 4.15. The entry handler does the same here with
 * regs_get_kernel_argument(), and filters calls by thread, process or
 * argument value before any instance is spent on them.
 *
 * Functions are attached by name at run time through ioctls on
 * /dev/kml_probe; latencies go to per-CPU log2 histograms published
 * through kml_stats and readable in binary form by the client. A target
 * function of controllable duration (kml_probe_target.ko, called through
 * the CALL ioctl) lets tests check the buckets.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "../include/kml_stats.h"
#include "../kml_stats/kml_stats_logic.h"
#include "kml_probe_logic.h"
/* In kml_probe_target.ko, a module that is not reloaded (see there). */
#include "kml_probe_target.h"

enum { ST_LATENCY, ST_CALLS, ST_FILTERED };

static const struct kml_stats_desc kml_fn_stats[] = {
	[ST_LATENCY]	= { "latency_ns", KML_STAT_HIST },
	[ST_CALLS]	= { "calls", KML_STAT_COUNTER },
	[ST_FILTERED]	= { "filtered", KML_STAT_COUNTER },
};

struct kml_minmax {
	u64 min;
	u64 max;
};

/* One probed function. */
struct kml_fn {
	struct kml_probe_attach cfg;
	union {
		struct kretprobe krp;
		struct kprobe kp;		/* KML_PROBE_F_COUNT_ONLY */
	};
	struct kml_stats_set *stats;		/* counts, sum, histogram */
	struct kml_minmax __percpu *minmax;
	raw_spinlock_t last_lock;		/* the most recent call's values */
	u64 last_args[KML_PROBE_MAX_ARGS];
	u64 last_ret;
};

/* What the entry handler leaves for the return handler, per call. */
struct kml_inst {
	u64 t0;
	u64 args[KML_PROBE_MAX_ARGS];
};

static DEFINE_MUTEX(kml_probe_lock);		/* guards kml_fns[] */
static struct kml_fn *kml_fns[KML_PROBE_MAX_FUNCS];

static bool kml_fn_pass(struct kml_fn *fn, struct pt_regs *regs)
{
	u64 arg = 0;

	if (fn->cfg.flags & KML_PROBE_F_ARG)
		arg = regs_get_kernel_argument(regs, fn->cfg.arg_index);
	if (kml_probe_pass(&fn->cfg, current->pid, current->tgid, arg))
		return true;
	kml_stats_inc(fn->stats, ST_FILTERED);
	return false;
}

static int kml_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kml_fn *fn = container_of(get_kretprobe(ri), struct kml_fn, krp);
	struct kml_inst *in = (struct kml_inst *)ri->data;
	unsigned int i;

	/* Non-zero: drop this instance, the return handler will not run. */
	if (!kml_fn_pass(fn, regs))
		return 1;
	for (i = 0; i < fn->cfg.nargs; i++)
		in->args[i] = regs_get_kernel_argument(regs, i);
	/*
	 * Last, so the handler's own work is not part of the latency.
	 * Handlers run from the int3 trap, which may have interrupted the
	 * timekeeping code itself: only the NMI-safe clock may be read here
	 * (lockdep says so on the debug kernel; BPF uses the same clock).
	 */
	in->t0 = ktime_get_mono_fast_ns();
	return 0;
}

/* A probe on its own handler would recurse: keep kprobes off it. */
NOKPROBE_SYMBOL(kml_entry);

static int kml_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kml_fn *fn = container_of(get_kretprobe(ri), struct kml_fn, krp);
	struct kml_inst *in = (struct kml_inst *)ri->data;
	u64 ns = ktime_get_mono_fast_ns() - in->t0;
	struct kml_minmax *mm;
	unsigned long flags;

	kml_stats_hist_add(fn->stats, ST_LATENCY, ns);
	kml_stats_inc(fn->stats, ST_CALLS);
	/* Handlers run with preemption off: this CPU's slot is ours. */
	mm = this_cpu_ptr(fn->minmax);
	if (ns < mm->min)
		mm->min = ns;
	if (ns > mm->max)
		mm->max = ns;
	if (fn->cfg.nargs) {
		raw_spin_lock_irqsave(&fn->last_lock, flags);
		memcpy(fn->last_args, in->args, sizeof(in->args));
		fn->last_ret = regs_return_value(regs);
		raw_spin_unlock_irqrestore(&fn->last_lock, flags);
	}
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

static void kml_fn_reset(struct kml_fn *fn)
{
	int cpu;

	kml_stats_reset(fn->stats);
	for_each_possible_cpu(cpu) {
		struct kml_minmax *mm = per_cpu_ptr(fn->minmax, cpu);

		mm->min = U64_MAX;
		mm->max = 0;
	}
}

static struct kml_fn *kml_find_locked(const char *func)
{
	unsigned int i;

	lockdep_assert_held(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i] && !strcmp(kml_fns[i]->cfg.func, func))
			return kml_fns[i];
	return NULL;
}

static void kml_fn_free(struct kml_fn *fn)
{
	kml_stats_unregister(fn->stats);
	free_percpu(fn->minmax);
	kfree(fn);
}

static void kml_fn_detach(struct kml_fn *fn)
{
	/* Waits until no handler of this probe is running anywhere. */
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY)
		unregister_kprobe(&fn->kp);
	else
		unregister_kretprobe(&fn->krp);
	kml_fn_free(fn);
}

static int kml_attach(const struct kml_probe_attach *cfg)
{
	char set_name[KML_STATS_NAME_MAX + 1];
	unsigned int slot;
	struct kml_fn *fn;
	int ret;

	mutex_lock(&kml_probe_lock);
	ret = -EEXIST;
	if (kml_find_locked(cfg->func))
		goto unlock;
	ret = -ENOSPC;
	for (slot = 0; slot < KML_PROBE_MAX_FUNCS; slot++)
		if (!kml_fns[slot])
			break;
	if (slot == KML_PROBE_MAX_FUNCS)
		goto unlock;

	ret = -ENOMEM;
	fn = kzalloc(sizeof(*fn), GFP_KERNEL);
	if (!fn)
		goto unlock;
	fn->cfg = *cfg;
	raw_spin_lock_init(&fn->last_lock);
	fn->minmax = alloc_percpu(struct kml_minmax);
	if (!fn->minmax) {
		kfree(fn);
		goto unlock;
	}
	/* The handlers publish here: it must exist before they can run. */
	kml_probe_set_name(cfg->func, slot, set_name, sizeof(set_name));
	fn->stats = kml_stats_register(set_name, kml_fn_stats,
				       ARRAY_SIZE(kml_fn_stats));
	if (IS_ERR(fn->stats)) {
		ret = PTR_ERR(fn->stats);
		fn->stats = NULL;
		kml_fn_free(fn);
		goto unlock;
	}
	kml_fn_reset(fn);

	if (cfg->flags & KML_PROBE_F_COUNT_ONLY) {
		fn->kp.symbol_name = fn->cfg.func;
		fn->kp.pre_handler = kml_pre;
		ret = register_kprobe(&fn->kp);
	} else {
		fn->krp.kp.symbol_name = fn->cfg.func;
		fn->krp.entry_handler = kml_entry;
		fn->krp.handler = kml_return;
		fn->krp.data_size = sizeof(struct kml_inst);
		fn->krp.maxactive = cfg->maxactive;
		ret = register_kretprobe(&fn->krp);
		/* The kernel picks a default for 0; report what it chose. */
		fn->cfg.maxactive = fn->krp.maxactive;
	}
	if (ret) {
		/* -ENOENT: no such symbol; -EINVAL: kprobes refuse it. */
		kml_fn_free(fn);
		goto unlock;
	}
	kml_fns[slot] = fn;
unlock:
	mutex_unlock(&kml_probe_lock);
	return ret;
}

static int kml_ioc_attach(struct kml_probe_attach __user *ua)
{
	struct kml_probe_attach cfg;

	if (copy_from_user(&cfg, ua, sizeof(cfg)))
		return -EFAULT;
	if (kml_probe_check_attach(&cfg))
		return -EINVAL;
	return kml_attach(&cfg);
}

static int kml_ioc_detach(struct kml_probe_func __user *uf)
{
	struct kml_probe_func f;
	struct kml_fn *fn;
	unsigned int i;

	if (copy_from_user(&f, uf, sizeof(f)))
		return -EFAULT;
	if (kml_probe_check_name(f.func, sizeof(f.func)))
		return -EINVAL;
	mutex_lock(&kml_probe_lock);
	fn = kml_find_locked(f.func);
	for (i = 0; fn && i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i] == fn)
			kml_fns[i] = NULL;
	mutex_unlock(&kml_probe_lock);
	if (!fn)
		return -ENOENT;
	kml_fn_detach(fn);
	return 0;
}

static int kml_ioc_list(struct kml_probe_list __user *ul)
{
	struct kml_probe_list *l;
	unsigned int i;
	u32 size;
	int ret;

	if (get_user(size, &ul->size))
		return -EFAULT;
	if (size != sizeof(*l))
		return -EINVAL;
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->size = sizeof(*l);
	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i])
			strscpy(l->funcs[l->count++].func, kml_fns[i]->cfg.func,
				KML_PROBE_FUNC_LEN);
	mutex_unlock(&kml_probe_lock);
	ret = copy_to_user(ul, l, sizeof(*l)) ? -EFAULT : 0;
	kfree(l);
	return ret;
}

static void kml_fill_result(struct kml_fn *fn, struct kml_probe_result *r,
			    struct kml_stats_hist *h)
{
	unsigned long flags;
	int cpu;

	r->flags = fn->cfg.flags;
	r->nargs = fn->cfg.nargs;
	r->maxactive = fn->cfg.maxactive;
	kml_stats_hist_read(fn->stats, ST_LATENCY, h);
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY) {
		r->count = kml_stats_read(fn->stats, ST_CALLS);
		r->nmissed = fn->kp.nmissed;
	} else {
		r->count = h->count;
		r->sum_ns = h->sum;
		memcpy(r->hist, h->buckets, sizeof(r->hist));
		r->nmissed = fn->krp.nmissed;
	}
	r->filtered = kml_stats_read(fn->stats, ST_FILTERED);
	r->min_ns = U64_MAX;
	for_each_possible_cpu(cpu) {
		struct kml_minmax *mm = per_cpu_ptr(fn->minmax, cpu);

		r->min_ns = min(r->min_ns, READ_ONCE(mm->min));
		r->max_ns = max(r->max_ns, READ_ONCE(mm->max));
	}
	if (r->min_ns == U64_MAX)
		r->min_ns = 0;
	raw_spin_lock_irqsave(&fn->last_lock, flags);
	memcpy(r->last_args, fn->last_args, sizeof(r->last_args));
	r->last_ret = fn->last_ret;
	raw_spin_unlock_irqrestore(&fn->last_lock, flags);
}

static int kml_ioc_get(struct kml_probe_result __user *ur)
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
	ret = -EFAULT;
	if (copy_from_user(r->func, ur->func, sizeof(r->func)))
		goto out;
	ret = -EINVAL;
	if (kml_probe_check_name(r->func, sizeof(r->func)))
		goto out;
	mutex_lock(&kml_probe_lock);
	fn = kml_find_locked(r->func);
	if (fn)
		kml_fill_result(fn, r, h);
	mutex_unlock(&kml_probe_lock);
	ret = -ENOENT;
	if (!fn)
		goto out;
	ret = copy_to_user(ur, r, sizeof(*r)) ? -EFAULT : 0;
out:
	kfree(h);
	kfree(r);
	return ret;
}

static int kml_ioc_call(struct kml_probe_call __user *uc)
{
	struct kml_probe_call c;
	u32 i;

	if (copy_from_user(&c, uc, sizeof(c)))
		return -EFAULT;
	if (kml_probe_check_call(&c))
		return -EINVAL;
	for (i = 0; i < c.count; i++) {
		kml_probe_target(c.arg, c.depth, c.delay_ns);
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

static long kml_probe_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	void __user *up = (void __user *)arg;
	unsigned int i;

	switch (cmd) {
	case KML_PROBE_IOC_GET_VERSION:
		return put_user(KML_PROBE_ABI_VERSION, (u32 __user *)up);
	case KML_PROBE_IOC_LIST:
		return kml_ioc_list(up);
	case KML_PROBE_IOC_GET:
		return kml_ioc_get(up);
	case KML_PROBE_IOC_ATTACH:
	case KML_PROBE_IOC_DETACH:
	case KML_PROBE_IOC_RESET:
	case KML_PROBE_IOC_CALL:
		break;
	default:
		return -ENOTTY;
	}
	/* Planting probes in the kernel is for the administrator only. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case KML_PROBE_IOC_ATTACH:
		return kml_ioc_attach(up);
	case KML_PROBE_IOC_DETACH:
		return kml_ioc_detach(up);
	case KML_PROBE_IOC_CALL:
		return kml_ioc_call(up);
	default: /* KML_PROBE_IOC_RESET */
		mutex_lock(&kml_probe_lock);
		for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
			if (kml_fns[i])
				kml_fn_reset(kml_fns[i]);
		mutex_unlock(&kml_probe_lock);
		return 0;
	}
}

static const struct file_operations kml_probe_fops = {
	.owner		= THIS_MODULE,
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
	return misc_register(&kml_probe_misc);
}

static void __exit kml_probe_exit(void)
{
	unsigned int i;

	/* No file is open (fops.owner), but probes outlive their files. */
	misc_deregister(&kml_probe_misc);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_fns[i])
			kml_fn_detach(kml_fns[i]);
}

module_init(kml_probe_init);
module_exit(kml_probe_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel function latency with kretprobes and jprobe-style arguments");
