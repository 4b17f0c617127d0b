// SPDX-License-Identifier: GPL-2.0
/*
 * kml_stats - statistics through procfs and seq_file.
 *
 * The mechanism taught here is the seq_file iterator: /proc/kmodlab/stats
 * is produced one record at a time by start/next/show/stop, so a file of
 * any size streams through reads of any size, lseek() and pread() work,
 * and no buffer the size of the file is ever built. seq_file remembers
 * only a record index between read() calls; start() walks to it again
 * under the registry lock, so a set that disappears between two reads
 * simply stops being listed instead of leaving a dangling pointer.
 *
 * Other kmodlab modules publish counters here through an exported API.
 * Counters are per-CPU: the hot path is one this_cpu_add() with no lock
 * and no shared cache line, and the cost moves to the (rare) reader, who
 * sums over CPUs. Reset is a per-set baseline subtracted at read time, so
 * resetting never writes to another CPU's counters while it updates them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "../include/kml_stats.h"
#include "kml_stats_logic.h"
#include "kml_stats_trace.h"

/*
 * __alloc_percpu() cannot hand out more than PCPU_MIN_UNIT_SIZE at once,
 * which bounds how many 64-bit slots one set may own. The API header
 * promises KML_STATS_MAX_SLOTS; the build checks the allocator agrees.
 */
static_assert(KML_STATS_MAX_SLOTS * sizeof(u64) <= PCPU_MIN_UNIT_SIZE);
#define KML_HIST_SLOTS		KML_STATS_HIST_SLOTS
#define KML_DEMO_MAX		4000

struct kml_stats_item {
	char name[KML_STATS_NAME_MAX + 1];
	enum kml_stats_type type;
	unsigned int slot;
};

struct kml_stats_set {
	struct list_head node;		/* on kml_sets, under kml_lock */
	char name[KML_STATS_NAME_MAX + 1];
	unsigned int nslots;
	u64 __percpu *slots;
	u64 *base;			/* reset baseline, written under kml_lock */
	void (*on_reset)(void *data);	/* under kml_lock */
	void *on_reset_data;
	unsigned int n;
	struct kml_stats_item items[];
};

/* Serialises the registry against readers' start()..stop() windows. */
static DEFINE_MUTEX(kml_lock);
static LIST_HEAD(kml_sets);
static struct proc_dir_entry *kml_proc_dir;

/* kml_stats publishes its own activity, dogfooding the API. */
enum {
	KML_SELF_OPENS,
	KML_SELF_RESETS,
	KML_SELF_CTL_ERRORS,
	KML_SELF_READ_BYTES,
};

static const struct kml_stats_desc kml_self_desc[] = {
	[KML_SELF_OPENS]	= { "opens", KML_STAT_COUNTER },
	[KML_SELF_RESETS]	= { "resets", KML_STAT_COUNTER },
	[KML_SELF_CTL_ERRORS]	= { "control_errors", KML_STAT_COUNTER },
	[KML_SELF_READ_BYTES]	= { "read_bytes", KML_STAT_HIST },
};

static struct kml_stats_set *kml_self;

/*
 * The self-statistics change on every open() and read(), so a test that
 * compares two reads byte for byte turns them off with self_stats=0.
 */
static bool self_stats = true;
module_param(self_stats, bool, 0444);
MODULE_PARM_DESC(self_stats, "publish kml_stats' own opens, resets and read sizes (default Y)");

static void kml_self_inc(unsigned int id)
{
	if (kml_self)
		kml_stats_inc(kml_self, id);
}

static struct kml_stats_set *kml_find_locked(const char *name)
{
	struct kml_stats_set *set;

	lockdep_assert_held(&kml_lock);
	list_for_each_entry(set, &kml_sets, node)
		if (!strcmp(set->name, name))
			return set;
	return NULL;
}

static void kml_set_free(struct kml_stats_set *set)
{
	if (!set)
		return;
	free_percpu(set->slots);
	kvfree(set->base);
	kvfree(set);
}

/*
 * Validates @desc and builds a set from it, not yet listed: its owner may
 * fill it in before any reader sees it, and a failure has nothing to undo.
 */
