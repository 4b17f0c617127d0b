/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_filter userspace ABI: the rule format and the ioctls of
 * /dev/kml_filter, a small per-network-namespace packet filter.
 *
 * The device is one node for every namespace: a file acts on the network
 * namespace its opener was in at open() time, the way a socket belongs to
 * the namespace it was created in. Changing or listing rules needs
 * CAP_NET_ADMIN in the user namespace that owns that network namespace
 * (-EPERM otherwise).
 *
 * The filter sees packets at three points: LOCAL_IN (to this host),
 * LOCAL_OUT (from this host) and FORWARD (routed through it, when the
 * namespace forwards). Rules are evaluated in order; the first rule that
 * matches a packet and its direction decides (accept or drop); a packet
 * no rule matches gets the namespace's policy for its hook: one policy
 * for in and out, another for forwarded packets, so that a host's
 * "policy drop" does not start dropping what it routes. Every change
 * replaces the whole rule set at once, so a packet is filtered by the
 * complete old set or the complete new one, never a mix.
 *
 * Addresses are in network byte order, ports in host byte order. Every
 * struct is made of fixed-width fields with explicit padding, the same
 * for 32- and 64-bit callers; padding, reserved and flags fields must be
 * zero on input (-EINVAL otherwise) so they can carry meaning later.
 *
 * The structs of the ioctls can grow at their end: the module matches a
 * command without its size bits and takes the size encoded in the ioctl
 * number as the caller's idea of the struct. An input struct smaller than
 * its first published size (KML_FILTER_*_SIZE_VER0) is -EINVAL; a larger
 * one works if every byte past what the module knows is zero, and is
 * -E2BIG otherwise; the module zeroes the tail of a larger output struct.
 * An older caller's smaller struct means the old behaviour.
 *
 * ioctl magic 0xBD, numbers 0x30-0x3F.
 */
#ifndef _UAPI_LINUX_KML_FILTER_H
#define _UAPI_LINUX_KML_FILTER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_FILTER_DEVICE	"/dev/kml_filter"
#define KML_FILTER_ABI_VERSION	4
#define KML_FILTER_MAX_RULES	65536

/* struct kml_filter_rule.family: 0 matches both */
#define KML_FILTER_FAMILY_ANY	0
#define KML_FILTER_FAMILY_IPV4	4
#define KML_FILTER_FAMILY_IPV6	6

/* struct kml_filter_rule.proto: 0 or an IPPROTO_ number of this list */
#define KML_FILTER_PROTO_ANY	0
#define KML_FILTER_PROTO_ICMP	1
#define KML_FILTER_PROTO_TCP	6
#define KML_FILTER_PROTO_UDP	17
#define KML_FILTER_PROTO_ICMPV6	58

/*
 * struct kml_filter_rule.dir: a bit mask, at least one bit. BOTH is in
 * and out, as before the forward hook: a rule written for this host's
 * traffic does not start matching what it routes.
 */
#define KML_FILTER_DIR_IN	0x1	/* NF_INET_LOCAL_IN: to this host */
#define KML_FILTER_DIR_OUT	0x2	/* NF_INET_LOCAL_OUT: from this host */
#define KML_FILTER_DIR_FWD	0x4	/* NF_INET_FORWARD: routed through it */
#define KML_FILTER_DIR_BOTH	(KML_FILTER_DIR_IN | KML_FILTER_DIR_OUT)
#define KML_FILTER_DIR_ALL	(KML_FILTER_DIR_BOTH | KML_FILTER_DIR_FWD)

/*
 * struct kml_filter_rule.ct_state: a mask of connection states (ABI 3),
 * as conntrack sees the packet; 0 matches any packet, tracked or not.
 * The values are nftables' `ct state` bits.
 */
#define KML_FILTER_CT_INVALID		0x01	/* conntrack could not track it */
#define KML_FILTER_CT_ESTABLISHED	0x02	/* of a connection seen both ways */
#define KML_FILTER_CT_RELATED		0x04	/* related to one (ICMP errors) */
#define KML_FILTER_CT_NEW		0x08	/* starts a connection */
#define KML_FILTER_CT_UNTRACKED		0x40	/* exempted from tracking */
#define KML_FILTER_CT_ALL		0x4f

