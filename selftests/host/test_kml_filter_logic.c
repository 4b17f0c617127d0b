// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kml_filter's rule checks, index and lookup, and the
 * client's rule language. The index is checked against the obvious
 * linear first-match over random rule sets and packets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../modules/kml_filter/kml_filter_logic.h"
#include "kml_filter_parse.h"
#include "kml_filter_abi_check.h"

static int parse(const char *text, struct kml_filter_rule *r, char *err)
{
	char buf[512], *words[32], *save = NULL, *w;
	int n = 0;

	strcpy(buf, text);
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		words[n++] = w;
	return kml_filter_parse_rule(n, words, r, err, 256);
}

static struct kml_filter_pkt pkt4(const char *src, const char *dst, __u8 proto,
				  __u16 sport, __u16 dport, __u8 dir)
{
	struct kml_filter_pkt p = { .family = KML_FILTER_FAMILY_IPV4,
				    .proto = proto, .dir = dir };

	inet_pton(AF_INET, src, p.src);
	inet_pton(AF_INET, dst, p.dst);
	p.has_ports = proto == 6 || proto == 17;
	p.sport = sport;
	p.dport = dport;
	return p;
}

static __u32 linear(const struct kml_filter_rule *r, __u32 n,
		    const struct kml_filter_pkt *p)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (kml_filter_match(&r[i], p))
			return i;
	return KML_FILTER_NOMATCH;
}

/* kml_filter_abi_check.h checks offsets at compile time, for -m32 too */
TEST(abi_layout)
{
	ASSERT_EQ(4, KML_FILTER_ABI_VERSION);
	ASSERT_EQ(56, sizeof(struct kml_filter_rule));
	ASSERT_EQ(72, sizeof(struct kml_filter_entry));
	ASSERT_EQ(48, sizeof(struct kml_filter_info));
	ASSERT_EQ(24, sizeof(struct kml_filter_replace));
	ASSERT_EQ(64, sizeof(struct kml_filter_add));
	ASSERT_EQ(72, sizeof(struct kml_filter_del));
	ASSERT_EQ(32, sizeof(struct kml_filter_list));
	/* what replaced ABI 1's leading size fields */
	ASSERT_EQ(0, offsetof(struct kml_filter_info, flags));
	ASSERT_EQ(0, offsetof(struct kml_filter_replace, flags));
	ASSERT_EQ(0, offsetof(struct kml_filter_add, flags));
	ASSERT_EQ(0, offsetof(struct kml_filter_del, flags));
	ASSERT_EQ(8, offsetof(struct kml_filter_del, reserved));
	ASSERT_EQ(0, offsetof(struct kml_filter_list, flags));
}

TEST(rule_check_rejects)
{
	struct kml_filter_rule ok, r;
	const char *why;
	char err[256];

	ASSERT_EQ(0, parse("accept tcp src 10.0.0.0/8 dport 80", &ok, err)) TH_LOG("%s", err);
	ASSERT_EQ(0, kml_filter_rule_check(&ok, &why));
	ASSERT_EQ(NULL, why);

	r = ok; r.family = 5;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("unknown family", why);
	r = ok; r.proto = 2;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("unknown protocol", why);
	r = ok; r.proto = KML_FILTER_PROTO_ICMPV6;
	r.dport_lo = 0; r.dport_hi = 0xffff;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("protocol of the other family", why);
	r = ok; r.dir = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("bad direction", why);
	r = ok; r.dir = 8;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("bad direction", why);
	r = ok; r.dir = KML_FILTER_DIR_ALL | 0x80;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	/* every mask within in|out|fwd is a direction */
	for (r.dir = 1; r.dir <= KML_FILTER_DIR_ALL; r.dir++)
		EXPECT_EQ(0, kml_filter_rule_check(&r, NULL));
	r = ok; r.action = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("bad action", why);
	r = ok; r.family = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("address without a family", why);
	r = ok; r.src_len = 33;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("bad prefix length", why);
	r = ok; r.src[3] = 1;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	r = ok; r.src[4] = 1;	/* past an IPv4 address */
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	r = ok; r.dport_lo = 90; r.dport_hi = 80;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("reversed port range", why);
	r = ok; r.proto = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("ports need tcp or udp", why);
	r = ok; r.pad[1] = 1;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	r = ok; r.pad2 = 1;
	EXPECT_EQ(-EINVAL, kml_filter_rule_check(&r, &why));
	EXPECT_STREQ("padding not zero", why);
}

/* Each reason blames the field the rule got wrong, so netlink can point at it. */
TEST(rule_why_blames_the_field)
{
	struct kml_filter_rule ok, r;
	unsigned int field = 99;
	const char *why;
	char err[256];

	ASSERT_EQ(0, parse("accept ipv4 tcp src 10.0.0.0/8 dst 10.1.0.0/16 dport 80", &ok, err))
		TH_LOG("%s", err);
	ASSERT_EQ(0, kml_filter_rule_why(&ok, &why, &field));
	EXPECT_EQ(KML_FILTER_F_NONE, field);
#define BLAME(change, want_why, want_field) do {			\
		r = ok;							\
		change;							\
		field = 99;						\
		EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));	\
		EXPECT_STREQ(want_why, why);				\
		EXPECT_EQ(want_field, field) TH_LOG("%s", want_why);	\
	} while (0)
	BLAME(r.family = 5, "unknown family", KML_FILTER_F_FAMILY);
	BLAME(r.proto = 2, "unknown protocol", KML_FILTER_F_PROTO);
	BLAME((r.proto = KML_FILTER_PROTO_ICMPV6, r.dport_lo = 0, r.dport_hi = 0xffff),
	      "protocol of the other family", KML_FILTER_F_PROTO);
	BLAME(r.dir = 0, "bad direction", KML_FILTER_F_DIR);
	BLAME(r.action = 4, "bad action", KML_FILTER_F_ACTION);
	BLAME(r.action = KML_FILTER_LOG, "a log action needs a log rate", KML_FILTER_F_LOG);
	BLAME(r.log_burst = 1, "a log burst without a log rate", KML_FILTER_F_LOG_BURST);
	BLAME((r.log_rate = 1, r.log_burst = 0), "a log burst of at least 1 is needed",
	      KML_FILTER_F_LOG_BURST);
	BLAME(r.family = 0, "address without a family", KML_FILTER_F_SRC);
	BLAME((r.family = 0, r.src_len = 0, memset(r.src, 0, 16)),
	      "address without a family", KML_FILTER_F_DST);
	/* the length is what is wrong, not the address */
	BLAME(r.dst_len = 40, "bad prefix length", KML_FILTER_F_DST_LEN);
	BLAME(r.src_len = 40, "bad prefix length", KML_FILTER_F_SRC_LEN);
	BLAME(r.dst[3] = 1, "address has bits set past its prefix length", KML_FILTER_F_DST);
	BLAME(r.src[3] = 1, "address has bits set past its prefix length", KML_FILTER_F_SRC);
	BLAME((r.sport_lo = 9, r.sport_hi = 8), "reversed port range", KML_FILTER_F_SPORT);
	BLAME((r.dport_lo = 9, r.dport_hi = 8), "reversed port range", KML_FILTER_F_DPORT);
	BLAME(r.proto = 0, "ports need tcp or udp", KML_FILTER_F_DPORT);
	BLAME((r.proto = 0, r.dport_lo = 0, r.dport_hi = 0xffff, r.sport_lo = 5),
	      "ports need tcp or udp", KML_FILTER_F_SPORT);
	BLAME(r.ct_state = 0x10, "unknown connection state", KML_FILTER_F_CT);
	BLAME(r.ct_state = 0x80, "unknown connection state", KML_FILTER_F_CT);
	BLAME(r.pad2 = 1, "padding not zero", KML_FILTER_F_PAD);
#undef BLAME
	/* every state bit alone, and all of them, are good */
	for (unsigned int b = 0; b < 8; b++) {
		r = ok;
		r.ct_state = 1u << b;
		EXPECT_EQ(!(r.ct_state & KML_FILTER_CT_ALL) ? -EINVAL : 0,
			  kml_filter_rule_why(&r, &why, &field)) TH_LOG("bit %u", b);
	}
	r = ok;
	r.ct_state = KML_FILTER_CT_ALL;
	EXPECT_EQ(0, kml_filter_rule_why(&r, &why, &field));
}

