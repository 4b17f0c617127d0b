// SPDX-License-Identifier: GPL-2.0
/*
 * kml-probe: attach latency probes to kernel functions through
 * /dev/kml_probe and draw their histograms the way funclatency does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kml_cli.h"
#include "kml_probe_cmd.h"

#include <linux/kml_probe.h>

static const char *prog = "kml-probe";
static int json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] COMMAND [ARGS]\n"
		"\n"
		"  attach FUNC [--args N] [--pid P | --tgid P] [--arg K=V]\n"
		"              [--maxactive N] [--count-only]\n"
		"                          time FUNC with a kretprobe (root)\n"
		"  detach FUNC             remove its probe (root)\n"
		"  list                    attached functions with count, avg, min, max, missed\n"
		"                          (a function whose module was unloaded is marked gone)\n"
		"  hist FUNC [-w|--seconds S]  log2 latency histogram (of the next S seconds)\n"
		"  reset                   zero every probe's results (root)\n"
		"  call COUNT DELAY_US [DEPTH]\n"
		"                          run the built-in test target kml_probe_target (root)\n"
		"  record [-o FILE] [-F kml|perf] [-a NARGS] [-m PAGES] [-d|--seconds S] FUNC...\n"
		"         [-- COMMAND...]  every call of each FUNC, one record each, into FILE\n"
		"                          (default kml-probe.data; -F perf: perf.data), while\n"
		"                          COMMAND runs, for SECONDS, or until ^C (root; needs\n"
		"                          kml_ring loaded)\n"
		"  report [FILE] [--force] [--top N]\n"
		"                          latency histograms and top threads of a recording\n"
		"                          (--force: one whose recorder was killed)\n"
		"  convert [FILE] [-o OUT] [--force]\n"
		"                          a recording as perf.data, for perf script and perf\n"
		"                          report (default OUT perf.data)\n"
		"\n"
		"  -j, --json              JSON output\n"
		"  -h, --help              this text, also `help`\n"
		"  -V, --version           the client's version\n", prog);
}

static void failed(const char *what, const char *func)
{
	switch (errno) {
	case EPERM:
		kml_die("%s needs root (CAP_SYS_ADMIN)", what);
	case ENOTTY:
		kml_die("%s does not understand %s (module and client from different versions?)",
		    KML_PROBE_DEVICE, what);
	case ESRCH:
		kml_die("no such process or thread for the --pid/--tgid filter");
	case ENODEV: {
		char hint[512];

		kml_load_hint(hint, sizeof(hint), "kml_probe_target", NULL);
		kml_die("%s: kml_probe_target is not loaded: %s", what, hint);
	}
	case ENOENT:
		if (!strcmp(what, "attach"))
			kml_die("no such kernel function: %s", func);
		kml_die("%s is not attached", func);
	case EEXIST:
		kml_die("%s is already attached", func);
	case ENOSPC:
		kml_die("too many probes: at most %d functions at once", KML_PROBE_MAX_FUNCS);
	case EINVAL:
		if (!strcmp(what, "attach"))
			kml_die("kprobes refuse to probe %s (on the kprobe blacklist, not a function entry such as foo.cold, or in a notrace section)",
			    func);
		kml_die("%s: invalid argument", what);
	default:
		kml_die("%s %s: %s", what, func ? func : "", strerror(errno));
	}
}

/*
 * The device, opened by the first command that needs it once its words
 * are checked: a usage error is one whether the module is loaded or not.
 */
static int dev_fd = -1;

int kml_probe_dev(void)
{
	int fd;
	uint32_t v;

	if (dev_fd >= 0)
		return dev_fd;
	fd = open(KML_PROBE_DEVICE, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			kml_die_not_loaded("kml_probe", KML_PROBE_DEVICE);
		kml_die("cannot open %s: %s", KML_PROBE_DEVICE, strerror(errno));
	}
	if (ioctl(fd, KML_PROBE_IOC_GET_VERSION, &v))
		failed("version", NULL);
	if (v != KML_PROBE_ABI_VERSION)
		kml_die("%s speaks ABI %u, this client ABI %u", KML_PROBE_DEVICE, v,
		    KML_PROBE_ABI_VERSION);
	dev_fd = fd;
	return fd;
}

