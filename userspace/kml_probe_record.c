// SPDX-License-Identifier: GPL-2.0
/*
 * kml-probe record / report: perf record and perf report, in miniature.
 *
 * record attaches timing probes, hands kml_probe a kml_ring to write one
 * record per completed call into (KML_PROBE_IOC_RECORD), and copies the
 * records from the mapped ring into a file (format: kml_probe_file.h)
 * until the command it runs exits, a duration passes or it is
 * interrupted. Nothing is lost silently: the kernel counts each call it
 * could not record, and the file says how many.
 *
 * report reads such a file: per-function latency histograms, the
 * threads that made the calls, the losses; --json for programs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kml_cli.h"
#include "kml_probe_cmd.h"
#include "kml_perf_data.h"
#include "kml_probe_file.h"
#include "kml_ring_lib.h"

#define DEFAULT_FILE	"kml-probe.data"
#define DEFAULT_PERF	"perf.data"
#define NATIVE_SUFFIX	".kml-probe"	/* record --format perf: the recording */
#define DEFAULT_PAGES	64

/* ---- the histogram both hist and report draw ---- */

void kml_probe_draw_hist(const __u64 *hist)
{
	uint64_t maxc = 0;
	int first = -1, last = -1, k;

	for (k = 0; k < KML_PROBE_BUCKETS; k++) {
		if (!hist[k])
			continue;
		if (first < 0)
			first = k;
		last = k;
		if (hist[k] > maxc)
			maxc = hist[k];
	}
	printf("%26s : %-10s %-40s\n", "nsecs", "count", "distribution");
	for (k = first; first >= 0 && k <= last; k++) {
		unsigned long long lo = k ? 1ULL << (k - 1) : 0;
		unsigned long long hi = k == 0 ? 0 : k == 64 ? ~0ULL : (1ULL << k) - 1;
		int bar = (int)(hist[k] * 40 / maxc), i;

		printf("%12llu -> %-11llu : %-10llu |", lo, hi,
		       (unsigned long long)hist[k]);
		for (i = 0; i < 40; i++)
			putchar(i < bar ? '*' : ' ');
		printf("|\n");
	}
}

/* kml_json_hist() on the kernel's __u64 buckets. */
void kml_probe_json_buckets(const __u64 *hist)
{
	uint64_t b[KML_PROBE_BUCKETS];

	for (int k = 0; k < KML_PROBE_BUCKETS; k++)
		b[k] = hist[k];
	kml_json_hist(b, KML_PROBE_BUCKETS);
}

/* ---- reading a recording, converting it ---- */

/*
 * A whole file, read, not mapped: a mapped file that shrinks while it is
 * parsed (another recording to the same path) kills the reader with
 * SIGBUS; a read one is just shorter, and the parser says it is truncated.
 */
static uint8_t *read_whole(const char *path, size_t *lenp)
{
	struct stat st;
	uint8_t *buf;
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st))
		kml_die("cannot read %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		kml_die("%s: not a regular file", path);
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		kml_die("%s", "out of memory");
	while (len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) != 0) {
		if (n < 0 && errno != EINTR)
			kml_die("cannot read %s: %s", path, strerror(errno));
		if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	*lenp = len;
	return buf;
}

static int sink_write(void *ctx, const void *p, size_t n)
{
	return fwrite(p, 1, n, ctx) == n ? 0 : -1;
}

/*
 * @in as perf.data in @out: written to a temporary file beside it and
 * renamed into place once whole, so @out is never half a file; an
 * existing @out is kept as @out.old, as perf does. Returns 0, or 1 with
 * the reason said (the input was refused, or the output not written).
 */
