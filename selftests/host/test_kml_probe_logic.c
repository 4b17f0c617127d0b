// SPDX-License-Identifier: GPL-2.0
/* Host unit tests for kml_probe's pure logic. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../modules/kml_probe/kml_probe_logic.h"

static struct kml_probe_attach base(void)
{
	struct kml_probe_attach a;

	memset(&a, 0, sizeof(a));
	strcpy(a.func, "vfs_read");
	return a;
}

TEST(attach_checks)
{
	struct kml_probe_attach a = base();

	ASSERT_EQ(0, kml_probe_check_attach(&a));
	strcpy(a.func, "kml_probe:kml_probe_target");
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	strcpy(a.func, "foo.isra.0");
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	a = base();
	a.nargs = 6;
	a.maxactive = KML_PROBE_MAXACTIVE_MAX;
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	a.nargs = 7;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.maxactive = KML_PROBE_MAXACTIVE_MAX + 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.flags = KML_PROBE_F_PID;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a.pid = 5;
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	a.flags |= KML_PROBE_F_TGID;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.flags = KML_PROBE_F_ARG;
	a.arg_index = 5;
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	a.arg_index = 6;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.flags = KML_PROBE_F_COUNT_ONLY;
	ASSERT_EQ(0, kml_probe_check_attach(&a));
	a.nargs = 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.flags = 0x10;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
	a = base();
	a.reserved = 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_attach(&a));
}

TEST(names)
{
	char buf[KML_PROBE_FUNC_LEN];

	ASSERT_EQ(-EINVAL, kml_probe_check_name("", 1));
	ASSERT_EQ(-EINVAL, kml_probe_check_name("a b", 4));
	ASSERT_EQ(-EINVAL, kml_probe_check_name("a/b", 4));
	memset(buf, 'x', sizeof(buf));
	ASSERT_EQ(-EINVAL, kml_probe_check_name(buf, sizeof(buf)));
	buf[sizeof(buf) - 1] = '\0';
	ASSERT_EQ(0, kml_probe_check_name(buf, sizeof(buf)));
}

TEST(filter)
{
	struct kml_probe_attach a = base();

	/* Without a PID/TGID filter, the task does not matter. */
	ASSERT_TRUE(kml_probe_pass(&a, false, 0));
	ASSERT_TRUE(kml_probe_pass(&a, true, 0));
	a.flags = KML_PROBE_F_PID;
	a.pid = 10;
	ASSERT_TRUE(kml_probe_pass(&a, true, 0));
	ASSERT_FALSE(kml_probe_pass(&a, false, 0));
	a.flags = KML_PROBE_F_TGID;
	ASSERT_TRUE(kml_probe_pass(&a, true, 0));
	ASSERT_FALSE(kml_probe_pass(&a, false, 0));
	a.flags |= KML_PROBE_F_ARG;
	a.arg_value = 99;
	ASSERT_TRUE(kml_probe_pass(&a, true, 99));
	ASSERT_FALSE(kml_probe_pass(&a, true, 98));
	ASSERT_FALSE(kml_probe_pass(&a, false, 99));
	a.flags = KML_PROBE_F_ARG;
	ASSERT_TRUE(kml_probe_pass(&a, false, 99));
}

/* A kretprobe needs a function entry: "foo.cold" is not one. */
TEST(cold_parts_refused_for_timing)
{
	static const char *const parts[] = {
		"foo.cold", "foo.isra.0.cold", "foo.part.0.cold", "mod:foo.cold",
		"foo.cold.3",
	};
	static const char *const entries[] = {
		"foo", "foo.isra.0", "foo.constprop.0", "foo.part.0", "foo.coldish",
		"cold", "cold.isra.0", "foo_cold", "mod:foo",
	};
	struct kml_probe_attach a;

	for (unsigned int i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		a = base();
		strcpy(a.func, parts[i]);
		EXPECT_TRUE(kml_probe_is_part(parts[i])) TH_LOG("%s", parts[i]);
		EXPECT_EQ(-EINVAL, kml_probe_check_attach(&a)) TH_LOG("%s", parts[i]);
		/* A plain kprobe there counts entries into that code: fine. */
		a.flags = KML_PROBE_F_COUNT_ONLY;
		EXPECT_EQ(0, kml_probe_check_attach(&a)) TH_LOG("%s", parts[i]);
		/*
		 * But not filtered by an argument: a jump into the middle of
		 * a function finds in the argument registers whatever its
		 * body left there.
		 */
		a.flags = KML_PROBE_F_COUNT_ONLY | KML_PROBE_F_ARG;
		EXPECT_EQ(-EINVAL, kml_probe_check_attach(&a)) TH_LOG("%s", parts[i]);
	}
	for (unsigned int i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		a = base();
		strcpy(a.func, entries[i]);
		EXPECT_FALSE(kml_probe_is_part(entries[i])) TH_LOG("%s", entries[i]);
		EXPECT_EQ(0, kml_probe_check_attach(&a)) TH_LOG("%s", entries[i]);
	}
}

