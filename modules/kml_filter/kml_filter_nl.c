// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's generic netlink family: the same changes as the ioctls,
 * the way network configuration reaches the kernel today.
 *
 * A generic netlink family is a name the kernel resolves to a netlink
 * message type (CTRL_CMD_GETFAMILY), plus commands whose attributes the
 * core checks against a policy before the handler runs: a handler sees
 * only attributes of the right type and size, and strict validation
 * refuses any attribute a command does not take. What the policy cannot
 * say (a rule's parts that depend on each other) the handler checks, and
 * says what is wrong in an extended ack: a message and the attribute it
 * is about, which the client maps back to the word the user typed. The
 * socket's namespace is the namespace acted on, and GENL_UNS_ADMIN_PERM
 * asks for CAP_NET_ADMIN in the user namespace that owns it, of both the
 * socket's opener and the sender, as the ioctls do. A listing is a dump:
 * it is read in as many messages as it takes, each filled under the
 * namespace's lock, and a change between two of them marks the next one
 * NLM_F_DUMP_INTR so the reader knows to start again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/math64.h>
#include <linux/module.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "kml_filter.h"
#include "kml_filter_logic.h"

static const struct nla_policy kml_filter_rule_policy[KML_FILTER_RA_MAX + 1] = {
	[KML_FILTER_RA_FAMILY]	= { .type = NLA_U8 },
	[KML_FILTER_RA_PROTO]	= { .type = NLA_U8 },
	[KML_FILTER_RA_DIR]	= NLA_POLICY_MASK(NLA_U8, KML_FILTER_DIR_ALL),
	[KML_FILTER_RA_ACTION]	= NLA_POLICY_RANGE(NLA_U8, KML_FILTER_ACCEPT,
						   KML_FILTER_LOG),
	[KML_FILTER_RA_SRC]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KML_FILTER_RA_SRC_LEN]	= NLA_POLICY_MAX(NLA_U8, 128),
	[KML_FILTER_RA_DST]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KML_FILTER_RA_DST_LEN]	= NLA_POLICY_MAX(NLA_U8, 128),
	[KML_FILTER_RA_SPORT_LO] = { .type = NLA_U16 },
	[KML_FILTER_RA_SPORT_HI] = { .type = NLA_U16 },
	[KML_FILTER_RA_DPORT_LO] = { .type = NLA_U16 },
	[KML_FILTER_RA_DPORT_HI] = { .type = NLA_U16 },
	[KML_FILTER_RA_CT_STATE] = NLA_POLICY_MASK(NLA_U8, KML_FILTER_CT_ALL),
	/* 0 and the upper bound are the rule checker's, which names them */
	[KML_FILTER_RA_LOG_RATE] = { .type = NLA_U32 },
	[KML_FILTER_RA_LOG_BURST] = { .type = NLA_U16 },
};

/* One policy per command: whatever a command does not take is refused. */
static const struct nla_policy kml_filter_newrule_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_RULE]	= NLA_POLICY_NESTED(kml_filter_rule_policy),
	[KML_FILTER_A_POSITION]	= { .type = NLA_U32 },
};

static const struct nla_policy kml_filter_delrule_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_RULE]	= NLA_POLICY_NESTED(kml_filter_rule_policy),
	[KML_FILTER_A_INDEX]	= { .type = NLA_U32 },
};

static const struct nla_policy kml_filter_policy_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_POLICY]	= NLA_POLICY_RANGE(NLA_U8, KML_FILTER_ACCEPT,
						   KML_FILTER_DROP),
	[KML_FILTER_A_POLICY_FWD] = NLA_POLICY_RANGE(NLA_U8, KML_FILTER_ACCEPT,
						     KML_FILTER_DROP),
};

/* An address's bits in a rule of @family; 0: the family has no address. */
static unsigned int kml_filter_nl_bits(u8 family)
{
	return family == KML_FILTER_FAMILY_IPV4 ? 32 :
	       family == KML_FILTER_FAMILY_IPV6 ? 128 : 0;
}

/* past what NLA_POLICY_MAX() holds (s16); 6.1's policy takes no const */
static struct netlink_range_validation kml_filter_nrules_range = {
	.max = KML_FILTER_MAX_RULES,
};

