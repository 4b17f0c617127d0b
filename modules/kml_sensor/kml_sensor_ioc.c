// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl handlers of kml_sensor that the lab hands over complete
 * (READ_ALL, GET_PERIOD, the alarm thresholds, INJECT and RESET), and the
 * names of the counters every command counts in. The dispatcher and the
 * handlers the lab teaches are in kml_sensor_main.c.
 */
#include <linux/ktime.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "../include/kml_ioctl.h"
#include "kml_sensor.h"

/* The names of the counters, in /proc/kmodlab/stats. */
const struct kml_stats_desc kml_sensor_stats[KML_SENSOR_NR_STATS] = {
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
 * READ_ALL reads only what is input (@flags, and a newer caller's tail,
 * which must be zero), copies out only the channels this device has and
 * zeroes the rest in place. The whole struct in, memset and out was
 * three times the bytes it carries, and cost as much as four READs
 * under TCG (make bench; docs/measured.md).
 */
int kml_sensor_ioc_read_all(void __user *up, size_t usize)
{
	struct kml_sensor_read_all __user *ua = up;
	struct kml_sensor_read_all all;
	unsigned int ch, n = kml_sensor_channels;
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
	spin_lock(&kml_sensor_dev.lock);
	for (ch = 0; ch < n; ch++)
		kml_sensor_reading_locked(ch, &all.readings[ch]);
	spin_unlock(&kml_sensor_dev.lock);
	/* only what was filled in leaves: no uninitialised byte */
	filled = offsetof(struct kml_sensor_read_all, readings) +
		 n * sizeof(all.readings[0]);
	if (copy_to_user(up, &all, filled) ||
	    clear_user((u8 __user *)up + filled, usize - filled))
		return -EFAULT;
	return 0;
}

/* A scalar cannot grow, so its commands must carry exactly its size. */
int kml_sensor_ioc_get_period(u32 __user *up, size_t usize)
{
	if (usize != sizeof(u32))
		return -ENOTTY;
	return put_user(READ_ONCE(kml_sensor_dev.period_ms), up);
}

int kml_sensor_ioc_get_alarm(void __user *up, size_t usize)
{
	struct kml_sensor_alarm a;
	int ret;

	ret = kml_copy_struct_in(&a, sizeof(a), up, usize,
				 KML_SENSOR_ALARM_SIZE_VER0);
	if (ret)
		return ret;
	if (a.channel >= kml_sensor_channels)
		return -EINVAL;
	spin_lock(&kml_sensor_dev.lock);
	a = kml_sensor_dev.chan[a.channel].alarm;
	spin_unlock(&kml_sensor_dev.lock);
	return kml_copy_struct_out(up, usize, &a, sizeof(a));
}

int kml_sensor_ioc_set_alarm(void __user *up, size_t usize)
{
	struct kml_sensor_alarm a;
	u64 head;
	int ret;

	/*
	 * Thresholds are the device's (every open file gets the records they
	 * cause), so setting them is privileged, as hwmon's tempN_max is.
	 */
	if (!kml_sensor_may_change())
		return -EPERM;
	ret = kml_copy_struct_in(&a, sizeof(a), up, usize,
				 KML_SENSOR_ALARM_SIZE_VER0);
	if (ret)
		return ret;
	if (kml_check_alarm(&a, kml_sensor_channels))
		return -EINVAL;
	head = kml_sensor_lock();
	kml_sensor_dev.chan[a.channel].alarm = a;
	kml_sensor_eval_locked(a.channel);
	kml_sensor_unlock_wake(head);
	return 0;
}

int kml_sensor_ioc_inject(void __user *up, size_t usize)
{
	struct kml_sensor_inject in;
	struct kml_chan *c;
	u64 head;
	int ret;

	if (!kml_sensor_may_change())
		return -EPERM;
	ret = kml_copy_struct_in(&in, sizeof(in), up, usize,
				 KML_SENSOR_INJECT_SIZE_VER0);
	if (ret)
		return ret;
	if (kml_check_inject(&in, kml_sensor_channels))
		return -EINVAL;
	head = kml_sensor_lock();
	c = &kml_sensor_dev.chan[in.channel];
	if (in.flags & KML_SENSOR_INJECT_CLEAR) {
		c->injected = false;
	} else {
		c->injected = true;
		kml_sensor_sample_locked(in.channel, in.value_mc,
					 ktime_get_ns());
	}
	kml_sensor_unlock_wake(head);
	return 0;
}

int kml_sensor_ioc_reset(size_t usize)
{
	u64 head;

	if (usize)
		return -ENOTTY;
	if (!kml_sensor_may_change())
		return -EPERM;
	head = kml_sensor_lock();
	kml_sensor_reset_locked();
	kml_sensor_unlock_wake(head);
	mod_delayed_work(system_wq, &kml_sensor_dev.sampler,
			 msecs_to_jiffies(KML_SENSOR_PERIOD_DEFAULT_MS));
	return 0;
}
