// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_stats, run as root inside the test guest.
 *
 * KMODLAB_KO_DIR names the directory holding the built modules/ tree and
 * KMODLAB_BIN the directory holding the clients; scripts/guest/selftests.sh
 * sets both. Modules are loaded with finit_module(2) and removed with
 * delete_module(2) directly so the tests do not depend on kmod's tools.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../kml_selftest.h"
#include "../kml_fault.h"
#include "../kml_trace.h"
#include "../../userspace/kml_stats_parse.h"

#define STATS	"/proc/kmodlab/stats"
#define CONTROL	"/proc/kmodlab/control"
#define PARAM	"/sys/module/kml_stats/parameters/demo_counters"
#define BIG	4000	/* demo counters: makes the file well over 64 KiB */

/* Seconds since some fixed point, for loops that run until enough is done. */
static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Race loops run until they have done enough work, however slow or busy
 * the host; this cap only turns a hang into a failure.
 */
#define WORK_CAP_S	600

/* (Re)load kml_stats with @params so each test starts from known state. */
static int reload_stats(const char *params)
{
	int ret = kml_unload("kml_stats");

	return ret ? ret : kml_load("modules/kml_stats/kml_stats.ko", params);
}

/* Reads all of @path in reads of @chunk bytes. Caller frees. */
static char *slurp(const char *path, size_t chunk, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (cap - n < chunk) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, chunk);
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int write_str(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, s, len) == (ssize_t)len ? 0 : -errno;
	close(fd);
	return ret;
}

static const struct kml_rec *find(const struct kml_snapshot *s,
				  const char *set, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->recs[i].set, set) &&
		    !strcmp(s->recs[i].name, name))
			return &s->recs[i];
	return NULL;
}

static int snap(struct kml_snapshot *s)
{
	size_t len, bad;
	char *text = slurp(STATS, 65536, &len);
	int ret;

	if (!text)
		return -EIO;
	ret = kml_parse_text(text, len, s, &bad);
	free(text);
	return ret;
}

TEST(load_unload)
{
	struct stat st;

	ASSERT_EQ(0, reload_stats("demo_counters=3"));
	/*
	 * Anyone reads the stats, no one writes them; anyone may open the
	 * control file for writing, so that the write() says EPERM.
	 */
	ASSERT_EQ(0, stat(STATS, &st));
	EXPECT_EQ(S_IFREG | 0444, st.st_mode)
		TH_LOG("stats has mode %o, not 0444", st.st_mode & 07777);
	ASSERT_EQ(0, stat(CONTROL, &st));
	EXPECT_EQ(S_IFREG | 0666, st.st_mode)
		TH_LOG("control has mode %o, not 0666", st.st_mode & 07777);
	ASSERT_EQ(0, kml_unload("kml_stats"));
	ASSERT_EQ(-1, stat("/proc/kmodlab", &st));
	ASSERT_EQ(ENOENT, errno);
	/* Out-of-range parameters refuse the load rather than clamp. */
	ASSERT_EQ(-EINVAL, kml_load("modules/kml_stats/kml_stats.ko",
				"demo_counters=4001"));
	ASSERT_EQ(-1, stat("/proc/kmodlab", &st));
	ASSERT_EQ(0, kml_load("modules/kml_stats/kml_stats.ko", ""));
}

/* /proc/meminfo's @key in kB, the per-CPU counts folded in first; -1 if absent. */
static long long meminfo_kb(const char *key)
{
	char line[256];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f;
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);

	if (fd >= 0) {
		/* Best effort: without it the count lags a few pages per CPU. */
		ssize_t w = write(fd, "1", 1);

		(void)w;
		close(fd);
	}
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = atoll(line + n + 1);
			break;
		}
	fclose(f);
	return v;
}

/*
 * Each open of the stats file allocates a cursor (over 500 bytes: a
 * histogram's scratch space); its release must free it. Many opens and
 * closes must leave the kernel's unreclaimable slab memory where it was:
 * a release that frees only the seq_file leaks megabytes here.
 */
TEST(stats_release_frees_what_open_allocated)
{
	const int n = 20000;
	long long before, after;
	int i, fd;

	ASSERT_EQ(0, reload_stats("demo_counters=3 self_stats=0"));
	/*
	 * The debug kernel's KASAN keeps freed objects in its quarantine (up
	 * to 1/32 of memory), so the slab total grows as much as a leak would
	 * (4224 kB measured); its kmemleak, whose scan at the guest's end
	 * fails the run on any unreferenced object, is the judge there.
	 */
	if (!access("/sys/kernel/debug/kmemleak", F_OK)) {
		TH_LOG("a kernel with kmemleak (the debug profile): its scan judges the leak");
		return;
	}
	/* A few rounds first, so caches the path needs exist already. */
	for (i = 0; i < 100; i++) {
		fd = open(STATS, O_RDONLY);
		ASSERT_GE(fd, 0);
		close(fd);
	}
	before = meminfo_kb("SUnreclaim");
	ASSERT_GE(before, 0);
	for (i = 0; i < n; i++) {
		fd = open(STATS, O_RDONLY);
		ASSERT_GE(fd, 0);
		close(fd);
	}
	after = meminfo_kb("SUnreclaim");
	/* A leak is n cursors, over 10 MB; a quarter of that is plenty of slack. */
	EXPECT_LT(after - before, (long long)n * KML_STATS_HIST_BUCKETS * 8 / 4 / 1024)
		TH_LOG("%d opens and closes kept %lld kB of slab memory: does the release free what the open allocated?",
		       n, after - before);
}

FIXTURE(big) {
	char *text;
	size_t len;
};

FIXTURE_SETUP(big)
{
	char params[64];

	snprintf(params, sizeof(params), "demo_counters=%d self_stats=0", BIG);
	ASSERT_EQ(0, reload_stats(params));
	self->text = slurp(STATS, 4096, &self->len);
	ASSERT_NE(NULL, self->text);
}

FIXTURE_TEARDOWN(big)
{
	free(self->text);
}

