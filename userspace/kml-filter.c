// SPDX-License-Identifier: GPL-2.0
/*
 * kml-filter: the client of /dev/kml_filter. It acts on the network
 * namespace it runs in (`ip netns exec NS kml-filter ...`), like iptables.
 * Rules are written in the words kml_filter_parse.h describes; `list`
 * prints them the same way, so its output can be loaded back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kml_cli.h"
#include "kml_filter_parse.h"

static const char *device = KML_FILTER_DEVICE;
static int json;

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
		"\n"
		"RULE: accept|drop [in] [out] [fwd] [ipv4|ipv6] [tcp|udp|icmp|icmpv6|any]\n"
		"      [src ADDR[/LEN]] [dst ADDR[/LEN]] [sport P[-Q]] [dport P[-Q]]\n"
		"      e.g.  drop in tcp dport 22    accept src 10.0.0.0/8    drop fwd udp\n"
		"No direction word means in and out, not fwd (routed packets).\n"
		"The first matching rule decides. A rule file has one rule per line,\n"
		"'#' comments and optionally one 'policy accept|drop' line.\n"
		"Rules apply to the network namespace this command runs in.\n"
		"\n"
		"  -j, --json               JSON output\n"
		"  -h, --help               this text, also `help`\n"
		"  -V, --version            the client's version\n"
		"KML_FILTER_DEVICE overrides %s.\n", kml_prog, KML_FILTER_DEVICE);
}

/* kml-filter.1's COMMANDS, in short; main() runs them. */
static const struct kml_cmd cmds[] = {
	{ "list", "[-v]",
	  "The policy and the rules, in order, in the rule language (loadable back).\n"
	  "  -v                 numbered, with packet and byte counters\n", NULL },
	{ "add", "[--at N] RULE",
	  "Add a rule at the end, or at position N (1 is first).\n"
	  "RULE: accept|drop [in] [out] [fwd] [ipv4|ipv6] [tcp|udp|icmp|icmpv6|any]\n"
	  "      [src ADDR[/LEN]] [dst ADDR[/LEN]] [sport P[-Q]] [dport P[-Q]]\n"
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
	{ NULL, NULL, NULL, NULL },
};

static void ioctl_failed(const char *what)
{
	int e = errno;

	switch (e) {
	case EPERM:
		kml_die("%s needs CAP_NET_ADMIN in this network namespace (run as root)", what);
	case EINVAL:
		kml_die("%s: the module refused the request as invalid", what);
	case ENOENT:
		kml_die("%s: no such rule", what);
	case ENOSPC:
		kml_die("%s: the rule set is full (%u rules)", what, KML_FILTER_MAX_RULES);
	case ENOTTY:
		kml_die("%s: %s does not understand this request (module and client from different versions?)",
			what, device);
	default:
		kml_die("%s: %s", what, strerror(e));
	}
}

static int open_device(void)
{
	int fd = open(device, O_RDONLY | O_CLOEXEC);
	struct kml_filter_info info = { 0 };

	if (fd < 0) {
		if (errno == ENOENT)
			kml_die_not_loaded("kml_filter", device);
		kml_die("cannot open %s: %s", device, strerror(errno));
	}
	if (ioctl(fd, KML_FILTER_IOC_GET_INFO, &info)) {
		/* an ABI 1 module reads ABI 2's zero flags as a bad size */
		if (errno == EINVAL)
			kml_die("%s speaks an older ABI than this client's (%u): update the module",
				device, KML_FILTER_ABI_VERSION);
		ioctl_failed("info");
	}
	if (info.abi_version != KML_FILTER_ABI_VERSION)
		kml_die("%s speaks ABI %u, this client ABI %u", device,
			info.abi_version, KML_FILTER_ABI_VERSION);
	return fd;
}

static void parse_or_die(int argc, char *const argv[], struct kml_filter_rule *r)
{
	char err[256];

	if (!argc)
		kml_usage_error("%s", "give a rule, e.g. `drop in tcp dport 22`");
	if (kml_filter_parse_rule(argc, argv, r, err, sizeof(err)))
		kml_usage_error("bad rule: %s", err);
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

/*
 * The forward policy is set over netlink only (KML_FILTER_A_POLICY_FWD):
 * the ioctls of ABI 2 know one policy.
 */
static void no_fwd_policy(const char *what)
{
	kml_die("%s: the forward policy is set over netlink, which this client does not speak yet (nothing changed)",
		what);
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

static void cmd_list(int fd, int verbose)
{
	struct kml_filter_info info = { 0 };
	struct kml_filter_list l = { 0 };
	struct kml_filter_entry *e = NULL;
	unsigned int i;
	char text[256];

	if (ioctl(fd, KML_FILTER_IOC_GET_INFO, &info))
		ioctl_failed("info");
	/* The set may grow between two calls: retry until it fits. */
	for (;;) {
		__u32 room = l.count;

		if (ioctl(fd, KML_FILTER_IOC_LIST, &l))
			ioctl_failed("list");
		if (l.count <= room)
			break;
		free(e);
		e = calloc(l.count, sizeof(*e));
		if (!e)
			kml_die("out of memory");
		l.entries = (__u64)(uintptr_t)e;
	}
	if (json) {
		printf("{\"generation\":%" PRIu64 ",\"policy\":\"%s\",\"policy_packets\":%" PRIu64
		       ",\"policy_bytes\":%" PRIu64 ",\"rules\":[",
		       (uint64_t)l.generation, kml_filter_verdict_name(info.policy),
		       (uint64_t)info.policy_packets, (uint64_t)info.policy_bytes);
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
			printf(",\"sport\":[%u,%u],\"dport\":[%u,%u],\"packets\":%" PRIu64
			       ",\"bytes\":%" PRIu64 "}", r->sport_lo, r->sport_hi,
			       r->dport_lo, r->dport_hi, (uint64_t)e[i].packets,
			       (uint64_t)e[i].bytes);
		}
		printf("]}\n");
	} else if (verbose) {
		printf("policy %s (%" PRIu64 " packets, %" PRIu64 " bytes), %u rules, generation %" PRIu64 "\n",
		       kml_filter_verdict_name(info.policy), (uint64_t)info.policy_packets,
		       (uint64_t)info.policy_bytes, l.count, (uint64_t)l.generation);
		printf("%5s %10s %12s  %s\n", "num", "pkts", "bytes", "rule");
		for (i = 0; i < l.count; i++) {
			kml_filter_format_rule(&e[i].rule, text, sizeof(text));
			printf("%5u %10" PRIu64 " %12" PRIu64 "  %s\n", i + 1,
			       (uint64_t)e[i].packets, (uint64_t)e[i].bytes, text);
		}
	} else {
		/* loadable as it stands: kml-filter list > f; kml-filter load f */
		printf("policy %s\n", kml_filter_verdict_name(info.policy));
		for (i = 0; i < l.count; i++) {
			kml_filter_format_rule(&e[i].rule, text, sizeof(text));
			printf("%s\n", text);
		}
	}
	free(e);
}

static void cmd_load(int fd, const char *path)
{
	struct kml_filter_ruleset rs = { 0 };
	struct kml_filter_replace rep = { 0 };
	size_t len = 0, cap = 0, n;
	char *buf = NULL, err[300];
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;

	if (!f)
		kml_die("cannot open %s: %s", path, strerror(errno));
	do {
		if (len == cap) {
			char *nb;

			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb)
				kml_die("out of memory");
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	if (ferror(f))
		kml_die("cannot read %s", path);
	if (f != stdin)
		fclose(f);
	if (kml_filter_parse_file(buf, len, &rs, err, sizeof(err)))
		kml_die("%s:%s (nothing changed)", path, err + 5);
	free(buf);
	if (rs.policy_fwd)
		no_fwd_policy("load");
	rep.count = rs.count;
	rep.policy = rs.policy;
	rep.rules = (__u64)(uintptr_t)rs.rules;
	if (ioctl(fd, KML_FILTER_IOC_REPLACE, &rep))
		ioctl_failed("load");
	if (!json)
		printf("loaded %u rules%s%s\n", rs.count, rs.policy ? ", policy " : "",
		       rs.policy ? kml_filter_verdict_name(rs.policy) : "");
	kml_filter_ruleset_free(&rs);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c, fd;

	kml_prog = "kml-filter";
	kml_cli_common(&argc, argv, &json, usage, cmds);
	if (getenv("KML_FILTER_DEVICE"))
		device = getenv("KML_FILTER_DEVICE");
	while ((c = getopt_long(argc, argv, "+:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
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
		fd = open_device();
		cmd_list(fd, verbose);
	} else if (!strcmp(cmd, "add")) {
		struct kml_filter_add a = { .position = KML_FILTER_APPEND };

		if (argc >= 2 && !strcmp(argv[0], "--at")) {
			a.position = (__u32)kml_arg_number(argv[1], KML_FILTER_MAX_RULES,
							   "position");
			if (!a.position)
				kml_usage_error("%s", "bad position '0': rules are numbered from 1");
			a.position--;
			argc -= 2;
			argv += 2;
		}
		parse_or_die(argc, argv, &a.rule);
		fd = open_device();
		if (ioctl(fd, KML_FILTER_IOC_ADD, &a))
			ioctl_failed("add");
	} else if (!strcmp(cmd, "del")) {
		struct kml_filter_del d = { 0 };

		if (argc == 1 && argv[0][0] >= '0' && argv[0][0] <= '9') {
			d.index = (__u32)kml_arg_number(argv[0], KML_FILTER_MAX_RULES,
							"rule number");
			if (!d.index)
				kml_usage_error("%s", "bad rule number '0': rules are numbered from 1");
			d.index--;
		} else {
			parse_or_die(argc, argv, &d.rule);
			d.flags = KML_FILTER_DEL_MATCH;
		}
		fd = open_device();
		if (ioctl(fd, KML_FILTER_IOC_DEL, &d))
			ioctl_failed("del");
	} else if (!strcmp(cmd, "flush")) {
		kml_operands(argc, argv, 0, 0);
		fd = open_device();
		if (ioctl(fd, KML_FILTER_IOC_FLUSH))
			ioctl_failed("flush");
	} else if (!strcmp(cmd, "policy")) {
		char err[256];
		__u32 p;
		int fwd;

		kml_operands(argc, argv, 1, 2);
		if (kml_filter_parse_policy(argc, argv, &p, &fwd, err, sizeof(err)))
			kml_usage_error("bad policy '%s': %s", argv[argc - 1], err);
		if (fwd)
			no_fwd_policy("policy fwd");
		fd = open_device();
		if (ioctl(fd, KML_FILTER_IOC_SET_POLICY, &p))
			ioctl_failed("policy");
	} else if (!strcmp(cmd, "load")) {
		kml_operands(argc, argv, 1, 1);
		fd = open_device();
		cmd_load(fd, argv[0]);
	} else {
		kml_usage_error("unknown command '%s'", cmd);
	}
	close(fd);
	return 0;
}
