// SPDX-License-Identifier: GPL-2.0
/*
 * kml_sensor - an ioctl character device for a simulated temperature sensor.
 *
 * The mechanism taught here is the ioctl interface of a misc device, done
 * the way a modern driver does it: command numbers built with _IOR/_IOW/
 * _IOWR under a magic of their own (so a stray ioctl meant for another
 * driver gets -ENOTTY, not a misinterpretation), argument structs of
 * fixed-width fields shared with userspace through one uapi header, every
 * argument copied in and validated before anything changes, and a
 * capability check on every command that changes what other users see.
 * The argument structs are extensible (../include/kml_ioctl.h): commands
 * are matched without their size bits, and the size in the number tells
 * which version of a struct the caller was built with.
 *
 * Alongside the ioctls, alarms show the other half of a character device:
 * read() returns fixed-size records, poll() reports when there are some,
 * and O_NONBLOCK gives -EAGAIN, the contract epoll and event loops need.
 * Records go into one ring that every open file reads with a cursor of
 * its own: the sampler writes a record once for one open file or ten
 * thousand (only the wake-up walks the sleepers, as any wait queue's
 * does), a slow reader holds nobody else up, and a reader that falls too
 * far behind is told how many records it missed.
 *
 * The same readings are registered with hwmon, the subsystem real
 * sensors use, so /sys/class/hwmon and lm-sensors' `sensors` show them.
 * A platform device stands in for the hardware and parents both the misc
 * and the hwmon device, as a real platform sensor driver's would.
 *
 * This file is the character device the lab teaches; the rest is handed
 * over complete: the device's state (kml_sensor.h), the sampler and its
 * alarm records (kml_sensor_sample.c), the other ioctl handlers
 * (kml_sensor_ioc.c), hwmon (kml_sensor_hwmon.c) and the pure model,
 * checks and ring (kml_sensor_logic.c, also built on the host).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../include/kml_ioctl.h"
#include "kml_sensor.h"

unsigned int kml_sensor_channels = 2;
module_param_named(channels, kml_sensor_channels, uint, 0444);
MODULE_PARM_DESC(channels,
		 "number of channels, 1.." __stringify(KML_SENSOR_MAX_CHANNELS) " (default 2)");

/* One per open file: where it is in the alarm records. */
struct kml_client {
	struct mutex read_lock;	/* one reader at a time per file */
	u64 cursor;		/* next record to read (kml_sensor_dev.lock) */
};

/* The one device: its state, and what its lock guards, in kml_sensor.h. */
struct kml_dev kml_sensor_dev;

/*
 * Lock and unlock around anything that may record alarms. The wake-up
 * comes after the unlock and only if records were added, so the lock is
 * never held while the scheduler walks the sleepers.
 */
u64 kml_sensor_lock(void)
	__acquires(&kml_sensor_dev.lock)
{
	spin_lock(&kml_sensor_dev.lock);
	return kml_sensor_dev.ring.head;
}

void kml_sensor_unlock_wake(u64 head_before)
	__releases(&kml_sensor_dev.lock)
{
	bool added = kml_sensor_dev.ring.head != head_before;

	spin_unlock(&kml_sensor_dev.lock);
	/* LAB sensor 4: if records were added, wake the readers and pollers
	 * sleeping on kml_sensor_dev.wq. Decide how many: the queue is shared
	 * by every open file, and an exclusive waiter (EPOLLEXCLUSIVE) on one
	 * file must not use up the wake-up another file's reader needs.
	 */
	if (added)
		wake_up_interruptible_all(&kml_sensor_dev.wq);
	/* LAB sensor 4 end */
}

/*
 * ---- ioctls: check privilege, copy in, validate, act under the lock,
 * copy out ----
 *
 * Each handler gets usize, the struct size the caller's ioctl number
 * carries, and copies with kml_copy_struct_in()/_out(): an older caller's
 * smaller struct and a newer caller's larger one both work.
 */

