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
 * capability check on the commands that change what other users see.
 *
 * Alongside the ioctls, alarms show the other half of a character device:
 * read() returns fixed-size records, poll() reports when there are some,
 * and O_NONBLOCK gives -EAGAIN, the contract epoll and event loops need.
 * Each open file has its own bounded queue, so one slow reader cannot
 * make another miss alarms, and an overflow is counted, never silent.
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

#include "../include/kml_stats.h"
#include "kml_sensor_logic.h"

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

/* One per open file: its own alarm queue. */
struct kml_client {
	struct list_head node;		/* on kml_dev.clients */
	struct mutex read_lock;		/* one reader at a time per file */
	struct kml_evq q;		/* under kml_dev.lock */
};

static struct kml_dev {
	/*
	 * Guards the channels, the period and every client's queue. Taken
	 * from process context only (ioctl, read, the sampling work).
	 */
	spinlock_t lock;
	struct kml_chan chan[KML_SENSOR_MAX_CHANNELS];
	unsigned int period_ms;
	struct list_head clients;
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

/* Queue an alarm record to every open file. Called with kml_dev.lock held. */
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
	struct kml_client *cl;

	lockdep_assert_held(&kml_dev.lock);
	kml_stats_inc(kml_dev.stats, ST_ALARMS);
	list_for_each_entry(cl, &kml_dev.clients, node)
		if (!kml_evq_push(&cl->q, &ev))
			kml_stats_inc(kml_dev.stats, ST_OVERFLOWS);
	wake_up_interruptible(&kml_dev.wq);
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
	kml_stats_inc(kml_dev.stats, ST_SAMPLES);
	kml_eval_locked(ch);
}

static void kml_sampler(struct work_struct *work)
{
	u64 now = ktime_get_ns();
	unsigned int ch, period;

	spin_lock(&kml_dev.lock);
	for (ch = 0; ch < channels; ch++)
		if (!kml_dev.chan[ch].injected)
			kml_sample_locked(ch, kml_model_step(&kml_dev.chan[ch].model),
					  now);
	period = kml_dev.period_ms;
	spin_unlock(&kml_dev.lock);
	schedule_delayed_work(&kml_dev.sampler, msecs_to_jiffies(period));
}

/* Defaults: fresh models, alarms off, default period. Lock held. */
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
		c->zone = KML_SENSOR_ZONE_NORMAL;
		kml_sample_locked(ch, kml_model_step(&c->model), now);
	}
	kml_dev.period_ms = KML_SENSOR_PERIOD_DEFAULT_MS;
}

/* ---- ioctls: copy in, validate, act under the lock, copy out ---- */

static int kml_ioc_info(struct kml_sensor_info __user *uinfo)
{
	struct kml_sensor_info info = {
		.size = sizeof(info),
		.abi_version = KML_SENSOR_ABI_VERSION,
		.nchannels = channels,
		.units = KML_SENSOR_UNITS_MILLI_CELSIUS,
		.min_mc = KML_SENSOR_MIN_MC,
		.max_mc = KML_SENSOR_MAX_MC,
		.period_min_ms = KML_SENSOR_PERIOD_MIN_MS,
		.period_max_ms = KML_SENSOR_PERIOD_MAX_MS,
		.queue_len = KML_SENSOR_QUEUE_LEN,
	};
	u32 size;

	if (get_user(size, &uinfo->size))
		return -EFAULT;
	if (size != sizeof(info))
		return -EINVAL;
	return copy_to_user(uinfo, &info, sizeof(info)) ? -EFAULT : 0;
}

static void kml_reading_locked(unsigned int ch, struct kml_sensor_reading *r)
{
	struct kml_chan *c = &kml_dev.chan[ch];

	r->channel = ch;
	r->value_mc = c->value_mc;
	r->timestamp_ns = c->timestamp_ns;
	r->seq = c->seq;
}

static int kml_ioc_read(struct kml_sensor_reading __user *ur)
{
	struct kml_sensor_reading r;
	u32 ch;

	if (get_user(ch, &ur->channel))
		return -EFAULT;
	if (ch >= channels)
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	kml_reading_locked(ch, &r);
	spin_unlock(&kml_dev.lock);
	return copy_to_user(ur, &r, sizeof(r)) ? -EFAULT : 0;
}

