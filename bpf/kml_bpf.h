/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs of labs/bpf (kml_drops.bpf.c, kml_lat.bpf.c) and
 * their loader (kml-bpf.c) share: the maps' keys and values, and the
 * histogram's buckets. Both sides compile it: the BPF side after
 * vmlinux.h (which defines the __u types), userspace after linux/types.h.
 * No kernel or libbpf dependency: the host unit test includes it too.
 */
#ifndef KML_BPF_H
#define KML_BPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* How many (rule, source) pairs the drops map holds; drops of a pair
 * beyond them are counted in the drops_unkept array, not lost in silence.
 */
#define KML_BPF_DROP_KEYS	1024

/**
 * struct kml_bpf_drop_key - one counter of the drops map
 * @saddr: the source address; IPv4 as ::ffff:a.b.c.d, as the tracepoint
 *	gives it
 * @rule: the rule that dropped it (from 0); -1 for the policy
 * @family: 4 or 6
 * @pad: zero, so that equal keys are equal bytes (the map hashes bytes)
 */
struct kml_bpf_drop_key {
	__u8 saddr[16];
	__s32 rule;
	__u8 family;
	__u8 pad[3];
};

/* The latency histogram: bucket 0 holds 0 ns, bucket k (1..64) holds
 * 2^(k-1) <= ns < 2^k, as kml_probe's (uapi/linux/kml_probe.h).
 */
#define KML_BPF_BUCKETS		65
/* the histogram array's slots after the buckets: calls, their sum */
#define KML_BPF_SLOT_COUNT	KML_BPF_BUCKETS
#define KML_BPF_SLOT_SUM	(KML_BPF_BUCKETS + 1)
#define KML_BPF_SLOTS		(KML_BPF_BUCKETS + 2)

/*
 * How deep one thread's calls of the timed function may nest and still be
 * timed. Not much more is useful: the kretprobe under a BPF program has
 * the kernel's default number of instances, max(10, 2 * possible CPUs),
 * for all the calls in flight at once, every thread's (kml_probe's ATTACH
 * can ask for more; libbpf's perf kprobes cannot), and a return without
 * an instance is never seen. A power of two: the index is masked with it.
 */
#define KML_BPF_MAX_DEPTH	4
/* Threads inside the timed function at once that the latency program
 * follows; a thread's entry is deleted when its outermost call returns.
 */
#define KML_BPF_THREADS		1024

/**
 * struct kml_bpf_stack - one thread's open calls of the timed function
 * @t0: their entry times, outermost first (ns, the kernel's monotonic clock)
 * @sp: their stack pointers at entry, which tell a call's return from a
 *	deeper one's whose return was never seen
 * @depth: how many are kept in @t0 and @sp
 * @deeper: calls open beyond those KML_BPF_MAX_DEPTH, not timed
 */
struct kml_bpf_stack {
	__u64 t0[KML_BPF_MAX_DEPTH];
	__u64 sp[KML_BPF_MAX_DEPTH];
	__u32 depth;
	__u32 deeper;
};

/*
 * The bucket of @ns: a binary search by shifts, because BPF has no
 * count-leading-zeros instruction and the verifier wants no loop here.
 */
static inline __u32 kml_bpf_bucket(__u64 ns)
{
	__u64 v = ns;
	__u32 k = 0;

	if (!v)
		return 0;
	if (v >> 32) {
		v >>= 32;
		k += 32;
	}
	if (v >> 16) {
		v >>= 16;
		k += 16;
	}
	if (v >> 8) {
		v >>= 8;
		k += 8;
	}
	if (v >> 4) {
		v >>= 4;
		k += 4;
	}
	if (v >> 2) {
		v >>= 2;
		k += 2;
	}
	if (v >> 1)
		k += 1;
	return k + 1;
}

#endif /* KML_BPF_H */