TEST_F_TIMEOUT(big, content_and_format, 300)
{
	struct kml_snapshot s;
	const struct kml_rec *r;
	size_t bad = 0;
	char name[16];
	int i, k;

	ASSERT_EQ(0, kml_parse_text(self->text, self->len, &s, &bad))
		TH_LOG("malformed line %zu", bad);
	ASSERT_EQ(0, strncmp(self->text, "# kmodlab-stats 1\n", 18));
	/* The demo set and nothing else, since self_stats=0. */
	ASSERT_EQ(BIG + 1, s.n);
	for (i = 0; i < BIG; i++) {
		snprintf(name, sizeof(name), "c%05d", i);
		r = &s.recs[i];
		ASSERT_STREQ("demo", r->set);
		ASSERT_STREQ(name, r->name);
		ASSERT_EQ(KML_REC_COUNTER, r->type);
		ASSERT_EQ((uint64_t)i, r->value);
	}
	/* values holds 0..BIG-1: 1 zero, then 2^(k-1) values per bucket k. */
	r = find(&s, "demo", "values");
	ASSERT_NE(NULL, r);
	ASSERT_EQ(KML_REC_HIST, r->type);
	ASSERT_EQ((uint64_t)BIG, r->value);
	ASSERT_EQ((uint64_t)BIG * (BIG - 1) / 2, r->sum);
	ASSERT_EQ(1, r->buckets[0]);
	for (k = 1; k <= 11; k++)
		ASSERT_EQ(1ULL << (k - 1), r->buckets[k]);
	ASSERT_EQ((uint64_t)BIG - 2048, r->buckets[12]);
	for (k = 13; k < KML_STATS_HIST_BUCKETS; k++)
		ASSERT_EQ(0, r->buckets[k]);
	kml_snapshot_free(&s);
}

TEST_F_TIMEOUT(big, read_sizes_give_identical_bytes, 300)
{
	static const size_t sizes[] = { 1, 7, 4096, 1 << 20 };
	size_t i, len;
	char *t;

	ASSERT_GT(self->len, 65536);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		t = slurp(STATS, sizes[i], &len);
		ASSERT_NE(NULL, t);
		EXPECT_EQ(self->len, len) TH_LOG("read size %zu", sizes[i]);
		EXPECT_EQ(0, memcmp(self->text, t, len < self->len ? len : self->len))
			TH_LOG("read size %zu", sizes[i]);
		free(t);
	}
}

TEST_F_TIMEOUT(big, lseek_pread_reread, 300)
{
	const size_t offs[] = { 0, 1, 17, 4095, 4096, 65535, 65536, 65537,
				self->len / 2, self->len - 1, self->len };
	char buf[5000];
	size_t i, want;
	ssize_t r;
	int fd = open(STATS, O_RDONLY);

	ASSERT_GE(fd, 0);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		want = self->len - offs[i];
		if (want > sizeof(buf))
			want = sizeof(buf);
		/* pread() may return short at a record boundary: loop. */
		memset(buf, 0, sizeof(buf));
		r = pread(fd, buf, want, offs[i]);
		ASSERT_GE(r, 0);
		ASSERT_LE((size_t)r, want);
		if (want)
			ASSERT_GT(r, 0);
		EXPECT_EQ(0, memcmp(self->text + offs[i], buf, r))
			TH_LOG("pread at %zu", offs[i]);

		ASSERT_EQ((off_t)offs[i], lseek(fd, offs[i], SEEK_SET));
		r = read(fd, buf, want);
		ASSERT_GE(r, 0);
		EXPECT_EQ(0, memcmp(self->text + offs[i], buf, r))
			TH_LOG("lseek+read at %zu", offs[i]);
	}
	/* Relative seeks work; seq_file cannot know the size, so no SEEK_END. */
	ASSERT_EQ(100, lseek(fd, 100, SEEK_SET));
	ASSERT_EQ(150, lseek(fd, 50, SEEK_CUR));
	r = read(fd, buf, 10);
	ASSERT_EQ(10, r);
	EXPECT_EQ(0, memcmp(self->text + 150, buf, 10));
	EXPECT_EQ(-1, lseek(fd, 0, SEEK_END));
	EXPECT_EQ(-1, lseek(fd, -1, SEEK_SET));
	EXPECT_EQ(EINVAL, errno);
	/* Past the end: EOF, not an error. */
	EXPECT_EQ(0, pread(fd, buf, 10, self->len + 1000));
	/* Back to the start and read it all again: the same bytes. */
	ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
	{
		size_t n = 0;
		char *again = malloc(self->len + 1);

		ASSERT_NE(NULL, again);
		while ((r = read(fd, again + n, self->len + 1 - n)) > 0)
			n += r;
		EXPECT_EQ(self->len, n);
		EXPECT_EQ(0, memcmp(self->text, again, self->len));
		free(again);
	}
	close(fd);
}

TEST_F_TIMEOUT(big, reset_as_root, 300)
{
	struct kml_snapshot s;
	const struct kml_rec *r;

	ASSERT_EQ(0, write_str(CONTROL, "reset demo\n", 11));
	ASSERT_EQ(0, snap(&s));
	ASSERT_NE(NULL, r = find(&s, "demo", "c03999"));
	EXPECT_EQ(0, r->value);
	ASSERT_NE(NULL, r = find(&s, "demo", "values"));
	EXPECT_EQ(0, r->value);
	EXPECT_EQ(0, r->sum);
	for (int k = 0; k < KML_STATS_HIST_BUCKETS; k++)
		EXPECT_EQ(0, r->buckets[k]);
	kml_snapshot_free(&s);
	/* Reset is a baseline: new events count from zero. */
	ASSERT_EQ(0, write_str(PARAM, "5", 1));
	ASSERT_EQ(0, write_str(CONTROL, "reset", 5));
	ASSERT_EQ(0, snap(&s));
	ASSERT_EQ(6, s.n);
	for (size_t i = 0; i < s.n; i++)
		EXPECT_EQ(0, s.recs[i].value);
	kml_snapshot_free(&s);
}

TEST_F_TIMEOUT(big, reset_unprivileged_is_eperm, 300)
{
	size_t len;
	char *after;
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(CONTROL, O_WRONLY);
		if (fd < 0)
			_exit(11);
		if (write(fd, "reset\n", 6) != -1)
			_exit(12);
		if (errno != EPERM)
			_exit(13);
		if (write(fd, "garbage", 7) != -1 || errno != EPERM)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	after = slurp(STATS, 4096, &len);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(self->len, len);
	EXPECT_EQ(0, memcmp(self->text, after, len));
	free(after);
}

