// SPDX-License-Identifier: GPL-2.0
/*
 * kml_bpf selftests: labs/bpf's loader, kml-bpf, and its two programs,
 * run as a user runs them (a child process, stopped by SIGINT) on
 * kml_filter's drops and on kml_probe_target's calls, made in the kernel
 * by kml_probe's CALL ioctl. KMODLAB_BPF names the loader (a student's,
 * when a lab is graded); by default the build's, beside KMODLAB_BIN.
 *
 * What each counted is known exactly: packets on the loopback of a
 * network namespace of the test's own, calls of a function nobody else
 * calls. Latencies are checked from below only (a call is never shorter
 * than its busy-wait; a loaded host makes any call longer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_probe.h>

#include "../kml_selftest.h"
#include "../kml_net.h"
#include "kselftest_harness.h"

/* Time only a failure costs: waiting for what should come at once. */
#define SLOW_MS		60000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static const char *loader(void)
{
	static char path[4096];
	const char *p = getenv("KMODLAB_BPF"), *bin = getenv("KMODLAB_BIN");

	if (p)
		return p;
	snprintf(path, sizeof(path), "%s/../bpf/kml-bpf", bin ? bin : ".");
	return path;
}

/* A running kml-bpf: its pid and the read ends of its stdout and stderr. */
struct bpf_run {
	pid_t pid;
	int out, err;
	char errtext[8192];
};

/*
 * Starts `kml-bpf ARGS...` and waits until it says it attached: 0, or
 * -1 with what it said instead in r->errtext (it exited: a verifier
 * refusal, a missing module).
 */
