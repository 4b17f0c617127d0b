// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_debug, lab "debug"'s module, run as root inside the
 * test guest (scripts/guest/selftests.sh sets KMODLAB_KO_DIR).
 *
 * A lookup is a write to /sys/module/kml_debug/parameters/lookup: the
 * write's error is the lookup's (-EINVAL: no such reading), and reading
 * the file back gives the reading found last. What the module logs is
 * read from /dev/kmsg, from where the log ended before each test, with
 * dynamic debug turned on and off through its control file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../kml_selftest.h"

#define KO	"modules/kml_debug/kml_debug.ko"
#define LOOKUP	"/sys/module/kml_debug/parameters/lookup"
#define LOGLEN	65536

/* Writes @len bytes of @text to the lookup parameter: 0 or -errno. */
static int lookup(const char *text, size_t len)
{
	int fd = open(LOOKUP, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#define LOOKUP_S(s) lookup(s, strlen(s))

/* The parameter's text, newline removed, in @out. */
static int found(char *out, size_t len)
{
	int fd = open(LOOKUP, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* A query for dynamic debug: 0 or -errno. */
static int ddebug(const char *query)
{
	int fd = open("/proc/dynamic_debug/control", O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		fd = open("/sys/kernel/debug/dynamic_debug/control", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, query, strlen(query)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* How many of the log's lines hold both @a and @b. */
static int lines_with(const char *log, const char *a, const char *b, int *level)
{
	const char *p = log;
	int n = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)l, p);
		if (strstr(line, a) && strstr(line, b)) {
			n++;
			if (level)
				*level = atoi(line);
		}
		p += l + (nl != NULL);
	}
	return n;
}

FIXTURE(debug) {
	int kmsg;
	char *log;
};

FIXTURE_SETUP(debug)
{
	ASSERT_EQ(0, kml_unload("kml_debug"));
	ASSERT_EQ(0, kml_load(KO, ""));
	self->log = calloc(1, LOGLEN);
	ASSERT_NE(NULL, self->log);
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_GE(self->kmsg, 0);
	ASSERT_GE(lseek(self->kmsg, 0, SEEK_END), 0);
}

FIXTURE_TEARDOWN(debug)
{
	ddebug("module kml_debug -p");
	kml_unload("kml_debug");
	close(self->kmsg);
	free(self->log);
}

#define DRAIN() kml_kmsg_drain(self->kmsg, self->log, LOGLEN)

/* Step 1: a name the table lacks is refused (-EINVAL), whatever the name. */
TEST_F(debug, unknown_name_is_refused)
{
	static const char *const names[] = {
		"nosuch", "nosuch\n", "x", "\n", "TEMP\n", "fan fan\n",
	};
	char buf[128];
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *name = names[i];

		EXPECT_EQ(-EINVAL, LOOKUP_S(name)) TH_LOG("lookup of \"%s\"", name);
	}
	ASSERT_EQ(0, found(buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	/* the module is still there and answers */
	EXPECT_EQ(-EINVAL, LOOKUP_S("nosuch"));
	EXPECT_EQ(0, kml_unload("kml_debug"));
}

/* Step 2: each lookup is a pr_debug() call site, off until turned on. */
TEST_F(debug, lookups_are_logged_when_asked)
{
	int level = -1;

	/* off by default: the log stays quiet */
	EXPECT_EQ(-EINVAL, LOOKUP_S("quiet1\n"));
	DRAIN();
	EXPECT_EQ(0, lines_with(self->log, "kml_debug: ", "quiet1", NULL))
		TH_LOG("logged with dynamic debug off: %s", self->log);
	/* on for this module only */
	ASSERT_EQ(0, ddebug("module kml_debug +p"));
	EXPECT_EQ(-EINVAL, LOOKUP_S("loud1"));
	DRAIN();
	EXPECT_EQ(1, lines_with(self->log, "kml_debug: ", "loud1", &level))
		TH_LOG("one line with the name asked for, after \"kml_debug: \", was wanted: %s",
		       self->log);
	EXPECT_EQ(7, level) TH_LOG("at KERN_DEBUG (7), as pr_debug() logs");
	/* and off again */
	ASSERT_EQ(0, ddebug("module kml_debug -p"));
	self->log[0] = '\0';
	EXPECT_EQ(-EINVAL, LOOKUP_S("quiet2"));
	DRAIN();
	EXPECT_EQ(0, lines_with(self->log, "kml_debug: ", "quiet2", NULL))
		TH_LOG("logged after dynamic debug was turned off: %s", self->log);
}

/* Step 3: a name as echo writes it, with its newline, finds its reading. */
TEST_F(debug, lookup_finds_each_reading)
{
	static const struct { const char *asked, *want; } cases[] = {
		{ "temp\n", "temp 42" },
		{ "fan\n", "fan 1200" },
		{ "volts", "volts 12" },
		{ "temperature\n", "temperature 315" },
		{ "temp", "temp 42" },
	};
	static const char *const not_names[] = {
		"tem\n", "tempX\n", "temp\n\n", " temp\n", "temperatur\n", "fan\nx",
	};
	char buf[128];
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_EQ(0, LOOKUP_S(cases[i].asked)) TH_LOG("lookup of \"%s\"", cases[i].asked);
		ASSERT_EQ(0, found(buf, sizeof(buf)));
		EXPECT_STREQ(cases[i].want, buf) TH_LOG("lookup of \"%s\"", cases[i].asked);
	}
	for (i = 0; i < sizeof(not_names) / sizeof(not_names[0]); i++) {
		const char *name = not_names[i];

		EXPECT_EQ(-EINVAL, LOOKUP_S(name)) TH_LOG("lookup of \"%s\"", name);
	}
	/* a refused lookup leaves the last reading found */
	ASSERT_EQ(0, found(buf, sizeof(buf)));
	EXPECT_STREQ("temp 42", buf);
}

/* insmod's lookup=NAME goes through the same lookup; a bare "lookup" is refused. */
TEST_F(debug, lookup_on_the_insmod_line)
{
	char buf[128];

	ASSERT_EQ(0, kml_unload("kml_debug"));
	ASSERT_EQ(0, kml_load(KO, "lookup=fan"));
	ASSERT_EQ(0, found(buf, sizeof(buf)));
	EXPECT_STREQ("fan 1200", buf);
	ASSERT_EQ(0, kml_unload("kml_debug"));
	EXPECT_EQ(-EINVAL, kml_load(KO, "lookup"));
	EXPECT_EQ(-EINVAL, kml_load(KO, "lookup=nosuch"));
	/* and the kernel says why: the value, not the parameter, is wrong */
	DRAIN();
	EXPECT_EQ(1, lines_with(self->log, "`nosuch' invalid for parameter", "lookup", NULL))
		TH_LOG("%s", self->log);
}

TEST_HARNESS_MAIN