static const struct nla_policy kml_filter_begin_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_POLICY_FWD] = NLA_POLICY_RANGE(NLA_U8, KML_FILTER_ACCEPT,
						     KML_FILTER_DROP),
	[KML_FILTER_A_NRULES]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&kml_filter_nrules_range),
	[KML_FILTER_A_POLICY]	= NLA_POLICY_RANGE(NLA_U8, KML_FILTER_ACCEPT,
						   KML_FILTER_DROP),
};

static const struct nla_policy kml_filter_rules_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_TXN]	= { .type = NLA_U32 },
	[KML_FILTER_A_RULES]	= NLA_POLICY_NESTED_ARRAY(kml_filter_rule_policy),
};

static const struct nla_policy kml_filter_txn_policy[KML_FILTER_A_MAX + 1] = {
	[KML_FILTER_A_TXN]	= { .type = NLA_U32 },
};

static const struct nla_policy kml_filter_log_policy[KML_FILTER_A_MAX + 1] = {
	/* a descriptor: past INT_MAX it is negative, and fget() says EBADF */
	[KML_FILTER_A_LOG_RING]	= { .type = NLA_U32 },
};

static struct kml_filter_net *kml_filter_nl_net(struct genl_info *info)
{
	return kml_filter_pernet(genl_info_net(info));
}

/*
 * Say why a rule was refused and where. The reasons are the rule
 * checker's (kml_filter_logic.c, shared with the client), not literals
 * at this call site, so they are set here and not through
 * NL_SET_ERR_MSG(), whose literal check makes sure the text outlives the
 * request: these are constant strings of this module, and unloading it
 * waits for every request in flight (genl_unregister_family()).
 */
static void kml_filter_nl_refuse(struct netlink_ext_ack *extack,
				 const struct nlattr *attr, const char *why)
{
	/* genetlink always hands its handlers an extack */
	extack->_msg = why;
	extack->bad_attr = attr;
}

/*
 * Is attribute @type of @tb (in @nest, or top level if NULL) missing? If
 * so say which, as NL_REQ_ATTR_CHECK() does, and why it is needed.
 */
static bool kml_filter_nl_missing(struct netlink_ext_ack *extack,
				  const struct nlattr *nest, struct nlattr **tb,
				  unsigned int type, const char *why)
{
	if (tb[type])
		return false;
	extack->miss_type = type;
	extack->miss_nest = nest;
	kml_filter_nl_refuse(extack, NULL, why);
	return true;
}

/* An address attribute into @addr/@len, for a rule of @family. */
static int kml_filter_nl_addr(const struct nlattr *addr,
			      const struct nlattr *len, u8 family, u8 *out,
			      u8 *out_len, struct netlink_ext_ack *extack)
{
	unsigned int bits = kml_filter_nl_bits(family);

	if (!addr) {
		if (len) {
			kml_filter_nl_refuse(extack, len,
					     "prefix length without an address");
			return -EINVAL;
		}
		return 0;
	}
	if (!bits) {
		/* an unknown family is what is wrong: the rule checker says so */
		if (family != KML_FILTER_FAMILY_ANY)
			return 0;
		kml_filter_nl_refuse(extack, addr, "address without a family");
		return -EINVAL;
	}
	if (nla_len(addr) != bits / 8) {
		kml_filter_nl_refuse(extack, addr,
				     "address length is not the family's (4 or 16 bytes)");
		return -EINVAL;
	}
	nla_memcpy(out, addr, bits / 8);
	*out_len = len ? nla_get_u8(len) : bits;
	return 0;
}

/*
 * The attributes a rule checker's complaint about a field (enum
 * kml_filter_field) is about, the first one present; 0 is none (tb[0] is
 * never set).
 */
