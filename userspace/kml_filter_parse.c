// SPDX-License-Identifier: GPL-2.0
/*
 * Text to struct kml_filter_rule and back. Every rule this parser returns
 * has passed the same kml_filter_rule_check() the kernel runs, so a rule
 * file is either entirely valid or names the line and the word that is
 * not; and formatting then parsing a rule gives the same rule.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kml_filter_parse.h"
#include "../modules/kml_filter/kml_filter_logic.h"

#define KML_MAX_WORDS	32

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A policy's or a rule action's word; "log" is a rule action only. */
const char *kml_filter_verdict_name(__u32 v)
{
	switch (v) {
	case KML_FILTER_ACCEPT:
		return "accept";
	case KML_FILTER_DROP:
		return "drop";
	case KML_FILTER_LOG:
		return "log";
	default:
		return "?";
	}
}

static int parse_port(const char *s, const char **end, __u16 *out)
{
	unsigned long v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535)
			return -1;
		p++;
	}
	*out = (__u16)v;
	*end = p;
	return 0;
}

static int parse_ports(const char *s, __u16 *lo, __u16 *hi, bool check,
		       char *err, size_t errlen)
{
	const char *end;

	if (parse_port(s, &end, lo))
		return fail(err, errlen, "bad port '%s': give 0..65535 or LOW-HIGH", s);
	*hi = *lo;
	if (*end == '-' && !parse_port(end + 1, &end, hi) && !*end) {
		if (check && *lo > *hi)
			return fail(err, errlen, "reversed port range '%s'", s);
		return 0;
	}
	if (*end)
		return fail(err, errlen, "bad port '%s': give 0..65535 or LOW-HIGH", s);
	return 0;
}

static int parse_prefix(const char *s, __u8 *family, __u8 *addr, __u8 *len,
			bool check, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	unsigned int bits;
	__u8 fam, masked[16];
	char *slash, *end;
	unsigned long l;

	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "bad address '%s'", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1) {
		fam = KML_FILTER_FAMILY_IPV4;
		bits = 32;
	} else if (inet_pton(AF_INET6, buf, addr) == 1) {
		fam = KML_FILTER_FAMILY_IPV6;
		bits = 128;
	} else {
		return fail(err, errlen, "bad address '%s'", s);
	}
	l = bits;
	if (slash) {
		errno = 0;
		l = strtoul(slash + 1, &end, 10);
		if (slash[1] < '0' || slash[1] > '9' || *end || errno || l > bits)
			return fail(err, errlen, "bad prefix length in '%s': 0..%u",
				    s, bits);
	}
	if (*family && *family != fam)
		return fail(err, errlen, "'%s' is not of the rule's address family", s);
	memcpy(masked, addr, 16);
	kml_filter_prefix_mask(masked, (unsigned int)l);
	if (check && memcmp(masked, addr, 16)) {
		char good[INET6_ADDRSTRLEN];

		inet_ntop(fam == KML_FILTER_FAMILY_IPV4 ? AF_INET : AF_INET6,
			  masked, good, sizeof(good));
		return fail(err, errlen, "'%s' has bits set past /%lu (did you mean %s/%lu?)",
			    s, l, good, l);
	}
	*family = fam;
	*len = (__u8)l;
	return 0;
}

/* Decimal digits only, no sign or space, at most @max. */
static int parse_uint(const char *s, const char **end, unsigned long max,
		      unsigned long *out)
{
	unsigned long v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		unsigned long d = (unsigned long)(*p - '0');

		/* checked before it can wrap: unsigned long is 32 bits in kml-filter-m32 */
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
		p++;
	}
	*out = v;
	*end = p;
	return 0;
}

/*
 * "N" or "N/s": records per second. Any 32-bit N is syntax, so that
 * --no-check can send what the kernel refuses; 0 and what is above
 * KML_FILTER_LOG_MAX_RATE are judged with the rest of the rule.
 */
