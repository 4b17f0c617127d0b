// SPDX-License-Identifier: GPL-2.0
/*
 * kml_drops - count kml_filter's drops per rule and source, from BPF.
 *
 * The filter lab wrote a kernel module; this is the other way into the
 * kernel. A BPF program is not linked into the kernel: it is bytecode the
 * kernel's verifier proves safe (every pointer checked before use, every
 * loop bounded, no memory it was not given) before the JIT compiles it.
 * It cannot crash the kernel, but it can only call the helpers BPF
 * offers, and it cannot block, allocate freely or take a lock of yours.
 *
 * This one runs on every kml_filter:verdict tracepoint hit, in the
 * context of the packet (softirq for received packets): the same place a
 * module's tracepoint probe would run. It keeps its counts in a map, a
 * kernel object that userspace reads by key (kml-bpf.c prints it).
 *
 * CO-RE: the record's layout is kml_filter's, described below with
 * preserve_access_index, so the compiler emits each field's offset as a
 * relocation that libbpf resolves at load time against the BTF of the
 * kml_filter module that is loaded (/sys/kernel/btf/kml_filter). Add a
 * field to the tracepoint and this program still reads the right bytes,
 * without being rebuilt.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "kml_bpf.h"

/* uapi/linux/kml_filter.h's KML_FILTER_DROP (that header needs the
 * kernel's linux/types.h, which vmlinux.h replaces here)
 */
#define KML_FILTER_DROP	2

/*
 * The tracepoint's record (kml_filter_trace.h), only the fields read:
 * CO-RE finds each by name in the module's BTF, wherever it is.
 */
struct trace_event_raw_verdict {
	struct trace_entry ent;
	unsigned char saddr[16];
	int rule;
	unsigned int verdict;
	unsigned char family;
} __attribute__((preserve_access_index));

/*
 * Per-CPU: each CPU counts in its own copy of the value, so two CPUs
 * dropping packets of the same pair never write the same word (no atomic,
 * no cache line bouncing); the reader adds the copies up.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, KML_BPF_DROP_KEYS);
	__type(key, struct kml_bpf_drop_key);
	__type(value, __u64);
} drops SEC(".maps");

/* drops of pairs the full map had no room for */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops_unkept SEC(".maps");

SEC("tracepoint/kml_filter/verdict")
int kml_drop(struct trace_event_raw_verdict *ctx)
{
	struct kml_bpf_drop_key key = {};
	__u64 one = 1, *n;
	__u32 zero = 0;

	/* LAB bpf 1: Count this verdict if it is a drop: in the drops map,
	 * under the key of its rule, family and source address (see
	 * kml_bpf.h), a new key starting at 1. A map lookup may find
	 * nothing, and the verifier refuses a program that could use what it
	 * did not find; an insert may fail too: with -EEXIST when another CPU
	 * inserted the same key first (count again), with -E2BIG when the map
	 * is full (count it in drops_unkept).
	 */
	if (ctx->verdict != KML_FILTER_DROP)
		return 0;
	key.rule = ctx->rule;
	key.family = ctx->family;
	/* an array is copied by address, which the verifier allows only
	 * through a helper: bpf_probe_read_kernel() at the relocated offset
	 */
	bpf_core_read(&key.saddr, sizeof(key.saddr), &ctx->saddr);

	n = bpf_map_lookup_elem(&drops, &key);
	if (n) {
		/* this CPU's copy: nothing else writes it now */
		*n += 1;
		return 0;
	}
	if (!bpf_map_update_elem(&drops, &key, &one, BPF_NOEXIST))
		return 0;
	n = bpf_map_lookup_elem(&drops, &key);
	if (!n)
		n = bpf_map_lookup_elem(&drops_unkept, &zero);
	if (n)
		*n += 1;
	/* LAB bpf 1 end */
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
