// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_ring, run as root inside the test guest (see
 * scripts/guest/selftests.sh for KMODLAB_KO_DIR and KMODLAB_BIN).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kml_ring.h>
#include "kselftest_harness.h"
#include "../kml_selftest.h"
#include "../../userspace/kml_ring_lib.h"
#include "../../modules/kml_ring/kml_ring_logic.h"

#define DEV	KML_RING_DEVICE
#define REC_MIN	(sizeof(struct kml_ring_rec) + sizeof(struct kml_ring_sample))

static int reload_ring(void)
{
	int ret = kml_unload("kml_ring");

	if (!ret)
		ret = kml_load_once("modules/kml_stats/kml_stats.ko", "");
	if (!ret)
		ret = kml_load_once("modules/kml_ring/kml_ring.ko", "");
	return ret;
}

static int start(int fd, uint32_t size, uint32_t rate, uint64_t count, int cpu)
{
	struct kml_ring_produce p = {
		.record_size = size, .rate = rate, .count = count, .cpu = cpu,
	};

	return ioctl(fd, KML_RING_IOC_START, &p) ? -errno : 0;
}

static int set_size(int fd, uint32_t pages)
{
	return ioctl(fd, KML_RING_IOC_SET_SIZE, &pages) ? -errno : 0;
}

struct check {
	uint64_t records, gaps, bad, next_seq, bytes;
};

static int check_sample(const struct kml_ring_rec *rec, void *arg)
{
	struct check *c = arg;
	const struct kml_ring_sample *s = (const void *)(rec + 1);
	int ret = rec->type == KML_RING_REC_SAMPLE ?
		  kml_ring_check_sample(rec, c->next_seq) : -EINVAL;

	if (ret == -ERANGE && s->seq > c->next_seq)
		c->gaps += s->seq - c->next_seq;
	else if (ret)
		c->bad++;
	c->next_seq = s->seq + 1;
	c->records++;
	c->bytes += rec->size;
	return 0;
}

/* Consumes until @total records are accounted for (read or lost). */
static int drain(struct kml_ring_user *r, struct check *c, uint64_t total,
		 int timeout_s)
{
	time_t end = time(NULL) + timeout_s;

	while (c->records + __atomic_load_n(&r->ctrl->lost, __ATOMIC_RELAXED) < total) {
		if (time(NULL) > end)
			return -ETIMEDOUT;
		kml_ring_user_wait(r, 50);
		if (kml_ring_user_consume(r, check_sample, c) < 0)
			return -EINVAL;
	}
	return 0;
}

FIXTURE(ring) {
	struct kml_ring_user r;
};

FIXTURE_SETUP(ring)
{
	ASSERT_EQ(0, reload_ring());
	self->r.fd = -1;
}

FIXTURE_TEARDOWN(ring)
{
	kml_ring_user_close(&self->r);
}

TEST_F(ring, bad_mmap_and_ioctl_arguments)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = open(DEV, O_RDWR);
	uint64_t wm;
	void *p;

	ASSERT_GE(fd, 0);
	/* Before sizing: nothing to map, nothing to produce into. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, start(fd, 64, 0, 10, -1));
	EXPECT_EQ(-EINVAL, set_size(fd, 0));
	EXPECT_EQ(-EINVAL, set_size(fd, 3));
	EXPECT_EQ(-EINVAL, set_size(fd, KML_RING_MAX_PAGES * 2));
	EXPECT_EQ(-1, ioctl(fd, KML_RING_IOC_SET_SIZE, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, set_size(fd, 4));

	/* Wrong length or offset. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, pg));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 2 * pg));
	EXPECT_EQ(EINVAL, errno);
	/* Executable, private, or writable data: refused. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg));
	EXPECT_EQ(EPERM, errno);
	/* Read-only data stays read-only. */
	p = mmap(NULL, 4 * pg, PROT_READ, MAP_SHARED, fd, pg);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, 4 * pg, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(p, 4 * pg, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	/* Resizing under a mapping would pull pages from under it. */
	EXPECT_EQ(-EBUSY, set_size(fd, 8));
	munmap(p, 4 * pg);
	EXPECT_EQ(0, set_size(fd, 8));

	EXPECT_EQ(-EINVAL, start(fd, REC_MIN - 8, 0, 10, -1));
	EXPECT_EQ(-EINVAL, start(fd, 8 * pg / 4 + 8, 0, 10, -1));
	EXPECT_EQ(-EINVAL, start(fd, 64, 0, 10, 4096));
	EXPECT_EQ(-EINVAL, start(fd, 64, 0, 10, -2));
	{
		struct kml_ring_produce pr = { .record_size = 64, .cpu = -1, .flags = 2 };

		EXPECT_EQ(-1, ioctl(fd, KML_RING_IOC_START, &pr));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-1, ioctl(fd, KML_RING_IOC_START, kml_bad_ptr()));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, start(fd, 64, 10, 0, -1));
	EXPECT_EQ(-EBUSY, start(fd, 64, 10, 0, -1));
	EXPECT_EQ(-EBUSY, set_size(fd, 4));
	ASSERT_EQ(0, ioctl(fd, KML_RING_IOC_STOP));
	EXPECT_EQ(0, ioctl(fd, KML_RING_IOC_STOP));	/* idempotent */

	wm = 0;
	EXPECT_EQ(-1, ioctl(fd, KML_RING_IOC_SET_WATERMARK, &wm));
	EXPECT_EQ(EINVAL, errno);
	wm = 8 * pg + 1;
	EXPECT_EQ(-1, ioctl(fd, KML_RING_IOC_SET_WATERMARK, &wm));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, _IO(KML_RING_IOC_MAGIC, 0x2f)));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

