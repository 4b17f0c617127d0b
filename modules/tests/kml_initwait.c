// SPDX-License-Identifier: GPL-2.0
/*
 * kml_initwait - a module whose init takes its time, for the kml_probe
 * test of a probe planted in init text while the module loads: kprobes
 * retires such a probe when the module goes live and its init text is
 * freed, and kml_probe must then list it gone.
 *
 * The init calls kml_initwait_tick() every 20 ms until the parameter
 * "release" is set (its sysfs file exists while the init runs) or a
 * minute has passed.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool release;
module_param(release, bool, 0600);
MODULE_PARM_DESC(release, "set it to let the init return");

static unsigned long ticks;

/*
 * In init text, under this name: what the test probes. noipa, as
 * noinline is not enough: the unused return value would have gcc emit
 * it as kml_initwait_tick.isra.0, which no probe by name finds.
 */
static __attribute__((__noipa__)) int __init kml_initwait_tick(unsigned long n)
{
	WRITE_ONCE(ticks, n);
	return 0;
}

static int __init kml_initwait_init(void)
{
	unsigned long n;

	for (n = 0; n < 3000 && !READ_ONCE(release); n++) {
		kml_initwait_tick(n);
		msleep(20);
	}
	return 0;
}

static void __exit kml_initwait_exit(void)
{
}

module_init(kml_initwait_init);
module_exit(kml_initwait_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: an init that waits, for a probe in init text");
