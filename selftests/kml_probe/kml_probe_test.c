// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_probe, run as root inside the test guest (see
 * scripts/guest/selftests.sh for KMODLAB_KO_DIR and KMODLAB_BIN).
 *
 * Fixture probe_text holds the tests that plant probes in code another
 * vCPU runs meanwhile (kernel text patched under a running CPU):
 * multi-threaded TCG does not emulate that faithfully, so scripts/check.sh
 * runs them in a guest of their own with one TCG thread (-f probe_text)
 * and everything else with real parallelism (-F probe_text).
 *
 * No test depends on the host's speed: timing assertions are one-sided
 * (a busy-wait of N ns never takes less), and whatever needs "enough"
 * samples loops until it has them, under a generous cap.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>
#include <linux/kml_ring.h>
#include "kselftest_harness.h"
#include "../kml_selftest.h"
#include "../kml_fault.h"
#include "../kml_trace.h"
#include "kml_probe_file.h"

#define DEV	KML_PROBE_DEVICE
#define TARGET	"kml_probe_target"
#define TARGET_KO "modules/kml_probe/kml_probe_target.ko"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int reload_probe(void)
{
	int ret = kml_unload("kml_probe");

	if (!ret)
		ret = kml_load_once("modules/kml_stats/kml_stats.ko", "");
	if (!ret)
		ret = kml_load_once("modules/kml_probe/kml_probe_target.ko", "");
	if (!ret)
		ret = kml_load_once("modules/kml_probe/kml_probe.ko", "");
	return ret;
}

static int attach(int fd, const char *func, unsigned int flags,
		  unsigned int nargs)
{
	struct kml_probe_attach a = { .flags = flags, .nargs = nargs };

	snprintf(a.func, sizeof(a.func), "%s", func);
	return ioctl(fd, KML_PROBE_IOC_ATTACH, &a) ? -errno : 0;
}

static int attach_cfg(int fd, struct kml_probe_attach *a)
{
	return ioctl(fd, KML_PROBE_IOC_ATTACH, a) ? -errno : 0;
}

static int detach(int fd, const char *func)
{
	struct kml_probe_func f = { { 0 } };

	snprintf(f.func, sizeof(f.func), "%s", func);
	return ioctl(fd, KML_PROBE_IOC_DETACH, &f) ? -errno : 0;
}

static int get(int fd, const char *func, struct kml_probe_result *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->func, sizeof(r->func), "%s", func);
	return ioctl(fd, KML_PROBE_IOC_GET, r) ? -errno : 0;
}

static int call(int fd, uint64_t arg, uint32_t count, uint32_t depth,
		uint64_t delay_ns)
{
	struct kml_probe_call c = {
		.arg = arg, .count = count, .depth = depth, .delay_ns = delay_ns,
	};

	return ioctl(fd, KML_PROBE_IOC_CALL, &c) ? -errno : 0;
}

static int bucket(uint64_t ns)
{
	return ns ? 64 - __builtin_clzll(ns) : 0;
}

static int list(int fd, struct kml_probe_list *l)
{
	memset(l, 0, sizeof(*l));
	return ioctl(fd, KML_PROBE_IOC_LIST, l) ? -errno : 0;
}

/* The list entry of @func, or NULL. */
static const struct kml_probe_list_entry *listed(const struct kml_probe_list *l,
						 const char *func)
{
	for (unsigned int i = 0; i < l->count; i++)
		if (!strcmp(l->funcs[i].func, func))
			return &l->funcs[i];
	return NULL;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -errno;
	close(fd);
	return ret;
}

/* Kernel log lines mentioning @needle so far (dmesg through klogctl). */
static int kmsg_count(const char *needle)
{
	char cmd[256], out[64];

	snprintf(cmd, sizeof(cmd), "dmesg | grep -c '%s'", needle);
	if (kml_run(cmd, out, sizeof(out)) < 0)
		return -1;
	return atoi(out);
}

/*
 * Every test of this fixture gets 300 s: the harness time-out only
 * catches hangs, and a debug kernel under TCG on a busy host takes
 * seconds per client run, or per round of the loops that call until they
 * have enough samples.
 */
FIXTURE(probe) {
	int fd;
};

FIXTURE_SETUP(probe)
{
	ASSERT_EQ(0, reload_probe());
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(probe)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F_TIMEOUT(probe, attach_detach_lifecycle, 300)
{
	struct kml_probe_list l;
	struct kml_probe_result r;
	uint32_t v;

	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_GET_VERSION, &v));
	EXPECT_EQ(KML_PROBE_ABI_VERSION, v);
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(0, l.count);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, list(self->fd, &l));
	ASSERT_EQ(1, l.count);
	EXPECT_STREQ(TARGET, l.funcs[0].func);
	EXPECT_EQ(0, l.funcs[0].flags);
	EXPECT_EQ(0, l.funcs[0].state);
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(0, r.count);
	EXPECT_EQ(0, r.state);
	EXPECT_GT(r.maxactive, 0) TH_LOG("the kernel's default maxactive is reported");
	EXPECT_EQ(-EEXIST, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	EXPECT_EQ(-ENOENT, detach(self->fd, TARGET));
	EXPECT_EQ(-ENOENT, get(self->fd, TARGET, &r));
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(0, l.count);
	/* And again: detach left nothing behind that blocks a new attach. */
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
}

