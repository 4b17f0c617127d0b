// SPDX-License-Identifier: GPL-2.0
/*
 * kml_sensor's producer: the sampling work that moves the simulated
 * channels, and the alarm records a zone change writes into the ring.
 * The lab hands this file over complete; kml_sensor_main.c reads the
 * records and wakes the readers after the lock is dropped.
 */
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/moduleparam.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "kml_sensor.h"
#include "kml_sensor_trace.h"

static unsigned int seed = 1;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "seed of the simulation (default 1)");

/*
 * Record an alarm for every open file: one write into the ring, whatever
 * the number of files. Called with kml_sensor_dev.lock held; whoever took the
 * lock wakes the readers after dropping it (kml_sensor_unlock_wake()).
 */
static void kml_emit_locked(unsigned int ch, int zone)
{
	struct kml_chan *c = &kml_sensor_dev.chan[ch];
	struct kml_sensor_event ev = {
		.timestamp_ns = c->timestamp_ns,
		.seq = c->seq,
		.channel = ch,
		.value_mc = c->value_mc,
		.kind = zone,
	};

	lockdep_assert_held(&kml_sensor_dev.lock);
	trace_alarm(ch, c->value_mc, c->seq, zone, c->alarm.low_mc,
		    c->alarm.high_mc);
	kml_stats_inc(kml_sensor_dev.stats, ST_ALARMS);
	kml_evring_push(&kml_sensor_dev.ring, &ev);
}

/* A zone change is an alarm; re-evaluated on every sample and setting. */
void kml_sensor_eval_locked(unsigned int ch)
{
	struct kml_chan *c = &kml_sensor_dev.chan[ch];
	int zone = kml_zone(c->value_mc, &c->alarm);

	if (zone != c->zone) {
		c->zone = zone;
		kml_emit_locked(ch, zone);
	}
}

void kml_sensor_sample_locked(unsigned int ch, s32 value_mc, u64 now)
{
	struct kml_chan *c = &kml_sensor_dev.chan[ch];

	c->value_mc = value_mc;
	c->timestamp_ns = now;
	c->seq++;
	trace_sample(ch, value_mc, c->seq, c->injected);
	kml_stats_inc(kml_sensor_dev.stats, ST_SAMPLES);
	kml_sensor_eval_locked(ch);
}

void kml_sensor_sampler(struct work_struct *work)
{
	u64 now = ktime_get_ns(), head;
	unsigned int ch, period;

	/* O(channels) under the lock, never O(open files). */
	head = kml_sensor_lock();
	for (ch = 0; ch < kml_sensor_channels; ch++)
		if (!kml_sensor_dev.chan[ch].injected)
			kml_sensor_sample_locked(ch,
						 kml_model_step(&kml_sensor_dev.chan[ch].model),
						 now);
	period = kml_sensor_dev.period_ms;
	kml_sensor_unlock_wake(head);
	schedule_delayed_work(&kml_sensor_dev.sampler,
			      msecs_to_jiffies(period));
}

/*
 * Defaults: fresh models, alarms off, default period. Lock held. The zone
 * is left to kml_sensor_eval_locked(), so a channel that was in alarm
 * records its return to normal like any other change: readers are never
 * left believing in an alarm that is gone.
 */
void kml_sensor_reset_locked(void)
{
	u64 now = ktime_get_ns();
	unsigned int ch;

	for (ch = 0; ch < kml_sensor_channels; ch++) {
		struct kml_chan *c = &kml_sensor_dev.chan[ch];

		kml_model_init(&c->model, seed, ch);
		c->injected = false;
		c->alarm = (struct kml_sensor_alarm){
			.channel = ch,
			.low_mc = KML_SENSOR_MIN_MC,
			.high_mc = KML_SENSOR_MAX_MC,
		};
		kml_sensor_sample_locked(ch, kml_model_step(&c->model), now);
	}
	/* GET_PERIOD reads it without the lock. */
	WRITE_ONCE(kml_sensor_dev.period_ms, KML_SENSOR_PERIOD_DEFAULT_MS);
}
