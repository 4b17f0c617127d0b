// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter benchmark (`make bench`, in the guest): the cost of one UDP
 * datagram over loopback (send + receive: one LOCAL_OUT and one LOCAL_IN
 * hook) with no module, and with kml_filter holding 0, 1, 100 and 10 000
 * rules; the same 10 000 rules with nothing to index them (every rule has
 * port ranges only, so the lookup walks them all); and, if `nft` works,
 * the same 10 000 hosts and ports as two nftables sets, and nftables with
 * empty chains on both hooks (what a filter that decides nothing costs).
 *
 * No rule matches the benchmark's traffic, so every lookup does its whole
 * job and falls to the policy (accept); but for the log flood: one rule
 * that accepts every datagram, without logging, logging under a limit of
 * 10/s (a flood: nearly every record held back and counted) and logging
 * every one (a limit of 1000000/s) to a ring attached over netlink. Half the rules are exact source
 * hosts, half single destination ports, the common shape of a block list.
 *
 * Only ratios measured side by side in one run are reported. The
 * configurations are interleaved over ROUNDS rounds (the module is loaded
 * and unloaded each round) and each reports its median round. Given
 * several builds of the module (LABEL=PATH, e.g. before and after a
 * change), each is loaded in every round, first in turn, and reported
 * apart.
 *
 * Under TCG the same module runs up to 30% slower or faster depending on
 * where a load happens to place it (every configuration of one load
 * moves together; KML_BENCH_VERBOSE=1 prints each round), so many short
 * rounds, each a new load, rather than a few long ones.
 *
 *	kml_filter_bench [LABEL=]PATH/TO/kml_filter.ko ...
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_filter.h>
#include <linux/kml_ring.h>

#include "kml_nl.h"

#define ROUNDS	25
#define ITERS	8000
#define BATCH	32
#define NRULES	10000

#define MAXKO	6

/* the peers, then per build of kml_filter KML_N configurations */
enum { C_NONE, C_NFT_EMPTY, C_NFT_1, C_NFT, NPEER };
enum { K_0, K_1, K_100, K_10K, K_10K_LINEAR, K_MATCH, K_LOG_LIMITED, K_LOG_ALL,
       KML_N };
#define NCONF	(NPEER + MAXKO * KML_N)

static const char *const peer_name[NPEER] = {
	"no module", "nftables, empty chains", "nftables, 1 host + 1 port",
	"nftables, 10000-element sets",
};
static const char *const kml_name[KML_N] = {
	"0 rules", "1 rule", "100 rules", "10000 rules", "10000 unindexed rules",
	"1 rule, matches", "1 rule, matches, log 10/s", "1 rule, matches, log all",
};

