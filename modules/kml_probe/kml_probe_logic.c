// SPDX-License-Identifier: GPL-2.0
/*
 * kml_probe's pure logic. The filter runs in the entry handler of every
 * probed call, so it is branch-light and touches nothing but its inputs.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <stdio.h>
#include <string.h>
#endif

#include "kml_probe_logic.h"

#define KML_PROBE_FLAGS	(KML_PROBE_F_PID | KML_PROBE_F_TGID | KML_PROBE_F_ARG | \
			 KML_PROBE_F_COUNT_ONLY)

static bool kml_symbol_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':';
}

/**
 * kml_probe_check_name() - is this a plausible kernel symbol?
 * @func: the name, NUL-terminated within @len bytes
 * @len: size of the buffer holding @func
 *
 * Return: 0, or -EINVAL if empty, unterminated or not [A-Za-z0-9_.:].
 */
int kml_probe_check_name(const char *func, size_t len)
{
	size_t i;

	for (i = 0; i < len && func[i]; i++)
		if (!kml_symbol_char(func[i]))
			return -EINVAL;
	return i == 0 || i == len ? -EINVAL : 0;
}

/**
 * kml_probe_is_part() - is this a compiler-split part of a function?
 * @func: the name, NUL-terminated
 *
 * GCC moves a function's unlikely paths to "foo.cold" (or
 * "foo.isra.0.cold"), reached by a jump, never by a call: its first byte
 * is a symbol start to kallsyms, so kprobes takes it as a function entry,
 * but a kretprobe there would take whatever is on the stack for a return
 * address. Clones such as "foo.isra.0", "foo.constprop.0" and "foo.part.0"
 * are called like any function and stay allowed.
 *
 * Return: true if a '.'-separated part of @func after the first is "cold".
 */
bool kml_probe_is_part(const char *func)
{
	const char *p = func;

	while ((p = strchr(p, '.'))) {
		p++;
		if (!strncmp(p, "cold", 4) && (p[4] == '\0' || p[4] == '.'))
			return true;
	}
	return false;
}

/**
 * kml_probe_check_attach() - validate an ATTACH argument
 * @a: the argument
 *
 * Return: 0, or -EINVAL for a bad name, unknown or conflicting flags,
 * too many arguments, a filter on an argument that does not exist, too
 * large a maxactive, a non-zero reserved field, or a timing probe or an
 * argument filter on a part of a function that is not its entry (its
 * argument registers hold whatever the body left there).
 */
int kml_probe_check_attach(const struct kml_probe_attach *a)
{
	if (kml_probe_check_name(a->func, sizeof(a->func)))
		return -EINVAL;
	if ((!(a->flags & KML_PROBE_F_COUNT_ONLY) || (a->flags & KML_PROBE_F_ARG)) &&
	    kml_probe_is_part(a->func))
		return -EINVAL;
	if (a->flags & ~KML_PROBE_FLAGS || a->reserved)
		return -EINVAL;
	if ((a->flags & KML_PROBE_F_PID) && (a->flags & KML_PROBE_F_TGID))
		return -EINVAL;
	if ((a->flags & (KML_PROBE_F_PID | KML_PROBE_F_TGID)) && a->pid <= 0)
		return -EINVAL;
	if ((a->flags & KML_PROBE_F_ARG) && a->arg_index >= KML_PROBE_MAX_ARGS)
		return -EINVAL;
	if (a->nargs > KML_PROBE_MAX_ARGS || a->maxactive > KML_PROBE_MAXACTIVE_MAX)
		return -EINVAL;
	/* A plain kprobe sees no return: nothing to capture it into. */
	if ((a->flags & KML_PROBE_F_COUNT_ONLY) && (a->nargs || a->maxactive))
		return -EINVAL;
	return 0;
}

/**
 * kml_probe_elapsed() - nanoseconds from @t0 to @t1, or -1 if @t1 is earlier
 * @t0: a call's entry, ktime_get_mono_fast_ns()
 * @t1: its return, the same clock
 *
 * The NMI-safe clock is not monotonic across a timekeeping update, and
 * entry and return may read it on two CPUs: @t1 may be a little earlier.
 * Unsigned, that interval would be 2^64 minus a little.
 *
 * Return: the interval, or -1 for one that went backwards.
 */
__s64 kml_probe_elapsed(__u64 t0, __u64 t1)
{
	return t1 >= t0 ? (__s64)(t1 - t0) : -1;
}

/**
 * kml_probe_check_call() - validate a CALL argument
 * @c: the argument
 *
 * Return: 0, or -EINVAL outside the documented bounds.
 */
int kml_probe_check_call(const struct kml_probe_call *c)
{
	if (c->delay_ns > KML_PROBE_CALL_MAX_DELAY_NS ||
	    c->depth > KML_PROBE_CALL_MAX_DEPTH ||
	    c->count < 1 || c->count > KML_PROBE_CALL_MAX_COUNT)
		return -EINVAL;
	return 0;
}

/**
 * kml_probe_check_record() - validate a RECORD argument
 * @rc: the argument; its output fields are not looked at
 *
 * Return: 0, or -EINVAL for a bad name, flags or reserved bits, or a
 * descriptor below -1 (-1 is "stop").
 */
int kml_probe_check_record(const struct kml_probe_record *rc)
{
	if (kml_probe_check_name(rc->func, sizeof(rc->func)) ||
	    rc->flags || rc->reserved || rc->ring_fd < -1)
		return -EINVAL;
	return 0;
}

/**
 * kml_probe_pass() - does a call pass the probe's filters?
 * @a: the probe's settings
 * @task: is the caller the thread (%KML_PROBE_F_PID) or in the process
 *	(%KML_PROBE_F_TGID) the filter names? The caller compares struct pid
 *	pointers, which mean the same in every PID namespace.
 * @arg: the value of argument @a->arg_index (ignored without the filter)
 *
 * Return: true if the call is to be measured.
 */
bool kml_probe_pass(const struct kml_probe_attach *a, bool task, __u64 arg)
{
	if ((a->flags & (KML_PROBE_F_PID | KML_PROBE_F_TGID)) && !task)
		return false;
	if ((a->flags & KML_PROBE_F_ARG) && arg != a->arg_value)
		return false;
	return true;
}

/**
 * kml_probe_set_name() - the kml_stats set a probe publishes under
 * @func: the probed function
 * @slot: the probe's slot, for names that do not fit
 * @out: the set name
 * @len: size of @out, at least %KML_STATS_NAME_MAX + 1
 *
 * "kp.<func>" when that is a valid stats name, "kp.slot<N>" otherwise
 * (too long, or "mod:func").
 */
void kml_probe_set_name(const char *func, unsigned int slot, char *out,
			size_t len)
{
	size_t n = strlen(func);

	if (n + 3 <= 31 && !strchr(func, ':'))
		snprintf(out, len, "kp.%s", func);
	else
		snprintf(out, len, "kp.slot%u", slot);
}
