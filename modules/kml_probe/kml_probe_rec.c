// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe's recordings (KML_PROBE_IOC_RECORD): starting one into the
 * caller's kml_ring, stopping it, and ending it with the file that
 * started it. The lab hands this file over complete; the return handler
 * in kml_probe_main.c writes the records.
 */
#include <linux/atomic.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "../include/kml_ioctl.h"
#include "../include/kml_ring.h"
#include "kml_probe.h"
#include "kml_probe_logic.h"

/*
 * A recording's end: its counts to @rc, then the ring and kml_ring.ko
 * are let go. No handler may be using @rec any more.
 */
void kml_probe_rec_free(struct kml_rec *rec, struct kml_probe_record *rc)
{
	if (rc) {
		rc->written = atomic64_read(&rec->written);
		rc->lost = atomic64_read(&rec->lost);
	}
	fput(rec->ring);
	symbol_put(kml_ring_write_file);
	kfree(rec);
}

/* RECORD, to start: the ring the caller names gets @fn's calls. */
static int kml_rec_start_locked(struct kml_fn *fn,
				const struct kml_probe_record *rc,
				const struct file *owner)
{
	struct file *(*fget_ring)(int fd);
	struct kml_rec *rec;
	int ret;

	lockdep_assert_held(&kml_probe_lock);
	if (fn->cfg.flags & KML_PROBE_F_COUNT_ONLY)
		return -EINVAL;
	if (rcu_access_pointer(fn->rec))
		return -EBUSY;
	rec = kzalloc(sizeof(*rec), GFP_KERNEL_ACCOUNT);
	if (!rec)
		return -ENOMEM;
	/* kml_ring is optional: looked up now, not linked against. */
	fget_ring = symbol_get(kml_ring_fget);
	rec->write = symbol_get(kml_ring_write_file);
	ret = -ENODEV;
	if (!fget_ring || !rec->write)
		goto out;
	rec->ring = fget_ring(rc->ring_fd);
	ret = PTR_ERR_OR_ZERO(rec->ring);
	if (ret)
		goto out;
	rec->id = rc->id;
	rec->owner = owner;
	/* Handlers see a whole kml_rec or none (rcu_dereference()). */
	rcu_assign_pointer(fn->rec, rec);
	symbol_put(kml_ring_fget);
	return 0;
out:
	if (fget_ring)
		symbol_put(kml_ring_fget);
	if (rec->write)
		symbol_put(kml_ring_write_file);
	kfree(rec);
	return ret;
}

/*
 * RECORD, to stop: unpublish, wait for the handlers, report the counts.
 * -ESRCH if @fn is not recording (never was, or someone stopped it).
 */
static int kml_rec_stop_locked(struct kml_fn *fn, struct kml_probe_record *rc)
{
	struct kml_rec *rec;

	rec = rcu_replace_pointer(fn->rec, NULL,
				  lockdep_is_held(&kml_probe_lock));
	if (!rec)
		return -ESRCH;
	/* Handlers run with preemption off, inside rcu_read_lock() too. */
	synchronize_rcu();
	kml_probe_rec_free(rec, rc);
	return 0;
}

int kml_probe_ioc_record(struct file *file, void __user *ur,
			 unsigned int usize)
{
	struct kml_probe_record rc;
	struct kml_fn *fn;
	int ret;

	ret = kml_copy_struct_in(&rc, sizeof(rc), ur, usize, sizeof(rc));
	if (ret)
		return ret;
	if (kml_probe_check_record(&rc))
		return -EINVAL;
	rc.written = 0;
	rc.lost = 0;
	mutex_lock(&kml_probe_lock);
	fn = kml_probe_find_locked(rc.func, NULL);
	ret = -ENOENT;
	if (fn && rc.ring_fd >= 0)
		ret = kml_rec_start_locked(fn, &rc, file);
	else if (fn)
		ret = kml_rec_stop_locked(fn, &rc);
	mutex_unlock(&kml_probe_lock);
	if (ret)
		return ret;
	return kml_copy_struct_out(ur, usize, &rc, sizeof(rc));
}

/*
 * A recording lasts as long as the file that started it is open: a
 * recorder that is killed must not leave the kernel writing into its
 * orphaned ring (which would also pin the ring and kml_ring.ko).
 */
int kml_probe_release(struct inode *inode, struct file *file)
{
	unsigned int i;

	mutex_lock(&kml_probe_lock);
	for (i = 0; i < KML_PROBE_MAX_FUNCS; i++) {
		struct kml_rec *rec;

		if (!kml_probe_fns[i])
			continue;
		rec = rcu_dereference_protected(kml_probe_fns[i]->rec,
						lockdep_is_held(&kml_probe_lock));
		if (rec && rec->owner == file)
			kml_rec_stop_locked(kml_probe_fns[i], NULL);
	}
	mutex_unlock(&kml_probe_lock);
	return 0;
}
