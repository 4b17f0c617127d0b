// SPDX-License-Identifier: GPL-2.0
/*
 * libkml_nl (see kml_nl.h): build generic netlink requests in a caller's
 * buffer, parse replies and extended acks without trusting any length,
 * and run one request on a socket, dumps included.
 *
 * Every read of a header or value from a received buffer is a memcpy: the
 * fuzz target and a caller's buffer need not be aligned, and a cast would
 * be undefined behaviour there (UBSan says so).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kml_nl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif
#ifndef NLM_F_CAPPED
#define NLM_F_CAPPED 0x100
#endif
#ifndef NLM_F_ACK_TLVS
#define NLM_F_ACK_TLVS 0x200
#endif

/* The kernel's MAX_ERRNO: an error field outside [-4095, 0] is no errno. */
#define KML_NL_MAX_ERRNO 4095

/*
 * The step from an item of @len bytes to the next in @rem bytes: @len
 * rounded up to 4, or all of @rem when the padding of the last item is
 * missing. Computed without ever forming len + 3, which can wrap a
 * 32-bit size_t for a hostile nlmsg_len.
 */
static size_t step(size_t len, size_t rem)
{
	size_t pad = (4 - (len & 3)) & 3;

	return rem - len > pad ? len + pad : rem;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* ---- building ---- */

static void set_len(struct kml_nl_msg *m)
{
	uint32_t len = (uint32_t)m->len;

	memcpy(m->buf + offsetof(struct nlmsghdr, nlmsg_len), &len, sizeof(len));
}

static int fail(struct kml_nl_msg *m, int err)
{
	if (!m->err)
		m->err = err;
	return m->err;
}

/**
 * kml_nl_msg_init() - start a generic netlink request in @buf
 * @m: the message state
 * @buf: where it is built; nothing is ever written past @cap bytes
 * @cap: size of @buf
 * @family: the family id (nlmsg_type), e.g. GENL_ID_CTRL
 * @flags: nlmsg_flags besides NLM_F_REQUEST (which is always set), e.g.
 *	NLM_F_DUMP; kml_nl_request adds NLM_F_ACK to a non-dump request
 * @cmd: genlmsghdr.cmd
 * @version: genlmsghdr.version
 *
 * The sequence number and port id are left 0 for kml_nl_request to fill.
 * Return: 0, or -EMSGSIZE if @cap cannot hold the headers (every later put
 * then fails the same way, so a caller may check only at the end).
 */
int kml_nl_msg_init(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family,
		    uint16_t flags, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr nh = {
		.nlmsg_len = KML_NL_HDRLEN, .nlmsg_type = family,
		.nlmsg_flags = flags | NLM_F_REQUEST,
	};
	struct genlmsghdr gh = { .cmd = cmd, .version = version };

	m->buf = buf;
	/* nlmsg_len is 32 bits: a larger buffer is never filled past that */
	m->cap = cap > UINT32_MAX ? UINT32_MAX & ~3u : cap;
	m->len = 0;
	m->err = 0;
	if (m->cap < KML_NL_HDRLEN)
		return fail(m, -EMSGSIZE);
	memcpy(m->buf, &nh, sizeof(nh));
	memcpy(m->buf + NLMSG_HDRLEN, &gh, sizeof(gh));
	m->len = KML_NL_HDRLEN;
	return 0;
}

/**
 * kml_nl_msg_len() - the finished request's length
 * @m: the message
 *
 * Return: the byte count to send (as nlmsg_len says), or the first error
 * any init or put on @m returned.
 */
int kml_nl_msg_len(const struct kml_nl_msg *m)
{
	return m->err ? m->err : (int)m->len;
}

/*
 * Room for an attribute of @plen payload bytes and, before it, @pre bytes
 * of padding attribute: both fit or neither is written.
 */
static int room(struct kml_nl_msg *m, size_t pre, size_t plen)
{
	if (m->err)
		return m->err;
	if (plen > UINT16_MAX - NLA_HDRLEN)
		return fail(m, -EMSGSIZE);
	if (pre + NLA_ALIGN(NLA_HDRLEN + plen) > m->cap - m->len)
		return fail(m, -EMSGSIZE);
	return 0;
}

/* Writes a header and payload at m->len; room() has been checked. */
static int emit(struct kml_nl_msg *m, uint16_t type, const void *data, size_t plen)
{
	struct nlattr nla = { .nla_len = (uint16_t)(NLA_HDRLEN + plen), .nla_type = type };
	size_t off = m->len, total = NLA_ALIGN(NLA_HDRLEN + plen);

	memcpy(m->buf + off, &nla, sizeof(nla));
	if (plen)
		memcpy(m->buf + off + NLA_HDRLEN, data, plen);
	/* the padding is sent: no stale byte of the caller's buffer leaks */
	memset(m->buf + off + NLA_HDRLEN + plen, 0, total - NLA_HDRLEN - plen);
	m->len += total;
	set_len(m);
	return (int)off;
}

/**
 * kml_nl_put() - append an attribute with a binary payload
 * @m: the message
 * @type: nla_type, flags included if any
 * @data: the payload (may be NULL when @len is 0)
 * @len: its length, at most 65531
 *
 * Return: the attribute's offset from the start of the message (what an
 * extended ack's NLMSGERR_ATTR_OFFS will name), or -EMSGSIZE, in which
 * case nothing was written and every later put fails too.
 */
int kml_nl_put(struct kml_nl_msg *m, uint16_t type, const void *data, size_t len)
{
	int err = room(m, 0, len);

	return err ? err : emit(m, type, data, len);
}

/** kml_nl_put_flag() - an attribute with no payload (NLA_FLAG). */
int kml_nl_put_flag(struct kml_nl_msg *m, uint16_t type)
{
	return kml_nl_put(m, type, NULL, 0);
}

int kml_nl_put_u8(struct kml_nl_msg *m, uint16_t type, uint8_t v)
{
	return kml_nl_put(m, type, &v, sizeof(v));
}

int kml_nl_put_u16(struct kml_nl_msg *m, uint16_t type, uint16_t v)
{
	return kml_nl_put(m, type, &v, sizeof(v));
}

int kml_nl_put_u32(struct kml_nl_msg *m, uint16_t type, uint32_t v)
{
	return kml_nl_put(m, type, &v, sizeof(v));
}

/*
 * A u64 at 4-byte alignment: netlink allows it, and the kernel reads
 * attributes with memcpy-safe accessors.
 */
int kml_nl_put_u64(struct kml_nl_msg *m, uint16_t type, uint64_t v)
{
	return kml_nl_put(m, type, &v, sizeof(v));
}

/**
 * kml_nl_put_u64_pad() - a u64 whose payload is 8-byte aligned
 * @m: the message
 * @type: nla_type
 * @v: the value
 * @padtype: the family's PAD attribute, inserted (empty) first when needed
 *
 * As the kernel's nla_put_u64_64bit, but the alignment is from the start
 * of the message, not of memory: the message is the same whatever the
 * buffer's address, and an 8-aligned buffer gives an aligned value too.
 * Return: the offset of the u64 attribute (not of the pad), or -EMSGSIZE
 * with neither written.
 */
int kml_nl_put_u64_pad(struct kml_nl_msg *m, uint16_t type, uint64_t v, uint16_t padtype)
{
	size_t pre = (m->len + NLA_HDRLEN) % 8 ? NLA_HDRLEN : 0;
	int err = room(m, pre, sizeof(v));

	if (err)
		return err;
	if (pre)
		emit(m, padtype, NULL, 0);
	return emit(m, type, &v, sizeof(v));
}

/** kml_nl_put_str() - a NUL-terminated string (NLA_NUL_STRING), NUL sent. */
int kml_nl_put_str(struct kml_nl_msg *m, uint16_t type, const char *s)
{
	return kml_nl_put(m, type, s, strlen(s) + 1);
}

/**
 * kml_nl_nest_start() - open a nested attribute
 * @m: the message
 * @type: its type; NLA_F_NESTED is added, as strict validation requires
 *
 * Return: the nest's offset, to give kml_nl_nest_end or _cancel, or
 * -EMSGSIZE.
 */
int kml_nl_nest_start(struct kml_nl_msg *m, uint16_t type)
{
	return kml_nl_put(m, type | NLA_F_NESTED, NULL, 0);
}

/* A nest offset that kml_nl_nest_start could have returned for @m. */
static bool nest_ok(const struct kml_nl_msg *m, int off)
{
	return off >= (int)KML_NL_HDRLEN && !(off & 3) && (size_t)off + NLA_HDRLEN <= m->len;
}

/**
 * kml_nl_nest_end() - close the nest opened at @nest_off
 * @m: the message
 * @nest_off: what kml_nl_nest_start returned (an error is passed through)
 *
 * Return: @nest_off, or -EMSGSIZE when the nest outgrew nla_len's 16 bits
 * (the message is then unusable: the error sticks), or -EINVAL for an
 * offset no nest_start returned.
 */
int kml_nl_nest_end(struct kml_nl_msg *m, int nest_off)
{
	size_t len;
	uint16_t l16;

	if (nest_off < 0)
		return nest_off;
	if (m->err)
		return m->err;
	if (!nest_ok(m, nest_off))
		return -EINVAL;
	len = m->len - (size_t)nest_off;
	if (len > UINT16_MAX)
		return fail(m, -EMSGSIZE);
	l16 = (uint16_t)len;
	memcpy(m->buf + nest_off + offsetof(struct nlattr, nla_len), &l16, sizeof(l16));
	return nest_off;
}

/**
 * kml_nl_nest_cancel() - drop the nest at @nest_off and all after it
 * @m: the message
 * @nest_off: what kml_nl_nest_start returned (an error: nothing done)
 *
 * Also forgets an -EMSGSIZE met inside the nest: what is left is whole,
 * so a caller can fill a request with as many nests as fit.
 */
void kml_nl_nest_cancel(struct kml_nl_msg *m, int nest_off)
{
	if (nest_off < 0 || !nest_ok(m, nest_off))
		return;
	m->len = (size_t)nest_off;
	m->err = 0;
	set_len(m);
}

/* ---- parsing ---- */

/**
 * kml_nl_msg_next() - the next netlink message of a received datagram
 * @buf: the datagram; 4-byte aligned (as a malloc'd buffer is) since the
 *	message returned is a struct pointer into it
 * @len: its length
 * @pos: where to look, 0 at first; advanced past the message
 * @msg: set to the message, whose nlmsg_len is then within @len
 *
 * Return: 1, 0 when the datagram is consumed, -EINVAL if what is left
 * is not a message (a header cut short, nlmsg_len < 16 or past the end).
 */
int kml_nl_msg_next(const void *buf, size_t len, size_t *pos, const struct nlmsghdr **msg)
{
	const uint8_t *b = buf;
	size_t rem;
	uint32_t mlen;

	if (*pos >= len)
		return 0;
	rem = len - *pos;
	if (rem < NLMSG_HDRLEN)
		return -EINVAL;
	mlen = rd32(b + *pos);
	if (mlen < NLMSG_HDRLEN || mlen > rem)
		return -EINVAL;
	*msg = (const struct nlmsghdr *)(b + *pos);
	*pos += step(mlen, rem);
	return 1;
}

/**
 * kml_nl_iter_init() - walk the attributes in @data
 * @it: the iterator
 * @data: the first attribute (a message's or a nest's payload)
 * @len: bytes of attributes
 * @off: offset of @data from the start of the message, for
 *	struct kml_nl_attr.off; must be 4-aligned (attributes are)
 */
void kml_nl_iter_init(struct kml_nl_iter *it, const void *data, size_t len, uint32_t off)
{
	it->p = data;
	it->rem = len;
	it->off = off;
	it->err = (off & 3) || len > UINT32_MAX - off ? -EINVAL : 0;
}

/**
 * kml_nl_iter_next() - the next attribute, validated
 * @it: the iterator
 * @a: filled with it
 *
 * An attribute must have nla_len >= 4 and lie within what is left; the
 * next starts at nla_len rounded up to 4. Fewer than 4 bytes left over
 * are an error, not ignored: the kernel never sends them. A last
 * attribute whose padding is missing is accepted, as the kernel and
 * libmnl accept it.
 * Return: true with @a set, or false at the end, with it->err -EINVAL if
 * the walk stopped at a malformed attribute.
 */
bool kml_nl_iter_next(struct kml_nl_iter *it, struct kml_nl_attr *a)
{
	struct nlattr nla;
	size_t s;

	if (it->err || !it->rem)
		return false;
	if (it->rem < NLA_HDRLEN)
		goto bad;
	memcpy(&nla, it->p, sizeof(nla));
	if (nla.nla_len < NLA_HDRLEN || nla.nla_len > it->rem)
		goto bad;
	a->data = it->p + NLA_HDRLEN;
	a->len = nla.nla_len - NLA_HDRLEN;
	a->type = nla.nla_type & NLA_TYPE_MASK;
	a->flags = nla.nla_type & ~NLA_TYPE_MASK;
	a->off = it->off;
	s = step(nla.nla_len, it->rem);
	it->p += s;
	it->rem -= s;
	it->off += (uint32_t)s;
	return true;
bad:
	it->err = -EINVAL;
	return false;
}

/**
 * kml_nl_parse_attrs() - attributes into a table indexed by type
 * @data: the first attribute
 * @len: bytes of attributes
 * @off: offset of @data in its message (4-aligned)
 * @tb: maxtype + 1 entries; absent ones get data == NULL
 * @maxtype: the highest type kept; higher ones (a newer kernel's) are
 *	validated and skipped
 *
 * A type seen twice keeps its last value, as the kernel's nla_parse.
 * Return: 0, or -EINVAL if any attribute is malformed (@tb is then
 * partial and must not be used).
 */
int kml_nl_parse_attrs(const void *data, size_t len, uint32_t off,
		       struct kml_nl_attr *tb, unsigned int maxtype)
{
	struct kml_nl_iter it;
	struct kml_nl_attr a;

	memset(tb, 0, sizeof(*tb) * ((size_t)maxtype + 1));
	kml_nl_iter_init(&it, data, len, off);
	while (kml_nl_iter_next(&it, &a))
		if (a.type <= maxtype)
			tb[a.type] = a;
	return it.err;
}

/* nlmsg_len of the message at @buf, checked against @len and @min. */
static int msg_len(const void *buf, size_t len, size_t min, uint32_t *mlen)
{
	if (len < NLMSG_HDRLEN)
		return -EINVAL;
	*mlen = rd32(buf);
	if (*mlen < min || *mlen > len)
		return -EINVAL;
	return 0;
}

/**
 * kml_nl_parse() - the attributes of one generic netlink message
 * @buf: the message, nlmsghdr first (need not be aligned)
 * @len: bytes at @buf; nlmsg_len must be within them (more may follow)
 * @tb: maxtype + 1 entries
 * @maxtype: as kml_nl_parse_attrs
 *
 * Offsets in @tb are from @buf, as in an extended ack.
 * Return: 0, or -EINVAL for a message or attribute cut short or malformed.
 */
int kml_nl_parse(const void *buf, size_t len, struct kml_nl_attr *tb, unsigned int maxtype)
{
	uint32_t mlen;
	int err = msg_len(buf, len, KML_NL_HDRLEN, &mlen);

	if (err) {
		memset(tb, 0, sizeof(*tb) * ((size_t)maxtype + 1));
		return err;
	}
	return kml_nl_parse_attrs((const uint8_t *)buf + KML_NL_HDRLEN, mlen - KML_NL_HDRLEN,
				  KML_NL_HDRLEN, tb, maxtype);
}

/**
 * kml_nl_parse_nested() - the attributes inside @nest
 * @nest: an attribute from a table or iterator (absent: -ENOENT)
 * @tb: maxtype + 1 entries
 * @maxtype: as kml_nl_parse_attrs
 *
 * NLA_F_NESTED is not required: older families do not set it.
 * Return: 0, -ENOENT, or -EINVAL for garbage inside the nest.
 */
int kml_nl_parse_nested(const struct kml_nl_attr *nest, struct kml_nl_attr *tb,
			unsigned int maxtype)
{
	if (!nest->data) {
		memset(tb, 0, sizeof(*tb) * ((size_t)maxtype + 1));
		return -ENOENT;
	}
	return kml_nl_parse_attrs(nest->data, nest->len, nest->off + NLA_HDRLEN, tb, maxtype);
}

/** kml_nl_genl_hdr() - a generic netlink message's cmd and version; 0 or -EINVAL. */
int kml_nl_genl_hdr(const void *buf, size_t len, uint8_t *cmd, uint8_t *version)
{
	struct genlmsghdr gh;
	uint32_t mlen;
	int err = msg_len(buf, len, KML_NL_HDRLEN, &mlen);

	if (err)
		return err;
	memcpy(&gh, (const uint8_t *)buf + NLMSG_HDRLEN, sizeof(gh));
	*cmd = gh.cmd;
	*version = gh.version;
	return 0;
}

/* A fixed-size value: absent is -ENOENT, any other length -EINVAL. */
static int get_fixed(const struct kml_nl_attr *a, void *v, size_t size)
{
	if (!a->data)
		return -ENOENT;
	if (a->len != size)
		return -EINVAL;
	memcpy(v, a->data, size);
	return 0;
}

int kml_nl_get_u8(const struct kml_nl_attr *a, uint8_t *v)
{
	return get_fixed(a, v, sizeof(*v));
}

int kml_nl_get_u16(const struct kml_nl_attr *a, uint16_t *v)
{
	return get_fixed(a, v, sizeof(*v));
}

int kml_nl_get_u32(const struct kml_nl_attr *a, uint32_t *v)
{
	return get_fixed(a, v, sizeof(*v));
}

int kml_nl_get_u64(const struct kml_nl_attr *a, uint64_t *v)
{
	return get_fixed(a, v, sizeof(*v));
}

/* NLA_UINT (6.8+): 4 bytes when the value fits, else 8. */
int kml_nl_get_uint(const struct kml_nl_attr *a, uint64_t *v)
{
	uint32_t v32;

	if (a->data && a->len == sizeof(v32)) {
		memcpy(&v32, a->data, sizeof(v32));
		*v = v32;
		return 0;
	}
	return get_fixed(a, v, sizeof(*v));
}

/**
 * kml_nl_get_str() - a string attribute, in place
 * @a: the attribute
 * @s: set to its payload, which holds a NUL (bytes after it are ignored)
 *
 * Return: 0, -ENOENT, or -EINVAL when no NUL ends it within its length:
 * a caller then never reads past the attribute.
 */
int kml_nl_get_str(const struct kml_nl_attr *a, const char **s)
{
	if (!a->data)
		return -ENOENT;
	if (!memchr(a->data, 0, a->len))
		return -EINVAL;
	*s = (const char *)a->data;
	return 0;
}

/** kml_nl_get_bin() - the payload and its length; 0 or -ENOENT. */
int kml_nl_get_bin(const struct kml_nl_attr *a, const void **data, size_t *len)
{
	if (!a->data)
		return -ENOENT;
	*data = a->data;
	*len = a->len;
	return 0;
}

/** kml_nl_get_flag() - whether the attribute is present. */
bool kml_nl_get_flag(const struct kml_nl_attr *a)
{
	return a->data;
}

/**
 * kml_nl_attr_path() - which attribute of a request an offset names
 * @req: the request as sent (nlmsghdr first)
 * @len: its length
 * @offs: an NLMSGERR_ATTR_OFFS or _MISS_NEST from the ack
 * @types: set to the attribute types from the outermost nest inward
 * @max: entries in @types
 *
 * The kernel names the bad attribute by the offset of its header; when
 * that is inside a nest (an attribute with NLA_F_NESTED, as
 * kml_nl_nest_start makes them) we descend into it. The caller may instead keep
 * the offsets its puts returned and compare, this is for when it did not.
 * Return: the depth (>= 1), -ENOENT when no attribute header is at @offs,
 * -ENOSPC when deeper than @max, -EINVAL for a malformed request.
 */
int kml_nl_attr_path(const void *req, size_t len, uint32_t offs,
		     uint16_t *types, unsigned int max)
{
	struct kml_nl_iter it;
	struct kml_nl_attr a;
	unsigned int depth = 0;
	uint32_t mlen;
	int err = msg_len(req, len, KML_NL_HDRLEN, &mlen);

	if (err)
		return err;
	kml_nl_iter_init(&it, (const uint8_t *)req + KML_NL_HDRLEN, mlen - KML_NL_HDRLEN,
			 KML_NL_HDRLEN);
	while (kml_nl_iter_next(&it, &a)) {
		uint32_t end = a.off + NLA_HDRLEN + a.len;

		if (offs < a.off || offs >= end)
			continue;
		if (depth == max)
			return -ENOSPC;
		types[depth++] = a.type;
		if (offs == a.off)
			return (int)depth;
		/*
		 * Inside a header, or a payload that is no nest (what we
		 * build always has NLA_F_NESTED on its nests).
		 */
		if (offs < a.off + NLA_HDRLEN || !(a.flags & NLA_F_NESTED))
			return -ENOENT;
		kml_nl_iter_init(&it, a.data, a.len, a.off + NLA_HDRLEN);
	}
	return it.err ? it.err : -ENOENT;
}

/* ---- errors and acks ---- */

/* The extended-ack TLVs at [@off, @end) of the message at @b. */
static int parse_tlvs(const uint8_t *b, size_t off, size_t end, struct kml_nl_err *e)
{
	struct kml_nl_attr tb[KML_NLERR_ATTR_MISS_NEST + 1];
	const struct kml_nl_attr *m = &tb[KML_NLERR_ATTR_MSG];
	int err;

	if (off >= end)
		return 0; /* the flag with no TLV after all */
	err = kml_nl_parse_attrs(b + off, end - off, (uint32_t)off, tb, KML_NLERR_ATTR_MISS_NEST);
	if (err)
		return err;
	if (m->data) {
		/* bounded: the kernel's string is NUL-terminated, a forged one need not be */
		const uint8_t *nul = memchr(m->data, 0, m->len);
		size_t n = nul ? (size_t)(nul - m->data) : m->len;

		if (n > sizeof(e->msg) - 1)
			n = sizeof(e->msg) - 1;
		memcpy(e->msg, m->data, n);
		e->msg[n] = '\0';
	}
	if (tb[KML_NLERR_ATTR_OFFS].data) {
		if (kml_nl_get_u32(&tb[KML_NLERR_ATTR_OFFS], &e->offs))
			return -EINVAL;
		e->has_offs = true;
	}
	if (tb[KML_NLERR_ATTR_MISS_TYPE].data) {
		if (kml_nl_get_u32(&tb[KML_NLERR_ATTR_MISS_TYPE], &e->miss_type))
			return -EINVAL;
		e->has_miss_type = true;
	}
	if (tb[KML_NLERR_ATTR_MISS_NEST].data) {
		if (kml_nl_get_u32(&tb[KML_NLERR_ATTR_MISS_NEST], &e->miss_nest))
			return -EINVAL;
		e->has_miss_nest = true;
	}
	return 0;
}

static int errno_ok(int32_t v)
{
	return v <= 0 && v >= -KML_NL_MAX_ERRNO;
}

/**
 * kml_nl_parse_error() - an NLMSG_ERROR message: an ack or an error
 * @buf: the message (nlmsghdr first; need not be aligned)
 * @len: bytes at @buf
 * @e: filled: error (0 for an ack), seq, and the extended ack if any
 *
 * After struct nlmsgerr the kernel echoes the request's payload unless
 * NLM_F_CAPPED (then only its header, already inside nlmsgerr); with
 * NLM_F_ACK_TLVS the extended-ack attributes follow, 4-aligned. The
 * echo's nlmsg_len is the request's even when capped: it is only used to
 * skip an uncapped echo, and checked against the message first.
 * Return: 0, or -EINVAL for a malformed message. If the fixed part was
 * sound, e->error and e->seq are set even then (the TLVs are not).
 */
int kml_nl_parse_error(const void *buf, size_t len, struct kml_nl_err *e)
{
	const uint8_t *b = buf;
	struct nlmsghdr nh;
	struct nlmsgerr ne;
	size_t hlen = sizeof(ne), room;
	uint32_t mlen;
	int err;

	memset(e, 0, sizeof(*e));
	err = msg_len(buf, len, NLMSG_HDRLEN + sizeof(ne), &mlen);
	if (err)
		return err;
	memcpy(&nh, b, sizeof(nh));
	memcpy(&ne, b + NLMSG_HDRLEN, sizeof(ne));
	if (nh.nlmsg_type != NLMSG_ERROR || !errno_ok(ne.error))
		return -EINVAL;
	e->error = ne.error;
	e->seq = nh.nlmsg_seq;
	if (!(nh.nlmsg_flags & NLM_F_ACK_TLVS))
		return 0;
	if (!(nh.nlmsg_flags & NLM_F_CAPPED)) {
		room = mlen - NLMSG_HDRLEN - sizeof(ne);
		if (ne.msg.nlmsg_len < NLMSG_HDRLEN || ne.msg.nlmsg_len - NLMSG_HDRLEN > room)
			return -EINVAL;
		hlen += ne.msg.nlmsg_len - NLMSG_HDRLEN;
	}
	return parse_tlvs(b, NLMSG_HDRLEN + NLMSG_ALIGN(hlen), mlen, e);
}

/**
 * kml_nl_parse_done() - the NLMSG_DONE that ends a dump
 * @buf: the message
 * @len: bytes at @buf
 * @e: filled as by kml_nl_parse_error: a dump that failed part-way says
 *	so here, with an extended ack after the int when NLM_F_ACK_TLVS
 *
 * A DONE with no payload (kernels before 4.x) is a success.
 * Return: 0 or -EINVAL.
 */
int kml_nl_parse_done(const void *buf, size_t len, struct kml_nl_err *e)
{
	const uint8_t *b = buf;
	struct nlmsghdr nh;
	int32_t v;
	uint32_t mlen;
	int err;

	memset(e, 0, sizeof(*e));
	err = msg_len(buf, len, NLMSG_HDRLEN, &mlen);
	if (err)
		return err;
	memcpy(&nh, b, sizeof(nh));
	if (nh.nlmsg_type != NLMSG_DONE)
		return -EINVAL;
	e->seq = nh.nlmsg_seq;
	if (mlen == NLMSG_HDRLEN)
		return 0;
	if (mlen < NLMSG_HDRLEN + sizeof(v))
		return -EINVAL;
	memcpy(&v, b + NLMSG_HDRLEN, sizeof(v));
	if (!errno_ok(v))
		return -EINVAL;
	e->error = v;
	if (!(nh.nlmsg_flags & NLM_F_ACK_TLVS))
		return 0;
	return parse_tlvs(b, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(v)), mlen, e);
}

