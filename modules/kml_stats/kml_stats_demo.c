// SPDX-License-Identifier: GPL-2.0
/*
 * kml_stats' built-in "demo" set and its demo_counters parameter: a source
 * of predictable counters for the selftests, handed over complete by the
 * stats lab. It uses the same calls as any other module's set.
 */
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/stringify.h>

#include "../include/kml_stats.h"
#include "kml_stats_priv.h"

#define KML_DEMO_MAX		4000

/*
 * demo_counters=N registers a set "demo" with counters c00000..c<N-1>,
 * counter i starting at i, and a histogram "values" holding 0..N-1, so the
 * file's contents are predictable. Writing the parameter at run time
 * unregisters and re-registers the set through the exported API, which is
 * how the selftests race registration against readers.
 */
static unsigned int demo_counters = 8;
static DEFINE_MUTEX(kml_demo_lock);
static struct kml_stats_set *kml_demo;
static bool kml_demo_live;	/* between init and exit, under kml_demo_lock */

/* A demo set of @n counters and the histogram, filled in but not listed. */
static struct kml_stats_set *kml_demo_alloc(unsigned int n)
{
	struct kml_stats_desc *desc;
	struct kml_stats_set *set;
	char (*names)[12];
	unsigned int i;

	desc = kvcalloc(n + 1, sizeof(*desc), GFP_KERNEL);
	names = kvcalloc(n, sizeof(*names), GFP_KERNEL);
	set = ERR_PTR(-ENOMEM);
	if (!desc || !names)
		goto out;
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "c%05u", i);
		desc[i].name = names[i];
		desc[i].type = KML_STAT_COUNTER;
	}
	desc[n].name = "values";
	desc[n].type = KML_STAT_HIST;
	set = kml_stats_set_alloc("demo", desc, n + 1);
	if (IS_ERR(set))
		goto out;
	for (i = 0; i < n; i++) {
		kml_stats_add(set, i, i);
		kml_stats_hist_add(set, n, i);
	}
out:
	kvfree(names);
	kvfree(desc);
	return set;
}

/*
 * Replaces the demo set with one of @n counters (none for 0). The new set
 * is built before the old one goes, so a failure leaves the old one as it
 * was, and readers see the old set or the new one, never neither.
 */
static int kml_demo_build(unsigned int n)
{
	struct kml_stats_set *set = NULL;
	int ret = 0;

	lockdep_assert_held(&kml_demo_lock);
	if (n) {
		set = kml_demo_alloc(n);
		if (IS_ERR(set))
			return PTR_ERR(set);
	}
	mutex_lock(&kml_stats_lock);
	if (set)
		ret = kml_stats_list_locked(set, kml_demo);
	else if (kml_demo)
		list_del(&kml_demo->node);
	mutex_unlock(&kml_stats_lock);
	if (ret) {
		/* No old demo set, and another module took the name. */
		kml_stats_set_free(set);
		return ret;
	}
	kml_stats_set_free(kml_demo);
	kml_demo = set;
	return 0;
}

static int kml_demo_param_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n > KML_DEMO_MAX)
		return -EINVAL;
	mutex_lock(&kml_demo_lock);
	if (kml_demo_live)
		ret = kml_demo_build(n);
	/* A failed build left the old set, so the old value is still true. */
	if (!ret)
		demo_counters = n;
	mutex_unlock(&kml_demo_lock);
	return ret;
}

static const struct kernel_param_ops kml_demo_param_ops = {
	.set = kml_demo_param_set,
	.get = param_get_uint,
};

module_param_cb(demo_counters, &kml_demo_param_ops, &demo_counters, 0644);
MODULE_PARM_DESC(demo_counters,
		 "counters in the built-in \"demo\" set, 0.." __stringify(KML_DEMO_MAX)
		 " (default 8); writable at run time");

/* At load: the demo set of demo_counters, which the parameter now rebuilds. */
int __init kml_stats_demo_init(void)
{
	int ret;

	mutex_lock(&kml_demo_lock);
	ret = kml_demo_build(demo_counters);
	kml_demo_live = !ret;
	mutex_unlock(&kml_demo_lock);
	return ret;
}

/* At unload, or a load that failed after kml_stats_demo_init(). */
void kml_stats_demo_exit(void)
{
	mutex_lock(&kml_demo_lock);
	kml_demo_live = false;
	kml_demo_build(0);
	mutex_unlock(&kml_demo_lock);
}
