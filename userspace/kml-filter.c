// SPDX-License-Identifier: GPL-2.0
/*
 * kml-filter: the client of kml_filter. It talks to the module over its
 * generic netlink family only; `load` is the family's replace in parts
 * (BEGIN, RULES in chunks, COMMIT), so a file of any size is published at
 * once or not at all. It acts on the network namespace the client runs
 * in (`ip netns exec NS kml-filter ...`), like iptables. Rules are written in the words
 * kml_filter_parse.h describes; `list` prints them the same way, so its
 * output can be loaded back. When the kernel refuses a rule, its extended
 * ack names the attribute at fault, which the client maps back to the
 * word of the command line that set it. `log` follows the packet log:
 * it hands the module a kml_ring to write log records into
 * (LOG_ATTACH) and prints them as they come.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kml_cli.h"
#include "kml_filter_genl.h"
#include "kml_filter_parse.h"
#include "kml_nl.h"
#include "kml_ring_lib.h"

static int json;
/* --no-check: send rules as written, for the kernel to judge (tests) */
static int no_check;
static struct kml_nl_sock nl = { .fd = -1 };
static uint16_t family_id;
/* requests are built here; 8-aligned for kml_nl_put_u64_pad's sake */
static uint64_t reqbuf[128];
/* and load's chunks of rules here */
static uint64_t chunkbuf[KML_FILTER_GENL_CHUNK / sizeof(uint64_t)];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] COMMAND [ARGS]\n"
		"\n"
		"  list [-v]                rules in order (-v: with packet and byte counters)\n"
		"  add [--at N] RULE        add a rule (at position N, 1 = first; default last)\n"
		"  del N | del RULE         delete rule number N, or the first rule equal to RULE\n"
		"  flush                    delete every rule (the policy stays)\n"
		"  policy [fwd] accept|drop what happens to packets no rule matches (fwd:\n"
		"                           routed ones; without: this host's own)\n"
		"  load FILE|-              replace all rules (and the policy, if the file sets\n"
		"                           one) with a rule file, all at once\n"
		"  log [--count N] [--pages N]\n"
		"                           print the packets logging rules log, as they come,\n"
		"                           until ^C (or N of them)\n"
		"\n"
		"RULE: accept|drop|log [in] [out] [fwd] [ipv4|ipv6] [tcp|udp|icmp|icmpv6|any]\n"
		"      [src ADDR[/LEN]] [dst ADDR[/LEN]] [sport P[-Q]] [dport P[-Q]]\n"
		"      [ct new|established|related|invalid|untracked[,...]]\n"
		"      [log [rate N[/s]] [burst N]]\n"
		"      e.g.  drop in tcp dport 22    accept src 10.0.0.0/8    drop fwd udp\n"
		"            drop in tcp dport 23 log    log in tcp dport 22 rate 5/s\n"
		"No direction word means in and out, not fwd (routed packets).\n"
		"'log' with accept or drop logs what the rule matches; alone, it only logs\n"
		"and the next rules decide. Without rate and burst: rate 10/s, burst 5.\n"
		"The first matching rule decides. A rule file has one rule per line,\n"
		"'#' comments and optionally one 'policy accept|drop' line.\n"
		"Rules apply to the network namespace this command runs in.\n"
		"\n"
		"  -j, --json               JSON output\n"
		"  -h, --help               this text, also `help`\n"
		"  -V, --version            the client's version\n"
		"  --no-check               (for testing) before the command: send rules\n"
		"                           unchecked, so the kernel's own reasons show\n",
		kml_prog);
}

