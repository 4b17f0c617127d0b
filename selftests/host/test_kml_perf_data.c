// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests for `kml-probe convert` (userspace/kml_perf_data.c): a
 * kml-probe record file as perf.data.
 *
 * Without perf: the bytes written, read back here by a reader of our own
 * (header, attributes, ids, every sample's fields, the lost calls, the
 * event names), every cut of the input that the reader takes (--force),
 * and a write that fails at every byte.
 *
 * With perf (PERF=, default `perf`; SKIP when it does not run): perf
 * script lists every call with the values the record holds (time, CPU,
 * pid, tid, latency as the period, return value and arguments), perf
 * report counts the samples, sums the latencies and the lost calls of
 * each function, and a file cut short is refused as perf refuses a
 * perf.data of its own cut at the same place (header, attributes, data).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_perf_data.h"
#include "../../userspace/kml_probe_file.h"

#define MAXREC	600

/* ---- a kml-probe file, built here, with what it holds ---- */

struct img {
	uint8_t b[MAXREC * 128 + 4096];
	size_t len;
	unsigned int nfuncs;
	const char *func[4];
	uint32_t tag[4], nargs[4];
	uint64_t lost[4];
	unsigned int n;			/* calls */
	struct kml_probe_event ev[MAXREC];
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

static uint64_t rnd_state = 42;

static uint64_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return rnd_state >> 17;
}

/*
 * Three functions (tags 3, 5, 8; nargs 0, 2, 6), @n calls in distinct
 * times, across 4 CPUs and 5 threads of 2 processes, with return values
 * and arguments of every width; function 1 lost 7 calls.
 */
static void build(struct img *m, unsigned int n, bool finished)
{
	static const char *names[] = { "vfs_read", "kml_probe_target", "do_sys_openat2" };
	static const uint32_t tags[] = { 3, 5, 8 }, nargs[] = { 0, 2, 6 };
	struct kml_pf_header h = {
		.version = KML_PF_VERSION, .bom = KML_PF_BOM,
		.header_size = sizeof(h), .attr_size = sizeof(struct kml_pf_attr),
		.nattrs = 3, .start_ns = 5000000000ULL,
		.start_realtime_ns = 1795000000000000000ULL,
	};
	uint64_t per[3] = { 0 };

	memset(m, 0, sizeof(*m));
	memcpy(h.magic, KML_PF_MAGIC, 8);
	put(m, &h, sizeof(h));
	m->nfuncs = 3;
	for (unsigned int i = 0; i < 3; i++) {
		struct kml_pf_attr a = { .id = tags[i], .nargs = nargs[i] };

		strcpy(a.func, names[i]);
		put(m, &a, sizeof(a));
		m->func[i] = names[i];
		m->tag[i] = tags[i];
		m->nargs[i] = nargs[i];
	}
	m->lost[1] = 7;
	for (unsigned int k = 0; k < n; k++) {
		unsigned int f = (unsigned int)(rnd() % 3);
		struct kml_probe_event *ev = &m->ev[k];

		ev->start_ns = h.start_ns + 1000ULL * k + rnd() % 500;
		ev->duration_ns = k == 1 ? 0 : rnd() % (k % 7 ? 100000 : 5000000000ULL);
		ev->ret = k % 5 ? rnd() : (uint64_t)-(int64_t)(k + 1);	/* -ERRNO too */
		for (unsigned int a = 0; a < nargs[f]; a++)
			ev->args[a] = a == 5 ? UINT64_MAX : rnd() << (a * 7);
		ev->tgid = 1000 + (uint32_t)(k % 2);
		ev->pid = ev->tgid + 10 * (uint32_t)(k % 5 / 2);
		ev->cpu = (uint32_t)(rnd() % 4) * 3;
		ev->id = tags[f];
		ev->nargs = nargs[f];
		rec(m, KML_PROBE_REC_CALL, ev, sizeof(*ev));
		per[f]++;
	}
	m->n = n;
	if (!finished)
		return;
	for (unsigned int i = 0; i < 3; i++) {
		struct kml_pf_summary s = {
			.id = tags[i], .written = per[i], .lost = m->lost[i], .nmissed = 2,
		};

		rec(m, KML_PF_REC_SUMMARY, &s, sizeof(s));
	}
	{
		struct kml_pf_end e = { .end_ns = h.start_ns + 1000ULL * n + 1000, .records = n };

		rec(m, KML_PF_REC_END, &e, sizeof(e));
	}
}

