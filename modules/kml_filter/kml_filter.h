/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kml_filter_main.c (the hook and the rule sets) offers the
 * interfaces that configure it: the ioctls in kml_filter_main.c and the
 * generic netlink family in kml_filter_nl.c. Both come down to these
 * calls, so the two can never disagree about what a change means.
 */
#ifndef KML_FILTER_H
#define KML_FILTER_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "../../uapi/linux/kml_filter.h"

struct net;
struct sock;
struct kml_filter_net;
struct kml_filter_pkt;

struct kml_filter_net *kml_filter_pernet(const struct net *net);

/**
 * struct kml_filter_state - a namespace's filter at one moment
 * @info: what KML_FILTER_IOC_GET_INFO reports (its policy is the in/out one)
 * @mem_bytes: bytes its sets take, the current one and any being built
 * @mem_limit: what they may take (net_mem_max)
 * @policy_fwd: the forward hook's policy
 * @policy_fwd_packets: forwarded packets it decided
 * @policy_fwd_bytes: their bytes
 * @log_attached: a ring takes the log
 * @log_records: log records written
 * @log_suppressed: held back by the rules' limits
 * @log_lost: within the limits, but no ring took them
 */
struct kml_filter_state {
	struct kml_filter_info info;
	u64 mem_bytes;
	u64 mem_limit;
	u32 policy_fwd;
	u64 policy_fwd_packets;
	u64 policy_fwd_bytes;
	bool log_attached;
	u64 log_records;
	u64 log_suppressed;
	u64 log_lost;
};

void kml_filter_get_state(struct kml_filter_net *fn,
			  struct kml_filter_state *st);
int kml_filter_insert(struct kml_filter_net *fn,
		      const struct kml_filter_rule *rule, u32 position);
int kml_filter_delete(struct kml_filter_net *fn,
		      const struct kml_filter_rule *match, u32 index);
int kml_filter_flush(struct kml_filter_net *fn);
int kml_filter_set_policy(struct kml_filter_net *fn, u32 policy,
			  u32 policy_fwd);
void kml_filter_rejected(void);

/*
 * Calls @emit for each rule from @from on, with its counters and the
 * generation the set belongs to, all under the namespace's lock (one
 * generation per call), until @emit returns non-zero; then sets @nrules
 * and @generation to the set's. The counters are the rule's in all, or
 * what possible CPU @cpu counted in this generation if @cpu >= 0.
 * Return: the index of the first rule not emitted.
 */
u32 kml_filter_walk(struct kml_filter_net *fn, u32 from, int cpu,
		    int (*emit)(void *arg, u32 index,
				const struct kml_filter_entry *e, u64 generation),
		    void *arg, u32 *nrules, u64 *generation);

/* @nrules at most KML_FILTER_MAX_RULES, policies 0 or valid: the caller checks */
int kml_filter_stage_begin(struct kml_filter_net *fn, struct sock *sk,
			   u32 nrules, u32 policy, u32 policy_fwd, u32 *id);
int kml_filter_stage_rules(struct kml_filter_net *fn, struct sock *sk, u32 id,
			   const struct kml_filter_rule *rules, u32 n);
int kml_filter_stage_commit(struct kml_filter_net *fn, struct sock *sk, u32 id);
int kml_filter_stage_abort(struct kml_filter_net *fn, struct sock *sk, u32 id);
void kml_filter_stage_release(struct kml_filter_net *fn);

/* ---- logging (kml_filter_log.c) ---- */

/* A logging rule's limiter (kml_filter_log_admit()), one per rule of a set. */
struct kml_filter_logst {
	atomic64_t tat;		/* when its bucket is next full, ns */
	atomic64_t held;	/* records held back since its last one */
};

struct kml_filter_sink;

/**
 * struct kml_filter_log - a namespace's log
 * @sink: where records go (a kml_ring), or NULL; read by the hook under RCU
 * @ns_lock: the namespace's lock, which attach, detach and gone need held
 * @owner: the netlink socket that attached it, held; changed under @lock
 *	and the namespace's lock, read by the netlink close notifier
 * @lock: for @owner
 * @records: packets in records written (a GSO packet: its segments)
 * @suppressed: packets the rules' limits kept out of the log
 * @lost: packets within the limits that no ring took
 */
struct kml_filter_log {
	struct kml_filter_sink __rcu *sink;
	struct mutex *ns_lock;	/* the namespace's: changes hold it */
	struct sock *owner;
	spinlock_t lock;	/* for @owner, as the notifier reads it */
	atomic64_t records;
	atomic64_t suppressed;
	atomic64_t lost;
};

void kml_filter_log_init(struct kml_filter_log *log, struct mutex *ns_lock);
void kml_filter_log_rule(struct kml_filter_log *log,
			 struct kml_filter_logst *st,
			 const struct kml_filter_rule *r, u32 index,
			 u64 generation, const struct kml_filter_pkt *p,
			 u32 verdict, u64 packets, u64 bytes);
void kml_filter_log_carry(struct kml_filter_logst *to,
			  struct kml_filter_logst *from);
/* the namespace's lock held, for these four */
int kml_filter_log_attach(struct kml_filter_log *log, int fd, struct sock *sk);
int kml_filter_log_detach(struct kml_filter_log *log);
void kml_filter_log_gone(struct kml_filter_log *log);
bool kml_filter_log_closing(struct kml_filter_log *log);

/* the netlink commands' way in: they take the namespace's lock */
int kml_filter_log_start(struct kml_filter_net *fn, int fd, struct sock *sk);
int kml_filter_log_stop(struct kml_filter_net *fn);

int kml_filter_nl_init(void);
void kml_filter_nl_exit(void);

#endif /* KML_FILTER_H */
