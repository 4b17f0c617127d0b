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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/hwmon.h>
#include <linux/ktime.h>
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
#include "../include/kml_stats.h"
#include "kml_sensor_logic.h"
#include "kml_sensor_trace.h"

static unsigned int channels = 2;
module_param(channels, uint, 0444);
MODULE_PARM_DESC(channels,
		 "number of channels, 1.." __stringify(KML_SENSOR_MAX_CHANNELS) " (default 2)");

static unsigned int seed = 1;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "seed of the simulation (default 1)");

struct kml_chan {
	struct kml_model model;
	s32 value_mc;
	u64 timestamp_ns;
	u64 seq;
	bool injected;			/* held at value_mc until cleared */
	struct kml_sensor_alarm alarm;
	int zone;
};

/* One per open file: where it is in the alarm records. */
struct kml_client {
	struct mutex read_lock;		/* one reader at a time per file */
	u64 cursor;			/* next record to read; under kml_dev.lock */
};

static struct kml_dev {
	/*
	 * Guards the channels, the period, the alarm ring and the clients'
	 * cursors. Taken from process context only (ioctl, read, the
	 * sampling work, hwmon), and never held across a wake-up.
	 */
	spinlock_t lock;
	struct kml_chan chan[KML_SENSOR_MAX_CHANNELS];
	unsigned int period_ms;
	struct kml_evring ring;		/* the alarm records every file reads */
	wait_queue_head_t wq;		/* readers and pollers of all files */
	struct delayed_work sampler;
	struct platform_device *pdev;	/* parent of the misc and hwmon devices */
	struct device *hwmon;
	struct kml_stats_set *stats;
} kml_dev;

enum {
	ST_IOC_INFO, ST_IOC_READ, ST_IOC_READ_ALL, ST_IOC_GET_PERIOD,
	ST_IOC_SET_PERIOD, ST_IOC_GET_ALARM, ST_IOC_SET_ALARM, ST_IOC_INJECT,
	ST_IOC_RESET, ST_IOC_UNKNOWN, ST_ERRORS, ST_SAMPLES, ST_ALARMS,
	ST_OVERFLOWS, ST_READS,
};

static const struct kml_stats_desc kml_sensor_stats[] = {
	[ST_IOC_INFO]		= { "ioctl_get_info", KML_STAT_COUNTER },
	[ST_IOC_READ]		= { "ioctl_read", KML_STAT_COUNTER },
	[ST_IOC_READ_ALL]	= { "ioctl_read_all", KML_STAT_COUNTER },
	[ST_IOC_GET_PERIOD]	= { "ioctl_get_period", KML_STAT_COUNTER },
	[ST_IOC_SET_PERIOD]	= { "ioctl_set_period", KML_STAT_COUNTER },
	[ST_IOC_GET_ALARM]	= { "ioctl_get_alarm", KML_STAT_COUNTER },
	[ST_IOC_SET_ALARM]	= { "ioctl_set_alarm", KML_STAT_COUNTER },
	[ST_IOC_INJECT]		= { "ioctl_inject", KML_STAT_COUNTER },
	[ST_IOC_RESET]		= { "ioctl_reset", KML_STAT_COUNTER },
	[ST_IOC_UNKNOWN]	= { "ioctl_unknown", KML_STAT_COUNTER },
	[ST_ERRORS]		= { "errors", KML_STAT_COUNTER },
	[ST_SAMPLES]		= { "samples", KML_STAT_COUNTER },
	[ST_ALARMS]		= { "alarms", KML_STAT_COUNTER },
	[ST_OVERFLOWS]		= { "alarm_overflows", KML_STAT_COUNTER },
	[ST_READS]		= { "reads", KML_STAT_COUNTER },
};

/*
 * Record an alarm for every open file: one write into the ring, whatever
 * the number of files. Called with kml_dev.lock held; whoever took the
 * lock wakes the readers after dropping it (kml_unlock_wake()).
 */
static void kml_emit_locked(unsigned int ch, int zone)
{
	struct kml_chan *c = &kml_dev.chan[ch];
	struct kml_sensor_event ev = {
		.timestamp_ns = c->timestamp_ns,
		.seq = c->seq,
		.channel = ch,
		.value_mc = c->value_mc,
		.kind = zone,
	};

	lockdep_assert_held(&kml_dev.lock);
	trace_alarm(ch, c->value_mc, c->seq, zone, c->alarm.low_mc,
		    c->alarm.high_mc);
	kml_stats_inc(kml_dev.stats, ST_ALARMS);
	kml_evring_push(&kml_dev.ring, &ev);
}

