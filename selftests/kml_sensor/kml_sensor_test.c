// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_sensor, run as root inside the test guest (see
 * scripts/guest/selftests.sh for KMODLAB_KO_DIR and KMODLAB_BIN).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_sensor.h>
#include "kselftest_harness.h"
#include "../kml_selftest.h"
#include "../kml_fault.h"
#include "../kml_trace.h"
/* The model itself, to predict every sample of a seeded channel. */
#include "../../modules/kml_sensor/kml_sensor_logic.c"

#define DEV	KML_SENSOR_DEVICE
#define NCH	4

/* One layout for 32- and 64-bit callers (this file is also built -m32). */
_Static_assert(sizeof(struct kml_sensor_info) == KML_SENSOR_INFO_SIZE_VER0, "info");
_Static_assert(sizeof(struct kml_sensor_reading) == KML_SENSOR_READING_SIZE_VER0, "reading");
_Static_assert(sizeof(struct kml_sensor_read_all) == KML_SENSOR_READ_ALL_SIZE_VER0, "read_all");
_Static_assert(sizeof(struct kml_sensor_alarm) == KML_SENSOR_ALARM_SIZE_VER0, "alarm");
_Static_assert(sizeof(struct kml_sensor_inject) == KML_SENSOR_INJECT_SIZE_VER0, "inject");
_Static_assert(sizeof(struct kml_sensor_event) == 32, "event");

/* Seconds since some fixed point, for loops that run until enough is done. */
static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Race and timing loops run until they have done enough work, however
 * slow the host; this cap only turns a hang into a failure.
 */
#define WORK_CAP_S	600

static int reload_sensor(const char *params)
{
	int ret = kml_unload("kml_sensor");

	if (!ret)
		ret = kml_load_once("modules/kml_stats/kml_stats.ko", "");
	if (!ret)
		ret = kml_load_once("modules/kml_sensor/kml_sensor.ko", params);
	return ret;
}

static int inject(int fd, unsigned int ch, int mc)
{
	struct kml_sensor_inject in = { .channel = ch, .value_mc = mc };

	return ioctl(fd, KML_SENSOR_IOC_INJECT, &in) ? -errno : 0;
}

static int set_alarm(int fd, unsigned int ch, int low, int high)
{
	struct kml_sensor_alarm a = {
		.channel = ch, .flags = KML_SENSOR_ALARM_ENABLED,
		.low_mc = low, .high_mc = high,
	};

	return ioctl(fd, KML_SENSOR_IOC_SET_ALARM, &a) ? -errno : 0;
}

static int read_ch(int fd, unsigned int ch, struct kml_sensor_reading *r)
{
	memset(r, 0, sizeof(*r));
	r->channel = ch;
	return ioctl(fd, KML_SENSOR_IOC_READ, r) ? -errno : 0;
}

/* The state every rejected call must leave alone. */
struct state {
	uint32_t period;
	struct kml_sensor_alarm alarm[NCH];
	struct kml_sensor_reading held[NCH];
};

static void get_state(int fd, struct state *s)
{
	memset(s, 0, sizeof(*s));
	ioctl(fd, KML_SENSOR_IOC_GET_PERIOD, &s->period);
	for (unsigned int ch = 0; ch < NCH; ch++) {
		s->alarm[ch].channel = ch;
		ioctl(fd, KML_SENSOR_IOC_GET_ALARM, &s->alarm[ch]);
		read_ch(fd, ch, &s->held[ch]);
	}
}

FIXTURE(dev) {
	int fd;
	struct state before;
};

FIXTURE_SETUP(dev)
{
	char params[32];

	snprintf(params, sizeof(params), "channels=%d", NCH);
	ASSERT_EQ(0, reload_sensor(params));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
	/* Hold every channel still, so "nothing changed" can be checked. */
	for (unsigned int ch = 0; ch < NCH; ch++)
		ASSERT_EQ(0, inject(self->fd, ch, 20000 + 1000 * ch));
	get_state(self->fd, &self->before);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void expect_unchanged(struct __test_metadata *_metadata, int fd,
			     const struct state *before)
{
	struct state now;

	get_state(fd, &now);
	EXPECT_EQ(before->period, now.period);
	EXPECT_EQ(0, memcmp(before->alarm, now.alarm, sizeof(now.alarm)));
	for (unsigned int ch = 0; ch < NCH; ch++) {
		EXPECT_EQ(before->held[ch].value_mc, now.held[ch].value_mc);
		EXPECT_EQ(before->held[ch].seq, now.held[ch].seq);
	}
}

TEST_F(dev, get_info)
{
	struct kml_sensor_info info;

	memset(&info, 0xff, sizeof(info));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, &info));
	EXPECT_EQ(KML_SENSOR_ABI_VERSION, info.abi_version);
	EXPECT_EQ(NCH, info.nchannels);
	EXPECT_EQ(KML_SENSOR_UNITS_MILLI_CELSIUS, info.units);
	EXPECT_EQ(KML_SENSOR_MIN_MC, info.min_mc);
	EXPECT_EQ(KML_SENSOR_MAX_MC, info.max_mc);
	EXPECT_EQ(KML_SENSOR_PERIOD_MIN_MS, info.period_min_ms);
	EXPECT_EQ(KML_SENSOR_PERIOD_MAX_MS, info.period_max_ms);
	EXPECT_EQ(256, info.queue_len);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(0, info.reserved);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
	/* ABI 1's number still answers, so an old client learns the version. */
	memset(&info, 0xff, sizeof(info));
	info.flags = sizeof(info);	/* ABI 1 put its size there: ignored */
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO_V1, &info));
	EXPECT_EQ(KML_SENSOR_ABI_VERSION, info.abi_version);
	EXPECT_EQ(NCH, info.nchannels);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(KML_SENSOR_IOC_MAGIC, 0x00, __u32), &info));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, read_each_channel)
{
	struct kml_sensor_reading r;

	for (unsigned int ch = 0; ch < NCH; ch++) {
		ASSERT_EQ(0, read_ch(self->fd, ch, &r));
		EXPECT_EQ(ch, r.channel);
		EXPECT_EQ(20000 + 1000 * (int)ch, r.value_mc);
		EXPECT_GT(r.seq, 0);
		EXPECT_GT(r.timestamp_ns, 0);
	}
	EXPECT_EQ(-EINVAL, read_ch(self->fd, NCH, &r));
	EXPECT_EQ(-EINVAL, read_ch(self->fd, ~0U, &r));
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_READ, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(dev, read_all_agrees_with_read)
{
	struct kml_sensor_read_all all;
	struct kml_sensor_reading r;

	/* Entries past the channel count come back zeroed. */
	memset(&all, 0xff, sizeof(all));
	all.flags = 0;
	ASSERT_EQ(0, inject(self->fd, 2, -12345));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_READ_ALL, &all));
	ASSERT_EQ(NCH, all.nchannels);
	for (unsigned int ch = 0; ch < NCH; ch++) {
		ASSERT_EQ(0, read_ch(self->fd, ch, &r));
		EXPECT_EQ(0, memcmp(&r, &all.readings[ch], sizeof(r)))
			TH_LOG("channel %u", ch);
	}
	EXPECT_EQ(-12345, all.readings[2].value_mc);
	for (unsigned int ch = NCH; ch < KML_SENSOR_MAX_CHANNELS; ch++) {
		EXPECT_EQ(0, all.readings[ch].channel);
		EXPECT_EQ(0, all.readings[ch].seq);
	}

	all.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_READ_ALL, &all));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_READ_ALL, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	/* Readable size field, unwritable rest: still -EFAULT, nothing half-done. */
	{
		char *pg = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct kml_sensor_read_all *tail;

		ASSERT_NE(MAP_FAILED, pg);
		tail = (void *)(pg + 4096 - 8);
		tail->flags = 0;
		ASSERT_EQ(0, mprotect(pg + 4096, 4096, PROT_NONE));
		EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_READ_ALL, tail));
		EXPECT_EQ(EFAULT, errno);
		munmap(pg, 8192);
	}
}

TEST_F(dev, samples_advance_with_the_period)
{
	struct kml_sensor_reading a, b;
	struct kml_sensor_inject clear = {
		.channel = 0, .flags = KML_SENSOR_INJECT_CLEAR,
	};
	uint32_t ms = 10;

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_INJECT, &clear));
	ASSERT_EQ(0, read_ch(self->fd, 0, &a));
	/* However long a busy host takes to run the work, samples come. */
	for (double t0 = now_s(); now_s() - t0 < WORK_CAP_S;) {
		ASSERT_EQ(0, read_ch(self->fd, 0, &b));
		if (b.seq > a.seq + 3)
			break;
		usleep(20000);
	}
	EXPECT_GT(b.seq, a.seq + 3);
	EXPECT_GT(b.timestamp_ns, a.timestamp_ns);
	/* The model stays around channel 0's setpoint of 4 C. */
	EXPECT_GE(b.value_mc, 4000 - 3050);
	EXPECT_LE(b.value_mc, 4000 + 3050);
	/* Held channels do not move. */
	ASSERT_EQ(0, read_ch(self->fd, 1, &b));
	EXPECT_EQ(self->before.held[1].seq, b.seq);
}

TEST_F(dev, period_get_set_and_errors)
{
	uint32_t ms;
	static const uint32_t bad[] = { 0, 9, 10001, 0xffffffff };

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_PERIOD, &ms));
	EXPECT_EQ(KML_SENSOR_PERIOD_DEFAULT_MS, ms);
	ms = 250;
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
	ms = 0;
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_PERIOD, &ms));
	EXPECT_EQ(250, ms);
	self->before.period = 250;
	for (unsigned int i = 0; i < 4; i++) {
		ms = bad[i];
		EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_PERIOD, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	expect_unchanged(_metadata, self->fd, &self->before);
}