/* ---- the socket ---- */

/* An option only newer kernels know: ENOPROTOOPT is no failure. */
static int opt_on(int fd, int opt)
{
	int one = 1;

	if (setsockopt(fd, SOL_NETLINK, opt, &one, sizeof(one)) && errno != ENOPROTOOPT)
		return -errno;
	return 0;
}

/**
 * kml_nl_open() - a NETLINK_GENERIC socket, bound, with extended acks
 * @s: the socket state
 *
 * NETLINK_EXT_ACK asks for error messages and offsets; NETLINK_GET_STRICT_CHK
 * makes the kernel refuse what it would otherwise ignore in a dump request
 * (4.20+: older kernels refuse the option, and are used without).
 * Return: 0 or -errno.
 */
int kml_nl_open(struct kml_nl_sock *s)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t salen = sizeof(sa);
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (s->fd < 0)
		return -errno;
	err = opt_on(s->fd, NETLINK_EXT_ACK);
	if (!err)
		err = opt_on(s->fd, NETLINK_GET_STRICT_CHK);
	if (!err && bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	if (!err && getsockname(s->fd, (struct sockaddr *)&sa, &salen))
		err = -errno;
	if (err) {
		close(s->fd);
		s->fd = -1;
		return err;
	}
	s->portid = sa.nl_pid;
	/* not 0 at each start, so a stale reply of a previous run is not ours */
	s->seq = (uint32_t)time(NULL);
	return 0;
}