/* Changes every user sees need privilege; checked before the argument is read. */
bool kml_sensor_may_change(void)
{
	/* LAB sensor 3: decide who may change the device. Its period,
	 * thresholds and records are every user's and every container's, so
	 * only an administrator of the whole machine may: root in a user
	 * namespace of its own does not count. Every SET_*, INJECT and RESET
	 * handler asks here before it reads its argument.
	 */
	return capable(CAP_SYS_ADMIN);
	/* LAB sensor 3 end: return true; */
}

static int kml_ioc_info(void __user *up, size_t usize)
{
	struct kml_sensor_info info = {
		.abi_version = KML_SENSOR_ABI_VERSION,
		.nchannels = kml_sensor_channels,
		.units = KML_SENSOR_UNITS_MILLI_CELSIUS,
		.min_mc = KML_SENSOR_MIN_MC,
		.max_mc = KML_SENSOR_MAX_MC,
		.period_min_ms = KML_SENSOR_PERIOD_MIN_MS,
		.period_max_ms = KML_SENSOR_PERIOD_MAX_MS,
		.queue_len = KML_SENSOR_QUEUE_LEN,
	};

	/* LAB sensor 1: GET_INFO only writes. Decide which caller sizes to
	 * answer: a struct older than the first published one
	 * (KML_SENSOR_INFO_SIZE_VER0) cannot hold what every caller relies on
	 * (-EINVAL), and a newer, larger one must get @info and no stray byte
	 * past it (kml_ioctl.h has the helper).
	 */
	if (usize < KML_SENSOR_INFO_SIZE_VER0)
		return -EINVAL;
	return kml_copy_struct_out(up, usize, &info, sizeof(info));
	/* LAB sensor 1 end: return -ENOTTY; */
}

void kml_sensor_reading_locked(unsigned int ch, struct kml_sensor_reading *r)
{
	struct kml_chan *c = &kml_sensor_dev.chan[ch];

	r->channel = ch;
	r->value_mc = c->value_mc;
	r->timestamp_ns = c->timestamp_ns;
	r->seq = c->seq;
}

static int kml_ioc_read(void __user *up, size_t usize)
{
	struct kml_sensor_reading r;
	int ret;

	/* LAB sensor 2: READ reads and writes: take the caller's struct in
	 * once (its first published size is KML_SENSOR_READING_SIZE_VER0),
	 * refuse a channel the device does not have (-EINVAL) before it
	 * indexes anything, fill @r with one sample, never a new value with
	 * an old timestamp (kml_sensor_reading_locked(), and what must not
	 * happen under a spinlock), and give it back.
	 */
	ret = kml_copy_struct_in(&r, sizeof(r), up, usize,
				 KML_SENSOR_READING_SIZE_VER0);
	if (ret)
		return ret;
	if (r.channel >= kml_sensor_channels)
		return -EINVAL;
	spin_lock(&kml_sensor_dev.lock);
	kml_sensor_reading_locked(r.channel, &r);
	spin_unlock(&kml_sensor_dev.lock);
	return kml_copy_struct_out(up, usize, &r, sizeof(r));
	/* LAB sensor 2 end: return -ENOTTY; */
}

static int kml_ioc_set_period(u32 __user *up, size_t usize)
{
	u32 ms;

	if (usize != sizeof(u32))
		return -ENOTTY;
	/* LAB sensor 3: the period is every user's sample rate. An
	 * unprivileged caller gets -EPERM and learns nothing else, not even
	 * whether its argument was valid. The new period is read once and
	 * checked (kml_check_period(), -EINVAL), stored so that GET_PERIOD,
	 * which reads it without the lock, can trust what it reads, and
	 * takes effect now, not after the old (maybe 10 s) period the
	 * sampler is waiting out.
	 */
	if (!kml_sensor_may_change())
		return -EPERM;
	if (get_user(ms, up))
		return -EFAULT;
	if (kml_check_period(ms))
		return -EINVAL;
	spin_lock(&kml_sensor_dev.lock);
	WRITE_ONCE(kml_sensor_dev.period_ms, ms);
	spin_unlock(&kml_sensor_dev.lock);
	mod_delayed_work(system_wq, &kml_sensor_dev.sampler,
			 msecs_to_jiffies(ms));
	return 0;
	/* LAB sensor 3 end: return -ENOTTY; */
}

