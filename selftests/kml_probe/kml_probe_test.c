// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_probe, run as root inside the test guest (see
 * scripts/guest/selftests.sh for KMODLAB_KO_DIR and KMODLAB_BIN).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>
#include "kselftest_harness.h"
#include "../kml_selftest.h"

#define DEV	KML_PROBE_DEVICE
#define TARGET	"kml_probe_target"

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

TEST_F(probe, attach_detach_lifecycle)
{
	struct kml_probe_list l = { .size = sizeof(l) };
	struct kml_probe_result r;
	uint32_t v;

	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_GET_VERSION, &v));
	EXPECT_EQ(KML_PROBE_ABI_VERSION, v);
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
	EXPECT_EQ(0, l.count);
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
	ASSERT_EQ(1, l.count);
	EXPECT_STREQ(TARGET, l.funcs[0].func);
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(0, r.count);
	EXPECT_GT(r.maxactive, 0) TH_LOG("the kernel's default maxactive is reported");
	EXPECT_EQ(-EEXIST, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
	EXPECT_EQ(-ENOENT, detach(self->fd, TARGET));
	EXPECT_EQ(-ENOENT, get(self->fd, TARGET, &r));
	ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
	EXPECT_EQ(0, l.count);
	/* And again: detach left nothing behind that blocks a new attach. */
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, detach(self->fd, TARGET));
}

TEST_F(probe, counts_are_exact)
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
	ASSERT_EQ(0, call(self->fd, 1, 7, 0, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(7, r.count);
}

TEST_F(probe, known_duration_lands_in_its_bucket)
{
	const uint64_t delay = 700000;	/* mid-bucket 20: [524288, 1048575] */
	struct kml_probe_result r;

	ASSERT_EQ(20, bucket(delay));
	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, call(self->fd, 1, 20, 0, delay));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(20, r.count);
	for (int k = 0; k < 20; k++) {
		EXPECT_EQ(0, r.hist[k])
			TH_LOG("bucket %d: a call shorter than its busy-wait", k);
	}
	/*
	 * Probe overhead, an interrupt or the host descheduling a vCPU can
	 * push a call over; nothing can make one shorter. Most must land.
	 */
	EXPECT_GE(r.hist[20], 16);
	EXPECT_GE(r.min_ns, delay);
}

TEST_F(probe, nested_calls_each_get_their_own_start)
{
	const uint64_t delay = 200000;	/* 200, 400, 600 us: buckets 18, 19, 20 */
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	ASSERT_EQ(0, call(self->fd, 1, 10, 2, delay));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(30, r.count);
	EXPECT_EQ(0, r.nmissed);
	for (int k = 0; k < 18; k++) {
		EXPECT_EQ(0, r.hist[k]) TH_LOG("bucket %d", k);
	}
	EXPECT_GE(r.hist[18], 7);
	EXPECT_GE(r.hist[19], 7);
	EXPECT_GE(r.hist[20], 7);
}

TEST_F(probe, maxactive_exhaustion_is_reported)
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
}

TEST_F(probe, argument_and_return_capture)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 3));
	ASSERT_EQ(0, call(self->fd, 1234, 1, 2, 1000));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(3, r.nargs);
	/* The outermost call returns last: its values are the last ones. */
	EXPECT_EQ(1234, r.last_args[0]);
	EXPECT_EQ(2, r.last_args[1]);
	EXPECT_EQ(1000, r.last_args[2]);
	EXPECT_EQ(1236, r.last_ret);
}

TEST_F(probe, argument_filter)
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

TEST_F(probe, pid_and_tgid_filters)
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
}

TEST_F(probe, count_only_kprobe)
{
	struct kml_probe_result r;

	ASSERT_EQ(0, attach(self->fd, TARGET, KML_PROBE_F_COUNT_ONLY, 0));
	ASSERT_EQ(0, call(self->fd, 1, 50, 1, 0));
	ASSERT_EQ(0, get(self->fd, TARGET, &r));
	EXPECT_EQ(100, r.count);
	EXPECT_EQ(0, r.sum_ns);
	EXPECT_EQ(KML_PROBE_F_COUNT_ONLY, r.flags);
}