TEST_F_TIMEOUT(big, reset_malformed_changes_nothing, 300)
{
	static const struct { const char *s; size_t len; int err; } bad[] = {
		{ "", 0, EINVAL },
		{ "rese", 4, EINVAL },
		{ "RESET", 5, EINVAL },
		{ "reset  demo", 11, EINVAL },
		{ "reset\tdemo", 10, EINVAL },
		{ "reset demo extra", 16, EINVAL },
		{ "reset demo\n\n", 12, EINVAL },
		{ "reset ", 6, EINVAL },
		{ "reset\0demo", 10, EINVAL },
		{ "reset d/emo", 11, EINVAL },
		{ "reset abcdefghijklmnopqrstuvwxyz0123456789", 42, EINVAL },
		{ "reset nosuchset", 15, ENOENT },
	};
	char big[300];
	size_t i, len;
	char *after;
	int fd = open(CONTROL, O_WRONLY);

	ASSERT_GE(fd, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, write(fd, bad[i].s, bad[i].len))
			TH_LOG("\"%s\" was accepted", bad[i].s);
		EXPECT_EQ(bad[i].err, errno) TH_LOG("\"%s\"", bad[i].s);
	}
	memset(big, 'x', sizeof(big));
	EXPECT_EQ(-1, write(fd, big, sizeof(big)));
	EXPECT_EQ(EINVAL, errno);
	/* Through syscall() so the compiler does not see the bad pointer. */
	EXPECT_EQ(-1, syscall(SYS_write, fd, 8UL, 5UL));
	EXPECT_EQ(EFAULT, errno);
	close(fd);

	after = slurp(STATS, 4096, &len);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(self->len, len);
	EXPECT_EQ(0, memcmp(self->text, after, len));
	free(after);
}

TEST(self_stats_count_opens_and_errors)
{
	struct kml_snapshot a, b;
	const struct kml_rec *ra, *rb;

	ASSERT_EQ(0, reload_stats("demo_counters=2"));
	ASSERT_EQ(0, snap(&a));
	ASSERT_EQ(-EINVAL, write_str(CONTROL, "bogus", 5));
	ASSERT_EQ(0, snap(&b));
	ASSERT_NE(NULL, ra = find(&a, "kml_stats", "opens"));
	ASSERT_NE(NULL, rb = find(&b, "kml_stats", "opens"));
	EXPECT_EQ(ra->value + 1, rb->value);
	ASSERT_NE(NULL, ra = find(&a, "kml_stats", "control_errors"));
	ASSERT_NE(NULL, rb = find(&b, "kml_stats", "control_errors"));
	EXPECT_EQ(ra->value + 1, rb->value);
	ASSERT_NE(NULL, rb = find(&b, "kml_stats", "read_bytes"));
	EXPECT_EQ(KML_REC_HIST, rb->type);
	EXPECT_GT(rb->value, 0);
	kml_snapshot_free(&a);
	kml_snapshot_free(&b);
}

TEST(demo_param_rejects_out_of_range)
{
	struct kml_snapshot s;

	ASSERT_EQ(0, reload_stats("demo_counters=10 self_stats=0"));
	EXPECT_EQ(-EINVAL, write_str(PARAM, "4001", 4));
	EXPECT_EQ(-EINVAL, write_str(PARAM, "-1", 2));
	EXPECT_EQ(-EINVAL, write_str(PARAM, "ten", 3));
	ASSERT_EQ(0, snap(&s));
	EXPECT_EQ(11, s.n);
	kml_snapshot_free(&s);
	ASSERT_EQ(0, write_str(PARAM, "0", 1));
	ASSERT_EQ(0, snap(&s));
	EXPECT_EQ(0, s.n);
	kml_snapshot_free(&s);
}

