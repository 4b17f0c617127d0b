// SPDX-License-Identifier: GPL-2.0
/*
 * kml_stats' exported API and a set's life: building, listing and freeing
 * a set, the per-CPU adds of its owner, its reads and resets. The stats
 * lab hands this file over complete; the registry it fills and the reading
 * side of the counters are the lab's file, kml_stats_main.c.
 */
#include <linux/err.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../include/kml_stats.h"
#include "kml_stats_logic.h"
#include "kml_stats_priv.h"

/*
 * __alloc_percpu() cannot hand out more than PCPU_MIN_UNIT_SIZE at once,
 * which bounds how many 64-bit slots one set may own. The API header
 * promises KML_STATS_MAX_SLOTS; the build checks the allocator agrees.
 */
static_assert(KML_STATS_MAX_SLOTS * sizeof(u64) <= PCPU_MIN_UNIT_SIZE);
#define KML_HIST_SLOTS		KML_STATS_HIST_SLOTS

struct kml_stats_set *kml_stats_find_locked(const char *name)
{
	struct kml_stats_set *set;

	lockdep_assert_held(&kml_stats_lock);
	list_for_each_entry(set, &kml_stats_sets, node)
		if (!strcmp(set->name, name))
			return set;
	return NULL;
}

void kml_stats_set_free(struct kml_stats_set *set)
{
	if (!set)
		return;
	free_percpu(set->slots);
	kvfree(set->base);
	kvfree(set);
}

/*
 * Validates @desc and builds a set from it, not yet listed: its owner may
 * fill it in before any reader sees it, and a failure has nothing to undo.
 */
struct kml_stats_set *kml_stats_set_alloc(const char *name,
					  const struct kml_stats_desc *desc,
					  unsigned int n)
{
	struct kml_stats_set *set;
	unsigned int i, j, nslots = 0;

	if (!name || !kml_stats_name_valid(name) || !desc || n == 0 ||
	    n > KML_STATS_MAX_SLOTS)
		return ERR_PTR(-EINVAL);
	for (i = 0; i < n; i++) {
		if (!desc[i].name || !kml_stats_name_valid(desc[i].name))
			return ERR_PTR(-EINVAL);
		if (desc[i].type == KML_STAT_COUNTER)
			nslots += 1;
		else if (desc[i].type == KML_STAT_HIST)
			nslots += KML_HIST_SLOTS;
		else
			return ERR_PTR(-EINVAL);
		if (nslots > KML_STATS_MAX_SLOTS)
			return ERR_PTR(-EINVAL);
	}

	/*
	 * A set of KML_STATS_MAX_SLOTS counters has 160 KiB of items and
	 * 32 KiB of baseline: kvzalloc() falls back to vmalloc rather than
	 * need physically contiguous pages (an order-6 allocation) that a
	 * fragmented machine may not have. Sets are created by modules
	 * (at load, or on a privileged request such as attaching a probe),
	 * not by unprivileged users, so plain GFP_KERNEL.
	 */
	set = kvzalloc(struct_size(set, items, n), GFP_KERNEL);
	if (!set)
		return ERR_PTR(-ENOMEM);
	set->n = n;
	strscpy(set->name, name, sizeof(set->name));
	set->nslots = nslots;
	set->slots = __alloc_percpu(nslots * sizeof(u64), sizeof(u64));
	set->base = kvcalloc(nslots, sizeof(u64), GFP_KERNEL);
	if (!set->slots || !set->base) {
		kml_stats_set_free(set);
		return ERR_PTR(-ENOMEM);
	}

	nslots = 0;
	for (i = 0; i < n; i++) {
		strscpy(set->items[i].name, desc[i].name,
			sizeof(set->items[i].name));
		set->items[i].type = desc[i].type;
		set->items[i].slot = nslots;
		nslots += desc[i].type == KML_STAT_HIST ? KML_HIST_SLOTS : 1;
		/* Duplicates would make two lines a parser cannot tell apart. */
		for (j = 0; j < i; j++) {
			if (!strcmp(set->items[j].name, set->items[i].name)) {
				kml_stats_set_free(set);
				return ERR_PTR(-EINVAL);
			}
		}
	}
	return set;
}

