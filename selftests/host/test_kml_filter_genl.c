// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kml-filter's generic netlink messages
 * (userspace/kml_filter_genl.c): rules encoded and decoded back, the
 * decoder's refusals, the word of the command line an extended ack's
 * offset points at and the lines that show it, GET_INFO replies, and
 * GETRULE dumps built by hand as the kernel sends them, torn ones
 * (NLM_F_DUMP_INTR, a generation that changes, an index skipped)
 * included; and load's replace in parts: its messages, the chunking of a
 * large set, and an ack's offset inside a chunk back to the rule and the
 * rule file's line and word; the log's rules, GET_INFO counters and
 * LOG_ATTACH / LOG_DETACH requests, and the lines `kml-filter log` makes
 * of the ring's records.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../userspace/kml_filter_genl.h"
#include "../../modules/kml_filter/kml_filter_logic.h"

#define FAMILY_ID	0x1d	/* any id: nothing here talks to a kernel */

/* Rule lines that cover every word, both families, edges of every range. */
static const char *const lines[] = {
	"drop",
	"accept",
	"drop in",
	"accept out",
	"drop ipv4",
	"drop ipv6",
	"drop in tcp dport 22",
	"accept in tcp src 10.99.0.0/24 dport 8080",
	"drop in udp dport 9000",
	"drop udp sport 0",
	"drop udp sport 0-0",
	"drop udp dport 65535",
	"drop tcp sport 1-1023 dport 1024-65535",
	"drop tcp dport 0-65534",
	"drop tcp dport 1-65535",
	"accept icmp",
	"drop icmpv6",
	"drop ipv4 icmp",
	"drop ipv6 icmpv6 src fe80::/10",
	"accept src 0.0.0.0/0",
	"accept src ::/0",
	"accept dst 255.255.255.255",
	"accept dst ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	"drop ipv6 tcp dst fd99::/64 sport 1-1023",
	"drop out udp src 192.168.1.0/24 dst 10.0.0.0/8 sport 53 dport 1000-2000",
	"drop in any src 2001:db8::1 dst 2001:db8::/32",
	"accept in src 10.0.0.1/32",
	"accept in src 128.0.0.0/1",
	"drop src ::1/128",
	"accept in ct established,related",
	"accept in tcp dport 22 ct new",
	"drop ct invalid",
	"accept ct untracked,new,established,related,invalid",
	"drop in tcp dport 23 log",
	"log in tcp dport 22",
	"accept log rate 1/s burst 1",
	"log fwd udp rate 1000000/s burst 65535",
	"drop ipv6 src fd00::/8 log rate 7 burst 2",
};

/* Splits @line (copied into @buf) into words. */
static int words_of(const char *line, char *buf, size_t len, char **w, int max)
{
	int n = 0;
	char *save = NULL, *t;

	snprintf(buf, len, "%s", line);
	for (t = strtok_r(buf, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
		w[n++] = t;
	return n;
}

/* A rule in a NEWRULE request, as kml-filter sends it. */
static int encode(uint8_t *buf, size_t cap, const struct kml_filter_rule *r,
		  struct kml_filter_genl_offs *offs)
{
	struct kml_nl_msg m;

	kml_nl_msg_init(&m, buf, cap, FAMILY_ID, 0, KML_FILTER_CMD_NEWRULE,
			KML_FILTER_GENL_VERSION);
	kml_filter_genl_put_rule(&m, KML_FILTER_A_RULE, r, offs);
	kml_nl_put_u32(&m, KML_FILTER_A_POSITION, 3);
	return kml_nl_msg_len(&m);
}

/* Encodes @r, checks where each attribute went, decodes it back into @out. */
static void round_trip(struct __test_metadata *_metadata, const struct kml_filter_rule *r,
		       struct kml_filter_rule *out)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	struct kml_filter_genl_offs offs;
	uint16_t path[4];
	int len = encode(buf, sizeof(buf), r, &offs), t;

	ASSERT_LT(0, len);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ((uint32_t)offs.nest, tb[KML_FILTER_A_RULE].off);
	ASSERT_EQ((uint32_t)offs.end, tb[KML_FILTER_A_POSITION].off);
	ASSERT_TRUE(tb[KML_FILTER_A_RULE].flags & NLA_F_NESTED);
	/* each offset recorded is that attribute's header, inside the nest */
	for (t = 1; t <= KML_FILTER_RA_MAX; t++) {
		if (offs.ra[t] < 0)
			continue;
		ASSERT_EQ(2, kml_nl_attr_path(buf, (size_t)len, (uint32_t)offs.ra[t], path, 4));
		ASSERT_EQ(KML_FILTER_A_RULE, path[0]);
		ASSERT_EQ(t, path[1]);
	}
	ASSERT_EQ(0, kml_filter_genl_get_rule(&tb[KML_FILTER_A_RULE], out));
}

TEST(rule_lines_round_trip)
{
	struct kml_filter_rule r, back;
	char buf[256], err[256], *w[32], text[256];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int n = words_of(lines[i], buf, sizeof(buf), w, 32);

		ASSERT_EQ(0, kml_filter_parse_rule(n, w, &r, err, sizeof(err)))
			TH_LOG("%s: %s", lines[i], err);
		round_trip(_metadata, &r, &back);
		ASSERT_EQ(0, memcmp(&r, &back, sizeof(r))) TH_LOG("%s", lines[i]);
		ASSERT_LT(0, kml_filter_format_rule(&back, text, sizeof(text)));
	}
}

/* xorshift: the same "random" rules on every run */
static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Every valid rule a seed gives, and some invalid ones (--no-check sends those). */
TEST(random_rules_round_trip)
{
	static const __u8 protos[] = { 0, 1, 6, 17, 58 };
	struct kml_filter_rule r, back;
	uint32_t seed = 0x6b6d6c;
	const char *why;
	unsigned int valid = 0;

	for (int i = 0; i < 20000; i++) {
		unsigned int bits, k;

		memset(&r, 0, sizeof(r));
		r.family = (__u8[]){ 0, 4, 6 }[next(&seed) % 3];
		r.proto = protos[next(&seed) % 5];
		r.dir = (__u8)(next(&seed) % 4);
		r.action = (__u8)(next(&seed) % 4);
		bits = r.family == 4 ? 32 : r.family == 6 ? 128 : 0;
		if (bits) {
			r.src_len = (__u8)(next(&seed) % (bits + 1));
			r.dst_len = (__u8)(next(&seed) % (bits + 1));
			for (k = 0; k < bits / 8; k++) {
				r.src[k] = (__u8)next(&seed);
				r.dst[k] = (__u8)next(&seed);
			}
			if (next(&seed) % 4) {
				kml_filter_prefix_mask(r.src, r.src_len);
				kml_filter_prefix_mask(r.dst, r.dst_len);
			}
			if (!r.src_len)
				memset(r.src, 0, sizeof(r.src));
			if (!r.dst_len)
				memset(r.dst, 0, sizeof(r.dst));
		}
		r.sport_lo = (__u16)(next(&seed) % 3 ? 0 : next(&seed));
		r.sport_hi = (__u16)(next(&seed) % 3 ? 0xffff : next(&seed));
		r.dport_lo = (__u16)(next(&seed) % 3 ? 0 : next(&seed));
		r.dport_hi = (__u16)(next(&seed) % 3 ? 0xffff : next(&seed));
		/* ABI 3's connection states: none, good masks and bad ones */
		r.ct_state = (__u8)(next(&seed) % 2 ? 0 : next(&seed));
		/* ABI 4's log: none, good limits, each half alone, past the top */
		switch (next(&seed) % 5) {
		case 0:
			r.log_rate = next(&seed) % KML_FILTER_LOG_MAX_RATE + 1;
			r.log_burst = (__u16)(next(&seed) % 65535 + 1);
			break;
		case 1:
			r.log_rate = next(&seed);
			break;
		case 2:
			r.log_burst = (__u16)next(&seed);
			break;
		default:
			break;
		}
		if (!kml_filter_rule_check(&r, &why))
			valid++;
		round_trip(_metadata, &r, &back);
		ASSERT_EQ(0, memcmp(&r, &back, sizeof(r))) TH_LOG("rule %d", i);
	}
	/* the generator must not be so wild that no rule is a real one */
	ASSERT_LT(500u, valid);
}