static const u8 kml_filter_nl_field_attr[][2] = {
	[KML_FILTER_F_FAMILY]	= { KML_FILTER_RA_FAMILY },
	[KML_FILTER_F_PROTO]	= { KML_FILTER_RA_PROTO },
	[KML_FILTER_F_DIR]	= { KML_FILTER_RA_DIR },
	[KML_FILTER_F_ACTION]	= { KML_FILTER_RA_ACTION },
	[KML_FILTER_F_SRC]	= { KML_FILTER_RA_SRC, KML_FILTER_RA_SRC_LEN },
	[KML_FILTER_F_DST]	= { KML_FILTER_RA_DST, KML_FILTER_RA_DST_LEN },
	[KML_FILTER_F_SRC_LEN]	= { KML_FILTER_RA_SRC_LEN, KML_FILTER_RA_SRC },
	[KML_FILTER_F_DST_LEN]	= { KML_FILTER_RA_DST_LEN, KML_FILTER_RA_DST },
	[KML_FILTER_F_SPORT]	= { KML_FILTER_RA_SPORT_LO, KML_FILTER_RA_SPORT_HI },
	[KML_FILTER_F_DPORT]	= { KML_FILTER_RA_DPORT_LO, KML_FILTER_RA_DPORT_HI },
	[KML_FILTER_F_CT]	= { KML_FILTER_RA_CT_STATE },
	[KML_FILTER_F_PAD]	= { },
	/* a rate sent: that attribute; none: the action (a burst is no fault) */
	[KML_FILTER_F_LOG]	= { KML_FILTER_RA_LOG_RATE },
	/* a burst of 0 sent: that attribute; none: the rate that needs one */
	[KML_FILTER_F_LOG_BURST] = { KML_FILTER_RA_LOG_BURST, KML_FILTER_RA_LOG_RATE },
};

static const struct nlattr *kml_filter_nl_blame(struct nlattr **tb,
						const struct nlattr *nest,
						unsigned int field)
{
	const u8 *a = kml_filter_nl_field_attr[field];

	BUILD_BUG_ON(ARRAY_SIZE(kml_filter_nl_field_attr) != KML_FILTER_F_LOG_BURST + 1);
	/*
	 * Every reason is about a part the message has (a missing protocol
	 * is blamed on the ports that need it); NULL would name none.
	 */
	return tb[a[0]] ?: tb[a[1]];
}

static u16 kml_filter_nl_u16(const struct nlattr *a, u16 absent)
{
	return a ? nla_get_u16(a) : absent;
}

/*
 * A rule attribute into @r. The policy has checked each attribute on its
 * own; this checks the rule as a whole, with the checker the ioctls and
 * the client use, and blames the attribute of the part that is wrong.
 */
static int kml_filter_nl_rule(const struct nlattr *nest,
			      struct kml_filter_rule *r,
			      struct netlink_ext_ack *extack)
{
	struct nlattr *tb[KML_FILTER_RA_MAX + 1];
	unsigned int field;
	const char *why;
	int ret;

	ret = nla_parse_nested(tb, KML_FILTER_RA_MAX, nest,
			       kml_filter_rule_policy, extack);
	if (ret)
		return ret;
	if (kml_filter_nl_missing(extack, nest, tb, KML_FILTER_RA_DIR,
				  "a rule needs a direction") ||
	    kml_filter_nl_missing(extack, nest, tb, KML_FILTER_RA_ACTION,
				  "a rule needs an action"))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (tb[KML_FILTER_RA_FAMILY])
		r->family = nla_get_u8(tb[KML_FILTER_RA_FAMILY]);
	if (tb[KML_FILTER_RA_PROTO])
		r->proto = nla_get_u8(tb[KML_FILTER_RA_PROTO]);
	r->dir = nla_get_u8(tb[KML_FILTER_RA_DIR]);
	r->action = nla_get_u8(tb[KML_FILTER_RA_ACTION]);
	ret = kml_filter_nl_addr(tb[KML_FILTER_RA_SRC],
				 tb[KML_FILTER_RA_SRC_LEN], r->family, r->src,
				 &r->src_len, extack);
	if (!ret)
		ret = kml_filter_nl_addr(tb[KML_FILTER_RA_DST],
					 tb[KML_FILTER_RA_DST_LEN], r->family,
					 r->dst, &r->dst_len, extack);
	if (ret)
		return ret;
	r->sport_lo = kml_filter_nl_u16(tb[KML_FILTER_RA_SPORT_LO], 0);
	r->sport_hi = kml_filter_nl_u16(tb[KML_FILTER_RA_SPORT_HI], 65535);
	r->dport_lo = kml_filter_nl_u16(tb[KML_FILTER_RA_DPORT_LO], 0);
	r->dport_hi = kml_filter_nl_u16(tb[KML_FILTER_RA_DPORT_HI], 65535);
	if (tb[KML_FILTER_RA_CT_STATE])
		r->ct_state = nla_get_u8(tb[KML_FILTER_RA_CT_STATE]);
	if (tb[KML_FILTER_RA_LOG_RATE])
		r->log_rate = nla_get_u32(tb[KML_FILTER_RA_LOG_RATE]);
	r->log_burst = kml_filter_nl_u16(tb[KML_FILTER_RA_LOG_BURST], 0);
	ret = kml_filter_rule_why(r, &why, &field);
	if (ret)
		/* a log action without a rate: blame the action */
		kml_filter_nl_refuse(extack,
				     kml_filter_nl_blame(tb, nest, field) ?:
				     tb[KML_FILTER_RA_ACTION], why);
	return ret;
}