static int func_index(const struct img *m, uint32_t tag)
{
	for (unsigned int i = 0; i < m->nfuncs; i++)
		if (m->tag[i] == tag)
			return (int)i;
	return -1;
}

/* What the raw payload says: "ret=0x.. arg0=0x.." */
static void raw_text(const struct kml_probe_event *ev, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "ret=0x%" PRIx64, (uint64_t)ev->ret);

	for (unsigned int a = 0; a < ev->nargs; a++)
		n += (size_t)snprintf(buf + n, len - n, " arg%u=0x%" PRIx64, a,
				      (uint64_t)ev->args[a]);
}

/* ---- the converter's output, in memory ---- */

struct mem {
	uint8_t *p;
	size_t len, cap;
	size_t fail_at;		/* a write reaching this byte fails; 0: never */
};

static int mem_write(void *ctx, const void *p, size_t n)
{
	struct mem *m = ctx;

	if (m->fail_at && m->len + n >= m->fail_at) {
		errno = ENOSPC;
		return -1;
	}
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		m->p = realloc(m->p, m->cap);
		if (!m->p)
			abort();
	}
	memcpy(m->p + m->len, p, n);
	m->len += n;
	return 0;
}

static struct kml_pf pf;
static char err[256];

static int convert(const uint8_t *buf, size_t len, bool force, struct mem *out,
		   struct kml_perf_stats *st)
{
	struct kml_perf_sink sink = { mem_write, out };

	err[0] = '\0';
	if (kml_pf_parse(buf, len, force, &pf, err, sizeof(err)))
		return -2;
	return kml_perf_write(buf, len, &pf, &sink, st, err, sizeof(err));
}

static uint64_t rd64(const struct mem *m, size_t off)
{
	uint64_t v;

	if (off + 8 > m->len)
		abort();
	memcpy(&v, m->p + off, 8);
	return v;
}

static uint32_t rd32(const struct mem *m, size_t off)
{
	uint32_t v;

	if (off + 4 > m->len)
		abort();
	memcpy(&v, m->p + off, 4);
	return v;
}

/* ---- without perf: the bytes, read back ---- */

