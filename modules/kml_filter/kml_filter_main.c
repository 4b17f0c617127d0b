// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter - a netfilter-hook packet filter, per network namespace.
 *
 * The mechanism taught here is the netfilter hook: a function the IP
 * stack calls for every packet at a fixed point of its path (here
 * LOCAL_IN, packets for this host, LOCAL_OUT, packets it sends, and
 * FORWARD, packets it routes from one interface to another, for IPv4 and
 * IPv6), which returns a verdict. One function serves every hook; which
 * one called it (state->hook) is the packet's direction, which rules
 * match on and which picks the policy: a namespace has one for its own
 * traffic (in and out) and one for what it forwards. Since 4.13 hooks belong to a
 * network namespace: a module registers them in every namespace through
 * a pernet_operations, whose init and exit run for each namespace that
 * exists or is created later, and keeps its per-namespace state in the
 * namespace's net_generic area. Old examples that call the removed global
 * nf_register_hook() do not build; ones that register in &init_net only
 * never see a container's packets.
 *
 * The packet path never takes a lock. Each namespace's rules live in an
 * immutable set published with rcu_assign_pointer(); the hook, which
 * netfilter runs under rcu_read_lock(), reads whichever set is current.
 * An update builds a complete new set, swaps the pointer and waits for a
 * grace period before it frees the old one, so a packet sees all of the
 * old rules or all of the new ones, and nothing a packet holds is freed
 * under it. Counters are per CPU and per rule; after the grace period the
 * old set's counts are final and are carried over to the rules that stay.
 * What the hook matches on it reads with skb_header_pointer() and checks
 * before it believes it (kml_filter_logic.c): a raw socket's packet is
 * whatever its sender wrote, and one the hook cannot parse must meet the
 * policy, not slip past it.
 *
 * Configuration is an ioctl on /dev/kml_filter (kml_filter_ctl.c) and a
 * generic netlink family (kml_filter_nl.c), both acting on the caller's
 * network namespace, with CAP_NET_ADMIN checked against the user
 * namespace that owns it (kml_filter_capable() below), so a container's
 * root manages its own rules and nobody else's. Both build a new set and
 * publish it with kml_filter_commit() (through kml_filter_publish(),
 * which also takes conntrack for rules that need it).
 *
 * This file is the mechanism; the rest of the module is handed over
 * complete: a set's memory and limit (kml_filter_set.c), reading a
 * packet's headers (kml_filter_pkt.c, with the pure parsing and matching
 * in kml_filter_logic.c), the changes and the device (kml_filter_ctl.c),
 * a replace sent in parts (kml_filter_stage.c), and the log a rule may
 * write to a kml_ring under a rate limit of its own (kml_filter_log.c,
 * which the hook calls only for a set with such a rule).
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <asm/local64.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "kml_filter.h"
#include "kml_filter_logic.h"
#include "kml_filter_trace.h"

static unsigned int kml_filter_net_id __read_mostly;

struct kml_filter_net *kml_filter_pernet(const struct net *net)
{
	return net_generic(net, kml_filter_net_id);
}

struct kml_filter_count kml_filter_sum(const struct kml_filter_set *set,
				       u32 idx)
{
	struct kml_filter_count c = set->base[idx];
	int cpu;

	/* LAB filter 4: add every CPU's counters for rule @idx to the counts
	 * carried over (c). Every possible CPU, not just the online ones: a
	 * CPU taken offline keeps what it counted.
	 */
	for_each_possible_cpu(cpu) {
		c.packets += local64_read(&set->ctr[cpu][idx].packets);
		c.bytes += local64_read(&set->ctr[cpu][idx].bytes);
	}
	/* LAB filter 4 end */
	return c;
}

/* ---- the packet path ---- */

/* Every packet seen is counted by direction in kml_stats. */
static void kml_filter_count_dir(u8 dir, u64 packets)
{
	kml_filter_count(dir == KML_FILTER_DIR_IN ? ST_PACKETS_IN :
			 dir == KML_FILTER_DIR_FWD ? ST_PACKETS_FWD :
			 ST_PACKETS_OUT, packets);
}

/*
 * The policy for a packet no rule matched: forwarded packets have their
 * own, so that a host's "policy drop" does not cut off what it routes.
 */
static u32 kml_filter_policy(const struct kml_filter_set *set, u8 dir)
{
	return dir == KML_FILTER_DIR_FWD ? set->policy_fwd : set->policy;
}