static void die(const char *what)
{
	fprintf(stderr, "kml_filter_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int orig_ns;

static int new_netns(void)
{
	int fd;

	if (unshare(CLONE_NEWNET))
		die("unshare");
	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(orig_ns, CLONE_NEWNET))
		die("netns");
	return fd;
}

static int ns_sh(int ns, const char *cmd)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (setns(ns, CLONE_NEWNET))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct pair {
	int tx, rx;
};

/* Loopback UDP in @ns; "lo" is brought up first. */
static struct pair make_pair(int ns)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9000) };
	struct timeval tv = { .tv_sec = 2 };
	struct pair p;

	if (ns_sh(ns, "ip link set lo up"))
		die("ip link set lo up");
	if (setns(ns, CLONE_NEWNET))
		die("setns");
	p.tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	p.rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (setns(orig_ns, CLONE_NEWNET) || p.tx < 0 || p.rx < 0)
		die("socket");
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(p.rx, (struct sockaddr *)&a, sizeof(a)) ||
	    connect(p.tx, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(p.rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("udp setup");
	return p;
}

/* ns per datagram, sent and received, over @iters of them */
static double run(struct pair p, int iters)
{
	char buf[64] = { 0 };
	double t0 = now_ns();

	for (int i = 0; i < iters; i += BATCH) {
		for (int j = 0; j < BATCH; j++)
			if (send(p.tx, buf, sizeof(buf), 0) != sizeof(buf))
				die("send");
		for (int j = 0; j < BATCH; j++)
			if (recv(p.rx, buf, sizeof(buf), 0) != sizeof(buf))
				die("recv (a datagram was dropped?)");
	}
	return (now_ns() - t0) / iters;
}

/*
 * Loading a module, or the first packets through new code, makes the
 * emulator retranslate: an untimed warm-up first, so that is not what a
 * configuration is charged for.
 */
static double measure(struct pair p, int iters)
{
	run(p, iters / 4);
	return run(p, iters);
}

static void host_rule(struct kml_filter_rule *r, unsigned int i)
{
	memset(r, 0, sizeof(*r));
	r->family = KML_FILTER_FAMILY_IPV4;
	r->dir = KML_FILTER_DIR_BOTH;
	r->action = KML_FILTER_DROP;
	r->src_len = 32;
	r->src[0] = 10;
	r->src[1] = 1;
	r->src[2] = (unsigned char)(i >> 8);
	r->src[3] = (unsigned char)i;
	r->sport_hi = r->dport_hi = 0xffff;
}

static void port_rule(struct kml_filter_rule *r, unsigned int i)
{
	memset(r, 0, sizeof(*r));
	r->proto = KML_FILTER_PROTO_UDP;
	r->dir = KML_FILTER_DIR_BOTH;
	r->action = KML_FILTER_DROP;
	r->sport_hi = 0xffff;
	r->dport_lo = r->dport_hi = (unsigned short)(10000 + i);
}

/* ranges on both ports and no address: nothing to hash on */
static void linear_rule(struct kml_filter_rule *r, unsigned int i)
{
	port_rule(r, i);
	r->sport_lo = 1;
	r->sport_hi = 2;
	r->dport_hi = r->dport_lo + 1;
}

/* n rules, half hosts, half ports */
static struct kml_filter_rule *block_list(unsigned int n, int linear)
{
	struct kml_filter_rule *r = calloc(n ? n : 1, sizeof(*r));

	if (!r)
		die("calloc");
	for (unsigned int i = 0; i < n; i++) {
		if (linear)
			linear_rule(&r[i], i);
		else if (i % 2)
			port_rule(&r[i], i / 2);
		else
			host_rule(&r[i], i / 2);
	}
	return r;
}

/* nftables' own cost: a table with both base chains and no rule */
static int nft_empty(int ns, const char *path)
{
	FILE *f = fopen(path, "w");
	char cmd[512];

	if (!f)
		die(path);
	fprintf(f, "table inet kmlbench {\n"
		   "\tchain in { type filter hook input priority 0; policy accept; }\n"
		   "\tchain out { type filter hook output priority 0; policy accept; }\n}\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "nft -f %s 2>&1", path);
	return ns_sh(ns, cmd);
}

/* The same block list as nftables sets, in @ns; 0 if nft ran. */
static int nft_block_list(int ns, unsigned int n, const char *path)
{
	FILE *f = fopen(path, "w");
	char cmd[512];
	unsigned int i;

	if (!f)
		die(path);
	fprintf(f, "table inet kmlbench {\n\tset hosts {\n\t\ttype ipv4_addr\n\t\telements = { ");
	for (i = 0; i < (n + 1) / 2; i++)
		fprintf(f, "%s10.1.%u.%u", i ? ", " : "", i >> 8, i & 255);
	fprintf(f, " }\n\t}\n\tset ports {\n\t\ttype inet_service\n\t\telements = { ");
	for (i = 0; i < n / 2 || i == 0; i++)
		fprintf(f, "%s%u", i ? ", " : "", 10000 + i);
	fprintf(f, " }\n\t}\n");
	fprintf(f, "\tchain in {\n\t\ttype filter hook input priority 0; policy accept;\n"
		   "\t\tip saddr @hosts drop\n\t\tudp dport @ports drop\n\t}\n");
	fprintf(f, "\tchain out {\n\t\ttype filter hook output priority 0; policy accept;\n"
		   "\t\tip saddr @hosts drop\n\t\tudp dport @ports drop\n\t}\n}\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "nft -f %s 2>&1", path);
	return ns_sh(ns, cmd);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int load(const char *ko)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		die(ko);
	ret = syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	return ret;
}

static void unload(void)
{
	for (int i = 0; i < 200; i++) {
		if (!syscall(SYS_delete_module, "kml_filter", O_NONBLOCK) || errno == ENOENT)
			return;
		usleep(10000);
	}
	die("rmmod kml_filter");
}

static double ratio(const double *med, int a, int b)
{
	return med[a] / med[b];
}

/*
 * The log's ring: kml_ring.ko beside @ko, a ring of 256 pages (room for
 * all the records of one measure), attached to namespace @ns by a netlink
 * socket that stays open (closing it detaches the ring). -1 if the build
 * cannot log (an older one).
 */
static int log_attach(const char *ko, int ns, struct kml_nl_sock *s, int *ring)
{
	char path[4096], *slash;
	__u8 buf[256];
	struct kml_nl_msg m;
	struct kml_nl_err e;
	__u32 pages = 256;
	uint16_t fam;
	int fd;

	snprintf(path, sizeof(path), "%s", ko);
	slash = strrchr(path, '/');
	if (!slash || slash == path)
		return -1;
	*slash = 0;
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (slash ? slash + 1 - path : 0),
		 "kml_ring/kml_ring.ko");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)
			die("insmod kml_ring");
		close(fd);
	}
	*ring = open(KML_RING_DEVICE, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (*ring < 0 || ioctl(*ring, KML_RING_IOC_SET_SIZE, &pages))
		die(KML_RING_DEVICE);
	if (setns(ns, CLONE_NEWNET))
		die("setns");
	if (kml_nl_open(s) || setns(orig_ns, CLONE_NEWNET))
		die("netlink socket");
	if (kml_nl_family_id(s, KML_FILTER_GENL_NAME, &fam))
		goto fail;
	kml_nl_msg_init(&m, buf, sizeof(buf), fam, 0, KML_FILTER_CMD_LOG_ATTACH,
			KML_FILTER_GENL_VERSION);
	kml_nl_put_u32(&m, KML_FILTER_A_LOG_RING, *ring);
	if (!kml_nl_request(s, &m, NULL, NULL, &e))
		return 0;
fail:
	kml_nl_close(s);
	close(*ring);
	return -1;
}

int main(int argc, char **argv)
{
	static const unsigned int nrules[KML_N] = { 0, 1, 100, NRULES, NRULES, 1, 1, 1 };
	static int can_log[MAXKO];
	struct kml_filter_rule *sets[KML_N];
	static double t[NCONF][ROUNDS];
	double med[NCONF];
	const char *ko[MAXKO], *label[MAXKO];
	int plain, nfte, nft1, nft, have_nft, c, r, m, nko = argc - 1;
	struct pair pp, pe, p1, pn;

	if (argc < 2 || nko > MAXKO) {
		fprintf(stderr, "usage: kml_filter_bench [LABEL=]PATH/kml_filter.ko ... (at most %d)\n",
			MAXKO);
		return 2;
	}
	for (m = 0; m < nko; m++) {
		char *eq = strchr(argv[m + 1], '=');

		label[m] = eq ? argv[m + 1] : "";
		ko[m] = eq ? eq + 1 : argv[m + 1];
		if (eq)
			*eq = 0;
	}
	orig_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	plain = new_netns();
	nfte = new_netns();
	nft1 = new_netns();
	nft = new_netns();
	pp = make_pair(plain);
	pe = make_pair(nfte);
	p1 = make_pair(nft1);
	pn = make_pair(nft);
	have_nft = !nft_empty(nfte, "/tmp/kml_bench_0.nft") &&
		   !nft_block_list(nft1, 1, "/tmp/kml_bench_1.nft") &&
		   !nft_block_list(nft, NRULES, "/tmp/kml_bench.nft");
	for (c = 0; c < KML_N; c++)
		sets[c] = block_list(nrules[c], c == K_10K_LINEAR);
	/* the flood's rule: every datagram of the benchmark (to port 9000) */
	for (c = K_MATCH; c <= K_LOG_ALL; c++) {
		memset(sets[c], 0, sizeof(*sets[c]));
		sets[c]->proto = KML_FILTER_PROTO_UDP;
		sets[c]->dir = KML_FILTER_DIR_IN;
		sets[c]->action = KML_FILTER_ACCEPT;
		sets[c]->sport_hi = 65535;
		sets[c]->dport_lo = sets[c]->dport_hi = 9000;
	}
	sets[K_LOG_LIMITED]->log_rate = 10;
	sets[K_LOG_LIMITED]->log_burst = 5;
	sets[K_LOG_ALL]->log_rate = KML_FILTER_LOG_MAX_RATE;
	sets[K_LOG_ALL]->log_burst = 65535;
	for (m = 0; m < nko; m++)
		can_log[m] = 1;

	unload();
	for (r = 0; r < ROUNDS; r++) {
		t[C_NONE][r] = measure(pp, ITERS);
		if (have_nft) {
			t[C_NFT_EMPTY][r] = measure(pe, ITERS);
			t[C_NFT_1][r] = measure(p1, ITERS);
			t[C_NFT][r] = measure(pn, ITERS);
		}
		/* each build first in turn: no build always follows the peers */
		for (int i = 0; i < nko; i++) {
			struct kml_nl_sock s;
			int fd, ring = -1, logs;

			m = (r + i) % nko;
			if (load(ko[m]))
				die("insmod kml_filter");
			if (setns(plain, CLONE_NEWNET))
				die("setns");
			fd = open(KML_FILTER_DEVICE, O_RDWR | O_CLOEXEC);
			if (fd < 0 || setns(orig_ns, CLONE_NEWNET))
				die(KML_FILTER_DEVICE);
			logs = can_log[m] && !log_attach(ko[m], plain, &s, &ring);
			can_log[m] = logs;
			for (c = 0; c < KML_N; c++) {
				struct kml_filter_replace rep = {
					.count = nrules[c],
					.rules = (__u64)(uintptr_t)sets[c],
				};
				__u32 pages = 256;

				if (c >= K_LOG_LIMITED && !logs)
					continue;
				if (ioctl(fd, KML_FILTER_IOC_REPLACE, &rep))
					die("REPLACE");
				/* an empty ring: every record of this measure fits */
				if (c == K_LOG_ALL && ioctl(ring, KML_RING_IOC_SET_SIZE, &pages))
					die("SET_SIZE");
				/* the unindexed set is ~100x slower: fewer packets */
				t[NPEER + m * KML_N + c][r] =
					measure(pp, c == K_10K_LINEAR ? ITERS / 50 : ITERS);
			}
			close(fd);
			if (logs) {
				kml_nl_close(&s);
				close(ring);
			}
			unload();
		}
	}
	if (getenv("KML_BENCH_VERBOSE"))
		for (c = 0; c < NPEER + nko * KML_N; c++) {
			printf("conf %2d:", c);
			for (r = 0; r < ROUNDS; r++)
				printf(" %7.0f", t[c][r]);
			printf("\n");
		}
	for (c = 0; c < NPEER + nko * KML_N; c++) {
		qsort(t[c], ROUNDS, sizeof(double), cmp_double);
		med[c] = t[c][ROUNDS / 2];
	}

	printf("kml_filter: one 64-byte UDP datagram over loopback (LOCAL_OUT + LOCAL_IN),\n"
	       "median of %d interleaved rounds of %d; ratios to 'no module'\n", ROUNDS, ITERS);
	for (c = 0; c < NPEER; c++) {
		if (!have_nft && c != C_NONE)
			continue;
		printf("  %-40s %6.3f\n", peer_name[c], ratio(med, c, C_NONE));
	}
	for (m = 0; m < nko; m++) {
		int k = NPEER + m * KML_N;
		char name[64];

		for (c = 0; c < KML_N; c++) {
			if (c >= K_LOG_LIMITED && !can_log[m])
				continue;
			snprintf(name, sizeof(name), "kml_filter%s%s, %s", *label[m] ? " " : "",
				 label[m], kml_name[c]);
			printf("  %-40s %6.3f\n", name, ratio(med, k + c, C_NONE));
		}
	}
	for (m = 0; m < nko; m++) {
		int k = NPEER + m * KML_N;

		printf("%s%s\n", *label[m] ? "kml_filter " : "kml_filter", label[m]);
		printf("  10000 rules / 1 rule                     %6.3f   (goal <= 1.05)\n",
		       ratio(med, k + K_10K, k + K_1));
		printf("  10000 unindexed rules / 1 rule           %6.3f\n",
		       ratio(med, k + K_10K_LINEAR, k + K_1));
		if (can_log[m]) {
			printf("  log flood, limited 10/s / no log         %6.3f\n",
			       ratio(med, k + K_LOG_LIMITED, k + K_MATCH));
			printf("  log flood, every packet / no log         %6.3f\n",
			       ratio(med, k + K_LOG_ALL, k + K_MATCH));
		}
		if (!have_nft)
			continue;
		printf("  0 rules / nftables empty chains          %6.3f   (goal <= 1)\n",
		       ratio(med, k + K_0, C_NFT_EMPTY));
		printf("  10000 rules / nftables 10000 in sets     %6.3f   (goal <= 1)\n",
		       ratio(med, k + K_10K, C_NFT));
		printf("  added cost, 0 rules / nftables empty     %6.3f\n",
		       (med[k + K_0] - med[C_NONE]) / (med[C_NFT_EMPTY] - med[C_NONE]));
	}
	if (have_nft)
		printf("nftables 10000 / nftables 1                %6.3f\n",
		       ratio(med, C_NFT, C_NFT_1));
	else
		printf("nftables: not measured (nft missing or the kernel lacks nf_tables)\n");
	for (c = 0; c < KML_N; c++)
		free(sets[c]);
	return 0;
}