/* kml-filter.1's COMMANDS, in short; main() runs them. */
static const struct kml_cmd cmds[] = {
	{ "list", "[-v]",
	  "The policy and the rules, in order, in the rule language (loadable back).\n"
	  "  -v                 numbered, with packet and byte counters\n", NULL },
	{ "add", "[--at N] RULE",
	  "Add a rule at the end, or at position N (1 is first).\n"
	  "RULE: accept|drop|log [in] [out] [fwd] [ipv4|ipv6] [tcp|udp|icmp|icmpv6|any]\n"
	  "      [src ADDR[/LEN]] [dst ADDR[/LEN]] [sport P[-Q]] [dport P[-Q]]\n"
	  "      [ct new|established|related|invalid|untracked[,...]]\n"
	  "      [log [rate N[/s]] [burst N]]   (default rate 10/s, burst 5)\n"
	  "  --at N             at position N\n", NULL },
	{ "del", "N | RULE",
	  "Delete rule number N, or the first rule equal to RULE.\n", NULL },
	{ "flush", "", "Delete every rule; the policy stays.\n", NULL },
	{ "policy", "[fwd] accept|drop",
	  "What happens to packets no rule matches: this host's own (in and out),\n"
	  "or with fwd the ones it routes.\n", NULL },
	{ "load", "FILE|-",
	  "Replace every rule, and the policy if the file sets one, with the rule\n"
	  "file FILE (or standard input), all at once.\n", NULL },
	{ "log", "[--count N] [--pages N]",
	  "Print each packet that a logging rule logs, one line each, as they come,\n"
	  "until interrupted; --json: one JSON object a line. One reader per network\n"
	  "namespace at a time.\n"
	  "  -n, --count N      stop after N packets\n"
	  "  -p, --pages N      the ring's size in pages: a power of two, 1..1024 (64)\n",
	  NULL },
	{ NULL, NULL, NULL, NULL },
};

/* A rule on the command line, and which word set each of its parts. */
struct cmdline_rule {
	int argc;
	char *const *argv;
	struct kml_filter_rule rule;
	struct kml_filter_words words;
	struct kml_filter_genl_offs offs;	/* once put in a request */
};

static void parse_or_die(int argc, char *const argv[], struct cmdline_rule *cr)
{
	char err[256];

	if (!argc)
		kml_usage_error("%s", "give a rule, e.g. `drop in tcp dport 22`");
	if (kml_filter_parse_rule_words(argc, argv, &cr->rule, &cr->words,
					no_check ? KML_FILTER_PARSE_NO_CHECK : 0,
					err, sizeof(err)))
		kml_usage_error("bad rule: %s", err);
	cr->argc = argc;
	cr->argv = argv;
}

/* What a rule attribute is, for an ack that says one is missing. */
static const char *rule_attr_name(uint32_t type)
{
	static const char *const names[KML_FILTER_RA_MAX + 1] = {
		[KML_FILTER_RA_FAMILY] = "its family",
		[KML_FILTER_RA_PROTO] = "its protocol",
		[KML_FILTER_RA_DIR] = "its direction (in, out)",
		[KML_FILTER_RA_ACTION] = "its action (accept, drop or log)",
		[KML_FILTER_RA_SRC] = "its source address",
		[KML_FILTER_RA_SRC_LEN] = "its source prefix length",
		[KML_FILTER_RA_DST] = "its destination address",
		[KML_FILTER_RA_DST_LEN] = "its destination prefix length",
		[KML_FILTER_RA_SPORT_LO] = "its lowest source port",
		[KML_FILTER_RA_SPORT_HI] = "its highest source port",
		[KML_FILTER_RA_DPORT_LO] = "its lowest destination port",
		[KML_FILTER_RA_DPORT_HI] = "its highest destination port",
		[KML_FILTER_RA_CT_STATE] = "its connection states",
		[KML_FILTER_RA_LOG_RATE] = "its log rate",
		[KML_FILTER_RA_LOG_BURST] = "its log burst",
	};

	return type <= KML_FILTER_RA_MAX && names[type] ? names[type] : "an attribute";
}

/*
 * The kernel refused a rule: its reason, and when the extended ack's
 * offset is an attribute that a word of the command line set, the words
 * again with that one underlined:
 *
 *   kml-filter: the kernel refused the rule: ports need tcp or udp
 *     drop in udp dport 22-21
 *                       ^^^^^
 */
static void refusal(int err, const struct kml_nl_err *e, char *why, size_t len)
{
	if (e->msg[0])
		snprintf(why, len, "%s", e->msg);
	else if (e->has_miss_type)
		snprintf(why, len, "%s is missing", rule_attr_name(e->miss_type));
	else
		snprintf(why, len, "%s", strerror(-err));
}

static void __attribute__((noreturn)) rule_refused(int err, const struct kml_nl_err *e,
						   const struct cmdline_rule *cr)
{
	char why[KML_NL_ERRMSG_MAX + 64], lines[1024];
	int word = -1;

	refusal(err, e, why, sizeof(why));
	if (e->has_offs)
		word = kml_filter_genl_offs_word(&cr->offs, &cr->words, e->offs);
	fprintf(stderr, "%s: the kernel refused the rule: %s\n", kml_prog, why);
	if (word >= 0 && kml_filter_genl_point(cr->argc, cr->argv, word, lines, sizeof(lines)) > 0)
		fputs(lines, stderr);
	exit(1);
}

