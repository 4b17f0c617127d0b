// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring_apitest - writes records through kml_ring's exported API on
 * load, as another kmodlab module would: @records records of type
 * KML_RING_REC_USER_BASE + 1 whose payload is their index (a u64) followed
 * by index-derived bytes, to every open ring. Bad calls are checked too;
 * a failed check fails the load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "../include/kml_ring.h"

static unsigned int records = 100;
module_param(records, uint, 0444);
MODULE_PARM_DESC(records, "records to write (default 100)");

static int __init kml_ring_apitest_init(void)
{
	u64 payload[5];
	unsigned int i, k;

	if (kml_ring_write(KML_RING_REC_USER_BASE - 1, payload, 8) != -EINVAL ||
	    kml_ring_write(KML_RING_REC_USER_BASE, payload,
			   KML_RING_MAX_PAYLOAD + 1) != -EINVAL) {
		pr_err("bad arguments were accepted\n");
		return -EINVAL;
	}
	for (i = 0; i < records; i++) {
		payload[0] = i;
		for (k = 1; k < ARRAY_SIZE(payload); k++)
			payload[k] = i * 1000 + k;
		/* 3 + i % 3 words: sizes that are not all the same. */
		if (kml_ring_write(KML_RING_REC_USER_BASE + 1, payload,
				   (3 + i % 3) * sizeof(u64)) < 0)
			return -EIO;
	}
	return 0;
}

static void __exit kml_ring_apitest_exit(void)
{
}

module_init(kml_ring_apitest_init);
module_exit(kml_ring_apitest_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: writes records through the kml_ring API");
