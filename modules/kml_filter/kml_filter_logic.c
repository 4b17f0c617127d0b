// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's rule checks, matching and lookup index.
 *
 * Rules are first-match in array order, so a lookup must find the lowest
 * index among the rules a packet matches. A linear walk costs O(rules) for
 * every packet. Instead each rule is filed in one hash table under one key
 * that any packet it matches must share: its exact destination or source
 * host, else its single destination or source port, else its destination
 * or source prefix (keyed by prefix length and masked address). Only a
 * rule with none of these (say "drop all tcp") is kept on a linear list.
 *
 * A packet then probes a few buckets: its two ports, and its masked
 * addresses once for each prefix length some rule uses (tuple space
 * search, as Open vSwitch's classifier does). Chains hold rule indices in
 * ascending order, so a chain walk stops at the first full match or at an
 * index above the best so far. The cost grows with the number of distinct
 * prefix lengths and with unkeyed rules, not with the number of rules:
 * 10 000 host or port rules cost about what one does.
 *
 * The table is filled from the rule set, which the administrator
 * controls, never from packets, so an unkeyed hash cannot be flooded by
 * traffic. The index is immutable once built: an update builds a new one.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif

#include "kml_filter_logic.h"

static unsigned int kml_filter_addr_bits(__u8 family)
{
	return family == KML_FILTER_FAMILY_IPV6 ? 128 : 32;
}

static bool kml_filter_prefix_ok(const __u8 *addr, unsigned int len,
				 unsigned int bits)
{
	__u8 copy[16];

	if (len > bits)
		return false;
	memcpy(copy, addr, 16);
	kml_filter_prefix_mask(copy, len);
	return !memcmp(copy, addr, 16);
}

static bool kml_filter_ports_any(__u16 lo, __u16 hi)
{
	return lo == 0 && hi == 0xffff;
}

/**
 * kml_filter_rule_why() - is this a rule the kernel accepts, and if not,
 *	what is wrong and where
 * @r: the rule
 * @why: if not NULL, set to a short reason when the rule is refused (a
 *	string that lives as long as the code), NULL otherwise
 * @field: if not NULL, set to the part of the rule the reason is about
 *	(enum kml_filter_field), so an interface can point at it
 *
 * Return: 0 or -EINVAL.
 */
int kml_filter_rule_why(const struct kml_filter_rule *r, const char **why,
			unsigned int *field)
{
	const char *bad = NULL;
	unsigned int bits = kml_filter_addr_bits(r->family), at = 0;
	/* of the two addresses or port ranges, the one a reason is about */
	unsigned int addr = r->src_len ? KML_FILTER_F_SRC : KML_FILTER_F_DST;
	unsigned int port = kml_filter_ports_any(r->sport_lo, r->sport_hi) ?
			    KML_FILTER_F_DPORT : KML_FILTER_F_SPORT;

	if (r->family != KML_FILTER_FAMILY_ANY &&
	    r->family != KML_FILTER_FAMILY_IPV4 &&
	    r->family != KML_FILTER_FAMILY_IPV6) {
		bad = "unknown family";
		at = KML_FILTER_F_FAMILY;
	} else if (r->proto != KML_FILTER_PROTO_ANY &&
		   r->proto != KML_FILTER_PROTO_ICMP &&
		   r->proto != KML_FILTER_PROTO_TCP &&
		   r->proto != KML_FILTER_PROTO_UDP &&
		   r->proto != KML_FILTER_PROTO_ICMPV6) {
		bad = "unknown protocol";
		at = KML_FILTER_F_PROTO;
	} else if ((r->proto == KML_FILTER_PROTO_ICMP &&
		    r->family == KML_FILTER_FAMILY_IPV6) ||
		   (r->proto == KML_FILTER_PROTO_ICMPV6 &&
		    r->family == KML_FILTER_FAMILY_IPV4)) {
		bad = "protocol of the other family";
		at = KML_FILTER_F_PROTO;
	} else if (!r->dir || (r->dir & ~KML_FILTER_DIR_ALL)) {
		bad = "bad direction";
		at = KML_FILTER_F_DIR;
	} else if (r->action != KML_FILTER_ACCEPT &&
		   r->action != KML_FILTER_DROP && r->action != KML_FILTER_LOG) {
		bad = "bad action";
		at = KML_FILTER_F_ACTION;
	} else if ((r->src_len || r->dst_len) &&
		   r->family == KML_FILTER_FAMILY_ANY) {
		bad = "address without a family";
		at = addr;
	} else if (r->src_len > bits || r->dst_len > bits) {
		bad = "bad prefix length";
		at = r->src_len > bits ? KML_FILTER_F_SRC_LEN :
					 KML_FILTER_F_DST_LEN;
	} else if (!kml_filter_prefix_ok(r->src, r->src_len, bits) ||
		   !kml_filter_prefix_ok(r->dst, r->dst_len, bits)) {
		bad = "address has bits set past its prefix length";
		at = kml_filter_prefix_ok(r->src, r->src_len, bits) ?
		     KML_FILTER_F_DST : KML_FILTER_F_SRC;
	} else if (r->sport_lo > r->sport_hi || r->dport_lo > r->dport_hi) {
		bad = "reversed port range";
		at = r->sport_lo > r->sport_hi ? KML_FILTER_F_SPORT :
						 KML_FILTER_F_DPORT;
	} else if ((!kml_filter_ports_any(r->sport_lo, r->sport_hi) ||
		    !kml_filter_ports_any(r->dport_lo, r->dport_hi)) &&
		   r->proto != KML_FILTER_PROTO_TCP &&
		   r->proto != KML_FILTER_PROTO_UDP) {
		bad = "ports need tcp or udp";
		at = port;
	} else if (r->ct_state & ~KML_FILTER_CT_ALL) {
		bad = "unknown connection state";
		at = KML_FILTER_F_CT;
	} else if (r->action == KML_FILTER_LOG && !r->log_rate) {
		bad = "a log action needs a log rate";
		at = KML_FILTER_F_LOG;
	} else if (r->log_rate > KML_FILTER_LOG_MAX_RATE) {
		bad = "log rate above 1000000/s";
		at = KML_FILTER_F_LOG;
	} else if (!r->log_rate != !r->log_burst) {
		bad = r->log_rate ? "a log burst of at least 1 is needed" :
				    "a log burst without a log rate";
		at = KML_FILTER_F_LOG_BURST;
	} else if (r->pad[0] || r->pad[1] || r->pad2) {
		bad = "padding not zero";
		at = KML_FILTER_F_PAD;
	}

	if (why)
		*why = bad;
	if (field)
		*field = at;
	return bad ? -EINVAL : 0;
}

/**
 * kml_filter_rule_check() - is this a rule the kernel accepts?
 * @r: the rule
 * @why: if not NULL, set to a short reason when the rule is refused
 *
 * Return: 0 or -EINVAL.
 */
int kml_filter_rule_check(const struct kml_filter_rule *r, const char **why)
{
	return kml_filter_rule_why(r, why, NULL);
}

/**
 * kml_filter_prefix_mask() - clear the bits of a 16-byte address past @len
 * @addr: the address, changed in place
 * @len: prefix length, 0..128
 */
void kml_filter_prefix_mask(__u8 *addr, unsigned int len)
{
	unsigned int i;

	for (i = 0; i < 16; i++) {
		if (len >= 8) {
			len -= 8;
			continue;
		}
		addr[i] &= (__u8)(0xff00 >> len);
		len = 0;
	}
}

static bool kml_filter_prefix_match(const __u8 *pfx, const __u8 *addr,
				    unsigned int len)
{
	unsigned int full = len / 8, rest = len % 8;

	if (memcmp(pfx, addr, full))
		return false;
	return !rest || !((pfx[full] ^ addr[full]) & (__u8)(0xff00 >> rest));
}

static bool kml_filter_port_match(__u16 lo, __u16 hi, bool has_ports,
				  __u16 port)
{
	if (kml_filter_ports_any(lo, hi))
		return true;
	return has_ports && port >= lo && port <= hi;
}

/**
 * kml_filter_match() - does rule @r match packet @p?
 * @r: a rule that passed kml_filter_rule_check()
 * @p: the packet
 *
 * Return: true if every field of the rule matches.
 */
bool kml_filter_match(const struct kml_filter_rule *r,
		      const struct kml_filter_pkt *p)
{
	if (!(r->dir & p->dir))
		return false;
	if (r->family && r->family != p->family)
		return false;
	if (r->proto && r->proto != p->proto)
		return false;
	/* a malformed packet's addresses may be unknown, not zero */
	if (!kml_filter_addrs_known(p) && (r->src_len || r->dst_len))
		return false;
	if (r->src_len && !kml_filter_prefix_match(r->src, p->src, r->src_len))
		return false;
	if (r->dst_len && !kml_filter_prefix_match(r->dst, p->dst, r->dst_len))
		return false;
	/* p->ct is set only when some rule of the set has states */
	if (r->ct_state && !(r->ct_state & p->ct))
		return false;
	return kml_filter_port_match(r->sport_lo, r->sport_hi, p->has_ports,
				     p->sport) &&
	       kml_filter_port_match(r->dport_lo, r->dport_hi, p->has_ports,
				     p->dport);
}

/**
 * kml_filter_key_of() - the key a rule is filed under
 * @r: a valid rule
 *
 * Exact hosts first (the most selective key), then single ports, then
 * shorter prefixes; a rule with none of them is linear.
 *
 * Return: the kind of key.
 */
enum kml_filter_kind kml_filter_key_of(const struct kml_filter_rule *r)
{
	unsigned int bits = kml_filter_addr_bits(r->family);

	if (r->dst_len && r->dst_len == bits)
		return KML_FK_DST;
	if (r->src_len && r->src_len == bits)
		return KML_FK_SRC;
	if (r->dport_lo == r->dport_hi)
		return KML_FK_DPORT;
	if (r->sport_lo == r->sport_hi)
		return KML_FK_SPORT;
	if (r->dst_len)
		return KML_FK_DST;
	if (r->src_len)
		return KML_FK_SRC;
	return KML_FK_LINEAR;
}

static __u32 kml_filter_mix(__u32 h, __u32 v)
{
	h ^= v;
	h *= 0x9e3779b1u;
	return h ^ (h >> 16);
}

static __u32 kml_filter_hash_port(enum kml_filter_kind kind, __u8 proto,
				  __u16 port)
{
	return kml_filter_mix(kml_filter_mix(kind, proto), port);
}

/* @addr is already masked to @len */
static __u32 kml_filter_hash_prefix(enum kml_filter_kind kind, __u8 family,
				    unsigned int len, const __u8 *addr)
{
	__u32 h = kml_filter_mix(kml_filter_mix(kind, family), len);
	unsigned int i, n = family == KML_FILTER_FAMILY_IPV6 ? 16 : 4;

	for (i = 0; i < n; i += 4)
		h = kml_filter_mix(h, (__u32)addr[i] << 24 |
				      (__u32)addr[i + 1] << 16 |
				      (__u32)addr[i + 2] << 8 | addr[i + 3]);
	return h;
}

static __u32 kml_filter_buckets(__u32 nrules)
{
	__u64 n = 16;

	/* the kernel's sets stop at 65536 rules; 2^31 caps any other caller */
	while (n < 2 * (__u64)nrules && n < 0x80000000u)
		n <<= 1;
	return (__u32)n;
}

/**
 * kml_filter_index_mem() - bytes kml_filter_index_build() needs at @mem
 * @nrules: rules to index, at most %KML_FILTER_MAX_RULES
 *
 * Return: the size; the caller allocates it (4-byte aligned).
 */
size_t kml_filter_index_mem(__u32 nrules)
{
	return ((size_t)kml_filter_buckets(nrules) + nrules) * sizeof(__u32);
}

/**
 * kml_filter_ctr_bytes() - one CPU's counters for @nrules rules and the policies
 * @nrules: rules in the set
 *
 * Return: the size, rounded up so no two CPUs' counters share a cache line.
 */
__u64 kml_filter_ctr_bytes(__u32 nrules)
{
	__u64 n = ((__u64)nrules + KML_FILTER_POLICY_SLOTS) * KML_FILTER_CTR_SIZE;

	return (n + KML_FILTER_CTR_ALIGN - 1) & ~(__u64)(KML_FILTER_CTR_ALIGN - 1);
}

/**
 * kml_filter_set_bytes() - bytes one rule set asks the allocator for
 * @nrules: rules in the set, at most %KML_FILTER_MAX_RULES
 * @ncpus: CPUs it keeps counters for (the kernel's nr_cpu_ids)
 *
 * The sum of the sizes kml_filter_set_alloc() passes: the set, its rules
 * and their log limiters (room for one at least), the index, the counts carried over (the
 * rules' and the policies'), the per-CPU pointers and each CPU's counters. No overflow at
 * any @nrules and @ncpus a __u32 holds.
 *
 * Return: the size.
 */
__u64 kml_filter_set_bytes(__u32 nrules, __u32 ncpus)
{
	__u64 rules = nrules ? nrules : 1;

	return KML_FILTER_SET_SIZE +
	       rules * (sizeof(struct kml_filter_rule) + KML_FILTER_LOGST_SIZE) +
	       kml_filter_index_mem(nrules) +
	       ((__u64)nrules + KML_FILTER_POLICY_SLOTS) * KML_FILTER_CTR_SIZE +
	       (__u64)ncpus * (KML_FILTER_PTR_SIZE + kml_filter_ctr_bytes(nrules));
}

static void kml_filter_add_len(struct kml_filter_index *ix, __u8 family,
			       int dst, __u8 len)
{
	int f = family == KML_FILTER_FAMILY_IPV6;
	__u8 *lens = ix->lens[f][dst];
	unsigned int i, n = ix->nlens[f][dst];

	for (i = 0; i < n; i++)
		if (lens[i] == len)
			return;
	/* longest first: exact hosts are the likeliest hit */
	for (i = n; i > 0 && lens[i - 1] < len; i--)
		lens[i] = lens[i - 1];
	lens[i] = len;
	ix->nlens[f][dst] = n + 1;
}

static __u32 kml_filter_rule_hash(struct kml_filter_index *ix,
				  const struct kml_filter_rule *r,
				  enum kml_filter_kind kind)
{
	switch (kind) {
	case KML_FK_DPORT:
		return kml_filter_hash_port(kind, r->proto, r->dport_lo);
	case KML_FK_SPORT:
		return kml_filter_hash_port(kind, r->proto, r->sport_lo);
	case KML_FK_DST:
		kml_filter_add_len(ix, r->family, 1, r->dst_len);
		return kml_filter_hash_prefix(kind, r->family, r->dst_len,
					      r->dst);
	default:
		kml_filter_add_len(ix, r->family, 0, r->src_len);
		return kml_filter_hash_prefix(kind, r->family, r->src_len,
					      r->src);
	}
}

/**
 * kml_filter_index_build() - index @nrules valid rules
 * @ix: filled in; refers to @rules and @mem, which must outlive it
 * @rules: the rules, each passed kml_filter_rule_check()
 * @nrules: how many
 * @mem: kml_filter_index_mem(@nrules) bytes
 */
void kml_filter_index_build(struct kml_filter_index *ix,
			    const struct kml_filter_rule *rules, __u32 nrules,
			    void *mem)
{
	__u32 nb = kml_filter_buckets(nrules), i;

	memset(ix, 0, sizeof(*ix));
	ix->rules = rules;
	ix->nrules = nrules;
	ix->mask = nb - 1;
	ix->bucket = mem;
	ix->next = ix->bucket + nb;
	memset(ix->bucket, 0, nb * sizeof(__u32));

	/* pushing from the last rule down leaves every chain ascending */
	for (i = nrules; i-- > 0;) {
		const struct kml_filter_rule *r = &rules[i];
		enum kml_filter_kind kind = kml_filter_key_of(r);
		__u32 *head;

		if (!kml_filter_ports_any(r->sport_lo, r->sport_hi) ||
		    !kml_filter_ports_any(r->dport_lo, r->dport_hi))
			ix->ports = 1;
		if (r->ct_state)
			ix->ct = 1;
		if (r->log_rate)
			ix->log = 1;
		if (r->action == KML_FILTER_LOG) {
			/*
			 * Decides nothing: on a chain of its own, never
			 * found by a lookup, nor making it probe for its key.
			 */
			head = &ix->taps;
		} else if (kind == KML_FK_LINEAR) {
			ix->kinds |= 1u << kind;
			head = &ix->linear;
		} else {
			__u32 h = kml_filter_rule_hash(ix, r, kind);

			ix->kinds |= 1u << kind;
			head = &ix->bucket[h & ix->mask];
		}
		ix->next[i] = *head;
		*head = i + 1;
	}
}

static __u32 kml_filter_walk(const struct kml_filter_index *ix, __u32 link,
			     const struct kml_filter_pkt *p, __u32 best)
{
	for (; link; link = ix->next[link - 1]) {
		__u32 i = link - 1;

		if (i >= best)
			break;
		if (kml_filter_match(&ix->rules[i], p))
			return i;
	}
	return best;
}

static __u32 kml_filter_probe_prefixes(const struct kml_filter_index *ix,
				       const struct kml_filter_pkt *p, int dst,
				       __u32 best)
{
	int f = p->family == KML_FILTER_FAMILY_IPV6;
	enum kml_filter_kind kind = dst ? KML_FK_DST : KML_FK_SRC;
	const __u8 *addr = dst ? p->dst : p->src;
	unsigned int i;
	__u8 key[16];

	if (!f) {
		/*
		 * IPv4: the address is one word, masked with a shift; the
		 * hash is kml_filter_hash_prefix()'s on the masked bytes.
		 */
		__u32 a = (__u32)addr[0] << 24 | (__u32)addr[1] << 16 |
			  (__u32)addr[2] << 8 | addr[3];

		for (i = 0; i < ix->nlens[0][dst]; i++) {
			__u8 len = ix->lens[0][dst][i];
			__u32 h = kml_filter_mix(kml_filter_mix(kind, p->family),
						 len);

			/* len is 1..32: a prefix rule has an address */
			h = kml_filter_mix(h, a & (~0u << (32 - len)));
			best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p,
					       best);
		}
		return best;
	}
	for (i = 0; i < ix->nlens[f][dst]; i++) {
		__u8 len = ix->lens[f][dst][i];
		__u32 h;

		memcpy(key, addr, sizeof(key));
		kml_filter_prefix_mask(key, len);
		h = kml_filter_hash_prefix(kind, p->family, len, key);
		best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p, best);
	}
	return best;
}

