// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring - a kernel-to-user ring buffer shared through mmap.
 *
 * The mechanism taught here is zero-copy hand-off: the kernel writes
 * records straight into pages that are also mapped into the consumer's
 * address space, and the two sides coordinate through two counters on a
 * shared control page, as perf does with data_head/data_tail. The
 * producer publishes a record with a store-release of head; the consumer
 * reads head with a load-acquire, reads the records, and frees the space
 * with a store-release of tail, which the producer reads with a
 * load-acquire before reusing it. No lock is shared with userspace, and
 * no system call is needed per record.
 *
 * Wakeups are the other cost. poll() reports readable only once a
 * watermark of bytes is waiting, and the producer wakes a sleeper only if
 * one is there (wq_has_sleeper()), so a busy consumer costs no wakeups at
 * all. read() on the same file copies records out instead, for comparison.
 *
 * Each open file has its own ring. The data pages are mapped read-only;
 * only the control page is writable, and the kernel never trusts what it
 * reads there beyond clamping tail into range.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "../include/kml_compat.h"
#include "../include/kml_ring.h"
#include "../include/kml_stats.h"
#include "kml_ring_logic.h"

enum { ST_RECORDS, ST_BYTES, ST_LOST, ST_WAKEUPS, ST_READS, ST_MMAPS };

static const struct kml_stats_desc kml_ring_stats_desc[] = {
	[ST_RECORDS]	= { "records", KML_STAT_COUNTER },
	[ST_BYTES]	= { "bytes", KML_STAT_COUNTER },
	[ST_LOST]	= { "lost", KML_STAT_COUNTER },
	[ST_WAKEUPS]	= { "wakeups", KML_STAT_COUNTER },
	[ST_READS]	= { "read_calls", KML_STAT_COUNTER },
	[ST_MMAPS]	= { "mmaps", KML_STAT_COUNTER },
};

static struct kml_stats_set *kml_ring_stats;

struct kml_ring {
	struct list_head node;		/* on kml_rings, for kml_ring_write() */
	/*
	 * Lock order: read_lock, then mmap_lock (user copies), then lock.
	 * mmap() runs under mmap_lock and takes lock, so nothing may touch
	 * user memory while holding lock.
	 */
	struct mutex read_lock;		/* one read() at a time */
	struct mutex lock;		/* size, mappings, producer */
	u64 gen;			/* bumped by every SET_SIZE, under lock */
	spinlock_t wlock;		/* writers; irqsave: the API may be in IRQ */
	struct page **pages;		/* [0] control, [1..npages] data */
	unsigned int npages;
	struct kml_ring_ctrl *ctrl;
	u8 *data;			/* vmap of the data pages */
	u64 size;			/* 0 until sized */
	u64 head;			/* the kernel's own copy, published */
	u64 next;			/* head plus padding of a reserved record */
	u64 lost;
	u64 produced;
	u64 watermark;
	atomic_t mapped;		/* live vmas of this ring */
	struct task_struct *producer;
	struct kml_ring_produce prod;
	wait_queue_head_t wq;
};

static DEFINE_SPINLOCK(kml_rings_lock);
static LIST_HEAD(kml_rings);

static void kml_ring_free_pages(struct page **pages, unsigned int n, void *data)
{
	unsigned int i;

	if (data)
		vunmap(data);
	/* Mappings hold their own references: pages outlive us if mapped. */
	for (i = 0; pages && i < n; i++)
		__free_page(pages[i]);
	kfree(pages);
}

static u64 kml_tail(struct kml_ring *r)
{
	/* Pairs with the consumer's store-release: it is done with the space. */
	u64 tail = smp_load_acquire(&r->ctrl->tail);

	return kml_ring_clamp_tail(r->head, tail, r->size);
}

static void kml_publish_locked(struct kml_ring *r, u64 head)
{
	/* Pairs with read()/poll()'s load-acquire of the kernel's head. */
	smp_store_release(&r->head, head);
	/* Pairs with the consumer's load-acquire: the record is written. */
	smp_store_release(&r->ctrl->head, head);
	WRITE_ONCE(r->ctrl->produced, r->produced);
}