static struct kml_stats_set *kml_set_alloc(const char *name,
					   const struct kml_stats_desc *desc,
					   unsigned int n)
{
	struct kml_stats_set *set;
	unsigned int i, j, nslots = 0;

	if (!name || !kml_stats_name_valid(name) || !desc || n == 0 ||
	    n > KML_STATS_MAX_SLOTS)
		return ERR_PTR(-EINVAL);
	for (i = 0; i < n; i++) {
		if (!desc[i].name || !kml_stats_name_valid(desc[i].name))
			return ERR_PTR(-EINVAL);
		if (desc[i].type == KML_STAT_COUNTER)
			nslots += 1;
		else if (desc[i].type == KML_STAT_HIST)
			nslots += KML_HIST_SLOTS;
		else
			return ERR_PTR(-EINVAL);
		if (nslots > KML_STATS_MAX_SLOTS)
			return ERR_PTR(-EINVAL);
	}

	/*
	 * A set of KML_STATS_MAX_SLOTS counters has 160 KiB of items and
	 * 32 KiB of baseline: kvzalloc() falls back to vmalloc rather than
	 * need physically contiguous pages (an order-6 allocation) that a
	 * fragmented machine may not have. Sets are created by modules
	 * (at load, or on a privileged request such as attaching a probe),
	 * not by unprivileged users, so plain GFP_KERNEL.
	 */
	set = kvzalloc(struct_size(set, items, n), GFP_KERNEL);
	if (!set)
		return ERR_PTR(-ENOMEM);
	set->n = n;
	strscpy(set->name, name, sizeof(set->name));
	set->nslots = nslots;
	set->slots = __alloc_percpu(nslots * sizeof(u64), sizeof(u64));
	set->base = kvcalloc(nslots, sizeof(u64), GFP_KERNEL);
	if (!set->slots || !set->base) {
		kml_set_free(set);
		return ERR_PTR(-ENOMEM);
	}

	nslots = 0;
	for (i = 0; i < n; i++) {
		strscpy(set->items[i].name, desc[i].name,
			sizeof(set->items[i].name));
		set->items[i].type = desc[i].type;
		set->items[i].slot = nslots;
		nslots += desc[i].type == KML_STAT_HIST ? KML_HIST_SLOTS : 1;
		/* Duplicates would make two lines a parser cannot tell apart. */
		for (j = 0; j < i; j++) {
			if (!strcmp(set->items[j].name, set->items[i].name)) {
				kml_set_free(set);
				return ERR_PTR(-EINVAL);
			}
		}
	}
	return set;
}

/*
 * Lists @set in the place of @old, which has the same name and leaves the
 * list in the same step, so a reader sees one or the other, never both
 * and never neither; with no @old, at the end, unless the name is taken.
 */
static int kml_list_locked(struct kml_stats_set *set, struct kml_stats_set *old)
{
	lockdep_assert_held(&kml_lock);
	if (old) {
		list_replace(&old->node, &set->node);
		return 0;
	}
	if (kml_find_locked(set->name))
		return -EEXIST;
	list_add_tail(&set->node, &kml_sets);
	return 0;
}

/**
 * kml_stats_register() - publish a named set of counters and histograms
 * @name: set name, unique among registered sets
 * @desc: the statistics, in the order their ids are used; names are copied
 * @n: number of entries in @desc
 *
 * Context: process context, may sleep.
 * Return: the new set, or ERR_PTR(-EINVAL) for a bad name, an empty or
 * oversized set or duplicate statistic names, ERR_PTR(-EEXIST) if @name is
 * taken, ERR_PTR(-ENOMEM).
 */
struct kml_stats_set *kml_stats_register(const char *name,
					 const struct kml_stats_desc *desc,
					 unsigned int n)
{
	struct kml_stats_set *set = kml_set_alloc(name, desc, n);
	int ret;

	if (IS_ERR(set))
		return set;
	mutex_lock(&kml_lock);
	ret = kml_list_locked(set, NULL);
	mutex_unlock(&kml_lock);
	if (ret) {
		kml_set_free(set);
		return ERR_PTR(ret);
	}
	return set;
}
EXPORT_SYMBOL_GPL(kml_stats_register);

/**
 * kml_stats_unregister() - withdraw a set and free it
 * @set: from kml_stats_register(); NULL and error pointers are ignored
 *
 * The caller must have stopped updating @set. Readers in the middle of
 * the stats file are safe: they hold no reference to a set between two
 * read() calls, and kml_lock keeps it alive during one.
 *
 * Context: process context, may sleep.
 */