/**
 * kml_filter_tap() - the next log-only rule that matches a packet
 * @ix: the index
 * @link: where to start: @ix->taps, or 1 + the rule after which to go on
 *	(@ix->next[i] of the last one found)
 * @p: the packet
 * @best: the rule that decides @p (or %KML_FILTER_NOMATCH): a log-only
 *	rule after it is never reached
 *
 * Return: the index of the log-only rule, or @best if none is left.
 */
__u32 kml_filter_tap(const struct kml_filter_index *ix, __u32 link,
		     const struct kml_filter_pkt *p, __u32 best)
{
	return kml_filter_walk(ix, link, p, best);
}

/**
 * kml_filter_lookup_index() - kml_filter_lookup() with rules to look at
 * @ix: the index, of at least one rule
 * @p: the packet
 *
 * Return: the rule's index, or %KML_FILTER_NOMATCH.
 */
__u32 kml_filter_lookup_index(const struct kml_filter_index *ix,
			      const struct kml_filter_pkt *p)
{
	__u32 best = KML_FILTER_NOMATCH;
	__u32 h;

	/* probe only for the kinds of key some rule has */
	if (p->has_ports && (ix->kinds & (1u << KML_FK_DPORT))) {
		h = kml_filter_hash_port(KML_FK_DPORT, p->proto, p->dport);
		best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p, best);
	}
	if (p->has_ports && (ix->kinds & (1u << KML_FK_SPORT))) {
		h = kml_filter_hash_port(KML_FK_SPORT, p->proto, p->sport);
		best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p, best);
	}
	best = kml_filter_probe_prefixes(ix, p, 1, best);
	best = kml_filter_probe_prefixes(ix, p, 0, best);
	return kml_filter_walk(ix, ix->linear, p, best);
}