static int kml_ioc_read_all(struct kml_sensor_read_all __user *ua)
{
	struct kml_sensor_read_all all;
	unsigned int ch;
	u32 size;

	if (get_user(size, &ua->size))
		return -EFAULT;
	if (size != sizeof(all))
		return -EINVAL;
	all.size = sizeof(all);
	all.nchannels = channels;
	/* One lock hold: every channel from the same instant. */
	spin_lock(&kml_dev.lock);
	for (ch = 0; ch < channels; ch++)
		kml_reading_locked(ch, &all.readings[ch]);
	spin_unlock(&kml_dev.lock);
	/*
	 * Copy only the filled entries: half the bytes with the default
	 * channel count, and no uninitialised stack can leak out.
	 */
	if (copy_to_user(ua, &all, offsetof(typeof(all), readings) +
			 channels * sizeof(all.readings[0])))
		return -EFAULT;
	return 0;
}

static int kml_ioc_set_period(u32 __user *up)
{
	u32 ms;

	if (get_user(ms, up))
		return -EFAULT;
	if (kml_check_period(ms))
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	kml_dev.period_ms = ms;
	spin_unlock(&kml_dev.lock);
	/* Takes effect now, not after the old (maybe long) period. */
	mod_delayed_work(system_wq, &kml_dev.sampler, msecs_to_jiffies(ms));
	return 0;
}

static int kml_ioc_get_alarm(struct kml_sensor_alarm __user *ua)
{
	struct kml_sensor_alarm a;
	u32 ch;

	if (get_user(ch, &ua->channel))
		return -EFAULT;
	if (ch >= channels)
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	a = kml_dev.chan[ch].alarm;
	spin_unlock(&kml_dev.lock);
	return copy_to_user(ua, &a, sizeof(a)) ? -EFAULT : 0;
}

static int kml_ioc_set_alarm(struct kml_sensor_alarm __user *ua)
{
	struct kml_sensor_alarm a;

	if (copy_from_user(&a, ua, sizeof(a)))
		return -EFAULT;
	if (kml_check_alarm(&a, channels))
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	kml_dev.chan[a.channel].alarm = a;
	kml_eval_locked(a.channel);
	spin_unlock(&kml_dev.lock);
	return 0;
}

static int kml_ioc_inject(struct kml_sensor_inject __user *ui)
{
	struct kml_sensor_inject in;
	struct kml_chan *c;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&in, ui, sizeof(in)))
		return -EFAULT;
	if (kml_check_inject(&in, channels))
		return -EINVAL;
	spin_lock(&kml_dev.lock);
	c = &kml_dev.chan[in.channel];
	if (in.flags & KML_SENSOR_INJECT_CLEAR) {
		c->injected = false;
	} else {
		c->injected = true;
		kml_sample_locked(in.channel, in.value_mc, ktime_get_ns());
	}
	spin_unlock(&kml_dev.lock);
	return 0;
}

static int kml_ioc_reset(void)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	spin_lock(&kml_dev.lock);
	kml_reset_locked();
	spin_unlock(&kml_dev.lock);
	mod_delayed_work(system_wq, &kml_dev.sampler,
			 msecs_to_jiffies(KML_SENSOR_PERIOD_DEFAULT_MS));
	return 0;
}

static long kml_sensor_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	void __user *up = (void __user *)arg;
	unsigned int stat;
	long ret;

	switch (cmd) {
	case KML_SENSOR_IOC_GET_INFO:
		stat = ST_IOC_INFO;
		ret = kml_ioc_info(up);
		break;
	case KML_SENSOR_IOC_READ:
		stat = ST_IOC_READ;
		ret = kml_ioc_read(up);
		break;
	case KML_SENSOR_IOC_READ_ALL:
		stat = ST_IOC_READ_ALL;
		ret = kml_ioc_read_all(up);
		break;
	case KML_SENSOR_IOC_GET_PERIOD:
		stat = ST_IOC_GET_PERIOD;
		ret = put_user(READ_ONCE(kml_dev.period_ms), (u32 __user *)up);
		break;
	case KML_SENSOR_IOC_SET_PERIOD:
		stat = ST_IOC_SET_PERIOD;
		ret = kml_ioc_set_period(up);
		break;
	case KML_SENSOR_IOC_GET_ALARM:
		stat = ST_IOC_GET_ALARM;
		ret = kml_ioc_get_alarm(up);
		break;
	case KML_SENSOR_IOC_SET_ALARM:
		stat = ST_IOC_SET_ALARM;
		ret = kml_ioc_set_alarm(up);
		break;
	case KML_SENSOR_IOC_INJECT:
		stat = ST_IOC_INJECT;
		ret = kml_ioc_inject(up);
		break;
	case KML_SENSOR_IOC_RESET:
		stat = ST_IOC_RESET;
		ret = kml_ioc_reset();
		break;
	default:
		/* Not ours (another magic, number or size): say so, do nothing. */
		stat = ST_IOC_UNKNOWN;
		ret = -ENOTTY;
		break;
	}
	kml_stats_inc(kml_dev.stats, stat);
	if (ret)
		kml_stats_inc(kml_dev.stats, ST_ERRORS);
	return ret;
}

