// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests for the clients' shared code and convention: the "not
 * loaded" hint names the command that works (modprobe when depmod knows
 * the module, else both insmods in their order); and every client, run
 * here without its module, keeps the same rules: --version/-V, --help/-h
 * and `help` on stdout with status 0 wherever they stand, status 2 with
 * a reason for a usage error, the global options anywhere on the line;
 * and so does every command of every client (the table `commands`, which
 * must have a row for each command a client's --help lists): its own
 * help, and status 2 for its bad words before any device is opened.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_cli.h"

static const char *dep(const char *text)
{
	static char path[] = "/tmp/kml_cli_depXXXXXX";
	static int fd = -1;

	if (fd < 0) {
		fd = mkstemp(path);
		if (fd < 0)
			return NULL;
	}
	if (ftruncate(fd, 0) || pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text))
		return NULL;
	return path;
}

TEST(installed_means_modprobe)
{
	char h[512];

	kml_load_hint(h, sizeof(h), "kml_sensor",
		      dep("kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko\n"
			  "updates/dkms/kml_stats.ko:\n"
			  "updates/dkms/kml_sensor.ko: updates/dkms/kml_stats.ko\n"));
	ASSERT_STREQ("run `modprobe kml_sensor` as root", h);
	/* compressed, as Debian and Ubuntu ship them */
	kml_load_hint(h, sizeof(h), "kml_ring",
		      dep("extra/kml_ring.ko.xz: extra/kml_stats.ko.xz\n"));
	ASSERT_STREQ("run `modprobe kml_ring` as root", h);
}

TEST(not_installed_means_both_insmods_in_order)
{
	char h[512];

	/* kml_sensor_x is not kml_sensor; a dependency is not a module line */
	kml_load_hint(h, sizeof(h), "kml_sensor",
		      dep("extra/kml_sensor_x.ko:\nextra/other.ko: extra/kml_sensor.ko\n"));
	ASSERT_NE(NULL, strstr(h, "`insmod kml_stats.ko` and then `insmod kml_sensor.ko`"))
		TH_LOG("%s", h);
	kml_load_hint(h, sizeof(h), "kml_stats", dep(""));
	ASSERT_NE(NULL, strstr(h, "`insmod kml_stats.ko`")) TH_LOG("%s", h);
	ASSERT_EQ(NULL, strstr(h, "and then")) TH_LOG("%s", h);
	/* no modules.dep at all (a kernel without modules installed) */
	kml_load_hint(h, sizeof(h), "kml_probe", "/nonexistent/modules.dep");
	ASSERT_NE(NULL, strstr(h, "`insmod kml_stats.ko` and then `insmod kml_probe.ko`"))
		TH_LOG("%s", h);
}

