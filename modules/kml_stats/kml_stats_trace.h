/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_stats' tracepoint: a reset, so a trace of a workload shows where
 * its counters started again (from the control file or another module's
 * kml_stats_reset(); common_pid tells who). Counting itself is not
 * traced: the hot path is one this_cpu_add(), and an event per count would
 * cost far more than the count.
 * See kml_sensor's kml_sensor_trace.h for the multi-read layout.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kml_stats

#if !defined(_KML_STATS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KML_STATS_TRACE_H

#include <linux/tracepoint.h>
#include "../include/kml_compat.h"

TRACE_EVENT(reset,
	    TP_PROTO(const char *set, unsigned int nslots),
	    TP_ARGS(set, nslots),
	    TP_STRUCT__entry(__string(set, set)
			     __field(unsigned int, nslots)),
	    TP_fast_assign(kml_assign_str(set, set);
			   __entry->nslots = nslots;),
	    TP_printk("set=%s nslots=%u", __get_str(set), __entry->nslots)
);

#endif /* _KML_STATS_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kml_stats_trace
#include <trace/define_trace.h>