/* verdicts: rule actions and namespace policies */
#define KML_FILTER_ACCEPT	1
#define KML_FILTER_DROP		2
/*
 * A rule action only (ABI 4): log the packet and go on to the next rule,
 * as nftables' `log` statement alone does. It decides nothing, so it
 * needs a log rate.
 */
#define KML_FILTER_LOG		3

/*
 * Logging (ABI 4): a rule with a log rate writes a record for packets it
 * matches, at most @log_burst at once and @log_rate per second after
 * that (a token bucket per rule), into the kml_ring an administrator
 * attached to the namespace (KML_FILTER_CMD_LOG_ATTACH), never to the
 * kernel log. Records over the limit are not written but counted
 * (suppressed); a record the ring has no room for, or that has no ring to
 * go to, is counted lost. A rule's packet counters never depend on either.
 */
#define KML_FILTER_LOG_MAX_RATE	1000000	/* records per second, per rule */

/**
 * struct kml_filter_rule - one rule
 * @family: %KML_FILTER_FAMILY_ANY, _IPV4 or _IPV6; must be IPV4 or IPV6
 *	when an address is given
 * @proto: %KML_FILTER_PROTO_ANY, _ICMP (IPv4 only), _TCP, _UDP or
 *	_ICMPV6 (IPv6 only)
 * @dir: a mask of %KML_FILTER_DIR_IN, _OUT and _FWD (_BOTH is in and
 *	out, _ALL all three)
 * @action: %KML_FILTER_ACCEPT or %KML_FILTER_DROP, or %KML_FILTER_LOG
 *	(log and go on; needs @log_rate)
 * @src_len: source prefix length: 0 (any address) up to 32 (IPv4) or 128
 * @dst_len: destination prefix length, as @src_len
 * @pad: zero
 * @src: source prefix, network byte order; IPv4 in the first 4 bytes;
 *	every bit past @src_len must be zero
 * @dst: destination prefix, as @src
 * @sport_lo: lowest source port matched, host byte order
 * @sport_hi: highest source port matched; 0..65535 means any port. A
 *	narrower range needs @proto TCP or UDP
 * @dport_lo: lowest destination port matched
 * @dport_hi: highest destination port matched, as @sport_hi
 * @ct_state: 0, or the connection states matched (%KML_FILTER_CT_*, at
 *	least one): a rule with states makes the module take the kernel's
 *	connection tracking for the namespace, for as long as such a rule
 *	is in its set (-EOPNOTSUPP if the kernel has none). Since ABI 3;
 *	older callers' zero means any packet, as it did.
 * @pad2: zero
 * @log_burst: with @log_rate, records the rule may write at once,
 *	1..65535; zero without it
 * @log_rate: 0, the rule does not log, or records per second it may
 *	write after a burst, 1..%KML_FILTER_LOG_MAX_RATE. Since ABI 4, in
 *	what was reserved (zero, no logging, for older callers)
 *
 * Port ranges are inclusive and must not be reversed. A rule with a port
 * range never matches a packet whose ports are unknown (a non-first
 * fragment).
 */
struct kml_filter_rule {
	__u8 family;
	__u8 proto;
	__u8 dir;
	__u8 action;
	__u8 src_len;
	__u8 dst_len;
	__u8 pad[2];
	__u8 src[16];
	__u8 dst[16];
	__u16 sport_lo;
	__u16 sport_hi;
	__u16 dport_lo;
	__u16 dport_hi;
	__u8 ct_state;
	__u8 pad2;
	__u16 log_burst;
	__u32 log_rate;
};

/**
 * struct kml_filter_entry - a rule with its counters (KML_FILTER_IOC_LIST)
 * @rule: the rule
 * @packets: packets it decided, since it was added
 * @bytes: their bytes, counted from the IP header
 */
struct kml_filter_entry {
	struct kml_filter_rule rule;
	__u64 packets;
	__u64 bytes;
};

