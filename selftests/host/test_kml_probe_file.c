// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for the `kml-probe record` file reader: a file built
 * here byte by byte, then every way of damaging it, each of which must
 * be refused with its own reason and never read out of bounds (ASan).
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_probe_file.h"

struct img {
	uint8_t b[65536];
	size_t len;
};

static void put(struct img *m, const void *p, size_t n)
{
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void rec(struct img *m, uint32_t type, const void *p, uint32_t n)
{
	struct kml_ring_rec h = { .type = type, .size = (uint32_t)sizeof(h) + n };

	put(m, &h, sizeof(h));
	put(m, p, n);
}

static void call(struct img *m, uint32_t id, uint32_t nargs, uint32_t pid, uint64_t ns)
{
	struct kml_probe_event ev = {
		.duration_ns = ns, .pid = pid, .tgid = pid, .id = id, .nargs = nargs,
	};

	rec(m, KML_PROBE_REC_CALL, &ev, sizeof(ev));
}

/* Two functions (tags 7 and 9, nargs 0 and 2), four calls; no totals yet. */
static size_t body(struct img *m)
{
	struct kml_pf_header h = {
		.version = KML_PF_VERSION, .bom = KML_PF_BOM,
		.header_size = sizeof(h), .attr_size = sizeof(struct kml_pf_attr),
		.nattrs = 2, .start_ns = 1000,
	};
	struct kml_pf_attr a = { .func = "vfs_read", .id = 7 };
	struct kml_pf_lost l = { .lost = 5 };

	memset(m, 0, sizeof(*m));
	memcpy(h.magic, KML_PF_MAGIC, 8);
	put(m, &h, sizeof(h));
	put(m, &a, sizeof(a));
	strcpy(a.func, "kml_probe_target");
	a.id = 9;
	a.nargs = 2;
	put(m, &a, sizeof(a));
	call(m, 7, 0, 100, 0);
	call(m, 7, 0, 100, 1500);
	call(m, 9, 2, 200, 3000);
	rec(m, KML_PF_REC_LOST, &l, sizeof(l));
	call(m, 9, 2, 100, 4000);
	return m->len;
}

static void totals(struct img *m, uint64_t w7, uint64_t w9, uint64_t records)
{
	struct kml_pf_summary s = { .id = 7, .written = w7, .lost = 5 };
	struct kml_pf_end e = { .end_ns = 2000001000, .records = records };

	rec(m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	s.id = 9;
	s.written = w9;
	s.lost = 0;
	s.nmissed = 3;
	rec(m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	rec(m, KML_PF_REC_END, &e, sizeof(e));
}

static struct kml_pf pf;
static char err[256];

static int parse(const struct img *m, bool force)
{
	err[0] = '\0';
	return kml_pf_parse(m->b, m->len, force, &pf, err, sizeof(err));
}

TEST(a_whole_file_adds_up)
{
	static struct img m;

	body(&m);
	totals(&m, 2, 2, 4);
	ASSERT_EQ(0, parse(&m, false)) TH_LOG("%s", err);
	ASSERT_TRUE(pf.complete);
	ASSERT_EQ(2U, pf.nfuncs);
	ASSERT_EQ(4U, pf.records);
	ASSERT_EQ(5U, pf.ring_lost);
	ASSERT_EQ(2U, pf.funcs[0].calls);
	ASSERT_EQ(1500U, pf.funcs[0].sum_ns);
	ASSERT_EQ(0U, pf.funcs[0].min_ns);
	ASSERT_EQ(1500U, pf.funcs[0].max_ns);
	ASSERT_EQ(1U, pf.funcs[0].hist[0]);
	ASSERT_EQ(1U, pf.funcs[0].hist[11]);	/* 1024 <= 1500 < 2048 */
	ASSERT_EQ(3000U, pf.funcs[1].min_ns);
	ASSERT_EQ(3U, pf.funcs[1].sum.nmissed);
	ASSERT_EQ(2000001000U, pf.end.end_ns);
	kml_pf_sort_threads(&pf);
	ASSERT_EQ(2U, pf.nthreads);
	ASSERT_EQ(100U, pf.threads[0].pid);
	ASSERT_EQ(3U, pf.threads[0].calls);
	ASSERT_EQ(5500U, pf.threads[0].total_ns);
	ASSERT_EQ(200U, pf.threads[1].pid);
}

TEST(every_cut_is_refused_and_read_in_bounds)
{
	static struct img m;
	size_t n;

	body(&m);
	totals(&m, 2, 2, 4);
	for (n = 0; n < m.len; n++) {
		/* Exactly n bytes on the heap: ASan sees any read past them. */
		uint8_t *p = malloc(n ? n : 1);

		memcpy(p, m.b, n);
		err[0] = '\0';
		ASSERT_EQ(-1, kml_pf_parse(p, n, false, &pf, err, sizeof(err))) TH_LOG("cut at %zu", n);
		ASSERT_NE(NULL, strstr(err, "truncated")) TH_LOG("cut at %zu: %s", n, err);
		/* --force reads up to the last whole record, once the table is there. */
		if (n >= sizeof(struct kml_pf_header) + 2 * sizeof(struct kml_pf_attr)) {
			ASSERT_EQ(0, kml_pf_parse(p, n, true, &pf, err, sizeof(err)))
				TH_LOG("cut at %zu: %s", n, err);
			ASSERT_FALSE(pf.complete);
			ASSERT_LE(pf.records, 4U);
		} else {
			ASSERT_EQ(-1, kml_pf_parse(p, n, true, &pf, err, sizeof(err)));
		}
		free(p);
	}
}

TEST(a_killed_recorder_is_read_with_force)
{
	static struct img m;

	body(&m);
	ASSERT_EQ(-1, parse(&m, false));
	ASSERT_NE(NULL, strstr(err, "no end record")) TH_LOG("%s", err);
	ASSERT_EQ(0, parse(&m, true)) TH_LOG("%s", err);
	ASSERT_FALSE(pf.complete);
	ASSERT_EQ(4U, pf.records);
}

#define DAMAGE(off_, type_, val_, needle_) do {				\
	static struct img m_;						\
	type_ v_ = (val_);						\
	body(&m_);							\
	totals(&m_, 2, 2, 4);						\
	memcpy(m_.b + (off_), &v_, sizeof(v_));				\
	ASSERT_EQ(-1, parse(&m_, false)) TH_LOG("%s", #needle_);		\
	ASSERT_NE(NULL, strstr(err, needle_)) TH_LOG("%s", err);	\
} while (0)

TEST(damaged_headers_are_refused)
{
	const size_t attr0 = sizeof(struct kml_pf_header);
	const size_t attr1 = attr0 + sizeof(struct kml_pf_attr);

	DAMAGE(0, char, 'X', "bad magic");
	DAMAGE(offsetof(struct kml_pf_header, version), uint32_t, 2, "version 2");
	DAMAGE(offsetof(struct kml_pf_header, bom), uint32_t, 0x04030201, "byte order");
	DAMAGE(offsetof(struct kml_pf_header, header_size), uint32_t, 8, "header size");
	DAMAGE(offsetof(struct kml_pf_header, header_size), uint32_t, 0x7ffffff8, "truncated");
	DAMAGE(offsetof(struct kml_pf_header, attr_size), uint32_t, 4, "attribute size");
	DAMAGE(offsetof(struct kml_pf_header, nattrs), uint32_t, 0, "0 functions");
	DAMAGE(offsetof(struct kml_pf_header, nattrs), uint32_t, 17, "17 functions");
	DAMAGE(offsetof(struct kml_pf_header, nattrs), uint32_t, 400, "400 functions");
	{
		/* 16 * 0x10000000 wraps a 32-bit size_t to 0: still too long. */
		static struct img m;
		uint32_t v = 16, big = 0x10000000;

		body(&m);
		memcpy(m.b + offsetof(struct kml_pf_header, nattrs), &v, 4);
		memcpy(m.b + offsetof(struct kml_pf_header, attr_size), &big, 4);
		ASSERT_EQ(-1, parse(&m, true));
		ASSERT_NE(NULL, strstr(err, "function table ends past")) TH_LOG("%s", err);
	}
	DAMAGE(offsetof(struct kml_pf_header, flags), uint32_t, 1, "flags");
	DAMAGE(attr0, char, '\0', "no name");
	memset(&pf, 0, sizeof(pf));
	{
		static struct img m;
		char x[KML_PROBE_FUNC_LEN];

		body(&m);
		memset(x, 'a', sizeof(x));
		memcpy(m.b + attr0, x, sizeof(x));	/* no NUL anywhere */
		ASSERT_EQ(-1, parse(&m, true));
		ASSERT_NE(NULL, strstr(err, "no name")) TH_LOG("%s", err);
	}
	/* a name that would put an escape sequence on the terminal */
	DAMAGE(attr0 + 1, char, '\x1b', "entry 0 is not a function name");
	DAMAGE(attr1 + 2, char, '\xe9', "entry 1 is not a function name");
	DAMAGE(attr1 + offsetof(struct kml_pf_attr, id), uint32_t, 7, "used twice");
	DAMAGE(attr1 + offsetof(struct kml_pf_attr, nargs), uint32_t, 7, "7 arguments");
}

TEST(damaged_records_are_refused)
{
	const size_t r0 = sizeof(struct kml_pf_header) + 2 * sizeof(struct kml_pf_attr);
	const size_t ev0 = r0 + sizeof(struct kml_ring_rec);
	const size_t rsz = sizeof(struct kml_ring_rec) + sizeof(struct kml_probe_event);

	DAMAGE(r0 + 4, uint32_t, 0, "size 0");
	DAMAGE(r0 + 4, uint32_t, 12, "size 12");
	DAMAGE(r0 + 4, uint32_t, rsz + 4, "size");
	DAMAGE(r0 + 4, uint32_t, 0x7ffffff8, "is cut");
	DAMAGE(r0 + 4, uint32_t, 24, "in 24 bytes");
	DAMAGE(ev0 + offsetof(struct kml_probe_event, id), uint32_t, 8, "unknown function tag 8");
	DAMAGE(ev0 + offsetof(struct kml_probe_event, nargs), uint32_t, 2, "2 arguments");
	DAMAGE(ev0 + offsetof(struct kml_probe_event, reserved), uint32_t, 1, "arguments");
}

TEST(totals_must_match_the_records)
{
	static struct img m;
	struct kml_pf_summary s = { .id = 9 };

	body(&m);
	totals(&m, 2, 2, 5);
	ASSERT_EQ(-1, parse(&m, false));
	ASSERT_NE(NULL, strstr(err, "end record counts 5")) TH_LOG("%s", err);
	body(&m);
	totals(&m, 2, 3, 4);
	ASSERT_EQ(-1, parse(&m, false));
	ASSERT_NE(NULL, strstr(err, "but 3 were written")) TH_LOG("%s", err);
	body(&m);
	rec(&m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	totals(&m, 2, 2, 4);
	ASSERT_EQ(-1, parse(&m, false));
	ASSERT_NE(NULL, strstr(err, "corrupt summary")) TH_LOG("%s", err);
	body(&m);
	totals(&m, 2, 2, 4);
	call(&m, 7, 0, 1, 1);
	ASSERT_EQ(-1, parse(&m, false));
	ASSERT_NE(NULL, strstr(err, "after the end record")) TH_LOG("%s", err);
	s.flags = 2;	/* an unknown flag */
	body(&m);
	rec(&m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	ASSERT_EQ(-1, parse(&m, true));
	ASSERT_NE(NULL, strstr(err, "corrupt summary")) TH_LOG("%s", err);
}

/* A recording someone else ended: its totals are unknown, not wrong. */
TEST(unknown_totals_are_not_checked)
{
	static struct img m;
	struct kml_pf_summary s = { .id = 7, .written = 2 };
	struct kml_pf_end e = { .records = 4 };

	body(&m);
	rec(&m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	s.id = 9;
	s.written = 0;
	s.flags = KML_PF_SUM_UNKNOWN;
	rec(&m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	rec(&m, KML_PF_REC_END, &e, sizeof(e));
	ASSERT_EQ(0, parse(&m, false)) TH_LOG("%s", err);
	ASSERT_EQ(2U, pf.funcs[1].calls);
	ASSERT_TRUE(pf.funcs[1].sum.flags & KML_PF_SUM_UNKNOWN);
}

TEST(newer_writers_are_read)
{
	static struct img m;
	struct kml_pf_header h;
	uint64_t extra[4] = { 1, 2, 3, 4 };
	static struct img big;
	size_t hdr = sizeof(h), attr = sizeof(struct kml_pf_attr);

	/* An unknown record type is skipped. */
	body(&m);
	rec(&m, 0x999, extra, sizeof(extra));
	totals(&m, 2, 2, 4);
	ASSERT_EQ(0, parse(&m, false)) TH_LOG("%s", err);
	ASSERT_EQ(1U, pf.unknown);

	/* A longer header and longer attribute blocks: the rest is skipped. */
	body(&m);
	totals(&m, 2, 2, 4);
	memset(&big, 0, sizeof(big));
	memcpy(&h, m.b, hdr);
	h.header_size += 16;
	h.attr_size += 8;
	put(&big, &h, hdr);
	put(&big, extra, 16);
	put(&big, m.b + hdr, attr);
	put(&big, extra, 8);
	put(&big, m.b + hdr + attr, attr);
	put(&big, extra, 8);
	put(&big, m.b + hdr + 2 * attr, m.len - hdr - 2 * attr);
	ASSERT_EQ(0, parse(&big, false)) TH_LOG("%s", err);
	ASSERT_EQ(4U, pf.records);
	ASSERT_STREQ("kml_probe_target", pf.funcs[1].attr.func);
}

TEST(more_threads_than_the_table_go_to_other)
{
	static struct img m;
	struct kml_pf_header h = {
		.version = KML_PF_VERSION, .bom = KML_PF_BOM,
		.header_size = sizeof(h), .attr_size = sizeof(struct kml_pf_attr),
		.nattrs = 1,
	};
	struct kml_pf_attr a = { .func = "f" };
	struct kml_pf_summary s = { .written = KML_PF_TOP_MAX + 10 };
	struct kml_pf_end e = { .records = KML_PF_TOP_MAX + 10 };
	static uint8_t buf[(KML_PF_TOP_MAX + 20) * 128];
	size_t len = 0;

	memcpy(h.magic, KML_PF_MAGIC, 8);
	memset(&m, 0, sizeof(m));
	put(&m, &h, sizeof(h));
	put(&m, &a, sizeof(a));
	memcpy(buf, m.b, m.len);
	len = m.len;
	for (uint32_t i = 0; i < KML_PF_TOP_MAX + 10; i++) {
		m.len = 0;
		call(&m, 0, 0, i + 1, 10);
		memcpy(buf + len, m.b, m.len);
		len += m.len;
	}
	m.len = 0;
	rec(&m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	rec(&m, KML_PF_REC_END, &e, sizeof(e));
	memcpy(buf + len, m.b, m.len);
	len += m.len;
	ASSERT_EQ(0, kml_pf_parse(buf, len, false, &pf, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ((unsigned int)KML_PF_TOP_MAX, pf.nthreads);
	ASSERT_EQ(10U, pf.other_calls);
	ASSERT_EQ(100U, pf.other_ns);
}

TEST_HARNESS_MAIN
