/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kml_filter_main.c (the hook and the rule sets) offers the
 * interfaces that configure it: the ioctls in kml_filter_main.c and the
 * generic netlink family in kml_filter_nl.c. Both come down to these
 * calls, so the two can never disagree about what a change means.
 */
#ifndef KML_FILTER_H
#define KML_FILTER_H

#include <linux/types.h>
#include "../../uapi/linux/kml_filter.h"

struct net;
struct sock;
struct kml_filter_net;

struct kml_filter_net *kml_filter_pernet(const struct net *net);

/**
 * struct kml_filter_state - a namespace's filter at one moment
 * @info: what KML_FILTER_IOC_GET_INFO reports (its policy is the in/out one)
 * @mem_bytes: bytes its sets take, the current one and any being built
 * @mem_limit: what they may take (net_mem_max)
 * @policy_fwd: the forward hook's policy
 * @policy_fwd_packets: forwarded packets it decided
 * @policy_fwd_bytes: their bytes
 */
struct kml_filter_state {
	struct kml_filter_info info;
	u64 mem_bytes;
	u64 mem_limit;
	u32 policy_fwd;
	u64 policy_fwd_packets;
	u64 policy_fwd_bytes;
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
 * and @generation to the set's.
 * Return: the index of the first rule not emitted.
 */
u32 kml_filter_walk(struct kml_filter_net *fn, u32 from,
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

int kml_filter_nl_init(void);
void kml_filter_nl_exit(void);

#endif /* KML_FILTER_H */