static int kml_filter_nl_u64(struct sk_buff *skb, int type, u64 v)
{
	return nla_put_u64_64bit(skb, type, v, KML_FILTER_A_PAD);
}

/*
 * A rule as a nest of attributes, whole or not at all: a dump that runs
 * out of room part-way cancels the nest and sends the rule next time.
 */
static int kml_filter_nl_put_rule(struct sk_buff *skb,
				  const struct kml_filter_rule *r)
{
	unsigned int alen = kml_filter_nl_bits(r->family) / 8;
	struct nlattr *nest;

	nest = nla_nest_start(skb, KML_FILTER_A_RULE);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u8(skb, KML_FILTER_RA_FAMILY, r->family) ||
	    nla_put_u8(skb, KML_FILTER_RA_PROTO, r->proto) ||
	    nla_put_u8(skb, KML_FILTER_RA_DIR, r->dir) ||
	    nla_put_u8(skb, KML_FILTER_RA_ACTION, r->action))
		goto nla_put_failure;
	/* a prefix of length 0 matches everything: it is left out */
	if (r->src_len &&
	    (nla_put(skb, KML_FILTER_RA_SRC, alen, r->src) ||
	     nla_put_u8(skb, KML_FILTER_RA_SRC_LEN, r->src_len)))
		goto nla_put_failure;
	if (r->dst_len &&
	    (nla_put(skb, KML_FILTER_RA_DST, alen, r->dst) ||
	     nla_put_u8(skb, KML_FILTER_RA_DST_LEN, r->dst_len)))
		goto nla_put_failure;
	if (nla_put_u16(skb, KML_FILTER_RA_SPORT_LO, r->sport_lo) ||
	    nla_put_u16(skb, KML_FILTER_RA_SPORT_HI, r->sport_hi) ||
	    nla_put_u16(skb, KML_FILTER_RA_DPORT_LO, r->dport_lo) ||
	    nla_put_u16(skb, KML_FILTER_RA_DPORT_HI, r->dport_hi))
		goto nla_put_failure;
	if (r->ct_state &&
	    nla_put_u8(skb, KML_FILTER_RA_CT_STATE, r->ct_state))
		goto nla_put_failure;
	if (r->log_rate &&
	    (nla_put_u32(skb, KML_FILTER_RA_LOG_RATE, r->log_rate) ||
	     nla_put_u16(skb, KML_FILTER_RA_LOG_BURST, r->log_burst)))
		goto nla_put_failure;
	nla_nest_end(skb, nest);
	return 0;

nla_put_failure:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static struct genl_family kml_filter_genl;

/* The GET_INFO reply's attributes, as kml_filter_nl_get_info() puts them. */
static size_t kml_filter_nl_info_size(void)
{
	return 3 * nla_total_size(sizeof(u32)) +	/* version, rules, limit */
	       3 * nla_total_size(sizeof(u8)) +		/* policies, log attached */
	       10 * nla_total_size_64bit(sizeof(u64));	/* the counters */
}

