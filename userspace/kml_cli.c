// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
