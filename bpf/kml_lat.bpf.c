// SPDX-License-Identifier: GPL-2.0
/*
 * kml_lat - a latency histogram of one kernel function, from BPF: the job
 * of kml_probe (labs/probe), done the other way.
 *
 * Two programs on the function: a kprobe at its entry, which notes the
 * time, and a kretprobe at its return, which takes the difference and
 * counts it in a log2 histogram. kml_probe keeps the entry time in the
 * kretprobe's instance data, one per call in flight, which the kernel
 * hands to both handlers. A BPF kprobe and kretprobe are two programs
 * that share nothing but maps: the entry time must be kept in a map, under
 * a key that the return of the same call finds again, and nothing else's.
 *
 * The key is the thread: one thread is inside one call at a time, except
 * when the function calls itself (kml_probe_target does, @depth times),
 * so each thread gets a small stack of entry times. The entry is deleted
 * when the thread's outermost call returns, or the map would fill with
 * threads long gone.
 *
 * A return can be missed: the kretprobe has a fixed number of instances
 * for all the calls in flight, and a call that finds none is not seen
 * returning. Its entry would then stay on the stack for good, and every
 * later return of the thread would take the wrong time. So each entry
 * keeps its stack pointer: a return takes the entry whose stack frame is
 * its own, and entries of frames below it, or at or below a new call's,
 * belong to calls that have returned unseen.
 *
 * Both programs run with preemption off, and BPF runs no second tracing
 * program on a CPU while one runs there: the histogram's per-CPU slots
 * have one writer at a time, and a thread's stack only its own.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kml_bpf.h"

/* each thread's open calls: the only link from a return to its entry */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KML_BPF_THREADS);
	__type(key, __u32);
	__type(value, struct kml_bpf_stack);
} open_calls SEC(".maps");

/* KML_BPF_BUCKETS buckets, then the count and the sum (kml_bpf.h) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KML_BPF_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

/* calls not timed: too deep, no room for their thread, entry not seen */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} untimed SEC(".maps");

static __always_inline void slot_add(void *map, __u32 slot, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(map, &slot);

	if (p)
		*p += v;
}

/* the index of the newest kept call: the verifier wants it bounded */
#define TOP(s)	(((s)->depth - 1) & (KML_BPF_MAX_DEPTH - 1))

SEC("kprobe")
int BPF_KPROBE(kml_enter)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sp = PT_REGS_SP(ctx);
	struct kml_bpf_stack *s;
	int i;

	/* LAB bpf 2: Note when this call began, and where its stack frame
	 * is (its stack pointer at entry), on the stack of this thread's
	 * open calls in open_calls, creating the thread's entry the first
	 * time. A kept call whose stack pointer is at or below this one's
	 * has returned unseen (a return is missed when the kretprobe has no
	 * instance left): drop it, as untimed. A call nested deeper than
	 * KML_BPF_MAX_DEPTH is counted in deeper, so the returns pair up,
	 * but not timed.
	 */
	s = bpf_map_lookup_elem(&open_calls, &tid);
	if (!s) {
		struct kml_bpf_stack fresh = {};

		if (bpf_map_update_elem(&open_calls, &tid, &fresh, BPF_NOEXIST))
			return 0;	/* the map is full: the return counts it */
		s = bpf_map_lookup_elem(&open_calls, &tid);
		if (!s)
			return 0;
	}
	for (i = 0; i < KML_BPF_MAX_DEPTH && s->depth && s->sp[TOP(s)] <= sp; i++) {
		s->depth--;
		s->deeper = 0;		/* nested in a call that returned */
		slot_add(&untimed, 0, 1);
	}
	if (s->depth < KML_BPF_MAX_DEPTH && !s->deeper) {
		s->t0[s->depth & (KML_BPF_MAX_DEPTH - 1)] = bpf_ktime_get_ns();
		s->sp[s->depth & (KML_BPF_MAX_DEPTH - 1)] = sp;
		s->depth++;
	} else {
		s->deeper++;
	}
	/* LAB bpf 2 end */
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(kml_exit)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	/* the return took its address off the stack: sp is the entry's + 8 */
	__u64 sp = PT_REGS_SP(ctx) - 8;
	struct kml_bpf_stack *s;
	__u64 ns;
	int i;

	/* LAB bpf 2: Time the call that returns: the kept call whose stack
	 * pointer is this one's. Kept calls nested deeper (below it) returned
	 * unseen: drop them, as untimed. Count the call in the histogram
	 * (its bucket, the count and the sum), or in untimed if it was not
	 * kept (too deep, or entered before we attached), and delete the
	 * thread's entry once nothing of it is open.
	 */
	s = bpf_map_lookup_elem(&open_calls, &tid);
	if (!s) {
		/* entered before we attached, or no room for the thread */
		slot_add(&untimed, 0, 1);
		return 0;
	}
	if (s->deeper) {
		s->deeper--;
		slot_add(&untimed, 0, 1);
		return 0;
	}
	for (i = 0; i < KML_BPF_MAX_DEPTH && s->depth && s->sp[TOP(s)] < sp; i++) {
		s->depth--;
		slot_add(&untimed, 0, 1);
	}
	if (s->depth && s->sp[TOP(s)] == sp) {
		ns = now - s->t0[TOP(s)];
		s->depth--;
		slot_add(&hist, kml_bpf_bucket(ns), 1);
		slot_add(&hist, KML_BPF_SLOT_COUNT, 1);
		slot_add(&hist, KML_BPF_SLOT_SUM, ns);
	} else {
		slot_add(&untimed, 0, 1);
	}
	if (!s->depth)
		bpf_map_delete_elem(&open_calls, &tid);
	/* LAB bpf 2 end */
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
