// SPDX-License-Identifier: GPL-2.0
/*
 * kml_stats_apitest - in-kernel test of kml_stats' exported API.
 *
 * Userspace cannot call kml_stats_register() with bad arguments, so this
 * module does, at load time, in the style of the kernel's lib/test_*.c
 * modules: every check logs on failure and a failed check makes init
 * return -EINVAL, which the selftest sees as a failed insmod.
 *
 * It also leaves the largest set the API allows registered ("apitest_big",
 * KML_STATS_MAX_SLOTS counters, counter i holding i) until it is unloaded,
 * so the selftest can read it back through /proc/kmodlab/stats.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "../include/kml_stats.h"

static int failures;

/*
 * hold_demo=1: register a set named "demo" and keep it until unload, so the
 * selftest can see kml_stats refuse to build its own demo set over it.
 */
static bool hold_demo;
module_param(hold_demo, bool, 0444);
MODULE_PARM_DESC(hold_demo, "keep a set named \"demo\" registered (default N)");
static struct kml_stats_set *held;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		pr_err("check failed at line %d: %s\n", __LINE__, #cond);	\
		failures++;						\
	}								\
} while (0)

static void check_register_errors(void)
{
	static const struct kml_stats_desc ok[] = {
		{ "a", KML_STAT_COUNTER },
	};
	static const struct kml_stats_desc dup[] = {
		{ "x", KML_STAT_COUNTER },
		{ "x", KML_STAT_HIST },
	};
	static const struct kml_stats_desc badname[] = {
		{ "has space", KML_STAT_COUNTER },
	};
	static const struct kml_stats_desc noname[] = {
		{ NULL, KML_STAT_COUNTER },
	};
	static const struct kml_stats_desc badtype[] = {
		{ "t", (enum kml_stats_type)7 },
	};
	/* 32 characters, one more than a name may have */
	static const char name32[] = "abcdefghijklmnopqrstuvwxyz012345";
	static const struct kml_stats_desc long_stat[] = {
		{ name32, KML_STAT_COUNTER },
	};
	struct kml_stats_desc *many;
	struct kml_stats_set *set, *again;
	unsigned int i;

	CHECK(PTR_ERR(kml_stats_register(NULL, ok, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("", ok, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("bad/name", ok, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", NULL, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", ok, 0)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", dup, 2)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", badname, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", noname, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", badtype, 1)) == -EINVAL);
	/* Names are 1..KML_STATS_NAME_MAX (31) characters: 32 is refused. */
	CHECK(PTR_ERR(kml_stats_register(name32, ok, 1)) == -EINVAL);
	CHECK(PTR_ERR(kml_stats_register("apitest", long_stat, 1)) == -EINVAL);
	set = kml_stats_register(name32 + 1, ok, 1);
	CHECK(!IS_ERR(set));
	kml_stats_unregister(set);

	/* 100 histograms need 6600 slots: more than one set may own. */
	many = kcalloc(100, sizeof(*many), GFP_KERNEL);
	CHECK(many);
	if (many) {
		for (i = 0; i < 100; i++) {
			many[i].name = "h";
			many[i].type = KML_STAT_HIST;
		}
		CHECK(PTR_ERR(kml_stats_register("apitest", many, 100)) ==
		      -EINVAL);
		kfree(many);
	}

	set = kml_stats_register("apitest", ok, 1);
	CHECK(!IS_ERR(set));
	again = kml_stats_register("apitest", ok, 1);
	CHECK(PTR_ERR(again) == -EEXIST);
	kml_stats_unregister(set);
	/* The name is free again once unregistered. */
	set = kml_stats_register("apitest", ok, 1);
	CHECK(!IS_ERR(set));
	kml_stats_unregister(set);

	kml_stats_unregister(NULL);
	kml_stats_unregister(ERR_PTR(-ENOMEM));
}

static struct kml_stats_set *big;

/* @nhist histograms then @ncount counters, names "h0000".., "c0000".. */
static struct kml_stats_set *register_sized(const char *name,
					    unsigned int nhist,
					    unsigned int ncount)
{
	unsigned int i, n = nhist + ncount;
	struct kml_stats_desc *desc;
	struct kml_stats_set *set;
	char (*names)[12];

	desc = kvcalloc(n, sizeof(*desc), GFP_KERNEL);
	names = kvcalloc(n, sizeof(*names), GFP_KERNEL);
	set = ERR_PTR(-ENOMEM);
	if (desc && names) {
		for (i = 0; i < n; i++) {
			snprintf(names[i], sizeof(names[i]), "%c%04u",
				 i < nhist ? 'h' : 'c', i);
			desc[i].name = names[i];
			desc[i].type = i < nhist ? KML_STAT_HIST : KML_STAT_COUNTER;
		}
		set = kml_stats_register(name, desc, n);
	}
	/* Names and descriptors are copied: the caller's may go. */
	kvfree(names);
	kvfree(desc);
	return set;
}

/*
 * The largest sets the API allows, right at KML_STATS_MAX_SLOTS, and one
 * slot more. The largest has 160 KiB of items: before kvzalloc() that was
 * an order-6 kzalloc(), which a fragmented machine may fail.
 */
static void check_largest_sets(void)
{
	const unsigned int nh = KML_STATS_MAX_SLOTS / KML_STATS_HIST_SLOTS;
	const unsigned int rest = KML_STATS_MAX_SLOTS - nh * KML_STATS_HIST_SLOTS;
	struct kml_stats_hist *h;
	struct kml_stats_set *set;
	unsigned int i;

	CHECK(PTR_ERR(register_sized("apitest_big", 0, KML_STATS_MAX_SLOTS + 1)) ==
	      -EINVAL);
	CHECK(PTR_ERR(register_sized("apitest_big", nh, rest + 1)) == -EINVAL);

	set = register_sized("apitest_hist", nh, rest);
	CHECK(!IS_ERR(set));
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	CHECK(h);
	if (!IS_ERR(set) && h) {
		kml_stats_hist_add(set, nh - 1, 5);
		kml_stats_inc(set, nh + rest - 1);
		CHECK(kml_stats_hist_read(set, nh - 1, h) == 0 && h->count == 1 &&
		      h->sum == 5 && h->buckets[3] == 1);
		CHECK(kml_stats_read(set, nh + rest - 1) == 1);
	}
	kfree(h);
	kml_stats_unregister(set);

	big = register_sized("apitest_big", 0, KML_STATS_MAX_SLOTS);
	CHECK(!IS_ERR(big));
	if (IS_ERR(big)) {
		big = NULL;
		return;
	}
	for (i = 0; i < KML_STATS_MAX_SLOTS; i++)
		kml_stats_add(big, i, i);
	CHECK(kml_stats_read(big, KML_STATS_MAX_SLOTS - 1) == KML_STATS_MAX_SLOTS - 1);
}

static void count_reset(void *data)
{
	(*(int *)data)++;
}

static void check_values(void)
{
	static const struct kml_stats_desc desc[] = {
		{ "count", KML_STAT_COUNTER },
		{ "lat", KML_STAT_HIST },
	};
	struct kml_stats_hist *h;
	struct kml_stats_set *set;
	u64 __percpu *slot;
	int resets = 0;

	set = kml_stats_register("apitest", desc, ARRAY_SIZE(desc));
	CHECK(!IS_ERR(set));
	if (IS_ERR(set))
		return;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	CHECK(h);
	if (!h)
		goto out;

	CHECK(kml_stats_read(set, 0) == 0);
	kml_stats_inc(set, 0);
	kml_stats_add(set, 0, 41);
	CHECK(kml_stats_read(set, 0) == 42);

	kml_stats_hist_add(set, 1, 0);
	kml_stats_hist_add(set, 1, 1);
	kml_stats_hist_add(set, 1, 1000);
	kml_stats_hist_add(set, 1, U64_MAX);
	CHECK(kml_stats_hist_read(set, 1, h) == 0);
	CHECK(h->count == 4);
	CHECK(h->sum == 1000);	/* 0 + 1 + 1000 + (2^64 - 1) wraps */
	CHECK(h->buckets[0] == 1 && h->buckets[1] == 1);
	CHECK(h->buckets[10] == 1 && h->buckets[64] == 1);
	/* The owner's hook runs with every reset of its set, and only then. */
	kml_stats_on_reset(set, count_reset, &resets);
	CHECK(resets == 0);
	kml_stats_reset(set);
	CHECK(resets == 1);
	CHECK(kml_stats_read(set, 0) == 0);
	CHECK(kml_stats_hist_read(set, 1, h) == 0 && h->count == 0 && h->sum == 0);
	kml_stats_inc(set, 0);
	CHECK(kml_stats_read(set, 0) == 1);
	/* a hot path's own slot: the same counter, added to inline */
	slot = kml_stats_counter(set, 0);
	CHECK(slot);
	if (slot) {
		this_cpu_add(*slot, 9);
		CHECK(kml_stats_read(set, 0) == 10);
		kml_stats_inc(set, 0);
		CHECK(kml_stats_read(set, 0) == 11);
	}
	kfree(h);
out:
	kml_stats_unregister(set);
}

static int __init kml_stats_apitest_init(void)
{
	check_register_errors();
	check_values();
	check_largest_sets();
	if (!failures && hold_demo) {
		static const struct kml_stats_desc d[] = { { "held", KML_STAT_COUNTER } };

		held = kml_stats_register("demo", d, ARRAY_SIZE(d));
		CHECK(!IS_ERR(held));
		if (IS_ERR(held))
			held = NULL;
	}
	if (failures) {
		kml_stats_unregister(big);
		pr_err("%d checks failed\n", failures);
		return -EINVAL;
	}
	pr_info("all checks passed\n");
	return 0;
}

static void __exit kml_stats_apitest_exit(void)
{
	kml_stats_unregister(held);
	kml_stats_unregister(big);
}

module_init(kml_stats_apitest_init);
module_exit(kml_stats_apitest_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: in-kernel test of the kml_stats API");
