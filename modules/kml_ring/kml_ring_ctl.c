// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring's control plane, handed over complete: a ring's life from
 * open() to its free after release(), and the ioctls that size it
 * (through kml_ring_set_size_locked(), kml_ring_main.c), set its watermark
 * and start or stop the built-in producer.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../include/kml_ioctl.h"
#include "kml_ring_logic.h"
#include "kml_ring_priv.h"

static atomic_t kml_ring_ids = ATOMIC_INIT(0);

/* The watermark is set under lock and wlock: wlock for its readers. */
static long kml_set_watermark(struct kml_ring *r, u64 wm)
{
	u64 max = kml_ring_watermark_max(r->size ? r->size :
				(u64)KML_RING_MAX_PAGES * PAGE_SIZE);
	unsigned long flags;

	lockdep_assert_held(&r->lock);
	if (wm < 1 || wm > max)
		return -EINVAL;
	kml_wlock(r, &flags);
	r->watermark = wm;
	if (r->ctrl)
		WRITE_ONCE(r->ctrl->watermark, wm);
	kml_wunlock(r, flags);
	/* A lower watermark may already be met: let them look. */
	wake_up_interruptible(&r->wq);
	return 0;
}

/*
 * START takes an extensible struct (modules/include/kml_ioctl.h): the
 * size in the ioctl number is the caller's sizeof, fields it lacks are
 * zero, and a larger caller's extra bytes must be zero.
 */
static long kml_ioctl_start(struct kml_ring *r, void __user *up, size_t usize)
{
	struct kml_ring_produce p;
	long ret;

	/* A kernel thread at any rate, on any CPU, outside the caller's cgroup. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = kml_copy_struct_in(&p, sizeof(p), up, usize,
				 KML_RING_PRODUCE_SIZE_VER0);
	if (ret)
		return ret;
	mutex_lock(&r->lock);
	ret = kml_ring_start_locked(r, p);
	mutex_unlock(&r->lock);
	return ret;
}

long kml_ring_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kml_ring *r = file->private_data;
	void __user *up = (void __user *)arg;
	u32 npages;
	u64 wm;
	long ret;

	if (KML_IOC_NOSIZE(cmd) == KML_IOC_NOSIZE(KML_RING_IOC_START))
		return kml_ioctl_start(r, up, _IOC_SIZE(cmd));

	switch (cmd) {
	case KML_RING_IOC_GET_VERSION:
		return put_user(KML_RING_ABI_VERSION, (u32 __user *)up);
	case KML_RING_IOC_SET_WATERMARK:
		if (get_user(wm, (u64 __user *)up))
			return -EFAULT;
		mutex_lock(&r->lock);
		ret = kml_set_watermark(r, wm);
		mutex_unlock(&r->lock);
		return ret;
	case KML_RING_IOC_SET_SIZE:
		/* Copy arguments in before taking locks: see struct kml_ring. */
		if (get_user(npages, (u32 __user *)up))
			return -EFAULT;
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		mutex_lock(&r->lock);
		ret = kml_ring_set_size_locked(r, npages);
		mutex_unlock(&r->lock);
		mutex_unlock(&r->read_lock);
		return ret;
	case KML_RING_IOC_STOP:
		mutex_lock(&r->lock);
		kml_ring_stop_locked(r);
		mutex_unlock(&r->lock);
		return 0;
	default:
		return -ENOTTY;
	}
}

int kml_ring_open(struct inode *inode, struct file *file)
{
	struct kml_ring *r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!r)
		return -ENOMEM;
	mutex_init(&r->read_lock);
	mutex_init(&r->lock);
	raw_spin_lock_init(&r->wlock);
	init_waitqueue_head(&r->wq);
	atomic_set(&r->read_waiters, 0);
	atomic_set(&r->mapped, 0);
	r->watermark = 1;
	/*
	 * The opener's, not each caller's: an fd handed to a privileged
	 * process must not lift its opener's limits.
	 */
	r->uid = kml_ring_charged(current_cred());
	r->unlimited = capable(CAP_IPC_LOCK);
	r->id = atomic_inc_return(&kml_ring_ids);
	init_irq_work(&r->wake_work, kml_ring_wake_work);
	file->private_data = r;
	return 0;
}

static void kml_ring_free(struct kml_ring *r)
{
	kml_ring_free_pages(r->pages, r->pages ? r->npages + 1 : 0, r->data);
	mutex_destroy(&r->lock);
	mutex_destroy(&r->read_lock);
	kfree(r);
}

static void kml_ring_free_work(struct work_struct *work)
{
	kml_ring_free(container_of(to_rcu_work(work), struct kml_ring, free_work));
}

/*
 * Runs only when no mapping is left (each vma holds a file reference)
 * and no read(), poll() or ioctl() is in progress.
 */
int kml_ring_release(struct inode *inode, struct file *file)
{
	struct kml_ring *r = file->private_data;

	mutex_lock(&r->lock);
	kml_ring_stop_locked(r);
	mutex_unlock(&r->lock);
	/* Recorders held the file: their last wake-up may still be queued. */
	irq_work_sync(&r->wake_work);
	/*
	 * The budgets count rings, not pages in flight: a closed ring's
	 * pages go back at once, even though they are freed a grace period
	 * later.
	 */
	if (r->pages) {
		kml_ring_budget_give(r->npages + 1);
		kml_ring_user_give(r->uid, r->npages + 1);
	}
	if (!r->listed) {
		kml_ring_free(r);
		return 0;
	}
	mutex_lock(&kml_ring_list_mutex);
	list_del_rcu(&r->node);
	mutex_unlock(&kml_ring_list_mutex);
	/*
	 * A kml_ring_write() may still be writing to it: free it after a
	 * grace period, in a worker (vunmap() sleeps, so not in an RCU
	 * callback), rather than make every close() wait for one.
	 */
	INIT_RCU_WORK(&r->free_work, kml_ring_free_work);
	queue_rcu_work(kml_ring_wq, &r->free_work);
	return 0;
}