/* conntrack's view of a packet as nftables' `ct state` bits */
TEST(ct_bit_is_nftables_ct_state)
{
	/* IP_CT_ESTABLISHED, _RELATED, _NEW, then the replies (+3) */
	EXPECT_EQ(KML_FILTER_CT_ESTABLISHED, kml_filter_ct_bit(true, 0));
	EXPECT_EQ(KML_FILTER_CT_RELATED, kml_filter_ct_bit(true, 1));
	EXPECT_EQ(KML_FILTER_CT_NEW, kml_filter_ct_bit(true, 2));
	EXPECT_EQ(KML_FILTER_CT_ESTABLISHED, kml_filter_ct_bit(true, 3));
	EXPECT_EQ(KML_FILTER_CT_RELATED, kml_filter_ct_bit(true, 4));
	/* no connection: untracked on purpose (IP_CT_UNTRACKED), else invalid */
	EXPECT_EQ(KML_FILTER_CT_UNTRACKED, kml_filter_ct_bit(false, 7));
	EXPECT_EQ(KML_FILTER_CT_INVALID, kml_filter_ct_bit(false, 0));
	EXPECT_EQ(KML_FILTER_CT_INVALID, kml_filter_ct_bit(false, 2));
}

/* A rule with states matches a packet in one of them, and no other. */
TEST(ct_state_match)
{
	struct kml_filter_pkt p = pkt4("10.1.2.3", "192.168.0.1", 6, 4000, 22,
				       KML_FILTER_DIR_IN);
	struct kml_filter_rule r;
	struct kml_filter_index ix;
	void *mem = malloc(kml_filter_index_mem(1));
	char err[256];

	ASSERT_EQ(0, parse("accept in tcp dport 22", &r, err)) TH_LOG("%s", err);
	p.ct = KML_FILTER_CT_NEW;
	EXPECT_TRUE(kml_filter_match(&r, &p));
	r.ct_state = KML_FILTER_CT_ESTABLISHED | KML_FILTER_CT_RELATED;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.ct = KML_FILTER_CT_RELATED;
	EXPECT_TRUE(kml_filter_match(&r, &p));
	p.ct = 0;	/* not looked up: a state rule never matches */
	EXPECT_FALSE(kml_filter_match(&r, &p));
	/* the index says a state must be looked up, and finds the rule */
	ASSERT_NE(NULL, mem);
	kml_filter_index_build(&ix, &r, 1, mem);
	EXPECT_EQ(1, ix.ct);
	p.ct = KML_FILTER_CT_ESTABLISHED;
	EXPECT_EQ(0, kml_filter_lookup(&ix, &p));
	p.ct = KML_FILTER_CT_NEW;
	EXPECT_EQ(KML_FILTER_NOMATCH, kml_filter_lookup(&ix, &p));
	r.ct_state = 0;
	kml_filter_index_build(&ix, &r, 1, mem);
	EXPECT_EQ(0, ix.ct);
	free(mem);
}

/*
 * A rule without a direction word is in and out, as before the forward
 * hook: it must not start matching routed packets. "fwd" does, alone or
 * with the others.
 */
TEST(directions)
{
	static const struct {
		const char *text;
		__u8 dir;
	} cases[] = {
		{ "drop", KML_FILTER_DIR_BOTH },
		{ "drop in", KML_FILTER_DIR_IN },
		{ "drop out", KML_FILTER_DIR_OUT },
		{ "drop fwd", KML_FILTER_DIR_FWD },
		{ "drop in out", KML_FILTER_DIR_BOTH },
		{ "drop fwd in", KML_FILTER_DIR_IN | KML_FILTER_DIR_FWD },
		{ "drop out fwd", KML_FILTER_DIR_OUT | KML_FILTER_DIR_FWD },
		{ "drop in fwd out", KML_FILTER_DIR_ALL },
	};
	struct kml_filter_pkt p = pkt4("10.1.2.3", "10.4.5.6", 17, 1, 2, 0);
	struct kml_filter_rule r;
	char err[256];
	unsigned int i, d;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, parse(cases[i].text, &r, err)) TH_LOG("%s: %s", cases[i].text, err);
		EXPECT_EQ(cases[i].dir, r.dir) TH_LOG("%s", cases[i].text);
		for (d = 0; d < 3; d++) {
			p.dir = 1 << d;
			EXPECT_EQ(!!(cases[i].dir & p.dir), kml_filter_match(&r, &p))
				TH_LOG("%s, packet dir %u", cases[i].text, p.dir);
		}
	}
	EXPECT_EQ(5, kml_filter_policy_slot(5, KML_FILTER_DIR_IN));
	EXPECT_EQ(5, kml_filter_policy_slot(5, KML_FILTER_DIR_OUT));
	EXPECT_EQ(6, kml_filter_policy_slot(5, KML_FILTER_DIR_FWD));
	/* forwarded fragments are judged: nothing reassembles them here */
	memset(&p, 0, sizeof(p));
	p.family = KML_FILTER_FAMILY_IPV4;
	p.later_frag = 1;
	p.dir = KML_FILTER_DIR_FWD;
	EXPECT_FALSE(kml_filter_first_fragment_decides(&p));
	p.dir = KML_FILTER_DIR_IN;
	EXPECT_TRUE(kml_filter_first_fragment_decides(&p));
}

TEST(match_fields)
{
	struct kml_filter_rule r;
	struct kml_filter_pkt p = pkt4("10.1.2.3", "192.168.0.1", 6, 4000, 22,
				       KML_FILTER_DIR_IN);
	char err[256];

	ASSERT_EQ(0, parse("drop in tcp src 10.0.0.0/8 dport 20-25", &r, err));
	EXPECT_TRUE(kml_filter_match(&r, &p));
	p.dir = KML_FILTER_DIR_OUT;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.dir = KML_FILTER_DIR_FWD;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.dir = KML_FILTER_DIR_IN;
	p.dport = 26;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.dport = 20;
	p.has_ports = 0;	/* a later fragment */
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.has_ports = 1;
	p.src[0] = 11;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.src[0] = 10;
	p.proto = 17;
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.family = KML_FILTER_FAMILY_IPV6;
	p.proto = 6;
	EXPECT_FALSE(kml_filter_match(&r, &p));

	/* /0 with a family, odd prefix lengths */
	ASSERT_EQ(0, parse("accept ipv4", &r, err));
	EXPECT_FALSE(kml_filter_match(&r, &p));
	p.family = KML_FILTER_FAMILY_IPV4;
	EXPECT_TRUE(kml_filter_match(&r, &p));
	ASSERT_EQ(0, parse("accept src 10.1.0.0/17", &r, err));
	EXPECT_TRUE(kml_filter_match(&r, &p));
	p.src[2] = 0x80;
	EXPECT_FALSE(kml_filter_match(&r, &p));
}