static int kml_filter_nl_get_info(struct sk_buff *skb, struct genl_info *info)
{
	struct kml_filter_state st;
	struct sk_buff *msg;
	void *hdr;

	kml_filter_get_state(kml_filter_nl_net(info), &st);
	msg = genlmsg_new(kml_filter_nl_info_size(), GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &kml_filter_genl, 0,
				KML_FILTER_CMD_GET_INFO);
	if (!hdr)
		goto nla_put_failure;
	if (nla_put_u32(msg, KML_FILTER_A_ABI_VERSION, st.info.abi_version) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_GENERATION, st.info.generation) ||
	    nla_put_u32(msg, KML_FILTER_A_NRULES, st.info.nrules) ||
	    nla_put_u32(msg, KML_FILTER_A_MAX_RULES, st.info.max_rules) ||
	    nla_put_u8(msg, KML_FILTER_A_POLICY, st.info.policy) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_POLICY_PACKETS,
			      st.info.policy_packets) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_POLICY_BYTES,
			      st.info.policy_bytes) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_MEM_BYTES, st.mem_bytes) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_MEM_LIMIT, st.mem_limit) ||
	    nla_put_u8(msg, KML_FILTER_A_POLICY_FWD, st.policy_fwd) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_POLICY_FWD_PACKETS,
			      st.policy_fwd_packets) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_POLICY_FWD_BYTES,
			      st.policy_fwd_bytes) ||
	    nla_put_u8(msg, KML_FILTER_A_LOG_ATTACHED, st.log_attached) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_LOG_RECORDS, st.log_records) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_LOG_SUPPRESSED,
			      st.log_suppressed) ||
	    kml_filter_nl_u64(msg, KML_FILTER_A_LOG_LOST, st.log_lost))
		goto nla_put_failure;
	/* the head's room is rounded up: a forgotten attribute still fits */
	DEBUG_NET_WARN_ON_ONCE(genlmsg_len(hdr) > kml_filter_nl_info_size());
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

nla_put_failure:
	/* sized for these attributes: only a wrong size gets here */
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* A change's result, counted like the ioctls' when refused. */
static int kml_filter_nl_done(int ret, struct genl_info *info)
{
	if (ret)
		kml_filter_rejected();
	if (ret == -ENOSPC)
		kml_filter_nl_refuse(info->extack, NULL,
				     "no room: the set would pass net_mem_max or the rule limit");
	else if (ret == -EOPNOTSUPP)
		kml_filter_nl_refuse(info->extack, NULL,
				     "connection states need conntrack, which this kernel does not have");
	return ret;
}

static int kml_filter_nl_newrule(struct sk_buff *skb, struct genl_info *info)
{
	struct kml_filter_rule r;
	u32 pos = KML_FILTER_APPEND;
	int ret;

	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_RULE, "NEWRULE needs a rule"))
		return kml_filter_nl_done(-EINVAL, info);
	ret = kml_filter_nl_rule(info->attrs[KML_FILTER_A_RULE], &r,
				 info->extack);
	if (ret)
		return kml_filter_nl_done(ret, info);
	if (info->attrs[KML_FILTER_A_POSITION])
		pos = nla_get_u32(info->attrs[KML_FILTER_A_POSITION]);
	return kml_filter_nl_done(kml_filter_insert(kml_filter_nl_net(info),
						    &r, pos), info);
}

static int kml_filter_nl_delrule(struct sk_buff *skb, struct genl_info *info)
{
	const struct nlattr *index = info->attrs[KML_FILTER_A_INDEX];
	const struct nlattr *rule = info->attrs[KML_FILTER_A_RULE];
	struct kml_filter_rule r;
	int ret;

	if (!index == !rule) {
		kml_filter_nl_refuse(info->extack, index,
				     "DELRULE needs an index or a rule, not both");
		return kml_filter_nl_done(-EINVAL, info);
	}
	if (rule) {
		ret = kml_filter_nl_rule(rule, &r, info->extack);
		if (ret)
			return kml_filter_nl_done(ret, info);
	}
	ret = kml_filter_delete(kml_filter_nl_net(info), rule ? &r : NULL,
				index ? nla_get_u32(index) : 0);
	if (ret == -ENOENT)
		kml_filter_nl_refuse(info->extack, index ?: rule,
				     "no such rule");
	return kml_filter_nl_done(ret, info);
}

static int kml_filter_nl_flush(struct sk_buff *skb, struct genl_info *info)
{
	return kml_filter_nl_done(kml_filter_flush(kml_filter_nl_net(info)),
				  info);
}

/*
 * The in/out policy, the forward one, or both in one change. Without
 * either, the in/out one is named missing: it is the one an older
 * client means.
 */
static int kml_filter_nl_policy(struct sk_buff *skb, struct genl_info *info)
{
	const struct nlattr *pol = info->attrs[KML_FILTER_A_POLICY];
	const struct nlattr *fwd = info->attrs[KML_FILTER_A_POLICY_FWD];

	if (!fwd && kml_filter_nl_missing(info->extack, NULL, info->attrs,
					  KML_FILTER_A_POLICY,
					  "SET_POLICY needs a policy"))
		return kml_filter_nl_done(-EINVAL, info);
	return kml_filter_nl_done(kml_filter_set_policy(kml_filter_nl_net(info),
							pol ? nla_get_u8(pol) : 0,
							fwd ? nla_get_u8(fwd) : 0),
				  info);
}

