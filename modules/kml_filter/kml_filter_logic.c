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
 * kml_filter_rule_check() - is this a rule the kernel accepts?
 * @r: the rule
 * @why: if not NULL, set to a short reason when the rule is refused
 *
 * Return: 0 or -EINVAL.
 */
int kml_filter_rule_check(const struct kml_filter_rule *r, const char **why)
{
	const char *bad = NULL;
	unsigned int bits = kml_filter_addr_bits(r->family);

	if (r->family != KML_FILTER_FAMILY_ANY &&
	    r->family != KML_FILTER_FAMILY_IPV4 &&
	    r->family != KML_FILTER_FAMILY_IPV6)
		bad = "unknown family";
	else if (r->proto != KML_FILTER_PROTO_ANY &&
		 r->proto != KML_FILTER_PROTO_ICMP &&
		 r->proto != KML_FILTER_PROTO_TCP &&
		 r->proto != KML_FILTER_PROTO_UDP &&
		 r->proto != KML_FILTER_PROTO_ICMPV6)
		bad = "unknown protocol";
	else if ((r->proto == KML_FILTER_PROTO_ICMP &&
		  r->family == KML_FILTER_FAMILY_IPV6) ||
		 (r->proto == KML_FILTER_PROTO_ICMPV6 &&
		  r->family == KML_FILTER_FAMILY_IPV4))
		bad = "protocol of the other family";
	else if (!r->dir || (r->dir & ~KML_FILTER_DIR_BOTH))
		bad = "bad direction";
	else if (r->action != KML_FILTER_ACCEPT &&
		 r->action != KML_FILTER_DROP)
		bad = "bad action";
	else if ((r->src_len || r->dst_len) &&
		 r->family == KML_FILTER_FAMILY_ANY)
		bad = "address without a family";
	else if (r->src_len > bits || r->dst_len > bits)
		bad = "bad prefix length";
	else if (!kml_filter_prefix_ok(r->src, r->src_len, bits) ||
		 !kml_filter_prefix_ok(r->dst, r->dst_len, bits))
		bad = "address has bits set past its prefix length";
	else if (r->sport_lo > r->sport_hi || r->dport_lo > r->dport_hi)
		bad = "reversed port range";
	else if ((!kml_filter_ports_any(r->sport_lo, r->sport_hi) ||
		  !kml_filter_ports_any(r->dport_lo, r->dport_hi)) &&
		 r->proto != KML_FILTER_PROTO_TCP &&
		 r->proto != KML_FILTER_PROTO_UDP)
		bad = "ports need tcp or udp";
	else if (r->pad[0] || r->pad[1] || r->reserved[0] || r->reserved[1])
		bad = "padding not zero";

	if (why)
		*why = bad;
	return bad ? -EINVAL : 0;
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
	if (r->src_len && !kml_filter_prefix_match(r->src, p->src, r->src_len))
		return false;
	if (r->dst_len && !kml_filter_prefix_match(r->dst, p->dst, r->dst_len))
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
	__u32 n = 16;

	while (n < 2 * nrules)
		n <<= 1;
	return n;
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

		if (kind == KML_FK_LINEAR) {
			head = &ix->linear;
		} else {
			__u32 h = kml_filter_rule_hash(ix, r, kind);

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
 * kml_filter_lookup() - the first rule that matches a packet
 * @ix: the index
 * @p: the packet
 *
 * Return: the rule's index, or %KML_FILTER_NOMATCH.
 */
__u32 kml_filter_lookup(const struct kml_filter_index *ix,
			const struct kml_filter_pkt *p)
{
	__u32 best = KML_FILTER_NOMATCH;
	__u32 h;

	if (!ix->nrules)
		return best;
	if (p->has_ports) {
		h = kml_filter_hash_port(KML_FK_DPORT, p->proto, p->dport);
		best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p, best);
		h = kml_filter_hash_port(KML_FK_SPORT, p->proto, p->sport);
		best = kml_filter_walk(ix, ix->bucket[h & ix->mask], p, best);
	}
	best = kml_filter_probe_prefixes(ix, p, 1, best);
	best = kml_filter_probe_prefixes(ix, p, 0, best);
	return kml_filter_walk(ix, ix->linear, p, best);
}