TEST(key_choice)
{
	struct kml_filter_rule r;
	char err[256];

	ASSERT_EQ(0, parse("drop tcp dst 10.0.0.1 dport 80", &r, err));
	EXPECT_EQ(KML_FK_DST, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop tcp src fd00::1 dport 80", &r, err));
	EXPECT_EQ(KML_FK_SRC, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop tcp dst 10.0.0.0/8 dport 80", &r, err));
	EXPECT_EQ(KML_FK_DPORT, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop udp sport 53 dport 1-2", &r, err));
	EXPECT_EQ(KML_FK_SPORT, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop dst 10.0.0.0/8", &r, err));
	EXPECT_EQ(KML_FK_DST, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop src 10.0.0.0/8", &r, err));
	EXPECT_EQ(KML_FK_SRC, kml_filter_key_of(&r));
	ASSERT_EQ(0, parse("drop tcp", &r, err));
	EXPECT_EQ(KML_FK_LINEAR, kml_filter_key_of(&r));
}

static void random_rule(struct kml_filter_rule *r, unsigned int *seed)
{
	static const __u8 protos[] = { 0, 1, 6, 17, 58 };
	static const __u8 lens4[] = { 0, 8, 16, 24, 30, 32 };
	static const __u8 lens6[] = { 0, 16, 64, 127, 128 };
	unsigned int v = (unsigned int)rand_r(seed);

	do {
		memset(r, 0, sizeof(*r));
		r->family = (__u8[]){ 0, 4, 6 }[v % 3];
		r->proto = protos[rand_r(seed) % 5];
		r->dir = 1 + rand_r(seed) % KML_FILTER_DIR_ALL;
		r->action = 1 + rand_r(seed) % 2;
		if (r->family) {
			/* addresses from a tiny space, so rules and packets collide */
			r->src[0] = r->family == 4 ? 10 : 0xfd;
			r->src[r->family == 4 ? 3 : 15] = rand_r(seed) % 4;
			memcpy(r->dst, r->src, 16);
			r->dst[r->family == 4 ? 3 : 15] = rand_r(seed) % 4;
			if (r->family == 4) {
				r->src_len = lens4[rand_r(seed) % 6];
				r->dst_len = lens4[rand_r(seed) % 6];
			} else {
				r->src_len = lens6[rand_r(seed) % 5];
				r->dst_len = lens6[rand_r(seed) % 5];
			}
			kml_filter_prefix_mask(r->src, r->src_len);
			kml_filter_prefix_mask(r->dst, r->dst_len);
		}
		r->sport_hi = r->dport_hi = 0xffff;
		if (r->proto == 6 || r->proto == 17) {
			if (rand_r(seed) % 2) {
				r->dport_lo = rand_r(seed) % 4;
				r->dport_hi = r->dport_lo + rand_r(seed) % 2;
			}
			if (rand_r(seed) % 3 == 0) {
				r->sport_lo = rand_r(seed) % 4;
				r->sport_hi = r->sport_lo + rand_r(seed) % 2;
			}
		}
		v = (unsigned int)rand_r(seed);
	} while (kml_filter_rule_check(r, NULL));
}

static void random_pkt(struct kml_filter_pkt *p, unsigned int *seed)
{
	memset(p, 0, sizeof(*p));
	p->family = rand_r(seed) % 2 ? 4 : 6;
	p->proto = (__u8[]){ 1, 6, 17, 58, 47 }[rand_r(seed) % 5];
	p->dir = 1 << rand_r(seed) % 3;
	p->src[0] = p->dst[0] = p->family == 4 ? 10 : 0xfd;
	p->src[p->family == 4 ? 3 : 15] = rand_r(seed) % 4;
	p->dst[p->family == 4 ? 3 : 15] = rand_r(seed) % 4;
	if (p->proto == 6 || p->proto == 17) {
		p->has_ports = rand_r(seed) % 8 != 0;
		p->sport = rand_r(seed) % 5;
		p->dport = rand_r(seed) % 5;
	}
	/* headers that did not parse; the addresses left as garbage that
	 * rules would match, which they must not
	 */
	if (rand_r(seed) % 16 == 0) {
		p->malformed = 1 + rand_r(seed) % 5;
		p->proto = 0;
		p->has_ports = 0;
	}
}

TEST(index_equals_linear_first_match)
{
	static const __u32 sizes[] = { 0, 1, 2, 5, 17, 100, 1000 };
	unsigned int seed = 12345, s, k, i, hits = 0, unported = 0;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (k = 0; k < 20; k++) {
			__u32 n = sizes[s];
			struct kml_filter_rule *rules = calloc(n + 1, sizeof(*rules));
			void *mem = malloc(kml_filter_index_mem(n));
			struct kml_filter_index ix;

			ASSERT_NE(NULL, rules);
			ASSERT_NE(NULL, mem);
			for (i = 0; i < n; i++)
				random_rule(&rules[i], &seed);
			kml_filter_index_build(&ix, rules, n, mem);
			for (i = 0; i < 2000; i++) {
				struct kml_filter_pkt p;
				__u32 want, got;

				random_pkt(&p, &seed);
				want = linear(rules, n, &p);
				got = kml_filter_lookup(&ix, &p);
				hits += want != KML_FILTER_NOMATCH;
				ASSERT_EQ(want, got) TH_LOG("n=%u round %u packet %u", n, k, i);
				/* with no port rule the hook skips the ports */
				if (!ix.ports && p.has_ports) {
					p.has_ports = 0;
					ASSERT_EQ(want, kml_filter_lookup(&ix, &p));
					unported++;
				}
			}
			free(mem);
			free(rules);
		}
	}
	/* the random sets must exercise matches, not only misses */
	ASSERT_GT(hits, 50000);
	ASSERT_GT(unported, 1000);
}

/* linear(), but log-only rules decide nothing: they are skipped */
static __u32 linear_deciding(const struct kml_filter_rule *r, __u32 n,
			     const struct kml_filter_pkt *p)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (r[i].action != KML_FILTER_LOG && kml_filter_match(&r[i], p))
			return i;
	return KML_FILTER_NOMATCH;
}

/*
 * Log-only rules: never what the lookup returns, and kml_filter_tap()
 * gives exactly those that match before the deciding rule, in order.
 */
TEST(log_only_rules_are_taps)
{
	unsigned int seed = 777, k, i, taps = 0, decided = 0;
	const __u32 n = 300;

	for (k = 0; k < 10; k++) {
		struct kml_filter_rule *rules = calloc(n, sizeof(*rules));
		void *mem = malloc(kml_filter_index_mem(n));
		struct kml_filter_index ix;

		ASSERT_NE(NULL, rules);
		ASSERT_NE(NULL, mem);
		for (i = 0; i < n; i++) {
			random_rule(&rules[i], &seed);
			if (rand_r(&seed) % 3 == 0) {
				rules[i].action = KML_FILTER_LOG;
				rules[i].log_rate = 10;
				rules[i].log_burst = 5;
			} else if (rand_r(&seed) % 5 == 0) {
				rules[i].log_rate = 1;
				rules[i].log_burst = 1;
			}
			ASSERT_EQ(0, kml_filter_rule_check(&rules[i], NULL));
		}
		kml_filter_index_build(&ix, rules, n, mem);
		ASSERT_EQ(1, ix.log);
		ASSERT_NE(0, ix.taps);
		for (i = 0; i < 3000; i++) {
			struct kml_filter_pkt p;
			__u32 want, got, j, t, best;

			random_pkt(&p, &seed);
			want = linear_deciding(rules, n, &p);
			got = kml_filter_lookup(&ix, &p);
			ASSERT_EQ(want, got);
			decided += want != KML_FILTER_NOMATCH;
			best = want < n ? want : n;
			t = kml_filter_tap(&ix, ix.taps, &p, best);
			for (j = 0; j < best; j++) {
				if (rules[j].action != KML_FILTER_LOG ||
				    !kml_filter_match(&rules[j], &p))
					continue;
				ASSERT_EQ(j, t);
				taps++;
				t = kml_filter_tap(&ix, ix.next[t], &p, best);
			}
			ASSERT_EQ(best, t);
		}
		free(mem);
		free(rules);
	}
	ASSERT_GT(taps, 1000);
	ASSERT_GT(decided, 1000);
}

/* A set without logging rules says so: the hook then skips the log. */
TEST(index_knows_when_nothing_logs)
{
	struct kml_filter_rule r[2] = {
		{ .dir = 1, .action = KML_FILTER_ACCEPT, .sport_hi = 0xffff,
		  .dport_hi = 0xffff },
		{ .dir = 1, .action = KML_FILTER_DROP, .sport_hi = 0xffff,
		  .dport_hi = 0xffff },
	};
	struct kml_filter_index ix;
	void *mem = malloc(kml_filter_index_mem(2));

	ASSERT_NE(NULL, mem);
	kml_filter_index_build(&ix, r, 2, mem);
	EXPECT_EQ(0, ix.log);
	EXPECT_EQ(0, ix.taps);
	r[1].log_rate = 5;
	r[1].log_burst = 1;
	kml_filter_index_build(&ix, r, 2, mem);
	EXPECT_EQ(1, ix.log);
	EXPECT_EQ(0, ix.taps);
	free(mem);
}

#define NS 1000000000ull

/* how many of @n records @gap ns apart, from @start, the limiter lets by */
static unsigned int admitted(__u64 *tat, __u64 start, __u64 gap, unsigned int n,
			     __u32 rate, __u16 burst)
{
	unsigned int i, yes = 0;
	__u64 next;

	for (i = 0; i < n; i++)
		if (kml_filter_log_admit(*tat, start + i * gap, rate, burst, &next)) {
			*tat = next;
			yes++;
		}
	return yes;
}

TEST(log_limiter_is_a_token_bucket)
{
	static const struct { __u32 rate; __u16 burst; } c[] = {
		{ 1, 1 }, { 10, 5 }, { 1000, 1 }, { 1000, 100 },
		{ KML_FILTER_LOG_MAX_RATE, 65535 }, { 3, 65535 },
	};
	unsigned int k;

	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		__u32 rate = c[k].rate;
		__u16 burst = c[k].burst;
		__u64 tat = 0, t0 = 5 * NS, y;

		/* a flood at one instant: the burst and not one more */
		EXPECT_EQ(burst, admitted(&tat, t0, 0, burst + 1000u, rate, burst));
		/* then ten seconds of a flood far above the rate: about rate/s */
		y = admitted(&tat, t0 + 1, 10 * NS / 100000, 100000, rate, burst);
		EXPECT_LE(y, 10ull * rate + 1) TH_LOG("rate %u burst %u", rate, burst);
		EXPECT_GE(y + 1, rate * 10ull < 100000 ? rate * 10ull : 100000);
		/* idle for a long time: the whole burst again, no more */
		EXPECT_EQ(burst, admitted(&tat, t0 + 100000 * NS, 0, burst + 10u,
					  rate, burst));
	}
}

/* Far along the clock, and with the slowest limiter, nothing wraps. */
TEST(log_limiter_late_and_slow)
{
	__u64 tat = 0, next, now = (1ull << 63) - 10 * NS;

	ASSERT_TRUE(kml_filter_log_admit(tat, now, 1, 1, &next));
	EXPECT_EQ(now + NS, next);
	tat = next;
	EXPECT_FALSE(kml_filter_log_admit(tat, now + NS - 1, 1, 1, &next));
	EXPECT_TRUE(kml_filter_log_admit(tat, now + NS, 1, 1, &next));
	/* a limiter state from a far future (never) does not let one by */
	EXPECT_FALSE(kml_filter_log_admit(~0ull - NS, 0, 1, 65535, &next));
}

TEST(log_rules_checked)
{
	struct kml_filter_rule ok = { .dir = 1, .action = KML_FILTER_LOG,
				      .sport_hi = 0xffff, .dport_hi = 0xffff,
				      .log_rate = 10, .log_burst = 5 }, r;
	unsigned int field;
	const char *why;

	EXPECT_EQ(0, kml_filter_rule_check(&ok, NULL));
	r = ok; r.action = KML_FILTER_DROP;
	EXPECT_EQ(0, kml_filter_rule_check(&r, NULL));
	r = ok; r.log_rate = KML_FILTER_LOG_MAX_RATE; r.log_burst = 65535;
	EXPECT_EQ(0, kml_filter_rule_check(&r, NULL));
	r = ok; r.log_rate = 0; r.log_burst = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));
	EXPECT_STREQ("a log action needs a log rate", why);
	EXPECT_EQ(KML_FILTER_F_LOG, field);
	r = ok; r.log_rate = KML_FILTER_LOG_MAX_RATE + 1;
	EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));
	EXPECT_STREQ("log rate above 1000000/s", why);
	EXPECT_EQ(KML_FILTER_F_LOG, field);
	r = ok; r.log_burst = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));
	EXPECT_STREQ("a log burst of at least 1 is needed", why);
	r = ok; r.action = KML_FILTER_ACCEPT; r.log_rate = 0;
	EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));
	EXPECT_STREQ("a log burst without a log rate", why);
	EXPECT_EQ(KML_FILTER_F_LOG_BURST, field);
	r = ok; r.action = 4;
	EXPECT_EQ(-EINVAL, kml_filter_rule_why(&r, &why, &field));
	EXPECT_STREQ("bad action", why);
}