/*
 * The generation is the dump's sequence: if it moved since the last
 * message, genl_dump_check_consistent() marks the next one interrupted.
 * It never yields 0, which the check takes for "no sequence yet", and
 * two generations in a row always differ.
 */
static unsigned int kml_filter_nl_seq(u64 generation)
{
	u32 rem;

	/* not %: a 32-bit kernel has no 64-bit division but div_u64_rem() */
	div_u64_rem(generation, 0xffffffffU, &rem);
	return rem + 1;
}

struct kml_filter_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
};

/* One rule, one message; non-zero once the dump's buffer is full. */
static int kml_filter_nl_emit(void *arg, u32 index,
			      const struct kml_filter_entry *e, u64 generation)
{
	struct kml_filter_dump *d = arg;
	struct sk_buff *skb = d->skb;
	void *hdr;

	d->cb->seq = kml_filter_nl_seq(generation);
	hdr = genlmsg_put(skb, NETLINK_CB(d->cb->skb).portid,
			  d->cb->nlh->nlmsg_seq, &kml_filter_genl, NLM_F_MULTI,
			  KML_FILTER_CMD_GETRULE);
	if (!hdr)
		return 1;
	genl_dump_check_consistent(d->cb, hdr);
	/* as in kml_filter_nl_put_rule(): the rule's message goes whole or not */
	if (nla_put_u32(skb, KML_FILTER_A_INDEX, index) ||
	    kml_filter_nl_put_rule(skb, &e->rule) ||
	    kml_filter_nl_u64(skb, KML_FILTER_A_PACKETS, e->packets) ||
	    kml_filter_nl_u64(skb, KML_FILTER_A_BYTES, e->bytes) ||
	    kml_filter_nl_u64(skb, KML_FILTER_A_GENERATION, generation)) {
		genlmsg_cancel(skb, hdr);
		return 1;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* Resumes at cb->args[0], the first rule not sent yet. */
static int kml_filter_nl_getrule(struct sk_buff *skb,
				 struct netlink_callback *cb)
{
	struct kml_filter_dump d = { .skb = skb, .cb = cb };
	struct kml_filter_net *fn = kml_filter_pernet(sock_net(skb->sk));
	u32 next, nrules;
	u64 generation;

	next = kml_filter_walk(fn, cb->args[0], -1, kml_filter_nl_emit, &d,
			       &nrules, &generation);
	/* a set that shrank under a dump still ends it, marked interrupted */
	cb->seq = kml_filter_nl_seq(generation);
	if (next == cb->args[0] && next < nrules)
		return -EMSGSIZE;	/* not even one rule fits */
	cb->args[0] = next;
	return skb->len;
}

/* ---- replace in parts ---- */

static int kml_filter_nl_begin(struct sk_buff *skb, struct genl_info *info)
{
	const struct nlattr *policy = info->attrs[KML_FILTER_A_POLICY];
	const struct nlattr *fwd = info->attrs[KML_FILTER_A_POLICY_FWD];
	struct kml_filter_net *fn = kml_filter_nl_net(info);
	struct sk_buff *msg;
	void *hdr;
	u32 id;
	int ret;

	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_NRULES,
				  "REPLACE_BEGIN needs the number of rules"))
		return kml_filter_nl_done(-EINVAL, info);
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = kml_filter_stage_begin(fn, NETLINK_CB(skb).sk,
				     nla_get_u32(info->attrs[KML_FILTER_A_NRULES]),
				     policy ? nla_get_u8(policy) : 0,
				     fwd ? nla_get_u8(fwd) : 0, &id);
	if (ret == -EBUSY)
		kml_filter_nl_refuse(info->extack, NULL,
				     "another replace is in progress in this namespace");
	if (ret) {
		nlmsg_free(msg);
		return kml_filter_nl_done(ret, info);
	}
	hdr = genlmsg_put_reply(msg, info, &kml_filter_genl, 0,
				KML_FILTER_CMD_REPLACE_BEGIN);
	if (!hdr || nla_put_u32(msg, KML_FILTER_A_TXN, id)) {
		kml_filter_stage_abort(fn, NETLINK_CB(skb).sk, id);
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	/* a replace whose id never reached its owner is no one's */
	ret = genlmsg_reply(msg, info);
	if (ret)
		kml_filter_stage_abort(fn, NETLINK_CB(skb).sk, id);
	return ret;
}

static u32 kml_filter_nl_txn(struct genl_info *info)
{
	return nla_get_u32(info->attrs[KML_FILTER_A_TXN]);
}

/* Which replace, for the replace commands: -ENOENT says none of ours. */
static int kml_filter_nl_no_txn(int ret, struct genl_info *info)
{
	if (ret == -ENOENT)
		kml_filter_nl_refuse(info->extack, info->attrs[KML_FILTER_A_TXN],
				     "no such replace on this socket");
	return kml_filter_nl_done(ret, info);
}

static int kml_filter_nl_rules(struct sk_buff *skb, struct genl_info *info)
{
	struct kml_filter_net *fn = kml_filter_nl_net(info);
	const struct nlattr *rules = info->attrs[KML_FILTER_A_RULES];
	struct kml_filter_rule *r = NULL;
	const struct nlattr *a;
	u32 n = 0, id;
	int rem, ret;

	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_TXN, "which replace?") ||
	    kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_RULES, "REPLACE_RULES needs rules"))
		return kml_filter_nl_done(-EINVAL, info);
	id = kml_filter_nl_txn(info);
	nla_for_each_nested(a, rules, rem)
		n++;
	/* a message's worth of rules, bounded by the socket's buffer */
	if (n) {
		r = kvmalloc_array(n, sizeof(*r), GFP_KERNEL_ACCOUNT);
		if (!r)
			return kml_filter_nl_done(-ENOMEM, info);
	}
	n = 0;
	ret = 0;
	nla_for_each_nested(a, rules, rem) {
		ret = kml_filter_nl_rule(a, &r[n++], info->extack);
		if (ret)
			break;
	}
	if (ret) {
		/* a refused rule ends the replace: nothing of it is committed */
		kml_filter_stage_abort(fn, NETLINK_CB(skb).sk, id);
	} else {
		ret = kml_filter_stage_rules(fn, NETLINK_CB(skb).sk, id, r, n);
		if (ret == -E2BIG)
			kml_filter_nl_refuse(info->extack, rules,
					     "more rules than REPLACE_BEGIN announced");
	}
	kvfree(r);
	return kml_filter_nl_no_txn(ret, info);
}