TEST_F(dev, alarm_get_set_and_errors)
{
	struct kml_sensor_alarm a = { .channel = 1 };
	static const struct kml_sensor_alarm bad[] = {
		{ .channel = NCH, .flags = 1, .low_mc = 0, .high_mc = 1 },
		{ .channel = 0, .flags = 1, .low_mc = 5000, .high_mc = 4999 },
		{ .channel = 0, .flags = 2, .low_mc = 0, .high_mc = 1 },
		{ .channel = 0, .flags = 1, .low_mc = -50001, .high_mc = 0 },
		{ .channel = 0, .flags = 1, .low_mc = 0, .high_mc = 150001 },
	};

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_ALARM, &a));
	EXPECT_EQ(0, a.flags);
	ASSERT_EQ(0, set_alarm(self->fd, 1, -5000, 30000));
	memset(&a, 0, sizeof(a));
	a.channel = 1;
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_ALARM, &a));
	EXPECT_EQ(KML_SENSOR_ALARM_ENABLED, a.flags);
	EXPECT_EQ(-5000, a.low_mc);
	EXPECT_EQ(30000, a.high_mc);
	/* low == high is a valid (if twitchy) alarm. */
	ASSERT_EQ(0, set_alarm(self->fd, 3, 23000, 23000));
	get_state(self->fd, &self->before);

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = bad[i];
		EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_SET_ALARM, &a))
			TH_LOG("case %u accepted", i);
		EXPECT_EQ(EINVAL, errno);
	}
	a.channel = NCH;
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_ALARM, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_SET_ALARM, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_ALARM, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	expect_unchanged(_metadata, self->fd, &self->before);
}

TEST_F(dev, inject_errors)
{
	static const struct kml_sensor_inject bad[] = {
		{ .channel = NCH, .value_mc = 0 },
		{ .channel = 0, .flags = 4, .value_mc = 0 },
		{ .channel = 0, .value_mc = 150001 },
		{ .channel = 0, .value_mc = -50001 },
		{ .channel = 0, .value_mc = 0, .reserved = 1 },
	};
	struct kml_sensor_inject in;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		in = bad[i];
		EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_INJECT, &in))
			TH_LOG("case %u accepted", i);
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_INJECT, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	expect_unchanged(_metadata, self->fd, &self->before);
}

/*
 * Runs @fn(@fd, @arg) in a child that is user and group nobody (65534),
 * with no supplementary groups; returns its exit status, -1 if it died.
 */
static int as_nobody(int (*fn)(int pipefd, void *arg), int pipefd, void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		_exit(fn(pipefd, arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* What nobody may and may not do; the exit status says which check failed. */
static int nobody_tries_everything(int pipefd, void *arg)
{
	struct kml_sensor_read_all all = { 0 };
	struct kml_sensor_reading r = { .channel = 0 };
	struct kml_sensor_alarm a = {
		.channel = 0, .flags = KML_SENSOR_ALARM_ENABLED,
		.low_mc = 0, .high_mc = 1000,
	};
	struct kml_sensor_info info;
	uint32_t ms = 50;
	int fd;

	(void)pipefd;
	(void)arg;
	fd = open(DEV, O_RDWR);
	if (fd < 0)
		return 11;
	/* Changing what others see needs privilege... */
	ms = 50;
	if (ioctl(fd, KML_SENSOR_IOC_SET_PERIOD, &ms) != -1 || errno != EPERM)
		return 13;
	a = (struct kml_sensor_alarm){ .channel = 0, .flags = 1, .high_mc = 1000 };
	if (ioctl(fd, KML_SENSOR_IOC_SET_ALARM, &a) != -1 || errno != EPERM)
		return 14;
	a.flags = 0;
	if (ioctl(fd, KML_SENSOR_IOC_SET_ALARM, &a) != -1 || errno != EPERM)
		return 15;
	if (inject(fd, 0, 0) != -EPERM)
		return 16;
	if (ioctl(fd, KML_SENSOR_IOC_RESET) != -1 || errno != EPERM)
		return 17;
	/* Privilege is checked before the argument is even read. */
	if (ioctl(fd, KML_SENSOR_IOC_INJECT, kml_bad_ptr()) != -1 || errno != EPERM)
		return 18;
	if (ioctl(fd, KML_SENSOR_IOC_SET_PERIOD, kml_bad_ptr()) != -1 || errno != EPERM)
		return 19;
	if (ioctl(fd, KML_SENSOR_IOC_SET_ALARM, kml_bad_ptr()) != -1 || errno != EPERM)
		return 20;
	/* ...reading is for everyone. */
	if (ioctl(fd, KML_SENSOR_IOC_GET_INFO, &info) ||
	    ioctl(fd, KML_SENSOR_IOC_READ, &r) ||
	    ioctl(fd, KML_SENSOR_IOC_READ_ALL, &all) ||
	    ioctl(fd, KML_SENSOR_IOC_GET_PERIOD, &ms) ||
	    ioctl(fd, KML_SENSOR_IOC_GET_ALARM, &a))
		return 21;
	close(fd);
	return 0;
}

/*
 * @child (run as nobody) tries every change and returns 0 if each was
 * refused; the device must then be as it was, with no record queued.
 */
static void expect_changes_refused(struct __test_metadata *_metadata, int fd,
				   struct state *before,
				   int (*child)(int pipefd, void *arg),
				   const char *codes)
{
	struct kml_sensor_event ev;
	int nb = open(DEV, O_RDONLY | O_NONBLOCK);

	ASSERT_GE(nb, 0);
	/* An alarm nobody would end (or trigger, by narrowing the band). */
	ASSERT_EQ(0, set_alarm(fd, 0, -1000, 100000));
	get_state(fd, before);
	EXPECT_EQ(0, as_nobody(child, -1, NULL)) TH_LOG("%s", codes);
	expect_unchanged(_metadata, fd, before);
	/* No record either: a change that got through would have queued one. */
	EXPECT_EQ(-1, read(nb, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(nb);
}

TEST_F(dev, unprivileged_changes_are_eperm)
{
	expect_changes_refused(_metadata, self->fd, &self->before,
			       nobody_tries_everything,
			       "the child's exit code names the change that was not EPERM");
}

/* Writes @s to /proc/self/@file; 0 or -1. */
static int write_self(const char *file, const char *s)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * Nobody makes a user namespace of its own and is root in it (uid 0, every
 * capability there), then tries every change: the device is the whole
 * machine's, so that root does not count.
 */
static int userns_root_tries_everything(int pipefd, void *arg)
{
	struct kml_sensor_alarm a = {
		.channel = 0, .flags = KML_SENSOR_ALARM_ENABLED,
		.low_mc = 0, .high_mc = 1000,
	};
	struct kml_sensor_info info;
	uint32_t ms = 50;
	int fd;

	(void)pipefd;
	(void)arg;
	/*
	 * setuid() made the process undumpable, which gives its /proc/self
	 * files to root: make them its own again, to write its maps.
	 */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) || unshare(CLONE_NEWUSER))
		return 30;
	if (write_self("uid_map", "0 65534 1") ||
	    write_self("setgroups", "deny") ||
	    write_self("gid_map", "0 65534 1"))
		return 31;
	if (getuid() != 0)
		return 32;
	fd = open(DEV, O_RDWR);
	if (fd < 0)
		return 33;
	if (ioctl(fd, KML_SENSOR_IOC_SET_PERIOD, &ms) != -1 || errno != EPERM)
		return 34;
	if (ioctl(fd, KML_SENSOR_IOC_SET_ALARM, &a) != -1 || errno != EPERM)
		return 35;
	if (inject(fd, 0, 0) != -EPERM)
		return 36;
	if (ioctl(fd, KML_SENSOR_IOC_RESET) != -1 || errno != EPERM)
		return 37;
	/* Reading is still for everyone. */
	if (ioctl(fd, KML_SENSOR_IOC_GET_INFO, &info))
		return 38;
	close(fd);
	return 0;
}

TEST_F(dev, user_namespace_root_changes_are_eperm)
{
	expect_changes_refused(_metadata, self->fd, &self->before,
			       userns_root_tries_everything,
			       "30-32: no user namespace could be made; 34-37: a change by root in its own user namespace was not EPERM");
}

/* Opens the device as nobody, says so on the pipe, waits for one record. */
static int nobody_waits_for_an_alarm(int pipefd, void *arg)
{
	struct kml_sensor_event ev;
	int fd = open(DEV, O_RDONLY);

	(void)arg;
	if (fd < 0)
		return 11;
	if (write(pipefd, "o", 1) != 1)
		return 12;
	if (read(fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
		return 13;
	if (ev.channel != 1 || ev.kind != KML_SENSOR_ZONE_HIGH || ev.value_mc != 21000)
		return 14;
	return 0;
}

struct nobody_wait {
	int pipefd[2];
	int status;
};

static void *run_nobody_waiter(void *arg)
{
	struct nobody_wait *w = arg;

	w->status = as_nobody(nobody_waits_for_an_alarm, w->pipefd[1], NULL);
	return NULL;
}

TEST_F(dev, unprivileged_reader_gets_alarms)
{
	struct nobody_wait w = { .status = -2 };
	pthread_t th;
	char c;

	ASSERT_EQ(0, pipe(w.pipefd));
	ASSERT_EQ(0, pthread_create(&th, NULL, run_nobody_waiter, &w));
	/* Once its file is open, the record cannot be missed. */
	ASSERT_EQ(1, read(w.pipefd[0], &c, 1));
	ASSERT_EQ(0, set_alarm(self->fd, 1, 0, 20000));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.status);
	close(w.pipefd[0]);
	close(w.pipefd[1]);
}

TEST_F(dev, reset_restores_defaults)
{
	struct kml_sensor_alarm a = { .channel = 0 };
	uint32_t ms = 500;

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 50000));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_RESET));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_PERIOD, &ms));
	EXPECT_EQ(KML_SENSOR_PERIOD_DEFAULT_MS, ms);
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_ALARM, &a));
	EXPECT_EQ(0, a.flags);
	/* Injections are dropped: channels follow the model again. */
	{
		struct kml_sensor_reading r;

		ASSERT_EQ(0, read_ch(self->fd, 3, &r));
		EXPECT_GE(r.value_mc, 8500 - 3050);
		EXPECT_LE(r.value_mc, 8500 + 3050);
	}
}

TEST_F(dev, unknown_commands_are_enotty)
{
	const unsigned long cmds[] = {
		_IO(KML_SENSOR_IOC_MAGIC, 0x09),
		_IO(KML_SENSOR_IOC_MAGIC, 0x0f),
		_IO('T', 0x01),
		/* right number, wrong direction */
		_IOW(KML_SENSOR_IOC_MAGIC, 0x00, struct kml_sensor_info),
		_IOR(KML_SENSOR_IOC_MAGIC, 0x01, struct kml_sensor_reading),
		_IOW(KML_SENSOR_IOC_MAGIC, 0x03, __u32),
		_IOW(KML_SENSOR_IOC_MAGIC, 0x08, __u32),
		/* scalars cannot grow: another size is another command */
		_IOR(KML_SENSOR_IOC_MAGIC, 0x03, __u64),
		_IOW(KML_SENSOR_IOC_MAGIC, 0x04, __u16),
		_IOC(_IOC_NONE, KML_SENSOR_IOC_MAGIC, 0x08, 4),
		0,
	};
	char buf[512] = { 0 };

	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], buf)) TH_LOG("cmd %#lx", cmds[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", cmds[i]);
	}
	expect_unchanged(_metadata, self->fd, &self->before);
}

