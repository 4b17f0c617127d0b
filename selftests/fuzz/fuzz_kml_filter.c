// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for kml-filter's rule-file parser, and through it the
 * module's rule checks and lookup index. Invariants beyond "does not
 * crash": every rule the parser accepts passes the kernel's check,
 * formats and re-parses to the same bytes, and the index finds the same
 * first match as a linear walk for packets built from the input, some of
 * them malformed (which only rules without protocol, address or port may
 * match). A log-only rule (`log` alone) decides nothing: the first match
 * is that of the others, and kml_filter_tap() must give the log-only
 * rules that match before it, in order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kml_filter/kml_filter_logic.h"
#include "../../userspace/kml_filter_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct kml_filter_rule *r)
{
	struct kml_filter_ruleset rs = { 0 };
	char text[256], err[300];
	int n;

	if (kml_filter_rule_check(r, NULL))
		abort();
	n = kml_filter_format_rule(r, text, sizeof(text) - 1);
	if (n < 0)
		abort();
	text[n++] = '\n';
	if (kml_filter_parse_file(text, (size_t)n, &rs, err, sizeof(err)) ||
	    rs.count != 1 || memcmp(&rs.rules[0], r, sizeof(*r)))
		abort();
	kml_filter_ruleset_free(&rs);
}

static void check_lookup(const struct kml_filter_ruleset *rs,
			 const uint8_t *data, size_t size)
{
	void *mem = malloc(kml_filter_index_mem(rs->count));
	struct kml_filter_index ix;
	size_t off;
	__u32 i, want, best, t;

	if (!mem)
		abort();
	kml_filter_index_build(&ix, rs->rules, rs->count, mem);
	/* each packet: one rule's own fields, perturbed by input bytes */
	for (off = 0; off < rs->count && off < 64; off++) {
		const struct kml_filter_rule *r = &rs->rules[off];
		struct kml_filter_pkt p = { 0 };
		uint8_t b = size ? data[off % size] : 0;

		p.family = r->family ? r->family : (b & 1 ? 6 : 4);
		p.proto = r->proto ? r->proto : (b & 2 ? 6 : 17);
		p.dir = b & 4 ? KML_FILTER_DIR_OUT : KML_FILTER_DIR_IN;
		memcpy(p.src, r->src, 16);
		memcpy(p.dst, r->dst, 16);
		if (b & 8)
			p.src[p.family == 4 ? 3 : 15] ^= b;
		p.has_ports = (p.proto == 6 || p.proto == 17) && !(b & 16);
		p.sport = r->sport_lo + (b >> 5);
		p.dport = r->dport_hi - (b >> 6);
		/* headers that did not parse, addresses left to match */
		if (size > 1 && (data[(off + 1) % size] & 0x81) == 0x81) {
			p.malformed = KML_FILTER_BAD_VERSION;
			p.proto = 0;
			p.has_ports = 0;
		}
		want = KML_FILTER_NOMATCH;
		for (i = 0; i < rs->count; i++)
			if (rs->rules[i].action != KML_FILTER_LOG &&
			    kml_filter_match(&rs->rules[i], &p)) {
				want = i;
				break;
			}
		if (kml_filter_lookup(&ix, &p) != want)
			abort();
		best = want < rs->count ? want : rs->count;
		t = ix.taps ? kml_filter_tap(&ix, ix.taps, &p, best) : best;
		for (i = 0; i < best; i++) {
			if (rs->rules[i].action != KML_FILTER_LOG ||
			    !kml_filter_match(&rs->rules[i], &p))
				continue;
			if (t != i)
				abort();
			t = kml_filter_tap(&ix, ix.next[t], &p, best);
		}
		if (t != best)
			abort();
		if (p.malformed && want != KML_FILTER_NOMATCH &&
		    (rs->rules[want].proto || rs->rules[want].src_len ||
		     rs->rules[want].dst_len))
			abort();
	}
	free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kml_filter_ruleset rs = { 0 };
	char err[300];
	unsigned int i;

	if (kml_filter_parse_file((const char *)data, size, &rs, err, sizeof(err)) == 0) {
		for (i = 0; i < rs.count && i < 256; i++)
			check_round_trip(&rs.rules[i]);
		check_lookup(&rs, data, size);
	} else if (strncmp(err, "line ", 5)) {
		abort();
	}
	kml_filter_ruleset_free(&rs);
	return 0;
}
