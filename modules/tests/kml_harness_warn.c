// SPDX-License-Identifier: GPL-2.0
/*
 * kml_harness_warn - proves the VM runner catches kernel splats.
 *
 * Loading it hits a WARN_ON(); `make check` runs this in a guest of its
 * own and expects scripts/vm-run.sh to fail that run. A runner that let
 * this pass would let a real module's warning pass too.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init kml_harness_warn_init(void)
{
	WARN_ON(1);
	return 0;
}

static void __exit kml_harness_warn_exit(void)
{
}

module_init(kml_harness_warn_init);
module_exit(kml_harness_warn_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: a deliberate WARN_ON() for the harness self-test");
