// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for libkml_nl: every put read back by the parser, every
 * buffer size from 0 up (a canary after the end must survive), attributes
 * and messages damaged each way the parser must refuse, extended acks
 * built by hand as the kernel sends them, and, if this host lets us open
 * a generic netlink socket, the family lookup against its own kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_nl.h"

enum {
	A_UNSPEC, A_U8, A_U16, A_U32, A_U64, A_U64P, A_STR, A_BIN, A_FLAG,
	A_NEST, A_PAD, A_EMPTY, A_MAX = A_EMPTY
};

static const uint8_t bin[5] = { 1, 2, 3, 4, 5 };

/*
 * The reference request: every kind of put, a nest within a nest, and
 * u64s at both alignments. @offs gets each put's return (or error), in
 * order; returns how many puts were made.
 */
static int build(struct kml_nl_msg *m, void *buf, size_t cap, int *offs)
{
	int n = 0, outer, inner;

	kml_nl_msg_init(m, buf, cap, 0x20, 0, 7, 1);
	offs[n++] = kml_nl_put_u8(m, A_U8, 0xab);
	offs[n++] = kml_nl_put_u64_pad(m, A_U64P, 0x1122334455667788ull, A_PAD);
	offs[n++] = kml_nl_put_u16(m, A_U16, 0xbeef);
	offs[n++] = kml_nl_put_u32(m, A_U32, 0xdeadbeef);
	offs[n++] = kml_nl_put_u64(m, A_U64, UINT64_MAX - 1);
	offs[n++] = kml_nl_put_str(m, A_STR, "kml_filter");
	offs[n++] = kml_nl_put(m, A_BIN, bin, sizeof(bin));
	offs[n++] = kml_nl_put_flag(m, A_FLAG);
	outer = kml_nl_nest_start(m, A_NEST);
	offs[n++] = outer;
	offs[n++] = kml_nl_put_u32(m, A_U32, 42);
	inner = kml_nl_nest_start(m, A_NEST);
	offs[n++] = inner;
	offs[n++] = kml_nl_put_u64_pad(m, A_U64P, 7, A_PAD);
	offs[n++] = kml_nl_put_str(m, A_STR, "");
	offs[n++] = kml_nl_nest_end(m, inner);
	offs[n++] = kml_nl_nest_end(m, outer);
	offs[n++] = kml_nl_put_u8(m, A_U8 + 100, 1); /* beyond A_MAX: skipped */
	return n;
}

TEST(round_trip)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_nl_attr tb[A_MAX + 1], nt[A_MAX + 1], it[A_MAX + 1];
	struct kml_nl_msg m;
	int offs[32], n, i, len;
	uint8_t u8, cmd, ver;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	const char *s;
	const void *p;
	size_t plen;
	struct nlmsghdr nh;

	n = build(&m, buf, sizeof(buf), offs);
	for (i = 0; i < n; i++) {
		ASSERT_LE(0, offs[i]);
		ASSERT_EQ(0, offs[i] & 3);
	}
	len = kml_nl_msg_len(&m);
	ASSERT_LT(KML_NL_HDRLEN, len);
	ASSERT_EQ(0, len & 3);
	memcpy(&nh, buf, sizeof(nh));
	ASSERT_EQ((uint32_t)len, nh.nlmsg_len);
	ASSERT_EQ(0x20, nh.nlmsg_type);
	ASSERT_EQ(NLM_F_REQUEST, nh.nlmsg_flags);
	ASSERT_EQ(0, kml_nl_genl_hdr(buf, len, &cmd, &ver));
	ASSERT_EQ(7, cmd);
	ASSERT_EQ(1, ver);

	ASSERT_EQ(0, kml_nl_parse(buf, len, tb, A_MAX));
	ASSERT_EQ(0, kml_nl_get_u8(&tb[A_U8], &u8));
	ASSERT_EQ(0xab, u8);
	ASSERT_EQ((uint32_t)offs[0], tb[A_U8].off);
	ASSERT_EQ(0, kml_nl_get_u16(&tb[A_U16], &u16));
	ASSERT_EQ(0xbeef, u16);
	ASSERT_EQ(0, kml_nl_get_u32(&tb[A_U32], &u32));
	ASSERT_EQ(0xdeadbeef, u32);
	ASSERT_EQ((uint32_t)offs[3], tb[A_U32].off);
	ASSERT_EQ(0, kml_nl_get_u64(&tb[A_U64], &u64));
	ASSERT_EQ(UINT64_MAX - 1, u64);
	ASSERT_EQ(0, kml_nl_get_uint(&tb[A_U64], &u64));
	ASSERT_EQ(UINT64_MAX - 1, u64);
	ASSERT_EQ(0, kml_nl_get_uint(&tb[A_U32], &u64));
	ASSERT_EQ(0xdeadbeef, u64);
	ASSERT_EQ(0, kml_nl_get_u64(&tb[A_U64P], &u64));
	ASSERT_EQ(0x1122334455667788ull, u64);
	ASSERT_EQ(0, ((uintptr_t)tb[A_U64P].data) & 7);
	ASSERT_EQ(0, kml_nl_get_str(&tb[A_STR], &s));
	ASSERT_STREQ("kml_filter", s);
	ASSERT_EQ(0, kml_nl_get_bin(&tb[A_BIN], &p, &plen));
	ASSERT_EQ(sizeof(bin), plen);
	ASSERT_EQ(0, memcmp(bin, p, plen));
	ASSERT_TRUE(kml_nl_get_flag(&tb[A_FLAG]));
	ASSERT_FALSE(kml_nl_get_flag(&tb[A_EMPTY]));
	ASSERT_EQ(0, (tb[A_U64P].off + NLA_HDRLEN) % 8);
	ASSERT_EQ(NLA_F_NESTED, tb[A_NEST].flags);
	ASSERT_EQ(A_NEST, tb[A_NEST].type);

	ASSERT_EQ(0, kml_nl_parse_nested(&tb[A_NEST], nt, A_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&nt[A_U32], &u32));
	ASSERT_EQ(42, u32);
	ASSERT_EQ((uint32_t)offs[9], nt[A_U32].off);
	ASSERT_EQ(0, kml_nl_parse_nested(&nt[A_NEST], it, A_MAX));
	ASSERT_EQ((uint32_t)offs[10], nt[A_NEST].off);
	ASSERT_EQ(0, kml_nl_get_u64(&it[A_U64P], &u64));
	ASSERT_EQ(7, u64);
	ASSERT_EQ((uint32_t)offs[11], it[A_U64P].off);
	ASSERT_EQ(0, (offs[11] + NLA_HDRLEN) % 8);
	ASSERT_EQ(0, kml_nl_get_str(&it[A_STR], &s));
	ASSERT_STREQ("", s);
	ASSERT_EQ(-ENOENT, kml_nl_parse_nested(&it[A_NEST], nt, A_MAX));
}

