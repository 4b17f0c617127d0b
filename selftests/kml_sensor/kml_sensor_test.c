// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_sensor, run as root inside the test guest (see
 * scripts/guest/selftests.sh for KMODLAB_KO_DIR and KMODLAB_BIN).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_sensor.h>
#include "kselftest_harness.h"
#include "../kml_selftest.h"

#define DEV	KML_SENSOR_DEVICE
#define NCH	4

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
	struct kml_sensor_info info = { .size = sizeof(info) };

	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, &info));
	EXPECT_EQ(KML_SENSOR_ABI_VERSION, info.abi_version);
	EXPECT_EQ(NCH, info.nchannels);
	EXPECT_EQ(KML_SENSOR_UNITS_MILLI_CELSIUS, info.units);
	EXPECT_EQ(KML_SENSOR_MIN_MC, info.min_mc);
	EXPECT_EQ(KML_SENSOR_MAX_MC, info.max_mc);
	EXPECT_EQ(KML_SENSOR_PERIOD_MIN_MS, info.period_min_ms);
	EXPECT_EQ(KML_SENSOR_PERIOD_MAX_MS, info.period_max_ms);
	EXPECT_EQ(64, info.queue_len);
	EXPECT_EQ(0, info.reserved);

	info.size = sizeof(info) - 4;
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	info.size = sizeof(info) + 8;
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_SENSOR_IOC_GET_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
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
	struct kml_sensor_read_all all = { .size = sizeof(all) };
	struct kml_sensor_reading r;

	ASSERT_EQ(0, inject(self->fd, 2, -12345));
	ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_READ_ALL, &all));
	ASSERT_EQ(NCH, all.nchannels);
	for (unsigned int ch = 0; ch < NCH; ch++) {
		ASSERT_EQ(0, read_ch(self->fd, ch, &r));
		EXPECT_EQ(0, memcmp(&r, &all.readings[ch], sizeof(r)))
			TH_LOG("channel %u", ch);
	}
	EXPECT_EQ(-12345, all.readings[2].value_mc);

	all.size = 8;
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
		tail->size = sizeof(all);
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
	usleep(300000);
	ASSERT_EQ(0, read_ch(self->fd, 0, &b));
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

TEST_F(dev, unprivileged_inject_and_reset_are_eperm)
{
	pid_t pid;
	int status;

	ASSERT_EQ(0, set_alarm(self->fd, 0, -1000, 1000000 / 10));
	get_state(self->fd, &self->before);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct kml_sensor_reading r = { .channel = 0 };
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(DEV, O_RDWR);
		if (fd < 0)
			_exit(11);
		/* Reading is for everyone... */
		if (ioctl(fd, KML_SENSOR_IOC_READ, &r))
			_exit(12);
		/* ...changing what others see is not. */
		if (inject(fd, 0, 0) != -EPERM)
			_exit(13);
		if (ioctl(fd, KML_SENSOR_IOC_RESET) != -1 || errno != EPERM)
			_exit(14);
		/* Privilege is checked before the argument is even read. */
		if (ioctl(fd, KML_SENSOR_IOC_INJECT, kml_bad_ptr()) != -1 || errno != EPERM)
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	expect_unchanged(_metadata, self->fd, &self->before);
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
		/* right number, wrong size or direction */
		_IOWR(KML_SENSOR_IOC_MAGIC, 0x00, __u32),
		_IOR(KML_SENSOR_IOC_MAGIC, 0x01, struct kml_sensor_reading),
		_IOW(KML_SENSOR_IOC_MAGIC, 0x03, __u32),
		_IOW(KML_SENSOR_IOC_MAGIC, 0x08, __u32),
		0,
	};
	char buf[512] = { 0 };

	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], buf)) TH_LOG("cmd %#lx", cmds[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", cmds[i]);
	}
	expect_unchanged(_metadata, self->fd, &self->before);
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
};

static void *blocking_reader(void *arg)
{
	struct waiter *w = arg;

	w->ret = read_event(w->fd, &w->ev);
	return NULL;
}

TEST_F(dev, blocking_read_wakes_on_alarm)
{
	struct waiter w = { .fd = self->fd, .ret = 1 };
	pthread_t th;

	ASSERT_EQ(0, set_alarm(self->fd, 2, 0, 30000));
	ASSERT_EQ(0, pthread_create(&th, NULL, blocking_reader, &w));
	usleep(200000);
	EXPECT_EQ(1, w.ret) TH_LOG("read returned before any alarm");
	ASSERT_EQ(0, inject(self->fd, 2, -1));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(2, w.ev.channel);
	EXPECT_EQ(KML_SENSOR_ZONE_LOW, w.ev.kind);
}