/* What @fn printed on stdout. */
static const char *captured(void (*fn)(void))
{
	static char buf[4096];
	FILE *tmp = tmpfile();
	int saved = dup(1);
	size_t n;

	fflush(stdout);
	dup2(fileno(tmp), 1);
	fn();
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

static void print_str(void)
{
	kml_json_str("a\"b\\c\n\x01\x7f\xc3\xa9");
}

static void print_hist(void)
{
	uint64_t b[65] = { 0 };

	b[0] = 1;
	b[3] = 4;
	b[64] = 2;
	kml_json_hist(b, 65);
}

static void print_empty_hist(void)
{
	uint64_t b[65] = { 0 };

	kml_json_hist(b, 65);
}

TEST(json_strings_are_escaped)
{
	/* UTF-8 passes as it is; control bytes and DEL are \u-escaped. */
	ASSERT_STREQ("\"a\\\"b\\\\c\\u000a\\u0001\\u007f\xc3\xa9\"", captured(print_str));
}

static void print_bad_utf8(void)
{
	/* a Latin-1 name, a cut sequence, an overlong '/', a surrogate, 4 bytes */
	kml_json_str("caf\xe9|\xc3|\xc0\xaf|\xed\xa0\x80|\xf0\x9f\x98\x80");
}

TEST(json_strings_are_valid_utf8)
{
	/* every byte that is not part of well-formed UTF-8 is U+FFFD */
	ASSERT_STREQ("\"caf\\ufffd|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|"
		     "\xf0\x9f\x98\x80\"", captured(print_bad_utf8));
}

TEST(json_histograms_have_one_shape)
{
	static const char head[] =
		"[{\"low\":0,\"high\":0,\"count\":1},{\"low\":1,\"high\":1,\"count\":0},"
		"{\"low\":2,\"high\":3,\"count\":0},{\"low\":4,\"high\":7,\"count\":4},";

	/* From the first non-empty bucket to the last, empty ones between. */
	ASSERT_EQ(0, strncmp(head, captured(print_hist), sizeof(head) - 1)) TH_LOG("%s", captured(print_hist));
	ASSERT_NE(NULL, strstr(captured(print_hist),
			       "{\"low\":9223372036854775808,\"high\":18446744073709551615,\"count\":2}]"));
	ASSERT_STREQ("[]", captured(print_empty_hist));
}

static const char *const clients[] = {
	"kml-stats", "kml-sensor", "kml-probe", "kml-ring", "kml-filter",
};

/* Runs "<client> <args>"; its status, stdout in @out, stderr in @err. */
static int run(const char *client, const char *args, char *out, char *err)
{
	char cmd[1024], errf[] = "/tmp/kml_cli_err.XXXXXX";
	FILE *f;
	size_t n;
	int st, fd;

	/* a private file (not a fixed name another user could plant) */
	fd = mkstemp(errf);
	if (fd < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "KML_SENSOR_DEVICE=/nonexistent KML_FILTER_DEVICE=/nonexistent "
		 "KMODLAB_PROC_DIR=/nonexistent '%s/%s' %s 2>%s", KML_BIN_DIR,
		 client, args, errf);
	f = popen(cmd, "r");
	if (!f) {
		close(fd);
		unlink(errf);
		return -1;
	}
	n = fread(out, 1, 4095, f);
	out[n] = '\0';
	st = pclose(f);
	n = read(fd, err, 4095);
	err[n > 4095 ? 0 : n] = '\0';
	close(fd);
	unlink(errf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

TEST(every_client_says_its_version)
{
	static char out[4096], err[4096], want[64];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		snprintf(want, sizeof(want), "%s (kmodlab) ", clients[i]);
		ASSERT_EQ(0, run(clients[i], "--version", out, err)) TH_LOG("%s", clients[i]);
		ASSERT_TRUE(out == strstr(out, want)) TH_LOG("%s", out);
		ASSERT_EQ(1, lines(out));
		ASSERT_STREQ("", err);
		ASSERT_EQ(0, run(clients[i], "-V", out, err));
		ASSERT_TRUE(out == strstr(out, want)) TH_LOG("%s", out);
	}
}

TEST(every_client_helps_on_stdout_from_anywhere)
{
	static const char *const ways[] = { "--help", "-h", "help", "help -j", "list --help" };
	static char out[4096], err[4096], want[64];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		snprintf(want, sizeof(want), "usage: %s ", clients[i]);
		for (unsigned int w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			ASSERT_EQ(0, run(clients[i], ways[w], out, err))
				TH_LOG("%s %s: %s", clients[i], ways[w], err);
			ASSERT_TRUE(out == strstr(out, want)) TH_LOG("%s %s: %s", clients[i], ways[w], out);
			ASSERT_STREQ("", err);
		}
	}
}

TEST(usage_errors_exit_2_with_a_reason_under_the_clients_name)
{
	static char out[4096], err[4096], want[64];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		snprintf(want, sizeof(want), "%s: ", clients[i]);
		ASSERT_EQ(2, run(clients[i], "--no-such-option", out, err)) TH_LOG("%s", clients[i]);
		ASSERT_TRUE(err == strstr(err, want)) TH_LOG("%s", err);
		ASSERT_NE(NULL, strstr(err, "no-such-option")) TH_LOG("%s", err);
		ASSERT_EQ(1, lines(err)) TH_LOG("%s", err);
		/* help for a command the client does not have: every client */
		ASSERT_EQ(2, run(clients[i], "help nosuch", out, err)) TH_LOG("%s", clients[i]);
		ASSERT_TRUE(err == strstr(err, want)) TH_LOG("%s", err);
		ASSERT_NE(NULL, strstr(err, "unknown command 'nosuch'")) TH_LOG("%s", err);
		ASSERT_EQ(1, lines(err)) TH_LOG("%s", err);
		ASSERT_STREQ("", out);
		if (!strcmp(clients[i], "kml-stats"))
			continue;	/* a word is a filter there, not a command */
		ASSERT_EQ(2, run(clients[i], "no-such-command", out, err)) TH_LOG("%s", clients[i]);
		ASSERT_TRUE(err == strstr(err, want)) TH_LOG("%s", err);
		ASSERT_NE(NULL, strstr(err, "unknown command 'no-such-command'")) TH_LOG("%s", err);
		ASSERT_EQ(1, lines(err)) TH_LOG("%s", err);
		ASSERT_EQ(2, run(clients[i], "", out, err)) TH_LOG("%s: no command", clients[i]);
		ASSERT_NE(NULL, strstr(err, "no command given")) TH_LOG("%s", err);
	}
}