TEST(u64_alignment)
{
	uint8_t buf[128];
	struct kml_nl_msg m;
	struct kml_nl_attr tb[A_MAX + 1];
	uint64_t v;
	int off, pad;

	/* after the 20-byte headers a value would be at 24: aligned, no pad */
	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	off = kml_nl_put_u64_pad(&m, A_U64P, 1, A_PAD);
	ASSERT_EQ(KML_NL_HDRLEN, off);
	ASSERT_EQ(KML_NL_HDRLEN + 12, kml_nl_msg_len(&m));
	/* at 32 the value would be at 36: a 4-byte pad attribute first */
	pad = kml_nl_msg_len(&m);
	off = kml_nl_put_u64_pad(&m, A_U64P, 2, A_PAD);
	ASSERT_EQ(pad + 4, off);
	ASSERT_EQ(0, (off + 4) % 8);
	ASSERT_EQ(0, kml_nl_parse(buf, kml_nl_msg_len(&m), tb, A_MAX));
	ASSERT_EQ((uint32_t)pad, tb[A_PAD].off);
	ASSERT_EQ(0, kml_nl_get_u64(&tb[A_U64P], &v));
	ASSERT_EQ(2, v);
	/* the plain u64 is 4-aligned as netlink allows: never a pad */
	off = kml_nl_put_u64(&m, A_U64, 3);
	ASSERT_EQ(pad + 16, off);
	ASSERT_EQ(4, (off + 4) % 8);
	/* pad + value both fit or neither is written */
	kml_nl_msg_init(&m, buf, KML_NL_HDRLEN + 12 + 12, 0x20, 0, 1, 1);
	ASSERT_LE(0, kml_nl_put_u64_pad(&m, A_U64P, 1, A_PAD));
	ASSERT_EQ(-EMSGSIZE, kml_nl_put_u64_pad(&m, A_U64P, 2, A_PAD));
	ASSERT_EQ(-EMSGSIZE, kml_nl_msg_len(&m));
	ASSERT_EQ(KML_NL_HDRLEN + 12, m.len);
}

/*
 * Every capacity from 0 to the full size: each put either lands where it
 * does with room to spare or fails with -EMSGSIZE, failures stick, and no
 * byte at or after the capacity is ever written.
 */
