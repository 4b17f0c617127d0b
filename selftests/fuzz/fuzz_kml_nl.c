// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for libkml_nl's parsers: any bytes, as a datagram of
 * netlink messages, must be refused or parsed without reading out of
 * bounds (ASan) or looping, and what is accepted must be consistent:
 * every attribute lies inside its message, its offset says where, a
 * string getter's result ends inside the attribute, an extended ack's
 * message is terminated within its buffer, and an offset the parser
 * reported maps back to that attribute.
 *
 * The first byte also drives the builder: a capacity and a list of puts,
 * after which nothing past the capacity may have changed and a request
 * that fitted must parse back.
 */
#include <stdlib.h>
#include <string.h>

#include "../../userspace/kml_nl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXTYPE 16

static const uint8_t *base;
static size_t base_len;

static void check_attr(const struct kml_nl_attr *a, const uint8_t *msg, size_t mlen)
{
	const char *s;
	const void *p;
	size_t plen;
	uint64_t v;

	if (!a->data)
		return;
	if (a->data < msg || a->data + a->len > msg + mlen)
		abort();
	if ((size_t)(a->data - msg) != (size_t)a->off + NLA_HDRLEN)
		abort();
	if (!kml_nl_get_str(a, &s) && strlen(s) >= a->len)
		abort();
	if (kml_nl_get_bin(a, &p, &plen) || p != a->data || plen != a->len)
		abort();
	if (!kml_nl_get_uint(a, &v) && a->len != 4 && a->len != 8)
		abort();
}

/* Every attribute, and every nest within, to a bounded depth. */
static void walk(const struct kml_nl_attr *tb, const uint8_t *msg, size_t mlen, int depth)
{
	struct kml_nl_attr in[MAXTYPE + 1];
	uint16_t path[8];

	for (int t = 0; t <= MAXTYPE; t++) {
		check_attr(&tb[t], msg, mlen);
		if (!tb[t].data)
			continue;
		/* an attribute the parser found is where kml_nl_attr_path finds it */
		if (depth == 0 && kml_nl_attr_path(msg, mlen, tb[t].off, path, 8) != 1)
			abort();
		if (depth < 4 && !kml_nl_parse_nested(&tb[t], in, MAXTYPE))
			walk(in, msg, mlen, depth + 1);
	}
}

static void check_err(const struct kml_nl_err *e, const uint8_t *msg, size_t mlen)
{
	uint16_t path[8];

	if (e->error > 0 || e->error < -4095)
		abort();
	if (strnlen(e->msg, sizeof(e->msg)) >= sizeof(e->msg))
		abort();
	if (e->has_offs)
		kml_nl_attr_path(msg, mlen, e->offs, path, 8);
}

static void parse_all(const uint8_t *buf, size_t len)
{
	const struct nlmsghdr *msg;
	struct kml_nl_attr tb[MAXTYPE + 1];
	struct kml_nl_err e;
	size_t pos = 0, last = 0;
	uint8_t cmd, ver;
	int r;

	while ((r = kml_nl_msg_next(buf, len, &pos, &msg)) > 0) {
		const uint8_t *m = (const uint8_t *)msg;
		size_t mlen = msg->nlmsg_len;

		if (pos <= last || m + mlen > buf + len)
			abort();
		last = pos;
		if (!kml_nl_parse(m, mlen, tb, MAXTYPE))
			walk(tb, m, mlen, 0);
		kml_nl_genl_hdr(m, mlen, &cmd, &ver);
		if (!kml_nl_parse_error(m, mlen, &e))
			check_err(&e, m, mlen);
		if (!kml_nl_parse_done(m, mlen, &e))
			check_err(&e, m, mlen);
	}
	/* and the whole input as one message, unaligned allowed */
	if (!kml_nl_parse(base, base_len, tb, MAXTYPE))
		walk(tb, base, base_len, 0);
	if (!kml_nl_parse_error(base, base_len, &e))
		check_err(&e, base, base_len);
}

/* Ops from the input: put kinds, types and lengths, into @cap bytes. */
static void build(const uint8_t *d, size_t n)
{
	static uint8_t buf[1024 + 64];
	static const uint8_t payload[300];
	struct kml_nl_attr tb[MAXTYPE + 1];
	struct kml_nl_msg m;
	int nests[8], depth = 0, len;
	size_t cap, i;

	if (n < 2)
		return;
	cap = ((size_t)d[0] << 2 | d[1] >> 6) % 1025;
	memset(buf, 0xa5, sizeof(buf));
	kml_nl_msg_init(&m, buf, cap, 0x20, 0, 1, 1);
	for (i = 2; i + 1 < n; i += 2) {
		uint16_t type = d[i + 1] % (MAXTYPE + 1);

		switch (d[i] % 10) {
		case 0:
			kml_nl_put_u8(&m, type, d[i]);
			break;
		case 1:
			kml_nl_put_u16(&m, type, d[i]);
			break;
		case 2:
			kml_nl_put_u32(&m, type, d[i]);
			break;
		case 3:
			kml_nl_put_u64(&m, type, d[i]);
			break;
		case 4:
			kml_nl_put_u64_pad(&m, type, d[i], 0);
			break;
		case 5:
			kml_nl_put(&m, type, payload, d[i + 1]);
			break;
		case 6:
			kml_nl_put_flag(&m, type);
			break;
		case 7:
			if (depth < 8)
				nests[depth++] = kml_nl_nest_start(&m, type);
			break;
		case 8:
			if (depth)
				kml_nl_nest_end(&m, nests[--depth]);
			break;
		case 9:
			if (depth)
				kml_nl_nest_cancel(&m, nests[--depth]);
			break;
		}
	}
	while (depth)
		kml_nl_nest_end(&m, nests[--depth]);
	for (i = cap; i < sizeof(buf); i++)
		if (buf[i] != 0xa5)
			abort();
	len = kml_nl_msg_len(&m);
	if (len >= 0) {
		if ((size_t)len > cap || (len & 3))
			abort();
		if (kml_nl_parse(buf, (size_t)len, tb, MAXTYPE))
			abort();
		walk(tb, buf, (size_t)len, 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	base = data;
	base_len = size;
	if (size && data[0] == 0xb1) {
		build(data + 1, size - 1);
		return 0;
	}
	/* kml_nl_msg_next's messages are struct pointers: an aligned copy */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	parse_all(copy, size);
	free(copy);
	return 0;
}
