// SPDX-License-Identifier: GPL-2.0
/*
 * kml_sensor benchmark (`make bench`, in the guest): the cost of one
 * reading through the ioctl against the same reading through hwmon's
 * sysfs file, and of READ_ALL against one READ per channel.
 *
 * Absolute times under TCG mean little, so only ratios measured side by
 * side in the same run are reported. Methods are interleaved over several
 * rounds and each reports its median round, so a slow patch of the
 * emulator hurts every method alike.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_sensor.h>

#define ROUNDS	7
#define ITERS	20000

static int fd, nch;
static char hwmon_input[300];

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "kml_sensor_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void m_ioctl_read(void)
{
	struct kml_sensor_reading r = { .channel = 0 };

	if (ioctl(fd, KML_SENSOR_IOC_READ, &r))
		die("READ");
}

static void m_read_each(void)
{
	struct kml_sensor_reading r;

	for (int ch = 0; ch < nch; ch++) {
		r.channel = ch;
		if (ioctl(fd, KML_SENSOR_IOC_READ, &r))
			die("READ");
	}
}

static void m_read_all(void)
{
	struct kml_sensor_read_all all = { .flags = 0 };

	if (ioctl(fd, KML_SENSOR_IOC_READ_ALL, &all))
		die("READ_ALL");
}

static void m_hwmon_open_read_close(void)
{
	char buf[32];
	int h = open(hwmon_input, O_RDONLY);

	if (h < 0 || read(h, buf, sizeof(buf)) <= 0)
		die(hwmon_input);
	close(h);
}

static int hwmon_fd = -1;

static void m_hwmon_pread(void)
{
	char buf[32];

	if (pread(hwmon_fd, buf, sizeof(buf), 0) <= 0)
		die("pread");
}

struct method {
	const char *name;
	void (*fn)(void);
	double round_ns[ROUNDS];
	double median;
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void find_hwmon(void)
{
	DIR *d = opendir("/sys/class/hwmon");
	struct dirent *e;
	char path[600], name[64];

	while (d && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/name", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strcmp(name, "kml_sensor\n"))
			snprintf(hwmon_input, sizeof(hwmon_input),
				 "/sys/class/hwmon/%s/temp1_input", e->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	if (!hwmon_input[0]) {
		errno = ENOENT;
		die("kml_sensor's hwmon device");
	}
}

int main(void)
{
	struct method m[] = {
		{ .name = "ioctl READ", .fn = m_ioctl_read },
		{ .name = "hwmon open+read+close", .fn = m_hwmon_open_read_close },
		{ .name = "hwmon pread (kept fd)", .fn = m_hwmon_pread },
		{ .name = "READ_ALL", .fn = m_read_all },
		{ .name = "READ x channels", .fn = m_read_each },
	};
	const int nm = sizeof(m) / sizeof(m[0]);
	struct kml_sensor_info info = { .flags = 0 };

	fd = open(KML_SENSOR_DEVICE, O_RDONLY);
	if (fd < 0)
		die(KML_SENSOR_DEVICE);
	if (ioctl(fd, KML_SENSOR_IOC_GET_INFO, &info))
		die("GET_INFO");
	nch = info.nchannels;
	find_hwmon();
	hwmon_fd = open(hwmon_input, O_RDONLY);
	if (hwmon_fd < 0)
		die(hwmon_input);

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < nm; i++) {
			double t0 = now_ns();

			for (int k = 0; k < ITERS; k++)
				m[i].fn();
			m[i].round_ns[r] = (now_ns() - t0) / ITERS;
		}
	}
	printf("kml_sensor benchmark: %d channels, %d rounds x %d calls, median round\n",
	       nch, ROUNDS, ITERS);
	for (int i = 0; i < nm; i++) {
		qsort(m[i].round_ns, ROUNDS, sizeof(double), cmp);
		m[i].median = m[i].round_ns[ROUNDS / 2];
		printf("  %-24s %10.0f ns/call (TCG)\n", m[i].name, m[i].median);
	}
	printf("ratios (same guest run):\n");
	printf("  hwmon open+read+close / ioctl READ = %.2f\n", m[1].median / m[0].median);
	printf("  hwmon pread / ioctl READ           = %.2f\n", m[2].median / m[0].median);
	printf("  %d x READ / READ_ALL                = %.2f\n", nch, m[4].median / m[3].median);
	close(hwmon_fd);
	close(fd);
	return 0;
}