/* A nest of raw attributes, as a kernel (or a liar) could send it. */
static int decode_raw(const void *attrs, size_t alen, struct kml_filter_rule *r)
{
	_Alignas(8) uint8_t buf[256];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	struct kml_nl_msg m;
	int nest;

	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_GETRULE, 1);
	nest = kml_nl_nest_start(&m, KML_FILTER_A_RULE);
	memcpy(buf + m.len, attrs, alen);
	m.len += alen;
	kml_nl_nest_end(&m, nest);
	/* kml_nl_nest_end set the nest's length; the message's is ours to set */
	memcpy(buf, &(uint32_t){ (uint32_t)m.len }, 4);
	if (kml_nl_parse(buf, m.len, tb, KML_FILTER_A_MAX))
		return -100;
	return kml_filter_genl_get_rule(&tb[KML_FILTER_A_RULE], r);
}

/* One attribute's bytes: header, payload, padding. */
static size_t attr(uint8_t *p, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr nla = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(p, &nla, sizeof(nla));
	memcpy(p + NLA_HDRLEN, data, len);
	memset(p + NLA_HDRLEN + len, 0, NLA_ALIGN(len) - len);
	return NLA_HDRLEN + NLA_ALIGN(len);
}

TEST(decoder_checks_shapes)
{
	static const uint8_t v4[4] = { 10, 0, 0, 0 }, v6[16] = { 0xfd, 0x99 };
	const uint8_t four = 4, six = 6, l8 = 8, l0 = 0, l33 = 33, l129 = 129;
	const uint16_t u16 = 80;
	struct kml_filter_rule r;
	uint8_t a[128];
	size_t n;

	/* nothing: every default */
	ASSERT_EQ(0, decode_raw(a, 0, &r));
	ASSERT_EQ(0, r.family);
	ASSERT_EQ(0xffff, r.sport_hi);
	ASSERT_EQ(0xffff, r.dport_hi);
	/* an IPv4 prefix, and the length 0 of a rule without a destination */
	n = attr(a, KML_FILTER_RA_FAMILY, &four, 1);
	n += attr(a + n, KML_FILTER_RA_SRC, v4, 4);
	n += attr(a + n, KML_FILTER_RA_SRC_LEN, &l8, 1);
	n += attr(a + n, KML_FILTER_RA_DST_LEN, &l0, 1);
	ASSERT_EQ(0, decode_raw(a, n, &r));
	ASSERT_EQ(8, r.src_len);
	ASSERT_EQ(10, r.src[0]);
	ASSERT_EQ(0, r.dst_len);
	/* an address without its length: the whole address */
	n = attr(a, KML_FILTER_RA_FAMILY, &six, 1);
	n += attr(a + n, KML_FILTER_RA_DST, v6, 16);
	ASSERT_EQ(0, decode_raw(a, n, &r));
	ASSERT_EQ(128, r.dst_len);
	/* IPv6 bytes in an IPv4 rule, and the other way round */
	n = attr(a, KML_FILTER_RA_FAMILY, &four, 1);
	n += attr(a + n, KML_FILTER_RA_SRC, v6, 16);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_FAMILY, &six, 1);
	n += attr(a + n, KML_FILTER_RA_DST, v4, 4);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* an address without a family */
	n = attr(a, KML_FILTER_RA_SRC, v4, 4);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* lengths past the family's, and a length without an address */
	n = attr(a, KML_FILTER_RA_FAMILY, &four, 1);
	n += attr(a + n, KML_FILTER_RA_SRC, v4, 4);
	n += attr(a + n, KML_FILTER_RA_SRC_LEN, &l33, 1);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_FAMILY, &six, 1);
	n += attr(a + n, KML_FILTER_RA_SRC, v6, 16);
	n += attr(a + n, KML_FILTER_RA_SRC_LEN, &l129, 1);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_FAMILY, &six, 1);
	n += attr(a + n, KML_FILTER_RA_DST_LEN, &l8, 1);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* a u8 of two bytes, a u16 of one */
	n = attr(a, KML_FILTER_RA_PROTO, &u16, 2);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_DPORT_LO, &four, 1);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_DPORT_LO, &u16, 2);
	ASSERT_EQ(0, decode_raw(a, n, &r));
	ASSERT_EQ(80, r.dport_lo);
	/* an attribute cut short inside the nest */
	n = attr(a, KML_FILTER_RA_DPORT_LO, &u16, 2);
	a[0] = 200;
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* a connection state (ABI 3), and one of two bytes */
	n = attr(a, KML_FILTER_RA_CT_STATE, &six, 1);
	ASSERT_EQ(0, decode_raw(a, n, &r));
	ASSERT_EQ(6, r.ct_state);
	n = attr(a, KML_FILTER_RA_CT_STATE, &u16, 2);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* a log rate and burst (ABI 4), and of the wrong sizes */
	n = attr(a, KML_FILTER_RA_LOG_RATE, &(uint32_t){ 1000000 }, 4);
	n += attr(a + n, KML_FILTER_RA_LOG_BURST, &u16, 2);
	ASSERT_EQ(0, decode_raw(a, n, &r));
	ASSERT_EQ(1000000, r.log_rate);
	ASSERT_EQ(80, r.log_burst);
	n = attr(a, KML_FILTER_RA_LOG_RATE, &u16, 2);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	n = attr(a, KML_FILTER_RA_LOG_BURST, &(uint32_t){ 5 }, 4);
	ASSERT_EQ(-EINVAL, decode_raw(a, n, &r));
	/* a newer kernel's attribute is skipped */
	n = attr(a, KML_FILTER_RA_MAX + 1, &u16, 2);
	ASSERT_EQ(0, decode_raw(a, n, &r));
}

