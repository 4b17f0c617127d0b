// SPDX-License-Identifier: GPL-2.0
/* Host unit tests for kml_sensor's pure logic and kml-sensor's parsing. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../modules/kml_sensor/kml_sensor_logic.h"
#include "../../userspace/kml_sensor_parse.h"

TEST(model_is_deterministic_and_bounded)
{
	struct kml_model a, b;
	unsigned int ch, i;

	for (ch = 0; ch < KML_SENSOR_MAX_CHANNELS; ch++) {
		kml_model_init(&a, 1, ch);
		kml_model_init(&b, 1, ch);
		ASSERT_NE(0, a.rng);
		for (i = 0; i < 100000; i++) {
			__s32 v = kml_model_step(&a);

			ASSERT_EQ(v, kml_model_step(&b));
			ASSERT_GE(v, a.setpoint_mc - KML_MODEL_SPAN_MC);
			ASSERT_LE(v, a.setpoint_mc + KML_MODEL_SPAN_MC);
			ASSERT_GE(v, KML_SENSOR_MIN_MC);
			ASSERT_LE(v, KML_SENSOR_MAX_MC);
		}
	}
	/* Channels and seeds give different streams. */
	kml_model_init(&a, 1, 0);
	kml_model_init(&b, 2, 0);
	ASSERT_NE(a.rng, b.rng);
	kml_model_init(&b, 1, 1);
	ASSERT_NE(a.rng, b.rng);
}

TEST(zones)
{
	struct kml_sensor_alarm a = { .flags = 0, .low_mc = 0, .high_mc = 10 };

	ASSERT_EQ(KML_SENSOR_ZONE_NORMAL, kml_zone(-100, &a));
	a.flags = KML_SENSOR_ALARM_ENABLED;
	ASSERT_EQ(KML_SENSOR_ZONE_LOW, kml_zone(-1, &a));
	ASSERT_EQ(KML_SENSOR_ZONE_NORMAL, kml_zone(0, &a));
	ASSERT_EQ(KML_SENSOR_ZONE_NORMAL, kml_zone(10, &a));
	ASSERT_EQ(KML_SENSOR_ZONE_HIGH, kml_zone(11, &a));
}

TEST(argument_checks)
{
	struct kml_sensor_alarm a = { .channel = 1, .flags = 1, .low_mc = -50000,
				      .high_mc = 150000 };
	struct kml_sensor_inject in = { .channel = 1, .value_mc = 150000 };

	ASSERT_EQ(0, kml_check_alarm(&a, 2));
	ASSERT_EQ(-EINVAL, kml_check_alarm(&a, 1));
	a.low_mc = 150001;
	ASSERT_EQ(-EINVAL, kml_check_alarm(&a, 2));
	a.low_mc = 5;
	a.high_mc = 4;
	ASSERT_EQ(-EINVAL, kml_check_alarm(&a, 2));
	a.high_mc = 5;
	ASSERT_EQ(0, kml_check_alarm(&a, 2));
	a.flags = 3;
	ASSERT_EQ(-EINVAL, kml_check_alarm(&a, 2));

	ASSERT_EQ(0, kml_check_inject(&in, 2));
	in.value_mc = 150001;
	ASSERT_EQ(-EINVAL, kml_check_inject(&in, 2));
	in.flags = KML_SENSOR_INJECT_CLEAR;
	ASSERT_EQ(0, kml_check_inject(&in, 2));
	in.reserved = 1;
	ASSERT_EQ(-EINVAL, kml_check_inject(&in, 2));
	in.reserved = 0;
	in.flags = 2;
	ASSERT_EQ(-EINVAL, kml_check_inject(&in, 2));

	ASSERT_EQ(-EINVAL, kml_check_period(9));
	ASSERT_EQ(0, kml_check_period(10));
	ASSERT_EQ(0, kml_check_period(10000));
	ASSERT_EQ(-EINVAL, kml_check_period(10001));
}

/* Reads the next record the way the driver does; -1 when up to date. */
static long long ring_read(const struct kml_evring *r, __u64 *cursor, __u64 *lost)
{
	const struct kml_sensor_event *e;
	__u64 pos;

	e = kml_evring_next(r, *cursor, &pos);
	if (!e)
		return -1;
	*lost = pos - *cursor;
	*cursor = pos + 1;
	return (long long)e->seq;
}

TEST(ring_readers_keep_their_own_place)
{
	static struct kml_evring r;
	struct kml_sensor_event e = { 0 };
	__u64 fast = 0, slow = 0, late, lost, pos;
	unsigned int i;

	ASSERT_FALSE(kml_evring_pending(&r, fast));
	ASSERT_EQ(NULL, kml_evring_next(&r, fast, &pos));
	for (i = 0; i < 10; i++) {
		e.seq = i;
		kml_evring_push(&r, &e);
		/* The fast reader keeps up, record by record. */
		ASSERT_TRUE(kml_evring_pending(&r, fast));
		ASSERT_EQ(i, ring_read(&r, &fast, &lost));
		ASSERT_EQ(0, lost);
		ASSERT_FALSE(kml_evring_pending(&r, fast));
	}
	/* A reader that opens now (cursor = head) sees only what comes next. */
	late = r.head;
	ASSERT_FALSE(kml_evring_pending(&r, late));
	e.seq = 10;
	kml_evring_push(&r, &e);
	ASSERT_EQ(10, ring_read(&r, &late, &lost));
	/* The slow reader has not read at all and still has everything. */
	for (i = 0; i <= 10; i++) {
		ASSERT_EQ(i, ring_read(&r, &slow, &lost));
		ASSERT_EQ(0, lost);
	}
	ASSERT_EQ(-1, ring_read(&r, &slow, &lost));
}