/**
 * struct kml_filter_info - the namespace's filter (KML_FILTER_IOC_GET_INFO)
 * @flags: in: zero; out: zero
 * @abi_version: %KML_FILTER_ABI_VERSION of the running module
 * @nrules: rules in the current set
 * @max_rules: %KML_FILTER_MAX_RULES
 * @policy: %KML_FILTER_ACCEPT or %KML_FILTER_DROP, the policy of the in
 *	and out hooks (the one %KML_FILTER_IOC_SET_POLICY sets; the two
 *	are always the same). The forward policy is reported over netlink
 *	only (%KML_FILTER_A_POLICY_FWD).
 * @reserved: zero
 * @generation: +1 for every change of the rule set or a policy
 * @policy_packets: packets the in/out policy decided (no rule matched),
 *	forwarded packets not included
 * @policy_bytes: their bytes
 *
 * The module reads only @flags and writes the rest (a larger caller's
 * tail, whatever it held, comes back zeroed).
 */
struct kml_filter_info {
	__u32 flags;
	__u32 abi_version;
	__u32 nrules;
	__u32 max_rules;
	__u32 policy;
	__u32 reserved;
	__u64 generation;
	__u64 policy_packets;
	__u64 policy_bytes;
};

/**
 * struct kml_filter_replace - replace the rule set (KML_FILTER_IOC_REPLACE)
 * @flags: zero
 * @count: rules at @rules, 0..%KML_FILTER_MAX_RULES
 * @policy: new in/out policy, or 0 to keep the current one; the
 *	forward policy stays
 * @reserved: zero
 * @rules: user pointer to @count struct kml_filter_rule
 *
 * All or nothing: one bad rule (or a bad pointer) leaves the old set and
 * policy in place. The new rules' counters start at zero.
 */
struct kml_filter_replace {
	__u32 flags;
	__u32 count;
	__u32 policy;
	__u32 reserved;
	__u64 rules;
};

/**
 * struct kml_filter_add - insert one rule (KML_FILTER_IOC_ADD)
 * @flags: zero
 * @position: index the rule gets (0 = first); %KML_FILTER_APPEND or any
 *	index past the end appends
 * @rule: the rule
 *
 * Rules already in the set keep their counters.
 */
struct kml_filter_add {
	__u32 flags;
	__u32 position;
	struct kml_filter_rule rule;
};

#define KML_FILTER_APPEND	0xffffffffu

/* struct kml_filter_del.flags */
#define KML_FILTER_DEL_MATCH	0x1	/* delete the first rule equal to @rule */

/**
 * struct kml_filter_del - delete one rule (KML_FILTER_IOC_DEL)
 * @flags: 0: delete the rule at @index; %KML_FILTER_DEL_MATCH: delete the
 *	first rule equal to @rule (-ENOENT if there is none)
 * @index: with @flags 0, the index to delete (-ENOENT past the end)
 * @reserved: zero
 * @rule: with %KML_FILTER_DEL_MATCH, the rule to find; zero otherwise
 */
struct kml_filter_del {
	__u32 flags;
	__u32 index;
	__u32 reserved[2];
	struct kml_filter_rule rule;
};

#define KML_FILTER_LIST_CPU	0x1	/* one CPU's counts: see @cpu */

/**
 * struct kml_filter_list - read the rules and counters (KML_FILTER_IOC_LIST)
 * @flags: in: zero, or %KML_FILTER_LIST_CPU; out: unchanged
 * @count: in: room at @entries; out: rules in the set (which may be more
 *	than were copied: call again with a larger buffer)
 * @generation: out: the generation the entries belong to
 * @entries: user pointer to @count struct kml_filter_entry
 * @cpu: with %KML_FILTER_LIST_CPU, the possible CPU whose counters the
 *	entries get: the packets and bytes that CPU counted in this
 *	generation (counts carried over from earlier ones are no CPU's);
 *	zero otherwise; out: unchanged. Shows where traffic is handled, and
 *	that each CPU counts in its own slots. A module older than this
 *	field refuses the flag (-EINVAL) or a non-zero @cpu (-E2BIG).
 * @reserved: zero
 *
 * The entries copied are one consistent snapshot of one generation.
 */
struct kml_filter_list {
	__u32 flags;
	__u32 count;
	__u64 generation;
	__u64 entries;
	__u32 cpu;
	__u32 reserved;
};

