// SPDX-License-Identifier: GPL-2.0
/*
 * read() on a ring: the copying consumer, for comparison with the
 * mapping, handed over complete. It takes records from the same ring the
 * mapping shows, moving the same tail, and sleeps until
 * kml_ring_readable() (kml_ring_main.c) sees a record.
 */
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "../include/kml_stats.h"
#include "kml_ring_logic.h"
#include "kml_ring_priv.h"

/*
 * Copy whole records to @buf. Caller holds read_lock, so the area cannot
 * change; the producer writes only past head. Return: bytes, 0 if only
 * padding (now consumed) or nothing was there, -EINVAL if the next record
 * does not fit in @count or the ring is unsized or garbled by a bad tail,
 * -EFAULT if nothing could be copied. A failed record stays in the ring.
 */
static ssize_t kml_read_records(struct kml_ring *r, char __user *buf,
				size_t count)
{
	ssize_t ret = 0;
	size_t done = 0;
	u64 head, tail;
	u32 sz;

	lockdep_assert_held(&r->read_lock);
	if (!r->size)
		return -EINVAL;
	/* Pairs with kml_ring_publish_locked(): all up to head is written. */
	head = smp_load_acquire(&r->head);
	/* A tail moved by the consumer too: its reads are done. */
	tail = smp_load_acquire(&r->ctrl->tail);
	tail = kml_ring_clamp_tail(head, tail, r->size);
	while (tail < head) {
		const struct kml_ring_rec *rec;

		if (kml_ring_next(r->data, r->size, tail, head, &sz)) {
			ret = -EINVAL;
			break;
		}
		rec = (const void *)(r->data + (tail & (r->size - 1)));
		if (rec->type != KML_RING_REC_PAD) {
			/* Whole records only: -EINVAL if none fits. */
			if (sz > count - done) {
				ret = -EINVAL;
				break;
			}
			if (copy_to_user(buf + done, rec, sz)) {
				ret = -EFAULT;
				break;
			}
			done += sz;
		}
		tail += sz;
		cond_resched();
	}
	/* Pairs with the producer's load-acquire of tail: we are done. */
	smp_store_release(&r->ctrl->tail, tail);
	return done ? done : ret;
}

/*
 * read() returns what there is, like a pipe: it blocks only while the
 * ring is empty, whatever the watermark. It sleeps without read_lock, so
 * SET_SIZE is not held up by a blocked reader.
 */
ssize_t kml_ring_read(struct file *file, char __user *buf, size_t count,
		      loff_t *ppos)
{
	struct kml_ring *r = file->private_data;
	ssize_t ret;

	kml_stats_inc(kml_ring_stats, ST_READS);
	if (!count)
		return 0;
	for (;;) {
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		ret = kml_read_records(r, buf, count);
		mutex_unlock(&r->read_lock);
		if (ret)
			return ret;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		/* Announced before queueing: a writer wakes us per record. */
		atomic_inc(&r->read_waiters);
		ret = wait_event_interruptible(r->wq,
					       kml_ring_readable(r, false));
		atomic_dec(&r->read_waiters);
		if (ret)
			return ret;
	}
}
