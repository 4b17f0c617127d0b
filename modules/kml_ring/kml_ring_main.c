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
 * Writers on the kernel side take the ring's wlock, with interrupts off
 * because other modules may write from interrupts (kml_ring_write()). A
 * record is reserved under the lock, filled, and committed under the
 * lock; head only moves when no reserved record is still being filled,
 * so a consumer never sees a half-written record. The built-in producer
 * fills its (up to 64 KiB) samples between the two, with interrupts on.
 * A writer in a probe handler (kml_ring_write_file()) may have
 * interrupted a write section on its own CPU: it gives its record up,
 * counted, rather than wait for a lock that will never be let go.
 *
 * Wakeups are the other cost. poll() reports readable only once a
 * watermark of bytes is waiting; a sleeper arms the ring when it checks,
 * and a writer wakes the queue only when it is armed and the level is
 * reached (or when a read() is blocked, which wants any record). Both
 * checks run under wlock, which orders them: either the writer sees the
 * sleeper, or the sleeper sees the record. A busy consumer that never
 * sleeps costs no wakeups at all. read() on the same file copies records
 * out instead, for comparison.
 *
 * Each open file has its own ring. The data pages are mapped read-only;
 * only the control page is writable, and the kernel never trusts what it
 * reads there beyond clamping tail into range.
 *
 * Any user may open the device, so what a user can make it do is bounded:
 * ring memory is charged to the opener's memory cgroup and counted
 * against a per-user budget and a module-wide one (kml_ring_budget.c),
 * -ENOSPC beyond either. The built-in producer, a kernel thread that can
 * spin on any CPU outside the caller's cgroup, is a test and benchmark
 * feature reserved to CAP_SYS_ADMIN; read() copies straight from the
 * ring with no bounce buffer; and interrupts are off for at most one
 * record's copy (64 KiB) per ring.
 *
 * This file is the mechanism the ring lab teaches. The rest is handed
 * over complete: the page budgets (kml_ring_budget.c), the API other
 * modules write with (kml_ring_api.c), the built-in producer
 * (kml_ring_producer.c), read() (kml_ring_read.c), open, the ioctls and
 * release (kml_ring_ctl.c), sharing struct kml_ring (kml_ring_priv.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../include/kml_compat.h"
#include "../include/kml_stats.h"
#include "kml_ring_logic.h"
#include "kml_ring_priv.h"
#include "kml_ring_trace.h"

/* Closed rings are freed here, after a grace period (see release). */
struct workqueue_struct *kml_ring_wq;

static const struct kml_stats_desc kml_ring_stats_desc[] = {
	[ST_RECORDS]	= { "records", KML_STAT_COUNTER },
	[ST_BYTES]	= { "bytes", KML_STAT_COUNTER },
	[ST_LOST]	= { "lost", KML_STAT_COUNTER },
	[ST_WAKEUPS]	= { "wakeups", KML_STAT_COUNTER },
	[ST_READS]	= { "read_calls", KML_STAT_COUNTER },
	[ST_MMAPS]	= { "mmaps", KML_STAT_COUNTER },
};

struct kml_stats_set *kml_ring_stats;

void kml_ring_free_pages(struct page **pages, unsigned int n, void *data)
{
	unsigned int i;

	if (data)
		vunmap(data);
	/* Mappings hold their own references: pages outlive us if mapped. */
	for (i = 0; pages && i < n; i++)
		__free_page(pages[i]);
	kfree(pages);
}

/*
 * The consumer's tail, made safe: never past what is published, and
 * never so far behind that the reserved records would not fit.
 */
static u64 kml_tail_locked(struct kml_ring *r)
{
	/* Pairs with the consumer's store-release: it is done with the space. */
	u64 tail = smp_load_acquire(&r->ctrl->tail);

	lockdep_assert_held(&r->wlock);
	tail = kml_ring_clamp_tail(r->resv, tail, r->size);
	return min(tail, r->head);
}

/*
 * Reserve @need bytes (header included) and return the record, or NULL
 * (counted as lost) if the ring is full. Caller holds wlock and must
 * kml_ring_publish_locked() after filling it. The PAD record and the header are
 * written here; head moves only at publication, so nobody ever sees the
 * padding without the record after it.
 */
struct kml_ring_rec *kml_ring_reserve_locked(struct kml_ring *r,
					     u32 type, u32 need)
{
	struct kml_ring_rec *rec;
	u32 pad;

	lockdep_assert_held(&r->wlock);
	if (kml_ring_place(r->resv, kml_tail_locked(r), r->size, need, &pad)) {
		r->lost++;
		WRITE_ONCE(r->ctrl->lost, r->lost);
		trace_record_lost(r->id, type, need, r->lost);
		kml_stats_inc(kml_ring_stats, ST_LOST);
		return NULL;
	}
	if (pad) {
		rec = (void *)(r->data + (r->resv & (r->size - 1)));
		rec->type = KML_RING_REC_PAD;
		rec->size = pad;
		r->resv += pad;
	}
	rec = (void *)(r->data + (r->resv & (r->size - 1)));
	rec->type = type;
	rec->size = need;
	/* The NMI-safe reading of CLOCK_MONOTONIC: writers may be probes. */
	rec->timestamp_ns = ktime_get_mono_fast_ns();
	r->resv += need;
	r->produced++;
	kml_stats_inc(kml_ring_stats, ST_RECORDS);
	kml_stats_add(kml_ring_stats, ST_BYTES, need);
	return rec;
}

/* Publish every reserved record, unless one is still being filled. */
void kml_ring_publish_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->wlock);
	/* LAB ring 3: show the records reserved so far (up to resv) to
	 * read(), which loads r->head, and to the process, which reads head
	 * and produced on the control page. Whoever sees a new head must
	 * see the records before it, on any CPU (x86 hides a plain store's
	 * bug); and none may show while one reserved earlier is still being
	 * filled outside the lock (filling): it would be half written
	 */
	if (r->filling)
		return;
	/* Pairs with read()'s load-acquire of the kernel's head. */
	smp_store_release(&r->head, r->resv);
	/* Pairs with the consumer's load-acquire: the records are written. */
	smp_store_release(&r->ctrl->head, r->resv);
	WRITE_ONCE(r->ctrl->produced, r->produced);
	/* LAB ring 3 end */
}

