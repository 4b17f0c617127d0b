// SPDX-License-Identifier: GPL-2.0
/*
 * kml_hello - your first kernel module: hello, parameters, the kernel log.
 *
 * A module is an object file the running kernel links into itself. insmod
 * hands the file to finit_module(2); the kernel checks it, links it, sets
 * its parameters from the insmod command line, then calls the function
 * named by module_init(). If that function returns a negative errno the
 * load fails with that error (insmod prints it) and the module is freed
 * again; 0 means the module is now live, listed in /proc/modules and
 * /sys/module/kml_hello/. rmmod calls delete_module(2), which runs the
 * module_exit() function and frees the module: a module with an init
 * function but no exit function cannot be unloaded at all. __init code is
 * thrown away once init has run; __exit code is left out of a kernel that
 * has the module built in.
 *
 * A module talks to the administrator through the kernel log: pr_info()
 * and friends are printk() at a log level, prefixed here by pr_fmt() with
 * the module's name; `dmesg` (or reading /dev/kmsg) shows them.
 *
 * Module parameters are variables the administrator sets at load time
 * (`insmod kml_hello.ko greeting=Hi count=3`) and reads, or writes, later
 * under /sys/module/kml_hello/parameters/. The kernel parses the text into
 * the declared type and refuses what does not parse, before init runs;
 * whether a well-formed value makes sense is the module's to check. A
 * writable parameter gets a set callback (struct kernel_param_ops) that
 * validates each new value, on the insmod command line and in sysfs alike.
 *
 * MODULE_LICENSE(), MODULE_AUTHOR(), MODULE_DESCRIPTION() and
 * MODULE_PARM_DESC() go into the .modinfo section that `modinfo` prints.
 * The license matters: a GPL-compatible one gives access to the symbols
 * exported with EXPORT_SYMBOL_GPL(), any other taints the kernel ('P'),
 * and modpost refuses to build a module that has none. A module built
 * outside the kernel tree, like this one, taints the kernel too ('O',
 * bit 12 of /proc/sys/kernel/tainted, and /sys/module/kml_hello/taint):
 * not an error, a note for whoever reads a later crash report.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/stringify.h>

/* The largest count and goodbyes: a module must not flood the log. */
#define KML_HELLO_MAX	10

/*
 * The module's settings, with their defaults. A value given to insmod is
 * stored here before kml_hello_init() runs.
 */
static char *greeting = "Hello";	/* the word the module greets with */
static int count = 1;			/* how many greetings on load */
static unsigned int goodbyes = 1;	/* how many goodbyes on unload */

/* LAB hello 2: make greeting (a charp: a string) and count (an int) module
 * parameters with module_param(), both read-only for everyone in sysfs
 * (0444), and describe each with MODULE_PARM_DESC() so modinfo shows what
 * they do.
 */
module_param(greeting, charp, 0444);
MODULE_PARM_DESC(greeting, "the word to greet the world with (default \"Hello\")");
module_param(count, int, 0444);
MODULE_PARM_DESC(count, "how many times to greet on load, 1.."
		 __stringify(KML_HELLO_MAX) " (default 1)");
/* LAB hello 2 end */

/* LAB hello 4: make goodbyes a parameter root can change at any time
 * (0644) with module_param_cb() and a struct kernel_param_ops of your own:
 * its .set parses the text with kstrtouint() and refuses anything outside
 * 1..KML_HELLO_MAX with -EINVAL (the value stays as it was), its .get can
 * be the kernel's param_get_uint(). The same .set checks goodbyes= on the
 * insmod command line, before init runs. Describe it with MODULE_PARM_DESC()
 * like the others.
 */
static int goodbyes_set(const char *val, const struct kernel_param *kp)
{
	unsigned int *goodbyes_p = kp->arg;
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 10, &n);
	if (ret)
		return ret;
	if (n < 1 || n > KML_HELLO_MAX)
		return -EINVAL;
	pr_info("goodbyes: %u -> %u\n", *goodbyes_p, n);
	/* The exit function may read it at the same time: one plain store. */
	WRITE_ONCE(*goodbyes_p, n);
	return 0;
}

static const struct kernel_param_ops goodbyes_ops = {
	.set	= goodbyes_set,
	.get	= param_get_uint,
};

module_param_cb(goodbyes, &goodbyes_ops, &goodbyes, 0644);
MODULE_PARM_DESC(goodbyes, "how many times to say goodbye on unload, 1.."
		 __stringify(KML_HELLO_MAX) " (default 1, writable at runtime)");
/* LAB hello 4 end */

static int __init kml_hello_init(void)
{
	int i;

	/* LAB hello 3: the kernel has parsed the parameters, but only the
	 * module knows which values make sense: refuse a count outside
	 * 1..KML_HELLO_MAX and an empty greeting, each with a pr_err() saying
	 * why and -EINVAL, so insmod fails and the module is not loaded.
	 */
	if (count < 1 || count > KML_HELLO_MAX) {
		pr_err("count=%d: must be 1..%d\n", count, KML_HELLO_MAX);
		return -EINVAL;
	}
	if (!greeting[0]) {
		pr_err("greeting must not be empty\n");
		return -EINVAL;
	}
	/* LAB hello 3 end */

	/* LAB hello 1: say hello: print "<greeting>, world! (<i>/<count>)"
	 * count times with pr_info(), then return 0: the module is loaded.
	 */
	for (i = 1; i <= count; i++)
		pr_info("%s, world! (%d/%d)\n", greeting, i, count);
	return 0;
	/* LAB hello 1 end: return 0; */
}

static void __exit kml_hello_exit(void)
{
	/* Read once: root may be writing goodbyes in sysfs right now. */
	unsigned int i, n = READ_ONCE(goodbyes);

	/* LAB hello 1: say goodbye: print "Goodbye, world! (<i>/<n>)" n times
	 * with pr_info().
	 */
	for (i = 1; i <= n; i++)
		pr_info("Goodbye, world! (%u/%u)\n", i, n);
	/* LAB hello 1 end */
}

module_init(kml_hello_init);
module_exit(kml_hello_exit);

/* modpost refuses a module without a license. */
MODULE_LICENSE("GPL");
/* LAB hello 1: tell modinfo who wrote the module and what it is for, with
 * MODULE_AUTHOR() and MODULE_DESCRIPTION().
 */
MODULE_AUTHOR("kmodlab");
MODULE_DESCRIPTION("kmodlab: your first module - init/exit, parameters, the kernel log");
/* LAB hello 1 end */