/*
 * Lock and unlock around anything that may record alarms. The wake-up
 * comes after the unlock and only if records were added, so the lock is
 * never held while the scheduler walks the sleepers.
 */
static u64 kml_lock(void)
	__acquires(&kml_dev.lock)
{
	spin_lock(&kml_dev.lock);
	return kml_dev.ring.head;
}

static void kml_unlock_wake(u64 head_before)
	__releases(&kml_dev.lock)
{
	bool added = kml_dev.ring.head != head_before;

	spin_unlock(&kml_dev.lock);
	/* LAB sensor 4: if records were added, wake the readers and pollers
	 * sleeping on kml_dev.wq: every sleeper, not one
	 * (wake_up_interruptible_all()), as the queue is shared by all files
	 * and an exclusive waiter (EPOLLEXCLUSIVE) on one file must not use up
	 * the wake-up another file's reader needs.
	 */
	if (added)
		wake_up_interruptible_all(&kml_dev.wq);
	/* LAB sensor 4 end */
}

/* A zone change is an alarm; re-evaluated on every sample and setting. */
static void kml_eval_locked(unsigned int ch)
{
	struct kml_chan *c = &kml_dev.chan[ch];
	int zone = kml_zone(c->value_mc, &c->alarm);

	if (zone != c->zone) {
		c->zone = zone;
		kml_emit_locked(ch, zone);
	}
}

static void kml_sample_locked(unsigned int ch, s32 value_mc, u64 now)
{
	struct kml_chan *c = &kml_dev.chan[ch];

	c->value_mc = value_mc;
	c->timestamp_ns = now;
	c->seq++;
	trace_sample(ch, value_mc, c->seq, c->injected);
	kml_stats_inc(kml_dev.stats, ST_SAMPLES);
	kml_eval_locked(ch);
}

static void kml_sampler(struct work_struct *work)
{
	u64 now = ktime_get_ns(), head;
	unsigned int ch, period;

	/* O(channels) under the lock, never O(open files). */
	head = kml_lock();
	for (ch = 0; ch < channels; ch++)
		if (!kml_dev.chan[ch].injected)
			kml_sample_locked(ch, kml_model_step(&kml_dev.chan[ch].model),
					  now);
	period = kml_dev.period_ms;
	kml_unlock_wake(head);
	schedule_delayed_work(&kml_dev.sampler, msecs_to_jiffies(period));
}

/*
 * Defaults: fresh models, alarms off, default period. Lock held. The zone
 * is left to kml_eval_locked(), so a channel that was in alarm records its
 * return to normal like any other change: readers are never left
 * believing in an alarm that is gone.
 */