/*
 * Reserve @need bytes (header included) at head and return the record,
 * or NULL (counted as lost) if the ring is full. Caller holds wlock and
 * must kml_commit_locked() what it got. head itself moves only at commit,
 * so nobody ever sees the padding without the record after it.
 */
static struct kml_ring_rec *kml_reserve_locked(struct kml_ring *r, u32 type,
					       u32 need)
{
	struct kml_ring_rec *rec;
	u32 pad;

	lockdep_assert_held(&r->wlock);
	if (kml_ring_place(r->head, kml_tail(r), r->size, need, &pad)) {
		r->lost++;
		WRITE_ONCE(r->ctrl->lost, r->lost);
		kml_stats_inc(kml_ring_stats, ST_LOST);
		return NULL;
	}
	r->next = r->head;
	if (pad) {
		rec = (void *)(r->data + (r->next & (r->size - 1)));
		rec->type = KML_RING_REC_PAD;
		rec->size = pad;
		r->next += pad;
	}
	rec = (void *)(r->data + (r->next & (r->size - 1)));
	rec->type = type;
	rec->size = need;
	rec->timestamp_ns = ktime_get_ns();
	return rec;
}

static void kml_commit_locked(struct kml_ring *r, struct kml_ring_rec *rec)
{
	r->produced++;
	kml_publish_locked(r, r->next + rec->size);
	kml_stats_inc(kml_ring_stats, ST_RECORDS);
	kml_stats_add(kml_ring_stats, ST_BYTES, rec->size);
}

/*
 * Wake a sleeping consumer when the bytes waiting cross the watermark,
 * and only then: a consumer that is already awake needs no further
 * wakeups, and one that sleeps checked the level itself after queueing.
 */
static void kml_maybe_wake(struct kml_ring *r, u64 prev_head)
{
	u64 tail = kml_tail(r), wm = READ_ONCE(r->watermark);

	if (prev_head - tail >= wm || r->head - tail < wm)
		return;
	/* wq_has_sleeper() has the barrier that pairs with poll_wait(). */
	if (wq_has_sleeper(&r->wq)) {
		kml_stats_inc(kml_ring_stats, ST_WAKEUPS);
		wake_up_interruptible(&r->wq);
	}
}

/**
 * kml_ring_write() - write a record to every sized ring
 * @type: record type, at least %KML_RING_REC_USER_BASE
 * @data: payload
 * @len: payload bytes; the record is padded to a multiple of 8
 *
 * Context: any context but NMI; takes spinlocks with interrupts disabled.
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
	spin_lock_irqsave(&kml_rings_lock, flags);
	list_for_each_entry(r, &kml_rings, node) {
		u64 prev;

		spin_lock(&r->wlock);
		prev = r->head;
		if (r->size && need <= r->size / 4) {
			rec = kml_reserve_locked(r, type, need);
			if (rec) {
				memcpy(rec + 1, data, len);
				memset((u8 *)(rec + 1) + len, 0,
				       need - sizeof(*rec) - len);
				kml_commit_locked(r, rec);
				n++;
			}
		}
		spin_unlock(&r->wlock);
		kml_maybe_wake(r, prev);
	}
	spin_unlock_irqrestore(&kml_rings_lock, flags);
	return n;
}
EXPORT_SYMBOL_GPL(kml_ring_write);

/* ---- the built-in producer ---- */

static void kml_emit_sample(struct kml_ring *r, u64 seq, u32 size)
{
	struct kml_ring_sample *s;
	struct kml_ring_rec *rec;
	unsigned long flags;
	u64 prev;

	spin_lock_irqsave(&r->wlock, flags);
	prev = r->head;
	rec = kml_reserve_locked(r, KML_RING_REC_SAMPLE, size);
	if (rec) {
		s = (void *)(rec + 1);
		s->seq = seq;
		s->len = size - sizeof(*rec) - sizeof(*s);
		if (r->prod.flags & KML_RING_PRODUCE_NOFILL) {
			s->csum = 0;
		} else {
			kml_ring_fill(seq, s->data, s->len);
			s->csum = kml_ring_csum(s->data, s->len);
		}
		kml_commit_locked(r, rec);
	}
	spin_unlock_irqrestore(&r->wlock, flags);
	kml_maybe_wake(r, prev);
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
		kml_emit_sample(r, seq++, r->prod.record_size);
		if (!period) {
			cond_resched();
			continue;
		}
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

static void kml_stop_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->lock);
	if (r->producer) {
		kthread_stop(r->producer);
		r->producer = NULL;
	}
}