/*
 * Should a writer that just published wake the queue? Sleepers announce
 * what they wait for under wlock, after queueing and before sleeping
 * (kml_ring_poll(), kml_ring_readable()), and we decide under wlock too, so
 * either we see the announcement or they saw our record. A blocked read()
 * wants any record; a poller wants the watermark, and is woken once per
 * poll() that armed the ring, however many records land meanwhile. A
 * sleeper the watermark crossing missed is woken by the next record.
 */
bool kml_ring_need_wake_locked(struct kml_ring *r)
{
	lockdep_assert_held(&r->wlock);
	/* LAB ring 4: should this writer wake the queue? A wake-up costs a
	 * sleeper a trip through the scheduler: give sleepers what they wait
	 * for and no more. A consumer that never sleeps costs none; a
	 * blocked read() (read_waiters) wants any record; a poller that
	 * armed the ring (poll_armed) wants one once the watermark's bytes
	 * wait, however many records land before it polls again
	 */
	/* No barrier needed: sleepers queue before they take wlock to check. */
	if (!waitqueue_active(&r->wq))
		return false;
	if (atomic_read(&r->read_waiters))
		return true;
	if (r->poll_armed && r->head - kml_tail_locked(r) >= r->watermark) {
		r->poll_armed = false;
		return true;
	}
	return false;
	/* LAB ring 4 end: return true; */
}

void kml_ring_wake(struct kml_ring *r)
{
	kml_stats_inc(kml_ring_stats, ST_WAKEUPS);
	trace_wakeup(r->id, READ_ONCE(r->head), atomic_read(&r->read_waiters));
	wake_up_interruptible(&r->wq);
}

