// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for selftests/kml_trace.h's reading of tracefs text:
 * the guest tests' verdicts rest on it, so it must not find a field that
 * is not there, or the wrong event's line.
 */
#include "kselftest_harness.h"
#include "../kml_trace.h"

static const char trace_text[] =
	"# tracer: nop\n"
	"#\n"
	"#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
	"#              | |         |   |||||     |         |\n"
	"   kworker/1:2-38      [001] .....    11.066401: sample: channel=0 value_mc=-4082 seq=36 injected=0\n"
	"  kml-sensor-81        [000] .....    11.067267: alarm: channel=1 value_mc=21000 seq=277 zone=high low_mc=0 high_mc=1000\n"
	"   kworker/1:2-38      [001] .....    11.067289: sample: channel=12 value_mc=7090 seq=18446744073709551615 injected=1\n"
	"  sample: 3-99         [001] .....    11.1: call: func=sample: duration_ns=0x10 ret=0xffffffffffffffea nargs=0 args={}";

TEST(lines_of_one_event)
{
	const char *l;

	EXPECT_EQ(2, kml_trace_count(trace_text, "sample"));
	EXPECT_EQ(1, kml_trace_count(trace_text, "alarm"));
	EXPECT_EQ(1, kml_trace_count(trace_text, "call"));
	EXPECT_EQ(0, kml_trace_count(trace_text, "tracer"));	/* a comment */
	EXPECT_EQ(0, kml_trace_count(trace_text, "samp"));
	EXPECT_EQ(0, kml_trace_count("", "sample"));
	l = kml_trace_line(trace_text, "sample", 1);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(0, strncmp(l, "   kworker/1:2-38      [001] .....    11.067289", 47));
	EXPECT_EQ(NULL, kml_trace_line(trace_text, "sample", 2));
}

TEST(fields)
{
	const char *l = kml_trace_line(trace_text, "sample", 0);
	char s[16];
	long long v;

	ASSERT_NE(NULL, l);
	EXPECT_EQ(0, kml_trace_field(l, "value_mc", &v));
	EXPECT_EQ(-4082, v);
	EXPECT_EQ(0, kml_trace_field(l, "channel", &v));
	EXPECT_EQ(0, v);
	/* only this line's, and only whole keys */
	EXPECT_EQ(-ENOENT, kml_trace_field(l, "zone", &v));
	EXPECT_EQ(0, v);
	EXPECT_EQ(-ENOENT, kml_trace_field(l, "mc", &v));
	EXPECT_EQ(-ENOENT, kml_trace_field(l, "value", &v));
	l = kml_trace_line(trace_text, "sample", 1);
	EXPECT_EQ(0, kml_trace_field(l, "seq", &v));
	EXPECT_EQ(-1LL, v);	/* a u64 keeps its bits */
	EXPECT_EQ(0, kml_trace_field(l, "injected", &v));	/* at the end */
	EXPECT_EQ(1, v);
	l = kml_trace_line(trace_text, "alarm", 0);
	EXPECT_EQ(0, kml_trace_str(l, "zone", s, sizeof(s)));
	EXPECT_STREQ("high", s);
	EXPECT_EQ(0, kml_trace_str(l, "zone", s, 3));	/* cut to fit */
	EXPECT_STREQ("hi", s);
	EXPECT_EQ(-EINVAL, kml_trace_field(l, "zone", &v));
	l = kml_trace_line(trace_text, "call", 0);
	EXPECT_EQ(0, kml_trace_field(l, "duration_ns", &v));
	EXPECT_EQ(16, v);
	EXPECT_EQ(0, kml_trace_field(l, "ret", &v));
	EXPECT_EQ(-22, v);
	EXPECT_EQ(0, kml_trace_str(l, "func", s, sizeof(s)));
	EXPECT_STREQ("sample:", s);
}

TEST_HARNESS_MAIN
