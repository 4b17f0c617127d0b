/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_sensor's own header: the device's state, which every file of the
 * module reads and changes under its lock, and what each file offers the
 * others. kml_sensor_main.c (the lab's file) is the character device;
 * the sampler, the other ioctl handlers and hwmon are handed over
 * complete in files of their own.
 */
#ifndef _KML_SENSOR_H
#define _KML_SENSOR_H

#include <linux/compiler_types.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../include/kml_stats.h"
#include "kml_sensor_logic.h"

struct device;
struct platform_device;
struct work_struct;

/* the channels parameter, 1..KML_SENSOR_MAX_CHANNELS (checked at load) */
extern unsigned int kml_sensor_channels;

struct kml_chan {
	struct kml_model model;
	s32 value_mc;
	u64 timestamp_ns;
	u64 seq;
	bool injected;			/* held at value_mc until cleared */
	struct kml_sensor_alarm alarm;
	int zone;
};

struct kml_dev {
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
};

extern struct kml_dev kml_sensor_dev;

/* The module's counters in kml_stats, named in kml_sensor_ioc.c */
enum {
	ST_IOC_INFO, ST_IOC_READ, ST_IOC_READ_ALL, ST_IOC_GET_PERIOD,
	ST_IOC_SET_PERIOD, ST_IOC_GET_ALARM, ST_IOC_SET_ALARM, ST_IOC_INJECT,
	ST_IOC_RESET, ST_IOC_UNKNOWN, ST_ERRORS, ST_SAMPLES, ST_ALARMS,
	ST_OVERFLOWS, ST_READS, KML_SENSOR_NR_STATS
};

extern const struct kml_stats_desc kml_sensor_stats[KML_SENSOR_NR_STATS];

/*
 * kml_sensor_main.c: the lock and wake-up, privilege, one reading.
 * kml_sensor_lock() takes kml_sensor_dev.lock and returns what
 * kml_sensor_unlock_wake() needs to drop it and wake the readers.
 * Their definitions carry __acquires()/__releases(); here they would
 * trip checkpatch, which takes "(void) __acquires(...)" for a definition.
 */
u64 kml_sensor_lock(void);
void kml_sensor_unlock_wake(u64 head_before);
bool kml_sensor_may_change(void);
void kml_sensor_reading_locked(unsigned int ch, struct kml_sensor_reading *r);

/* kml_sensor_sample.c: the sampler, and the alarms it records */
void kml_sensor_eval_locked(unsigned int ch);
void kml_sensor_sample_locked(unsigned int ch, s32 value_mc, u64 now);
void kml_sensor_sampler(struct work_struct *work);
void kml_sensor_reset_locked(void);

/* kml_sensor_ioc.c: the ioctl handlers the lab hands over */
int kml_sensor_ioc_read_all(void __user *up, size_t usize);
int kml_sensor_ioc_get_period(u32 __user *up, size_t usize);
int kml_sensor_ioc_get_alarm(void __user *up, size_t usize);
int kml_sensor_ioc_set_alarm(void __user *up, size_t usize);
int kml_sensor_ioc_inject(void __user *up, size_t usize);
int kml_sensor_ioc_reset(size_t usize);

/* kml_sensor_hwmon.c: the readings registered with hwmon */
int kml_sensor_hwmon_register(void);
void kml_sensor_hwmon_unregister(void);

#endif /* _KML_SENSOR_H */