/* ---- read/poll: the alarm records ---- */

static int kml_sensor_open(struct inode *inode, struct file *file)
{
	struct kml_client *cl = kzalloc(sizeof(*cl), GFP_KERNEL);

	if (!cl)
		return -ENOMEM;
	mutex_init(&cl->read_lock);
	spin_lock(&kml_dev.lock);
	list_add_tail(&cl->node, &kml_dev.clients);
	spin_unlock(&kml_dev.lock);
	file->private_data = cl;
	return 0;
}

static int kml_sensor_release(struct inode *inode, struct file *file)
{
	struct kml_client *cl = file->private_data;

	spin_lock(&kml_dev.lock);
	list_del(&cl->node);
	spin_unlock(&kml_dev.lock);
	mutex_destroy(&cl->read_lock);
	kfree(cl);
	return 0;
}

static bool kml_has_events(struct kml_client *cl)
{
	bool ret;

	spin_lock(&kml_dev.lock);
	ret = kml_evq_len(&cl->q) != 0;
	spin_unlock(&kml_dev.lock);
	return ret;
}

static ssize_t kml_sensor_read(struct file *file, char __user *buf,
			       size_t count, loff_t *ppos)
{
	struct kml_client *cl = file->private_data;
	struct kml_sensor_event ev;
	size_t done = 0;
	int ret;

	kml_stats_inc(kml_dev.stats, ST_READS);
	if (count < sizeof(ev))
		return -EINVAL;
	if (mutex_lock_interruptible(&cl->read_lock))
		return -ERESTARTSYS;
	while (done + sizeof(ev) <= count) {
		const struct kml_sensor_event *head;

		spin_lock(&kml_dev.lock);
		head = kml_evq_peek(&cl->q);
		if (head)
			ev = *head;
		spin_unlock(&kml_dev.lock);
		if (!head) {
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
		/*
		 * Copy before popping: a bad buffer leaves the record queued.
		 * Only this file's reader (we hold read_lock) pops, so the
		 * record we peeked is still the oldest.
		 */
		if (copy_to_user(buf + done, &ev, sizeof(ev))) {
			ret = -EFAULT;
			goto out;
		}
		spin_lock(&kml_dev.lock);
		kml_evq_pop(&cl->q);
		spin_unlock(&kml_dev.lock);
		done += sizeof(ev);
	}
	ret = 0;
out:
	mutex_unlock(&cl->read_lock);
	return done ? done : ret;
}

static __poll_t kml_sensor_poll(struct file *file, poll_table *wait)
{
	struct kml_client *cl = file->private_data;

	poll_wait(file, &kml_dev.wq, wait);
	return kml_has_events(cl) ? EPOLLIN | EPOLLRDNORM : 0;
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
 * 0666: any user may read the sensor and set alarms; INJECT and RESET
 * check CAP_SYS_ADMIN themselves, so the unprivileged get -EPERM.
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
	INIT_LIST_HEAD(&kml_dev.clients);
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
	kml_sensor_misc.parent = &kml_dev.pdev->dev;
	ret = misc_register(&kml_sensor_misc);
	if (ret)
		goto err_pdev;
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
			goto err_misc;
		}
	}
	schedule_delayed_work(&kml_dev.sampler,
			      msecs_to_jiffies(kml_dev.period_ms));
	return 0;

err_misc:
	misc_deregister(&kml_sensor_misc);
err_pdev:
	platform_device_unregister(kml_dev.pdev);
err_stats:
	kml_stats_unregister(kml_dev.stats);
	return ret;
}

static void __exit kml_sensor_exit(void)
{
	/* Open files pin the module (.owner), so no client is left. */
	if (IS_REACHABLE(CONFIG_HWMON))
		hwmon_device_unregister(kml_dev.hwmon);
	misc_deregister(&kml_sensor_misc);
	platform_device_unregister(kml_dev.pdev);
	/* Safe for a self-rearming work: it stops re-queueing itself. */
	cancel_delayed_work_sync(&kml_dev.sampler);
	kml_stats_unregister(kml_dev.stats);
}

module_init(kml_sensor_init);
module_exit(kml_sensor_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: ioctl character device for a simulated temperature sensor");
