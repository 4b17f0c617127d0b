/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_filter: rule validation, the lookup index and packet
 * matching. No kernel dependencies: the client, host unit tests and fuzz
 * targets build the same file.
 */
#ifndef _KML_FILTER_LOGIC_H
#define _KML_FILTER_LOGIC_H

#include <linux/types.h>
#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif

#include "../../uapi/linux/kml_filter.h"

/* kml_filter_lookup() when no rule matches */
#define KML_FILTER_NOMATCH	0xffffffffu

/**
 * struct kml_filter_pkt - what a rule can look at in a packet
 * @family: %KML_FILTER_FAMILY_IPV4 or _IPV6
 * @proto: IP protocol (IPv6: after the extension headers)
 * @dir: %KML_FILTER_DIR_IN, %KML_FILTER_DIR_OUT or %KML_FILTER_DIR_FWD,
 *	one bit: the hook that sees it
 * @has_ports: @sport and @dport are valid (TCP/UDP, not a later fragment)
 * @sport: source port, host byte order
 * @dport: destination port
 * @src: source address, IPv4 in the first 4 bytes, the rest zero
 * @dst: destination address
 * @malformed: why the IP headers did not parse (enum kml_filter_bad), 0 if
 *	they did; a malformed packet has only @family and @dir
 * @later_frag: a fragment other than the first: no ports, and @proto is
 *	the fragment header's (IPv6), 0 when that names an extension header
 * @ct: its connection state, one %KML_FILTER_CT_* bit
 *	(kml_filter_ct_bit()); 0 when no rule of the set looks at it
 */
struct kml_filter_pkt {
	__u8 family;
	__u8 proto;
	__u8 dir;
	__u8 has_ports;
	__u16 sport;
	__u16 dport;
	__u8 src[16];
	__u8 dst[16];
	__u8 malformed;
	__u8 later_frag;
	__u8 ct;
};

/*
 * conntrack's enum ip_conntrack_info, whose values are ABI (the uapi
 * nf_conntrack_common.h): a reply direction adds IP_CT_IS_REPLY.
 */
#define KML_FILTER_IP_CT_IS_REPLY	3
#define KML_FILTER_IP_CT_UNTRACKED	7

/**
 * kml_filter_ct_bit() - a packet's connection state, as a rule's bit
 * @tracked: conntrack attached a connection to it (nf_ct_get() not NULL)
 * @ctinfo: the ip_conntrack_info nf_ct_get() gave
 *
 * What nftables' `ct state` sees: a tracked packet's state (a reply is
 * the state of its connection), else untracked if conntrack was told not
 * to track it, else invalid.
 * Return: one %KML_FILTER_CT_* bit.
 */
static inline __u8 kml_filter_ct_bit(bool tracked, unsigned int ctinfo)
{
	if (tracked)
		return 1u << (ctinfo % KML_FILTER_IP_CT_IS_REPLY + 1);
	return ctinfo == KML_FILTER_IP_CT_UNTRACKED ? KML_FILTER_CT_UNTRACKED :
						       KML_FILTER_CT_INVALID;
}

/**
 * enum kml_filter_bad - why a packet's IP headers did not parse
 * @KML_FILTER_BAD_NONE: they did
 * @KML_FILTER_BAD_SHORT: shorter than the fixed IP header
 * @KML_FILTER_BAD_VERSION: the version is not the hook's family's
 * @KML_FILTER_BAD_IHL: IPv4 header length below 20 bytes
 * @KML_FILTER_BAD_LENGTH: the header's length field disagrees with the
 *	packet (longer than it, or IPv4 shorter than its own header)
 * @KML_FILTER_BAD_EXTHDR: an IPv6 extension header chain that does not
 *	parse (cut short); the fixed header, and so the addresses, are sound
 * @KML_FILTER_BAD_FRAGMENT: the same in a fragment: a first fragment
 *	without all the headers up to the upper-layer one, which RFC 8200
 *	4.5 says to discard (reassembled, it could hide its ports from the
 *	hook)
 */
enum kml_filter_bad {
	KML_FILTER_BAD_NONE,
	KML_FILTER_BAD_SHORT,
	KML_FILTER_BAD_VERSION,
	KML_FILTER_BAD_IHL,
	KML_FILTER_BAD_LENGTH,
	KML_FILTER_BAD_EXTHDR,
	KML_FILTER_BAD_FRAGMENT,
};

/* the fixed headers the parsers read: struct iphdr, struct ipv6hdr */
#define KML_FILTER_IPV4_HLEN	20
#define KML_FILTER_IPV6_HLEN	40