TEST(emsgsize_every_size)
{
	uint8_t ref[512], buf[512 + 64];
	struct kml_nl_msg m;
	int roffs[32], offs[32], n, full, i;
	size_t cap, b;

	n = build(&m, ref, sizeof(ref), roffs);
	full = kml_nl_msg_len(&m);
	ASSERT_LT(0, full);
	for (cap = 0; cap <= (size_t)full; cap++) {
		bool failed = false;

		memset(buf, 0xa5, sizeof(buf));
		ASSERT_EQ(n, build(&m, buf, cap, offs));
		for (i = 0; i < n; i++) {
			if (offs[i] == -EMSGSIZE) {
				failed = true;
				continue;
			}
			ASSERT_FALSE(failed) TH_LOG("cap %zu: put %d after a failure", cap, i);
			ASSERT_EQ(roffs[i], offs[i]);
		}
		for (b = cap; b < sizeof(buf); b++)
			ASSERT_EQ(0xa5, buf[b]) TH_LOG("cap %zu: byte %zu written", cap, b);
		if (cap < (size_t)full) {
			ASSERT_TRUE(failed);
			ASSERT_EQ(-EMSGSIZE, kml_nl_msg_len(&m));
		} else {
			ASSERT_EQ(full, kml_nl_msg_len(&m));
			ASSERT_EQ(0, memcmp(ref, buf, full));
		}
	}
}

TEST(nest_cancel_fills_what_fits)
{
	uint8_t buf[200];
	struct kml_nl_msg m;
	struct kml_nl_iter it;
	struct kml_nl_attr a, tb[A_MAX + 1];
	int nests = 0, nest, len;

	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	for (;;) {
		nest = kml_nl_nest_start(&m, A_NEST);
		kml_nl_put_u32(&m, A_U32, (uint32_t)nests);
		kml_nl_put_str(&m, A_STR, "rule");
		if (kml_nl_nest_end(&m, nest) < 0) {
			kml_nl_nest_cancel(&m, nest);
			break;
		}
		nests++;
	}
	ASSERT_LT(0, nests);
	len = kml_nl_msg_len(&m);
	ASSERT_LT(0, len);
	ASSERT_GE(sizeof(buf), (size_t)len);
	ASSERT_EQ(KML_NL_HDRLEN + nests * 24, len);
	kml_nl_iter_init(&it, buf + KML_NL_HDRLEN, len - KML_NL_HDRLEN, KML_NL_HDRLEN);
	while (kml_nl_iter_next(&it, &a)) {
		ASSERT_EQ(A_NEST, a.type);
		ASSERT_EQ(0, kml_nl_parse_nested(&a, tb, A_MAX));
		nests--;
	}
	ASSERT_EQ(0, it.err);
	ASSERT_EQ(0, nests);
	/* offsets no nest_start returned are refused, errors passed through */
	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	ASSERT_EQ(-EINVAL, kml_nl_nest_end(&m, 3));
	ASSERT_EQ(-EINVAL, kml_nl_nest_end(&m, KML_NL_HDRLEN));
	ASSERT_EQ(-EMSGSIZE, kml_nl_nest_end(&m, -EMSGSIZE));
	kml_nl_nest_cancel(&m, 1000);
	ASSERT_EQ(KML_NL_HDRLEN, kml_nl_msg_len(&m));
}

TEST(lengths_past_16_bits)
{
	static uint8_t buf[70000], big[65532];
	struct kml_nl_msg m;
	int nest;

	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	ASSERT_EQ(-EMSGSIZE, kml_nl_put(&m, A_BIN, big, 65532));
	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	ASSERT_LE(0, kml_nl_put(&m, A_BIN, big, 65531));
	kml_nl_msg_init(&m, buf, sizeof(buf), 0x20, 0, 1, 1);
	nest = kml_nl_nest_start(&m, A_NEST);
	ASSERT_LE(0, kml_nl_put(&m, A_BIN, big, 65528));
	/* 4 + 65532: one past what nla_len holds */
	ASSERT_EQ(-EMSGSIZE, kml_nl_nest_end(&m, nest));
	ASSERT_EQ(-EMSGSIZE, kml_nl_msg_len(&m));
}

/* A message holding @alen bytes of hand-made attributes. */
static size_t raw_msg(uint8_t *b, const void *attrs, size_t alen)
{
	struct nlmsghdr nh = { .nlmsg_len = (uint32_t)(KML_NL_HDRLEN + alen), .nlmsg_type = 0x20 };

	memset(b, 0, KML_NL_HDRLEN);
	memcpy(b, &nh, sizeof(nh));
	memcpy(b + KML_NL_HDRLEN, attrs, alen);
	return KML_NL_HDRLEN + alen;
}

static int parse_raw(const void *attrs, size_t alen)
{
	uint8_t b[256];
	struct kml_nl_attr tb[A_MAX + 1];
	size_t len = raw_msg(b, attrs, alen);
	uint8_t *heap = malloc(len);	/* exactly sized: ASan sees any overread */
	int err;

	memcpy(heap, b, len);
	err = kml_nl_parse(heap, len, tb, A_MAX);
	if (!err && tb[A_NEST].data)
		err = kml_nl_parse_nested(&tb[A_NEST], tb, A_MAX);
	free(heap);
	return err;
}