static int bpf_start(struct bpf_run *r, const char *const *args)
{
	int out[2], err[2], len = 0;
	char *argv[8];
	long long end;
	int i;

	argv[0] = (char *)loader();
	for (i = 0; args[i] && i < 6; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	r->errtext[0] = '\0';
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (!r->pid) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		execv(argv[0], argv);
		fprintf(stderr, "kml-bpf: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	r->out = out[0];
	r->err = err[0];
	end = now_ms() + SLOW_MS;
	while (now_ms() < end && len < (int)sizeof(r->errtext) - 1) {
		struct pollfd p = { .fd = r->err, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(r->err, r->errtext + len, sizeof(r->errtext) - 1 - len);
		if (n <= 0)
			break;
		len += n;
		r->errtext[len] = '\0';
		if (strstr(r->errtext, "kml-bpf: attached"))
			return 0;
	}
	return -1;
}

/* Stops it with SIGINT; its stdout in @out; its exit status, or -1. */
static int bpf_stop(struct bpf_run *r, char *out, size_t len)
{
	size_t used = 0;
	ssize_t n;
	int st;

	kill(r->pid, SIGINT);
	while (used < len - 1 && (n = read(r->out, out + used, len - 1 - used)) > 0)
		used += n;
	out[used] = '\0';
	/* the rest, if @out is full: a writer blocked on the pipe never exits */
	while (read(r->out, r->errtext, sizeof(r->errtext)) > 0)
		;
	/* whatever else it said, for the log of a failure */
	while (read(r->err, r->errtext, sizeof(r->errtext) - 1) > 0)
		;
	close(r->out);
	close(r->err);
	if (waitpid(r->pid, &st, 0) != r->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The end of what kml-bpf wrote on stderr: a verifier's log ends there. */
static const char *said(const struct bpf_run *r)
{
	size_t n = strlen(r->errtext);

	return r->errtext + (n > 3000 ? n - 3000 : 0);
}

/* The last line kml-bpf wrote on stderr (why it failed). */
static const char *last_line(const char *text)
{
	static char line[512];
	const char *end = text + strlen(text), *p;

	while (end > text && end[-1] == '\n')
		end--;
	for (p = end; p > text && p[-1] != '\n'; p--)
		;
	snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
	return line;
}

/* ---- drops ---- */

/* Sends @n UDP datagrams from @src to @dst:@port (one family's strings). */
static int send_udp(const char *src, const char *dst, int port, int n)
{
	int v6 = !!strchr(dst, ':');
	struct sockaddr_storage from = { 0 }, to = { 0 };
	socklen_t alen = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), i;

	if (s < 0)
		return -1;
	if (v6) {
		struct sockaddr_in6 *f = (void *)&from, *t = (void *)&to;

		f->sin6_family = t->sin6_family = AF_INET6;
		inet_pton(AF_INET6, src, &f->sin6_addr);
		inet_pton(AF_INET6, dst, &t->sin6_addr);
		t->sin6_port = htons(port);
	} else {
		struct sockaddr_in *f = (void *)&from, *t = (void *)&to;

		f->sin_family = t->sin_family = AF_INET;
		inet_pton(AF_INET, src, &f->sin_addr);
		inet_pton(AF_INET, dst, &t->sin_addr);
		t->sin_port = htons(port);
	}
	if (bind(s, (void *)&from, alen))
		goto fail;
	for (i = 0; i < n; i++)
		if (sendto(s, "x", 1, 0, (void *)&to, alen) != 1)
			goto fail;
	close(s);
	return 0;
fail:
	close(s);
	return -1;
}

/*
 * Waits until kml_filter's rule @idx has counted @want packets (a drop
 * may be counted late, in a softirq left to ksoftirqd): 0, or -1.
 */
static int rule_reaches(int idx, unsigned long long want)
{
	long long end = now_ms() + SLOW_MS;
	char cmd[4608], out[16384];

	do {
		const char *p = out;
		unsigned long long got = 0;
		int i;

		if (KML_CLIENT("kml-filter", "--json list -v"))
			return -1;
		for (i = 0; i <= idx && p; i++)
			p = strstr(p + 1, ",\"packets\":");
		if (p && sscanf(p, ",\"packets\":%llu", &got) == 1 && got >= want)
			return 0;
		usleep(20000);
	} while (now_ms() < end);
	return -1;
}

/* The count kml-bpf drops printed for @rule and @src; -1 if none. */
static long long drops_of(const char *out, int rule, const char *src)
{
	char want[128];
	const char *p;
	long long n;

	snprintf(want, sizeof(want), "rule %d src %s drops ", rule, src);
	for (p = out; (p = strstr(p, want)); p++)
		if ((p == out || p[-1] == '\n') && sscanf(p + strlen(want), "%lld", &n) == 1)
			return n;
	return -1;
}

static int lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

FIXTURE(drops) {
	char out[16384];
};

FIXTURE_SETUP(drops)
{
	ASSERT_EQ(0, kml_load_once("modules/kml_stats/kml_stats.ko", ""));
	ASSERT_EQ(0, kml_load_once("modules/kml_filter/kml_filter.ko", ""));
	/* this process's own namespace: its loopback carries only our packets */
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, kml_net_lo_up());
}

FIXTURE_TEARDOWN(drops)
{
}

/*
 * Lab step 1: exact counts per rule and per source, IPv4 and IPv6; the
 * packets the rules accept (and the ICMP errors they cause) count nowhere.
 */
TEST_F(drops, counted_per_rule_and_source)
{
	char cmd[4608], out[16384];
	struct bpf_run r;

	ASSERT_EQ(0, KML_CLIENT("kml-filter", "add drop in udp dport 9001")) TH_LOG("%s", out);
	ASSERT_EQ(0, KML_CLIENT("kml-filter", "add drop in udp dport 9002")) TH_LOG("%s", out);
	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "drops", NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	ASSERT_EQ(0, send_udp("127.0.0.1", "127.0.0.1", 9001, 5));
	ASSERT_EQ(0, send_udp("127.0.0.2", "127.0.0.1", 9001, 7));
	ASSERT_EQ(0, send_udp("::1", "::1", 9001, 2));
	ASSERT_EQ(0, send_udp("127.0.0.1", "127.0.0.1", 9002, 3));
	ASSERT_EQ(0, send_udp("127.0.0.1", "127.0.0.1", 9003, 4));	/* accepted */
	ASSERT_EQ(0, rule_reaches(0, 14));
	ASSERT_EQ(0, rule_reaches(1, 3));
	ASSERT_EQ(0, bpf_stop(&r, out, sizeof(out))) TH_LOG("%s", last_line(r.errtext));
	EXPECT_EQ(5, drops_of(out, 0, "127.0.0.1")) TH_LOG("printed:\n%s", out);
	EXPECT_EQ(7, drops_of(out, 0, "127.0.0.2")) TH_LOG("printed:\n%s", out);
	EXPECT_EQ(2, drops_of(out, 0, "::1")) TH_LOG("printed:\n%s", out);
	EXPECT_EQ(3, drops_of(out, 1, "127.0.0.1")) TH_LOG("printed:\n%s", out);
	/* those four, and "unkept 0": nothing for what was accepted */
	EXPECT_EQ(5, lines(out)) TH_LOG("printed:\n%s", out);
	EXPECT_NE(NULL, strstr(out, "\nunkept 0\n")) TH_LOG("printed:\n%s", out);
}

struct sender {
	int cpu, n;
	int ret;
};

static void *send_from_cpu(void *arg)
{
	struct sender *s = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->ret = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ? -1 :
		 send_udp("127.0.0.1", "127.0.0.1", 9001, s->n);
	return NULL;
}

/*
 * Lab step 1: a loopback packet is received on the CPU that sent it, so
 * senders on two CPUs put drops of the same (rule, source) in two CPUs'
 * copies of a per-CPU map: the reader must add them all up.
 */
TEST_F(drops, from_every_cpu_are_summed)
{
	char cmd[4608], out[16384];
	struct sender s[2] = { { .cpu = 0, .n = 40 }, { .cpu = 1, .n = 60 } };
	pthread_t t[2];
	struct bpf_run r;
	int i;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU: nothing to sum");
	ASSERT_EQ(0, KML_CLIENT("kml-filter", "add drop in udp dport 9001")) TH_LOG("%s", out);
	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "drops", NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, send_from_cpu, &s[i]));
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		ASSERT_EQ(0, s[i].ret);
	}
	ASSERT_EQ(0, rule_reaches(0, 100));
	ASSERT_EQ(0, bpf_stop(&r, out, sizeof(out))) TH_LOG("%s", last_line(r.errtext));
	EXPECT_EQ(100, drops_of(out, 0, "127.0.0.1")) TH_LOG("printed:\n%s", out);
}

