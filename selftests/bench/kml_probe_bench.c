// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe benchmark (`make bench`, in the guest): what a probe adds to
 * each call of the probed function, for kml_probe's own modes and for two
 * peers doing the same job, a latency histogram of kml_probe_target:
 *
 *   bpftrace  kprobe stores the entry time per thread, kretprobe adds
 *             nsecs - start to a hist() (BPF programs, perf kprobes)
 *   ftrace    kprobe and kretprobe dynamic events (tracefs kprobe_events)
 *             whose hist triggers pair entry and return per thread and
 *             feed the latency to a log2 hist of a synthetic event
 *   libbpf    labs/bpf's kml-bpf lat (bpf/kml_lat.bpf.c): a kprobe and a
 *             kretprobe program in C, compiled ahead, loaded by libbpf,
 *             entry times on a stack per thread in a hash map, a per-CPU
 *             histogram (KMODLAB_BPF names it; default build/bpf/kml-bpf)
 *
 * kml_probe_target is called in a loop inside the kernel (the CALL
 * ioctl), so one syscall covers many calls and its own cost does not hide
 * the probe's. Rounds interleave every mode, each reports its median
 * round; only ratios from one run are meaningful.
 *
 * bpftrace and kml-bpf are child processes. Its output goes to a file, never a pipe
 * (its stdout is block-buffered into a pipe, and a line we waited for
 * would never come); that it has attached is read from the kernel's list
 * of kprobes, with a time limit; it is stopped with SIGINT, then SIGKILL
 * if it does not exit in time; and an alarm() ends the whole benchmark,
 * bpftrace included, if anything still hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>

#include "../kml_trace.h"

#define ROUNDS		7
#define CALLS		100000
#define WARMUP		1000
#define TARGET		"kml_probe_target"
#define KPROBE_LIST	"/sys/kernel/debug/kprobes/list"
#define ALARM_S		600	/* the whole benchmark, whatever hangs */

static int fd;