static void integrity(struct __test_metadata *_metadata, struct kml_ring_user *r,
		      uint32_t size, uint64_t count, int cpu)
{
	struct check c = { 0 };

	ASSERT_EQ(0, start(r->fd, size, 0, count, cpu));
	ASSERT_EQ(0, drain(r, &c, count, 240));
	EXPECT_EQ(0, c.bad) TH_LOG("torn or corrupt records");
	/*
	 * Every record is either read, in order, or counted lost: the lost
	 * ones are the gaps in the sequence plus any after the last read.
	 */
	EXPECT_EQ(c.gaps + (count - c.next_seq), r->ctrl->lost);
	EXPECT_EQ(count, c.records + r->ctrl->lost);
	EXPECT_EQ(c.records, r->ctrl->produced);
	EXPECT_GT(c.bytes / r->size, 100) TH_LOG("only %llu wrap-arounds",
						(unsigned long long)(c.bytes / r->size));
	TH_LOG("%llu records of %u bytes, %llu lost, %llu wrap-arounds",
	       (unsigned long long)c.records, size,
	       (unsigned long long)r->ctrl->lost,
	       (unsigned long long)(c.bytes / r->size));
	ASSERT_EQ(0, ioctl(r->fd, KML_RING_IOC_STOP));
}

TEST_F_TIMEOUT(ring, integrity_across_millions_of_records, 300)
{
	ASSERT_EQ(0, kml_ring_user_open(&self->r, 4));
	integrity(_metadata, &self->r, 64, 1000000, -1);
}

TEST_F_TIMEOUT(ring, integrity_with_padding_at_the_end, 300)
{
	/* 200 does not divide the ring: PAD records at every wrap. */
	ASSERT_EQ(0, kml_ring_user_open(&self->r, 2));
	integrity(_metadata, &self->r, 200, 300000, -1);
}

TEST_F_TIMEOUT(ring, producer_on_another_cpu, 300)
{
	cpu_set_t set;

	ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ASSERT_EQ(0, kml_ring_user_open(&self->r, 4));
	integrity(_metadata, &self->r, 128, 300000, 1);
}

TEST_F(ring, lost_count_exact_when_the_consumer_stalls)
{
	struct check c = { 0 };
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t cap = pg / 64;
	time_t end;

	ASSERT_EQ(0, kml_ring_user_open(&self->r, 1));
	ASSERT_EQ(0, start(self->r.fd, 64, 0, 1000, -1));
	end = time(NULL) + 30;
	while (self->r.ctrl->produced + self->r.ctrl->lost < 1000 && time(NULL) < end)
		usleep(10000);
	/* Nothing consumed: exactly one ring's worth kept, the rest lost. */
	EXPECT_EQ(cap, self->r.ctrl->produced);
	EXPECT_EQ(1000 - cap, self->r.ctrl->lost);
	EXPECT_EQ(cap, kml_ring_user_consume(&self->r, check_sample, &c));
	EXPECT_EQ(0, c.bad);
	EXPECT_EQ(0, c.gaps);
	EXPECT_EQ(cap, c.next_seq);
}