/* --no-check lets through what only the kernel should refuse, nothing else. */
TEST(no_check_parses_what_the_kernel_judges)
{
	static const char *const kernel_judges[] = {
		"drop in udp dport 22-21",
		"drop in tcp src 10.0.0.1/8",
		"drop sport 22",
		"drop ipv4 icmpv6",
		"in tcp",
		"drop log rate 0",
		"log rate 2000000",
		"drop log burst 0",
		"drop log rate 0 burst 0",
	};
	static const char *const syntax[] = {
		"drop sctp", "drop dport", "drop dport 70000", "drop src 10.0.0.0/33",
		"drop ipv4 src fd99::1", "drop in in", "drop dport 1 dport 2",
		"drop rate 5", "drop burst 5", "drop log rate", "drop log rate 5/m",
		"drop log rate 4294967296", "drop log burst 65536", "drop log log",
		"log log", "drop log rate 1 rate 2",
	};
	struct kml_filter_rule r;
	struct kml_filter_words w;
	char buf[256], err[256], *words[32];
	size_t i;
	int n;

	for (i = 0; i < sizeof(kernel_judges) / sizeof(kernel_judges[0]); i++) {
		n = words_of(kernel_judges[i], buf, sizeof(buf), words, 32);
		ASSERT_EQ(-1, kml_filter_parse_rule(n, words, &r, err, sizeof(err)))
			TH_LOG("%s", kernel_judges[i]);
		ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w,
							 KML_FILTER_PARSE_NO_CHECK,
							 err, sizeof(err)))
			TH_LOG("%s: %s", kernel_judges[i], err);
	}
	for (i = 0; i < sizeof(syntax) / sizeof(syntax[0]); i++) {
		n = words_of(syntax[i], buf, sizeof(buf), words, 32);
		ASSERT_EQ(-1, kml_filter_parse_rule_words(n, words, &r, &w,
							  KML_FILTER_PARSE_NO_CHECK,
							  err, sizeof(err)))
			TH_LOG("%s", syntax[i]);
	}
	/* the values as written: reversed, and the bits past /8 */
	n = words_of("drop in udp dport 22-21", buf, sizeof(buf), words, 32);
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, NULL, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)));
	ASSERT_EQ(22, r.dport_lo);
	ASSERT_EQ(21, r.dport_hi);
	n = words_of("drop in tcp src 10.0.0.1/8", buf, sizeof(buf), words, 32);
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, NULL, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)));
	ASSERT_EQ(1, r.src[3]);
	ASSERT_EQ(8, r.src_len);
	/* no action: none is sent, so the kernel can say it is missing */
	n = words_of("in tcp", buf, sizeof(buf), words, 32);
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)));
	ASSERT_EQ(0, r.action);
	ASSERT_EQ(-1, w.action);
	/* a log rate of 0 and a burst of 0 as written: the kernel is to see them */
	n = words_of("drop log rate 0 burst 0", buf, sizeof(buf), words, 32);
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)));
	ASSERT_EQ(KML_FILTER_DROP, r.action);
	ASSERT_EQ(0, r.log_rate);
	ASSERT_EQ(0, r.log_burst);
	n = words_of("log rate 2000000", buf, sizeof(buf), words, 32);
	ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)));
	ASSERT_EQ(KML_FILTER_LOG, r.action);
	ASSERT_EQ(2000000, r.log_rate);
	ASSERT_EQ(KML_FILTER_LOG_DEFAULT_BURST, r.log_burst);
}

/*
 * A rule's log goes out as both attributes whenever either value is set,
 * so that --no-check sends a burst without a rate for the kernel to
 * refuse; a rule that does not log has neither.
 */
TEST(log_attributes_sent_together)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1], rtb[KML_FILTER_RA_MAX + 1];
	struct kml_filter_genl_offs offs;
	struct kml_filter_rule r = { .dir = 1, .action = KML_FILTER_DROP, .sport_hi = 0xffff,
				     .dport_hi = 0xffff }, back;
	uint32_t rate;
	uint16_t burst;
	int len;

	len = encode(buf, sizeof(buf), &r, &offs);
	EXPECT_EQ(-1, offs.ra[KML_FILTER_RA_LOG_RATE]);
	EXPECT_EQ(-1, offs.ra[KML_FILTER_RA_LOG_BURST]);
	r.log_rate = 10;
	r.log_burst = 5;
	len = encode(buf, sizeof(buf), &r, &offs);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_parse_nested(&tb[KML_FILTER_A_RULE], rtb, KML_FILTER_RA_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&rtb[KML_FILTER_RA_LOG_RATE], &rate));
	ASSERT_EQ(0, kml_nl_get_u16(&rtb[KML_FILTER_RA_LOG_BURST], &burst));
	EXPECT_EQ(10, rate);
	EXPECT_EQ(5, burst);
	EXPECT_EQ((uint32_t)offs.ra[KML_FILTER_RA_LOG_RATE], rtb[KML_FILTER_RA_LOG_RATE].off);
	/* a burst alone: both, the rate 0 */
	r.log_rate = 0;
	len = encode(buf, sizeof(buf), &r, &offs);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_parse_nested(&tb[KML_FILTER_A_RULE], rtb, KML_FILTER_RA_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&rtb[KML_FILTER_RA_LOG_RATE], &rate));
	EXPECT_EQ(0, rate);
	ASSERT_EQ(0, kml_filter_genl_get_rule(&tb[KML_FILTER_A_RULE], &back));
	EXPECT_EQ(0, memcmp(&r, &back, sizeof(r)));
}

/* Parses @line without checks, encodes it; returns the word count. */
static int prepare(struct __test_metadata *_metadata, const char *line, char *buf, char **words,
		   struct kml_filter_words *w, struct kml_filter_genl_offs *offs)
{
	_Alignas(8) uint8_t msg[512];
	struct kml_filter_rule r;
	char err[256];
	int n = words_of(line, buf, 256, words, 32);

	EXPECT_EQ(0, kml_filter_parse_rule_words(n, words, &r, w, KML_FILTER_PARSE_NO_CHECK,
						 err, sizeof(err)))
		TH_LOG("%s: %s", line, err);
	EXPECT_LT(0, encode(msg, sizeof(msg), &r, offs));
	return n;
}

TEST(offset_to_word)
{
	struct kml_filter_genl_offs o;
	struct kml_filter_words w;
	char buf[256], *words[32];

	/* drop(0) in(1) udp(2) dport(3) 22-21(4) */
	prepare(_metadata, "drop in udp dport 22-21", buf, words, &w, &o);
	EXPECT_EQ(0, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_ACTION]));
	EXPECT_EQ(1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DIR]));
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_PROTO]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DPORT_LO]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DPORT_HI]));
	/* not sent: no offset; the nest, the message header, a payload: no word */
	EXPECT_EQ(-1, o.ra[KML_FILTER_RA_SPORT_LO]);
	EXPECT_EQ(-1, o.ra[KML_FILTER_RA_FAMILY]);
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.nest));
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w, 0));
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w,
						(uint32_t)o.ra[KML_FILTER_RA_DPORT_LO] + 4));
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.end));
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w, UINT32_MAX));

	/* drop(0) in(1) tcp(2) src(3) 10.0.0.1/8(4): the address gave the family */
	prepare(_metadata, "drop in tcp src 10.0.0.1/8", buf, words, &w, &o);
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_SRC]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_SRC_LEN]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_FAMILY]));

	/*
	 * Words in another order, the other prefix; the family said twice
	 * (by the address, then by its own word): the word is the last.
	 */
	prepare(_metadata, "dst fd99::/64 ipv6 sport 1-2 accept out icmpv6", buf, words, &w, &o);
	EXPECT_EQ(1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DST]));
	EXPECT_EQ(1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DST_LEN]));
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_FAMILY]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_SPORT_LO]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_SPORT_HI]));
	EXPECT_EQ(5, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_ACTION]));
	EXPECT_EQ(6, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DIR]));
	EXPECT_EQ(7, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_PROTO]));
	prepare(_metadata, "drop ipv4 udp", buf, words, &w, &o);
	EXPECT_EQ(1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_FAMILY]));
	/* a direction no word gave (both, the default) is sent, but is no word */
	EXPECT_EQ(-1, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_DIR]));
	EXPECT_LE(0, o.ra[KML_FILTER_RA_DIR]);
	/* no action word, no action attribute */
	prepare(_metadata, "in tcp", buf, words, &w, &o);
	EXPECT_EQ(-1, o.ra[KML_FILTER_RA_ACTION]);
	/* drop(0) in(1) ct(2) new,invalid(3) tcp(4): the states are the word */
	prepare(_metadata, "drop in ct new,invalid tcp", buf, words, &w, &o);
	EXPECT_LE(0, o.ra[KML_FILTER_RA_CT_STATE]);
	EXPECT_EQ(3, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_CT_STATE]));
	EXPECT_EQ(4, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_PROTO]));
	/* no ct word, no attribute */
	prepare(_metadata, "drop in tcp", buf, words, &w, &o);
	EXPECT_EQ(-1, o.ra[KML_FILTER_RA_CT_STATE]);
	EXPECT_EQ(-1, o.ra[KML_FILTER_RA_LOG_RATE]);
	/*
	 * drop(0) in(1) log(2) rate(3) 2000000(4) burst(5) 0(6): the rate and
	 * the burst are the log's word, since the kernel blames the rate for
	 * a bad burst too
	 */
	prepare(_metadata, "drop in log rate 2000000 burst 0", buf, words, &w, &o);
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_LOG_RATE]));
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_LOG_BURST]));
	EXPECT_EQ(0, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_ACTION]));
	/* in(0) tcp(1) log(2): log alone is the action, and its word */
	prepare(_metadata, "in tcp log rate 0", buf, words, &w, &o);
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_ACTION]));
	EXPECT_EQ(2, kml_filter_genl_offs_word(&o, &w, (uint32_t)o.ra[KML_FILTER_RA_LOG_RATE]));
}

