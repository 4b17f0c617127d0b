/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_sensor's tracepoints: every sample and every alarm, for ftrace,
 * perf and BPF. A tracepoint costs a not-taken branch until someone
 * enables it, so it may sit in the sampler's loop under the spinlock.
 *
 * This header is read several times (TRACE_HEADER_MULTI_READ): once for
 * the trace_*() calls, then, in kml_sensor_trace.c only, once per stage
 * of <trace/define_trace.h>, which builds the events from the same text.
 * So TRACE_SYSTEM sits outside the include guard, and the guard lets the
 * multi-read through.
 *
 * Fields have C's own types (unsigned int, not u32): the event's format
 * file in tracefs names each type as written here, and a tool that reads
 * it without the kernel's BTF type information (bpftrace on a kernel built
 * without CONFIG_DEBUG_INFO_BTF, like the test kernel) knows only C's.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kml_sensor

#if !defined(_KML_SENSOR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KML_SENSOR_TRACE_H

#include <linux/tracepoint.h>
#include "../../uapi/linux/kml_sensor.h"

#define kml_show_zone(zone)						\
	__print_symbolic(zone,						\
			 { KML_SENSOR_ZONE_NORMAL, "normal" },		\
			 { KML_SENSOR_ZONE_LOW, "low" },		\
			 { KML_SENSOR_ZONE_HIGH, "high" })

/*
 * Fields are what a user filters on: "channel == 1 && value_mc > 40000".
 * The padding is a zeroed field: the ring buffer is reused, and bytes no
 * field covers would hand raw readers (perf, BPF) an earlier record's.
 */
TRACE_EVENT(sample,
	    TP_PROTO(unsigned int channel, s32 value_mc, u64 seq, bool injected),
	    TP_ARGS(channel, value_mc, seq, injected),
	    TP_STRUCT__entry(__field(unsigned int, channel)
			     __field(int, value_mc)
			     __field(unsigned long long, seq)
			     __field(unsigned char, injected)
			     __array(unsigned char, pad, 7)),
	    TP_fast_assign(__entry->channel = channel;
			   __entry->value_mc = value_mc;
			   __entry->seq = seq;
			   __entry->injected = injected;
			   memset(__entry->pad, 0, sizeof(__entry->pad));),
	    TP_printk("channel=%u value_mc=%d seq=%llu injected=%u",
		      __entry->channel, __entry->value_mc, __entry->seq,
		      __entry->injected)
);

/* A zone change: the record every reader of /dev/kml_sensor gets. */
TRACE_EVENT(alarm,
	    TP_PROTO(unsigned int channel, s32 value_mc, u64 seq, int zone,
		     s32 low_mc, s32 high_mc),
	    TP_ARGS(channel, value_mc, seq, zone, low_mc, high_mc),
	    TP_STRUCT__entry(__field(unsigned int, channel)
			     __field(int, value_mc)
			     __field(unsigned long long, seq)
			     __field(unsigned int, zone)
			     __field(int, low_mc)
			     __field(int, high_mc)
			     __field(unsigned int, pad)),
	    TP_fast_assign(__entry->channel = channel;
			   __entry->value_mc = value_mc;
			   __entry->seq = seq;
			   __entry->zone = zone;
			   __entry->low_mc = low_mc;
			   __entry->high_mc = high_mc;
			   __entry->pad = 0;),
	    TP_printk("channel=%u value_mc=%d seq=%llu zone=%s low_mc=%d high_mc=%d",
		      __entry->channel, __entry->value_mc, __entry->seq,
		      kml_show_zone(__entry->zone), __entry->low_mc,
		      __entry->high_mc)
);

#endif /* _KML_SENSOR_TRACE_H */

/* Outside the guard: define_trace.h finds this file again by these. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kml_sensor_trace
#include <trace/define_trace.h>
