// SPDX-License-Identifier: GPL-2.0
/*
 * The kml_filter generic netlink messages as kml-filter builds and reads
 * them (see kml_filter_genl.h). A rule goes out with only the attributes
 * whose value is not the default the uapi gives an absent one, and comes
 * back the same way: so encoding then decoding gives the same struct,
 * which DELRULE's "the first rule equal to" relies on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kml_filter_genl.h"

/* The address bytes of a prefix of @family: only IPv4 is shorter. */
static size_t addr_bytes(__u8 family)
{
	return family == KML_FILTER_FAMILY_IPV4 ? 4 : 16;
}

static void note(struct kml_filter_genl_offs *offs, int type, int off)
{
	if (offs && off >= 0)
		offs->ra[type] = off;
}

static void put_u8(struct kml_nl_msg *m, struct kml_filter_genl_offs *offs, int type, __u8 v)
{
	note(offs, type, kml_nl_put_u8(m, (uint16_t)type, v));
}

static void put_u16(struct kml_nl_msg *m, struct kml_filter_genl_offs *offs, int type,
		    __u16 v)
{
	note(offs, type, kml_nl_put_u16(m, (uint16_t)type, v));
}

static void put_u32(struct kml_nl_msg *m, struct kml_filter_genl_offs *offs, int type,
		    __u32 v)
{
	note(offs, type, kml_nl_put_u32(m, (uint16_t)type, v));
}

static void put_prefix(struct kml_nl_msg *m, struct kml_filter_genl_offs *offs, int atype,
		       int ltype, __u8 family, const __u8 *addr, __u8 plen)
{
	if (!plen)
		return;
	note(offs, atype, kml_nl_put(m, (uint16_t)atype, addr, addr_bytes(family)));
	put_u8(m, offs, ltype, plen);
}

/**
 * kml_filter_genl_put_rule() - a rule as a nest of KML_FILTER_RA_* attributes
 * @m: the request
 * @type: the nest's type, %KML_FILTER_A_RULE
 * @r: the rule; it need not be valid (a --no-check rule is sent as it is,
 *	for the kernel to refuse), but a zero action or direction is left
 *	out, so the kernel says which required attribute is missing
 * @offs: if not NULL, set to where each attribute went
 *
 * Return: the nest's offset, or -EMSGSIZE (the message's sticky error).
 */
int kml_filter_genl_put_rule(struct kml_nl_msg *m, uint16_t type,
			     const struct kml_filter_rule *r,
			     struct kml_filter_genl_offs *offs)
{
	int nest, i;

	if (offs) {
		offs->nest = offs->end = -1;
		for (i = 0; i <= KML_FILTER_RA_MAX; i++)
			offs->ra[i] = -1;
	}
	nest = kml_nl_nest_start(m, type);
	if (nest < 0)
		return nest;
	if (offs)
		offs->nest = nest;
	if (r->family)
		put_u8(m, offs, KML_FILTER_RA_FAMILY, r->family);
	if (r->proto)
		put_u8(m, offs, KML_FILTER_RA_PROTO, r->proto);
	if (r->dir)
		put_u8(m, offs, KML_FILTER_RA_DIR, r->dir);
	if (r->action)
		put_u8(m, offs, KML_FILTER_RA_ACTION, r->action);
	put_prefix(m, offs, KML_FILTER_RA_SRC, KML_FILTER_RA_SRC_LEN, r->family, r->src,
		   r->src_len);
	put_prefix(m, offs, KML_FILTER_RA_DST, KML_FILTER_RA_DST_LEN, r->family, r->dst,
		   r->dst_len);
	if (r->sport_lo)
		put_u16(m, offs, KML_FILTER_RA_SPORT_LO, r->sport_lo);
	if (r->sport_hi != 0xffff)
		put_u16(m, offs, KML_FILTER_RA_SPORT_HI, r->sport_hi);
	if (r->dport_lo)
		put_u16(m, offs, KML_FILTER_RA_DPORT_LO, r->dport_lo);
	if (r->dport_hi != 0xffff)
		put_u16(m, offs, KML_FILTER_RA_DPORT_HI, r->dport_hi);
	if (r->ct_state)
		put_u8(m, offs, KML_FILTER_RA_CT_STATE, r->ct_state);
	/*
	 * The two together, as the kernel dumps them; a burst without a rate
	 * (a --no-check rule) goes too, for the kernel to refuse.
	 */
	if (r->log_rate || r->log_burst) {
		put_u32(m, offs, KML_FILTER_RA_LOG_RATE, r->log_rate);
		put_u16(m, offs, KML_FILTER_RA_LOG_BURST, r->log_burst);
	}
	nest = kml_nl_nest_end(m, nest);
	if (offs && nest >= 0)
		offs->end = (int)m->len;
	return nest;
}