TEST_F_TIMEOUT(probe, counts_are_exact, 300)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, call(self->fd, 1, 1000, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(1000, r.count);
	EXPECT_EQ(0, r.nmissed);
	EXPECT_EQ(0, r.filtered);
	EXPECT_LE(r.min_ns, r.max_ns);
	EXPECT_GE(r.sum_ns, r.min_ns * 1000);
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(0, r.count);
	EXPECT_EQ(0, r.sum_ns);
	EXPECT_EQ(0, r.min_ns);
	EXPECT_EQ(0, r.max_ns);
	ASSERT_EQ(0, call(self->fd, 1, 7, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(7, r.count);
}

/*
 * Calls @count at a time until @enough(r) holds or 90 s pass; every
 * call is counted (exactly), and the caller checks what must never
 * happen. Returns the number of calls made, 0 on an ioctl error.
 */
static unsigned int call_until(int fd, struct kml_probe_result *r,
			       uint32_t count, uint32_t depth, uint64_t delay,
			       int (*enough)(const struct kml_probe_result *r))
{
	double t0 = now_s();
	unsigned int calls = 0;

	do {
		if (call(fd, 1, count, depth, delay) || get(fd, TARGET, r))
			return 0;
		calls += count;
	} while (!enough(r) && now_s() - t0 < 90);
	return calls;
}

static int bucket20_has_16(const struct kml_probe_result *r)
{
	return r->hist[20] >= 16;
}

TEST_F_TIMEOUT(probe, known_duration_lands_in_its_bucket, 300)
{
	const uint64_t delay = 700000;	/* mid-bucket 20: [524288, 1048575] */
	struct kml_probe_result r;
	unsigned int calls;

	ASSERT_EQ(20, bucket(delay));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	/*
	 * Probe overhead, an interrupt or the host descheduling a vCPU can
	 * push a call over; nothing can make one shorter. Call until 16
	 * have landed in their bucket, however many went over meanwhile.
	 */
	calls = call_until(self->fd, &r, 20, 0, delay, bucket20_has_16);
	ASSERT_GT(calls, 0);
	EXPECT_EQ(calls, r.count);
	for (int k = 0; k < 20; k++) {
		EXPECT_EQ(0, r.hist[k])
			TH_LOG("bucket %d: a call shorter than its busy-wait", k);
	}
	EXPECT_GE(r.hist[20], 16) TH_LOG("%u calls in 90 s", calls);
	EXPECT_GE(r.min_ns, delay);
}

static int buckets_18_to_20_have_7(const struct kml_probe_result *r)
{
	return r->hist[18] >= 7 && r->hist[19] >= 7 && r->hist[20] >= 7;
}

TEST_F_TIMEOUT(probe, nested_calls_each_get_their_own_start, 300)
{
	const uint64_t delay = 200000;	/* 200, 400, 600 us: buckets 18, 19, 20 */
	struct kml_probe_result r;
	unsigned int calls;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	calls = call_until(self->fd, &r, 10, 2, delay, buckets_18_to_20_have_7);
	ASSERT_GT(calls, 0);
	EXPECT_EQ(3 * calls, r.count);
	EXPECT_EQ(0, r.nmissed);
	for (int k = 0; k < 18; k++) {
		EXPECT_EQ(0, r.hist[k]) TH_LOG("bucket %d", k);
	}
	/* A nested start shared with the caller would put all in one bucket. */
	EXPECT_TRUE(buckets_18_to_20_have_7(&r))
		TH_LOG("%u calls: %llu %llu %llu", calls, (unsigned long long)r.hist[18],
		       (unsigned long long)r.hist[19], (unsigned long long)r.hist[20]);
}

/*
 * One nested CALL, timed from both sides: each call's latency runs from
 * its own entry to its own return, so it is at least its busy-waits and
 * at most the caller's whole ioctl (the same monotonic clock). A start
 * time never stamped (0) or stamped on return fails at once, without the
 * loops above. Both bounds are one-sided: a slow host only widens the
 * caller's window.
 */
TEST_F_TIMEOUT(probe, latency_lies_within_the_call, 300)
{
	const uint64_t delay = 100000;	/* 100 us at each of 3 levels */
	struct kml_probe_result r;
	double t0, window_ns;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	t0 = now_s();
	ASSERT_EQ(0, call(self->fd, 1, 1, 2, delay));
	window_ns = (now_s() - t0) * 1e9;
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	ASSERT_EQ(3, r.count);
	EXPECT_EQ(0, r.nmissed);
	/* The innermost call waits once, the outermost three times. */
	EXPECT_GE(r.min_ns, delay) TH_LOG("shorter than its busy-wait");
	EXPECT_GE(r.max_ns, 3 * delay) TH_LOG("the outer call is not timed from its own start");
	EXPECT_GE(r.sum_ns, 6 * delay);
	/* 1 us of slack for the double's rounding, none for the clock. */
	EXPECT_LE((double)r.max_ns, window_ns + 1000)
		TH_LOG("%llu ns, longer than the caller's whole CALL (%.0f ns): "
		       "a start time never stamped?", (unsigned long long)r.max_ns, window_ns);
}

struct quick_calls {
	int fd;
	atomic_int started, done, inside;
};

static void *quick_calls_thread(void *arg)
{
	struct quick_calls *q = arg;

	while (!atomic_load(&q->done)) {
		int after = atomic_load(&q->started);

		if (call(q->fd, 1, 1, 0, 0))
			break;
		/* began after the slow call did, ended before it did */
		if (after && !atomic_load(&q->done))
			atomic_fetch_add(&q->inside, 1);
	}
	return NULL;
}

/*
 * Calls that overlap are each timed from their own start: a slow call on
 * one CPU while quick ones come and go on the other still measures its
 * whole busy-wait. A start time kept anywhere but in the call's own
 * kretprobe instance is overwritten by the quick calls' entries. Tried
 * until a quick call fell inside the slow one (at most 20 times).
 */
TEST_F_TIMEOUT(probe, overlapping_calls_are_timed_apart, 300)
{
	const uint64_t delay = 10000000;	/* 10 ms, at each of 9 levels */
	struct quick_calls q = { .fd = self->fd };
	struct kml_probe_result r = { 0 };
	int round, inside = 0;
	pthread_t t;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	for (round = 0; round < 20 && !inside; round++) {
		ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
		atomic_store(&q.started, 0);
		atomic_store(&q.done, 0);
		atomic_store(&q.inside, 0);
		ASSERT_EQ(0, pthread_create(&t, NULL, quick_calls_thread, &q));
		atomic_store(&q.started, 1);
		ASSERT_EQ(0, call(self->fd, 1, 1, 8, delay));
		atomic_store(&q.done, 1);
		pthread_join(t, NULL);
		inside = atomic_load(&q.inside);
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
	}
	ASSERT_LT(0, inside) TH_LOG("no quick call fell inside the slow one in 20 tries");
	/* the outermost level waits nine times */
	EXPECT_GE(r.max_ns, 9 * delay)
		TH_LOG("the slow call measured %llu ns: timed from another call's start?",
		       (unsigned long long)r.max_ns);
}

TEST_F_TIMEOUT(probe, maxactive_exhaustion_is_reported, 300)
{
	struct kml_probe_attach a = { .func = TARGET, .maxactive = 1 };
	struct kml_probe_result r;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	/* Depth 3 needs 4 instances at once; only the outermost gets one. */
	ASSERT_EQ(0, call(self->fd, 1, 5, 3, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(1, r.maxactive);
	EXPECT_EQ(5, r.count);
	EXPECT_EQ(15, r.nmissed);
	/* Reset zeroes nmissed too (a baseline: kprobes' counter runs on). */
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(0, r.nmissed);
	ASSERT_EQ(0, call(self->fd, 1, 1, 3, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(1, r.count);
	EXPECT_EQ(3, r.nmissed);
}

/*
 * A kretprobe on a function kml_probe's handlers call themselves: every
 * such call arrives while a handler runs, and kprobes drops it into the
 * probe's kp.nmissed (a plain kprobe there shows the same number). It
 * used to be reported as 0 calls, 0 missed.
 */
TEST_F_TIMEOUT(probe, recursion_misses_are_reported, 300)
{
	const char *inner = "kml_stats_hist_add";
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, attach(self->fd, inner, 0, 0));
	ASSERT_EQ(0, call(self->fd, 1, 1000, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(1000, r.count);
	ASSERT_EQ(0, get(self->fd, inner, &r));
	/* One hist_add per measured target call, maybe more from elsewhere. */
	EXPECT_GE(r.nmissed, 1000);
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	ASSERT_EQ(0, get(self->fd, inner, &r));
	EXPECT_LT(r.nmissed, 1000) TH_LOG("%llu: reset left nmissed", (unsigned long long)r.nmissed);
	ASSERT_EQ(0, detach(self->fd, inner));
	/* The same through a plain kprobe. */
	ASSERT_EQ(0, attach(self->fd, inner, KML_PROBE_F_COUNT_ONLY, 0));
	ASSERT_EQ(0, call(self->fd, 1, 100, 0, 0));
	ASSERT_EQ(0, get(self->fd, inner, &r));
	EXPECT_GE(r.nmissed, 100);
}

/* "reset kp.<func>" on the control file resets the probe as RESET does. */
TEST_F_TIMEOUT(probe, control_file_reset_is_one_operation, 300)
{
	static const char *const cmds[] = { "reset kp." TARGET "\n", "reset\n" };
	struct kml_probe_attach a = { .func = TARGET, .maxactive = 1 };
	struct kml_probe_result r;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	for (unsigned int i = 0; i < 2; i++) {
		ASSERT_EQ(0, call(self->fd, 1, 20, 1, 1000));
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		ASSERT_EQ(20, r.count);
		ASSERT_EQ(20, r.nmissed);
		ASSERT_GE(r.min_ns, 1000);
		ASSERT_EQ(0, write_file("/proc/kmodlab/control", cmds[i]));
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		EXPECT_EQ(0, r.count) TH_LOG("%s", cmds[i]);
		EXPECT_EQ(0, r.sum_ns);
		EXPECT_EQ(0, r.min_ns) TH_LOG("%s: min without calls", cmds[i]);
		EXPECT_EQ(0, r.max_ns);
		EXPECT_EQ(0, r.nmissed);
		/* New calls start a new minimum, not below the old one's. */
		ASSERT_EQ(0, call(self->fd, 1, 3, 0, 2000000));
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		EXPECT_EQ(3, r.count);
		EXPECT_GE(r.min_ns, 2000000) TH_LOG("%s: stale minimum", cmds[i]);
		ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	}
}

struct reset_racer {
	int fd;
	atomic_int stop;
	atomic_long calls, resets;
};

static void *calls_with_misses(void *arg)
{
	struct reset_racer *rr = arg;

	/* depth 4 with maxactive 1: every call also makes misses */
	while (!atomic_load(&rr->stop))
		if (!call(rr->fd, 1, 5, 4, 0))
			atomic_fetch_add(&rr->calls, 1);
	return NULL;
}

static void *control_resets(void *arg)
{
	struct reset_racer *rr = arg;

	while (!atomic_load(&rr->stop))
		if (!write_file("/proc/kmodlab/control", "reset kp." TARGET "\n"))
			atomic_fetch_add(&rr->resets, 1);
	return NULL;
}

/*
 * GET subtracts a reset's baselines: a control-file reset landing in the
 * middle of one must not make a count wrap below zero.
 */
TEST_F_TIMEOUT(probe, get_racing_control_file_resets_never_wraps, 300)
{
	struct kml_probe_attach a = { .func = TARGET, .maxactive = 1 };
	struct reset_racer rr = { .fd = self->fd };
	const uint64_t insane = 1ULL << 62;
	long gets = 0, bad = 0;
	struct kml_probe_result r;
	pthread_t th[2];
	double end;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, pthread_create(&th[0], NULL, calls_with_misses, &rr));
	ASSERT_EQ(0, pthread_create(&th[1], NULL, control_resets, &rr));
	end = now_s() + 240;
	/* Enough of each however slow the kernel: the cap only ends a hang. */
	while ((gets < 20000 || atomic_load(&rr.resets) < 2000 ||
		atomic_load(&rr.calls) < 2000) && now_s() < end) {
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		gets++;
		if (r.count > insane || r.sum_ns > insane || r.nmissed > insane) {
			if (!bad++)
				TH_LOG("wrapped: count %llu sum %llu nmissed %llu",
				       (unsigned long long)r.count,
				       (unsigned long long)r.sum_ns,
				       (unsigned long long)r.nmissed);
		}
	}
	atomic_store(&rr.stop, 1);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	TH_LOG("%ld GETs, %ld resets, %ld calls, %ld wrapped", gets,
	       atomic_load(&rr.resets), atomic_load(&rr.calls), bad);
	ASSERT_EQ(0, bad);
	if (gets < 20000 || atomic_load(&rr.resets) < 2000 || atomic_load(&rr.calls) < 2000)
		SKIP(return, "too slow to judge: the 240 s cap came first");
}

TEST_F_TIMEOUT(probe, argument_and_return_capture, 300)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
	ASSERT_EQ(0, call(self->fd, 1234, 1, 2, 1000));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(3, r.nargs);
	EXPECT_EQ(0, r.state) TH_LOG("root sees the captured values");
	/* The outermost call returns last: its values are the last ones. */
	EXPECT_EQ(1234, r.last_args[0]);
	EXPECT_EQ(2, r.last_args[1]);
	EXPECT_EQ(1000, r.last_args[2]);
	EXPECT_EQ(1236, r.last_ret);
	/* One thread, no NMIs probing it: nothing to lose. */
	EXPECT_EQ(0, r.last_lost);
}

TEST_F_TIMEOUT(probe, argument_filter, 300)
{
	struct kml_probe_attach a = {
		.func = TARGET, .flags = KML_PROBE_F_ARG, .arg_index = 0,
		.arg_value = 7,
	};
	struct kml_probe_result r;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, call(self->fd, 7, 5, 0, 0));
	ASSERT_EQ(0, call(self->fd, 8, 6, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(5, r.count);
	EXPECT_EQ(6, r.filtered);
}

struct caller {
	int fd, ret;
	pid_t tid;
};

static void *call_in_thread(void *arg)
{
	struct caller *c = arg;

	c->tid = gettid();
	c->ret = call(c->fd, 1, 4, 0, 0);
	return NULL;
}

static void *tgid_attach_in_thread(void *arg)
{
	struct caller *c = arg;
	struct kml_probe_attach a = {
		.func = TARGET, .flags = KML_PROBE_F_TGID, .pid = gettid(),
	};

	/* A thread that is not the group leader names no process. */
	c->ret = attach_cfg(c->fd, &a);
	return NULL;
}

TEST_F_TIMEOUT(probe, pid_and_tgid_filters, 300)
{
	struct kml_probe_attach a = {
		.func = TARGET, .flags = KML_PROBE_F_PID, .pid = gettid(),
	};
	struct caller c = { .fd = self->fd };
	struct kml_probe_result r;
	pthread_t th;
	pid_t child;
	int status;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, pthread_create(&th, NULL, call_in_thread, &c));
	pthread_join(th, NULL);
	ASSERT_EQ(0, c.ret);
	ASSERT_EQ(0, call(self->fd, 1, 3, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(3, r.count) TH_LOG("only this thread's calls");
	EXPECT_EQ(4, r.filtered);
	ASSERT_EQ(0, detach(self->fd, TARGET));

	/* TGID: every thread of this process, not a child process. */
	a.flags = KML_PROBE_F_TGID;
	a.pid = getpid();
	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, pthread_create(&th, NULL, call_in_thread, &c));
	pthread_join(th, NULL);
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		_exit(call(self->fd, 1, 2, 0, 0) ? 1 : 0);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(4, r.count);
	EXPECT_EQ(2, r.filtered);
	ASSERT_EQ(0, detach(self->fd, TARGET));

	/* No such thread or process: nothing attached. */
	ASSERT_EQ(0, pthread_create(&th, NULL, tgid_attach_in_thread, &c));
	pthread_join(th, NULL);
	EXPECT_EQ(-ESRCH, c.ret);
	a.flags = KML_PROBE_F_PID;
	a.pid = 0x3ffffff0;	/* above PID_MAX_LIMIT */
	EXPECT_EQ(-ESRCH, attach_cfg(self->fd, &a));
	EXPECT_EQ(-ENOENT, get(self->fd, TARGET, &r));
}

/*
 * The PID a filter names is the caller's: in a new PID namespace the
 * caller is 1 (its global PID is something else, and global PID 1 is
 * init). The old code compared global PIDs with it and measured nothing.
 */
TEST_F_TIMEOUT(probe, pid_filter_in_a_new_pid_namespace, 300)
{
	pid_t child;
	int status;

	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(10);
		inner = fork();
		if (inner < 0)
			_exit(11);
		if (inner == 0) {
			struct kml_probe_attach a = {
				.func = TARGET, .flags = KML_PROBE_F_PID,
				.pid = gettid(),
			};
			struct kml_probe_result r;

			if (a.pid != 1)
				_exit(20);
			if (attach_cfg(self->fd, &a) || call(self->fd, 1, 4, 0, 0) ||
			    get(self->fd, TARGET, &r))
				_exit(21);
			if (r.count != 4 || r.filtered != 0)
				_exit(22);
			a.flags = KML_PROBE_F_TGID;
			a.pid = getpid();
			if (detach(self->fd, TARGET) || attach_cfg(self->fd, &a) ||
			    call(self->fd, 1, 2, 0, 0) || get(self->fd, TARGET, &r))
				_exit(23);
			_exit(r.count == 2 && r.filtered == 0 ? 0 : 24);
		}
		if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(12);
		_exit(WEXITSTATUS(status));
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("20+: in the namespace; 22/24: calls not counted as pid 1's");
	/* Calls from outside the namespace do not pass its filter. */
	ASSERT_EQ(0, call(self->fd, 1, 3, 0, 0));
	{
		struct kml_probe_result r;

		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		EXPECT_EQ(3, r.filtered);
	}
}

TEST_F_TIMEOUT(probe, count_only_kprobe, 300)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, KML_PROBE_F_COUNT_ONLY, 0));
	ASSERT_EQ(0, call(self->fd, 1, 50, 1, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(100, r.count);
	EXPECT_EQ(0, r.sum_ns);
	EXPECT_EQ(KML_PROBE_F_COUNT_ONLY, r.flags);
}

TEST_F_TIMEOUT(probe, errors, 300)
{
	struct kml_probe_attach a;
	struct kml_probe_result r;
	struct kml_probe_list l;
	char line[512], sym[256] = "";
	FILE *f;

	EXPECT_EQ(-ENOENT, attach(self->fd, "no_such_function_kmodlab", 0, 0));
	/* A function kprobes refuse: the kernel's own error comes back. */
	f = fopen("/sys/kernel/debug/kprobes/blacklist", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %255s", sym) == 1 && !strchr(sym, '['))
			break;
	fclose(f);
	ASSERT_NE(0, sym[0]);
	EXPECT_EQ(-EINVAL, attach(self->fd, sym, 0, 0)) TH_LOG("blacklisted %s", sym);

	memset(&a, 0, sizeof(a));
	strcpy(a.func, TARGET);
	a.nargs = 7;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.nargs = 0;
	a.flags = 0x100;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.flags = KML_PROBE_F_PID | KML_PROBE_F_TGID;
	a.pid = 1;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.flags = KML_PROBE_F_PID;
	a.pid = 0;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.flags = KML_PROBE_F_ARG;
	a.arg_index = 6;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.flags = KML_PROBE_F_COUNT_ONLY;
	a.nargs = 2;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.flags = 0;
	a.nargs = 0;
	a.maxactive = KML_PROBE_MAXACTIVE_MAX + 1;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.maxactive = 0;
	a.reserved = 1;
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.reserved = 0;
	memset(a.func, 'a', sizeof(a.func));	/* no NUL */
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	a.func[0] = '\0';
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	strcpy(a.func, "bad name");
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	strcpy(a.func, TARGET ".cold");
	EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a)) TH_LOG("not a function entry");
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_ATTACH, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_DETACH, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_GET, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_LIST, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_CALL, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_GET_VERSION, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	memset(&l, 0, sizeof(l));
	l.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 0, 0, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 100001, 0, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 1, 9, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 1, 0, 10000001));
	EXPECT_EQ(-1, ioctl(self->fd, _IO(KML_PROBE_IOC_MAGIC, 0x1f)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-EINVAL, get(self->fd, "", &r));
	/* Nothing was attached by any of that. */
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(0, l.count);
}

/* An ioctl number like @cmd but for a struct of @size bytes. */
static unsigned long resized(unsigned long cmd, size_t size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

/* The extensible-struct rules of kml_ioctl.h, for each struct. */
TEST_F_TIMEOUT(probe, ioctl_struct_sizes, 300)
{
	static union {
		struct kml_probe_attach a;
		struct kml_probe_result r;
		struct kml_probe_list l;
		struct kml_probe_func f;
		struct kml_probe_call c;
		char bytes[4096];
	} u;
	const struct {
		unsigned long cmd;
		size_t size;
	} cmds[] = {
		{ KML_PROBE_IOC_ATTACH, sizeof(struct kml_probe_attach) },
		{ KML_PROBE_IOC_DETACH, sizeof(struct kml_probe_func) },
		{ KML_PROBE_IOC_GET, sizeof(struct kml_probe_result) },
		{ KML_PROBE_IOC_LIST, sizeof(struct kml_probe_list) },
		{ KML_PROBE_IOC_CALL, sizeof(struct kml_probe_call) },
	};
	uint32_t v;

	/* The sizes the ioctl numbers carry are the structs'. */
	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		ASSERT_EQ(cmds[i].size, _IOC_SIZE(cmds[i].cmd));
	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(&u, 0, sizeof(u));
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, resized(cmds[i].cmd, cmds[i].size - 1), &u));
		EXPECT_EQ(EINVAL, errno) TH_LOG("cmd %u: smaller than published", i);
		u.bytes[cmds[i].size + 5] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, resized(cmds[i].cmd, cmds[i].size + 8), &u));
		EXPECT_EQ(E2BIG, errno) TH_LOG("cmd %u: non-zero tail", i);
	}
	/* A larger caller with a zero tail works, and gets its tail zeroed. */
	memset(&u, 0, sizeof(u));
	strcpy(u.a.func, TARGET);
	ASSERT_EQ(0, ioctl(self->fd, resized(KML_PROBE_IOC_ATTACH, sizeof(u.a) + 8), &u));
	memset(&u, 0, sizeof(u));
	u.c.count = 3;
	ASSERT_EQ(0, ioctl(self->fd, resized(KML_PROBE_IOC_CALL, sizeof(u.c) + 8), &u));
	memset(&u, 0, sizeof(u));
	strcpy(u.r.func, TARGET);
	ASSERT_EQ(0, ioctl(self->fd, resized(KML_PROBE_IOC_GET, sizeof(u.r) + 64), &u));
	EXPECT_EQ(3, u.r.count);
	/* Output fields the caller left set are no input: ignored. */
	u.r.count = 99;
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_GET, &u));
	EXPECT_EQ(3, u.r.count);
	memset(&u, 0, sizeof(u));
	ASSERT_EQ(0, ioctl(self->fd, resized(KML_PROBE_IOC_LIST, sizeof(u.l) + 8), &u));
	EXPECT_EQ(1, u.l.count);
	memset(&u, 0, sizeof(u));
	strcpy(u.f.func, TARGET);
	ASSERT_EQ(0, ioctl(self->fd, resized(KML_PROBE_IOC_DETACH, sizeof(u.f) + 8), &u));
	/* Fixed-size commands take no other size. */
	EXPECT_EQ(-1, ioctl(self->fd, resized(KML_PROBE_IOC_GET_VERSION, 8), &u));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOW(KML_PROBE_IOC_MAGIC, 0x15, uint32_t), &v));
	EXPECT_EQ(ENOTTY, errno);
}

/* Functions that exist and can be probed in the test kernel. */
static const char *const candidates[] = {
	"vfs_read", "vfs_write", "ksys_read", "ksys_write", "vfs_open",
	"do_filp_open", "path_openat", "do_sys_openat2", "kernel_clone",
	"do_exit", "vfs_getattr", "vfs_statx", "filp_close", "do_dentry_open",
	"vfs_fstat", "seq_read_iter", "kernel_read", "kernel_write",
	"do_readlinkat", "vfs_readlink", "do_mkdirat", "vfs_unlink",
	"proc_reg_open", "single_open", "seq_open", "vfs_llseek",
};

TEST_F_TIMEOUT(probe, too_many_is_enospc, 300)
{
	unsigned int n = 0, i;

	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]) &&
		    n < KML_PROBE_MAX_FUNCS; i++)
		if (attach(self->fd, candidates[i], 0, 0) == 0)
			n++;
	ASSERT_EQ(KML_PROBE_MAX_FUNCS, n) TH_LOG("not enough probeable candidates");
	EXPECT_EQ(-ENOSPC, attach(self->fd, TARGET, 0, 0));
	/* Detaching one frees its slot. */
	ASSERT_EQ(0, detach(self->fd, candidates[0]) == 0 ? 0 :
		  detach(self->fd, candidates[1]));
	EXPECT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
}

