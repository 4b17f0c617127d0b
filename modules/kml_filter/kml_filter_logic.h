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
};

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
void kml_filter_index_build(struct kml_filter_index *ix,
			    const struct kml_filter_rule *rules, __u32 nrules,
			    void *mem);
__u32 kml_filter_lookup(const struct kml_filter_index *ix,
			const struct kml_filter_pkt *p);
enum kml_filter_kind kml_filter_key_of(const struct kml_filter_rule *r);
void kml_filter_prefix_mask(__u8 *addr, unsigned int len);

#endif /* _KML_FILTER_LOGIC_H */