/* A request failed: the same lines the ioctls gave, or the kernel's own reason. */
static void __attribute__((noreturn)) nl_failed(const char *what, int err,
						const struct kml_nl_err *e,
						const struct cmdline_rule *cr)
{
	switch (-err) {
	case EPERM:
		kml_die("%s needs CAP_NET_ADMIN in this network namespace (run as root)", what);
	case ENOENT:
		kml_die("%s: no such rule", what);
	case ENOMEM:
		kml_die("out of memory");
	case EPROTO:
		kml_die("%s: the kernel's reply is malformed (module and client from different versions?)",
			what);
	case ENOSPC:
		if (!e || !e->msg[0])
			kml_die("%s: the rule set is full (%u rules)", what, KML_FILTER_MAX_RULES);
		break;
	default:
		break;
	}
	/*
	 * A value refused (policy validation says -EINVAL or -ERANGE) with
	 * a reason that names the rule's nest or something in it, or no
	 * attribute at all, is about the rule.
	 */
	if (cr && e && (err == -EINVAL || err == -ERANGE) && (e->msg[0] || e->has_miss_type) &&
	    (!e->has_offs || (e->offs >= (uint32_t)cr->offs.nest &&
			      e->offs < (uint32_t)cr->offs.end)))
		rule_refused(err, e, cr);
	if (e && e->msg[0])
		kml_die("%s: the kernel refused the request: %s", what, e->msg);
	if (err == -EINVAL)
		kml_die("%s: the module refused the request as invalid", what);
	if (err == -EOPNOTSUPP)
		kml_die("%s: the module does not know this request (module and client from different versions?)",
			what);
	kml_die("%s: %s", what, strerror(-err));
}

static struct kml_nl_msg *request(uint8_t cmd, uint16_t flags)
{
	static struct kml_nl_msg m;

	kml_nl_msg_init(&m, reqbuf, sizeof(reqbuf), family_id, flags, cmd,
			KML_FILTER_GENL_VERSION);
	return &m;
}

/* Sends @m, dies with @what's line if the kernel refuses it. */
static void send_or_die(const char *what, struct kml_nl_msg *m, kml_nl_cb cb, void *arg,
			const struct cmdline_rule *cr)
{
	struct kml_nl_err e;
	int err = kml_nl_request(&nl, m, cb, arg, &e);

	if (err)
		nl_failed(what, err, &e, cr);
}

static int info_cb(const struct nlmsghdr *msg, size_t len, void *arg)
{
	return kml_filter_genl_parse_info(msg, len, arg);
}

static void get_info(struct kml_filter_genl_info *info)
{
	memset(info, 0, sizeof(*info));
	send_or_die("info", request(KML_FILTER_CMD_GET_INFO, 0), info_cb, info, NULL);
	if (info->abi_version != KML_FILTER_ABI_VERSION)
		kml_die("kml_filter speaks ABI %u, this client ABI %u", info->abi_version,
			KML_FILTER_ABI_VERSION);
}

/* The family, resolved, and the module's ABI checked, as open_device() does. */
static void open_family(void)
{
	struct kml_filter_genl_info info;
	int err = kml_nl_open(&nl);

	if (err)
		kml_die("cannot open a generic netlink socket: %s", strerror(-err));
	err = kml_nl_family_id(&nl, KML_FILTER_GENL_NAME, &family_id);
	if (err == -ENOENT)
		kml_die_not_loaded("kml_filter", "its generic netlink family " KML_FILTER_GENL_NAME);
	if (err)
		kml_die("cannot look up the generic netlink family %s: %s", KML_FILTER_GENL_NAME,
			strerror(-err));
	get_info(&info);
}

/* Rule words in JSON as on the command line: strings, never numbers. */
static const char *family_word(__u8 f)
{
	return f == KML_FILTER_FAMILY_IPV4 ? "ipv4" : f == KML_FILTER_FAMILY_IPV6 ? "ipv6" : "any";
}

static const char *proto_word(__u8 p)
{
	switch (p) {
	case KML_FILTER_PROTO_ICMP:
		return "icmp";
	case KML_FILTER_PROTO_TCP:
		return "tcp";
	case KML_FILTER_PROTO_UDP:
		return "udp";
	case KML_FILTER_PROTO_ICMPV6:
		return "icmpv6";
	default:
		return "any";
	}
}

