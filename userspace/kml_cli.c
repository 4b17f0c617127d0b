// SPDX-License-Identifier: GPL-2.0
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