void kml_stats_unregister(struct kml_stats_set *set)
{
	if (IS_ERR_OR_NULL(set))
		return;
	mutex_lock(&kml_lock);
	list_del(&set->node);
	mutex_unlock(&kml_lock);
	kml_set_free(set);
}
EXPORT_SYMBOL_GPL(kml_stats_unregister);

static bool kml_item_ok(struct kml_stats_set *set, unsigned int id,
			enum kml_stats_type type)
{
	/* A wrong id is a bug in the caller: say so once, never corrupt. */
	return !WARN_ON_ONCE(id >= set->n || set->items[id].type != type);
}

/*
 * Counters and histogram sums alike: one per-CPU add, IRQ-safe. (gcov
 * sees the arms of this_cpu_add()'s switch on the operand's size and
 * value, which the compiler decides: only one exists in the object.)
 */
static void kml_slot_add(struct kml_stats_set *set, unsigned int slot, u64 delta)
{
	this_cpu_add(set->slots[slot], delta); /* LCOV_EXCL_BR_LINE: compile-time switch */
}

/**
 * kml_stats_add() - add to a counter
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER in the set's descriptor array
 * @delta: amount to add
 *
 * Context: any context, including hard IRQ; never sleeps or locks.
 */
void kml_stats_add(struct kml_stats_set *set, unsigned int id, u64 delta)
{
	if (kml_item_ok(set, id, KML_STAT_COUNTER))
		kml_slot_add(set, set->items[id].slot, delta);
}
EXPORT_SYMBOL_GPL(kml_stats_add);

/**
 * kml_stats_counter() - a counter's per-CPU slot, for a hot path
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER in the set's descriptor array
 *
 * For callers that count on every packet or call: they look the slot up
 * once and add with this_cpu_add(*slot, delta), inline, instead of a
 * call to kml_stats_add() and its checks each time. The slot is valid
 * until kml_stats_unregister(@set); a reset zeroes it as it zeroes the
 * others.
 *
 * Return: the slot, or NULL for an @id that is no counter of @set (a bug
 * in the caller, warned about once).
 */
u64 __percpu *kml_stats_counter(struct kml_stats_set *set, unsigned int id)
{
	if (!kml_item_ok(set, id, KML_STAT_COUNTER))
		return NULL;
	return set->slots + set->items[id].slot;
}
EXPORT_SYMBOL_GPL(kml_stats_counter);

/**
 * kml_stats_hist_add() - record a value in a log2 histogram
 * @set: the set
 * @id: index of a %KML_STAT_HIST in the set's descriptor array
 * @val: the value
 *
 * Context: any context, including hard IRQ; never sleeps or locks.
 */
void kml_stats_hist_add(struct kml_stats_set *set, unsigned int id, u64 val)
{
	unsigned int slot;

	if (!kml_item_ok(set, id, KML_STAT_HIST))
		return;
	slot = set->items[id].slot;
	this_cpu_inc(set->slots[slot + kml_log2_bucket(val)]);
	kml_slot_add(set, slot + KML_STATS_HIST_BUCKETS, val);
}
EXPORT_SYMBOL_GPL(kml_stats_hist_add);

/*
 * Another CPU's counter, which that CPU may be adding to right now with
 * this_cpu_add(): a marked read of a value that may be one update old,
 * the accepted way to sum per-CPU statistics (KCSAN is told: data_race()).
 */
static u64 kml_slot_read(struct kml_stats_set *set, unsigned int slot, int cpu)
{
	/* racing this_cpu_add() on that CPU: one update old at worst */
	return data_race(READ_ONCE(*per_cpu_ptr(&set->slots[slot], cpu)));
}

static u64 kml_slot_sum(struct kml_stats_set *set, unsigned int slot)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += kml_slot_read(set, slot, cpu);
	return sum - READ_ONCE(set->base[slot]);
}

/**
 * kml_stats_read() - current value of a counter, since the last reset
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER
 *
 * Return: the sum over all CPUs; 0 for a bad @id.
 */
u64 kml_stats_read(struct kml_stats_set *set, unsigned int id)
{
	if (!kml_item_ok(set, id, KML_STAT_COUNTER))
		return 0;
	return kml_slot_sum(set, set->items[id].slot);
}
EXPORT_SYMBOL_GPL(kml_stats_read);

static void kml_hist_fill(struct kml_stats_set *set, unsigned int id,
			  struct kml_stats_hist *out)
{
	unsigned int slot = set->items[id].slot, k;