/* "both" for in and out, as before the forward hook; else the words */
static void print_dir_json(__u8 dir)
{
	const char *sep = "";

	if (dir == KML_FILTER_DIR_BOTH) {
		printf(",\"dir\":\"both\"");
		return;
	}
	printf(",\"dir\":\"");
	if (dir & KML_FILTER_DIR_IN) {
		printf("in");
		sep = " ";
	}
	if (dir & KML_FILTER_DIR_OUT) {
		printf("%sout", sep);
		sep = " ";
	}
	if (dir & KML_FILTER_DIR_FWD)
		printf("%sfwd", sep);
	printf("\"");
}

static void print_addr_json(const char *key, const struct kml_filter_rule *r,
			    const __u8 *addr, __u8 len)
{
	char a[INET6_ADDRSTRLEN];

	if (!len) {
		printf(",\"%s\":null", key);
		return;
	}
	inet_ntop(r->family == KML_FILTER_FAMILY_IPV4 ? AF_INET : AF_INET6,
		  addr, a, sizeof(a));
	printf(",\"%s\":\"%s/%u\"", key, a, len);
}

/* "ct": the states in the rule language's order, null for any state. */
static void print_ct_json(__u8 ct)
{
	const char *sep = "[";
	unsigned int i;
	__u8 bit;

	if (!ct) {
		printf(",\"ct\":null");
		return;
	}
	printf(",\"ct\":");
	for (i = 0; (bit = kml_filter_ct_state_bit(i)); i++)
		if (ct & bit) {
			printf("%s\"%s\"", sep, kml_filter_ct_state_name(bit));
			sep = ",";
		}
	putchar(']');
}

/* "log": the rule's rate and burst, null for a rule that does not log. */
static void print_log_json(const struct kml_filter_rule *r)
{
	if (!r->log_rate) {
		printf(",\"log\":null");
		return;
	}
	printf(",\"log\":{\"rate\":%u,\"burst\":%u}", r->log_rate, r->log_burst);
}

/*
 * The policy and the rules of one generation: GET_INFO, the GETRULE dump,
 * GET_INFO again, all read again while an update comes between them (the
 * ioctl's LIST gave one snapshot; a dump is many messages).
 */
static void read_rules(struct kml_filter_genl_info *info, struct kml_filter_genl_dump *d)
{
	struct kml_filter_genl_info after;
	struct kml_nl_err e;
	int tries, err;

	for (tries = 0; tries < KML_FILTER_GENL_DUMP_TRIES; tries++) {
		get_info(info);
		kml_filter_genl_dump_reset(d);
		err = kml_nl_request(&nl, request(KML_FILTER_CMD_GETRULE, NLM_F_DUMP),
				     kml_filter_genl_dump_msg, d, &e);
		err = kml_filter_genl_dump_verdict(d, err);
		if (err == -EAGAIN)
			continue;
		if (err)
			nl_failed("list", err, &e, NULL);
		get_info(&after);
		if (after.generation == info->generation && info->nrules == d->count &&
		    (!d->count || d->generation == info->generation))
			return;
	}
	kml_die("list: the rules changed every time they were read (%d tries): try again",
		KML_FILTER_GENL_DUMP_TRIES);
}