/*
 * Lab step 1: more sources than the map has room for
 * (KML_BPF_DROP_KEYS, 1024): the drops of the pairs it cannot keep are
 * counted in drops_unkept, not lost in silence. One drop from each of
 * 1100 sources: 1024 kept, 76 unkept, 1100 in all.
 */
TEST_F(drops, a_full_map_counts_what_it_cannot_keep)
{
	char cmd[4608], out[65536], src[32];
	long long unkept = -1;
	struct bpf_run r;
	const char *p;
	int i;

	ASSERT_EQ(0, KML_CLIENT("kml-filter", "add drop in udp dport 9001")) TH_LOG("%s", out);
	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "drops", NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	for (i = 0; i < 1100; i++) {
		snprintf(src, sizeof(src), "127.0.%d.%d", 1 + i / 200, 1 + i % 200);
		ASSERT_EQ(0, send_udp(src, "127.0.0.1", 9001, 1)) TH_LOG("from %s", src);
	}
	ASSERT_EQ(0, rule_reaches(0, 1100));
	ASSERT_EQ(0, bpf_stop(&r, out, sizeof(out))) TH_LOG("%s", last_line(r.errtext));
	p = strstr(out, "\nunkept ");
	if (p)
		sscanf(p, "\nunkept %lld", &unkept);
	EXPECT_EQ(1024 + 1, lines(out)) TH_LOG("printed %d lines", lines(out));
	EXPECT_EQ(76, unkept);
}

/* Without kml_filter there is nothing to attach to: one line, status 1. */
TEST_F(drops, refused_without_kml_filter)
{
	struct bpf_run r;

	ASSERT_EQ(0, kml_unload("kml_filter"));
	ASSERT_EQ(-1, bpf_start(&r, (const char *[]){ "drops", NULL }));
	EXPECT_NE(NULL, strstr(last_line(r.errtext), "kml_filter is not loaded"))
		TH_LOG("said: %s", r.errtext);
	ASSERT_EQ(1, bpf_stop(&r, self->out, sizeof(self->out)));
}

/*
 * While a program is attached to its tracepoint, the kernel holds a
 * reference on kml_filter: rmmod is refused, not a crash at the next
 * packet; once the loader has gone, it unloads.
 */
TEST_F(drops, kml_filter_stays_while_attached)
{
	struct bpf_run r;

	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "drops", NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	EXPECT_EQ(-EBUSY, kml_unload("kml_filter"));
	ASSERT_EQ(0, send_udp("127.0.0.1", "127.0.0.1", 9001, 3));
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out)));
	EXPECT_EQ(0, kml_unload("kml_filter"));
}

/* ---- latency ---- */

#define TARGET	"kml_probe_target"

struct lat {
	long long calls, sum, untimed;
	long long bucket[65];
};

