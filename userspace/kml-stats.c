// SPDX-License-Identifier: GPL-2.0
/*
 * kml-stats: show the counters kmodlab modules publish in
 * /proc/kmodlab/stats, as a table or JSON, once or as per-second rates.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kml_cli.h"

#include "kml_stats_parse.h"

static const char *prog = "kml-stats";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-j] [-w SECONDS [-c COUNT]] [FILTER]\n"
		"       %s reset [SET]\n"
		"\n"
		"Show the counters and histograms kmodlab modules publish in\n"
		"/proc/kmodlab/stats. FILTER keeps rows whose SET/NAME contains it.\n"
		"\n"
		"  -j, --json           JSON instead of a table (one document per sample)\n"
		"  -w, --watch, --interval SECONDS\n"
		"                       sample every SECONDS and show per-second rates\n"
		"  -c, --count N        stop after N samples in watch mode\n"
		"  -h, --help           this text, also `help`\n"
		"  -V, --version        the client's version\n"
		"  reset [SET]          zero every set, or one (needs root)\n"
		"\n"
		"KMODLAB_PROC_DIR overrides /proc/kmodlab.\n", prog, prog);
}

static const struct kml_cmd cmds[] = {
	{ "reset", "[SET]",
	  "Zero every counter and histogram of every set, or of one set\n"
	  "(needs CAP_SYS_ADMIN). An unknown set is an error and changes nothing.\n",
	  NULL },
	{ NULL, NULL, NULL, NULL },
};

static char proc_dir[4096];

static void not_loaded(void)
{
	kml_die_not_loaded("kml_stats", proc_dir);
}

static char *read_all(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		free(buf);
		if (errno == ENOENT)
			not_loaded();
		kml_die("cannot open %s", path);
	}
	if (!buf)
		kml_die("%s", "out of memory");
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				kml_die("%s", "out of memory");
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* -EIO: the module went away under us. */
			if (errno == EIO)
				not_loaded();
			kml_die("read error on %s", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

static void snapshot(struct kml_snapshot *snap)
{
	char path[4200], *text;
	size_t len, bad = 0;
	int ret;

	snprintf(path, sizeof(path), "%s/stats", proc_dir);
	text = read_all(path, &len);
	ret = kml_parse_text(text, len, snap, &bad);
	free(text);
	if (ret == -EPROTO)
		kml_die("%s has a format version this client does not know", path);
	if (ret == -ENOMEM)
		kml_die("%s", "out of memory");
	if (ret) {
		fprintf(stderr, "%s: %s: malformed line %zu\n", prog, path, bad);
		exit(1);
	}
}

static int matches(const struct kml_rec *r, const char *filter)
{
	char full[2 * KML_STATS_NAME_MAX + 2];

	if (!filter)
		return 1;
	snprintf(full, sizeof(full), "%s/%s", r->set, r->name);
	return strstr(full, filter) != NULL;
}

/* Previous sample's value of the same statistic, found by name. */
static const struct kml_rec *find_prev(const struct kml_snapshot *prev,
				       const struct kml_rec *r, size_t hint)
{
	size_t i;

	if (!prev)
		return NULL;
	if (hint < prev->n && !strcmp(prev->recs[hint].set, r->set) &&
	    !strcmp(prev->recs[hint].name, r->name))
		return &prev->recs[hint];
	for (i = 0; i < prev->n; i++)
		if (!strcmp(prev->recs[i].set, r->set) &&
		    !strcmp(prev->recs[i].name, r->name))
			return &prev->recs[i];
	return NULL;
}

static double rate(const struct kml_rec *r, const struct kml_rec *p,
		   double secs)
{
	/* A reset between samples makes the delta negative: show 0. */
	if (!p || r->value < p->value || secs <= 0)
		return 0;
	return (double)(r->value - p->value) / secs;
}

static void print_table(const struct kml_snapshot *s,
			const struct kml_snapshot *prev, double secs,
			const char *filter)
{
	size_t i;

	printf("%-16s %-24s %20s%s\n", "SET", "NAME", "VALUE",
	       prev ? "       RATE/s" : "");
	for (i = 0; i < s->n; i++) {
		const struct kml_rec *r = &s->recs[i];
		char val[96];

		if (!matches(r, filter))
			continue;
		if (r->type == KML_REC_COUNTER)
			snprintf(val, sizeof(val), "%" PRIu64, r->value);
		else
			snprintf(val, sizeof(val), "%" PRIu64 " (avg %" PRIu64 ")",
				 r->value, r->value ? r->sum / r->value : 0);
		printf("%-16s %-24s %20s", r->set, r->name, val);
		if (prev)
			printf(" %12.1f", rate(r, find_prev(prev, r, i), secs));
		putchar('\n');
	}
}

static void print_json(const struct kml_snapshot *s,
		       const struct kml_snapshot *prev, double secs,
		       const char *filter)
{
	const char *sep = "";
	size_t i;

	printf("[");
	for (i = 0; i < s->n; i++) {
		const struct kml_rec *r = &s->recs[i];

		if (!matches(r, filter))
			continue;
		printf("%s{\"set\":", sep);
		kml_json_str(r->set);
		printf(",\"name\":");
		kml_json_str(r->name);
		printf(",");
		sep = ",";
		if (r->type == KML_REC_COUNTER) {
			printf("\"type\":\"counter\",\"value\":%" PRIu64,
			       r->value);
		} else {
			printf("\"type\":\"hist\",\"count\":%" PRIu64
			       ",\"sum\":%" PRIu64 ",\"buckets\":",
			       r->value, r->sum);
			kml_json_hist(r->buckets, KML_STATS_HIST_BUCKETS);
		}
		if (prev)
			printf(",\"rate\":%.3f",
			       rate(r, find_prev(prev, r, i), secs));
		printf("}");
	}
	printf("]\n");
}

static int do_reset(int argc, char **argv)
{
	char path[4200], cmd[KML_STATS_CONTROL_MAX + 2];
	int fd, n;

	/* A set name never starts with '-': that is an option, and none is known. */
	if (argc > 1 && argv[1][0] == '-')
		kml_usage_error("unknown option '%s'", argv[1]);
	if (argc > 2)
		kml_usage_error("unexpected argument '%s'", argv[2]);
	n = snprintf(cmd, sizeof(cmd), argc == 2 ? "reset %s\n" : "reset\n",
		     argc == 2 ? argv[1] : "");
	if (n < 0 || (size_t)n >= sizeof(cmd))
		kml_die("set name too long: %s", argv[1]);
	snprintf(path, sizeof(path), "%s/control", proc_dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			not_loaded();
		kml_die("cannot open %s", path);
	}
	if (write(fd, cmd, (size_t)n) != n) {
		int e = errno;

		close(fd);
		if (e == EPERM)
			kml_die("%s", "reset needs root (CAP_SYS_ADMIN)");
		if (e == ENOENT)
			kml_die("no such set: %s", argc == 2 ? argv[1] : "");
		if (e == EINVAL)
			kml_die("invalid set name: %s", argc == 2 ? argv[1] : "");
		kml_die("reset failed: %s", strerror(e));
	}
	close(fd);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", required_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct kml_snapshot cur, prev = { 0 };
	const char *filter = NULL, *env;
	long count = -1, samples = 0;
	double interval = 0, t_prev = 0;
	int json = 0, c;

	kml_prog = prog;
	kml_cli_common(&argc, argv, &json, usage, cmds);
	env = getenv("KMODLAB_PROC_DIR");
	snprintf(proc_dir, sizeof(proc_dir), "%s",
		 env && *env ? env : KML_STATS_PROC_DIR);

	while ((c = getopt_long(argc, argv, "+:jw:c:h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'w':
			interval = strtod(optarg, &end);
			/* below 10 ms, watching would be busy-polling /proc */
			if (*end || !(interval >= 0.01 && interval <= 86400))
				kml_usage_error("bad interval '%s': give seconds, e.g. -w 1",
						optarg);
			break;
		case 'c':
			count = kml_arg_number(optarg, INT_MAX, "count");
			if (count < 1)
				kml_usage_error("bad count '%s': give a positive number",
						optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			kml_bad_option(c, argv);
		}
	}
	if (optind < argc && !strcmp(argv[optind], "reset"))
		return do_reset(argc - optind, argv + optind);
	if (optind < argc)
		filter = argv[optind++];
	if (optind < argc)
		kml_usage_error("unexpected argument '%s'", argv[optind]);
	if (count > 0 && interval == 0)
		kml_usage_error("%s", "-c needs -w");

	for (;;) {
		double t = now();

		snapshot(&cur);
		if (json)
			print_json(&cur, samples ? &prev : NULL, t - t_prev,
				   filter);
		else
			print_table(&cur, samples ? &prev : NULL, t - t_prev,
				    filter);
		kml_flush();
		kml_snapshot_free(&prev);
		prev = cur;
		t_prev = t;
		samples++;
		if (interval == 0 || (count > 0 && samples >= count))
			break;
		if (!json)
			putchar('\n');
		{
			struct timespec ts = {
				.tv_sec = (time_t)interval,
				.tv_nsec = (long)((interval - (time_t)interval) * 1e9),
			};

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	kml_snapshot_free(&prev);
	return 0;
}
