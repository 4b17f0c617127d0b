// SPDX-License-Identifier: GPL-2.0
/* Host unit tests for kml_ring's index arithmetic and record checks. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../modules/kml_ring/kml_ring_logic.h"

TEST(place_without_wrap)
{
	__u32 pad = 99;

	ASSERT_EQ(0, kml_ring_place(0, 0, 4096, 64, &pad));
	ASSERT_EQ(0, pad);
	/* Exactly full. */
	ASSERT_EQ(0, kml_ring_place(4032, 0, 4096, 64, &pad));
	ASSERT_EQ(-ENOSPC, kml_ring_place(4096, 0, 4096, 64, &pad));
	ASSERT_EQ(0, kml_ring_place(4096, 64, 4096, 64, &pad));
	ASSERT_EQ(0, pad);
}

TEST(place_pads_at_the_end)
{
	__u32 pad;

	/* 200-byte record at offset 4000: 96 bytes of padding, then 0. */
	ASSERT_EQ(0, kml_ring_place(4000, 4000, 4096, 200, &pad));
	ASSERT_EQ(96, pad);
	/* Padding counts against free space. */
	ASSERT_EQ(-ENOSPC, kml_ring_place(4000, 150, 4096, 200, &pad));
	ASSERT_EQ(0, kml_ring_place(4000, 200, 4096, 200, &pad));
	/* Many wraps later, the same offsets. */
	ASSERT_EQ(0, kml_ring_place(4096ULL * 1000000 + 4000, 4096ULL * 1000000 + 4000,
				    4096, 200, &pad));
	ASSERT_EQ(96, pad);
}

TEST(clamp_tail)
{
	ASSERT_EQ(100, kml_ring_clamp_tail(100, 100, 64));
	ASSERT_EQ(100, kml_ring_clamp_tail(100, 5000, 64));
	ASSERT_EQ(36, kml_ring_clamp_tail(100, 0, 64));
	ASSERT_EQ(50, kml_ring_clamp_tail(100, 50, 64));
}

TEST(checks)
{
	struct kml_ring_produce p = { .record_size = 64, .cpu = -1 };

	ASSERT_EQ(0, kml_ring_check_pages(1));
	ASSERT_EQ(0, kml_ring_check_pages(KML_RING_MAX_PAGES));
	ASSERT_EQ(-EINVAL, kml_ring_check_pages(0));
	ASSERT_EQ(-EINVAL, kml_ring_check_pages(6));
	ASSERT_EQ(-EINVAL, kml_ring_check_pages(KML_RING_MAX_PAGES * 2));
	ASSERT_EQ(0, kml_ring_check_produce(&p, 4096));
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 0));
	p.record_size = 1025;
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 4096));
	p.record_size = 24;
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 4096));
	p.record_size = 64;
	p.cpu = -2;
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 4096));
	p.cpu = 0;
	p.flags = 4;
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 4096));
	/* TRACE: records up to what one perf event can carry */
	p.flags = KML_RING_PRODUCE_TRACE | KML_RING_PRODUCE_NOFILL;
	ASSERT_EQ(0, kml_ring_check_produce(&p, 4096));
	p.record_size = KML_RING_TRACE_MAX_RECORD;
	ASSERT_EQ(0, kml_ring_check_produce(&p, 65536));
	p.record_size = KML_RING_TRACE_MAX_RECORD + 8;
	ASSERT_EQ(-EINVAL, kml_ring_check_produce(&p, 65536));
	p.flags = 0;
	ASSERT_EQ(0, kml_ring_check_produce(&p, 65536));
	p.record_size = 64;
	ASSERT_EQ(64, kml_ring_align(57));
	ASSERT_EQ(64, kml_ring_align(64));
}

/*
 * A watermark up to half the area is always reached: with records of at
 * most a quarter of the area, padding included, the next record fits
 * while less than half is in use. Simulated with the placement logic.
 */
TEST(watermark_max_is_reachable)
{
	__u64 size, head, tail, wm;
	__u32 need, pad;

	for (size = 256; size <= 4096; size *= 2) {
		wm = kml_ring_watermark_max(size);
		ASSERT_EQ(size / 2, wm);
		for (need = 8; need <= size / 4; need += 8) {
			/* Start anywhere: the offset decides the padding. */
			for (tail = 0; tail < size; tail += 8 * 13) {
				head = tail;
				while (head - tail < wm) {
					ASSERT_EQ(0, kml_ring_place(head, tail, size, need, &pad));
					head += pad + need;
				}
			}
		}
	}
}

/* The uapi has the same layout for 32- and 64-bit callers. */
TEST(uapi_layout)
{
	ASSERT_EQ(KML_RING_PRODUCE_SIZE_VER0, sizeof(struct kml_ring_produce));
	ASSERT_EQ(8, offsetof(struct kml_ring_produce, count));
	ASSERT_EQ(16, offsetof(struct kml_ring_produce, cpu));
	ASSERT_EQ(20, offsetof(struct kml_ring_produce, flags));
	ASSERT_EQ(56, sizeof(struct kml_ring_ctrl));
	ASSERT_EQ(24, offsetof(struct kml_ring_ctrl, tail));
	ASSERT_EQ(16, sizeof(struct kml_ring_rec));
	ASSERT_EQ(16, sizeof(struct kml_ring_sample));
	ASSERT_EQ(2, KML_RING_ABI_VERSION);
}

TEST(samples_and_walking)
{
	static __u8 area[256] __attribute__((aligned(8)));
	struct kml_ring_rec *rec = (void *)area;
	struct kml_ring_sample *s = (void *)(rec + 1);
	__u32 sz;

	rec->type = KML_RING_REC_SAMPLE;
	rec->size = 64;
	s->seq = 7;
	s->len = 64 - sizeof(*rec) - sizeof(*s);
	kml_ring_fill(7, s->data, s->len);
	s->csum = kml_ring_csum(s->data, s->len);
	ASSERT_EQ(0, kml_ring_check_sample(rec, 7));
	ASSERT_EQ(-ERANGE, kml_ring_check_sample(rec, 8));
	s->data[3] ^= 1;
	ASSERT_EQ(-EINVAL, kml_ring_check_sample(rec, 7));
	s->data[3] ^= 1;
	s->len = 1000;
	ASSERT_EQ(-EINVAL, kml_ring_check_sample(rec, 7));

	ASSERT_EQ(0, kml_ring_next(area, 256, 0, 64, &sz));
	ASSERT_EQ(64, sz);
	ASSERT_EQ(-EINVAL, kml_ring_next(area, 256, 0, 32, &sz));	/* past head */
	rec->size = 12;
	ASSERT_EQ(-EINVAL, kml_ring_next(area, 256, 0, 64, &sz));	/* unaligned */
	rec->size = 512;
	ASSERT_EQ(-EINVAL, kml_ring_next(area, 256, 0, 1024, &sz));	/* past end */
	/* An 8-byte PAD record is legal; an 8-byte sample is not. */
	rec->type = KML_RING_REC_PAD;
	rec->size = 8;
	ASSERT_EQ(0, kml_ring_next(area, 256, 256 * 3, 256 * 3 + 8, &sz));
	rec->type = KML_RING_REC_SAMPLE;
	ASSERT_EQ(-EINVAL, kml_ring_next(area, 256, 0, 64, &sz));
}

TEST_HARNESS_MAIN
