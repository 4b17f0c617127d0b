// SPDX-License-Identifier: GPL-2.0
/*
 * kml_rcu_reader - an RCU reader that stays for as long as a test asks,
 * for the test that an update waits for every reader of what it frees
 * (kml_filter's commit: synchronize_rcu() before the old set goes).
 *
 * A reader that a packet makes is over in microseconds, so a missing
 * grace period shows only as a rare use-after-free. This one is made to
 * last: a write of N to /sys/kernel/debug/kml_rcu_reader/hold enters
 * rcu_read_lock() and stays, spinning, until "release" is written or N
 * milliseconds (at most 10 s, under the RCU stall warning's default of
 * 21 s) have passed. Meanwhile every synchronize_rcu() on the machine
 * waits for it, not only the one under test. Reading "hold" gives
 * "<inside> <unlock> <lock>": 1 while a reader is in, and the
 * CLOCK_MONOTONIC nanoseconds at which the last one left and came in.
 * An update that waits for readers returns after that time; one that
 * does not, before it.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#define KML_RCU_READER_MAX_MS 10000

static struct dentry *dir;
static DEFINE_MUTEX(hold_mutex);	/* one reader at a time */
static bool inside, released;
static u64 unlock_ns, lock_ns;

static ssize_t hold_write(struct file *file, const char __user *ubuf,
			  size_t count, loff_t *ppos)
{
	unsigned int ms;
	u64 end;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &ms);
	if (ret)
		return ret;
	if (!ms || ms > KML_RCU_READER_MAX_MS)
		return -EINVAL;
	if (!mutex_trylock(&hold_mutex))
		return -EBUSY;
	WRITE_ONCE(released, false);
	end = ktime_get_ns() + (u64)ms * NSEC_PER_MSEC;
	rcu_read_lock();
	WRITE_ONCE(lock_ns, ktime_get_ns());
	WRITE_ONCE(inside, true);
	/* a reader may not sleep: it spins, as a long packet path would */
	while (!READ_ONCE(released) && ktime_get_ns() < end)
		cpu_relax();
	WRITE_ONCE(unlock_ns, ktime_get_ns());
	rcu_read_unlock();
	WRITE_ONCE(inside, false);
	mutex_unlock(&hold_mutex);
	return count;
}

static ssize_t hold_read(struct file *file, char __user *ubuf, size_t count,
			 loff_t *ppos)
{
	char buf[48];
	int n;

	n = scnprintf(buf, sizeof(buf), "%d %llu %llu\n", READ_ONCE(inside),
		      READ_ONCE(unlock_ns), READ_ONCE(lock_ns));
	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static const struct file_operations hold_fops = {
	.owner	= THIS_MODULE,
	.write	= hold_write,
	.read	= hold_read,
	.llseek	= default_llseek,
};

static ssize_t release_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	WRITE_ONCE(released, true);
	return count;
}

static const struct file_operations release_fops = {
	.owner	= THIS_MODULE,
	.write	= release_write,
	.llseek	= noop_llseek,
};

static int __init kml_rcu_reader_init(void)
{
	dir = debugfs_create_dir("kml_rcu_reader", NULL);
	debugfs_create_file("hold", 0600, dir, NULL, &hold_fops);
	debugfs_create_file("release", 0200, dir, NULL, &release_fops);
	return 0;
}

static void __exit kml_rcu_reader_exit(void)
{
	/* waits for a hold in progress: the file pins the module (.owner) */
	debugfs_remove(dir);
}

module_init(kml_rcu_reader_init);
module_exit(kml_rcu_reader_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: an RCU reader that stays as long as a test asks");
