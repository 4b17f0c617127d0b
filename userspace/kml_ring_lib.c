// SPDX-License-Identifier: GPL-2.0
/*
 * The consumer half of the protocol documented in uapi/linux/kml_ring.h:
 * load-acquire head, read the records in place, store-release tail.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kml_ring_lib.h"
#include "../modules/kml_ring/kml_ring_logic.h"

/* Opens a ring of @npages data pages and maps it. 0 or -errno. */
int kml_ring_user_open(struct kml_ring_user *r, unsigned int npages)
{
	uint32_t n = npages;
	void *ctrl, *data;
	int e;

	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->fd = open(KML_RING_DEVICE, O_RDWR | O_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	if (ioctl(r->fd, KML_RING_IOC_SET_SIZE, &n))
		goto fail;
	ctrl = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (ctrl == MAP_FAILED)
		goto fail;
	r->ctrl = ctrl;
	r->size = r->ctrl->data_size;
	data = mmap(NULL, r->size, PROT_READ, MAP_SHARED, r->fd, (off_t)r->page);
	if (data == MAP_FAILED) {
		e = errno;
		munmap(ctrl, r->page);
		errno = e;
		goto fail;
	}
	r->data = data;
	return 0;
fail:
	e = errno;
	close(r->fd);
	r->fd = -1;
	return -e;
}

void kml_ring_user_close(struct kml_ring_user *r)
{
	if (r->fd < 0)
		return;
	munmap((void *)r->data, r->size);
	munmap(r->ctrl, r->page);
	close(r->fd);
	r->fd = -1;
}

uint64_t kml_ring_user_pending(const struct kml_ring_user *r)
{
	return __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE) - r->ctrl->tail;
}

/*
 * Hands every available record (PAD records skipped) to @cb, then frees
 * their space. Returns the number of records, or -EINVAL on a malformed
 * record (the ring is then left as it was at that record).
 */
long kml_ring_user_consume(struct kml_ring_user *r, kml_ring_cb cb, void *arg)
{
	/* Pairs with the kernel's store-release of head. */
	uint64_t head = __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->ctrl->tail;
	long n = 0;
	int stop = 0;

	while (tail < head && !stop) {
		const struct kml_ring_rec *rec;
		uint32_t sz;

		if (kml_ring_next(r->data, r->size, tail, head, &sz)) {
			n = -EINVAL;
			break;
		}
		rec = (const void *)(r->data + (tail & (r->size - 1)));
		if (rec->type != KML_RING_REC_PAD) {
			n++;
			stop = cb(rec, arg);
		}
		tail += sz;
	}
	/* Pairs with the kernel's load-acquire of tail: we are done reading. */
	__atomic_store_n(&r->ctrl->tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* Waits up to @timeout_ms for the watermark: 1 ready, 0 timeout, -errno. */
int kml_ring_user_wait(struct kml_ring_user *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	int ret = poll(&p, 1, timeout_ms);

	return ret < 0 ? -errno : ret;
}