/* An IPv4 header: version 4, @ihl words, @tot bytes, protocol UDP. */
static void ip4(__u8 *h, __u8 ihl, __u16 tot, __u16 frag)
{
	memset(h, 0, 60);
	h[0] = 0x40 | ihl;
	h[2] = tot >> 8;
	h[3] = tot & 0xff;
	h[6] = frag >> 8;
	h[7] = frag & 0xff;
	h[9] = 17;
	inet_pton(AF_INET, "10.0.0.1", h + 12);
	inet_pton(AF_INET, "10.0.0.2", h + 16);
}

TEST(parse_ipv4_rejects_bad_ihl_version_totlen)
{
	struct kml_filter_pkt p = { .dir = KML_FILTER_DIR_OUT };
	__u8 h[60], src[4];

	inet_pton(AF_INET, "10.0.0.1", src);
	ip4(h, 5, 28, 0);
	ASSERT_EQ(20, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_NONE, p.malformed);
	EXPECT_EQ(KML_FILTER_FAMILY_IPV4, p.family);
	EXPECT_EQ(KML_FILTER_DIR_OUT, p.dir);
	EXPECT_EQ(17, p.proto);
	EXPECT_EQ(0, memcmp(p.src, src, 4));
	EXPECT_EQ(0, p.src[4]);
	EXPECT_TRUE(kml_filter_wants_ports(&p));
	/* options: the transport header is further on; padding is fine */
	ip4(h, 15, 68, 0);
	EXPECT_EQ(60, kml_filter_parse_ipv4(&p, h, 100, false));
	EXPECT_EQ(KML_FILTER_BAD_NONE, p.malformed);

	/* each check alone: nothing but the family and direction kept */
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, NULL, 19, false));
	EXPECT_EQ(KML_FILTER_BAD_SHORT, p.malformed);
	ip4(h, 5, 28, 0);
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 19, false));
	EXPECT_EQ(KML_FILTER_BAD_SHORT, p.malformed);
	h[0] = 0x65;		/* version 6 */
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_VERSION, p.malformed);
	EXPECT_EQ(KML_FILTER_FAMILY_IPV4, p.family);
	EXPECT_EQ(KML_FILTER_DIR_OUT, p.dir);
	EXPECT_EQ(0, p.proto);
	EXPECT_EQ(0, p.src[0]);
	EXPECT_FALSE(kml_filter_wants_ports(&p));
	ip4(h, 4, 28, 0);
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_IHL, p.malformed);
	ip4(h, 0, 28, 0);
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_IHL, p.malformed);
	ip4(h, 5, 29, 0);	/* longer than the packet */
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	ip4(h, 6, 23, 0);	/* shorter than its own header */
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	ip4(h, 5, 0, 0);	/* 0: only BIG TCP's GSO packets */
	EXPECT_EQ(0, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	EXPECT_EQ(20, kml_filter_parse_ipv4(&p, h, 100000, true));
	EXPECT_EQ(KML_FILTER_BAD_NONE, p.malformed);

	/* fragments: the offset decides, not the more-fragments flag */
	ip4(h, 5, 28, 0x2000);
	EXPECT_EQ(20, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(0, p.later_frag);
	ip4(h, 5, 28, 0x2001);
	EXPECT_EQ(20, kml_filter_parse_ipv4(&p, h, 28, false));
	EXPECT_EQ(1, p.later_frag);
	EXPECT_EQ(17, p.proto);
	EXPECT_FALSE(kml_filter_wants_ports(&p));
}

static void ip6(__u8 *h, __u8 version, __u16 plen)
{
	memset(h, 0, 40);
	h[0] = version << 4;
	h[4] = plen >> 8;
	h[5] = plen & 0xff;
	h[6] = 17;
	inet_pton(AF_INET6, "fd00::1", h + 8);
	inet_pton(AF_INET6, "fd00::2", h + 24);
}

TEST(parse_ipv6_checks_version_and_length)
{
	struct kml_filter_pkt p = { .dir = KML_FILTER_DIR_IN };
	__u8 h[40], dst[16];

	inet_pton(AF_INET6, "fd00::2", dst);
	ip6(h, 6, 8);
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 48, false));
	EXPECT_EQ(KML_FILTER_BAD_NONE, p.malformed);
	EXPECT_EQ(KML_FILTER_FAMILY_IPV6, p.family);
	EXPECT_EQ(0, memcmp(p.dst, dst, 16));
	EXPECT_EQ(0, kml_filter_parse_ipv6(&p, h, 60, false));	/* padding */

	EXPECT_EQ(-EINVAL, kml_filter_parse_ipv6(&p, NULL, 39, false));
	EXPECT_EQ(KML_FILTER_BAD_SHORT, p.malformed);
	EXPECT_EQ(-EINVAL, kml_filter_parse_ipv6(&p, h, 39, false));
	EXPECT_EQ(KML_FILTER_BAD_SHORT, p.malformed);
	ip6(h, 4, 8);
	EXPECT_EQ(-EINVAL, kml_filter_parse_ipv6(&p, h, 48, false));
	EXPECT_EQ(KML_FILTER_BAD_VERSION, p.malformed);
	EXPECT_EQ(KML_FILTER_FAMILY_IPV6, p.family);
	EXPECT_EQ(KML_FILTER_DIR_IN, p.dir);
	EXPECT_EQ(0, p.dst[0]);
	ip6(h, 6, 9);
	EXPECT_EQ(-EINVAL, kml_filter_parse_ipv6(&p, h, 48, false));
	EXPECT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	ip6(h, 6, 0);
	EXPECT_EQ(0, kml_filter_parse_ipv6(&p, h, 48, false));
	EXPECT_EQ(0, kml_filter_parse_ipv6(&p, h, 100000, true));
}

