// SPDX-License-Identifier: GPL-2.0
/*
 * kml-bpf: the loader of labs/bpf's two BPF programs, and their reader.
 *
 *   kml-bpf drops [-t SECONDS]        kml_filter's drops per rule and source
 *   kml-bpf lat [-t SECONDS] [FUNC]   a latency histogram of FUNC
 *                                     (default kml_probe_target)
 *
 * Each loads its program into the kernel (where the verifier checks it),
 * attaches it, says so on stderr, and counts until ^C, SIGTERM or the -t
 * time is up; then it reads the maps and prints what they hold. Loading
 * and attaching are libbpf's skeleton API: `bpftool gen skeleton` turns
 * each compiled program into a header (kml_drops.skel.h) that embeds it
 * and names its maps and programs as struct members.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kml_bpf.h"
#include "kml_drops.skel.h"
#include "kml_lat.skel.h"

static volatile sig_atomic_t stop;
/* the signals that stop the counting, blocked but while waiting for them */
static sigset_t stop_signals, waiting;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "kml-bpf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* libbpf's own messages: its warnings (the verifier's log among them) */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
}

/*
 * Why a load failed, in one line after libbpf's own messages: -EPERM is
 * the bpf() system call's refusal of an unprivileged caller; the
 * verifier's refusals are -EACCES and -EINVAL, after its log.
 */
static void die_load(const char *prog, int err)
{
	if (err == -EPERM)
		die("loading %s: %s (BPF needs CAP_BPF and CAP_PERFMON: run as root)",
		    prog, strerror(-err));
	die("loading %s failed: %s (if the verifier refused it, its log is above: "
	    "the last lines say which instruction and why)", prog, strerror(-err));
}

/*
 * Waits for ^C, SIGTERM or @secs seconds (0: no limit). The signals were
 * blocked from the start (main()), so one sent as soon as "attached" was
 * printed is not lost, nor the default action's exit taken before the
 * maps are read: it is delivered inside sigsuspend().
 */
static void wait_stop(unsigned long secs)
{
	if (secs)
		alarm(secs);
	while (!stop)
		sigsuspend(&waiting);
}

/*
 * The value of @key in the per-CPU map @fd, summed over every CPU; -1 if
 * the key is not there.
 */
static long long percpu_sum(int fd, const void *key)
{
	int ncpus = libbpf_num_possible_cpus();
	unsigned long long sum = 0;
	__u64 *v;
	int cpu;

	if (ncpus < 1)
		die("how many CPUs: %s", strerror(-ncpus));
	v = calloc(ncpus, sizeof(*v));
	if (!v)
		die("out of memory");
	/* LAB bpf 1: A per-CPU map's lookup from userspace fills one value
	 * per possible CPU: add them all up.
	 */
	if (bpf_map_lookup_elem(fd, key, v)) {
		free(v);
		return -1;
	}
	for (cpu = 0; cpu < ncpus; cpu++)
		sum += v[cpu];
	/* LAB bpf 1 end */
	free(v);
	return (long long)sum;
}

static void print_addr(const struct kml_bpf_drop_key *k)
{
	char buf[INET6_ADDRSTRLEN];

	/* the tracepoint gives IPv4 as ::ffff:a.b.c.d */
	if (k->family == 4)
		inet_ntop(AF_INET, k->saddr + 12, buf, sizeof(buf));
	else
		inet_ntop(AF_INET6, k->saddr, buf, sizeof(buf));
	fputs(buf, stdout);
}

