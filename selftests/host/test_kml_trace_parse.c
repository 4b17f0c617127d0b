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

/* kml_sensor:sample as 6.12 printed it before its padding was a field. */
static const char sample_format[] =
	"name: sample\nID: 1234\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned int channel;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:int value_mc;\toffset:12;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long long seq;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned char injected;\toffset:24;\tsize:1;\tsigned:0;\n\n"
	"print fmt: \"channel=%u\", REC->channel\n";

/* Bytes no field covers: the tail after an odd last field, holes, none. */
TEST(format_hidden_bytes)
{
	char *f = strdup(sample_format), *tail;

	ASSERT_EQ(7, kml_trace_format_hidden(sample_format));
	/* the same with 7 bytes of padding as a field of its own */
	tail = malloc(strlen(f) + 80);
	ASSERT_NE(NULL, tail);
	strcpy(tail, f);
	strcpy(strstr(tail, "\n\nprint"), "\n\tfield:unsigned char pad[7];\toffset:25;\tsize:7;\tsigned:0;\n\nprint fmt: x\n");
	EXPECT_EQ(0, kml_trace_format_hidden(tail));
	/* a hole: seq two bytes further on */
	strcpy(tail, f);
	memcpy(strstr(tail, "offset:16"), "offset:18", 9);
	memcpy(strstr(tail, "offset:24"), "offset:26", 9);
	EXPECT_EQ(2 + 5, kml_trace_format_hidden(tail));
	/* alignment 4 without a 64-bit field; a __data_loc counts as 4 */
	EXPECT_EQ(0, kml_trace_format_hidden(
		"\tfield:int common_type;\toffset:0;\tsize:4;\tsigned:1;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\tfield:__data_loc char[] func;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:unsigned char saddr[16];\toffset:12;\tsize:16;\tsigned:0;\n"));
	EXPECT_EQ(3, kml_trace_format_hidden(
		"\tfield:int common_type;\toffset:0;\tsize:4;\tsigned:1;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\tfield:unsigned char dir;\toffset:8;\tsize:1;\tsigned:0;\n"));
	EXPECT_EQ(-1, kml_trace_format_hidden("name: x\nprint fmt: \"\"\n"));
	EXPECT_EQ(-1, kml_trace_format_hidden("\tfield:int x;\toffset:4;\n"));
	free(tail);
	free(f);
}

TEST_HARNESS_MAIN
