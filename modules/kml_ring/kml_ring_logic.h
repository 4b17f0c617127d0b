/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_ring: where a record goes, how samples are filled and
 * checked, how a consumer walks the records. No kernel dependencies: the
 * user library, host unit tests and fuzz targets build the same file.
 */
#ifndef _KML_RING_LOGIC_H
#define _KML_RING_LOGIC_H

#include <linux/types.h>
#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif

#include "../../uapi/linux/kml_ring.h"

/* Bytes a PAD record needs at the least: its type and size fields. */
#define KML_RING_PAD_MIN	8

static inline __u32 kml_ring_align(__u32 n)
{
	return (n + KML_RING_ALIGN - 1) & ~(__u32)(KML_RING_ALIGN - 1);
}

int kml_ring_place(__u64 head, __u64 tail, __u64 size, __u32 need,
		   __u32 *pad);
__u64 kml_ring_clamp_tail(__u64 head, __u64 tail, __u64 size);
int kml_ring_check_pages(__u32 npages);
__u64 kml_ring_watermark_max(__u64 size);
int kml_ring_check_produce(const struct kml_ring_produce *p, __u64 size);
__u32 kml_ring_csum(const __u8 *data, __u32 len);
void kml_ring_fill(__u64 seq, __u8 *data, __u32 len);
int kml_ring_next(const __u8 *data, __u64 size, __u64 pos, __u64 head,
		  __u32 *rec_size);
#ifndef __KERNEL__
int kml_ring_check_sample(const struct kml_ring_rec *rec, __u64 expect_seq);
#endif

#endif /* _KML_RING_LOGIC_H */
