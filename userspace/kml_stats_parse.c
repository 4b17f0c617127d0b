// SPDX-License-Identifier: GPL-2.0
/*
 * Strict parser for the stats text: every field is checked, numbers must
 * fit in 64 bits, so a client never prints a value it misread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kml_stats_parse.h"

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* Next space-separated field of [*p, end): returns its length, or -1. */
static int field(const char **p, const char *end, const char **start)
{
	const char *s = *p;

	*start = s;
	while (s < end && *s != ' ')
		s++;
	if (s == *start)
		return -1;
	*p = s < end ? s + 1 : s;
	if (s < end && *p == end)
		return -1; /* trailing space */
	return (int)(s - *start);
}

static int parse_name(const char **p, const char *end, char *out)
{
	const char *s;
	int n = field(p, end, &s), i;

	if (n < 1 || n > KML_STATS_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!is_name_char(s[i]))
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int parse_u64(const char *s, int n, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	if (n < 1 || n > 20)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_num(const char **p, const char *end, uint64_t *out)
{
	const char *s;
	int n = field(p, end, &s);

	return n < 0 ? -EINVAL : parse_u64(s, n, out);
}

/* Returns 0 if @line is "# kmodlab-stats <KML_STATS_FORMAT_VERSION>". */
int kml_parse_header(const char *line, size_t len)
{
	static const char pfx[] = "# kmodlab-stats ";
	const size_t plen = sizeof(pfx) - 1;
	uint64_t v;

	if (len < plen || memcmp(line, pfx, plen))
		return -EINVAL;
	if (parse_u64(line + plen, (int)(len - plen), &v))
		return -EINVAL;
	return v == KML_STATS_FORMAT_VERSION ? 0 : -EPROTO;
}

/*
 * Parses one line without its newline. Returns 0 with @rec filled in,
 * KML_PARSE_SKIP for a comment or unknown type, -EINVAL if malformed.
 */
int kml_parse_line(const char *line, size_t len, struct kml_rec *rec)
{
	const char *p = line, *end = line + len, *s;
	int n, have_bucket = 0;
	unsigned int last = 0;

	if (len && line[0] == '#')
		return KML_PARSE_SKIP;
	memset(rec, 0, sizeof(*rec));
	if (parse_name(&p, end, rec->set) || parse_name(&p, end, rec->name))
		return -EINVAL;
	n = field(&p, end, &s);
	if (n == 7 && !memcmp(s, "counter", 7)) {
		rec->type = KML_REC_COUNTER;
		if (parse_num(&p, end, &rec->value) || p != end)
			return -EINVAL;
		return 0;
	}
	if (n != 4 || memcmp(s, "hist", 4)) {
		if (n < 1)
			return -EINVAL;
		return KML_PARSE_SKIP;
	}
	rec->type = KML_REC_HIST;
	if (parse_num(&p, end, &rec->value) || parse_num(&p, end, &rec->sum))
		return -EINVAL;
	while (p < end) {
		const char *colon;
		uint64_t k, c;

		n = field(&p, end, &s);
		if (n < 3)
			return -EINVAL;
		colon = memchr(s, ':', n);
		if (!colon || parse_u64(s, (int)(colon - s), &k) ||
		    parse_u64(colon + 1, (int)(s + n - colon - 1), &c))
			return -EINVAL;
		/* Buckets come strictly increasing and are never empty. */
		if (k >= KML_STATS_HIST_BUCKETS || c == 0 ||
		    (have_bucket && k <= last))
			return -EINVAL;
		rec->buckets[k] = c;
		last = (unsigned int)k;
		have_bucket = 1;
	}
	return 0;
}

void kml_snapshot_free(struct kml_snapshot *snap)
{
	free(snap->recs);
	snap->recs = NULL;
	snap->n = 0;
}

/*
 * Parses a whole stats file. On -EINVAL or -EPROTO, *@bad_line is the
 * 1-based line at fault. -ENOMEM is the only other error.
 */
int kml_parse_text(const char *text, size_t len, struct kml_snapshot *snap,
		   size_t *bad_line)
{
	const char *p = text, *end = text + len;
	size_t cap = 0, lineno = 0;
	int ret;

	snap->recs = NULL;
	snap->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t l;

		lineno++;
		if (!nl) {
			ret = -EINVAL; /* every line is newline-terminated */
			goto bad;
		}
		l = nl - p;
		if (lineno == 1) {
			ret = kml_parse_header(p, l);
			if (ret)
				goto bad;
			p = nl + 1;
			continue;
		}
		if (snap->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct kml_rec *r = realloc(snap->recs,
						    ncap * sizeof(*r));

			if (!r) {
				kml_snapshot_free(snap);
				return -ENOMEM;
			}
			snap->recs = r;
			cap = ncap;
		}
		ret = kml_parse_line(p, l, &snap->recs[snap->n]);
		if (ret < 0)
			goto bad;
		if (ret == 0)
			snap->n++;
		p = nl + 1;
	}
	if (lineno == 0) {
		ret = -EINVAL;
		lineno = 1;
		goto bad;
	}
	return 0;
bad:
	*bad_line = lineno ? lineno : 1;
	kml_snapshot_free(snap);
	return ret;
}