/* Parses what `kml-bpf lat` printed: 0, or -1 if it does not parse. */
static int lat_parse(const char *out, struct lat *l)
{
	const char *p = out;
	unsigned int k;
	long long n;

	memset(l, 0, sizeof(*l));
	if (sscanf(out, TARGET " calls %lld sum_ns %lld untimed %lld",
		   &l->calls, &l->sum, &l->untimed) != 3)
		return -1;
	while ((p = strstr(p, "\nbucket "))) {
		p++;
		if (sscanf(p, "bucket %u [%*u, %*u) ns %lld", &k, &n) != 2 || k > 64)
			return -1;
		l->bucket[k] = n;
	}
	return 0;
}

/* Calls in buckets that hold only latencies of @ns or more. */
static long long at_least(const struct lat *l, uint64_t ns)
{
	long long n = 0;
	int k = ns ? 64 - __builtin_clzll(ns) : 0;

	/* bucket k holds [2^(k-1), 2^k): the next one up starts above ns */
	for (k = k + 1; k <= 64; k++)
		n += l->bucket[k];
	return n;
}

static int call(int fd, uint32_t count, uint32_t depth, uint64_t delay_ns)
{
	struct kml_probe_call c = { .arg = 1, .count = count, .depth = depth,
				    .delay_ns = delay_ns };

	return ioctl(fd, KML_PROBE_IOC_CALL, &c) ? -errno : 0;
}

FIXTURE(lat) {
	int fd;
	char out[16384];
};

/* kml_probe (for its CALL ioctl) and its target loaded: its device, or -errno. */
static int probe_dev(void)
{
	int ret = kml_load_once("modules/kml_stats/kml_stats.ko", "");

	if (!ret)
		ret = kml_load_once("modules/kml_probe/kml_probe_target.ko", "");
	if (!ret)
		ret = kml_load_once("modules/kml_probe/kml_probe.ko", "");
	if (ret)
		return ret;
	ret = open("/dev/kml_probe", O_RDWR | O_CLOEXEC);
	return ret < 0 ? -errno : ret;
}

FIXTURE_SETUP(lat)
{
	self->fd = probe_dev();
	ASSERT_LE(0, self->fd) TH_LOG("%s", strerror(-self->fd));
}

FIXTURE_TEARDOWN(lat)
{
	close(self->fd);
}

/*
 * Lab step 2: kml_probe_target calls itself @depth times: each of the
 * nested calls is timed from its own entry, so a top call at depth 3
 * gives 4 calls of 1 to 4 delays (KML_BPF_MAX_DEPTH of them); one at
 * depth 5 has 2 calls too deep to keep, counted untimed, and the 4 around
 * them still timed.
 */
TEST_F(lat, nested_calls_are_each_timed)
{
	const uint64_t delay = 2000000;		/* 2 ms at each level */
	struct bpf_run r;
	struct lat l;

	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	ASSERT_EQ(0, call(self->fd, 3, 3, delay));
	ASSERT_EQ(0, call(self->fd, 1, 5, 0));
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out))) TH_LOG("%s", last_line(r.errtext));
	ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
	EXPECT_EQ(16, l.calls) TH_LOG("printed:\n%s", self->out);
	EXPECT_EQ(2, l.untimed) TH_LOG("printed:\n%s", self->out);
	/* 3 x (1 + 2 + 3 + 4) delays at least */
	EXPECT_LE(3 * 10 * delay, (uint64_t)l.sum) TH_LOG("printed:\n%s", self->out);
	/* the 12 calls of 1 to 4 delays each waited one delay at least; the
	 * calls 3 and 4 levels up, 6 and 8 ms, are above 2^22 ns (4.2 ms) */
	EXPECT_LE(12, at_least(&l, delay / 2)) TH_LOG("printed:\n%s", self->out);
	EXPECT_LE(6, at_least(&l, 2 * delay)) TH_LOG("printed:\n%s", self->out);
}

struct caller {
	int fd;
	pthread_barrier_t *go;
	long long t0, t1;
	int ret;
};

static void *deep_call(void *arg)
{
	struct caller *c = arg;

	pthread_barrier_wait(c->go);
	c->t0 = now_ms();
	c->ret = call(c->fd, 1, 3, 10000000);
	c->t1 = now_ms();
	return NULL;
}