static void die(const char *what)
{
	fprintf(stderr, "kml_probe_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void call_target(unsigned int count)
{
	struct kml_probe_call call = { .arg = 1, .count = count };

	if (ioctl(fd, KML_PROBE_IOC_CALL, &call))
		die("call");
}

/* Probes registered on the target (kprobes' own list), or -1. */
static int target_kprobes(void)
{
	FILE *f = fopen(KPROBE_LIST, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " " TARGET "+"))
			n++;
	fclose(f);
	return n;
}

/* Wait up to @s seconds for @want probes on the target (-1: at least 1). */
static int wait_kprobes(int want, double s)
{
	double end = now_ns() + s * 1e9;

	do {
		int n = target_kprobes();

		if (n < 0 || (want < 0 ? n > 0 : n == want))
			return n < 0 ? -1 : 0;
		usleep(100000);
	} while (now_ns() < end);
	return -1;
}

/* ---- kml_probe's own modes ---- */

static unsigned int kp_flags, kp_nargs;

static int kml_probe_on(void)
{
	struct kml_probe_attach a = { .func = TARGET, .flags = kp_flags, .nargs = kp_nargs };

	if (ioctl(fd, KML_PROBE_IOC_ATTACH, &a))
		die("attach");
	return 0;
}

static void kml_probe_off(void)
{
	struct kml_probe_func f = { .func = TARGET };

	if (ioctl(fd, KML_PROBE_IOC_DETACH, &f))
		die("detach");
}

static int kp_count(void)
{
	kp_flags = KML_PROBE_F_COUNT_ONLY;
	kp_nargs = 0;
	return kml_probe_on();
}

static int kp_ret(void)
{
	kp_flags = 0;
	kp_nargs = 0;
	return kml_probe_on();
}

static int kp_args(void)
{
	kp_flags = 0;
	kp_nargs = 6;
	return kml_probe_on();
}

/* ---- bpftrace ---- */

static const char bt_prog[] =
	"kprobe:" TARGET " { @start[tid] = nsecs; }\n"
	"kretprobe:" TARGET " /@start[tid]/ {\n"
	"	@lat = hist(nsecs - @start[tid]); delete(@start[tid]);\n"
	"}\n";
static volatile pid_t child_pid = -1;	/* bpftrace or kml-bpf */
static char bt_out[64];
static unsigned long long bt_counted;	/* calls in the last hist printed */

static void bpftrace_off(void);

/*
 * Starts @argv as the child (child_pid), its stdout and stderr into a new
 * temporary file whose name is left in @out, and waits until both its
 * probes are on the target: 0, or -1 (it exited, or did not attach in
 * 120 s) after @off(), which stops it and shows what it said.
 */
static int child_on(const char *what, char *out, char *const argv[], void (*off)(void))
{
	int fd;

	strcpy(out, "/tmp/kml_probe_bench.XXXXXX");
	fd = mkstemp(out);
	if (fd < 0)
		die("mkstemp");
	child_pid = fork();
	if (child_pid < 0)
		die("fork");
	if (!child_pid) {
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], argv);
		dprintf(1, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	/* Both probes listed: each attaches one after the other. */
	for (double end = now_ns() + 120e9; now_ns() < end; usleep(100000)) {
		if (waitpid(child_pid, NULL, WNOHANG) == child_pid) {
			child_pid = -1;
			break;
		}
		if (target_kprobes() == 2)
			return 0;
	}
	fprintf(stderr, "kml_probe_bench: %s %s\n", what,
		child_pid < 0 ? "exited before attaching" : "did not attach in 120 s");
	off();
	return -1;
}

static int bpftrace_on(void)
{
	/* -B none: no buffering at all, even into a file. */
	char *const argv[] = { "bpftrace", "-B", "none", "-e", (char *)bt_prog, NULL };

	return child_on("bpftrace", bt_out, argv, bpftrace_off);
}

/* The calls bpftrace's histogram counted: "[a, b)  N |@@@|" lines. */
static unsigned long long bt_hist_total(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long n = 0;
	char line[512], *p;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (line[0] == '[' && (p = strpbrk(line, ")]")))
			n += strtoull(p + 1, NULL, 10);
	fclose(f);
	return n;
}

static void bpftrace_off(void)
{
	int exited = 0;

	if (child_pid > 0) {
		/* SIGINT: bpftrace detaches, prints its maps and exits. */
		kill(child_pid, SIGINT);
		for (double end = now_ns() + 60e9; now_ns() < end; usleep(100000))
			if (waitpid(child_pid, NULL, WNOHANG) == child_pid) {
				exited = 1;
				break;
			}
		if (!exited) {
			fprintf(stderr, "kml_probe_bench: bpftrace ignored SIGINT, killed\n");
			kill(child_pid, SIGKILL);
			waitpid(child_pid, NULL, 0);
		}
		child_pid = -1;
	}
	bt_counted = bt_hist_total(bt_out);
	if (bt_counted == 0) {	/* show why */
		FILE *f = fopen(bt_out, "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "bpftrace: %s", line);
		if (f)
			fclose(f);
	}
	unlink(bt_out);
	if (wait_kprobes(0, 30))
		fprintf(stderr, "kml_probe_bench: bpftrace's kprobes still listed\n");
}

/* ---- libbpf: labs/bpf's loader ---- */

static char lb_out[64];
static unsigned long long lb_counted;

static void libbpf_off(void);

static int libbpf_on(void)
{
	const char *bin = getenv("KMODLAB_BPF");
	char *const argv[] = { (char *)bin, "lat", TARGET, NULL };

	if (!bin || access(bin, X_OK)) {
		fprintf(stderr, "kml_probe_bench: no kml-bpf (KMODLAB_BPF=%s): make bpf\n",
			bin ? bin : "");
		return -1;
	}
	return child_on("kml-bpf", lb_out, argv, libbpf_off);
}

static void libbpf_off(void)
{
	char line[512];
	FILE *f;

	if (child_pid > 0) {
		/* SIGINT: it reads its maps, prints them, detaches and exits */
		kill(child_pid, SIGINT);
		waitpid(child_pid, NULL, 0);
		child_pid = -1;
	}
	lb_counted = 0;
	f = fopen(lb_out, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, TARGET " calls %llu", &lb_counted) != 1 &&
		    strncmp(line, "bucket ", 7) && strncmp(line, "kml-bpf: attached", 17))
			fprintf(stderr, "%s", line);	/* what went wrong */
	if (f)
		fclose(f);
	unlink(lb_out);
	if (wait_kprobes(0, 30))
		fprintf(stderr, "kml_probe_bench: kml-bpf's kprobes still listed\n");
}

/* ---- ftrace: kprobe events and hist triggers ---- */

/*
 * Entry saves the time per thread in a hist variable; return subtracts it
 * and, matched with the entry, emits a synthetic event carrying the
 * latency, whose own hist trigger keeps the log2 histogram. Triggers only:
 * no event is enabled, so nothing goes to the trace buffer.
 */
static const char *const ft_on[][2] = {
	{ "kprobe_events", "p:kmlbench/entry " TARGET },
	{ "kprobe_events", "r:kmlbench/ret " TARGET " $retval" },
	{ "synthetic_events", "kmlbench_lat u64 lat" },
	{ "events/kmlbench/entry/trigger", "hist:keys=common_pid:ts0=common_timestamp" },
	{ "events/kmlbench/ret/trigger",
	  "hist:keys=common_pid:lat=common_timestamp-$ts0"
	  ":onmatch(kmlbench.entry).trace(kmlbench_lat,$lat)" },
	{ "events/synthetic/kmlbench_lat/trigger", "hist:keys=lat.log2" },
};
static unsigned long long ft_counted;

/* Appends: truncating kprobe_events or synthetic_events deletes them all. */
static int ft_write(const char *file, const char *val)
{
	char path[256];
	int f, ret = 0;

	snprintf(path, sizeof(path), KML_TRACEFS "/%s", file);
	f = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (f < 0)
		return -errno;
	if (write(f, val, strlen(val)) < 0)
		ret = -errno;
	close(f);
	return ret;
}

/* Undo ft_on from the end, quietly: also clears what a killed run left. */
static void ftrace_undo(void)
{
	static const char *const undo[] = {
		"-:kmlbench/entry", "-:kmlbench/ret", "!kmlbench_lat",
	};
	char val[256];
	int i = sizeof(ft_on) / sizeof(ft_on[0]);

	while (i-- > 3) {
		snprintf(val, sizeof(val), "!%s", ft_on[i][1]);
		ft_write(ft_on[i][0], val);
	}
	ft_write("synthetic_events", undo[2]);
	ft_write("kprobe_events", undo[1]);
	ft_write("kprobe_events", undo[0]);
}

static int ftrace_on(void)
{
	unsigned int i;
	int err;

	if (kml_tracefs())
		return -1;
	ftrace_undo();
	for (i = 0; i < sizeof(ft_on) / sizeof(ft_on[0]); i++) {
		err = ft_write(ft_on[i][0], ft_on[i][1]);
		if (err) {
			fprintf(stderr, "kml_probe_bench: ftrace: %s < '%s': %s\n",
				ft_on[i][0], ft_on[i][1], strerror(-err));
			ftrace_undo();
			return -1;
		}
	}
	return 0;
}

static void ftrace_off(void)
{
	FILE *f = fopen(KML_TRACEFS "/events/synthetic/kmlbench_lat/hist", "r");
	char line[512];

	/* "    Hits: N" in the totals: the latencies the histogram holds */
	ft_counted = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "    Hits: ", 10))
			ft_counted = strtoull(line + 10, NULL, 10);
	if (f)
		fclose(f);
	ftrace_undo();
	if (wait_kprobes(0, 30))
		fprintf(stderr, "kml_probe_bench: ftrace's kprobes still listed\n");
}