static void cmd_list(int verbose)
{
	struct kml_filter_genl_info info;
	struct kml_filter_genl_dump d = { 0 };
	/* what the ioctl's struct kml_filter_list said, for the output below */
	struct {
		__u64 generation;
		unsigned int count;
	} l;
	const struct kml_filter_genl_entry *e;
	unsigned int i;
	char text[KML_FILTER_RULE_TEXT_MAX];

	read_rules(&info, &d);
	e = d.e;
	l.generation = info.generation;
	l.count = d.count;
	if (json) {
		printf("{\"generation\":%" PRIu64 ",\"policy\":\"%s\",\"policy_packets\":%" PRIu64
		       ",\"policy_bytes\":%" PRIu64 ",\"log\":{\"attached\":%s,\"records\":%" PRIu64
		       ",\"suppressed\":%" PRIu64 ",\"lost\":%" PRIu64 "},\"rules\":[",
		       (uint64_t)l.generation, kml_filter_verdict_name(info.policy),
		       (uint64_t)info.policy_packets, (uint64_t)info.policy_bytes,
		       info.log_attached ? "true" : "false", info.log_records, info.log_suppressed,
		       info.log_lost);
		for (i = 0; i < l.count; i++) {
			const struct kml_filter_rule *r = &e[i].rule;

			kml_filter_format_rule(r, text, sizeof(text));
			printf("%s{\"num\":%u,\"rule\":\"%s\",\"action\":\"%s\"",
			       i ? "," : "", i + 1, text, kml_filter_verdict_name(r->action));
			print_dir_json(r->dir);
			printf(",\"family\":\"%s\",\"proto\":\"%s\"", family_word(r->family),
			       proto_word(r->proto));
			print_addr_json("src", r, r->src, r->src_len);
			print_addr_json("dst", r, r->dst, r->dst_len);
			printf(",\"sport\":[%u,%u],\"dport\":[%u,%u]", r->sport_lo, r->sport_hi,
			       r->dport_lo, r->dport_hi);
			/* with the rule's other fields, before its counters */
			print_ct_json(r->ct_state);
			print_log_json(r);
			printf(",\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			       (uint64_t)e[i].packets, (uint64_t)e[i].bytes);
		}
		printf("]}\n");
	} else if (verbose) {
		printf("policy %s (%" PRIu64 " packets, %" PRIu64 " bytes), %u rules, generation %" PRIu64 "\n",
		       kml_filter_verdict_name(info.policy), (uint64_t)info.policy_packets,
		       (uint64_t)info.policy_bytes, l.count, (uint64_t)l.generation);
		if (info.policy_fwd == KML_FILTER_DROP)
			printf("policy fwd drop (%" PRIu64 " packets)\n",
			       (uint64_t)info.policy_fwd_packets);
		printf("log: %s, %" PRIu64 " records, %" PRIu64 " suppressed, %" PRIu64 " lost\n",
		       info.log_attached ? "attached" : "not attached", info.log_records,
		       info.log_suppressed, info.log_lost);
		printf("%5s %10s %12s  %s\n", "num", "pkts", "bytes", "rule");
		for (i = 0; i < l.count; i++) {
			kml_filter_format_rule(&e[i].rule, text, sizeof(text));
			printf("%5u %10" PRIu64 " %12" PRIu64 "  %s\n", i + 1,
			       (uint64_t)e[i].packets, (uint64_t)e[i].bytes, text);
		}
	} else {
		/* loadable as it stands: kml-filter list > f; kml-filter load f */
		printf("policy %s\n", kml_filter_verdict_name(info.policy));
		/* accept is every namespace's to start with: said only if not */
		if (info.policy_fwd == KML_FILTER_DROP)
			printf("policy fwd drop\n");
		for (i = 0; i < l.count; i++) {
			kml_filter_format_rule(&e[i].rule, text, sizeof(text));
			printf("%s\n", text);
		}
	}
	kml_filter_genl_dump_free(&d);
}

/* A rule file, its bytes kept: a refused rule's line is shown from them. */
struct rule_file {
	const char *path;
	char *buf;
	size_t len;
	struct kml_filter_ruleset rs;
};

/*
 * The kernel refused a rule of chunk @m, whose first rule is the file's
 * rule @first: like rule_refused(), with the file's name and line first
 * (the line's own words under it), when the ack's offset is inside one
 * of the chunk's rules. Anything else is nl_failed()'s.
 */
static void __attribute__((noreturn)) load_refused(const struct rule_file *rf,
						   const struct kml_nl_msg *m, unsigned int first,
						   int err, const struct kml_nl_err *e)
{
	char why[KML_NL_ERRMSG_MAX + 64], line[1024], lines[2048], *words[32], msg[64];
	struct kml_filter_genl_offs offs;
	struct kml_filter_words w;
	struct kml_filter_rule r;
	unsigned int k, lineno;
	uint32_t at;
	int n, word = -1;

	if ((err != -EINVAL && err != -ERANGE) || (!e->has_offs && !e->has_miss_nest))
		nl_failed("load", err, e, NULL);
	at = e->has_offs ? e->offs : e->miss_nest;
	if (kml_filter_genl_chunk_rule(m->buf, m->len, at, &k, &offs) ||
	    first + k >= rf->rs.count)
		nl_failed("load", err, e, NULL);
	lineno = rf->rs.lines[first + k];
	refusal(err, e, why, sizeof(why));
	fprintf(stderr, "%s: %s:%u: the kernel refused the rule: %s\n", kml_prog, rf->path,
		lineno, why);
	n = kml_filter_file_line_words(rf->buf, rf->len, lineno, line, sizeof(line), words, 32);
	/* the words were parsed once already: this gives the same map */
	if (n > 0 && e->has_offs &&
	    !kml_filter_parse_rule_words(n, words, &r, &w, rf->rs.flags, msg, sizeof(msg)))
		word = kml_filter_genl_offs_word(&offs, &w, e->offs);
	if (word >= 0 && kml_filter_genl_point(n, words, word, lines, sizeof(lines)) > 0)
		fputs(lines, stderr);
	exit(1);
}

static int txn_cb(const struct nlmsghdr *msg, size_t len, void *arg)
{
	return kml_filter_genl_parse_txn(msg, len, arg);
}

/*
 * One replace in parts: BEGIN, the rules in chunks, COMMIT. Until COMMIT
 * nothing shows; if the client dies on the way, the kernel drops the
 * replace with the socket. Return: 0, or -EAGAIN when COMMIT found that
 * the rules changed since BEGIN (the replace is over then too).
 */
static int load_once(const struct rule_file *rf)
{
	const struct kml_filter_ruleset *rs = &rf->rs;
	struct kml_nl_msg *m, chunk;
	struct kml_nl_err e;
	unsigned int done = 0;
	uint32_t txn = 0;
	int err, n;

	m = request(KML_FILTER_CMD_REPLACE_BEGIN, 0);
	kml_filter_genl_put_begin(m, rs->count, (uint8_t)rs->policy, (uint8_t)rs->policy_fwd);
	err = kml_nl_request(&nl, m, txn_cb, &txn, &e);
	if (err == -EBUSY)
		kml_die("load: another load is in progress in this network namespace (nothing changed)");
	if (err)
		nl_failed("load", err, &e, NULL);
	while (done < rs->count) {
		kml_nl_msg_init(&chunk, chunkbuf, sizeof(chunkbuf), family_id, 0,
				KML_FILTER_CMD_REPLACE_RULES, KML_FILTER_GENL_VERSION);
		n = kml_filter_genl_put_rules(&chunk, txn, rs->rules + done, rs->count - done);
		if (n <= 0)
			kml_die("load: %s", strerror(n ? -n : EMSGSIZE));
		err = kml_nl_request(&nl, &chunk, NULL, NULL, &e);
		if (err)
			load_refused(rf, &chunk, done, err, &e);
		done += (unsigned int)n;
	}
	m = request(KML_FILTER_CMD_REPLACE_COMMIT, 0);
	kml_filter_genl_put_commit(m, txn);
	err = kml_nl_request(&nl, m, NULL, NULL, &e);
	if (err == -EAGAIN)
		return err;
	if (err)
		nl_failed("load", err, &e, NULL);
	return 0;
}

static void cmd_load(const char *path)
{
	struct rule_file rf = { .path = path };
	size_t cap = 0, n;
	char err[300];
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;

	if (!f)
		kml_die("cannot open %s: %s", path, strerror(errno));
	do {
		if (rf.len == cap) {
			char *nb;

			cap = cap ? cap * 2 : 65536;
			nb = realloc(rf.buf, cap);
			if (!nb)
				kml_die("out of memory");
			rf.buf = nb;
		}
		n = fread(rf.buf + rf.len, 1, cap - rf.len, f);
		rf.len += n;
	} while (n);
	if (ferror(f))
		kml_die("cannot read %s", path);
	if (f != stdin)
		fclose(f);
	rf.rs.flags = no_check ? KML_FILTER_PARSE_NO_CHECK : 0;
	if (kml_filter_parse_file(rf.buf, rf.len, &rf.rs, err, sizeof(err)))
		kml_die("%s:%s (nothing changed)", path, err + 5);
	open_family();
	/*
	 * Someone else's change between BEGIN and COMMIT: what they did is
	 * replaced anyway, so one more try from the start is what the user
	 * asked for; a second one means the rules are changing all the time.
	 */
	if (load_once(&rf) == -EAGAIN && load_once(&rf) == -EAGAIN)
		kml_die("load: the rules changed while the file was being loaded, twice; nothing changed (try again)");
	if (!json)
		printf("loaded %u rules%s%s%s%s\n", rf.rs.count, rf.rs.policy ? ", policy " : "",
		       rf.rs.policy ? kml_filter_verdict_name(rf.rs.policy) : "",
		       rf.rs.policy_fwd ? ", policy fwd " : "",
		       rf.rs.policy_fwd ? kml_filter_verdict_name(rf.rs.policy_fwd) : "");
	kml_filter_ruleset_free(&rf.rs);
	free(rf.buf);
}

/* ---- log: follow the packet log ---- */

#define LOG_DEFAULT_PAGES	64

static volatile sig_atomic_t log_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	log_stop = 1;
}