/* @cmd with its size field replaced by @size. */
static unsigned long resize(unsigned long cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

/*
 * The extensible structs: the size in the ioctl number is the caller's.
 * Below the first published size is -EINVAL; a larger struct works if its
 * tail is zero and is -E2BIG otherwise; a rejected call changes nothing.
 */
TEST_F(dev, extensible_struct_sizes)
{
	static const struct {
		unsigned long cmd;
		unsigned int size;
		int in;		/* the kernel reads it (tail checked) */
		int privileged;
	} cmds[] = {
		{ KML_SENSOR_IOC_GET_INFO, KML_SENSOR_INFO_SIZE_VER0, 0, 0 },
		{ KML_SENSOR_IOC_READ, KML_SENSOR_READING_SIZE_VER0, 1, 0 },
		{ KML_SENSOR_IOC_READ_ALL, KML_SENSOR_READ_ALL_SIZE_VER0, 1, 0 },
		{ KML_SENSOR_IOC_GET_ALARM, KML_SENSOR_ALARM_SIZE_VER0, 1, 0 },
		{ KML_SENSOR_IOC_SET_ALARM, KML_SENSOR_ALARM_SIZE_VER0, 1, 1 },
		{ KML_SENSOR_IOC_INJECT, KML_SENSOR_INJECT_SIZE_VER0, 1, 1 },
	};
	unsigned char buf[1024];
	struct kml_sensor_event ev;
	int nb = open(DEV, O_RDONLY | O_NONBLOCK);

	ASSERT_GE(nb, 0);
	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		unsigned int size = cmds[i].size;
		struct kml_sensor_alarm *a = (void *)buf;
		struct kml_sensor_inject *in = (void *)buf;

		/* A valid argument: channel 1, in band, the value it holds. */
		memset(buf, 0, sizeof(buf));
		if (cmds[i].cmd == KML_SENSOR_IOC_SET_ALARM)
			*a = (struct kml_sensor_alarm){ .channel = 1, .low_mc = -1, .high_mc = 1 };
		else if (cmds[i].cmd == KML_SENSOR_IOC_INJECT)
			*in = (struct kml_sensor_inject){ .channel = 1, .value_mc = 21000 };
		else
			buf[0] = 1;	/* channel 1; READ_ALL's flags are not */
		if (cmds[i].cmd == KML_SENSOR_IOC_READ_ALL)
			buf[0] = 0;

		EXPECT_EQ(0, ioctl(self->fd, cmds[i].cmd, buf)) TH_LOG("cmd %u", i);
		EXPECT_EQ(-1, ioctl(self->fd, resize(cmds[i].cmd, size - 1), buf))
			TH_LOG("cmd %u", i);
		EXPECT_EQ(EINVAL, errno) TH_LOG("cmd %u", i);
		EXPECT_EQ(-1, ioctl(self->fd, resize(cmds[i].cmd, 0), buf));
		EXPECT_EQ(EINVAL, errno) TH_LOG("cmd %u", i);

		/* A newer caller: zero tail works, and an output tail is zeroed. */
		memset(buf + size, cmds[i].in ? 0 : 0xa5, 64);
		EXPECT_EQ(0, ioctl(self->fd, resize(cmds[i].cmd, size + 64), buf))
			TH_LOG("cmd %u", i);
		for (unsigned int k = size; k < size + 64; k++) {
			ASSERT_EQ(0, buf[k]) TH_LOG("cmd %u byte %u", i, k);
		}
		if (!cmds[i].in)
			continue;
		/* ...a non-zero tail is something this module does not know. */
		buf[size + 63] = 1;
		EXPECT_EQ(-1, ioctl(self->fd, resize(cmds[i].cmd, size + 64), buf))
			TH_LOG("cmd %u", i);
		EXPECT_EQ(E2BIG, errno) TH_LOG("cmd %u", i);
		buf[size + 63] = 0;
		buf[size] = 1;
		EXPECT_EQ(-1, ioctl(self->fd, resize(cmds[i].cmd, size + 1), buf));
		EXPECT_EQ(E2BIG, errno) TH_LOG("cmd %u", i);
	}
	/*
	 * The accepted SET_ALARMs set a disabled band, the two accepted
	 * INJECTs re-sampled the value held (seq + 2); nothing else changed.
	 */
	self->before.alarm[1] = (struct kml_sensor_alarm){ .channel = 1, .low_mc = -1, .high_mc = 1 };
	self->before.held[1].seq += 2;
	expect_unchanged(_metadata, self->fd, &self->before);
	EXPECT_EQ(-1, read(nb, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(nb);
}

static int read_event(int fd, struct kml_sensor_event *ev)
{
	ssize_t n = read(fd, ev, sizeof(*ev));

	return n == (ssize_t)sizeof(*ev) ? 0 : n < 0 ? -errno : -EIO;
}

TEST_F(dev, poll_wakes_on_crossing_only)
{
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	struct kml_sensor_event ev;

	/* Enabling an alarm with the value inside: no record. */
	ASSERT_EQ(0, set_alarm(self->fd, 1, 10000, 30000));
	EXPECT_EQ(0, poll(&p, 1, 300));
	/* Moving inside the band: still nothing. */
	ASSERT_EQ(0, inject(self->fd, 1, 29999));
	ASSERT_EQ(0, inject(self->fd, 1, 10000));
	EXPECT_EQ(0, poll(&p, 1, 300));
	/* Channels without an alarm never report. */
	ASSERT_EQ(0, inject(self->fd, 2, 149000));
	EXPECT_EQ(0, poll(&p, 1, 100));

	ASSERT_EQ(0, inject(self->fd, 1, 30001));
	ASSERT_EQ(1, poll(&p, 1, 1000));
	EXPECT_EQ(POLLIN, p.revents);
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(1, ev.channel);
	EXPECT_EQ(30001, ev.value_mc);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
	EXPECT_EQ(0, ev.lost);
	EXPECT_EQ(0, poll(&p, 1, 0));
	/* Staying out of the band is not a new crossing... */
	ASSERT_EQ(0, inject(self->fd, 1, 40000));
	EXPECT_EQ(0, poll(&p, 1, 100));
	/* ...going back in and then below are. */
	ASSERT_EQ(0, inject(self->fd, 1, 20000));
	ASSERT_EQ(0, inject(self->fd, 1, 9999));
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(KML_SENSOR_ZONE_NORMAL, ev.kind);
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(KML_SENSOR_ZONE_LOW, ev.kind);
	EXPECT_EQ(9999, ev.value_mc);
	/* Setting a band the value is already outside of is a crossing. */
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 1000));
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(0, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
}

TEST_F(dev, epoll_and_every_file_gets_every_record)
{
	struct epoll_event e = { .events = EPOLLIN }, out;
	struct kml_sensor_event ev;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int fd2 = open(DEV, O_RDONLY | O_NONBLOCK);

	ASSERT_GE(ep, 0);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd2, &e));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 100));
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 10000));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 1000));
	ASSERT_EQ(0, read_event(fd2, &ev));
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
	close(fd2);
	close(ep);
}