TEST(api_from_another_module)
{
	struct kml_snapshot s;
	const struct kml_rec *r;

	ASSERT_EQ(0, reload_stats(""));
	kml_unload("kml_stats_apitest");
	/* Its init runs every check and fails the load if one fails. */
	ASSERT_EQ(0, kml_load("modules/tests/kml_stats_apitest.ko", ""))
		TH_LOG("see the guest's dmesg for the failed check");
	/* It leaves the largest set allowed (4096 counters) for us to read. */
	ASSERT_EQ(0, snap(&s));
	ASSERT_NE(NULL, r = find(&s, "apitest_big", "c0000"));
	EXPECT_EQ(0, r->value);
	ASSERT_NE(NULL, r = find(&s, "apitest_big", "c4095"));
	EXPECT_EQ(4095, r->value);
	EXPECT_EQ(NULL, find(&s, "apitest_big", "c4096"));
	kml_snapshot_free(&s);
	/* A user of the API pins kml_stats. */
	EXPECT_EQ(-1, syscall(SYS_delete_module, "kml_stats", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	ASSERT_EQ(0, kml_unload("kml_stats_apitest"));
}

/* ---- privilege is checked on the opener and on the writer ---- */

/*
 * A descriptor opened by root and written by an unprivileged process, and
 * one opened unprivileged and written after regaining root, are both
 * refused: neither side alone may reset. The stats do not change. Two
 * tests, one per side, so a failure says which check is missing.
 */

/* Runs @child in a fork; its exit status, or -1 if it did not exit. */
static int in_child(int (*child)(int fd), int fd)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(child(fd));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The stats file, loaded with nothing that changes between reads. */
static char *quiet_stats(size_t *len)
{
	if (reload_stats("demo_counters=30 self_stats=0"))
		return NULL;
	return slurp(STATS, 4096, len);
}

/* Writes reset as user nobody on @fd, a descriptor root opened. */
static int nobody_writes(int fd)
{
	if (setgid(65534) || setuid(65534))
		return 10;
	if (write(fd, "reset\n", 6) != -1)
		return 11;
	return errno == EPERM ? 0 : 12;
}

TEST(control_opened_by_root_is_eperm_for_an_unprivileged_writer)
{
	size_t len0, len1;
	char *before, *after;
	int fd;

	before = quiet_stats(&len0);
	ASSERT_NE(NULL, before);
	fd = open(CONTROL, O_WRONLY);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(0, in_child(nobody_writes, fd))
		TH_LOG("exit 11: nobody reset through root's descriptor (is the writer's own privilege checked?); 12: not EPERM");
	close(fd);

	after = slurp(STATS, 4096, &len1);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(len0, len1);
	EXPECT_EQ(0, memcmp(before, after, len0 < len1 ? len0 : len1));
	free(before);
	free(after);
}

/*
 * Opens without privilege (effective uid nobody, saved uid 0), then
 * writes with it regained: the opener's credentials count too. The same
 * process, opening again as root, may.
 */
static int nobody_opens_root_writes(int unused)
{
	int fd;

	(void)unused;
	if (setresuid(-1, 65534, 0))
		return 20;
	fd = open(CONTROL, O_WRONLY);
	if (fd < 0)
		return 21;
	if (seteuid(0))
		return 22;
	if (write(fd, "reset\n", 6) != -1)
		return 23;
	if (errno != EPERM)
		return 24;
	close(fd);
	fd = open(CONTROL, O_WRONLY);
	if (fd < 0 || write(fd, "reset nosuchset", 15) != -1 || errno != ENOENT)
		return 25;
	return 0;
}

TEST(control_opened_unprivileged_is_eperm_for_a_root_writer)
{
	size_t len0, len1;
	char *before, *after;

	before = quiet_stats(&len0);
	ASSERT_NE(NULL, before);
	EXPECT_EQ(0, in_child(nobody_opens_root_writes, -1))
		TH_LOG("exit 23: root reset through a descriptor nobody opened (is the opener's privilege checked?); 24: not EPERM; 25: root's own descriptor refused");

	after = slurp(STATS, 4096, &len1);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(len0, len1);
	EXPECT_EQ(0, memcmp(before, after, len0 < len1 ? len0 : len1));
	free(before);
	free(after);
}

/* Commands right at and just past the length limits. */
TEST(control_length_limits)
{
	char cmd[KML_STATS_CONTROL_MAX + 2], help[512];
	size_t len0, len1;
	char *before, *after;
	ssize_t n;
	int fd;

	ASSERT_EQ(0, reload_stats("demo_counters=30 self_stats=0"));
	before = slurp(STATS, 4096, &len0);
	ASSERT_NE(NULL, before);
	fd = open(CONTROL, O_RDWR);
	ASSERT_GE(fd, 0);

	/* One byte over the limit with no newline to drop: refused. */
	memset(cmd, 'x', sizeof(cmd));
	EXPECT_EQ(-1, write(fd, cmd, KML_STATS_CONTROL_MAX + 1));
	EXPECT_EQ(EINVAL, errno);
	/* The same length ending in the newline is parsed, and refused. */
	memcpy(cmd, "reset ", 6);
	cmd[KML_STATS_CONTROL_MAX] = '\n';
	EXPECT_EQ(-1, write(fd, cmd, KML_STATS_CONTROL_MAX + 1));
	EXPECT_EQ(EINVAL, errno);
	/* A set name of the longest length is a name: no such set. */
	snprintf(cmd, sizeof(cmd), "reset %.*s\n", KML_STATS_NAME_MAX,
		 "abcdefghijklmnopqrstuvwxyz0123456789");
	EXPECT_EQ(-1, write(fd, cmd, strlen(cmd)));
	EXPECT_EQ(ENOENT, errno);
	/* One longer is not a name. */
	snprintf(cmd, sizeof(cmd), "reset %.*s\n", KML_STATS_NAME_MAX + 1,
		 "abcdefghijklmnopqrstuvwxyz0123456789");
	EXPECT_EQ(-1, write(fd, cmd, strlen(cmd)));
	EXPECT_EQ(EINVAL, errno);

	/* Reading the control file gives its usage, and changes nothing. */
	n = pread(fd, help, sizeof(help) - 1, 0);
	ASSERT_GT(n, 0);
	help[n] = '\0';
	EXPECT_NE(NULL, strstr(help, "\nreset <set>\n")) TH_LOG("%s", help);
	close(fd);

	after = slurp(STATS, 4096, &len1);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(len0, len1);
	EXPECT_EQ(0, memcmp(before, after, len0 < len1 ? len0 : len1));
	free(before);
	free(after);
}

/* ---- allocation failures: every allocating call fails cleanly ---- */

#define FAULT_SETUP(f)							\
	do {								\
		int ret_ = kml_fault_init(f);				\
		if (ret_)						\
			SKIP(return, "no fault injection in this kernel (%s)", \
			     strerror(-ret_));				\
	} while (0)

/* No fixture state: a plain TEST cannot have a longer timeout. */
FIXTURE(fault) {};
FIXTURE_SETUP(fault) {}
FIXTURE_TEARDOWN(fault) {}

static int stats_absent(void)
{
	return access("/proc/kmodlab", F_OK) && errno == ENOENT &&
	       access("/sys/module/kml_stats", F_OK) && errno == ENOENT;
}

/* The module, loaded with @params, works: demo has @n counters. */
static int stats_work(unsigned int n)
{
	struct kml_snapshot s;
	const struct kml_rec *r;
	char name[16];
	int ok;

	if (snap(&s))
		return 0;
	snprintf(name, sizeof(name), "c%05u", n - 1);
	r = find(&s, "demo", name);
	ok = r && r->value == n - 1 && find(&s, "kml_stats", "opens") &&
	     find(&s, "demo", "values");
	kml_snapshot_free(&s);
	return ok && write_str(CONTROL, "reset demo", 10) == 0;
}

/*
 * finit_module() of kml_stats, each allocation of its init failed in
 * turn: the self and demo sets, /proc/kmodlab and its files. Every failure is an error with nothing left behind.
 */
TEST_F_TIMEOUT(fault, load, 600)
{
	/* On the stack: no page fault in the call may take the failure. */
	char params[] = "demo_counters=8";
	unsigned int n, fired = 0, refused = 0;
	struct kml_fault f;
	long ret;
	int fd;

	FAULT_SETUP(&f);
	KML_FAULT_RANGE_OR_ALL(kml_fault_modules_only(&f));
	ASSERT_EQ(0, kml_unload("kml_stats"));
	fd = open(kml_ko_path("modules/kml_stats/kml_stats.ko"), O_RDONLY | O_CLOEXEC);
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
			EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
			ASSERT_TRUE(stats_absent()) TH_LOG("n=%u: left behind", n);
			continue;
		}
		/* A failure the kernel could do without: all there, or bust. */
		ASSERT_TRUE(stats_work(8)) TH_LOG("n=%u", n);
		ASSERT_EQ(0, kml_unload("kml_stats"));
	}
	close(fd);
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	EXPECT_TRUE(stats_work(8));
	TH_LOG("finit_module: %u allocation failures injected, %u refused the load",
	       fired, refused);
	EXPECT_GT(refused, 0);
}