TEST(ring_overwrites_the_oldest_and_reports_the_gap)
{
	static struct kml_evring r;
	struct kml_sensor_event e = { 0 };
	__u64 cursor = 0, lost;
	unsigned int i;

	for (i = 0; i < KML_SENSOR_QUEUE_LEN + 5; i++) {
		e.seq = i;
		kml_evring_push(&r, &e);
	}
	/* The 5 oldest were overwritten: the first record says so. */
	ASSERT_EQ(5, ring_read(&r, &cursor, &lost));
	ASSERT_EQ(5, lost);
	for (i = 6; i < KML_SENSOR_QUEUE_LEN + 5; i++) {
		ASSERT_EQ(i, ring_read(&r, &cursor, &lost));
		ASSERT_EQ(0, lost);
	}
	ASSERT_EQ(-1, ring_read(&r, &cursor, &lost));
	/* Exactly full is not a loss. */
	for (i = 0; i < KML_SENSOR_QUEUE_LEN; i++) {
		e.seq = 1000 + i;
		kml_evring_push(&r, &e);
	}
	ASSERT_EQ(1000, ring_read(&r, &cursor, &lost));
	ASSERT_EQ(0, lost);
}

TEST(ring_numbers_map_to_slots_past_32_bits)
{
	static struct kml_evring r;
	struct kml_sensor_event e = { 0 };
	__u64 cursor, lost;

	r.head = cursor = 0xfffffff0ULL;
	for (int i = 0; i < 40; i++) {
		e.seq = i;
		kml_evring_push(&r, &e);
		ASSERT_EQ(i, ring_read(&r, &cursor, &lost));
		ASSERT_EQ(0, lost);
	}
	ASSERT_EQ(0x100000018ULL, cursor);
}

/* One layout for 32- and 64-bit callers: sizes and offsets are the ABI. */
TEST(uapi_layout)
{
	ASSERT_EQ(KML_SENSOR_INFO_SIZE_VER0, sizeof(struct kml_sensor_info));
	ASSERT_EQ(KML_SENSOR_READING_SIZE_VER0, sizeof(struct kml_sensor_reading));
	ASSERT_EQ(KML_SENSOR_READ_ALL_SIZE_VER0, sizeof(struct kml_sensor_read_all));
	ASSERT_EQ(KML_SENSOR_ALARM_SIZE_VER0, sizeof(struct kml_sensor_alarm));
	ASSERT_EQ(KML_SENSOR_INJECT_SIZE_VER0, sizeof(struct kml_sensor_inject));
	ASSERT_EQ(32, sizeof(struct kml_sensor_event));
	ASSERT_EQ(8, offsetof(struct kml_sensor_reading, timestamp_ns));
	ASSERT_EQ(8, offsetof(struct kml_sensor_read_all, readings));
	ASSERT_EQ(16, offsetof(struct kml_sensor_event, channel));
}

TEST(parse_celsius)
{
	static const char *const bad[] = {
		"", "-", ".5", "1.", "1.2345", "1e3", "hot", "1 ", "2001",
		"99999999", "--1", "1.2.3",
	};
	unsigned int i;
	int32_t mc;

	ASSERT_EQ(0, kml_parse_celsius("21.5", &mc));
	ASSERT_EQ(21500, mc);
	ASSERT_EQ(0, kml_parse_celsius("-3.25", &mc));
	ASSERT_EQ(-3250, mc);
	ASSERT_EQ(0, kml_parse_celsius("0.001", &mc));
	ASSERT_EQ(1, mc);
	ASSERT_EQ(0, kml_parse_celsius("+7", &mc));
	ASSERT_EQ(7000, mc);
	ASSERT_EQ(0, kml_parse_celsius("-0.1", &mc));
	ASSERT_EQ(-100, mc);
	ASSERT_EQ(0, kml_parse_celsius("2000", &mc));
	ASSERT_EQ(2000000, mc);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, kml_parse_celsius(bad[i], &mc))
			TH_LOG("'%s'", bad[i]);
	}
}

TEST(parse_uint_and_format)
{
	uint32_t v;
	char buf[24];

	ASSERT_EQ(0, kml_parse_uint("15", 15, &v));
	ASSERT_EQ(15, v);
	ASSERT_EQ(-EINVAL, kml_parse_uint("16", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("-1", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("99999999999", UINT32_MAX, &v));
	/* hexadecimal after 0x, as the README promises; never octal */
	ASSERT_EQ(0, kml_parse_uint("0x1", 15, &v));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, kml_parse_uint("0XfF", 255, &v));
	EXPECT_EQ(255, v);
	ASSERT_EQ(0, kml_parse_uint("010", 15, &v));
	EXPECT_EQ(10, v);
	ASSERT_EQ(-EINVAL, kml_parse_uint("0x10", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("0x", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("0xg", 15, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("ff", 255, &v));
	ASSERT_EQ(-EINVAL, kml_parse_uint("0x1ffffffff", UINT32_MAX, &v));
	kml_format_celsius(-3250, buf, sizeof(buf));
	ASSERT_STREQ("-3.250", buf);
	kml_format_celsius(-50, buf, sizeof(buf));
	ASSERT_STREQ("-0.050", buf);
	kml_format_celsius(150000, buf, sizeof(buf));
	ASSERT_STREQ("150.000", buf);
	kml_format_celsius(INT32_MIN, buf, sizeof(buf));
	ASSERT_STREQ("-2147483.648", buf);
}

TEST_HARNESS_MAIN