TEST_F(dev, queue_overflow_is_counted)
{
	struct kml_sensor_event ev[64];
	int i, extra = 10;

	ASSERT_EQ(0, set_alarm(self->fd, 0, 0, 30000));
	/* 64 + 10 crossings: the queue keeps 64 and counts 10 lost. */
	for (i = 0; i < 64 + extra; i++)
		ASSERT_EQ(0, inject(self->fd, 0, i % 2 ? 20000 : 40000));
	ASSERT_EQ((ssize_t)sizeof(ev), read(self->fd, ev, sizeof(ev)));
	for (i = 0; i < 64; i++) {
		EXPECT_EQ(i % 2 ? KML_SENSOR_ZONE_NORMAL : KML_SENSOR_ZONE_HIGH,
			  ev[i].kind);
		EXPECT_EQ(0, ev[i].lost);
		if (i)
			EXPECT_EQ(ev[i - 1].seq + 1, ev[i].seq);
	}
	/* The next record that fits carries the gap. */
	ASSERT_EQ(0, inject(self->fd, 0, 40000));
	ASSERT_EQ((ssize_t)sizeof(ev[0]), read(self->fd, ev, sizeof(ev)));
	EXPECT_EQ(extra, ev[0].lost);
	EXPECT_EQ(KML_SENSOR_ZONE_HIGH, ev[0].kind);
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

		all.size = sizeof(all);
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

TEST_F_TIMEOUT(dev, ioctls_race_threshold_and_period_changes, 60)
{
	struct hammer h = { .fd = self->fd };
	struct kml_sensor_inject clear = { .flags = KML_SENSOR_INJECT_CLEAR };
	struct timespec t0, t;
	pthread_t th[4];
	unsigned long changes = 0;
	int i;

	for (i = 0; i < NCH; i++) {
		clear.channel = i;
		ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_INJECT, &clear));
	}
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, ioctl_hammer, &h));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		uint32_t ms = 10 + changes % 50;
		int lo = 3000 + (int)(changes % 3000);

		ASSERT_EQ(0, ioctl(self->fd, KML_SENSOR_IOC_SET_PERIOD, &ms));
		ASSERT_EQ(0, set_alarm(self->fd, changes % NCH, lo, lo + 2000));
		changes++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 3);
	h.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu ioctls against %lu setting changes", h.calls, changes);
	EXPECT_EQ(0, h.errors);
	EXPECT_GT(h.calls, 1000);
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

TEST(rmmod_races_open_close)
{
	struct hammer h = { 0 };
	struct timespec t0, t;
	pthread_t th[2];
	int i, cycles = 0;

	ASSERT_EQ(0, reload_sensor(""));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, open_close_loop, &h));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* One quick try: busy (a file is open) is part of the race. */
		if (syscall(SYS_delete_module, "kml_sensor", O_NONBLOCK) == 0) {
			if (kml_load("modules/kml_sensor/kml_sensor.ko", "") == 0)
				cycles++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 4);
	h.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%d unload/load cycles, %lu opens", cycles, h.calls);
	EXPECT_EQ(0, h.errors);
	EXPECT_GT(cycles, 0);
	EXPECT_GT(h.calls, 0);
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

TEST_F_TIMEOUT(dev, fuzz_random_ioctls, 300)
{
	const unsigned long iters = 100000;
	char *buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	unsigned long i, ok = 0;
	struct kml_sensor_info info = { .size = sizeof(info) };

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

TEST_F(dev, client)
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
	/* wait: an alarm arrives from a background inject. */
	{
		const char *bin = getenv("KMODLAB_BIN");

		snprintf(cmd, sizeof(cmd),
			 "(sleep 0.5; %s/kml-sensor inject 1 7) & %s/kml-sensor --json wait -t 10 2>&1; wait",
			 bin, bin);
		EXPECT_EQ(0, kml_run(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "\"value_mc\":7000,\"zone\":\"high\"")) TH_LOG("%s", out);
	}
	EXPECT_EQ(3, CLIENT("wait -t 1"));
	EXPECT_EQ(0, CLIENT("alarm off 1"));
	EXPECT_EQ(0, CLIENT("inject 1 clear"));
	/* Errors: one line, non-zero. */
	EXPECT_EQ(1, CLIENT("read 9"));
	EXPECT_NE(NULL, strstr(out, "bad channel")) TH_LOG("%s", out);
	EXPECT_EQ(1, CLIENT("alarm set 0 10 5"));
	EXPECT_EQ(1, CLIENT("period 5"));
	EXPECT_NE(NULL, strstr(out, "invalid argument")) TH_LOG("%s", out);
	EXPECT_EQ(1, CLIENT("inject 0 hot"));
	EXPECT_EQ(2, CLIENT("frobnicate"));
	{
		const char *bin = getenv("KMODLAB_BIN");

		snprintf(cmd, sizeof(cmd),
			 "setpriv --reuid=65534 --regid=65534 --clear-groups %s/kml-sensor reset 2>&1", bin);
		EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "needs root")) TH_LOG("%s", out);
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

TEST_HARNESS_MAIN
