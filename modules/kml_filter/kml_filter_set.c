// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's rule sets as memory: allocating one, freeing one, and the
 * limit on what one network namespace's sets may take at once. The lab
 * hands this file over complete; kml_filter_main.c publishes and reads
 * the sets it makes.
 *
 * A set's counters are an array per possible CPU, each sized and placed
 * by hand (one __alloc_percpu() stops at 32 KiB, 2048 rules), and all of
 * a set's memory is charged to whoever caused it (GFP_KERNEL_ACCOUNT)
 * and reserved against net_mem_max before it is allocated, so a
 * namespace's root cannot make the kernel hold more than the
 * administrator allows.
 */
#include <linux/cpumask.h>
#include <linux/lockdep.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "kml_filter.h"
#include "kml_filter_logic.h"

/*
 * What one namespace's sets may take at once: the published one and any
 * being built, so an update needs room for the old set and the new. All
 * of it is charged to the caller's memory cgroup too (GFP_KERNEL_ACCOUNT).
 */
static unsigned long net_mem_max = 64UL << 20;
module_param(net_mem_max, ulong, 0644);
MODULE_PARM_DESC(net_mem_max,
		 "Bytes one network namespace's rule sets may take at once, the current set and one being built for an update (default 64 MiB)");

unsigned long kml_filter_mem_limit(void)
{
	return READ_ONCE(net_mem_max);
}

void kml_filter_set_free(struct kml_filter_set *set)
{
	int cpu;

	if (!set)
		return;
	if (set->ctr)
		for_each_possible_cpu(cpu)
			kvfree(set->ctr[cpu]);
	kfree(set->ctr);
	kvfree(set->base);
	kvfree(set->logst);
	kvfree(set->ixmem);
	kvfree(set->rules);
	kfree(set);
}

/* What a set of @nrules takes: kml_filter_set_alloc() asks for this much. */
u64 kml_filter_bytes(u32 nrules)
{
	return kml_filter_set_bytes(nrules, nr_cpu_ids);
}

/* Room for @nrules; the caller fills in the rules and calls _build(). */
struct kml_filter_set *kml_filter_set_alloc(u32 nrules)
{
	size_t ctr_bytes = kml_filter_ctr_bytes(nrules);
	struct kml_filter_set *set;
	u64 asked, want;
	bool exact, wrong;
	int cpu;

	/* kml_filter_set_bytes() counts with these (a 64-bit kernel's) */
	BUILD_BUG_ON(sizeof(struct kml_filter_ctr) != KML_FILTER_CTR_SIZE);
	BUILD_BUG_ON(sizeof(struct kml_filter_count) != KML_FILTER_CTR_SIZE);
	BUILD_BUG_ON(sizeof(struct kml_filter_logst) != KML_FILTER_LOGST_SIZE);
	BUILD_BUG_ON(IS_ENABLED(CONFIG_64BIT) &&
		     (sizeof(*set) != KML_FILTER_SET_SIZE ||
		      sizeof(*set->ctr) != KML_FILTER_PTR_SIZE));
	set = kzalloc(sizeof(*set), GFP_KERNEL_ACCOUNT);
	if (!set)
		return NULL;
	set->nrules = nrules;
	set->rules = kvcalloc(max(nrules, 1U), sizeof(*set->rules),
			      GFP_KERNEL_ACCOUNT);
	set->ixmem = kvmalloc(kml_filter_index_mem(nrules), GFP_KERNEL_ACCOUNT);
	set->base = kvcalloc(nrules + KML_FILTER_POLICY_SLOTS, sizeof(*set->base),
			     GFP_KERNEL_ACCOUNT);
	set->logst = kvcalloc(max(nrules, 1U), sizeof(*set->logst),
			      GFP_KERNEL_ACCOUNT);
	set->ctr = kcalloc(nr_cpu_ids, sizeof(*set->ctr), GFP_KERNEL_ACCOUNT);
	if (!set->rules || !set->ixmem || !set->base || !set->logst || !set->ctr)
		goto fail;
	asked = sizeof(*set) + max(nrules, 1U) * sizeof(*set->rules) +
		max(nrules, 1U) * sizeof(*set->logst) +
		kml_filter_index_mem(nrules) +
		(nrules + KML_FILTER_POLICY_SLOTS) * sizeof(*set->base) +
		nr_cpu_ids * sizeof(*set->ctr);
	/*
	 * Rounded to KML_FILTER_CTR_ALIGN, a cache line on x86 and arm64:
	 * no two CPUs' counters share one.
	 */
	for_each_possible_cpu(cpu) {
		set->ctr[cpu] = kvzalloc_node(ctr_bytes, GFP_KERNEL_ACCOUNT,
					      cpu_to_node(cpu));
		if (!set->ctr[cpu])
			goto fail;
		asked += ctr_bytes;
	}
	/*
	 * The limit counts what is asked for here: never less, and exactly
	 * on a 64-bit kernel whose possible CPUs are 0..n-1.
	 */
	want = kml_filter_bytes(nrules);
	exact = IS_ENABLED(CONFIG_64BIT) && num_possible_cpus() == nr_cpu_ids;
	wrong = asked > want || (exact && asked != want); /* LCOV_EXCL_BR_LINE: never true */
	WARN_ON_ONCE(wrong); /* LCOV_EXCL_BR_LINE: a check that must never fire */
	return set;
fail:
	kml_filter_set_free(set);
	return NULL;
}