/* The hook that called is the packet's direction. */
static u8 kml_filter_dir(const struct nf_hook_state *state)
{
	switch (state->hook) {
	case NF_INET_LOCAL_IN:
		return KML_FILTER_DIR_IN;
	case NF_INET_FORWARD:
		return KML_FILTER_DIR_FWD;
	default:
		return KML_FILTER_DIR_OUT;
	}
}

/*
 * Can the policy alone judge @skb, without parsing it? An IPv4 packet
 * that is no GSO packet and that kml_filter_ipv4_plain() finds nothing
 * wrong with, while the tracepoint (which reports every field) is off.
 * Here, not with the parser: every packet of a set without rules asks.
 */
static bool kml_filter_policy_only(const struct sk_buff *skb,
				   const struct nf_hook_state *state, u8 dir)
{
	int off = skb_network_offset(skb);
	u8 _h[KML_FILTER_IPV4_HLEN];

	if (state->pf != NFPROTO_IPV4 || skb_is_gso(skb) ||
	    trace_verdict_enabled())
		return false;
	return kml_filter_ipv4_plain(skb_header_pointer(skb, off, sizeof(_h), _h),
				     skb->len - off, dir);
}

static unsigned int kml_filter_hook(void *priv, struct sk_buff *skb,
				    const struct nf_hook_state *state)
{
	const struct kml_filter_set *set;
	struct kml_filter_ctr *c;
	struct kml_filter_pkt pkt;
	u64 packets, bytes;
	u32 idx, verdict, hdrlen;

	/* netfilter calls hooks under rcu_read_lock() */
	set = rcu_dereference(kml_filter_pernet(state->net)->set);
	/* the set is published before the hooks go in, freed after they are out */
	if (unlikely(!set)) /* LCOV_EXCL_BR_LINE: never NULL here, see above */
		return NF_ACCEPT;
	pkt.dir = kml_filter_dir(state);
	/*
	 * The commonest case made cheap: no rule, a plain IPv4 packet, no
	 * one tracing. Only the policy can decide, so the header is checked
	 * but not taken apart, and the packet is counted as the full path
	 * would count it.
	 */
	if (!set->nrules && kml_filter_policy_only(skb, state, pkt.dir)) {
		packets = 1;
		bytes = skb->len - skb_network_offset(skb);
		kml_filter_count_dir(pkt.dir, 1);
		idx = kml_filter_policy_slot(set->nrules, pkt.dir);
		verdict = kml_filter_policy(set, pkt.dir);
		goto count;
	}
	hdrlen = kml_filter_parse(skb, state, set, &pkt);
	/* a GSO packet counts as the segments it stands for */
	kml_filter_wire(skb->len - skb_network_offset(skb),
			skb_is_gso(skb) ? skb_shinfo(skb)->gso_segs : 0,
			skb_is_gso(skb) ? skb_shinfo(skb)->gso_size : 0,
			hdrlen, &packets, &bytes);
	kml_filter_count_dir(pkt.dir, packets);
	/* malformed: kml_filter_logic.c says which the rules may judge */
	if (unlikely(pkt.malformed)) {
		kml_filter_count(ST_MALFORMED, packets);
		if (kml_filter_drop_always(&pkt)) {
			kml_filter_count(ST_DROPPED, packets);
			return NF_DROP;
		}
	}
	if (set->ix.ct)
		pkt.ct = kml_filter_ct_state(skb);
	/* IPv6 reassembles after LOCAL_IN: see kml_filter_logic.c */
	if (unlikely(kml_filter_first_fragment_decides(&pkt))) {
		kml_filter_count(ST_FRAGMENTS_PASSED, 1);
		return NF_ACCEPT;
	}

	/* LAB filter 3: find the first rule @pkt matches
	 * (kml_filter_lookup()): its index and action; if none matches
	 * (KML_FILTER_NOMATCH), the set's policy for the packet's hook
	 * decides (kml_filter_policy()), counted in its slot
	 * (kml_filter_policy_slot()).
	 */
	idx = kml_filter_lookup(&set->ix, &pkt);
	if (idx == KML_FILTER_NOMATCH) {
		idx = kml_filter_policy_slot(set->nrules, pkt.dir);
		verdict = kml_filter_policy(set, pkt.dir);
	} else {
		verdict = set->rules[idx].action;
	}
	trace_verdict(&pkt, idx < set->nrules ? (s32)idx : -1, verdict,
		      skb->len);
	/* LAB filter 3 end */
	if (unlikely(set->ix.log))
		kml_filter_log_match(state->net, set, &pkt, idx, verdict,
				     packets, bytes);

count:
	/* LAB filter 4: count @packets and @bytes in slot @idx of this
	 * CPU's counters. LOCAL_OUT runs in process context too: pin the
	 * CPU (get_cpu()/put_cpu()), and use local64 so a softirq on the
	 * same CPU cannot lose an increment.
	 */
	c = &set->ctr[get_cpu()][idx];
	local64_add(packets, &c->packets);
	local64_add(bytes, &c->bytes);
	put_cpu();
	/* LAB filter 4 end */

	/* LAB filter 3: the verdict: NF_DROP for a drop, else NF_ACCEPT
	 * (which hands the packet to the next hook), each counted in
	 * kml_stats (kml_filter_count() of ST_DROPPED, ST_ACCEPTED).
	 */
	if (verdict == KML_FILTER_DROP) {
		kml_filter_count(ST_DROPPED, packets);
		return NF_DROP;
	}
	kml_filter_count(ST_ACCEPTED, packets);
	return NF_ACCEPT;
	/* LAB filter 3 end: return NF_ACCEPT; */
}

