// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a `kml-probe record` file (format: kml_probe_file.h). Every
 * length comes from the file, so every one is checked against what is
 * left before it is used: this runs on whatever file it is given, and
 * fuzz_kml_probe_file feeds it garbage.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kml_probe_file.h"

int kml_pf_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

unsigned int kml_pf_bucket(uint64_t ns)
{
	return ns ? 64 - (unsigned int)__builtin_clzll(ns) : 0;
}

static struct kml_pf_func *func_of(struct kml_pf *pf, uint32_t id)
{
	for (unsigned int i = 0; i < pf->nfuncs; i++)
		if (pf->funcs[i].attr.id == id)
			return &pf->funcs[i];
	return NULL;
}

/* Count a call for its thread; past KML_PF_TOP_MAX threads, in "other". */
static void thread_add(struct kml_pf *pf, uint32_t pid, uint32_t tgid, uint64_t ns)
{
	size_t mask = sizeof(pf->index) / sizeof(pf->index[0]) - 1;
	size_t h = (pid * 2654435761U) & mask;
	struct kml_pf_thread *t;

	/* Open addressing in a table twice the size of threads[]: never full. */
	while (pf->index[h]) {
		t = &pf->threads[pf->index[h] - 1];
		if (t->pid == pid && t->tgid == tgid)
			goto found;
		h = (h + 1) & mask;
	}
	if (pf->nthreads == KML_PF_TOP_MAX) {
		pf->other_calls++;
		pf->other_ns += ns;
		return;
	}
	pf->index[h] = (int32_t)++pf->nthreads;
	t = &pf->threads[pf->nthreads - 1];
	t->pid = pid;
	t->tgid = tgid;
found:
	t->calls++;
	t->total_ns += ns;
}

/*
 * A kernel function's name, as ATTACH takes it: letters, digits, '_', '.'
 * (foo.isra.0) and ':' (mod:func). Anything else came from a damaged or
 * hostile file, and its name is printed in messages and reports: an
 * escape sequence would reach the terminal, a stray byte the JSON.
 */
static bool func_name_ok(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != ':')
			return false;
	return true;
}

static int parse_header(const uint8_t *buf, size_t len, struct kml_pf *pf,
			size_t *off, char *err, size_t errlen)
{
	struct kml_pf_header *h = &pf->hdr;

	if (len < sizeof(*h))
		return kml_pf_fail(err, errlen, "truncated: %zu bytes, shorter than the %zu-byte header",
			    len, sizeof(*h));
	memcpy(h, buf, sizeof(*h));
	if (memcmp(h->magic, KML_PF_MAGIC, sizeof(h->magic)))
		return kml_pf_fail(err, errlen, "not a kml-probe record file (bad magic)");
	if (h->bom != KML_PF_BOM)
		return kml_pf_fail(err, errlen, "recorded on a machine of the other byte order");
	if (h->version != KML_PF_VERSION)
		return kml_pf_fail(err, errlen, "format version %u; this kml-probe reads version %u",
			    h->version, KML_PF_VERSION);
	if (h->header_size < sizeof(*h) || h->header_size % 8 ||
	    h->attr_size < sizeof(struct kml_pf_attr) || h->attr_size % 8)
		return kml_pf_fail(err, errlen, "corrupt header: header size %u, attribute size %u",
			    h->header_size, h->attr_size);
	if (h->nattrs < 1 || h->nattrs > KML_PROBE_MAX_FUNCS)
		return kml_pf_fail(err, errlen, "corrupt header: %u functions (1..%d)",
			    h->nattrs, KML_PROBE_MAX_FUNCS);
	if (h->flags)
		return kml_pf_fail(err, errlen, "corrupt header: unknown flags %#x", h->flags);
	/* Divided, not multiplied: nattrs * attr_size wraps a 32-bit size_t. */
	if (len < h->header_size || h->attr_size > (len - h->header_size) / h->nattrs)
		return kml_pf_fail(err, errlen, "truncated: the function table ends past the file's %zu bytes",
			    len);
	*off = h->header_size;
	for (unsigned int i = 0; i < h->nattrs; i++, *off += h->attr_size) {
		struct kml_pf_attr *a = &pf->funcs[i].attr;

		memcpy(a, buf + *off, sizeof(*a));
		if (!memchr(a->func, '\0', sizeof(a->func)) || !a->func[0])
			return kml_pf_fail(err, errlen, "corrupt function table: entry %u has no name", i);
		if (!func_name_ok(a->func))
			return kml_pf_fail(err, errlen,
				    "corrupt function table: entry %u is not a function name", i);
		if (a->nargs > KML_PROBE_MAX_ARGS || a->reserved)
			return kml_pf_fail(err, errlen, "corrupt function table: %s: %u arguments",
				    a->func, a->nargs);
		if (func_of(pf, a->id))
			return kml_pf_fail(err, errlen, "corrupt function table: tag %u used twice",
				    a->id);
		pf->nfuncs++;
		pf->funcs[i].min_ns = UINT64_MAX;
	}
	return 0;
}