/* An optional u8: absent keeps *v; any other size is -EINVAL. */
static int get_u8(const struct kml_nl_attr *a, __u8 *v)
{
	return a->data ? kml_nl_get_u8(a, v) : 0;
}

static int get_u16(const struct kml_nl_attr *a, __u16 *v)
{
	return a->data ? kml_nl_get_u16(a, v) : 0;
}

static int get_u32(const struct kml_nl_attr *a, __u32 *v)
{
	return a->data ? kml_nl_get_u32(a, v) : 0;
}

/*
 * A prefix: the address must have its family's size; a length without
 * an address must be 0 (the kernel sends the length of an address-less
 * rule); an address without a length is the whole address.
 */
static int get_prefix(const struct kml_nl_attr *addr, const struct kml_nl_attr *len,
		      __u8 family, __u8 *out, __u8 *plen)
{
	size_t n = addr_bytes(family);
	__u8 l = 0;

	if (get_u8(len, &l))
		return -EINVAL;
	if (!addr->data) {
		*plen = 0;
		return l ? -EINVAL : 0;
	}
	if (family != KML_FILTER_FAMILY_IPV4 && family != KML_FILTER_FAMILY_IPV6)
		return -EINVAL;
	if (addr->len != n)
		return -EINVAL;
	if (!len->data)
		l = (__u8)(n * 8);
	if (!l || l > n * 8)
		return -EINVAL;
	memcpy(out, addr->data, n);
	*plen = l;
	return 0;
}

/**
 * kml_filter_genl_get_rule() - a KML_FILTER_A_RULE nest to a rule
 * @nest: the attribute
 * @r: filled in; absent attributes get the uapi's defaults
 *
 * Values are taken as they come (the kernel checked them); only the
 * shapes are checked: sizes, an address of the rule's family.
 * Return: 0, or -EINVAL for a malformed nest (-ENOENT when absent).
 */
int kml_filter_genl_get_rule(const struct kml_nl_attr *nest, struct kml_filter_rule *r)
{
	struct kml_nl_attr tb[KML_FILTER_RA_MAX + 1];
	int err = kml_nl_parse_nested(nest, tb, KML_FILTER_RA_MAX);

	memset(r, 0, sizeof(*r));
	r->sport_hi = r->dport_hi = 0xffff;
	if (err)
		return err;
	if (get_u8(&tb[KML_FILTER_RA_FAMILY], &r->family) ||
	    get_u8(&tb[KML_FILTER_RA_PROTO], &r->proto) ||
	    get_u8(&tb[KML_FILTER_RA_DIR], &r->dir) ||
	    get_u8(&tb[KML_FILTER_RA_ACTION], &r->action) ||
	    get_u16(&tb[KML_FILTER_RA_SPORT_LO], &r->sport_lo) ||
	    get_u16(&tb[KML_FILTER_RA_SPORT_HI], &r->sport_hi) ||
	    get_u16(&tb[KML_FILTER_RA_DPORT_LO], &r->dport_lo) ||
	    get_u16(&tb[KML_FILTER_RA_DPORT_HI], &r->dport_hi) ||
	    get_u8(&tb[KML_FILTER_RA_CT_STATE], &r->ct_state) ||
	    get_u32(&tb[KML_FILTER_RA_LOG_RATE], &r->log_rate) ||
	    get_u16(&tb[KML_FILTER_RA_LOG_BURST], &r->log_burst))
		return -EINVAL;
	if (get_prefix(&tb[KML_FILTER_RA_SRC], &tb[KML_FILTER_RA_SRC_LEN], r->family,
		       r->src, &r->src_len) ||
	    get_prefix(&tb[KML_FILTER_RA_DST], &tb[KML_FILTER_RA_DST_LEN], r->family,
		       r->dst, &r->dst_len))
		return -EINVAL;
	return 0;
}

