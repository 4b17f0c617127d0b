/* SPDX-License-Identifier: GPL-2.0 */
/* What every kmodlab client shares: its name and the one-line error exit. */
#ifndef KML_CLI_H
#define KML_CLI_H

extern const char *kml_prog;

void kml_flush(void);
void kml_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
unsigned long long kml_number(const char *s, unsigned long long max,
			      const char *what);
unsigned long long kml_arg_number(const char *s, unsigned long long max,
				  const char *what);
#include <stddef.h>
void kml_load_hint(char *buf, size_t len, const char *mod, const char *modules_dep);
void kml_die_not_loaded(const char *mod, const char *what) __attribute__((noreturn));
#include <stdio.h>
#include <stdint.h>
void kml_json_str(const char *s);
void kml_json_hist(const uint64_t *b, unsigned int n);

/*
 * One subcommand of a client, for `help NAME` and `NAME --help`: its
 * synopsis after the name, then what it does and a line per option, in
 * the words of its man page; and, for a client that dispatches through
 * the table, what runs it (argv[0] its name, as getopt expects). A client's
 * table ends with a NULL name.
 */
struct kml_cmd {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

const struct kml_cmd *kml_find_cmd(const struct kml_cmd *cmds, const char *name);

void kml_cli_common(int *argc, char **argv, int *json, void (*usage)(FILE *f),
		    const struct kml_cmd *cmds);
void kml_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void kml_bad_option(int c, char **argv) __attribute__((noreturn));
void kml_operands(int argc, char **argv, int min, int max);

#endif
