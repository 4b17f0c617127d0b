// SPDX-License-Identifier: GPL-2.0
/*
 * kml_debug - a module to debug: an oops to decode, dynamic debug, gdb.
 *
 * When kernel code dereferences a pointer to nothing, the CPU faults and
 * the kernel prints an oops: what it could not do ("BUG: kernel NULL
 * pointer dereference, address: 0000000000000000"), the instruction that
 * did it ("RIP: 0010:strcmp+0x10/0x30", a function, an offset into it and
 * its length), the registers, and the call trace that led there, with
 * "[kml_debug]" after the functions of a module. The task that was
 * running dies, the kernel is tainted 'D' and goes on, often in a state
 * nobody should trust: on a test machine, reboot. The trace is only as
 * good as the unwinder that walked the stack: with ORC (the test kernel's)
 * every frame is known; with the guessing unwinder a distribution's
 * minimal kernel may use, frames marked "?" may be stale values that
 * merely look like return addresses. Offsets become source lines with the
 * module's debug info: scripts/faddr2line kml_debug.ko func+0x1c/0x60,
 * or a whole oops through scripts/decode_stacktrace.sh (`make decode`).
 *
 * pr_debug() is the kernel's debugging printk: compiled in but off, each
 * call site a switch in /proc/dynamic_debug/control that root turns on
 * and off while the module runs ("module kml_debug +p"), so a driver can
 * keep its debugging messages at no cost until someone needs them.
 *
 * A debugger sees the rest: QEMU's gdb stub stops the whole guest, and the
 * kernel's gdb scripts (lx-symbols) load a module's symbols at the
 * addresses it was loaded at, so a breakpoint in a module function stops
 * every CPU when any of them gets there (`make vm GDB=1`, `make gdb`).
 *
 * The module itself is small: a table of named readings, looked up by
 * writing a name to /sys/module/kml_debug/parameters/lookup; reading the
 * file gives the reading found last.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/string.h>
#include <linux/sysfs.h>

struct kml_debug_item {
	const char *name;
	int value;
};

/* The table ends at the entry whose name is NULL. */
static const struct kml_debug_item kml_debug_items[] = {
	{ "temp", 42 },
	{ "fan", 1200 },
	{ "volts", 12 },
	{ "temperature", 315 },
	{ }
};

/*
 * The reading found last, or NULL. The kernel calls a parameter's set and
 * get with the module's parameter lock held, so they never race.
 */
static const struct kml_debug_item *found;

/* Is @asked, as a user wrote it, the name @item? */
static bool kml_debug_is(const char *item, const char *asked)
{
	/* LAB debug 3: what a user writes to a sysfs file is what `echo`
	 * sent, newline and all: "temp\n" must find "temp". Compare so that
	 * one trailing newline does not count, and nothing else is ignored
	 * ("tem" and "tempX" are not "temp"). The kernel has a helper for
	 * exactly this; lib/string.c is where to look.
	 */
	return sysfs_streq(item, asked);
	/* LAB debug 3 end: return !strcmp(item, asked); */
}

/* The reading named @name, or NULL if there is none. */
static const struct kml_debug_item *kml_debug_find(const char *name)
{
	const struct kml_debug_item *it = kml_debug_items;

	/* LAB debug 1: this lookup oopses. Load the module, write a name to
	 * the parameter, and read the oops (dmesg) before you read this
	 * code: which instruction faulted, in which function, called from
	 * where? Decode the trace to source lines (`make decode`, or
	 * faddr2line on your kml_debug.ko), then fix the lookup so that a
	 * name the table does not have is "none found", not a crash.
	 */
	for (; it->name; it++)
		if (kml_debug_is(it->name, name))
			return it;
	return NULL;
	/* LAB debug 1 end: while (!kml_debug_is(it->name, name)) it++; return it; */
}

static int kml_debug_lookup_set(const char *val, const struct kernel_param *kp)
{
	/* the kernel refuses a bare `insmod kml_debug.ko lookup` before this */
	const struct kml_debug_item *it = kml_debug_find(val);

	/* LAB debug 2: say what each lookup was asked and what it found,
	 * with a message that costs nothing until root turns it on with
	 * dynamic debug (not pr_info(): the log of a machine doing lookups
	 * all day is not the place). Show the name exactly as it arrived,
	 * between quotes: what is in it is the next step's clue.
	 */
	pr_debug("lookup \"%s\": %s\n", val, it ? it->name : "no such reading");
	/* LAB debug 2 end */
	/*
	 * -EINVAL, as for any value a parameter does not take: the kernel
	 * then says "`nosuch' invalid for parameter `lookup'" at insmod,
	 * where -ENOENT would read "Unknown parameter".
	 */
	if (!it)
		return -EINVAL;
	found = it;
	return 0;
}

static int kml_debug_lookup_get(char *buf, const struct kernel_param *kp)
{
	if (!found)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%s %d\n", found->name, found->value);
}

static const struct kernel_param_ops kml_debug_lookup_ops = {
	.set	= kml_debug_lookup_set,
	.get	= kml_debug_lookup_get,
};

module_param_cb(lookup, &kml_debug_lookup_ops, NULL, 0644);
MODULE_PARM_DESC(lookup, "write a reading's name to look it up (-EINVAL if there is none); read: the reading found last");

static int __init kml_debug_init(void)
{
	return 0;
}

static void __exit kml_debug_exit(void)
{
}

module_init(kml_debug_init);
module_exit(kml_debug_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: a module to debug - an oops to decode, dynamic debug, gdb");