TEST_F(dev, read_errors_keep_the_record)
{
	struct kml_sensor_event ev[3];
	char small[sizeof(ev[0]) - 1];
	int nb = open(DEV, O_RDONLY | O_NONBLOCK);

	ASSERT_GE(nb, 0);
	EXPECT_EQ(-1, read(nb, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 10000));
	EXPECT_EQ(-1, read(nb, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, syscall(SYS_read, nb, kml_bad_ptr(), sizeof(ev[0])));
	EXPECT_EQ(EFAULT, errno);
	/* Still there after both failures; a big buffer gets whole records. */
	EXPECT_EQ((ssize_t)sizeof(ev[0]), read(nb, ev, sizeof(ev[0]) * 2 + 5));
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev[0].kind);
	EXPECT_EQ(-1, read(nb, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(nb);
}

struct waiter {
	int fd;
	struct kml_sensor_event ev;
	int ret;
	atomic_int done;
};

static void *blocking_reader(void *arg)
{
	struct waiter *w = arg;

	w->ret = read_event(w->fd, &w->ev);
	atomic_store(&w->done, 1);
	return NULL;
}

/*
 * Joins @w's reader if it returns within 20 s (a generous cap: it should
 * take milliseconds), so that a reader never woken fails the test with a
 * reason instead of hanging it. 0 if it returned.
 */
static int join_reader(pthread_t th, struct waiter *w)
{
	int i;

	for (i = 0; i < 2000 && !atomic_load(&w->done); i++)
		usleep(10000);
	if (!atomic_load(&w->done))
		return -1;	/* left blocked: exiting takes it down */
	return pthread_join(th, NULL);
}

TEST_F(dev, blocking_read_wakes_on_alarm)
{
	/* static: a reader left blocked must not write into a dead frame */
	static struct waiter w;
	pthread_t th;

	w.fd = self->fd;
	w.ret = 1;

	ASSERT_EQ(0, set_alarm(self->fd, 2, 0, 30000));
	ASSERT_EQ(0, pthread_create(&th, NULL, blocking_reader, &w));
	usleep(200000);
	EXPECT_EQ(1, w.ret) TH_LOG("read returned before any alarm");
	ASSERT_EQ(0, inject(self->fd, 2, -1));
	ASSERT_EQ(0, join_reader(th, &w))
		TH_LOG("the alarm's record did not wake the blocked reader within 20 s");
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(2, w.ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_LOW, w.ev.kind);
}

struct sig_reader {
	int fd;
	volatile pid_t tid;
	struct kml_sensor_event ev;
	volatile int ret;
};

static void *sig_reader(void *arg)
{
	struct sig_reader *r = arg;

	r->tid = gettid();
	r->ret = read_event(r->fd, &r->ev);
	return NULL;
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

/* Waits until thread @tid sleeps interruptibly (state S), up to the cap. */
static int wait_sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	double t0 = now_s();

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	while (now_s() - t0 < WORK_CAP_S) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * A signal ends a blocking read() with EINTR both where it waits for a
 * record and where it waits for another reader of the same file; neither
 * loses a record nor changes the device.
 */
/* Two waits of up to WORK_CAP_S each for a reader to sleep. */
TEST_F_TIMEOUT(dev, signal_interrupts_blocking_reads, 2 * WORK_CAP_S + 60)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };	/* no SA_RESTART */
	struct sig_reader a = { .fd = self->fd, .ret = 1 }, b = a;
	struct kml_sensor_event ev;
	pthread_t ta, tb;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	/* a sleeps for a record, holding the file's reader lock... */
	ASSERT_EQ(0, pthread_create(&ta, NULL, sig_reader, &a));
	while (!a.tid)
		usleep(1000);
	ASSERT_EQ(0, wait_sleeping(a.tid));
	/* ...and b sleeps on that lock. */
	ASSERT_EQ(0, pthread_create(&tb, NULL, sig_reader, &b));
	while (!b.tid)
		usleep(1000);
	ASSERT_EQ(0, wait_sleeping(b.tid));
	EXPECT_EQ(1, a.ret);
	EXPECT_EQ(1, b.ret);

	ASSERT_EQ(0, pthread_kill(tb, SIGUSR1));
	pthread_join(tb, NULL);
	EXPECT_EQ(-EINTR, b.ret);
	EXPECT_EQ(1, a.ret) TH_LOG("a woke with b's signal");
	ASSERT_EQ(0, pthread_kill(ta, SIGUSR1));
	pthread_join(ta, NULL);
	EXPECT_EQ(-EINTR, a.ret);
	expect_unchanged(_metadata, self->fd, &self->before);

	/* The next record is still delivered, once, to the next read. */
	ASSERT_EQ(0, set_alarm(self->fd, 1, 0, 10000));
	ASSERT_EQ(0, read_event(self->fd, &ev));
	EXPECT_EQ(1, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
	EXPECT_EQ(0, ev.lost);
}

struct excl_waiter {
	int ep;
	volatile pid_t tid;
	volatile int n;
};

static void *excl_wait(void *arg)
{
	struct excl_waiter *w = arg;
	struct epoll_event out;

	w->tid = gettid();
	w->n = epoll_wait(w->ep, &out, 1, 20000);
	return NULL;
}

/*
 * All files share one wait queue: a wake-up for one exclusive waiter
 * (EPOLLEXCLUSIVE) must not leave another file's waiter asleep. Both
 * waiters are asleep in epoll_wait() before the record comes (a waiter
 * not yet asleep would see it anyway, and so would not judge the wake-up).
 */
/* Two waits of up to WORK_CAP_S each for a waiter to sleep. */
TEST_F_TIMEOUT(dev, exclusive_waiters_of_every_file_wake, 2 * WORK_CAP_S + 60)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	static struct excl_waiter w[2];	/* a waiter left behind outlives the frame */
	pthread_t th[2];
	int fd[2];

	for (int i = 0; i < 2; i++) {
		fd[i] = open(DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		ASSERT_GE(fd[i], 0);
		w[i].ep = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_GE(w[i].ep, 0);
		ASSERT_EQ(0, epoll_ctl(w[i].ep, EPOLL_CTL_ADD, fd[i], &e));
		w[i].tid = 0;
		w[i].n = -2;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, excl_wait, &w[i]));
	}
	for (int i = 0; i < 2; i++) {
		while (!w[i].tid)
			usleep(1000);
		ASSERT_EQ(0, wait_sleeping(w[i].tid));
		EXPECT_EQ(-2, w[i].n) TH_LOG("epoll_wait() returned before any record");
	}
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 10000));
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(1, w[i].n) TH_LOG("file %d's exclusive waiter slept on", i);
		close(w[i].ep);
		close(fd[i]);
	}
}

struct release {
	int fd;
	volatile int done;
	volatile int fired;
};

/* Queue a record after 20 s unless told not to: unblocks a stuck read. */
static void *release_later(void *arg)
{
	struct release *r = arg;

	for (int i = 0; i < 400 && !r->done; i++)
		usleep(50000);
	if (!r->done) {
		r->fired = 1;
		set_alarm(r->fd, 3, 0, 10000);
	}
	return NULL;
}

/* O_NONBLOCK means never sleep, not even behind another blocked reader. */
TEST_F(dev, nonblocking_read_never_waits_behind_a_blocked_reader)
{
	/* static: a reader left blocked must not write into a dead frame */
	static struct waiter w;
	struct release rel = { .fd = self->fd };
	struct kml_sensor_event ev;
	pthread_t th, watchdog;
	int fl = fcntl(self->fd, F_GETFL);

	w.fd = self->fd;
	w.ret = 1;
	ASSERT_EQ(0, pthread_create(&th, NULL, blocking_reader, &w));
	usleep(200000);		/* it now sleeps, holding the file's reader lock */
	ASSERT_EQ(0, pthread_create(&watchdog, NULL, release_later, &rel));
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fl | O_NONBLOCK));
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	rel.done = 1;
	EXPECT_EQ(0, rel.fired) TH_LOG("the O_NONBLOCK read slept until a record came");
	pthread_join(watchdog, NULL);
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fl));
	/* Release the blocked reader. */
	ASSERT_EQ(0, set_alarm(self->fd, 2, 0, 10000));
	ASSERT_EQ(0, join_reader(th, &w))
		TH_LOG("the alarm's record did not wake the blocked reader within 20 s");
	EXPECT_EQ(0, w.ret);
}

/* The kml_sensor counter @name from /proc/kmodlab/stats, or -1. */
static long long sensor_stat(const char *name)
{
	char line[256], want[128];
	long long v = -1;
	FILE *f = fopen("/proc/kmodlab/stats", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "kml_sensor %s counter %%lld", name);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, want, &v) == 1)
			break;
	fclose(f);
	return v;
}

TEST_F(dev, queue_overflow_is_counted)
{
	const int len = 256, extra = 10;
	struct kml_sensor_event ev[256];
	int fast = open(DEV, O_RDONLY | O_NONBLOCK);
	long long overflows = sensor_stat("alarm_overflows");
	int i;

	ASSERT_GE(fast, 0);
	ASSERT_GE(overflows, 0);
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 30000));
	/*
	 * len + extra crossings while self->fd reads nothing, and the other
	 * file reads each at once: the slow reader must not hold it up.
	 */
	for (i = 0; i < len + extra; i++) {
		ASSERT_EQ(0, inject(self->fd, 0, i % 2 ? 20000 : 40000));
		ASSERT_EQ((ssize_t)sizeof(ev[0]), read(fast, ev, sizeof(ev[0])));
		EXPECT_EQ(0, ev[0].lost);
		EXPECT_EQ(i % 2 ? KML_SENSOR_ZONE_NORMAL : KML_SENSOR_ZONE_HIGH,
			  ev[0].kind);
	}
	/* The slow reader gets the newest len; the first says extra were lost. */
	ASSERT_EQ((ssize_t)sizeof(ev), read(self->fd, ev, sizeof(ev)));
	for (i = 0; i < len; i++) {
		EXPECT_EQ((extra + i) % 2 ? KML_SENSOR_ZONE_NORMAL : KML_SENSOR_ZONE_HIGH,
			  ev[i].kind);
		EXPECT_EQ(i ? 0 : extra, ev[i].lost) TH_LOG("record %d", i);
		if (i)
			EXPECT_EQ(ev[i - 1].seq + 1, ev[i].seq);
	}
	EXPECT_EQ(overflows + extra, sensor_stat("alarm_overflows"));
	/* Caught up: the next record carries no gap. */
	ASSERT_EQ(0, inject(self->fd, 0, 40000));
	ASSERT_EQ((ssize_t)sizeof(ev[0]), read(self->fd, ev, sizeof(ev)));
	EXPECT_EQ(0, ev[0].lost);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev[0].kind);
	close(fast);
}

/* Before the fix RESET ended alarms silently: readers kept believing in them. */
TEST_F(dev, reset_records_the_return_to_normal)
{
	struct kml_sensor_event ev;
	int nb = open(DEV, O_RDONLY | O_NONBLOCK);

	ASSERT_GE(nb, 0);
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 10000));		/* 20 C: high */
	ASSERT_EQ(0, set_alarm(self->fd, 1, 0, 30000));		/* 21 C: fine */
	ASSERT_EQ(0, set_alarm(self->fd, 2, 30000, 40000));	/* 22 C: low */
	ASSERT_EQ(0, read_event(nb, &ev));
	EXPECT_EQ(0, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev.kind);
	ASSERT_EQ(0, read_event(nb, &ev));
	EXPECT_EQ(2, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_LOW, ev.kind);
	EXPECT_EQ(-EAGAIN, read_event(nb, &ev));

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_RESET));
	/* One NORMAL record for each channel that was in alarm, none for 1. */
	ASSERT_EQ(0, read_event(nb, &ev));
	EXPECT_EQ(0, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_NORMAL, ev.kind);
	ASSERT_EQ(0, read_event(nb, &ev));
	EXPECT_EQ(2, ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_NORMAL, ev.kind);
	/* Alarms are off after the reset: the simulation records nothing. */
	EXPECT_EQ(-EAGAIN, read_event(nb, &ev));
	close(nb);
}

/*
 * The sampler writes a record once, whatever the number of open files;
 * each file still gets every record, in order.
 */