static void kml_reset_locked(void)
{
	u64 now = ktime_get_ns();
	unsigned int ch;

	for (ch = 0; ch < channels; ch++) {
		struct kml_chan *c = &kml_dev.chan[ch];

		kml_model_init(&c->model, seed, ch);
		c->injected = false;
		c->alarm = (struct kml_sensor_alarm){
			.channel = ch,
			.low_mc = KML_SENSOR_MIN_MC,
			.high_mc = KML_SENSOR_MAX_MC,
		};
		kml_sample_locked(ch, kml_model_step(&c->model), now);
	}
	/* GET_PERIOD reads it without the lock. */
	WRITE_ONCE(kml_dev.period_ms, KML_SENSOR_PERIOD_DEFAULT_MS);
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
static bool kml_may_change(void)
{
	/* LAB sensor 3: only an administrator may change the device:
	 * capable(CAP_SYS_ADMIN), which asks about the initial user
	 * namespace, so root in a container does not count. Every SET_*,
	 * INJECT and RESET handler asks here before it reads its argument.
	 */
	return capable(CAP_SYS_ADMIN);
	/* LAB sensor 3 end: return true; */
}

static int kml_ioc_info(void __user *up, size_t usize)
{
	struct kml_sensor_info info = {
		.abi_version = KML_SENSOR_ABI_VERSION,
		.nchannels = channels,
		.units = KML_SENSOR_UNITS_MILLI_CELSIUS,
		.min_mc = KML_SENSOR_MIN_MC,
		.max_mc = KML_SENSOR_MAX_MC,
		.period_min_ms = KML_SENSOR_PERIOD_MIN_MS,
		.period_max_ms = KML_SENSOR_PERIOD_MAX_MS,
		.queue_len = KML_SENSOR_QUEUE_LEN,
	};

	/* LAB sensor 1: GET_INFO only writes: refuse a caller's struct
	 * smaller than the first published one (KML_SENSOR_INFO_SIZE_VER0)
	 * with -EINVAL, then copy @info out with kml_copy_struct_out(), which
	 * zeroes a newer caller's larger struct past ours.
	 */
	if (usize < KML_SENSOR_INFO_SIZE_VER0)
		return -EINVAL;
	return kml_copy_struct_out(up, usize, &info, sizeof(info));
	/* LAB sensor 1 end: return -ENOTTY; */
}

static void kml_reading_locked(unsigned int ch, struct kml_sensor_reading *r)
{
	struct kml_chan *c = &kml_dev.chan[ch];

	r->channel = ch;
	r->value_mc = c->value_mc;
	r->timestamp_ns = c->timestamp_ns;
	r->seq = c->seq;
}

static int kml_ioc_read(void __user *up, size_t usize)
{
	struct kml_sensor_reading r;
	int ret;

	/* LAB sensor 2: READ reads and writes: copy the caller's struct in
	 * with kml_copy_struct_in() (its first published size is
	 * KML_SENSOR_READING_SIZE_VER0), refuse a channel the device does not
	 * have (-EINVAL), fill @r from the channel under kml_dev.lock
	 * (kml_reading_locked()), and copy it back out.
	 */
	ret = kml_copy_struct_in(&r, sizeof(r), up, usize,
				 KML_SENSOR_READING_SIZE_VER0);
	if (ret)
		return ret;
	if (r.channel >= channels)
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	kml_reading_locked(r.channel, &r);
	spin_unlock(&kml_dev.lock);
	return kml_copy_struct_out(up, usize, &r, sizeof(r));
	/* LAB sensor 2 end: return -ENOTTY; */
}

/*
 * READ_ALL reads only what is input (@flags, and a newer caller's tail,
 * which must be zero), copies out only the channels this device has and
 * zeroes the rest in place. The whole struct in, memset and out was
 * three times the bytes it carries, and cost as much as four READs
 * under TCG (make bench; docs/measured.md).
 */
static int kml_ioc_read_all(void __user *up, size_t usize)
{
	struct kml_sensor_read_all __user *ua = up;
	struct kml_sensor_read_all all;
	unsigned int ch, n = channels;
	size_t filled;
	int ret;

	if (usize < KML_SENSOR_READ_ALL_SIZE_VER0)
		return -EINVAL;
	if (get_user(all.flags, &ua->flags))
		return -EFAULT;
	if (usize > sizeof(all)) {
		ret = check_zeroed_user((u8 __user *)up + sizeof(all),
					usize - sizeof(all));
		if (ret <= 0)
			return ret ?: -E2BIG;
	}
	if (all.flags)
		return -EINVAL;
	all.nchannels = n;
	/* One lock hold: every channel from the same instant. */
	spin_lock(&kml_dev.lock);
	for (ch = 0; ch < n; ch++)
		kml_reading_locked(ch, &all.readings[ch]);
	spin_unlock(&kml_dev.lock);
	/* only what was filled in leaves: no uninitialised byte */
	filled = offsetof(struct kml_sensor_read_all, readings) +
		 n * sizeof(all.readings[0]);
	if (copy_to_user(up, &all, filled) ||
	    clear_user((u8 __user *)up + filled, usize - filled))
		return -EFAULT;
	return 0;
}

/* A scalar cannot grow, so its commands must carry exactly its size. */
static int kml_ioc_get_period(u32 __user *up, size_t usize)
{
	if (usize != sizeof(u32))
		return -ENOTTY;
	return put_user(READ_ONCE(kml_dev.period_ms), up);
}

static int kml_ioc_set_period(u32 __user *up, size_t usize)
{
	u32 ms;

	if (usize != sizeof(u32))
		return -ENOTTY;
	/* LAB sensor 3: the device's period is every user's sample rate, so
	 * changing it is privileged: -EPERM unless kml_may_change(), before
	 * the argument is even read. Then get_user() the u32 (-EFAULT),
	 * refuse what kml_check_period() refuses (-EINVAL), store it under
	 * kml_dev.lock with WRITE_ONCE() (GET_PERIOD reads it without the
	 * lock), and re-arm the sampler with mod_delayed_work() so the new
	 * period takes effect now, not after the old (maybe long) one.
	 */
	if (!kml_may_change())
		return -EPERM;
	if (get_user(ms, up))
		return -EFAULT;
	if (kml_check_period(ms))
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	WRITE_ONCE(kml_dev.period_ms, ms);
	spin_unlock(&kml_dev.lock);
	mod_delayed_work(system_wq, &kml_dev.sampler, msecs_to_jiffies(ms));
	return 0;
	/* LAB sensor 3 end: return -ENOTTY; */
}

static int kml_ioc_get_alarm(void __user *up, size_t usize)
{
	struct kml_sensor_alarm a;
	int ret;

	ret = kml_copy_struct_in(&a, sizeof(a), up, usize,
				 KML_SENSOR_ALARM_SIZE_VER0);
	if (ret)
		return ret;
	if (a.channel >= channels)
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	a = kml_dev.chan[a.channel].alarm;
	spin_unlock(&kml_dev.lock);
	return kml_copy_struct_out(up, usize, &a, sizeof(a));
}

static int kml_ioc_set_alarm(void __user *up, size_t usize)
{
	struct kml_sensor_alarm a;
	u64 head;
	int ret;

	/*
	 * Thresholds are the device's (every open file gets the records they
	 * cause), so setting them is privileged, as hwmon's tempN_max is.
	 */
	if (!kml_may_change())
		return -EPERM;
	ret = kml_copy_struct_in(&a, sizeof(a), up, usize,
				 KML_SENSOR_ALARM_SIZE_VER0);
	if (ret)
		return ret;
	if (kml_check_alarm(&a, channels))
		return -EINVAL;
	head = kml_lock();
	kml_dev.chan[a.channel].alarm = a;
	kml_eval_locked(a.channel);
	kml_unlock_wake(head);
	return 0;
}

static int kml_ioc_inject(void __user *up, size_t usize)
{
	struct kml_sensor_inject in;
	struct kml_chan *c;
	u64 head;
	int ret;

	if (!kml_may_change())
		return -EPERM;
	ret = kml_copy_struct_in(&in, sizeof(in), up, usize,
				 KML_SENSOR_INJECT_SIZE_VER0);
	if (ret)
		return ret;
	if (kml_check_inject(&in, channels))
		return -EINVAL;
	head = kml_lock();
	c = &kml_dev.chan[in.channel];
	if (in.flags & KML_SENSOR_INJECT_CLEAR) {
		c->injected = false;
	} else {
		c->injected = true;
		kml_sample_locked(in.channel, in.value_mc, ktime_get_ns());
	}
	kml_unlock_wake(head);
	return 0;
}

static int kml_ioc_reset(size_t usize)
{
	u64 head;

	if (usize)
		return -ENOTTY;
	if (!kml_may_change())
		return -EPERM;
	head = kml_lock();
	kml_reset_locked();
	kml_unlock_wake(head);
	mod_delayed_work(system_wq, &kml_dev.sampler,
			 msecs_to_jiffies(KML_SENSOR_PERIOD_DEFAULT_MS));
	return 0;
}

static long kml_sensor_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	void __user *up = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	unsigned int stat = ST_IOC_UNKNOWN;
	long ret;

	/* LAB sensor 1: dispatch: match KML_IOC_NOSIZE(cmd) against each
	 * KML_IOC_NOSIZE(KML_SENSOR_IOC_...) (magic, number and direction must
	 * match; the size is the caller's, in usize), set stat to the
	 * command's counter and call its handler kml_ioc_...(up, usize).
	 * GET_INFO also answers to ABI 1's number, KML_SENSOR_IOC_GET_INFO_V1.
	 * Anything else is not ours: -ENOTTY, and nothing done.
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
		ret = kml_ioc_read_all(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_PERIOD):
		stat = ST_IOC_GET_PERIOD;
		ret = kml_ioc_get_period(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_SET_PERIOD):
		stat = ST_IOC_SET_PERIOD;
		ret = kml_ioc_set_period(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_GET_ALARM):
		stat = ST_IOC_GET_ALARM;
		ret = kml_ioc_get_alarm(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_SET_ALARM):
		stat = ST_IOC_SET_ALARM;
		ret = kml_ioc_set_alarm(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_INJECT):
		stat = ST_IOC_INJECT;
		ret = kml_ioc_inject(up, usize);
		break;
	case KML_IOC_NOSIZE(KML_SENSOR_IOC_RESET):
		stat = ST_IOC_RESET;
		ret = kml_ioc_reset(usize);
		break;
	default:
		/* Not ours (another magic, number or direction): do nothing. */
		ret = -ENOTTY;
		break;
	}
	/* LAB sensor 1 end: ret = -ENOTTY; */
	if (ret == -ENOTTY)
		stat = ST_IOC_UNKNOWN;
	kml_stats_inc(kml_dev.stats, stat);
	if (ret)
		kml_stats_inc(kml_dev.stats, ST_ERRORS);
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
	spin_lock(&kml_dev.lock);
	cl->cursor = kml_dev.ring.head;
	spin_unlock(&kml_dev.lock);
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

	spin_lock(&kml_dev.lock);
	ret = kml_evring_pending(&kml_dev.ring, cl->cursor);
	spin_unlock(&kml_dev.lock);
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

	kml_stats_inc(kml_dev.stats, ST_READS);
	/* LAB sensor 4: read() gives whole records: -EINVAL if @count cannot
	 * hold one. Take the file's read_lock (mutex_trylock() for an
	 * O_NONBLOCK file, -EAGAIN if busy; else mutex_lock_interruptible()).
	 * Then, while another record fits: take the next one at or after this
	 * file's cursor with kml_evring_next() under kml_dev.lock (pos - cursor
	 * is how many this file missed: ev.lost). None: stop if something was
	 * read, else -EAGAIN for O_NONBLOCK, else sleep until
	 * kml_has_events() with wait_event_interruptible() (a signal ends it)
	 * and try again. One: copy_to_user() it (-EFAULT), and only then move
	 * the cursor past it under the lock, so a bad buffer loses nothing.
	 * Return the bytes copied, or the error if none.
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

		spin_lock(&kml_dev.lock);
		next = kml_evring_next(&kml_dev.ring, cl->cursor, &pos);
		if (next) {
			ev = *next;
			lost = pos - cl->cursor;
		}
		spin_unlock(&kml_dev.lock);
		if (!next) {
			if (done)
				break;
			ret = -EAGAIN;
			if (file->f_flags & O_NONBLOCK)
				goto out;
			ret = wait_event_interruptible(kml_dev.wq,
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
		spin_lock(&kml_dev.lock);
		cl->cursor = pos + 1;
		spin_unlock(&kml_dev.lock);
		if (lost)
			kml_stats_add(kml_dev.stats, ST_OVERFLOWS, lost);
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

	/* LAB sensor 5: poll() never sleeps itself: register the file's wait
	 * queue with poll_wait() (kml_dev.wq, which the wake-up of step 4
	 * wakes), then report EPOLLIN | EPOLLRDNORM if this file has a record
	 * to read (kml_has_events()), 0 if not.
	 */
	poll_wait(file, &kml_dev.wq, wait);
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