static int kml_filter_nl_commit(struct sk_buff *skb, struct genl_info *info)
{
	int ret;

	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_TXN, "which replace?"))
		return kml_filter_nl_done(-EINVAL, info);
	ret = kml_filter_stage_commit(kml_filter_nl_net(info), NETLINK_CB(skb).sk,
				      kml_filter_nl_txn(info));
	if (ret == -EAGAIN)
		kml_filter_nl_refuse(info->extack, NULL,
				     "the rules changed since REPLACE_BEGIN: start again");
	else if (ret == -EINVAL)
		kml_filter_nl_refuse(info->extack, NULL,
				     "fewer rules than REPLACE_BEGIN announced");
	return kml_filter_nl_no_txn(ret, info);
}

static int kml_filter_nl_abort(struct sk_buff *skb, struct genl_info *info)
{
	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_TXN, "which replace?"))
		return kml_filter_nl_done(-EINVAL, info);
	return kml_filter_nl_no_txn(kml_filter_stage_abort(kml_filter_nl_net(info),
							   NETLINK_CB(skb).sk,
							   kml_filter_nl_txn(info)),
				    info);
}

/*
 * The log goes to a ring the sender has open: the descriptor is the
 * sender's, and a netlink request to the kernel runs in the sender's
 * context (netlink_unicast_kernel()), so kml_ring_fget() finds it.
 */