/**
 * kml_filter_genl_parse_entry() - one message of a GETRULE dump
 * @msg: the message
 * @len: its length
 * @e: filled in
 *
 * Every attribute the dump promises must be there: a rule without its
 * counters or generation would print as zeros that are not.
 * Return: 0, or -EPROTO.
 */
int kml_filter_genl_parse_entry(const struct nlmsghdr *msg, size_t len,
				struct kml_filter_genl_entry *e)
{
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];

	memset(e, 0, sizeof(*e));
	if (kml_nl_parse(msg, len, tb, KML_FILTER_A_MAX) ||
	    kml_nl_get_u32(&tb[KML_FILTER_A_INDEX], &e->index) ||
	    kml_filter_genl_get_rule(&tb[KML_FILTER_A_RULE], &e->rule) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_PACKETS], &e->packets) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_BYTES], &e->bytes) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_GENERATION], &e->generation))
		return -EPROTO;
	return 0;
}

/**
 * kml_filter_genl_parse_info() - the reply to GET_INFO
 * @msg: the message
 * @len: its length
 * @info: filled in
 *
 * What the client prints must be there (the log's state and counters
 * too, which ABI 4 always sends); the rest (the limits, the memory) is 0
 * when absent.
 * Return: 0, or -EPROTO.
 */
int kml_filter_genl_parse_info(const struct nlmsghdr *msg, size_t len,
			       struct kml_filter_genl_info *info)
{
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];

	memset(info, 0, sizeof(*info));
	if (kml_nl_parse(msg, len, tb, KML_FILTER_A_MAX) ||
	    kml_nl_get_u32(&tb[KML_FILTER_A_ABI_VERSION], &info->abi_version))
		return -EPROTO;
	/* another ABI may say the rest differently: the caller checks the ABI first */
	if (info->abi_version != KML_FILTER_ABI_VERSION)
		return 0;
	if (kml_nl_get_u64(&tb[KML_FILTER_A_GENERATION], &info->generation) ||
	    kml_nl_get_u32(&tb[KML_FILTER_A_NRULES], &info->nrules) ||
	    kml_nl_get_u8(&tb[KML_FILTER_A_POLICY], &info->policy) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_POLICY_PACKETS], &info->policy_packets) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_POLICY_BYTES], &info->policy_bytes) ||
	    kml_nl_get_u8(&tb[KML_FILTER_A_LOG_ATTACHED], &info->log_attached) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_LOG_RECORDS], &info->log_records) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_LOG_SUPPRESSED], &info->log_suppressed) ||
	    kml_nl_get_u64(&tb[KML_FILTER_A_LOG_LOST], &info->log_lost))
		return -EPROTO;
	if ((tb[KML_FILTER_A_MAX_RULES].data &&
	     kml_nl_get_u32(&tb[KML_FILTER_A_MAX_RULES], &info->max_rules)) ||
	    (tb[KML_FILTER_A_MEM_BYTES].data &&
	     kml_nl_get_u64(&tb[KML_FILTER_A_MEM_BYTES], &info->mem_bytes)) ||
	    (tb[KML_FILTER_A_MEM_LIMIT].data &&
	     kml_nl_get_u64(&tb[KML_FILTER_A_MEM_LIMIT], &info->mem_limit)) ||
	    (tb[KML_FILTER_A_POLICY_FWD].data &&
	     kml_nl_get_u8(&tb[KML_FILTER_A_POLICY_FWD], &info->policy_fwd)) ||
	    (tb[KML_FILTER_A_POLICY_FWD_PACKETS].data &&
	     kml_nl_get_u64(&tb[KML_FILTER_A_POLICY_FWD_PACKETS],
			    &info->policy_fwd_packets)))
		return -EPROTO;
	return 0;
}

/**
 * kml_filter_genl_log_attach() - a LOG_ATTACH request
 * @m: set up in @buf
 * @buf: 4-aligned room for it
 * @cap: its size
 * @family: the family's id
 * @ring_fd: the sender's descriptor of a sized /dev/kml_ring: the kernel
 *	looks it up in the sending process, so it must stay open until the
 *	answer is read
 *
 * Return: the message's length, -EBADF for a negative @ring_fd, or
 * -EMSGSIZE.
 */