/*
 * The first published size of each struct: a smaller one is -EINVAL.
 * sizeof() is the size this header knows, which may be larger.
 */
#define KML_FILTER_INFO_SIZE_VER0	48
#define KML_FILTER_REPLACE_SIZE_VER0	24
#define KML_FILTER_ADD_SIZE_VER0	64
#define KML_FILTER_DEL_SIZE_VER0	72
#define KML_FILTER_LIST_SIZE_VER0	24
#define KML_FILTER_LIST_SIZE_VER1	32	/* @cpu */

/*
 * FLUSH and SET_POLICY take no struct: only their exact numbers are valid.
 * SET_POLICY's __u32 sets the in and out policy; the forward policy is
 * set over netlink (%KML_FILTER_A_POLICY_FWD).
 */
#define KML_FILTER_IOC_MAGIC	0xBD
#define KML_FILTER_IOC_GET_INFO	_IOWR(KML_FILTER_IOC_MAGIC, 0x30, struct kml_filter_info)
#define KML_FILTER_IOC_REPLACE	_IOW(KML_FILTER_IOC_MAGIC, 0x31, struct kml_filter_replace)
#define KML_FILTER_IOC_ADD	_IOW(KML_FILTER_IOC_MAGIC, 0x32, struct kml_filter_add)
#define KML_FILTER_IOC_DEL	_IOW(KML_FILTER_IOC_MAGIC, 0x33, struct kml_filter_del)
#define KML_FILTER_IOC_FLUSH	_IO(KML_FILTER_IOC_MAGIC, 0x34)
#define KML_FILTER_IOC_SET_POLICY _IOW(KML_FILTER_IOC_MAGIC, 0x35, __u32)
#define KML_FILTER_IOC_LIST	_IOWR(KML_FILTER_IOC_MAGIC, 0x36, struct kml_filter_list)

/*
 * Generic netlink: the family "kml_filter", version 1, the interface the
 * client uses. It acts on the namespace of the netlink socket; every
 * command but GET_INFO needs CAP_NET_ADMIN in the user namespace that
 * owns it, checked for the socket's opener and for the sender, as the
 * ioctls check it. Every command validates its attributes strictly: an
 * attribute the command does not take, or one of the wrong size or
 * value, is refused with -EINVAL and an extended ack that names it
 * (NLMSGERR_ATTR_MSG and NLMSGERR_ATTR_OFFS); a rule the module refuses
 * gets its reason and the attribute of the part that is wrong, and every
 * other refusal gets one too, with the attribute at fault or the one
 * missing (NLMSGERR_ATTR_MISS_TYPE). The
 * ioctls above stay, for the labs and for existing callers; both
 * interfaces act on the same rules.
 */
#define KML_FILTER_GENL_NAME	"kml_filter"
#define KML_FILTER_GENL_VERSION	1

