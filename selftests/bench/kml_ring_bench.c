// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring benchmark (`make bench`, in the guest): consuming the same
 * records through the mapping (zero copy) and through read() (one copy),
 * at 64-byte and 4 KiB records, with a wakeup per record and with a
 * watermark, normalised by memcpy bandwidth measured in the same run.
 *
 * The producer runs as fast as it can on CPU 1, the consumer on CPU 0.
 * Both consumers read every payload word (summing them), so the only
 * difference is the copy and the system calls. When the consumer is the
 * faster side, the producer is what is measured: the lost count says
 * which side was the bottleneck.
 *
 * Then the peer: perf's mmap ring, carrying the very same records. The
 * producer, started with KML_RING_PRODUCE_TRACE, hands each record to the
 * kml_ring:produced tracepoint instead of our ring, and a perf event on
 * that tracepoint (PERF_SAMPLE_RAW) puts it in perf's ring, which we
 * consume as include/uapi/linux/perf_event.h says (data_head, data_tail).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "../../userspace/kml_ring_lib.h"
#include "../kml_trace.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "kml_ring_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static volatile uint64_t sink;

static uint64_t sum_words(const void *p, size_t len)
{
	const uint64_t *w = p;
	uint64_t s = 0;

	for (size_t i = 0; i < len / 8; i++)
		s += w[i];
	return s;
}

struct tally {
	uint64_t records, bytes, sum, lost, bad;
};