TEST_F(ring, poll_watermark)
{
	struct pollfd p;
	uint64_t wm = 1024, avail;
	int wakes = 0, i;

	ASSERT_EQ(0, kml_ring_user_open(&self->r, 4));
	ASSERT_EQ(0, ioctl(self->r.fd, KML_RING_IOC_SET_WATERMARK, &wm));
	EXPECT_EQ(1024, self->r.ctrl->watermark);
	p.fd = self->r.fd;
	p.events = POLLIN;
	EXPECT_EQ(0, poll(&p, 1, 100));
	/* 200 records/s of 64 bytes: 1024 bytes every 80 ms. */
	ASSERT_EQ(0, start(self->r.fd, 64, 200, 0, -1));
	for (i = 0; i < 5; i++) {
		struct check c = { 0 };

		ASSERT_EQ(1, poll(&p, 1, 5000));
		avail = kml_ring_user_pending(&self->r);
		EXPECT_GE(avail, wm) TH_LOG("woken with %llu bytes", (unsigned long long)avail);
		/* Consume everything: below the watermark again. */
		kml_ring_user_consume(&self->r, check_sample, &c);
		EXPECT_EQ(0, c.bad);
		EXPECT_GE(c.records, 16);
		wakes++;
		EXPECT_EQ(0, poll(&p, 1, 0));
	}
	EXPECT_EQ(5, wakes);
}

static uint64_t stat_value(const char *name)
{
	char line[256], want[64];
	FILE *f = fopen("/proc/kmodlab/stats", "r");
	unsigned long long v = 0;

	snprintf(want, sizeof(want), "kml_ring %s counter %%llu", name);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, want, &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

TEST_F(ring, wakeups_follow_the_watermark_not_the_records)
{
	uint64_t wm = 8192, w0, r0, records, wakeups;
	struct check c = { 0 };
	time_t end;

	ASSERT_EQ(0, kml_ring_user_open(&self->r, 16));
	ASSERT_EQ(0, ioctl(self->r.fd, KML_RING_IOC_SET_WATERMARK, &wm));
	w0 = stat_value("wakeups");
	r0 = stat_value("records");
	ASSERT_EQ(0, start(self->r.fd, 64, 20000, 0, -1));
	end = time(NULL) + 2;
	while (time(NULL) < end) {
		kml_ring_user_wait(&self->r, 1000);
		kml_ring_user_consume(&self->r, check_sample, &c);
	}
	ASSERT_EQ(0, ioctl(self->r.fd, KML_RING_IOC_STOP));
	records = stat_value("records") - r0;
	wakeups = stat_value("wakeups") - w0;
	TH_LOG("%llu records, %llu wakeups", (unsigned long long)records,
	       (unsigned long long)wakeups);
	EXPECT_GT(records, 1000);
	/* 8192 bytes is 128 records: far fewer wakeups than records. */
	EXPECT_LT(wakeups * 32, records);
	EXPECT_EQ(0, c.bad);
}

TEST_F(ring, read_copies_the_same_records)
{
	struct kml_ring_ctrl *ctrl;
	struct kml_ring_rec *rec;
	struct check c = { 0 };
	char buf[8192], small[16];
	int fd = open(DEV, O_RDWR), nb;

	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));	/* not sized */
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, set_size(fd, 2));
	nb = open(DEV, O_RDWR | O_NONBLOCK);
	ASSERT_GE(nb, 0);
	ASSERT_EQ(0, set_size(nb, 1));
	EXPECT_EQ(-1, read(nb, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno);
	close(nb);

	/* The control page tells how many the producer had to drop. */
	ctrl = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, ctrl);
	ASSERT_EQ(0, start(fd, 136, 0, 20000, -1));
	while (c.records + __atomic_load_n(&ctrl->lost, __ATOMIC_RELAXED) < 20000) {
		ssize_t n = read(fd, buf, sizeof(buf)), off = 0;

		ASSERT_GT(n, 0);
		while (off < n) {
			rec = (void *)(buf + off);
			check_sample(rec, &c);
			off += rec->size;
		}
	}
	EXPECT_EQ(c.gaps + (20000 - c.next_seq), ctrl->lost);
	EXPECT_EQ(20000, c.records + ctrl->lost);
	EXPECT_EQ(c.records, ctrl->produced);
	munmap(ctrl, sysconf(_SC_PAGESIZE));
	EXPECT_EQ(0, c.bad);
	/* A buffer smaller than the next record, and a bad buffer. */
	ASSERT_EQ(0, ioctl(fd, KML_RING_IOC_STOP));
	ASSERT_EQ(0, start(fd, 136, 0, 5, -1));
	usleep(200000);
	EXPECT_EQ(-1, read(fd, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, syscall(SYS_read, fd, kml_bad_ptr(), 4096));
	EXPECT_EQ(EFAULT, errno);
	/* Both failures left the records there. */
	EXPECT_EQ(5 * 136, read(fd, buf, sizeof(buf)));
	close(fd);
}

