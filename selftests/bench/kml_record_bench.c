// SPDX-License-Identifier: GPL-2.0
/*
 * `kml-probe record` against `perf record` on the same function (`make
 * bench`, in the guest). Both record every call of kml_probe_target:
 *
 *   kml-probe record    one kretprobe; one record per call (start,
 *                       latency, args, return value) into a kml_ring
 *   kml-probe record -F perf  the same, and at its end the recording
 *                       written again as perf.data (one sample per call)
 *   perf record (r:)    an ftrace kretprobe event: one sample per call,
 *                       return value only, no latency
 *   perf record (p:+r:) entry and return events: two samples per call,
 *                       what a latency needs
 *   kml_probe alone     the same kretprobe, histogram only: the part of
 *                       kml-probe record's cost that is not the ring
 *
 * Each recorder runs as its own process with a 4 MiB buffer (so neither
 * has to drop anything), and is ready before the calls start (kml-probe
 * says "recording"; perf is started disabled and enabled through its
 * --control fifo, which acknowledges). The calls are made in-kernel by
 * the CALL ioctl, and the cost measured is what recording adds to each
 * call, in the calling thread; the recorder's own CPU time per record is
 * shown beside it. Rounds interleave the modes; the median round counts.
 * Under TCG only the ratios mean anything. perf is KMODLAB_PERF (the perf
 * Debian ships for this kernel's series, scripts/perf-for.sh), else the
 * PATH's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>
#include "kml_probe_file.h"

#define ROUNDS	3
#define CALLS	20000
#define TRACEFS	"/sys/kernel/tracing"

static int fd;
static const char *perf = "perf";

static void die(const char *what)
{
	fprintf(stderr, "kml_record_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int write_str(const char *path, const char *s, int flags)
{
	int f = open(path, O_WRONLY | flags);
	ssize_t n;

	if (f < 0)
		return -1;
	n = write(f, s, strlen(s));
	close(f);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* ns per call of CALLS in-kernel calls. */
static double timed_calls(void)
{
	struct kml_probe_call c = { .arg = 1, .count = CALLS };
	double t0 = now_ns();

	if (ioctl(fd, KML_PROBE_IOC_CALL, &c))
		die("call");
	return (now_ns() - t0) / CALLS;
}

