// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kml_cli.h"

const char *kml_prog = "kmodlab";

/* Set once an error line is out: close_stdout() then adds none. */
static int kml_failed;

/*
 * At exit (atexit(), from kml_cli_common()): output that could not be
 * written, to a full disk or /dev/full, is an error and not a success,
 * whichever path ended the program (the pattern of gnulib's close_stdout).
 */
static void close_stdout(void)
{
	int err = fflush(stdout) || ferror(stdout);

	if (fclose(stdout) && !err)
		err = 1;
	if (err && !kml_failed) {
		fprintf(stderr, "%s: cannot write the output: %s\n", kml_prog,
			strerror(errno ? errno : EIO));
		_exit(1);
	}
}

/* The watch loops' flush: a lost update ends them instead of looping on. */
void kml_flush(void)
{
	if (fflush(stdout) || ferror(stdout))
		kml_die("cannot write the output: %s", strerror(errno ? errno : EIO));
}

/* "<prog>: <message>" on stderr, exit status 1: the clients' error style. */
void kml_die(const char *fmt, ...)
{
	va_list ap;

	kml_failed = 1;
	fprintf(stderr, "%s: ", kml_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* An unsigned decimal or 0x number in [0, max], or @fail's one line. */
static unsigned long long number(const char *s, unsigned long long max,
				 const char *what, void (*fail)(const char *fmt, ...))
{
	const char *digits = s;
	char *end;
	unsigned long long v;
	int base = 10;

	/*
	 * strtoull() alone would take " 12", "+12", "-1" (as a huge value)
	 * and "010" (as octal 8): a digit must come first, and only 0x
	 * switches the base.
	 */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		digits = s + 2;
	}
	if (base == 16 ? !isxdigit((unsigned char)digits[0]) : !isdigit((unsigned char)digits[0]))
		fail("bad %s '%s'", what, s);
	errno = 0;
	v = strtoull(digits, &end, base);
	if (errno || *end || v > max)
		fail("bad %s '%s'", what, s);
	return v;
}

/* A number the client was given at run time, or a one-line error (1). */
unsigned long long kml_number(const char *s, unsigned long long max,
			      const char *what)
{
	return number(s, max, what, kml_die);
}

/*
 * A number on the command line, or a usage error (2): a client checks
 * every argument with it before it opens a device, so a typo is told as
 * one whether or not the module is loaded.
 */
unsigned long long kml_arg_number(const char *s, unsigned long long max,
				  const char *what)
{
	return number(s, max, what, kml_usage_error);
}

/* Is @mod listed in @modules_dep (depmod's file), compressed or not? */
static int kml_installed(const char *mod, const char *modules_dep)
{
	char line[4096], want[128];
	FILE *f = fopen(modules_dep, "r");
	int found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%s.ko", mod);
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *base;

		if (!colon)
			continue;
		*colon = '\0';
		base = strrchr(line, '/');
		base = base ? base + 1 : line;
		/* kml_x.ko, or kml_x.ko.xz / .zst / .gz */
		found = !strncmp(base, want, strlen(want)) &&
			(!base[strlen(want)] || base[strlen(want)] == '.');
	}
	fclose(f);
	return found;
}

/*
 * How to load @mod, in one sentence: `modprobe` when it is installed for
 * the running kernel (depmod knows it needs kml_stats first), else the
 * insmods in their order, from the build directory. @modules_dep: the
 * depmod file to look in, NULL for the running kernel's.
 */
void kml_load_hint(char *buf, size_t len, const char *mod, const char *modules_dep)
{
	char path[512];
	struct utsname u;

	if (!modules_dep && !uname(&u)) {
		snprintf(path, sizeof(path), "/lib/modules/%s/modules.dep", u.release);
		modules_dep = path;
	}
	if (modules_dep && kml_installed(mod, modules_dep))
		snprintf(buf, len, "run `modprobe %s` as root", mod);
	else if (!strcmp(mod, "kml_stats"))
		snprintf(buf, len, "run `insmod kml_stats.ko` as root in the build's module directory (or `make demo` in the source tree)");
	else
		snprintf(buf, len, "run `insmod kml_stats.ko` and then `insmod %s.ko` as root in the build's module directory (%s needs kml_stats), or `make demo` in the source tree",
			 mod, mod);
}

/* "<mod> is not loaded (<what> is missing): <how to load it>", exit 1. */
void kml_die_not_loaded(const char *mod, const char *what)
{
	char hint[512];

	kml_load_hint(hint, sizeof(hint), mod, NULL);
	kml_die("%s is not loaded (%s is missing): %s", mod, what, hint);
}

#ifndef KML_VERSION
#define KML_VERSION "unknown"
#endif

/* The command on the line, for the hint of a usage error; NULL: none. */
static const struct kml_cmd *kml_cmd;

const struct kml_cmd *kml_find_cmd(const struct kml_cmd *cmds, const char *name)
{
	for (; cmds && cmds->name; cmds++)
		if (!strcmp(cmds->name, name))
			return cmds;
	return NULL;
}

/* `help NAME`: the synopsis, then the man page's words for it. */
static void cmd_usage(const struct kml_cmd *c)
{
	printf("usage: %s %s%s%s\n%s", kml_prog, c->name, *c->args ? " " : "",
	       c->args, c->help);
}