/* which hash key a rule is filed under; see kml_filter_key_of() */
enum kml_filter_kind {
	KML_FK_LINEAR,
	KML_FK_DPORT,
	KML_FK_SPORT,
	KML_FK_DST,
	KML_FK_SRC,
};

/**
 * struct kml_filter_index - lookup structure over an ordered rule array
 * @rules: the rules, in evaluation order
 * @nrules: how many
 * @mask: buckets - 1 (a power of two minus one)
 * @bucket: per hash bucket, 1 + the lowest rule index filed there, 0 empty
 * @next: per rule, 1 + the next higher rule index in its bucket, 0 last
 * @linear: 1 + the first rule filed under no key, 0 none
 * @kinds: 1 << each enum kml_filter_kind some rule is filed under, so a
 *	lookup probes only for keys that can be there
 * @ports: some rule matches on a port: without one, a packet's ports need
 *	not be read
 * @ct: some rule matches on connection state: the set needs conntrack,
 *	and a packet's state must be looked up
 * @log: some rule logs
 * @taps: 1 + the first log-only rule (%KML_FILTER_LOG), 0 none: such rules
 *	are on no other chain, since they decide nothing
 * @nlens: per [family 0=IPv4 1=IPv6][0=src 1=dst], prefix lengths in use
 * @lens: those lengths
 */
struct kml_filter_index {
	const struct kml_filter_rule *rules;
	__u32 nrules;
	__u32 mask;
	__u32 *bucket;
	__u32 *next;
	__u32 linear;
	__u32 taps;
	__u8 kinds;
	__u8 ports;
	__u8 ct;
	__u8 log;
	__u8 nlens[2][2];
	__u8 lens[2][2][128];
};

/**
 * enum kml_filter_field - the part of a rule kml_filter_rule_why() blames
 * @KML_FILTER_F_NONE: none (the rule is good)
 * @KML_FILTER_F_FAMILY: .family
 * @KML_FILTER_F_PROTO: .proto
 * @KML_FILTER_F_DIR: .dir
 * @KML_FILTER_F_ACTION: .action
 * @KML_FILTER_F_SRC: .src, the source prefix as a whole
 * @KML_FILTER_F_DST: .dst, the destination prefix as a whole
 * @KML_FILTER_F_SRC_LEN: .src_len, longer than the family's address
 * @KML_FILTER_F_DST_LEN: .dst_len, likewise
 * @KML_FILTER_F_SPORT: .sport_lo or .sport_hi
 * @KML_FILTER_F_DPORT: .dport_lo or .dport_hi
 * @KML_FILTER_F_CT: .ct_state
 * @KML_FILTER_F_PAD: .pad or .pad2
 * @KML_FILTER_F_LOG: .log_rate, or a log action without it
 * @KML_FILTER_F_LOG_BURST: .log_burst, without which a rate is no limit
 */
enum kml_filter_field {
	KML_FILTER_F_NONE,
	KML_FILTER_F_FAMILY,
	KML_FILTER_F_PROTO,
	KML_FILTER_F_DIR,
	KML_FILTER_F_ACTION,
	KML_FILTER_F_SRC,
	KML_FILTER_F_DST,
	KML_FILTER_F_SRC_LEN,
	KML_FILTER_F_DST_LEN,
	KML_FILTER_F_SPORT,
	KML_FILTER_F_DPORT,
	KML_FILTER_F_CT,
	KML_FILTER_F_PAD,
	KML_FILTER_F_LOG,
	KML_FILTER_F_LOG_BURST,
};

int kml_filter_rule_why(const struct kml_filter_rule *r, const char **why,
			unsigned int *field);
int kml_filter_rule_check(const struct kml_filter_rule *r, const char **why);
bool kml_filter_match(const struct kml_filter_rule *r,
		      const struct kml_filter_pkt *p);
size_t kml_filter_index_mem(__u32 nrules);

/*
 * What kml_filter_set.c allocates for one rule set, as a 64-bit kernel
 * lays it out (a 32-bit selftest must compute the kernel's numbers, not
 * its own); the kernel checks each at build time.
 * @KML_FILTER_SET_SIZE: sizeof(struct kml_filter_set)
 * @KML_FILTER_PTR_SIZE: one CPU's entry in the array of counter pointers
 * @KML_FILTER_CTR_SIZE: one rule's counters, per CPU and carried over
 * @KML_FILTER_CTR_ALIGN: each CPU's counters are rounded up to this
 * @KML_FILTER_LOGST_SIZE: one rule's log limiter (struct kml_filter_logst)
 * @KML_FILTER_POLICY_SLOTS: counter slots past the rules' ones: the in/out
 *	policy's (slot nrules) and the forward policy's (nrules + 1)
 */