void kml_nl_close(struct kml_nl_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->buf);
	s->buf = NULL;
	s->bufsize = 0;
}

/*
 * One datagram into s->buf, grown to its size first (a dump's can be
 * 32 KiB or more): a truncated datagram would lose messages silently.
 * Returns its length or -errno; EINTR is retried, so a caller's -EINTR
 * only ever means NLM_F_DUMP_INTR.
 */
static ssize_t recv_one(struct kml_nl_sock *s, uint32_t *from)
{
	struct sockaddr_nl sa;
	socklen_t salen;
	ssize_t n;

	do
		n = recv(s->fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n > s->bufsize || !s->buf) {
		size_t size = (size_t)n < 8192 ? 8192 : (size_t)n;
		uint8_t *b = realloc(s->buf, size);

		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->bufsize = size;
	}
	do {
		salen = sizeof(sa);
		n = recvfrom(s->fd, s->buf, s->bufsize, MSG_TRUNC, (struct sockaddr *)&sa, &salen);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n > s->bufsize)
		return -EMSGSIZE; /* grew between peek and read: cannot happen */
	*from = sa.nl_pid;
	return n;
}

/**
 * kml_nl_request() - send @req and collect every reply to it
 * @s: an open socket
 * @req: a finished message (its sticky error, if any, is returned);
 *	its seq and flags are set here: NLM_F_REQUEST, and NLM_F_ACK
 *	unless it is a dump (NLM_F_DUMP), which ends with NLMSG_DONE
 * @cb: called for each reply carrying data (NULL: none expected)
 * @arg: for @cb
 * @err: if not NULL, the final ack, DONE or error with its extended ack
 *
 * Replies with another sequence number or port id (left over from an
 * earlier request that failed part-way) are dropped, never given to @cb.
 * After @cb fails the replies are still read to the end, so the next
 * request does not start among them.
 * Return: 0; @cb's negative return; the kernel's negative errno (details
 * in @err); -EINTR if any reply of a dump had NLM_F_DUMP_INTR (the data
 * changed during the dump: it was delivered, but may be inconsistent,
 * and the caller should dump again); -EPROTO for a malformed reply; or
 * -errno from the socket.
 */
