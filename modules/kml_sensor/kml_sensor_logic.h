/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_sensor (simulation model, alarm zones, argument checks,
 * the per-file alarm queue), free of kernel dependencies so host unit
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

/* Power of two, so free-running indices wrap correctly. */
#define KML_SENSOR_QUEUE_LEN	64

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
 * struct kml_evq - a bounded FIFO of alarm records
 * @ev: the records
 * @head: free-running count of records pushed
 * @tail: free-running count of records popped
 * @lost: records dropped since the last one queued
 *
 * When full, new records are dropped and counted, and the count rides on
 * the next record that fits: the reader learns exactly where the gap is.
 */
struct kml_evq {
	struct kml_sensor_event ev[KML_SENSOR_QUEUE_LEN];
	__u32 head;
	__u32 tail;
	__u32 lost;
};

static inline __u32 kml_evq_len(const struct kml_evq *q)
{
	return q->head - q->tail;
}

bool kml_evq_push(struct kml_evq *q, const struct kml_sensor_event *e);
const struct kml_sensor_event *kml_evq_peek(const struct kml_evq *q);
void kml_evq_pop(struct kml_evq *q);

#endif /* _KML_SENSOR_LOGIC_H */