/*
 * Packets whose IP headers do not parse. At LOCAL_IN the stack has
 * checked the fixed header already (ip_rcv_core(), ip6_rcv_core()), but
 * not an IPv6 extension header chain past hop-by-hop; at LOCAL_OUT a raw
 * socket with IP_HDRINCL hands the hook what its caller wrote, and Linux
 * checks only an IPv4 header's length (and rewrites tot_len), neither
 * version nor anything of an IPv6 header. Three kinds:
 *
 * - Not an IP packet of the hook's family at all: no whole fixed header,
 *   the wrong version, an IPv4 header under 20 bytes. No rule can be
 *   about it, and ip_rcv_core() would drop it on the way in, so the hook
 *   drops it whatever the rules and the policy say
 *   (kml_filter_drop_always()): the same answer in both directions.
 * - An IPv6 fragment whose extension headers are cut short (see
 *   kml_filter_ipv6_upper()): dropped whatever the rules too.
 * - An IP header whose length fields or extension header chain do not
 *   agree with the packet. Nothing past the family of the hook that sees
 *   it and the direction can be trusted (but the addresses, when only the
 *   chain is broken), so it matches only rules that name neither a
 *   protocol, nor a port, nor (with a bad length) an address ("drop in
 *   ipv6" must still drop every IPv6 packet coming in), and else the
 *   policy decides, as for any packet no rule describes. That is what an
 *   nftables chain does: nft_set_pktinfo_ipv4_validate() and
 *   _ipv6_validate() leave such a packet without a transport protocol,
 *   transport matches fail and the chain's policy applies.
 *
 * Either way it never slips past policy drop, and the hook counts both
 * (kml_stats "malformed").
 */