/*
 * Numbers are decimal, or hex after 0x: not octal (010 is ten), and no
 * sign or space first (strtoull() would read " -1" as 2^64 - 1).
 */
TEST(numbers_are_decimal_or_hex_and_nothing_else)
{
	static const char *const bad[] = { "' -1'", "+1", "-1", "0x", "''", "1e3", "0x1g",
					   "18446744073709551616" };
	static char out[4096], err[4096], line[64];

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "produce --count %s", bad[i]);
		ASSERT_EQ(2, run("kml-ring", line, out, err)) TH_LOG("%s: %s", line, err);
		ASSERT_NE(NULL, strstr(err, "bad --count")) TH_LOG("%s", err);
	}
	/* accepted as numbers: the next thing said is that the module is missing */
	ASSERT_EQ(1, run("kml-ring", "produce --count 010", out, err));
	ASSERT_EQ(1, run("kml-ring", "produce --count 0X1f", out, err));
	ASSERT_EQ(2, run("kml-stats", "-w 1 -c 99999999999999999999", out, err)) TH_LOG("%s", err);
	ASSERT_EQ(2, run("kml-stats", "-w 0.001", out, err)) TH_LOG("%s", err);
}

/* A -- before the command word is the same line without it. */
TEST(a_leading_double_dash_changes_nothing)
{
	static char out[4096], err[4096];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		ASSERT_EQ(0, run(clients[i], "-- help", out, err)) TH_LOG("%s: %s", clients[i], err);
		ASSERT_NE(NULL, strstr(out, "usage: ")) TH_LOG("%s", out);
	}
	/* a command, past the --: the next thing said is that the module is missing */
	ASSERT_EQ(1, run("kml-probe", "-- list", out, err)) TH_LOG("%s", err);
	ASSERT_NE(NULL, strstr(err, "not loaded")) TH_LOG("%s", err);
	ASSERT_EQ(1, run("kml-sensor", "-- read", out, err)) TH_LOG("%s", err);
	/* and before what looks like an option it still ends the options */
	ASSERT_EQ(1, run("kml-stats", "-- --help", out, err)) TH_LOG("%s", err);
	ASSERT_STREQ("", out);
}

/* Output that cannot be written is an error, not a silent success. */
TEST(a_failed_write_of_help_or_version_is_an_error)
{
	static char out[4096], err[4096];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		ASSERT_EQ(1, run(clients[i], "--help >/dev/full", out, err)) TH_LOG("%s", clients[i]);
		ASSERT_NE(NULL, strstr(err, "cannot write")) TH_LOG("%s", err);
		ASSERT_EQ(1, run(clients[i], "--version >/dev/full", out, err)) TH_LOG("%s", clients[i]);
	}
}

/*
 * And after real work: a report, table or JSON, that cannot be written
 * exits 1 with one line, where it used to exit 0 (the check at exit,
 * gnulib's close_stdout).
 */