static int parse_log_rate(const char *s, __u32 *rate, bool check, char *err,
			  size_t errlen)
{
	const char *end;
	unsigned long v;

	if (parse_uint(s, &end, 0xffffffffUL, &v) || (*end && strcmp(end, "/s")) ||
	    (check && !v))
		return fail(err, errlen,
			    "bad log rate '%s': give records per second, 1..%u, as N or N/s",
			    s, KML_FILTER_LOG_MAX_RATE);
	*rate = (__u32)v;
	return 0;
}

static int parse_log_burst(const char *s, __u16 *burst, char *err, size_t errlen)
{
	const char *end;
	unsigned long v;

	if (parse_uint(s, &end, 65535, &v) || *end)
		return fail(err, errlen, "bad log burst '%s': give 1..65535", s);
	*burst = (__u16)v;
	return 0;
}

/* The direction words, in the order a rule is formatted with them. */
static const struct {
	const char *name;
	__u8 dir;
} kml_dirs[] = {
	{ "in", KML_FILTER_DIR_IN },
	{ "out", KML_FILTER_DIR_OUT },
	{ "fwd", KML_FILTER_DIR_FWD },
};

static const struct {
	const char *name;
	__u8 proto;
} kml_protos[] = {
	{ "any", KML_FILTER_PROTO_ANY },
	{ "icmp", KML_FILTER_PROTO_ICMP },
	{ "tcp", KML_FILTER_PROTO_TCP },
	{ "udp", KML_FILTER_PROTO_UDP },
	{ "icmpv6", KML_FILTER_PROTO_ICMPV6 },
};

/*
 * Connection states as nftables spells them, in the order the formatter
 * prints them back (so `list` output is one canonical text per rule).
 */
static const struct {
	const char *name;
	__u8 bit;
} kml_ct_states[] = {
	{ "new", KML_FILTER_CT_NEW },
	{ "established", KML_FILTER_CT_ESTABLISHED },
	{ "related", KML_FILTER_CT_RELATED },
	{ "invalid", KML_FILTER_CT_INVALID },
	{ "untracked", KML_FILTER_CT_UNTRACKED },
};

#define KML_CT_NSTATES	(sizeof(kml_ct_states) / sizeof(kml_ct_states[0]))

