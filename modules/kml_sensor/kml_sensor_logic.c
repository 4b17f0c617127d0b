// SPDX-License-Identifier: GPL-2.0
/*
 * kml_sensor's pure logic. The model is deterministic for a given seed so
 * a workshop sees the same "cold room" every time and tests can reason
 * about its range; tests that need exact values inject them instead.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

#include "kml_sensor_logic.h"

static __u32 kml_xorshift32(__u32 *s)
{
	__u32 x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

/**
 * kml_model_init() - start a channel's simulation
 * @m: the model
 * @seed: module-wide seed
 * @channel: channel number; each channel gets its own setpoint and stream
 */
void kml_model_init(struct kml_model *m, __u32 seed, unsigned int channel)
{
	/* xorshift must never hold 0: mix, then force a bit on. */
	m->rng = (seed * 2654435761U) ^ ((channel + 1) * 40503U) ^ 0x9e3779b9U;
	if (!m->rng)
		m->rng = 1;
	m->setpoint_mc = 4000 + 1500 * (__s32)channel;
	m->drift_mc = 0;
}

/**
 * kml_model_step() - the next sample of a channel
 * @m: the model
 *
 * A bounded random walk (+/-100 mC a step, at most +/-3000 mC) plus
 * +/-50 mC of noise.
 *
 * Return: the new value, within setpoint +/- %KML_MODEL_SPAN_MC.
 */
__s32 kml_model_step(struct kml_model *m)
{
	__s32 step = (__s32)(kml_xorshift32(&m->rng) % 201) - 100;
	__s32 noise = (__s32)(kml_xorshift32(&m->rng) % 101) - 50;

	m->drift_mc += step;
	if (m->drift_mc > 3000)
		m->drift_mc = 3000;
	if (m->drift_mc < -3000)
		m->drift_mc = -3000;
	return m->setpoint_mc + m->drift_mc + noise;
}

/**
 * kml_zone() - which side of its thresholds a value is on
 * @value_mc: the value
 * @a: the channel's alarm settings
 *
 * Return: %KML_SENSOR_ZONE_LOW or _HIGH when the alarm is enabled and the
 * value is strictly outside [low, high]; %KML_SENSOR_ZONE_NORMAL otherwise.
 */
int kml_zone(__s32 value_mc, const struct kml_sensor_alarm *a)
{
	if (!(a->flags & KML_SENSOR_ALARM_ENABLED))
		return KML_SENSOR_ZONE_NORMAL;
	if (value_mc < a->low_mc)
		return KML_SENSOR_ZONE_LOW;
	if (value_mc > a->high_mc)
		return KML_SENSOR_ZONE_HIGH;
	return KML_SENSOR_ZONE_NORMAL;
}

static bool kml_in_range(__s32 mc)
{
	return mc >= KML_SENSOR_MIN_MC && mc <= KML_SENSOR_MAX_MC;
}

/**
 * kml_check_alarm() - validate a SET_ALARM argument
 * @a: the argument
 * @nchannels: channels the device has
 *
 * Return: 0, or -EINVAL for a bad channel, unknown flag, threshold out of
 * range or low above high.
 */
int kml_check_alarm(const struct kml_sensor_alarm *a, unsigned int nchannels)
{
	if (a->channel >= nchannels || a->flags & ~KML_SENSOR_ALARM_ENABLED)
		return -EINVAL;
	if (!kml_in_range(a->low_mc) || !kml_in_range(a->high_mc) ||
	    a->low_mc > a->high_mc)
		return -EINVAL;
	return 0;
}

/**
 * kml_check_inject() - validate an INJECT argument
 * @in: the argument
 * @nchannels: channels the device has
 *
 * Return: 0, or -EINVAL for a bad channel, unknown flag, non-zero
 * reserved field or (unless clearing) a value out of range.
 */
int kml_check_inject(const struct kml_sensor_inject *in, unsigned int nchannels)
{
	if (in->channel >= nchannels || in->reserved ||
	    in->flags & ~KML_SENSOR_INJECT_CLEAR)
		return -EINVAL;
	if (!(in->flags & KML_SENSOR_INJECT_CLEAR) && !kml_in_range(in->value_mc))
		return -EINVAL;
	return 0;
}

/**
 * kml_check_period() - validate a sampling period
 * @ms: period in milliseconds
 *
 * Return: 0, or -EINVAL outside [%KML_SENSOR_PERIOD_MIN_MS,
 * %KML_SENSOR_PERIOD_MAX_MS].
 */
int kml_check_period(__u32 ms)
{
	if (ms < KML_SENSOR_PERIOD_MIN_MS || ms > KML_SENSOR_PERIOD_MAX_MS)
		return -EINVAL;
	return 0;
}

/**
 * kml_evring_push() - add a record, overwriting the oldest once full
 * @r: the ring
 * @e: the record; its @lost field is the reader's business and left alone
 */
void kml_evring_push(struct kml_evring *r, const struct kml_sensor_event *e)
{
	r->ev[r->head % KML_SENSOR_QUEUE_LEN] = *e;
	r->head++;
}

/**
 * kml_evring_next() - the next record for a reader
 * @r: the ring
 * @cursor: the number of the next record the reader wants
 * @pos: set to the number of the record returned; @pos - @cursor records
 *	were overwritten before the reader got to them
 *
 * The reader moves its cursor to @pos + 1 once it has consumed the record.
 *
 * Return: the record, left in the ring, or NULL if the reader is up to date.
 */
const struct kml_sensor_event *kml_evring_next(const struct kml_evring *r,
					       __u64 cursor, __u64 *pos)
{
	if (r->head == cursor)
		return NULL;
	*pos = cursor;
	if (r->head - cursor > KML_SENSOR_QUEUE_LEN)
		*pos = r->head - KML_SENSOR_QUEUE_LEN;
	return &r->ev[*pos % KML_SENSOR_QUEUE_LEN];
}