TEST(parse_ipv6_fragments_like_ipv4)
{
	struct kml_filter_pkt p = { .dir = KML_FILTER_DIR_OUT };
	__u8 h[40], ports[4] = { 0x13, 0x88, 0x00, 0x35 };

	ip6(h, 6, 16);
	/* whole, or a first fragment: the protocol and its ports */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, 17, 0, false);
	EXPECT_EQ(17, p.proto);
	EXPECT_EQ(0, p.later_frag);
	ASSERT_TRUE(kml_filter_wants_ports(&p));
	kml_filter_set_ports(&p, ports);
	EXPECT_EQ(1, p.has_ports);
	EXPECT_EQ(5000, p.sport);
	EXPECT_EQ(53, p.dport);
	/* a transport header cut short: no ports, still UDP */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, 17, 0, false);
	kml_filter_set_ports(&p, NULL);
	EXPECT_EQ(0, p.has_ports);
	EXPECT_EQ(17, p.proto);
	/* a later fragment keeps its protocol, as IPv4's does */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, 17, 8, false);
	EXPECT_EQ(17, p.proto);
	EXPECT_EQ(1, p.later_frag);
	EXPECT_FALSE(kml_filter_wants_ports(&p));
	EXPECT_FALSE(kml_filter_first_fragment_decides(&p));	/* out: judged */
	p.dir = KML_FILTER_DIR_IN;
	EXPECT_TRUE(kml_filter_first_fragment_decides(&p));
	/* ... or none, when its header names another extension header */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, -ENOENT, 0, false);
	EXPECT_EQ(0, p.proto);
	EXPECT_EQ(1, p.later_frag);
	EXPECT_EQ(KML_FILTER_BAD_NONE, p.malformed);
	EXPECT_TRUE(kml_filter_first_fragment_decides(&p));
	/* a chain that does not parse: malformed */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, -EBADMSG, 0, false);
	EXPECT_EQ(KML_FILTER_BAD_EXTHDR, p.malformed);
	/* the fixed header was sound: its addresses stay, address rules judge */
	EXPECT_EQ(0xfd, p.src[0]);
	EXPECT_TRUE(kml_filter_addrs_known(&p));
	EXPECT_EQ(0, p.proto);
	EXPECT_FALSE(kml_filter_wants_ports(&p));
	EXPECT_FALSE(kml_filter_first_fragment_decides(&p));
	EXPECT_FALSE(kml_filter_drop_always(&p));
	/* ... in a fragment, which reassembly would let through: dropped */
	ASSERT_EQ(0, kml_filter_parse_ipv6(&p, h, 56, false));
	kml_filter_ipv6_upper(&p, -EBADMSG, 0, true);
	EXPECT_EQ(KML_FILTER_BAD_FRAGMENT, p.malformed);
	EXPECT_TRUE(kml_filter_drop_always(&p));
	EXPECT_FALSE(kml_filter_first_fragment_decides(&p));
	/* an IPv4 later fragment on the way in (never, after reassembly) too */
	p = pkt4("10.0.0.1", "10.0.0.2", 17, 0, 0, KML_FILTER_DIR_IN);
	p.has_ports = 0;
	p.later_frag = 1;
	EXPECT_TRUE(kml_filter_first_fragment_decides(&p));
}

/*
 * The empty set's shortcut skips the parse only for packets the parse
 * would find well formed and the hook would judge: random headers, most
 * of them nearly right, must give the two the same answer.
 */
TEST(ipv4_plain_agrees_with_the_parse)
{
	unsigned int seed = 777, i, plain = 0;

	for (i = 0; i < 200000; i++) {
		struct kml_filter_pkt p = { .dir = 1 << rand_r(&seed) % 3 };
		__u8 h[60];
		__u32 len = rand_r(&seed) % 80;
		bool want;

		ip4(h, 5 + rand_r(&seed) % 3, 20 + rand_r(&seed) % 40,
		    rand_r(&seed) % 4 ? 0 : rand_r(&seed) & 0xffff);
		if (rand_r(&seed) % 8 == 0)
			h[rand_r(&seed) % 20] = (__u8)rand_r(&seed);
		kml_filter_parse_ipv4(&p, len >= 20 ? h : NULL, len, false);
		want = !p.malformed && !kml_filter_first_fragment_decides(&p);
		ASSERT_EQ(want, kml_filter_ipv4_plain(len >= 20 ? h : NULL, len, p.dir))
			TH_LOG("packet %u", i);
		plain += want;
	}
	/* both answers, many times */
	ASSERT_GT(plain, 20000);
	ASSERT_LT(plain, 180000);
}

/* Which malformed packets the hook drops whatever the rules: the non-IP ones. */
TEST(non_ip_is_dropped_whatever_the_rules)
{
	struct kml_filter_pkt p = { .dir = KML_FILTER_DIR_OUT };
	__u8 h[60];	/* ip4() clears a header with options */

	ip4(h, 5, 28, 0);
	kml_filter_parse_ipv4(&p, h, 28, false);
	EXPECT_FALSE(kml_filter_drop_always(&p));
	kml_filter_parse_ipv4(&p, h, 19, false);		/* short */
	EXPECT_TRUE(kml_filter_drop_always(&p));
	h[0] = 0x65;						/* version 6 */
	kml_filter_parse_ipv4(&p, h, 28, false);
	EXPECT_TRUE(kml_filter_drop_always(&p));
	ip4(h, 4, 28, 0);					/* ihl 4 */
	kml_filter_parse_ipv4(&p, h, 28, false);
	EXPECT_TRUE(kml_filter_drop_always(&p));
	ip4(h, 5, 29, 0);		/* IP, but its length lies: rules judge it */
	kml_filter_parse_ipv4(&p, h, 28, false);
	EXPECT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	EXPECT_FALSE(kml_filter_drop_always(&p));

	ip6(h, 6, 8);
	kml_filter_parse_ipv6(&p, h, 48, false);
	EXPECT_FALSE(kml_filter_drop_always(&p));
	kml_filter_parse_ipv6(&p, h, 39, false);		/* short */
	EXPECT_TRUE(kml_filter_drop_always(&p));
	ip6(h, 4, 8);						/* version 4 */
	kml_filter_parse_ipv6(&p, h, 48, false);
	EXPECT_TRUE(kml_filter_drop_always(&p));
	ip6(h, 6, 9);
	kml_filter_parse_ipv6(&p, h, 48, false);
	EXPECT_FALSE(kml_filter_drop_always(&p));
	ip6(h, 6, 8);
	kml_filter_parse_ipv6(&p, h, 48, false);
	kml_filter_ipv6_upper(&p, -EBADMSG, 0, false);		/* chain cut short */
	EXPECT_FALSE(kml_filter_drop_always(&p));
}

