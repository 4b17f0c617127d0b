// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's ioctl interface, /dev/kml_filter, and the changes both
 * interfaces make: a replace, an insert or delete of one rule, a flush,
 * the policies, and the listing with counters. The lab hands this file
 * over complete (the sensor lab teaches the ioctl itself).
 *
 * The device acts on the network namespace of whoever opened it, with
 * CAP_NET_ADMIN checked against the user namespace that owns that
 * network namespace (kml_filter_capable()), so a container's root
 * manages its own rules and nobody else's. Its structs are extensible
 * (kml_ioctl.h): the size in the ioctl number is the caller's struct
 * size, so a later version can append fields without new numbers.
 *
 * Every change builds a new set beside the current one and publishes it
 * with kml_filter_commit(); user memory is copied and checked before
 * the namespace's lock is taken, so a fault or a bad rule changes
 * nothing.
 */
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nospec.h>
#include <linux/nsproxy.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "../include/kml_ioctl.h"
#include "../include/kml_stats.h"
#include "kml_filter.h"
#include "kml_filter_logic.h"

static const struct kml_stats_desc kml_filter_stats_desc[] = {
	[ST_PACKETS_IN]		= { "packets_in", KML_STAT_COUNTER },
	[ST_PACKETS_OUT]	= { "packets_out", KML_STAT_COUNTER },
	[ST_ACCEPTED]		= { "accepted", KML_STAT_COUNTER },
	[ST_DROPPED]		= { "dropped", KML_STAT_COUNTER },
	[ST_UPDATES]		= { "updates", KML_STAT_COUNTER },
	[ST_REJECTED]		= { "rejected_updates", KML_STAT_COUNTER },
	[ST_MALFORMED]		= { "malformed", KML_STAT_COUNTER },
	[ST_FRAGMENTS_PASSED]	= { "fragments_passed", KML_STAT_COUNTER },
	[ST_PACKETS_FWD]	= { "packets_fwd", KML_STAT_COUNTER },
};

static struct kml_stats_set *kml_filter_stats;

u64 __percpu *kml_filter_slot[KML_FILTER_NR_STATS];

int kml_filter_stats_init(void)
{
	unsigned int i;

	BUILD_BUG_ON(ARRAY_SIZE(kml_filter_stats_desc) != KML_FILTER_NR_STATS);
	kml_filter_stats = kml_stats_register("kml_filter", kml_filter_stats_desc,
					      ARRAY_SIZE(kml_filter_stats_desc));
	if (IS_ERR(kml_filter_stats))
		return PTR_ERR(kml_filter_stats);
	for (i = 0; i < ARRAY_SIZE(kml_filter_slot); i++) {
		kml_filter_slot[i] = kml_stats_counter(kml_filter_stats, i);
		/* only a table above with a non-counter entry: a bug, said at load */
		if (!kml_filter_slot[i]) { /* LCOV_EXCL_BR_LINE: every entry is a counter */
			kml_stats_unregister(kml_filter_stats);
			return -EINVAL;
		}
	}
	return 0;
}

void kml_filter_stats_exit(void)
{
	kml_stats_unregister(kml_filter_stats);
}

/*
 * Publish @set as kml_filter_commit() does, holding conntrack for the
 * namespace exactly while its set has a rule with connection states:
 * taken before such a set is published (if that fails, nothing
 * changes), let go once the last set that needed it is gone.
 */
int kml_filter_publish(struct kml_filter_net *fn,
		       struct kml_filter_set *set,
		       enum kml_filter_carry carry, u32 at)
{
	int ret;

	lockdep_assert_held(&fn->lock);
	if (set->ix.ct && !fn->ct_held) {
		ret = kml_filter_ct_get(fn->net);
		if (ret)
			return ret;
		fn->ct_held = true;
	}
	kml_filter_commit(fn, set, carry, at);
	if (!set->ix.ct && fn->ct_held) {
		kml_filter_ct_put(fn->net);
		fn->ct_held = false;
	}
	return 0;
}

static int kml_filter_check_rules(const struct kml_filter_rule *rules, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (kml_filter_rule_check(&rules[i], NULL))
			return -EINVAL;
	return 0;
}

static bool kml_filter_policy_ok(u32 policy)
{
	return policy == KML_FILTER_ACCEPT || policy == KML_FILTER_DROP;
}

void kml_filter_get_state(struct kml_filter_net *fn,
			  struct kml_filter_state *st)
{
	struct kml_filter_count pc, fc;
	struct kml_filter_set *set;