/*
 * What anyone may see: names, counts, histograms. Not the captured
 * arguments and return values (kernel pointers, heap addresses), which
 * every user could read before. Changing anything needs CAP_SYS_ADMIN.
 */
TEST_F_TIMEOUT(probe, unprivileged_sees_no_captured_values, 300)
{
	struct kml_probe_result r;
	pid_t pid;
	int status;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
	ASSERT_EQ(0, call(self->fd, 0xffff888012345678ULL, 5, 1, 1000));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	ASSERT_EQ(0xffff888012345678ULL, r.last_args[0]) TH_LOG("root sees them");
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct kml_probe_list l;
		int fd, i;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(DEV, O_RDONLY);
		if (fd < 0)
			_exit(11);
		if (get(fd, TARGET, &r))	/* results are for everyone */
			_exit(12);
		if (r.count != 10 || !r.sum_ns || r.nargs != 3)
			_exit(13);
		if (!(r.state & KML_PROBE_S_REDACTED))
			_exit(14);
		for (i = 0; i < KML_PROBE_MAX_ARGS; i++)
			if (r.last_args[i])
				_exit(15);
		if (r.last_ret)
			_exit(16);
		/* The root's descriptor, passed on, does not lift that. */
		if (get(self->fd, TARGET, &r) || r.last_args[0] || r.last_ret)
			_exit(17);
		if (list(fd, &l) || l.count != 1)
			_exit(18);
		if (attach(fd, "vfs_read", 0, 0) != -EPERM)
			_exit(19);
		if (detach(fd, TARGET) != -EPERM)
			_exit(20);
		if (ioctl(fd, KML_PROBE_IOC_RESET) != -1 || errno != EPERM)
			_exit(21);
		if (call(fd, 1, 1, 0, 0) != -EPERM)
			_exit(22);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("14-17: captured values shown; 19-22: not EPERM");
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(10, r.count) TH_LOG("nothing changed");
	EXPECT_EQ(0xffff888012345678ULL, r.last_args[0]);
	EXPECT_EQ(0, r.state);
}

/*
 * A probed module unloaded under its probe: the probe is listed gone
 * and counts nothing, even once the module is back; detach and attach
 * again then work. Detaching and re-attaching across an unload and
 * reload used to trip WARN_ON_ONCE in kprobes' reuse_unused_kprobe()
 * (an optimized probe retired lazily outlived its module).
 */
TEST_F_TIMEOUT(probe, probed_module_unloaded_is_gone, 300)
{
	int warnings = kmsg_count("WARNING");
	const struct kml_probe_list_entry *e;
	struct kml_probe_result r;
	struct kml_probe_list l;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 2));
	ASSERT_EQ(0, call(self->fd, 1, 5, 0, 0));
	ASSERT_EQ(0, kml_unload(TARGET));
	EXPECT_EQ(-ENODEV, call(self->fd, 1, 1, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(KML_PROBE_S_GONE, r.state);
	EXPECT_EQ(5, r.count);
	ASSERT_EQ(0, list(self->fd, &l));
	e = listed(&l, TARGET);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(KML_PROBE_S_GONE, e->state);
	ASSERT_EQ(0, kml_load(TARGET_KO, ""));
	ASSERT_EQ(0, call(self->fd, 1, 3, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(KML_PROBE_S_GONE, r.state) TH_LOG("a new module is not the probed one");
	EXPECT_EQ(5, r.count);
	EXPECT_EQ(-EEXIST, attach(self->fd, TARGET, 0, 0)) TH_LOG("still listed");
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 2));
	ASSERT_EQ(0, call(self->fd, 1, 3, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(0, r.state);
	EXPECT_EQ(3, r.count);

	/*
	 * Detach, reload, attach, each kind of probe, a few times. The probe
	 * has lived long enough for kprobes' optimizer to get to it (a few
	 * jiffies); detach and unload follow at once, before the optimizer
	 * could retire it.
	 */
	for (int i = 0; i < 6; i++) {
		unsigned int flags = i % 2 ? KML_PROBE_F_COUNT_ONLY : 0;

		usleep(300000);
		ASSERT_EQ(0, detach(self->fd, TARGET));
		ASSERT_EQ(0, kml_unload(TARGET));
		ASSERT_EQ(0, kml_load(TARGET_KO, ""));
		ASSERT_EQ(0, attach(self->fd, TARGET, flags, 0));
		ASSERT_EQ(0, call(self->fd, 1, 2, 0, 0));
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		EXPECT_EQ(2, r.count);
		EXPECT_EQ(0, r.state);
	}
	/* And the module goes while a count-only probe is on it. */
	ASSERT_EQ(0, kml_unload(TARGET));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(KML_PROBE_S_GONE, r.state);
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, kml_load(TARGET_KO, ""));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	EXPECT_EQ(warnings, kmsg_count("WARNING")) TH_LOG("a kernel WARNING");
}

struct detacher {
	int fd, rounds;
	atomic_int go, done;
	int errors;
};

static void *detach_rounds(void *arg)
{
	struct detacher *d = arg;

	for (int i = 1; i <= d->rounds; i++) {
		while (atomic_load(&d->go) < i)
			if (atomic_load(&d->go) < 0)
				return NULL;
		if (detach(d->fd, TARGET))
			d->errors++;
		atomic_store(&d->done, i);
	}
	return NULL;
}

/*
 * One thread detaches the function while the other attaches it as soon
 * as LIST no longer shows it. Once a function is gone from LIST, its
 * detach is over (slot and stats set are given back together), so that
 * attach must succeed, every round. The old code listed the slot free
 * while the stats set's name was still taken: -EEXIST.
 */
TEST_F_TIMEOUT(probe, attach_right_after_detach_never_eexist, 180)
{
	struct detacher d = { .fd = self->fd, .rounds = 100 };
	struct kml_probe_list l;
	double t0 = now_s();
	int i, ret = 0;
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, detach_rounds, &d));
	for (i = 1; i <= d.rounds && now_s() - t0 < 120; i++) {
		do {
			ret = list(self->fd, &l);
		} while (!ret && listed(&l, TARGET));
		if (ret)
			break;
		ret = attach(self->fd, TARGET, i % 3 == 2 ? KML_PROBE_F_COUNT_ONLY : 0,
			     i % 3 == 1 ? 2 : 0);
		if (ret)
			break;
		atomic_store(&d.go, i);
	}
	if (ret)
		atomic_store(&d.go, -1);
	pthread_join(th, NULL);
	EXPECT_EQ(0, ret) TH_LOG("round %d: attach after LIST lost it: %s", i, strerror(-ret));
	EXPECT_EQ(0, d.errors);
	TH_LOG("%d rounds", i - 1);
	EXPECT_GE(i - 1, 10);
	detach(self->fd, TARGET);
}

/*
 * "foo.cold" is where GCC puts foo's unlikely paths, reached by a jump:
 * a kretprobe there would hijack a return address that is not there.
 */
TEST_F_TIMEOUT(probe, cold_part_is_not_a_function_entry, 300)
{
	char line[512], sym[KML_PROBE_FUNC_LEN] = "";
	FILE *f = fopen("/proc/kallsyms", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		char type, name[256];

		if (sscanf(line, "%*s %c %255s", &type, name) == 2 &&
		    (type == 't' || type == 'T') && strlen(name) < sizeof(sym) &&
		    strlen(name) > 5 && !strcmp(name + strlen(name) - 5, ".cold") &&
		    !strchr(line, '[')) {
			strcpy(sym, name);
			break;
		}
	}
	fclose(f);
	if (!sym[0])
		SKIP(return, "no .cold symbol in this kernel (the host test checks the rule)");
	EXPECT_EQ(-EINVAL, attach(self->fd, sym, 0, 0)) TH_LOG("%s", sym);
	EXPECT_EQ(-EINVAL, attach(self->fd, sym, 0, 2)) TH_LOG("%s", sym);
	EXPECT_EQ(-ENOENT, get(self->fd, sym, &(struct kml_probe_result){ 0 }));
}

static int file_has(const char *path, const char *needle)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = 1;
	fclose(f);
	return found;
}

TEST(rmmod_with_probes_attached)
{
	int fd;

	ASSERT_EQ(0, reload_probe());
	fd = open(DEV, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, attach(fd, TARGET, 0, 2));
	ASSERT_EQ(0, attach(fd, "vfs_read", 0, 0));
	ASSERT_EQ(0, attach(fd, "ksys_write", KML_PROBE_F_COUNT_ONLY, 0));
	EXPECT_EQ(1, file_has("/sys/kernel/debug/kprobes/list", "vfs_read"));
	EXPECT_EQ(1, file_has("/proc/kmodlab/stats", "kp.vfs_read "));
	close(fd);
	/* Probes outlive the file; module exit must remove every one. */
	ASSERT_EQ(0, kml_unload("kml_probe"));
	EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", "vfs_read"));
	EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", "ksys_write"));
	EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", TARGET));
	EXPECT_EQ(0, file_has("/proc/kmodlab/stats", "kp."));
	ASSERT_EQ(0, reload_probe());
}

/*
 * Names the checks pass that name no function: a part other than
 * ".cold", a count-only probe on a ".cold" part, a name too long for its
 * own stats set. kprobes finds no such symbol; nothing is attached.
 */
TEST_F_TIMEOUT(probe, names_that_pass_the_checks_but_name_nothing, 300)
{
	static const char *const names[] = {
		TARGET ".coldx", TARGET ".cold_", TARGET ".col",
		"kmodlab_no_such_function_with_a_long_name",
	};
	struct kml_probe_list l;
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		EXPECT_EQ(-ENOENT, attach(self->fd, names[i], 0, 0)) TH_LOG("%s", names[i]);
	}
	EXPECT_EQ(-ENOENT, attach(self->fd, TARGET ".cold", KML_PROBE_F_COUNT_ONLY, 0));
	/* A cold part anywhere but first is still a cold part. */
	EXPECT_EQ(-EINVAL, attach(self->fd, TARGET ".cold.1", 0, 0));
	EXPECT_EQ(-EINVAL, attach(self->fd, TARGET ".isra.0.cold", 0, 0));
	/* A count-only probe has no instances to size. */
	{
		struct kml_probe_attach a = {
			.func = TARGET, .flags = KML_PROBE_F_COUNT_ONLY, .maxactive = 4,
		};

		EXPECT_EQ(-EINVAL, attach_cfg(self->fd, &a));
	}
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(0, l.count);
	EXPECT_EQ(0, file_has("/proc/kmodlab/stats", "kp."));
}

/*
 * "module:function" names a module's function: kprobes looks it up in
 * that module only. A ':' is no stats name, so the set is named after
 * the slot.
 */
TEST_F_TIMEOUT(probe, module_qualified_name, 300)
{
	const char *name = TARGET ":" TARGET;
	struct kml_probe_result r;
	struct kml_probe_list l;

	ASSERT_EQ(0, attach(self->fd, name, 0, 1));
	ASSERT_EQ(0, list(self->fd, &l));
	ASSERT_EQ(1, l.count);
	EXPECT_STREQ(name, l.funcs[0].func);
	EXPECT_EQ(1, file_has("/proc/kmodlab/stats", "kp.slot0 "));
	ASSERT_EQ(0, call(self->fd, 7, 4, 0, 0));
	ASSERT_EQ(0, get(self->fd, name, &r));
	EXPECT_EQ(4, r.count);
	EXPECT_EQ(7, r.last_args[0]);
	EXPECT_EQ(7, r.last_ret);
	/* The same function by its plain name is another probe. */
	EXPECT_EQ(-ENOENT, get(self->fd, TARGET, &r));
	ASSERT_EQ(0, detach(self->fd, name));
	EXPECT_EQ(0, file_has("/proc/kmodlab/stats", "kp.slot0 "));
}

/* A count-only probe filters too: what it rejects is not counted. */
TEST_F_TIMEOUT(probe, count_only_probe_filters, 300)
{
	struct kml_probe_attach a = {
		.func = TARGET, .flags = KML_PROBE_F_COUNT_ONLY | KML_PROBE_F_ARG,
		.arg_index = 0, .arg_value = 42,
	};
	struct kml_probe_result r;

	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, call(self->fd, 7, 3, 0, 0));
	ASSERT_EQ(0, call(self->fd, 42, 2, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(2, r.count);
	EXPECT_EQ(3, r.filtered);
}

/* DETACH checks its name as ATTACH does, and detaches nothing. */
TEST_F_TIMEOUT(probe, detach_bad_name, 300)
{
	struct kml_probe_func fn;
	struct kml_probe_list l;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	EXPECT_EQ(-EINVAL, detach(self->fd, "bad name"));
	EXPECT_EQ(-EINVAL, detach(self->fd, ""));
	memset(&fn, 'a', sizeof(fn));		/* no NUL */
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_DETACH, &fn));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(1, l.count);
}

/*
 * A long CALL ends at a fatal signal rather than run its course: the
 * count of calls the probe saw stops well short of what was asked.
 */
TEST_F_TIMEOUT(probe, call_ends_at_a_fatal_signal, 300)
{
	struct kml_probe_result r;
	int status;
	uint64_t n;
	pid_t pid;
	double end;

	ASSERT_EQ(0, attach(self->fd, TARGET, KML_PROBE_F_COUNT_ONLY, 0));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(call(self->fd, 1, 100000, 0, 1000000) ? 1 : 0);	/* 100 s */
	/* Killed once it is under way. */
	for (end = now_s() + 120; now_s() < end; usleep(1000)) {
		ASSERT_EQ(0, get(self->fd, TARGET, &r));
		if (r.count)
			break;
	}
	ASSERT_LT(0, r.count);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	n = r.count;
	EXPECT_LT(n, 100000);
	/* And it is over: no call after the kill. */
	usleep(100000);
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(n, r.count);
}

/*
 * A module's unload marks gone only the probes in it: a probe on a
 * function of the core kernel stays live.
 */
TEST_F_TIMEOUT(probe, unload_marks_only_its_own_probes_gone, 300)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, attach(self->fd, "do_readlinkat", KML_PROBE_F_COUNT_ONLY, 0));
	ASSERT_EQ(0, kml_unload(TARGET));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(KML_PROBE_S_GONE, r.state);
	ASSERT_EQ(0, get(self->fd, "do_readlinkat", &r));
	EXPECT_EQ(0, r.state);
	/* And it still counts. */
	{
		char buf[64];
		uint64_t n = r.count;

		EXPECT_LT(0, readlink("/proc/self/exe", buf, sizeof(buf)));
		ASSERT_EQ(0, get(self->fd, "do_readlinkat", &r));
		EXPECT_LT(n, r.count);
	}
	ASSERT_EQ(0, detach(self->fd, "do_readlinkat"));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, kml_load(TARGET_KO, ""));
}

/*
 * A fired failure must end in a clean error, or, when the core absorbed
 * it (kprobes' optional optimization slot, a uevent, gcov's bookkeeping
 * in a coverage build), in a success that is complete. The walks count
 * both; the second kind is then checked and undone.
 */
struct walk {
	int injected, errors, absorbed;
};

static void walk_log(struct __test_metadata *_metadata, const char *what,
		     const struct walk *w)
{
	TH_LOG("%s: %d allocation failures injected: %d clean errors, %d absorbed by the core",
	       what, w->injected, w->errors, w->absorbed);
}

