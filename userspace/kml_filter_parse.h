/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml-filter's rule language, shared by the client, the selftests, host
 * tests and the fuzz target. One rule is a list of words in any order:
 *
 *	accept|drop|log  [in] [out] [fwd]  [ipv4|ipv6]  [tcp|udp|icmp|icmpv6|any]
 *	[src ADDR[/LEN]]  [dst ADDR[/LEN]]  [sport P[-Q]]  [dport P[-Q]]
 *	[ct STATE[,STATE...]]   (new established related invalid untracked)
 *	[log [rate N[/s]] [burst N]]
 *
 * The direction words add up; none means in and out (not fwd). `log`
 * with accept or drop makes that rule log what it matches; `log` alone
 * is the action that only logs and goes on to the next rule. `rate`
 * (records per second) and `burst` belong to `log`: without them it is
 * rate 10/s, burst 5. A rule
 * file has one rule per line, '#' comments, blank lines, and at most one
 * "policy accept|drop" line (in and out) and one "policy fwd accept|drop"
 * line (forwarded packets).
 */
#ifndef KML_FILTER_PARSE_H
#define KML_FILTER_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kml_filter.h>
#include <linux/kml_ring.h>

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
	/*
	 * 'log': the log rate and burst are blamed on it, whatever word gave
	 * their values, since the kernel blames the rate for a bad burst too
	 */
	int log;
};

/* What `log` alone means: a few records at once, a trickle after that. */
#define KML_FILTER_LOG_DEFAULT_RATE	10
#define KML_FILTER_LOG_DEFAULT_BURST	5

/*
 * The longest text kml_filter_format_rule() writes, its NUL included: a
 * rule with every word at its longest (IPv6 prefixes of 45 characters,
 * all three directions, port ranges, every state) and " log rate
 * 1000000/s burst 65535".
 */
#define KML_FILTER_RULE_TEXT_MAX	248

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
int kml_filter_log_event_get(const struct kml_ring_rec *rec, struct kml_filter_log_event *ev);
int kml_filter_format_log(const struct kml_filter_log_event *ev, uint64_t time_ns, bool json,
			  char *buf, size_t len);
const char *kml_filter_ct_state_name(__u8 bit);
__u8 kml_filter_ct_state_bit(unsigned int i);

#endif