/*
 * No SA_RESTART: a signal must end the poll() of the ring at once. The
 * ring is detached by closing the socket, which no signal can stop.
 */
static void catch_stop_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

struct log_reader {
	uint64_t count;		/* --count, 0 for no limit */
	uint64_t printed;
	uint64_t malformed;	/* log records no kernel writes: skipped */
};

static int log_record(const struct kml_ring_rec *rec, void *arg)
{
	struct log_reader *lr = arg;
	struct kml_filter_log_event ev;
	char line[512];
	int ret = kml_filter_log_event_get(rec, &ev);

	/* a record of another type is someone else's */
	if (ret == -ENOENT)
		return 0;
	if (ret || kml_filter_format_log(&ev, rec->timestamp_ns, json, line, sizeof(line)) < 0) {
		lr->malformed++;
		return 0;
	}
	/* a line at a time: whoever reads the pipe sees each packet at once */
	if (printf("%s\n", line) < 0 || fflush(stdout))
		kml_die("log: cannot write the output: %s", strerror(errno));
	lr->printed++;
	return lr->count && lr->printed == lr->count;
}

static void cmd_log(uint64_t count, uint32_t pages)
{
	struct log_reader lr = { .count = count };
	struct kml_ring_user ring;
	struct kml_nl_msg m;
	struct kml_nl_err e;
	uint64_t lost;
	long n;
	int err;

	open_family();
	err = kml_ring_user_open(&ring, pages);
	if (err == -ENOENT || err == -ENODEV || err == -ENXIO)
		kml_die_not_loaded("kml_ring", KML_RING_DEVICE);
	if (err == -ENOSPC)
		kml_die("log: no room for a ring of %u pages (kml_ring's page budget): try a smaller --pages",
			pages);
	if (err)
		kml_die("log: cannot set up a ring on %s: %s", KML_RING_DEVICE, strerror(-err));
	/*
	 * The ring is attached by its descriptor, looked up in this process
	 * while the request runs; it stays attached until this socket is
	 * closed (or someone sends LOG_DETACH), so a reader that dies,
	 * however it dies, leaves none.
	 */
	kml_filter_genl_log_attach(&m, reqbuf, sizeof(reqbuf), family_id, ring.fd);
	err = kml_nl_request(&nl, &m, NULL, NULL, &e);
	if (err == -EBUSY)
		kml_die("a log reader is attached already");
	if (err == -ENODEV)
		kml_die_not_loaded("kml_ring", "the ring kml_filter logs into");
	if (err)
		nl_failed("log", err, &e, NULL);
	catch_stop_signals();
	while (!log_stop && !(count && lr.printed >= count)) {
		/* a signal ends the wait; the timeout covers one that came before it */
		err = kml_ring_user_wait(&ring, 250);
		if (err < 0 && err != -EINTR)
			kml_die("log: waiting for the ring: %s", strerror(-err));
		n = kml_ring_user_consume(&ring, log_record, &lr);
		if (n < 0)
			kml_die("log: the ring holds a malformed record");
	}
	/*
	 * Closing the socket that attached the ring detaches it. Not
	 * LOG_DETACH: if another administrator detached ours and a reader of
	 * theirs attached since, it would detach that one.
	 */
	kml_nl_close(&nl);
	/* what came before the signal is printed */
	if (!(count && lr.printed >= count) &&
	    kml_ring_user_consume(&ring, log_record, &lr) < 0)
		kml_die("log: the ring holds a malformed record");
	lost = __atomic_load_n(&ring.ctrl->lost, __ATOMIC_RELAXED);
	kml_ring_user_close(&ring);
	if (lost)
		fprintf(stderr, "%s: log: %" PRIu64 " records did not fit in the ring (try a larger --pages)\n",
			kml_prog, lost);
	if (lr.malformed)
		fprintf(stderr, "%s: log: %" PRIu64 " malformed log records skipped (module and client from different versions?)\n",
			kml_prog, lr.malformed);
}