static char *read_param(char *buf, size_t len)
{
	int fd = open(PARAM, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/*
 * Another module may own a set named "demo" while kml_stats has none:
 * building the demo set then fails with -EEXIST and changes nothing.
 */
TEST(demo_name_taken_by_another_module)
{
	struct kml_snapshot s;
	const struct kml_rec *r;
	char val[32];

	ASSERT_EQ(0, reload_stats("demo_counters=0 self_stats=0"));
	kml_unload("kml_stats_apitest");
	ASSERT_EQ(0, kml_load("modules/tests/kml_stats_apitest.ko", "hold_demo=1"));
	EXPECT_EQ(-EEXIST, write_str(PARAM, "5", 1));
	EXPECT_STREQ("0\n", read_param(val, sizeof(val)));
	ASSERT_EQ(0, snap(&s));
	ASSERT_NE(NULL, r = find(&s, "demo", "held"));
	EXPECT_EQ(0, r->value);
	EXPECT_EQ(NULL, find(&s, "demo", "c00000"));
	kml_snapshot_free(&s);
	/* Once it is gone, the name is kml_stats' again. */
	ASSERT_EQ(0, kml_unload("kml_stats_apitest"));
	EXPECT_EQ(0, write_str(PARAM, "5", 1));
	EXPECT_STREQ("5\n", read_param(val, sizeof(val)));
	ASSERT_EQ(0, snap(&s));
	EXPECT_EQ(NULL, find(&s, "demo", "held"));
	ASSERT_NE(NULL, r = find(&s, "demo", "c00004"));
	EXPECT_EQ(4, r->value);
	kml_snapshot_free(&s);
}

/*
 * Resizing the demo set through its parameter, each allocation failed in
 * turn: the write fails, and the old set is still listed, whole, with the
 * parameter still saying its size. (It used to drop the old set before
 * building the new one, so a failure left no demo set and the value 0.)
 * Returns the number of writes that failed.
 */
static unsigned int demo_resize_walk(struct __test_metadata *_metadata,
				     struct kml_fault *f, const char *size)
{
	char *before, *after, val[32], want[32], last[48];
	size_t len0, len1, sz = strlen(size);
	unsigned int n, fired = 0, errors = 0;
	ssize_t ret;
	int fd;

	snprintf(want, sizeof(want), "%s\n", size);
	snprintf(last, sizeof(last), "\ndemo c%05d counter %d\n",
		 atoi(size) - 1, atoi(size) - 1);
	ASSERT_EQ(0, reload_stats("demo_counters=30 self_stats=0"));
	before = slurp(STATS, 4096, &len0);
	ASSERT_NE(NULL, before);
	fd = open(PARAM, O_WRONLY);
	ASSERT_GE(fd, 0);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err;

		ASSERT_EQ(0, kml_fault_arm(f, n));
		ret = pwrite(fd, size, sz, 0);
		err = errno;
		if (!kml_fault_fired(f)) {
			ASSERT_EQ((ssize_t)sz, ret) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired++;
		if (ret == (ssize_t)sz) {
			/* Absorbed (a kvmalloc() falling back): the new set. */
			ASSERT_STREQ(want, read_param(val, sizeof(val)));
			ASSERT_EQ(0, pwrite(fd, "30", 2, 0) == 2 ? 0 : -errno);
			continue;
		}
		errors++;
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
		EXPECT_STREQ("30\n", read_param(val, sizeof(val))) TH_LOG("n=%u", n);
		after = slurp(STATS, 4096, &len1);
		ASSERT_NE(NULL, after);
		ASSERT_EQ(len0, len1) TH_LOG("n=%u: the stats changed", n);
		ASSERT_EQ(0, memcmp(before, after, len0)) TH_LOG("n=%u", n);
		free(after);
	}
	close(fd);
	kml_fault_exit(f);
	ASSERT_LE(n, KML_FAULT_MAX);
	TH_LOG("demo_counters=%s: %u allocation failures injected, %u failed writes",
	       size, fired, errors);
	EXPECT_GT(fired, 0);
	EXPECT_STREQ(want, read_param(val, sizeof(val)));
	after = slurp(STATS, 4096, &len1);
	ASSERT_NE(NULL, after);
	EXPECT_NE(NULL, strstr(after, last)) TH_LOG("no '%s'", last + 1);
	snprintf(last, sizeof(last), "c%05d", atoi(size));
	EXPECT_EQ(NULL, strstr(after, last));
	free(after);
	free(before);
	return errors;
}

/*
 * A small set: every allocation of the rebuild fits in a page, so none
 * can fall back to vmalloc and every failure past the sysfs buffer
 * reaches the module's error path (the one that used to lose the set).
 */
TEST_F_TIMEOUT(fault, demo_resize, 600)
{
	struct kml_fault f;

	FAULT_SETUP(&f);
	/* Not only the sysfs write buffer: the module's own allocations. */
	EXPECT_LT(1, demo_resize_walk(_metadata, &f, "50"));
}

/* A large set: kvmalloc() falls back to vmalloc when kmalloc fails. */
TEST_F_TIMEOUT(fault, demo_resize_large, 600)
{
	struct kml_fault f;

	FAULT_SETUP(&f);
	demo_resize_walk(_metadata, &f, "3000");
}

/*
 * Opening the stats file, each allocation failed in turn: the open fails
 * and is not counted in kml_stats' own "opens".
 */
TEST_F_TIMEOUT(fault, open_stats, 300)
{
	struct kml_snapshot a, b;
	const struct kml_rec *ra, *rb;
	unsigned int n, fired = 0;
	struct kml_fault f;
	char path[] = STATS;
	int fd;

	FAULT_SETUP(&f);
	ASSERT_EQ(0, reload_stats("demo_counters=3"));
	ASSERT_EQ(0, snap(&a));
	ASSERT_NE(NULL, ra = find(&a, "kml_stats", "opens"));
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
		if (fd >= 0)
			close(fd);	/* absorbed: counted, as any open */
		else
			EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
		/* The snapshot's own open counts, and the open if it worked. */
		ASSERT_EQ(0, snap(&b));
		ASSERT_NE(NULL, rb = find(&b, "kml_stats", "opens"));
		EXPECT_EQ(ra->value + 1 + (fd >= 0), rb->value) TH_LOG("n=%u", n);
		kml_snapshot_free(&a);
		a = b;
		ASSERT_NE(NULL, ra = find(&a, "kml_stats", "opens"));
	}
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	TH_LOG("open(stats): %u allocation failures injected", fired);
	EXPECT_GT(fired, 0);
	ASSERT_EQ(0, snap(&b));
	ASSERT_NE(NULL, rb = find(&b, "kml_stats", "opens"));
	EXPECT_EQ(ra->value + 2, rb->value);
	close(fd);
	kml_snapshot_free(&a);
	kml_snapshot_free(&b);
}

/*
 * The first read() of an open stats file allocates seq_file's buffer:
 * failed, it is an error, the file stays usable and its next read gives
 * exactly the bytes it would have.
 */
TEST_F_TIMEOUT(fault, read_stats, 300)
{
	unsigned int n, fired = 0;
	size_t len0, got = 0;
	char *before, *buf;
	struct kml_fault f;
	ssize_t r;
	int fd;

	FAULT_SETUP(&f);
	ASSERT_EQ(0, reload_stats("demo_counters=500 self_stats=0"));
	before = slurp(STATS, 4096, &len0);
	ASSERT_NE(NULL, before);
	buf = malloc(len0 + 1);
	ASSERT_NE(NULL, buf);
	/* Touched: no page fault in read() may take the failure. */
	memset(buf, 0, len0 + 1);
	fd = open(STATS, O_RDONLY);
	ASSERT_GE(fd, 0);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err;

		ASSERT_EQ(0, kml_fault_arm(&f, n));
		r = read(fd, buf, 4096);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_GT(r, 0) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired++;
		if (r >= 0) {
			/* Absorbed: the bytes are right; start again. */
			ASSERT_EQ(0, memcmp(before, buf, r));
			ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
			continue;
		}
		EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
		ASSERT_EQ(0, lseek(fd, 0, SEEK_CUR)) TH_LOG("n=%u: moved", n);
	}
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	TH_LOG("read(stats): %u allocation failures injected", fired);
	EXPECT_GT(fired, 0);
	got = r;
	while (got < len0 && (r = read(fd, buf + got, len0 + 1 - got)) > 0)
		got += r;
	EXPECT_EQ(len0, got);
	EXPECT_EQ(0, memcmp(before, buf, len0));
	close(fd);
	free(buf);
	free(before);
}