int kml_filter_genl_log_attach(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family,
			       int ring_fd)
{
	if (ring_fd < 0)
		return -EBADF;
	kml_nl_msg_init(m, buf, cap, family, 0, KML_FILTER_CMD_LOG_ATTACH,
			KML_FILTER_GENL_VERSION);
	kml_nl_put_u32(m, KML_FILTER_A_LOG_RING, (uint32_t)ring_fd);
	return kml_nl_msg_len(m);
}

/** kml_filter_genl_log_detach() - a LOG_DETACH request, which has no attribute. */
int kml_filter_genl_log_detach(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family)
{
	kml_nl_msg_init(m, buf, cap, family, 0, KML_FILTER_CMD_LOG_DETACH,
			KML_FILTER_GENL_VERSION);
	return kml_nl_msg_len(m);
}

/** kml_filter_genl_dump_reset() - empty @d for a new read, keeping its memory. */
void kml_filter_genl_dump_reset(struct kml_filter_genl_dump *d)
{
	d->count = 0;
	d->generation = 0;
	d->torn = false;
	d->err = 0;
}

void kml_filter_genl_dump_free(struct kml_filter_genl_dump *d)
{
	free(d->e);
	memset(d, 0, sizeof(*d));
}

/**
 * kml_filter_genl_dump_msg() - take one message of a GETRULE dump
 * @msg: the message
 * @len: its length
 * @arg: the struct kml_filter_genl_dump
 *
 * A kml_nl_cb. The kernel marks a dump that spanned an update with
 * NLM_F_DUMP_INTR, but only on the messages built after it noticed; the
 * generation every message carries and the indexes (0, 1, 2, ...) tell
 * the same from the entries themselves, so either makes the dump torn.
 * Return: 0, or -EPROTO / -ENOMEM (also kept in ->err).
 */
int kml_filter_genl_dump_msg(const struct nlmsghdr *msg, size_t len, void *arg)
{
	struct kml_filter_genl_dump *d = arg;
	struct kml_filter_genl_entry e;

	if (d->err)
		return d->err;
	if (kml_filter_genl_parse_entry(msg, len, &e))
		return d->err = -EPROTO;
	if (msg->nlmsg_flags & NLM_F_DUMP_INTR)
		d->torn = true;
	if (d->count && e.generation != d->generation)
		d->torn = true;
	if (e.index != d->count)
		d->torn = true;
	if (d->count == d->cap) {
		unsigned int cap = d->cap ? d->cap * 2 : 64;
		struct kml_filter_genl_entry *n;

		if (cap > KML_FILTER_MAX_RULES + 1u)
			return d->err = -EPROTO; /* more rules than there can be */
		n = realloc(d->e, cap * sizeof(*n));
		if (!n)
			return d->err = -ENOMEM;
		d->e = n;
		d->cap = cap;
	}
	d->generation = e.generation;
	d->e[d->count++] = e;
	return 0;
}

/**
 * kml_filter_genl_dump_verdict() - what to do after a GETRULE dump
 * @d: the dump as collected
 * @request_ret: what kml_nl_request returned for it
 *
 * Return: 0 (@d is one consistent snapshot), -EAGAIN (it is torn: read
 * it again), or the error that ended it.
 */
int kml_filter_genl_dump_verdict(const struct kml_filter_genl_dump *d, int request_ret)
{
	if (d->err)
		return d->err;
	if (request_ret == -EINTR)
		return -EAGAIN;
	if (request_ret < 0)
		return request_ret;
	return d->torn ? -EAGAIN : 0;
}

/**
 * kml_filter_genl_put_begin() - the attributes of REPLACE_BEGIN
 * @m: a request with the command %KML_FILTER_CMD_REPLACE_BEGIN
 * @nrules: the number of rules the new set will have
 * @policy: %KML_FILTER_ACCEPT or %KML_FILTER_DROP, or 0 to keep the
 *	current policy (a rule file without a policy line)
 * @policy_fwd: the same for the forward policy ("policy fwd" line)
 *
 * Return: the message's length, or -EMSGSIZE.
 */
int kml_filter_genl_put_begin(struct kml_nl_msg *m, uint32_t nrules, uint8_t policy,
			      uint8_t policy_fwd)
{
	kml_nl_put_u32(m, KML_FILTER_A_NRULES, nrules);
	if (policy)
		kml_nl_put_u8(m, KML_FILTER_A_POLICY, policy);
	if (policy_fwd)
		kml_nl_put_u8(m, KML_FILTER_A_POLICY_FWD, policy_fwd);
	return kml_nl_msg_len(m);
}