/* @p cleared but for its direction, for @family */
static void kml_filter_pkt_init(struct kml_filter_pkt *p, __u8 family)
{
	__u8 dir = p->dir;

	memset(p, 0, sizeof(*p));
	p->family = family;
	p->dir = dir;
}

static __u32 kml_filter_malformed(struct kml_filter_pkt *p,
				  enum kml_filter_bad why)
{
	kml_filter_pkt_init(p, p->family);
	p->malformed = why;
	return 0;
}

static __u16 kml_filter_be16(const __u8 *b)
{
	return (__u16)(b[0] << 8 | b[1]);
}

/**
 * kml_filter_parse_ipv4() - check an IPv4 header and fill in a packet
 * @p: its @dir as the caller set it; the rest is filled in
 * @h: the first %KML_FILTER_IPV4_HLEN bytes of the packet, NULL if shorter
 * @len: the packet's length from its IP header on
 * @gso_tcp: a TCP GSO packet, whose tot_len is 0 when it is over 64 KiB
 *	(BIG TCP; iph_totlen())
 *
 * The checks are ip_rcv_core()'s and nftables': version 4, a header of
 * 20 bytes or more, and a total length that covers the header and is
 * within the packet (a shorter one leaves padding, which is allowed).
 *
 * Return: the transport header's offset from @h, or 0 if the packet is
 * malformed (@p->malformed says why).
 */