static int parse_call(struct kml_pf *pf, const uint8_t *p, size_t off, char *err,
		      size_t errlen)
{
	struct kml_probe_event ev;
	struct kml_pf_func *f;

	memcpy(&ev, p, sizeof(ev));
	f = func_of(pf, ev.id);
	if (!f)
		return kml_pf_fail(err, errlen, "corrupt record at offset %zu: unknown function tag %u",
			    off, ev.id);
	if (ev.nargs != f->attr.nargs || ev.reserved)
		return kml_pf_fail(err, errlen, "corrupt record at offset %zu: %u arguments for %s",
			    off, ev.nargs, f->attr.func);
	f->calls++;
	f->sum_ns += ev.duration_ns;
	if (ev.duration_ns < f->min_ns)
		f->min_ns = ev.duration_ns;
	if (ev.duration_ns > f->max_ns)
		f->max_ns = ev.duration_ns;
	f->hist[kml_pf_bucket(ev.duration_ns)]++;
	thread_add(pf, ev.pid, ev.tgid, ev.duration_ns);
	pf->records++;
	return 0;
}

static int parse_summary(struct kml_pf *pf, const uint8_t *p, size_t off,
			 char *err, size_t errlen)
{
	struct kml_pf_summary s;
	struct kml_pf_func *f;

	memcpy(&s, p, sizeof(s));
	f = func_of(pf, s.id);
	if (!f || f->summarized || (s.flags & ~KML_PF_SUM_UNKNOWN))
		return kml_pf_fail(err, errlen, "corrupt summary at offset %zu (tag %u)", off, s.id);
	f->summarized = true;
	f->sum = s;
	return 0;
}

/* What the END record vouches for must be what the file holds. */
static int check_totals(struct kml_pf *pf, char *err, size_t errlen)
{
	if (pf->end.records != pf->records)
		return kml_pf_fail(err, errlen, "corrupt: %llu call records, but the end record counts %llu",
			    (unsigned long long)pf->records,
			    (unsigned long long)pf->end.records);
	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		struct kml_pf_func *f = &pf->funcs[i];

		if (!f->summarized)
			return kml_pf_fail(err, errlen, "corrupt: no summary for %s", f->attr.func);
		if (f->sum.flags & KML_PF_SUM_UNKNOWN)
			continue;
		if (f->sum.written != f->calls)
			return kml_pf_fail(err, errlen, "corrupt: %s has %llu records, but %llu were written",
				    f->attr.func, (unsigned long long)f->calls,
				    (unsigned long long)f->sum.written);
	}
	return 0;
}

