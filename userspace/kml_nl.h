/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkml_nl: the little generic netlink a kmodlab client needs, without
 * libmnl or libnl, because kml-filter is also linked -m32 -static for
 * the compat selftests and the guest has neither library for 32 bits.
 *
 * Building writes into a caller's buffer and never past its end; every
 * put returns the attribute's byte offset from the start of the message,
 * which is what the kernel's extended ack (NLMSGERR_ATTR_OFFS) names, so
 * a client can say which of its attributes was refused. Parsing copies
 * nothing but never trusts a length: each attribute is checked against
 * what is left of its message or nest before it is handed out, and values
 * are read with memcpy (a received buffer need not be aligned for us).
 */
#ifndef KML_NL_H
#define KML_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

/*
 * Extended-ack attributes by number: the uapi enum gained MISS_TYPE and
 * MISS_NEST only in 6.0, and an older distribution's headers (the 32-bit
 * static build's) would not have them. The numbers are ABI.
 */
enum {
	KML_NLERR_ATTR_MSG = 1,
	KML_NLERR_ATTR_OFFS = 2,
	KML_NLERR_ATTR_COOKIE = 3,
	KML_NLERR_ATTR_POLICY = 4,
	KML_NLERR_ATTR_MISS_TYPE = 5,
	KML_NLERR_ATTR_MISS_NEST = 6,
};

/* The header of a generic netlink request: what kml_nl_msg_init writes. */
#define KML_NL_HDRLEN	(NLMSG_HDRLEN + GENL_HDRLEN)

/* A request being built in a caller's buffer. */
struct kml_nl_msg {
	uint8_t *buf;
	size_t cap;	/* bytes of @buf we may write */
	size_t len;	/* bytes written (= nlmsg_len), always 4-aligned */
	int err;	/* first put that failed (sticky), or 0 */
};

/* One attribute as received: a view into the buffer, never a copy. */
struct kml_nl_attr {
	const uint8_t *data;	/* payload; NULL: attribute absent */
	uint16_t len;		/* payload bytes (nla_len - NLA_HDRLEN) */
	uint16_t type;		/* without NLA_F_NESTED / NLA_F_NET_BYTEORDER */
	uint16_t flags;		/* those two bits, as sent */
	uint32_t off;		/* of its header, from the start of the message */
};

/* Walks the attributes of a message or a nest, validating each. */
struct kml_nl_iter {
	const uint8_t *p;
	size_t rem;
	uint32_t off;		/* of @p, from the start of the message */
	int err;		/* -EINVAL once a malformed attribute is met */
};

/* What an NLMSG_ERROR (or a dump's NLMSG_DONE) said. */
#define KML_NL_ERRMSG_MAX 256
struct kml_nl_err {
	int error;		/* 0 (an ack) or a negative errno */
	uint32_t seq;		/* of the request it answers */
	char msg[KML_NL_ERRMSG_MAX];	/* NLMSGERR_ATTR_MSG, "" if none */
	bool has_offs;
	uint32_t offs;		/* NLMSGERR_ATTR_OFFS: into the request */
	bool has_miss_type;
	uint32_t miss_type;	/* NLMSGERR_ATTR_MISS_TYPE */
	bool has_miss_nest;
	uint32_t miss_nest;	/* NLMSGERR_ATTR_MISS_NEST: offset of the nest */
};

/* A generic netlink socket; @buf grows to the largest message received. */
struct kml_nl_sock {
	int fd;
	uint32_t portid;
	uint32_t seq;
	uint8_t *buf;
	size_t bufsize;
};

/* ---- building ---- */
int kml_nl_msg_init(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family,
		    uint16_t flags, uint8_t cmd, uint8_t version);
int kml_nl_msg_len(const struct kml_nl_msg *m);
int kml_nl_put(struct kml_nl_msg *m, uint16_t type, const void *data, size_t len);
int kml_nl_put_flag(struct kml_nl_msg *m, uint16_t type);
int kml_nl_put_u8(struct kml_nl_msg *m, uint16_t type, uint8_t v);
int kml_nl_put_u16(struct kml_nl_msg *m, uint16_t type, uint16_t v);
int kml_nl_put_u32(struct kml_nl_msg *m, uint16_t type, uint32_t v);
int kml_nl_put_u64(struct kml_nl_msg *m, uint16_t type, uint64_t v);
int kml_nl_put_u64_pad(struct kml_nl_msg *m, uint16_t type, uint64_t v, uint16_t padtype);
int kml_nl_put_str(struct kml_nl_msg *m, uint16_t type, const char *s);
int kml_nl_nest_start(struct kml_nl_msg *m, uint16_t type);
int kml_nl_nest_end(struct kml_nl_msg *m, int nest_off);
void kml_nl_nest_cancel(struct kml_nl_msg *m, int nest_off);

/* ---- parsing ---- */
int kml_nl_msg_next(const void *buf, size_t len, size_t *pos, const struct nlmsghdr **msg);
void kml_nl_iter_init(struct kml_nl_iter *it, const void *data, size_t len, uint32_t off);
bool kml_nl_iter_next(struct kml_nl_iter *it, struct kml_nl_attr *a);
int kml_nl_parse_attrs(const void *data, size_t len, uint32_t off,
		       struct kml_nl_attr *tb, unsigned int maxtype);
int kml_nl_parse(const void *buf, size_t len, struct kml_nl_attr *tb, unsigned int maxtype);
int kml_nl_parse_nested(const struct kml_nl_attr *nest, struct kml_nl_attr *tb,
			unsigned int maxtype);
int kml_nl_genl_hdr(const void *buf, size_t len, uint8_t *cmd, uint8_t *version);
int kml_nl_get_u8(const struct kml_nl_attr *a, uint8_t *v);
int kml_nl_get_u16(const struct kml_nl_attr *a, uint16_t *v);
int kml_nl_get_u32(const struct kml_nl_attr *a, uint32_t *v);
int kml_nl_get_u64(const struct kml_nl_attr *a, uint64_t *v);
int kml_nl_get_uint(const struct kml_nl_attr *a, uint64_t *v);
int kml_nl_get_str(const struct kml_nl_attr *a, const char **s);
int kml_nl_get_bin(const struct kml_nl_attr *a, const void **data, size_t *len);
bool kml_nl_get_flag(const struct kml_nl_attr *a);
int kml_nl_attr_path(const void *req, size_t len, uint32_t offs,
		     uint16_t *types, unsigned int max);

/* ---- errors and acks ---- */
int kml_nl_parse_error(const void *buf, size_t len, struct kml_nl_err *e);
int kml_nl_parse_done(const void *buf, size_t len, struct kml_nl_err *e);

/* ---- the socket ---- */
/*
 * Called for each reply message that is neither an ack nor NLMSG_DONE:
 * @msg is the whole message (nlmsghdr first), @len its nlmsg_len. A
 * negative return stops the callbacks and becomes kml_nl_request's.
 */
typedef int (*kml_nl_cb)(const struct nlmsghdr *msg, size_t len, void *arg);

int kml_nl_open(struct kml_nl_sock *s);
void kml_nl_close(struct kml_nl_sock *s);
int kml_nl_request(struct kml_nl_sock *s, struct kml_nl_msg *req, kml_nl_cb cb,
		   void *arg, struct kml_nl_err *err);
int kml_nl_family_id(struct kml_nl_sock *s, const char *name, uint16_t *id);

#endif