__u32 kml_filter_parse_ipv4(struct kml_filter_pkt *p, const __u8 *h,
			    __u32 len, bool gso_tcp)
{
	__u32 ihl, tot;

	kml_filter_pkt_init(p, KML_FILTER_FAMILY_IPV4);
	if (!h || len < KML_FILTER_IPV4_HLEN)
		return kml_filter_malformed(p, KML_FILTER_BAD_SHORT);
	if (h[0] >> 4 != 4)
		return kml_filter_malformed(p, KML_FILTER_BAD_VERSION);
	ihl = (h[0] & 0xf) * 4u;
	if (ihl < KML_FILTER_IPV4_HLEN)
		return kml_filter_malformed(p, KML_FILTER_BAD_IHL);
	tot = kml_filter_be16(h + 2);
	if (!tot && gso_tcp)
		tot = len;
	if (tot < ihl || tot > len)
		return kml_filter_malformed(p, KML_FILTER_BAD_LENGTH);
	p->proto = h[9];
	/* the fragment offset, in 8-byte units, below the 3 flag bits */
	p->later_frag = !!(kml_filter_be16(h + 6) & 0x1fff);
	memcpy(p->src, h + 12, 4);
	memcpy(p->dst, h + 16, 4);
	return ihl;
}

/**
 * kml_filter_parse_ipv6() - check an IPv6 fixed header and fill in a packet
 * @p: its @dir as the caller set it; the rest is filled in
 * @h: the first %KML_FILTER_IPV6_HLEN bytes of the packet, NULL if shorter
 * @len: the packet's length from its IP header on
 * @gso_tcp: a TCP GSO packet, whose payload length is 0 when it is over
 *	64 KiB (BIG TCP)
 *
 * The checks are ip6_rcv_core()'s and nftables': version 6 and a payload
 * length within the packet. The caller then walks the extension headers
 * (ipv6_find_hdr(), which needs an skb) and hands what it found to
 * kml_filter_ipv6_upper().
 *
 * Return: 0, or -EINVAL if the packet is malformed (@p->malformed says why).
 */