/**
 * enum kml_filter_cmd - generic netlink commands
 * @KML_FILTER_CMD_UNSPEC: not a command
 * @KML_FILTER_CMD_GET_INFO: reply: %KML_FILTER_A_ABI_VERSION, _GENERATION,
 *	_NRULES, _MAX_RULES, _POLICY, _POLICY_PACKETS, _POLICY_BYTES,
 *	_MEM_BYTES, _MEM_LIMIT, _POLICY_FWD, _POLICY_FWD_PACKETS,
 *	_POLICY_FWD_BYTES. Takes no attribute, needs no privilege.
 * @KML_FILTER_CMD_NEWRULE: insert %KML_FILTER_A_RULE at
 *	%KML_FILTER_A_POSITION (0 = first; absent or past the end appends)
 * @KML_FILTER_CMD_DELRULE: delete the rule at %KML_FILTER_A_INDEX, or the
 *	first rule equal to %KML_FILTER_A_RULE (exactly one of the two);
 *	-ENOENT if there is none
 * @KML_FILTER_CMD_FLUSH: delete every rule; the policy stays
 * @KML_FILTER_CMD_SET_POLICY: set %KML_FILTER_A_POLICY (in and out),
 *	%KML_FILTER_A_POLICY_FWD (forward) or both at once; at least one
 * @KML_FILTER_CMD_GETRULE: dump: one message per rule, with
 *	%KML_FILTER_A_INDEX, _RULE, _PACKETS, _BYTES and _GENERATION. A dump
 *	that spans an update is marked NLM_F_DUMP_INTR: read it again.
 * @KML_FILTER_CMD_REPLACE_BEGIN: begin replacing the whole set with
 *	%KML_FILTER_A_NRULES rules (and %KML_FILTER_A_POLICY and
 *	%KML_FILTER_A_POLICY_FWD if given), sent
 *	in parts; reply: %KML_FILTER_A_TXN. One replace per namespace at a
 *	time (-EBUSY); the room for the new set is reserved now (-ENOSPC).
 *	It belongs to the socket that began it and ends when that socket is
 *	closed.
 * @KML_FILTER_CMD_REPLACE_RULES: the next rules of replace
 *	%KML_FILTER_A_TXN, in %KML_FILTER_A_RULES. A refused rule (or more
 *	rules than announced) ends the replace: nothing of it is committed.
 * @KML_FILTER_CMD_REPLACE_COMMIT: publish replace %KML_FILTER_A_TXN at
 *	once, with new counters. -EAGAIN if the rules or policy changed since
 *	it began, -EINVAL if rules are missing; the replace is over either way.
 * @KML_FILTER_CMD_REPLACE_ABORT: drop replace %KML_FILTER_A_TXN
 * @KML_FILTER_CMD_LOG_ATTACH: send the namespace's log records to the
 *	kml_ring open at descriptor %KML_FILTER_A_LOG_RING of the sender
 *	(-EBADF, or -EINVAL if it is no kml_ring; -ENODEV without
 *	kml_ring.ko). One ring per namespace (-EBUSY). The ring is held
 *	until LOG_DETACH or until the socket that attached it is closed.
 * @KML_FILTER_CMD_LOG_DETACH: stop sending records (-ENOENT if no ring
 *	is attached); any administrator of the namespace may
 * @__KML_FILTER_CMD_MAX: one past the last command
 */
enum kml_filter_cmd {
	KML_FILTER_CMD_UNSPEC,
	KML_FILTER_CMD_GET_INFO,
	KML_FILTER_CMD_NEWRULE,
	KML_FILTER_CMD_DELRULE,
	KML_FILTER_CMD_FLUSH,
	KML_FILTER_CMD_SET_POLICY,
	KML_FILTER_CMD_GETRULE,
	KML_FILTER_CMD_REPLACE_BEGIN,
	KML_FILTER_CMD_REPLACE_RULES,
	KML_FILTER_CMD_REPLACE_COMMIT,
	KML_FILTER_CMD_REPLACE_ABORT,
	KML_FILTER_CMD_LOG_ATTACH,
	KML_FILTER_CMD_LOG_DETACH,
	__KML_FILTER_CMD_MAX
};