TEST(the_file_reads_back_field_by_field)
{
	static struct img m;
	struct mem out = { 0 };
	struct kml_perf_stats st;
	uint64_t off, end, feat, nfeat = 0, fsec;
	unsigned int k = 0, lost_recs = 0;

	build(&m, 300, true);
	ASSERT_EQ(0, convert(m.b, m.len, false, &out, &st)) TH_LOG("%s", err);
	ASSERT_EQ(out.len, st.bytes);
	ASSERT_EQ(300U, st.samples);
	ASSERT_EQ(7U, st.lost);

	/* The header: magic, its size, attr size, sections. */
	ASSERT_EQ(0, memcmp(out.p, "PERFILE2", 8));
	ASSERT_EQ(104U, rd64(&out, 8));
	ASSERT_EQ(KML_PERF_ATTR_SIZE + 16U, rd64(&out, 16));
	ASSERT_EQ(104U, rd64(&out, 24));
	ASSERT_EQ(3U * (KML_PERF_ATTR_SIZE + 16), rd64(&out, 32));
	ASSERT_EQ(st.data_offset, rd64(&out, 40));
	ASSERT_EQ(st.data_size, rd64(&out, 48));
	for (unsigned int b = 0; b < 256; b++)
		nfeat += (rd64(&out, 72 + b / 64 * 8) >> (b % 64)) & 1;
	ASSERT_EQ(4U, nfeat);
	ASSERT_TRUE(rd64(&out, 72) >> KML_PERF_FEAT_EVENT_DESC & 1);

	/* Each attribute: a software event sampling what the samples hold, one id. */
	for (unsigned int i = 0; i < 3; i++) {
		struct perf_event_attr a = { 0 };
		size_t ao = 104 + i * (KML_PERF_ATTR_SIZE + 16);

		memcpy(&a, out.p + ao, KML_PERF_ATTR_SIZE);
		ASSERT_EQ(PERF_TYPE_SOFTWARE, a.type);
		ASSERT_EQ(KML_PERF_ATTR_SIZE, a.size);
		ASSERT_EQ((uint64_t)PERF_COUNT_SW_BPF_OUTPUT, a.config);
		ASSERT_EQ((uint64_t)(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
				     PERF_SAMPLE_RAW), a.sample_type);
		ASSERT_TRUE(a.sample_id_all && a.use_clockid && a.clockid == 1);
		ASSERT_EQ(8U, rd64(&out, ao + KML_PERF_ATTR_SIZE + 8));
		ASSERT_EQ(i + 1U, rd64(&out, rd64(&out, ao + KML_PERF_ATTR_SIZE)));
	}

	/* The data: one sample per call, in the file's order, then the lost. */
	off = st.data_offset;
	end = st.data_offset + st.data_size;
	while (off < end) {
		uint32_t type = rd32(&out, off);
		uint16_t size;

		memcpy(&size, out.p + off + 6, 2);
		ASSERT_EQ(0U, size % 8);
		if (type == PERF_RECORD_SAMPLE) {
			const struct kml_probe_event *ev = &m.ev[k];
			char want[256];
			uint32_t rs = rd32(&out, off + 56);

			ASSERT_LT(k, m.n);
			ASSERT_EQ((uint64_t)func_index(&m, ev->id) + 1, rd64(&out, off + 8));
			ASSERT_EQ(0U, rd64(&out, off + 16));		/* ip */
			ASSERT_EQ(ev->tgid, rd32(&out, off + 24));
			ASSERT_EQ(ev->pid, rd32(&out, off + 28));
			ASSERT_EQ(ev->start_ns, rd64(&out, off + 32));
			ASSERT_EQ(ev->cpu, rd32(&out, off + 40));
			ASSERT_EQ(ev->duration_ns, rd64(&out, off + 48));
			raw_text(ev, want, sizeof(want));
			ASSERT_EQ(0U, (rs + 4) % 8);
			ASSERT_EQ(off + 60 + rs, off + size);
			ASSERT_STREQ(want, (const char *)out.p + off + 60);
			k++;
		} else {
			ASSERT_EQ(PERF_RECORD_LOST_SAMPLES, type);
			ASSERT_EQ(7U, rd64(&out, off + 8));
			ASSERT_EQ(2U, rd64(&out, off + size - 8));	/* function 1's id */
			lost_recs++;
		}
		off += size;
	}
	ASSERT_EQ(end, off);
	ASSERT_EQ(m.n, k);
	ASSERT_EQ(1U, lost_recs);

	/* The features: a table after the data; EVENT_DESC names each event. */
	fsec = end;
	feat = 0;
	for (unsigned int b = 0; b < 256; b++) {
		uint64_t fo, fs;

		if (!((rd64(&out, 72 + b / 64 * 8) >> (b % 64)) & 1))
			continue;
		fo = rd64(&out, fsec + feat * 16);
		fs = rd64(&out, fsec + feat * 16 + 8);
		ASSERT_LE(fo + fs, out.len);
		if (b == KML_PERF_FEAT_EVENT_DESC) {
			uint64_t p = fo + 8;

			ASSERT_EQ(3U, rd32(&out, fo));
			ASSERT_EQ(KML_PERF_ATTR_SIZE, rd32(&out, fo + 4));
			for (unsigned int i = 0; i < 3; i++) {
				char want[128];
				uint32_t sl;

				p += KML_PERF_ATTR_SIZE;
				ASSERT_EQ(1U, rd32(&out, p));
				sl = rd32(&out, p + 4);
				snprintf(want, sizeof(want), "kml_probe:%s", m.func[i]);
				ASSERT_STREQ(want, (const char *)out.p + p + 8);
				p += 8 + sl;
				ASSERT_EQ(i + 1U, rd64(&out, p));
				p += 8;
			}
			ASSERT_EQ(fo + fs, p);
		} else if (b == KML_PERF_FEAT_CLOCK_DATA) {
			ASSERT_EQ(1U, rd32(&out, fo));
			ASSERT_EQ(1795000000000000000ULL, rd64(&out, fo + 8));
			ASSERT_EQ(5000000000ULL, rd64(&out, fo + 16));
		} else if (b == KML_PERF_FEAT_NRCPUS) {
			ASSERT_EQ(10U, rd32(&out, fo));		/* CPUs 0, 3, 6, 9 seen */
		}
		feat++;
	}
	free(out.p);
}