/**
 * kml_filter_genl_parse_txn() - the reply to REPLACE_BEGIN
 * @msg: the message
 * @len: its length
 * @txn: set to %KML_FILTER_A_TXN
 *
 * Return: 0, or -EPROTO.
 */
int kml_filter_genl_parse_txn(const struct nlmsghdr *msg, size_t len, uint32_t *txn)
{
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];

	if (kml_nl_parse(msg, len, tb, KML_FILTER_A_MAX) ||
	    kml_nl_get_u32(&tb[KML_FILTER_A_TXN], txn))
		return -EPROTO;
	return 0;
}

/**
 * kml_filter_genl_put_rules() - the next chunk of a replace in parts
 * @m: a request with the command %KML_FILTER_CMD_REPLACE_RULES, whose
 *	buffer is the chunk's size (%KML_FILTER_GENL_CHUNK)
 * @txn: what REPLACE_BEGIN's reply named
 * @rules: the rules not sent yet
 * @count: their number
 *
 * %KML_FILTER_A_TXN, then a %KML_FILTER_A_RULES nest of as many rules as
 * fit, each a nest of type 1, 2, ... (its place in the chunk: the kernel
 * takes any nonzero type, and kml_filter_genl_chunk_rule() counts nests,
 * not types). A rule is only started with %KML_FILTER_GENL_RULE_MAX bytes
 * left, so no put fails half-way.
 * Return: the number of rules put (at least 1 when @count is), or
 * -EMSGSIZE when not even one fits.
 */
int kml_filter_genl_put_rules(struct kml_nl_msg *m, uint32_t txn,
			      const struct kml_filter_rule *rules, unsigned int count)
{
	unsigned int n = 0;
	int nest;

	kml_nl_put_u32(m, KML_FILTER_A_TXN, txn);
	nest = kml_nl_nest_start(m, KML_FILTER_A_RULES);
	/* NLA_HDRLEN: room for nothing else; the nest's own length is 16 bits */
	while (n < count && nest >= 0 && !m->err &&
	       m->cap - m->len >= KML_FILTER_GENL_RULE_MAX &&
	       m->len - (size_t)nest + KML_FILTER_GENL_RULE_MAX <= UINT16_MAX) {
		if (kml_filter_genl_put_rule(m, (uint16_t)(n + 1), &rules[n], NULL) < 0)
			return -EMSGSIZE;
		n++;
	}
	if (kml_nl_nest_end(m, nest) < 0 || (count && !n))
		return -EMSGSIZE;
	return (int)n;
}

/** kml_filter_genl_put_commit() - REPLACE_COMMIT's (or _ABORT's) attribute. */
int kml_filter_genl_put_commit(struct kml_nl_msg *m, uint32_t txn)
{
	kml_nl_put_u32(m, KML_FILTER_A_TXN, txn);
	return kml_nl_msg_len(m);
}

/**
 * kml_filter_genl_chunk_rule() - which rule of a chunk an ack's offset is in
 * @req: a REPLACE_RULES request as kml_filter_genl_put_rules() built it
 * @len: its length
 * @at: NLMSGERR_ATTR_OFFS (or _MISS_NEST), from the start of @req
 * @k: set to the rule's place in the chunk, from 0 (the caller adds the
 *	index of the chunk's first rule)
 * @offs: set to where that rule's attributes are, as
 *	kml_filter_genl_put_rule() would have set it, for
 *	kml_filter_genl_offs_word()
 *
 * Return: 0, or -ENOENT when @at is in no rule's nest (the request
 * itself, %KML_FILTER_A_TXN, the %KML_FILTER_A_RULES nest's header).
 */
