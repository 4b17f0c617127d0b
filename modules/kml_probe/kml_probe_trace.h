/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_probe's tracepoint: one event per measured call, emitted from the
 * kretprobe's return handler. Handlers may run in any context, NMI
 * included; a tracepoint is safe there, as it writes to the per-CPU trace
 * ring without locks. Raw arguments and return values may be kernel
 * pointers: tracefs and perf's raw samples are for privileged users only.
 * See kml_sensor_trace.h for the multi-read layout.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kml_probe

#if !defined(_KML_PROBE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KML_PROBE_TRACE_H

#include <linux/tracepoint.h>
#include "../include/kml_compat.h"
#include "../../uapi/linux/kml_probe.h"

TRACE_EVENT(call,
	    TP_PROTO(const char *func, u64 duration_ns, u64 ret, unsigned int nargs,
		     const u64 *args),
	    TP_ARGS(func, duration_ns, ret, nargs, args),
	    /* ordered so the record has no holes of stale bytes */
	    TP_STRUCT__entry(__string(func, func)
			     __field(unsigned int, nargs)
			     __field(unsigned long long, duration_ns)
			     __field(unsigned long long, ret)
			     __array(unsigned long long, args, KML_PROBE_MAX_ARGS)),
	    TP_fast_assign(kml_assign_str(func, func);
			   __entry->duration_ns = duration_ns;
			   __entry->ret = ret;
			   /* the instance's other slots hold an earlier call's values */
			   __entry->nargs = min_t(u32, nargs, KML_PROBE_MAX_ARGS);
			   memset(__entry->args, 0, sizeof(__entry->args));
			   memcpy(__entry->args, args, __entry->nargs * sizeof(u64));),
	    TP_printk("func=%s duration_ns=%llu ret=0x%llx nargs=%u args=%s",
		      __get_str(func), __entry->duration_ns, __entry->ret,
		      __entry->nargs,
		      __print_array(__entry->args, __entry->nargs, sizeof(u64)))
);

#endif /* _KML_PROBE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kml_probe_trace
#include <trace/define_trace.h>