TEST_F_TIMEOUT(dev, many_open_files_get_every_record, WORK_CAP_S)
{
	const int nfiles = 3000, crossings = 5;
	struct rlimit rl = { nfiles + 64, nfiles + 64 };
	struct kml_sensor_event ev[8];
	int *fds = calloc(nfiles, sizeof(int)), late, i, k;

	ASSERT_NE(NULL, fds);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	for (i = 0; i < nfiles; i++) {
		fds[i] = open(DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		ASSERT_GE(fds[i], 0) TH_LOG("open %d", i);
	}
	ASSERT_EQ(0, set_alarm(self->fd, 3, 0, 30000));
	for (k = 0; k < crossings; k++)
		ASSERT_EQ(0, inject(self->fd, 3, k % 2 ? 20000 : 40000));
	late = open(DEV, O_RDONLY | O_NONBLOCK);
	ASSERT_GE(late, 0);
	for (i = 0; i < nfiles; i++) {
		ASSERT_EQ((ssize_t)sizeof(ev[0]) * crossings,
			  read(fds[i], ev, sizeof(ev))) TH_LOG("file %d", i);
		for (k = 0; k < crossings; k++) {
			ASSERT_EQ(3, ev[k].channel);
			ASSERT_EQ(k % 2 ? KML_SENSOR_ZONE_NORMAL : KML_SENSOR_ZONE_HIGH,
				  ev[k].kind);
			ASSERT_EQ(0, ev[k].lost);
		}
		close(fds[i]);
	}
	/* A file sees only the records that come after it was opened. */
	EXPECT_EQ(-1, read(late, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(late);
	free(fds);
}

/* ---- concurrency ---- */

struct hammer {
	int fd;
	volatile int stop;
	unsigned long calls, errors;
};

static void *ioctl_hammer(void *arg)
{
	struct hammer *h = arg;
	struct kml_sensor_read_all all;
	struct kml_sensor_reading r;
	struct kml_sensor_alarm a;
	unsigned int i = 0;
	uint32_t ms;

	while (!h->stop) {
		int bad = 0;

		all.flags = 0;
		bad |= ioctl(h->fd, KML_SENSOR_IOC_READ_ALL, &all) ||
		       all.nchannels != NCH;
		bad |= read_ch(h->fd, i % NCH, &r) != 0;
		a.channel = i % NCH;
		bad |= ioctl(h->fd, KML_SENSOR_IOC_GET_ALARM, &a) ||
		       a.low_mc > a.high_mc;
		bad |= ioctl(h->fd, KML_SENSOR_IOC_GET_PERIOD, &ms) ||
		       ms < KML_SENSOR_PERIOD_MIN_MS || ms > KML_SENSOR_PERIOD_MAX_MS;
		__atomic_add_fetch(&h->calls, 4, __ATOMIC_RELAXED);
		if (bad)
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
		i++;
	}
	return NULL;
}

TEST_F_TIMEOUT(dev, ioctls_race_threshold_and_period_changes, WORK_CAP_S + 60)
{
	struct hammer h = { .fd = self->fd };
	struct kml_sensor_inject clear = { .flags = KML_SENSOR_INJECT_CLEAR };
	pthread_t th[4];
	unsigned long changes = 0;
	double t0;
	int i;

	for (i = 0; i < NCH; i++) {
		clear.channel = i;
		ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_INJECT, &clear));
	}
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, ioctl_hammer, &h));
	/* 3 s, and however long it takes to do enough of both. */
	t0 = now_s();
	do {
		uint32_t ms = 10 + changes % 50;
		int lo = 3000 + (int)(changes % 3000);

		ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
		ASSERT_EQ(0, set_alarm(self->fd, changes % NCH, lo, lo + 2000));
		changes++;
	} while (now_s() - t0 < 3 ||
		 ((changes < 1000 || __atomic_load_n(&h.calls, __ATOMIC_RELAXED) < 4000) &&
		  now_s() - t0 < WORK_CAP_S));
	h.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu ioctls against %lu setting changes", h.calls, changes);
	EXPECT_EQ(0, h.errors);
	EXPECT_GE(changes, 1000);
	EXPECT_GE(h.calls, 4000);
}

TEST(rmmod_while_open)
{
	struct kml_sensor_reading r;
	int fd;

	ASSERT_EQ(0, reload_sensor(""));
	fd = open(DEV, O_RDONLY);
	ASSERT_GE(fd, 0);
	/* An open file pins the module (fops.owner): rmmod must refuse. */
	EXPECT_EQ(-1, syscall(SYS_delete_module, "kml_sensor", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, read_ch(fd, 1, &r));
	close(fd);
	EXPECT_EQ(0, kml_unload("kml_sensor"));
	EXPECT_EQ(-1, access(DEV, F_OK));
	ASSERT_EQ(0, reload_sensor(""));
}

/*
 * Opens, polls and closes in threads while the module is unloaded and
 * loaded again: every open either fails cleanly or works. An open file
 * pins the module, so the threads pause a little between opens, or rmmod
 * would never find a moment when none is open.
 */
static void *open_close_loop(void *arg)
{
	struct hammer *h = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&seed;

	while (!h->stop) {
		int fd = open(DEV, O_RDONLY | O_NONBLOCK);
		struct kml_sensor_reading r;
		struct pollfd p;

		if (fd >= 0) {
			p.fd = fd;
			p.events = POLLIN;
			poll(&p, 1, 0);
			if (read_ch(fd, 0, &r))
				__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
			close(fd);
			__atomic_add_fetch(&h->calls, 1, __ATOMIC_RELAXED);
		}
		usleep(rand_r(&seed) % 2000);
	}
	return NULL;
}

/* No fixture state: a plain TEST cannot have a longer timeout. */
FIXTURE(race) {};
FIXTURE_SETUP(race) {}
FIXTURE_TEARDOWN(race) {}

TEST_F_TIMEOUT(race, rmmod_races_open_close, WORK_CAP_S + 60)
{
	struct hammer h = { 0 };
	pthread_t th[2];
	int i, cycles = 0;
	double t0;

	ASSERT_EQ(0, reload_sensor(""));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, open_close_loop, &h));
	/* 4 s, and however long it takes for enough cycles and opens. */
	t0 = now_s();
	do {
		/* One quick try: busy (a file is open) is part of the race. */
		if (syscall(SYS_delete_module, "kml_sensor", O_NONBLOCK) == 0) {
			/* Always back: the openers must find it again. */
			ASSERT_EQ(0, kml_load("modules/kml_sensor/kml_sensor.ko", ""));
			cycles++;
		} else {
			ASSERT_TRUE(errno == EWOULDBLOCK || errno == EBUSY) TH_LOG("%m");
		}
	} while (now_s() - t0 < 4 ||
		 ((cycles < 10 || __atomic_load_n(&h.calls, __ATOMIC_RELAXED) < 100) &&
		  now_s() - t0 < WORK_CAP_S));
	h.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%d unload/load cycles, %lu opens", cycles, h.calls);
	EXPECT_EQ(0, h.errors);
	EXPECT_GE(cycles, 10);
	EXPECT_GE(h.calls, 100);
	ASSERT_EQ(0, reload_sensor(""));
}

/* ---- hwmon ---- */

static int find_hwmon(char *dir, size_t len)
{
	DIR *d = opendir("/sys/class/hwmon");
	struct dirent *e;
	char path[600], name[64];
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/name", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strcmp(name, "kml_sensor\n")) {
			snprintf(dir, len, "/sys/class/hwmon/%s", e->d_name);
			found = 0;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -999999;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -999999;
		fclose(f);
	}
	return v;
}

/* Debian's cloud kernels, for one, are built without hwmon. */
#define SKIP_WITHOUT_HWMON()						\
	do {								\
		if (access("/sys/class/hwmon", F_OK))			\
			SKIP(return, "kernel without CONFIG_HWMON");	\
	} while (0)

TEST_F(dev, hwmon_agrees_with_ioctl)
{
	char dir[300], path[400], label[32];
	FILE *f;

	SKIP_WITHOUT_HWMON();
	ASSERT_EQ(0, find_hwmon(dir, sizeof(dir)));
	ASSERT_EQ(0, inject(self->fd, 3, -7250));
	for (unsigned int ch = 0; ch < NCH; ch++) {
		struct kml_sensor_reading r;

		ASSERT_EQ(0, read_ch(self->fd, ch, &r));
		snprintf(path, sizeof(path), "%s/temp%u_input", dir, ch + 1);
		EXPECT_EQ(r.value_mc, read_long(path)) TH_LOG("%s", path);
		snprintf(path, sizeof(path), "%s/temp%u_label", dir, ch + 1);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		ASSERT_NE(NULL, fgets(label, sizeof(label), f));
		fclose(f);
		snprintf(path, sizeof(path), "probe%u\n", ch);
		EXPECT_STREQ(path, label);
	}
	snprintf(path, sizeof(path), "%s/temp%u_input", dir, NCH + 1);
	EXPECT_NE(0, access(path, F_OK));
}

TEST_F(dev, lm_sensors_agrees_with_ioctl)
{
	char out[4096];
	size_t n;
	FILE *p;

	SKIP_WITHOUT_HWMON();
	ASSERT_EQ(0, inject(self->fd, 0, 12345));
	ASSERT_EQ(0, inject(self->fd, 1, -2500));
	p = popen("sensors -u 'kml_sensor-*' 2>&1", "r");
	ASSERT_NE(NULL, p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	ASSERT_EQ(0, pclose(p)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "probe0:\n  temp1_input: 12.345")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "probe1:\n  temp2_input: -2.500")) TH_LOG("%s", out);
}

/* ---- fuzz ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

TEST_F_TIMEOUT(dev, fuzz_random_ioctls, WORK_CAP_S)
{
	const unsigned long iters = 100000;
	char *buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	unsigned long i, ok = 0;
	struct kml_sensor_info info = { .flags = 0 };

	ASSERT_NE(MAP_FAILED, buf);
	/* The last page is a trap: structs that straddle it must -EFAULT. */
	ASSERT_EQ(0, mprotect(buf + 4096, 4096, PROT_NONE));
	for (i = 0; i < iters; i++) {
		uint64_t r = rnd(&s);
		unsigned int dir = r & 3, nr = (r >> 2) & 0x1f;
		unsigned int size = (r >> 8) & 0x3ff;
		unsigned int type = (r >> 20) & 7 ? KML_SENSOR_IOC_MAGIC : (r >> 24) & 0xff;
		unsigned long cmd = _IOC(dir, type, nr, size);
		void *arg;

		/* Half the time a real command, to get past the switch. */
		if ((r >> 32) & 1) {
			static const unsigned long real[] = {
				KML_SENSOR_IOC_GET_INFO, KML_SENSOR_IOC_READ,
				KML_SENSOR_IOC_READ_ALL, KML_SENSOR_IOC_GET_PERIOD,
				KML_SENSOR_IOC_SET_PERIOD, KML_SENSOR_IOC_GET_ALARM,
				KML_SENSOR_IOC_SET_ALARM, KML_SENSOR_IOC_INJECT,
			};
			cmd = real[(r >> 33) % 8];
		}
		switch ((r >> 40) & 3) {
		case 0:
			arg = NULL;
			break;
		case 1:
			arg = (void *)(uintptr_t)rnd(&s);
			break;
		default:
			/* Random bytes at a random offset, near the trap page. */
			for (int k = 0; k < 64; k++)
				((uint64_t *)buf)[k] = rnd(&s);
			arg = buf + 4096 - ((r >> 44) & 0x3ff) - 1;
			break;
		}
		if (!ioctl(self->fd, cmd, arg))
			ok++;
	}
	TH_LOG("%lu random ioctls, %lu accepted", iters, ok);
	/* The device still works. */
	EXPECT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, &info));
	EXPECT_EQ(NCH, info.nchannels);
	EXPECT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_RESET));
	munmap(buf, 8192);
}