/* "established,related" to bits; a state named twice is a mistake too. */
static int parse_ct(const char *s, __u8 *out, char *err, size_t errlen)
{
	const char *p = s;
	__u8 bits = 0;
	size_t k, n;

	for (;;) {
		n = strcspn(p, ",");
		for (k = 0; k < KML_CT_NSTATES; k++)
			if (strlen(kml_ct_states[k].name) == n &&
			    !strncmp(p, kml_ct_states[k].name, n))
				break;
		/* the list named too only when there is one, so the line stays short */
		if (k == KML_CT_NSTATES && n == strlen(s))
			return fail(err, errlen,
				    "bad connection state '%s': give new, established, related, invalid or untracked, separated by commas",
				    s);
		if (k == KML_CT_NSTATES)
			return fail(err, errlen,
				    "bad connection state '%.*s' in '%s': give new, established, related, invalid or untracked, separated by commas",
				    (int)n, p, s);
		if (bits & kml_ct_states[k].bit)
			return fail(err, errlen, "connection state '%s' given twice in '%s'",
				    kml_ct_states[k].name, s);
		bits |= kml_ct_states[k].bit;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = bits;
	return 0;
}

/**
 * kml_filter_ct_state_name() - the word of one connection state bit
 * @bit: one %KML_FILTER_CT_* bit
 *
 * Return: its name, or NULL for a bit that is no state.
 */
const char *kml_filter_ct_state_name(__u8 bit)
{
	size_t k;

	for (k = 0; k < KML_CT_NSTATES; k++)
		if (kml_ct_states[k].bit == bit)
			return kml_ct_states[k].name;
	return NULL;
}

/**
 * kml_filter_ct_state_bit() - the @i-th connection state in canonical order
 * @i: 0, 1, ...
 *
 * Return: its bit, or 0 past the last one.
 */
__u8 kml_filter_ct_state_bit(unsigned int i)
{
	return i < KML_CT_NSTATES ? kml_ct_states[i].bit : 0;
}

/**
 * kml_filter_parse_rule_words() - words to a rule, and which word said what
 * @argc: number of words
 * @argv: the words
 * @r: filled in (zeroed first)
 * @words: if not NULL, set to the index in @argv of the word that set each
 *	part of the rule (-1 for a part no word set): for src, dst, sport
 *	and dport the value after the keyword, since that is what a reason
 *	like "reversed port range" is about
 * @flags: %KML_FILTER_PARSE_NO_CHECK: only the words' syntax is checked,
 *	not what the kernel checks too (reversed ranges, bits past a prefix,
 *	kml_filter_rule_check(), a missing action), so a test can send the
 *	kernel a rule it must refuse and see its reason
 * @err: set to a one-line reason on failure
 * @errlen: size of @err
 *
 * The direction words (in, out, fwd) add up; a rule without any is in
 * and out (%KML_FILTER_DIR_BOTH), never forwarded traffic. 'log' with
 * accept or drop sets the rule's log rate and burst ('rate N[/s]',
 * 'burst N', else %KML_FILTER_LOG_DEFAULT_RATE and _BURST); 'log'
 * without either is the action %KML_FILTER_LOG, and the word of the
 * action then.
 *
 * Return: 0, or -1 with @err set.
 */
int kml_filter_parse_rule_words(int argc, char *const argv[], struct kml_filter_rule *r,
				struct kml_filter_words *words, unsigned int flags,
				char *err, size_t errlen)
{
	bool check = !(flags & KML_FILTER_PARSE_NO_CHECK);
	struct kml_filter_words local;
	unsigned int seen = 0;
	const char *why;
	int i;
	size_t k;

	if (!words)
		words = &local;
	words->action = words->dir = words->family = words->proto = -1;
	words->src = words->dst = words->sport = words->dport = -1;
	words->ct = words->log = -1;
	memset(r, 0, sizeof(*r));
	r->sport_hi = r->dport_hi = 0xffff;
	for (i = 0; i < argc; i++) {
		const char *w = argv[i];
		unsigned int bit;
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		__u8 fam_before = r->family;

		for (k = 0; k < sizeof(kml_dirs) / sizeof(kml_dirs[0]); k++)
			if (!strcmp(w, kml_dirs[k].name))
				break;
		if (k < sizeof(kml_dirs) / sizeof(kml_dirs[0])) {
			/* one bit of the rule's mask each, so "in fwd" is both */
			if (r->dir & kml_dirs[k].dir)
				return fail(err, errlen, "'%s' given twice", w);
			r->dir |= kml_dirs[k].dir;
			words->dir = i;
			continue;
		}
		if (!strcmp(w, "accept") || !strcmp(w, "drop")) {
			bit = 1;
			r->action = w[0] == 'a' ? KML_FILTER_ACCEPT : KML_FILTER_DROP;
			words->action = i;
		} else if (!strcmp(w, "ipv4") || !strcmp(w, "ipv6")) {
			__u8 fam = w[3] == '4' ? KML_FILTER_FAMILY_IPV4 :
						 KML_FILTER_FAMILY_IPV6;

			bit = 4;
			if (r->family && r->family != fam)
				return fail(err, errlen, "'%s' conflicts with the rule's addresses", w);
			r->family = fam;
			words->family = i;
		} else if (!strcmp(w, "src") || !strcmp(w, "dst") ||
			   !strcmp(w, "sport") || !strcmp(w, "dport")) {
			bit = w[0] == 's' ? (w[1] == 'r' ? 16 : 64) :
					    (w[1] == 's' ? 32 : 128);
			if (!arg)
				return fail(err, errlen, "'%s' needs a value", w);
			if (seen & bit)
				return fail(err, errlen, "'%s' given twice", w);
			if (bit == 16 && parse_prefix(arg, &r->family, r->src,
						      &r->src_len, check, err, errlen))
				return -1;
			if (bit == 32 && parse_prefix(arg, &r->family, r->dst,
						      &r->dst_len, check, err, errlen))
				return -1;
			if (bit == 64 && parse_ports(arg, &r->sport_lo,
						     &r->sport_hi, check, err, errlen))
				return -1;
			if (bit == 128 && parse_ports(arg, &r->dport_lo,
						      &r->dport_hi, check, err, errlen))
				return -1;
			i++;
			if (bit == 16)
				words->src = i;
			else if (bit == 32)
				words->dst = i;
			else if (bit == 64)
				words->sport = i;
			else
				words->dport = i;
			/* an address that gives the family is the family's word */
			if (!fam_before && r->family)
				words->family = i;
		} else if (!strcmp(w, "log")) {
			bit = 512;
			words->log = i;
		} else if (!strcmp(w, "rate") || !strcmp(w, "burst")) {
			bit = w[0] == 'r' ? 1024 : 2048;
			if (!arg)
				return fail(err, errlen, "'%s' needs a value, e.g. 'log %s %s'", w, w,
					    bit == 1024 ? "10/s" : "5");
			if (seen & bit)
				return fail(err, errlen, "'%s' given twice", w);
			if (bit == 1024 && parse_log_rate(arg, &r->log_rate, check, err, errlen))
				return -1;
			if (bit == 2048 && parse_log_burst(arg, &r->log_burst, err, errlen))
				return -1;
			i++;
		} else if (!strcmp(w, "ct")) {
			bit = 256;
			if (!arg)
				return fail(err, errlen,
					    "'ct' needs states, e.g. 'ct established,related'");
			if (seen & bit)
				return fail(err, errlen, "'ct' given twice");
			if (parse_ct(arg, &r->ct_state, err, errlen))
				return -1;
			words->ct = ++i;
		} else {
			for (k = 0; k < sizeof(kml_protos) / sizeof(kml_protos[0]); k++)
				if (!strcmp(w, kml_protos[k].name))
					break;
			if (k == sizeof(kml_protos) / sizeof(kml_protos[0]))
				return fail(err, errlen, "unknown word '%s'", w);
			bit = 8;
			r->proto = kml_protos[k].proto;
			words->proto = i;
		}
		if (seen & bit)
			return fail(err, errlen, "'%s': that part of the rule is given twice", w);
		seen |= bit;
	}
	/* the meaning from before the forward hook: this host's traffic */
	if (!r->dir)
		r->dir = KML_FILTER_DIR_BOTH;
	if ((seen & (1024 | 2048)) && !(seen & 512))
		return fail(err, errlen, "'%s' is for logging: give 'log' too, e.g. 'log rate 10/s burst 5'",
			    seen & 1024 ? "rate" : "burst");
	if (seen & 512) {
		/* log alone is the action; with accept or drop, it is theirs */
		if (!r->action) {
			r->action = KML_FILTER_LOG;
			words->action = words->log;
		}
		if (!(seen & 1024))
			r->log_rate = KML_FILTER_LOG_DEFAULT_RATE;
		if (!(seen & 2048))
			r->log_burst = KML_FILTER_LOG_DEFAULT_BURST;
	}
	if (!check)
		return 0;
	if (!r->action)
		return fail(err, errlen, "the rule needs 'accept' or 'drop'");
	if (kml_filter_rule_check(r, &why))
		return fail(err, errlen, "%s", why);
	return 0;
}

/**
 * kml_filter_parse_rule() - words to a rule
 * @argc: number of words
 * @argv: the words
 * @r: filled in (zeroed first)
 * @err: set to a one-line reason on failure
 * @errlen: size of @err
 *
 * kml_filter_parse_rule_words() with every check and no word map.
 * Return: 0, or -1 with @err set.
 */
int kml_filter_parse_rule(int argc, char *const argv[],
			  struct kml_filter_rule *r, char *err, size_t errlen)
{
	return kml_filter_parse_rule_words(argc, argv, r, NULL, 0, err, errlen);
}

/**
 * kml_filter_parse_policy() - the words after "policy": [fwd] accept|drop
 * @argc: number of words
 * @argv: the words
 * @policy: set to %KML_FILTER_ACCEPT or %KML_FILTER_DROP
 * @fwd: set to 1 for the forward hook's policy ("fwd"), 0 for the in and
 *	out one
 * @err: set to a one-line reason on failure
 * @errlen: size of @err
 *
 * Return: 0, or -1 with @err set.
 */
int kml_filter_parse_policy(int argc, char *const argv[], __u32 *policy,
			    int *fwd, char *err, size_t errlen)
{
	*fwd = argc == 2 && !strcmp(argv[0], "fwd");
	argc -= *fwd;
	argv += *fwd;
	if (argc != 1 || (strcmp(argv[0], "accept") && strcmp(argv[0], "drop")))
		return fail(err, errlen, "give 'policy [fwd] accept' or 'policy [fwd] drop'");
	*policy = argv[0][0] == 'a' ? KML_FILTER_ACCEPT : KML_FILTER_DROP;
	return 0;
}

static int ruleset_push(struct kml_filter_ruleset *rs,
			const struct kml_filter_rule *r, unsigned int lineno)
{
	if (rs->count == rs->cap) {
		unsigned int cap = rs->cap ? rs->cap * 2 : 64;
		struct kml_filter_rule *n;
		unsigned int *l;

		n = realloc(rs->rules, cap * sizeof(*n));
		if (!n)
			return -1;
		rs->rules = n;
		l = realloc(rs->lines, cap * sizeof(*l));
		if (!l)
			return -1;
		rs->lines = l;
		rs->cap = cap;
	}
	rs->lines[rs->count] = lineno;
	rs->rules[rs->count++] = *r;
	return 0;
}

/* A line's words, split in place; the comment already cut. -1: too many. */
static int split_words(char *line, char **words, int max)
{
	char *save = NULL, *w;
	int n = 0;

	for (w = strtok_r(line, " \t\r\v\f", &save); w;
	     w = strtok_r(NULL, " \t\r\v\f", &save)) {
		if (n == max)
			return -1;
		words[n++] = w;
	}
	return n;
}

/* One line, already copied and NUL-terminated, comments cut. */
static int parse_line(char *line, unsigned int lineno, struct kml_filter_ruleset *rs,
		      char *err, size_t errlen)
{
	char *words[KML_MAX_WORDS];
	struct kml_filter_rule r;
	int n = split_words(line, words, KML_MAX_WORDS);

	if (n < 0)
		return fail(err, errlen, "too many words");
	if (!n)
		return 0;
	if (!strcmp(words[0], "policy")) {
		__u32 policy;
		int fwd;

		if (kml_filter_parse_policy(n - 1, words + 1, &policy, &fwd,
					    err, errlen))
			return -1;
		if (fwd ? rs->policy_fwd : rs->policy)
			return fail(err, errlen, fwd ? "a second 'policy fwd' line" :
					   "a second policy line");
		if (fwd)
			rs->policy_fwd = policy;
		else
			rs->policy = policy;
		return 0;
	}
	if (kml_filter_parse_rule_words(n, words, &r, NULL, rs->flags, err, errlen))
		return -1;
	if (rs->count >= KML_FILTER_MAX_RULES)
		return fail(err, errlen, "more than %u rules", KML_FILTER_MAX_RULES);
	if (ruleset_push(rs, &r, lineno))
		return fail(err, errlen, "out of memory");
	return 0;
}

/**
 * kml_filter_parse_file() - a rule file to a rule set
 * @buf: the file's bytes (need not be NUL-terminated)
 * @len: their number
 * @rs: filled in; zero it first (then set ->flags if need be), free with
 *	kml_filter_ruleset_free()
 * @err: set to "line N: reason" on failure
 * @errlen: size of @err
 *
 * Return: 0, or -1 with @err set.
 */
int kml_filter_parse_file(const char *buf, size_t len,
			  struct kml_filter_ruleset *rs, char *err,
			  size_t errlen)
{
	char line[1024], why[256];
	size_t pos = 0;
	unsigned int lineno = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char *hash;

		lineno++;
		if (n >= sizeof(line))
			return fail(err, errlen, "line %u: longer than %zu bytes",
				    lineno, sizeof(line) - 1);
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos += n + 1;
		if (strlen(line) != n)
			return fail(err, errlen, "line %u: NUL byte", lineno);
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		if (parse_line(line, lineno, rs, why, sizeof(why)))
			return fail(err, errlen, "line %u: %s", lineno, why);
	}
	return 0;
}

