// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kml_stats' pure logic: the very file the module
 * builds (modules/kml_stats/kml_stats_logic.c), compiled for userspace.
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../modules/kml_stats/kml_stats_logic.h"

TEST(log2_bucket_edges)
{
	unsigned int k;

	ASSERT_EQ(0, kml_log2_bucket(0));
	ASSERT_EQ(1, kml_log2_bucket(1));
	ASSERT_EQ(2, kml_log2_bucket(2));
	ASSERT_EQ(2, kml_log2_bucket(3));
	ASSERT_EQ(3, kml_log2_bucket(4));
	ASSERT_EQ(64, kml_log2_bucket(~0ULL));
	ASSERT_EQ(64, kml_log2_bucket(1ULL << 63));
	ASSERT_EQ(63, kml_log2_bucket((1ULL << 63) - 1));
	/* Every bucket's bounds land in that bucket, and neighbours do not. */
	for (k = 0; k < KML_STATS_HIST_BUCKETS; k++) {
		ASSERT_EQ(k, kml_log2_bucket(kml_bucket_low(k)));
		ASSERT_EQ(k, kml_log2_bucket(kml_bucket_high(k)));
		if (k < 64)
			ASSERT_EQ(k + 1, kml_log2_bucket(kml_bucket_high(k) + 1));
		if (k > 0)
			ASSERT_EQ(k - 1, kml_log2_bucket(kml_bucket_low(k) - 1));
	}
}

TEST(name_validation)
{
	char longest[KML_STATS_NAME_MAX + 2];

	ASSERT_TRUE(kml_stats_name_valid("a"));
	ASSERT_TRUE(kml_stats_name_valid("kml_sensor.ch-0"));
	ASSERT_FALSE(kml_stats_name_valid(""));
	ASSERT_FALSE(kml_stats_name_valid("a b"));
	ASSERT_FALSE(kml_stats_name_valid("a/b"));
	ASSERT_FALSE(kml_stats_name_valid("a\n"));
	ASSERT_FALSE(kml_stats_name_valid("caf\xc3\xa9"));
	memset(longest, 'x', sizeof(longest));
	longest[KML_STATS_NAME_MAX] = '\0';
	ASSERT_TRUE(kml_stats_name_valid(longest));
	longest[KML_STATS_NAME_MAX] = 'x';
	longest[KML_STATS_NAME_MAX + 1] = '\0';
	ASSERT_FALSE(kml_stats_name_valid(longest));
}

static int parse(const char *s, struct kml_ctl_cmd *cmd)
{
	return kml_ctl_parse(s, strlen(s), cmd);
}

TEST(control_commands_accepted)
{
	struct kml_ctl_cmd cmd;

	ASSERT_EQ(0, parse("reset", &cmd));
	ASSERT_EQ(KML_CTL_RESET_ALL, cmd.op);
	ASSERT_EQ(0, parse("reset\n", &cmd));
	ASSERT_EQ(KML_CTL_RESET_ALL, cmd.op);
	ASSERT_EQ(0, parse("reset demo", &cmd));
	ASSERT_EQ(KML_CTL_RESET_SET, cmd.op);
	ASSERT_STREQ("demo", cmd.set);
	ASSERT_EQ(0, parse("reset kml_sensor\n", &cmd));
	ASSERT_STREQ("kml_sensor", cmd.set);
	ASSERT_EQ(0, parse("reset abcdefghijklmnopqrstuvwxyz01234", &cmd));
	ASSERT_STREQ("abcdefghijklmnopqrstuvwxyz01234", cmd.set);
}

TEST(control_commands_rejected_leave_cmd_untouched)
{
	static const char *const bad[] = {
		"", "\n", "rese", "resets", "RESET", " reset", "reset ",
		"reset  demo", "reset\tdemo", "reset demo x", "reset demo\n\n",
		"reset d/x", "reset abcdefghijklmnopqrstuvwxyz012345",
		"zero", "reset\r\n",
	};
	struct kml_ctl_cmd cmd;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&cmd, 0x5a, sizeof(cmd));
		EXPECT_EQ(-EINVAL, parse(bad[i], &cmd)) TH_LOG("'%s'", bad[i]);
		EXPECT_EQ(0x5a, ((unsigned char *)&cmd)[0]);
	}
	/* Embedded NUL: length says 10, strlen would say 5. */
	ASSERT_EQ(-EINVAL, kml_ctl_parse("reset\0demo", 10, &cmd));
	/* Longer than any command can be. */
	{
		char big[KML_STATS_CONTROL_MAX + 2];

		memset(big, 'a', sizeof(big));
		memcpy(big, "reset ", 6);
		ASSERT_EQ(-EINVAL, kml_ctl_parse(big, sizeof(big), &cmd));
	}
}

TEST_HARNESS_MAIN
