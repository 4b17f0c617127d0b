// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe_target - a function of known duration for kml_probe to time.
 *
 * It lives in a module of its own, apart from kml_probe, which reaches it
 * with symbol_get() only while a CALL runs: so it can be unloaded and
 * loaded again under a probe, the way any probed module can, and the
 * tests check what kml_probe makes of that (the probe is reported gone).
 */
#include <linux/export.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/processor.h>

#include "kml_probe_target.h"

/**
 * kml_probe_target() - busy-wait, recurse, return a known value
 * @arg: returned, plus @depth
 * @depth: how many nested calls of itself to make
 * @delay_ns: busy-wait at each level, after the nested call returns
 *
 * A call at depth d takes about (d + 1) * @delay_ns. noipa keeps the
 * compiler from inlining, cloning or turning the recursion into a loop,
 * any of which would hide calls from a probe.
 *
 * Return: @arg + @depth.
 */
__attribute__((__noipa__)) u64 kml_probe_target(u64 arg, u32 depth, u64 delay_ns)
{
	u64 ret = depth ? kml_probe_target(arg, depth - 1, delay_ns) + 1 : arg;
	u64 end = ktime_get_ns() + delay_ns;

	while (ktime_get_ns() < end)
		cpu_relax();
	return ret;
}
EXPORT_SYMBOL_GPL(kml_probe_target);

/*
 * Not for cleaning up: a symbol after kml_probe_target() in the module's
 * text (.exit.text is laid out after .text, and kept for rmmod). Without
 * one, kallsyms sizes the last function of a module up to the end of the
 * text's page, and kprobes' optimizer (can_optimize()) decodes that whole
 * zero-filled tail: on 6.12, where a module's text has an allocation of
 * its own, an instruction straddling the page end oopses register_kprobe()
 * (seen with a build without gcov, whose .text ends at an odd offset).
 */
static void __exit kml_probe_target_exit(void)
{
}
module_exit(kml_probe_target_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: a function of known duration for kml_probe's tests");
