/* SPDX-License-Identifier: GPL-2.0 */
/* What every kmodlab client shares: its name and the one-line error exit. */
#ifndef KML_CLI_H
#define KML_CLI_H

extern const char *kml_prog;

void kml_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
unsigned long long kml_number(const char *s, unsigned long long max,
			      const char *what);

#endif
