// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe's control plane: the table of probed functions (attaching
 * one: its memory, its kml_stats set and reset, its task filter; finding,
 * freeing, and marking gone those whose module left) and the ioctls that
 * attach, detach, list, read and call. The lab hands this file over
 * complete (the sensor lab teaches the ioctl itself); kml_probe_main.c
 * plants and removes the probes it asks for.
 */
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "../include/kml_ioctl.h"
#include "../include/kml_stats.h"
#include "../kml_stats/kml_stats_logic.h"
#include "kml_probe.h"
#include "kml_probe_logic.h"
/* Only for symbol_get(): kml_probe_target.ko may come and go. */
#include "kml_probe_target.h"

static const struct kml_stats_desc kml_fn_stats[] = {
	[ST_LATENCY]	= { "latency_ns", KML_STAT_HIST },
	[ST_CALLS]	= { "calls", KML_STAT_COUNTER },
	[ST_FILTERED]	= { "filtered", KML_STAT_COUNTER },
	[ST_LAST_LOST]	= { "last_lost", KML_STAT_COUNTER },
	[ST_BACKWARDS]	= { "clock_backwards", KML_STAT_COUNTER },
};

/*
 * Guards kml_probe_fns[] and the probes' lifetimes; never taken by
 * handlers.
 */
DEFINE_MUTEX(kml_probe_lock);
struct kml_fn *kml_probe_fns[KML_PROBE_MAX_FUNCS];

/*
 * Calls kprobes dropped: recursion (kp.nmissed) and no free instance.
 * kprobes bumps both with a plain ++ from its handlers on any CPU; we
 * read a statistic that may be one call behind, a race KCSAN is told
 * about (data_race()) because the writer is not ours to mark.
 */
u64 kml_probe_fn_nmissed(struct kml_fn *fn)
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
	WRITE_ONCE(fn->nmissed_base, kml_probe_fn_nmissed(fn));
	/* May spin, briefly: holders are handlers, which never wait. */
	raw_spin_lock_irqsave(&fn->last_lock, flags);
	raw_write_seqcount_begin(&fn->last_seq);
	memset(&fn->last, 0, sizeof(fn->last));
	raw_write_seqcount_end(&fn->last_seq);
	raw_spin_unlock_irqrestore(&fn->last_lock, flags);
}

struct kml_fn *kml_probe_find_locked(const char *func, unsigned int *slot)
{
	unsigned int i;

	lockdep_assert_held(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_probe_fns[i] && !strcmp(kml_probe_fns[i]->cfg.func, func)) {
			if (slot)
				*slot = i;
			return kml_probe_fns[i];
		}
	return NULL;
}

void kml_probe_fn_free(struct kml_fn *fn)
{
	/* Its probes are gone (or never were): so are their handlers. */
	struct kml_rec *rec = rcu_dereference_protected(fn->rec, true);

	if (rec)
		kml_probe_rec_free(rec, NULL);
	kml_stats_unregister(fn->stats);
	put_pid(fn->task);
	free_percpu(fn->minmax);
	kfree(fn);
}

/*
 * Is @addr in a module? is_module_text_address() and __module_address()
 * are not exported to modules; %pS's text is, and names the module:
 * "func+0x0/0x40 [mod]".
 */
int kml_probe_in_module(void *addr)
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
	if (kml_probe_find_locked(cfg->func, NULL))
		goto unlock;
	ret = -ENOSPC;
	for (slot = 0; slot < KML_PROBE_MAX_FUNCS; slot++)
		if (!kml_probe_fns[slot])
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

	ret = kml_probe_fn_register(fn);
	if (ret)
		goto free;
	kml_probe_fns[slot] = fn;
	mutex_unlock(&kml_probe_lock);
	return 0;
free:
	kml_probe_fn_free(fn);
unlock:
	mutex_unlock(&kml_probe_lock);
	return ret;
}

int kml_probe_ioc_attach(void __user *ua, unsigned int usize)
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

int kml_probe_ioc_detach(void __user *uf, unsigned int usize)
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
	fn = kml_probe_find_locked(f.func, &slot);
	if (fn) {
		kml_probe_fn_detach(fn);
		kml_probe_fns[slot] = NULL;
	}
	mutex_unlock(&kml_probe_lock);
	return fn ? 0 : -ENOENT;
}

int kml_probe_ioc_list(void __user *ul, unsigned int usize)
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

		if (!kml_probe_fns[i])
			continue;
		strscpy(e->func, kml_probe_fns[i]->cfg.func, sizeof(e->func));
		e->flags = kml_probe_fns[i]->cfg.flags;
		e->state = kml_fn_state(kml_probe_fns[i]);
		l->count++;
	}
	mutex_unlock(&kml_probe_lock);
	ret = kml_copy_struct_out(ul, usize, l, sizeof(*l));
out:
	kfree(l);
	return ret;
}

struct kml_fill {
	struct kml_fn *fn;
	struct kml_probe_result *r;
	struct kml_stats_hist *h;
};

static void kml_fill_cb(void *data)
{
	struct kml_fill *f = data;

	kml_probe_fill_result(f->fn, f->r, f->h);
}

int kml_probe_ioc_get(void __user *ur, unsigned int usize)
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
	fn = kml_probe_find_locked(r->func, NULL);
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

int kml_probe_ioc_call(void __user *uc, unsigned int usize)
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

int kml_probe_ioc_reset(void)
{
	unsigned int i;

	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++)
		if (kml_probe_fns[i])
			kml_stats_reset(kml_probe_fns[i]->stats); /* and hook */
	mutex_unlock(&kml_probe_lock);
	return 0;
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
		if (!kml_probe_fns[i])
			continue;
		addr = (unsigned long)kml_fn_kprobe(kml_probe_fns[i])->addr;
		if (within_module_init(addr, mod) ||
		    (action == MODULE_STATE_GOING && within_module(addr, mod)))
			kml_probe_fns[i]->gone = true;
	}
	mutex_unlock(&kml_probe_lock);
	return NOTIFY_DONE;
}

struct notifier_block kml_probe_module_nb = {
	.notifier_call	= kml_module_notify,
	.priority	= -1,	/* after kprobes' own (0) */
};
