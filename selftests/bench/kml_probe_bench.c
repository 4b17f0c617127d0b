// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe benchmark (`make bench`, in the guest): what a probe adds to
 * each call of the probed function. kml_probe_target is called in a loop
 * inside the kernel (the CALL ioctl), so one syscall covers many calls and
 * its own cost does not hide the probe's. Rounds interleave the modes and
 * each reports its median round; only ratios from one run are meaningful.
 *
 * The peers, on the same function in the same rounds: kml_probe with its
 * own tracepoint (kml_probe:call) on; an ftrace kretprobe event with a
 * hist trigger; and bpftrace, both as the same latency histogram
 * (kprobe + kretprobe + hist(), what kml_probe's kretprobe does) and as a
 * bare count. A peer whose tool or kernel support is missing is skipped,
 * with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>

#define ROUNDS	7
#define CALLS	100000

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

#define TRACEFS	"/sys/kernel/tracing"
#define TARGET	"kml_probe_target"

struct mode {
	const char *name;
	int attach;			/* kml_probe's own probe */
	unsigned int flags, nargs;
	int event;			/* kml_probe:call enabled (ftrace buffer) */
	int ftrace;			/* a kretprobe event with a hist trigger */
	const char *bpf;		/* a bpftrace program running beside */
	const char *skip;		/* why this mode cannot run here */
	double ns[ROUNDS];
	double median;
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int put(const char *path, const char *val, int flags)
{
	int f = open(path, O_WRONLY | flags);
	ssize_t n;

	if (f < 0)
		return -1;
	n = write(f, val, strlen(val));
	close(f);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static const char ftrace_probe[] = "r:kmlbench/ret " TARGET "\n";
static const char ftrace_hist[] = "hist:keys=common_pid:vals=hitcount";

static int ftrace_on(void)
{
	if (put(TRACEFS "/kprobe_events", ftrace_probe, O_APPEND))
		return -1;
	return put(TRACEFS "/events/kmlbench/ret/trigger", ftrace_hist, O_TRUNC);
}

static void ftrace_off(void)
{
	char undo[64];

	snprintf(undo, sizeof(undo), "!%s", ftrace_hist);
	put(TRACEFS "/events/kmlbench/ret/trigger", undo, O_TRUNC);
	put(TRACEFS "/kprobe_events", "-:kmlbench/ret\n", O_APPEND);
}

/*
 * bpftrace with @prog, running once it prints "Attaching": its pid, its
 * output on *@out (read after stopping it), or -1.
 */
static pid_t bpf_start(const char *prog, FILE **out)
{
	char line[512];
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		/* line-buffered: "Attaching" must reach us before it exits */
		execlp("bpftrace", "bpftrace", "-B", "line", "-e", prog, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	line[0] = '\0';
	alarm(300);	/* a bpftrace that never starts ends the bench */
	while (pid > 0 && *out && fgets(line, sizeof(line), *out))
		if (strstr(line, "Attaching")) {
			alarm(0);
			return pid;
		}
	alarm(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (*out)
		fclose(*out);
	fprintf(stderr, "kml_probe_bench: bpftrace did not start: %s", line);
	return -1;
}

/* Stops bpftrace; its maps must show @calls, or it measured nothing. */
static int bpf_stop(pid_t pid, FILE *out, unsigned long long calls)
{
	char line[512];
	int seen = 0;

	kill(pid, SIGINT);
	while (fgets(line, sizeof(line), out)) {
		unsigned long long n;

		if (sscanf(line, "@n: %llu", &n) == 1 && n >= calls)
			seen = 1;
		if (sscanf(line, "@lat: count %llu", &n) == 1 && n >= calls)
			seen = 1;
	}
	fclose(out);
	waitpid(pid, NULL, 0);
	return seen ? 0 : -1;
}

int main(void)
{
	struct mode m[] = {
		{ .name = "no probe" },
		{ .name = "kprobe (count only)", .attach = 1, .flags = KML_PROBE_F_COUNT_ONLY },
		{ .name = "kretprobe", .attach = 1 },
		{ .name = "kretprobe + 6 args", .attach = 1, .nargs = 6 },
		{ .name = "kretprobe + event", .attach = 1, .event = 1 },
		{ .name = "ftrace kretprobe+hist", .ftrace = 1 },
		{ .name = "bpftrace latency hist",
		  .bpf = "kprobe:" TARGET " { @s[tid] = nsecs; } "
			 "kretprobe:" TARGET " /@s[tid]/ { @lat = stats(nsecs - @s[tid]); "
			 "@h = hist(nsecs - @s[tid]); delete(@s[tid]); }" },
		{ .name = "bpftrace count", .bpf = "kretprobe:" TARGET " { @n = count(); }" },
	};
	const int nm = sizeof(m) / sizeof(m[0]);
	struct kml_probe_call call = { .arg = 1, .count = CALLS };
	struct kml_probe_func f = { .func = TARGET };
	const char *bpf_skip = NULL;

	fd = open(KML_PROBE_DEVICE, O_RDWR);
	if (fd < 0)
		die(KML_PROBE_DEVICE);
	if (access(TRACEFS "/instances", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	if (system("command -v bpftrace > /dev/null 2>&1"))
		bpf_skip = "bpftrace is not installed";
	else if (access("/proc/sys/kernel/unprivileged_bpf_disabled", F_OK))
		bpf_skip = "the kernel has no BPF (CONFIG_BPF_SYSCALL)";
	for (int i = 0; i < nm; i++) {
		if (m[i].bpf)
			m[i].skip = bpf_skip;
		if ((m[i].event && access(TRACEFS "/events/kml_probe/call/enable", W_OK)) ||
		    (m[i].ftrace && access(TRACEFS "/kprobe_events", W_OK)))
			m[i].skip = "the kernel has no tracing (CONFIG_FTRACE, KPROBE_EVENTS)";
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < nm; i++) {
			struct kml_probe_attach a = {
				.func = TARGET,
				.flags = m[i].flags, .nargs = m[i].nargs,
			};
			FILE *bout = NULL;
			pid_t bpid = -1;
			double t0;

			if (m[i].skip)
				continue;
			if (m[i].attach && ioctl(fd, KML_PROBE_IOC_ATTACH, &a))
				die("attach");
			if (m[i].event &&
			    put(TRACEFS "/events/kml_probe/call/enable", "1", O_TRUNC))
				die("enable kml_probe:call");
			if (m[i].ftrace && ftrace_on())
				die("ftrace kretprobe event");
			if (m[i].bpf) {
				bpid = bpf_start(m[i].bpf, &bout);
				if (bpid < 0) {
					m[i].skip = "bpftrace failed to start";
					continue;
				}
			}
			t0 = now_ns();
			if (ioctl(fd, KML_PROBE_IOC_CALL, &call))
				die("call");
			m[i].ns[r] = (now_ns() - t0) / CALLS;
			if (bpid > 0 && bpf_stop(bpid, bout, CALLS))
				m[i].skip = "bpftrace counted fewer calls than were made";
			if (m[i].ftrace)
				ftrace_off();
			if (m[i].event)
				put(TRACEFS "/events/kml_probe/call/enable", "0", O_TRUNC);
			if (m[i].attach && ioctl(fd, KML_PROBE_IOC_DETACH, &f))
				die("detach");
		}
	}
	printf("kml_probe benchmark: %d rounds x %d in-kernel calls of " TARGET ", median round\n",
	       ROUNDS, CALLS);
	for (int i = 0; i < nm; i++) {
		if (m[i].skip) {
			printf("  %-22s not run: %s\n", m[i].name, m[i].skip);
			continue;
		}
		qsort(m[i].ns, ROUNDS, sizeof(double), cmp);
		m[i].median = m[i].ns[ROUNDS / 2];
		printf("  %-22s %9.0f ns/call (TCG)\n", m[i].name, m[i].median);
	}
	printf("ratios (same guest run), probed / unprobed call:\n");
	for (int i = 1; i < nm; i++)
		if (!m[i].skip)
			printf("  %-22s = %6.2f\n", m[i].name, m[i].median / m[0].median);
	printf("  kretprobe / kprobe     = %6.2f\n", m[2].median / m[1].median);
	/* The goal: kml_probe's histogram adds no more than bpftrace's. */
	if (!m[6].skip)
		printf("added cost per call, kml_probe kretprobe histogram / bpftrace latency hist = %.2f\n",
		       (m[2].median - m[0].median) / (m[6].median - m[0].median));
	if (!m[5].skip)
		printf("added cost per call, kml_probe kretprobe histogram / ftrace kretprobe+hist = %.2f\n",
		       (m[2].median - m[0].median) / (m[5].median - m[0].median));
	if (!m[4].skip)
		printf("added cost per call of the kml_probe:call event (ftrace buffer) / kretprobe = %.2f\n",
		       (m[4].median - m[2].median) / (m[2].median - m[0].median));
	close(fd);
	return 0;
}
