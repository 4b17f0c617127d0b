// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring's built-in producer, a kernel thread that START runs and STOP
 * ends: a test and benchmark feature (CAP_SYS_ADMIN), handed over
 * complete. It writes through the same reserve and publish as every
 * writer (kml_ring_main.c), but fills its records outside the lock.
 */
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "kml_ring_logic.h"
#include "kml_ring_priv.h"
#include "kml_ring_trace.h"

/* The sample after @rec's header, wherever the record is going. */
static void kml_fill_sample(struct kml_ring *r, struct kml_ring_rec *rec,
			    u64 seq, u32 size)
{
	struct kml_ring_sample *s = (void *)(rec + 1);

	s->seq = seq;
	s->len = size - sizeof(*rec) - sizeof(*s);
	if (r->prod.flags & KML_RING_PRODUCE_NOFILL) {
		s->csum = 0;
	} else {
		kml_ring_fill(seq, s->data, s->len);
		s->csum = kml_ring_csum(s->data, s->len);
	}
}

/*
 * Reserve, fill, commit: the filling and checksumming, which cost as much
 * as the record is long, run with interrupts on. kml_ring_write() may
 * reserve and publish meanwhile; its records become visible with ours.
 */
static void kml_emit_sample(struct kml_ring *r, u64 seq, u32 size)
{
	struct kml_ring_rec *rec;
	unsigned long flags;
	bool wake;

	kml_wlock(r, &flags);
	rec = kml_ring_reserve_locked(r, KML_RING_REC_SAMPLE, size);
	if (!rec) {
		/* Lost: perhaps a sleeper the last crossing missed. */
		wake = kml_ring_need_wake_locked(r);
		kml_wunlock(r, flags);
		goto out;
	}
	r->filling++;
	kml_wunlock(r, flags);

	/* Ours alone until published; the area stays (SET_SIZE stops us). */
	kml_fill_sample(r, rec, seq, size);

	kml_wlock(r, &flags);
	r->filling--;
	kml_ring_publish_locked(r);
	wake = kml_ring_need_wake_locked(r);
	kml_wunlock(r, flags);
out:
	if (wake)
		kml_ring_wake(r);
}

/*
 * KML_RING_PRODUCE_TRACE, for `make bench`: the same record, built in a
 * buffer of the producer's own, goes to the kml_ring:produced tracepoint,
 * which copies it into each listener's buffer (perf's ring, ftrace's).
 * The ring is not touched. The buffer was zeroed at START, so NOFILL
 * hands out zeros, never stale kernel memory.
 */
static void kml_trace_sample(struct kml_ring *r, u64 seq, u32 size)
{
	struct kml_ring_rec *rec = r->trace_rec;

	rec->type = KML_RING_REC_SAMPLE;
	rec->size = size;
	rec->timestamp_ns = ktime_get_ns();
	kml_fill_sample(r, rec, seq, size);
	trace_produced(seq, rec, size);
}

static int kml_producer(void *arg)
{
	struct kml_ring *r = arg;
	u64 period = r->prod.rate ? NSEC_PER_SEC / r->prod.rate : 0;
	u64 seq = 0, next = ktime_get_ns();

	while (!kthread_should_stop()) {
		if (r->prod.count && seq >= r->prod.count) {
			/* Done: idle until STOP, which wakes us. */
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
			continue;
		}
		/* Decided per run, so the ring's path pays one test, no more. */
		if (r->trace_rec)
			kml_trace_sample(r, seq++, r->prod.record_size);
		else
			kml_emit_sample(r, seq++, r->prod.record_size);
		/*
		 * Every record, not only when there is time to spare: a
		 * producer that cannot keep up with its rate (a slow kernel,
		 * a large record) would otherwise never give up the CPU on a
		 * kernel without preemption.
		 */
		cond_resched();
		if (!period)
			continue;
		/* Catch up in a burst rather than drift when we were late. */
		next += period;
		if (next > ktime_get_ns()) {
			ktime_t until = ns_to_ktime(next);

			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule_hrtimeout(&until, HRTIMER_MODE_ABS);
			__set_current_state(TASK_RUNNING);
		}
	}
	return 0;
}

void kml_ring_stop_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->lock);
	if (r->producer) {
		kthread_stop(r->producer);
		r->producer = NULL;
	}
	kfree(r->trace_rec);
	r->trace_rec = NULL;
}

int kml_ring_start_locked(struct kml_ring *r, struct kml_ring_produce p)
{
	struct task_struct *t;

	lockdep_assert_held(&r->lock);
	p.record_size = kml_ring_align(p.record_size);
	if (kml_ring_check_produce(&p, r->size))
		return -EINVAL;
	if (p.cpu >= 0 && (p.cpu >= nr_cpu_ids || !cpu_online(p.cpu)))
		return -EINVAL;
	if (r->producer)
		return -EBUSY;
	r->prod = p;
	if (p.flags & KML_RING_PRODUCE_TRACE) {
		r->trace_rec = kzalloc(p.record_size, GFP_KERNEL_ACCOUNT);
		if (!r->trace_rec)
			return -ENOMEM;
	}
	t = kthread_create(kml_producer, r, "kml_ring/%d", p.cpu);
	if (IS_ERR(t)) {
		kfree(r->trace_rec);
		r->trace_rec = NULL;
		return PTR_ERR(t);
	}
	if (p.cpu >= 0)
		kthread_bind(t, p.cpu);
	r->producer = t;
	wake_up_process(t);
	return 0;
}