/*
 * What every client takes anywhere on its line, up to a "--" (after it
 * come another program's arguments): -j/--json, -h/--help, -V/--version,
 * and `help [COMMAND]` as its first word. They are taken out of argv,
 * so each client's own parsing never sees them; help and version print
 * to stdout and exit 0, before any device is opened. -h after a command
 * of @cmds is that command's help. getopt stays quiet (opterr): the
 * clients say what is wrong in their own one line (kml_bad_option()),
 * naming kml_prog, not the path the client was run by.
 */
void kml_cli_common(int *argc, char **argv, int *json, void (*usage)(FILE *f),
		    const struct kml_cmd *cmds)
{
	int i, n = 1, rest = 0, help = 0, help_word = 0;

	atexit(close_stdout);
	argv[0] = (char *)kml_prog;
	opterr = 0;
	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];

		/*
		 * `kml-x -- COMMAND`: a -- before a command word ends no
		 * option, so it goes (kept before an operand that starts
		 * with '-': kml-stats -- -x filters on "-x").
		 */
		if (!rest && n == 1 && !strcmp(a, "--") && i + 1 < *argc &&
		    argv[i + 1][0] != '-')
			continue;
		if (rest || !strcmp(a, "--")) {
			rest = 1;
			argv[n++] = argv[i];
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			*json = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help = 1;
		} else if (n == 1 && !strcmp(a, "help")) {
			help = help_word = 1;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("%s (kmodlab) %s\n", kml_prog, KML_VERSION);
			exit(0);	/* close_stdout() checks the output */
		} else {
			/*
			 * The first word that names a command is the command:
			 * kml-ring takes options (with values) before it.
			 */
			if (!kml_cmd)
				kml_cmd = kml_find_cmd(cmds, a);
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	*argc = n;
	if (help_word && n > 1) {
		/* help NAME: NAME must be a command, whatever follows it */
		kml_cmd = kml_find_cmd(cmds, argv[1]);
		if (!kml_cmd)
			kml_usage_error("unknown command '%s'", argv[1]);
	}
	if (help && kml_cmd) {
		cmd_usage(kml_cmd);
		exit(0);	/* close_stdout() checks the output */
	}
	if (help) {
		usage(stdout);
		exit(0);	/* close_stdout() checks the output */
	}
}

/*
 * "<prog>: <reason> (try '<prog> help COMMAND')" on stderr, one line,
 * exit status 2: the command's own help when the line named one.
 */
void kml_usage_error(const char *fmt, ...)
{
	va_list ap;

	kml_failed = 1;
	fprintf(stderr, "%s: ", kml_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (kml_cmd)
		fprintf(stderr, " (try '%s help %s')\n", kml_prog, kml_cmd->name);
	else
		fprintf(stderr, " (try '%s --help')\n", kml_prog);
	exit(2);
}

/*
 * getopt_long() returned @c, '?' or ':' (an optstring that starts with
 * ':' tells a missing value apart). optopt is the short option, or 0
 * for a long one, which then is the word before optind.
 */
void kml_bad_option(int c, char **argv)
{
	if (c == ':')
		kml_usage_error("option '%s' needs a value", argv[optind - 1]);
	if (optopt)
		kml_usage_error("unknown option '-%c'", optopt);
	kml_usage_error("unknown option '%s'", argv[optind - 1]);
}

/*
 * A command's operands, after its options: a word that starts with '-'
 * and is neither "-" (stdin) nor a negative number (a temperature) is an
 * option the command does not know; and there must be @min to @max.
 */
void kml_operands(int argc, char **argv, int min, int max)
{
	for (int i = 0; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] &&
		    !(argv[i][1] >= '0' && argv[i][1] <= '9'))
			kml_usage_error("unknown option '%s'", argv[i]);
	if (argc < min)
		kml_usage_error("%s", "missing argument");
	if (argc > max)
		kml_usage_error("unexpected argument '%s'", argv[max]);
}

/*
 * The length of the well-formed UTF-8 sequence at @s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/*
 * A JSON string: quotes, backslashes and control bytes escaped; UTF-8
 * passed as it is, and a byte that is not part of any (a file name in
 * another encoding) as U+FFFD, so the output is always valid JSON.
 */
void kml_json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		int n;

		if (*p == '"' || *p == '\\') {
			printf("\\%c", *p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else if (*p < 0x80) {
			putchar(*p++);
		} else if ((n = utf8_len(p))) {
			fwrite(p, 1, (size_t)n, stdout);
			p += n;
		} else {
			fputs("\\ufffd", stdout);
			p++;
		}
	}
	putchar('"');
}

/*
 * The one JSON shape of a log2 histogram, in every client: the buckets
 * from the first non-empty one to the last, each as its value range
 * (bucket 0 holds 0, bucket k holds 2^(k-1) .. 2^k - 1) and its count.
 */
void kml_json_hist(const uint64_t *b, unsigned int n)
{
	int first = -1, last = -1;

	for (unsigned int k = 0; k < n; k++)
		if (b[k]) {
			if (first < 0)
				first = (int)k;
			last = (int)k;
		}
	printf("[");
	for (int k = first; first >= 0 && k <= last; k++)
		printf("%s{\"low\":%llu,\"high\":%llu,\"count\":%llu}",
		       k == first ? "" : ",", k ? 1ULL << (k - 1) : 0ULL,
		       k == 0 ? 0ULL : k == 64 ? ~0ULL : (1ULL << k) - 1,
		       (unsigned long long)b[k]);
	printf("]");
}
