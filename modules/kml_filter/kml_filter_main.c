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
 * Configuration is an ioctl on /dev/kml_filter that acts on the network
 * namespace of whoever opened it, with CAP_NET_ADMIN checked against the
 * user namespace that owns that network namespace, so a container's root
 * manages its own rules and nobody else's. Its structs are extensible
 * (kml_ioctl.h): the size in the ioctl number is the caller's struct
 * size, so a later version can append fields without new numbers. The
 * same changes are offered as a generic netlink family, the way network
 * configuration reaches the kernel today (kml_filter_nl.c); both come
 * down to the functions of kml_filter.h.
 *
 * A rule may also log the packets it matches, under a rate limit of its
 * own, to a kml_ring an administrator attached over netlink: that is
 * kml_filter_log.c, and the hook only calls it for a set with such a
 * rule, so the path above stays what it teaches.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/kmod.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/nospec.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uaccess.h>
#include <linux/udp.h>
#include <asm/local64.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/sock.h>
#if IS_ENABLED(CONFIG_NF_CONNTRACK)
#include <net/netfilter/nf_conntrack.h>
#endif

#include "../include/kml_ioctl.h"
#include "../include/kml_stats.h"
#include "kml_filter.h"
#include "kml_filter_logic.h"
#include "kml_filter_trace.h"

/* Sized per CPU by hand: one __alloc_percpu() stops at 32 KiB, 2048 rules. */
struct kml_filter_ctr {
	local64_t packets;
	local64_t bytes;
};

struct kml_filter_count {
	u64 packets;
	u64 bytes;
};

/*
 * One immutable rule set. @policy decides the in and out packets no rule
 * matched, @policy_fwd the forwarded ones; counter slots nrules and
 * nrules + 1 are theirs (kml_filter_policy_slot()). @base holds counts
 * carried over from earlier sets; only updaters touch it, under the
 * namespace's lock. @logst are the logging rules' limiters (one slot per
 * rule, so that the hook finds a rule's at its index).
 */
struct kml_filter_set {
	u32 nrules;
	u32 policy;
	u32 policy_fwd;
	struct kml_filter_rule *rules;
	void *ixmem;
	struct kml_filter_ctr **ctr;
	struct kml_filter_count *base;
	struct kml_filter_logst *logst;
	u64 generation;
	struct kml_filter_index ix;
};

/*
 * A replace sent in parts (netlink: one message cannot hold 65536
 * rules): the set it builds, allocated and reserved when it begins.
 */
struct kml_filter_txn {
	u32 id;
	struct sock *sk;	/* the socket that began it, held */
	u32 policy;		/* 0: keep the current one */
	u32 policy_fwd;		/* the forward hook's; 0: keep it */
	u32 have;		/* rules received so far, of set->nrules */
	u64 generation;		/* the namespace's when it began */
	struct kml_filter_set *set;
};

struct kml_filter_net {
	struct kml_filter_set __rcu *set;
	struct mutex lock;	/* serialises updates; protects the rest */
	struct net *net;	/* whose this is (it lives as long) */
	bool ct_held;		/* conntrack taken for the namespace */
	u64 generation;
	u64 building;		/* bytes of sets being built, not yet published */
	struct kml_filter_txn *txn;	/* a replace in parts, or NULL */
	spinlock_t txn_lock;	/* with lock, for changes of txn */
	struct work_struct reap;	/* ends a closed socket's replace or log */
	u32 txn_seq;
	struct kml_filter_log log;
};

/*
 * What one namespace's sets may take at once: the published one and any
 * being built, so an update needs room for the old set and the new. All
 * of it is charged to the caller's memory cgroup too (GFP_KERNEL_ACCOUNT).
 */
static unsigned long net_mem_max = 64UL << 20;
module_param(net_mem_max, ulong, 0644);
MODULE_PARM_DESC(net_mem_max,
		 "Bytes one network namespace's rule sets may take at once, the current set and one being built for an update (default 64 MiB)");

/* How a new set's counters follow from the old one's. */
enum kml_filter_carry {
	KML_CARRY_NONE,		/* replace: new rules start at zero */
	KML_CARRY_ALL,		/* same rules (policy change) */
	KML_CARRY_INSERT,	/* one rule inserted at @at */
	KML_CARRY_DELETE,	/* the rule at @at deleted */
};