/* Rules a malformed packet meets: only those naming no proto, address, port. */
TEST(malformed_matches_only_family_and_direction)
{
	static const char *const text[] = {
		"accept in udp dport 9",	/* 0 */
		"accept in ipv4 udp",		/* 1 */
		"accept in ipv4 src 0.0.0.0/1",	/* 2: would match a zero address */
		"accept in ipv6 dst ::/8",	/* 3 */
		"drop out",			/* 4 */
		"drop in ipv6",			/* 5 */
		"accept in",			/* 6 */
	};
	struct kml_filter_rule r[7];
	struct kml_filter_pkt p = { .dir = KML_FILTER_DIR_IN };
	struct kml_filter_index ix;
	void *mem = malloc(kml_filter_index_mem(7));
	__u8 h[60];
	char err[256];
	__u32 i;

	ASSERT_NE(NULL, mem);
	for (i = 0; i < 7; i++)
		ASSERT_EQ(0, parse(text[i], &r[i], err)) TH_LOG("%s: %s", text[i], err);
	kml_filter_index_build(&ix, r, 7, mem);
	ip4(h, 5, 28, 0);
	h[0] = 0x45 ^ 0x20;	/* version 6 in an IPv4 hook */
	kml_filter_parse_ipv4(&p, h, 28, false);
	ASSERT_EQ(KML_FILTER_BAD_VERSION, p.malformed);
	EXPECT_EQ(6, kml_filter_lookup(&ix, &p));
	EXPECT_EQ(6, linear(r, 7, &p));
	ip6(h, 6, 100);
	kml_filter_parse_ipv6(&p, h, 48, false);
	ASSERT_EQ(KML_FILTER_BAD_LENGTH, p.malformed);
	EXPECT_EQ(5, kml_filter_lookup(&ix, &p));
	/* without the family and direction rules, the policy decides */
	kml_filter_index_build(&ix, r, 4, mem);
	EXPECT_EQ(KML_FILTER_NOMATCH, kml_filter_lookup(&ix, &p));
	/* the same header, parsed, meets rule 3 */
	ip6(h, 6, 8);
	h[24] = 0;
	kml_filter_parse_ipv6(&p, h, 48, false);
	ASSERT_EQ(KML_FILTER_BAD_NONE, p.malformed);
	EXPECT_EQ(3, kml_filter_lookup(&ix, &p));
	/* and so does it with its extension headers cut short: the
	 * addresses are the checked fixed header's; the port rule is not met
	 */
	kml_filter_parse_ipv6(&p, h, 48, false);
	kml_filter_ipv6_upper(&p, -EBADMSG, 0, false);
	ASSERT_EQ(KML_FILTER_BAD_EXTHDR, p.malformed);
	EXPECT_EQ(3, kml_filter_lookup(&ix, &p));
	EXPECT_EQ(3, linear(r, 4, &p));
	free(mem);
}

TEST(gso_wire_bytes)
{
	__u64 pk, by;

	/* not GSO: one packet, its length, whatever gso_segs says */
	kml_filter_wire(128, 0, 0, 0, &pk, &by);
	EXPECT_EQ(1, pk);
	EXPECT_EQ(128, by);
	kml_filter_wire(128, 1, 0, 28, &pk, &by);
	EXPECT_EQ(1, pk);
	EXPECT_EQ(128, by);
	/* UDP GSO: 10 segments of 1000 bytes, 28 bytes of headers each */
	kml_filter_wire(28 + 10000, 10, 1000, 28, &pk, &by);
	EXPECT_EQ(10, pk);
	EXPECT_EQ(10 * 1028, by);
	/* TSO, the last segment short: 3 x 1448 + 100, 52-byte headers */
	kml_filter_wire(52 + 3 * 1448 + 100, 4, 1448, 52, &pk, &by);
	EXPECT_EQ(4, pk);
	EXPECT_EQ(4 * 52 + 3 * 1448 + 100, by);
	/* a sender that left gso_segs 0 (SKB_GSO_DODGY): from gso_size */
	kml_filter_wire(52 + 3 * 1448 + 100, 0, 1448, 52, &pk, &by);
	EXPECT_EQ(4, pk);
	EXPECT_EQ(4 * 52 + 3 * 1448 + 100, by);
	kml_filter_wire(52, 0, 1448, 52, &pk, &by);
	EXPECT_EQ(1, pk);
	EXPECT_EQ(52, by);
	/* the most an skb can stand for does not overflow */
	kml_filter_wire(0xffffffffu, 0xffff, 0xffff, 0xffffffffu, &pk, &by);
	EXPECT_EQ(0xffff, pk);
	EXPECT_EQ(0xffffffffull * 0xffff, by);
}

TEST(ten_thousand_hosts_are_found)
{
	__u32 n = 10000, i;
	struct kml_filter_rule *rules = calloc(n, sizeof(*rules));
	void *mem = malloc(kml_filter_index_mem(n));
	struct kml_filter_index ix;
	struct kml_filter_pkt p;

	for (i = 0; i < n; i++) {
		struct kml_filter_rule *r = &rules[i];

		r->family = 4;
		r->proto = 17;
		r->dir = KML_FILTER_DIR_IN;
		r->action = KML_FILTER_DROP;
		r->src_len = 32;
		r->src[0] = 10;
		r->src[1] = 1;
		r->src[2] = (__u8)(i >> 8);
		r->src[3] = (__u8)i;
		r->sport_hi = r->dport_hi = 0xffff;
		ASSERT_EQ(0, kml_filter_rule_check(r, NULL));
	}
	kml_filter_index_build(&ix, rules, n, mem);
	EXPECT_EQ(0, ix.linear);
	EXPECT_EQ(1, ix.nlens[0][0]);
	for (i = 0; i < n; i += 7) {
		p = pkt4("10.1.0.0", "10.2.0.0", 17, 1, 2, KML_FILTER_DIR_IN);
		p.src[2] = (__u8)(i >> 8);
		p.src[3] = (__u8)i;
		ASSERT_EQ(i, kml_filter_lookup(&ix, &p));
	}
	p = pkt4("10.9.0.0", "10.2.0.0", 17, 1, 2, KML_FILTER_DIR_IN);
	EXPECT_EQ(KML_FILTER_NOMATCH, kml_filter_lookup(&ix, &p));
	free(mem);
	free(rules);
}

TEST(parse_and_format_round_trip)
{
	static const char *const good[] = {
		"accept",
		"drop in tcp dport 22",
		"drop out udp sport 1000-2000 dport 53",
		"accept ipv6 icmpv6",
		"accept icmp",
		"drop src 10.0.0.0/8 dst 192.168.1.7",
		"drop in tcp src fd00::/64 dport 80",
		"accept ipv4",
		"drop ipv6 udp",
		"accept in ct established,related",
		"accept in tcp dport 22 ct new",
		"drop ct invalid",
		"accept ct untracked",
		"accept out icmpv6 src ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124 dst ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ct new,established,related,invalid,untracked",
		"drop fwd udp dport 53",
		"accept in fwd tcp",
		"drop out fwd",
		"accept in out fwd ipv6",
	};
	struct kml_filter_rule r, r2;
	char err[256], text[256];
	unsigned int i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ASSERT_EQ(0, parse(good[i], &r, err)) TH_LOG("%s: %s", good[i], err);
		ASSERT_LT(0, kml_filter_format_rule(&r, text, sizeof(text)));
		EXPECT_STREQ(good[i], text);
		ASSERT_EQ(0, parse(text, &r2, err));
		EXPECT_EQ(0, memcmp(&r, &r2, sizeof(r)));
	}
	/* word order is free; the formatted form is canonical */
	ASSERT_EQ(0, parse("dport 22 tcp in drop", &r, err));
	kml_filter_format_rule(&r, text, sizeof(text));
	EXPECT_STREQ("drop in tcp dport 22", text);
	/* so is the order of connection states */
	ASSERT_EQ(0, parse("ct untracked,related,new accept", &r, err));
	EXPECT_EQ(KML_FILTER_CT_UNTRACKED | KML_FILTER_CT_RELATED | KML_FILTER_CT_NEW, r.ct_state);
	kml_filter_format_rule(&r, text, sizeof(text));
	EXPECT_STREQ("accept ct new,related,untracked", text);
	/* in and out is the default, and so not written */
	ASSERT_EQ(0, parse("accept out in", &r, err));
	kml_filter_format_rule(&r, text, sizeof(text));
	EXPECT_STREQ("accept", text);
	ASSERT_EQ(0, parse("accept fwd out in", &r, err));
	kml_filter_format_rule(&r, text, sizeof(text));
	EXPECT_STREQ("accept in out fwd", text);
	/* too small a buffer */
	EXPECT_EQ(-1, kml_filter_format_rule(&r, text, 8));
}