TEST(pointing_at_a_word)
{
	char *argv[] = { "drop", "in", "udp", "dport", "22-21" }, buf[128];
	char *one[] = { "" };
	const char *want = "  drop in udp dport 22-21\n"
			   "                    ^^^^^\n";
	size_t need = strlen(want), len;

	ASSERT_EQ((int)need, kml_filter_genl_point(5, argv, 4, buf, sizeof(buf)));
	ASSERT_STREQ(want, buf);
	ASSERT_EQ((int)strlen("  drop in udp dport 22-21\n  ^^^^\n"),
		  kml_filter_genl_point(5, argv, 0, buf, sizeof(buf)));
	ASSERT_STREQ("  drop in udp dport 22-21\n  ^^^^\n", buf);
	ASSERT_LT(0, kml_filter_genl_point(5, argv, 1, buf, sizeof(buf)));
	ASSERT_STREQ("  drop in udp dport 22-21\n       ^^\n", buf);
	/* no such word */
	ASSERT_EQ(-1, kml_filter_genl_point(5, argv, -1, buf, sizeof(buf)));
	ASSERT_EQ(-1, kml_filter_genl_point(5, argv, 5, buf, sizeof(buf)));
	/* every buffer too small is refused, and nothing written past it */
	for (len = 0; len <= need; len++) {
		memset(buf, 'x', sizeof(buf));
		ASSERT_EQ(-1, kml_filter_genl_point(5, argv, 4, buf, len));
		for (size_t k = len; k < sizeof(buf); k++)
			ASSERT_EQ('x', buf[k]);
	}
	ASSERT_EQ((int)need, kml_filter_genl_point(5, argv, 4, buf, need + 1));
	/* an empty word still gets its caret */
	ASSERT_LT(0, kml_filter_genl_point(1, one, 0, buf, sizeof(buf)));
	ASSERT_STREQ("  \n  ^\n", buf);
}

/* A GET_INFO reply as the kernel builds it (u64s with A_PAD). */
static int info_reply(uint8_t *buf, size_t cap, uint32_t abi, bool with_policy)
{
	struct kml_nl_msg m;

	kml_nl_msg_init(&m, buf, cap, FAMILY_ID, 0, KML_FILTER_CMD_GET_INFO, 1);
	kml_nl_put_u32(&m, KML_FILTER_A_ABI_VERSION, abi);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_GENERATION, 41, KML_FILTER_A_PAD);
	kml_nl_put_u32(&m, KML_FILTER_A_NRULES, 2);
	kml_nl_put_u32(&m, KML_FILTER_A_MAX_RULES, KML_FILTER_MAX_RULES);
	if (with_policy)
		kml_nl_put_u8(&m, KML_FILTER_A_POLICY, KML_FILTER_DROP);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_POLICY_PACKETS, 5, KML_FILTER_A_PAD);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_POLICY_BYTES, 500, KML_FILTER_A_PAD);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_MEM_BYTES, 1234, KML_FILTER_A_PAD);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_MEM_LIMIT, 64 << 20, KML_FILTER_A_PAD);
	/* ABI 4's log, always there */
	kml_nl_put_u8(&m, KML_FILTER_A_LOG_ATTACHED, 1);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_LOG_RECORDS, 77, KML_FILTER_A_PAD);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_LOG_SUPPRESSED, 8, KML_FILTER_A_PAD);
	kml_nl_put_u64_pad(&m, KML_FILTER_A_LOG_LOST, 1ull << 40, KML_FILTER_A_PAD);
	return kml_nl_msg_len(&m);
}

TEST(info_reply_parsed)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_filter_genl_info info;
	int len = info_reply(buf, sizeof(buf), KML_FILTER_ABI_VERSION, true);

	ASSERT_LT(0, len);
	ASSERT_EQ(0, kml_filter_genl_parse_info((void *)buf, (size_t)len, &info));
	ASSERT_EQ(KML_FILTER_ABI_VERSION, info.abi_version);
	ASSERT_EQ(41, info.generation);
	ASSERT_EQ(2, info.nrules);
	ASSERT_EQ(KML_FILTER_MAX_RULES, info.max_rules);
	ASSERT_EQ(KML_FILTER_DROP, info.policy);
	ASSERT_EQ(5, info.policy_packets);
	ASSERT_EQ(500, info.policy_bytes);
	ASSERT_EQ(1234, info.mem_bytes);
	ASSERT_EQ(64 << 20, info.mem_limit);
	ASSERT_EQ(1, info.log_attached);
	ASSERT_EQ(77, info.log_records);
	ASSERT_EQ(8, info.log_suppressed);
	ASSERT_EQ(1ull << 40, info.log_lost);
	/* what the client prints must be there */
	len = info_reply(buf, sizeof(buf), KML_FILTER_ABI_VERSION, false);
	ASSERT_EQ(-EPROTO, kml_filter_genl_parse_info((void *)buf, (size_t)len, &info));
	/* another ABI: only its number, for the client's message */
	len = info_reply(buf, sizeof(buf), KML_FILTER_ABI_VERSION + 1, false);
	ASSERT_EQ(0, kml_filter_genl_parse_info((void *)buf, (size_t)len, &info));
	ASSERT_EQ(KML_FILTER_ABI_VERSION + 1, info.abi_version);
	/* cut short */
	len = info_reply(buf, sizeof(buf), KML_FILTER_ABI_VERSION, true);
	ASSERT_EQ(-EPROTO, kml_filter_genl_parse_info((void *)buf, (size_t)len - 4, &info));
}

/* Each of the log's four, missing or of the wrong size: malformed. */
TEST(info_reply_needs_the_log)
{
	static const int log_attrs[] = { KML_FILTER_A_LOG_ATTACHED, KML_FILTER_A_LOG_RECORDS,
					 KML_FILTER_A_LOG_SUPPRESSED, KML_FILTER_A_LOG_LOST };
	_Alignas(8) uint8_t buf[512];
	struct kml_filter_genl_info info;
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	int len = info_reply(buf, sizeof(buf), KML_FILTER_ABI_VERSION, true);

	for (unsigned int k = 0; k < sizeof(log_attrs) / sizeof(log_attrs[0]); k++) {
		_Alignas(8) uint8_t copy[512];
		struct nlattr *nla;

		memcpy(copy, buf, (size_t)len);
		ASSERT_EQ(0, kml_nl_parse(copy, (size_t)len, tb, KML_FILTER_A_MAX));
		nla = (struct nlattr *)(copy + tb[log_attrs[k]].off);
		/* renamed to an attribute the parser skips: it is missing */
		nla->nla_type = KML_FILTER_A_MAX + 1;
		EXPECT_EQ(-EPROTO, kml_filter_genl_parse_info((void *)copy, (size_t)len, &info))
			TH_LOG("attribute %d", log_attrs[k]);
		/* and one byte short of its size */
		memcpy(copy, buf, (size_t)len);
		nla = (struct nlattr *)(copy + tb[log_attrs[k]].off);
		nla->nla_len--;
		EXPECT_EQ(-EPROTO, kml_filter_genl_parse_info((void *)copy, (size_t)len, &info))
			TH_LOG("attribute %d", log_attrs[k]);
	}
	ASSERT_EQ(0, kml_filter_genl_parse_info((void *)buf, (size_t)len, &info));
}