	out->count = 0;
	for (k = 0; k < KML_STATS_HIST_BUCKETS; k++) {
		out->buckets[k] = kml_slot_sum(set, slot + k);
		out->count += out->buckets[k];
	}
	out->sum = kml_slot_sum(set, slot + KML_STATS_HIST_BUCKETS);
}

/**
 * kml_stats_hist_read() - snapshot of a histogram, since the last reset
 * @set: the set
 * @id: index of a %KML_STAT_HIST
 * @out: filled in
 *
 * Buckets are summed one at a time while writers may be running, so the
 * snapshot is close to, not exactly, one instant.
 *
 * Return: 0, or -EINVAL for a bad @id.
 */
int kml_stats_hist_read(struct kml_stats_set *set, unsigned int id,
			struct kml_stats_hist *out)
{
	if (!kml_item_ok(set, id, KML_STAT_HIST))
		return -EINVAL;
	kml_hist_fill(set, id, out);
	return 0;
}
EXPORT_SYMBOL_GPL(kml_stats_hist_read);

/**
 * kml_stats_without_resets() - read several values on one side of a reset
 * @fn: called with resets held off
 * @data: for @fn
 *
 * A value read with kml_stats_read() or kml_stats_hist_read() is the sum
 * over CPUs minus the baseline the last reset took: a reset that lands
 * between the two would make it wrap below zero, and one between two
 * reads would mix values from before and after it. @fn runs where no
 * reset can land, and so does every set's on_reset hook's state.
 *
 * Context: process context; @fn must not call back into kml_stats'
 * registration or reset functions.
 */