/**
 * kml_filter_file_line_words() - the words of one line of a rule file
 * @buf: the file's bytes, as given to kml_filter_parse_file()
 * @len: their number
 * @lineno: the line, from 1 (a rule's ->lines entry)
 * @line: set to the line, comment cut, split in place
 * @linelen: its size
 * @words: set to the words, as kml_filter_parse_file() saw them
 * @max: room in @words
 *
 * For pointing at a word of a rule the kernel refused, after the file
 * was parsed whole: the words are split as the parser split them.
 * Return: the number of words, or -1 (no such line, or too long).
 */
int kml_filter_file_line_words(const char *buf, size_t len, unsigned int lineno,
			       char *line, size_t linelen, char **words, int max)
{
	size_t pos = 0, n;
	unsigned int at = 1;
	const char *nl;
	char *hash;

	while (at < lineno) {
		nl = pos < len ? memchr(buf + pos, '\n', len - pos) : NULL;
		if (!nl)
			return -1;
		pos = (size_t)(nl - buf) + 1;
		at++;
	}
	if (!lineno || pos >= len)
		return -1;
	nl = memchr(buf + pos, '\n', len - pos);
	n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
	if (n >= linelen)
		return -1;
	memcpy(line, buf + pos, n);
	line[n] = '\0';
	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	return split_words(line, words, max);
}