/* ---- hwmon: the same readings where real sensors publish them ---- */

static umode_t kml_hwmon_visible(const void *data, enum hwmon_sensor_types type,
				 u32 attr, int channel)
{
	return 0444;
}

static int kml_hwmon_read(struct device *dev, enum hwmon_sensor_types type,
			  u32 attr, int channel, long *val)
{
	if (type != hwmon_temp || attr != hwmon_temp_input)
		return -EOPNOTSUPP;
	spin_lock(&kml_dev.lock);
	*val = kml_dev.chan[channel].value_mc;
	spin_unlock(&kml_dev.lock);
	return 0;
}

static const char *const kml_labels[KML_SENSOR_MAX_CHANNELS] = {
	"probe0", "probe1", "probe2", "probe3", "probe4", "probe5",
	"probe6", "probe7", "probe8", "probe9", "probe10", "probe11",
	"probe12", "probe13", "probe14", "probe15",
};

static int kml_hwmon_read_string(struct device *dev,
				 enum hwmon_sensor_types type, u32 attr,
				 int channel, const char **str)
{
	if (type != hwmon_temp || attr != hwmon_temp_label)
		return -EOPNOTSUPP;
	*str = kml_labels[channel];
	return 0;
}

static const struct hwmon_ops kml_hwmon_ops = {
	.is_visible	= kml_hwmon_visible,
	.read		= kml_hwmon_read,
	.read_string	= kml_hwmon_read_string,
};