TEST(parser_rejects_bad_nla_len)
{
	/* nla_len, nla_type, payload... (little endian, as this host) */
	const uint8_t ok[] = { 8, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t len0[] = { 0, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t len3[] = { 3, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t past[] = { 12, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t huge[] = { 0xff, 0xff, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t trail[] = { 8, 0, A_U32, 0, 1, 2, 3, 4, 0, 0 };
	const uint8_t second_bad[] = { 8, 0, A_U32, 0, 1, 2, 3, 4, 2, 0, A_U8, 0 };
	/* a nest whose inner attribute runs past the nest into the next one */
	const uint8_t overlap[] = { 12, 0, A_NEST, 0x80, 12, 0, A_U32, 0, 1, 2, 3, 4,
				    8, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t nest_ok[] = { 12, 0, A_NEST, 0x80, 8, 0, A_U32, 0, 1, 2, 3, 4 };
	const uint8_t nest_junk[] = { 8, 0, A_NEST, 0x80, 1, 2, 3, 4 };
	const uint8_t nest_short[] = { 6, 0, A_NEST, 0x80, 1, 2, 0, 0 };
	/* the last attribute without its padding: accepted, as the kernel does */
	const uint8_t unpadded[] = { 8, 0, A_U32, 0, 1, 2, 3, 4, 5, 0, A_U8, 0, 9 };

	ASSERT_EQ(0, parse_raw(ok, sizeof(ok)));
	ASSERT_EQ(0, parse_raw(ok, 0));
	ASSERT_EQ(-EINVAL, parse_raw(len0, sizeof(len0)));
	ASSERT_EQ(-EINVAL, parse_raw(len3, sizeof(len3)));
	ASSERT_EQ(-EINVAL, parse_raw(past, sizeof(past)));
	ASSERT_EQ(-EINVAL, parse_raw(huge, sizeof(huge)));
	ASSERT_EQ(-EINVAL, parse_raw(trail, sizeof(trail)));
	ASSERT_EQ(-EINVAL, parse_raw(ok, 3));
	ASSERT_EQ(-EINVAL, parse_raw(second_bad, sizeof(second_bad)));
	ASSERT_EQ(-EINVAL, parse_raw(overlap, sizeof(overlap)));
	ASSERT_EQ(0, parse_raw(nest_ok, sizeof(nest_ok)));
	ASSERT_EQ(-EINVAL, parse_raw(nest_junk, sizeof(nest_junk)));
	ASSERT_EQ(-EINVAL, parse_raw(nest_short, sizeof(nest_short)));
	ASSERT_EQ(0, parse_raw(unpadded, sizeof(unpadded)));
}

TEST(parser_rejects_truncated_messages)
{
	uint8_t buf[512];
	struct kml_nl_msg m;
	struct kml_nl_attr tb[A_MAX + 1];
	int offs[32], len, cut;
	uint32_t l;
	uint8_t cmd, ver;

	build(&m, buf, sizeof(buf), offs);
	len = kml_nl_msg_len(&m);
	/* fewer bytes than nlmsg_len says: refused at every length */
	for (cut = 0; cut < len; cut++) {
		uint8_t *h = malloc(cut ? cut : 1);

		memcpy(h, buf, cut);
		ASSERT_EQ(-EINVAL, kml_nl_parse(h, cut, tb, A_MAX)) TH_LOG("cut %d", cut);
		free(h);
	}
	/* nlmsg_len shorter than the headers, or than the attributes */
	l = KML_NL_HDRLEN - 1;
	memcpy(buf, &l, 4);
	ASSERT_EQ(-EINVAL, kml_nl_parse(buf, len, tb, A_MAX));
	ASSERT_EQ(-EINVAL, kml_nl_genl_hdr(buf, len, &cmd, &ver));
	l = (uint32_t)len - 4;	/* into the last attribute, not only its padding */
	memcpy(buf, &l, 4);
	ASSERT_EQ(-EINVAL, kml_nl_parse(buf, len, tb, A_MAX));
	/* an nlmsg_len that wraps a 32-bit size computation */
	l = UINT32_MAX;
	memcpy(buf, &l, 4);
	ASSERT_EQ(-EINVAL, kml_nl_parse(buf, len, tb, A_MAX));
	ASSERT_FALSE(kml_nl_get_flag(&tb[A_U8]));
}

TEST(getters_check_length)
{
	const uint8_t attrs[] = {
		5, 0, A_U32, 0, 1, 0, 0, 0,	/* a u32 of 1 byte */
		6, 0, A_STR, 0, 'a', 'b', 0, 0,	/* no NUL within its 2 bytes */
		4, 0, A_U8, 0,			/* empty */
		12, 0, A_U64, 0, 1, 2, 3, 4, 5, 6, 7, 8,
	};
	uint8_t b[256];
	struct kml_nl_attr tb[A_MAX + 1];
	size_t len = raw_msg(b, attrs, sizeof(attrs));
	uint32_t u32;
	uint64_t u64;
	uint16_t u16;
	uint8_t u8;
	const char *s;

	ASSERT_EQ(0, kml_nl_parse(b, len, tb, A_MAX));
	ASSERT_EQ(-EINVAL, kml_nl_get_u32(&tb[A_U32], &u32));
	ASSERT_EQ(-EINVAL, kml_nl_get_uint(&tb[A_U32], &u64));
	ASSERT_EQ(-EINVAL, kml_nl_get_str(&tb[A_STR], &s));
	ASSERT_EQ(-EINVAL, kml_nl_get_u8(&tb[A_U8], &u8));
	ASSERT_EQ(-EINVAL, kml_nl_get_u32(&tb[A_U64], &u32));
	ASSERT_EQ(-EINVAL, kml_nl_get_u16(&tb[A_U64], &u16));
	ASSERT_EQ(0, kml_nl_get_u64(&tb[A_U64], &u64));
	ASSERT_EQ(0x0807060504030201ull, u64);
	ASSERT_EQ(-ENOENT, kml_nl_get_u16(&tb[A_U16], &u16));
	ASSERT_EQ(-ENOENT, kml_nl_get_str(&tb[A_EMPTY], &s));
	ASSERT_FALSE(kml_nl_get_flag(&tb[A_FLAG]));
}

TEST(messages_in_a_datagram)
{
	_Alignas(4) uint8_t dg[256];
	struct kml_nl_msg m;
	const struct nlmsghdr *msg;
	size_t pos = 0, len;
	int l1, l2;

	kml_nl_msg_init(&m, dg, sizeof(dg), 0x20, 0, 1, 1);
	kml_nl_put_u8(&m, A_U8, 1);	/* 28 bytes */
	l1 = kml_nl_msg_len(&m);
	kml_nl_msg_init(&m, dg + l1, sizeof(dg) - l1, 0x21, 0, 1, 1);
	l2 = kml_nl_msg_len(&m);
	len = (size_t)(l1 + l2);
	ASSERT_EQ(1, kml_nl_msg_next(dg, len, &pos, &msg));
	ASSERT_EQ(0x20, msg->nlmsg_type);
	ASSERT_EQ(1, kml_nl_msg_next(dg, len, &pos, &msg));
	ASSERT_EQ(0x21, msg->nlmsg_type);
	ASSERT_EQ(0, kml_nl_msg_next(dg, len, &pos, &msg));
	/* cut short at every length after the first message */
	for (len = l1 + 1; len < (size_t)(l1 + l2); len++) {
		pos = 0;
		ASSERT_EQ(1, kml_nl_msg_next(dg, len, &pos, &msg));
		ASSERT_EQ(-EINVAL, kml_nl_msg_next(dg, len, &pos, &msg));
	}
}

/*
 * An NLMSG_ERROR as the kernel's netlink_ack() builds it, in an exactly
 * sized heap buffer: @echo_len bytes of request payload echoed unless
 * @capped, then the TLVs (@tlvs, @tlen bytes) if any.
 */
static uint8_t *ack(int error, bool capped, size_t echo_len, const void *tlvs, size_t tlen,
		    size_t *len)
{
	struct nlmsghdr nh = { .nlmsg_type = NLMSG_ERROR, .nlmsg_seq = 77, .nlmsg_pid = 5 };
	struct nlmsgerr ne = {
		.error = error,
		.msg = { .nlmsg_len = (uint32_t)(NLMSG_HDRLEN + echo_len), .nlmsg_type = 0x20,
			 .nlmsg_seq = 77 },
	};
	size_t off = NLMSG_HDRLEN + sizeof(ne);
	uint8_t *b;

	if (!capped)
		off += echo_len;
	if (tlvs)
		off = NLMSG_ALIGN(off);
	*len = off + tlen;
	nh.nlmsg_len = (uint32_t)*len;
	nh.nlmsg_flags = (capped ? NLM_F_CAPPED : 0) | (tlvs ? NLM_F_ACK_TLVS : 0);
	b = calloc(1, *len);
	memcpy(b, &nh, sizeof(nh));
	memcpy(b + NLMSG_HDRLEN, &ne, sizeof(ne));
	if (!capped)
		memset(b + NLMSG_HDRLEN + sizeof(ne), 0xee, echo_len);
	if (tlvs)
		memcpy(b + off, tlvs, tlen);
	return b;
}

/* TLVs: MSG "bad rule" (NUL-terminated) and OFFS 36. */
static const uint8_t tlv_msg_offs[] = {
	13, 0, KML_NLERR_ATTR_MSG, 0, 'b', 'a', 'd', ' ', 'r', 'u', 'l', 'e', 0, 0, 0, 0,
	8, 0, KML_NLERR_ATTR_OFFS, 0, 36, 0, 0, 0,
	8, 0, KML_NLERR_ATTR_MISS_TYPE, 0, 9, 0, 0, 0,
};

TEST(extack_plain_ack_and_error)
{
	struct kml_nl_err e;
	size_t len;
	uint8_t *b = ack(0, false, 8, NULL, 0, &len);

	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_EQ(0, e.error);
	ASSERT_EQ(77, e.seq);
	ASSERT_STREQ("", e.msg);
	ASSERT_FALSE(e.has_offs);
	free(b);
	b = ack(-ENOENT, true, 8, NULL, 0, &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_EQ(-ENOENT, e.error);
	/* cut short at every length: refused, never overread */
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *h = malloc(cut ? cut : 1);

		memcpy(h, b, cut);
		ASSERT_EQ(-EINVAL, kml_nl_parse_error(h, cut, &e));
		free(h);
	}
	free(b);
	/* no errno: positive, or below -MAX_ERRNO */
	b = ack(1, true, 0, NULL, 0, &len);
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	free(b);
	b = ack(-4096, true, 0, NULL, 0, &len);
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	free(b);
	/* not an NLMSG_ERROR */
	b = ack(-1, true, 0, NULL, 0, &len);
	b[4] = NLMSG_DONE;
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	free(b);
}

TEST(extack_capped_and_uncapped)
{
	struct kml_nl_err e;
	size_t len, echo;
	uint8_t *b;

	/* echo lengths that are and are not multiples of 4 */
	for (echo = 0; echo < 10; echo++) {
		for (int capped = 0; capped < 2; capped++) {
			b = ack(-EINVAL, capped, echo, tlv_msg_offs, sizeof(tlv_msg_offs), &len);
			ASSERT_EQ(0, kml_nl_parse_error(b, len, &e))
				TH_LOG("echo %zu capped %d", echo, capped);
			ASSERT_EQ(-EINVAL, e.error);
			ASSERT_STREQ("bad rule", e.msg);
			ASSERT_TRUE(e.has_offs);
			ASSERT_EQ(36, e.offs);
			ASSERT_TRUE(e.has_miss_type);
			ASSERT_EQ(9, e.miss_type);
			ASSERT_FALSE(e.has_miss_nest);
			free(b);
		}
	}
	/* MSG alone, OFFS alone */
	b = ack(-EPERM, true, 40, tlv_msg_offs, 16, &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_STREQ("bad rule", e.msg);
	ASSERT_FALSE(e.has_offs);
	free(b);
	b = ack(-EPERM, false, 40, tlv_msg_offs + 16, 8, &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_STREQ("", e.msg);
	ASSERT_TRUE(e.has_offs);
	ASSERT_EQ(36, e.offs);
	free(b);
	/* the flag and no TLV at all */
	b = ack(-EPERM, false, 40, tlv_msg_offs, 0, &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_FALSE(e.has_offs);
	free(b);
}

TEST(extack_lies)
{
	struct kml_nl_err e;
	struct nlmsgerr ne;
	size_t len;
	uint8_t *b;
	const uint8_t unterminated[] = { 7, 0, KML_NLERR_ATTR_MSG, 0, 'a', 'b', 'c' };
	const uint8_t offs_short[] = { 6, 0, KML_NLERR_ATTR_OFFS, 0, 36, 0, 0, 0 };
	uint8_t longmsg[4 + 400];

	/* an uncapped echo claiming more than the message holds */
	b = ack(-EINVAL, false, 8, tlv_msg_offs, sizeof(tlv_msg_offs), &len);
	memcpy(&ne, b + NLMSG_HDRLEN, sizeof(ne));
	ne.msg.nlmsg_len = (uint32_t)len;
	memcpy(b + NLMSG_HDRLEN, &ne, sizeof(ne));
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	ASSERT_EQ(-EINVAL, e.error);	/* the errno itself was sound */
	ne.msg.nlmsg_len = UINT32_MAX;
	memcpy(b + NLMSG_HDRLEN, &ne, sizeof(ne));
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	ne.msg.nlmsg_len = 3;
	memcpy(b + NLMSG_HDRLEN, &ne, sizeof(ne));
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	free(b);
	/* capped: the echo's nlmsg_len is the request's, whatever it is */
	b = ack(-EINVAL, true, 60000, tlv_msg_offs, sizeof(tlv_msg_offs), &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_EQ(36, e.offs);
	free(b);
	/* a message that is not NUL-terminated, last in the buffer */
	b = ack(-EINVAL, true, 0, unterminated, sizeof(unterminated), &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_STREQ("abc", e.msg);
	free(b);
	/* longer than the copy: cut, still terminated */
	memset(longmsg, 'x', sizeof(longmsg));
	longmsg[0] = (uint8_t)(sizeof(longmsg) & 0xff);
	longmsg[1] = (uint8_t)(sizeof(longmsg) >> 8);
	longmsg[2] = KML_NLERR_ATTR_MSG;
	longmsg[3] = 0;
	b = ack(-EINVAL, true, 0, longmsg, sizeof(longmsg), &len);
	ASSERT_EQ(0, kml_nl_parse_error(b, len, &e));
	ASSERT_EQ(KML_NL_ERRMSG_MAX - 1, strlen(e.msg));
	free(b);
	/* an OFFS of the wrong size */
	b = ack(-EINVAL, true, 0, offs_short, sizeof(offs_short), &len);
	ASSERT_EQ(-EINVAL, kml_nl_parse_error(b, len, &e));
	free(b);
}

TEST(done_of_a_dump)
{
	uint8_t b[64];
	struct nlmsghdr nh = {
		.nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = NLMSG_DONE, .nlmsg_seq = 9,
	};
	struct kml_nl_err e;
	int32_t v = -EMSGSIZE;

	memset(b, 0, sizeof(b));
	memcpy(b, &nh, sizeof(nh));
	ASSERT_EQ(0, kml_nl_parse_done(b, NLMSG_HDRLEN, &e));
	ASSERT_EQ(0, e.error);
	ASSERT_EQ(9, e.seq);
	nh.nlmsg_len = NLMSG_HDRLEN + 4;
	memcpy(b, &nh, sizeof(nh));
	memcpy(b + NLMSG_HDRLEN, &v, 4);
	ASSERT_EQ(0, kml_nl_parse_done(b, nh.nlmsg_len, &e));
	ASSERT_EQ(-EMSGSIZE, e.error);
	nh.nlmsg_len = NLMSG_HDRLEN + 4 + 16;
	nh.nlmsg_flags = NLM_F_MULTI | NLM_F_ACK_TLVS;
	memcpy(b, &nh, sizeof(nh));
	memcpy(b + NLMSG_HDRLEN + 4, tlv_msg_offs, 16);
	ASSERT_EQ(0, kml_nl_parse_done(b, nh.nlmsg_len, &e));
	ASSERT_STREQ("bad rule", e.msg);
	nh.nlmsg_len = NLMSG_HDRLEN + 2;
	memcpy(b, &nh, sizeof(nh));
	ASSERT_EQ(-EINVAL, kml_nl_parse_done(b, sizeof(b), &e));
}

TEST(offset_to_attribute)
{
	uint8_t buf[512];
	struct kml_nl_msg m;
	uint16_t path[4];
	int offs[32], len;

	build(&m, buf, sizeof(buf), offs);
	len = kml_nl_msg_len(&m);
	ASSERT_EQ(1, kml_nl_attr_path(buf, len, offs[0], path, 4));
	ASSERT_EQ(A_U8, path[0]);
	ASSERT_EQ(1, kml_nl_attr_path(buf, len, offs[6], path, 4));
	ASSERT_EQ(A_BIN, path[0]);
	ASSERT_EQ(1, kml_nl_attr_path(buf, len, offs[8], path, 4));
	ASSERT_EQ(A_NEST, path[0]);
	ASSERT_EQ(2, kml_nl_attr_path(buf, len, offs[9], path, 4));
	ASSERT_EQ(A_NEST, path[0]);
	ASSERT_EQ(A_U32, path[1]);
	ASSERT_EQ(3, kml_nl_attr_path(buf, len, offs[11], path, 4));
	ASSERT_EQ(A_NEST, path[0]);
	ASSERT_EQ(A_NEST, path[1]);
	ASSERT_EQ(A_U64P, path[2]);
	ASSERT_EQ(-ENOSPC, kml_nl_attr_path(buf, len, offs[11], path, 2));
	/* in a header, in a payload that is no nest, in the genl header, past the end */
	ASSERT_EQ(-ENOENT, kml_nl_attr_path(buf, len, offs[0] + 2, path, 4));
	ASSERT_EQ(-ENOENT, kml_nl_attr_path(buf, len, offs[5] + 4, path, 4));
	ASSERT_EQ(-ENOENT, kml_nl_attr_path(buf, len, 16, path, 4));
	ASSERT_EQ(-ENOENT, kml_nl_attr_path(buf, len, len, path, 4));
	ASSERT_EQ(-ENOENT, kml_nl_attr_path(buf, len, UINT32_MAX, path, 4));
	ASSERT_EQ(-EINVAL, kml_nl_attr_path(buf, 10, 20, path, 4));
}

/* ---- against this host's kernel, if it lets us ---- */

static bool host_sock(struct __test_metadata *_metadata, struct kml_nl_sock *s)
{
	int err = kml_nl_open(s);

	if (err)
		TH_LOG("no generic netlink socket here (%s)", strerror(-err));
	return !err;
}

TEST(host_family_lookup)
{
	struct kml_nl_sock s;
	uint16_t id = 0;

	if (!host_sock(_metadata, &s))
		SKIP(return, "no NETLINK_GENERIC socket");
	ASSERT_NE(0, s.portid);
	ASSERT_EQ(0, kml_nl_family_id(&s, "nlctrl", &id));
	ASSERT_EQ(GENL_ID_CTRL, id);
	ASSERT_EQ(-ENOENT, kml_nl_family_id(&s, "kml_no_such", &id));
	ASSERT_EQ(-EINVAL, kml_nl_family_id(&s, "a_name_longer_than_16", &id));
	/* the socket is still in step after an error */
	ASSERT_EQ(0, kml_nl_family_id(&s, "nlctrl", &id));
	kml_nl_close(&s);
}

static int count_families(const struct nlmsghdr *msg, size_t len, void *arg)
{
	struct kml_nl_attr tb[CTRL_ATTR_MAX + 1];
	int *n = arg;

	if (kml_nl_parse(msg, len, tb, CTRL_ATTR_MAX))
		return -EPROTO;
	if (tb[CTRL_ATTR_FAMILY_ID].data)
		(*n)++;
	return 0;
}

static int fail_cb(const struct nlmsghdr *msg, size_t len, void *arg)
{
	(void)msg;
	(void)len;
	(*(int *)arg)++;
	return -ECANCELED;
}

TEST(host_dump_and_extack)
{
	uint8_t buf[128];
	struct kml_nl_sock s;
	struct kml_nl_msg m;
	struct kml_nl_err e;
	uint16_t path[2], id;
	int n = 0, off, err;

	if (!host_sock(_metadata, &s))
		SKIP(return, "no NETLINK_GENERIC socket");
	kml_nl_msg_init(&m, buf, sizeof(buf), GENL_ID_CTRL, NLM_F_DUMP, CTRL_CMD_GETFAMILY, 1);
	ASSERT_EQ(0, kml_nl_request(&s, &m, count_families, &n, &e));
	ASSERT_LE(1, n);
	TH_LOG("%d generic netlink families", n);
	/* a callback that fails stops the callbacks, the rest is drained */
	n = 0;
	kml_nl_msg_init(&m, buf, sizeof(buf), GENL_ID_CTRL, NLM_F_DUMP, CTRL_CMD_GETFAMILY, 1);
	ASSERT_EQ(-ECANCELED, kml_nl_request(&s, &m, fail_cb, &n, &e));
	ASSERT_EQ(1, n);
	ASSERT_EQ(0, kml_nl_family_id(&s, "nlctrl", &id));
	/* a dump that fails to start ends in an NLMSG_ERROR, not a DONE */
	kml_nl_msg_init(&m, buf, sizeof(buf), GENL_ID_CTRL, NLM_F_DUMP, CTRL_CMD_GETPOLICY, 1);
	kml_nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, "kml_no_such");
	n = 0;
	err = kml_nl_request(&s, &m, count_families, &n, &e);
	ASSERT_GT(0, err);	/* -ENOENT; a kernel before 5.7 has no GETPOLICY */
	ASSERT_EQ(err, e.error);
	ASSERT_EQ(0, n);
	/* a name longer than the policy allows: the kernel names our attribute */
	kml_nl_msg_init(&m, buf, sizeof(buf), GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1);
	off = kml_nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, "a_name_much_longer_than_sixteen");
	ASSERT_LE(0, off);
	err = kml_nl_request(&s, &m, NULL, NULL, &e);
	ASSERT_GT(0, err);
	ASSERT_EQ(err, e.error);
	TH_LOG("kernel: %s (%s), offs %s%u", strerror(-err), e.msg, e.has_offs ? "" : "none ",
	       e.offs);
	if (e.has_offs) {
		ASSERT_EQ((uint32_t)off, e.offs);
		ASSERT_EQ(1, kml_nl_attr_path(buf, kml_nl_msg_len(&m), e.offs, path, 2));
		ASSERT_EQ(CTRL_ATTR_FAMILY_NAME, path[0]);
	}
	kml_nl_close(&s);
}

TEST_HARNESS_MAIN