int kml_filter_genl_chunk_rule(const void *req, size_t len, uint32_t at, unsigned int *k,
			       struct kml_filter_genl_offs *offs)
{
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1], a, ra;
	struct kml_nl_iter it, rit;
	unsigned int n = 0;
	int t;

	if (kml_nl_parse(req, len, tb, KML_FILTER_A_MAX) || !tb[KML_FILTER_A_RULES].data)
		return -ENOENT;
	kml_nl_iter_init(&it, tb[KML_FILTER_A_RULES].data, tb[KML_FILTER_A_RULES].len,
			 tb[KML_FILTER_A_RULES].off + NLA_HDRLEN);
	while (kml_nl_iter_next(&it, &a)) {
		uint32_t end = a.off + NLA_ALIGN(NLA_HDRLEN + a.len);

		if (at < a.off || at >= end) {
			n++;
			continue;
		}
		offs->nest = (int)a.off;
		offs->end = (int)end;
		for (t = 0; t <= KML_FILTER_RA_MAX; t++)
			offs->ra[t] = -1;
		kml_nl_iter_init(&rit, a.data, a.len, a.off + NLA_HDRLEN);
		while (kml_nl_iter_next(&rit, &ra))
			if (ra.type >= 1 && ra.type <= KML_FILTER_RA_MAX)
				offs->ra[ra.type] = (int)ra.off;
		*k = n;
		return 0;
	}
	return -ENOENT;
}

/* The word that set the part of the rule attribute @type carries. */
static int word_of(const struct kml_filter_words *w, int type)
{
	switch (type) {
	case KML_FILTER_RA_FAMILY:
		return w->family;
	case KML_FILTER_RA_PROTO:
		return w->proto;
	case KML_FILTER_RA_DIR:
		return w->dir;
	case KML_FILTER_RA_ACTION:
		return w->action;
	case KML_FILTER_RA_SRC:
	case KML_FILTER_RA_SRC_LEN:
		return w->src;
	case KML_FILTER_RA_DST:
	case KML_FILTER_RA_DST_LEN:
		return w->dst;
	case KML_FILTER_RA_SPORT_LO:
	case KML_FILTER_RA_SPORT_HI:
		return w->sport;
	case KML_FILTER_RA_DPORT_LO:
	case KML_FILTER_RA_DPORT_HI:
		return w->dport;
	case KML_FILTER_RA_CT_STATE:
		return w->ct;
	case KML_FILTER_RA_LOG_RATE:
	case KML_FILTER_RA_LOG_BURST:
		return w->log;
	default:
		return -1;
	}
}

/**
 * kml_filter_genl_offs_word() - the rule word an extended ack's offset names
 * @offs: where kml_filter_genl_put_rule() put the rule's attributes
 * @words: which word set each part (kml_filter_parse_rule_words())
 * @at: NLMSGERR_ATTR_OFFS, from the start of the request
 *
 * Only an offset that is exactly one of the rule's attributes counts (the
 * kernel names an attribute by its header); the nest itself, another
 * attribute or a part no word set (a default) is no word.
 * Return: the word's index, or -1.
 */
int kml_filter_genl_offs_word(const struct kml_filter_genl_offs *offs,
			      const struct kml_filter_words *words, uint32_t at)
{
	int t;

	for (t = 1; t <= KML_FILTER_RA_MAX; t++)
		if (offs->ra[t] >= 0 && (uint32_t)offs->ra[t] == at)
			return word_of(words, t);
	return -1;
}

/**
 * kml_filter_genl_point() - the rule's words, and carets under one of them
 * @argc: number of words
 * @argv: the words
 * @word: the index of the word to point at
 * @buf: set to two lines: the words indented by two spaces and separated
 *	by one, then "^" under each byte of word @word
 * @len: size of @buf
 *
 * Return: the length written, or -1 when @word is no word of @argv or
 * the text does not fit (then nothing should be printed).
 */
int kml_filter_genl_point(int argc, char *const argv[], int word, char *buf, size_t len)
{
	size_t at = 0, col = 0, wlen = 0, need, k;
	int i;

	if (word < 0 || word >= argc || !len)
		return -1;
	/* the first line, and the column the word starts at */
	need = 2;
	for (i = 0; i < argc; i++) {
		if (i == word) {
			col = need + (i ? 1 : 0);
			wlen = strlen(argv[i]);
		}
		need += (i ? 1 : 0) + strlen(argv[i]);
	}
	if (!wlen)
		wlen = 1; /* an empty word still gets a caret */
	need += 1 + col + wlen + 1;
	if (need >= len)
		return -1;
	buf[at++] = ' ';
	buf[at++] = ' ';
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (i)
			buf[at++] = ' ';
		memcpy(buf + at, argv[i], n);
		at += n;
	}
	buf[at++] = '\n';
	for (k = 0; k < col; k++)
		buf[at++] = ' ';
	for (k = 0; k < wlen; k++)
		buf[at++] = '^';
	buf[at++] = '\n';
	buf[at] = '\0';
	return (int)at;
}