/*
 * Opening and writing the control file, each allocation failed in turn:
 * a failed open is an error; a reset either happens whole or not at all.
 */
TEST_F_TIMEOUT(fault, control, 300)
{
	char path[] = CONTROL, cmd[] = "reset demo";
	unsigned int n, fired_open = 0, fired_write = 0;
	struct kml_snapshot s;
	const struct kml_rec *r;
	struct kml_fault f;
	ssize_t ret;
	int fd;

	FAULT_SETUP(&f);
	ASSERT_EQ(0, reload_stats("demo_counters=30 self_stats=0"));
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err;

		ASSERT_EQ(0, kml_fault_arm(&f, n));
		fd = open(path, O_WRONLY);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_GE(fd, 0) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired_open++;
		if (fd >= 0) {
			close(fd);
			continue;
		}
		EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
	}
	ASSERT_LE(n, KML_FAULT_MAX);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		int err, reset;

		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = write(fd, cmd, 10);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_EQ(10, ret) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired_write++;
		ASSERT_EQ(0, snap(&s));
		ASSERT_NE(NULL, r = find(&s, "demo", "c00029"));
		reset = r->value == 0;
		kml_snapshot_free(&s);
		if (ret == 10) {
			EXPECT_TRUE(reset) TH_LOG("n=%u: success, but no reset", n);
			break;
		}
		EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
		EXPECT_FALSE(reset) TH_LOG("n=%u: failed, but reset", n);
	}
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	close(fd);
	TH_LOG("open(control): %u, write(control): %u allocation failures injected",
	       fired_open, fired_write);
	/* The write may allocate nothing; the open allocates its buffer. */
	EXPECT_LT(0, fired_open);
	ASSERT_EQ(0, snap(&s));
	ASSERT_NE(NULL, r = find(&s, "demo", "c00029"));
	EXPECT_EQ(0, r->value);
	kml_snapshot_free(&s);
}

/* ---- races ---- */

struct race {
	volatile int stop;
	int may_fail;		/* open or read may fail (the module goes away) */
	unsigned long passes, bad, failed, chunk;
};

/* Reads the file in small chunks over and over; every pass must parse. */
static void *reader(void *arg)
{
	struct race *r = arg;
	size_t len, bad;

	while (!r->stop) {
		struct kml_snapshot s;
		char *t = slurp(STATS, r->chunk, &len);

		if (!t && r->may_fail) {
			__atomic_add_fetch(&r->failed, 1, __ATOMIC_RELAXED);
		} else if (!t || kml_parse_text(t, len, &s, &bad)) {
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
		} else {
			kml_snapshot_free(&s);
			__atomic_add_fetch(&r->passes, 1, __ATOMIC_RELAXED);
		}
		free(t);
	}
	return NULL;
}

TEST_F_TIMEOUT(big, register_unregister_races_readers, WORK_CAP_S + 60)
{
	static const char *const sizes[] = { "0", "50", "4000", "7", "300" };
	struct race r = { .chunk = 97 };
	pthread_t th[4];
	unsigned long churn = 0;
	double t0;
	int i;

	for (i = 0; i < 4; i++) {
		if (i == 3)
			r.chunk = 4096;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reader, &r));
	}
	/* 5 s, and however long it takes to do enough of both. */
	t0 = now_s();
	do {
		const char *v = sizes[churn % 5];

		ASSERT_EQ(0, write_str(PARAM, v, strlen(v)));
		churn++;
	} while (now_s() - t0 < 5 ||
		 ((churn < 20 || __atomic_load_n(&r.passes, __ATOMIC_RELAXED) < 5) &&
		  now_s() - t0 < WORK_CAP_S));
	r.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu re-registrations, %lu clean passes", churn, r.passes);
	EXPECT_EQ(0, r.bad);
	EXPECT_GE(churn, 20);
	EXPECT_GE(r.passes, 5);
}

TEST(rmmod_while_reader_holds_file_open)
{
	char buf[256];
	int fd, cfd;

	ASSERT_EQ(0, reload_stats("demo_counters=1000"));
	fd = open(STATS, O_RDONLY);
	ASSERT_GE(fd, 0);
	cfd = open(CONTROL, O_WRONLY);
	ASSERT_GE(cfd, 0);
	ASSERT_EQ(sizeof(buf), read(fd, buf, sizeof(buf)));
	/* An open proc file does not pin the module: procfs cuts it off. */
	ASSERT_EQ(0, kml_unload("kml_stats"));
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(-1, write(cfd, "reset", 5));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, close(cfd));
	ASSERT_EQ(0, kml_load("modules/kml_stats/kml_stats.ko", ""));
}