static long kml_sensor_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	void __user *up = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	unsigned int stat = ST_IOC_UNKNOWN;
	long ret;

	/* LAB sensor 1: route each KML_SENSOR_IOC_... command to its
	 * handler and set stat to its counter. Decide what identifies a
	 * command: magic, number and direction must match, but the size is
	 * the caller's idea of its struct (usize), and a caller built
	 * against a larger struct must reach the same handler. GET_INFO also
	 * answers to ABI 1's number, KML_SENSOR_IOC_GET_INFO_V1. Handlers take
	 * (up, usize), RESET's only usize: kml_ioc_info(), kml_ioc_read(),
	 * kml_ioc_set_period() here, kml_sensor_ioc_...() in
	 * kml_sensor_ioc.c. Anything else is not ours: nothing done, and the
	 * answer a program probing for features expects (-ENOTTY).
	 */
	switch (KML_IOC_NOSIZE(cmd)) {
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_INFO):
	/* ABI 1's number (_IOWR), so an old client can read abi_version. */
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_INFO_V1):
		stat = ST_IOC_INFO;
		ret = kml_ioc_info(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_READ):
		stat = ST_IOC_READ;
		ret = kml_ioc_read(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_READ_ALL):
		stat = ST_IOC_READ_ALL;
		ret = kml_sensor_ioc_read_all(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_PERIOD):
		stat = ST_IOC_GET_PERIOD;
		ret = kml_sensor_ioc_get_period(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_SET_PERIOD):
		stat = ST_IOC_SET_PERIOD;
		ret = kml_ioc_set_period(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_ALARM):
		stat = ST_IOC_GET_ALARM;
		ret = kml_sensor_ioc_get_alarm(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_SET_ALARM):
		stat = ST_IOC_SET_ALARM;
		ret = kml_sensor_ioc_set_alarm(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_INJECT):
		stat = ST_IOC_INJECT;
		ret = kml_sensor_ioc_inject(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_RESET):
		stat = ST_IOC_RESET;
		ret = kml_sensor_ioc_reset(usize);
		break;
	default:
		/* Not ours (another magic, number or direction): do nothing. */
		ret = -ENOTTY;
		break;
	}
	/* LAB sensor 1 end: ret = -ENOTTY; */
	if (ret == -ENOTTY)
		stat = ST_IOC_UNKNOWN;
	kml_stats_inc(kml_sensor_dev.stats, stat);
	if (ret)
		kml_stats_inc(kml_sensor_dev.stats, ST_ERRORS);
	return ret;
}

/* ---- read/poll: the alarm records ---- */

static int kml_sensor_open(struct inode *inode, struct file *file)
{
	/* Any user can open many files: charge the memory to them. */
	struct kml_client *cl = kzalloc(sizeof(*cl), GFP_KERNEL_ACCOUNT);

	if (!cl)
		return -ENOMEM;
	mutex_init(&cl->read_lock);
	/* A new file sees the records recorded from now on. */
	spin_lock(&kml_sensor_dev.lock);
	cl->cursor = kml_sensor_dev.ring.head;
	spin_unlock(&kml_sensor_dev.lock);
	file->private_data = cl;
	return 0;
}

static int kml_sensor_release(struct inode *inode, struct file *file)
{
	struct kml_client *cl = file->private_data;

	/* Nothing of ours points at the client: the ring does not know it. */
	mutex_destroy(&cl->read_lock);
	kfree(cl);
	return 0;
}