void kml_filter_set_build(struct kml_filter_set *set, u32 policy,
			  u32 policy_fwd)
{
	set->policy = policy;
	set->policy_fwd = policy_fwd;
	kml_filter_index_build(&set->ix, set->rules, set->nrules, set->ixmem);
}

u32 kml_filter_old_index(enum kml_filter_carry carry, u32 at, u32 i)
{
	switch (carry) {
	case KML_CARRY_ALL:
		return i;
	case KML_CARRY_INSERT:
		return i < at ? i : i == at ? KML_FILTER_NOMATCH : i - 1;
	case KML_CARRY_DELETE:
		return i < at ? i : i + 1;
	default:
		return KML_FILTER_NOMATCH;
	}
}

void kml_filter_log_seed(struct kml_filter_net *fn,
			 struct kml_filter_set *set,
			 enum kml_filter_carry carry, u32 at)
{
	struct kml_filter_set *cur;
	u32 i, from;

	cur = rcu_dereference_protected(fn->set, lockdep_is_held(&fn->lock));
	for (i = 0; i < set->nrules; i++) {
		from = kml_filter_old_index(carry, at, i);
		if (from != KML_FILTER_NOMATCH)
			atomic64_set(&set->logst[i].tat,
				     atomic64_read(&cur->logst[from].tat));
	}
}

/*
 * Reserve room for a new set of @nrules beside the current one and any
 * others being built: -ENOSPC if net_mem_max has none. An empty set is
 * always let through (it is tiny): a namespace over a lowered limit can
 * still flush its rules. kml_filter_unreserve() gives the room back once
 * the set is published or freed.
 */
int kml_filter_reserve(struct kml_filter_net *fn, u32 nrules)
{
	unsigned long limit = kml_filter_mem_limit();
	u64 want = kml_filter_bytes(nrules);

	lockdep_assert_held(&fn->lock);
	/* a closed socket's replace holds room no longer */
	kml_filter_txn_gone(fn);
	if (nrules &&
	    kml_filter_bytes(kml_filter_current(fn)->nrules) + fn->building +
	    want > limit)
		return -ENOSPC;
	fn->building += want;
	return 0;
}

void kml_filter_unreserve(struct kml_filter_net *fn, u32 nrules)
{
	lockdep_assert_held(&fn->lock);
	fn->building -= kml_filter_bytes(nrules);
}