/* LOG_ATTACH names the ring's descriptor; LOG_DETACH has nothing. */
TEST(log_attach_and_detach)
{
	_Alignas(8) uint8_t buf[64];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	struct kml_nl_msg m;
	uint8_t cmd, version;
	uint32_t fd;
	int len;

	len = kml_filter_genl_log_attach(&m, buf, sizeof(buf), FAMILY_ID, 7);
	ASSERT_LT(0, len);
	ASSERT_EQ(FAMILY_ID, ((struct nlmsghdr *)buf)->nlmsg_type);
	ASSERT_EQ(0, kml_nl_genl_hdr(buf, (size_t)len, &cmd, &version));
	EXPECT_EQ(KML_FILTER_CMD_LOG_ATTACH, cmd);
	EXPECT_EQ(KML_FILTER_GENL_VERSION, version);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&tb[KML_FILTER_A_LOG_RING], &fd));
	EXPECT_EQ(7, fd);
	for (int t = 1; t <= KML_FILTER_A_MAX; t++) {
		if (t != KML_FILTER_A_LOG_RING)
			EXPECT_EQ(NULL, tb[t].data) TH_LOG("attribute %d", t);
	}
	/* descriptor 0 is one; a negative one is not */
	ASSERT_LT(0, kml_filter_genl_log_attach(&m, buf, sizeof(buf), FAMILY_ID, 0));
	EXPECT_EQ(-EBADF, kml_filter_genl_log_attach(&m, buf, sizeof(buf), FAMILY_ID, -1));
	/* no room for the attribute */
	EXPECT_EQ(-EMSGSIZE, kml_filter_genl_log_attach(&m, buf, KML_NL_HDRLEN, FAMILY_ID, 7));

	len = kml_filter_genl_log_detach(&m, buf, sizeof(buf), FAMILY_ID);
	ASSERT_EQ(KML_NL_HDRLEN, len);
	ASSERT_EQ(0, kml_nl_genl_hdr(buf, (size_t)len, &cmd, &version));
	EXPECT_EQ(KML_FILTER_CMD_LOG_DETACH, cmd);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	for (int t = 1; t <= KML_FILTER_A_MAX; t++) {
		EXPECT_EQ(NULL, tb[t].data) TH_LOG("attribute %d", t);
	}
}

/* A ring record of kml_filter's log, as the kernel writes it. */
struct log_rec {
	struct kml_ring_rec h;
	struct kml_filter_log_event ev;
};

static void log_rec4(struct log_rec *lr, const char *src, const char *dst)
{
	memset(lr, 0, sizeof(*lr));
	lr->h.type = KML_FILTER_REC_LOG;
	lr->h.size = sizeof(*lr);
	lr->h.timestamp_ns = 123456789;
	lr->ev.rule = 2;
	lr->ev.len = 60;
	lr->ev.generation = 9;
	lr->ev.family = KML_FILTER_FAMILY_IPV4;
	lr->ev.proto = KML_FILTER_PROTO_TCP;
	lr->ev.dir = KML_FILTER_DIR_IN;
	lr->ev.verdict = lr->ev.action = KML_FILTER_DROP;
	lr->ev.has_ports = 1;
	lr->ev.sport = 1234;
	lr->ev.dport = 22;
	inet_pton(AF_INET, src, lr->ev.src);
	inet_pton(AF_INET, dst, lr->ev.dst);
}

static const char *log_line(struct __test_metadata *_metadata, const struct log_rec *lr,
			    bool json)
{
	static char buf[512];
	struct kml_filter_log_event ev;

	EXPECT_EQ(0, kml_filter_log_event_get(&lr->h, &ev));
	EXPECT_LT(0, kml_filter_format_log(&ev, lr->h.timestamp_ns, json, buf, sizeof(buf)));
	return buf;
}

TEST(log_lines)
{
	struct log_rec lr;
	struct kml_filter_log_event ev;
	char buf[512];

	/* rule numbers from 1, as list -v and del give them */
	log_rec4(&lr, "10.0.0.1", "10.0.0.2");
	EXPECT_STREQ("rule 3 drop in tcp 10.0.0.1:1234 -> 10.0.0.2:22 len 60",
		     log_line(_metadata, &lr, false));
	EXPECT_STREQ("{\"rule\":3,\"generation\":9,\"time_ns\":123456789,\"dir\":\"in\","
		     "\"verdict\":\"drop\",\"action\":\"drop\",\"family\":\"ipv4\","
		     "\"proto\":\"tcp\",\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\","
		     "\"sport\":1234,\"dport\":22,\"len\":60,\"suppressed\":0}",
		     log_line(_metadata, &lr, true));
	/* a connection state, records held back */
	lr.ev.ct_state = KML_FILTER_CT_NEW;
	lr.ev.suppressed = 7;
	EXPECT_STREQ("rule 3 drop in tcp 10.0.0.1:1234 -> 10.0.0.2:22 len 60 ct new (7 suppressed)",
		     log_line(_metadata, &lr, false));
	EXPECT_NE(NULL, strstr(log_line(_metadata, &lr, true),
			       ",\"len\":60,\"ct\":[\"new\"],\"suppressed\":7}"));
	/* a log-only rule: its action, then what became of the packet */
	lr.ev.action = KML_FILTER_LOG;
	lr.ev.verdict = KML_FILTER_ACCEPT;
	lr.ev.ct_state = 0;
	lr.ev.suppressed = 0;
	lr.ev.dir = KML_FILTER_DIR_OUT;
	EXPECT_STREQ("rule 3 log accept out tcp 10.0.0.1:1234 -> 10.0.0.2:22 len 60",
		     log_line(_metadata, &lr, false));
	EXPECT_NE(NULL, strstr(log_line(_metadata, &lr, true),
			       "\"dir\":\"out\",\"verdict\":\"accept\",\"action\":\"log\""));
	/* no ports: none printed; a protocol without a word: its number */
	lr.ev.action = lr.ev.verdict = KML_FILTER_ACCEPT;
	lr.ev.has_ports = 0;
	lr.ev.proto = 47;
	lr.ev.dir = KML_FILTER_DIR_FWD;
	EXPECT_STREQ("rule 3 accept fwd proto 47 10.0.0.1 -> 10.0.0.2 len 60",
		     log_line(_metadata, &lr, false));
	EXPECT_NE(NULL, strstr(log_line(_metadata, &lr, true),
			       "\"proto\":\"47\",\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"len\":60,"));
	/* IPv6: brackets with ports only */
	lr.ev.family = KML_FILTER_FAMILY_IPV6;
	lr.ev.proto = KML_FILTER_PROTO_ICMPV6;
	inet_pton(AF_INET6, "fd00::1", lr.ev.src);
	inet_pton(AF_INET6, "2001:db8::ffff:1:2", lr.ev.dst);
	EXPECT_STREQ("rule 3 accept fwd icmpv6 fd00::1 -> 2001:db8::ffff:1:2 len 60",
		     log_line(_metadata, &lr, false));
	lr.ev.proto = KML_FILTER_PROTO_UDP;
	lr.ev.has_ports = 1;
	lr.ev.ct_state = KML_FILTER_CT_ESTABLISHED;
	EXPECT_STREQ("rule 3 accept fwd udp [fd00::1]:1234 -> [2001:db8::ffff:1:2]:22 len 60 ct established",
		     log_line(_metadata, &lr, false));
	EXPECT_NE(NULL, strstr(log_line(_metadata, &lr, true),
			       "\"family\":\"ipv6\",\"proto\":\"udp\",\"src\":\"fd00::1\","
			       "\"dst\":\"2001:db8::ffff:1:2\",\"sport\":1234,\"dport\":22,"));
	/* the longest line there is fits in 512 bytes, with room to spare */
	memset(&lr.ev, 0xff, sizeof(lr.ev));
	lr.ev.family = KML_FILTER_FAMILY_IPV6;
	lr.ev.ct_state = 0x80;
	ASSERT_EQ(0, kml_filter_log_event_get(&lr.h, &ev));
	EXPECT_GT(400, kml_filter_format_log(&ev, ~0ull, true, buf, sizeof(buf)));
	EXPECT_GT(300, kml_filter_format_log(&ev, ~0ull, false, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, " ct 0x80 ")) TH_LOG("%s", buf);
	/* too small a buffer */
	EXPECT_EQ(-1, kml_filter_format_log(&ev, 0, false, buf, 20));
}

