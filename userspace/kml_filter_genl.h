/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml-filter's side of the kml_filter generic netlink family (the
 * "Generic netlink" section of uapi/linux/kml_filter.h): a rule to its
 * nested attributes and back, a GETRULE dump collected into entries, and
 * the map from an extended ack's offset back to the rule word it is
 * about. Everything here is pure (no socket), so the host tests run it on
 * messages they build; kml-filter.c does the talking.
 */
#ifndef KML_FILTER_GENL_H
#define KML_FILTER_GENL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kml_filter.h>

#include "kml_filter_parse.h"
#include "kml_nl.h"

/*
 * Where kml_filter_genl_put_rule() put each attribute of a rule, as
 * offsets from the start of the request (what NLMSGERR_ATTR_OFFS names);
 * -1 for one it left out (the part had its default).
 */
struct kml_filter_genl_offs {
	int nest;	/* the KML_FILTER_A_RULE attribute */
	int end;	/* the offset just past it */
	int ra[KML_FILTER_RA_MAX + 1];
};

/* One rule of a GETRULE dump. */
struct kml_filter_genl_entry {
	uint32_t index;
	struct kml_filter_rule rule;
	uint64_t packets;
	uint64_t bytes;
	uint64_t generation;
};

/*
 * A GETRULE dump being collected: one kml_filter_genl_dump_msg() call per
 * message (it is a kml_nl_cb). @torn says the entries are not one
 * snapshot: a message had NLM_F_DUMP_INTR, two messages named different
 * generations, or an index was not the next one; the dump is then read
 * again (kml_filter_genl_dump_verdict()).
 */
struct kml_filter_genl_dump {
	struct kml_filter_genl_entry *e;
	unsigned int count;
	unsigned int cap;
	uint64_t generation;	/* of the entries, when @count > 0 */
	bool torn;
	int err;		/* first malformed message: -EPROTO, or -ENOMEM */
};

/* The GET_INFO reply. */
struct kml_filter_genl_info {
	uint32_t abi_version;
	uint64_t generation;
	uint32_t nrules;
	uint32_t max_rules;
	uint8_t policy;
	uint64_t policy_packets;
	uint64_t policy_bytes;
	uint64_t mem_bytes;
	uint64_t mem_limit;
	uint8_t policy_fwd;		/* 0 if the module did not say */
	uint64_t policy_fwd_packets;
	uint8_t log_attached;		/* 1: a ring is attached (LOG_ATTACH) */
	uint64_t log_records;		/* written to it */
	uint64_t log_suppressed;	/* held back by the rules' limits */
	uint64_t log_lost;		/* within them, but no ring took them */
};

/*
 * A replace in parts (REPLACE_BEGIN, REPLACE_RULES..., REPLACE_COMMIT):
 * each REPLACE_RULES request is at most KML_FILTER_GENL_CHUNK bytes, far
 * below a socket's default send buffer (some 200 KiB), so the kernel
 * takes it in one piece whatever rmem/wmem say. The largest rule nest
 * kml_filter_genl_put_rule() writes is KML_FILTER_GENL_RULE_MAX bytes:
 * a chunk takes another rule only while that much room is left.
 */
#define KML_FILTER_GENL_CHUNK		32768
#define KML_FILTER_GENL_RULE_MAX	152

/* How many times a dump that keeps being torn by updates is read. */
#define KML_FILTER_GENL_DUMP_TRIES	5

int kml_filter_genl_parse_info(const struct nlmsghdr *msg, size_t len,
				struct kml_filter_genl_info *info);
int kml_filter_genl_put_rule(struct kml_nl_msg *m, uint16_t type,
			     const struct kml_filter_rule *r,
			     struct kml_filter_genl_offs *offs);
int kml_filter_genl_get_rule(const struct kml_nl_attr *nest, struct kml_filter_rule *r);
int kml_filter_genl_parse_entry(const struct nlmsghdr *msg, size_t len,
				struct kml_filter_genl_entry *e);
void kml_filter_genl_dump_reset(struct kml_filter_genl_dump *d);
void kml_filter_genl_dump_free(struct kml_filter_genl_dump *d);
int kml_filter_genl_dump_msg(const struct nlmsghdr *msg, size_t len, void *arg);
int kml_filter_genl_dump_verdict(const struct kml_filter_genl_dump *d, int request_ret);
int kml_filter_genl_offs_word(const struct kml_filter_genl_offs *offs,
			      const struct kml_filter_words *words, uint32_t at);
int kml_filter_genl_put_begin(struct kml_nl_msg *m, uint32_t nrules, uint8_t policy,
			      uint8_t policy_fwd);
int kml_filter_genl_parse_txn(const struct nlmsghdr *msg, size_t len, uint32_t *txn);
int kml_filter_genl_put_rules(struct kml_nl_msg *m, uint32_t txn,
			      const struct kml_filter_rule *rules, unsigned int count);
int kml_filter_genl_put_commit(struct kml_nl_msg *m, uint32_t txn);
int kml_filter_genl_chunk_rule(const void *req, size_t len, uint32_t at, unsigned int *k,
			       struct kml_filter_genl_offs *offs);
int kml_filter_genl_point(int argc, char *const argv[], int word, char *buf, size_t len);
int kml_filter_genl_log_attach(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family,
			       int ring_fd);
int kml_filter_genl_log_detach(struct kml_nl_msg *m, void *buf, size_t cap, uint16_t family);

#endif