enum {
	ST_PACKETS_IN,
	ST_PACKETS_OUT,
	ST_ACCEPTED,
	ST_DROPPED,
	ST_UPDATES,
	ST_REJECTED,
	ST_MALFORMED,
	ST_FRAGMENTS_PASSED,
	ST_PACKETS_FWD,
};

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

/*
 * The hook counts every packet twice in kml_stats (seen, and its
 * verdict): their per-CPU slots are looked up once, at load, so that
 * each count is one inline this_cpu_add() rather than a call into
 * kml_stats and its checks. Everything else counts with kml_stats_inc().
 */
static u64 __percpu *kml_filter_slot[ARRAY_SIZE(kml_filter_stats_desc)];

static inline void kml_filter_count(unsigned int id, u64 n)
{
	this_cpu_add(*kml_filter_slot[id], n); /* LCOV_EXCL_BR_LINE: compile-time switch */
}

static unsigned int kml_filter_net_id __read_mostly;

static void kml_filter_txn_gone(struct kml_filter_net *fn);

/* ---- connection state ---- */

#if IS_ENABLED(CONFIG_NF_CONNTRACK)
/*
 * Conntrack is a module a distribution's kernel need not have loaded,
 * and most rule sets never ask for it, so kml_filter does not depend on
 * it: the first rule with connection states looks its two functions up
 * (loading it if need be) and keeps them until kml_filter goes. Then,
 * per namespace, nf_ct_netns_get() makes conntrack track that
 * namespace's packets, for as long as its set has such a rule.
 */
static DEFINE_MUTEX(kml_filter_ct_mutex);
static typeof(nf_ct_netns_get) *kml_ct_netns_get;
static typeof(nf_ct_netns_put) *kml_ct_netns_put;

static int kml_filter_ct_get(struct net *net)
{
	mutex_lock(&kml_filter_ct_mutex);
	if (!kml_ct_netns_get) {
		kml_ct_netns_get = symbol_get(nf_ct_netns_get);
		if (!kml_ct_netns_get) {
			request_module("nf_conntrack");
			kml_ct_netns_get = symbol_get(nf_ct_netns_get);
		}
		if (kml_ct_netns_get)
			kml_ct_netns_put = symbol_get(nf_ct_netns_put);
		if (kml_ct_netns_get && !kml_ct_netns_put) {
			symbol_put(nf_ct_netns_get);
			kml_ct_netns_get = NULL;
		}
	}
	mutex_unlock(&kml_filter_ct_mutex);
	/* set once, never unset while kml_filter is loaded */
	if (!kml_ct_netns_get)
		return -EOPNOTSUPP;
	return kml_ct_netns_get(net, NFPROTO_INET);
}

static void kml_filter_ct_put(struct net *net)
{
	kml_ct_netns_put(net, NFPROTO_INET);
}

static void kml_filter_ct_exit(void)
{
	if (kml_ct_netns_get) {
		symbol_put(nf_ct_netns_get);
		symbol_put(nf_ct_netns_put);
	}
}

/* Conntrack ran before us (priority -200, ours 0) and left its verdict. */
static u8 kml_filter_ct_state(const struct sk_buff *skb)
{
	enum ip_conntrack_info ctinfo;
	const struct nf_conn *ct = nf_ct_get(skb, &ctinfo);

	return kml_filter_ct_bit(ct, ctinfo);
}
#else
static int kml_filter_ct_get(struct net *net)
{
	return -EOPNOTSUPP;
}

static void kml_filter_ct_put(struct net *net)
{
}

static void kml_filter_ct_exit(void)
{
}

static u8 kml_filter_ct_state(const struct sk_buff *skb)
{
	return KML_FILTER_CT_INVALID;
}
#endif

static void kml_filter_set_free(struct kml_filter_set *set)
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
static u64 kml_filter_bytes(u32 nrules)
{
	return kml_filter_set_bytes(nrules, nr_cpu_ids);
}

/* Room for @nrules; the caller fills in the rules and calls _build(). */
static struct kml_filter_set *kml_filter_set_alloc(u32 nrules)
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

static void kml_filter_set_build(struct kml_filter_set *set, u32 policy,
				 u32 policy_fwd)
{
	set->policy = policy;
	set->policy_fwd = policy_fwd;
	kml_filter_index_build(&set->ix, set->rules, set->nrules, set->ixmem);
}