/* ---- the client ---- */

#define CLIENT(fmt, ...) KML_CLIENT("kml-sensor", fmt, ##__VA_ARGS__)

/*
 * Waits until process @pid, once it runs @comm, has the device open: 0,
 * or -1 if it exited. Before the exec the child still holds our own
 * descriptors, which must not count.
 */
static int wait_until_open(pid_t pid, const char *comm)
{
	char dir[64], path[600], target[256];
	double t0 = now_s();

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	while (now_s() - t0 < WORK_CAP_S) {
		struct dirent *e;
		int found = 0;
		FILE *f;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "r");
		if (f) {
			found = fgets(target, sizeof(target), f) &&
				!strncmp(target, comm, strlen(comm)) &&
				target[strlen(comm)] == '\n';
			fclose(f);
		}
		d = found ? opendir(dir) : NULL;
		found = 0;
		while (d && !found && (e = readdir(d))) {
			ssize_t n;

			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			n = readlink(path, target, sizeof(target) - 1);
			if (n > 0) {
				target[n] = '\0';
				found = !strcmp(target, DEV);
			}
		}
		if (d)
			closedir(d);
		if (found)
			return 0;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(10000);
	}
	return -1;
}

TEST_F_TIMEOUT(dev, client, 300)
{
	char cmd[4300], out[8192];

	EXPECT_EQ(0, CLIENT("info")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "channels    4"));
	EXPECT_EQ(0, CLIENT("inject 1 -3.25"));
	EXPECT_EQ(0, CLIENT("read 1"));
	EXPECT_NE(NULL, strstr(out, "-3.250 C")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("--json read"));
	EXPECT_NE(NULL, strstr(out, "{\"channel\":1,\"value_mc\":-3250,")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("alarm set 1 -5 5"));
	EXPECT_EQ(0, CLIENT("--json alarm get 1"));
	EXPECT_STREQ("[{\"channel\":1,\"enabled\":true,\"low_mc\":-5000,\"high_mc\":5000}]\n", out);
	EXPECT_EQ(0, CLIENT("period 50"));
	EXPECT_EQ(0, CLIENT("period"));
	EXPECT_STREQ("50 ms\n", out);
	EXPECT_EQ(0, CLIENT("watch -c 2"));
	EXPECT_NE(NULL, strstr(out, "probe3")) TH_LOG("%s", out);
	/* output it cannot write: an error, and a watch that stops */
	EXPECT_EQ(1, KML_CLIENT_FULL("kml-sensor", "read"));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);
	EXPECT_EQ(1, KML_CLIENT_FULL("kml-sensor", "watch"));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);
	/*
	 * wait: an alarm arrives once the client has the device open (not
	 * after a guessed delay, which a busy host can outlast).
	 */
	{
		int p[2], st;
		pid_t pid;
		ssize_t n;

		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			const char *bin = getenv("KMODLAB_BIN");

			snprintf(cmd, sizeof(cmd), "%s/kml-sensor", bin ? bin : ".");
			dup2(p[1], 1);
			dup2(p[1], 2);
			execl(cmd, "kml-sensor", "--json", "wait", "-t", "600", (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		ASSERT_EQ(0, wait_until_open(pid, "kml-sensor"));
		ASSERT_EQ(0, inject(self->fd, 1, 7000));
		for (size_t len = 0;; len += n) {
			n = read(p[0], out + len, sizeof(out) - 1 - len);
			if (n <= 0) {
				out[len] = '\0';
				break;
			}
		}
		close(p[0]);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("%s", out);
		EXPECT_NE(NULL, strstr(out, "\"value_mc\":7000,\"zone\":\"high\"")) TH_LOG("%s", out);
	}
	EXPECT_EQ(3, CLIENT("wait -t 1"));
	EXPECT_EQ(0, CLIENT("alarm off 1"));
	EXPECT_EQ(0, CLIENT("inject 1 clear"));
	/* Errors: one line, non-zero. */
	EXPECT_EQ(1, CLIENT("read 9"));
	EXPECT_NE(NULL, strstr(out, "bad channel")) TH_LOG("%s", out);
	EXPECT_EQ(2, CLIENT("alarm set 0 10 5"));	/* usage errors: 2 */
	EXPECT_EQ(1, CLIENT("period 5"));
	EXPECT_NE(NULL, strstr(out, "invalid argument")) TH_LOG("%s", out);
	EXPECT_EQ(2, CLIENT("inject 0 hot"));
	EXPECT_EQ(2, CLIENT("frobnicate"));
	{
		const char *bin = getenv("KMODLAB_BIN");

		static const char *const root_only[] = {
			"reset", "period 60", "alarm set 0 1 2", "alarm off 0", "inject 0 1",
		};

		for (unsigned int i = 0; i < sizeof(root_only) / sizeof(root_only[0]); i++) {
			snprintf(cmd, sizeof(cmd),
				 "setpriv --reuid=65534 --regid=65534 --clear-groups %s/kml-sensor %s 2>&1",
				 bin, root_only[i]);
			EXPECT_EQ(1, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", root_only[i]);
			EXPECT_NE(NULL, strstr(out, "needs root")) TH_LOG("%s: %s", root_only[i], out);
		}
	}
	EXPECT_EQ(0, CLIENT("reset"));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_sensor"));
	EXPECT_EQ(1, CLIENT("read"));
	EXPECT_NE(NULL, strstr(out, "kml_sensor is not loaded")) TH_LOG("%s", out);
}

TEST(bad_module_parameters)
{
	ASSERT_EQ(0, kml_unload("kml_sensor"));
	ASSERT_EQ(0, kml_load_once("modules/kml_stats/kml_stats.ko", ""));
	EXPECT_EQ(-EINVAL, kml_load("modules/kml_sensor/kml_sensor.ko", "channels=0"));
	EXPECT_EQ(-EINVAL, kml_load("modules/kml_sensor/kml_sensor.ko", "channels=17"));
	EXPECT_EQ(0, kml_load("modules/kml_sensor/kml_sensor.ko", "channels=16 seed=7"));
	ASSERT_EQ(0, kml_unload("kml_sensor"));
}


/* ---- the seeded model ---- */

/*
 * Every sample of a channel that is left alone is the model's next step,
 * so a reading with sequence number s is the s-th step of the model from
 * kml_model_init(seed, channel). The seed is the one whose mix is 0 for
 * channel 11 (xorshift would stick at 0: the model must force a bit on),
 * and within 700 samples channel 0's drift reaches its upper bound and
 * channel 13's its lower one, where the model must clamp them.
 */
#define ZERO_MIX_SEED	3223999549u
#define SEED_NCH	14
#define SEED_SAMPLES	700

/* No fixture state: a plain TEST cannot have a longer timeout. */
FIXTURE(model) {};
FIXTURE_SETUP(model) {}
FIXTURE_TEARDOWN(model) {}

TEST_F_TIMEOUT(model, seeded_model_is_followed_exactly, WORK_CAP_S + 60)
{
	struct kml_sensor_read_all all = { 0 };
	struct kml_model m;
	char params[64];
	uint32_t ms = KML_SENSOR_PERIOD_MIN_MS;
	double t0;
	int fd;

	/* The seed really is the degenerate one, for channel 11. */
	ASSERT_EQ(0, (uint32_t)(ZERO_MIX_SEED * 2654435761u) ^ (12 * 40503u) ^ 0x9e3779b9u);
	snprintf(params, sizeof(params), "channels=%d seed=%u", SEED_NCH, ZERO_MIX_SEED);
	ASSERT_EQ(0, reload_sensor(params));
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
	t0 = now_s();
	do {
		ASSERT_EQ(0, ioctl(fd, KML_SENSOR_IOC_READ_ALL, &all));
		if (all.readings[0].seq >= SEED_SAMPLES)
			break;
		usleep(20000);
	} while (now_s() - t0 < WORK_CAP_S);
	close(fd);
	ASSERT_EQ(SEED_NCH, all.nchannels);
	ASSERT_GE(all.readings[0].seq, SEED_SAMPLES);
	for (unsigned int ch = 0; ch < SEED_NCH; ch++) {
		const struct kml_sensor_reading *r = &all.readings[ch];
		int32_t want = 0, lo = 0, hi = 0;

		kml_model_init(&m, ZERO_MIX_SEED, ch);
		ASSERT_NE(0, m.rng);
		for (uint64_t i = 0; i < r->seq; i++) {
			want = kml_model_step(&m);
			lo = m.drift_mc < lo ? m.drift_mc : lo;
			hi = m.drift_mc > hi ? m.drift_mc : hi;
		}
		EXPECT_EQ(want, r->value_mc) TH_LOG("channel %u at sample %llu", ch,
						    (unsigned long long)r->seq);
		EXPECT_LE(abs(r->value_mc - m.setpoint_mc), KML_MODEL_SPAN_MC);
		/* The bounds this seed was chosen for were really reached. */
		if (ch == 0)
			EXPECT_EQ(3000, hi);
		if (ch == 13)
			EXPECT_EQ(-3000, lo);
	}
	ASSERT_EQ(0, reload_sensor(""));
}

/* ---- allocation failures: every allocating call fails cleanly ---- */

#define FAULT_SETUP(f)							\
	do {								\
		int ret_ = kml_fault_init(f);				\
		if (ret_)						\
			SKIP(return, "no fault injection in this kernel (%s)", \
			     strerror(-ret_));				\
	} while (0)

FIXTURE(fault) {};
FIXTURE_SETUP(fault) {}
FIXTURE_TEARDOWN(fault) {}

/* Whether kml_stats lists a "kml_sensor" set. */
static int sensor_stats_listed(void)
{
	char line[256];
	FILE *f = fopen("/proc/kmodlab/stats", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		found |= !strncmp(line, "kml_sensor ", 11);
	fclose(f);
	return found;
}

/* Nothing of kml_sensor is left: module, device, platform device, hwmon, stats. */
static int sensor_absent(void)
{
	char dir[300];

	return access("/sys/module/kml_sensor", F_OK) && access(DEV, F_OK) &&
	       access("/sys/devices/platform/kml_sensor", F_OK) &&
	       find_hwmon(dir, sizeof(dir)) && sensor_stats_listed() == 0;
}

/* The loaded module answers GET_INFO with @nch channels. */
static int sensor_works(unsigned int nch)
{
	struct kml_sensor_info info = { 0 };
	int fd = open(DEV, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = !ioctl(fd, KML_SENSOR_IOC_GET_INFO, &info) && info.nchannels == nch &&
	     sensor_stats_listed() == 1;
	close(fd);
	return ok;
}

/*
 * finit_module() of kml_sensor, each of its allocations failed in turn:
 * the loader's, the stats set, the platform device, hwmon, the misc
 * device. Every failure is an error that leaves nothing behind.
 */
TEST_F_TIMEOUT(fault, load, WORK_CAP_S + 60)
{
	/* On the stack: no page fault in the call may take the failure. */
	char params[] = "channels=3";
	unsigned int n, fired = 0, refused = 0;
	struct kml_fault f;
	long ret;
	int fd;

	FAULT_SETUP(&f);
	KML_FAULT_RANGE_OR_ALL(kml_fault_modules_only(&f));
	ASSERT_EQ(0, kml_unload("kml_sensor"));
	ASSERT_EQ(0, kml_load_once("modules/kml_stats/kml_stats.ko", ""));
	ASSERT_TRUE(sensor_absent());
	fd = open(kml_ko_path("modules/kml_sensor/kml_sensor.ko"), O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err;

		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = syscall(SYS_finit_module, fd, params, 0);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_EQ(0, ret) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired++;
		if (ret) {
			refused++;
			/*
			 * Any error will do: the driver core and hwmon turn
			 * some allocation failures into other codes (EINVAL),
			 * which init passes on as they are.
			 */
			ASSERT_EQ(-1, ret);
			if (err != ENOMEM)
				TH_LOG("n=%u: %s", n, strerror(err));
			ASSERT_TRUE(sensor_absent()) TH_LOG("n=%u: left behind", n);
			continue;
		}
		/* A failure the kernel could do without: all there, or bust. */
		ASSERT_TRUE(sensor_works(3)) TH_LOG("n=%u", n);
		ASSERT_EQ(0, kml_unload("kml_sensor"));
		ASSERT_TRUE(sensor_absent()) TH_LOG("n=%u", n);
	}
	close(fd);
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	EXPECT_TRUE(sensor_works(3));
	TH_LOG("finit_module: %u allocation failures injected, %u refused the load",
	       fired, refused);
	EXPECT_GT(refused, 0);
	ASSERT_EQ(0, kml_unload("kml_sensor"));
}

static long refcnt(void)
{
	char buf[32] = "";
	int fd = open("/sys/module/kml_sensor/refcnt", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/*
 * open() of the device, each allocation failed in turn: -ENOMEM, and no
 * reference on the module is left behind.
 */
TEST_F_TIMEOUT(dev, fault_open, 300)
{
	unsigned int n, fired = 0;
	struct kml_fault f;
	long ref = refcnt();
	char path[] = DEV;
	int fd;

	FAULT_SETUP(&f);
	ASSERT_EQ(1, ref);	/* the fixture's file */
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err;

		ASSERT_EQ(0, kml_fault_arm(&f, n));
		fd = open(path, O_RDONLY);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_GE(fd, 0) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired++;
		if (fd >= 0) {
			close(fd);
			continue;
		}
		EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
		EXPECT_EQ(ref, refcnt()) TH_LOG("n=%u: reference leaked", n);
	}
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	TH_LOG("open: %u allocation failures injected", fired);
	EXPECT_GT(fired, 0);
	/* The file that did open works and holds one reference. */
	EXPECT_EQ(ref + 1, refcnt());
	EXPECT_EQ(0, inject(fd, 0, 30000));
	close(fd);
	EXPECT_EQ(ref, refcnt());
}

/*
 * Every ioctl, walked the same way: whether or not one allocates (none
 * does today), a failure must be an error that changes nothing.
 */
TEST_F_TIMEOUT(dev, fault_ioctls, 300)
{
	struct kml_sensor_info info;
	struct kml_sensor_reading rd = { .channel = 1 };
	struct kml_sensor_read_all all = { 0 };
	struct kml_sensor_alarm get = { .channel = 2 };
	struct kml_sensor_alarm set = {
		.channel = 2, .flags = KML_SENSOR_ALARM_ENABLED,
		.low_mc = -5000, .high_mc = 90000,
	};
	struct kml_sensor_inject in = { .channel = 3, .value_mc = 23000 };
	uint32_t period = 0, new_period = 500;
	const struct { const char *name; unsigned long cmd; void *arg; } calls[] = {
		{ "GET_INFO", KML_SENSOR_IOC_GET_INFO, &info },
		{ "READ", KML_SENSOR_IOC_READ, &rd },
		{ "READ_ALL", KML_SENSOR_IOC_READ_ALL, &all },
		{ "GET_PERIOD", KML_SENSOR_IOC_GET_PERIOD, &period },
		{ "GET_ALARM", KML_SENSOR_IOC_GET_ALARM, &get },
		/* Those that change something last, each once it succeeds. */
		{ "SET_PERIOD", KML_SENSOR_IOC_SET_PERIOD, &new_period },
		{ "SET_ALARM", KML_SENSOR_IOC_SET_ALARM, &set },
		{ "INJECT", KML_SENSOR_IOC_INJECT, &in },
		{ "RESET", KML_SENSOR_IOC_RESET, NULL },
	};
	struct state before = self->before;
	struct kml_fault f;
	unsigned int i, n;

	FAULT_SETUP(&f);
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		unsigned int fired = 0;
		int ret, err;

		for (n = 1; n <= KML_FAULT_MAX; n++) {
			ASSERT_EQ(0, kml_fault_arm(&f, n));
			ret = ioctl(self->fd, calls[i].cmd, calls[i].arg);
			err = errno;
			if (!kml_fault_fired(&f)) {
				ASSERT_EQ(0, ret) TH_LOG("%s: %s", calls[i].name, strerror(err));
				break;
			}
			fired++;
			if (!ret)
				break;	/* a failure it could do without */
			EXPECT_EQ(ENOMEM, err) TH_LOG("%s: %s", calls[i].name, strerror(err));
			expect_unchanged(_metadata, self->fd, &before);
		}
		ASSERT_LE(n, KML_FAULT_MAX);
		get_state(self->fd, &before);
		TH_LOG("%s: %u allocation failures injected", calls[i].name, fired);
	}
	kml_fault_exit(&f);
	/* The last ones did what they say. */
	EXPECT_EQ(1, rd.channel);
	EXPECT_EQ(NCH, all.nchannels);
	EXPECT_EQ(KML_SENSOR_PERIOD_DEFAULT_MS, period);
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_PERIOD, &period));
	EXPECT_EQ(KML_SENSOR_PERIOD_DEFAULT_MS, period);	/* RESET */
}

/*
 * ---- tracepoints: kml_sensor:sample and kml_sensor:alarm, read back
 * through a trace instance of the test's own (../kml_trace.h) ----
 */
FIXTURE(trace) {
	int fd;
	struct kml_trace t;
};

FIXTURE_SETUP(trace)
{
	char name[64];
	int ret;

	self->fd = -1;
	ASSERT_EQ(0, reload_sensor("channels=4"));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
	/* Held still: the sampler leaves injected channels alone. */
	for (unsigned int ch = 0; ch < NCH; ch++)
		ASSERT_EQ(0, inject(self->fd, ch, 20000 + 1000 * ch));
	snprintf(name, sizeof(name), "kml_sensor_test_%d", getpid());
	ret = kml_trace_open(&self->t, name);
	if (ret == -ENODEV)
		SKIP(return, "kernel without tracing (no " KML_TRACEFS ")");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(trace)
{
	EXPECT_EQ(0, kml_trace_close(&self->t));
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Every byte of a record is a field: padding the compiler would leave
 * between or after them keeps what the reused ring buffer held before,
 * and raw readers (perf, BPF) would get an earlier record's bytes.
 */
TEST_F(trace, records_hide_no_stale_bytes)
{
	EXPECT_EQ(0, kml_trace_hidden_bytes("kml_sensor", "sample"))
		TH_LOG("kml_sensor:sample has bytes no field covers");
	EXPECT_EQ(0, kml_trace_hidden_bytes("kml_sensor", "alarm"))
		TH_LOG("kml_sensor:alarm has bytes no field covers");
}

/* The @nth sample event of @text on channel @ch: its line, or NULL. */
static const char *sample_on(const char *text, unsigned int ch, int nth)
{
	const char *line;
	long long v;

	for (int i = 0; (line = kml_trace_line(text, "sample", i)); i++)
		if (!kml_trace_field(line, "channel", &v) && v == ch &&
		    nth-- == 0)
			return line;
	return NULL;
}

TEST_F_TIMEOUT(trace, sample_and_alarm_fields, 300)
{
	struct kml_sensor_reading r;
	const char *line;
	char *text, zone[16];
	long long v;

	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/sample/enable", "1"));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/alarm/enable", "1"));
	/* 21000 is inside: enabling the alarm crosses nothing. */
	ASSERT_EQ(0, set_alarm(self->fd, 1, 10000, 40000));
	ASSERT_EQ(0, inject(self->fd, 1, 42000));	/* -> high */
	ASSERT_EQ(0, inject(self->fd, 1, 5000));	/* -> low */
	ASSERT_EQ(0, read_ch(self->fd, 1, &r));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);

	line = sample_on(text, 1, 0);
	ASSERT_NE(NULL, line) TH_LOG("no sample on channel 1 in:\n%s", text);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(42000, v);
	EXPECT_EQ(0, kml_trace_field(line, "injected", &v));
	EXPECT_EQ(1, v);
	EXPECT_EQ(0, kml_trace_field(line, "seq", &v));
	EXPECT_EQ(r.seq - 1, (unsigned long long)v);
	line = sample_on(text, 1, 1);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(5000, v);
	EXPECT_EQ(0, kml_trace_field(line, "seq", &v));
	EXPECT_EQ(r.seq, (unsigned long long)v);	/* READ shows the last */
	EXPECT_EQ(NULL, sample_on(text, 1, 2));

	/* Exactly the two crossings, each with the thresholds it crossed. */
	EXPECT_EQ(2, kml_trace_count(text, "alarm"));
	line = kml_trace_line(text, "alarm", 0);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, kml_trace_str(line, "zone", zone, sizeof(zone)));
	EXPECT_STREQ("high", zone);
	EXPECT_EQ(0, kml_trace_field(line, "channel", &v));
	EXPECT_EQ(1, v);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(42000, v);
	EXPECT_EQ(0, kml_trace_field(line, "low_mc", &v));
	EXPECT_EQ(10000, v);
	EXPECT_EQ(0, kml_trace_field(line, "high_mc", &v));
	EXPECT_EQ(40000, v);
	line = kml_trace_line(text, "alarm", 1);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, kml_trace_str(line, "zone", zone, sizeof(zone)));
	EXPECT_STREQ("low", zone);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(5000, v);
	free(text);
}