static bool kml_has_events(struct kml_client *cl)
{
	bool ret;

	spin_lock(&kml_sensor_dev.lock);
	ret = kml_evring_pending(&kml_sensor_dev.ring, cl->cursor);
	spin_unlock(&kml_sensor_dev.lock);
	return ret;
}

static ssize_t kml_sensor_read(struct file *file, char __user *buf,
			       size_t count, loff_t *ppos)
{
	struct kml_client *cl = file->private_data;
	struct kml_sensor_event ev;
	size_t done = 0;
	u64 pos = 0, lost = 0;
	int ret;

	kml_stats_inc(kml_sensor_dev.stats, ST_READS);
	/* LAB sensor 4: read() gives whole records, as many as @count holds
	 * (none fits: -EINVAL), from this file's cursor on. One reader at a
	 * time per file (read_lock), and an O_NONBLOCK caller never sleeps,
	 * not even behind another reader (-EAGAIN). The next record comes
	 * from kml_evring_next() under kml_sensor_dev.lock, which also tells
	 * how many this file missed (ev.lost). None left: return what was
	 * read, else -EAGAIN for O_NONBLOCK, else sleep until
	 * kml_has_events() (a signal ends the wait) and look again. A bad
	 * buffer (-EFAULT) must lose no record: the cursor moves only past
	 * what reached the user. Return the bytes copied, or the error if
	 * none.
	 */
	if (count < sizeof(ev))
		return -EINVAL;
	/* O_NONBLOCK never sleeps, not even behind a blocked reader. */
	if (file->f_flags & O_NONBLOCK) {
		if (!mutex_trylock(&cl->read_lock))
			return -EAGAIN;
	} else if (mutex_lock_interruptible(&cl->read_lock)) {
		return -ERESTARTSYS;
	}
	while (done + sizeof(ev) <= count) {
		const struct kml_sensor_event *next;

		spin_lock(&kml_sensor_dev.lock);
		next = kml_evring_next(&kml_sensor_dev.ring, cl->cursor, &pos);
		if (next) {
			ev = *next;
			lost = pos - cl->cursor;
		}
		spin_unlock(&kml_sensor_dev.lock);
		if (!next) {
			if (done)
				break;
			ret = -EAGAIN;
			if (file->f_flags & O_NONBLOCK)
				goto out;
			ret = wait_event_interruptible(kml_sensor_dev.wq,
						       kml_has_events(cl));
			if (ret)
				goto out;
			continue;
		}
		/* What this file missed; other files have their own count. */
		ev.lost = min_t(u64, lost, U32_MAX);
		/*
		 * Copy before moving the cursor: a bad buffer leaves the record
		 * to be read again. Only this file's reader (we hold read_lock)
		 * moves its cursor.
		 */
		if (copy_to_user(buf + done, &ev, sizeof(ev))) {
			ret = -EFAULT;
			goto out;
		}
		spin_lock(&kml_sensor_dev.lock);
		cl->cursor = pos + 1;
		spin_unlock(&kml_sensor_dev.lock);
		if (lost)
			kml_stats_add(kml_sensor_dev.stats, ST_OVERFLOWS, lost);
		done += sizeof(ev);
	}
	ret = 0;
out:
	mutex_unlock(&cl->read_lock);
	return done ? done : ret;
	/* LAB sensor 4 end: return -EAGAIN; */
}

static __poll_t kml_sensor_poll(struct file *file, poll_table *wait)
{
	struct kml_client *cl = file->private_data;

	/* LAB sensor 5: poll() never sleeps itself: make sure the wake-up of
	 * step 4 (on kml_sensor_dev.wq) reaches whoever polls this file, then
	 * say whether it has a record to read now (kml_has_events()):
	 * EPOLLIN | EPOLLRDNORM, or 0. Mind the order: a record arriving
	 * between the two must not go unreported.
	 */
	poll_wait(file, &kml_sensor_dev.wq, wait);
	return kml_has_events(cl) ? EPOLLIN | EPOLLRDNORM : 0;
	/* LAB sensor 5 end: return 0; */
}