TEST(parse_errors)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "tcp dport 22", "the rule needs 'accept' or 'drop'" },
		{ "drop drop", "'drop': that part of the rule is given twice" },
		{ "drop in in", "'in' given twice" },
		{ "drop fwd out fwd", "'fwd' given twice" },
		{ "drop sctp", "unknown word 'sctp'" },
		{ "drop src 10.0.0.0/33", "bad prefix length in '10.0.0.0/33': 0..32" },
		{ "drop src 10.0.0.0/x", "bad prefix length in '10.0.0.0/x': 0..32" },
		{ "drop src fd00::/129", "bad prefix length in 'fd00::/129': 0..128" },
		{ "drop src 10.0.0.300", "bad address '10.0.0.300'" },
		{ "drop src 10.0.0.1/8", "'10.0.0.1/8' has bits set past /8 (did you mean 10.0.0.0/8?)" },
		{ "drop src 10.0.0.1 dst fd00::1", "'fd00::1' is not of the rule's address family" },
		{ "drop ipv6 src 10.0.0.1", "'10.0.0.1' is not of the rule's address family" },
		{ "drop src 10.0.0.1 ipv6", "'ipv6' conflicts with the rule's addresses" },
		{ "drop tcp dport 90-80", "reversed port range '90-80'" },
		{ "drop tcp dport 65536", "bad port '65536': give 0..65535 or LOW-HIGH" },
		{ "drop tcp dport 1-", "bad port '1-': give 0..65535 or LOW-HIGH" },
		{ "drop tcp dport", "'dport' needs a value" },
		{ "drop tcp dport 1 dport 2", "'dport' given twice" },
		{ "drop dport 22", "ports need tcp or udp" },
		{ "drop ipv6 icmp", "protocol of the other family" },
		{ "accept ct", "'ct' needs states, e.g. 'ct established,related'" },
		{ "accept ct bogus", "bad connection state 'bogus': give new, established, related, invalid or untracked, separated by commas" },
		{ "accept ct new,", "bad connection state '' in 'new,': give new, established, related, invalid or untracked, separated by commas" },
		{ "accept ct new,,related", "bad connection state '' in 'new,,related': give new, established, related, invalid or untracked, separated by commas" },
		{ "accept ct NEW", "bad connection state 'NEW': give new, established, related, invalid or untracked, separated by commas" },
		{ "accept ct new,new", "connection state 'new' given twice in 'new,new'" },
		{ "accept ct new ct related", "'ct' given twice" },
	};
	struct kml_filter_rule r;
	char err[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, parse(bad[i].text, &r, err)) TH_LOG("%s", bad[i].text);
		EXPECT_STREQ(bad[i].err, err);
	}
}

/*
 * Logging (ABI 4): `log` after accept or drop logs what the rule
 * matches; `log` alone is the action that only logs. The formatted rule
 * always says its rate and burst, and reads back the same.
 */
TEST(parse_log_words)
{
	static const struct {
		const char *text, *canon;
		__u8 action;
		__u32 rate;
		__u16 burst;
	} good[] = {
		{ "drop in tcp dport 23 log", "drop in tcp dport 23 log rate 10/s burst 5",
		  KML_FILTER_DROP, 10, 5 },
		{ "log in tcp dport 22", "log in tcp dport 22 rate 10/s burst 5",
		  KML_FILTER_LOG, 10, 5 },
		{ "accept log rate 100/s", "accept log rate 100/s burst 5",
		  KML_FILTER_ACCEPT, 100, 5 },
		{ "accept log rate 100", "accept log rate 100/s burst 5",
		  KML_FILTER_ACCEPT, 100, 5 },
		{ "log burst 1 in", "log in rate 10/s burst 1", KML_FILTER_LOG, 10, 1 },
		/* words in any order: rate and burst need not follow log */
		{ "burst 65535 rate 1000000/s udp log drop",
		  "drop udp log rate 1000000/s burst 65535", KML_FILTER_DROP, 1000000, 65535 },
		{ "log fwd rate 1/s burst 1 ct new", "log fwd ct new rate 1/s burst 1",
		  KML_FILTER_LOG, 1, 1 },
	};
	struct kml_filter_words w;
	struct kml_filter_rule r, r2;
	char err[256], text[KML_FILTER_RULE_TEXT_MAX], buf[256], *words[32];
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ASSERT_EQ(0, parse(good[i].text, &r, err)) TH_LOG("%s: %s", good[i].text, err);
		EXPECT_EQ(good[i].action, r.action) TH_LOG("%s", good[i].text);
		EXPECT_EQ(good[i].rate, r.log_rate) TH_LOG("%s", good[i].text);
		EXPECT_EQ(good[i].burst, r.log_burst) TH_LOG("%s", good[i].text);
		ASSERT_LT(0, kml_filter_format_rule(&r, text, sizeof(text)));
		EXPECT_STREQ(good[i].canon, text);
		ASSERT_EQ(0, parse(text, &r2, err)) TH_LOG("%s: %s", text, err);
		EXPECT_EQ(0, memcmp(&r, &r2, sizeof(r))) TH_LOG("%s", text);
	}
	/* a rule that does not log says nothing of it */
	ASSERT_EQ(0, parse("drop in tcp dport 23", &r, err));
	EXPECT_EQ(0, r.log_rate);
	EXPECT_EQ(0, r.log_burst);
	/* the defaults the documentation gives */
	EXPECT_EQ(10, KML_FILTER_LOG_DEFAULT_RATE);
	EXPECT_EQ(5, KML_FILTER_LOG_DEFAULT_BURST);
	/* log(0) is the action's word when there is no other, and the log's */
	strcpy(buf, "in log tcp");
	n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		words[n++] = t;
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, 0, err, sizeof(err)));
	EXPECT_EQ(1, w.action);
	EXPECT_EQ(1, w.log);
	strcpy(buf, "drop in tcp log rate 5");
	n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		words[n++] = t;
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, 0, err, sizeof(err)));
	EXPECT_EQ(0, w.action);
	EXPECT_EQ(3, w.log);
	strcpy(buf, "drop in tcp");
	n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		words[n++] = t;
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, 0, err, sizeof(err)));
	EXPECT_EQ(-1, w.log);
	/* the verdict words, the log action's among them */
	EXPECT_STREQ("log", kml_filter_verdict_name(KML_FILTER_LOG));
	EXPECT_STREQ("?", kml_filter_verdict_name(4));
}

/* The longest rule there is fits in KML_FILTER_RULE_TEXT_MAX. */
TEST(format_longest_rule)
{
	struct kml_filter_rule r = {
		.family = KML_FILTER_FAMILY_IPV6, .proto = KML_FILTER_PROTO_ICMPV6,
		.dir = KML_FILTER_DIR_ALL, .action = KML_FILTER_ACCEPT,
		.src_len = 127, .dst_len = 127, .sport_lo = 65534, .sport_hi = 65535,
		.dport_lo = 65534, .dport_hi = 65535, .ct_state = KML_FILTER_CT_ALL,
		.log_rate = KML_FILTER_LOG_MAX_RATE, .log_burst = 65535,
	};
	char text[512];
	int n;

	/* every group of four digits, the longest inet_ntop() writes */
	memset(r.src, 0xee, 15);
	memset(r.dst, 0xee, 15);
	n = kml_filter_format_rule(&r, text, sizeof(text));
	ASSERT_LT(0, n);
	EXPECT_GT(KML_FILTER_RULE_TEXT_MAX, n) TH_LOG("%s", text);
	EXPECT_EQ(n, kml_filter_format_rule(&r, text, KML_FILTER_RULE_TEXT_MAX));
}