void kml_stats_without_resets(void (*fn)(void *data), void *data)
{
	mutex_lock(&kml_lock);
	fn(data);
	mutex_unlock(&kml_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_without_resets);

static void kml_reset_locked(struct kml_stats_set *set)
{
	unsigned int slot;
	u64 sum;
	int cpu;

	lockdep_assert_held(&kml_lock);
	/* LAB stats 4: reset without writing to any CPU's counters, which
	 * their CPUs may be adding to right now: record each slot's sum over
	 * all possible CPUs (kml_slot_read()) as its baseline in base[],
	 * which kml_slot_sum() subtracts; then call the owner's on_reset
	 */
	for (slot = 0; slot < set->nslots; slot++) {
		sum = 0;
		for_each_possible_cpu(cpu)
			sum += kml_slot_read(set, slot, cpu);
		WRITE_ONCE(set->base[slot], sum);
	}
	if (set->on_reset)
		set->on_reset(set->on_reset_data);
	/* LAB stats 4 end */
	trace_reset(set->name, set->nslots);
}

/**
 * kml_stats_reset() - zero one set, as "reset <set>" on the control file
 * @set: the set
 *
 * Context: process context, may sleep.
 */
void kml_stats_reset(struct kml_stats_set *set)
{
	mutex_lock(&kml_lock);
	kml_reset_locked(set);
	mutex_unlock(&kml_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_reset);

/**
 * kml_stats_on_reset() - have the owner reset its own state with the set
 * @set: the set
 * @fn: called after each reset of @set (control file or kml_stats_reset()),
 *	with kml_stats' lock held: it must not sleep long, nor call back
 *	into kml_stats, nor take a lock its owner holds around calls into
 *	kml_stats
 * @data: passed to @fn
 *
 * For owners that keep statistics beside the set (a minimum, a maximum)
 * which a reset must clear in the same operation.
 *
 * Context: process context, may sleep.
 */
void kml_stats_on_reset(struct kml_stats_set *set, void (*fn)(void *data),
			void *data)
{
	mutex_lock(&kml_lock);
	set->on_reset = fn;
	set->on_reset_data = data;
	mutex_unlock(&kml_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_on_reset);

/* ---- /proc/kmodlab/stats: the seq_file iterator ---- */

/*
 * Position 0 is the header line; position p >= 1 is the (p-1)th statistic
 * counting across sets in registration order. The cursor lives in the
 * seq_file's private data and is valid only between start() and stop().
 */
struct kml_cursor {
	struct kml_stats_set *set;
	unsigned int id;
	/*
	 * show()'s scratch space for a histogram: too big for the stack of
	 * a function that may be deep in read(), and kept here so reading
	 * allocates nothing per line. Allocated with the seq_file, which
	 * charges it to the opener (any user may open the stats file).
	 */
	struct kml_stats_hist hist;
};

/* Takes kml_lock; seq_file always calls stop(), which drops it. */
static void *kml_seq_start(struct seq_file *m, loff_t *pos)
{
	struct kml_cursor *cur = m->private;
	struct kml_stats_set *set;
	loff_t left = *pos;

	mutex_lock(&kml_lock);
	/* LAB stats 2: find record *pos afresh, as after every read() the
	 * sets may have changed: SEQ_START_TOKEN for 0 (the header), else
	 * walk kml_sets to the (*pos - 1)th statistic and point the cursor at
	 * it; NULL past the end
	 */
	if (left == 0)
		return SEQ_START_TOKEN;
	left--;
	list_for_each_entry(set, &kml_sets, node) {
		if (left < set->n) {
			cur->set = set;
			cur->id = left;
			return cur;
		}
		left -= set->n;
	}
	return NULL;
	/* LAB stats 2 end: return NULL; */
}

static void *kml_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	struct kml_cursor *cur = m->private;

	/* LAB stats 2: advance *pos and the cursor by one statistic: from
	 * the header to the first set's first one, then on through the set
	 * and into the next set; NULL after the last
	 */
	++*pos;
	if (v == SEQ_START_TOKEN) {
		cur->set = list_first_entry_or_null(&kml_sets,
						    struct kml_stats_set, node);
		cur->id = 0;
		return cur->set ? cur : NULL;
	}
	if (++cur->id < cur->set->n)
		return cur;
	if (list_is_last(&cur->set->node, &kml_sets))
		return NULL;
	cur->set = list_next_entry(cur->set, node);
	cur->id = 0;
	return cur;
	/* LAB stats 2 end: return NULL; */
}

static void kml_seq_stop(struct seq_file *m, void *v)
{
	mutex_unlock(&kml_lock);
}

static int kml_seq_show(struct seq_file *m, void *v)
{
	struct kml_cursor *cur = v;
	struct kml_stats_item *item;
	struct kml_stats_hist *h;
	unsigned int k;

	/* LAB stats 2: print one line with seq_printf(): the header
	 * "# kmodlab-stats <version>" for SEQ_START_TOKEN, else
	 * "<set> <name> counter <value>" or, for a histogram,
	 * "<set> <name> hist <count> <sum>" then " <k>:<n>" for each
	 * non-empty bucket (values from kml_slot_sum(), kml_hist_fill())
	 */
	if (v == SEQ_START_TOKEN) {
		seq_printf(m, "# kmodlab-stats %d\n", KML_STATS_FORMAT_VERSION);
		return 0;
	}
	item = &cur->set->items[cur->id];
	if (item->type == KML_STAT_COUNTER) {
		seq_printf(m, "%s %s counter %llu\n", cur->set->name,
			   item->name, kml_slot_sum(cur->set, item->slot));
		return 0;
	}

	h = &cur->hist;
	kml_hist_fill(cur->set, cur->id, h);
	seq_printf(m, "%s %s hist %llu %llu", cur->set->name, item->name,
		   h->count, h->sum);
	for (k = 0; k < KML_STATS_HIST_BUCKETS; k++)
		if (h->buckets[k])
			seq_printf(m, " %u:%llu", k, h->buckets[k]);
	seq_putc(m, '\n');
	return 0;
	/* LAB stats 2 end: return 0; */
}

static const struct seq_operations kml_seq_ops = {
	.start	= kml_seq_start,
	.next	= kml_seq_next,
	.stop	= kml_seq_stop,
	.show	= kml_seq_show,
};

static int kml_stats_open(struct inode *inode, struct file *file)
{
	int ret;

	ret = seq_open_private(file, &kml_seq_ops, sizeof(struct kml_cursor));
	if (!ret)
		kml_self_inc(KML_SELF_OPENS);
	return ret;
}

static ssize_t kml_stats_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	ssize_t ret = seq_read_iter(iocb, to);

	if (ret >= 0 && kml_self)
		kml_stats_hist_add(kml_self, KML_SELF_READ_BYTES, ret);
	return ret;
}

static const struct proc_ops kml_stats_proc_ops = {
	/* LAB stats 1: a proc file takes struct proc_ops (since 5.6), not
	 * file_operations: open with kml_stats_open(), read through
	 * kml_stats_read_iter(), seek and release with seq_file's helpers
	 * (seq_lseek, seq_release_private)
	 */
	.proc_open	= kml_stats_open,
	.proc_read_iter	= kml_stats_read_iter,
	.proc_lseek	= seq_lseek,
	.proc_release	= seq_release_private,
	/* LAB stats 1 end */
};

/* ---- /proc/kmodlab/control ---- */

static const char kml_ctl_help[] =
	"# write one command (needs CAP_SYS_ADMIN):\n"
	"reset\n"
	"reset <set>\n";

static ssize_t kml_ctl_read(struct file *file, char __user *buf,
			    size_t len, loff_t *ppos)
{
	return simple_read_from_buffer(buf, len, ppos, kml_ctl_help,
				       sizeof(kml_ctl_help) - 1);
}

static int kml_ctl_apply(const struct kml_ctl_cmd *cmd)
{
	struct kml_stats_set *set;
	int ret = 0;

	mutex_lock(&kml_lock);
	if (cmd->op == KML_CTL_RESET_ALL) {
		list_for_each_entry(set, &kml_sets, node)
			kml_reset_locked(set);
	} else {
		set = kml_find_locked(cmd->set);
		if (set)
			kml_reset_locked(set);
		else
			ret = -ENOENT;
	}
	mutex_unlock(&kml_lock);
	return ret;
}

static ssize_t kml_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[KML_STATS_CONTROL_MAX + 2];
	struct kml_ctl_cmd cmd;
	int ret;

	/* LAB stats 3: the file is world-writable so that the unprivileged
	 * get -EPERM from write(), not a permission error at open(): refuse
	 * unless both the opener (file_ns_capable()) and the caller
	 * (capable()) have CAP_SYS_ADMIN, so a privileged program handed a
	 * descriptor cannot be tricked into writing for another. Then
	 * -EINVAL for an empty write or one too long for buf, -EFAULT if
	 * copy_from_user() fails; NUL-terminate, parse with kml_ctl_parse()
	 * (-EINVAL on anything but "reset" or "reset <set>") and apply with
	 * kml_ctl_apply()
	 */
	if (!file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN) ||
	    !capable(CAP_SYS_ADMIN)) {
		ret = -EPERM;
		goto out;
	}
	ret = -EINVAL;
	if (len == 0 || len > sizeof(buf) - 1)
		goto out;
	ret = -EFAULT;
	if (copy_from_user(buf, ubuf, len))
		goto out;
	buf[len] = '\0';
	ret = kml_ctl_parse(buf, len, &cmd);
	if (ret)
		goto out;
	ret = kml_ctl_apply(&cmd);
	/* LAB stats 3 end: ret = -EOPNOTSUPP; */