static int on_rec(const struct kml_ring_rec *rec, void *arg)
{
	struct tally *t = arg;

	t->sum += sum_words(rec + 1, rec->size - sizeof(*rec));
	t->records++;
	t->bytes += rec->size;
	return 0;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void start(struct kml_ring_user *r, uint32_t rec_size, uint64_t count,
		  uint32_t rate)
{
	struct kml_ring_produce p = {
		.record_size = rec_size, .count = count, .rate = rate, .cpu = 1,
		.flags = KML_RING_PRODUCE_NOFILL,
	};

	if (ioctl(r->fd, KML_RING_IOC_START, &p))
		die("start");
}

/* Drain a ring filled beforehand: the consumer alone is timed. */
static double drain_rate(int use_read, uint32_t rec_size, double *bytes_s)
{
	static char buf[1 << 16];
	struct kml_ring_user r;
	struct tally t = { 0 };
	double spent = 0;
	uint64_t fill;

	if (kml_ring_user_open(&r, 64))
		die("open ring");
	fill = r.size / rec_size;
	for (int round = 0; round < 40; round++) {
		double t0;

		start(&r, rec_size, fill, 0);
		while (r.ctrl->produced + r.ctrl->lost < (round + 1) * fill)
			usleep(1000);
		ioctl(r.fd, KML_RING_IOC_STOP);
		t0 = now();
		if (use_read) {
			ssize_t n;

			while (kml_ring_user_pending(&r) &&
			       (n = read(r.fd, buf, sizeof(buf))) > 0)
				for (ssize_t off = 0; off < n;
				     off += ((const struct kml_ring_rec *)(buf + off))->size)
					on_rec((const void *)(buf + off), &t);
		} else {
			kml_ring_user_consume(&r, on_rec, &t);
		}
		spent += now() - t0;
	}
	sink = t.sum;
	kml_ring_user_close(&r);
	*bytes_s = t.bytes / spent;
	return t.records / spent;
}

/* Stream at a fixed rate for 2 s: consumer CPU time per record. */
static double stream_cpu_per_rec(uint64_t watermark, uint64_t *recs)
{
	struct kml_ring_user r;
	struct tally t = { 0 };
	double c0, t0;

	if (kml_ring_user_open(&r, 64))
		die("open ring");
	if (ioctl(r.fd, KML_RING_IOC_SET_WATERMARK, &watermark))
		die("watermark");
	start(&r, 64, 0, 50000);
	c0 = cpu_now();
	t0 = now();
	while (now() - t0 < 2) {
		kml_ring_user_wait(&r, 100);
		kml_ring_user_consume(&r, on_rec, &t);
	}
	c0 = cpu_now() - c0;
	ioctl(r.fd, KML_RING_IOC_STOP);
	kml_ring_user_close(&r);
	*recs = t.records;
	return c0 / t.records;
}

/* ---- the peer: perf's ring, the same producer, the same records ---- */

#define PEER_PAGES	64		/* both rings: 256 KiB of data */
#define PEER_WATERMARK	(64 * 1024)	/* bytes, for both */
#define PEER_RATE	5000		/* records/s, for the CPU runs */
#define PEER_ROUNDS	5

/* kml_ring:produced as tracefs describes it: its id and two fields' offsets. */
static int sample_id = -1, seq_off = -1, bytes_off = -1;

static int field_offset(const char *line, const char *name)
{
	const char *o = strstr(line, "offset:");

	return strstr(line, name) && o ? atoi(o + 7) : -1;
}

static int read_sample_format(void)
{
	FILE *f;
	char line[512];

	if (kml_tracefs())
		return -1;
	f = fopen(KML_TRACEFS "/events/kml_ring/produced/format", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ID: ", 4))
			sample_id = atoi(line + 4);
		if (strstr(line, "field:") && field_offset(line, " seq;") >= 0)
			seq_off = field_offset(line, " seq;");
		if (strstr(line, "field:") && field_offset(line, " bytes;") >= 0)
			bytes_off = field_offset(line, " bytes;");
	}
	fclose(f);
	return sample_id < 0 || seq_off < 0 || bytes_off < 0 ? -1 : 0;
}

struct perf_ring {
	int fd;
	struct perf_event_mmap_page *pg;
	const uint8_t *data;
	uint64_t size;
	size_t len;
};

/*
 * A perf event on kml_ring:produced on CPU 1 (where the producer runs), with
 * a ring as large as ours. @each: a wakeup per record (wakeup_events = 1),
 * else once PEER_WATERMARK bytes wait.
 */
static void perf_ring_open(struct perf_ring *p, int each)
{
	struct perf_event_attr a;
	size_t page = sysconf(_SC_PAGESIZE);

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = sample_id;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_RAW;
	a.disabled = 1;
	if (each) {
		a.wakeup_events = 1;
	} else {
		a.watermark = 1;
		a.wakeup_watermark = PEER_WATERMARK;
	}
	p->fd = syscall(SYS_perf_event_open, &a, -1, 1, -1, PERF_FLAG_FD_CLOEXEC);
	if (p->fd < 0)
		die("perf_event_open(kml_ring:produced)");
	p->len = (1 + PEER_PAGES) * page;
	/* Writable, so the kernel honours data_tail and never overwrites. */
	p->pg = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->pg == MAP_FAILED)
		die("mmap perf ring");
	p->data = (const uint8_t *)p->pg + p->pg->data_offset;
	p->size = p->pg->data_size;
	if (ioctl(p->fd, PERF_EVENT_IOC_ENABLE, 0))
		die("PERF_EVENT_IOC_ENABLE");
}

static void perf_ring_close(struct perf_ring *p)
{
	munmap(p->pg, p->len);
	close(p->fd);
}

/*
 * Everything between data_tail and data_head. perf's records, unlike
 * ours, may run past the end of the area: those are copied together
 * first (their 8-byte header never is split: records are 8-aligned).
 */