TEST(parse_log_errors)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "drop rate 5", "'rate' is for logging: give 'log' too, e.g. 'log rate 10/s burst 5'" },
		{ "drop burst 5", "'burst' is for logging: give 'log' too, e.g. 'log rate 10/s burst 5'" },
		{ "drop log rate", "'rate' needs a value, e.g. 'log rate 10/s'" },
		{ "drop log burst", "'burst' needs a value, e.g. 'log burst 5'" },
		{ "drop log rate 0", "bad log rate '0': give records per second, 1..1000000, as N or N/s" },
		{ "drop log rate 10/m", "bad log rate '10/m': give records per second, 1..1000000, as N or N/s" },
		{ "drop log rate /s", "bad log rate '/s': give records per second, 1..1000000, as N or N/s" },
		{ "drop log rate -1", "bad log rate '-1': give records per second, 1..1000000, as N or N/s" },
		{ "drop log rate 4294967296", "bad log rate '4294967296': give records per second, 1..1000000, as N or N/s" },
		/* past 2^32 by less than its tenth: wraps a 32-bit long unless checked first */
		{ "drop log rate 4294967306", "bad log rate '4294967306': give records per second, 1..1000000, as N or N/s" },
		{ "drop log rate 1000001", "log rate above 1000000/s" },
		{ "drop log rate 4294967295/s", "log rate above 1000000/s" },
		{ "drop log burst 0", "a log burst of at least 1 is needed" },
		{ "drop log burst 65536", "bad log burst '65536': give 1..65535" },
		{ "drop log burst 5x", "bad log burst '5x': give 1..65535" },
		{ "drop log log", "'log': that part of the rule is given twice" },
		{ "log rate 1 rate 2", "'rate' given twice" },
		{ "log burst 1 burst 2", "'burst' given twice" },
		{ "log accept drop", "'drop': that part of the rule is given twice" },
		{ "log dport 22", "ports need tcp or udp" },
	};
	struct kml_filter_rule r;
	char err[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, parse(bad[i].text, &r, err)) TH_LOG("%s", bad[i].text);
		EXPECT_STREQ(bad[i].err, err);
	}
}

/* a string literal and its length, NULs included */
#define LIT(s) s, sizeof(s) - 1

TEST(parse_file)
{
	static const char good[] =
		"# a rule file\n"
		"policy drop\n"
		"\n"
		"accept in tcp dport 22   # ssh\n"
		"accept\tout\n"
		"policy fwd drop\n"
		"drop in udp";	/* no final newline */
	struct kml_filter_ruleset rs = { 0 };
	char err[300];

	ASSERT_EQ(0, kml_filter_parse_file(good, strlen(good), &rs, err, sizeof(err)));
	EXPECT_EQ(3, rs.count);
	EXPECT_EQ(KML_FILTER_DROP, rs.policy);
	EXPECT_EQ(KML_FILTER_DROP, rs.policy_fwd);
	EXPECT_EQ(22, rs.rules[0].dport_lo);
	EXPECT_EQ(KML_FILTER_DIR_OUT, rs.rules[1].dir);
	kml_filter_ruleset_free(&rs);

	ASSERT_EQ(-1, kml_filter_parse_file(LIT("accept\n\ndrop tcp dport 70000\n"), &rs,
					    err, sizeof(err)));
	EXPECT_STREQ("line 3: bad port '70000': give 0..65535 or LOW-HIGH", err);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(-1, kml_filter_parse_file(LIT("policy drop\npolicy accept\n"), &rs,
					    err, sizeof(err)));
	EXPECT_STREQ("line 2: a second policy line", err);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(-1, kml_filter_parse_file(LIT("policy maybe\n"), &rs, err, sizeof(err)));
	EXPECT_STREQ("line 1: give 'policy [fwd] accept' or 'policy [fwd] drop'", err);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(-1, kml_filter_parse_file(LIT("policy fwd\n"), &rs, err, sizeof(err)));
	EXPECT_STREQ("line 1: give 'policy [fwd] accept' or 'policy [fwd] drop'", err);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(-1, kml_filter_parse_file(LIT("policy fwd accept\npolicy fwd drop\n"),
					    &rs, err, sizeof(err)));
	EXPECT_STREQ("line 2: a second 'policy fwd' line", err);
	kml_filter_ruleset_free(&rs);
	/* one of each is fine, and a file without leaves both 0 (unchanged) */
	ASSERT_EQ(0, kml_filter_parse_file(LIT("policy fwd accept\npolicy drop\n"),
					   &rs, err, sizeof(err)));
	EXPECT_EQ(KML_FILTER_DROP, rs.policy);
	EXPECT_EQ(KML_FILTER_ACCEPT, rs.policy_fwd);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(0, kml_filter_parse_file(LIT("drop\n"), &rs, err, sizeof(err)));
	EXPECT_EQ(0, rs.policy);
	EXPECT_EQ(0, rs.policy_fwd);
	kml_filter_ruleset_free(&rs);
	ASSERT_EQ(-1, kml_filter_parse_file(LIT("accept\0drop\n"), &rs, err, sizeof(err)));
	EXPECT_STREQ("line 1: NUL byte", err);
	kml_filter_ruleset_free(&rs);
}

TEST(parse_file_many_rules)
{
	size_t cap = 200000 * 24, len = 0;
	char *buf = malloc(cap), err[300];
	struct kml_filter_ruleset rs = { 0 };
	unsigned int i;

	for (i = 0; i < 70000; i++)
		len += (size_t)sprintf(buf + len, "drop tcp dport %u\n", i % 65536);
	ASSERT_EQ(-1, kml_filter_parse_file(buf, len, &rs, err, sizeof(err)));
	EXPECT_STREQ("line 65537: more than 65536 rules", err);
	kml_filter_ruleset_free(&rs);
	free(buf);
}

/*
 * The bytes one set asks the allocator for, by hand from
 * kml_filter_set_alloc(): the set (624), rules (56 each and a 16-byte
 * log limiter each, one at least),
 * index ((buckets + n) * 4, buckets the power of two >= 2n, 16 at least),
 * carried counts ((n + 2) * 16: the rules', the in/out policy's and the
 * forward policy's) and per CPU a pointer (8) and counters ((n + 2) * 16
 * rounded up to 64).
 */
TEST(set_bytes_by_hand)
{
	EXPECT_EQ(624 + 72 + 16 * 4 + 32 + 1 * (8 + 64),
		  kml_filter_set_bytes(0, 1));
	EXPECT_EQ(624 + 72 + 17 * 4 + 48 + 2 * (8 + 64),
		  kml_filter_set_bytes(1, 2));
	EXPECT_EQ(624 + 8 * 72 + 24 * 4 + 160 + 4 * (8 + 192),
		  kml_filter_set_bytes(8, 4));
	EXPECT_EQ(624 + 9 * 72 + (32 + 9) * 4 + 176 + 3 * (8 + 192),
		  kml_filter_set_bytes(9, 3));
	/* the most rules on 64 CPUs: about 70 MiB */
	EXPECT_EQ(73667728ULL, kml_filter_set_bytes(KML_FILTER_MAX_RULES, 64));
	EXPECT_EQ(64, kml_filter_ctr_bytes(0));
	EXPECT_EQ(64, kml_filter_ctr_bytes(2));
	EXPECT_EQ(128, kml_filter_ctr_bytes(3));
	EXPECT_EQ(128, kml_filter_ctr_bytes(6));
	EXPECT_EQ(192, kml_filter_ctr_bytes(7));
}

/* More than 4 GiB at the largest sizes: no 32-bit product on the way. */
TEST(set_bytes_no_overflow)
{
	__u64 per_cpu = 8 + 1048640;	/* 65538 * 16 rounded up to 64 */

	EXPECT_EQ(624ULL + 65536 * 72 + (131072 + 65536) * 4 + 65538 * 16 +
		  8192 * per_cpu, kml_filter_set_bytes(KML_FILTER_MAX_RULES, 8192));
	EXPECT_EQ(8597078672ULL, kml_filter_set_bytes(KML_FILTER_MAX_RULES, 8192));
	EXPECT_LT(kml_filter_set_bytes(KML_FILTER_MAX_RULES, 8191),
		  kml_filter_set_bytes(KML_FILTER_MAX_RULES, 8192));
	EXPECT_LT(kml_filter_set_bytes(KML_FILTER_MAX_RULES, 0xffffffffu) / 0xffffffffu,
		  1ULL << 21);
	EXPECT_LT(1ULL << 52, kml_filter_set_bytes(KML_FILTER_MAX_RULES, 0xffffffffu));
}

/* One more rule or CPU never costs less. */
TEST(set_bytes_monotonic)
{
	static const __u32 cpus[] = { 1, 2, 3, 64, 8192 };
	unsigned int c;
	__u32 n;

	for (c = 0; c < sizeof(cpus) / sizeof(cpus[0]); c++)
		for (n = 0; n < KML_FILTER_MAX_RULES; n++) {
			ASSERT_LT(kml_filter_set_bytes(n, cpus[c]),
				  kml_filter_set_bytes(n + 1, cpus[c]))
				TH_LOG("%u rules, %u CPUs", n, cpus[c]);
			ASSERT_LT(kml_filter_set_bytes(n, cpus[c]),
				  kml_filter_set_bytes(n, cpus[c] + 1));
		}
}

TEST_HARNESS_MAIN
