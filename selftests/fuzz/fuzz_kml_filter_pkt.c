// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for kml_filter's packet parsers (the pure half of the
 * hook's kml_filter_parse()) and what the hook does with their result.
 * Input: one control byte, then the packet from its IP header on. The
 * parsers get exactly the fixed header's bytes in a buffer of that size
 * (ASan catches any read past it), or NULL when the packet is shorter,
 * as skb_header_pointer() gives them. Invariants beyond "does not crash":
 * a packet is malformed exactly when the checks written out again here
 * say so, and then nothing but its family and direction is set (and its
 * addresses, for an IPv6 extension header chain that does not parse); a
 * parsed one points its transport header inside the packet; the segment
 * count and bytes are consistent; a malformed packet meets only rules
 * without protocol or port, and without an address unless it kept its
 * addresses; the index agrees with a linear walk.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kml_filter/kml_filter_logic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* one rule of each kind a malformed packet must or must not meet */
static const struct kml_filter_rule rules[] = {
	{ .family = 4, .proto = 17, .dir = 3, .action = 1,
	  .sport_hi = 0xffff, .dport_lo = 9, .dport_hi = 9 },
	{ .family = 4, .dir = 3, .action = 2, .src_len = 1,
	  .sport_hi = 0xffff, .dport_hi = 0xffff },
	{ .family = 6, .dir = 3, .action = 1, .dst_len = 8,
	  .sport_hi = 0xffff, .dport_hi = 0xffff },
	{ .proto = 6, .dir = 1, .action = 2,
	  .sport_hi = 0xffff, .dport_hi = 0xffff },
	{ .family = 6, .dir = 1, .action = 2,
	  .sport_hi = 0xffff, .dport_hi = 0xffff },
	{ .dir = 2, .action = 1, .sport_hi = 0xffff, .dport_hi = 0xffff },
};
#define NRULES (sizeof(rules) / sizeof(rules[0]))

static enum kml_filter_bad expect_bad(int v6, const uint8_t *h, uint32_t len,
				      int gso_tcp)
{
	uint32_t hlen = v6 ? 40 : 20, ihl, tot;

	if (len < hlen)
		return KML_FILTER_BAD_SHORT;
	if (h[0] >> 4 != (v6 ? 6 : 4))
		return KML_FILTER_BAD_VERSION;
	if (v6) {
		tot = (uint32_t)(h[4] << 8 | h[5]);
		if (!tot && gso_tcp)
			return KML_FILTER_BAD_NONE;
		return tot + 40 > len ? KML_FILTER_BAD_LENGTH : KML_FILTER_BAD_NONE;
	}
	ihl = (h[0] & 0xfu) * 4;
	if (ihl < 20)
		return KML_FILTER_BAD_IHL;
	tot = (uint32_t)(h[2] << 8 | h[3]);
	if (!tot && gso_tcp)
		tot = len;
	return tot < ihl || tot > len ? KML_FILTER_BAD_LENGTH : KML_FILTER_BAD_NONE;
}