static int kml_start_locked(struct kml_ring *r, struct kml_ring_produce p)
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
	t = kthread_create(kml_producer, r, "kml_ring/%d", p.cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (p.cpu >= 0)
		kthread_bind(t, p.cpu);
	r->producer = t;
	wake_up_process(t);
	return 0;
}

/* ---- sizing and mapping ---- */

static int kml_set_size_locked(struct kml_ring *r, u32 npages)
{
	struct page **pages, **old_pages;
	unsigned int i, n, old_n;
	unsigned long flags;
	u8 *data, *old_data;

	lockdep_assert_held(&r->lock);
	if (kml_ring_check_pages(npages))
		return -EINVAL;
	if (atomic_read(&r->mapped) || r->producer)
		return -EBUSY;

	n = npages + 1;
	pages = kcalloc(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pages[i]) {
			kml_ring_free_pages(pages, i, NULL);
			return -ENOMEM;
		}
	}
	/* One contiguous kernel view of the data, so records are one memcpy. */
	data = vmap(pages + 1, npages, VM_MAP, PAGE_KERNEL);
	if (!data) {
		kml_ring_free_pages(pages, n, NULL);
		return -ENOMEM;
	}

	spin_lock_irqsave(&r->wlock, flags);
	old_pages = r->pages;
	old_n = r->npages + (r->pages ? 1 : 0);
	old_data = r->data;
	r->pages = pages;
	r->npages = npages;
	r->data = data;
	r->ctrl = page_address(pages[0]);
	r->size = (u64)npages * PAGE_SIZE;
	r->head = 0;
	r->lost = 0;
	r->produced = 0;
	r->ctrl->version = KML_RING_ABI_VERSION;
	r->ctrl->page_size = PAGE_SIZE;
	r->ctrl->data_size = r->size;
	r->ctrl->watermark = r->watermark;
	r->gen++;
	spin_unlock_irqrestore(&r->wlock, flags);
	kml_ring_free_pages(old_pages, old_n, old_data);
	return 0;
}

static void kml_vm_open(struct vm_area_struct *vma)
{
	struct kml_ring *r = vma->vm_private_data;

	atomic_inc(&r->mapped);
}

static void kml_vm_close(struct vm_area_struct *vma)
{
	struct kml_ring *r = vma->vm_private_data;

	atomic_dec(&r->mapped);
}