int kml_filter_parse_ipv6(struct kml_filter_pkt *p, const __u8 *h, __u32 len,
			  bool gso_tcp)
{
	enum kml_filter_bad why = KML_FILTER_BAD_NONE;
	__u32 plen;

	kml_filter_pkt_init(p, KML_FILTER_FAMILY_IPV6);
	if (!h || len < KML_FILTER_IPV6_HLEN) {
		why = KML_FILTER_BAD_SHORT;
	} else if (h[0] >> 4 != 6) {
		why = KML_FILTER_BAD_VERSION;
	} else {
		plen = kml_filter_be16(h + 4);
		if (!plen && gso_tcp)
			plen = len - KML_FILTER_IPV6_HLEN;
		if (plen > len - KML_FILTER_IPV6_HLEN)
			why = KML_FILTER_BAD_LENGTH;
	}
	if (why) {
		kml_filter_malformed(p, why);
		return -EINVAL;
	}
	memcpy(p->src, h + 8, 16);
	memcpy(p->dst, h + 24, 16);
	return 0;
}

/**
 * kml_filter_ipv6_upper() - the protocol past an IPv6 packet's extension headers
 * @p: a packet kml_filter_parse_ipv6() accepted
 * @proto: what ipv6_find_hdr(skb, &off, -1, &fragoff, &flags) returned,
 *	with %IP6_FH_F_AUTH in flags: the upper-layer protocol (AH stops the
 *	walk, as an IPv4 packet's protocol is AH); for a later fragment the
 *	one its fragment header names (as IPv4 keeps its protocol in every
 *	fragment); -ENOENT for a later fragment whose header names another
 *	extension header; another error for a chain that does not parse
 * @fragoff: ipv6_find_hdr()'s fragment offset, non-zero for a later fragment
 * @frag: the walk passed a fragment header (%IP6_FH_F_FRAG in its flags)
 *
 * A chain that does not parse keeps the addresses, which the checked
 * fixed header holds. In a fragment it is %KML_FILTER_BAD_FRAGMENT, which
 * the hook drops: Linux reassembles a first fragment cut short inside its
 * extension headers (ipv6frag_thdr_truncated() cannot walk them either),
 * and the whole datagram would arrive with ports no rule saw.
 */