int kml_pf_parse(const void *buf, size_t len, bool force, struct kml_pf *pf,
		 char *err, size_t errlen)
{
	const uint8_t *b = buf;
	size_t off = 0;

	memset(pf, 0, sizeof(*pf));
	if (parse_header(b, len, pf, &off, err, errlen))
		return -1;
	while (off < len) {
		struct kml_ring_rec rec;
		const uint8_t *p;
		size_t need = 0;
		int ret = 0;

		if (pf->complete)
			return kml_pf_fail(err, errlen, "corrupt: data after the end record, at offset %zu",
				    off);
		/* A killed recorder may leave half a record: --force stops there. */
		if (len - off < sizeof(rec)) {
			if (force)
				break;
			return kml_pf_fail(err, errlen, "truncated: a record header is cut at offset %zu",
				    off);
		}
		memcpy(&rec, b + off, sizeof(rec));
		if (rec.size < sizeof(rec) || rec.size % KML_RING_ALIGN)
			return kml_pf_fail(err, errlen, "corrupt record at offset %zu: size %u",
				    off, rec.size);
		if (rec.size > len - off) {
			if (force)
				break;
			return kml_pf_fail(err, errlen, "truncated: the record at offset %zu is cut", off);
		}
		p = b + off + sizeof(rec);
		switch (rec.type) {
		case KML_PROBE_REC_CALL:
			need = sizeof(struct kml_probe_event);
			break;
		case KML_PF_REC_LOST:
			need = sizeof(struct kml_pf_lost);
			break;
		case KML_PF_REC_SUMMARY:
			need = sizeof(struct kml_pf_summary);
			break;
		case KML_PF_REC_END:
			need = sizeof(struct kml_pf_end);
			break;
		default:
			pf->unknown++;	/* a newer writer's: skip it */
			break;
		}
		if (rec.size - sizeof(rec) < need)
			return kml_pf_fail(err, errlen, "corrupt record at offset %zu: type %u in %u bytes",
				    off, rec.type, rec.size);
		if (rec.type == KML_PROBE_REC_CALL) {
			ret = parse_call(pf, p, off, err, errlen);
		} else if (rec.type == KML_PF_REC_LOST) {
			struct kml_pf_lost l;

			memcpy(&l, p, sizeof(l));
			pf->ring_lost += l.lost;
		} else if (rec.type == KML_PF_REC_SUMMARY) {
			ret = parse_summary(pf, p, off, err, errlen);
		} else if (rec.type == KML_PF_REC_END) {
			memcpy(&pf->end, p, sizeof(pf->end));
			pf->complete = true;
		}
		if (ret)
			return ret;
		off += rec.size;
	}
	pf->cut = len - off;
	if (pf->complete)
		return check_totals(pf, err, errlen);
	if (!force)
		return kml_pf_fail(err, errlen, "truncated: no end record (was the recorder killed?); --force reads what is there");
	return 0;
}

int kml_pf_each_call(const void *buf, size_t len, const struct kml_pf *pf,
		     int (*fn)(const struct kml_ring_rec *rec,
			       const struct kml_probe_event *ev, void *arg),
		     void *arg)
{
	const uint8_t *b = buf;
	size_t off = pf->hdr.header_size + (size_t)pf->hdr.nattrs * pf->hdr.attr_size;
	size_t end = len - pf->cut;	/* a cut last record (--force) is not read */

	/* kml_pf_parse() checked every frame up to @end: sizes are sound. */
	while (off < end && end - off >= sizeof(struct kml_ring_rec)) {
		struct kml_ring_rec rec;
		struct kml_probe_event ev;
		int ret;

		memcpy(&rec, b + off, sizeof(rec));
		if (rec.size < sizeof(rec) || rec.size > end - off)
			return -1;	/* not the file kml_pf_parse() read */
		if (rec.type == KML_PROBE_REC_CALL) {
			if (rec.size - sizeof(rec) < sizeof(ev))
				return -1;
			memcpy(&ev, b + off + sizeof(rec), sizeof(ev));
			ret = fn(&rec, &ev, arg);
			if (ret)
				return ret;
		}
		off += rec.size;
	}
	return 0;
}

static int by_calls(const void *a, const void *b)
{
	const struct kml_pf_thread *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void kml_pf_sort_threads(struct kml_pf *pf)
{
	qsort(pf->threads, pf->nthreads, sizeof(pf->threads[0]), by_calls);
	/* The hash points into the old order: it is of no use any more. */
	memset(pf->index, 0, sizeof(pf->index));
}