/* ---- sizing and mapping ---- */

int kml_ring_set_size_locked(struct kml_ring *r, u32 npages)
{
	struct page **pages, **old_pages;
	unsigned int i, n, old_n;
	unsigned long flags;
	u8 *data, *old_data;
	int ret;

	lockdep_assert_held(&r->read_lock);
	lockdep_assert_held(&r->lock);
	if (kml_ring_check_pages(npages))
		return -EINVAL;
	if (atomic_read(&r->mapped) || r->producer)
		return -EBUSY;

	/* LAB ring 1: get the n = npages + 1 pages (pages[0] is the
	 * control page) and one contiguous kernel view of the data, so a
	 * record spanning two pages is one memcpy(). Any user may open the
	 * device: charge the opener's memory cgroup and both budgets
	 * (kml_ring_budget.c; r->unlimited is the opener's CAP_IPC_LOCK, not
	 * the caller's), before the old ring goes (a resize holds both).
	 * The pages will be mapped to user space: no stale data. On failure
	 * leave nothing allocated or taken (labels below return the budgets)
	 */
	n = npages + 1;
	ret = kml_ring_budget_take(n, r->unlimited);
	if (ret)
		return ret;
	ret = kml_ring_user_take(r->uid, n, r->unlimited);
	if (ret)
		goto unbudget_global;
	ret = -ENOMEM;
	/* _ACCOUNT: charged to the opener's memory cgroup. */
	pages = kcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		goto unbudget;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i]) {
			kml_ring_free_pages(pages, i, NULL);
			goto unbudget;
		}
	}
	/* One contiguous kernel view of the data, so records are one memcpy. */
	data = vmap(pages + 1, npages, VM_MAP, PAGE_KERNEL);
	if (!data) {
		kml_ring_free_pages(pages, n, NULL);
		goto unbudget;
	}
	/* LAB ring 1 end: return -EOPNOTSUPP; */

	kml_wlock(r, &flags);
	old_pages = r->pages;
	old_n = r->pages ? r->npages + 1 : 0;
	old_data = r->data;
	r->pages = pages;
	r->npages = npages;
	r->data = data;
	r->ctrl = page_address(pages[0]);
	r->size = (u64)npages * PAGE_SIZE;
	r->head = 0;
	r->resv = 0;
	r->lost = 0;
	r->produced = 0;
	/* A smaller ring could never reach a larger watermark. */
	r->watermark = min(r->watermark, kml_ring_watermark_max(r->size));
	r->ctrl->version = KML_RING_ABI_VERSION;
	r->ctrl->page_size = PAGE_SIZE;
	r->ctrl->data_size = r->size;
	r->ctrl->watermark = r->watermark;
	kml_wunlock(r, flags);
	kml_ring_free_pages(old_pages, old_n, old_data);
	kml_ring_budget_give(old_n);
	kml_ring_user_give(r->uid, old_n);

	if (!r->listed) {
		mutex_lock(&kml_ring_list_mutex);
		list_add_tail_rcu(&r->node, &kml_ring_list);
		mutex_unlock(&kml_ring_list_mutex);
		r->listed = true;
	}
	return 0;

unbudget:
	kml_ring_user_give(r->uid, n);
