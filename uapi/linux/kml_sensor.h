/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_sensor userspace ABI: ioctls, read() records and limits of
 * /dev/kml_sensor, a simulated multi-channel temperature sensor.
 *
 * Temperatures are signed milli-degrees Celsius (as in hwmon), times are
 * CLOCK_MONOTONIC nanoseconds. Every struct is made of fixed-width fields
 * with explicit padding, so 32- and 64-bit callers see one layout (a 32-bit
 * process goes through compat_ptr_ioctl, which only converts the pointer).
 *
 * The ioctl structs are extensible (modules/include/kml_ioctl.h): the size
 * encoded in the ioctl number is the caller's idea of the struct, so a
 * struct may grow by appending fields. A caller built against an older
 * header passes a smaller size and gets the fields it knows; a newer
 * caller passes a larger one, which works if every byte past what the
 * module knows is zero (-E2BIG otherwise). Sizes below the first published
 * one (the *_SIZE_VER0 constants) are -EINVAL. Flags and reserved fields
 * must be zero on input (-EINVAL) so they can carry meaning later.
 * Scalar (__u32) arguments cannot grow: their ioctl numbers match whole.
 *
 * Who may do what: reading (GET_INFO, READ, READ_ALL, GET_PERIOD,
 * GET_ALARM) and receiving alarm records is for every user who can open
 * the device. Everything that changes what the other users see is
 * device-wide and needs CAP_SYS_ADMIN (-EPERM, checked before the argument
 * is read, nothing changed): SET_PERIOD, SET_ALARM, INJECT and RESET.
 *
 * ioctl magic 0xBD, numbers 0x00-0x0F.
 */
#ifndef _UAPI_LINUX_KML_SENSOR_H
#define _UAPI_LINUX_KML_SENSOR_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_SENSOR_DEVICE		"/dev/kml_sensor"
#define KML_SENSOR_ABI_VERSION		2
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
 * @flags: zero (room for capability flags)
 * @abi_version: %KML_SENSOR_ABI_VERSION of the running module
 * @nchannels: channels 0..@nchannels-1 exist
 * @units: %KML_SENSOR_UNITS_MILLI_CELSIUS
 * @min_mc: lowest possible reading and threshold
 * @max_mc: highest possible reading and threshold
 * @period_min_ms: shortest sampling period
 * @period_max_ms: longest sampling period
 * @queue_len: alarm records an open file can fall behind before it
 *	misses some (see struct kml_sensor_event)
 * @reserved: zero
 *
 * Output only: a caller's larger struct gets its tail zeroed.
 */
struct kml_sensor_info {
	__u32 flags;
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

#define KML_SENSOR_INFO_SIZE_VER0	40

/**
 * struct kml_sensor_reading - one channel's latest sample
 * @channel: in: the channel
 * @value_mc: temperature
 * @timestamp_ns: when it was sampled, CLOCK_MONOTONIC
 * @seq: per-channel sample number, +1 for every new sample
 *
 * The fields after @channel are output only; what a caller puts there is
 * ignored.
 */
struct kml_sensor_reading {
	__u32 channel;
	__s32 value_mc;
	__u64 timestamp_ns;
	__u64 seq;
};

#define KML_SENSOR_READING_SIZE_VER0	24

/**
 * struct kml_sensor_read_all - every channel in one call
 * @flags: in: zero
 * @nchannels: out: entries of @readings filled in
 * @readings: out: channel i in @readings[i]; entries from @nchannels on
 *	are zeroed
 */
struct kml_sensor_read_all {
	__u32 flags;
	__u32 nchannels;
	struct kml_sensor_reading readings[KML_SENSOR_MAX_CHANNELS];
};

#define KML_SENSOR_READ_ALL_SIZE_VER0	392

#define KML_SENSOR_ALARM_ENABLED	0x1U

/**
 * struct kml_sensor_alarm - a channel's alarm thresholds
 * @channel: in: the channel
 * @flags: %KML_SENSOR_ALARM_ENABLED, or 0 to disable
 * @low_mc: alarm when the value goes below this
 * @high_mc: alarm when the value goes above this; @low_mc <= @high_mc
 *
 * Thresholds belong to the device, like a hwmon chip's tempN_min/max:
 * everyone may read them (GET_ALARM, which reads only @channel), setting
 * them (SET_ALARM) needs CAP_SYS_ADMIN, and every open file receives the
 * records they cause.
 */
struct kml_sensor_alarm {
	__u32 channel;
	__u32 flags;
	__s32 low_mc;
	__s32 high_mc;
};

#define KML_SENSOR_ALARM_SIZE_VER0	16

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

#define KML_SENSOR_INJECT_SIZE_VER0	16

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
 * @lost: records this file missed just before this one
 *
 * Every change of a channel's zone queues one record that every open file
 * reads: a crossing of an enabled alarm's thresholds, and the return to
 * %KML_SENSOR_ZONE_NORMAL when an alarm in force is disabled (SET_ALARM
 * with flags 0) or reset (RESET). A file sees the records queued after it
 * was opened. The device keeps the last &struct kml_sensor_info.queue_len
 * records; each file reads them at its own pace, and a file that falls
 * further behind misses the oldest: its next record says how many in
 * @lost, so a reader always knows where the gap is. read() returns whole
 * records only; a buffer smaller than one record is -EINVAL. With none
 * queued, read() waits, or is -EAGAIN on an O_NONBLOCK file.
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

#define KML_SENSOR_IOC_GET_INFO	  _IOR(KML_SENSOR_IOC_MAGIC, 0x00, struct kml_sensor_info)
/* ABI 1 numbered GET_INFO _IOWR; still answered, so old clients see abi_version */
#define KML_SENSOR_IOC_GET_INFO_V1 _IOWR(KML_SENSOR_IOC_MAGIC, 0x00, struct kml_sensor_info)
#define KML_SENSOR_IOC_READ	  _IOWR(KML_SENSOR_IOC_MAGIC, 0x01, struct kml_sensor_reading)
#define KML_SENSOR_IOC_READ_ALL	  _IOWR(KML_SENSOR_IOC_MAGIC, 0x02, struct kml_sensor_read_all)
#define KML_SENSOR_IOC_GET_PERIOD _IOR(KML_SENSOR_IOC_MAGIC, 0x03, __u32)
/* CAP_SYS_ADMIN: the device's sampling period, for everyone */
#define KML_SENSOR_IOC_SET_PERIOD _IOW(KML_SENSOR_IOC_MAGIC, 0x04, __u32)
#define KML_SENSOR_IOC_GET_ALARM  _IOWR(KML_SENSOR_IOC_MAGIC, 0x05, struct kml_sensor_alarm)
/* CAP_SYS_ADMIN: the device's thresholds, every open file gets the records */
#define KML_SENSOR_IOC_SET_ALARM  _IOW(KML_SENSOR_IOC_MAGIC, 0x06, struct kml_sensor_alarm)
/* CAP_SYS_ADMIN: hold a channel at a value, or hand it back */
#define KML_SENSOR_IOC_INJECT	  _IOW(KML_SENSOR_IOC_MAGIC, 0x07, struct kml_sensor_inject)
/*
 * CAP_SYS_ADMIN: simulation, thresholds and period back to their defaults;
 * every channel that was out of its band queues a %KML_SENSOR_ZONE_NORMAL
 * record, so readers never keep believing in an alarm that is gone.
 */
#define KML_SENSOR_IOC_RESET	  _IO(KML_SENSOR_IOC_MAGIC, 0x08)

#endif /* _UAPI_LINUX_KML_SENSOR_H */
