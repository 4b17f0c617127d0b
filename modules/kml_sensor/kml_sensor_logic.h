/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_sensor (simulation model, alarm zones, argument checks,
 * the alarm record ring), free of kernel dependencies so host unit
 * tests and fuzz targets build the very same code.
 */
#ifndef _KML_SENSOR_LOGIC_H
#define _KML_SENSOR_LOGIC_H

#include <linux/types.h>
#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif

#include "../../uapi/linux/kml_sensor.h"

/* Alarm records kept; a power of two, so record numbers map to slots cheaply. */
#define KML_SENSOR_QUEUE_LEN	256

/* The model keeps a channel within its setpoint +/- this. */
#define KML_MODEL_SPAN_MC	3050

/**
 * struct kml_model - one channel's simulated probe
 * @rng: xorshift32 state, never 0
 * @setpoint_mc: the temperature the room is regulated to
 * @drift_mc: slow random walk around the setpoint
 */
struct kml_model {
	__u32 rng;
	__s32 setpoint_mc;
	__s32 drift_mc;
};

void kml_model_init(struct kml_model *m, __u32 seed, unsigned int channel);
__s32 kml_model_step(struct kml_model *m);

int kml_zone(__s32 value_mc, const struct kml_sensor_alarm *a);
int kml_check_alarm(const struct kml_sensor_alarm *a, unsigned int nchannels);
int kml_check_inject(const struct kml_sensor_inject *in, unsigned int nchannels);
int kml_check_period(__u32 ms);

/**
 * struct kml_evring - the device's alarm records, read by every open file
 * @ev: the last %KML_SENSOR_QUEUE_LEN records
 * @head: free-running count of records ever pushed: the number the next
 *	one gets (record number n lives in @ev[n % %KML_SENSOR_QUEUE_LEN])
 *
 * One writer pushes in O(1) however many files are open; each reader
 * keeps its own cursor (the number of the next record it wants), so a
 * slow reader holds nobody else up. A reader that falls more than
 * %KML_SENSOR_QUEUE_LEN behind has lost the oldest records, and learns
 * how many from kml_evring_next(). 64-bit numbers never wrap in practice.
 */
struct kml_evring {
	struct kml_sensor_event ev[KML_SENSOR_QUEUE_LEN];
	__u64 head;
};

void kml_evring_push(struct kml_evring *r, const struct kml_sensor_event *e);
const struct kml_sensor_event *kml_evring_next(const struct kml_evring *r,
					       __u64 cursor, __u64 *pos);

static inline bool kml_evring_pending(const struct kml_evring *r, __u64 cursor)
{
	return r->head != cursor;
}

#endif /* _KML_SENSOR_LOGIC_H */