out:
	if (ret) {
		kml_self_inc(KML_SELF_CTL_ERRORS);
		return ret;
	}
	kml_self_inc(KML_SELF_RESETS);
	return len;
}

static const struct proc_ops kml_ctl_proc_ops = {
	.proc_read	= kml_ctl_read,
	.proc_write	= kml_ctl_write,
	.proc_lseek	= default_llseek,
};

/* ---- the demo set: a built-in source of counters ---- */

/*
 * demo_counters=N registers a set "demo" with counters c00000..c<N-1>,
 * counter i starting at i, and a histogram "values" holding 0..N-1, so the
 * file's contents are predictable. Writing the parameter at run time
 * unregisters and re-registers the set through the exported API, which is
 * how the selftests race registration against readers.
 */
static unsigned int demo_counters = 8;
static DEFINE_MUTEX(kml_demo_lock);
static struct kml_stats_set *kml_demo;
static bool kml_demo_live;	/* between init and exit, under kml_demo_lock */

/* A demo set of @n counters and the histogram, filled in but not listed. */
static struct kml_stats_set *kml_demo_alloc(unsigned int n)
{
	struct kml_stats_desc *desc;
	struct kml_stats_set *set;
	char (*names)[12];
	unsigned int i;

	desc = kvcalloc(n + 1, sizeof(*desc), GFP_KERNEL);
	names = kvcalloc(n, sizeof(*names), GFP_KERNEL);
	set = ERR_PTR(-ENOMEM);
	if (!desc || !names)
		goto out;
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "c%05u", i);
		desc[i].name = names[i];
		desc[i].type = KML_STAT_COUNTER;
	}
	desc[n].name = "values";
	desc[n].type = KML_STAT_HIST;
	set = kml_set_alloc("demo", desc, n + 1);
	if (IS_ERR(set))
		goto out;
	for (i = 0; i < n; i++) {
		kml_stats_add(set, i, i);
		kml_stats_hist_add(set, n, i);
	}