static const struct nf_hook_ops kml_filter_ops[] = {
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP_PRI_FILTER,
	},
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_LOCAL_OUT,
		.priority	= NF_IP_PRI_FILTER,
	},
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP6_PRI_FILTER,
	},
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_LOCAL_OUT,
		.priority	= NF_IP6_PRI_FILTER,
	},
	/* routed packets, once the namespace forwards (ip_forward=1) */
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_FORWARD,
		.priority	= NF_IP_PRI_FILTER,
	},
	{
		.hook		= kml_filter_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_FORWARD,
		.priority	= NF_IP6_PRI_FILTER,
	},
};

/* ---- updates ---- */

/* Publish @set (built, not yet visible) and retire the current one. */
void kml_filter_commit(struct kml_filter_net *fn,
		       struct kml_filter_set *set,
		       enum kml_filter_carry carry, u32 at)
{
	struct kml_filter_set *old;
	u32 i, from;

	/*
	 * Packets meet @set as soon as it is published, while others still
	 * use the old set: a kept rule's log limiter starts where the old
	 * one is now, not with a fresh burst (an edit a second would
	 * otherwise log a record a second whatever the limit). After the
	 * grace period kml_filter_log_carry() merges what the old one did
	 * meanwhile.
	 */
	kml_filter_log_seed(fn, set, carry, at);

	/* LAB filter 2: publish @set in place of the current one in one
	 * store (rcu_replace_pointer(), under fn->lock: say so with
	 * lockdep_is_held()), then wait out every packet that may still be
	 * reading the old set (synchronize_rcu()). Only then are the old
	 * counts final: carry them over (kml_filter_old_index() maps a new
	 * index to the old one; the policies' slots are always carried), bump
	 * fn->generation and ST_UPDATES, and free the old set.
	 */
	set->generation = fn->generation + 1;
	old = rcu_replace_pointer(fn->set, set, lockdep_is_held(&fn->lock));
	synchronize_rcu();
	for (i = 0; i < set->nrules; i++) {
		from = kml_filter_old_index(carry, at, i);
		if (from == KML_FILTER_NOMATCH)
			continue;
		set->base[i] = kml_filter_sum(old, from);
		/* a rule kept keeps its log limit, not a fresh burst */
		kml_filter_log_carry(&set->logst[i], &old->logst[from]);
	}
	for (i = 0; i < KML_FILTER_POLICY_SLOTS; i++)
		set->base[set->nrules + i] = kml_filter_sum(old, old->nrules + i);
	fn->generation++;
	kml_filter_count(ST_UPDATES, 1);
	kml_filter_set_free(old);
	/* LAB filter 2 end: kml_filter_set_free(set); */
}

bool kml_filter_capable(struct file *file)
{
	struct net *net = file->private_data;

	/* LAB filter 5: CAP_NET_ADMIN in the user namespace that owns the
	 * file's network namespace (net->user_ns), so a container's root
	 * manages its own rules and nobody else's. Both the opener
	 * (file_ns_capable()) and the caller (ns_capable()): a privileged
	 * process that hands its fd to an unprivileged one has not delegated
	 * the right (the check netlink sockets make too).
	 */
	return file_ns_capable(file, net->user_ns, CAP_NET_ADMIN) &&
	       ns_capable(net->user_ns, CAP_NET_ADMIN);
	/* LAB filter 5 end: return true; */
}

/* ---- per network namespace ---- */

