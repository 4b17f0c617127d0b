// SPDX-License-Identifier: GPL-2.0
/* Host unit tests for kml_probe's pure logic. */
#include <errno.h>
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

	ASSERT_TRUE(kml_probe_pass(&a, 1, 1, 0));
	a.flags = KML_PROBE_F_PID;
	a.pid = 10;
	ASSERT_TRUE(kml_probe_pass(&a, 10, 3, 0));
	ASSERT_FALSE(kml_probe_pass(&a, 11, 10, 0));
	a.flags = KML_PROBE_F_TGID;
	ASSERT_TRUE(kml_probe_pass(&a, 11, 10, 0));
	ASSERT_FALSE(kml_probe_pass(&a, 10, 11, 0));
	a.flags |= KML_PROBE_F_ARG;
	a.arg_value = 99;
	ASSERT_TRUE(kml_probe_pass(&a, 11, 10, 99));
	ASSERT_FALSE(kml_probe_pass(&a, 11, 10, 98));
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