void kml_filter_ruleset_free(struct kml_filter_ruleset *rs)
{
	free(rs->rules);
	free(rs->lines);
	memset(rs, 0, sizeof(*rs));
}

static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n;
}

static void put_prefix(char *buf, size_t len, size_t *at, const char *key,
		       __u8 family, const __u8 *addr, __u8 plen)
{
	char a[INET6_ADDRSTRLEN];
	int af = family == KML_FILTER_FAMILY_IPV4 ? AF_INET : AF_INET6;

	inet_ntop(af, addr, a, sizeof(a));
	if (plen == (af == AF_INET ? 32 : 128))
		put(buf, len, at, " %s %s", key, a);
	else
		put(buf, len, at, " %s %s/%u", key, a, plen);
}

static void put_ports(char *buf, size_t len, size_t *at, const char *key,
		      __u16 lo, __u16 hi)
{
	if (lo == 0 && hi == 0xffff)
		return;
	if (lo == hi)
		put(buf, len, at, " %s %u", key, lo);
	else
		put(buf, len, at, " %s %u-%u", key, lo, hi);
}

/**
 * kml_filter_format_rule() - a rule in the words kml_filter_parse_rule() reads
 * @r: a valid rule
 * @buf: output
 * @len: its size; %KML_FILTER_RULE_TEXT_MAX bytes always suffice
 *
 * Return: the length of the text, or -1 if it did not fit.
 */