static vm_fault_t kml_vm_fault(struct vm_fault *vmf)
{
	struct kml_ring *r = vmf->vma->vm_private_data;
	struct page *page;

	/* The buffer cannot change while mapped (SET_SIZE says -EBUSY). */
	if (vmf->pgoff > r->npages)
		return VM_FAULT_SIGBUS;
	page = r->pages[vmf->pgoff];
	/*
	 * No page->mapping: a char device's address_space has no
	 * dirty_folio, and unmapping a dirtied page would call it.
	 */
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct kml_ring_vm_ops = {
	.open	= kml_vm_open,
	.close	= kml_vm_close,
	.fault	= kml_vm_fault,
};

static int kml_ring_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kml_ring *r = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	int ret = -EINVAL;

	mutex_lock(&r->lock);
	if (!r->size || !(vma->vm_flags & VM_SHARED) ||
	    (vma->vm_flags & VM_EXEC))
		goto out;
	if (vma->vm_pgoff == 0) {
		if (len != PAGE_SIZE)
			goto out;
	} else if (vma->vm_pgoff == 1) {
		if (len != r->size)
			goto out;
		/* The data belongs to the producer: never writable. */
		ret = -EPERM;
		if (vma->vm_flags & VM_WRITE)
			goto out;
		vm_flags_clear(vma, VM_MAYWRITE);
	} else {
		goto out;
	}
	vm_flags_clear(vma, VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &kml_ring_vm_ops;
	vma->vm_private_data = r;
	kml_vm_open(vma);
	kml_stats_inc(kml_ring_stats, ST_MMAPS);
	ret = 0;
out:
	mutex_unlock(&r->lock);
	return ret;
}

/* ---- read() and poll(): the copying consumer ---- */

/* @wm bytes waiting: the watermark for poll(), 1 for read(). */
static bool kml_readable(struct kml_ring *r, u64 wm)
{
	u64 head;

	if (!r->size)
		return false;
	/* Pairs with kml_publish_locked(): records up to head are written. */
	head = smp_load_acquire(&r->head);
	return head - kml_tail(r) >= wm;
}

static ssize_t kml_ring_read(struct file *file, char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct kml_ring *r = file->private_data;
	u64 tail, head, gen;
	size_t done = 0;
	u8 *bounce = NULL;
	u32 sz;
	int ret;

	kml_stats_inc(kml_ring_stats, ST_READS);
	if (mutex_lock_interruptible(&r->read_lock))
		return -ERESTARTSYS;
	mutex_lock(&r->lock);
	ret = -EINVAL;
	if (!r->size)
		goto unlock;
	/* A bounce buffer: user memory is touched only after lock is dropped. */
	count = min_t(size_t, count, r->size);
	ret = -ENOMEM;
	bounce = kvmalloc(count, GFP_KERNEL);
	if (!bounce)
		goto unlock;
	do {
		/*
		 * read() returns what there is, like a pipe: the watermark
		 * only decides when poll() says so, and when we are woken.
		 */
		while (!kml_readable(r, 1)) {
			ret = -EAGAIN;
			if (file->f_flags & O_NONBLOCK)
				goto unlock;
			mutex_unlock(&r->lock);
			ret = wait_event_interruptible(r->wq, kml_readable(r, 1));
			mutex_lock(&r->lock);
			if (ret)
				goto unlock;
		}
		ret = 0;
		/* Pairs with kml_publish_locked(): records up to head are written. */
		head = smp_load_acquire(&r->head);
		tail = kml_tail(r);
		while (tail < head) {
			const struct kml_ring_rec *rec;

			ret = -EINVAL;
			if (kml_ring_next(r->data, r->size, tail, head, &sz))
				break;
			ret = 0;
			rec = (const void *)(r->data + (tail & (r->size - 1)));
			if (rec->type != KML_RING_REC_PAD) {
				/* Whole records only: -EINVAL if none fits. */
				if (done + sz > count) {
					ret = done ? 0 : -EINVAL;
					break;
				}
				memcpy(bounce + done, rec, sz);
				done += sz;
			}
			tail += sz;
		}
		if (!done && !ret) {
			/* Only padding: consume it and wait for a record. */
			/* Pairs with the producer's load-acquire of tail. */
			smp_store_release(&r->ctrl->tail, tail);
		}
	} while (!done && !ret);
	gen = r->gen;
	mutex_unlock(&r->lock);

	if (done && copy_to_user(buf, bounce, done)) {
		/* Nothing consumed: the records stay for the next read. */
		done = 0;
		ret = -EFAULT;
		goto out;
	}
	if (done) {
		mutex_lock(&r->lock);
		/* Only read_lock holders move tail here; a resize resets it. */
		if (r->gen == gen)
			/* Pairs with the producer's load-acquire of tail. */
			smp_store_release(&r->ctrl->tail, tail);
		mutex_unlock(&r->lock);
	}
	goto out;
unlock:
	mutex_unlock(&r->lock);
out:
	kvfree(bounce);
	mutex_unlock(&r->read_lock);
	return done ? done : ret;
}

static __poll_t kml_ring_poll(struct file *file, poll_table *wait)
{
	struct kml_ring *r = file->private_data;

	poll_wait(file, &r->wq, wait);
	return kml_readable(r, READ_ONCE(r->watermark)) ? EPOLLIN | EPOLLRDNORM : 0;
}

static long kml_ring_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kml_ring *r = file->private_data;
	void __user *up = (void __user *)arg;
	struct kml_ring_produce p;
	u32 npages;
	u64 wm;
	long ret;

	switch (cmd) {
	case KML_RING_IOC_GET_VERSION:
		return put_user(KML_RING_ABI_VERSION, (u32 __user *)up);
	case KML_RING_IOC_SET_WATERMARK:
		if (get_user(wm, (u64 __user *)up))
			return -EFAULT;
		mutex_lock(&r->lock);
		ret = -EINVAL;
		if (wm >= 1 && (!r->size || wm <= r->size)) {
			WRITE_ONCE(r->watermark, wm);
			if (r->ctrl)
				WRITE_ONCE(r->ctrl->watermark, wm);
			/* A lower watermark may already be met: let them look. */
			wake_up_interruptible(&r->wq);
			ret = 0;
		}
		mutex_unlock(&r->lock);
		return ret;
	case KML_RING_IOC_SET_SIZE:
		/* Copy arguments in before taking lock: see struct kml_ring. */
		if (get_user(npages, (u32 __user *)up))
			return -EFAULT;
		mutex_lock(&r->lock);
		ret = kml_set_size_locked(r, npages);
		mutex_unlock(&r->lock);
		return ret;
	case KML_RING_IOC_START:
		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		mutex_lock(&r->lock);
		ret = kml_start_locked(r, p);
		mutex_unlock(&r->lock);
		return ret;
	case KML_RING_IOC_STOP:
		mutex_lock(&r->lock);
		kml_stop_locked(r);
		mutex_unlock(&r->lock);
		return 0;
	default:
		return -ENOTTY;
	}
}