	memset(st, 0, sizeof(*st));
	st->info.abi_version = KML_FILTER_ABI_VERSION;
	st->info.max_rules = KML_FILTER_MAX_RULES;
	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	kml_filter_log_gone(&fn->log);
	set = kml_filter_current(fn);
	st->info.nrules = set->nrules;
	st->info.policy = set->policy;
	st->policy_fwd = set->policy_fwd;
	st->info.generation = fn->generation;
	pc = kml_filter_sum(set, kml_filter_policy_slot(set->nrules,
							KML_FILTER_DIR_IN));
	fc = kml_filter_sum(set, kml_filter_policy_slot(set->nrules,
							KML_FILTER_DIR_FWD));
	st->mem_bytes = kml_filter_bytes(set->nrules) + fn->building;
	mutex_unlock(&fn->lock);
	st->info.policy_packets = pc.packets;
	st->info.policy_bytes = pc.bytes;
	st->policy_fwd_packets = fc.packets;
	st->policy_fwd_bytes = fc.bytes;
	st->mem_limit = kml_filter_mem_limit();
	st->log_attached = !!rcu_access_pointer(fn->log.sink);
	st->log_records = atomic64_read(&fn->log.records);
	st->log_suppressed = atomic64_read(&fn->log.suppressed);
	st->log_lost = atomic64_read(&fn->log.lost);
}

/*
 * Output only, but for @flags: the rest of the caller's struct is not read,
 * so its old contents cannot make the call fail.
 */
static int kml_filter_get_info(struct kml_filter_net *fn,
			       struct kml_filter_info __user *uinfo, size_t usize)
{
	struct kml_filter_state st;
	u32 flags;

	if (usize < KML_FILTER_INFO_SIZE_VER0)
		return -EINVAL;
	if (get_user(flags, &uinfo->flags))
		return -EFAULT;
	if (flags)
		return -EINVAL;
	kml_filter_get_state(fn, &st);
	return kml_copy_struct_out(uinfo, usize, &st.info, sizeof(st.info));
}

static int kml_filter_replace(struct kml_filter_net *fn,
			      const struct kml_filter_replace __user *ur,
			      size_t usize)
{
	struct kml_filter_replace r;
	struct kml_filter_set *set;
	int ret;

	ret = kml_copy_struct_in(&r, sizeof(r), ur, usize,
				 KML_FILTER_REPLACE_SIZE_VER0);
	if (ret)
		return ret;
	if (r.flags || r.reserved || r.count > KML_FILTER_MAX_RULES ||
	    (r.policy && !kml_filter_policy_ok(r.policy)))
		return -EINVAL;
	mutex_lock(&fn->lock);
	ret = kml_filter_reserve(fn, r.count);
	mutex_unlock(&fn->lock);
	if (ret)
		return ret;
	set = kml_filter_set_alloc(r.count);
	if (!set) {
		ret = -ENOMEM;
		goto fail;
	}
	/* Everything is copied and checked before the lock: nothing changes on error. */
	if (copy_from_user(set->rules, u64_to_user_ptr(r.rules),
			   (size_t)r.count * sizeof(*set->rules))) {
		ret = -EFAULT;
		goto fail;
	}
	ret = kml_filter_check_rules(set->rules, r.count);
	if (ret)
		goto fail;
	mutex_lock(&fn->lock);
	kml_filter_set_build(set, r.policy ?: kml_filter_current(fn)->policy,
			     kml_filter_current(fn)->policy_fwd);
	ret = kml_filter_publish(fn, set, KML_CARRY_NONE, 0);
	kml_filter_unreserve(fn, r.count);
	mutex_unlock(&fn->lock);
	if (ret)
		kml_filter_set_free(set);
	return ret;
fail:
	kml_filter_set_free(set);
	mutex_lock(&fn->lock);
	kml_filter_unreserve(fn, r.count);
	mutex_unlock(&fn->lock);
	return ret;
}

/*
 * Copy of the current set with one rule inserted at @at (@rule) or
 * deleted at @at (@rule NULL), and/or other policies (0: the same).
 */