TEST_F_TIMEOUT(trace, filter_expression_picks_the_events, 300)
{
	const char *line;
	char *text;
	long long v;

	/* The kernel evaluates the filter before anything is recorded. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/sample/filter",
				   "channel == 2 && injected == 1"));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/sample/enable", "1"));
	/* A field the event does not have is refused. */
	EXPECT_EQ(-EINVAL, kml_trace_set(&self->t, "events/kml_sensor/alarm/filter",
					 "temperature > 3"));
	ASSERT_EQ(0, inject(self->fd, 0, 11000));
	ASSERT_EQ(0, inject(self->fd, 2, 22000));
	ASSERT_EQ(0, inject(self->fd, 3, 33000));
	ASSERT_EQ(0, inject(self->fd, 2, 23000));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(2, kml_trace_count(text, "sample")) TH_LOG("%s", text);
	line = kml_trace_line(text, "sample", 0);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(22000, v);
	line = kml_trace_line(text, "sample", 1);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, kml_trace_field(line, "value_mc", &v));
	EXPECT_EQ(23000, v);
	free(text);
}

TEST_F_TIMEOUT(trace, hist_trigger_sums_values_by_channel, 300)
{
	unsigned long long hits[NCH] = { 0 };
	long long sum[NCH] = { 0 };
	unsigned int ch, seen = 0;
	const char *p;
	char *hist;

	/* Needs CONFIG_HIST_TRIGGERS; the event need not be enabled. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/sample/trigger",
				   "hist:keys=channel:vals=hitcount,value_mc:sort=channel if injected == 1"));
	ASSERT_EQ(0, inject(self->fd, 0, 1000));
	ASSERT_EQ(0, inject(self->fd, 0, 2000));
	ASSERT_EQ(0, inject(self->fd, 0, 3000));
	ASSERT_EQ(0, inject(self->fd, 3, 500));
	ASSERT_EQ(0, inject(self->fd, 3, 700));
	hist = kml_trace_get(&self->t, "events/kml_sensor/sample/hist");
	ASSERT_NE(NULL, hist);
	for (p = hist; (p = strstr(p, "{ channel:")); p++) {
		unsigned long long h;
		long long s;

		ASSERT_EQ(3, sscanf(p, "{ channel: %u } hitcount: %llu value_mc: %lld",
				    &ch, &h, &s)) TH_LOG("%s", hist);
		ASSERT_LT(ch, NCH);
		hits[ch] = h;
		sum[ch] = s;
		seen++;
	}
	EXPECT_EQ(2, seen) TH_LOG("%s", hist);
	EXPECT_EQ(3, hits[0]);
	EXPECT_EQ(6000, sum[0]);
	EXPECT_EQ(2, hits[3]);
	EXPECT_EQ(1200, sum[3]);
	free(hist);
}

TEST_F_TIMEOUT(trace, nothing_is_recorded_while_disabled, 300)
{
	char *text;

	ASSERT_EQ(0, inject(self->fd, 0, 30000));
	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 25000));	/* crossed: alarm */
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(NULL, strstr(text, "kml_sensor")) TH_LOG("%s", text);
	EXPECT_EQ(0, kml_trace_count(text, "sample"));
	EXPECT_EQ(0, kml_trace_count(text, "alarm"));
	free(text);

	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/enable", "1"));
	ASSERT_EQ(0, inject(self->fd, 0, 31000));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/enable", "0"));
	ASSERT_EQ(0, inject(self->fd, 0, 32000));
	ASSERT_EQ(0, inject(self->fd, 0, 1000));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(1, kml_trace_count(text, "sample")) TH_LOG("%s", text);
	EXPECT_EQ(0, kml_trace_count(text, "alarm"));
	free(text);
}

