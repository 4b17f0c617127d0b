// SPDX-License-Identifier: GPL-2.0
/*
 * What kml_filter's hook reads of a packet: its headers, taken apart by
 * the pure functions of kml_filter_logic.c, and the connection state
 * conntrack left on it. The lab hands this file over complete.
 *
 * Nothing in a packet is trusted: a raw socket's LOCAL_OUT packet is
 * whatever its sender wrote, so every header is read with
 * skb_header_pointer() (which copies what is split across fragments and
 * returns NULL past the end) and checked before it is believed.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/kmod.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/ipv6.h>
#if IS_ENABLED(CONFIG_NF_CONNTRACK)
#include <net/netfilter/nf_conntrack.h>
#endif

#include "kml_filter.h"
#include "kml_filter_logic.h"
#include "kml_filter_trace.h"

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

int kml_filter_ct_get(struct net *net)
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

void kml_filter_ct_put(struct net *net)
{
	kml_ct_netns_put(net, NFPROTO_INET);
}

void kml_filter_ct_exit(void)
{
	if (kml_ct_netns_get) {
		symbol_put(nf_ct_netns_get);
		symbol_put(nf_ct_netns_put);
	}
}

/* Conntrack ran before us (priority -200, ours 0) and left its verdict. */
u8 kml_filter_ct_state(const struct sk_buff *skb)
{
	enum ip_conntrack_info ctinfo;
	const struct nf_conn *ct = nf_ct_get(skb, &ctinfo);

	return kml_filter_ct_bit(ct, ctinfo);
}
#else
int kml_filter_ct_get(struct net *net)
{
	return -EOPNOTSUPP;
}

void kml_filter_ct_put(struct net *net)
{
}

void kml_filter_ct_exit(void)
{
}

u8 kml_filter_ct_state(const struct sk_buff *skb)
{
	return KML_FILTER_CT_INVALID;
}
#endif

/* ---- headers ---- */

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
 * Fill @p (its @dir the hook set) from the packet; return the header
 * bytes each of its segments repeats (kml_filter_wire()). The headers
 * are checked, not trusted (see kml_filter_parse_ipv4()): a raw socket's
 * LOCAL_OUT packet is whatever its sender wrote. Everything is read with
 * skb_header_pointer(), which copies what is split across fragments and
 * returns NULL past the end. The ports are read only if a rule of @set or
 * the tracepoint needs them: every packet pays for what is read, whether
 * a rule looks at it or not.
 */
u32 kml_filter_parse(const struct sk_buff *skb,
		     const struct nf_hook_state *state,
		     const struct kml_filter_set *set,
		     struct kml_filter_pkt *p)
{
	int off = skb_network_offset(skb);
	u32 len = skb->len - off, thoff = 0;
	bool gso_tcp = skb_is_gso(skb) && skb_is_gso_tcp(skb);
	u8 _h[sizeof(struct ipv6hdr)], _ports[4];
	const u8 *h;

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