/* The probe on TARGET is attached, listed, published and counting. */
static void check_probe_works(struct __test_metadata *_metadata, int fd)
{
	struct kml_probe_result r0, r;
	struct kml_probe_list l;

	ASSERT_EQ(0, list(fd, &l));
	EXPECT_EQ(1, l.count);
	EXPECT_EQ(1, file_has("/proc/kmodlab/stats", "kp." TARGET " "));
	ASSERT_EQ(0, get(fd, TARGET, &r0));
	ASSERT_EQ(0, call(fd, 3, 5, 0, 0));
	ASSERT_EQ(0, get(fd, TARGET, &r));
	EXPECT_EQ(r0.count + 5, r.count);
}

#define FAULT_INIT(f) do {						\
	int ret_ = kml_fault_init(f);					\
									\
	if (ret_)							\
		SKIP(return, "no fault injection: %s", strerror(-ret_));	\
} while (0)

/*
 * ATTACH allocates the probe, its per-CPU minima, its stats set, the
 * kprobe's instruction slot and instances, the module check's buffer and
 * the guard probe. Each failure leaves nothing attached: not listed, no
 * stats set, no kprobe, and the next attempt does not find the name
 * taken. Each kind of probe, with and without a task filter.
 */
TEST_F_TIMEOUT(probe, fault_walk_attach, 300)
{
	struct kml_probe_attach cfgs[] = {
		{ .func = TARGET, .nargs = 2 },
		{ .func = TARGET, .flags = KML_PROBE_F_COUNT_ONLY },
		{ .func = TARGET, .flags = KML_PROBE_F_PID, .pid = getpid(), .maxactive = 4 },
	};
	struct kml_probe_list l;
	struct kml_fault f;
	unsigned int i;

	FAULT_INIT(&f);
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct walk w = { 0 };
		char what[32];
		int n, ret = -1;

		for (n = 1; n <= KML_FAULT_MAX; n++) {
			struct kml_probe_attach a = cfgs[i];

			ASSERT_EQ(0, kml_fault_arm(&f, n));
			ret = attach_cfg(self->fd, &a);
			if (!kml_fault_fired(&f))
				break;
			w.injected++;
			if (!ret) {
				w.absorbed++;
				check_probe_works(_metadata, self->fd);
				ASSERT_EQ(0, detach(self->fd, TARGET));
				continue;
			}
			w.errors++;
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("probe %u, allocation %d", i, n);
			ASSERT_EQ(0, list(self->fd, &l));
			EXPECT_EQ(0, l.count) TH_LOG("probe %u, allocation %d", i, n);
			EXPECT_EQ(0, file_has("/proc/kmodlab/stats", "kp."))
				TH_LOG("probe %u, allocation %d", i, n);
			EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", TARGET))
				TH_LOG("probe %u, allocation %d", i, n);
		}
		snprintf(what, sizeof(what), "ATTACH %u", i);
		walk_log(_metadata, what, &w);
		ASSERT_EQ(0, ret) TH_LOG("probe %u", i);
		EXPECT_GT(w.errors, 0);
		check_probe_works(_metadata, self->fd);
		ASSERT_EQ(0, detach(self->fd, TARGET));
		EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", TARGET));
	}
	kml_fault_exit(&f);
}

/*
 * GET and LIST allocate their results: a failure returns nothing. A
 * failure SLUB absorbs (a new slab page of a smaller order after the
 * preferred one failed) must give the whole answer.
 */
TEST_F_TIMEOUT(probe, fault_walk_get_and_list, 300)
{
	struct kml_probe_result r, r0;
	struct kml_probe_list l;
	struct walk wg = { 0 }, wl = { 0 };
	struct kml_fault f;
	int n, ret = -1;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 1));
	ASSERT_EQ(0, call(self->fd, 5, 3, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r0));
	FAULT_INIT(&f);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		memset(&r, 0x5a, sizeof(r));
		strcpy(r.func, TARGET);
		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = ioctl(self->fd, KML_PROBE_IOC_GET, &r) ? -errno : 0;
		if (!kml_fault_fired(&f))
			break;
		wg.injected++;
		if (!ret) {
			wg.absorbed++;
			EXPECT_EQ(r0.count, r.count) TH_LOG("allocation %d", n);
			continue;
		}
		wg.errors++;
		EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d", n);
		EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, r.count) TH_LOG("written after a failure");
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(r0.count, r.count);
	EXPECT_EQ(r0.sum_ns, r.sum_ns);
	EXPECT_EQ(5, r.last_args[0]);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		memset(&l, 0, sizeof(l));
		l.count = 99;
		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = ioctl(self->fd, KML_PROBE_IOC_LIST, &l) ? -errno : 0;
		if (!kml_fault_fired(&f))
			break;
		wl.injected++;
		if (!ret) {
			wl.absorbed++;
			EXPECT_EQ(1, l.count) TH_LOG("allocation %d", n);
			continue;
		}
		wl.errors++;
		EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d", n);
		EXPECT_EQ(99, l.count) TH_LOG("written after a failure");
	}
	kml_fault_exit(&f);
	walk_log(_metadata, "GET", &wg);
	walk_log(_metadata, "LIST", &wl);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, l.count);
	EXPECT_GT(wg.errors, 0);
	EXPECT_GT(wl.errors, 0);
}

/*
 * The module-load walk runs under an empty fixture only to get a
 * timeout: TEST() has the harness's 30 s, and the walk makes a hundred
 * finit_module() calls, each failure printing its report on a console
 * that is slow on an emulated or loaded machine.
 */
FIXTURE(walk) {};
FIXTURE_SETUP(walk) {}
FIXTURE_TEARDOWN(walk) {}

/*
 * finit_module(): what kml_probe_init() allocates, itself or through the
 * kernel. A
 * failed load leaves no module, no device, and its module notifier is
 * not left registered (the next load would find the chain corrupt).
 */
TEST_F_TIMEOUT(walk, module_load, 900)
{
	int n, ko, fd, ret = -1;
	struct walk w = { 0 };
	struct kml_fault f;

	ASSERT_EQ(0, kml_unload("kml_probe"));
	ASSERT_EQ(0, kml_load_once("modules/kml_stats/kml_stats.ko", ""));
	ASSERT_EQ(0, kml_load_once(TARGET_KO, ""));
	ko = open(kml_ko_path("modules/kml_probe/kml_probe.ko"), O_RDONLY | O_CLOEXEC);
	ASSERT_GE(ko, 0);
	FAULT_INIT(&f);
	KML_FAULT_RANGE_OR_ALL(kml_fault_modules_only(&f));
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = syscall(SYS_finit_module, ko, "", 0) ? -errno : 0;
		if (!kml_fault_fired(&f))
			break;
		w.injected++;
		if (!ret) {
			w.absorbed++;
			fd = open(DEV, O_RDWR | O_CLOEXEC);
			ASSERT_GE(fd, 0);
			ASSERT_EQ(0, attach(fd, TARGET, 0, 0));
			check_probe_works(_metadata, fd);
			close(fd);
			/* The probe outlives the file: the unload removes it. */
			ASSERT_EQ(0, kml_unload("kml_probe"));
			EXPECT_EQ(0, file_has("/sys/kernel/debug/kprobes/list", TARGET));
			continue;
		}
		w.errors++;
		EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d: %s", n, strerror(-ret));
		EXPECT_NE(0, access("/sys/module/kml_probe", F_OK)) TH_LOG("allocation %d", n);
		EXPECT_NE(0, access(DEV, F_OK)) TH_LOG("allocation %d", n);
	}
	kml_fault_exit(&f);
	close(ko);
	walk_log(_metadata, "module load", &w);
	ASSERT_EQ(0, ret);
	EXPECT_GT(w.errors, 0);
	/* It works: a probe on a module function. */
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, attach(fd, TARGET, 0, 0));
	check_probe_works(_metadata, fd);
	ASSERT_EQ(0, detach(fd, TARGET));
	close(fd);
	ASSERT_EQ(0, reload_probe());
}

/* ---- the client ---- */

#define CLIENT(fmt, ...) KML_CLIENT("kml-probe", fmt, ##__VA_ARGS__)

TEST_F_TIMEOUT(probe, client, 300)
{
	char cmd[4300], out[16384];
	int i;

	EXPECT_EQ(0, CLIENT("attach " TARGET " --args 2")) TH_LOG("%s", out);
	/* output it cannot write: an error, for a list and a histogram */
	EXPECT_EQ(1, KML_CLIENT_FULL("kml-probe", "list"));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);
	EXPECT_EQ(1, KML_CLIENT_FULL("kml-probe", "hist " TARGET));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);
	/* At least one of 20 300-us calls lands in its bucket; else more. */
	for (i = 0; i < 50; i++) {
		EXPECT_EQ(0, CLIENT("call 20 300"));
		EXPECT_EQ(0, CLIENT("hist " TARGET));
		if (strstr(out, "262144 -> 524287"))
			break;
	}
	EXPECT_NE(NULL, strstr(out, "nsecs")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "262144 -> 524287")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "|****")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "last call: (0x2a, 0)")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("--json list"));
	EXPECT_NE(NULL, strstr(out, "\"func\":\"" TARGET "\",\"count\":")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"gone\":false}")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("list"));
	EXPECT_NE(NULL, strstr(out, "FUNCTION")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "attached")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("--json hist " TARGET " -w 1"));
	EXPECT_NE(NULL, strstr(out, "\"count\":0,")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("reset"));
	EXPECT_EQ(0, CLIENT("detach " TARGET));
	EXPECT_EQ(1, CLIENT("attach no_such_function_kmodlab"));
	EXPECT_NE(NULL, strstr(out, "no such kernel function")) TH_LOG("%s", out);
	EXPECT_EQ(1, CLIENT("detach " TARGET));
	EXPECT_NE(NULL, strstr(out, "is not attached")) TH_LOG("%s", out);
	EXPECT_EQ(2, CLIENT("attach " TARGET " --args 9"));	/* usage error */
	EXPECT_EQ(1, CLIENT("attach " TARGET " --pid 1073741807"));
	EXPECT_NE(NULL, strstr(out, "no such process")) TH_LOG("%s", out);
	EXPECT_EQ(2, CLIENT("bogus"));
	{
		const char *bin = getenv("KMODLAB_BIN");

		EXPECT_EQ(0, CLIENT("attach " TARGET " --args 1"));
		EXPECT_EQ(0, CLIENT("call 1 0"));
		snprintf(cmd, sizeof(cmd),
			 "setpriv --reuid=65534 --regid=65534 --clear-groups %s/kml-probe attach vfs_read 2>&1",
			 bin);
		EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "needs root")) TH_LOG("%s", out);
		snprintf(cmd, sizeof(cmd),
			 "setpriv --reuid=65534 --regid=65534 --clear-groups %s/kml-probe hist %s 2>&1",
			 bin, TARGET);
		EXPECT_EQ(0, kml_run(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "arguments hidden")) TH_LOG("%s", out);
		EXPECT_EQ(0, kml_unload(TARGET));
		EXPECT_EQ(0, CLIENT("list"));
		EXPECT_NE(NULL, strstr(out, "gone")) TH_LOG("%s", out);
		EXPECT_EQ(1, CLIENT("call 1 0"));
		EXPECT_NE(NULL, strstr(out, "not loaded")) TH_LOG("%s", out);
		EXPECT_EQ(0, CLIENT("detach " TARGET));
		EXPECT_EQ(0, kml_load(TARGET_KO, ""));
	}
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_probe"));
	EXPECT_EQ(1, CLIENT("list"));
	EXPECT_NE(NULL, strstr(out, "kml_probe is not loaded")) TH_LOG("%s", out);
}

/* ---- probes in code other CPUs run: a one-TCG-thread guest only ---- */

FIXTURE(probe_text) {
	int fd;
};

FIXTURE_SETUP(probe_text)
{
	ASSERT_EQ(0, reload_probe());
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(probe_text)
{
	if (self->fd >= 0)
		close(self->fd);
}

struct racer {
	int fd, cpu;
	atomic_int stop;
	unsigned long calls, errors;
};

static void *call_loop(void *arg)
{
	struct racer *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load(&r->stop)) {
		if (call(r->fd, 1, 20, 1, 0))
			r->errors++;
		r->calls++;
	}
	return NULL;
}

TEST_F_TIMEOUT(probe_text, attach_detach_races_calls_on_both_cpus, 300)
{
	struct racer r[2] = { { .fd = self->fd, .cpu = 0 }, { .fd = self->fd, .cpu = 1 } };
	unsigned long cycles = 0;
	pthread_t th[2];
	double t0;
	int i;

	ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, call_loop, &r[i]));
	t0 = now_s();
	/* 20 cycles with both callers busy, however long that takes (< 240 s). */
	do {
		/* kretprobe, kretprobe with arguments, plain kprobe, in turn */
		unsigned int kind = cycles % 3;

		ASSERT_EQ(0, attach(self->fd, TARGET, kind == 2 ? KML_PROBE_F_COUNT_ONLY : 0,
				    kind == 1 ? 2 : 0));
		usleep(1000);
		ASSERT_EQ(0, detach(self->fd, TARGET));
		cycles++;
	} while ((cycles < 20 || !r[0].calls || !r[1].calls) && now_s() - t0 < 240);
	for (i = 0; i < 2; i++) {
		atomic_store(&r[i].stop, 1);
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, r[i].errors);
		EXPECT_GT(r[i].calls, 0);
	}
	TH_LOG("%lu attach/detach cycles, %lu + %lu batches of calls", cycles,
	       r[0].calls, r[1].calls);
	EXPECT_GE(cycles, 20);
}

static void *load_initwait(void *arg)
{
	*(int *)arg = kml_load("modules/tests/kml_initwait.ko", "");
	return NULL;
}

/*
 * A probe in a module's init text, planted while the init runs: once the
 * module is live its init text is freed and kprobes retires the probe,
 * so it must be listed gone, as for an unloaded module, not live and
 * counting nothing for ever. (Here: the probe text runs on the loading
 * CPU while this one patches it, so one TCG thread.)
 */
TEST_F_TIMEOUT(probe_text, probe_in_init_text_is_gone_once_live, 300)
{
	const char *release = "/sys/module/kml_initwait/parameters/release";
	const char *fn = "kml_initwait_tick";
	struct kml_probe_result r = { 0 };
	int loaded = 1, attached, i, fd;
	pthread_t th;

	kml_unload("kml_initwait");
	ASSERT_EQ(0, pthread_create(&th, NULL, load_initwait, &loaded));
	/* its parameters are in sysfs while the init runs */
	for (i = 0; i < 3000 && access(release, W_OK); i++)
		usleep(10000);
	attached = attach(self->fd, fn, KML_PROBE_F_COUNT_ONLY, 0);
	for (i = 0; !attached && i < 3000 && !r.count; i++) {
		if (get(self->fd, fn, &r))
			break;
		usleep(10000);
	}
	/* let the init return, whatever happened above */
	fd = open(release, O_WRONLY | O_CLOEXEC);
	EXPECT_LE(0, fd) TH_LOG("kml_initwait did not start loading");
	EXPECT_EQ(1, write(fd, "1", 1));
	close(fd);
	pthread_join(th, NULL);
	ASSERT_EQ(0, loaded);
	ASSERT_EQ(0, attached) TH_LOG("attach to %s in init text: %s", fn, strerror(-attached));
	EXPECT_LT(0, r.count) TH_LOG("the probe in init text never counted");
	EXPECT_EQ(0, r.state) TH_LOG("gone while the init still ran");
	ASSERT_EQ(0, get(self->fd, fn, &r));
	EXPECT_EQ(KML_PROBE_S_GONE, r.state)
		TH_LOG("the module is live and its init text freed: the probe is gone");
	ASSERT_EQ(0, detach(self->fd, fn));
	EXPECT_EQ(0, kml_unload("kml_initwait"));
}