unbudget_global:
	kml_ring_budget_give(n);
	return ret;
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

	/* LAB ring 2: a mapping's first touch of each page lands here:
	 * give the kernel the ring's page behind file page pgoff (control
	 * page, then data, as mmap() lays them out), a bus error beyond. The
	 * page must live as long as the mapping shows it, ring freed or not
	 */
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
	/* LAB ring 2 end: return VM_FAULT_SIGBUS; */
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
	/* LAB ring 2: which mappings a process may make, and what they may
	 * become. A sized ring only, shared, never executable: the control
	 * page (offset 0, one page) or all the data (offset one page,
	 * r->size bytes), else -EINVAL. The data is the producer's: -EPERM
	 * if writable, and no mprotect() may make it so. No ring mapping
	 * grows with mremap() or lands in a core dump. Serve an accepted one
	 * with kml_ring_vm_ops, counted like its later copies (no resize
	 * while mapped) and in ST_MMAPS
	 */
	/*
	 * VM_MAYSHARE, not VM_SHARED: the kernel clears VM_SHARED on a
	 * shared mapping of a file opened read-only, which is still shared.
	 */
	if (!r->size || !(vma->vm_flags & VM_MAYSHARE) ||
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
	/* LAB ring 2 end */
out:
	mutex_unlock(&r->lock);
	return ret;
}

/* ---- poll(), and the check read() sleeps on ---- */

/*
 * Are @wm bytes waiting? Under wlock, so a concurrent SET_SIZE cannot
 * free the control page under us, and so a writer's wake-up decision is
 * ordered against our check (see kml_ring_need_wake_locked()). @arm says the
 * caller is a poller about to sleep for the watermark.
 */
bool kml_ring_readable(struct kml_ring *r, bool arm)
{
	unsigned long flags;
	bool ret = false;

	kml_wlock(r, &flags);
	/*
	 * Armed even when readable: an edge-triggered epoll rechecks only
	 * when woken, and must be woken at the next crossing. And armed
	 * before sizing, for the records that come after it.
	 */
	if (arm)
		r->poll_armed = true;
	if (r->size)
		ret = r->head - kml_tail_locked(r) >= (arm ? r->watermark : 1);
	kml_wunlock(r, flags);
	return ret;
}

static __poll_t kml_ring_poll(struct file *file, poll_table *wait)
{
	struct kml_ring *r = file->private_data;

	/* LAB ring 4: EPOLLIN | EPOLLRDNORM once the watermark's bytes wait,
	 * else 0, and then a writer must wake this poller when they do
	 * (kml_ring_readable() checks and arms). Of queueing on r->wq and
	 * checking, one order loses a record published in between
	 */
	/* Queued first, then checked and armed under wlock. */
	poll_wait(file, &r->wq, wait);
	return kml_ring_readable(r, true) ? EPOLLIN | EPOLLRDNORM : 0;
	/* LAB ring 4 end: return DEFAULT_POLLMASK; */
}

const struct file_operations kml_ring_fops = {
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

/*
 * Rings are private to their opener: any user may have one, within the
 * page budgets and its memory cgroup; only START needs CAP_SYS_ADMIN.
 */
static struct miscdevice kml_ring_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_ring",
	.fops	= &kml_ring_fops,
	.mode	= 0666,
};

static int __init kml_ring_init(void)
{
	int ret;

	kml_ring_wq = alloc_workqueue("kml_ring_free", WQ_UNBOUND, 0);
	if (!kml_ring_wq)
		return -ENOMEM;
	kml_ring_stats = kml_stats_register("kml_ring", kml_ring_stats_desc,
					    ARRAY_SIZE(kml_ring_stats_desc));
	if (IS_ERR(kml_ring_stats)) {
		destroy_workqueue(kml_ring_wq);
		return PTR_ERR(kml_ring_stats);
	}
	ret = misc_register(&kml_ring_misc);
	if (ret) {
		kml_stats_unregister(kml_ring_stats);
		destroy_workqueue(kml_ring_wq);
	}
	return ret;
}

static void __exit kml_ring_exit(void)
{
	/* Open files and mappings pin the module: no ring is open. */
	misc_deregister(&kml_ring_misc);
	/* Closed rings may still wait for their grace period: free them. */
	rcu_barrier();
	destroy_workqueue(kml_ring_wq);
	kml_stats_unregister(kml_ring_stats);
	xa_destroy(&kml_ring_user_used);
}

module_init(kml_ring_init);
module_exit(kml_ring_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: kernel-to-user ring buffer shared through mmap");
