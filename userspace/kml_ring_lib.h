/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkml_ring: map a /dev/kml_ring ring and consume its records without
 * copying them. Used by kml-ring, the selftests and the benchmark.
 */
#ifndef KML_RING_LIB_H
#define KML_RING_LIB_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kml_ring.h>

struct kml_ring_user {
	int fd;
	struct kml_ring_ctrl *ctrl;	/* shared, read-write */
	const uint8_t *data;		/* shared, read-only */
	uint64_t size;
	size_t page;
};

/* Return non-zero to stop consuming after this record. */
typedef int (*kml_ring_cb)(const struct kml_ring_rec *rec, void *arg);

int kml_ring_user_open(struct kml_ring_user *r, unsigned int npages);
void kml_ring_user_close(struct kml_ring_user *r);
long kml_ring_user_consume(struct kml_ring_user *r, kml_ring_cb cb, void *arg);
int kml_ring_user_wait(struct kml_ring_user *r, int timeout_ms);
uint64_t kml_ring_user_pending(const struct kml_ring_user *r);

#endif