/*
 * Probing, with arguments, a function GET's own path calls: the old GET
 * took the probe's spinlock (raw_spin_lock_irqsave) to copy the last
 * arguments out, the probed function returned inside that section, and
 * the return handler spun on the lock its own CPU held: a hard lock-up
 * (seen: the guest hung; with the old module this test never returns).
 * Handlers now only trylock, and GET reads through a seqcount.
 */
TEST_F_TIMEOUT(probe_text, get_while_probing_its_own_path, 300)
{
	static const char *const funcs[] = {
		"_raw_spin_lock_irqsave", "_raw_spin_unlock_irqrestore",
		"_raw_spin_trylock", "kml_stats_hist_read", "kml_stats_read",
	};
	const unsigned int n = sizeof(funcs) / sizeof(funcs[0]);
	struct kml_probe_result r;
	struct kml_probe_list l;
	double t0 = now_s();
	unsigned int i, gets = 0;
	uint64_t seen = 0;

	ASSERT_EQ(0, attach(self->fd, funcs[0], 0, 3)) TH_LOG("%s", funcs[0]);
	for (i = 1; i < n; i++) {
		int ret = attach(self->fd, funcs[i], 0, 2);

		/* Some may be inlined or on the blacklist in this kernel. */
		if (ret)
			TH_LOG("%s: %s, not probed", funcs[i], strerror(-ret));
	}
	/* 200 reads, and the lock's probe seen counting, within 240 s. */
	do {
		for (i = 0; i < n; i++) {
			int ret = get(self->fd, funcs[i], &r);

			ASSERT_TRUE(ret == 0 || ret == -ENOENT) TH_LOG("%s", funcs[i]);
			if (!ret && i == 0)
				seen = r.count;
		}
		ASSERT_EQ(0, list(self->fd, &l));
		gets++;
	} while ((gets < 200 || !seen) && now_s() - t0 < 240);
	TH_LOG("%u rounds of GET; %s: %llu calls, %llu missed, %llu lost",
	       gets, funcs[0], (unsigned long long)seen,
	       (unsigned long long)r.nmissed, (unsigned long long)r.last_lost);
	EXPECT_GT(seen, 0);
	EXPECT_GE(gets, 200);
	/* RESET takes the handlers' lock from process context: also safe. */
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	ASSERT_EQ(0, write_file("/proc/kmodlab/control", "reset\n"));
	for (i = 0; i < n; i++)
		detach(self->fd, funcs[i]);
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_EQ(0, l.count);
}

/*
 * ---- tracepoint kml_probe:call, read back through a trace instance of
 * the test's own (../kml_trace.h) ----
 *
 * The test process is pinned to CPU 0 and is the only caller of what it
 * probes: every event lands in one per-CPU buffer, in the order the calls
 * returned, and no probe is planted in text another vCPU runs meanwhile
 * (so, like fixture probe and unlike probe_text, they need no
 * one-TCG-thread guest).
 */
#define CHECK_CALL	"kml_probe_check_call"	/* once per CALL ioctl, returns 0 */

FIXTURE(trace) {
	int fd;
	struct kml_trace t;
	struct kml_trace all;	/* a second instance, for a test that compares */
};

FIXTURE_SETUP(trace)
{
	char name[64];
	cpu_set_t set;
	int ret;

	self->fd = -1;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ASSERT_EQ(0, reload_probe());
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
	snprintf(name, sizeof(name), "kml_probe_test_%d", getpid());
	ret = kml_trace_open(&self->t, name);
	if (ret == -ENODEV)
		SKIP(return, "kernel without tracing (no " KML_TRACEFS ")");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(trace)
{
	EXPECT_EQ(0, kml_trace_close(&self->all));
	EXPECT_EQ(0, kml_trace_close(&self->t));
	if (self->fd >= 0)
		close(self->fd);
}

/* One kml_probe:call event, as the trace file prints it. */
struct call_ev {
	char func[KML_PROBE_FUNC_LEN];
	char args[160];		/* "{0x1,0x2}" */
	long long duration_ns, ret, nargs;
};

/* The @nth call event of @text: 0, -ENOENT if there are fewer, or -EINVAL. */
static int call_ev(const char *text, int nth, struct call_ev *e)
{
	const char *line = kml_trace_line(text, "call", nth);

	if (!line)
		return -ENOENT;
	if (kml_trace_str(line, "func", e->func, sizeof(e->func)) ||
	    kml_trace_str(line, "args", e->args, sizeof(e->args)) ||
	    kml_trace_field(line, "duration_ns", &e->duration_ns) ||
	    kml_trace_field(line, "ret", &e->ret) ||
	    kml_trace_field(line, "nargs", &e->nargs))
		return -EINVAL;
	return 0;
}

/* @n values as the event prints its args: "{0x3e8,0x0}". */
static const char *args_str(char *buf, size_t len, const uint64_t *a,
			    unsigned int n)
{
	size_t used = snprintf(buf, len, "{");

	for (unsigned int i = 0; i < n && used < len; i++)
		used += snprintf(buf + used, len - used, "%s0x%llx", i ? "," : "",
				 (unsigned long long)a[i]);
	if (used < len)
		snprintf(buf + used, len - used, "}");
	return buf;
}

TEST_F_TIMEOUT(trace, call_fields, 300)
{
	/* Arguments tell the calls apart; the last one nests twice. */
	static const struct {
		uint64_t arg, delay;
		uint32_t depth;
	} calls[] = {
		{ 1000, 300000, 0 }, { 2000, 100000, 0 }, { 3000, 200000, 0 },
		{ 4000, 100000, 2 },
	};
	const unsigned int ncalls = ARRAY_SIZE(calls);
	uint64_t sum = 0, min = UINT64_MAX, max = 0, ns, a[3] = { 0 };
	double t0, window_ns[ARRAY_SIZE(calls)];
	struct kml_probe_result r;
	unsigned int n = 0;
	struct call_ev e;
	char want[160];
	char *text;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	for (unsigned int i = 0; i < ncalls; i++) {
		t0 = now_s();
		ASSERT_EQ(0, call(self->fd, calls[i].arg, 1, calls[i].depth, calls[i].delay));
		window_ns[i] = (now_s() - t0) * 1e9;
	}
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);

	/*
	 * One event per call, at its return: a nest's innermost call
	 * (depth argument 0) first. Each lasts at least its busy-waits and
	 * at most the caller's whole CALL (the same monotonic clock).
	 */
	for (unsigned int i = 0; i < ncalls; i++) {
		for (uint32_t d = 0; d <= calls[i].depth; d++, n++) {
			a[0] = calls[i].arg;
			a[1] = d;
			a[2] = calls[i].delay;
			ASSERT_EQ(0, call_ev(text, n, &e)) TH_LOG("event %u in:\n%s", n, text);
			EXPECT_STREQ(TARGET, e.func);
			EXPECT_EQ(3, e.nargs);
			EXPECT_STREQ(args_str(want, sizeof(want), a, 3), e.args);
			EXPECT_EQ(calls[i].arg + d, (uint64_t)e.ret);
			EXPECT_GE((uint64_t)e.duration_ns, (d + 1) * calls[i].delay)
				TH_LOG("event %u: shorter than its busy-waits", n);
			/* 1 us of slack for the double's rounding, none for the clock. */
			EXPECT_LE((double)e.duration_ns, window_ns[i] + 1000)
				TH_LOG("event %u: %lld ns, longer than its CALL (%.0f ns)",
				       n, e.duration_ns, window_ns[i]);
			ns = e.duration_ns;
			sum += ns;
			min = ns < min ? ns : min;
			max = ns > max ? ns : max;
		}
	}
	EXPECT_EQ(-ENOENT, call_ev(text, n, &e)) TH_LOG("more events than calls:\n%s", text);

	/* The very calls GET counts, to the nanosecond. */
	EXPECT_EQ(6, n);
	EXPECT_EQ(n, r.count);
	EXPECT_EQ(0, r.nmissed);
	EXPECT_EQ(sum, r.sum_ns);
	EXPECT_EQ(min, r.min_ns);
	EXPECT_EQ(max, r.max_ns);
	/* The outermost call of the nest returned last: GET's last call. */
	EXPECT_EQ(a[0], r.last_args[0]);
	EXPECT_EQ(a[1], r.last_args[1]);
	EXPECT_EQ(a[2], r.last_args[2]);
	EXPECT_EQ(calls[ncalls - 1].arg + calls[ncalls - 1].depth, r.last_ret);
	free(text);
}

TEST_F_TIMEOUT(trace, filter_on_func_and_ret, 300)
{
	unsigned int got2000 = 0, got2001 = 0, got2999 = 0;
	struct kml_probe_result r;
	struct call_ev e;
	char *text;
	int n;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 1));
	ASSERT_EQ(0, attach(self->fd, CHECK_CALL, 0, 0));
	/*
	 * A field the event does not have is refused (first: a refused
	 * filter replaces the one before it, and filters nothing).
	 */
	EXPECT_EQ(-EINVAL, kml_trace_set(&self->t, "events/kml_probe/call/filter",
					 "latency_ns > 3"));
	/* The kernel evaluates the filter before anything is recorded. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/filter",
				   "func == \"" TARGET "\" && ret >= 2000 && ret < 3000"));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	ASSERT_EQ(0, call(self->fd, 1000, 2, 1, 0));	/* ret 1000, 1001: out */
	ASSERT_EQ(0, call(self->fd, 2000, 3, 1, 0));	/* ret 2000, 2001: in */
	ASSERT_EQ(0, call(self->fd, 2999, 1, 1, 0));	/* ret 2999 in, 3000 out */
	ASSERT_EQ(0, call(self->fd, 3000, 1, 0, 0));	/* ret 3000: out */
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(7, kml_trace_count(text, "call")) TH_LOG("%s", text);
	for (n = 0; !call_ev(text, n, &e); n++) {
		EXPECT_STREQ(TARGET, e.func);
		if (e.ret == 2000 || e.ret == 2001) {
			EXPECT_STREQ("{0x7d0}", e.args);	/* 2000 */
			got2000 += e.ret == 2000;
			got2001 += e.ret == 2001;
		} else {
			EXPECT_EQ(2999, e.ret);
			EXPECT_STREQ("{0xbb7}", e.args);	/* 2999 */
			got2999++;
		}
	}
	EXPECT_EQ(3, got2000);
	EXPECT_EQ(3, got2001);
	EXPECT_EQ(1, got2999);
	free(text);
	/* Measured all the same: the filter only keeps them out of the trace. */
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(13, r.count);
	ASSERT_EQ(0, get(self->fd, CHECK_CALL, &r));
	EXPECT_EQ(4, r.count);

	/* A glob on the name picks the other probe alone. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/filter",
				   "func ~ \"kml_probe_check_*\""));
	ASSERT_EQ(0, kml_trace_clear(&self->t));
	ASSERT_EQ(0, call(self->fd, 5, 2, 1, 0));
	ASSERT_EQ(0, call(self->fd, 6, 1, 0, 0));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(2, kml_trace_count(text, "call")) TH_LOG("%s", text);
	for (n = 0; !call_ev(text, n, &e); n++) {
		EXPECT_STREQ(CHECK_CALL, e.func);
		EXPECT_EQ(0, e.nargs);
		EXPECT_STREQ("{}", e.args);
		EXPECT_EQ(0, e.ret);
	}
	free(text);
}

/*
 * A filter on the duration, checked against a second, unfiltered
 * instance that saw the same calls: it keeps exactly the events at or
 * above the threshold, whatever the host's speed made of the short calls,
 * and the long ones (a 2 ms busy-wait, never shorter) are always there.
 */
TEST_F_TIMEOUT(trace, filter_on_duration_agrees_with_an_unfiltered_trace, 300)
{
	const long long threshold = 1000000, long_delay = 2000000;
	struct call_ev e, f;
	char name[64], want[32];
	char *all, *text;
	int kept = 0, i;

	snprintf(name, sizeof(name), "kml_probe_test_%d_all", getpid());
	ASSERT_EQ(0, kml_trace_open(&self->all, name));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 1));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/filter",
				   "duration_ns >= 1000000"));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	ASSERT_EQ(0, kml_trace_set(&self->all, "events/kml_probe/call/enable", "1"));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, call(self->fd, i, 1, 0, i % 2 ? long_delay : 0));
	all = kml_trace_get(&self->all, "trace");
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, all);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(10, kml_trace_count(all, "call")) TH_LOG("%s", all);
	for (i = 0; i < 10; i++) {
		uint64_t a = i;

		ASSERT_EQ(0, call_ev(all, i, &e));
		EXPECT_STREQ(args_str(want, sizeof(want), &a, 1), e.args);
		if (i % 2)
			EXPECT_GE(e.duration_ns, long_delay);
		if (e.duration_ns < threshold)
			continue;
		/* The same event, in the same order. */
		ASSERT_EQ(0, call_ev(text, kept, &f)) TH_LOG("event %d missing:\n%s", i, text);
		EXPECT_STREQ(e.args, f.args);
		EXPECT_EQ(e.duration_ns, f.duration_ns);
		EXPECT_EQ(e.ret, f.ret);
		kept++;
	}
	EXPECT_GE(kept, 5);
	EXPECT_EQ(kept, kml_trace_count(text, "call")) TH_LOG("%s", text);
	free(all);
	free(text);
}

TEST_F_TIMEOUT(trace, hist_trigger_counts_calls, 300)
{
	unsigned long long hits[2] = { 0, 0 }, sums[2] = { 0, 0 };
	struct kml_probe_result r[2];
	char func[KML_PROBE_FUNC_LEN];
	unsigned int seen = 0;
	const char *p;
	char *hist;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, attach(self->fd, CHECK_CALL, 0, 0));
	/* Needs CONFIG_HIST_TRIGGERS; the event need not be enabled. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/trigger",
				   "hist:keys=func:vals=hitcount,duration_ns:sort=func"));
	/* 3 CALLs of 4 calls nesting once: 24 target calls, 3 checks. */
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, call(self->fd, 1, 4, 1, 1000));
	ASSERT_EQ(0, get(self->fd, TARGET, &r[0]));
	ASSERT_EQ(0, get(self->fd, CHECK_CALL, &r[1]));
	hist = kml_trace_get(&self->t, "events/kml_probe/call/hist");
	ASSERT_NE(NULL, hist);
	for (p = hist; (p = strstr(p, "{ func:")); p++) {
		unsigned long long h, s;
		int k, got;

		got = sscanf(p, "{ func: %127s } hitcount: %llu duration_ns: %llu",
			     func, &h, &s);
		ASSERT_EQ(3, got) TH_LOG("%s", hist);
		k = !strcmp(func, CHECK_CALL);
		ASSERT_TRUE(k || !strcmp(func, TARGET)) TH_LOG("%s", func);
		hits[k] = h;
		sums[k] = s;
		seen++;
	}
	EXPECT_EQ(2, seen) TH_LOG("%s", hist);
	EXPECT_EQ(24, hits[0]);
	EXPECT_EQ(3, hits[1]);
	/* The events are GET's calls, durations and all. */
	EXPECT_EQ(r[0].count, hits[0]);
	EXPECT_EQ(r[0].sum_ns, sums[0]);
	EXPECT_EQ(r[1].count, hits[1]);
	EXPECT_EQ(r[1].sum_ns, sums[1]);
	EXPECT_NE(NULL, strstr(hist, "Hits: 27\n")) TH_LOG("%s", hist);
	free(hist);
}