int kml_filter_format_rule(const struct kml_filter_rule *r, char *buf,
			   size_t len)
{
	size_t k, at = 0;

	put(buf, len, &at, "%s", kml_filter_verdict_name(r->action));
	/* in and out is what no direction word means */
	if (r->dir != KML_FILTER_DIR_BOTH)
		for (k = 0; k < sizeof(kml_dirs) / sizeof(kml_dirs[0]); k++)
			if (r->dir & kml_dirs[k].dir)
				put(buf, len, &at, " %s", kml_dirs[k].name);
	/* an address names the family already */
	if (r->family && !r->src_len && !r->dst_len)
		put(buf, len, &at, " ipv%u", r->family);
	for (k = 1; k < sizeof(kml_protos) / sizeof(kml_protos[0]); k++)
		if (r->proto == kml_protos[k].proto)
			put(buf, len, &at, " %s", kml_protos[k].name);
	if (r->src_len)
		put_prefix(buf, len, &at, "src", r->family, r->src, r->src_len);
	if (r->dst_len)
		put_prefix(buf, len, &at, "dst", r->family, r->dst, r->dst_len);
	put_ports(buf, len, &at, "sport", r->sport_lo, r->sport_hi);
	put_ports(buf, len, &at, "dport", r->dport_lo, r->dport_hi);
	if (r->ct_state) {
		const char *sep = " ct ";

		for (k = 0; k < KML_CT_NSTATES; k++)
			if (r->ct_state & kml_ct_states[k].bit) {
				put(buf, len, &at, "%s%s", sep, kml_ct_states[k].name);
				sep = ",";
			}
	}
	/*
	 * Both values always, so that the text says what the rule does
	 * whatever the defaults; a log-only rule's 'log' is its first word.
	 * A --no-check rule's stray values print too, to parse back the same.
	 */
	if (r->action == KML_FILTER_LOG || r->log_rate || r->log_burst)
		put(buf, len, &at, "%s rate %u/s burst %u",
		    r->action == KML_FILTER_LOG ? "" : " log", r->log_rate, r->log_burst);
	return at < len ? (int)at : -1;
}

