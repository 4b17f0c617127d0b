// SPDX-License-Identifier: GPL-2.0
/*
 * kml-ring: drive /dev/kml_ring. Each open file has its own ring, so
 * `produce` starts the in-kernel producer on this client's ring and
 * consumes it in place, checking every record; `consume` shows what other
 * modules write with kml_ring_write(); `stat` shows device-wide counters.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kml_cli.h"

#include "kml_ring_lib.h"
#include "kml_stats_parse.h"
#include "../modules/kml_ring/kml_ring_logic.h"

static const char *prog = "kml-ring";
static int json, print;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] COMMAND [OPTIONS]\n"
		"\n"
		"  stat                    device-wide counters (records, bytes, lost, wakeups)\n"
		"  produce [OPTIONS]       run the in-kernel producer into this client's ring,\n"
		"                          consume it in place, check every record, report rates\n"
		"      --size BYTES        record size, header included (default 64)\n"
		"      --rate N            records per second, 0 = as fast as possible (default 1000)\n"
		"      --count N           records to produce (default: until --seconds)\n"
		"      --seconds S         how long (default 3)\n"
		"      --cpu C             run the producer on CPU C\n"
		"  consume [OPTIONS]       print records other modules write (kml_ring_write());\n"
		"                          --json: JSON Lines, one per record, then a summary\n"
		"      --seconds S         how long (default 10), or --count N records\n"
		"  common: --pages P (ring data pages, power of two, default 64),\n"
		"          --watermark BYTES (wake after this much, 1..half the ring, default 1), --print\n"
		"  produce needs CAP_SYS_ADMIN; consume and stat do not\n"
		"\n"
		"  -j, --json              JSON output\n"
		"  -h, --help              this text, also `help`\n"
		"  -V, --version           the client's version\n", prog);
}

/* kml-ring.1's COMMANDS, in short; main() runs them. */
#define RING_COMMON \
	"  --pages P          ring data pages, a power of two (default 64)\n" \
	"  --watermark BYTES  wake after this much, 1..half the ring (default 1)\n"
