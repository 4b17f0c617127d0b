// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring's in-kernel API (modules/include/kml_ring.h): other modules
 * write records to every sized ring, or, from a probe handler, to one
 * ring named by its file. The lab hands this file over complete; both
 * reserve and publish with kml_ring_main.c's functions.
 */
#include <linux/err.h>
#include <linux/export.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hardirq.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/string.h>

#include "../include/kml_ring.h"
#include "kml_ring_logic.h"
#include "kml_ring_priv.h"

/* Marked by every ring write section: see kml_wlock() (kml_ring_priv.h). */
DEFINE_PER_CPU(unsigned int, kml_ring_wlock_depth);

/*
 * Every sized ring, for kml_ring_write(): walked under RCU, changed under
 * the mutex. Only sized rings are listed, and each costs at least two
 * pages of the budget, so the walk is bounded by max_pages / 2 rings.
 */
DEFINE_MUTEX(kml_ring_list_mutex);
LIST_HEAD(kml_ring_list);

/**
 * kml_ring_write() - write a record to every sized ring
 * @type: record type, at least %KML_RING_REC_USER_BASE
 * @data: payload
 * @len: payload bytes; the record is padded to a multiple of 8
 *
 * Each ring is written under its own lock with interrupts off for one
 * copy of at most %KML_RING_MAX_PAYLOAD bytes (and at most a quarter of
 * that ring); rings too small for the record are skipped. The cost of a
 * call grows with the number of rings, which the page budgets bound: it
 * is a walk of up to max_pages / 2 rings in one RCU read section, too
 * long for hard interrupt context. Every ring gets every record, and any
 * user may open a ring: write nothing a user may not see.
 *
 * Context: process or softirq context; not hardirq, not NMI, and not
 * from a probe on anything this function calls (it would spin on the
 * ring lock it already holds).
 * Return: number of rings written to (full rings count the record lost),
 * or -EINVAL for a reserved type or a payload over %KML_RING_MAX_PAYLOAD.
 */
int kml_ring_write(u32 type, const void *data, u32 len)
{
	u32 need = kml_ring_align(sizeof(struct kml_ring_rec) + len);
	struct kml_ring_rec *rec;
	unsigned long flags;
	struct kml_ring *r;
	int n = 0;

	if (type < KML_RING_REC_USER_BASE || len > KML_RING_MAX_PAYLOAD)
		return -EINVAL;
	rcu_read_lock();
	list_for_each_entry_rcu(r, &kml_ring_list, node) {
		bool wake = false;

		kml_wlock(r, &flags);
		if (need <= r->size / 4) {
			rec = kml_ring_reserve_locked(r, type, need);
			if (rec) {
				memcpy(rec + 1, data, len);
				memset((u8 *)(rec + 1) + len, 0,
				       need - sizeof(*rec) - len);
				kml_ring_publish_locked(r);
				n++;
			}
			wake = kml_ring_need_wake_locked(r);
		}
		kml_wunlock(r, flags);
		/* The ring outlives the RCU read section: see release. */
		if (wake)
			kml_ring_wake(r);
	}
	rcu_read_unlock();
	return n;
}
EXPORT_SYMBOL_GPL(kml_ring_write);

/* ---- one ring, named by its file: the recorder's way in ---- */

/**
 * kml_ring_fget() - the ring behind a descriptor of the calling process
 * @fd: a descriptor of /dev/kml_ring
 *
 * The file reference pins the ring, and through the file's owner this
 * module, until the caller fput()s it; nothing else is needed to call
 * kml_ring_write_file() meanwhile.
 *
 * Return: the file, or ERR_PTR(-EBADF) (not open) or ERR_PTR(-EINVAL)
 * (some other file).
 */
struct file *kml_ring_fget(int fd)
{
	struct file *f = fget(fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->f_op != &kml_ring_fops) {
		fput(f);
		return ERR_PTR(-EINVAL);
	}
	return f;
}
EXPORT_SYMBOL_GPL(kml_ring_fget);

/* Wake-ups asked for by kml_ring_write_file(), from a safe context. */
void kml_ring_wake_work(struct irq_work *work)
{
	kml_ring_wake(container_of(work, struct kml_ring, wake_work));
}

/**
 * kml_ring_write_file() - write one record to one ring, from any context
 * @ring: a file from kml_ring_fget()
 * @type: record type, at least %KML_RING_REC_USER_BASE
 * @data: payload
 * @len: payload bytes, at most a quarter of the ring
 *
 * Unlike kml_ring_write(), this one is made for probe handlers, which run
 * wherever the probed function runs: in hard interrupts, in NMIs, with
 * any lock held, even inside this module's own write sections. So it
 * never waits for this CPU: it gives the record up if the CPU is already
 * inside a ring write section (kml_ring_wlock_depth) and, in an NMI, if the
 * lock is taken at all; it only spins on a lock another CPU holds, which
 * holds it for one record. And it never wakes a sleeper itself (that
 * takes the wait queue's lock, and the scheduler's): an irq_work does it
 * as soon as interrupts are on again.
 *
 * Return: 0 when written; -ENOSPC when the ring was full (counted in its
 * &kml_ring_ctrl.lost), unsized or too small for the record, -EBUSY when
 * this CPU could not write without waiting on itself, -EINVAL for a
 * reserved type. Every failure is a record lost: the caller counts it.
 */
int kml_ring_write_file(struct file *ring, u32 type, const void *data, u32 len)
{
	u32 need = kml_ring_align(sizeof(struct kml_ring_rec) + len);
	struct kml_ring *r = ring->private_data;
	struct kml_ring_rec *rec = NULL;
	unsigned long flags;
	bool wake;

	if (type < KML_RING_REC_USER_BASE || len > KML_RING_MAX_PAYLOAD)
		return -EINVAL;
	local_irq_save(flags);
	/* This CPU is inside a write section: waiting would be forever. */
	if (this_cpu_read(kml_ring_wlock_depth))
		goto busy;
	/* Marked before locking, as kml_wlock() does. */
	this_cpu_inc(kml_ring_wlock_depth);
	/* Another CPU's section is one record long: wait, but not in an NMI. */
	if (in_nmi()) {
		if (!raw_spin_trylock(&r->wlock)) {
			this_cpu_dec(kml_ring_wlock_depth);
			goto busy;
		}
	} else {
		raw_spin_lock(&r->wlock);
	}
	if (r->size && need <= r->size / 4)
		rec = kml_ring_reserve_locked(r, type, need);
	if (rec) {
		memcpy(rec + 1, data, len);
		memset((u8 *)(rec + 1) + len, 0, need - sizeof(*rec) - len);
		kml_ring_publish_locked(r);
	}
	wake = r->size && kml_ring_need_wake_locked(r);
	kml_wunlock(r, flags);
	if (wake)
		irq_work_queue(&r->wake_work);
	return rec ? 0 : -ENOSPC;
busy:
	local_irq_restore(flags);
	return -EBUSY;
}
EXPORT_SYMBOL_GPL(kml_ring_write_file);
