/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_stats: no kernel dependencies, so the same file is
 * built into the module and into host unit tests and fuzz targets.
 */
#ifndef _KML_STATS_LOGIC_H
#define _KML_STATS_LOGIC_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#endif

#include "../../uapi/linux/kml_stats.h"

/**
 * kml_log2_bucket() - log2 histogram bucket of a value
 * @v: the value
 *
 * Return: 0 for 0, else k such that 2^(k-1) <= @v < 2^k (1..64).
 */
static inline unsigned int kml_log2_bucket(__u64 v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/**
 * kml_bucket_low() - smallest value that lands in a bucket
 * @k: bucket index, 0..64
 *
 * Return: the lower bound of bucket @k.
 */
static inline __u64 kml_bucket_low(unsigned int k)
{
	return k ? 1ULL << (k - 1) : 0;
}

/**
 * kml_bucket_high() - largest value that lands in a bucket
 * @k: bucket index, 0..64
 *
 * Return: the upper bound of bucket @k, inclusive.
 */
static inline __u64 kml_bucket_high(unsigned int k)
{
	if (k == 0)
		return 0;
	if (k == 64)
		return ~0ULL;
	return (1ULL << k) - 1;
}

bool kml_stats_name_valid(const char *name);

enum kml_ctl_op {
	KML_CTL_RESET_ALL,
	KML_CTL_RESET_SET,
};

/**
 * struct kml_ctl_cmd - a parsed control-file command
 * @op: what to do
 * @set: set name for %KML_CTL_RESET_SET, NUL-terminated
 */
struct kml_ctl_cmd {
	enum kml_ctl_op op;
	char set[KML_STATS_NAME_MAX + 1];
};

int kml_ctl_parse(const char *buf, size_t len, struct kml_ctl_cmd *cmd);

#endif /* _KML_STATS_LOGIC_H */