TEST(log_records_checked)
{
	struct kml_filter_log_event ev;
	struct log_rec lr;

	log_rec4(&lr, "10.0.0.1", "10.0.0.2");
	ASSERT_EQ(0, kml_filter_log_event_get(&lr.h, &ev));
	EXPECT_EQ(0, memcmp(&ev, &lr.ev, sizeof(ev)));
	/* someone else's record */
	lr.h.type = KML_RING_REC_SAMPLE;
	EXPECT_EQ(-ENOENT, kml_filter_log_event_get(&lr.h, &ev));
	/* too short for its event, or of no family */
	lr.h.type = KML_FILTER_REC_LOG;
	lr.h.size = sizeof(lr) - 8;
	EXPECT_EQ(-EINVAL, kml_filter_log_event_get(&lr.h, &ev));
	lr.h.size = sizeof(lr);
	lr.ev.family = 0;
	EXPECT_EQ(-EINVAL, kml_filter_log_event_get(&lr.h, &ev));
}

/*
 * One GETRULE message as the kernel's dump builds it: a multipart
 * message, the rule, counters and generation with nla_put_u64_64bit's
 * padding. @skip leaves out one top-level attribute.
 */
static size_t rule_msg(uint8_t *buf, size_t cap, uint16_t flags, uint32_t index,
		       const char *line, uint64_t generation, int skip)
{
	struct kml_filter_rule r;
	struct kml_nl_msg m;
	char wbuf[256], err[256], *w[32];
	int n = words_of(line, wbuf, sizeof(wbuf), w, 32);

	if (kml_filter_parse_rule(n, w, &r, err, sizeof(err)))
		abort();
	kml_nl_msg_init(&m, buf, cap, FAMILY_ID, NLM_F_MULTI | flags, KML_FILTER_CMD_GETRULE, 1);
	if (skip != KML_FILTER_A_INDEX)
		kml_nl_put_u32(&m, KML_FILTER_A_INDEX, index);
	if (skip != KML_FILTER_A_RULE)
		kml_filter_genl_put_rule(&m, KML_FILTER_A_RULE, &r, NULL);
	if (skip != KML_FILTER_A_PACKETS)
		kml_nl_put_u64_pad(&m, KML_FILTER_A_PACKETS, 10 + index, KML_FILTER_A_PAD);
	if (skip != KML_FILTER_A_BYTES)
		kml_nl_put_u64_pad(&m, KML_FILTER_A_BYTES, 1000 + index, KML_FILTER_A_PAD);
	if (skip != KML_FILTER_A_GENERATION)
		kml_nl_put_u64_pad(&m, KML_FILTER_A_GENERATION, generation, KML_FILTER_A_PAD);
	if (kml_nl_msg_len(&m) < 0)
		abort();
	return m.len;
}

static size_t done_msg(uint8_t *buf)
{
	struct nlmsghdr nh = { .nlmsg_len = NLMSG_HDRLEN + 4, .nlmsg_type = NLMSG_DONE,
			       .nlmsg_flags = NLM_F_MULTI };

	memcpy(buf, &nh, sizeof(nh));
	memset(buf + NLMSG_HDRLEN, 0, 4);
	return nh.nlmsg_len;
}

/* How kml_nl_request hands a datagram to the callback: every message until DONE. */
static int feed(const uint8_t *dg, size_t len, struct kml_filter_genl_dump *d, bool *intr)
{
	const struct nlmsghdr *msg;
	size_t pos = 0;
	int r, ret = 0;

	*intr = false;
	while ((r = kml_nl_msg_next(dg, len, &pos, &msg)) > 0) {
		if (msg->nlmsg_flags & NLM_F_DUMP_INTR)
			*intr = true;
		if (msg->nlmsg_type == NLMSG_DONE)
			break;
		if (!ret)
			ret = kml_filter_genl_dump_msg(msg, msg->nlmsg_len, d);
	}
	return r < 0 ? -EPROTO : ret;
}

static const char *const dumped[] = {
	"accept in tcp src 10.99.0.0/24 dport 8080",
	"drop in udp dport 9000",
	"drop tcp dst fd99::/64 sport 1-1023",
};

/* A datagram of three rules and DONE; @intr_at: the message flagged, or -1. */
static size_t dump_dg(uint8_t *dg, size_t cap, int intr_at, const uint64_t *gens,
		      const uint32_t *idx, int skip_at, int skip)
{
	size_t len = 0;

	for (int i = 0; i < 3; i++)
		len += rule_msg(dg + len, cap - len, i == intr_at ? NLM_F_DUMP_INTR : 0,
				idx[i], dumped[i], gens[i], i == skip_at ? skip : -1);
	len += done_msg(dg + len);
	return len;
}

TEST(dump_of_three_rules)
{
	_Alignas(8) uint8_t dg[2048];
	static const uint64_t gens[3] = { 9, 9, 9 };
	static const uint32_t idx[3] = { 0, 1, 2 };
	struct kml_filter_genl_dump d = { 0 };
	char text[256];
	bool intr;
	size_t len = dump_dg(dg, sizeof(dg), -1, gens, idx, -1, -1);

	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_FALSE(intr);
	ASSERT_EQ(3, d.count);
	ASSERT_EQ(9, d.generation);
	ASSERT_FALSE(d.torn);
	ASSERT_EQ(0, kml_filter_genl_dump_verdict(&d, 0));
	for (unsigned int i = 0; i < 3; i++) {
		ASSERT_EQ(i, d.e[i].index);
		ASSERT_EQ(10 + i, d.e[i].packets);
		ASSERT_EQ(1000 + i, d.e[i].bytes);
		ASSERT_LT(0, kml_filter_format_rule(&d.e[i].rule, text, sizeof(text)));
		ASSERT_STREQ(dumped[i], text);
	}
	/* read again into the same memory */
	kml_filter_genl_dump_reset(&d);
	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_EQ(3, d.count);
	kml_filter_genl_dump_free(&d);
	ASSERT_EQ(NULL, d.e);
}

TEST(dump_interrupted_is_read_again)
{
	_Alignas(8) uint8_t dg[2048];
	static const uint64_t same[3] = { 9, 9, 9 }, moved[3] = { 9, 9, 10 };
	static const uint32_t idx[3] = { 0, 1, 2 }, gap[3] = { 0, 2, 3 };
	struct kml_filter_genl_dump d = { 0 };
	bool intr;
	size_t len;

	/* NLM_F_DUMP_INTR on the second message */
	len = dump_dg(dg, sizeof(dg), 1, same, idx, -1, -1);
	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_TRUE(intr);
	ASSERT_TRUE(d.torn);
	ASSERT_EQ(3, d.count);
	ASSERT_EQ(-EAGAIN, kml_filter_genl_dump_verdict(&d, 0));
	/* as kml_nl_request reports it, whatever the entries say */
	kml_filter_genl_dump_reset(&d);
	len = dump_dg(dg, sizeof(dg), -1, same, idx, -1, -1);
	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_EQ(0, kml_filter_genl_dump_verdict(&d, 0));
	ASSERT_EQ(-EAGAIN, kml_filter_genl_dump_verdict(&d, -EINTR));
	/* unflagged, but the generation moved between messages */
	kml_filter_genl_dump_reset(&d);
	len = dump_dg(dg, sizeof(dg), -1, moved, idx, -1, -1);
	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_FALSE(intr);
	ASSERT_EQ(-EAGAIN, kml_filter_genl_dump_verdict(&d, 0));
	/* unflagged, but an index skipped */
	kml_filter_genl_dump_reset(&d);
	len = dump_dg(dg, sizeof(dg), -1, same, gap, -1, -1);
	ASSERT_EQ(0, feed(dg, len, &d, &intr));
	ASSERT_EQ(-EAGAIN, kml_filter_genl_dump_verdict(&d, 0));
	/* the kernel's error ends it: no retry */
	kml_filter_genl_dump_reset(&d);
	ASSERT_EQ(-EPERM, kml_filter_genl_dump_verdict(&d, -EPERM));
	kml_filter_genl_dump_free(&d);
}