/*
 * Lab step 2: two threads of one process inside the function at once,
 * each 4 calls deep (8 in flight, within the kretprobe's 10 instances).
 * Entries kept per thread pair up; a stack shared by the process (keyed
 * by its tgid, not the thread's id) would hold 8 entries, more than
 * KML_BPF_MAX_DEPTH, and mix two threads' stack pointers. Rounds whose
 * calls did not start together (a host that ran one vCPU late) prove
 * nothing and are repeated.
 */
TEST_F(lat, threads_have_stacks_of_their_own)
{
	int round, together = 0;

	for (round = 0; round < 20 && together < 2; round++) {
		pthread_barrier_t go;
		struct caller c[2] = { { .fd = self->fd, .go = &go },
				       { .fd = self->fd, .go = &go } };
		pthread_t t[2];
		struct bpf_run r;
		struct lat l;
		int i;

		ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
			TH_LOG("kml-bpf did not attach:\n%s", said(&r));
		pthread_barrier_init(&go, NULL, 2);
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, pthread_create(&t[i], NULL, deep_call, &c[i]));
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&go);
		ASSERT_EQ(0, c[0].ret);
		ASSERT_EQ(0, c[1].ret);
		ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out)))
			TH_LOG("%s", last_line(r.errtext));
		/* both 4 deep for the first 10 ms of each: did they overlap? */
		if (llabs(c[0].t0 - c[1].t0) > 5)
			continue;
		together++;
		ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
		EXPECT_EQ(8, l.calls) TH_LOG("printed:\n%s", self->out);
		EXPECT_EQ(0, l.untimed) TH_LOG("printed:\n%s", self->out);
	}
	ASSERT_LE(1, together) TH_LOG("the two threads never ran at once in 20 rounds");
}

static void *one_call(void *arg)
{
	struct caller *c = arg;

	c->ret = call(c->fd, 1, 0, 0);
	return NULL;
}

/*
 * Lab step 2: a thread's entry goes when its outermost call returns.
 * Kept, 1024 threads (KML_BPF_THREADS) fill the map for good and every
 * later thread's calls go untimed.
 */
TEST_F(lat, every_thread_is_timed)
{
	const int threads = 3000;
	struct caller c = { .fd = self->fd };
	struct bpf_run r;
	struct lat l;
	int i;

	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	for (i = 0; i < threads; i++) {
		pthread_t t;

		ASSERT_EQ(0, pthread_create(&t, NULL, one_call, &c));
		pthread_join(t, NULL);
		ASSERT_EQ(0, c.ret);
	}
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out))) TH_LOG("%s", last_line(r.errtext));
	ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
	EXPECT_EQ(threads, l.calls) TH_LOG("printed:\n%s", self->out);
	EXPECT_EQ(0, l.untimed) TH_LOG("printed:\n%s", self->out);
}

struct spinner {
	int fd;
	atomic_int stop;
	int ret;
};

/* Calls the target until told to stop, then 3 calls of 5 ms. */
static void *spin_then_slow(void *arg)
{
	struct spinner *w = arg;

	while (!atomic_load(&w->stop))
		if (call(w->fd, 100, 0, 0))
			break;
	w->ret = call(w->fd, 3, 0, 5000000);
	return NULL;
}

/*
 * Attaching while another CPU runs the function patches text it is
 * executing, which multi-threaded TCG does not emulate (the other vCPU
 * may go on in code translated before the breakpoint): a fixture of its
 * own, which make check and make test run in a one-thread guest, as
 * kml_probe_test's probe_text.
 */
FIXTURE(lat_text) {
	int fd;
	char out[16384];
};

FIXTURE_SETUP(lat_text)
{
	self->fd = probe_dev();
	ASSERT_LE(0, self->fd) TH_LOG("%s", strerror(-self->fd));
}

FIXTURE_TEARDOWN(lat_text)
{
	close(self->fd);
}

/*
 * A thread inside the function while kml-bpf attaches: one of its calls
 * may be seen entering and not returning, or returning and not entering.
 * Neither may spoil the thread's later calls: all 3 slow ones are timed
 * (the only calls of 4.2 ms or more).
 */
TEST_F(lat_text, calls_in_flight_at_attach_spoil_nothing)
{
	struct spinner w = { .fd = self->fd };
	struct bpf_run r;
	struct lat l;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, spin_then_slow, &w));
	usleep(50000);
	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	usleep(50000);
	atomic_store(&w.stop, 1);
	pthread_join(t, NULL);
	ASSERT_EQ(0, w.ret);
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out))) TH_LOG("%s", last_line(r.errtext));
	ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
	EXPECT_LE(3, at_least(&l, 4000000)) TH_LOG("printed:\n%s", self->out);
}