out:
	kvfree(names);
	kvfree(desc);
	return set;
}

/*
 * Replaces the demo set with one of @n counters (none for 0). The new set
 * is built before the old one goes, so a failure leaves the old one as it
 * was, and readers see the old set or the new one, never neither.
 */
static int kml_demo_build(unsigned int n)
{
	struct kml_stats_set *set = NULL;
	int ret = 0;

	lockdep_assert_held(&kml_demo_lock);
	if (n) {
		set = kml_demo_alloc(n);
		if (IS_ERR(set))
			return PTR_ERR(set);
	}
	mutex_lock(&kml_lock);
	if (set)
		ret = kml_list_locked(set, kml_demo);
	else if (kml_demo)
		list_del(&kml_demo->node);
	mutex_unlock(&kml_lock);
	if (ret) {
		/* No old demo set, and another module took the name. */
		kml_set_free(set);
		return ret;
	}
	kml_set_free(kml_demo);
	kml_demo = set;
	return 0;
}

static int kml_demo_param_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n > KML_DEMO_MAX)
		return -EINVAL;
	mutex_lock(&kml_demo_lock);
	if (kml_demo_live)
		ret = kml_demo_build(n);
	/* A failed build left the old set, so the old value is still true. */
	if (!ret)
		demo_counters = n;
	mutex_unlock(&kml_demo_lock);
	return ret;
}

static const struct kernel_param_ops kml_demo_param_ops = {
	.set = kml_demo_param_set,
	.get = param_get_uint,
};

module_param_cb(demo_counters, &kml_demo_param_ops, &demo_counters, 0644);
MODULE_PARM_DESC(demo_counters,
		 "counters in the built-in \"demo\" set, 0.." __stringify(KML_DEMO_MAX)
		 " (default 8); writable at run time");

static int __init kml_stats_init(void)
{
	int ret;

	if (self_stats) {
		kml_self = kml_stats_register("kml_stats", kml_self_desc,
					      ARRAY_SIZE(kml_self_desc));
		if (IS_ERR(kml_self))
			return PTR_ERR(kml_self);
	}

	mutex_lock(&kml_demo_lock);
	ret = kml_demo_build(demo_counters);
	kml_demo_live = !ret;
	mutex_unlock(&kml_demo_lock);
	if (ret)
		goto err_self;

	/* LAB stats 1: create the directory /proc/kmodlab (proc_mkdir()) and
	 * in it "stats" (0444, kml_stats_proc_ops) and "control" (0666,
	 * kml_ctl_proc_ops) with proc_create(); either returns NULL on
	 * failure: -ENOMEM, undoing what was done (err_proc, err_demo)
	 */
	ret = -ENOMEM;
	kml_proc_dir = proc_mkdir("kmodlab", NULL);
	if (!kml_proc_dir)
		goto err_demo;
	if (!proc_create("stats", 0444, kml_proc_dir, &kml_stats_proc_ops) ||
	    !proc_create("control", 0666, kml_proc_dir, &kml_ctl_proc_ops))
		goto err_proc;
	/* LAB stats 1 end */
	return 0;

err_proc:
	proc_remove(kml_proc_dir);
err_demo:
	mutex_lock(&kml_demo_lock);
	kml_demo_live = false;
	kml_demo_build(0);
	mutex_unlock(&kml_demo_lock);
err_self:
	kml_stats_unregister(kml_self);
	return ret;
}

static void __exit kml_stats_exit(void)
{
	/* LAB stats 1: remove /proc/kmodlab and what is in it, first: the
	 * files call into this module. proc_remove() waits for readers inside
	 * a read(); later reads of a file still open get -EIO
	 */
	proc_remove(kml_proc_dir);
	/* LAB stats 1 end */

	mutex_lock(&kml_demo_lock);
	kml_demo_live = false;
	kml_demo_build(0);
	mutex_unlock(&kml_demo_lock);
	kml_stats_unregister(kml_self);
	/* Modules using the API hold a reference on us: none may remain. */
	WARN_ON(!list_empty(&kml_sets));
}

module_init(kml_stats_init);
module_exit(kml_stats_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: per-CPU statistics published through a procfs seq_file");