static int kml_ring_open(struct inode *inode, struct file *file)
{
	struct kml_ring *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return -ENOMEM;
	mutex_init(&r->read_lock);
	mutex_init(&r->lock);
	spin_lock_init(&r->wlock);
	init_waitqueue_head(&r->wq);
	atomic_set(&r->mapped, 0);
	r->watermark = 1;
	spin_lock_irq(&kml_rings_lock);
	list_add_tail(&r->node, &kml_rings);
	spin_unlock_irq(&kml_rings_lock);
	file->private_data = r;
	return 0;
}

/* Runs only when no mapping is left: each vma holds a file reference. */
static int kml_ring_release(struct inode *inode, struct file *file)
{
	struct kml_ring *r = file->private_data;

	mutex_lock(&r->lock);
	kml_stop_locked(r);
	mutex_unlock(&r->lock);
	spin_lock_irq(&kml_rings_lock);
	list_del(&r->node);
	spin_unlock_irq(&kml_rings_lock);
	kml_ring_free_pages(r->pages, r->pages ? r->npages + 1 : 0, r->data);
	mutex_destroy(&r->lock);
	mutex_destroy(&r->read_lock);
	kfree(r);
	return 0;
}

static const struct file_operations kml_ring_fops = {
	.owner		= THIS_MODULE,
	.open		= kml_ring_open,
	.release	= kml_ring_release,
	.read		= kml_ring_read,
	.poll		= kml_ring_poll,
	.mmap		= kml_ring_mmap,
	.unlocked_ioctl	= kml_ring_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/* Rings are private to their opener: any user may have one. */
static struct miscdevice kml_ring_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_ring",
	.fops	= &kml_ring_fops,
	.mode	= 0666,
};

static int __init kml_ring_init(void)
{
	int ret;

	kml_ring_stats = kml_stats_register("kml_ring", kml_ring_stats_desc,
					    ARRAY_SIZE(kml_ring_stats_desc));
	if (IS_ERR(kml_ring_stats))
		return PTR_ERR(kml_ring_stats);
	ret = misc_register(&kml_ring_misc);
	if (ret)
		kml_stats_unregister(kml_ring_stats);
	return ret;
}

static void __exit kml_ring_exit(void)
{
	/* Open files and mappings pin the module: no ring is left. */
	misc_deregister(&kml_ring_misc);
	kml_stats_unregister(kml_ring_stats);
}

module_init(kml_ring_init);
module_exit(kml_ring_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel-to-user ring buffer shared through mmap");