int kml_nl_request(struct kml_nl_sock *s, struct kml_nl_msg *req, kml_nl_cb cb,
		   void *arg, struct kml_nl_err *err)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	struct kml_nl_err local;
	struct nlmsghdr nh;
	bool dump, intr = false, done = false;
	int len = kml_nl_msg_len(req), ret = 0, cbret = 0;
	ssize_t n;

	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	if (len < 0)
		return len;
	memcpy(&nh, req->buf, sizeof(nh));
	dump = (nh.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	nh.nlmsg_flags |= NLM_F_REQUEST | (dump ? 0 : NLM_F_ACK);
	nh.nlmsg_seq = ++s->seq;
	nh.nlmsg_pid = 0;
	memcpy(req->buf, &nh, sizeof(nh));

	do
		n = sendto(s->fd, req->buf, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != len)
		return -EIO;

	while (!done) {
		const struct nlmsghdr *msg;
		size_t pos = 0;
		uint32_t from = 0;
		int r;

		n = recv_one(s, &from);
		if (n < 0)
			return n;
		if (from != 0)
			continue; /* not from the kernel */
		while ((r = kml_nl_msg_next(s->buf, (size_t)n, &pos, &msg)) > 0) {
			if (msg->nlmsg_seq != nh.nlmsg_seq || msg->nlmsg_pid != s->portid)
				continue;
			if (msg->nlmsg_flags & NLM_F_DUMP_INTR)
				intr = true;
			if (msg->nlmsg_type == NLMSG_NOOP)
				continue;
			if (msg->nlmsg_type == NLMSG_ERROR) {
				done = true;
				if (kml_nl_parse_error(msg, msg->nlmsg_len, err))
					ret = -EPROTO;
				else
					ret = err->error;
				break;
			}
			if (msg->nlmsg_type == NLMSG_DONE) {
				/* a multipart reply to a non-dump is followed by its ack */
				if (kml_nl_parse_done(msg, msg->nlmsg_len, err))
					ret = -EPROTO;
				else if (!ret)
					ret = err->error;
				if (dump || ret) {
					done = true;
					break;
				}
				continue;
			}
			if (msg->nlmsg_type < NLMSG_MIN_TYPE) {
				ret = -EPROTO; /* NLMSG_OVERRUN or unknown control */
				done = true;
				break;
			}
			if (cb && !cbret) {
				int c = cb(msg, msg->nlmsg_len, arg);

				if (c < 0)
					cbret = c;
			}
		}
		if (r < 0)
			return -EPROTO;
	}
	if (cbret)
		return cbret;
	if (ret)
		return ret;
	return intr ? -EINTR : 0;
}

