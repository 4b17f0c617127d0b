// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for labs/bpf's shared header: the BPF programs' bucket
 * function (shifts, for want of a count-leading-zeros instruction) must
 * put every latency where kml_probe's kml_log2_bucket() does, or the two
 * histograms the lab compares would not be the same histogram.
 */
#include <stdint.h>

#include "kselftest_harness.h"
#include "../../bpf/kml_bpf.h"
#include "../../modules/kml_stats/kml_stats_logic.h"

TEST(bucket_edges)
{
	int k;

	ASSERT_EQ(0, kml_bpf_bucket(0));
	ASSERT_EQ(64, kml_bpf_bucket(UINT64_MAX));
	for (k = 0; k < 64; k++) {
		uint64_t p = 1ULL << k;

		ASSERT_EQ(kml_log2_bucket(p), kml_bpf_bucket(p));
		ASSERT_EQ(kml_log2_bucket(p - 1), kml_bpf_bucket(p - 1));
		ASSERT_EQ(kml_log2_bucket(p + 1), kml_bpf_bucket(p + 1));
		ASSERT_EQ(k + 1, (int)kml_bpf_bucket(p));
	}
}

TEST(bucket_everywhere)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int i;

	/* xorshift: values of every magnitude, the same on every run */
	for (i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ASSERT_EQ(kml_log2_bucket(x >> (i % 64)), kml_bpf_bucket(x >> (i % 64)));
	}
}

TEST(bucket_covers_the_histogram)
{
	/* the largest bucket is the last slot before the count and the sum */
	ASSERT_EQ(KML_BPF_BUCKETS - 1, (int)kml_bpf_bucket(UINT64_MAX));
	ASSERT_EQ(KML_BPF_SLOT_COUNT, KML_BPF_BUCKETS);
	ASSERT_EQ(KML_BPF_SLOTS, KML_BPF_SLOT_SUM + 1);
	/* the stack index is masked with MAX_DEPTH - 1: a power of two */
	ASSERT_EQ(0, KML_BPF_MAX_DEPTH & (KML_BPF_MAX_DEPTH - 1));
}

TEST_HARNESS_MAIN
