// SPDX-License-Identifier: GPL-2.0
/*
 * Parsing and validation for kml_stats, kept free of kernel headers so the
 * host unit tests and the fuzz target exercise exactly this code.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif

#include "kml_stats_logic.h"

static bool kml_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/**
 * kml_stats_name_valid() - may this be a set or counter name?
 * @name: NUL-terminated candidate
 *
 * Names end up as space-separated fields of the stats file, so they must
 * not contain spaces or anything a line-based parser would trip on.
 *
 * Return: true if @name is 1..%KML_STATS_NAME_MAX characters of
 * [A-Za-z0-9_.-].
 */
bool kml_stats_name_valid(const char *name)
{
	size_t i;

	for (i = 0; name[i]; i++) {
		if (i >= KML_STATS_NAME_MAX || !kml_name_char(name[i]))
			return false;
	}
	return i > 0;
}

/*
 * A word is a maximal run of name characters; anything else that is not a
 * single separating space makes the command malformed, so typos such as
 * "reset  demo" or "reset\tdemo" are refused rather than guessed at.
 */
static size_t kml_word(const char *buf, size_t len)
{
	size_t n = 0;

	while (n < len && kml_name_char(buf[n]))
		n++;
	return n;
}

/**
 * kml_ctl_parse() - parse one write to /proc/kmodlab/control
 * @buf: the bytes written (need not be NUL-terminated)
 * @len: number of bytes in @buf
 * @cmd: filled in on success, untouched on failure
 *
 * Accepts "reset" and "reset <set>", each optionally followed by one
 * newline. Embedded NULs, extra words and extra whitespace are rejected.
 *
 * Return: 0 on success, -EINVAL if @buf is not a valid command.
 */
int kml_ctl_parse(const char *buf, size_t len, struct kml_ctl_cmd *cmd)
{
	static const char reset[] = "reset";
	size_t n, off;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len > KML_STATS_CONTROL_MAX)
		return -EINVAL;

	n = kml_word(buf, len);
	if (n != sizeof(reset) - 1 || memcmp(buf, reset, n))
		return -EINVAL;
	if (n == len) {
		cmd->op = KML_CTL_RESET_ALL;
		cmd->set[0] = '\0';
		return 0;
	}
	if (buf[n] != ' ')
		return -EINVAL;
	off = n + 1;
	n = kml_word(buf + off, len - off);
	if (n == 0 || n > KML_STATS_NAME_MAX || off + n != len)
		return -EINVAL;
	cmd->op = KML_CTL_RESET_SET;
	memcpy(cmd->set, buf + off, n);
	cmd->set[n] = '\0';
	return 0;
}
