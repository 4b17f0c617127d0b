/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_stats' own header: a set as the module keeps it, the registry of
 * sets that the stats file walks (kml_stats_main.c, the lab's file), and
 * what each of the module's files offers the others. Other modules see
 * only modules/include/kml_stats.h, where a set is an opaque pointer.
 */
#ifndef _KML_STATS_PRIV_H
#define _KML_STATS_PRIV_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include "../include/kml_stats.h"

struct kml_stats_item {
	char name[KML_STATS_NAME_MAX + 1];
	enum kml_stats_type type;
	unsigned int slot;
};

struct kml_stats_set {
	struct list_head node;		/* on kml_stats_sets (kml_stats_lock) */
	char name[KML_STATS_NAME_MAX + 1];
	unsigned int nslots;
	u64 __percpu *slots;
	u64 *base;			/* reset baseline (kml_stats_lock) */
	void (*on_reset)(void *data);	/* under kml_stats_lock */
	void *on_reset_data;
	unsigned int n;
	struct kml_stats_item items[];
};

/* kml_stats_main.c: the registry, the counters' reading side, reset */
extern struct mutex kml_stats_lock;
extern struct list_head kml_stats_sets;
u64 kml_stats_slot_sum(struct kml_stats_set *set, unsigned int slot);
void kml_stats_hist_fill(struct kml_stats_set *set, unsigned int id,
			 struct kml_stats_hist *out);
void kml_stats_reset_locked(struct kml_stats_set *set);

/* kml_stats_api.c: a set's life, and the exported API */
struct kml_stats_set *kml_stats_set_alloc(const char *name,
					  const struct kml_stats_desc *desc,
					  unsigned int n);
void kml_stats_set_free(struct kml_stats_set *set);
struct kml_stats_set *kml_stats_find_locked(const char *name);
int kml_stats_list_locked(struct kml_stats_set *set, struct kml_stats_set *old);

/* kml_stats_demo.c: the "demo" set and its parameter */
int kml_stats_demo_init(void);
void kml_stats_demo_exit(void);

#endif /* _KML_STATS_PRIV_H */