struct family_arg {
	const char *name;
	uint16_t id;
	bool found;
};

static int family_cb(const struct nlmsghdr *msg, size_t len, void *arg)
{
	struct kml_nl_attr tb[CTRL_ATTR_MAX + 1];
	struct family_arg *fa = arg;
	const char *name;
	uint8_t cmd, ver;

	if (kml_nl_genl_hdr(msg, len, &cmd, &ver) || cmd != CTRL_CMD_NEWFAMILY)
		return 0;
	if (kml_nl_parse(msg, len, tb, CTRL_ATTR_MAX))
		return -EPROTO;
	if (kml_nl_get_str(&tb[CTRL_ATTR_FAMILY_NAME], &name) || strcmp(name, fa->name))
		return 0;
	if (kml_nl_get_u16(&tb[CTRL_ATTR_FAMILY_ID], &fa->id))
		return -EPROTO;
	fa->found = true;
	return 0;
}

/**
 * kml_nl_family_id() - resolve a generic netlink family by name
 * @s: an open socket
 * @name: e.g. "nlctrl"; at most GENL_NAMSIZ - 1 characters
 * @id: set to its id (the nlmsg_type of its requests)
 *
 * Return: 0, -ENOENT when no such family is registered (its module not
 * loaded), -EINVAL for a name too long, or as kml_nl_request.
 */
int kml_nl_family_id(struct kml_nl_sock *s, const char *name, uint16_t *id)
{
	struct family_arg fa = { .name = name };
	uint8_t buf[64];
	struct kml_nl_msg m;
	int err;

	if (strlen(name) >= GENL_NAMSIZ)
		return -EINVAL;
	kml_nl_msg_init(&m, buf, sizeof(buf), GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1);
	kml_nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, name);
	err = kml_nl_request(s, &m, family_cb, &fa, NULL);
	if (err)
		return err;
	if (!fa.found)
		return -ENOENT;
	*id = fa.id;
	return 0;
}