/*
 * Events come only from measured calls, with the event enabled: not while
 * it is disabled, not after DETACH, not from a count-only probe (a plain
 * kprobe measures nothing), not for calls a probe's filter rejects.
 */
TEST_F_TIMEOUT(trace, nothing_recorded_while_disabled_or_detached, 300)
{
	struct kml_probe_attach a = {
		.func = TARGET, .flags = KML_PROBE_F_ARG, .arg_index = 0,
		.arg_value = 7, .nargs = 2,
	};
	struct kml_probe_result r;
	struct call_ev e;
	char *text;
	int n;

	/* Disabled: the calls are measured, not traced. */
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 2));
	ASSERT_EQ(0, call(self->fd, 1, 5, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(5, r.count);
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(NULL, strstr(text, "func=")) TH_LOG("%s", text);
	EXPECT_EQ(0, kml_trace_count(text, "call"));
	free(text);

	/* Enabled: exactly the calls made. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	ASSERT_EQ(0, call(self->fd, 2, 3, 0, 0));
	/* Detached, still enabled: the target runs unprobed. */
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, call(self->fd, 3, 4, 0, 0));
	/* A count-only probe counts, and measures nothing. */
	ASSERT_EQ(0, attach(self->fd, TARGET, KML_PROBE_F_COUNT_ONLY, 0));
	ASSERT_EQ(0, call(self->fd, 4, 2, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(2, r.count);
	ASSERT_EQ(0, detach(self->fd, TARGET));
	/* An argument filter: only the calls it lets through. */
	ASSERT_EQ(0, attach_cfg(self->fd, &a));
	ASSERT_EQ(0, call(self->fd, 8, 6, 0, 0));
	ASSERT_EQ(0, call(self->fd, 7, 2, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(2, r.count);
	EXPECT_EQ(6, r.filtered);
	/* Disabled again: nothing more. */
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "0"));
	ASSERT_EQ(0, call(self->fd, 7, 4, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(6, r.count);

	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(5, kml_trace_count(text, "call")) TH_LOG("%s", text);
	for (n = 0; !call_ev(text, n, &e); n++) {
		/* 3 calls with argument 2 while attached, then 2 with 7 */
		EXPECT_STREQ(n < 3 ? "{0x2,0x0}" : "{0x7,0x0}", e.args) TH_LOG("event %d", n);
		EXPECT_EQ(n < 3 ? 2 : 7, e.ret);
	}
	free(text);
}

TEST_F_TIMEOUT(trace, events_come_and_go_with_the_module, 300)
{
	char *en, *text;

	EXPECT_TRUE(kml_trace_listed("kml_probe:call\n"));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	/* Neither an enabled event nor a probe pins the module. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_probe"));
	EXPECT_FALSE(kml_trace_listed("kml_probe:"));
	en = kml_trace_get(&self->t, "events/kml_probe/call/enable");
	EXPECT_EQ(NULL, en);
	free(en);
	EXPECT_EQ(-ENOENT, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));

	/* Back with the module, and off: nothing carries over. */
	ASSERT_EQ(0, reload_probe());
	EXPECT_TRUE(kml_trace_listed("kml_probe:call\n"));
	en = kml_trace_get(&self->t, "events/kml_probe/call/enable");
	ASSERT_NE(NULL, en);
	EXPECT_STREQ("0\n", en);
	free(en);
	/* And it records again once enabled. */
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, kml_trace_set(&self->t, "events/kml_probe/call/enable", "1"));
	ASSERT_EQ(0, call(self->fd, 1, 2, 0, 0));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(2, kml_trace_count(text, "call")) TH_LOG("%s", text);
	free(text);
}

/* ---- recording: calls as records in a kml_ring (kml-probe record) ---- */

#define RING_KO	"modules/kml_ring/kml_ring.ko"

static int ring_open(unsigned int pages)
{
	int fd = open(KML_RING_DEVICE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	uint32_t n = pages;

	if (fd < 0)
		return -errno;
	if (pages && ioctl(fd, KML_RING_IOC_SET_SIZE, &n)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int record(int fd, const char *func, int ring_fd, uint32_t id,
		  struct kml_probe_record *out)
{
	struct kml_probe_record rc = { .ring_fd = ring_fd, .id = id };
	int ret;

	snprintf(rc.func, sizeof(rc.func), "%s", func);
	ret = ioctl(fd, KML_PROBE_IOC_RECORD, &rc) ? -errno : 0;
	if (out)
		*out = rc;
	return ret;
}

/* Every record in the ring, read() out: the call records to @ev (at most @max). */
static long drain_calls(int ring, struct kml_probe_event *ev, long max, long *others)
{
	static uint8_t buf[1 << 16];
	long n = 0;
	ssize_t len;

	while ((len = read(ring, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < len;) {
			const struct kml_ring_rec *rec = (const void *)(buf + off);

			if (rec->type == KML_PROBE_REC_CALL &&
			    rec->size == sizeof(*rec) + sizeof(*ev)) {
				if (n < max)
					memcpy(&ev[n], rec + 1, sizeof(*ev));
				n++;
			} else if (others) {
				(*others)++;
			}
			off += rec->size;
		}
	}
	return len < 0 && errno != EAGAIN ? -errno : n;
}

FIXTURE(record) {
	int fd;
	int ring;
};

FIXTURE_SETUP(record)
{
	char dir[256];

	/*
	 * The client tests' files go to a directory of their own under
	 * TMPDIR (the guest's writable scratch: /tmp is read-only there when
	 * the repository itself lives under /tmp), and are named relative
	 * to it, so the clients and shells started here find them too.
	 */
	snprintf(dir, sizeof(dir), "%s/kml_record_XXXXXX", getenv("TMPDIR") ?: "/tmp");
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chdir(dir));
	self->ring = -1;
	ASSERT_EQ(0, reload_probe());
	ASSERT_EQ(0, kml_load_once(RING_KO, ""));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
}

FIXTURE_TEARDOWN(record)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->ring >= 0)
		close(self->ring);
	/* Recordings end with their probes: the ring module is free again. */
	kml_unload("kml_probe");
	kml_unload("kml_ring");
}

/*
 * One record per measured call, exactly, with what the call was: its
 * arguments, return value, thread, and the very latency the histogram
 * counted (the sums agree to the nanosecond).
 */
TEST_F_TIMEOUT(record, one_record_per_call_exactly, 300)
{
	static struct kml_probe_event ev[2000];
	struct kml_probe_record rc;
	struct kml_probe_result r;
	long n, others = 0;

	self->ring = ring_open(256);	/* room for all 2000: no consumer needed */
	ASSERT_GE(self->ring, 0);
	ASSERT_EQ(0, record(self->fd, TARGET, self->ring, 5, NULL));
	ASSERT_EQ(0, call(self->fd, 42, 2000, 0, 0));
	ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, &rc));
	EXPECT_EQ(2000, rc.written);
	EXPECT_EQ(0, rc.lost);
	/* Stopped: calls now go nowhere. */
	ASSERT_EQ(0, call(self->fd, 42, 10, 0, 0));
	n = drain_calls(self->ring, ev, 2000, &others);
	ASSERT_EQ(2000, n);
	EXPECT_EQ(0, others);
	for (long i = 0; i < n; i++) {
		ASSERT_EQ(5, ev[i].id);
		ASSERT_EQ(3, ev[i].nargs);
		ASSERT_EQ(42, ev[i].args[0]);
		ASSERT_EQ(0, ev[i].args[1]);	/* depth */
		ASSERT_EQ(0, ev[i].args[3] | ev[i].args[4] | ev[i].args[5]);
		ASSERT_EQ(42, ev[i].ret);	/* arg + depth */
		ASSERT_EQ(gettid(), (pid_t)ev[i].pid);
		ASSERT_EQ(getpid(), (pid_t)ev[i].tgid);
		ASSERT_EQ(0, ev[i].reserved);
		ASSERT_NE(0, ev[i].start_ns);
	}
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(2010, r.count);
}

TEST_F_TIMEOUT(record, latencies_are_the_histograms, 300)
{
	static struct kml_probe_event ev[500];
	struct kml_probe_result r;
	uint64_t sum = 0, hist[KML_PROBE_BUCKETS] = { 0 };
	long n;

	self->ring = ring_open(64);
	ASSERT_GE(self->ring, 0);
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_RESET));
	ASSERT_EQ(0, record(self->fd, TARGET, self->ring, 0, NULL));
	ASSERT_EQ(0, call(self->fd, 1, 500, 0, 1000));
	ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, NULL));
	n = drain_calls(self->ring, ev, 500, NULL);
	ASSERT_EQ(500, n);
	for (long i = 0; i < n; i++) {
		sum += ev[i].duration_ns;
		hist[bucket(ev[i].duration_ns)]++;
		ASSERT_GE(ev[i].duration_ns, 1000);	/* it busy-waits 1 us */
	}
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(500, r.count);
	EXPECT_EQ(r.sum_ns, sum);
	EXPECT_EQ(0, memcmp(r.hist, hist, sizeof(hist)));
}

/*
 * Nested calls: written as they return, innermost first, each inside
 * its caller's interval, each with its own depth and return value.
 */
TEST_F_TIMEOUT(record, nested_calls_innermost_first, 300)
{
	static struct kml_probe_event ev[300];
	long n;

	self->ring = ring_open(64);
	ASSERT_GE(self->ring, 0);
	ASSERT_EQ(0, record(self->fd, TARGET, self->ring, 1, NULL));
	ASSERT_EQ(0, call(self->fd, 10, 100, 2, 0));
	ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, NULL));
	n = drain_calls(self->ring, ev, 300, NULL);
	ASSERT_EQ(300, n);
	for (long i = 0; i < n; i += 3) {
		for (int d = 0; d < 3; d++) {
			ASSERT_EQ((uint64_t)d, ev[i + d].args[1]) TH_LOG("call %ld", i + d);
			ASSERT_EQ(10U + d, ev[i + d].ret);
		}
		for (int d = 0; d < 2; d++) {
			const struct kml_probe_event *in = &ev[i + d], *out = &ev[i + d + 1];

			ASSERT_LE(out->start_ns, in->start_ns);
			ASSERT_LE(in->start_ns + in->duration_ns,
				  out->start_ns + out->duration_ns);
		}
	}
}

/*
 * A consumer that never reads: the ring fills, and every call after that
 * is counted lost, by the kernel, to the call: written + lost = calls,
 * the ring holds exactly the written ones, and its own lost count agrees.
 */
TEST_F_TIMEOUT(record, stalled_consumer_loses_and_counts, 300)
{
	static struct kml_probe_event ev[1000];
	struct kml_probe_record rc;
	struct kml_ring_ctrl *ctrl;
	long n;

	self->ring = ring_open(1);	/* 4 KiB: 36 records */
	ASSERT_GE(self->ring, 0);
	ctrl = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, self->ring, 0);
	ASSERT_NE(MAP_FAILED, ctrl);
	ASSERT_EQ(0, record(self->fd, TARGET, self->ring, 0, NULL));
	ASSERT_EQ(0, call(self->fd, 1, 1000, 0, 0));
	ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, &rc));
	EXPECT_EQ(1000, rc.written + rc.lost);
	EXPECT_GT(rc.lost, 900);
	EXPECT_EQ(rc.lost, ctrl->lost);
	n = drain_calls(self->ring, ev, 1000, NULL);
	EXPECT_EQ((long)rc.written, n);
	munmap(ctrl, getpagesize());
}

TEST_F_TIMEOUT(record, errors, 300)
{
	struct kml_probe_record rc = { .ring_fd = -1 };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ASSERT_GE(null, 0);
	self->ring = ring_open(0);	/* unsized: records are lost, counted */
	ASSERT_GE(self->ring, 0);
	EXPECT_EQ(-ENOENT, record(self->fd, "vfs_read", self->ring, 0, NULL));
	EXPECT_EQ(-ENOENT, record(self->fd, "vfs_read", -1, 0, NULL));
	EXPECT_EQ(-EBADF, record(self->fd, TARGET, 1000, 0, NULL));
	EXPECT_EQ(-EINVAL, record(self->fd, TARGET, null, 0, NULL)) TH_LOG("not a ring");
	EXPECT_EQ(-EINVAL, record(self->fd, TARGET, self->fd, 0, NULL)) TH_LOG("not a ring");
	EXPECT_EQ(-EINVAL, record(self->fd, TARGET, -2, 0, NULL));
	strcpy(rc.func, TARGET);
	rc.ring_fd = self->ring;
	rc.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_RECORD, &rc));
	EXPECT_EQ(EINVAL, errno);
	rc.flags = 0;
	rc.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_RECORD, &rc));
	EXPECT_EQ(EINVAL, errno);
	memset(rc.func, 'x', sizeof(rc.func));	/* no NUL */
	rc.reserved = 0;
	EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_RECORD, &rc));
	EXPECT_EQ(EINVAL, errno);
	/* Stopping what is not recording: there are no totals to give. */
	EXPECT_EQ(-ESRCH, record(self->fd, TARGET, -1, 0, &rc));
	/* One recording per function at a time. */
	ASSERT_EQ(0, record(self->fd, TARGET, self->ring, 0, NULL));
	EXPECT_EQ(-EBUSY, record(self->fd, TARGET, self->ring, 0, NULL));
	ASSERT_EQ(0, call(self->fd, 1, 3, 0, 0));
	ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, &rc));
	EXPECT_EQ(0, rc.written);
	EXPECT_EQ(3, rc.lost) TH_LOG("an unsized ring loses, and says so");
	EXPECT_EQ(-ESRCH, record(self->fd, TARGET, -1, 0, &rc)) TH_LOG("stopped once");
	/* A count-only probe has no calls to record. */
	ASSERT_EQ(0, attach(self->fd, "vfs_read", KML_PROBE_F_COUNT_ONLY, 0));
	EXPECT_EQ(-EINVAL, record(self->fd, "vfs_read", self->ring, 0, NULL));
	ASSERT_EQ(0, detach(self->fd, "vfs_read"));
	/* The ring module gone: -ENODEV, whatever the descriptor. */
	close(self->ring);
	self->ring = -1;
	ASSERT_EQ(0, kml_unload("kml_ring"));
	EXPECT_EQ(-ENODEV, record(self->fd, TARGET, null, 0, NULL));
	close(null);
}

