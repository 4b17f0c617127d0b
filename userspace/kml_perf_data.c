// SPDX-License-Identifier: GPL-2.0
/*
 * A kml-probe record file as perf.data (layout and mapping:
 * kml_perf_data.h). Two passes over the calls: the first sizes the data
 * section and finds the first and last time and the highest CPU, so the
 * header is right when written first and the output is a plain stream
 * (no seeking back, any sink).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/perf_event.h>

#include "kml_perf_data.h"

#define PERF_MAGIC2	0x32454c4946524550ULL	/* "PERFILE2", little-endian */
#define NAME_ALIGN	64			/* perf pads strings to this */

/* What perf's reader (header.c) calls these; the layout is its ABI. */
struct file_section {
	uint64_t offset, size;
};

struct file_header {
	uint64_t magic, size, attr_size;
	struct file_section attrs, data, event_types;
	uint64_t adds_features[4];	/* 256 feature bits */
};

_Static_assert(sizeof(struct file_header) == 104, "perf_file_header is 104 bytes");
_Static_assert(sizeof(struct perf_event_attr) >= KML_PERF_ATTR_SIZE,
	       "perf_event_attr has what is written");

/* The features written, in bit order: perf reads their table so. */
static const unsigned int feats[] = {
	KML_PERF_FEAT_NRCPUS, KML_PERF_FEAT_EVENT_DESC,
	KML_PERF_FEAT_SAMPLE_TIME, KML_PERF_FEAT_CLOCK_DATA,
};
#define NFEATS	(sizeof(feats) / sizeof(feats[0]))

#define SAMPLE_TYPE	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)

/* The sample_id trailer of other records (sample_id_all): tid, time, cpu, id. */
#define SAMPLE_ID_SIZE	32

struct conv {
	const struct kml_pf *pf;
	const struct kml_perf_sink *sink;
	struct kml_perf_stats *st;
	uint64_t data_size;
	uint64_t first_ns, last_ns;
	uint32_t max_cpu;
	int failed;		/* a write failed: errno says why */
	int too_big;		/* a sample past 64 KiB (it cannot be) */
};

static int out(struct conv *c, const void *p, size_t n)
{
	if (c->failed)
		return -1;
	if (n && c->sink->write(c->sink->ctx, p, n)) {
		c->failed = 1;
		return -1;
	}
	c->st->bytes += n;
	return 0;
}

static int out_u32(struct conv *c, uint32_t v)
{
	return out(c, &v, sizeof(v));
}

static int out_u64(struct conv *c, uint64_t v)
{
	return out(c, &v, sizeof(v));
}

/* The attr's index in the file: 0..nfuncs-1, in the kml file's order. */
static int index_of(const struct kml_pf *pf, uint32_t tag)
{
	for (unsigned int i = 0; i < pf->nfuncs; i++)
		if (pf->funcs[i].attr.id == tag)
			return (int)i;
	return -1;
}

