/* SPDX-License-Identifier: GPL-2.0 */
/* What every kmodlab client shares: its name and the one-line error exit. */
#ifndef KML_CLI_H
#define KML_CLI_H

extern const char *kml_prog;

void kml_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
unsigned long long kml_number(const char *s, unsigned long long max,
			      const char *what);
#include <stddef.h>
void kml_load_hint(char *buf, size_t len, const char *mod, const char *modules_dep);
void kml_die_not_loaded(const char *mod, const char *what) __attribute__((noreturn));
#include <stdio.h>
#include <stdint.h>
void kml_json_str(const char *s);
void kml_json_hist(const uint64_t *b, unsigned int n);
void kml_cli_common(int *argc, char **argv, int *json, void (*usage)(FILE *f));
void kml_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