static void check_only_family_dir(const struct kml_filter_pkt *p)
{
	struct kml_filter_pkt z = { .family = p->family, .dir = p->dir,
				    .malformed = p->malformed };

	if (memcmp(p, &z, sizeof(z)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t ixmem[64];
	struct kml_filter_index ix;
	struct kml_filter_pkt p;
	uint8_t ctl, *h = NULL;
	uint32_t len, hlen, thoff = 0, hdrlen, i, want;
	__u64 packets, bytes;
	int v6, gso_tcp;

	if (size < 1 || kml_filter_index_mem(NRULES) > sizeof(ixmem))
		return 0;
	ctl = data[0];
	data++;
	size--;
	v6 = ctl & 1;
	gso_tcp = !!(ctl & 2);
	/* a short packet may claim to be long: the length is the skb's */
	len = ctl & 4 ? (uint32_t)size + (uint32_t)(ctl >> 5) * 9000 : (uint32_t)size;
	hlen = v6 ? KML_FILTER_IPV6_HLEN : KML_FILTER_IPV4_HLEN;
	if (size >= hlen) {
		h = malloc(hlen);
		if (!h)
			abort();
		memcpy(h, data, hlen);
	}
	memset(&p, 0xa5, sizeof(p));
	p.dir = ctl & 8 ? KML_FILTER_DIR_IN : KML_FILTER_DIR_OUT;
	if (!v6) {
		thoff = kml_filter_parse_ipv4(&p, h, h ? len : 0, gso_tcp);
		if ((thoff == 0) != (p.malformed != 0))
			abort();
	} else if (!kml_filter_parse_ipv6(&p, h, h ? len : 0, gso_tcp)) {
		/* what ipv6_find_hdr() may return, from the input */
		int proto = size > hlen ? data[hlen] : -EBADMSG;

		if (ctl & 16)
			proto = ctl & 32 ? -ENOENT : -EBADMSG;
		kml_filter_ipv6_upper(&p, proto, ctl & 64 ? 8 : 0, ctl & 4);
		thoff = hlen;
	}
	want = expect_bad(v6, h ? data : NULL, h ? len : 0, gso_tcp);
	/* and an IPv6 chain that does not parse, from ipv6_find_hdr() */
	if (p.malformed != want &&
	    !(v6 && !want && (p.malformed == KML_FILTER_BAD_EXTHDR ||
			      p.malformed == KML_FILTER_BAD_FRAGMENT)))
		abort();
	if (p.family != (v6 ? KML_FILTER_FAMILY_IPV6 : KML_FILTER_FAMILY_IPV4) ||
	    p.dir != (ctl & 8 ? KML_FILTER_DIR_IN : KML_FILTER_DIR_OUT))
		abort();
	if (p.malformed) {
		struct kml_filter_pkt q = p;

		/* a broken chain keeps the fixed header's addresses */
		if (kml_filter_addrs_known(&q)) {
			memset(q.src, 0, sizeof(q.src));
			memset(q.dst, 0, sizeof(q.dst));
		}
		check_only_family_dir(&q);
		if (kml_filter_wants_ports(&p) || kml_filter_first_fragment_decides(&p))
			abort();
	} else {
		if (thoff < hlen || thoff > len || thoff > 60 + !!v6 * 40)
			abort();
		if (p.has_ports || (p.later_frag && kml_filter_wants_ports(&p)))
			abort();
		if (kml_filter_wants_ports(&p))
			kml_filter_set_ports(&p, size >= thoff + 4 ? data + thoff : NULL);
	}
	free(h);

	/* segments: one unless GSO; the headers once per segment */
	hdrlen = p.malformed ? 0 : thoff + (ctl & 128 ? 20 : 8);
	kml_filter_wire(len, (uint16_t)(size > 1 ? data[1] : 0),
			(uint16_t)(ctl & 2 ? 1 + (size ? data[0] : 0) * 7 : 0),
			hdrlen, &packets, &bytes);
	if (packets < 1 || (!(ctl & 2) && packets != 1) ||
	    bytes != len + (packets - 1) * hdrlen)
		abort();

	/* the index finds what a linear walk finds */
	kml_filter_index_build(&ix, rules, NRULES, ixmem);
	want = KML_FILTER_NOMATCH;
	for (i = 0; i < NRULES; i++)
		if (kml_filter_match(&rules[i], &p)) {
			want = i;
			break;
		}
	if (kml_filter_lookup(&ix, &p) != want)
		abort();
	if (p.malformed && want != KML_FILTER_NOMATCH &&
	    (rules[want].proto || rules[want].dport_lo || rules[want].dport_hi != 0xffff ||
	     (!kml_filter_addrs_known(&p) && (rules[want].src_len || rules[want].dst_len))))
		abort();
	return 0;
}
