/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_filter's tracepoint: one event per verdict, from the netfilter hook
 * (softirq for received and forwarded packets, process context for sent
 * ones). Off, it costs the hook one not-taken branch per packet. The
 * fields are the ones a rule matches on, so a filter expression can pick
 * the packets one rule is about: "rule == 0",
 * "verdict == 2 && dport == 9000".
 * See kml_sensor_trace.h for the multi-read layout.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kml_filter

#if !defined(_KML_FILTER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KML_FILTER_TRACE_H

#include <linux/tracepoint.h>
#include "kml_filter_logic.h"

/* Once only: the multi-read would define it again. */
#ifndef _KML_FILTER_TRACE_HELPERS
#define _KML_FILTER_TRACE_HELPERS
/* IPv4 as ::ffff:a.b.c.d, so one %pI6c prints either family. */
static inline void kml_filter_trace_addr(u8 *to, const u8 *from, u8 family)
{
	if (family == KML_FILTER_FAMILY_IPV6) {
		memcpy(to, from, 16);
		return;
	}
	memset(to, 0, 10);
	to[10] = 0xff;
	to[11] = 0xff;
	memcpy(to + 12, from, 4);
}
#endif

/* pad: zeroed, so no byte of the record is an earlier record's (raw readers) */
TRACE_EVENT(verdict,
	    TP_PROTO(const struct kml_filter_pkt *pkt, s32 rule, u32 verdict,
		     u32 len),
	    TP_ARGS(pkt, rule, verdict, len),
	    TP_STRUCT__entry(__array(unsigned char, saddr, 16)
			     __array(unsigned char, daddr, 16)
			     __field(int, rule)
			     __field(unsigned int, verdict)
			     __field(unsigned int, len)
			     __field(unsigned short, sport)
			     __field(unsigned short, dport)
			     __field(unsigned char, family)
			     __field(unsigned char, proto)
			     __field(unsigned char, dir)
			     __field(unsigned char, pad)),
	    TP_fast_assign(kml_filter_trace_addr(__entry->saddr, pkt->src, pkt->family);
			   kml_filter_trace_addr(__entry->daddr, pkt->dst, pkt->family);
			   __entry->rule = rule;
			   __entry->verdict = verdict;
			   __entry->len = len;
			   __entry->sport = pkt->has_ports ? pkt->sport : 0;
			   __entry->dport = pkt->has_ports ? pkt->dport : 0;
			   __entry->family = pkt->family;
			   __entry->proto = pkt->proto;
			   __entry->dir = pkt->dir;
			   __entry->pad = 0;),
	    TP_printk("%s ipv%u proto=%u %pI6c:%u > %pI6c:%u len=%u rule=%d verdict=%s",
		      __print_symbolic(__entry->dir, { KML_FILTER_DIR_IN, "in" },
				       { KML_FILTER_DIR_OUT, "out" },
				       { KML_FILTER_DIR_FWD, "fwd" }),
		      __entry->family, __entry->proto, __entry->saddr,
		      __entry->sport, __entry->daddr, __entry->dport, __entry->len,
		      __entry->rule,
		      __print_symbolic(__entry->verdict,
				       { KML_FILTER_ACCEPT, "accept" },
				       { KML_FILTER_DROP, "drop" }))
);

#endif /* _KML_FILTER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kml_filter_trace
#include <trace/define_trace.h>
