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
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../../userspace/kml_ring_lib.h"

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
	uint64_t records, bytes, sum;
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

int main(void)
{
	double bw, mm64, rd64, mm4k, rd4k, b_mm64, b_rd64, b_mm4k, b_rd4k;
	double cpu_wm, cpu_each;
	uint64_t n_wm, n_each;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("affinity");
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
	return 0;
}