static struct kml_filter_count kml_filter_sum(const struct kml_filter_set *set,
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

struct kml_filter_net *kml_filter_pernet(const struct net *net)
{
	return net_generic(net, kml_filter_net_id);
}

/* ---- the packet path ---- */

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

/*
 * The bytes of headers each segment of a GSO packet repeats: the IP
 * headers (@thoff) and TCP's or UDP's own, as qdisc_pkt_len_init() counts
 * them. Tunnels' inner headers are not counted.
 */
static u32 kml_filter_seg_hdrlen(const struct sk_buff *skb, int off, u32 thoff,
				 u8 proto)
{
	const u8 *doff;
	u8 _doff;

	if (proto == IPPROTO_UDP)
		return thoff + sizeof(struct udphdr);
	if (proto != IPPROTO_TCP)
		return thoff;
	doff = skb_header_pointer(skb, off + thoff + 12, 1, &_doff);
	return thoff + (doff ? (*doff >> 4) * 4 : sizeof(struct tcphdr));
}

/*
 * Fill @p from the packet; return the header bytes each of its segments
 * repeats (kml_filter_wire()). The headers are checked, not trusted (see
 * kml_filter_parse_ipv4()): a raw socket's LOCAL_OUT packet is whatever
 * its sender wrote. Everything is read with skb_header_pointer(), which
 * copies what is split across fragments and returns NULL past the end.
 * The ports are read only if a rule of @set or the tracepoint needs them:
 * every packet pays for what is read, whether a rule looks at it or not.
 */
static u32 kml_filter_parse(const struct sk_buff *skb,
			    const struct nf_hook_state *state,
			    const struct kml_filter_set *set,
			    struct kml_filter_pkt *p)
{
	int off = skb_network_offset(skb);
	u32 len = skb->len - off, thoff = 0;
	bool gso_tcp = skb_is_gso(skb) && skb_is_gso_tcp(skb);
	u8 _h[sizeof(struct ipv6hdr)], _ports[4];
	const u8 *h;

	p->dir = kml_filter_dir(state);
	if (state->pf == NFPROTO_IPV4) {
		h = skb_header_pointer(skb, off, sizeof(struct iphdr), _h);
		thoff = kml_filter_parse_ipv4(p, h, len, gso_tcp);
	} else {
		/* AH ends the walk, as it is an IPv4 packet's protocol */
		int flags = IP6_FH_F_AUTH, proto;
		unsigned int at = 0;
		unsigned short fragoff;

		h = skb_header_pointer(skb, off, sizeof(struct ipv6hdr), _h);
		if (!kml_filter_parse_ipv6(p, h, len, gso_tcp)) {
			proto = ipv6_find_hdr(skb, &at, -1, &fragoff, &flags);
			kml_filter_ipv6_upper(p, proto, fragoff,
					      flags & IP6_FH_F_FRAG);
			if (proto >= 0)
				thoff = at - off;
		}
	}
	/* a log record, like the tracepoint, shows them */
	if (kml_filter_wants_ports(p) &&
	    (set->ix.ports || set->ix.log || trace_verdict_enabled()))
		kml_filter_set_ports(p, skb_header_pointer(skb, off + thoff,
							   sizeof(_ports),
							   _ports));
	if (!skb_is_gso(skb) || p->malformed)
		return 0;
	return kml_filter_seg_hdrlen(skb, off, thoff, p->proto);
}

/*
 * Can the policy alone judge @skb, without parsing it? An IPv4 packet
 * that is no GSO packet and that kml_filter_ipv4_plain() finds nothing
 * wrong with, while the tracepoint (which reports every field) is off.
 */
static bool kml_filter_policy_only(const struct sk_buff *skb,
				   const struct nf_hook_state *state, u8 *dir)
{
	int off = skb_network_offset(skb);
	u8 _h[KML_FILTER_IPV4_HLEN];

	if (state->pf != NFPROTO_IPV4 || skb_is_gso(skb) ||
	    trace_verdict_enabled())
		return false;
	*dir = kml_filter_dir(state);
	return kml_filter_ipv4_plain(skb_header_pointer(skb, off, sizeof(_h), _h),
				     skb->len - off, *dir);
}

/*
 * Logging, kept out of the lesson's way: only a set with a logging rule
 * comes here. First the log-only rules before the one that decided (in
 * order, as nftables' log statements would run), each counted as a
 * match, then the deciding rule if it logs. @idx is the rule that
 * decided, or a policy's slot (>= nrules).
 */
static noinline void kml_filter_log(struct net *net,
				    const struct kml_filter_set *set,
				    const struct kml_filter_pkt *p, u32 idx,
				    u32 verdict, u64 packets, u64 bytes)
{
	struct kml_filter_log *log = &kml_filter_pernet(net)->log;
	const struct kml_filter_index *ix = &set->ix;
	u32 best = min(idx, set->nrules), i;
	struct kml_filter_ctr *c;

	for (i = kml_filter_tap(ix, ix->taps, p, best); i < best;
	     i = kml_filter_tap(ix, ix->next[i], p, best)) {
		c = &set->ctr[get_cpu()][i];
		local64_add(packets, &c->packets);
		local64_add(bytes, &c->bytes);
		put_cpu();
		kml_filter_log_rule(log, &set->logst[i], &set->rules[i], i,
				    set->generation, p, verdict, packets, bytes);
	}
	if (idx < set->nrules && set->rules[idx].log_rate)
		kml_filter_log_rule(log, &set->logst[idx], &set->rules[idx],
				    idx, set->generation, p, verdict, packets,
				    bytes);
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
	if (unlikely(!set))
		return NF_ACCEPT;
	/*
	 * The commonest case made cheap: no rule, a plain IPv4 packet, no
	 * one tracing. Only the policy can decide, so the header is checked
	 * but not taken apart, and the packet is counted as the full path
	 * would count it.
	 */
	if (!set->nrules && kml_filter_policy_only(skb, state, &pkt.dir)) {
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
		kml_filter_log(state->net, set, &pkt, idx, verdict, packets,
			       bytes);

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

static u32 kml_filter_old_index(enum kml_filter_carry carry, u32 at, u32 i)
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

static void kml_filter_log_seed(struct kml_filter_net *fn,
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

/* Publish @set (built, not yet visible) and retire the current one. */
static void kml_filter_commit(struct kml_filter_net *fn,
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
	kml_stats_inc(kml_filter_stats, ST_UPDATES);
	kml_filter_set_free(old);
	/* LAB filter 2 end: kml_filter_set_free(set); */
}

static struct kml_filter_set *kml_filter_current(struct kml_filter_net *fn)
{
	return rcu_dereference_protected(fn->set, lockdep_is_held(&fn->lock));
}

/*
 * Publish @set as kml_filter_commit() does, holding conntrack for the
 * namespace exactly while its set has a rule with connection states:
 * taken before such a set is published (if that fails, nothing
 * changes), let go once the last set that needed it is gone.
 */
static int kml_filter_publish(struct kml_filter_net *fn,
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

/*
 * Reserve room for a new set of @nrules beside the current one and any
 * others being built: -ENOSPC if net_mem_max has none. An empty set is
 * always let through (it is tiny): a namespace over a lowered limit can
 * still flush its rules. kml_filter_unreserve() gives the room back once
 * the set is published or freed.
 */
static int kml_filter_reserve(struct kml_filter_net *fn, u32 nrules)
{
	unsigned long limit = READ_ONCE(net_mem_max);
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

static void kml_filter_unreserve(struct kml_filter_net *fn, u32 nrules)
{
	lockdep_assert_held(&fn->lock);
	fn->building -= kml_filter_bytes(nrules);
}

static bool kml_filter_capable(struct file *file)
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
	st->mem_limit = READ_ONCE(net_mem_max);
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

/* ---- a replace in parts (the netlink family's) ---- */

/*
 * A replace belongs to the socket that began it (held, so the pointer
 * names that socket and no later one that reuses its port id). When the
 * socket is closed the replace goes, but not in the close itself: the
 * netlink notifier runs under a lock every netlink socket's close takes,
 * so it must not wait for fn->lock, which an update holds for a while.
 * It asks a work item to do it (kml_filter_txn_reap()). fn->txn changes
 * under fn->lock and fn->txn_lock both; the notifier takes only the
 * latter.
 */
static void kml_filter_txn_set(struct kml_filter_net *fn,
			       struct kml_filter_txn *txn)
{
	lockdep_assert_held(&fn->lock);
	spin_lock(&fn->txn_lock);
	fn->txn = txn;
	spin_unlock(&fn->txn_lock);
}

static void kml_filter_txn_free(struct kml_filter_txn *txn)
{
	kml_filter_set_free(txn->set);
	sock_put(txn->sk);
	kfree(txn);
}

static void kml_filter_txn_end(struct kml_filter_net *fn)
{
	struct kml_filter_txn *txn = fn->txn;

	kml_filter_txn_set(fn, NULL);
	kml_filter_unreserve(fn, txn->set->nrules);
	kml_filter_txn_free(txn);
}

/*
 * End the replace of a socket closed since; whoever takes fn->lock to
 * look or change does it, so the work item need not have run yet for
 * its room to be free.
 */
static void kml_filter_txn_gone(struct kml_filter_net *fn)
{
	lockdep_assert_held(&fn->lock);
	if (fn->txn && sock_flag(fn->txn->sk, SOCK_DEAD))
		kml_filter_txn_end(fn);
}

static void kml_filter_txn_reap(struct work_struct *work)
{
	struct kml_filter_net *fn = container_of(work, struct kml_filter_net,
						 reap);

	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	kml_filter_log_gone(&fn->log);
	mutex_unlock(&fn->lock);
}

/* A netlink socket of @fn's namespace is being closed: is it an owner? */
void kml_filter_stage_release(struct kml_filter_net *fn)
{
	spin_lock(&fn->txn_lock);
	/* sock_orphan() marked the closing socket dead before the notifier */
	if (fn->txn && sock_flag(fn->txn->sk, SOCK_DEAD))
		schedule_work(&fn->reap);
	spin_unlock(&fn->txn_lock);
	if (kml_filter_log_closing(&fn->log))
		schedule_work(&fn->reap);
}

/* LOG_ATTACH and LOG_DETACH (kml_filter_log.c) */
int kml_filter_log_start(struct kml_filter_net *fn, int fd, struct sock *sk)
{
	int ret;

	mutex_lock(&fn->lock);
	ret = kml_filter_log_attach(&fn->log, fd, sk);
	mutex_unlock(&fn->lock);
	return ret;
}

int kml_filter_log_stop(struct kml_filter_net *fn)
{
	int ret;

	mutex_lock(&fn->lock);
	ret = kml_filter_log_detach(&fn->log);
	mutex_unlock(&fn->lock);
	return ret;
}

/*
 * Begin replacing the set with @nrules rules, to come in parts from
 * socket @sk; @policy and @policy_fwd 0 keep the current ones. One at a
 * time per namespace (-EBUSY); the room for the whole new set is reserved
 * now, so running out of it is said before any rule is sent (-ENOSPC).
 */
int kml_filter_stage_begin(struct kml_filter_net *fn, struct sock *sk,
			   u32 nrules, u32 policy, u32 policy_fwd, u32 *id)
{
	struct kml_filter_txn *txn;
	int ret;

	/* the netlink policy has checked @nrules and the policies */
	txn = kzalloc(sizeof(*txn), GFP_KERNEL_ACCOUNT);
	if (!txn)
		return -ENOMEM;
	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	ret = fn->txn ? -EBUSY : kml_filter_reserve(fn, nrules);
	mutex_unlock(&fn->lock);
	if (ret)
		goto free_txn;
	txn->set = kml_filter_set_alloc(nrules);
	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	if (!txn->set || fn->txn) {
		ret = txn->set ? -EBUSY : -ENOMEM;
		kml_filter_unreserve(fn, nrules);
		mutex_unlock(&fn->lock);
		kml_filter_set_free(txn->set);
		goto free_txn;
	}
	txn->id = ++fn->txn_seq ?: ++fn->txn_seq;
	sock_hold(sk);
	txn->sk = sk;
	txn->policy = policy;
	txn->policy_fwd = policy_fwd;
	txn->generation = fn->generation;
	spin_lock(&fn->txn_lock);
	/* closed meanwhile, before or after its notifier: never owned */
	if (!sock_flag(sk, SOCK_DEAD))
		fn->txn = txn;
	spin_unlock(&fn->txn_lock);
	if (!fn->txn) {
		kml_filter_unreserve(fn, nrules);
		mutex_unlock(&fn->lock);
		kml_filter_txn_free(txn);
		return -ECONNRESET;
	}
	*id = txn->id;
	mutex_unlock(&fn->lock);
	return 0;
free_txn:
	kfree(txn);
	return ret;
}

/* The replace @id of socket @sk, or NULL. */
static struct kml_filter_txn *kml_filter_txn_of(struct kml_filter_net *fn,
						struct sock *sk, u32 id)
{
	lockdep_assert_held(&fn->lock);
	if (!fn->txn || fn->txn->id != id || fn->txn->sk != sk)
		return NULL;
	return fn->txn;
}

/*
 * The next @n rules of replace @id, each already checked. More than were
 * announced ends the replace: a part that fails leaves nothing to commit.
 */
int kml_filter_stage_rules(struct kml_filter_net *fn, struct sock *sk, u32 id,
			   const struct kml_filter_rule *rules, u32 n)
{
	struct kml_filter_txn *txn;
	int ret = 0;

	mutex_lock(&fn->lock);
	txn = kml_filter_txn_of(fn, sk, id);
	if (!txn) {
		ret = -ENOENT;
	} else if (n > txn->set->nrules - txn->have) {
		kml_filter_txn_end(fn);
		ret = -E2BIG;
	} else {
		memcpy(txn->set->rules + txn->have, rules, n * sizeof(*rules));
		txn->have += n;
	}
	mutex_unlock(&fn->lock);
	return ret;
}

/*
 * Publish replace @id: -EAGAIN if the rules or policy changed since it
 * began (it was built against a set that is gone), -EINVAL if rules are
 * still missing. Either way, and on success, the replace is over.
 */
int kml_filter_stage_commit(struct kml_filter_net *fn, struct sock *sk, u32 id)
{
	struct kml_filter_txn *txn;
	int ret = 0;

	mutex_lock(&fn->lock);
	txn = kml_filter_txn_of(fn, sk, id);
	if (!txn) {
		ret = -ENOENT;
	} else if (txn->generation != fn->generation) {
		ret = -EAGAIN;
	} else if (txn->have != txn->set->nrules) {
		ret = -EINVAL;
	} else {
		kml_filter_set_build(txn->set, txn->policy ?:
				     kml_filter_current(fn)->policy,
				     txn->policy_fwd ?:
				     kml_filter_current(fn)->policy_fwd);
		ret = kml_filter_publish(fn, txn->set, KML_CARRY_NONE, 0);
	}
	if (txn && !ret) {
		/* published: the set is the namespace's now */
		kml_filter_txn_set(fn, NULL);
		kml_filter_unreserve(fn, txn->set->nrules);
		txn->set = NULL;
		kml_filter_txn_free(txn);
		txn = NULL;
	}
	if (txn)
		kml_filter_txn_end(fn);
	mutex_unlock(&fn->lock);
	return ret;
}

/* Drop replace @id of socket @sk. */
int kml_filter_stage_abort(struct kml_filter_net *fn, struct sock *sk, u32 id)
{
	int ret = -ENOENT;

	mutex_lock(&fn->lock);
	if (kml_filter_txn_of(fn, sk, id)) {
		kml_filter_txn_end(fn);
		ret = 0;
	}
	mutex_unlock(&fn->lock);
	return ret;
}

/* A refused change, from either interface. */
void kml_filter_rejected(void)
{
	kml_stats_inc(kml_filter_stats, ST_REJECTED);
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
	unsigned int i;
	int ret;

	kml_filter_stats = kml_stats_register("kml_filter", kml_filter_stats_desc,
					      ARRAY_SIZE(kml_filter_stats_desc));
	if (IS_ERR(kml_filter_stats))
		return PTR_ERR(kml_filter_stats);
	for (i = 0; i < ARRAY_SIZE(kml_filter_slot); i++) {
		kml_filter_slot[i] = kml_stats_counter(kml_filter_stats, i);
		if (!kml_filter_slot[i]) {
			ret = -EINVAL;
			goto err_stats;
		}
	}
	ret = register_pernet_subsys(&kml_filter_net_ops);
	if (ret)
		goto err_stats;
	ret = kml_filter_nl_init();
	if (ret)
		goto err_pernet;
	ret = misc_register(&kml_filter_misc);
	if (ret)
		goto err_nl;
	return 0;

err_nl:
	kml_filter_nl_exit();
err_pernet:
	unregister_pernet_subsys(&kml_filter_net_ops);
err_stats:
	kml_stats_unregister(kml_filter_stats);
	return ret;
}

static void __exit kml_filter_exit(void)
{
	/* Open files pin the module (.owner), so no ioctl is running. */
	misc_deregister(&kml_filter_misc);
	/* Waits for requests in flight; a dump in progress pins the module. */
	kml_filter_nl_exit();
	/* Removes the hooks from every namespace, waits, frees the sets. */
	unregister_pernet_subsys(&kml_filter_net_ops);
	kml_filter_ct_exit();
	kml_stats_unregister(kml_filter_stats);
}

module_init(kml_filter_init);
module_exit(kml_filter_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: netfilter-hook packet filter, per network namespace");