/**
 * enum kml_filter_attr - top-level attributes
 * @KML_FILTER_A_UNSPEC: not an attribute
 * @KML_FILTER_A_PAD: alignment padding for the 64-bit attributes
 * @KML_FILTER_A_ABI_VERSION: u32, %KML_FILTER_ABI_VERSION (output)
 * @KML_FILTER_A_GENERATION: u64, +1 for every change (output)
 * @KML_FILTER_A_NRULES: u32, rules in the set; with REPLACE_BEGIN, in the
 *	new set, 0..%KML_FILTER_MAX_RULES
 * @KML_FILTER_A_MAX_RULES: u32, %KML_FILTER_MAX_RULES (output)
 * @KML_FILTER_A_POLICY: u8, %KML_FILTER_ACCEPT or %KML_FILTER_DROP: the
 *	policy of the in and out hooks
 * @KML_FILTER_A_POLICY_PACKETS: u64, packets the in/out policy decided
 *	(output)
 * @KML_FILTER_A_POLICY_BYTES: u64, their bytes (output)
 * @KML_FILTER_A_MEM_BYTES: u64, bytes the namespace's sets take (output)
 * @KML_FILTER_A_MEM_LIMIT: u64, what they may take, the module parameter
 *	net_mem_max (output)
 * @KML_FILTER_A_RULE: nested, enum kml_filter_rule_attr
 * @KML_FILTER_A_POSITION: u32, where NEWRULE inserts
 * @KML_FILTER_A_INDEX: u32, a rule's index, from 0
 * @KML_FILTER_A_PACKETS: u64, packets a rule decided (output)
 * @KML_FILTER_A_BYTES: u64, their bytes (output)
 * @KML_FILTER_A_TXN: u32, a replace in parts
 * @KML_FILTER_A_RULES: nested: rules, each a nest of enum
 *	kml_filter_rule_attr (of any type but 0: the client's numbering)
 * @KML_FILTER_A_POLICY_FWD: u8, %KML_FILTER_ACCEPT or %KML_FILTER_DROP:
 *	the policy of the forward hook (accept in a new namespace)
 * @KML_FILTER_A_POLICY_FWD_PACKETS: u64, forwarded packets the forward
 *	policy decided (output)
 * @KML_FILTER_A_POLICY_FWD_BYTES: u64, their bytes (output)
 * @KML_FILTER_A_LOG_RING: u32, a descriptor of the sender's (LOG_ATTACH)
 * @KML_FILTER_A_LOG_RECORDS: u64, packets in the log records written
 *	(output). Like the rules' counters, a GSO packet counts as its
 *	segments (its one record says how many), so that the three counts
 *	add up to the packets the logging rules matched.
 * @KML_FILTER_A_LOG_SUPPRESSED: u64, packets the rules' limits kept out
 *	of the log (output)
 * @KML_FILTER_A_LOG_LOST: u64, packets within the limits that no ring
 *	took: none attached, or it was full or unsized (output)
 * @KML_FILTER_A_LOG_ATTACHED: u8, 1 if a ring is attached, else 0 (output)
 * @__KML_FILTER_A_MAX: one past the last attribute
 */
enum kml_filter_attr {
	KML_FILTER_A_UNSPEC,
	KML_FILTER_A_PAD,
	KML_FILTER_A_ABI_VERSION,
	KML_FILTER_A_GENERATION,
	KML_FILTER_A_NRULES,
	KML_FILTER_A_MAX_RULES,
	KML_FILTER_A_POLICY,
	KML_FILTER_A_POLICY_PACKETS,
	KML_FILTER_A_POLICY_BYTES,
	KML_FILTER_A_MEM_BYTES,
	KML_FILTER_A_MEM_LIMIT,
	KML_FILTER_A_RULE,
	KML_FILTER_A_POSITION,
	KML_FILTER_A_INDEX,
	KML_FILTER_A_PACKETS,
	KML_FILTER_A_BYTES,
	KML_FILTER_A_TXN,
	KML_FILTER_A_RULES,
	KML_FILTER_A_POLICY_FWD,
	KML_FILTER_A_POLICY_FWD_PACKETS,
	KML_FILTER_A_POLICY_FWD_BYTES,
	KML_FILTER_A_LOG_RING,
	KML_FILTER_A_LOG_RECORDS,
	KML_FILTER_A_LOG_SUPPRESSED,
	KML_FILTER_A_LOG_LOST,
	KML_FILTER_A_LOG_ATTACHED,
	__KML_FILTER_A_MAX
};

#define KML_FILTER_A_MAX	(__KML_FILTER_A_MAX - 1)