void kml_filter_ipv6_upper(struct kml_filter_pkt *p, int proto, __u16 fragoff,
			   bool frag)
{
	if (proto == -ENOENT) {
		/* its fragmentable part starts with a header we cannot see */
		p->later_frag = 1;
		return;
	}
	if (proto < 0) {
		p->malformed = frag ? KML_FILTER_BAD_FRAGMENT :
				      KML_FILTER_BAD_EXTHDR;
		return;
	}
	p->proto = (__u8)proto;
	p->later_frag = fragoff != 0;
}

/*
 * Fragments. IPv4 reassembles before LOCAL_IN (ip_local_deliver()), so
 * the hook sees whole datagrams there; IPv6 reassembles after it (the
 * fragment header is handled like an upper-layer protocol,
 * ipv6_frag_rcv()), unless nf_defrag_ipv6 is loaded, which conntrack
 * does and the test kernel does not have. A later fragment has no ports,
 * so no port rule can match it: under policy drop, "accept in udp dport
 * 53" would let the first fragment in and drop the rest, and a fragmented
 * IPv6 datagram would never arrive where an IPv4 one does.
 *
 * So on the way in a later fragment is not judged: it goes on to
 * reassembly, and the datagram's fate is its first fragment's, which
 * carries every header a rule can match. Linux discards a first fragment
 * without the whole upper-layer header (RFC 8200 4.5,
 * ipv6frag_thdr_truncated()) and a datagram with overlapping fragments
 * (RFC 5722); the one first fragment it lets through, cut short inside
 * its extension headers, the hook drops (KML_FILTER_BAD_FRAGMENT). So
 * later fragments can neither hide the ports from the hook nor rewrite
 * them. A datagram whose first fragment was dropped is never
 * reassembled; its later fragments expire in the reassembly queue, whose
 * memory the stack bounds (net.ipv6.ip6frag_high_thresh) exactly as it
 * would without a filter (which also means a source "drop in ipv6 src"
 * names can still fill that queue: later fragments are not judged). This
 * gives IPv6 IPv4's verdicts: the datagram arrives if and only if the
 * rules accept its headers.
 *
 * On the way out the stack fragments after LOCAL_OUT (ip_finish_output(),
 * ip6_finish_output()), so only a raw socket sends fragments through the
 * hook: those are judged like any packet, by the protocol their header
 * names and without ports, for IPv4 and IPv6 alike.
 *
 * A router does not reassemble what it forwards (without conntrack's
 * defragmentation, which the test kernel does not have), so forwarded
 * fragments are judged one by one as well: a later fragment matches only
 * rules without ports, and else meets the forward policy. That is what
 * an nftables forward chain without conntrack does, and it never lets a
 * fragment slip past "policy fwd drop".
 */