static int kml_filter_edit(struct kml_filter_net *fn,
			   const struct kml_filter_rule *rule, u32 at,
			   bool del, u32 policy, u32 policy_fwd)
{
	struct kml_filter_set *old = kml_filter_current(fn), *set;
	u32 n = old->nrules;
	enum kml_filter_carry carry = KML_CARRY_ALL;
	int ret;

	if (rule) {
		if (n >= KML_FILTER_MAX_RULES)
			return -ENOSPC;
		at = min(at, n);
		carry = KML_CARRY_INSERT;
		n++;
	} else if (del) {
		carry = KML_CARRY_DELETE;
		n--;
	}
	ret = kml_filter_reserve(fn, n);
	if (ret)
		return ret;
	set = kml_filter_set_alloc(n);
	if (!set) {
		kml_filter_unreserve(fn, n);
		return -ENOMEM;
	}
	if (carry == KML_CARRY_ALL) {
		memcpy(set->rules, old->rules, n * sizeof(*rule));
	} else {
		memcpy(set->rules, old->rules, at * sizeof(*rule));
		if (rule)
			set->rules[at] = *rule;
		memcpy(set->rules + at + !!rule, old->rules + at + del,
		       (n - at - !!rule) * sizeof(*rule));
	}
	kml_filter_set_build(set, policy ?: old->policy,
			     policy_fwd ?: old->policy_fwd);
	ret = kml_filter_publish(fn, set, carry, at);
	kml_filter_unreserve(fn, n);
	if (ret)
		kml_filter_set_free(set);
	return ret;
}

static int kml_filter_add(struct kml_filter_net *fn,
			  const struct kml_filter_add __user *ua, size_t usize)
{
	struct kml_filter_add a;
	int ret;

	ret = kml_copy_struct_in(&a, sizeof(a), ua, usize,
				 KML_FILTER_ADD_SIZE_VER0);
	if (ret)
		return ret;
	if (a.flags)
		return -EINVAL;
	return kml_filter_insert(fn, &a.rule, a.position);
}

int kml_filter_insert(struct kml_filter_net *fn,
		      const struct kml_filter_rule *rule, u32 position)
{
	int ret;

	if (kml_filter_rule_check(rule, NULL))
		return -EINVAL;
	mutex_lock(&fn->lock);
	ret = kml_filter_edit(fn, rule, position, false, 0, 0);
	mutex_unlock(&fn->lock);
	return ret;
}

static int kml_filter_del(struct kml_filter_net *fn,
			  const struct kml_filter_del __user *ud, size_t usize)
{
	static const struct kml_filter_rule zero;
	struct kml_filter_del d;
	int ret;

	ret = kml_copy_struct_in(&d, sizeof(d), ud, usize,
				 KML_FILTER_DEL_SIZE_VER0);
	if (ret)
		return ret;
	if (d.reserved[0] || d.reserved[1] || (d.flags & ~KML_FILTER_DEL_MATCH))
		return -EINVAL;
	if (d.flags ? !!d.index : !!memcmp(&d.rule, &zero, sizeof(zero)))
		return -EINVAL;
	return kml_filter_delete(fn, d.flags ? &d.rule : NULL, d.index);
}

/* Delete the first rule equal to @match or, with @match NULL, rule @index. */
int kml_filter_delete(struct kml_filter_net *fn,
		      const struct kml_filter_rule *match, u32 index)
{
	struct kml_filter_set *set;
	int ret = -ENOENT;
	u32 i = index;

	if (match && kml_filter_rule_check(match, NULL))
		return -EINVAL;
	mutex_lock(&fn->lock);
	set = kml_filter_current(fn);
	if (match)
		for (i = 0; i < set->nrules; i++)
			if (!memcmp(&set->rules[i], match, sizeof(*match)))
				break;
	if (i < set->nrules)
		ret = kml_filter_edit(fn, NULL, i, true, 0, 0);
	mutex_unlock(&fn->lock);
	return ret;
}

int kml_filter_flush(struct kml_filter_net *fn)
{
	struct kml_filter_set *set;
	int ret;

	mutex_lock(&fn->lock);
	ret = kml_filter_reserve(fn, 0);
	mutex_unlock(&fn->lock);
	if (ret)
		return ret;
	set = kml_filter_set_alloc(0);
	mutex_lock(&fn->lock);
	if (set) {
		/* no rule, no conntrack: cannot fail */
		kml_filter_set_build(set, kml_filter_current(fn)->policy,
				     kml_filter_current(fn)->policy_fwd);
		kml_filter_publish(fn, set, KML_CARRY_NONE, 0);
	}
	kml_filter_unreserve(fn, 0);
	mutex_unlock(&fn->lock);
	return set ? 0 : -ENOMEM;
}