TEST_F(probe, errors)
{
	struct kml_probe_attach a;
	struct kml_probe_result r;
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
	{
		struct kml_probe_list l = { .size = 4 };

		EXPECT_EQ(-1, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 0, 0, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 100001, 0, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 1, 9, 0));
	EXPECT_EQ(-EINVAL, call(self->fd, 0, 1, 0, 10000001));
	EXPECT_EQ(-1, ioctl(self->fd, _IO(KML_PROBE_IOC_MAGIC, 0x1f)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-EINVAL, get(self->fd, "", &r));
	/* Nothing was attached by any of that. */
	{
		struct kml_probe_list l = { .size = sizeof(l) };

		ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
		EXPECT_EQ(0, l.count);
	}
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

TEST_F(probe, too_many_is_enospc)
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

TEST_F(probe, unprivileged_is_eperm)
{
	pid_t pid;
	int status;

	ASSERT_EQ(0, attach(self->fd, TARGET, 0, 0));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct kml_probe_result r;
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(DEV, O_RDONLY);
		if (fd < 0)
			_exit(11);
		if (get(fd, TARGET, &r))	/* results are for everyone */
			_exit(12);
		if (attach(fd, "vfs_read", 0, 0) != -EPERM)
			_exit(13);
		if (detach(fd, TARGET) != -EPERM)
			_exit(14);
		if (ioctl(fd, KML_PROBE_IOC_RESET) != -1 || errno != EPERM)
			_exit(15);
		if (call(fd, 1, 1, 0, 0) != -EPERM)
			_exit(16);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	{
		struct kml_probe_list l = { .size = sizeof(l) };

		ASSERT_EQ(0, ioctl(self->fd, KML_PROBE_IOC_LIST, &l));
		EXPECT_EQ(1, l.count);
	}
}

struct racer {
	int fd, cpu;
	volatile int stop;
	unsigned long calls, errors;
};

static void *call_loop(void *arg)
{
	struct racer *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!r->stop) {
		if (call(r->fd, 1, 20, 1, 0))
			r->errors++;
		r->calls++;
	}
	return NULL;
}

TEST_F_TIMEOUT(probe, attach_detach_races_calls_on_both_cpus, 90)
{
	struct racer r[2] = { { .fd = self->fd, .cpu = 0 }, { .fd = self->fd, .cpu = 1 } };
	pthread_t th[2];
	struct timespec t0, t;
	unsigned long cycles = 0;
	int i;

	ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, call_loop, &r[i]));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* kretprobe, kretprobe with arguments, plain kprobe, in turn */
		unsigned int kind = cycles % 3;

		ASSERT_EQ(0, attach(self->fd, TARGET, kind == 2 ? KML_PROBE_F_COUNT_ONLY : 0,
				    kind == 1 ? 2 : 0));
		usleep(1000);
		ASSERT_EQ(0, detach(self->fd, TARGET));
		cycles++;
		clock_gettime(CLOCK_MONOTONIC, &t);
		/* 4 s, and at least 20 cycles on a slow or busy machine */
	} while (t.tv_sec - t0.tv_sec < 4 || (cycles < 20 && t.tv_sec - t0.tv_sec < 40));
	for (i = 0; i < 2; i++) {
		r[i].stop = 1;
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, r[i].errors);
		EXPECT_GT(r[i].calls, 0);
	}
	TH_LOG("%lu attach/detach cycles, %lu + %lu batches of calls", cycles,
	       r[0].calls, r[1].calls);
	EXPECT_GE(cycles, 20);
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

/* ---- the client ---- */

#define CLIENT(fmt, ...) KML_CLIENT("kml-probe", fmt, ##__VA_ARGS__)

TEST_F(probe, client)
{
	char cmd[4300], out[16384];

	EXPECT_EQ(0, CLIENT("attach " TARGET " --args 2")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("call 20 300"));
	EXPECT_EQ(0, CLIENT("hist " TARGET));
	EXPECT_NE(NULL, strstr(out, "nsecs")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "262144 -> 524287")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "|****")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("--json list"));
	EXPECT_NE(NULL, strstr(out, "\"func\":\"" TARGET "\",\"count\":20,")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("list"));
	EXPECT_NE(NULL, strstr(out, "FUNCTION")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("--json hist " TARGET " -w 1"));
	EXPECT_NE(NULL, strstr(out, "\"count\":0,")) TH_LOG("%s", out);
	EXPECT_EQ(0, CLIENT("reset"));
	EXPECT_EQ(0, CLIENT("detach " TARGET));
	EXPECT_EQ(1, CLIENT("attach no_such_function_kmodlab"));
	EXPECT_NE(NULL, strstr(out, "no such kernel function")) TH_LOG("%s", out);
	EXPECT_EQ(1, CLIENT("detach " TARGET));
	EXPECT_NE(NULL, strstr(out, "is not attached")) TH_LOG("%s", out);
	EXPECT_EQ(1, CLIENT("attach " TARGET " --args 9"));
	EXPECT_EQ(2, CLIENT("bogus"));
	{
		const char *bin = getenv("KMODLAB_BIN");

		snprintf(cmd, sizeof(cmd),
			 "setpriv --reuid=65534 --regid=65534 --clear-groups %s/kml-probe attach vfs_read 2>&1",
			 bin);
		EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "needs root")) TH_LOG("%s", out);
	}
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kml_unload("kml_probe"));
	EXPECT_EQ(1, CLIENT("list"));
	EXPECT_NE(NULL, strstr(out, "kml_probe is not loaded")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