TEST_F(ring, api_writes_reach_every_ring)
{
	struct kml_ring_user other = { .fd = -1 };
	uint64_t seen[2] = { 0, 0 };
	int i;

	ASSERT_EQ(0, kml_ring_user_open(&self->r, 4));
	ASSERT_EQ(0, kml_ring_user_open(&other, 1));
	kml_unload("kml_ring_apitest");
	ASSERT_EQ(0, kml_load("modules/tests/kml_ring_apitest.ko", "records=40"));
	ASSERT_EQ(0, kml_unload("kml_ring_apitest"));
	for (i = 0; i < 2; i++) {
		struct kml_ring_user *r = i ? &other : &self->r;
		uint64_t head = __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE);
		uint64_t pos = r->ctrl->tail;

		while (pos < head) {
			const struct kml_ring_rec *rec = (const void *)(r->data + (pos & (r->size - 1)));
			const uint64_t *w = (const void *)(rec + 1);
			uint32_t sz;

			ASSERT_EQ(0, kml_ring_next(r->data, r->size, pos, head, &sz));
			if (rec->type != KML_RING_REC_PAD) {
				EXPECT_EQ(KML_RING_REC_USER_BASE + 1, rec->type);
				EXPECT_EQ(seen[i], w[0]);
				EXPECT_EQ(sizeof(*rec) + (3 + seen[i] % 3) * 8, rec->size);
				EXPECT_EQ(seen[i] * 1000 + 2, w[2]);
				seen[i]++;
			}
			pos += sz;
		}
	}
	EXPECT_EQ(40, seen[0]);
	EXPECT_EQ(40, seen[1]);
	kml_ring_user_close(&other);
}

TEST_F(ring, fork_with_a_live_mapping)
{
	struct check c = { 0 };
	pid_t pid;
	int status;

	ASSERT_EQ(0, kml_ring_user_open(&self->r, 4));
	ASSERT_EQ(0, start(self->r.fd, 64, 0, 50, -1));
	while (self->r.ctrl->produced < 50)
		usleep(10000);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* The child faults the pages in through its own copy of the vma. */
		struct check cc = { 0 };

		if (kml_ring_user_consume(&self->r, check_sample, &cc) != 50 || cc.bad)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The child moved tail in the shared control page: nothing left. */
	EXPECT_EQ(0, kml_ring_user_consume(&self->r, check_sample, &c));
}

/* ---- lifetimes: munmap, close and rmmod in every order ---- */

/* rmmod refused because something still holds the module. */
static int busy(void)
{
	return syscall(SYS_delete_module, "kml_ring", O_NONBLOCK) == -1 &&
	       errno == EWOULDBLOCK;
}

static int map_both(int fd, void **ctrl, void **data, long pg, long pages)
{
	*ctrl = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*data = mmap(NULL, pages * pg, PROT_READ, MAP_SHARED, fd, pg);
	return *ctrl == MAP_FAILED || *data == MAP_FAILED ? -1 : 0;
}

TEST(munmap_close_rmmod_orders)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *ctrl, *data;
	int order, fd;

	for (order = 0; order < 4; order++) {
		ASSERT_EQ(0, reload_ring());
		fd = open(DEV, O_RDWR);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, set_size(fd, 2));
		ASSERT_EQ(0, map_both(fd, &ctrl, &data, pg, 2));
		ASSERT_EQ(0, start(fd, 64, 0, 0, -1));	/* running throughout */
		switch (order) {
		case 0:	/* munmap, close, rmmod */
			munmap(data, 2 * pg);
			munmap(ctrl, pg);
			close(fd);
			break;
		case 1:	/* close first: the mappings keep the ring alive */
			close(fd);
			usleep(100000);
			EXPECT_GT(((struct kml_ring_ctrl *)ctrl)->head, 0);
			EXPECT_TRUE(busy());
			munmap(ctrl, pg);
			EXPECT_TRUE(busy());
			munmap(data, 2 * pg);
			break;
		case 2:	/* rmmod while open and mapped: refused */
			EXPECT_TRUE(busy());
			munmap(ctrl, pg);
			close(fd);
			EXPECT_TRUE(busy());
			munmap(data, 2 * pg);
			break;
		default: /* data unmapped first, control last after close */
			munmap(data, 2 * pg);
			close(fd);
			EXPECT_TRUE(busy());
			munmap(ctrl, pg);
			break;
		}
		EXPECT_EQ(0, kml_unload("kml_ring")) TH_LOG("order %d", order);
	}
	ASSERT_EQ(0, reload_ring());
}

TEST_HARNESS_MAIN