static const struct file_operations kml_sensor_fops = {
	.owner		= THIS_MODULE,
	.open		= kml_sensor_open,
	.release	= kml_sensor_release,
	.read		= kml_sensor_read,
	.poll		= kml_sensor_poll,
	.unlocked_ioctl	= kml_sensor_ioctl,
	/* Same layout for 32-bit callers: only the pointer needs converting. */
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/*
 * 0666: any user may read the sensor and its alarm records; the commands
 * that change the device (SET_PERIOD, SET_ALARM, INJECT, RESET) check
 * CAP_SYS_ADMIN themselves, so the unprivileged get -EPERM.
 */
static struct miscdevice kml_sensor_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_sensor",
	.fops	= &kml_sensor_fops,
	.mode	= 0666,
};

static int __init kml_sensor_init(void)
{
	int ret;

	if (kml_sensor_channels < 1 ||
	    kml_sensor_channels > KML_SENSOR_MAX_CHANNELS) {
		pr_err("channels=%u: must be 1..%d\n", kml_sensor_channels,
		       KML_SENSOR_MAX_CHANNELS);
		return -EINVAL;
	}
	spin_lock_init(&kml_sensor_dev.lock);
	init_waitqueue_head(&kml_sensor_dev.wq);
	INIT_DELAYED_WORK(&kml_sensor_dev.sampler, kml_sensor_sampler);

	kml_sensor_dev.stats = kml_stats_register("kml_sensor", kml_sensor_stats,
						  ARRAY_SIZE(kml_sensor_stats));
	if (IS_ERR(kml_sensor_dev.stats))
		return PTR_ERR(kml_sensor_dev.stats);
	spin_lock(&kml_sensor_dev.lock);
	kml_sensor_reset_locked();
	spin_unlock(&kml_sensor_dev.lock);

	kml_sensor_dev.pdev = platform_device_register_simple("kml_sensor",
							      PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(kml_sensor_dev.pdev)) {
		ret = PTR_ERR(kml_sensor_dev.pdev);
		goto err_stats;
	}
	ret = kml_sensor_hwmon_register();	/* if the kernel has hwmon */
	if (ret)
		goto err_pdev;
	schedule_delayed_work(&kml_sensor_dev.sampler,
			      msecs_to_jiffies(kml_sensor_dev.period_ms));
	/*
	 * Last: the device node makes the module reachable from userspace
	 * (an ioctl may re-arm the sampler), so everything it uses is ready
	 * before, and a failure here has had no user to undo.
	 */
	kml_sensor_misc.parent = &kml_sensor_dev.pdev->dev;
	ret = misc_register(&kml_sensor_misc);
	if (ret)
		goto err_work;
	return 0;

err_work:
	cancel_delayed_work_sync(&kml_sensor_dev.sampler);
	kml_sensor_hwmon_unregister();
err_pdev:
	platform_device_unregister(kml_sensor_dev.pdev);
err_stats:
	kml_stats_unregister(kml_sensor_dev.stats);
	return ret;
}

static void __exit kml_sensor_exit(void)
{
	/*
	 * The reverse of init: first the device node, so no new user comes.
	 * Open files pin the module (.owner), so no client is left either.
	 */
	misc_deregister(&kml_sensor_misc);
	/* Safe for a self-rearming work: it stops re-queueing itself. */
	cancel_delayed_work_sync(&kml_sensor_dev.sampler);
	kml_sensor_hwmon_unregister();
	platform_device_unregister(kml_sensor_dev.pdev);
	kml_stats_unregister(kml_sensor_dev.stats);
}

module_init(kml_sensor_init);
module_exit(kml_sensor_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: ioctl character device for a simulated temperature sensor");
