// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for the clients' shared code: the "not loaded" hint
 * names the command that works (modprobe when depmod knows the module,
 * else both insmods in their order).
 */
#include <stdio.h>
#include <string.h>
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

TEST_HARNESS_MAIN