/* log's options: all checked before anything is opened. */
static void log_args(int argc, char **argv, uint64_t *count, uint32_t *pages)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "pages", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*count = 0;
	*pages = LOG_DEFAULT_PAGES;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:p:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			*count = kml_arg_number(optarg, UINT64_MAX, "--count");
			if (!*count)
				kml_usage_error("%s", "bad --count '0': 1 or more");
			break;
		case 'p':
			*pages = (uint32_t)kml_arg_number(optarg, KML_RING_MAX_PAGES, "--pages");
			if (!*pages || (*pages & (*pages - 1)))
				kml_usage_error("bad --pages '%s': a power of two, 1..%d", optarg,
						KML_RING_MAX_PAGES);
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	kml_operands(argc - optind, argv + optind, 0, 0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "no-check", no_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c;

	kml_prog = "kml-filter";
	kml_cli_common(&argc, argv, &json, usage, cmds);
	while ((c = getopt_long(argc, argv, "+:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'N':
			no_check = 1;
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	if (optind >= argc)
		kml_usage_error("%s", "no command given");
	cmd = argv[optind++];
	argc -= optind;
	argv += optind;

	if (!strcmp(cmd, "list")) {
		int verbose = argc >= 1 && !strcmp(argv[0], "-v");

		kml_operands(argc - verbose, argv + verbose, 0, 0);
		open_family();
		cmd_list(verbose);
	} else if (!strcmp(cmd, "add")) {
		struct cmdline_rule cr;
		struct kml_nl_msg *m;
		__u32 position = KML_FILTER_APPEND;

		if (argc >= 2 && !strcmp(argv[0], "--at")) {
			position = (__u32)kml_arg_number(argv[1], KML_FILTER_MAX_RULES,
							 "position");
			if (!position)
				kml_usage_error("%s", "bad position '0': rules are numbered from 1");
			position--;
			argc -= 2;
			argv += 2;
		}
		parse_or_die(argc, argv, &cr);
		open_family();
		m = request(KML_FILTER_CMD_NEWRULE, 0);
		kml_filter_genl_put_rule(m, KML_FILTER_A_RULE, &cr.rule, &cr.offs);
		if (position != KML_FILTER_APPEND)
			kml_nl_put_u32(m, KML_FILTER_A_POSITION, position);
		send_or_die("add", m, NULL, NULL, &cr);
	} else if (!strcmp(cmd, "del")) {
		struct cmdline_rule cr;
		struct kml_nl_msg *m;

		if (argc == 1 && argv[0][0] >= '0' && argv[0][0] <= '9') {
			__u32 index = (__u32)kml_arg_number(argv[0], KML_FILTER_MAX_RULES,
							    "rule number");

			if (!index)
				kml_usage_error("%s", "bad rule number '0': rules are numbered from 1");
			open_family();
			m = request(KML_FILTER_CMD_DELRULE, 0);
			kml_nl_put_u32(m, KML_FILTER_A_INDEX, index - 1);
			send_or_die("del", m, NULL, NULL, NULL);
		} else {
			parse_or_die(argc, argv, &cr);
			open_family();
			m = request(KML_FILTER_CMD_DELRULE, 0);
			kml_filter_genl_put_rule(m, KML_FILTER_A_RULE, &cr.rule, &cr.offs);
			send_or_die("del", m, NULL, NULL, &cr);
		}
	} else if (!strcmp(cmd, "flush")) {
		kml_operands(argc, argv, 0, 0);
		open_family();
		send_or_die("flush", request(KML_FILTER_CMD_FLUSH, 0), NULL, NULL, NULL);
	} else if (!strcmp(cmd, "policy")) {
		struct kml_nl_msg *m;
		char err[256];
		__u32 p;
		int fwd;

		kml_operands(argc, argv, 1, 2);
		if (kml_filter_parse_policy(argc, argv, &p, &fwd, err, sizeof(err)))
			kml_usage_error("bad policy '%s': %s", argv[argc - 1], err);
		open_family();
		m = request(KML_FILTER_CMD_SET_POLICY, 0);
		kml_nl_put_u8(m, fwd ? KML_FILTER_A_POLICY_FWD : KML_FILTER_A_POLICY, (__u8)p);
		send_or_die("policy", m, NULL, NULL, NULL);
	} else if (!strcmp(cmd, "load")) {
		kml_operands(argc, argv, 1, 1);
		cmd_load(argv[0]);
	} else if (!strcmp(cmd, "log")) {
		uint64_t count;
		uint32_t pages;

		/* argv[-1] is the command's word: getopt's argv[0] */
		log_args(argc + 1, argv - 1, &count, &pages);
		cmd_log(count, pages);
	} else {
		kml_usage_error("unknown command '%s'", cmd);
	}
	kml_nl_close(&nl);
	return 0;
}