TEST(a_report_that_cannot_be_written_is_an_error)
{
	static char out[4096], err[4096];
	const char *file = KML_CORPUS_DIR "/kml_probe_file/two_funcs";
	char args[512];

	snprintf(args, sizeof(args), "report '%s' >/dev/null", file);
	ASSERT_EQ(0, run("kml-probe", args, out, err)) TH_LOG("%s", err);
	snprintf(args, sizeof(args), "report '%s' >/dev/full", file);
	ASSERT_EQ(1, run("kml-probe", args, out, err));
	EXPECT_STREQ("kml-probe: cannot write the output: No space left on device\n", err);
	snprintf(args, sizeof(args), "-j report '%s' >/dev/full", file);
	ASSERT_EQ(1, run("kml-probe", args, out, err));
	EXPECT_STREQ("kml-probe: cannot write the output: No space left on device\n", err);
}

/*
 * convert: a recording as perf.data, 0600, renamed into place (the old
 * one kept as .old); a file report refuses is refused with report's
 * line, and leaves neither an output nor a temporary file.
 */
TEST(convert_writes_perf_data_or_nothing)
{
	static char out[4096], err[4096];
	const char *file = KML_CORPUS_DIR "/kml_probe_file/two_funcs";
	char dir[] = "/tmp/kml-cli-convert-XXXXXX", args[1024], path[256];
	struct stat st;
	struct dirent *d;
	unsigned int n = 0;
	DIR *dp;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(args, sizeof(args), "convert '%s' -o %s/p.data", file, dir);
	ASSERT_EQ(0, run("kml-probe", args, out, err)) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "wrote 4 samples of 2 functions")) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/p.data", dir);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0600U, st.st_mode & 07777);
	ASSERT_EQ(0, run("kml-probe", args, out, err)) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/p.data.old", dir);
	EXPECT_EQ(0, stat(path, &st));
	/* Cut short: refused as report refuses it, and nothing is left. */
	snprintf(args, sizeof(args), "head -c 700 '%s' > %s/cut", file, dir);
	ASSERT_EQ(0, system(args));
	snprintf(args, sizeof(args), "convert %s/cut -o %s/q.data", dir, dir);
	ASSERT_EQ(1, run("kml-probe", args, out, err));
	EXPECT_NE(NULL, strstr(err, "truncated: a record header is cut")) TH_LOG("%s", err);
	snprintf(args, sizeof(args), "convert --force %s/cut -o %s/q.data", dir, dir);
	ASSERT_EQ(0, run("kml-probe", args, out, err)) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "INCOMPLETE")) TH_LOG("%s", err);
	snprintf(args, sizeof(args), "convert '%s' -o %s/nodir/r.data", file, dir);
	ASSERT_EQ(1, run("kml-probe", args, out, err));
	EXPECT_NE(NULL, strstr(err, "nodir/r.data: No such file")) TH_LOG("%s", err);
	dp = opendir(dir);
	ASSERT_NE(NULL, dp);
	while ((d = readdir(dp)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dp);
	EXPECT_EQ(4U, n);	/* p.data, p.data.old, cut, q.data: no temporary */
	snprintf(args, sizeof(args), "rm -rf %s", dir);
	ASSERT_EQ(0, system(args));
}

/*
 * What the client can see is wrong without the device is a usage error
 * (2) before any device is opened; what only the device can judge (a
 * channel number's range) is its error (1, here: not loaded).
 */
TEST(local_errors_exit_2_device_errors_1)
{
	static char out[4096], err[4096];
	static const char *const usage[] = {
		"kml-probe|attach ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
		"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"kml-ring|produce --size 3",
		"kml-ring|produce --size 1048576",
		"kml-ring|consume --watermark 0",
		"kml-ring|consume --pages 1 --watermark 2049",
	};
	static const char *const device[] = {
		"kml-ring|consume --pages 1 --watermark 2048",
		"kml-ring|produce --size 32",
		"kml-sensor|read 0x1",
		"kml-sensor|period 0x3e8",
	};
	char client[32];

	for (unsigned int i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		const char *bar = strchr(usage[i], '|');

		snprintf(client, sizeof(client), "%.*s", (int)(bar - usage[i]), usage[i]);
		EXPECT_EQ(2, run(client, bar + 1, out, err)) TH_LOG("%s: %s", usage[i], err);
		EXPECT_EQ(NULL, strstr(err, "not loaded")) TH_LOG("%s: %s", usage[i], err);
	}
	for (unsigned int i = 0; i < sizeof(device) / sizeof(device[0]); i++) {
		const char *bar = strchr(device[i], '|');

		snprintf(client, sizeof(client), "%.*s", (int)(bar - device[i]), device[i]);
		EXPECT_EQ(1, run(client, bar + 1, out, err)) TH_LOG("%s: %s", device[i], err);
		EXPECT_NE(NULL, strstr(err, "not loaded")) TH_LOG("%s: %s", device[i], err);
	}
}

