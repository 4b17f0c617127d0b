/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A `kml-probe record` file (kml_probe_file.h) as perf.data, for `perf
 * script` and `perf report`. Written from the ABI in <linux/perf_event.h>
 * and what perf's reader (tools/perf/util/header.c, session.c) takes:
 *
 *   struct perf_file_header    "PERFILE2", the sections below, features
 *   one perf_file_attr per recorded function: a PERF_TYPE_SOFTWARE /
 *       PERF_COUNT_SW_BPF_OUTPUT event, sample_type IDENTIFIER | TID |
 *       TIME | CPU | PERIOD | RAW, clock CLOCK_MONOTONIC (use_clockid),
 *       and its one sample id (index + 1)
 *   the ids, one u64 per function
 *   data: one PERF_RECORD_SAMPLE per call, in the file's order, then one
 *       PERF_RECORD_LOST_SAMPLES per function that lost calls
 *   the feature sections: NRCPUS, EVENT_DESC (each event's name,
 *       "kml_probe:FUNC"), SAMPLE_TIME, CLOCK_DATA (CLOCK_MONOTONIC and
 *       CLOCK_REALTIME when recording began, so perf script -F +tod works)
 *
 * Each sample: id = the function's; pid/tid = the call's tgid/pid; time =
 * when the call was entered (start_ns, CLOCK_MONOTONIC); cpu = the CPU it
 * returned on; period = its latency in ns (so perf report's event count
 * is the total latency); raw = "ret=0x... arg0=0x..." with the captured
 * arguments, a NUL-terminated string (perf script prints it as "BPF
 * string").
 *
 * Integers are written in this machine's byte order, as the kml-probe
 * file was (its reader refuses the other order): perf reads either.
 *
 * Pure C: no I/O of its own (a sink writes), no kernel needed; the input
 * is a file kml_pf_parse() accepted, so the converter refuses whatever
 * the reader refuses.
 */
#ifndef KML_PERF_DATA_H
#define KML_PERF_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "kml_probe_file.h"

/* perf_event_attr bytes written: VER5 (4.1+), what every perf since reads. */
#define KML_PERF_ATTR_SIZE	112

/* perf's feature bits (tools/perf/util/header.h): stable, on-disk ABI. */
#define KML_PERF_FEAT_NRCPUS		7
#define KML_PERF_FEAT_EVENT_DESC	12
#define KML_PERF_FEAT_SAMPLE_TIME	21
#define KML_PERF_FEAT_CLOCK_DATA	29

/* Where the converted bytes go; returns 0, or -1 with errno set. */
struct kml_perf_sink {
	int (*write)(void *ctx, const void *p, size_t n);
	void *ctx;
};

/* What was written, for messages and tests. */
struct kml_perf_stats {
	uint64_t samples;	/* PERF_RECORD_SAMPLE: one per CALL record */
	uint64_t lost;		/* calls lost, in PERF_RECORD_LOST_SAMPLES */
	uint64_t bytes;		/* the whole file */
	uint64_t data_offset, data_size;
};

/* The name perf shows for function @func: "kml_probe:" @func. */
#define KML_PERF_EVENT_PREFIX	"kml_probe:"

/*
 * Convert the file image @buf/@len, which kml_pf_parse() read into @pf
 * (with the same @force), to perf.data through @sink. Returns 0, or -1
 * with a one-line reason in @err (a failed write leaves errno set).
 */
int kml_perf_write(const void *buf, size_t len, const struct kml_pf *pf,
		   const struct kml_perf_sink *sink, struct kml_perf_stats *st,
		   char *err, size_t errlen);

#endif
