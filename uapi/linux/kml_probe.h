/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_probe userspace ABI: attach latency probes to kernel functions by
 * name through ioctls on /dev/kml_probe and read their results.
 *
 * Latencies are nanoseconds in log2 histograms: bucket 0 holds 0, bucket k
 * (1..64) holds 2^(k-1) <= ns < 2^k, as in kml_stats. Structs are
 * fixed-width with explicit padding; reserved fields must be zero on input.
 *
 * ioctl magic 0xBD, numbers 0x10-0x1F (0x00-0x0F are kml_sensor's).
 */
#ifndef _UAPI_LINUX_KML_PROBE_H
#define _UAPI_LINUX_KML_PROBE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_PROBE_DEVICE	"/dev/kml_probe"
#define KML_PROBE_ABI_VERSION	1
#define KML_PROBE_MAX_FUNCS	16
#define KML_PROBE_FUNC_LEN	128	/* including the NUL */
#define KML_PROBE_MAX_ARGS	6
#define KML_PROBE_BUCKETS	65
#define KML_PROBE_MAXACTIVE_MAX	4096

/* struct kml_probe_attach.flags */
#define KML_PROBE_F_PID		0x1U	/* only calls by thread @pid */
#define KML_PROBE_F_TGID	0x2U	/* only calls by process @pid */
#define KML_PROBE_F_ARG		0x4U	/* only calls with arg @arg_index == @arg_value */
#define KML_PROBE_F_COUNT_ONLY	0x8U	/* plain kprobe: count calls, no latency */

/**
 * struct kml_probe_attach - what to probe and how (KML_PROBE_IOC_ATTACH)
 * @func: kernel function name, NUL-terminated ("mod:func" also works)
 * @flags: KML_PROBE_F_*
 * @nargs: capture the first @nargs arguments and the return value (0..6)
 * @maxactive: concurrent instances to track, 0 for the kernel's default;
 *	calls beyond it are counted in &kml_probe_result.nmissed
 * @pid: thread or process id for %KML_PROBE_F_PID / %KML_PROBE_F_TGID
 * @arg_index: argument (0-based) compared by %KML_PROBE_F_ARG
 * @reserved: zero
 * @arg_value: value the argument must have
 */
struct kml_probe_attach {
	char func[KML_PROBE_FUNC_LEN];
	__u32 flags;
	__u32 nargs;
	__u32 maxactive;
	__s32 pid;
	__u32 arg_index;
	__u32 reserved;
	__u64 arg_value;
};

/**
 * struct kml_probe_func - names a probed function (DETACH)
 * @func: kernel function name, NUL-terminated
 */
struct kml_probe_func {
	char func[KML_PROBE_FUNC_LEN];
};

/**
 * struct kml_probe_result - a probe's results (KML_PROBE_IOC_GET)
 * @func: in: the function
 * @flags: the probe's KML_PROBE_F_* flags
 * @nargs: arguments captured
 * @maxactive: instances tracked
 * @reserved: zero
 * @count: calls measured (entered and returned, passing the filters)
 * @sum_ns: sum of their latencies
 * @min_ns: shortest latency (0 if @count is 0)
 * @max_ns: longest latency
 * @nmissed: calls not measured because all @maxactive instances were busy
 *	(or, for a plain kprobe, because another probe was running)
 * @filtered: calls skipped by the PID/TGID/argument filters
 * @hist: log2 histogram of latencies in ns
 * @last_args: arguments of the most recent measured call (@nargs of them)
 * @last_ret: its return value
 */
struct kml_probe_result {
	char func[KML_PROBE_FUNC_LEN];
	__u32 flags;
	__u32 nargs;
	__u32 maxactive;
	__u32 reserved;
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 nmissed;
	__u64 filtered;
	__u64 hist[KML_PROBE_BUCKETS];
	__u64 last_args[KML_PROBE_MAX_ARGS];
	__u64 last_ret;
};

/**
 * struct kml_probe_list - the attached functions (KML_PROBE_IOC_LIST)
 * @size: in: sizeof(struct kml_probe_list) as the caller knows it
 * @count: out: entries of @funcs filled in
 * @funcs: out: attached functions, in attach order
 */
struct kml_probe_list {
	__u32 size;
	__u32 count;
	struct kml_probe_func funcs[KML_PROBE_MAX_FUNCS];
};

/**
 * struct kml_probe_call - run the built-in test target (needs CAP_SYS_ADMIN)
 * @arg: first argument passed to kml_probe_target()
 * @delay_ns: each call busy-waits this long (at most 10 ms) at each level
 * @depth: the target calls itself @depth more times, nested (at most 8)
 * @count: calls from the top (1..100000)
 *
 * kml_probe_target(arg, depth, delay_ns) returns arg + depth, so argument
 * and return-value capture can be checked exactly. A call at depth d takes
 * about (d + 1) * @delay_ns, which puts nested calls in known buckets.
 */
struct kml_probe_call {
	__u64 arg;
	__u64 delay_ns;
	__u32 depth;
	__u32 count;
};

#define KML_PROBE_IOC_MAGIC	0xBD

#define KML_PROBE_IOC_GET_VERSION _IOR(KML_PROBE_IOC_MAGIC, 0x10, __u32)
/* CAP_SYS_ADMIN: */
#define KML_PROBE_IOC_ATTACH	_IOW(KML_PROBE_IOC_MAGIC, 0x11, struct kml_probe_attach)
#define KML_PROBE_IOC_DETACH	_IOW(KML_PROBE_IOC_MAGIC, 0x12, struct kml_probe_func)
#define KML_PROBE_IOC_LIST	_IOWR(KML_PROBE_IOC_MAGIC, 0x13, struct kml_probe_list)
#define KML_PROBE_IOC_GET	_IOWR(KML_PROBE_IOC_MAGIC, 0x14, struct kml_probe_result)
/* CAP_SYS_ADMIN: zero every probe's results */
#define KML_PROBE_IOC_RESET	_IO(KML_PROBE_IOC_MAGIC, 0x15)
/* CAP_SYS_ADMIN: */
#define KML_PROBE_IOC_CALL	_IOW(KML_PROBE_IOC_MAGIC, 0x16, struct kml_probe_call)

#endif /* _UAPI_LINUX_KML_PROBE_H */