#define KML_FILTER_SET_SIZE	624
#define KML_FILTER_PTR_SIZE	8
#define KML_FILTER_CTR_SIZE	16
#define KML_FILTER_CTR_ALIGN	64
#define KML_FILTER_POLICY_SLOTS	2
#define KML_FILTER_LOGST_SIZE	16

/**
 * kml_filter_policy_slot() - the counter slot of the policy for a hook
 * @nrules: rules in the set
 * @dir: the packet's direction, one bit
 *
 * Return: @nrules for in and out, @nrules + 1 for forward.
 */
static inline __u32 kml_filter_policy_slot(__u32 nrules, __u8 dir)
{
	return nrules + (dir == KML_FILTER_DIR_FWD);
}

__u64 kml_filter_ctr_bytes(__u32 nrules);
__u64 kml_filter_set_bytes(__u32 nrules, __u32 ncpus);
void kml_filter_index_build(struct kml_filter_index *ix,
			    const struct kml_filter_rule *rules, __u32 nrules,
			    void *mem);
__u32 kml_filter_lookup_index(const struct kml_filter_index *ix,
			      const struct kml_filter_pkt *p);
__u32 kml_filter_tap(const struct kml_filter_index *ix, __u32 link,
		     const struct kml_filter_pkt *p, __u32 best);
enum kml_filter_kind kml_filter_key_of(const struct kml_filter_rule *r);
void kml_filter_prefix_mask(__u8 *addr, unsigned int len);

__u32 kml_filter_parse_ipv4(struct kml_filter_pkt *p, const __u8 *h,
			    __u32 len, bool gso_tcp);
int kml_filter_parse_ipv6(struct kml_filter_pkt *p, const __u8 *h, __u32 len,
			  bool gso_tcp);
void kml_filter_ipv6_upper(struct kml_filter_pkt *p, int proto, __u16 fragoff,
			   bool frag);

/*
 * Called for every packet: inline, so that the hook does not make a call
 * across files for each of these few instructions.
 */

/**
 * kml_filter_lookup() - the first rule that matches a packet
 * @ix: the index
 * @p: the packet
 *
 * Return: the rule's index, or %KML_FILTER_NOMATCH.
 */
static inline __u32 kml_filter_lookup(const struct kml_filter_index *ix,
				      const struct kml_filter_pkt *p)
{
	return ix->nrules ? kml_filter_lookup_index(ix, p) : KML_FILTER_NOMATCH;
}

/**
 * kml_filter_drop_always() - must the hook drop @p whatever the rules?
 * @p: a parsed packet
 *
 * Return: true if it is no IP packet of its hook's family at all (no
 * whole fixed header, the wrong version, an IPv4 header under 20 bytes)
 * or an IPv6 fragment whose headers are cut short.
 */
static inline bool kml_filter_drop_always(const struct kml_filter_pkt *p)
{
	return p->malformed == KML_FILTER_BAD_SHORT ||
	       p->malformed == KML_FILTER_BAD_VERSION ||
	       p->malformed == KML_FILTER_BAD_IHL ||
	       p->malformed == KML_FILTER_BAD_FRAGMENT;
}

/**
 * kml_filter_addrs_known() - can address rules judge @p?
 * @p: a parsed packet
 *
 * Return: true unless its IP header is not sound: an extension header
 * chain that does not parse (in a fragment or not) leaves the fixed
 * header's addresses good.
 */
static inline bool kml_filter_addrs_known(const struct kml_filter_pkt *p)
{
	return !p->malformed || p->malformed == KML_FILTER_BAD_EXTHDR ||
	       p->malformed == KML_FILTER_BAD_FRAGMENT;
}

/**
 * kml_filter_wants_ports() - should the caller read the packet's ports?
 * @p: a parsed packet
 *
 * Return: true for TCP and UDP, unless a later fragment (no transport
 * header) or malformed.
 */
static inline bool kml_filter_wants_ports(const struct kml_filter_pkt *p)
{
	return !p->malformed && !p->later_frag &&
	       (p->proto == KML_FILTER_PROTO_TCP ||
		p->proto == KML_FILTER_PROTO_UDP);
}

/**
 * kml_filter_set_ports() - the packet's ports, if its transport header has them
 * @p: a packet for which kml_filter_wants_ports() was true
 * @ports: the first 4 bytes of its transport header, NULL if cut short
 *	(then port rules do not match it)
 */