/* The channel count is a parameter, so the config array is filled at init. */
static u32 kml_temp_config[KML_SENSOR_MAX_CHANNELS + 1];

static const struct hwmon_channel_info kml_temp_info = {
	.type	= hwmon_temp,
	.config	= kml_temp_config,
};

/*
 * Not "* const": hwmon_chip_info.info only became a pointer to const
 * pointers in 6.4, and this form converts to either.
 */
static const struct hwmon_channel_info *kml_hwmon_info[] = {
	&kml_temp_info,
	NULL,
};

static const struct hwmon_chip_info kml_hwmon_chip = {
	.ops	= &kml_hwmon_ops,
	.info	= kml_hwmon_info,
};

static int __init kml_sensor_init(void)
{
	unsigned int ch;
	int ret;

	if (channels < 1 || channels > KML_SENSOR_MAX_CHANNELS) {
		pr_err("channels=%u: must be 1..%d\n", channels,
		       KML_SENSOR_MAX_CHANNELS);
		return -EINVAL;
	}
	spin_lock_init(&kml_dev.lock);
	init_waitqueue_head(&kml_dev.wq);
	INIT_DELAYED_WORK(&kml_dev.sampler, kml_sampler);

	kml_dev.stats = kml_stats_register("kml_sensor", kml_sensor_stats,
					   ARRAY_SIZE(kml_sensor_stats));
	if (IS_ERR(kml_dev.stats))
		return PTR_ERR(kml_dev.stats);
	spin_lock(&kml_dev.lock);
	kml_reset_locked();
	spin_unlock(&kml_dev.lock);

	kml_dev.pdev = platform_device_register_simple("kml_sensor",
						       PLATFORM_DEVID_NONE,
						       NULL, 0);
	if (IS_ERR(kml_dev.pdev)) {
		ret = PTR_ERR(kml_dev.pdev);
		goto err_stats;
	}
	/*
	 * Kernels without hwmon exist (Debian's cloud kernels): there the
	 * ioctls work alone. The constant condition lets the compiler drop
	 * the calls, so the module does not need hwmon's symbols.
	 */
	if (IS_REACHABLE(CONFIG_HWMON)) {
		for (ch = 0; ch < channels; ch++)
			kml_temp_config[ch] = HWMON_T_INPUT | HWMON_T_LABEL;
		kml_dev.hwmon = hwmon_device_register_with_info(&kml_dev.pdev->dev,
								"kml_sensor", NULL,
								&kml_hwmon_chip, NULL);
		if (IS_ERR(kml_dev.hwmon)) {
			ret = PTR_ERR(kml_dev.hwmon);
			goto err_pdev;
		}
	}
	schedule_delayed_work(&kml_dev.sampler,
			      msecs_to_jiffies(kml_dev.period_ms));
	/*
	 * Last: the device node makes the module reachable from userspace
	 * (an ioctl may re-arm the sampler), so everything it uses is ready
	 * before, and a failure here has had no user to undo.
	 */
	kml_sensor_misc.parent = &kml_dev.pdev->dev;
	ret = misc_register(&kml_sensor_misc);
	if (ret)
		goto err_work;
	return 0;

err_work:
	cancel_delayed_work_sync(&kml_dev.sampler);
	if (IS_REACHABLE(CONFIG_HWMON))
		hwmon_device_unregister(kml_dev.hwmon);
err_pdev:
	platform_device_unregister(kml_dev.pdev);
err_stats:
	kml_stats_unregister(kml_dev.stats);
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
	cancel_delayed_work_sync(&kml_dev.sampler);
	if (IS_REACHABLE(CONFIG_HWMON))
		hwmon_device_unregister(kml_dev.hwmon);
	platform_device_unregister(kml_dev.pdev);
	kml_stats_unregister(kml_dev.stats);
}

module_init(kml_sensor_init);
module_exit(kml_sensor_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: ioctl character device for a simulated temperature sensor");