/* The in/out policy, the forward one or both; 0 keeps one as it is. */
int kml_filter_set_policy(struct kml_filter_net *fn, u32 policy,
			  u32 policy_fwd)
{
	int ret;

	if ((!policy && !policy_fwd) ||
	    (policy && !kml_filter_policy_ok(policy)) ||
	    (policy_fwd && !kml_filter_policy_ok(policy_fwd)))
		return -EINVAL;
	mutex_lock(&fn->lock);
	ret = kml_filter_edit(fn, NULL, 0, false, policy, policy_fwd);
	mutex_unlock(&fn->lock);
	return ret;
}

static int kml_filter_ioc_policy(struct kml_filter_net *fn,
				 const u32 __user *up)
{
	u32 policy;

	if (get_user(policy, up))
		return -EFAULT;
	/* ABI 2: the in and out policy; 0 is no policy, not "keep" */
	if (!kml_filter_policy_ok(policy))
		return -EINVAL;
	return kml_filter_set_policy(fn, policy, 0);
}

u32 kml_filter_walk(struct kml_filter_net *fn, u32 from, int cpu,
		    int (*emit)(void *arg, u32 index,
				const struct kml_filter_entry *e, u64 generation),
		    void *arg, u32 *nrules, u64 *generation)
{
	struct kml_filter_entry e;
	struct kml_filter_set *set;
	u32 i;

	/* The lock keeps one generation for the whole walk. */
	mutex_lock(&fn->lock);
	set = kml_filter_current(fn);
	for (i = from; i < set->nrules; i++) {
		e.rule = set->rules[i];
		if (cpu < 0) {
			struct kml_filter_count c = kml_filter_sum(set, i);

			e.packets = c.packets;
			e.bytes = c.bytes;
		} else {
			e.packets = local64_read(&set->ctr[cpu][i].packets);
			e.bytes = local64_read(&set->ctr[cpu][i].bytes);
		}
		if (emit(arg, i, &e, fn->generation))
			break;
	}
	*nrules = set->nrules;
	*generation = fn->generation;
	mutex_unlock(&fn->lock);
	return i;
}

struct kml_filter_list_ctx {
	struct kml_filter_entry *e;	/* a kernel copy, @room entries */
	u32 room;
};

static int kml_filter_list_emit(void *arg, u32 i,
				const struct kml_filter_entry *e, u64 generation)
{
	struct kml_filter_list_ctx *ctx = arg;

	if (i >= ctx->room)
		return 1;
	ctx->e[i] = *e;
	return 0;
}

static u32 kml_filter_nrules(struct kml_filter_net *fn)
{
	u32 n;

	rcu_read_lock();
	n = rcu_dereference(fn->set)->nrules;
	rcu_read_unlock();
	return n;
}

static int kml_filter_list(struct kml_filter_net *fn,
			   struct kml_filter_list __user *ul, size_t usize)
{
	struct kml_filter_list_ctx ctx = { };
	struct kml_filter_list l;
	int ret, cpu = -1;
	u32 want;