static int convert_file(const char *in, const char *out, bool force, bool quiet)
{
	struct kml_perf_sink sink = { sink_write, NULL };
	struct kml_perf_stats st;
	char tmp[4096], old[4096], err[256];
	struct kml_pf *pf;
	struct stat sb;
	uint8_t *buf;
	size_t len;
	FILE *f;
	int fd, ret = 1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out) >= sizeof(tmp) ||
	    (size_t)snprintf(old, sizeof(old), "%s.old", out) >= sizeof(old))
		kml_die("output path too long: %s", out);
	buf = read_whole(in, &len);
	pf = malloc(sizeof(*pf));
	if (!pf)
		kml_die("%s", "out of memory");
	/* What report refuses, convert refuses: the same reader decides. */
	if (kml_pf_parse(buf, len, force, pf, err, sizeof(err))) {
		fprintf(stderr, "%s: %s: %s\n", kml_prog, in, err);
		goto out;
	}
	/* Owner-only (mkstemp's 0600), as the recording: kernel values. */
	fd = mkstemp(tmp);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create %s: %s\n", kml_prog, out, strerror(errno));
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "%s: cannot create %s: %s\n", kml_prog, tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	sink.ctx = f;
	if (kml_perf_write(buf, len, pf, &sink, &st, err, sizeof(err))) {
		fprintf(stderr, "%s: writing %s: %s\n", kml_prog, out, err);
		fclose(f);
		unlink(tmp);
		goto out;
	}
	if (fflush(f) || fsync(fileno(f)) || fclose(f)) {
		fprintf(stderr, "%s: writing %s: %s\n", kml_prog, out, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (!lstat(out, &sb) && rename(out, old)) {
		fprintf(stderr, "%s: cannot keep the old %s as %s: %s\n", kml_prog, out, old,
			strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, out)) {
		fprintf(stderr, "%s: cannot rename %s to %s: %s\n", kml_prog, tmp, out,
			strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (!quiet)
		fprintf(stderr, "%s: wrote %" PRIu64 " samples of %u function%s%s to %s (perf.data, %" PRIu64 " bytes)\n",
			kml_prog, st.samples, pf->nfuncs, pf->nfuncs == 1 ? "" : "s",
			pf->complete ? "" : " (INCOMPLETE recording)", out, st.bytes);
	ret = 0;
out:
	free(pf);
	free(buf);
	return ret;
}

int kml_probe_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = DEFAULT_FILE, *out = DEFAULT_PERF;
	bool force = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:o:fF:", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			in = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'F':
			if (strcmp(optarg, "perf"))
				kml_usage_error("bad --format '%s': convert writes perf", optarg);
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	kml_operands(argc - optind, argv + optind, 0, 1);
	if (optind < argc)
		in = argv[optind];
	return convert_file(in, out, force, false);
}

/* ---- record ---- */

struct rec_func {
	struct kml_pf_attr attr;
	int ours;			/* we attached it: we detach it */
	int recording;
	int ended;			/* someone else ended it: totals unknown */
	struct kml_probe_result base;	/* nmissed, filtered at the start */
	struct kml_probe_record stop;	/* written, lost at the end */
};

struct recorder {
	int fd;				/* /dev/kml_probe */
	struct kml_ring_user ring;
	FILE *out;
	const char *path;
	unsigned int n;
	struct rec_func f[KML_PROBE_MAX_FUNCS];
	uint64_t records, lost_seen;
};

static volatile sig_atomic_t stop_now;

static void on_signal(int sig)
{
	(void)sig;
	stop_now = 1;
}

/* No SA_RESTART: a signal must end poll() and waitpid() alike. */
static void catch_stop_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static uint64_t mono_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void put(struct recorder *r, const void *p, size_t len)
{
	if (fwrite(p, 1, len, r->out) != len)
		kml_die("writing %s: %s", r->path, strerror(errno));
}

static void put_rec(struct recorder *r, uint32_t type, const void *p, uint32_t len)
{
	struct kml_ring_rec h = {
		.type = type,
		.size = (uint32_t)sizeof(h) + len,
		.timestamp_ns = mono_ns(CLOCK_MONOTONIC),
	};

	put(r, &h, sizeof(h));
	put(r, p, len);
}

/* Stops recording; the kernel reports each function's totals. */
static void stop_all(struct recorder *r)
{
	for (unsigned int i = 0; i < r->n; i++) {
		struct rec_func *f = &r->f[i];

		if (!f->recording)
			continue;
		memcpy(f->stop.func, f->attr.func, sizeof(f->stop.func));
		f->stop.ring_fd = -1;
		if (ioctl(r->fd, KML_PROBE_IOC_RECORD, &f->stop)) {
			/*
			 * -ENOENT: detached meanwhile; -ESRCH: attached again
			 * since, or stopped. Either way the probe is not ours.
			 */
			f->ended = 1;
			f->ours = 0;
			memset(&f->stop, 0, sizeof(f->stop));
			fprintf(stderr, "%s: the recording of %s was ended by someone else (%s): its totals are unknown\n",
				kml_prog, f->attr.func,
				errno == ENOENT ? "its probe was detached" :
				errno == ESRCH ? "stopped, or detached and attached again" :
				strerror(errno));
		}
		f->recording = 0;
	}
}

/* Detaches the probes we attached (someone else's stay). */
static void detach_ours(struct recorder *r)
{
	for (unsigned int i = 0; i < r->n; i++) {
		struct kml_probe_func d = { { 0 } };

		if (!r->f[i].ours)
			continue;
		memcpy(d.func, r->f[i].attr.func, sizeof(d.func));
		ioctl(r->fd, KML_PROBE_IOC_DETACH, &d);
		r->f[i].ours = 0;
	}
}

static struct recorder *active;

/* On an error: give back what recording holds, and no half a file. */
static void abandon(void)
{
	if (!active)
		return;
	stop_all(active);
	detach_ours(active);
	if (active->out) {
		fclose(active->out);
		unlink(active->path);
	}
	active = NULL;
}

static void rdie(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* kml_die(), after abandon(): the message is made first, errno intact. */
static void rdie(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	abandon();
	kml_die("%s", msg);
}

static void get_result(struct recorder *r, struct rec_func *f, struct kml_probe_result *res)
{
	memset(res, 0, sizeof(*res));
	memcpy(res->func, f->attr.func, sizeof(res->func));
	if (ioctl(r->fd, KML_PROBE_IOC_GET, res))
		rdie("get %s: %s", f->attr.func, strerror(errno));
}

static void attach_one(struct recorder *r, struct rec_func *f, uint32_t nargs)
{
	struct kml_probe_attach a = { .nargs = nargs };

	memcpy(a.func, f->attr.func, sizeof(a.func));
	if (!ioctl(r->fd, KML_PROBE_IOC_ATTACH, &a)) {
		f->ours = 1;
		f->attr.nargs = nargs;
	} else if (errno == EEXIST) {
		/* Someone's probe: record it as it is, and leave it attached. */
		get_result(r, f, &f->base);
		if (f->base.flags & KML_PROBE_F_COUNT_ONLY)
			rdie("%s is attached as a count-only probe: it has no calls to record",
			     f->attr.func);
		f->attr.nargs = f->base.nargs;
		f->attr.flags = f->base.flags;
	} else if (errno == EPERM) {
		rdie("%s", "record needs root (CAP_SYS_ADMIN)");
	} else if (errno == ENOENT) {
		rdie("no such kernel function: %s", f->attr.func);
	} else if (errno == EINVAL) {
		rdie("kprobes refuse to probe %s (blacklisted, or not a function entry)",
		     f->attr.func);
	} else {
		rdie("attach %s: %s", f->attr.func, strerror(errno));
	}
	get_result(r, f, &f->base);
}

static void start_one(struct recorder *r, struct rec_func *f)
{
	struct kml_probe_record rc = { .ring_fd = r->ring.fd, .id = f->attr.id };

	memcpy(rc.func, f->attr.func, sizeof(rc.func));
	if (ioctl(r->fd, KML_PROBE_IOC_RECORD, &rc)) {
		if (errno == ENOTTY)
			rdie("%s cannot record (module older than this client?)",
			     KML_PROBE_DEVICE);
		if (errno == EBUSY)
			rdie("%s is being recorded already (another kml-probe record?)",
			     f->attr.func);
		if (errno == ENODEV)
			rdie("%s", "kml_ring was unloaded while recording started");
		rdie("record %s: %s", f->attr.func, strerror(errno));
	}
	f->recording = 1;
}

static int copy_rec(const struct kml_ring_rec *rec, void *arg)
{
	struct recorder *r = arg;
	const struct kml_probe_event *ev = (const void *)(rec + 1);

	/* Others' records (kml_ring_write() goes to every ring): not ours. */
	if (rec->type != KML_PROBE_REC_CALL ||
	    rec->size < sizeof(*rec) + sizeof(*ev) || ev->id >= r->n ||
	    ev->nargs != r->f[ev->id].attr.nargs || ev->reserved)
		return 0;
	put(r, rec, rec->size);
	r->records++;
	return 0;
}

/* Everything the ring holds now, and what it dropped since last time. */
static void drain(struct recorder *r)
{
	uint64_t lost;

	if (kml_ring_user_consume(&r->ring, copy_rec, r) < 0)
		rdie("%s", "the ring holds a malformed record");
	lost = __atomic_load_n(&r->ring.ctrl->lost, __ATOMIC_RELAXED);
	if (lost != r->lost_seen) {
		struct kml_pf_lost l = { .lost = lost - r->lost_seen };

		put_rec(r, KML_PF_REC_LOST, &l, sizeof(l));
		r->lost_seen = lost;
	}
	/* On disk as it comes: a killed recorder leaves all it copied. */
	if (fflush(r->out))
		rdie("writing %s: %s", r->path, strerror(errno));
}

/*
 * The output file, once everything that can be refused was: an existing
 * one is kept as FILE.old, as perf does, and the new one is readable by
 * its owner only (0600): records hold kernel values, the arguments and
 * return values that GET hides from other users.
 */
static void open_output(struct recorder *r)
{
	char old[4096];
	struct stat st;
	int fd;

	if ((size_t)snprintf(old, sizeof(old), "%s.old", r->path) >= sizeof(old))
		rdie("output path too long: %s", r->path);
	/* Only what exists (rename() says EROFS, not ENOENT, on a read-only fs). */
	if (!lstat(r->path, &st) && rename(r->path, old))
		rdie("cannot keep the old %s as %s: %s", r->path, old, strerror(errno));
	fd = open(r->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		rdie("cannot create %s: %s", r->path, strerror(errno));
	r->out = fdopen(fd, "w");
	if (!r->out)
		rdie("cannot create %s: %s", r->path, strerror(errno));
}

static pid_t run_command(char **cmd)
{
	pid_t pid = fork();

	if (pid < 0)
		rdie("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "%s: cannot run %s: %s\n", kml_prog, cmd[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int kml_probe_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "args", required_argument, NULL, 'a' },
		{ "pages", required_argument, NULL, 'm' },
		{ "duration", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	static char native[4096];
	static struct recorder rec;
	struct recorder *r = &rec;
	uint32_t nargs = 0, pages = DEFAULT_PAGES;
	uint64_t deadline = 0, total_lost = 0, wm;
	struct kml_pf_header h = { .version = KML_PF_VERSION };
	const char *perf_out = NULL;
	bool perf = false;
	char **cmd = NULL;
	pid_t child = 0;
	int c, status = 0, nopt = argc, ret, unknown = 0;

	/* FUNC... stops at "--": what follows is the command, untouched. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			cmd = argv + i + 1;
			if (!cmd[0])
				kml_usage_error("%s", "give a COMMAND after --");
			break;
		}
	r->path = NULL;
	optind = 1;
	while ((c = getopt_long(nopt, argv, ":o:a:m:d:F:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			r->path = optarg;
			break;
		case 'F':
			if (!strcmp(optarg, "perf"))
				perf = true;
			else if (!strcmp(optarg, "kml"))
				perf = false;
			else
				kml_usage_error("bad --format '%s': kml or perf", optarg);
			break;
		case 'a':
			nargs = (uint32_t)kml_arg_number(optarg, KML_PROBE_MAX_ARGS, "--args (0..6)");
			break;
		case 'm':
			pages = (uint32_t)kml_arg_number(optarg, KML_RING_MAX_PAGES, "--pages");
			if (pages & (pages - 1) || !pages)
				kml_usage_error("bad --pages %u: a power of two, 1..%d", pages,
					KML_RING_MAX_PAGES);
			break;
		case 'd':
			deadline = kml_arg_number(optarg, 86400, "--duration (1..86400 seconds)");
			if (!deadline)
				kml_usage_error("%s", "bad --duration 0: 1..86400 seconds");
			deadline *= 1000000000ULL;
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	if (optind >= nopt)
		kml_usage_error("%s", "give FUNC...");
	/*
	 * --format perf: the recording goes to FILE.kml-probe as ever (it
	 * keeps what perf.data has no place for: missed and filtered calls),
	 * and is converted to FILE (default perf.data) when it ends.
	 */
	if (perf) {
		perf_out = r->path ? r->path : DEFAULT_PERF;
		if ((size_t)snprintf(native, sizeof(native), "%s" NATIVE_SUFFIX, perf_out) >=
		    sizeof(native))
			kml_usage_error("output path too long: %s", perf_out);
		r->path = native;
	} else if (!r->path) {
		r->path = DEFAULT_FILE;
	}
	if (nopt - optind > KML_PROBE_MAX_FUNCS)
		kml_usage_error("at most %d functions at once", KML_PROBE_MAX_FUNCS);

	for (int i = optind; i < nopt; i++) {
		struct rec_func *f = &r->f[r->n];

		if (strlen(argv[i]) >= KML_PROBE_FUNC_LEN)
			kml_die("function name too long: %s", argv[i]);
		if (argv[i][0] == '-')
			kml_usage_error("unknown option '%s'", argv[i]);
		for (unsigned int j = 0; j < r->n; j++)
			if (!strcmp(r->f[j].attr.func, argv[i]))
				kml_usage_error("%s given twice", argv[i]);
		strcpy(f->attr.func, argv[i]);
		f->attr.id = r->n++;
	}

	/* Every word checked: now the devices, kml_probe's first. */
	r->fd = kml_probe_dev();
	ret = kml_ring_user_open(&r->ring, pages);
	if (ret == -ENOENT)
		kml_die_not_loaded("kml_ring", KML_RING_DEVICE);
	if (ret == -ENOSPC)
		kml_die("no room for a ring of %u pages (kml_ring's page budget): try a smaller -m",
			pages);
	if (ret)
		kml_die("cannot set up a ring on %s: %s", KML_RING_DEVICE, strerror(-ret));
	/* Wake us a quarter full: few wake-ups, and room to spare. */
	wm = r->ring.size / 4;
	if (ioctl(r->ring.fd, KML_RING_IOC_SET_WATERMARK, &wm))
		kml_die("set the ring's watermark: %s", strerror(errno));

	active = r;
	catch_stop_signals();
	for (unsigned int i = 0; i < r->n; i++)
		attach_one(r, &r->f[i], nargs);
	open_output(r);

	memcpy(h.magic, KML_PF_MAGIC, sizeof(h.magic));
	h.bom = KML_PF_BOM;
	h.header_size = sizeof(h);
	h.attr_size = sizeof(struct kml_pf_attr);
	h.nattrs = r->n;
	h.start_ns = mono_ns(CLOCK_MONOTONIC);
	h.start_realtime_ns = mono_ns(CLOCK_REALTIME);
	put(r, &h, sizeof(h));
	for (unsigned int i = 0; i < r->n; i++)
		put(r, &r->f[i].attr, sizeof(r->f[i].attr));
	if (fflush(r->out))
		rdie("writing %s: %s", r->path, strerror(errno));

	for (unsigned int i = 0; i < r->n; i++)
		start_one(r, &r->f[i]);
	if (deadline)
		deadline += mono_ns(CLOCK_MONOTONIC);
	/* Said once recording has begun: scripts may wait for this line. */
	fprintf(stderr, "%s: recording %u function%s into %s%s\n", kml_prog, r->n,
		r->n == 1 ? "" : "s", r->path, cmd ? "" : "; ^C to stop");
	if (cmd)
		child = run_command(cmd);

	while (!stop_now) {
		if (child && waitpid(child, &status, WNOHANG) == child) {
			child = 0;
			break;
		}
		if (deadline && mono_ns(CLOCK_MONOTONIC) >= deadline)
			break;
		/* Woken a quarter full, or every 100 ms, whichever first. */
		kml_ring_user_wait(&r->ring, 100);
		drain(r);
	}
	if (child) {
		/*
		 * Interrupted: the command goes with us. It gets 2 s to end
		 * on SIGTERM (recording and draining on), then SIGKILL.
		 */
		uint64_t until = mono_ns(CLOCK_MONOTONIC) + 2000000000ULL;

		kill(child, SIGTERM);
		while (waitpid(child, &status, WNOHANG) != child) {
			if (mono_ns(CLOCK_MONOTONIC) >= until) {
				kill(child, SIGKILL);
				waitpid(child, &status, 0);
				break;
			}
			kml_ring_user_wait(&r->ring, 50);
			drain(r);
		}
	}

	/* Stop, then drain: after the stop, nothing more comes in. */
	stop_all(r);
	drain(r);
	for (unsigned int i = 0; i < r->n; i++) {
		struct rec_func *f = &r->f[i];
		struct kml_probe_result now;
		struct kml_pf_summary s = {
			.id = f->attr.id,
			.flags = f->ended ? KML_PF_SUM_UNKNOWN : 0,
			.written = f->stop.written,
			.lost = f->stop.lost,
		};

		memset(&now, 0, sizeof(now));
		memcpy(now.func, f->attr.func, sizeof(now.func));
		if (!ioctl(r->fd, KML_PROBE_IOC_GET, &now)) {
			s.nmissed = now.nmissed - f->base.nmissed;
			s.filtered = now.filtered - f->base.filtered;
		}
		total_lost += s.lost;
		unknown += f->ended;
		put_rec(r, KML_PF_REC_SUMMARY, &s, sizeof(s));
	}
	{
		struct kml_pf_end e = {
			.end_ns = mono_ns(CLOCK_MONOTONIC),
			.records = r->records,
		};

		put_rec(r, KML_PF_REC_END, &e, sizeof(e));
	}
	detach_ours(r);
	active = NULL;
	if (fclose(r->out))
		kml_die("writing %s: %s", r->path, strerror(errno));
	kml_ring_user_close(&r->ring);
	fprintf(stderr, "%s: recorded %" PRIu64 " calls of %u function%s in %s",
		kml_prog, r->records, r->n, r->n == 1 ? "" : "s", r->path);
	if (total_lost)
		fprintf(stderr, "; %" PRIu64 " calls NOT recorded (the ring was full: a larger -m, or fewer functions)",
			total_lost);
	fputc('\n', stderr);
	if (cmd && WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "%s: %s exited with status %d\n", kml_prog, cmd[0],
			WEXITSTATUS(status));
	if (perf && convert_file(r->path, perf_out, false, false))
		return 1;
	/* A file whose totals are unknown is readable, but not a success. */
	return unknown ? 1 : 0;
}

/* ---- report ---- */

/* A name from the file, for a terminal: no control bytes pass. */
static const char *printable(const char *s)
{
	static char buf[KML_PROBE_FUNC_LEN];
	size_t i;

	for (i = 0; i < sizeof(buf) - 1 && s[i]; i++)
		buf[i] = s[i] < 0x20 || s[i] == 0x7f || (unsigned char)s[i] >= 0x80 ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

static uint64_t min_of(const struct kml_pf_func *f)
{
	return f->calls ? f->min_ns : 0;
}

static void report_json(const struct kml_pf *pf, const char *path, unsigned int top)
{
	printf("{\"file\":");
	kml_json_str(path);
	printf(",\"version\":%u,\"complete\":%s,\"start_realtime_ns\":%llu,"
	       "\"duration_ns\":%llu,\"records\":%llu,\"ring_lost\":%llu,\"functions\":[",
	       pf->hdr.version, pf->complete ? "true" : "false",
	       (unsigned long long)pf->hdr.start_realtime_ns,
	       (unsigned long long)(pf->complete && pf->end.end_ns > pf->hdr.start_ns ?
				    pf->end.end_ns - pf->hdr.start_ns : 0),
	       (unsigned long long)pf->records, (unsigned long long)pf->ring_lost);
	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		const struct kml_pf_func *f = &pf->funcs[i];

		printf("%s{\"func\":", i ? "," : "");
		kml_json_str(f->attr.func);
		printf(",\"id\":%u,\"nargs\":%u,\"calls\":%llu,\"sum_ns\":%llu,"
		       "\"min_ns\":%llu,\"max_ns\":%llu,", f->attr.id, f->attr.nargs,
		       (unsigned long long)f->calls, (unsigned long long)f->sum_ns,
		       (unsigned long long)min_of(f), (unsigned long long)f->max_ns);
		if (f->summarized && !(f->sum.flags & KML_PF_SUM_UNKNOWN))
			printf("\"written\":%llu,\"lost\":%llu,\"nmissed\":%llu,\"filtered\":%llu,",
			       (unsigned long long)f->sum.written,
			       (unsigned long long)f->sum.lost,
			       (unsigned long long)f->sum.nmissed,
			       (unsigned long long)f->sum.filtered);
		printf("\"buckets\":");
		kml_probe_json_buckets(f->hist);
		printf("}");
	}
	printf("],\"threads\":[");
	for (unsigned int i = 0; i < pf->nthreads && i < top; i++)
		printf("%s{\"pid\":%u,\"tgid\":%u,\"calls\":%llu,\"total_ns\":%llu}",
		       i ? "," : "", pf->threads[i].pid, pf->threads[i].tgid,
		       (unsigned long long)pf->threads[i].calls,
		       (unsigned long long)pf->threads[i].total_ns);
	printf("],\"other_threads\":{\"calls\":%llu,\"total_ns\":%llu}}\n",
	       (unsigned long long)pf->other_calls, (unsigned long long)pf->other_ns);
}

static void report_text(const struct kml_pf *pf, const char *path, unsigned int top)
{
	uint64_t lost = 0, shown = 0;

	for (unsigned int i = 0; i < pf->nfuncs; i++)
		lost += pf->funcs[i].sum.lost;
	printf("# %s: %llu calls of %u function%s", path,
	       (unsigned long long)pf->records, pf->nfuncs, pf->nfuncs == 1 ? "" : "s");
	if (pf->complete && pf->end.end_ns > pf->hdr.start_ns)
		printf(" in %.3f s", (double)(pf->end.end_ns - pf->hdr.start_ns) / 1e9);
	if (pf->complete)
		printf(", %llu not recorded (lost)\n", (unsigned long long)lost);
	else
		printf("; INCOMPLETE: the recording did not end (no totals, losses unknown%s)\n",
		       pf->cut ? ", its last record cut" : "");
	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		const struct kml_pf_func *f = &pf->funcs[i];

		printf("\nFunction = %s  (%llu calls recorded", printable(f->attr.func),
		       (unsigned long long)f->calls);
		if (f->summarized && (f->sum.flags & KML_PF_SUM_UNKNOWN))
			printf(", recording ended by someone else: losses unknown");
		else if (f->summarized)
			printf(", %llu lost, %llu missed, %llu filtered",
			       (unsigned long long)f->sum.lost,
			       (unsigned long long)f->sum.nmissed,
			       (unsigned long long)f->sum.filtered);
		printf(")\n");
		if (!f->calls)
			continue;
		kml_probe_draw_hist(f->hist);
		printf("avg = %llu nsecs, min = %llu, max = %llu\n",
		       (unsigned long long)(f->sum_ns / f->calls),
		       (unsigned long long)min_of(f), (unsigned long long)f->max_ns);
	}
	if (!pf->nthreads)
		return;
	printf("\nTop threads:\n%10s %10s %12s %16s\n", "TID", "PID", "CALLS", "TOTAL ns");
	for (unsigned int i = 0; i < pf->nthreads && i < top; i++) {
		printf("%10u %10u %12llu %16llu\n", pf->threads[i].pid,
		       pf->threads[i].tgid, (unsigned long long)pf->threads[i].calls,
		       (unsigned long long)pf->threads[i].total_ns);
		shown += pf->threads[i].calls;
	}
	if (shown < pf->records)
		printf("%21s %12llu calls by other threads\n", "",
		       (unsigned long long)(pf->records - shown));
}

int kml_probe_report(int argc, char **argv, int json)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "force", no_argument, NULL, 'f' },
		{ "top", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_FILE;
	unsigned int top = 10;
	bool force = false;
	struct kml_pf *pf;
	char err[256];
	uint8_t *buf;
	size_t len = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:ft:", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 't':
			top = (unsigned int)kml_arg_number(optarg, KML_PF_TOP_MAX, "--top");
			break;
		default:
			kml_bad_option(c, argv);
		}
	}
	kml_operands(argc - optind, argv + optind, 0, 1);
	if (optind < argc)
		path = argv[optind];
	buf = read_whole(path, &len);
	pf = malloc(sizeof(*pf));
	if (!pf)
		kml_die("%s", "out of memory");
	if (kml_pf_parse(buf, len, force, pf, err, sizeof(err)))
		kml_die("%s: %s", path, err);
	kml_pf_sort_threads(pf);
	if (json)
		report_json(pf, path, top);
	else
		report_text(pf, path, top);
	free(buf);
	free(pf);
	return 0;
}