TEST_F_TIMEOUT(trace, events_come_and_go_with_the_module, 300)
{
	char *en;

	EXPECT_TRUE(kml_trace_listed("kml_sensor:sample\n"));
	EXPECT_TRUE(kml_trace_listed("kml_sensor:alarm\n"));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_sensor/sample/enable", "1"));
	/* An enabled event does not pin the module: rmmod removes it. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_sensor"));
	EXPECT_FALSE(kml_trace_listed("kml_sensor:"));
	en = kml_trace_get(&self->t, "events/kml_sensor/sample/enable");
	EXPECT_EQ(NULL, en);
	free(en);
	EXPECT_EQ(-ENOENT, kml_trace_set(&self->t, "events/kml_sensor/sample/enable", "1"));

	/* Back with the module, and off: nothing carries over. */
	ASSERT_EQ(0, reload_sensor(""));
	EXPECT_TRUE(kml_trace_listed("kml_sensor:sample\n"));
	en = kml_trace_get(&self->t, "events/kml_sensor/sample/enable");
	ASSERT_NE(NULL, en);
	EXPECT_STREQ("0\n", en);
	free(en);
}

/*
 * ---- the kernel's own tools on these events: perf, bpftrace, trace-cmd
 * (Debian: linux-perf, bpftrace, trace-cmd; each test SKIPs without its
 * tool). Each records while a client command causes known events. ----
 */
static bool have_tool(const char *tool)
{
	char cmd[128], out[256];

	snprintf(cmd, sizeof(cmd), "command -v %s", tool);
	return kml_run(cmd, out, sizeof(out)) == 0;
}

/* A scratch directory for the tools' files: 0, its path in @dir. */
static int scratch(char *dir, size_t len)
{
	snprintf(dir, len, "%s/kml_trace_XXXXXX", getenv("TMPDIR") ?: "/tmp");
	return mkdtemp(dir) ? 0 : -errno;
}

static void scratch_rm(const char *dir)
{
	char cmd[300], out[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	kml_run(cmd, out, sizeof(out));
}

TEST_F_TIMEOUT(trace, perf_lists_records_and_scripts_the_events, 600)
{
	const char *bin = getenv("KMODLAB_BIN") ?: ".";
	char cmd[1024], out[16384], dir[256];

	if (!have_tool("perf"))
		SKIP(return, "no perf (Debian: linux-perf)");
	ASSERT_EQ(0, scratch(dir, sizeof(dir)));
	ASSERT_EQ(0, kml_run("perf list 'kml_sensor:*' 2>&1", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "kml_sensor:sample")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "kml_sensor:alarm")) TH_LOG("%s", out);

	/* Channel 1 is held at 21000: an alarm at 0..1 C crosses high. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && perf record -q -a -e kml_sensor:sample -e kml_sensor:alarm "
		 "-o kml.data -- sh -c '%s/kml-sensor inject 2 42.5 && "
		 "%s/kml-sensor alarm set 1 0 1' > /dev/null 2>&1 && "
		 "perf script -i kml.data 2>&1", dir, bin, bin);
	EXPECT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "kml_sensor:sample: channel=2 value_mc=42500 "))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "kml_sensor:alarm: channel=1 value_mc=21000 "))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "zone=high low_mc=0 high_mc=1000")) TH_LOG("%s", out);
	scratch_rm(dir);
}

TEST_F_TIMEOUT(trace, bpftrace_counts_and_sums_by_channel, 600)
{
	const char *bin = getenv("KMODLAB_BIN") ?: ".";
	char cmd[1024], out[16384], dir[256], path[300];
	FILE *f;

	if (!have_tool("bpftrace"))
		SKIP(return, "no bpftrace");
	ASSERT_EQ(0, scratch(dir, sizeof(dir)));
	/* bpftrace -c runs one command: the three injections are a script. */
	snprintf(path, sizeof(path), "%s/inject.sh", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "#!/bin/sh\nset -e\nfor t in 20 25 30.5; do %s/kml-sensor inject 3 $t; done\n",
		bin);
	fclose(f);
	/*
	 * No BTF in the test kernel: args come from the event's format file.
	 * -c splits its command at blanks; bpftrace 0.17 refused to run the
	 * script itself ("does not exist or is not executable", as root,
	 * mode 0700, under the guest's /run), so sh runs it.
	 */
	snprintf(cmd, sizeof(cmd),
		 "bpftrace -e 'tracepoint:kml_sensor:sample /args->injected/ "
		 "{ @n[args->channel] = count(); @sum[args->channel] = sum(args->value_mc); }' "
		 "-c '/bin/sh %s' 2>&1", path);
	EXPECT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "@n[3]: 3\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "@sum[3]: 75500\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "@n[0]")) TH_LOG("%s", out);
	scratch_rm(dir);
}

TEST_F_TIMEOUT(trace, trace_cmd_records_and_reports_the_events, 600)
{
	const char *bin = getenv("KMODLAB_BIN") ?: ".";
	char cmd[1024], out[16384], dir[256];

	if (!have_tool("trace-cmd"))
		SKIP(return, "no trace-cmd");
	ASSERT_EQ(0, scratch(dir, sizeof(dir)));
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && trace-cmd record -q -e kml_sensor:alarm -o kml.dat "
		 "%s/kml-sensor alarm set 0 30 40 > /dev/null 2>&1 && "
		 "trace-cmd report -i kml.dat 2>&1", dir, bin);
	EXPECT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	/* Channel 0 is held at 20000, below the new low of 30 C. */
	EXPECT_NE(NULL, strstr(out, "channel=0 value_mc=20000 "))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "zone=low low_mc=30000 high_mc=40000"))
		TH_LOG("%s", out);
	scratch_rm(dir);
}

TEST_HARNESS_MAIN