static void set_func(char *dst, const char *func)
{
	if (strlen(func) >= KML_PROBE_FUNC_LEN)
		kml_usage_error("function name too long: %zu bytes, at most %d", strlen(func),
				KML_PROBE_FUNC_LEN - 1);
	strcpy(dst, func);
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "args", required_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tgid", required_argument, NULL, 't' },
		{ "arg", required_argument, NULL, 'k' },
		{ "maxactive", required_argument, NULL, 'm' },
		{ "count-only", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct kml_probe_attach a = { 0 };
	char *eq;
	int c;

	if (argc < 2 || argv[1][0] == '-')
		kml_usage_error("%s", "give FUNC first");
	set_func(a.func, argv[1]);
	optind = 2;
	while ((c = getopt_long(argc, argv, "+:", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a.nargs = kml_arg_number(optarg, KML_PROBE_MAX_ARGS, "--args (0..6)");
			break;
		case 'p':
		case 't':
			a.flags |= c == 'p' ? KML_PROBE_F_PID : KML_PROBE_F_TGID;
			a.pid = kml_arg_number(optarg, 0x7fffffff, "pid");
			break;
		case 'k':
			eq = strchr(optarg, '=');
			if (!eq)
				kml_usage_error("bad --arg '%s': give K=V, e.g. --arg 0=42", optarg);
			*eq = '\0';
			a.flags |= KML_PROBE_F_ARG;
			a.arg_index = kml_arg_number(optarg, KML_PROBE_MAX_ARGS - 1,
						     "argument index (0..5)");
			a.arg_value = kml_arg_number(eq + 1, UINT64_MAX, "argument value");
			break;
		case 'm':
			a.maxactive = kml_arg_number(optarg, KML_PROBE_MAXACTIVE_MAX, "--maxactive");
			break;
		case 'c':
			a.flags |= KML_PROBE_F_COUNT_ONLY;
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	kml_operands(argc - optind, argv + optind, 0, 0);
	if ((a.flags & KML_PROBE_F_PID) && (a.flags & KML_PROBE_F_TGID))
		kml_usage_error("%s", "give --pid or --tgid, not both");
	if ((a.flags & KML_PROBE_F_COUNT_ONLY) && (a.nargs || a.maxactive))
		kml_usage_error("%s", "--count-only takes neither --args nor --maxactive");
	if (ioctl(kml_probe_dev(), KML_PROBE_IOC_ATTACH, &a))
		failed("attach", a.func);
	return 0;
}

static int cmd_detach(int argc, char **argv)
{
	struct kml_probe_func f = { { 0 } };

	kml_operands(argc - 1, argv + 1, 1, 1);
	set_func(f.func, argv[1]);
	if (ioctl(kml_probe_dev(), KML_PROBE_IOC_DETACH, &f))
		failed("detach", f.func);
	return 0;
}

static void get(int fd, const char *func, struct kml_probe_result *r)
{
	memset(r, 0, sizeof(*r));
	set_func(r->func, func);
	if (ioctl(fd, KML_PROBE_IOC_GET, r))
		failed("get", func);
}

static const char *state(const struct kml_probe_result *r)
{
	return r->state & KML_PROBE_S_GONE ? "gone (module unloaded)" : "attached";
}

static int cmd_list(int argc, char **argv)
{
	struct kml_probe_list l = { 0 };
	struct kml_probe_result r;
	uint32_t i;
	int fd;

	kml_operands(argc - 1, argv + 1, 0, 0);
	fd = kml_probe_dev();
	if (ioctl(fd, KML_PROBE_IOC_LIST, &l))
		failed("list", NULL);
	if (json)
		printf("[");
	else
		printf("%-32s %10s %12s %12s %12s %8s %8s %s\n", "FUNCTION", "CALLS",
		       "AVG ns", "MIN ns", "MAX ns", "MISSED", "FILTERED", "STATE");
	for (i = 0; i < l.count; i++) {
		get(fd, l.funcs[i].func, &r);
		if (json)
			printf("%s{\"func\":\"%s\",\"count\":%llu,\"sum_ns\":%llu,"
			       "\"min_ns\":%llu,\"max_ns\":%llu,\"nmissed\":%llu,"
			       "\"filtered\":%llu,\"count_only\":%s,\"nargs\":%u,"
			       "\"maxactive\":%u,\"gone\":%s}", i ? "," : "", r.func,
			       (unsigned long long)r.count, (unsigned long long)r.sum_ns,
			       (unsigned long long)r.min_ns, (unsigned long long)r.max_ns,
			       (unsigned long long)r.nmissed, (unsigned long long)r.filtered,
			       r.flags & KML_PROBE_F_COUNT_ONLY ? "true" : "false",
			       r.nargs, r.maxactive,
			       r.state & KML_PROBE_S_GONE ? "true" : "false");
		else if (r.flags & KML_PROBE_F_COUNT_ONLY)
			printf("%-32s %10llu %12s %12s %12s %8llu %8llu %s\n", r.func,
			       (unsigned long long)r.count, "-", "-", "-",
			       (unsigned long long)r.nmissed,
			       (unsigned long long)r.filtered, state(&r));
		else
			printf("%-32s %10llu %12llu %12llu %12llu %8llu %8llu %s\n", r.func,
			       (unsigned long long)r.count,
			       (unsigned long long)(r.count ? r.sum_ns / r.count : 0),
			       (unsigned long long)r.min_ns, (unsigned long long)r.max_ns,
			       (unsigned long long)r.nmissed,
			       (unsigned long long)r.filtered, state(&r));
	}
	if (json)
		printf("]\n");
	return 0;
}

static void draw(const struct kml_probe_result *r)
{
	if (json) {
		printf("{\"func\":\"%s\",\"count\":%llu,\"sum_ns\":%llu,\"nmissed\":%llu,\"buckets\":",
		       r->func, (unsigned long long)r->count,
		       (unsigned long long)r->sum_ns, (unsigned long long)r->nmissed);
		kml_probe_json_buckets(r->hist);
		printf("}\n");
		return;
	}
	printf("Function = %s  (%llu calls, %llu missed)%s\n", r->func,
	       (unsigned long long)r->count, (unsigned long long)r->nmissed,
	       r->state & KML_PROBE_S_GONE ? "  GONE: its module was unloaded" : "");
	kml_probe_draw_hist(r->hist);
	if (r->count)
		printf("avg = %llu nsecs, min = %llu, max = %llu\n",
		       (unsigned long long)(r->sum_ns / r->count),
		       (unsigned long long)r->min_ns, (unsigned long long)r->max_ns);
	if (r->nargs && (r->state & KML_PROBE_S_REDACTED))
		printf("last call: arguments hidden (needs CAP_SYS_ADMIN)\n");
	else if (r->nargs) {
		printf("last call: (");
		for (uint32_t i = 0; i < r->nargs && i < KML_PROBE_MAX_ARGS; i++)
			printf("%s%#llx", i ? ", " : "", (unsigned long long)r->last_args[i]);
		printf(") = %#llx\n", (unsigned long long)r->last_ret);
	}
}

static int cmd_hist(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct kml_probe_result a, b;
	double secs = 0;
	int c, fd;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:", opts, NULL)) != -1) {
		if (c != 'w')
			kml_bad_option(c, argv);
		secs = (double)kml_arg_number(optarg, 86400, "seconds");
	}
	/* getopt put FUNC after the options */
	kml_operands(argc - optind, argv + optind, 1, 1);
	argv[1] = argv[optind];
	fd = kml_probe_dev();
	get(fd, argv[1], &a);
	if (secs > 0) {
		struct timespec ts = { .tv_sec = (time_t)secs };

		nanosleep(&ts, NULL);
		get(fd, argv[1], &b);
		/* Show only what happened during the window. */
		for (int k = 0; k < KML_PROBE_BUCKETS; k++)
			b.hist[k] -= b.hist[k] >= a.hist[k] ? a.hist[k] : b.hist[k];
		b.count -= b.count >= a.count ? a.count : b.count;
		b.sum_ns -= b.sum_ns >= a.sum_ns ? a.sum_ns : b.sum_ns;
		b.nmissed -= b.nmissed >= a.nmissed ? a.nmissed : b.nmissed;
		a = b;
	}
	draw(&a);
	return 0;
}

static int cmd_call(int argc, char **argv)
{
	struct kml_probe_call c = { 0 };

	kml_operands(argc - 1, argv + 1, 2, 3);
	c.count = kml_arg_number(argv[1], 100000, "count (1..100000)");
	c.delay_ns = kml_arg_number(argv[2], 10000, "delay (0..10000 us)") * 1000;
	if (argc == 4)
		c.depth = kml_arg_number(argv[3], 8, "depth (0..8)");
	c.arg = 42;
	if (ioctl(kml_probe_dev(), KML_PROBE_IOC_CALL, &c))
		failed("call", NULL);
	return 0;
}

static int cmd_reset(int argc, char **argv)
{
	kml_operands(argc - 1, argv + 1, 0, 0);
	if (ioctl(kml_probe_dev(), KML_PROBE_IOC_RESET))
		failed("reset", NULL);
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	return kml_probe_report(argc, argv, json);
}

/* kml-probe.1's COMMANDS, in short. */
static const struct kml_cmd cmds[] = {
	{ "attach", "FUNC [--args N] [--pid P | --tgid P] [--arg K=V] [--maxactive N] [--count-only]",
	  "Time every call of kernel function FUNC with a kretprobe (root).\n"
	  "  --args N           capture the first N arguments (0..6) and the return value\n"
	  "  --pid P            only calls made by thread P\n"
	  "  --tgid P           only calls made by the threads of process P\n"
	  "  --arg K=V          only calls whose argument K (0..5) equals V\n"
	  "  --maxactive N      calls tracked at once (up to 4096); more count as missed\n"
	  "  --count-only       only count calls, with a kprobe (no latency)\n",
	  cmd_attach },
	{ "detach", "FUNC", "Remove FUNC's probe (root).\n", cmd_detach },
	{ "list", "",
	  "Each attached function with its calls, average, minimum and maximum\n"
	  "latency in ns, missed and filtered calls, and its state (gone: its\n"
	  "module was unloaded).\n",
	  cmd_list },
	{ "hist", "FUNC [-w|--seconds SECONDS]",
	  "FUNC's log2 latency histogram since it was attached or reset.\n"
	  "  -w, --seconds SECONDS  only the calls during the next SECONDS (0..86400)\n",
	  cmd_hist },
	{ "reset", "", "Zero every probe's results (root).\n", cmd_reset },
	{ "call", "COUNT DELAY_US [DEPTH]",
	  "Run the test function kml_probe_target COUNT times (at most 100000), each\n"
	  "call lasting DELAY_US microseconds (0..10000) and calling itself DEPTH\n"
	  "times (0..8) (root; needs the kml_probe_target module).\n",
	  cmd_call },
	{ "record", "[-o FILE] [-F kml|perf] [-a NARGS] [-m PAGES] [-d SECONDS] FUNC... [-- COMMAND...]",
	  "Record every call of each FUNC (up to 16), one record each, while COMMAND\n"
	  "runs, for SECONDS, or until interrupted (root; needs kml_ring loaded).\n"
	  "  -o, --output FILE  the file to write (default kml-probe.data, or\n"
	  "                     perf.data with -F perf)\n"
	  "  -F, --format FMT   kml (kml-probe's own, the default) or perf: the\n"
	  "                     recording goes to FILE.kml-probe and is converted\n"
	  "                     to perf.data in FILE when it ends\n"
	  "  -a, --args NARGS   capture the first NARGS arguments (0..6) of each call\n"
	  "  -m, --pages PAGES  the ring's size in pages: a power of two, 1..1024 (64)\n"
	  "  -d, --duration, --seconds SECONDS  stop after SECONDS (1..86400)\n",
	  kml_probe_record },
	{ "report", "[FILE] [--force] [--top N]",
	  "Latency histograms and top threads of a recording (default\n"
	  "kml-probe.data; also -i, --input FILE). Needs no module.\n"
	  "  -f, --force        read a file whose recorder was killed\n"
	  "  -t, --top N        show the N busiest threads (default 10)\n",
	  cmd_report },
	{ "convert", "[FILE] [-o OUT] [--force]",
	  "A recording (default kml-probe.data; also -i, --input FILE) as\n"
	  "perf.data, for perf script and perf report. Needs no module.\n"
	  "  -o, --output OUT   the file to write (default perf.data; an existing\n"
	  "                     one is kept as OUT.old)\n"
	  "  -f, --force        convert a file whose recorder was killed\n"
	  "  -F, --format perf  the format to write (perf, the only one)\n",
	  kml_probe_convert },
	{ NULL, NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	const struct kml_cmd *cmd;
	int ret;

	kml_prog = prog;
	kml_cli_common(&argc, argv, &json, usage, cmds);
	if (argc > 1 && argv[1][0] == '-')
		kml_usage_error("unknown option '%s'", argv[1]);
	if (argc < 2)
		kml_usage_error("%s", "no command given");
	cmd = kml_find_cmd(cmds, argv[1]);
	if (!cmd)
		kml_usage_error("unknown command '%s'", argv[1]);
	/*
	 * Each command checks its words before it opens the device (report
	 * reads a file and needs no module).
	 */
	ret = cmd->run(argc - 1, argv + 1);
	if (dev_fd >= 0)
		close(dev_fd);
	return ret;
}