/*
 * Lists @set in the place of @old, which has the same name and leaves the
 * list in the same step, so a reader sees one or the other, never both
 * and never neither; with no @old, at the end, unless the name is taken.
 */
int kml_stats_list_locked(struct kml_stats_set *set, struct kml_stats_set *old)
{
	lockdep_assert_held(&kml_stats_lock);
	if (old) {
		list_replace(&old->node, &set->node);
		return 0;
	}
	if (kml_stats_find_locked(set->name))
		return -EEXIST;
	list_add_tail(&set->node, &kml_stats_sets);
	return 0;
}

/**
 * kml_stats_register() - publish a named set of counters and histograms
 * @name: set name, unique among registered sets
 * @desc: the statistics, in the order their ids are used; names are copied
 * @n: number of entries in @desc
 *
 * Context: process context, may sleep.
 * Return: the new set, or ERR_PTR(-EINVAL) for a bad name, an empty or
 * oversized set or duplicate statistic names, ERR_PTR(-EEXIST) if @name is
 * taken, ERR_PTR(-ENOMEM).
 */
struct kml_stats_set *kml_stats_register(const char *name,
					 const struct kml_stats_desc *desc,
					 unsigned int n)
{
	struct kml_stats_set *set = kml_stats_set_alloc(name, desc, n);
	int ret;

	if (IS_ERR(set))
		return set;
	mutex_lock(&kml_stats_lock);
	ret = kml_stats_list_locked(set, NULL);
	mutex_unlock(&kml_stats_lock);
	if (ret) {
		kml_stats_set_free(set);
		return ERR_PTR(ret);
	}
	return set;
}
EXPORT_SYMBOL_GPL(kml_stats_register);

/**
 * kml_stats_unregister() - withdraw a set and free it
 * @set: from kml_stats_register(); NULL and error pointers are ignored
 *
 * The caller must have stopped updating @set. Readers in the middle of
 * the stats file are safe: they hold no reference to a set between two
 * read() calls, and kml_stats_lock keeps it alive during one.
 *
 * Context: process context, may sleep.
 */
void kml_stats_unregister(struct kml_stats_set *set)
{
	if (IS_ERR_OR_NULL(set))
		return;
	mutex_lock(&kml_stats_lock);
	list_del(&set->node);
	mutex_unlock(&kml_stats_lock);
	kml_stats_set_free(set);
}
EXPORT_SYMBOL_GPL(kml_stats_unregister);

static bool kml_item_ok(struct kml_stats_set *set, unsigned int id,
			enum kml_stats_type type)
{
	/* A wrong id is a bug in the caller: say so once, never corrupt. */
	return !WARN_ON_ONCE(id >= set->n || set->items[id].type != type);
}

/*
 * Counters and histogram sums alike: one per-CPU add, IRQ-safe. (gcov
 * sees the arms of this_cpu_add()'s switch on the operand's size and
 * value, which the compiler decides: only one exists in the object.)
 */
static void kml_slot_add(struct kml_stats_set *set, unsigned int slot, u64 delta)
{
	this_cpu_add(set->slots[slot], delta); /* LCOV_EXCL_BR_LINE: compile-time switch */
}

/**
 * kml_stats_add() - add to a counter
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER in the set's descriptor array
 * @delta: amount to add
 *
 * Context: any context, including hard IRQ; never sleeps or locks.
 */
void kml_stats_add(struct kml_stats_set *set, unsigned int id, u64 delta)
{
	if (kml_item_ok(set, id, KML_STAT_COUNTER))
		kml_slot_add(set, set->items[id].slot, delta);
}
EXPORT_SYMBOL_GPL(kml_stats_add);

/**
 * kml_stats_counter() - a counter's per-CPU slot, for a hot path
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER in the set's descriptor array
 *
 * For callers that count on every packet or call: they look the slot up
 * once and add with this_cpu_add(*slot, delta), inline, instead of a
 * call to kml_stats_add() and its checks each time. The slot is valid
 * until kml_stats_unregister(@set); a reset zeroes it as it zeroes the
 * others.
 *
 * Return: the slot, or NULL for an @id that is no counter of @set (a bug
 * in the caller, warned about once).
 */