static void attr_of(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->size = KML_PERF_ATTR_SIZE;
	a->config = PERF_COUNT_SW_BPF_OUTPUT;
	a->sample_period = 1;
	a->sample_type = SAMPLE_TYPE;
	a->sample_id_all = 1;
	a->exclude_user = 1;	/* the calls are kernel functions' */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

/*
 * The raw payload: "ret=0x2a arg0=0x1 arg1=0x2", NUL-terminated and
 * zero-padded so that the u32 size and the bytes end 8-byte aligned.
 * Returns the payload's size (without the u32).
 */
static uint32_t raw_of(const struct kml_probe_event *ev, char *buf, size_t bufsz)
{
	size_t n = (size_t)snprintf(buf, bufsz, "ret=0x%" PRIx64, (uint64_t)ev->ret);
	uint32_t size;

	for (uint32_t i = 0; i < ev->nargs && i < KML_PROBE_MAX_ARGS; i++)
		n += (size_t)snprintf(buf + n, bufsz - n, " arg%u=0x%" PRIx64, i,
				      (uint64_t)ev->args[i]);
	size = (uint32_t)((n + 1 + sizeof(uint32_t) + 7) / 8 * 8 - sizeof(uint32_t));
	memset(buf + n, 0, size - n);
	return size;
}

/* Room for the longest payload: 6 args of 16 hex digits, and padding. */
#define RAW_MAX	256

static uint32_t sample_size(uint32_t raw)
{
	/* header, id, ip, pid/tid, time, cpu/res, period, raw size, raw */
	return (uint32_t)(sizeof(struct perf_event_header) + 6 * 8 + sizeof(uint32_t) + raw);
}

static int size_call(const struct kml_ring_rec *rec, const struct kml_probe_event *ev,
		     void *arg)
{
	struct conv *c = arg;
	char raw[RAW_MAX];

	(void)rec;
	c->data_size += sample_size(raw_of(ev, raw, sizeof(raw)));
	if (!c->st->samples || ev->start_ns < c->first_ns)
		c->first_ns = ev->start_ns;
	if (ev->start_ns > c->last_ns)
		c->last_ns = ev->start_ns;
	if (ev->cpu > c->max_cpu)
		c->max_cpu = ev->cpu;
	c->st->samples++;
	return 0;
}

static int write_call(const struct kml_ring_rec *rec, const struct kml_probe_event *ev,
		      void *arg)
{
	struct conv *c = arg;
	char raw[RAW_MAX];
	uint32_t rs = raw_of(ev, raw, sizeof(raw));
	struct perf_event_header h = {
		.type = PERF_RECORD_SAMPLE,
		.misc = PERF_RECORD_MISC_KERNEL,
		.size = (uint16_t)sample_size(rs),
	};
	int idx = index_of(c->pf, ev->id);

	(void)rec;
	if (idx < 0 || sample_size(rs) > UINT16_MAX) {
		c->too_big = 1;		/* kml_pf_parse() checked both */
		return -1;
	}
	if (out(c, &h, sizeof(h)) || out_u64(c, (uint64_t)idx + 1) || out_u64(c, 0) ||
	    out_u32(c, ev->tgid) || out_u32(c, ev->pid) || out_u64(c, ev->start_ns) ||
	    out_u32(c, ev->cpu) || out_u32(c, 0) || out_u64(c, ev->duration_ns) ||
	    out_u32(c, rs) || out(c, raw, rs))
		return -1;
	c->st->samples++;
	return 0;
}

/* Calls a function measured but could not record, as perf counts its own. */
static uint64_t lost_of(const struct kml_pf_func *f)
{
	if (!f->summarized || (f->sum.flags & KML_PF_SUM_UNKNOWN))
		return 0;
	return f->sum.lost;
}

static uint32_t lost_size(void)
{
	return (uint32_t)(sizeof(struct perf_event_header) + 8 + SAMPLE_ID_SIZE);
}

static int write_lost(struct conv *c, unsigned int idx, uint64_t lost)
{
	struct perf_event_header h = {
		.type = PERF_RECORD_LOST_SAMPLES,
		.misc = PERF_RECORD_MISC_KERNEL,
		.size = (uint16_t)lost_size(),
	};
	const struct kml_pf *pf = c->pf;
	uint64_t t = pf->complete ? pf->end.end_ns : c->last_ns;

	/* sample_id: pid/tid (none: -1), time, cpu, identifier. */
	return out(c, &h, sizeof(h)) || out_u64(c, lost) ||
	       out_u32(c, UINT32_MAX) || out_u32(c, UINT32_MAX) || out_u64(c, t) ||
	       out_u32(c, 0) || out_u32(c, 0) || out_u64(c, (uint64_t)idx + 1);
}

static uint32_t name_len(const char *func)
{
	size_t n = strlen(KML_PERF_EVENT_PREFIX) + strlen(func) + 1;

	return (uint32_t)((n + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN);
}

static uint64_t feat_size(const struct conv *c, unsigned int feat)
{
	uint64_t n = 0;

	switch (feat) {
	case KML_PERF_FEAT_NRCPUS:
		return 8;
	case KML_PERF_FEAT_EVENT_DESC:
		n = 8;
		for (unsigned int i = 0; i < c->pf->nfuncs; i++)
			n += KML_PERF_ATTR_SIZE + 4 + 4 + name_len(c->pf->funcs[i].attr.func) + 8;
		return n;
	case KML_PERF_FEAT_SAMPLE_TIME:
		return 16;
	case KML_PERF_FEAT_CLOCK_DATA:
		return 24;
	}
	return 0;
}

static int write_feat(struct conv *c, unsigned int feat)
{
	const struct kml_pf *pf = c->pf;
	struct perf_event_attr a;

	switch (feat) {
	case KML_PERF_FEAT_NRCPUS:
		/* What the calls show: CPUs up to the highest one seen. */
		return out_u32(c, c->max_cpu + 1) || out_u32(c, c->max_cpu + 1);
	case KML_PERF_FEAT_EVENT_DESC:
		attr_of(&a);
		if (out_u32(c, pf->nfuncs) || out_u32(c, KML_PERF_ATTR_SIZE))
			return -1;
		for (unsigned int i = 0; i < pf->nfuncs; i++) {
			char name[KML_PROBE_FUNC_LEN + NAME_ALIGN] = "";
			uint32_t len = name_len(pf->funcs[i].attr.func);

			snprintf(name, sizeof(name), "%s%s", KML_PERF_EVENT_PREFIX,
				 pf->funcs[i].attr.func);
			if (out(c, &a, KML_PERF_ATTR_SIZE) || out_u32(c, 1) ||
			    out_u32(c, len) || out(c, name, len) || out_u64(c, i + 1))
				return -1;
		}
		return 0;
	case KML_PERF_FEAT_SAMPLE_TIME:
		return out_u64(c, c->first_ns) || out_u64(c, c->last_ns);
	case KML_PERF_FEAT_CLOCK_DATA:
		/* version 1, clockid, wall-clock and clockid time at one moment */
		return out_u32(c, 1) || out_u32(c, CLOCK_MONOTONIC) ||
		       out_u64(c, pf->hdr.start_realtime_ns) || out_u64(c, pf->hdr.start_ns);
	}
	return -1;
}

int kml_perf_write(const void *buf, size_t len, const struct kml_pf *pf,
		   const struct kml_perf_sink *sink, struct kml_perf_stats *st,
		   char *err, size_t errlen)
{
	struct conv c = { .pf = pf, .sink = sink, .st = st };
	struct file_header h = {
		.magic = PERF_MAGIC2,
		.size = sizeof(h),
		.attr_size = KML_PERF_ATTR_SIZE + sizeof(struct file_section),
	};
	struct perf_event_attr a;
	uint64_t off;

	memset(st, 0, sizeof(*st));
	if (pf->nfuncs < 1 || pf->nfuncs > KML_PROBE_MAX_FUNCS)
		return kml_pf_fail(err, errlen, "no functions to convert");
	/* Pass 1: sizes, times, CPUs. */
	if (kml_pf_each_call(buf, len, pf, size_call, &c))
		return kml_pf_fail(err, errlen, "the file changed since it was read");
	for (unsigned int i = 0; i < pf->nfuncs; i++)
		if (lost_of(&pf->funcs[i]))
			c.data_size += lost_size();

	h.attrs.offset = sizeof(h);
	h.attrs.size = pf->nfuncs * h.attr_size;
	off = h.attrs.offset + h.attrs.size;		/* the ids */
	h.data.offset = off + pf->nfuncs * sizeof(uint64_t);
	h.data.size = c.data_size;
	for (unsigned int i = 0; i < NFEATS; i++)
		h.adds_features[feats[i] / 64] |= 1ULL << (feats[i] % 64);
	st->data_offset = h.data.offset;
	st->data_size = h.data.size;
	st->samples = 0;

	/* Header, attributes (each with its one id), ids. */
	attr_of(&a);
	if (out(&c, &h, sizeof(h)))
		goto write_failed;
	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		struct file_section ids = { off + i * sizeof(uint64_t), sizeof(uint64_t) };

		if (out(&c, &a, KML_PERF_ATTR_SIZE) || out(&c, &ids, sizeof(ids)))
			goto write_failed;
	}
	for (unsigned int i = 0; i < pf->nfuncs; i++)
		if (out_u64(&c, i + 1))
			goto write_failed;

	/* Pass 2: the samples, then what was lost. */
	if (kml_pf_each_call(buf, len, pf, write_call, &c)) {
		if (c.failed)
			goto write_failed;
		return kml_pf_fail(err, errlen, "the file changed since it was read");
	}
	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		uint64_t lost = lost_of(&pf->funcs[i]);

		if (!lost)
			continue;
		if (write_lost(&c, i, lost))
			goto write_failed;
		st->lost += lost;
	}
	if (st->samples != pf->records)
		return kml_pf_fail(err, errlen, "the file changed since it was read");

	/* The feature table, right after the data, then each feature. */
	off = h.data.offset + h.data.size + NFEATS * sizeof(struct file_section);
	for (unsigned int i = 0; i < NFEATS; i++) {
		struct file_section s = { off, feat_size(&c, feats[i]) };

		if (out(&c, &s, sizeof(s)))
			goto write_failed;
		off += s.size;
	}
	for (unsigned int i = 0; i < NFEATS; i++)
		if (write_feat(&c, feats[i]))
			goto write_failed;
	if (st->bytes != off)
		return kml_pf_fail(err, errlen, "internal error: %llu bytes written, %llu planned",
			    (unsigned long long)st->bytes, (unsigned long long)off);
	return 0;

write_failed:
	return kml_pf_fail(err, errlen, "%s", strerror(errno));
}