/* The ABI is the same for 32- and 64-bit callers: no hidden padding. */
TEST(uapi_layout)
{
	ASSERT_EQ(160, sizeof(struct kml_probe_attach));
	ASSERT_EQ(128, sizeof(struct kml_probe_func));
	ASSERT_EQ(776, sizeof(struct kml_probe_result));
	ASSERT_EQ(136, sizeof(struct kml_probe_list_entry));
	ASSERT_EQ(8 + 16 * 136, sizeof(struct kml_probe_list));
	ASSERT_EQ(24, sizeof(struct kml_probe_call));
	ASSERT_EQ(0, offsetof(struct kml_probe_result, count) % 8);
	ASSERT_EQ(0, offsetof(struct kml_probe_attach, arg_value) % 8);
}

TEST(call_checks)
{
	struct kml_probe_call c = { .count = 1 };

	ASSERT_EQ(0, kml_probe_check_call(&c));
	c.count = 0;
	ASSERT_EQ(-EINVAL, kml_probe_check_call(&c));
	c.count = KML_PROBE_CALL_MAX_COUNT + 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_call(&c));
	c.count = 1;
	c.depth = KML_PROBE_CALL_MAX_DEPTH + 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_call(&c));
	c.depth = 0;
	c.delay_ns = KML_PROBE_CALL_MAX_DELAY_NS + 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_call(&c));
}

TEST(record_checks)
{
	struct kml_probe_record rc = { .func = "vfs_read", .ring_fd = 3 };

	ASSERT_EQ(0, kml_probe_check_record(&rc));
	rc.ring_fd = -1;	/* stop */
	ASSERT_EQ(0, kml_probe_check_record(&rc));
	rc.written = 5;		/* output fields: whatever came in */
	rc.lost = 5;
	ASSERT_EQ(0, kml_probe_check_record(&rc));
	rc.ring_fd = -2;
	ASSERT_EQ(-EINVAL, kml_probe_check_record(&rc));
	rc.ring_fd = 0;
	rc.flags = 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_record(&rc));
	rc.flags = 0;
	rc.reserved = 1;
	ASSERT_EQ(-EINVAL, kml_probe_check_record(&rc));
	rc.reserved = 0;
	rc.func[0] = '\0';
	ASSERT_EQ(-EINVAL, kml_probe_check_record(&rc));
	memset(rc.func, 'a', sizeof(rc.func));
	ASSERT_EQ(-EINVAL, kml_probe_check_record(&rc));
}

/* The record is the same for 32- and 64-bit readers: no hidden padding. */
TEST(record_layout)
{
	ASSERT_EQ(96U, sizeof(struct kml_probe_event));
	ASSERT_EQ(160U, sizeof(struct kml_probe_record));
	ASSERT_EQ(72U, offsetof(struct kml_probe_event, pid));
	ASSERT_EQ(144U, offsetof(struct kml_probe_record, written));
}

/* An interval the clock ran backwards over is -1, never 2^64 - d. */
TEST(elapsed)
{
	ASSERT_EQ(0, kml_probe_elapsed(5, 5));
	ASSERT_EQ(7, kml_probe_elapsed(5, 12));
	ASSERT_EQ(-1, kml_probe_elapsed(12, 5));
	ASSERT_EQ(-1, kml_probe_elapsed(1000000000000ULL, 999999999999ULL));
	ASSERT_EQ((__s64)1 << 62, kml_probe_elapsed(0, 1ULL << 62));
}

TEST(set_names)
{
	char out[32];

	kml_probe_set_name("vfs_read", 3, out, sizeof(out));
	ASSERT_STREQ("kp.vfs_read", out);
	kml_probe_set_name("kml_probe:kml_probe_target", 3, out, sizeof(out));
	ASSERT_STREQ("kp.slot3", out);
	kml_probe_set_name("a_function_name_of_29_chars_x", 15, out, sizeof(out));
	ASSERT_STREQ("kp.slot15", out);
	kml_probe_set_name("a_function_name_of_28_chars_", 0, out, sizeof(out));
	ASSERT_STREQ("kp.a_function_name_of_28_chars_", out);
}

TEST_HARNESS_MAIN
