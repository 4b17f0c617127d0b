/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_probe userspace ABI: attach latency probes to kernel functions by
 * name through ioctls on /dev/kml_probe and read their results.
 *
 * Latencies are nanoseconds in log2 histograms: bucket 0 holds 0, bucket k
 * (1..64) holds 2^(k-1) <= ns < 2^k, as in kml_stats. Structs are
 * fixed-width with explicit padding, the same on 32- and 64-bit; reserved
 * and flags fields must be zero on input.
 *
 * The structs are extensible (see modules/include/kml_ioctl.h): the size
 * encoded in the ioctl number is the caller's size of the struct. A
 * smaller size than the one published here is -EINVAL; a larger one works
 * if the extra bytes are zero (-E2BIG otherwise), and output beyond the
 * kernel's struct is zeroed.
 *
 * Who may do what: anyone who can open the device (mode 0666) may LIST
 * and GET: function names, flags, call counts, latency histograms,
 * min/max, missed and filtered counts. The captured arguments and return
 * values (kernel pointers, often) are zeroed for callers without
 * CAP_SYS_ADMIN, and %KML_PROBE_S_REDACTED says so; a filter's PID or
 * argument value is never reported. ATTACH, DETACH, RESET, CALL and
 * RECORD need CAP_SYS_ADMIN (-EPERM).
 *
 * ioctl magic 0xBD, numbers 0x10-0x1F (0x00-0x0F are kml_sensor's).
 */
#ifndef _UAPI_LINUX_KML_PROBE_H
#define _UAPI_LINUX_KML_PROBE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_PROBE_DEVICE	"/dev/kml_probe"
#define KML_PROBE_ABI_VERSION	2
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

/*
 * struct kml_probe_result.state, struct kml_probe_list_entry.state:
 * GONE: the function's module was unloaded; nothing is counted until a
 * DETACH and a new ATTACH. REDACTED: captured values withheld (zeroed),
 * the caller lacks CAP_SYS_ADMIN.
 */
#define KML_PROBE_S_GONE	0x1U
#define KML_PROBE_S_REDACTED	0x2U

/**
 * struct kml_probe_attach - what to probe and how (KML_PROBE_IOC_ATTACH:
 *	-EEXIST if @func is attached already, -ENOSPC beyond
 *	%KML_PROBE_MAX_FUNCS functions)
 * @func: kernel function name, NUL-terminated ("mod:func" also works;
 *	-ENOENT if there is no such symbol).
 *	A timing probe needs a function entry: compiler-split parts such as
 *	"foo.cold" are refused (-EINVAL); %KML_PROBE_F_COUNT_ONLY takes them,
 *	but not with %KML_PROBE_F_ARG (no arguments in the middle of a body)
 * @flags: KML_PROBE_F_*
 * @nargs: capture the first @nargs arguments and the return value (0..6)
 * @maxactive: concurrent instances to track, 0 for the kernel's default;
 *	calls beyond it are counted in &kml_probe_result.nmissed
 * @pid: thread or process id for %KML_PROBE_F_PID / %KML_PROBE_F_TGID, as
 *	the caller sees it (in its PID namespace); -ESRCH if there is none
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
 * @func: in: the function; everything else is output
 * @flags: the probe's KML_PROBE_F_* flags
 * @state: KML_PROBE_S_* bits
 * @nargs: arguments captured
 * @maxactive: instances tracked
 * @count: calls measured (entered and returned, passing the filters)
 * @sum_ns: sum of their latencies
 * @min_ns: shortest latency (0 if @count is 0)
 * @max_ns: longest latency
 * @nmissed: calls not measured: all @maxactive instances were busy, or
 *	the call came while another probe's handler ran on its CPU (a
 *	handler calling the probed function, a probe hit in an NMI)
 * @filtered: calls skipped by the PID/TGID/argument filters
 * @hist: log2 histogram of latencies in ns
 * @last_args: arguments of the most recent measured call (@nargs of them);
 *	zero without CAP_SYS_ADMIN
 * @last_ret: its return value; zero without CAP_SYS_ADMIN
 * @last_lost: measured calls whose arguments were not recorded as the
 *	last ones because another CPU (or a reader) was recording at that
 *	instant: handlers never wait
 *
 * Everything counts since ATTACH or the last reset (RESET, or "reset" /
 * "reset kp.<func>" on /proc/kmodlab/control: one and the same).
 */
struct kml_probe_result {
	char func[KML_PROBE_FUNC_LEN];
	__u32 flags;
	__u32 state;
	__u32 nargs;
	__u32 maxactive;
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 nmissed;
	__u64 filtered;
	__u64 hist[KML_PROBE_BUCKETS];
	__u64 last_args[KML_PROBE_MAX_ARGS];
	__u64 last_ret;
	__u64 last_lost;
};

/**
 * struct kml_probe_list_entry - one attached function
 * @func: its name
 * @flags: the probe's KML_PROBE_F_* flags
 * @state: KML_PROBE_S_GONE if its module was unloaded
 */
struct kml_probe_list_entry {
	char func[KML_PROBE_FUNC_LEN];
	__u32 flags;
	__u32 state;
};

/**
 * struct kml_probe_list - the attached functions (KML_PROBE_IOC_LIST)
 * @flags: in: zero
 * @count: out: entries of @funcs filled in
 * @funcs: out: attached functions, in slot order
 */
struct kml_probe_list {
	__u32 flags;
	__u32 count;
	struct kml_probe_list_entry funcs[KML_PROBE_MAX_FUNCS];
};

/**
 * struct kml_probe_call - run the test target (needs CAP_SYS_ADMIN;
 *	-ENODEV if kml_probe_target.ko is not loaded)
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

/*
 * Recording: every measured call of a function, as one record in a
 * kml_ring (uapi/linux/kml_ring.h) that the recorder maps, like perf
 * record's events in perf's ring. Each record is a struct kml_ring_rec
 * of type %KML_PROBE_REC_CALL followed by a struct kml_probe_event.
 */
#define KML_PROBE_REC_CALL	0x110	/* a kml_ring type, >= KML_RING_REC_USER_BASE */

/**
 * struct kml_probe_event - one measured call (a %KML_PROBE_REC_CALL record)
 * @start_ns: when it was entered, CLOCK_MONOTONIC
 * @duration_ns: its latency, as counted in the histogram
 * @ret: its return value
 * @args: its first @nargs arguments; the rest are zero
 * @pid: the thread that made it (thread id in the initial PID namespace)
 * @tgid: its process
 * @cpu: the CPU it returned on
 * @id: the recording's tag, &kml_probe_record.id
 * @nargs: arguments captured (the probe's &kml_probe_attach.nargs)
 * @reserved: zero
 *
 * A nested call's record comes before its caller's: records are written
 * when calls return.
 */
struct kml_probe_event {
	__u64 start_ns;
	__u64 duration_ns;
	__u64 ret;
	__u64 args[KML_PROBE_MAX_ARGS];
	__u32 pid;
	__u32 tgid;
	__u32 cpu;
	__u32 id;
	__u32 nargs;
	__u32 reserved;
};

/**
 * struct kml_probe_record - start or stop recording a function's calls
 *	(KML_PROBE_IOC_RECORD, CAP_SYS_ADMIN)
 * @func: in: an attached timing probe (-ENOENT if none; a count-only
 *	probe has no calls to record: -EINVAL)
 * @ring_fd: in: a /dev/kml_ring descriptor of the caller to record into
 *	(-EBADF if none is open, -EINVAL if it is another file; -ENODEV if
 *	kml_ring.ko is not loaded; -EBUSY if @func is already recording),
 *	or -1 to stop recording @func (-ESRCH if it is not recording: it
 *	never was, or the recording ended otherwise, and its totals are
 *	gone)
 * @id: in: a tag of the caller's choice, copied into each record's
 *	&kml_probe_event.id, so records name their function without names
 * @flags: in: zero
 * @reserved: zero
 * @written: out, when stopping: records written into the ring
 * @lost: out, when stopping: calls measured but not recorded (the ring
 *	was full, unsized or too small, or the call came while its CPU was
 *	inside a write to any kml_ring, as a probe on kml_ring's own code
 *	is, or was in an NMI while another CPU wrote to this ring).
 *	@written + @lost is every measured call while recording.
 *
 * Anyone who can read the ring reads the records, arguments and return
 * values included: they are kernel values, and recording is for
 * CAP_SYS_ADMIN, who chooses the ring. A recording ends when it is
 * stopped, when the function is detached (its totals are then lost), or
 * when the /dev/kml_probe file it was started through is closed (its
 * recorder died); until then it holds the ring (its file) and
 * kml_ring.ko.
 */
struct kml_probe_record {
	char func[KML_PROBE_FUNC_LEN];
	__s32 ring_fd;
	__u32 id;
	__u32 flags;
	__u32 reserved;
	__u64 written;
	__u64 lost;
};

#define KML_PROBE_IOC_MAGIC	0xBD

#define KML_PROBE_IOC_GET_VERSION _IOR(KML_PROBE_IOC_MAGIC, 0x10, __u32)
/* CAP_SYS_ADMIN (-ESRCH: no such PID for a filter): */
#define KML_PROBE_IOC_ATTACH	_IOW(KML_PROBE_IOC_MAGIC, 0x11, struct kml_probe_attach)
#define KML_PROBE_IOC_DETACH	_IOW(KML_PROBE_IOC_MAGIC, 0x12, struct kml_probe_func)
#define KML_PROBE_IOC_LIST	_IOWR(KML_PROBE_IOC_MAGIC, 0x13, struct kml_probe_list)
#define KML_PROBE_IOC_GET	_IOWR(KML_PROBE_IOC_MAGIC, 0x14, struct kml_probe_result)
/* CAP_SYS_ADMIN: zero every probe's results */
#define KML_PROBE_IOC_RESET	_IO(KML_PROBE_IOC_MAGIC, 0x15)
/* CAP_SYS_ADMIN: */
#define KML_PROBE_IOC_CALL	_IOW(KML_PROBE_IOC_MAGIC, 0x16, struct kml_probe_call)
/* CAP_SYS_ADMIN: */
#define KML_PROBE_IOC_RECORD	_IOWR(KML_PROBE_IOC_MAGIC, 0x17, struct kml_probe_record)

#endif /* _UAPI_LINUX_KML_PROBE_H */