static void perf_consume(struct perf_ring *p, uint32_t rec_size, struct tally *t)
{
	static _Alignas(8) uint8_t joined[2 * KML_RING_TRACE_MAX_RECORD];
	/* Pairs with the kernel's barrier before it moves data_head. */
	uint64_t head = __atomic_load_n(&p->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = p->pg->data_tail;	/* only we write it */

	while (tail < head) {
		uint64_t off = tail & (p->size - 1);
		const uint8_t *e = p->data + off;
		const struct perf_event_header *h = (const void *)e;
		const struct kml_ring_rec *rec;
		uint32_t loc;
		uint64_t n;

		/* Never trust a size: 0 would loop, a huge one overflow joined. */
		if (h->size < sizeof(*h) || h->size > sizeof(joined))
			break;
		if (off + h->size > p->size) {
			memcpy(joined, e, p->size - off);
			memcpy(joined + (p->size - off), p->data, h->size - (p->size - off));
			e = joined;
		}
		if (h->type == PERF_RECORD_SAMPLE) {
			/* header, u32 raw size, then the raw trace entry */
			const uint8_t *raw = e + sizeof(*h) + sizeof(uint32_t);

			memcpy(&loc, raw + bytes_off, sizeof(loc));
			rec = (const void *)(raw + (loc & 0xffff));
			if ((loc >> 16) != rec_size || rec->type != KML_RING_REC_SAMPLE ||
			    rec->size != rec_size)
				t->bad++;
			else
				on_rec(rec, t);
		} else if (h->type == PERF_RECORD_LOST) {
			memcpy(&n, e + sizeof(*h) + sizeof(uint64_t), sizeof(n));
			t->lost += n;
		}
		tail += h->size;
	}
	/* Pairs with the kernel's read of data_tail: the space is free. */
	__atomic_store_n(&p->pg->data_tail, tail, __ATOMIC_RELEASE);
}

struct peer_result {
	double recs_s, cpu_ns;
	uint64_t records, lost, bad, polls;
};

/*
 * One second of the producer on CPU 1 at @rate records/s (0: flat out),
 * with the consumer here waiting in poll() and taking whatever is there,
 * from our ring or (@perf) from perf's. The producer writes whole samples
 * (filled and checksummed: no NOFILL), so both ways carry the same bytes:
 * written in place in our ring; for perf, written to the producer's
 * buffer and copied by the tracepoint into perf's. Flat out, records/s is
 * what the slower side managed (the lost counts say which); at a rate
 * both keep up with, consumer CPU per record is what consuming costs,
 * wakeups included.
 */
static struct peer_result peer_run(int perf, int each, uint32_t rec_size,
				   uint32_t rate)
{
	struct kml_ring_produce pr = {
		.record_size = rec_size, .rate = rate, .cpu = 1,
		.flags = perf ? KML_RING_PRODUCE_TRACE : 0,
	};
	uint64_t wm = each ? 1 : PEER_WATERMARK;
	struct peer_result res;
	struct kml_ring_user r;
	struct perf_ring p;
	struct tally t = { 0 };
	uint64_t polls = 0;
	double c0, t0;

	if (kml_ring_user_open(&r, PEER_PAGES))
		die("open ring");
	if (ioctl(r.fd, KML_RING_IOC_SET_WATERMARK, &wm))
		die("watermark");
	if (perf)
		perf_ring_open(&p, each);
	if (ioctl(r.fd, KML_RING_IOC_START, &pr))
		die("start");
	c0 = cpu_now();
	t0 = now();
	for (; now() - t0 < 1; polls++) {
		if (perf) {
			struct pollfd pf = { .fd = p.fd, .events = POLLIN };

			poll(&pf, 1, 250);
			perf_consume(&p, rec_size, &t);
		} else {
			kml_ring_user_wait(&r, 250);
			kml_ring_user_consume(&r, on_rec, &t);
		}
	}
	res.cpu_ns = (cpu_now() - c0) * 1e9;
	res.recs_s = t.records / (now() - t0);
	ioctl(r.fd, KML_RING_IOC_STOP);
	if (perf)
		perf_ring_close(&p);
	else
		t.lost = r.ctrl->lost;
	kml_ring_user_close(&r);
	sink += t.sum;
	res.cpu_ns = t.records ? res.cpu_ns / t.records : 0;
	res.records = t.records;
	res.lost = t.lost;
	res.bad = t.bad;
	res.polls = polls;
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/*
 * Each configuration, both ways, interleaved round by round; the median
 * round of each is printed, and the ratios kml_ring / perf (above 1:
 * kml_ring delivers more records per second, or per CPU second).
 */
static void peer_bench(void)
{
	static const struct { uint32_t size; int each; const char *name; } cf[] = {
		{ 64, 1, "64 B, wakeup per record" },
		{ 64, 0, "64 B, watermark 64 KiB" },
		{ 4096, 1, "4 KiB, wakeup per record" },
		{ 4096, 0, "4 KiB, watermark 64 KiB" },
	};
	enum { NC = sizeof(cf) / sizeof(cf[0]) };
	/* [config][0 ring, 1 perf][round] */
	double rate[NC][2][PEER_ROUNDS], cpu[NC][2][PEER_ROUNDS];
	uint64_t lost[NC][2] = { { 0 } }, paced_recs[NC][2] = { { 0 } };
	uint64_t polls[NC][2] = { { 0 } }, bad = 0;

	if (read_sample_format()) {
		printf("kml_ring vs perf: no kml_ring:produced event in tracefs, not compared\n");
		return;
	}
	for (int round = 0; round < PEER_ROUNDS; round++)
		for (int c = 0; c < NC; c++)
			for (int perf = 0; perf < 2; perf++) {
				struct peer_result flat, paced;

				flat = peer_run(perf, cf[c].each, cf[c].size, 0);
				paced = peer_run(perf, cf[c].each, cf[c].size, PEER_RATE);
				if (getenv("KML_BENCH_VERBOSE"))	/* every run */
					fprintf(stderr, "round %d %-26s %-8s flat out %8.0f/s"
						" lost %llu polls %llu, at %d/s %8.0f ns/record"
						" (%llu records, %llu polls)\n",
						round, cf[c].name, perf ? "perf" : "kml_ring",
						flat.recs_s, (unsigned long long)flat.lost,
						(unsigned long long)flat.polls,
						PEER_RATE, paced.cpu_ns,
						(unsigned long long)paced.records,
						(unsigned long long)paced.polls);
				rate[c][perf][round] = flat.recs_s;
				cpu[c][perf][round] = paced.cpu_ns;
				lost[c][perf] += flat.lost;
				paced_recs[c][perf] += paced.records;
				polls[c][perf] += paced.polls;
				bad += flat.bad + paced.bad;
			}
	printf("kml_ring vs perf's ring: the same producer (KML_RING_PRODUCE_TRACE for perf),\n"
	       "256 KiB each, producer on CPU 1, consumer on CPU 0, median of %d rounds.\n"
	       "Under TCG only the ratios mean anything.\n", PEER_ROUNDS);
	printf("  %-26s %29s   %29s\n", "", "records/s, producer flat out",
	       "consumer CPU ns/record, 5000/s");
	printf("  %-26s %10s %10s %7s   %10s %10s %7s\n", "", "kml_ring", "perf", "ratio",
	       "kml_ring", "perf", "ratio");
	for (int c = 0; c < NC; c++) {
		double rk = median(rate[c][0], PEER_ROUNDS), rp = median(rate[c][1], PEER_ROUNDS);
		double ck = median(cpu[c][0], PEER_ROUNDS), cp = median(cpu[c][1], PEER_ROUNDS);

		printf("  %-26s %10.0f %10.0f %6.2fx   %10.0f %10.0f %6.2fx\n", cf[c].name,
		       rk, rp, rk / rp, ck, cp, cp / ck);
	}
	printf("  ratios: kml_ring / perf, of records/s and of records per consumer CPU second\n");
	/*
	 * Counts, which host load does not inflate as it does CPU time (a
	 * vCPU the host preempts still runs the guest's clocks). At 5000/s,
	 * fewer records than offered means the producer fell behind.
	 */
	printf("  all rounds, kml_ring / perf: %-19s %-21s %s\n", "lost flat out",
	       "records at 5000/s", "poll() per 1000 records");
	for (int c = 0; c < NC; c++)
		printf("    %-26s %9llu / %-9llu %7llu / %-7llu %9.1f / %.1f\n", cf[c].name,
		       (unsigned long long)lost[c][0], (unsigned long long)lost[c][1],
		       (unsigned long long)paced_recs[c][0], (unsigned long long)paced_recs[c][1],
		       1000.0 * polls[c][0] / (paced_recs[c][0] + !paced_recs[c][0]),
		       1000.0 * polls[c][1] / (paced_recs[c][1] + !paced_recs[c][1]));
	if (bad)
		printf("  %llu malformed records from perf's ring\n", (unsigned long long)bad);
}

static double memcpy_bw(void)
{
	size_t src_len = 1 << 20, blk = 4096, done = 0;
	char *src = malloc(src_len), *dst = malloc(blk);
	double t0;

	memset(src, 1, src_len);
	t0 = now();
	while (now() - t0 < 0.5) {
		for (size_t off = 0; off < src_len; off += blk) {
			memcpy(dst, src + off, blk);
			sink += sum_words(dst, blk);
		}
		done += src_len;
	}
	free(src);
	free(dst);
	return done / (now() - t0);
}

int main(int argc, char **argv)
{
	double bw, mm64, rd64, mm4k, rd4k, b_mm64, b_rd64, b_mm4k, b_rd4k;
	double cpu_wm, cpu_each;
	uint64_t n_wm, n_each;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("affinity");
	if (argc > 1 && !strcmp(argv[1], "peers")) {	/* the peer comparison alone */
		peer_bench();
		return 0;
	}
	bw = memcpy_bw();
	mm64 = drain_rate(0, 64, &b_mm64);
	rd64 = drain_rate(1, 64, &b_rd64);
	mm4k = drain_rate(0, 4096, &b_mm4k);
	rd4k = drain_rate(1, 4096, &b_rd4k);
	cpu_wm = stream_cpu_per_rec(64 * 1024, &n_wm);
	cpu_each = stream_cpu_per_rec(1, &n_each);

	printf("kml_ring benchmark: 256 KiB ring, consumer on CPU 0, producer on CPU 1\n");
	printf("consuming a full ring (40 rounds), every payload word read:\n");
	printf("  %-26s %12s %10s\n", "", "records/s", "MB/s");
	printf("  %-26s %12.0f %10.1f\n", "64 B, mmap", mm64, b_mm64 / 1e6);
	printf("  %-26s %12.0f %10.1f\n", "64 B, read()", rd64, b_rd64 / 1e6);
	printf("  %-26s %12.0f %10.1f\n", "4 KiB, mmap", mm4k, b_mm4k / 1e6);
	printf("  %-26s %12.0f %10.1f\n", "4 KiB, read()", rd4k, b_rd4k / 1e6);
	printf("  %-26s %12s %10.1f\n", "memcpy+sum of 4 KiB", "", bw / 1e6);
	printf("streaming 50000 records/s of 64 B for 2 s, consumer CPU per record:\n");
	printf("  watermark 64 KiB           %8.0f ns (%llu records)\n", cpu_wm * 1e9,
	       (unsigned long long)n_wm);
	printf("  wakeup per record          %8.0f ns (%llu records)\n", cpu_each * 1e9,
	       (unsigned long long)n_each);
	printf("ratios (same guest run):\n");
	printf("  64 B mmap / read() records/s              = %.2f\n", mm64 / rd64);
	printf("  4 KiB mmap / read() records/s             = %.2f\n", mm4k / rd4k);
	printf("  4 KiB mmap bytes/s / memcpy bandwidth     = %.2f\n", b_mm4k / bw);
	printf("  consumer CPU, wakeup per record / watermark = %.2f\n", cpu_each / cpu_wm);
	printf("\n");
	peer_bench();
	return 0;
}