TEST(dump_with_a_message_missing_a_part)
{
	static const int parts[] = { KML_FILTER_A_INDEX, KML_FILTER_A_RULE, KML_FILTER_A_PACKETS,
				     KML_FILTER_A_BYTES, KML_FILTER_A_GENERATION };
	_Alignas(8) uint8_t dg[2048];
	static const uint64_t gens[3] = { 9, 9, 9 };
	static const uint32_t idx[3] = { 0, 1, 2 };
	struct kml_filter_genl_dump d = { 0 };
	bool intr;

	for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
		size_t len = dump_dg(dg, sizeof(dg), -1, gens, idx, 1, parts[p]);

		kml_filter_genl_dump_reset(&d);
		ASSERT_EQ(-EPROTO, feed(dg, len, &d, &intr)) TH_LOG("part %d", parts[p]);
		ASSERT_EQ(1, d.count);
		ASSERT_EQ(-EPROTO, kml_filter_genl_dump_verdict(&d, -EPROTO));
		/* even if the request's own result were clean */
		ASSERT_EQ(-EPROTO, kml_filter_genl_dump_verdict(&d, 0));
	}
	kml_filter_genl_dump_free(&d);
}

/* A dump of more entries than the first allocation holds. */
TEST(dump_grows)
{
	_Alignas(8) uint8_t msg[512];
	struct kml_filter_genl_dump d = { 0 };

	for (uint32_t i = 0; i < 1000; i++) {
		size_t len = rule_msg(msg, sizeof(msg), 0, i, "drop in udp dport 9000", 3, -1);

		ASSERT_EQ(0, kml_filter_genl_dump_msg((void *)msg, len, &d));
	}
	ASSERT_EQ(1000, d.count);
	ASSERT_FALSE(d.torn);
	ASSERT_EQ(999, d.e[999].index);
	kml_filter_genl_dump_free(&d);
}

/* A REPLACE_RULES chunk's rules decoded back, checking their shape. */
static unsigned int decode_chunk(struct __test_metadata *_metadata, const uint8_t *buf,
				 size_t len, uint32_t txn, struct kml_filter_rule *out)
{
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1], a;
	struct kml_nl_iter it;
	unsigned int n = 0;
	uint32_t t;

	ASSERT_EQ(0, kml_nl_parse(buf, len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&tb[KML_FILTER_A_TXN], &t));
	ASSERT_EQ(txn, t);
	ASSERT_TRUE(tb[KML_FILTER_A_RULES].flags & NLA_F_NESTED);
	kml_nl_iter_init(&it, tb[KML_FILTER_A_RULES].data, tb[KML_FILTER_A_RULES].len,
			 tb[KML_FILTER_A_RULES].off + NLA_HDRLEN);
	while (kml_nl_iter_next(&it, &a)) {
		/* the kernel takes a rule nest of any type but 0 */
		EXPECT_NE(0, a.type);
		EXPECT_TRUE(a.flags & NLA_F_NESTED);
		ASSERT_EQ(0, kml_filter_genl_get_rule(&a, &out[n]));
		n++;
	}
	ASSERT_EQ(0, it.err);
	return n;
}

TEST(replace_begin_and_commit)
{
	_Alignas(8) uint8_t buf[256];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	struct kml_nl_msg m;
	uint32_t v, txn = 0;
	uint8_t p;
	int len;

	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_BEGIN,
			KML_FILTER_GENL_VERSION);
	len = kml_filter_genl_put_begin(&m, 5000, KML_FILTER_DROP, KML_FILTER_ACCEPT);
	ASSERT_LT(0, len);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&tb[KML_FILTER_A_NRULES], &v));
	EXPECT_EQ(5000, v);
	ASSERT_EQ(0, kml_nl_get_u8(&tb[KML_FILTER_A_POLICY], &p));
	EXPECT_EQ(KML_FILTER_DROP, p);
	ASSERT_EQ(0, kml_nl_get_u8(&tb[KML_FILTER_A_POLICY_FWD], &p));
	EXPECT_EQ(KML_FILTER_ACCEPT, p);
	/* a file without a policy line keeps the policy: no attribute */
	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_BEGIN,
			KML_FILTER_GENL_VERSION);
	len = kml_filter_genl_put_begin(&m, 0, 0, 0);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	EXPECT_EQ(NULL, tb[KML_FILTER_A_POLICY].data);
	EXPECT_EQ(NULL, tb[KML_FILTER_A_POLICY_FWD].data);
	ASSERT_EQ(0, kml_nl_get_u32(&tb[KML_FILTER_A_NRULES], &v));
	EXPECT_EQ(0, v);

	/* the reply, as the kernel builds it; without its TXN it is malformed */
	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_BEGIN,
			KML_FILTER_GENL_VERSION);
	kml_nl_put_u32(&m, KML_FILTER_A_TXN, 77);
	ASSERT_EQ(0, kml_filter_genl_parse_txn((void *)buf, m.len, &txn));
	EXPECT_EQ(77, txn);
	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_BEGIN,
			KML_FILTER_GENL_VERSION);
	EXPECT_EQ(-EPROTO, kml_filter_genl_parse_txn((void *)buf, m.len, &txn));

	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_COMMIT,
			KML_FILTER_GENL_VERSION);
	len = kml_filter_genl_put_commit(&m, 77);
	ASSERT_EQ(0, kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX));
	ASSERT_EQ(0, kml_nl_get_u32(&tb[KML_FILTER_A_TXN], &v));
	EXPECT_EQ(77, v);
}

/* The largest rule there is: every attribute, IPv6 addresses. */
static void biggest_rule(struct kml_filter_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->family = KML_FILTER_FAMILY_IPV6;
	r->proto = KML_FILTER_PROTO_TCP;
	r->dir = KML_FILTER_DIR_IN;
	r->action = KML_FILTER_DROP;
	memset(r->src, 0xfd, 16);
	memset(r->dst, 0xfe, 16);
	r->src_len = r->dst_len = 127;
	r->sport_lo = r->dport_lo = 1;
	r->sport_hi = r->dport_hi = 2;
	r->ct_state = KML_FILTER_CT_ALL;
	r->log_rate = KML_FILTER_LOG_MAX_RATE;
	r->log_burst = 65535;
}

TEST(rule_max_is_the_biggest_rule)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_filter_rule r;
	struct kml_nl_msg m;

	biggest_rule(&r);
	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_RULES,
			KML_FILTER_GENL_VERSION);
	ASSERT_LE(0, kml_filter_genl_put_rule(&m, 1, &r, NULL));
	EXPECT_GE(KML_FILTER_GENL_RULE_MAX, m.len - KML_NL_HDRLEN);
	EXPECT_LT(KML_FILTER_GENL_RULE_MAX - 8, m.len - KML_NL_HDRLEN);
}

/*
 * 5000 rules, small and large mixed, in chunks of at most 32 KiB: every
 * rule once, in order, and the chunks full but for the last.
 */
