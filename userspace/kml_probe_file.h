/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file `kml-probe record` writes and `kml-probe report` reads: a
 * header, one attribute block per recorded function, then a stream of
 * records, as perf.data has its header, event attributes and data.
 *
 *   struct kml_pf_header        magic "KMLPROBE", version, sizes, clocks
 *   struct kml_pf_attr[nattrs]  function name, tag (id), nargs, flags
 *   records, each a struct kml_ring_rec (type, size, timestamp_ns) and
 *   its payload, 8-byte aligned, size a multiple of 8:
 *     KML_PROBE_REC_CALL    struct kml_probe_event, copied from the ring
 *                           as the kernel wrote it
 *     KML_PF_REC_LOST       struct kml_pf_lost: the ring dropped records
 *     KML_PF_REC_SUMMARY    struct kml_pf_summary, one per function,
 *                           written when recording ends
 *     KML_PF_REC_END        struct kml_pf_end, the last record
 *
 * Integers are in the byte order of the machine that recorded, which is
 * the machine that probed (the header's byte-order mark says which). A
 * reader skips record types it does not know, and header or attribute
 * bytes past the sizes it knows: both can grow. A file without its END
 * record was cut short (the recorder was killed): `report` refuses it
 * unless told --force.
 *
 * Pure C: no kernel headers beyond the uapi, so the parser is
 * unit-tested and fuzzed on the host.
 */
#ifndef KML_PROBE_FILE_H
#define KML_PROBE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kml_probe.h>
#include <linux/kml_ring.h>

#define KML_PF_MAGIC		"KMLPROBE"
#define KML_PF_VERSION		1
#define KML_PF_BOM		0x01020304U

#define KML_PF_REC_LOST		1
#define KML_PF_REC_SUMMARY	2
#define KML_PF_REC_END		3

/**
 * struct kml_pf_header - the start of the file
 * @magic: "KMLPROBE", not NUL-terminated
 * @version: %KML_PF_VERSION
 * @bom: %KML_PF_BOM as the recording machine stores it
 * @header_size: bytes of this header (it may grow)
 * @attr_size: bytes of each attribute block (it may grow)
 * @nattrs: attribute blocks after the header: 1..%KML_PROBE_MAX_FUNCS
 * @flags: zero
 * @start_ns: CLOCK_MONOTONIC when recording began (events' clock)
 * @start_realtime_ns: CLOCK_REALTIME at the same moment, for people
 */
struct kml_pf_header {
	char magic[8];
	uint32_t version;
	uint32_t bom;
	uint32_t header_size;
	uint32_t attr_size;
	uint32_t nattrs;
	uint32_t flags;
	uint64_t start_ns;
	uint64_t start_realtime_ns;
};

/**
 * struct kml_pf_attr - one recorded function
 * @func: its name, NUL-terminated
 * @id: the tag its records carry (&kml_probe_event.id)
 * @nargs: arguments its records capture
 * @flags: its probe's KML_PROBE_F_* flags
 * @reserved: zero
 */
struct kml_pf_attr {
	char func[KML_PROBE_FUNC_LEN];
	uint32_t id;
	uint32_t nargs;
	uint32_t flags;
	uint32_t reserved;
};

/**
 * struct kml_pf_lost - records the ring dropped since the last of these
 * @lost: how many (the ring's &kml_ring_ctrl.lost grew by this much)
 */
struct kml_pf_lost {
	uint64_t lost;
};

#define KML_PF_SUM_UNKNOWN	0x1U	/* the kernel's totals were lost */

/**
 * struct kml_pf_summary - one function's totals while it was recorded
 * @id: the function's tag
 * @flags: %KML_PF_SUM_UNKNOWN when the recording was ended by someone
 *	else (the function detached): @written and @lost are then unknown
 *	(zero), and the records are all there is
 * @written: records the kernel wrote into the ring
 * @lost: calls it measured but could not record
 * @nmissed: calls kprobes could not measure at all (no free instance,
 *	or a probe handler already running on the CPU)
 * @filtered: calls its filters skipped
 */
struct kml_pf_summary {
	uint32_t id;
	uint32_t flags;
	uint64_t written;
	uint64_t lost;
	uint64_t nmissed;
	uint64_t filtered;
};

/**
 * struct kml_pf_end - the last record
 * @end_ns: CLOCK_MONOTONIC when recording ended
 * @records: %KML_PROBE_REC_CALL records in the file
 */
struct kml_pf_end {
	uint64_t end_ns;
	uint64_t records;
};

/* ---- reading: what `report` aggregates ---- */

#define KML_PF_TOP_MAX	4096	/* distinct threads tracked; more go to "other" */

struct kml_pf_func {
	struct kml_pf_attr attr;
	uint64_t calls;			/* CALL records */
	uint64_t sum_ns, min_ns, max_ns;
	__u64 hist[KML_PROBE_BUCKETS];
	bool summarized;
	struct kml_pf_summary sum;
};

struct kml_pf_thread {
	uint32_t pid, tgid;
	uint64_t calls, total_ns;
};

struct kml_pf {
	struct kml_pf_header hdr;
	unsigned int nfuncs;
	struct kml_pf_func funcs[KML_PROBE_MAX_FUNCS];
	uint64_t records;		/* CALL records */
	uint64_t ring_lost;		/* sum of LOST records */
	uint64_t unknown;		/* records of types this reader skips */
	bool complete;			/* the END record was found */
	size_t cut;			/* bytes of a cut last record (--force) */
	struct kml_pf_end end;
	unsigned int nthreads;
	struct kml_pf_thread threads[KML_PF_TOP_MAX];
	int32_t index[2 * KML_PF_TOP_MAX];	/* pid hash: threads[] slot + 1 */
	uint64_t other_calls, other_ns;	/* threads past KML_PF_TOP_MAX */
};

/*
 * Parse a whole file image into @pf. Returns 0, or -1 with a one-line
 * reason in @err (offsets in bytes): a bad header, a record that is cut,
 * misaligned or of impossible size, an unknown function tag, totals that
 * contradict the records, data after the END record, or (unless @force)
 * no END record. With @force, a file cut short is read up to its last
 * whole record.
 */
int kml_pf_parse(const void *buf, size_t len, bool force, struct kml_pf *pf,
		 char *err, size_t errlen);

/*
 * Each CALL record of a file kml_pf_parse() accepted into @pf (the same
 * @buf and @len, and the same @force), in file order: @fn gets copies,
 * aligned, of the record's frame and event. A nonzero return from @fn
 * stops the walk and is returned.
 */
int kml_pf_each_call(const void *buf, size_t len, const struct kml_pf *pf,
		     int (*fn)(const struct kml_ring_rec *rec,
			       const struct kml_probe_event *ev, void *arg),
		     void *arg);

/*
 * A refusal's reason: @fmt formatted into @err (@errlen bytes); returns
 * -1. The reader's, and the perf.data converter's (kml_perf_data.c).
 */
int kml_pf_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* log2 bucket of a latency: 0 for 0, k for 2^(k-1) <= ns < 2^k. */
unsigned int kml_pf_bucket(uint64_t ns);

/* Sort pf->threads by calls, most first (ties: lower pid first). */
void kml_pf_sort_threads(struct kml_pf *pf);

#endif