static void drops(unsigned long secs)
{
	struct kml_bpf_drop_key key, next, *prev = NULL;
	struct kml_drops_bpf *skel;
	__u32 zero = 0;
	int fd, err;

	/* the record's layout comes from the module's BTF (CO-RE) */
	if (access("/sys/kernel/btf/kml_filter", F_OK))
		die("kml_filter is not loaded (or was built without BTF): "
		    "nothing to attach to");
	skel = kml_drops_bpf__open();
	if (!skel)
		die("opening the drops program: %s", strerror(errno));
	err = kml_drops_bpf__load(skel);
	if (err)
		die_load("kml_drop", err);
	err = kml_drops_bpf__attach(skel);
	if (err)
		die("attaching to kml_filter:verdict: %s", strerror(-err));
	fprintf(stderr, "kml-bpf: attached to kml_filter:verdict; ^C prints the drops\n");
	wait_stop(secs);

	fd = bpf_map__fd(skel->maps.drops);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		long long n = percpu_sum(fd, &next);

		if (n > 0) {
			printf("rule %d src ", next.rule);
			print_addr(&next);
			printf(" drops %lld\n", n);
		}
		key = next;
		prev = &key;
	}
	printf("unkept %lld\n", percpu_sum(bpf_map__fd(skel->maps.drops_unkept), &zero));
	kml_drops_bpf__destroy(skel);
}

static void lat(const char *func, unsigned long secs)
{
	struct kml_lat_bpf *skel;
	long long n, count, sum;
	__u32 k, zero = 0;
	int fd;

	skel = kml_lat_bpf__open_and_load();
	if (!skel)
		die_load("kml_enter and kml_exit", -errno);
	/*
	 * The return first: a call entered between the two attaches then has
	 * its return seen without its entry (counted untimed), never the
	 * other way round, which would leave an entry no return ever takes.
	 */
	skel->links.kml_exit = bpf_program__attach_kprobe(skel->progs.kml_exit,
							  true, func);
	if (!skel->links.kml_exit)
		die("no kretprobe on %s: %s", func, strerror(errno));
	skel->links.kml_enter = bpf_program__attach_kprobe(skel->progs.kml_enter,
							   false, func);
	if (!skel->links.kml_enter)
		die("no kprobe on %s: %s", func, strerror(errno));
	fprintf(stderr, "kml-bpf: attached to %s; ^C prints the histogram\n", func);
	wait_stop(secs);

	fd = bpf_map__fd(skel->maps.hist);
	k = KML_BPF_SLOT_COUNT;
	count = percpu_sum(fd, &k);
	k = KML_BPF_SLOT_SUM;
	sum = percpu_sum(fd, &k);
	printf("%s calls %lld sum_ns %lld untimed %lld\n", func, count, sum,
	       percpu_sum(bpf_map__fd(skel->maps.untimed), &zero));
	for (k = 0; k < KML_BPF_BUCKETS; k++) {
		n = percpu_sum(fd, &k);
		if (n > 0)
			printf("bucket %u [%llu, %llu) ns %lld\n", k,
			       k ? 1ULL << (k - 1) : 0ULL,
			       k < 64 ? 1ULL << k : ~0ULL, n);
	}
	kml_lat_bpf__destroy(skel);
}

static __attribute__((noreturn)) void usage(FILE *f, int status)
{
	fprintf(f, "usage: kml-bpf drops [-t SECONDS]\n"
		   "       kml-bpf lat [-t SECONDS] [FUNCTION]   (default kml_probe_target)\n"
		   "Counts until ^C, SIGTERM or SECONDS, then prints.\n");
	exit(status);
}

int main(int argc, char **argv)
{
	unsigned long secs = 0;
	const char *cmd;
	char *end;
	int c;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't')
			usage(stderr, 2);
		errno = 0;
		secs = strtoul(optarg, &end, 10);
		if (errno || *end || !*optarg || *optarg == '-' || secs > 86400)
			die("-t %s: seconds, 0 to 86400", optarg);
	}
	if ((strcmp(cmd, "drops") || optind != argc) &&
	    (strcmp(cmd, "lat") || optind < argc - 1))
		usage(stderr, 2);

	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGALRM);
	sigprocmask(SIG_BLOCK, &stop_signals, &waiting);
	sigdelset(&waiting, SIGINT);
	sigdelset(&waiting, SIGTERM);
	sigdelset(&waiting, SIGALRM);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGALRM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_print);

	if (!strcmp(cmd, "drops"))
		drops(secs);
	else
		lat(optind < argc ? argv[optind] : "kml_probe_target", secs);
	if (fflush(stdout) || ferror(stdout))
		die("cannot write the output: %s", strerror(errno));
	return 0;
}
