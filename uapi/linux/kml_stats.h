/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_stats userspace ABI: the text format of /proc/kmodlab/stats and the
 * commands /proc/kmodlab/control accepts.
 *
 * The stats file is line oriented so that it streams through seq_file,
 * survives any read size and is easy to parse from a shell:
 *
 *   # kmodlab-stats <version>
 *   <set> <name> counter <value>
 *   <set> <name> hist <count> <sum> [<bucket>:<n> ...]
 *
 * Fields are separated by one space. Names match [A-Za-z0-9_.-]{1,31}.
 * Histograms are log2: bucket 0 holds the value 0 and bucket k (1..64)
 * holds values v with 2^(k-1) <= v < 2^k; only non-empty buckets are
 * listed, in increasing order. Values are decimal and unsigned 64-bit.
 * A reader must ignore lines whose type it does not know, so new types can
 * be added without bumping the version; the version changes only when an
 * existing line changes meaning.
 */
#ifndef _UAPI_LINUX_KML_STATS_H
#define _UAPI_LINUX_KML_STATS_H

#define KML_STATS_PROC_DIR	"/proc/kmodlab"
#define KML_STATS_PROC_STATS	KML_STATS_PROC_DIR "/stats"
#define KML_STATS_PROC_CONTROL	KML_STATS_PROC_DIR "/control"

/* First line of the stats file is "# kmodlab-stats 1". */
#define KML_STATS_FORMAT_VERSION	1

/* Longest set or counter name, without the terminating NUL. */
#define KML_STATS_NAME_MAX	31

/* Number of log2 buckets: value 0, then one per bit of a 64-bit value. */
#define KML_STATS_HIST_BUCKETS	65

/*
 * Control commands, one per write(2), optionally newline-terminated:
 *   "reset"        zero every counter and histogram of every set
 *   "reset <set>"  zero one set
 * Writes need CAP_SYS_ADMIN (-EPERM); anything else is -EINVAL, an unknown
 * set is -ENOENT. A rejected write changes nothing.
 */
#define KML_STATS_CONTROL_MAX	64

#endif /* _UAPI_LINUX_KML_STATS_H */