static int __net_init kml_filter_net_init(struct net *net)
{
	struct kml_filter_net *fn = kml_filter_pernet(net);
	struct kml_filter_set *set;
	int ret;

	mutex_init(&fn->lock);
	spin_lock_init(&fn->txn_lock);
	INIT_WORK(&fn->reap, kml_filter_txn_reap);
	kml_filter_log_init(&fn->log, &fn->lock);
	fn->net = net;
	set = kml_filter_set_alloc(0);
	if (!set)
		return -ENOMEM;
	/* a new namespace accepts everything, its own and routed traffic */
	kml_filter_set_build(set, KML_FILTER_ACCEPT, KML_FILTER_ACCEPT);
	RCU_INIT_POINTER(fn->set, set);
	/* LAB filter 1: register kml_filter_ops[] in @net
	 * (nf_register_net_hooks()); on failure take the set back out and
	 * free it. This runs for every namespace, now and later: hooks
	 * registered in &init_net alone never see a container's packets.
	 */
	ret = nf_register_net_hooks(net, kml_filter_ops,
				    ARRAY_SIZE(kml_filter_ops));
	if (ret) {
		RCU_INIT_POINTER(fn->set, NULL);
		kml_filter_set_free(set);
	}
	/* LAB filter 1 end: ret = 0; */
	return ret;
}

/*
 * Conntrack goes back before any exit method runs: if nf_conntrack was
 * loaded after kml_filter, its own exit for @net runs before ours.
 */
static void __net_exit kml_filter_net_pre_exit(struct net *net)
{
	struct kml_filter_net *fn = kml_filter_pernet(net);

	/* the module may be going: no reap may run after this */
	cancel_work_sync(&fn->reap);
	mutex_lock(&fn->lock);
	if (fn->ct_held) {
		kml_filter_ct_put(net);
		fn->ct_held = false;
	}
	/* the ring and kml_ring.ko are let go */
	kml_filter_log_detach(&fn->log);
	mutex_unlock(&fn->lock);
}

static void __net_exit kml_filter_net_exit(struct net *net)
{
	/* LAB filter 1: unregister the hooks registered in @net. */
	nf_unregister_net_hooks(net, kml_filter_ops, ARRAY_SIZE(kml_filter_ops));
	/* LAB filter 1 end */
}

/*
 * Hook removal does not wait for hooks already running, and the netns
 * core frees our net_generic area right after the exit methods: one grace
 * period for the whole batch, then the sets go.
 */
static void __net_exit kml_filter_net_exit_batch(struct list_head *net_list)
{
	struct net *net;

	synchronize_rcu();
	list_for_each_entry(net, net_list, exit_list) {
		struct kml_filter_net *fn = kml_filter_pernet(net);

		/* a replace left open when the module goes */
		if (fn->txn) {
			kml_filter_txn_free(fn->txn);
			fn->txn = NULL;
		}
		kml_filter_set_free(rcu_dereference_protected(fn->set, 1));
	}
}

static struct pernet_operations kml_filter_net_ops = {
	.init		= kml_filter_net_init,
	.pre_exit	= kml_filter_net_pre_exit,
	.exit		= kml_filter_net_exit,
	.exit_batch	= kml_filter_net_exit_batch,
	.id		= &kml_filter_net_id,
	.size		= sizeof(struct kml_filter_net),
};

static int __init kml_filter_init(void)
{
	int ret;

	/* the counters first: the hooks count from the moment they are in */
	ret = kml_filter_stats_init();
	if (ret)
		return ret;
	ret = register_pernet_subsys(&kml_filter_net_ops);
	if (ret)
		goto err_stats;
	ret = kml_filter_nl_init();
	if (ret)
		goto err_pernet;
	ret = kml_filter_dev_init();
	if (ret)
		goto err_nl;
	return 0;

err_nl:
	kml_filter_nl_exit();
err_pernet:
	unregister_pernet_subsys(&kml_filter_net_ops);
err_stats:
	kml_filter_stats_exit();
	return ret;
}

static void __exit kml_filter_exit(void)
{
	kml_filter_dev_exit();
	/* Waits for requests in flight; a dump in progress pins the module. */
	kml_filter_nl_exit();
	/* Removes the hooks from every namespace, waits, frees the sets. */
	unregister_pernet_subsys(&kml_filter_net_ops);
	kml_filter_ct_exit();
	kml_filter_stats_exit();
}

module_init(kml_filter_init);
module_exit(kml_filter_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: netfilter-hook packet filter, per network namespace");
