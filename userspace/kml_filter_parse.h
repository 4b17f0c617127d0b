/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml-filter's rule language, shared by the client, the selftests, host
 * tests and the fuzz target. One rule is a list of words in any order:
 *
 *	accept|drop  [in] [out] [fwd]  [ipv4|ipv6]  [tcp|udp|icmp|icmpv6|any]
 *	[src ADDR[/LEN]]  [dst ADDR[/LEN]]  [sport P[-Q]]  [dport P[-Q]]
 *	[ct STATE[,STATE...]]   (new established related invalid untracked)
 *
 * The direction words add up; none means in and out (not fwd). A rule
 * file has one rule per line, '#' comments, blank lines, and at most one
 * "policy accept|drop" line (in and out) and one "policy fwd accept|drop"
 * line (forwarded packets).
 */
#ifndef KML_FILTER_PARSE_H
#define KML_FILTER_PARSE_H

#include <stddef.h>
#include <linux/kml_filter.h>

struct kml_filter_ruleset {
	struct kml_filter_rule *rules;
	unsigned int *lines;	/* the file line of each rule, from 1 */
	unsigned int count;
	unsigned int cap;
	__u32 policy;		/* 0 when the file has no policy line */
	__u32 policy_fwd;	/* 0 when it has no "policy fwd" line */
	unsigned int flags;	/* kml_filter_parse_rule_words()'s, set before parsing */
};

/*
 * For each part of a rule, the index of the word that set it, -1 if none
 * did (the part has its default). An address that set the family is also
 * the family's word. kml-filter points at the word the kernel refused.
 */
struct kml_filter_words {
	int action, dir, family, proto, src, dst, sport, dport;
	int ct;		/* the states after 'ct' */
};

/* kml_filter_parse_rule_words() flags */
#define KML_FILTER_PARSE_NO_CHECK	0x1	/* syntax only: leave the rest to the kernel */

int kml_filter_parse_rule(int argc, char *const argv[],
			  struct kml_filter_rule *r, char *err, size_t errlen);
int kml_filter_parse_rule_words(int argc, char *const argv[], struct kml_filter_rule *r,
				struct kml_filter_words *words, unsigned int flags,
				char *err, size_t errlen);
int kml_filter_parse_file(const char *buf, size_t len,
			  struct kml_filter_ruleset *rs, char *err,
			  size_t errlen);
int kml_filter_parse_policy(int argc, char *const argv[], __u32 *policy,
			    int *fwd, char *err, size_t errlen);
void kml_filter_ruleset_free(struct kml_filter_ruleset *rs);
int kml_filter_file_line_words(const char *buf, size_t len, unsigned int lineno,
			       char *line, size_t linelen, char **words, int max);
int kml_filter_format_rule(const struct kml_filter_rule *r, char *buf,
			   size_t len);
const char *kml_filter_verdict_name(__u32 v);
const char *kml_filter_ct_state_name(__u8 bit);
__u8 kml_filter_ct_state_bit(unsigned int i);

#endif
