// SPDX-License-Identifier: GPL-2.0
/* Host unit tests for the clients' parser of the stats text format. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_stats_parse.h"

static int line(const char *s, struct kml_rec *r)
{
	return kml_parse_line(s, strlen(s), r);
}

TEST(counter_line)
{
	struct kml_rec r;

	ASSERT_EQ(0, line("demo c00001 counter 1", &r));
	ASSERT_STREQ("demo", r.set);
	ASSERT_STREQ("c00001", r.name);
	ASSERT_EQ(KML_REC_COUNTER, r.type);
	ASSERT_EQ(1, r.value);
	ASSERT_EQ(0, line("a b counter 18446744073709551615", &r));
	ASSERT_EQ(UINT64_MAX, r.value);
}

TEST(hist_line)
{
	struct kml_rec r;

	ASSERT_EQ(0, line("k lat hist 3 1002 0:1 1:1 10:1", &r));
	ASSERT_EQ(KML_REC_HIST, r.type);
	ASSERT_EQ(3, r.value);
	ASSERT_EQ(1002, r.sum);
	ASSERT_EQ(1, r.buckets[0]);
	ASSERT_EQ(1, r.buckets[10]);
	ASSERT_EQ(0, r.buckets[2]);
	ASSERT_EQ(0, line("k lat hist 0 0", &r));
	ASSERT_EQ(0, line("k lat hist 1 5 64:1", &r));
}

TEST(unknown_type_and_comments_skipped)
{
	struct kml_rec r;

	ASSERT_EQ(KML_PARSE_SKIP, line("# anything", &r));
	ASSERT_EQ(KML_PARSE_SKIP, line("a b gauge 5", &r));
}

TEST(malformed_lines)
{
	static const char *const bad[] = {
		"", "a", "a b", "a b counter", "a b counter x", "a b counter -1",
		"a b counter 18446744073709551616", "a b counter 1 2",
		"a b counter 1 ", "a  b counter 1", "a/x b counter 1",
		"a b hist 1", "a b hist 1 2 3", "a b hist 1 2 65:1",
		"a b hist 1 2 3:0", "a b hist 2 2 3:1 3:1", "a b hist 2 2 4:1 3:1",
		"a b hist 1 2 :1", "a b hist 1 2 1:", "a b hist 1 2 1:1 ",
		"abcdefghijklmnopqrstuvwxyz0123456 b counter 1",
	};
	struct kml_rec r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, line(bad[i], &r)) TH_LOG("'%s'", bad[i]);
}

TEST(whole_text)
{
	static const char ok[] = "# kmodlab-stats 1\na b counter 1\n"
				 "a c hist 1 1 1:1\na d newtype\n";
	struct kml_snapshot s;
	size_t bad = 0;

	ASSERT_EQ(0, kml_parse_text(ok, strlen(ok), &s, &bad));
	ASSERT_EQ(2, s.n);
	kml_snapshot_free(&s);
	ASSERT_EQ(-EPROTO, kml_parse_text("# kmodlab-stats 2\n", 18, &s, &bad));
	ASSERT_EQ(1, bad);
	ASSERT_EQ(-EINVAL, kml_parse_text("", 0, &s, &bad));
	ASSERT_EQ(-EINVAL, kml_parse_text("# kmodlab-stats 1\na b counter 1", 31,
					  &s, &bad));
	ASSERT_EQ(2, bad);
	ASSERT_EQ(-EINVAL, kml_parse_text("# kmodlab-stats 1\na b c\nx y counter z\n",
					  38, &s, &bad));
	ASSERT_EQ(3, bad);
	ASSERT_EQ(NULL, s.recs);
}

TEST(many_records_grow)
{
	size_t cap = 1 << 20, n, i, bad;
	char *t = malloc(cap);
	struct kml_snapshot s;

	ASSERT_NE(NULL, t);
	n = sprintf(t, "# kmodlab-stats 1\n");
	for (i = 0; i < 5000; i++)
		n += sprintf(t + n, "demo c%05zu counter %zu\n", i, i);
	ASSERT_EQ(0, kml_parse_text(t, n, &s, &bad));
	ASSERT_EQ(5000, s.n);
	ASSERT_EQ(4999, s.recs[4999].value);
	kml_snapshot_free(&s);
	free(t);
}

TEST_HARNESS_MAIN
