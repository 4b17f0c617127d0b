// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe benchmark (`make bench`, in the guest): what a probe adds to
 * each call of the probed function. kml_probe_target is called in a loop
 * inside the kernel (the CALL ioctl), so one syscall covers many calls and
 * its own cost does not hide the probe's. Rounds interleave the modes and
 * each reports its median round; only ratios from one run are meaningful.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

struct mode {
	const char *name;
	int attach;
	unsigned int flags, nargs;
	double ns[ROUNDS];
	double median;
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	struct mode m[] = {
		{ .name = "no probe" },
		{ .name = "kprobe (count only)", .attach = 1, .flags = KML_PROBE_F_COUNT_ONLY },
		{ .name = "kretprobe", .attach = 1 },
		{ .name = "kretprobe + 6 args", .attach = 1, .nargs = 6 },
	};
	const int nm = sizeof(m) / sizeof(m[0]);
	struct kml_probe_call call = { .arg = 1, .count = CALLS };
	struct kml_probe_func f = { .func = "kml_probe_target" };

	fd = open(KML_PROBE_DEVICE, O_RDWR);
	if (fd < 0)
		die(KML_PROBE_DEVICE);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < nm; i++) {
			struct kml_probe_attach a = {
				.func = "kml_probe_target",
				.flags = m[i].flags, .nargs = m[i].nargs,
			};
			double t0;

			if (m[i].attach && ioctl(fd, KML_PROBE_IOC_ATTACH, &a))
				die("attach");
			t0 = now_ns();
			if (ioctl(fd, KML_PROBE_IOC_CALL, &call))
				die("call");
			m[i].ns[r] = (now_ns() - t0) / CALLS;
			if (m[i].attach && ioctl(fd, KML_PROBE_IOC_DETACH, &f))
				die("detach");
		}
	}
	printf("kml_probe benchmark: %d rounds x %d in-kernel calls of kml_probe_target, median round\n",
	       ROUNDS, CALLS);
	for (int i = 0; i < nm; i++) {
		qsort(m[i].ns, ROUNDS, sizeof(double), cmp);
		m[i].median = m[i].ns[ROUNDS / 2];
		printf("  %-22s %9.0f ns/call (TCG)\n", m[i].name, m[i].median);
	}
	printf("ratios (same guest run), probed / unprobed call:\n");
	for (int i = 1; i < nm; i++)
		printf("  %-22s = %6.2f\n", m[i].name, m[i].median / m[0].median);
	printf("  kretprobe / kprobe     = %6.2f\n", m[2].median / m[1].median);
	/* The test kernel has BPF now; the side-by-side run is not written. */
	printf("bpftrace, ftrace: not compared yet\n");
	close(fd);
	return 0;
}
