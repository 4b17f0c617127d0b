// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "kml_cli.h"

const char *kml_prog = "kmodlab";

/* "<prog>: <message>" on stderr, exit status 1: the clients' error style. */
void kml_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", kml_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* An unsigned decimal or 0x number in [0, max], or a one-line error. */
unsigned long long kml_number(const char *s, unsigned long long max,
			      const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !*s || *s == '-' || v > max)
		kml_die("bad %s '%s'", what, s);
	return v;
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

/*
 * What every client takes anywhere on its line, up to a "--" (after it
 * come another program's arguments): -j/--json, -h/--help, -V/--version,
 * and `help [COMMAND]` as its first word. They are taken out of argv,
 * so each client's own parsing never sees them; help and version print
 * to stdout and exit 0. getopt's messages name kml_prog, as the clients'
 * own do, not the path the client was run by.
 */
void kml_cli_common(int *argc, char **argv, int *json, void (*usage)(FILE *f))
{
	int i, n = 1, rest = 0;

	argv[0] = (char *)kml_prog;
	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (rest || !strcmp(a, "--")) {
			rest = 1;
			argv[n++] = argv[i];
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			*json = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help") ||
			   (n == 1 && !strcmp(a, "help"))) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("%s (kmodlab) %s\n", kml_prog, KML_VERSION);
			exit(0);
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	*argc = n;
}

/* "<prog>: <reason>" and where help is, on stderr; exit status 2. */
void kml_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", kml_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s --help: usage)\n", kml_prog);
	exit(2);
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
void kml_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
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
