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
 * @dir: %KML_FILTER_DIR_IN or %KML_FILTER_DIR_OUT
 * @has_ports: @sport and @dport are valid (TCP/UDP, not a later fragment)
 * @sport: source port, host byte order
 * @dport: destination port
 * @src: source address, IPv4 in the first 4 bytes, the rest zero
 * @dst: destination address
 * @malformed: why the IP headers did not parse (enum kml_filter_bad), 0 if
 *	they did; a malformed packet has only @family and @dir
 * @later_frag: a fragment other than the first: no ports, and @proto is
 *	the fragment header's (IPv6), 0 when that names an extension header
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
};

/**
 * enum kml_filter_bad - why a packet's IP headers did not parse
 * @KML_FILTER_BAD_NONE: they did
 * @KML_FILTER_BAD_SHORT: shorter than the fixed IP header
 * @KML_FILTER_BAD_VERSION: the version is not the hook's family's
 * @KML_FILTER_BAD_IHL: IPv4 header length below 20 bytes
 * @KML_FILTER_BAD_LENGTH: the header's length field disagrees with the
 *	packet (longer than it, or IPv4 shorter than its own header)
 * @KML_FILTER_BAD_EXTHDR: an IPv6 extension header chain that does not
 *	parse (cut short)
 */
enum kml_filter_bad {
	KML_FILTER_BAD_NONE,
	KML_FILTER_BAD_SHORT,
	KML_FILTER_BAD_VERSION,
	KML_FILTER_BAD_IHL,
	KML_FILTER_BAD_LENGTH,
	KML_FILTER_BAD_EXTHDR,
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
	__u8 nlens[2][2];
	__u8 lens[2][2][128];
};

int kml_filter_rule_check(const struct kml_filter_rule *r, const char **why);
bool kml_filter_match(const struct kml_filter_rule *r,
		      const struct kml_filter_pkt *p);
size_t kml_filter_index_mem(__u32 nrules);

/*
 * What kml_filter_main.c allocates for one rule set, as a 64-bit kernel
 * lays it out (a 32-bit selftest must compute the kernel's numbers, not
 * its own); the kernel checks each at build time.
 * @KML_FILTER_SET_SIZE: sizeof(struct kml_filter_set)
 * @KML_FILTER_PTR_SIZE: one CPU's entry in the array of counter pointers
 * @KML_FILTER_CTR_SIZE: one rule's counters, per CPU and carried over
 * @KML_FILTER_CTR_ALIGN: each CPU's counters are rounded up to this
 */
#define KML_FILTER_SET_SIZE	592
#define KML_FILTER_PTR_SIZE	8
#define KML_FILTER_CTR_SIZE	16
#define KML_FILTER_CTR_ALIGN	64

__u64 kml_filter_ctr_bytes(__u32 nrules);
__u64 kml_filter_set_bytes(__u32 nrules, __u32 ncpus);
void kml_filter_index_build(struct kml_filter_index *ix,
			    const struct kml_filter_rule *rules, __u32 nrules,
			    void *mem);
__u32 kml_filter_lookup(const struct kml_filter_index *ix,
			const struct kml_filter_pkt *p);
enum kml_filter_kind kml_filter_key_of(const struct kml_filter_rule *r);
void kml_filter_prefix_mask(__u8 *addr, unsigned int len);

__u32 kml_filter_parse_ipv4(struct kml_filter_pkt *p, const __u8 *h,
			    __u32 len, bool gso_tcp);
int kml_filter_parse_ipv6(struct kml_filter_pkt *p, const __u8 *h, __u32 len,
			  bool gso_tcp);
void kml_filter_ipv6_upper(struct kml_filter_pkt *p, int proto, __u16 fragoff);
bool kml_filter_not_ip(const struct kml_filter_pkt *p);
bool kml_filter_wants_ports(const struct kml_filter_pkt *p);
void kml_filter_set_ports(struct kml_filter_pkt *p, const __u8 *ports);
bool kml_filter_first_fragment_decides(const struct kml_filter_pkt *p);
void kml_filter_wire(__u32 len, __u16 gso_segs, __u16 gso_size, __u32 hdrlen,
		     __u64 *packets, __u64 *bytes);

#endif /* _KML_FILTER_LOGIC_H */