static inline void kml_filter_set_ports(struct kml_filter_pkt *p,
					const __u8 *ports)
{
	if (!ports)
		return;
	p->has_ports = 1;
	p->sport = (__u16)(ports[0] << 8 | ports[1]);
	p->dport = (__u16)(ports[2] << 8 | ports[3]);
}

/**
 * kml_filter_first_fragment_decides() - should the hook pass @p unjudged?
 * @p: a parsed packet
 *
 * Return: true for a later fragment on the way in (kml_filter_logic.c,
 * "Fragments", says why).
 */
static inline bool
kml_filter_first_fragment_decides(const struct kml_filter_pkt *p)
{
	return p->later_frag && p->dir == KML_FILTER_DIR_IN && !p->malformed;
}

/**
 * kml_filter_ipv4_plain() - may an empty rule set skip parsing this packet?
 * @h: the first %KML_FILTER_IPV4_HLEN bytes of an IPv4 hook's packet, NULL
 *	if shorter
 * @len: its length from the IP header on
 * @dir: its direction
 *
 * Return: true if kml_filter_parse_ipv4() (no GSO) would find it well
 * formed and the hook would judge it: not a later fragment coming in.
 * Then only the policy can decide it, without a parse.
 */
static inline bool kml_filter_ipv4_plain(const __u8 *h, __u32 len, __u8 dir)
{
	__u32 tot;

	/* version 4 and a header of 5 words or more */
	if (!h || len < KML_FILTER_IPV4_HLEN || h[0] < 0x45 || h[0] > 0x4f)
		return false;
	tot = (__u32)h[2] << 8 | h[3];
	if (tot < (h[0] & 0xfu) * 4 || tot > len)
		return false;
	return dir != KML_FILTER_DIR_IN || !((h[6] << 8 | h[7]) & 0x1fff);
}

/**
 * kml_filter_wire() - the packets and bytes one skb stands for
 * @len: its length from the IP header on
 * @gso_segs: skb_shinfo()->gso_segs of a GSO packet, 0 if not known
 * @gso_size: skb_shinfo()->gso_size: payload bytes per segment, 0 if the
 *	skb is no GSO packet
 * @hdrlen: the IP and transport header bytes each segment repeats
 * @packets: set to the number of packets
 * @bytes: set to their total length, from their IP headers on
 *
 * A GSO packet (TSO or UDP GSO on the way out, GRO on the way in) is one
 * skb for several packets on the wire, and whether the stack makes one
 * depends on offloads, not on traffic. Counted as the segments it stands
 * for, a rule's counters are the same either way: each segment repeats
 * the headers, as qdisc_pkt_len_init() counts them. A packet whose sender
 * left gso_segs 0 (SKB_GSO_DODGY, from a VM or tun) has its segments
 * worked out from gso_size, as there.
 */
static inline void kml_filter_wire(__u32 len, __u16 gso_segs, __u16 gso_size,
				   __u32 hdrlen, __u64 *packets, __u64 *bytes)
{
	__u64 segs = 1;

	if (gso_size) {
		segs = gso_segs;
		if (!segs && len > hdrlen)
			segs = (len - hdrlen + gso_size - 1) / gso_size;
		if (!segs)
			segs = 1;
	}
	*packets = segs;
	*bytes = len + (segs - 1) * hdrlen;
}

/**
 * kml_filter_log_admit() - may a rule write one more log record now?
 * @tat: the rule's limiter: when its bucket is next full ("theoretical
 *	arrival time", ns; 0 at first)
 * @now: the time, ns, from a clock that never goes back
 * @rate: records per second, 1..%KML_FILTER_LOG_MAX_RATE
 * @burst: records at once, at least 1
 * @next: set to the new @tat when the record may be written
 *
 * A token bucket kept as one number (the generic cell rate algorithm),
 * so that the hook can update it with one compare-and-exchange and no
 * lock: each record moves @tat on by one interval (1 s / @rate), and a
 * record is allowed while @tat is less than @burst - 1 intervals ahead
 * of @now. A rule idle for long starts again with its whole burst.
 * Return: true if it may.
 */
static inline bool kml_filter_log_admit(__u64 tat, __u64 now, __u32 rate,
					__u16 burst, __u64 *next)
{
	/* a 32-bit division: 1 s in ns fits, and 32-bit kernels have no 64-bit one */
	__u64 interval = 1000000000u / rate;

	if (tat > now + (__u64)(burst - 1) * interval)
		return false;
	*next = (tat > now ? tat : now) + interval;
	return true;
}

#endif /* _KML_FILTER_LOGIC_H */
