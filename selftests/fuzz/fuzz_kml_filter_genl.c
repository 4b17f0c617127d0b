// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for kml-filter's reading of kml_filter netlink
 * replies (userspace/kml_filter_genl.c): any bytes, as a datagram of
 * GETRULE and GET_INFO messages, must be refused or taken without reading
 * out of bounds (ASan); a dump must never hold more entries than
 * messages; and a rule the decoder accepted must come back the same when
 * encoded and decoded again, which is what `del RULE` relies on. The
 * same bytes, as a kml_ring record, go to `kml-filter log`'s reader and
 * its line and JSON formats, which must fit the client's buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "../../userspace/kml_filter_genl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rule_round_trip(const struct kml_filter_rule *r)
{
	_Alignas(8) uint8_t buf[512];
	struct kml_nl_attr tb[KML_FILTER_A_MAX + 1];
	struct kml_filter_genl_offs offs;
	struct kml_filter_rule back;
	struct kml_nl_msg m;
	int len;

	kml_nl_msg_init(&m, buf, sizeof(buf), 0x1d, 0, KML_FILTER_CMD_NEWRULE, 1);
	kml_filter_genl_put_rule(&m, KML_FILTER_A_RULE, r, &offs);
	len = kml_nl_msg_len(&m);
	if (len < 0 || kml_nl_parse(buf, (size_t)len, tb, KML_FILTER_A_MAX) ||
	    kml_filter_genl_get_rule(&tb[KML_FILTER_A_RULE], &back) ||
	    memcmp(r, &back, sizeof(back)))
		abort();
}

/* The bytes as a ring record of the log, its size what the header says (at most the input). */
static void log_record(const uint8_t *data, size_t size)
{
	_Alignas(8) uint8_t rec[sizeof(struct kml_ring_rec) + sizeof(struct kml_filter_log_event)];
	struct kml_filter_log_event ev;
	struct kml_ring_rec h;
	char line[512];

	if (size > sizeof(rec))
		size = sizeof(rec);
	if (size < sizeof(h))
		return;
	memcpy(rec, data, size);
	memcpy(&h, rec, sizeof(h));
	if (h.size > size)
		return;
	/* the client's own records, whatever type the input gave */
	h.type = KML_FILTER_REC_LOG;
	memcpy(rec, &h, sizeof(h));
	if (kml_filter_log_event_get((const struct kml_ring_rec *)rec, &ev))
		return;
	if (kml_filter_format_log(&ev, h.timestamp_ns, false, line, sizeof(line)) < 0 ||
	    kml_filter_format_log(&ev, h.timestamp_ns, true, line, sizeof(line)) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kml_filter_genl_dump d = { 0 };
	struct kml_filter_genl_info info;
	const struct nlmsghdr *msg;
	unsigned int msgs = 0, k;
	size_t pos = 0;
	uint8_t *buf;

	/* a malloc'd copy: kml_nl_msg_next wants the datagram 4-aligned */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	while (kml_nl_msg_next(buf, size, &pos, &msg) > 0) {
		msgs++;
		kml_filter_genl_parse_info(msg, msg->nlmsg_len, &info);
		kml_filter_genl_dump_msg(msg, msg->nlmsg_len, &d);
	}
	if (d.count > msgs)
		abort();
	for (k = 0; k < d.count; k++)
		rule_round_trip(&d.e[k].rule);
	(void)kml_filter_genl_dump_verdict(&d, 0);
	log_record(data, size);
	kml_filter_genl_dump_free(&d);
	free(buf);
	return 0;
}