/* Every cut the reader takes with --force converts, in bounds, whole records only. */
TEST(every_cut_the_reader_takes_converts)
{
	static struct img m;
	struct kml_perf_stats st;
	size_t n;

	build(&m, 6, true);
	for (n = 0; n <= m.len; n++) {
		uint8_t *p = malloc(n ? n : 1);	/* exactly n: ASan sees past it */
		struct mem out = { 0 };
		int r;

		memcpy(p, m.b, n);
		r = convert(p, n, true, &out, &st);
		if (n < sizeof(struct kml_pf_header) + 3 * sizeof(struct kml_pf_attr)) {
			ASSERT_EQ(-2, r) TH_LOG("cut at %zu", n);	/* refused by the reader */
		} else {
			ASSERT_EQ(0, r) TH_LOG("cut at %zu: %s", n, err);
			ASSERT_EQ(pf.records, st.samples);
			ASSERT_EQ(out.len, st.bytes);
		}
		/* Without --force, only the whole file is read, and converted. */
		ASSERT_EQ(n == m.len ? 0 : -2, convert(p, n, false, &out, &st)) TH_LOG("cut at %zu", n);
		free(out.p);
		free(p);
	}
}

/* A file whose END is missing has no totals: no lost samples are made up. */
TEST(an_unfinished_recording_converts_without_totals)
{
	static struct img m;
	struct mem out = { 0 };
	struct kml_perf_stats st;

	build(&m, 20, false);
	ASSERT_EQ(-2, convert(m.b, m.len, false, &out, &st));
	ASSERT_EQ(0, convert(m.b, m.len, true, &out, &st)) TH_LOG("%s", err);
	ASSERT_EQ(20U, st.samples);
	ASSERT_EQ(0U, st.lost);
	free(out.p);
}

/* A write that fails, at any byte, fails the conversion and says why. */
TEST(a_failed_write_at_any_byte_is_an_error)
{
	static struct img m;
	struct mem whole = { 0 };
	struct kml_perf_stats st;

	build(&m, 5, true);
	ASSERT_EQ(0, convert(m.b, m.len, false, &whole, &st));
	for (size_t at = 1; at <= whole.len; at++) {
		struct mem out = { .fail_at = at };

		ASSERT_EQ(-1, convert(m.b, m.len, false, &out, &st)) TH_LOG("fail at %zu", at);
		ASSERT_NE(NULL, strstr(err, strerror(ENOSPC))) TH_LOG("%s", err);
		free(out.p);
	}
	free(whole.p);
}

/* The converter is given the file the reader read: another one is refused. */
TEST(a_file_that_changed_since_it_was_read_is_refused)
{
	static struct img m, other;
	struct kml_perf_sink sink;
	struct mem out = { 0 };
	struct kml_perf_stats st;

	build(&m, 10, true);
	build(&other, 12, true);
	ASSERT_EQ(0, kml_pf_parse(m.b, m.len, false, &pf, err, sizeof(err)));
	sink.write = mem_write;
	sink.ctx = &out;
	ASSERT_EQ(-1, kml_perf_write(other.b, other.len, &pf, &sink, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "changed")) TH_LOG("%s", err);
	free(out.p);
}