/**
 * kml_filter_log_event_get() - the logged packet a kml_ring record carries
 * @rec: a record of the ring the log is attached to, @rec->size bytes
 * @ev: set to its payload (copied: the caller may keep it)
 *
 * Return: 0; -ENOENT for a record of another type (a ring may carry
 * others' records); -EINVAL for a log record too short for its event or
 * of no family, which no kernel writes.
 */
int kml_filter_log_event_get(const struct kml_ring_rec *rec, struct kml_filter_log_event *ev)
{
	if (rec->type != KML_FILTER_REC_LOG)
		return -ENOENT;
	if (rec->size < sizeof(*rec) + sizeof(*ev))
		return -EINVAL;
	memcpy(ev, rec + 1, sizeof(*ev));
	if (ev->family != KML_FILTER_FAMILY_IPV4 && ev->family != KML_FILTER_FAMILY_IPV6)
		return -EINVAL;
	return 0;
}

static const char *log_dir_word(__u8 dir)
{
	switch (dir) {
	case KML_FILTER_DIR_IN:
		return "in";
	case KML_FILTER_DIR_OUT:
		return "out";
	case KML_FILTER_DIR_FWD:
		return "fwd";
	default:
		return "?";
	}
}

/* A packet's protocol: the rule word, else its number ("47"). */
static const char *log_proto_word(__u8 proto, char *num, size_t len)
{
	size_t k;

	for (k = 1; k < sizeof(kml_protos) / sizeof(kml_protos[0]); k++)
		if (kml_protos[k].proto == proto)
			return kml_protos[k].name;
	snprintf(num, len, "%u", proto);
	return num;
}

/*
 * An address of the event, with its port when it has ports: IPv6 in
 * brackets then, as in a URL, so that the port cannot be read as a group.
 */