/*
 * Every command of every client, with a line that is wrong in its own
 * words (a bad number, an unknown option or word): a command missing
 * here fails every_command_helps, one whose error is found only after
 * the device is opened fails command_errors_exit_2_before_any_device.
 */
static const struct {
	const char *client, *cmd, *bad;
} commands[] = {
	{ "kml-stats", "reset", "reset --bogus" },
	{ "kml-sensor", "info", "info --bogus" },
	{ "kml-sensor", "read", "read 2x" },
	{ "kml-sensor", "watch", "watch -c 2x" },
	{ "kml-sensor", "alarm", "alarm set 0 cold 30" },
	{ "kml-sensor", "wait", "wait --seconds 2x" },
	{ "kml-sensor", "period", "period 2x" },
	{ "kml-sensor", "inject", "inject 0 hot" },
	{ "kml-sensor", "reset", "reset --bogus" },
	{ "kml-probe", "attach", "attach vfs_read --args abc" },
	{ "kml-probe", "detach", "detach vfs_read --bogus" },
	{ "kml-probe", "list", "list --bogus" },
	{ "kml-probe", "hist", "hist -w abc vfs_read" },
	{ "kml-probe", "reset", "reset --bogus" },
	{ "kml-probe", "call", "call 2x 0" },
	{ "kml-probe", "record", "record -d 2x vfs_read" },
	{ "kml-probe", "report", "report --top abc" },
	{ "kml-probe", "convert", "convert --format json" },
	{ "kml-ring", "stat", "stat --bogus" },
	{ "kml-ring", "produce", "produce --size 2x" },
	{ "kml-ring", "consume", "consume --seconds 2x" },
	{ "kml-filter", "list", "list --bogus" },
	{ "kml-filter", "add", "add --at 2x drop" },
	{ "kml-filter", "del", "del drop sctp" },
	{ "kml-filter", "flush", "flush --bogus" },
	{ "kml-filter", "policy", "policy maybe" },
	{ "kml-filter", "load", "load --bogus" },
	{ "kml-filter", "log", "log --count 2x" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static int has_row(const char *client, const char *cmd)
{
	for (unsigned int k = 0; k < NCOMMANDS; k++)
		if (!strcmp(commands[k].client, client) && !strcmp(commands[k].cmd, cmd))
			return 1;
	return 0;
}

/*
 * A client's commands, as its --help lists them ("  NAME ..." lines, as
 * make lint reads them), each with its own help: a new command without
 * a row in commands[] fails here, and so does one without help.
 */
TEST(every_command_helps)
{
	static const char *const ways[] = { "help %s", "%s --help", "%s -h", "-j help %s" };
	static char out[4096], err[4096], want[64], args[64];

	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		ASSERT_EQ(0, run(clients[i], "--help", out, err));
		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
			char name[32];

			if (strncmp(l, "  ", 2) || l[2] < 'a' || l[2] > 'z' ||
			    sscanf(l, " %31[a-z-]", name) != 1 ||
			    (l[2 + strlen(name)] && l[2 + strlen(name)] != ' '))
				continue;
			EXPECT_TRUE(has_row(clients[i], name))
				TH_LOG("%s %s: no row in commands[]", clients[i], name);
		}
	}
	for (unsigned int k = 0; k < NCOMMANDS; k++) {
		/* its own synopsis, not the client's: "usage: kml-x CMD" */
		snprintf(want, sizeof(want), "usage: %s %s", commands[k].client, commands[k].cmd);
		for (unsigned int w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			snprintf(args, sizeof(args), ways[w], commands[k].cmd);
			EXPECT_EQ(0, run(commands[k].client, args, out, err))
				TH_LOG("%s %s: %s", commands[k].client, args, err);
			EXPECT_TRUE(out == strstr(out, want) &&
				    (out[strlen(want)] == ' ' || out[strlen(want)] == '\n'))
				TH_LOG("%s %s: %s", commands[k].client, args, out);
			EXPECT_STREQ("", err);
		}
	}
}