/**
 * enum kml_filter_rule_attr - the attributes of %KML_FILTER_A_RULE
 * @KML_FILTER_RA_UNSPEC: not an attribute
 * @KML_FILTER_RA_FAMILY: u8, as &struct kml_filter_rule.family; absent: any
 * @KML_FILTER_RA_PROTO: u8, as .proto; absent: any
 * @KML_FILTER_RA_DIR: u8, as .dir; required
 * @KML_FILTER_RA_ACTION: u8, as .action; required
 * @KML_FILTER_RA_SRC: binary, the source prefix: 4 bytes for IPv4, 16 for
 *	IPv6 (the rule's family); absent: any address
 * @KML_FILTER_RA_SRC_LEN: u8, its prefix length; absent with
 *	%KML_FILTER_RA_SRC: the whole address. Without it: must be absent
 * @KML_FILTER_RA_DST: binary, the destination prefix, as _SRC
 * @KML_FILTER_RA_DST_LEN: u8, as _SRC_LEN
 * @KML_FILTER_RA_SPORT_LO: u16, lowest source port; absent: 0
 * @KML_FILTER_RA_SPORT_HI: u16, highest source port; absent: 65535
 * @KML_FILTER_RA_DPORT_LO: u16, lowest destination port; absent: 0
 * @KML_FILTER_RA_DPORT_HI: u16, highest destination port; absent: 65535
 * @KML_FILTER_RA_CT_STATE: u8, %KML_FILTER_CT_* bits; absent: any
 * @KML_FILTER_RA_LOG_RATE: u32, as .log_rate; absent: no logging
 * @KML_FILTER_RA_LOG_BURST: u16, as .log_burst; needs _LOG_RATE
 * @__KML_FILTER_RA_MAX: one past the last attribute
 *
 * A dump gives every attribute of a rule but the addresses of a rule
 * that has none. The checks are those of &struct kml_filter_rule.
 */
enum kml_filter_rule_attr {
	KML_FILTER_RA_UNSPEC,
	KML_FILTER_RA_FAMILY,
	KML_FILTER_RA_PROTO,
	KML_FILTER_RA_DIR,
	KML_FILTER_RA_ACTION,
	KML_FILTER_RA_SRC,
	KML_FILTER_RA_SRC_LEN,
	KML_FILTER_RA_DST,
	KML_FILTER_RA_DST_LEN,
	KML_FILTER_RA_SPORT_LO,
	KML_FILTER_RA_SPORT_HI,
	KML_FILTER_RA_DPORT_LO,
	KML_FILTER_RA_DPORT_HI,
	KML_FILTER_RA_CT_STATE,
	KML_FILTER_RA_LOG_RATE,
	KML_FILTER_RA_LOG_BURST,
	__KML_FILTER_RA_MAX
};

#define KML_FILTER_RA_MAX	(__KML_FILTER_RA_MAX - 1)

/*
 * Log records: kml_ring records (struct kml_ring_rec, whose timestamp is
 * when the packet was seen) of type %KML_FILTER_REC_LOG, each followed by
 * a struct kml_filter_log_event.
 */
#define KML_FILTER_REC_LOG	0x120	/* a kml_ring type, >= KML_RING_REC_USER_BASE */

/**
 * struct kml_filter_log_event - one logged packet
 * @rule: index of the rule that logged it, in the set of @generation
 * @len: its length from the IP header on (a GSO packet: all its segments)
 * @suppressed: records this rule's limit held back since its previous
 *	record, so a reader knows what it did not see
 * @generation: the rule set's generation
 * @sport: source port, host byte order (with @has_ports)
 * @dport: destination port
 * @family: %KML_FILTER_FAMILY_IPV4 or _IPV6
 * @proto: IP protocol (0 if the headers did not parse)
 * @dir: %KML_FILTER_DIR_IN, _OUT or _FWD
 * @verdict: what became of the packet: %KML_FILTER_ACCEPT or _DROP
 * @action: the rule's action (%KML_FILTER_LOG: it only logged)
 * @ct_state: its %KML_FILTER_CT_* bit, 0 if no rule looks at it
 * @has_ports: @sport and @dport are valid
 * @pad: zero
 * @packets: the packets it stands for: 1, or a GSO packet's segments,
 *	counted as the rule counts them
 * @src: source address, IPv4 in the first 4 bytes
 * @dst: destination address
 */
struct kml_filter_log_event {
	__u32 rule;
	__u32 len;
	__u64 suppressed;
	__u64 generation;
	__u16 sport;
	__u16 dport;
	__u8 family;
	__u8 proto;
	__u8 dir;
	__u8 verdict;
	__u8 action;
	__u8 ct_state;
	__u8 has_ports;
	__u8 pad;
	__u32 packets;
	__u8 src[16];
	__u8 dst[16];
};

#endif /* _UAPI_LINUX_KML_FILTER_H */