static int kml_filter_nl_log_attach(struct sk_buff *skb, struct genl_info *info)
{
	int ret;

	if (kml_filter_nl_missing(info->extack, NULL, info->attrs,
				  KML_FILTER_A_LOG_RING, "which ring?"))
		return -EINVAL;
	ret = kml_filter_log_start(kml_filter_nl_net(info),
				   nla_get_u32(info->attrs[KML_FILTER_A_LOG_RING]),
				   NETLINK_CB(skb).sk);
	if (ret == -EINVAL)
		kml_filter_nl_refuse(info->extack, info->attrs[KML_FILTER_A_LOG_RING],
				     "not a kml_ring descriptor");
	else if (ret == -EBADF)
		kml_filter_nl_refuse(info->extack, info->attrs[KML_FILTER_A_LOG_RING],
				     "no such descriptor in the sender");
	else if (ret == -ENODEV)
		kml_filter_nl_refuse(info->extack, NULL, "kml_ring is not loaded");
	else if (ret == -EBUSY)
		kml_filter_nl_refuse(info->extack, NULL,
				     "a ring is attached already");
	return ret;
}

static int kml_filter_nl_log_detach(struct sk_buff *skb, struct genl_info *info)
{
	int ret = kml_filter_log_stop(kml_filter_nl_net(info));

	if (ret == -ENOENT)
		NL_SET_ERR_MSG(info->extack, "no log ring is attached");
	return ret;
}

/*
 * A replace belongs to the socket that began it: when that socket goes,
 * so does its replace (kml_filter_stage_release() hands that to a work
 * item: this chain is called, under its lock, for every netlink socket
 * closed on the machine, and must not wait).
 */
static int kml_filter_nl_notify(struct notifier_block *nb, unsigned long event,
				void *ptr)
{
	struct netlink_notify *n = ptr;

	/* URELEASE is the only event of this chain */
	if (n->protocol != NETLINK_GENERIC)
		return NOTIFY_DONE;
	kml_filter_stage_release(kml_filter_pernet(n->net));
	return NOTIFY_DONE;
}

static struct notifier_block kml_filter_nl_notifier = {
	.notifier_call = kml_filter_nl_notify,
};

static const struct genl_ops kml_filter_genl_ops[] = {
	{
		.cmd	= KML_FILTER_CMD_GET_INFO,
		.doit	= kml_filter_nl_get_info,
	},
	{
		.cmd	= KML_FILTER_CMD_NEWRULE,
		.doit	= kml_filter_nl_newrule,
		.policy	= kml_filter_newrule_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_DELRULE,
		.doit	= kml_filter_nl_delrule,
		.policy	= kml_filter_delrule_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_FLUSH,
		.doit	= kml_filter_nl_flush,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_SET_POLICY,
		.doit	= kml_filter_nl_policy,
		.policy	= kml_filter_policy_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_GETRULE,
		.dumpit	= kml_filter_nl_getrule,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_REPLACE_BEGIN,
		.doit	= kml_filter_nl_begin,
		.policy	= kml_filter_begin_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_REPLACE_RULES,
		.doit	= kml_filter_nl_rules,
		.policy	= kml_filter_rules_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_REPLACE_COMMIT,
		.doit	= kml_filter_nl_commit,
		.policy	= kml_filter_txn_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_REPLACE_ABORT,
		.doit	= kml_filter_nl_abort,
		.policy	= kml_filter_txn_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_LOG_ATTACH,
		.doit	= kml_filter_nl_log_attach,
		.policy	= kml_filter_log_policy,
		.maxattr = KML_FILTER_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= KML_FILTER_CMD_LOG_DETACH,
		.doit	= kml_filter_nl_log_detach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

static struct genl_family kml_filter_genl = {
	.name		= KML_FILTER_GENL_NAME,
	.version	= KML_FILTER_GENL_VERSION,
	.netnsok	= true,
	/* the namespace's lock serialises changes, not genl_mutex */
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= kml_filter_genl_ops,
	.n_ops		= ARRAY_SIZE(kml_filter_genl_ops),
	/*
	 * Every command is new: strict validation, no attributes for a
	 * command without a policy, and the genl header's reserved field
	 * must be zero.
	 */
	.resv_start_op	= KML_FILTER_CMD_GET_INFO,
};

int kml_filter_nl_init(void)
{
	int ret;

	ret = netlink_register_notifier(&kml_filter_nl_notifier);
	if (ret)
		return ret;
	ret = genl_register_family(&kml_filter_genl);
	if (ret)
		netlink_unregister_notifier(&kml_filter_nl_notifier);
	return ret;
}

void kml_filter_nl_exit(void)
{
	genl_unregister_family(&kml_filter_genl);
	netlink_unregister_notifier(&kml_filter_nl_notifier);
}