/*
 * Readers in a tight loop while the module comes and goes underneath.
 * Runs until it has done enough unload/load cycles and clean passes, for
 * as long as a slow or busy host needs (it once did 3 cycles in its old
 * fixed 4 s). Every other cycle waits for a clean pass before unloading,
 * so passes happen however a reader's timing falls against the reloads.
 */
TEST_F_TIMEOUT(big, rmmod_races_readers, WORK_CAP_S + 60)
{
	struct race r = { .chunk = 512, .may_fail = 1 };
	pthread_t th[3];
	int i, cycles = 0;
	double t0;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reader, &r));
	t0 = now_s();
	do {
		ASSERT_EQ(0, kml_unload("kml_stats"));
		ASSERT_EQ(0, kml_load("modules/kml_stats/kml_stats.ko",
				  "demo_counters=500"));
		cycles++;
		if (cycles % 2) {
			unsigned long p = __atomic_load_n(&r.passes, __ATOMIC_RELAXED);

			while (__atomic_load_n(&r.passes, __ATOMIC_RELAXED) == p &&
			       now_s() - t0 < WORK_CAP_S)
				usleep(1000);
		}
	} while (now_s() - t0 < 4 ||
		 ((cycles < 10 || __atomic_load_n(&r.passes, __ATOMIC_RELAXED) < 5) &&
		  now_s() - t0 < WORK_CAP_S));
	r.stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	/* Reads cut off by rmmod fail with EIO; no pass may be torn. */
	TH_LOG("%d unload/load cycles, %lu clean passes, %lu cut off", cycles,
	       r.passes, r.failed);
	EXPECT_EQ(0, r.bad);
	EXPECT_GE(cycles, 10);
	EXPECT_GE(r.passes, 5);
}

/* ---- the client ---- */

static const char *client(void)
{
	static char path[4096];
	const char *bin = getenv("KMODLAB_BIN");

	snprintf(path, sizeof(path), "%s/kml-stats", bin ? bin : ".");
	return path;
}

TEST(client_table_json_filter)
{
	char cmd[4300], out[65536];

	ASSERT_EQ(0, reload_stats("demo_counters=20"));
	snprintf(cmd, sizeof(cmd), "%s demo/c0001 2>&1", client());
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "SET"));
	EXPECT_NE(NULL, strstr(out, "c00017"));
	EXPECT_EQ(NULL, strstr(out, "c00002 ")) TH_LOG("filter ignored: %s", out);

	snprintf(cmd, sizeof(cmd), "%s --json demo/values 2>&1", client());
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out)));
	EXPECT_EQ(0, strcmp(out,
		"[{\"set\":\"demo\",\"name\":\"values\",\"type\":\"hist\","
		"\"count\":20,\"sum\":190,\"buckets\":[{\"low\":0,\"high\":0,\"count\":1},"
		"{\"low\":1,\"high\":1,\"count\":1},{\"low\":2,\"high\":3,\"count\":2},"
		"{\"low\":4,\"high\":7,\"count\":4},{\"low\":8,\"high\":15,\"count\":8},"
		"{\"low\":16,\"high\":31,\"count\":4}]}]\n")) TH_LOG("%s", out);

	snprintf(cmd, sizeof(cmd), "%s -w 0.2 -c 3 -j kml_stats/opens 2>&1",
		 client());
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"rate\":")) TH_LOG("%s", out);
}

TEST(client_reset_and_errors)
{
	char cmd[4300], out[4096];

	ASSERT_EQ(0, reload_stats("demo_counters=5"));
	snprintf(cmd, sizeof(cmd), "%s reset demo 2>&1", client());
	ASSERT_EQ(0, kml_run(cmd, out, sizeof(out)));
	snprintf(cmd, sizeof(cmd), "%s reset nosuch 2>&1", client());
	EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no such set")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=65534 --regid=65534 --clear-groups %s reset 2>&1",
		 client());
	EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "needs root")) TH_LOG("%s", out);

	/*
	 * Output it cannot write is an error: a table, and a watch that
	 * used to loop forever on a full disk (timeout says 124 if it does).
	 */
	snprintf(cmd, sizeof(cmd), "%s 2>&1 >/dev/full", client());
	EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "timeout 60 %s -w 0.1 2>&1 >/dev/full", client());
	EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "cannot write the output")) TH_LOG("%s", out);

	ASSERT_EQ(0, kml_unload("kml_stats"));
	snprintf(cmd, sizeof(cmd), "%s 2>&1", client());
	EXPECT_EQ(1, kml_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "kml_stats is not loaded")) TH_LOG("%s", out);
	ASSERT_EQ(0, kml_load("modules/kml_stats/kml_stats.ko", ""));
}

/*
 * ---- the tracepoint kml_stats:reset, read back through a trace instance
 * of the test's own (../kml_trace.h) ----
 */
#define RESET_EV	"events/kml_stats/reset/"

/* kml_stats' users, which pin it: unloaded (if loaded) before it. */
static int unload_users(void)
{
	static const char *const users[] = {
		"kml_stats_apitest", "kml_ring_apitest", "kml_ring", "kml_probe",
		"kml_sensor", "kml_filter",
	};
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(users); i++) {
		ret = kml_unload(users[i]);
		if (ret)
			return ret;
	}
	return 0;
}

FIXTURE(trace) {
	struct kml_trace t;
};