	ret = kml_copy_struct_in(&l, sizeof(l), ul, usize,
				 KML_FILTER_LIST_SIZE_VER0);
	if (ret)
		return ret;
	if ((l.flags & ~KML_FILTER_LIST_CPU) || l.reserved)
		return -EINVAL;
	if (l.flags & KML_FILTER_LIST_CPU) {
		/* every possible CPU has counters: an offline one keeps its */
		if (l.cpu >= nr_cpu_ids || !cpu_possible(l.cpu))
			return -EINVAL;
		/* it indexes an array: not even speculatively past its end */
		cpu = array_index_nospec(l.cpu, nr_cpu_ids);
	} else if (l.cpu) {
		return -EINVAL;
	}
	/*
	 * Copied into a kernel buffer under the lock, and out to the caller
	 * after it: user memory may take for ever to fault in (a FUSE or
	 * userfaultfd mapping), and every update of the namespace waits on
	 * that lock. Sized by the set as it is now; if it grew before the
	 * walk took the lock, again, so that the caller gets all it has room
	 * for, as one snapshot.
	 */
	want = l.count;
	for (;;) {
		ctx.room = min(want, kml_filter_nrules(fn));
		if (ctx.room) {
			ctx.e = kvmalloc_array(ctx.room, sizeof(*ctx.e),
					       GFP_KERNEL_ACCOUNT);
			if (!ctx.e)
				return -ENOMEM;
		}
		kml_filter_walk(fn, 0, cpu, kml_filter_list_emit, &ctx,
				&l.count, &l.generation);
		if (l.count <= ctx.room || ctx.room == want)
			break;
		kvfree(ctx.e);
		ctx.e = NULL;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	if (copy_to_user(u64_to_user_ptr(l.entries), ctx.e,
			 min(ctx.room, l.count) * sizeof(*ctx.e)))
		ret = -EFAULT;
	kvfree(ctx.e);
	if (ret)
		return ret;
	return kml_copy_struct_out(ul, usize, &l, sizeof(l));
}

/*
 * The published command @cmd stands for, or 0 if it is none of ours. The
 * struct commands match whatever size their number carries (the caller's
 * struct size, see kml_ioctl.h); FLUSH and SET_POLICY, which take no
 * struct, only their exact numbers. Everything after this switches on
 * the published numbers only.
 */
static unsigned int kml_filter_canonical(unsigned int cmd)
{
	switch (KML_IOC_NOSIZE(cmd)) {
	case KML_IOC_NOSIZE(KML_FILTER_IOC_GET_INFO):
		return KML_FILTER_IOC_GET_INFO;
	case KML_IOC_NOSIZE(KML_FILTER_IOC_REPLACE):
		return KML_FILTER_IOC_REPLACE;
	case KML_IOC_NOSIZE(KML_FILTER_IOC_ADD):
		return KML_FILTER_IOC_ADD;
	case KML_IOC_NOSIZE(KML_FILTER_IOC_DEL):
		return KML_FILTER_IOC_DEL;
	case KML_IOC_NOSIZE(KML_FILTER_IOC_LIST):
		return KML_FILTER_IOC_LIST;
	}
	if (cmd == KML_FILTER_IOC_FLUSH || cmd == KML_FILTER_IOC_SET_POLICY)
		return cmd;
	return 0;
}

/* A refused change, from either interface. */
void kml_filter_rejected(void)
{
	kml_filter_count(ST_REJECTED, 1);
}

/* A command that needs CAP_NET_ADMIN, once the caller has it. */
static long kml_filter_command(struct kml_filter_net *fn, unsigned int cmd,
			       void __user *uarg, size_t usize)
{
	switch (cmd) {
	case KML_FILTER_IOC_LIST:
		return kml_filter_list(fn, uarg, usize);
	case KML_FILTER_IOC_REPLACE:
		return kml_filter_replace(fn, uarg, usize);
	case KML_FILTER_IOC_ADD:
		return kml_filter_add(fn, uarg, usize);
	case KML_FILTER_IOC_DEL:
		return kml_filter_del(fn, uarg, usize);
	case KML_FILTER_IOC_FLUSH:
		return kml_filter_flush(fn);
	default:
		return kml_filter_ioc_policy(fn, uarg);
	}
}

static long kml_filter_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct kml_filter_net *fn = kml_filter_pernet(file->private_data);
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	long ret;

	cmd = kml_filter_canonical(cmd);
	switch (cmd) {
	case KML_FILTER_IOC_GET_INFO:
		return kml_filter_get_info(fn, uarg, usize);
	case KML_FILTER_IOC_REPLACE:
	case KML_FILTER_IOC_ADD:
	case KML_FILTER_IOC_DEL:
	case KML_FILTER_IOC_FLUSH:
	case KML_FILTER_IOC_SET_POLICY:
	case KML_FILTER_IOC_LIST:
		break;
	default:
		/* Not ours (another magic, number or direction): do nothing. */
		return -ENOTTY;
	}
	ret = kml_filter_capable(file) ?
	      kml_filter_command(fn, cmd, uarg, usize) : -EPERM;
	if (ret)
		kml_filter_rejected();
	return ret;
}

static int kml_filter_open(struct inode *inode, struct file *file)
{
	/* Like a socket: the file belongs to the opener's namespace. */
	file->private_data = get_net(current->nsproxy->net_ns);
	return 0;
}

static int kml_filter_release(struct inode *inode, struct file *file)
{
	put_net(file->private_data);
	return 0;
}

static const struct file_operations kml_filter_fops = {
	.owner		= THIS_MODULE,
	.open		= kml_filter_open,
	.release	= kml_filter_release,
	.unlocked_ioctl	= kml_filter_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice kml_filter_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kml_filter",
	.fops	= &kml_filter_fops,
	/* Everyone may open; each command checks CAP_NET_ADMIN itself. */
	.mode	= 0666,
};

int kml_filter_dev_init(void)
{
	return misc_register(&kml_filter_misc);
}

void kml_filter_dev_exit(void)
{
	/* Open files pin the module (.owner), so no ioctl is running. */
	misc_deregister(&kml_filter_misc);
}
