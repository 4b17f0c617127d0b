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
 *
 * This file is the mechanism, and the stats lab's: the registry of sets
 * that the stats file walks, the counters' reading side and reset, the
 * two proc files, and load and unload. The rest is handed over complete:
 * the exported API and a set's life (kml_stats_api.c), the "demo" set and
 * its parameter (kml_stats_demo.c) and the control command's parser
 * (kml_stats_logic.c), all sharing a set's layout in kml_stats_priv.h.
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
#include <linux/uaccess.h>

#include "../include/kml_stats.h"
#include "kml_stats_logic.h"
#include "kml_stats_priv.h"
#include "kml_stats_trace.h"

/*
 * The registry: every set, in registration order (a set's layout, its
 * items, per-CPU slots and reset baseline, is in kml_stats_priv.h).
 * kml_stats_lock serialises it against readers' start()..stop() windows.
 */
DEFINE_MUTEX(kml_stats_lock);
LIST_HEAD(kml_stats_sets);
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

u64 kml_stats_slot_sum(struct kml_stats_set *set, unsigned int slot)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += kml_slot_read(set, slot, cpu);
	return sum - READ_ONCE(set->base[slot]);
}

void kml_stats_hist_fill(struct kml_stats_set *set, unsigned int id,
			 struct kml_stats_hist *out)
{
	unsigned int slot = set->items[id].slot, k;

	out->count = 0;
	for (k = 0; k < KML_STATS_HIST_BUCKETS; k++) {
		out->buckets[k] = kml_stats_slot_sum(set, slot + k);
		out->count += out->buckets[k];
	}
	out->sum = kml_stats_slot_sum(set, slot + KML_STATS_HIST_BUCKETS);
}

void kml_stats_reset_locked(struct kml_stats_set *set)
{
	unsigned int slot;
	u64 sum;
	int cpu;

	lockdep_assert_held(&kml_stats_lock);
	/* LAB stats 4: make every statistic of the set read 0 from now on,
	 * as readers see it (kml_stats_slot_sum()), without writing to any
	 * CPU's counters: their CPUs may be adding to them right now, with
	 * no lock. Then let the set's owner reset its own state (on_reset)
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

/* Takes kml_stats_lock; seq_file always calls stop(), which drops it. */
static void *kml_seq_start(struct seq_file *m, loff_t *pos)
{
	struct kml_cursor *cur = m->private;
	struct kml_stats_set *set;
	loff_t left = *pos;

	mutex_lock(&kml_stats_lock);
	/* LAB stats 2: find record *pos afresh, as after every read() the
	 * sets may have changed: SEQ_START_TOKEN for 0 (the header), else
	 * walk kml_stats_sets to the (*pos - 1)th statistic and point the
	 * cursor at it; NULL past the end
	 */
	if (left == 0)
		return SEQ_START_TOKEN;
	left--;
	list_for_each_entry(set, &kml_stats_sets, node) {
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
		cur->set = list_first_entry_or_null(&kml_stats_sets,
						    struct kml_stats_set, node);
		cur->id = 0;
		return cur->set ? cur : NULL;
	}
	if (++cur->id < cur->set->n)
		return cur;
	if (list_is_last(&cur->set->node, &kml_stats_sets))
		return NULL;
	cur->set = list_next_entry(cur->set, node);
	cur->id = 0;
	return cur;
	/* LAB stats 2 end: return NULL; */
}

static void kml_seq_stop(struct seq_file *m, void *v)
{
	mutex_unlock(&kml_stats_lock);
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
	 * non-empty bucket (values from kml_stats_slot_sum(),
	 * kml_stats_hist_fill())
	 */
	if (v == SEQ_START_TOKEN) {
		seq_printf(m, "# kmodlab-stats %d\n", KML_STATS_FORMAT_VERSION);
		return 0;
	}
	item = &cur->set->items[cur->id];
	if (item->type == KML_STAT_COUNTER) {
		seq_printf(m, "%s %s counter %llu\n", cur->set->name,
			   item->name, kml_stats_slot_sum(cur->set, item->slot));
		return 0;
	}

	h = &cur->hist;
	kml_stats_hist_fill(cur->set, cur->id, h);
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
	 * file_operations. Choose the operations of the stats file: the open
	 * that gives each reader its own cursor and the read that counts read
	 * sizes are written above; seeking and release are seq_file's, the
	 * release being the one that frees what that open allocated
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

	mutex_lock(&kml_stats_lock);
	if (cmd->op == KML_CTL_RESET_ALL) {
		list_for_each_entry(set, &kml_stats_sets, node)
			kml_stats_reset_locked(set);
	} else {
		set = kml_stats_find_locked(cmd->set);
		if (set)
			kml_stats_reset_locked(set);
		else
			ret = -ENOENT;
	}
	mutex_unlock(&kml_stats_lock);
	return ret;
}

static ssize_t kml_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[KML_STATS_CONTROL_MAX + 2];
	struct kml_ctl_cmd cmd;
	int ret;

	/* LAB stats 3: the file is world-writable, so the privilege check is
	 * here, first, before the data is looked at (-EPERM): only a writer
	 * with CAP_SYS_ADMIN may reset, and a privileged program handed an
	 * unprivileged user's descriptor must not write for that user, so
	 * decide whose privilege counts. Then bring the command into buf
	 * safely: nothing, or more than fits with the NUL you add, is
	 * -EINVAL, a bad user pointer -EFAULT. Parse it (kml_ctl_parse()) and
	 * apply it (kml_ctl_apply()); their errors are the write's
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

static int __init kml_stats_init(void)
{
	int ret;

	if (self_stats) {
		kml_self = kml_stats_register("kml_stats", kml_self_desc,
					      ARRAY_SIZE(kml_self_desc));
		if (IS_ERR(kml_self))
			return PTR_ERR(kml_self);
	}

	ret = kml_stats_demo_init();
	if (ret)
		goto err_self;

	/* LAB stats 1: publish the directory /proc/kmodlab and in it "stats"
	 * (kml_stats_proc_ops), which anyone may read and no one write, and
	 * "control" (kml_ctl_proc_ops), which anyone may open for writing, so
	 * that step 3 answers the unprivileged with -EPERM rather than open()
	 * failing: choose the modes. procfs says failure with NULL: return
	 * -ENOMEM then, leaving nothing behind (err_proc, err_demo)
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
	kml_stats_demo_exit();
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

	kml_stats_demo_exit();
	kml_stats_unregister(kml_self);
	/* Modules using the API hold a reference on us: none may remain. */
	WARN_ON(!list_empty(&kml_stats_sets));
}

module_init(kml_stats_init);
module_exit(kml_stats_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: per-CPU statistics published through a procfs seq_file");