/* ---- with perf ---- */

static const char *perf_bin(void)
{
	const char *p = getenv("PERF");

	return p && *p ? p : "perf";
}

/* perf runs here (Debian's /usr/bin/perf needs linux-perf-VERSION too). */
static bool have_perf(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s version >/dev/null 2>&1", perf_bin());
	return system(cmd) == 0;
}

static char dir[] = "/tmp/kml-perf-data-XXXXXX";

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		abort();
}

/* A command's exit status, its stdout in @out (NUL-terminated). */
static int run(char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int run(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[2048];
	size_t n = 0, r;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		abort();
	while (out && n + 1 < outlen && (r = fread(out + n, 1, outlen - n - 1, p)) > 0)
		n += r;
	if (out)
		out[n] = '\0';
	else
		while (fgetc(p) != EOF)
			;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct seen {
	uint32_t pid, tid, cpu;
	uint64_t time, period;
	char event[96], raw[256];
};

static int by_time(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * perf script's lines for -F pid,tid,cpu,time,period,event,bpf-output:
 *   "<comm> PID/TID [CPU] S.NNNNNNNNN: PERIOD EVENT: ..." then the raw
 * payload's hex and `BPF string: "..."`.
 */
static unsigned int parse_script(char *text, struct seen *s, unsigned int max)
{
	unsigned int n = 0;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *q = strstr(line, "BPF string: \"");
		unsigned long long sec, ns, period;
		unsigned int pid, tid, cpu;
		char ev[96];
		char *p;

		if (q && n) {
			q += strlen("BPF string: \"");
			snprintf(s[n - 1].raw, sizeof(s[n - 1].raw), "%.*s",
				 (int)(strrchr(q, '"') - q), q);
			continue;
		}
		p = strchr(line, '/');
		if (!p || n == max)
			continue;
		while (p > line && p[-1] >= '0' && p[-1] <= '9')
			p--;
		if (sscanf(p, "%u/%u [%u] %llu.%9llu: %llu %95s", &pid, &tid, &cpu, &sec, &ns,
			   &period, ev) != 7)
			continue;
		if (strlen(ev) && ev[strlen(ev) - 1] == ':')
			ev[strlen(ev) - 1] = '\0';
		s[n].pid = pid;
		s[n].tid = tid;
		s[n].cpu = cpu;
		s[n].time = sec * 1000000000ULL + ns;
		s[n].period = period;
		snprintf(s[n].event, sizeof(s[n].event), "%s", ev);
		s[n].raw[0] = '\0';
		n++;
	}
	return n;
}

static char text[1 << 22];

TEST(perf_script_lists_every_call_as_recorded)
{
	static struct img m;
	static struct seen seen[MAXREC], want[MAXREC];
	struct mem out = { 0 };
	struct kml_perf_stats st;
	char path[128];
	unsigned int n;

	if (!have_perf())
		SKIP(return, "no perf to read perf.data with");
	build(&m, 500, true);
	ASSERT_EQ(0, convert(m.b, m.len, false, &out, &st)) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/calls.data", dir);
	write_file(path, out.p, out.len);
	free(out.p);
	ASSERT_EQ(0, run(text, sizeof(text), "%s script -i %s --ns -F pid,tid,cpu,time,period,event,bpf-output 2>/dev/null",
			 perf_bin(), path));
	n = parse_script(text, seen, MAXREC);
	ASSERT_EQ(m.n, n);
	for (unsigned int k = 0; k < m.n; k++) {
		const struct kml_probe_event *ev = &m.ev[k];

		want[k].pid = ev->tgid;
		want[k].tid = ev->pid;
		want[k].cpu = ev->cpu;
		want[k].time = ev->start_ns;
		want[k].period = ev->duration_ns;
		snprintf(want[k].event, sizeof(want[k].event), "kml_probe:%s",
			 m.func[func_index(&m, ev->id)]);
		raw_text(ev, want[k].raw, sizeof(want[k].raw));
	}
	/* perf orders by time; the calls' times are distinct. */
	qsort(want, m.n, sizeof(want[0]), by_time);
	for (unsigned int k = 0; k < n; k++) {
		ASSERT_EQ(want[k].time, seen[k].time) TH_LOG("call %u", k);
		ASSERT_EQ(want[k].pid, seen[k].pid) TH_LOG("call %u", k);
		ASSERT_EQ(want[k].tid, seen[k].tid) TH_LOG("call %u", k);
		ASSERT_EQ(want[k].cpu, seen[k].cpu) TH_LOG("call %u", k);
		ASSERT_EQ(want[k].period, seen[k].period) TH_LOG("call %u", k);
		ASSERT_STREQ(want[k].event, seen[k].event) TH_LOG("call %u", k);
		ASSERT_STREQ(want[k].raw, seen[k].raw) TH_LOG("call %u", k);
	}
}

/* Per function: its samples, their latencies' sum, its lost calls. */
TEST(perf_report_sums_each_function)
{
	static struct img m;
	struct mem out = { 0 };
	struct kml_perf_stats st;
	char path[128];

	if (!have_perf())
		SKIP(return, "no perf to read perf.data with");
	build(&m, 400, true);
	ASSERT_EQ(0, convert(m.b, m.len, false, &out, &st)) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/report.data", dir);
	write_file(path, out.p, out.len);
	free(out.p);
	ASSERT_EQ(0, run(text, sizeof(text), "%s report -i %s --stdio --sort pid 2>/dev/null",
			 perf_bin(), path));
	for (unsigned int i = 0; i < m.nfuncs; i++) {
		uint64_t calls = 0, sum = 0;
		char want[256], *sec, *next;

		for (unsigned int k = 0; k < m.n; k++)
			if (m.ev[k].id == m.tag[i]) {
				calls++;
				sum += m.ev[k].duration_ns;
			}
		/* Each event's section: lost, samples, event count. */
		snprintf(want, sizeof(want), "# Samples: %" PRIu64 "  of event 'kml_probe:%s'",
			 calls, m.func[i]);
		sec = strstr(text, want);
		ASSERT_NE(NULL, sec) TH_LOG("no \"%s\" in:\n%s", want, text);
		next = strstr(sec + 1, "# Samples:");
		snprintf(want, sizeof(want), "# Event count (approx.): %" PRIu64 "\n", sum);
		ASSERT_NE(NULL, strstr(sec, want)) TH_LOG("no \"%s\"", want);
		ASSERT_TRUE(!next || strstr(sec, want) < next);
	}
	/* perf 6.1 counts the lost calls of all functions together. */
	ASSERT_NE(NULL, strstr(text, "# Total Lost Samples: 7\n")) TH_LOG("%s", text);
}

/* The corpus files perf reads as they are: count and total latency. */
TEST(perf_reads_the_corpus)
{
	char path[256], file[512];
	struct dirent *d;
	unsigned int files = 0;
	DIR *dp;

	if (!have_perf())
		SKIP(return, "no perf to read perf.data with");
	dp = opendir(KML_CORPUS_DIR "/kml_probe_file");
	ASSERT_NE(NULL, dp);
	while ((d = readdir(dp))) {
		static uint8_t buf[1 << 20];
		struct mem o = { 0 };
		struct kml_perf_stats st;
		uint64_t sum = 0, total = 0;
		unsigned int n = 0;
		size_t len;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/kml_probe_file/%s", KML_CORPUS_DIR, d->d_name);
		f = fopen(file, "r");
		ASSERT_NE(NULL, f);
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (convert(buf, len, false, &o, &st))
			continue;	/* the corpus also holds files the reader refuses */
		snprintf(path, sizeof(path), "%s/corpus.data", dir);
		write_file(path, o.p, o.len);
		free(o.p);
		for (unsigned int i = 0; i < pf.nfuncs; i++)
			sum += pf.funcs[i].sum_ns;
		ASSERT_EQ(0, run(text, sizeof(text), "%s script -i %s -F period 2>/dev/null",
				 perf_bin(), path));
		for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
			total += strtoull(l, NULL, 10);
			n++;
		}
		ASSERT_EQ(pf.records, n) TH_LOG("%s", d->d_name);
		ASSERT_EQ(sum, total) TH_LOG("%s", d->d_name);
		files++;
	}
	closedir(dp);
	ASSERT_LT(0U, files);
}

/*
 * Cut short, ours is refused where perf refuses its own: a cut header or
 * attribute table fails to open (status 255), a cut data section fails
 * perf script. A file cut in its features perf 6.1 and 6.12 read and 7.3
 * refuses (it checks the size first), its own as ours: so that cut is
 * judged by perf's own alone. Its own: `perf record` of a software
 * event, when this host lets us.
 */
TEST(a_cut_file_is_refused_as_perf_refuses_its_own)
{
	static struct img m;
	struct mem out = { 0 };
	struct kml_perf_stats st;
	char path[128], own[128], cut[160];
	size_t cuts[5];
	const char *where[] = { "in the header", "in the attributes", "at the data",
				"in a sample", "in the features" };
	int ours[5], theirs[5] = { -1, -1, -1, -1, -1 };
	uint64_t o[4];
	FILE *f;

	if (!have_perf())
		SKIP(return, "no perf to read perf.data with");
	build(&m, 50, true);
	ASSERT_EQ(0, convert(m.b, m.len, false, &out, &st)) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/cut.data", dir);
	cuts[0] = 60;
	cuts[1] = 104 + 40;
	cuts[2] = st.data_offset;
	cuts[3] = st.data_offset + st.data_size / 2 + 4;
	cuts[4] = st.data_offset + st.data_size + 70;
	for (int i = 0; i < 5; i++) {
		write_file(path, out.p, cuts[i]);
		ours[i] = run(NULL, 0, "%s script -i %s >/dev/null 2>&1", perf_bin(), path);
	}
	free(out.p);
	ASSERT_EQ(255, ours[0]);
	ASSERT_EQ(255, ours[1]);
	ASSERT_NE(0, ours[2]);
	ASSERT_NE(0, ours[3]);

	snprintf(own, sizeof(own), "%s/own.data", dir);
	if (run(NULL, 0, "%s record -q -o %s -e task-clock -- sleep 0.01 >/dev/null 2>&1",
		perf_bin(), own))
		SKIP(return, "perf record does not run here: ours checked alone");
	f = fopen(own, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(4U, fread(o, 8, 4, f));	/* magic, size, attr_size, attrs.offset */
	ASSERT_EQ(1U, fread(&o[0], 8, 1, f));	/* attrs.size */
	ASSERT_EQ(2U, fread(o + 1, 8, 2, f));	/* data.offset, data.size */
	fclose(f);
	cuts[0] = 60;
	cuts[1] = 104 + 40;
	cuts[2] = o[1];
	cuts[3] = o[1] + o[2] / 2 + 4;
	cuts[4] = o[1] + o[2] + 70;
	for (int i = 0; i < 5; i++) {
		snprintf(cut, sizeof(cut), "%s/own-cut.data", dir);
		ASSERT_EQ(0, run(NULL, 0, "head -c %zu %s > %s", cuts[i], own, cut));
		theirs[i] = run(NULL, 0, "%s script -i %s >/dev/null 2>&1", perf_bin(), cut);
		ASSERT_EQ(theirs[i], ours[i]) TH_LOG("cut %s: perf's own %d, ours %d", where[i],
						     theirs[i], ours[i]);
	}
}

static pid_t main_pid;

/* test_harness_run() exits: the directory goes at exit, the main process's only. */
static void remove_dir(void)
{
	char cmd[128];

	if (getpid() != main_pid)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

int main(int argc, char **argv)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	main_pid = getpid();
	atexit(remove_dir);
	return test_harness_run(argc, argv);
}