u64 __percpu *kml_stats_counter(struct kml_stats_set *set, unsigned int id)
{
	if (!kml_item_ok(set, id, KML_STAT_COUNTER))
		return NULL;
	return set->slots + set->items[id].slot;
}
EXPORT_SYMBOL_GPL(kml_stats_counter);

/**
 * kml_stats_hist_add() - record a value in a log2 histogram
 * @set: the set
 * @id: index of a %KML_STAT_HIST in the set's descriptor array
 * @val: the value
 *
 * Context: any context, including hard IRQ; never sleeps or locks.
 */
void kml_stats_hist_add(struct kml_stats_set *set, unsigned int id, u64 val)
{
	unsigned int slot;

	if (!kml_item_ok(set, id, KML_STAT_HIST))
		return;
	slot = set->items[id].slot;
	this_cpu_inc(set->slots[slot + kml_log2_bucket(val)]);
	kml_slot_add(set, slot + KML_STATS_HIST_BUCKETS, val);
}
EXPORT_SYMBOL_GPL(kml_stats_hist_add);

/**
 * kml_stats_read() - current value of a counter, since the last reset
 * @set: the set
 * @id: index of a %KML_STAT_COUNTER
 *
 * Return: the sum over all CPUs; 0 for a bad @id.
 */
u64 kml_stats_read(struct kml_stats_set *set, unsigned int id)
{
	if (!kml_item_ok(set, id, KML_STAT_COUNTER))
		return 0;
	return kml_stats_slot_sum(set, set->items[id].slot);
}
EXPORT_SYMBOL_GPL(kml_stats_read);

/**
 * kml_stats_hist_read() - snapshot of a histogram, since the last reset
 * @set: the set
 * @id: index of a %KML_STAT_HIST
 * @out: filled in
 *
 * Buckets are summed one at a time while writers may be running, so the
 * snapshot is close to, not exactly, one instant.
 *
 * Return: 0, or -EINVAL for a bad @id.
 */
int kml_stats_hist_read(struct kml_stats_set *set, unsigned int id,
			struct kml_stats_hist *out)
{
	if (!kml_item_ok(set, id, KML_STAT_HIST))
		return -EINVAL;
	kml_stats_hist_fill(set, id, out);
	return 0;
}
EXPORT_SYMBOL_GPL(kml_stats_hist_read);

/**
 * kml_stats_without_resets() - read several values on one side of a reset
 * @fn: called with resets held off
 * @data: for @fn
 *
 * A value read with kml_stats_read() or kml_stats_hist_read() is the sum
 * over CPUs minus the baseline the last reset took: a reset that lands
 * between the two would make it wrap below zero, and one between two
 * reads would mix values from before and after it. @fn runs where no
 * reset can land, and so does every set's on_reset hook's state.
 *
 * Context: process context; @fn must not call back into kml_stats'
 * registration or reset functions.
 */
void kml_stats_without_resets(void (*fn)(void *data), void *data)
{
	mutex_lock(&kml_stats_lock);
	fn(data);
	mutex_unlock(&kml_stats_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_without_resets);

/**
 * kml_stats_reset() - zero one set, as "reset <set>" on the control file
 * @set: the set
 *
 * Context: process context, may sleep.
 */
void kml_stats_reset(struct kml_stats_set *set)
{
	mutex_lock(&kml_stats_lock);
	kml_stats_reset_locked(set);
	mutex_unlock(&kml_stats_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_reset);

/**
 * kml_stats_on_reset() - have the owner reset its own state with the set
 * @set: the set
 * @fn: called after each reset of @set (control file or kml_stats_reset()),
 *	with kml_stats' lock held: it must not sleep long, nor call back
 *	into kml_stats, nor take a lock its owner holds around calls into
 *	kml_stats
 * @data: passed to @fn
 *
 * For owners that keep statistics beside the set (a minimum, a maximum)
 * which a reset must clear in the same operation.
 *
 * Context: process context, may sleep.
 */
void kml_stats_on_reset(struct kml_stats_set *set, void (*fn)(void *data),
			void *data)
{
	mutex_lock(&kml_stats_lock);
	set->on_reset = fn;
	set->on_reset_data = data;
	mutex_unlock(&kml_stats_lock);
}
EXPORT_SYMBOL_GPL(kml_stats_on_reset);