TEST_F_TIMEOUT(record, unprivileged_cannot_record, 300)
{
	pid_t pid;
	int status;

	self->ring = ring_open(4);
	ASSERT_GE(self->ring, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(DEV, O_RDONLY);
		if (fd < 0)
			_exit(11);
		if (record(fd, TARGET, self->ring, 0, NULL) != -EPERM)
			_exit(12);
		/* Nor through root's descriptor: the check is of the caller. */
		if (record(self->fd, TARGET, -1, 0, NULL) != -EPERM)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * A recording holds its ring and kml_ring.ko: closing the descriptor
 * does not end it, rmmod kml_ring is refused while it lasts, and DETACH
 * (or rmmod kml_probe) ends it and lets both go.
 */
TEST_F_TIMEOUT(record, a_recording_holds_ring_and_module, 300)
{
	int ring = ring_open(4);

	ASSERT_GE(ring, 0);
	ASSERT_EQ(0, record(self->fd, TARGET, ring, 0, NULL));
	close(ring);
	ASSERT_EQ(0, call(self->fd, 1, 5, 0, 0));
	ASSERT_NE(0, syscall(SYS_delete_module, "kml_ring", O_NONBLOCK));
	ASSERT_EQ(EWOULDBLOCK, errno) TH_LOG("kml_ring must be in use");
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, kml_unload("kml_ring"));

	/*
	 * A recording lasts as long as the file it was started through:
	 * its recorder dying must not leave the kernel writing into its
	 * ring, nor pin the ring and kml_ring.ko.
	 */
	ASSERT_EQ(0, kml_load_once(RING_KO, ""));
	ring = ring_open(4);
	ASSERT_GE(ring, 0);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	{
		int other = open(DEV, O_RDWR | O_CLOEXEC);

		ASSERT_GE(other, 0);
		ASSERT_EQ(0, record(other, TARGET, ring, 0, NULL));
		close(other);
	}
	close(ring);
	EXPECT_EQ(-ESRCH, record(self->fd, TARGET, -1, 0, NULL));
	ASSERT_EQ(0, kml_unload("kml_ring")) TH_LOG("the ring was let go");
	ASSERT_EQ(0, detach(self->fd, TARGET));

	/* The same through rmmod kml_probe, which ends every recording. */
	ASSERT_EQ(0, kml_load_once(RING_KO, ""));
	ring = ring_open(4);
	ASSERT_GE(ring, 0);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, record(self->fd, TARGET, ring, 0, NULL));
	close(ring);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_probe"));
	ASSERT_EQ(0, kml_unload("kml_ring"));
}

/*
 * A probe inside the ring's own write section, recording into a ring:
 * its handler runs with the section's lock held on its CPU, so its
 * record must be given up and counted, never waited for (that wait
 * would never end: interrupts off, the holder is the code it
 * interrupted). kml_ring_place() runs under the lock for every record
 * the built-in producer writes; here it writes into the recording ring.
 */
TEST_F_TIMEOUT(record, probe_inside_the_ring_gives_up_and_counts, 300)
{
	struct kml_ring_produce p = { .record_size = 64, .count = 50, .cpu = -1 };
	struct kml_probe_record rc;
	struct kml_probe_result r;
	long samples = 0, calls = 0;

	/* The producer writes into the very ring the calls are recorded in. */
	self->ring = ring_open(4);
	ASSERT_GE(self->ring, 0);
	ASSERT_EQ(0, attach(self->fd, "kml_ring_place", 0, 0));
	ASSERT_EQ(0, record(self->fd, "kml_ring_place", self->ring, 0, NULL));
	ASSERT_EQ(0, ioctl(self->ring, KML_RING_IOC_START, &p));
	/* It stops after 50 samples; wait for them all, however long. */
	for (int i = 0; i < 30000 && samples < 50; i++) {
		long n = drain_calls(self->ring, NULL, 0, &samples);

		ASSERT_GE(n, 0);
		calls += n;
		if (samples < 50)
			usleep(1000);
	}
	ASSERT_EQ(50, samples);
	ASSERT_EQ(0, record(self->fd, "kml_ring_place", -1, 0, &rc));
	calls += drain_calls(self->ring, NULL, 0, NULL);
	ASSERT_EQ(0, get(self->fd, "kml_ring_place", &r));
	EXPECT_EQ(50, r.count);
	EXPECT_EQ(0, rc.written);
	EXPECT_EQ(50, rc.lost);
	EXPECT_EQ(0, calls);
	ASSERT_EQ(0, detach(self->fd, "kml_ring_place"));
}

/* ---- the client: kml-probe record / report ---- */

static long json_num(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(json, k);
	return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

TEST_F_TIMEOUT(record, client_records_a_command_exactly, 600)
{
	char cmd[1024], out[8192];

	ASSERT_EQ(0, detach(self->fd, TARGET));	/* the client attaches it */
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "record -o rec.data -a 3 " TARGET
				" -- %s/kml-probe call 500 0 2", getenv("KMODLAB_BIN")))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "recorded 1500 calls of 1 function in rec.data"))
		TH_LOG("%s", out);
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "--json report rec.data")) TH_LOG("%s", out);
	EXPECT_EQ(1500, json_num(out, "records")) TH_LOG("%s", out);
	EXPECT_EQ(1500, json_num(out, "calls"));
	EXPECT_EQ(1500, json_num(out, "written"));
	EXPECT_EQ(0, json_num(out, "lost"));
	EXPECT_EQ(3, json_num(out, "nargs"));
	EXPECT_NE(NULL, strstr(out, "\"complete\":true"));
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "report rec.data")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Function = " TARGET "  (1500 calls recorded, 0 lost"))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Top threads:")) TH_LOG("%s", out);
	/* It detached what it attached. */
	EXPECT_EQ(-ENOENT, detach(self->fd, TARGET));
}

TEST_F_TIMEOUT(record, client_refuses_damaged_files, 600)
{
	char cmd[1024], out[8192];

	ASSERT_EQ(0, KML_CLIENT("kml-probe", "record -o d.data " TARGET
				" -- %s/kml-probe call 50 0", getenv("KMODLAB_BIN")))
		TH_LOG("%s", out);
	/* Cut anywhere: one line, exit status 1. */
	ASSERT_EQ(0, kml_run("head -c 500 d.data > cut.data", out, sizeof(out)));
	EXPECT_EQ(1, KML_CLIENT("kml-probe", "report cut.data"));
	EXPECT_NE(NULL, strstr(out, "kml-probe: cut.data: truncated")) TH_LOG("%s", out);
	EXPECT_EQ(out + strlen(out) - 1, strchr(out, '\n')) TH_LOG("one line: %s", out);
	ASSERT_EQ(0, kml_run("printf 'XXXX' | dd of=d.data bs=1 seek=0 conv=notrunc 2>/dev/null",
			     out, sizeof(out)));
	EXPECT_EQ(1, KML_CLIENT("kml-probe", "report d.data"));
	EXPECT_NE(NULL, strstr(out, "not a kml-probe record file")) TH_LOG("%s", out);
	EXPECT_EQ(1, KML_CLIENT("kml-probe", "report no-such.data"));
	EXPECT_NE(NULL, strstr(out, "cannot read no-such.data")) TH_LOG("%s", out);
}

/*
 * Starts `kml-probe record ARGS...` and returns once it says it is
 * recording (its first line on stderr), so that calls made after this
 * are recorded, however slow the machine.
 */
#define spawn_recorder(...) spawn_recorder_v((const char *[]){ __VA_ARGS__, NULL })

static pid_t spawn_recorder_v(const char **args)
{
	char path[512], line[512];
	char *argv[16] = { "kml-probe", "record" };
	int p[2];
	pid_t pid;
	FILE *f;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		snprintf(path, sizeof(path), "%s/kml-probe", getenv("KMODLAB_BIN"));
		for (int i = 0; args[i] && i < 13; i++)
			argv[i + 2] = (char *)args[i];
		dup2(p[1], 2);
		close(p[0]);
		execv(path, argv);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || !fgets(line, sizeof(line), f) || !strstr(line, "recording")) {
		if (pid > 0)
			kill(pid, SIGKILL);
		return -1;
	}
	/* Its later lines go nowhere: a closed pipe would SIGPIPE it. */
	if (fork() == 0) {
		while (fgets(line, sizeof(line), f))
			;
		_exit(0);
	}
	fclose(f);
	return pid;
}

/*
 * A recorder stopped (SIGSTOP) while calls pour in: its ring overflows,
 * and the file says exactly how many calls were not recorded. Then one
 * killed outright: report refuses the file, and --force reads it.
 */
TEST_F_TIMEOUT(record, client_stalled_then_killed, 600)
{
	char cmd[1024], out[8192];
	pid_t rec;
	int status;

	ASSERT_EQ(0, detach(self->fd, TARGET));
	rec = spawn_recorder("-o", "s.data", "-m", "1", TARGET);
	ASSERT_GT(rec, 0);
	ASSERT_EQ(0, kill(rec, SIGSTOP));
	ASSERT_EQ(0, call(self->fd, 1, 1000, 0, 0));
	ASSERT_EQ(0, kill(rec, SIGCONT));
	ASSERT_EQ(0, kill(rec, SIGINT));
	ASSERT_EQ(rec, waitpid(rec, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "--json report s.data")) TH_LOG("%s", out);
	EXPECT_EQ(1000, json_num(out, "written") + json_num(out, "lost")) TH_LOG("%s", out);
	EXPECT_GT(json_num(out, "lost"), 0) TH_LOG("%s", out);
	EXPECT_EQ(json_num(out, "written"), json_num(out, "records"));
	EXPECT_EQ(json_num(out, "lost"), json_num(out, "ring_lost")) TH_LOG("%s", out);

	/* Killed: no totals, no end record. */
	rec = spawn_recorder("-o", "k.data", "-a", "1", TARGET);
	ASSERT_GT(rec, 0);
	ASSERT_EQ(0, call(self->fd, 1, 20, 0, 0));
	usleep(500000);	/* it copies every 100 ms */
	ASSERT_EQ(0, kill(rec, SIGKILL));
	ASSERT_EQ(rec, waitpid(rec, &status, 0));
	EXPECT_EQ(1, KML_CLIENT("kml-probe", "report k.data"));
	EXPECT_NE(NULL, strstr(out, "no end record")) TH_LOG("%s", out);
	EXPECT_EQ(0, KML_CLIENT("kml-probe", "report --force k.data")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "INCOMPLETE")) TH_LOG("%s", out);
	/*
	 * Its recording died with it (its files closed): the next one
	 * starts at once, and the ring module is free. Its probe stays, as
	 * any attached probe does, until detached.
	 */
	self->ring = ring_open(4);
	ASSERT_GE(self->ring, 0);
	EXPECT_EQ(0, record(self->fd, TARGET, self->ring, 0, NULL));
	EXPECT_EQ(0, record(self->fd, TARGET, -1, 0, NULL));
	close(self->ring);
	self->ring = -1;
	EXPECT_EQ(0, detach(self->fd, TARGET));
	EXPECT_EQ(0, kml_unload("kml_ring"));
}

/*
 * The file holds kernel values: owner-only (0600). A record that fails
 * (no such function) leaves an existing file alone; one that succeeds
 * keeps the previous file as FILE.old, as perf does.
 */
TEST_F_TIMEOUT(record, client_output_file_is_private_and_kept, 600)
{
	char cmd[1024], out[8192];
	struct stat st;

	ASSERT_EQ(0, detach(self->fd, TARGET));
	unlink("o.data");
	unlink("o.data.old");
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "record -o o.data " TARGET
				" -- %s/kml-probe call 5 0", getenv("KMODLAB_BIN")))
		TH_LOG("%s", out);
	ASSERT_EQ(0, stat("o.data", &st));
	EXPECT_EQ(0600, st.st_mode & 0777);
	EXPECT_EQ(1, KML_CLIENT("kml-probe", "record -o o.data no_such_function_kml"));
	EXPECT_NE(NULL, strstr(out, "no such kernel function")) TH_LOG("%s", out);
	EXPECT_EQ(0, access("o.data", R_OK)) TH_LOG("the old file is still there");
	EXPECT_NE(0, access("o.data.old", F_OK));
	EXPECT_EQ(0, KML_CLIENT("kml-probe", "record -o o.data " TARGET
				" -- %s/kml-probe call 7 0", getenv("KMODLAB_BIN")))
		TH_LOG("%s", out);
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "--json report o.data.old"));
	EXPECT_EQ(5, json_num(out, "records")) TH_LOG("%s", out);
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "--json report o.data"));
	EXPECT_EQ(7, json_num(out, "records")) TH_LOG("%s", out);
}

/*
 * The perf that reads perf.data here, into @perf: KMODLAB_PERF, which the
 * scripts set to the perf Debian ships for this kernel's series
 * (scripts/perf-for.sh), must run and be of that series: a missing layer
 * or another perf fails the test rather than pass against the wrong
 * reader. Without it (a kernel of your own) the PATH's perf reads, and
 * @note says when it is not of this kernel's series. Returns 0 (@version:
 * "perf version ..."), 1 when there is no perf at all (SKIP), or -1 with
 * the reason in @why.
 */
static int perf_of_kernel(char *perf, size_t plen, char *version, size_t vlen,
			  char *note, size_t nlen, char *why, size_t wlen)
{
	const char *env = getenv("KMODLAB_PERF");
	unsigned int kmaj, kmin, pmaj, pmin;
	char cmd[1024], out[512], *nl;
	struct utsname u;
	bool set = env && *env;

	note[0] = '\0';
	if (uname(&u) || sscanf(u.release, "%u.%u", &kmaj, &kmin) != 2)
		return snprintf(why, wlen, "uname: no MAJOR.MINOR"), -1;
	snprintf(perf, plen, "%s", set ? env : "perf");
	snprintf(cmd, sizeof(cmd), "%s --version 2>&1", perf);
	if (kml_run(cmd, out, sizeof(out))) {
		if (!set)
			return 1;
		snprintf(why, wlen, "KMODLAB_PERF=%s does not run (is its layer built? "
			 "scripts/perf-for.sh %u.%u): %.200s", perf, kmaj, kmin, out);
		return -1;
	}
	nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	snprintf(version, vlen, "%.63s", out);
	if (sscanf(out, "perf version %u.%u", &pmaj, &pmin) != 2)
		return snprintf(why, wlen, "%s: not perf's version line: %.200s", perf, out), -1;
	if (pmaj == kmaj && pmin == kmin)
		return 0;
	if (set) {
		snprintf(why, wlen, "KMODLAB_PERF=%s is perf %u.%u, the kernel %s", perf, pmaj,
			 pmin, u.release);
		return -1;
	}
	snprintf(note, nlen, " (KMODLAB_PERF unset: the PATH's, not of this kernel's series %u.%u)",
		 kmaj, kmin);
	return 0;
}

/* A shell script at @path printing @line, as a stand-in perf. */
static int fake_perf(const char *path, const char *line)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\necho '%s'\n", line);
	return fclose(f) || chmod(path, 0755) ? -1 : 0;
}

/*
 * Which perf reads perf.data, and its errors: a KMODLAB_PERF that does
 * not run (its layer missing) or is of another series fails; without it,
 * the PATH's perf of any series reads (said so), and no perf at all is a
 * SKIP. No module needed.
 */