static void log_addr(const struct kml_filter_log_event *ev, const __u8 *addr, __u16 port,
		     bool with_port, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	bool v6 = ev->family == KML_FILTER_FAMILY_IPV6;

	inet_ntop(v6 ? AF_INET6 : AF_INET, addr, a, sizeof(a));
	if (!with_port)
		snprintf(out, len, "%s", a);
	else
		snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", a, port);
}

/**
 * kml_filter_format_log() - one logged packet as a line of `kml-filter log`
 * @ev: the event (kml_filter_log_event_get())
 * @time_ns: its record's timestamp (CLOCK_MONOTONIC), for JSON
 * @json: a JSON object instead of the words
 * @buf: output, without a newline
 * @len: its size; 512 bytes always suffice
 *
 * The words: "rule N ACTION [VERDICT] DIR PROTO SRC -> DST len L
 * [ct STATE] [(S suppressed)]", N numbered from 1 as `list -v` numbers
 * rules, the verdict only when it is not the action (a log-only rule
 * logs a packet that another rule or the policy then decides), ports
 * only when the packet has them. JSON: rule, generation, time_ns, dir,
 * verdict, action, family, proto, src, dst, sport and dport (with
 * ports), len, ct (an array, as `--json list` gives a rule's, when the
 * packet's state is known) and suppressed.
 * Return: the length of the text, or -1 if it did not fit.
 */
int kml_filter_format_log(const struct kml_filter_log_event *ev, uint64_t time_ns, bool json,
			  char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN + 8], dst[INET6_ADDRSTRLEN + 8], num[4];
	const char *proto = log_proto_word(ev->proto, num, sizeof(num));
	const char *ct = ev->ct_state ? kml_filter_ct_state_name(ev->ct_state) : NULL;
	bool ports = ev->has_ports;
	size_t at = 0;

	log_addr(ev, ev->src, ev->sport, ports && !json, src, sizeof(src));
	log_addr(ev, ev->dst, ev->dport, ports && !json, dst, sizeof(dst));
	if (json) {
		put(buf, len, &at,
		    "{\"rule\":%" PRIu64 ",\"generation\":%" PRIu64 ",\"time_ns\":%" PRIu64
		    ",\"dir\":\"%s\",\"verdict\":\"%s\",\"action\":\"%s\",\"family\":\"ipv%u\""
		    ",\"proto\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\"",
		    (uint64_t)ev->rule + 1, (uint64_t)ev->generation, time_ns,
		    log_dir_word(ev->dir), kml_filter_verdict_name(ev->verdict),
		    kml_filter_verdict_name(ev->action), ev->family, proto, src, dst);
		if (ports)
			put(buf, len, &at, ",\"sport\":%u,\"dport\":%u", ev->sport, ev->dport);
		put(buf, len, &at, ",\"len\":%u", ev->len);
		/* one state, or a bit this client has no name for */
		if (ct)
			put(buf, len, &at, ",\"ct\":[\"%s\"]", ct);
		else if (ev->ct_state)
			put(buf, len, &at, ",\"ct\":[\"0x%02x\"]", ev->ct_state);
		put(buf, len, &at, ",\"suppressed\":%" PRIu64 "}", (uint64_t)ev->suppressed);
		return at < len ? (int)at : -1;
	}
	put(buf, len, &at, "rule %" PRIu64 " %s", (uint64_t)ev->rule + 1,
	    kml_filter_verdict_name(ev->action));
	if (ev->verdict != ev->action)
		put(buf, len, &at, " %s", kml_filter_verdict_name(ev->verdict));
	put(buf, len, &at, " %s %s%s %s -> %s len %u", log_dir_word(ev->dir),
	    num == proto ? "proto " : "", proto, src, dst, ev->len);
	if (ct)
		put(buf, len, &at, " ct %s", ct);
	else if (ev->ct_state)
		put(buf, len, &at, " ct 0x%02x", ev->ct_state);
	if (ev->suppressed)
		put(buf, len, &at, " (%" PRIu64 " suppressed)", (uint64_t)ev->suppressed);
	return at < len ? (int)at : -1;
}
