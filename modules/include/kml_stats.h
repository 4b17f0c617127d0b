/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-kernel API of kml_stats: how the other kmodlab modules publish
 * counters and log2 histograms under /proc/kmodlab/stats.
 *
 *	static const struct kml_stats_desc my_stats[] = {
 *		{ "reads", KML_STAT_COUNTER },
 *		{ "latency_ns", KML_STAT_HIST },
 *	};
 *	set = kml_stats_register("my_mod", my_stats, ARRAY_SIZE(my_stats));
 *	...
 *	kml_stats_inc(set, MY_READS);		// hot path: one per-CPU add
 *	kml_stats_hist_add(set, MY_LATENCY, ns);
 *	...
 *	kml_stats_unregister(set);		// in module exit
 */
#ifndef _KML_STATS_H
#define _KML_STATS_H

#include <linux/types.h>
#include "../../uapi/linux/kml_stats.h"

/*
 * How big a set may be: every statistic owns 64-bit per-CPU slots, a
 * counter one and a histogram one per bucket plus one for the sum, and a
 * set owns at most KML_STATS_MAX_SLOTS of them (32 KiB per CPU, the most
 * the per-CPU allocator hands out at once). Larger sets are -EINVAL.
 */
#define KML_STATS_MAX_SLOTS	4096
#define KML_STATS_HIST_SLOTS	(KML_STATS_HIST_BUCKETS + 1)

enum kml_stats_type {
	KML_STAT_COUNTER,
	KML_STAT_HIST,
};

/**
 * struct kml_stats_desc - one statistic of a set, as given to register
 * @name: name shown in the stats file, [A-Za-z0-9_.-]{1,31}; copied
 * @type: counter or log2 histogram
 */
struct kml_stats_desc {
	const char *name;
	enum kml_stats_type type;
};

/**
 * struct kml_stats_hist - a histogram as read back by its owner
 * @count: number of recorded values
 * @sum: sum of recorded values (wraps at 2^64)
 * @buckets: counts per log2 bucket, see kml_log2_bucket()
 */
struct kml_stats_hist {
	u64 count;
	u64 sum;
	u64 buckets[KML_STATS_HIST_BUCKETS];
};

struct kml_stats_set;

struct kml_stats_set *kml_stats_register(const char *name,
					 const struct kml_stats_desc *desc,
					 unsigned int n);
void kml_stats_unregister(struct kml_stats_set *set);
void kml_stats_add(struct kml_stats_set *set, unsigned int id, u64 delta);
u64 __percpu *kml_stats_counter(struct kml_stats_set *set, unsigned int id);
void kml_stats_hist_add(struct kml_stats_set *set, unsigned int id, u64 val);
u64 kml_stats_read(struct kml_stats_set *set, unsigned int id);
void kml_stats_reset(struct kml_stats_set *set);
void kml_stats_on_reset(struct kml_stats_set *set, void (*fn)(void *data),
			void *data);
void kml_stats_without_resets(void (*fn)(void *data), void *data);
int kml_stats_hist_read(struct kml_stats_set *set, unsigned int id,
			struct kml_stats_hist *out);

static inline void kml_stats_inc(struct kml_stats_set *set, unsigned int id)
{
	kml_stats_add(set, id, 1);
}

#endif /* _KML_STATS_H */