/* Starts argv with stderr (or stdout) to a pipe; returns the pipe's read end. */
static pid_t spawn(char *const argv[], int *out, int which)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(p[1], which);
		close(p[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

/* Waits for @pid, giving up the rest of its output; its CPU seconds. */
static double reap(pid_t pid, int out)
{
	struct rusage ru;
	char buf[4096];
	int st;

	while (read(out, buf, sizeof(buf)) > 0)
		;
	close(out);
	if (wait4(pid, &st, 0, &ru) != pid)
		die("wait");
	/* perf record ends itself with the SIGINT it got; kml-probe exits 0. */
	if (!(WIFEXITED(st) && !WEXITSTATUS(st)) &&
	    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT))
		fprintf(stderr, "kml_record_bench: recorder ended with status %#x\n", st);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct result {
	double ns, cpu_per_rec;
	unsigned long long records, lost;
};

/*
 * kml-probe record, as the native file (@perf_data false) or as perf.data
 * too (-F perf: kb.pdata, the recording beside it as kb.pdata.kml-probe,
 * which is what is counted).
 */
static void kml_record(const char *bin, bool perf_data, struct result *res)
{
	char path[512], line[512];
	char *argv[] = { path, "record", "-m", "1024", "-o", "kb.data",
			 "kml_probe_target", NULL };
	char *argv_perf[] = { path, "record", "-F", "perf", "-m", "1024", "-o", "kb.pdata",
			      "kml_probe_target", NULL };
	const char *file = perf_data ? "kb.pdata.kml-probe" : "kb.data";
	static struct kml_pf pf;
	char err[256];
	struct stat st;
	ssize_t n;
	void *map;
	int out, f;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/kml-probe", bin);
	pid = spawn(perf_data ? argv_perf : argv, &out, 2);
	/* Its first line says it is recording. */
	n = read(out, line, sizeof(line) - 1);
	if (n <= 0 || !memmem(line, (size_t)n, "recording", 9))
		die("kml-probe record did not start");
	res->ns = timed_calls();
	kill(pid, SIGINT);
	res->cpu_per_rec = reap(pid, out);
	f = open(file, O_RDONLY);
	if (f < 0 || fstat(f, &st))
		die(file);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, f, 0);
	if (map == MAP_FAILED)
		die("mmap");
	if (kml_pf_parse(map, (size_t)st.st_size, false, &pf, err, sizeof(err))) {
		fprintf(stderr, "kml_record_bench: %s\n", err);
		exit(1);
	}
	res->records = pf.records;
	res->lost = pf.funcs[0].sum.lost;
	munmap(map, (size_t)st.st_size);
	close(f);
	res->cpu_per_rec = res->records ? res->cpu_per_rec * 1e9 / res->records : 0;
}

/* perf record -a on the ftrace kprobe events, enabled once it is ready. */
static void perf_record(const char *events, struct result *res)
{
	char *argv[] = { (char *)perf, "record", "-q", "-a", "-m", "1024", "-e", (char *)events,
			 "-o", "kb.perf", "-D", "-1",
			 "--control=fifo:kb.ctl,kb.ack", NULL };
	char buf[4096], cmd[1024];
	FILE *p;
	int out, ack;
	pid_t pid;

	unlink("kb.ctl");
	unlink("kb.ack");
	if (mkfifo("kb.ctl", 0600) || mkfifo("kb.ack", 0600))
		die("mkfifo");
	pid = spawn(argv, &out, 2);
	/* Opening the fifos waits for perf to open its ends. */
	if (write_str("kb.ctl", "enable\n", 0))
		die("perf control fifo");
	ack = open("kb.ack", O_RDONLY);
	if (ack < 0 || read(ack, buf, sizeof(buf)) <= 0)
		die("perf did not acknowledge");
	close(ack);
	res->ns = timed_calls();
	kill(pid, SIGINT);
	res->cpu_per_rec = reap(pid, out);
	res->records = 0;
	res->lost = 0;
	/*
	 * Its own count of what it wrote, and of what its ring dropped: the
	 * "Aggregated stats" block, before the per-event blocks repeat them.
	 */
	snprintf(cmd, sizeof(cmd), "%s report -i kb.perf --stats 2>/dev/null", perf);
	p = popen(cmd, "r");
	for (int blocks = 0; p && fgets(buf, sizeof(buf), p);) {
		unsigned long long v;
		char *s = strstr(buf, "events:");

		if (strstr(buf, "stats:") && ++blocks > 1)
			break;

		if (!s || sscanf(s + 7, "%llu", &v) != 1)
			continue;
		if (strstr(buf, "SAMPLE"))
			res->records += v;
		else if (strstr(buf, "LOST"))
			res->lost += v;
	}
	if (p)
		pclose(p);
	res->cpu_per_rec = res->records ? res->cpu_per_rec * 1e9 / res->records : 0;
}

static int cmp(const void *a, const void *b)
{
	double x = ((const struct result *)a)->ns, y = ((const struct result *)b)->ns;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
		"no recording", "kml-probe record", "kml-probe record -F perf", "perf record (r:)",
		"perf record (p:+r:)", "kml_probe, no record",
	};
	enum { NONE, KML, KML_PERF, PERF_R, PERF_PR, PROBE, MODES };
	struct result res[MODES][ROUNDS], med[MODES];
	char ver[128] = "";
	FILE *pv;
	struct kml_probe_attach a = { .func = "kml_probe_target" };
	struct kml_probe_func f = { .func = "kml_probe_target" };
	char *bin = argc > 1 ? argv[1] : "build/bin";
	char line_cmd[1024];

	bin = realpath(bin, NULL);
	if (!bin)
		die("the clients' directory");
	if (getenv("KMODLAB_PERF") && *getenv("KMODLAB_PERF"))
		perf = getenv("KMODLAB_PERF");
	snprintf(line_cmd, sizeof(line_cmd), "%s --version 2>&1", perf);
	pv = popen(line_cmd, "r");
	if (!pv || !fgets(ver, sizeof(ver), pv))
		die("perf --version");
	pclose(pv);
	ver[strcspn(ver, "\n")] = '\0';
	/* Its files (kb.*) go to the scratch directory: /tmp may be read-only. */
	if (chdir(getenv("TMPDIR") ?: "/tmp"))
		die("TMPDIR");
	fd = open(KML_PROBE_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(KML_PROBE_DEVICE);
	if (access(TRACEFS "/kprobe_events", W_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	write_str(TRACEFS "/kprobe_events", "-:kmlrec/ent\n", O_APPEND);
	write_str(TRACEFS "/kprobe_events", "-:kmlrec/ret\n", O_APPEND);
	if (write_str(TRACEFS "/kprobe_events", "p:kmlrec/ent kml_probe_target\n", O_APPEND) ||
	    write_str(TRACEFS "/kprobe_events", "r:kmlrec/ret kml_probe_target $retval\n",
		      O_APPEND))
		die("kprobe_events");
	for (int r = 0; r < ROUNDS; r++) {
		res[NONE][r].ns = timed_calls();
		res[NONE][r].records = res[NONE][r].lost = 0;
		res[NONE][r].cpu_per_rec = 0;
		kml_record(bin, false, &res[KML][r]);
		kml_record(bin, true, &res[KML_PERF][r]);
		perf_record("kmlrec:ret", &res[PERF_R][r]);
		perf_record("kmlrec:ent,kmlrec:ret", &res[PERF_PR][r]);
		/* The probe alone, histogram only: what recording adds to it. */
		if (ioctl(fd, KML_PROBE_IOC_ATTACH, &a))
			die("attach");
		res[PROBE][r].ns = timed_calls();
		res[PROBE][r].records = res[PROBE][r].lost = 0;
		res[PROBE][r].cpu_per_rec = 0;
		if (ioctl(fd, KML_PROBE_IOC_DETACH, &f))
			die("detach");
	}
	ioctl(fd, KML_PROBE_IOC_DETACH, &f);	/* in case a recorder left it */
	write_str(TRACEFS "/kprobe_events", "-:kmlrec/ent\n", O_APPEND);
	write_str(TRACEFS "/kprobe_events", "-:kmlrec/ret\n", O_APPEND);

	printf("record benchmark: %d rounds x %d in-kernel calls of kml_probe_target, median round\n",
	       ROUNDS, CALLS);
	printf("perf: %s (%s)\n", perf, ver);
	printf("  %-24s %10s %10s %10s %14s\n", "", "ns/call", "records", "lost",
	       "recorder ns/rec");
	for (int i = 0; i < MODES; i++) {
		qsort(res[i], ROUNDS, sizeof(res[i][0]), cmp);
		med[i] = res[i][ROUNDS / 2];
		printf("  %-24s %10.0f %10llu %10llu %14.0f   (TCG)\n", names[i], med[i].ns,
		       med[i].records, med[i].lost, med[i].cpu_per_rec);
	}
	printf("ratios (same guest run; under TCG only ratios mean anything):\n");
	printf("  added cost per call, kml-probe record / perf record (r:)    = %6.2f\n",
	       (med[KML].ns - med[NONE].ns) / (med[PERF_R].ns - med[NONE].ns));
	printf("  added cost per call, kml-probe record / perf record (p:+r:) = %6.2f\n",
	       (med[KML].ns - med[NONE].ns) / (med[PERF_PR].ns - med[NONE].ns));
	printf("  added cost per call, kml-probe record -F perf / perf record (p:+r:) = %6.2f\n",
	       (med[KML_PERF].ns - med[NONE].ns) / (med[PERF_PR].ns - med[NONE].ns));
	printf("  recorder CPU per call, kml-probe record / perf record (p:+r:) = %6.2f\n",
	       med[KML].cpu_per_rec / (med[PERF_PR].cpu_per_rec * 2));
	/* perf.data written at the end: the recorder's CPU is all it adds */
	printf("  recorder CPU per call, kml-probe record -F perf / perf record (p:+r:) = %6.2f\n",
	       med[KML_PERF].cpu_per_rec / (med[PERF_PR].cpu_per_rec * 2));
	printf("  of kml-probe record's added cost, the ring's share           = %6.2f\n",
	       (med[KML].ns - med[PROBE].ns) / (med[KML].ns - med[NONE].ns));
	close(fd);
	return 0;
}