FIXTURE_SETUP(trace)
{
	char name[64];
	int ret;

	ASSERT_EQ(0, unload_users());
	ASSERT_EQ(0, reload_stats("demo_counters=5"));
	snprintf(name, sizeof(name), "kml_stats_test_%d", getpid());
	ret = kml_trace_open(&self->t, name);
	if (ret == -ENODEV)
		SKIP(return, "kernel without tracing (no " KML_TRACEFS ")");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(trace)
{
	EXPECT_EQ(0, kml_trace_close(&self->t));
}

#define MAX_SETS	8

/*
 * The sets of the stats file, in its order (which is the order of
 * registration), and the slots each owns: one per counter, and per
 * histogram one per bucket and one for its sum. The number of sets, or
 * -1.
 */
static int sets_of(char name[][KML_STATS_NAME_MAX + 1], long long *slots)
{
	struct kml_snapshot s;
	size_t i;
	int n = 0;

	if (snap(&s))
		return -1;
	for (i = 0; i < s.n && n >= 0; i++) {
		const struct kml_rec *r = &s.recs[i];

		if (!n || strcmp(name[n - 1], r->set)) {
			if (n == MAX_SETS) {
				n = -1;
				break;
			}
			snprintf(name[n], sizeof(name[n]), "%s", r->set);
			slots[n++] = 0;
		}
		slots[n - 1] += r->type == KML_REC_HIST ? KML_STATS_HIST_BUCKETS + 1 : 1;
	}
	kml_snapshot_free(&s);
	return n;
}

/* The pid of a trace line ("<comm>-<pid> [<cpu>] ..."), or -1. */
static long line_pid(const char *line)
{
	const char *eol = strchr(line, '\n'), *p = strstr(line, " ["), *end;

	if (!p || (eol && p > eol))
		return -1;
	while (p > line && p[-1] == ' ')
		p--;
	end = p;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || p == line || p[-1] != '-')
		return -1;
	return strtol(p, NULL, 10);
}

/* The set and nslots of the @nth reset event of @text: 0, or -ENOENT. */
static int reset_nth(const char *text, int nth, char *set, size_t len,
		     long long *nslots)
{
	const char *line = kml_trace_line(text, "reset", nth);

	if (!line || kml_trace_str(line, "set", set, len) ||
	    kml_trace_field(line, "nslots", nslots))
		return -ENOENT;
	return 0;
}

TEST_F_TIMEOUT(trace, reset_event, 300)
{
	char name[MAX_SETS][KML_STATS_NAME_MAX + 1], set[64];
	long long slots[MAX_SETS], nslots;
	int i, n, demo = -1, status;
	char *text;
	pid_t pid;

	n = sets_of(name, slots);
	ASSERT_LE(2, n);	/* kml_stats' own and demo */
	/* 5 counters and a histogram: not the slots of kml_stats' own set */
	for (i = 0; i < n; i++)
		if (!strcmp(name[i], "demo"))
			demo = i;
	ASSERT_LE(0, demo);
	EXPECT_EQ(5 + KML_STATS_HIST_BUCKETS + 1, slots[demo]);
	ASSERT_EQ(0, kml_trace_set(&self->t, RESET_EV "enable", "1"));

	/* Refused: nothing is reset, so nothing is recorded. */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(CONTROL, O_WRONLY);
		if (fd < 0)
			_exit(11);
		if (write(fd, "reset demo", 10) != -1 || errno != EPERM)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-ENOENT, write_str(CONTROL, "reset nosuchset", 15));
	EXPECT_EQ(-EINVAL, write_str(CONTROL, "reset  demo", 11));
	EXPECT_EQ(-EINVAL, write_str(CONTROL, "bogus", 5));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	free(text);

	/* One set: one event, by the writer (common_pid). */
	ASSERT_EQ(0, write_str(CONTROL, "reset demo\n", 11));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	ASSERT_EQ(1, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	ASSERT_EQ(0, reset_nth(text, 0, set, sizeof(set), &nslots));
	EXPECT_STREQ("demo", set);
	EXPECT_EQ(slots[demo], nslots);
	EXPECT_EQ(getpid(), line_pid(kml_trace_line(text, "reset", 0)))
		TH_LOG("%s", text);
	free(text);

	/* Every set: one event each, in the order of the list. */
	ASSERT_EQ(0, kml_trace_clear(&self->t));
	ASSERT_EQ(0, write_str(CONTROL, "reset", 5));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	ASSERT_EQ(n, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, reset_nth(text, i, set, sizeof(set), &nslots));
		EXPECT_STREQ(name[i], set);
		EXPECT_EQ(slots[i], nslots) TH_LOG("set %s", name[i]);
	}
	free(text);
}

/*
 * kml_stats_reset() from another module: kml_stats_apitest resets its
 * set "apitest" (a counter and a histogram) once while it loads.
 */
TEST_F_TIMEOUT(trace, reset_event_from_another_module, 300)
{
	char set[64], *text;
	long long nslots;

	ASSERT_EQ(0, kml_trace_set(&self->t, RESET_EV "enable", "1"));
	ASSERT_EQ(0, kml_load("modules/tests/kml_stats_apitest.ko", ""))
		TH_LOG("see the guest's dmesg for the failed check");
	EXPECT_EQ(0, kml_unload("kml_stats_apitest"));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	ASSERT_EQ(1, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	ASSERT_EQ(0, reset_nth(text, 0, set, sizeof(set), &nslots));
	EXPECT_STREQ("apitest", set);
	EXPECT_EQ(1 + KML_STATS_HIST_BUCKETS + 1, nslots);
	free(text);
}

TEST_F_TIMEOUT(trace, events_come_and_go_with_the_module, 300)
{
	char *en, *text;

	EXPECT_TRUE(kml_trace_listed("kml_stats:reset\n"));
	ASSERT_EQ(0, kml_trace_set(&self->t, RESET_EV "enable", "1"));
	/* An enabled event does not pin the module: rmmod removes it. */
	ASSERT_EQ(0, unload_users());
	ASSERT_EQ(0, kml_unload("kml_stats"));
	EXPECT_FALSE(kml_trace_listed("kml_stats:"));
	en = kml_trace_get(&self->t, RESET_EV "enable");
	EXPECT_EQ(NULL, en);
	free(en);
	EXPECT_EQ(-ENOENT, kml_trace_set(&self->t, RESET_EV "enable", "1"));

	/* Back with the module, and off: nothing carries over. */
	ASSERT_EQ(0, kml_load("modules/kml_stats/kml_stats.ko", "demo_counters=5"));
	EXPECT_TRUE(kml_trace_listed("kml_stats:reset\n"));
	en = kml_trace_get(&self->t, RESET_EV "enable");
	ASSERT_NE(NULL, en);
	EXPECT_STREQ("0\n", en);
	free(en);
	ASSERT_EQ(0, write_str(CONTROL, "reset demo", 10));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	free(text);
	/* and it works when enabled again */
	ASSERT_EQ(0, kml_trace_set(&self->t, RESET_EV "enable", "1"));
	ASSERT_EQ(0, write_str(CONTROL, "reset demo", 10));
	text = kml_trace_get(&self->t, "trace");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(1, kml_trace_count(text, "reset")) TH_LOG("%s", text);
	free(text);
}

TEST_HARNESS_MAIN