TEST(perf_of_the_running_kernel)
{
	char dir[256], bin[300], perf[512], ver[64], note[256], why[512], line[64], path[1024];
	unsigned int kmaj, kmin;
	struct utsname u;

	ASSERT_EQ(0, uname(&u));
	ASSERT_EQ(2, sscanf(u.release, "%u.%u", &kmaj, &kmin));
	snprintf(dir, sizeof(dir), "%s/kml_perf_XXXXXX", getenv("TMPDIR") ?: "/tmp");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/perf", dir);

	/* the layer is missing */
	ASSERT_EQ(0, setenv("KMODLAB_PERF", "/nonexistent/kmodlab-perf", 1));
	EXPECT_EQ(-1, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				     why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "does not run")) TH_LOG("%s", why);
	/* another series */
	ASSERT_EQ(0, fake_perf(bin, "perf version 1.0.0"));
	ASSERT_EQ(0, setenv("KMODLAB_PERF", bin, 1));
	EXPECT_EQ(-1, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				     why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "is perf 1.0, the kernel")) TH_LOG("%s", why);
	/* not perf */
	ASSERT_EQ(0, fake_perf(bin, "hello"));
	EXPECT_EQ(-1, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				     why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "not perf's version line")) TH_LOG("%s", why);
	/* this kernel's series */
	snprintf(line, sizeof(line), "perf version %u.%u.9", kmaj, kmin);
	ASSERT_EQ(0, fake_perf(bin, line));
	EXPECT_EQ(0, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				    why, sizeof(why)));
	EXPECT_STREQ(bin, perf);
	EXPECT_STREQ(line, ver);
	EXPECT_STREQ("", note);
	/* unset: the PATH's, of another series, is used and said so */
	ASSERT_EQ(0, unsetenv("KMODLAB_PERF"));
	ASSERT_EQ(0, fake_perf(bin, "perf version 1.0.0"));
	snprintf(path, sizeof(path), "%s:%s", dir, getenv("PATH") ?: "/usr/bin:/bin");
	ASSERT_EQ(0, setenv("PATH", path, 1));
	EXPECT_EQ(0, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				    why, sizeof(why)));
	EXPECT_STREQ("perf", perf);
	EXPECT_NE(NULL, strstr(note, "not of this kernel's series")) TH_LOG("%s", note);
	/* and no perf at all: SKIP */
	ASSERT_EQ(0, unlink(bin));
	ASSERT_EQ(0, setenv("PATH", dir, 1));
	EXPECT_EQ(1, perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note),
				    why, sizeof(why)));
	ASSERT_EQ(0, rmdir(dir));
}

struct calls {
	unsigned int n;
	uint64_t start[64], ns[64];
};

static int collect_call(const struct kml_ring_rec *rec, const struct kml_probe_event *ev, void *arg)
{
	struct calls *c = arg;

	(void)rec;
	if (c->n == 64)
		return -1;
	c->start[c->n] = ev->start_ns;
	c->ns[c->n++] = ev->duration_ns;
	return 0;
}

/* perf's exit status reading @file with `perf script`. */
static int perf_script_status(const char *perf, const char *file)
{
	char cmd[1024], out[4096];

	snprintf(cmd, sizeof(cmd), "%s script -i %s >/dev/null 2>&1; echo $?", perf, file);
	if (kml_run(cmd, out, sizeof(out)))
		return -1;
	return atoi(out);
}

/* The data section's offset and size, from a perf.data's header. */
static int perf_data_section(const char *file, uint64_t *off, uint64_t *size)
{
	uint64_t h[7];	/* magic, size, attr_size, attrs {offset, size}, data {offset, size} */
	FILE *f = fopen(file, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(h, 8, 7, f);
	fclose(f);
	if (n != 7)
		return -1;
	*off = h[5];
	*size = h[6];
	return 0;
}

/* @file's first @n bytes as @cut. */
static int cut_file(const char *file, const char *cut, uint64_t n)
{
	char cmd[512], out[256];

	snprintf(cmd, sizeof(cmd), "head -c %llu %s > %s", (unsigned long long)n, file, cut);
	return kml_run(cmd, out, sizeof(out));
}

/*
 * record -F perf, read by the perf Debian ships for this kernel (see
 * perf_of_kernel()): perf script lists every recorded call, each with
 * the latency the recording has as its period at the time it was
 * entered; perf report counts them and sums the latencies (the report's
 * sum_ns); and a cut file is refused as perf refuses a file of its own
 * (perf record here) cut at the same places, in the header, the
 * attributes, at the data, in a sample and in the features.
 */
TEST_F_TIMEOUT(record, client_perf_data_is_read_by_perf, 600)
{
	const char *where[] = { "in the header", "in the attributes", "at the data",
				"in a sample", "in the features" };
	char cmd[1024], out[65536], perf[512], ver[64], note[256], why[512], want[256];
	static uint8_t buf[1 << 20];
	static struct kml_pf pf;
	struct calls c = { 0 };
	bool seen[64] = { false };
	unsigned long long secs, nsecs, period, sum = 0;
	uint64_t off, size, cuts[5];
	int ours[5], theirs[5], lines = 0, r;
	long want_sum;
	size_t len;
	char *p;
	FILE *f;

	r = perf_of_kernel(perf, sizeof(perf), ver, sizeof(ver), note, sizeof(note), why,
			   sizeof(why));
	ASSERT_NE(-1, r) TH_LOG("%s", why);
	if (r == 1)
		SKIP(return, "no perf in this guest");
	TH_LOG("perf.data read by %s: %s%s", perf, ver, note);
	ASSERT_EQ(0, detach(self->fd, TARGET));
	unlink("p.data");
	unlink("p.data.kml-probe");
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "record -F perf -o p.data " TARGET
				" -- %s/kml-probe call 9 50", getenv("KMODLAB_BIN")))
		TH_LOG("%s", out);
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "--json report p.data.kml-probe"));
	EXPECT_EQ(9, json_num(out, "records")) TH_LOG("%s", out);
	p = strstr(out, "\"func\":\"" TARGET "\"");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	want_sum = json_num(p, "sum_ns");
	ASSERT_GT(want_sum, 0);
	/* each call the recording holds: when it was entered, its latency */
	f = fopen("p.data.kml-probe", "r");
	ASSERT_NE(NULL, f);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ASSERT_EQ(0, kml_pf_parse(buf, len, false, &pf, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, kml_pf_each_call(buf, len, &pf, collect_call, &c));
	ASSERT_EQ(9U, c.n);

	/* one line per call: the time it was entered, its period, the event */
	snprintf(cmd, sizeof(cmd), "%s script -i p.data -F time,period,event --ns 2>&1", perf);
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	for (p = strtok(out, "\n"); p; p = strtok(NULL, "\n")) {
		char event[128];
		unsigned int i;

		/* "  <secs>.<nsecs>:  <period> kml_probe:<func>: " */
		if (sscanf(p, "%llu.%llu: %llu %127s", &secs, &nsecs, &period, event) != 4 ||
		    strcmp(event, "kml_probe:" TARGET ":"))
			continue;
		lines++;
		sum += period;
		for (i = 0; i < c.n; i++)
			if (!seen[i] && c.start[i] == secs * 1000000000ULL + nsecs &&
			    c.ns[i] == period)
				break;
		EXPECT_LT(i, c.n) TH_LOG("no call of the recording is \"%s\"", p);
		if (i < c.n)
			seen[i] = true;
	}
	EXPECT_EQ(9, lines);
	EXPECT_EQ((unsigned long long)want_sum, sum);

	/* perf report: the samples and the total latency, the event's count */
	snprintf(cmd, sizeof(cmd), "%s report -i p.data --stdio 2>&1", perf);
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "# Samples: 9  of event 'kml_probe:" TARGET "'"))
		TH_LOG("%s", out);
	snprintf(want, sizeof(want), "# Event count (approx.): %ld\n", want_sum);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("no \"%s\" in:\n%s", want, out);

	/* cut short, refused as perf refuses its own cut at the same places */
	snprintf(cmd, sizeof(cmd), "%s record -q -o own.data -e task-clock -- sleep 0.01 2>&1",
		 perf);
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	for (int k = 0; k < 2; k++) {
		const char *file = k ? "own.data" : "p.data";
		int *st = k ? theirs : ours;

		ASSERT_EQ(0, perf_data_section(file, &off, &size));
		ASSERT_GT(size, 0);
		cuts[0] = 60;
		cuts[1] = 104 + 40;
		cuts[2] = off;
		cuts[3] = off + size / 2 + 4;
		cuts[4] = off + size + 70;
		for (int i = 0; i < 5; i++) {
			ASSERT_EQ(0, cut_file(file, "cut.data", cuts[i]));
			st[i] = perf_script_status(perf, "cut.data");
		}
	}
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(theirs[i], ours[i]) TH_LOG("cut %s: perf's own %d, ours %d", where[i],
						     theirs[i], ours[i]);
	}
	/*
	 * and the cuts before the features are refusals (perf exits 255 or
	 * 1), not crashes (a signal shows as 128 + its number)
	 */
	for (int i = 0; i < 4; i++) {
		EXPECT_TRUE(ours[i] != 0 && (ours[i] < 129 || ours[i] > 128 + 64))
			TH_LOG("cut %s: %d", where[i], ours[i]);
	}
}

/*
 * Someone detaches the function in the middle of a recording: the
 * kernel's totals for it are gone. The recorder says so, exits 1, and
 * still writes a file report reads (totals marked unknown); and it does
 * not detach the probe someone attached again meanwhile.
 */
TEST_F_TIMEOUT(record, client_recording_ended_by_a_detach, 600)
{
	char cmd[1024], out[8192];
	struct kml_probe_list l;
	pid_t rec;
	int status;

	ASSERT_EQ(0, detach(self->fd, TARGET));
	rec = spawn_recorder("-o", "e.data", "-a", "1", TARGET);
	ASSERT_GT(rec, 0);
	ASSERT_EQ(0, call(self->fd, 1, 10, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 2));	/* someone else's now */
	ASSERT_EQ(0, kill(rec, SIGINT));
	ASSERT_EQ(rec, waitpid(rec, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(1, WEXITSTATUS(status));
	ASSERT_EQ(0, list(self->fd, &l));
	EXPECT_NE(NULL, listed(&l, TARGET)) TH_LOG("the new probe was left alone");
	ASSERT_EQ(0, KML_CLIENT("kml-probe", "report e.data")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ended by someone else")) TH_LOG("%s", out);
}

/*
 * The same, with the function left detached: stopping the recording is
 * -ENOENT, and the recorder's line says the probe was detached (it said
 * "No such file or directory").
 */
TEST_F_TIMEOUT(record, client_says_a_detach_ended_its_recording, 600)
{
	char path[512], text[4096] = "";
	double end;
	pid_t rec;
	int status, fd;
	ssize_t n = 0;

	ASSERT_EQ(0, detach(self->fd, TARGET));
	rec = fork();
	ASSERT_LE(0, rec);
	if (rec == 0) {
		fd = open("d.err", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		snprintf(path, sizeof(path), "%s/kml-probe", getenv("KMODLAB_BIN"));
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execl(path, "kml-probe", "record", "-o", "d.data", "-a", "1", TARGET,
		      (char *)NULL);
		_exit(127);
	}
	end = now_s() + 60;
	while (!strstr(text, "recording") && now_s() < end) {
		usleep(20000);
		fd = open("d.err", O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? 0 : read(fd, text, sizeof(text) - 1);
		text[n > 0 ? n : 0] = '\0';
		if (fd >= 0)
			close(fd);
	}
	ASSERT_NE(NULL, strstr(text, "recording")) TH_LOG("%s", text);
	ASSERT_EQ(0, call(self->fd, 1, 10, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	ASSERT_EQ(0, kill(rec, SIGINT));
	ASSERT_EQ(rec, waitpid(rec, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(1, WEXITSTATUS(status));
	fd = open("d.err", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	EXPECT_NE(NULL, strstr(text, "ended by someone else (its probe was detached)")) TH_LOG("%s", text);
}

/* A command that ignores SIGTERM does not hold the recorder forever. */
TEST_F_TIMEOUT(record, client_interrupted_while_its_command_ignores_sigterm, 600)
{
	char cmd[1024], out[8192];
	pid_t rec;
	int status;

	ASSERT_EQ(0, detach(self->fd, TARGET));
	unlink("t.ready");
	rec = spawn_recorder("-o", "t.data", TARGET, "--", "sh", "-c",
			     "trap '' TERM; touch t.ready; exec sleep 1000");
	ASSERT_GT(rec, 0);
	/* (exec: no orphaned sleep left holding the test's output open.) */
	/* Interrupted once the command ignores SIGTERM. */
	for (int i = 0; i < 30000 && access("t.ready", F_OK); i++)
		usleep(1000);
	ASSERT_EQ(0, access("t.ready", F_OK));
	ASSERT_EQ(0, kill(rec, SIGINT));
	ASSERT_EQ(rec, waitpid(rec, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, KML_CLIENT("kml-probe", "report t.data")) TH_LOG("%s", out);
}

struct rec_race {
	int fd, ring;
	atomic_int stop;
	long rounds;
};

static void *race_calls(void *arg)
{
	struct rec_race *x = arg;

	while (!atomic_load(&x->stop))
		call(x->fd, 3, 200, 1, 0);
	return NULL;
}

static void *race_consume(void *arg)
{
	struct rec_race *x = arg;
	static uint8_t buf[1 << 14];
	uint32_t pages = 1;

	while (!atomic_load(&x->stop)) {
		while (read(x->ring, buf, sizeof(buf)) > 0)
			;
		/* Resizing under the writers, unmapped: allowed, and empties it. */
		pages = pages == 1 ? 8 : 1;
		ioctl(x->ring, KML_RING_IOC_SET_SIZE, &pages);
	}
	return NULL;
}

/*
 * Calls on one thread, a consumer resizing the ring on another, and the
 * recording started and stopped, the probe detached and attached, over
 * and over (text patched under a running CPU: this fixture's guest runs
 * one TCG thread): every start and stop succeeds, nothing crashes or
 * leaks (the debug kernel's KASAN and kmemleak watch), and at the end
 * rmmod of both modules works.
 */
TEST_F_TIMEOUT(probe_text, record_start_stop_detach_race_with_calls_and_resizes, 300)
{
	struct rec_race x = { .fd = self->fd };
	pthread_t t1, t2;
	double end = now_s() + 3;

	ASSERT_EQ(0, kml_load_once(RING_KO, ""));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
	x.ring = ring_open(8);
	ASSERT_GE(x.ring, 0);
	ASSERT_EQ(0, pthread_create(&t1, NULL, race_calls, &x));
	ASSERT_EQ(0, pthread_create(&t2, NULL, race_consume, &x));
	/* At least 40 rounds, however slow the machine; 3 s if more fit. */
	for (x.rounds = 0; x.rounds < 40 || (now_s() < end && x.rounds < 2000); x.rounds++) {
		struct kml_probe_record rc;

		ASSERT_EQ(0, record(self->fd, TARGET, x.ring, (uint32_t)x.rounds, NULL));
		usleep(1000);
		if (x.rounds % 3 == 0) {
			ASSERT_EQ(0, detach(self->fd, TARGET));
			ASSERT_EQ(0, attach(self->fd, TARGET, 0, 2));
			continue;
		}
		ASSERT_EQ(0, record(self->fd, TARGET, -1, 0, &rc));
	}
	atomic_store(&x.stop, 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	ASSERT_EQ(0, record(self->fd, TARGET, x.ring, 0, NULL));
	close(x.ring);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_probe"));
	ASSERT_EQ(0, kml_unload("kml_ring"));
}

TEST_HARNESS_MAIN
