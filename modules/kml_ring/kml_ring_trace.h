/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kml_ring's tracepoints: the two things a ring's consumer cannot see for
 * itself as they happen, a record lost because the ring was full, and a
 * wake-up (how many a workload costs is the point of the watermark); and
 * the built-in producer's records themselves, when it is asked to hand
 * them to tracing instead of the ring (a benchmark's way to compare).
 * @ring numbers the rings in the order they were opened since the module
 * was loaded, to tell them apart in one trace.
 * See kml_sensor_trace.h for the multi-read layout.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kml_ring

#if !defined(_KML_RING_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KML_RING_TRACE_H

#include <linux/tracepoint.h>

/*
 * Padding is a field of its own, zeroed: the ring buffer is reused, and
 * bytes no field covers would hand raw readers (perf, BPF) whatever an
 * earlier record left there.
 */
TRACE_EVENT(record_lost,
	    TP_PROTO(u32 ring, u32 type, u32 size, u64 lost),
	    TP_ARGS(ring, type, size, lost),
	    TP_STRUCT__entry(__field(unsigned long long, lost)	/* first: no hole */
			     __field(unsigned int, ring)
			     __field(unsigned int, type)
			     __field(unsigned int, size)
			     __field(unsigned int, pad)),
	    TP_fast_assign(__entry->ring = ring;
			   __entry->type = type;
			   __entry->size = size;
			   __entry->pad = 0;
			   __entry->lost = lost;),
	    TP_printk("ring=%u type=%u size=%u lost=%llu", __entry->ring,
		      __entry->type, __entry->size, __entry->lost)
);

/*
 * @head_now: the ring's head, in bytes since it was sized; @reader: a
 * read() was blocked on the ring when it was woken (else the wake-up was
 * for a poller's watermark). Both are read after the writer dropped the
 * ring's lock: with several writers they may be a moment newer than the
 * decision to wake.
 * (No argument may be called "head": perf's stage of the expansion has
 * a local of that name.)
 */
TRACE_EVENT(wakeup,
	    TP_PROTO(u32 ring, u64 head_now, bool reader),
	    TP_ARGS(ring, head_now, reader),
	    TP_STRUCT__entry(__field(unsigned long long, head)
			     __field(unsigned int, ring)
			     __field(unsigned char, reader)
			     __array(unsigned char, pad, 3)),
	    TP_fast_assign(__entry->head = head_now;
			   __entry->ring = ring;
			   __entry->reader = reader;
			   memset(__entry->pad, 0, sizeof(__entry->pad));),
	    TP_printk("ring=%u head=%llu reader=%u", __entry->ring, __entry->head,
		      __entry->reader)
);

/*
 * A record of the built-in producer started with KML_RING_PRODUCE_TRACE:
 * @rec, @size bytes, exactly as it would have been written to the ring
 * (header and sample), so perf's ring buffer can carry the same records
 * as ours in `make bench`. @seq is the sample's, repeated as a field to
 * filter on.
 */
TRACE_EVENT(produced,
	    TP_PROTO(u64 seq, const void *rec, u32 size),
	    TP_ARGS(seq, rec, size),
	    TP_STRUCT__entry(__field(unsigned long long, seq)
			     __dynamic_array(unsigned char, bytes, size)
			     __field(unsigned int, pad)),
	    TP_fast_assign(__entry->seq = seq;
			   __entry->pad = 0;
			   memcpy(__get_dynamic_array(bytes), rec, size);),
	    TP_printk("seq=%llu size=%u", __entry->seq,
		      __get_dynamic_array_len(bytes))
);

#endif /* _KML_RING_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kml_ring_trace
#include <trace/define_trace.h>