static const struct kml_cmd cmds[] = {
	{ "stat", "",
	  "The device-wide counters kml_ring publishes in /proc/kmodlab/stats:\n"
	  "records, bytes, lost records, wake-ups.\n", NULL },
	{ "produce", "[--size BYTES] [--rate N] [--count N] [--seconds S] [--cpu C]",
	  "Run the built-in producer into this client's ring, consume it in place,\n"
	  "check every record and report the rates, the lost and corrupt records\n"
	  "(needs CAP_SYS_ADMIN).\n"
	  "  --size BYTES       record size, header included (default 64)\n"
	  "  --rate N           records per second, 0 = as fast as possible (1000)\n"
	  "  --count N          stop after N records\n"
	  "  --seconds S        stop after S seconds (default 3, an hour with --count)\n"
	  "  --cpu C            run the producer on CPU C\n"
	  RING_COMMON "  --print            print each record\n", NULL },
	{ "consume", "[--seconds S] [--count N]",
	  "Print the records other modules write (kml_ring_write()); --json: JSON\n"
	  "Lines, one per record, then a summary.\n"
	  "  --seconds S        stop after S seconds (default 10)\n"
	  "  --count N          stop after N records\n" RING_COMMON, NULL },
	{ NULL, NULL, NULL, NULL },
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void open_ring(struct kml_ring_user *r, unsigned int pages, uint64_t wm)
{
	int ret = kml_ring_user_open(r, pages);

	if (ret == -ENOENT)
		kml_die_not_loaded("kml_ring", KML_RING_DEVICE);
	if (ret == -EINVAL)
		kml_die("bad --pages %u: give a power of two, 1..%d", pages, KML_RING_MAX_PAGES);
	if (ret == -ENOSPC)
		kml_die("no room for %u more pages: all rings together are limited by kml_ring's max_pages parameter",
		    pages + 1);
	if (ret)
		kml_die("cannot set up the ring: %s", strerror(-ret));
	if (ioctl(r->fd, KML_RING_IOC_SET_WATERMARK, &wm))
		kml_die("bad --watermark %llu: give 1..%llu bytes (half the ring)",
		    (unsigned long long)wm, (unsigned long long)r->size / 2);
}

/*
 * What the device would refuse of a ring of @pages (kml_ring_logic.c),
 * said before opening it: the watermark, 1..half the ring, and for
 * produce the record size, its headers up to a quarter of the ring.
 */
static void check_sizes(const struct kml_ring_produce *p, unsigned int pages, uint64_t wm,
			int produce)
{
	uint64_t size = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t min = sizeof(struct kml_ring_rec) + sizeof(struct kml_ring_sample);
	uint64_t max = size / 4;

	if (!wm || wm > size / 2)
		kml_usage_error("bad --watermark %llu: give 1..%llu bytes (half the ring of %u pages)",
				(unsigned long long)wm, (unsigned long long)size / 2, pages);
	if (max > KML_RING_MAX_PAYLOAD + sizeof(struct kml_ring_rec))
		max = KML_RING_MAX_PAYLOAD + sizeof(struct kml_ring_rec);
	if (produce && (p->record_size < min || p->record_size > max))
		kml_usage_error("bad --size %u: give %llu..%llu bytes (headers included, at most a quarter of the ring)",
				p->record_size, (unsigned long long)min, (unsigned long long)max);
}

struct tally {
	uint64_t records, bytes, bad, next_seq, gaps;
	uint64_t want;
};

static int on_sample(const struct kml_ring_rec *rec, void *arg)
{
	struct tally *t = arg;
	const struct kml_ring_sample *s = (const void *)(rec + 1);
	int ret = kml_ring_check_sample(rec, t->next_seq);

	if (ret == -ERANGE && s->seq > t->next_seq)
		t->gaps += s->seq - t->next_seq;	/* records the kernel dropped */
	else if (ret)
		t->bad++;
	t->next_seq = s->seq + 1;
	t->records++;
	t->bytes += rec->size;
	if (print && !json)
		printf("sample seq %" PRIu64 " size %u t %" PRIu64 "\n",
		       (uint64_t)s->seq, rec->size, (uint64_t)rec->timestamp_ns);
	return t->want && t->records + t->gaps >= t->want;
}

static int cmd_produce(struct kml_ring_produce *p, unsigned int pages,
		       uint64_t wm, double seconds)
{
	struct kml_ring_user r;
	struct tally t = { .want = p->count };
	double t0, dt;
	long n;

	open_ring(&r, pages, wm);
	if (ioctl(r.fd, KML_RING_IOC_START, p)) {
		if (errno == EINVAL)
			kml_die("bad producer settings: size %u..%llu bytes, --cpu an online CPU",
			    (unsigned int)(sizeof(struct kml_ring_rec) + sizeof(struct kml_ring_sample)),
			    (unsigned long long)r.size / 4);
		if (errno == EPERM)
			kml_die("%s", "the in-kernel producer needs CAP_SYS_ADMIN: run as root");
		kml_die("start: %s", strerror(errno));
	}
	t0 = now();
	while ((dt = now() - t0) < seconds) {
		int w = kml_ring_user_wait(&r, 100);

		if (w < 0)
			kml_die("poll: %s", strerror(-w));
		n = kml_ring_user_consume(&r, on_sample, &t);
		if (n < 0)
			kml_die("%s", "malformed record in the ring");
		if (t.want && t.records + t.gaps >= t.want)
			break;
	}
	dt = now() - t0;
	ioctl(r.fd, KML_RING_IOC_STOP);
	if (json)
		printf("{\"records\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"lost\":%llu,"
		       "\"corrupt\":%" PRIu64 ",\"seconds\":%.3f,\"records_per_s\":%.0f,"
		       "\"bytes_per_s\":%.0f}\n", t.records, t.bytes,
		       (unsigned long long)r.ctrl->lost, t.bad, dt, t.records / dt,
		       t.bytes / dt);
	else
		printf("%" PRIu64 " records, %" PRIu64 " bytes in %.2f s: %.0f records/s, %.2f MB/s; "
		       "lost %llu, corrupt %" PRIu64 "\n", t.records, t.bytes, dt,
		       t.records / dt, t.bytes / dt / 1e6,
		       (unsigned long long)r.ctrl->lost, t.bad);
	kml_ring_user_close(&r);
	return t.bad ? 1 : 0;
}

static int on_record(const struct kml_ring_rec *rec, void *arg)
{
	uint64_t *count = arg;
	const uint8_t *p = (const void *)(rec + 1);
	uint32_t len = rec->size - sizeof(*rec), i;

	(*count)++;
	if (json) {
		printf("{\"type\":%u,\"size\":%u,\"timestamp_ns\":%" PRIu64 ",\"payload\":\"",
		       rec->type, rec->size, (uint64_t)rec->timestamp_ns);
		for (i = 0; i < len && i < 32; i++)
			printf("%02x", p[i]);
		printf("\"}\n");
	} else {
		printf("type %#x size %u t %" PRIu64 ":", rec->type, rec->size,
		       (uint64_t)rec->timestamp_ns);
		for (i = 0; i < len && i < 16; i++)
			printf(" %02x", p[i]);
		printf("\n");
	}
	return 0;
}

static int cmd_consume(unsigned int pages, uint64_t wm, double seconds,
		       uint64_t count)
{
	struct kml_ring_user r;
	uint64_t got = 0;
	double t0 = now();

	open_ring(&r, pages, wm);
	while (now() - t0 < seconds && (!count || got < count)) {
		kml_ring_user_wait(&r, 100);
		if (kml_ring_user_consume(&r, on_record, &got) < 0)
			kml_die("%s", "malformed record in the ring");
		kml_flush();
	}
	/* JSON Lines: a line per record, then this one, even with none. */
	if (json)
		printf("{\"summary\":true,\"records\":%" PRIu64 ",\"lost\":%llu}\n", got,
		       (unsigned long long)r.ctrl->lost);
	else
		fprintf(stderr, "%s: %" PRIu64 " records, %llu lost\n", prog, got,
			(unsigned long long)r.ctrl->lost);
	kml_ring_user_close(&r);
	return 0;
}

static int cmd_stat(void)
{
	const char *dir = getenv("KMODLAB_PROC_DIR");
	char path[4200], *buf;
	size_t len = 0, cap = 1 << 16, bad, i;
	struct kml_snapshot s;
	FILE *f;
	int any = 0;

	snprintf(path, sizeof(path), "%s/stats", dir && *dir ? dir : KML_STATS_PROC_DIR);
	f = fopen(path, "r");
	if (!f)
		kml_die_not_loaded("kml_stats", path);
	buf = malloc(cap);
	while (buf && (i = fread(buf + len, 1, cap - len, f)) > 0) {
		len += i;
		if (len == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				kml_die("%s", "out of memory");
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf || kml_parse_text(buf, len, &s, &bad))
		kml_die("cannot parse %s", path);
	free(buf);
	if (json)
		printf("{");
	for (i = 0; i < s.n; i++) {
		if (strcmp(s.recs[i].set, "kml_ring") || s.recs[i].type != KML_REC_COUNTER)
			continue;
		if (json)
			printf("%s\"%s\":%" PRIu64, any ? "," : "", s.recs[i].name, s.recs[i].value);
		else
			printf("%-12s %" PRIu64 "\n", s.recs[i].name, s.recs[i].value);
		any = 1;
	}
	if (json)
		printf("}\n");
	kml_snapshot_free(&s);
	if (!any)
		kml_die_not_loaded("kml_ring", "its set in /proc/kmodlab/stats");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "size", required_argument, NULL, 's' },
		{ "rate", required_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "pages", required_argument, NULL, 'p' },
		{ "watermark", required_argument, NULL, 'w' },
		{ "print", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct kml_ring_produce p = { .record_size = 64, .rate = 1000, .cpu = -1 };
	unsigned int pages = 64;
	uint64_t wm = 1, count = 0;
	double seconds = -1;
	const char *cmd = NULL;
	int c;

	kml_prog = prog;
	kml_cli_common(&argc, argv, &json, usage, cmds);
	while ((c = getopt_long(argc, argv, ":jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		case 's': p.record_size = kml_arg_number(optarg, 1 << 20, "--size"); break;
		case 'r': p.rate = kml_arg_number(optarg, 100000000, "--rate"); break;
		case 'n': count = kml_arg_number(optarg, UINT64_MAX, "--count"); break;
		case 't': seconds = (double)kml_arg_number(optarg, 86400, "--seconds"); break;
		case 'c': p.cpu = (int)kml_arg_number(optarg, 4096, "--cpu"); break;
		case 'p': pages = kml_arg_number(optarg, KML_RING_MAX_PAGES, "--pages"); break;
		case 'w': wm = kml_arg_number(optarg, UINT64_MAX, "--watermark"); break;
		case 'P': print = 1; break;
		default: kml_bad_option(c, argv);
		}
	}
	if (optind < argc)
		cmd = argv[optind++];
	if (!cmd)
		kml_usage_error("%s", "no command given");
	if (optind != argc)
		kml_usage_error("unexpected argument '%s'", argv[optind]);
	/* The device would refuse it too: say so before opening anything. */
	if (!pages || (pages & (pages - 1)))
		kml_usage_error("bad --pages %u: give a power of two, 1..%d", pages,
				KML_RING_MAX_PAGES);
	if (strcmp(cmd, "stat"))
		check_sizes(&p, pages, wm, !strcmp(cmd, "produce"));
	if (!strcmp(cmd, "stat"))
		return cmd_stat();
	if (!strcmp(cmd, "produce")) {
		p.count = count;
		return cmd_produce(&p, pages, wm, seconds < 0 ? (count ? 3600 : 3) : seconds);
	}
	if (!strcmp(cmd, "consume"))
		return cmd_consume(pages, wm, seconds < 0 ? 10 : seconds, count);
	kml_usage_error("unknown command '%s'", cmd);
}