/* The host has no module: "not loaded" means the words were checked too late. */
TEST(command_errors_exit_2_before_any_device)
{
	static char out[4096], err[4096], want[64], hint[64];

	for (unsigned int k = 0; k < NCOMMANDS; k++) {
		const char *c = commands[k].client;

		snprintf(want, sizeof(want), "%s: ", c);
		snprintf(hint, sizeof(hint), "(try '%s help %s')\n", c, commands[k].cmd);
		EXPECT_EQ(2, run(c, commands[k].bad, out, err))
			TH_LOG("%s %s: %s", c, commands[k].bad, err);
		EXPECT_TRUE(err == strstr(err, want)) TH_LOG("%s", err);
		EXPECT_EQ(1, lines(err)) TH_LOG("%s %s: %s", c, commands[k].bad, err);
		EXPECT_NE(NULL, strstr(err, hint)) TH_LOG("%s %s: %s", c, commands[k].bad, err);
		EXPECT_EQ(NULL, strstr(err, "not loaded")) TH_LOG("%s", err);
		EXPECT_STREQ("", out);
	}
}

/*
 * kml-filter's direction and policy words: fwd is a rule word (checked
 * before the device is opened, so a missing module is the only error),
 * and the forward policy, which the ioctls cannot set, is refused with
 * its reason before anything is opened.
 */
TEST(filter_fwd_words)
{
	static char out[4096], err[4096];

	EXPECT_EQ(1, run("kml-filter", "add drop fwd udp dport 53", out, err));
	EXPECT_NE(NULL, strstr(err, "not loaded")) TH_LOG("%s", err);
	EXPECT_EQ(1, run("kml-filter", "del accept in fwd", out, err));
	EXPECT_NE(NULL, strstr(err, "not loaded")) TH_LOG("%s", err);
	EXPECT_EQ(2, run("kml-filter", "add drop fwd fwd", out, err));
	EXPECT_NE(NULL, strstr(err, "'fwd' given twice")) TH_LOG("%s", err);
	EXPECT_EQ(2, run("kml-filter", "policy fwd maybe", out, err));
	EXPECT_NE(NULL, strstr(err, "'policy [fwd] accept'")) TH_LOG("%s", err);
	EXPECT_EQ(2, run("kml-filter", "policy drop fwd", out, err));
	/* a good forward policy goes to the family, missing here */
	EXPECT_EQ(1, run("kml-filter", "policy fwd drop", out, err));
	EXPECT_NE(NULL, strstr(err, "not loaded")) TH_LOG("%s", err);
	EXPECT_STREQ("", out);
}

/* --json after the command is the same as before it: then only the module is missing. */
TEST(json_anywhere_on_the_line)
{
	static const char *const lines_of[][2] = {
		{ "kml-stats", "demo --json" }, { "kml-sensor", "read --json" },
		{ "kml-probe", "list --json" }, { "kml-ring", "stat --json" },
		{ "kml-filter", "list --json" },
	};
	static char out[4096], err[4096];

	for (unsigned int i = 0; i < sizeof(lines_of) / sizeof(lines_of[0]); i++) {
		ASSERT_EQ(1, run(lines_of[i][0], lines_of[i][1], out, err))
			TH_LOG("%s %s: %s", lines_of[i][0], lines_of[i][1], err);
		ASSERT_NE(NULL, strstr(err, "is not loaded")) TH_LOG("%s", err);
		ASSERT_EQ(1, lines(err)) TH_LOG("%s", err);
	}
}

TEST_HARNESS_MAIN