/* ---- the rounds ---- */

static void on_alarm(int sig)
{
	static const char msg[] = "kml_probe_bench: still running after the alarm, stopped\n";

	(void)sig;
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

struct mode {
	const char *name;
	int (*on)(void);
	void (*off)(void);
	unsigned long long *counted;	/* calls its histogram holds, if known */
	int skip, rounds_all_counted;
	double ns[ROUNDS], added[ROUNDS];
	double median, added_median;
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v)
{
	double s[ROUNDS];

	memcpy(s, v, sizeof(s));
	qsort(s, ROUNDS, sizeof(double), cmp);
	return s[ROUNDS / 2];
}

enum { M_NONE, M_COUNT, M_RET, M_ARGS, M_BPFTRACE, M_LIBBPF, M_FTRACE, NM };
static const char *const peer[NM] = {
	[M_BPFTRACE] = "bpftrace", [M_LIBBPF] = "libbpf", [M_FTRACE] = "ftrace",
};

int main(void)
{
	struct mode m[NM] = {
		[M_NONE] = { .name = "no probe" },
		[M_COUNT] = { .name = "kml_probe kprobe (count)", .on = kp_count,
			      .off = kml_probe_off },
		[M_RET] = { .name = "kml_probe kretprobe hist", .on = kp_ret,
			    .off = kml_probe_off },
		[M_ARGS] = { .name = "kml_probe + 6 args", .on = kp_args,
			     .off = kml_probe_off },
		[M_BPFTRACE] = { .name = "bpftrace kprobe+kretprobe", .on = bpftrace_on,
				 .off = bpftrace_off, .counted = &bt_counted },
		[M_LIBBPF] = { .name = "libbpf kprobe+kretprobe", .on = libbpf_on,
			       .off = libbpf_off, .counted = &lb_counted },
		[M_FTRACE] = { .name = "ftrace kprobe events+hist", .on = ftrace_on,
			       .off = ftrace_off, .counted = &ft_counted },
	};
	double t0;

	signal(SIGALRM, on_alarm);
	alarm(ALARM_S);
	/* CLOEXEC: bpftrace must not inherit it (rmmod kml_probe would fail). */
	fd = open(KML_PROBE_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(KML_PROBE_DEVICE);
	if (target_kprobes() != 0)
		fprintf(stderr, "kml_probe_bench: %s unreadable or not empty\n", KPROBE_LIST);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NM; i++) {
			if (m[i].skip)
				continue;
			if (m[i].on && m[i].on()) {
				m[i].skip = 1;
				continue;
			}
			call_target(WARMUP);
			t0 = now_ns();
			call_target(CALLS);
			m[i].ns[r] = (now_ns() - t0) / CALLS;
			m[i].added[r] = m[i].ns[r] - m[M_NONE].ns[r];
			if (m[i].off)
				m[i].off();
			/* Every timed call is in the histogram (calls counted are a suffix). */
			if (m[i].counted && *m[i].counted >= CALLS)
				m[i].rounds_all_counted++;
		}
	}
	alarm(0);
	printf("kml_probe benchmark: %d rounds x %d in-kernel calls of %s, every mode in every\n"
	       "round, median round. Under TCG only the ratios mean anything.\n",
	       ROUNDS, CALLS, TARGET);
	printf("  %-28s %10s %14s %11s\n", "", "ns/call", "added ns/call", "/ no probe");
	for (int i = 0; i < NM; i++) {
		if (m[i].skip) {
			printf("  %-28s not measured (see above)\n", m[i].name);
			continue;
		}
		m[i].median = median(m[i].ns);
		m[i].added_median = median(m[i].added);
		printf("  %-28s %10.0f %14.0f %11.2f\n", m[i].name, m[i].median,
		       m[i].added_median, m[i].median / m[M_NONE].median);
	}
	printf("ratios of the added cost per call (same guest run):\n");
	printf("  kml_probe kretprobe / kprobe         = %6.2f\n",
	       m[M_RET].added_median / m[M_COUNT].added_median);
	for (int i = M_BPFTRACE; i < NM; i++)
		if (!m[i].skip)
			printf("  kml_probe kretprobe / %-14s = %6.2f  (goal <= 1)\n",
			       peer[i], m[M_RET].added_median / m[i].added_median);
	for (int i = M_BPFTRACE; i < NM; i++)
		if (!m[i].skip)
			printf("  %s's histogram held every timed call in %d of %d rounds\n",
			       peer[i], m[i].rounds_all_counted, ROUNDS);
	close(fd);
	return 0;
}
