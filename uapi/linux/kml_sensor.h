/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_sensor userspace ABI: ioctls, read() records and limits of
 * /dev/kml_sensor, a simulated multi-channel temperature sensor.
 *
 * Temperatures are signed milli-degrees Celsius (as in hwmon), times are
 * CLOCK_MONOTONIC nanoseconds. Every struct is made of fixed-width fields
 * with explicit padding, so 32- and 64-bit callers see one layout; padding
 * must be zero on input (-EINVAL otherwise) so it can carry meaning later.
 * Structs a caller fills in for output lead with a size field, so a newer
 * kernel can tell an older caller's struct from its own.
 *
 * ioctl magic 0xBD, numbers 0x00-0x0F.
 */
#ifndef _UAPI_LINUX_KML_SENSOR_H
#define _UAPI_LINUX_KML_SENSOR_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_SENSOR_DEVICE		"/dev/kml_sensor"
#define KML_SENSOR_ABI_VERSION		1
#define KML_SENSOR_MAX_CHANNELS		16
#define KML_SENSOR_UNITS_MILLI_CELSIUS	1

/* Readings (and thresholds) are within these bounds. */
#define KML_SENSOR_MIN_MC		(-50000)
#define KML_SENSOR_MAX_MC		150000
#define KML_SENSOR_PERIOD_MIN_MS	10
#define KML_SENSOR_PERIOD_MAX_MS	10000
#define KML_SENSOR_PERIOD_DEFAULT_MS	100

/**
 * struct kml_sensor_info - what the device is (KML_SENSOR_IOC_GET_INFO)
 * @size: in: sizeof(struct kml_sensor_info) as the caller knows it
 * @abi_version: %KML_SENSOR_ABI_VERSION of the running module
 * @nchannels: channels 0..@nchannels-1 exist
 * @units: %KML_SENSOR_UNITS_MILLI_CELSIUS
 * @min_mc: lowest possible reading and threshold
 * @max_mc: highest possible reading and threshold
 * @period_min_ms: shortest sampling period
 * @period_max_ms: longest sampling period
 * @queue_len: alarm records each open file can hold before dropping
 * @reserved: zero
 */
struct kml_sensor_info {
	__u32 size;
	__u32 abi_version;
	__u32 nchannels;
	__u32 units;
	__s32 min_mc;
	__s32 max_mc;
	__u32 period_min_ms;
	__u32 period_max_ms;
	__u32 queue_len;
	__u32 reserved;
};

/**
 * struct kml_sensor_reading - one channel's latest sample
 * @channel: in: the channel
 * @value_mc: temperature
 * @timestamp_ns: when it was sampled, CLOCK_MONOTONIC
 * @seq: per-channel sample number, +1 for every new sample
 */
struct kml_sensor_reading {
	__u32 channel;
	__s32 value_mc;
	__u64 timestamp_ns;
	__u64 seq;
};

/**
 * struct kml_sensor_read_all - every channel in one call
 * @size: in: sizeof(struct kml_sensor_read_all) as the caller knows it
 * @nchannels: out: entries of @readings filled in
 * @readings: out: channel i in @readings[i]; entries from @nchannels on
 *	are left as they were
 */
struct kml_sensor_read_all {
	__u32 size;
	__u32 nchannels;
	struct kml_sensor_reading readings[KML_SENSOR_MAX_CHANNELS];
};

#define KML_SENSOR_ALARM_ENABLED	0x1U

/**
 * struct kml_sensor_alarm - a channel's alarm thresholds
 * @channel: in: the channel
 * @flags: %KML_SENSOR_ALARM_ENABLED, or 0 to disable
 * @low_mc: alarm when the value goes below this
 * @high_mc: alarm when the value goes above this; @low_mc <= @high_mc
 */
struct kml_sensor_alarm {
	__u32 channel;
	__u32 flags;
	__s32 low_mc;
	__s32 high_mc;
};

#define KML_SENSOR_INJECT_CLEAR		0x1U

/**
 * struct kml_sensor_inject - override a channel (needs CAP_SYS_ADMIN)
 * @channel: the channel
 * @flags: 0 to hold the channel at @value_mc, or
 *	%KML_SENSOR_INJECT_CLEAR to hand it back to the simulation
 * @value_mc: the value to hold (ignored with %KML_SENSOR_INJECT_CLEAR)
 * @reserved: zero
 */
struct kml_sensor_inject {
	__u32 channel;
	__u32 flags;
	__s32 value_mc;
	__u32 reserved;
};

/* Zone a channel entered, in struct kml_sensor_event.kind. */
#define KML_SENSOR_ZONE_NORMAL		0
#define KML_SENSOR_ZONE_LOW		1
#define KML_SENSOR_ZONE_HIGH		2

/**
 * struct kml_sensor_event - an alarm record, as read(2) returns them
 * @timestamp_ns: when the crossing was sampled, CLOCK_MONOTONIC
 * @seq: the channel's sample number
 * @channel: the channel
 * @value_mc: the value that crossed
 * @kind: the zone entered: %KML_SENSOR_ZONE_LOW, _HIGH or _NORMAL
 * @lost: records this file dropped (queue full) just before this one
 *
 * Every change of a channel's zone while its alarm is enabled queues one
 * record to every open file. read() returns whole records only; a buffer
 * smaller than one record is -EINVAL.
 */
struct kml_sensor_event {
	__u64 timestamp_ns;
	__u64 seq;
	__u32 channel;
	__s32 value_mc;
	__u32 kind;
	__u32 lost;
};

#define KML_SENSOR_IOC_MAGIC	0xBD

#define KML_SENSOR_IOC_GET_INFO	  _IOWR(KML_SENSOR_IOC_MAGIC, 0x00, struct kml_sensor_info)
#define KML_SENSOR_IOC_READ	  _IOWR(KML_SENSOR_IOC_MAGIC, 0x01, struct kml_sensor_reading)
#define KML_SENSOR_IOC_READ_ALL	  _IOWR(KML_SENSOR_IOC_MAGIC, 0x02, struct kml_sensor_read_all)
#define KML_SENSOR_IOC_GET_PERIOD _IOR(KML_SENSOR_IOC_MAGIC, 0x03, __u32)
#define KML_SENSOR_IOC_SET_PERIOD _IOW(KML_SENSOR_IOC_MAGIC, 0x04, __u32)
#define KML_SENSOR_IOC_GET_ALARM  _IOWR(KML_SENSOR_IOC_MAGIC, 0x05, struct kml_sensor_alarm)
#define KML_SENSOR_IOC_SET_ALARM  _IOW(KML_SENSOR_IOC_MAGIC, 0x06, struct kml_sensor_alarm)
/* CAP_SYS_ADMIN: */
#define KML_SENSOR_IOC_INJECT	  _IOW(KML_SENSOR_IOC_MAGIC, 0x07, struct kml_sensor_inject)
/* CAP_SYS_ADMIN: simulation, thresholds and period back to their defaults */
#define KML_SENSOR_IOC_RESET	  _IO(KML_SENSOR_IOC_MAGIC, 0x08)

#endif /* _UAPI_LINUX_KML_SENSOR_H */