TEST(chunks_carry_every_rule_in_order)
{
	static _Alignas(8) uint8_t buf[KML_FILTER_GENL_CHUNK];
	const unsigned int count = 5000;
	struct kml_filter_rule *rules = calloc(count, sizeof(*rules));
	struct kml_filter_rule *back = calloc(count, sizeof(*back));
	unsigned int i, done = 0, chunks = 0;
	struct kml_nl_msg m;
	int n;

	ASSERT_NE(NULL, rules);
	ASSERT_NE(NULL, back);
	for (i = 0; i < count; i++) {
		struct kml_filter_rule *r = &rules[i];

		if (i % 3 == 0) {
			biggest_rule(r);
			r->src[15] = (__u8)i;
			r->src_len = 128;
		} else {
			r->dir = KML_FILTER_DIR_BOTH;
			r->action = KML_FILTER_ACCEPT;
			r->proto = KML_FILTER_PROTO_UDP;
			r->sport_hi = 0xffff;
			r->dport_lo = r->dport_hi = (__u16)i;
			r->ct_state = i % 2 ? KML_FILTER_CT_NEW : 0;
		}
	}
	while (done < count) {
		kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_RULES,
				KML_FILTER_GENL_VERSION);
		n = kml_filter_genl_put_rules(&m, 9, rules + done, count - done);
		ASSERT_LT(0, n);
		ASSERT_EQ(0, m.err);
		ASSERT_GE(KML_FILTER_GENL_CHUNK, m.len);
		if (done + (unsigned int)n < count)
			ASSERT_LT(KML_FILTER_GENL_CHUNK - KML_FILTER_GENL_RULE_MAX, m.len);
		ASSERT_EQ((unsigned int)n, decode_chunk(_metadata, buf, m.len, 9, back + done));
		done += (unsigned int)n;
		chunks++;
	}
	EXPECT_EQ(count, done);
	EXPECT_LT(5, chunks);
	EXPECT_EQ(0, memcmp(rules, back, count * sizeof(*rules)));
	/* too small a buffer for one rule: an error, not an empty chunk */
	kml_nl_msg_init(&m, buf, 64, FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_RULES,
			KML_FILTER_GENL_VERSION);
	EXPECT_EQ(-EMSGSIZE, kml_filter_genl_put_rules(&m, 9, rules, count));
	free(rules);
	free(back);
}

/*
 * An offset inside chunk k's j-th rule names rule j, with the offsets of
 * its attributes as put_rule would give them; then the file's line and
 * the word, as kml-filter prints them.
 */
TEST(offset_in_a_chunk_names_the_line_and_word)
{
	static const char file[] =
		"# three rules, a policy, a comment\n"
		"policy drop\n"
		"accept in ct established,related\n"
		"\n"
		"drop in udp dport 22-21   # reversed: the kernel says so\n"
		"accept out tcp src 10.0.0.0/8 ct new\n";
	static _Alignas(8) uint8_t buf[KML_FILTER_GENL_CHUNK];
	struct kml_filter_ruleset rs = { .flags = KML_FILTER_PARSE_NO_CHECK };
	struct kml_filter_genl_offs o;
	struct kml_filter_words w;
	struct kml_filter_rule r;
	char err[300], line[1024], *words[32], lines[1024];
	uint16_t path[4];
	struct kml_nl_msg m;
	unsigned int k;
	int n;

	ASSERT_EQ(0, kml_filter_parse_file(file, sizeof(file) - 1, &rs, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(3, rs.count);
	EXPECT_EQ(3, rs.lines[0]);
	EXPECT_EQ(5, rs.lines[1]);
	EXPECT_EQ(6, rs.lines[2]);
	kml_nl_msg_init(&m, buf, sizeof(buf), FAMILY_ID, 0, KML_FILTER_CMD_REPLACE_RULES,
			KML_FILTER_GENL_VERSION);
	ASSERT_EQ(3, kml_filter_genl_put_rules(&m, 1, rs.rules, rs.count));
	/* every attribute header of the request: in a rule's nest or not */
	for (uint32_t at = 0; at < m.len; at += 4) {
		int depth = kml_nl_attr_path(buf, m.len, at, path, 4);
		int ret = kml_filter_genl_chunk_rule(buf, m.len, at, &k, &o);

		if (depth >= 2 && path[0] == KML_FILTER_A_RULES) {
			ASSERT_EQ(0, ret) TH_LOG("offset %u", at);
			EXPECT_EQ(path[1] - 1u, k);
			EXPECT_LE((int)at, o.end - 1);
			EXPECT_GE((int)at, o.nest);
			/* an attribute's header: noted as put_rule notes it */
			if (depth == 3 && path[2] >= 1 && path[2] <= KML_FILTER_RA_MAX &&
			    kml_nl_attr_path(buf, m.len, at, path, 4) == 3)
				EXPECT_LE(0, o.ra[path[2]]);
		} else if (depth >= 1 || at < KML_NL_HDRLEN) {
			/* the header, TXN, the RULES nest's own header */
			EXPECT_EQ(-ENOENT, ret) TH_LOG("offset %u", at);
		}
	}
	/* rule 1's DPORT_LO: line 5, word 4 ("22-21"), carets under it */
	EXPECT_EQ(-ENOENT, kml_filter_genl_chunk_rule(buf, m.len, 0xffffffff, &k, &o));
	{
		uint32_t dport_at = 0;

		for (uint32_t at = 0; at < m.len; at += 4)
			if (kml_nl_attr_path(buf, m.len, at, path, 4) == 3 && path[1] == 2 &&
			    path[2] == KML_FILTER_RA_DPORT_LO)
				dport_at = at;
		ASSERT_NE(0, dport_at);
		ASSERT_EQ(0, kml_filter_genl_chunk_rule(buf, m.len, dport_at, &k, &o));
		ASSERT_EQ(1, k);
		EXPECT_EQ((int)dport_at, o.ra[KML_FILTER_RA_DPORT_LO]);
		EXPECT_EQ(5, rs.lines[k]);
		n = kml_filter_file_line_words(file, sizeof(file) - 1, rs.lines[k], line,
					       sizeof(line), words, 32);
		ASSERT_EQ(5, n);
		ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, rs.flags, err,
							 sizeof(err)));
		ASSERT_EQ(4, kml_filter_genl_offs_word(&o, &w, dport_at));
		ASSERT_LT(0, kml_filter_genl_point(n, words, 4, lines, sizeof(lines)));
		EXPECT_STREQ("  drop in udp dport 22-21\n"
			     "                    ^^^^^\n", lines);
	}
	/* rule 0's ct: line 3, word 3 */
	for (uint32_t at = 0; at < m.len; at += 4)
		if (kml_nl_attr_path(buf, m.len, at, path, 4) == 3 && path[1] == 1 &&
		    path[2] == KML_FILTER_RA_CT_STATE) {
			ASSERT_EQ(0, kml_filter_genl_chunk_rule(buf, m.len, at, &k, &o));
			ASSERT_EQ(0, k);
			n = kml_filter_file_line_words(file, sizeof(file) - 1, rs.lines[k], line,
						       sizeof(line), words, 32);
			ASSERT_EQ(4, n);
			ASSERT_EQ(0, kml_filter_parse_rule_words(n, words, &r, &w, 0, err,
								 sizeof(err)));
			EXPECT_EQ(3, kml_filter_genl_offs_word(&o, &w, at));
		}
	/* lines that are not there */
	EXPECT_EQ(-1, kml_filter_file_line_words(file, sizeof(file) - 1, 0, line, sizeof(line),
						 words, 32));
	EXPECT_EQ(-1, kml_filter_file_line_words(file, sizeof(file) - 1, 7, line, sizeof(line),
						 words, 32));
	kml_filter_ruleset_free(&rs);
}

TEST_HARNESS_MAIN