struct overload {
	int fd;
	pthread_barrier_t *go;
	int ret, ret2;
};

/* 9 calls in flight, one returning every 10 ms: 5 or more for 40 ms. */
static void *hog(void *arg)
{
	struct overload *o = arg;

	pthread_barrier_wait(o->go);
	o->ret = call(o->fd, 1, 8, 10000000);
	return NULL;
}

/* 9 calls, most of whose returns find no instance; then 3 of 5 ms. */
static void *starved(void *arg)
{
	struct overload *o = arg;

	pthread_barrier_wait(o->go);
	usleep(10000);
	o->ret = call(o->fd, 1, 8, 0);
	o->ret2 = call(o->fd, 3, 0, 5000000);
	return NULL;
}

/*
 * Lab step 2: a return that is never seen (the kretprobe's 10 instances
 * are mostly taken by another thread's calls) must not leave its entry on
 * the thread's stack for good: the thread's later calls are all timed.
 * Of 4.2 ms or more: the hog's 4 outer calls (60 to 90 ms; its 5 inner
 * ones are deeper than KML_BPF_MAX_DEPTH), the starved thread's 3 slow
 * ones; its first 9 take no time.
 */
TEST_F(lat, a_missed_return_spoils_nothing)
{
	pthread_barrier_t go;
	struct overload o[2] = { { .fd = self->fd, .go = &go },
				 { .fd = self->fd, .go = &go } };
	struct bpf_run r;
	pthread_t t[2];
	struct lat l;

	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	pthread_barrier_init(&go, NULL, 2);
	ASSERT_EQ(0, pthread_create(&t[0], NULL, hog, &o[0]));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, starved, &o[1]));
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	pthread_barrier_destroy(&go);
	ASSERT_EQ(0, o[0].ret);
	ASSERT_EQ(0, o[1].ret);
	ASSERT_EQ(0, o[1].ret2);
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out))) TH_LOG("%s", last_line(r.errtext));
	ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
	EXPECT_LE(7, at_least(&l, 4000000)) TH_LOG("printed:\n%s", self->out);
}

/* A function the kernel does not have: one line, status 1. */
TEST_F(lat, refuses_an_unknown_function)
{
	struct bpf_run r;

	ASSERT_EQ(-1, bpf_start(&r, (const char *[]){ "lat", "kml_no_such_function", NULL }));
	EXPECT_NE(NULL, strstr(last_line(r.errtext), "kml_no_such_function"))
		TH_LOG("said: %s", r.errtext);
	ASSERT_EQ(1, bpf_stop(&r, self->out, sizeof(self->out)));
}

/*
 * A kprobe does not pin the module whose function it probes: the module
 * unloads under it (the probe is marked gone), calls made before are
 * still counted, and the loader ends cleanly.
 */
TEST_F(lat, target_unloads_while_attached)
{
	struct bpf_run r;
	struct lat l;

	ASSERT_EQ(0, bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }))
		TH_LOG("kml-bpf did not attach:\n%s", said(&r));
	ASSERT_EQ(0, call(self->fd, 5, 0, 0));
	ASSERT_EQ(0, kml_unload("kml_probe_target"));
	EXPECT_EQ(-ENODEV, call(self->fd, 1, 0, 0));
	ASSERT_EQ(0, kml_load("modules/kml_probe/kml_probe_target.ko", ""));
	ASSERT_EQ(0, bpf_stop(&r, self->out, sizeof(self->out))) TH_LOG("%s", last_line(r.errtext));
	ASSERT_EQ(0, lat_parse(self->out, &l)) TH_LOG("printed:\n%s", self->out);
	EXPECT_EQ(5, l.calls) TH_LOG("printed:\n%s", self->out);
}

/* Loading BPF takes privilege: nobody gets one line and status 1. */
TEST_F(lat, unprivileged_cannot_load)
{
	struct bpf_run r;
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (bpf_start(&r, (const char *[]){ "lat", TARGET, NULL }) != -1)
			_exit(3);
		if (bpf_stop(&r, self->out, sizeof(self->out)) != 1)
			_exit(4);
		_exit(strstr(last_line(r.errtext), "run as root") ? 0 : 5);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("1: the loader ran; 2: setuid; 3: it loaded; "
					     "4: its status; 5: its message");
}

TEST_HARNESS_MAIN
