/* SPDX-License-Identifier: GPL-2.0 */
/* Parser for the /proc/kmodlab/stats text format (uapi/linux/kml_stats.h). */
#ifndef KML_STATS_PARSE_H
#define KML_STATS_PARSE_H

#include <stdint.h>
#include <stddef.h>
#include <linux/kml_stats.h>

enum kml_rec_type { KML_REC_COUNTER, KML_REC_HIST };

struct kml_rec {
	char set[KML_STATS_NAME_MAX + 1];
	char name[KML_STATS_NAME_MAX + 1];
	enum kml_rec_type type;
	uint64_t value;		/* counter value, or histogram count */
	uint64_t sum;		/* histogram only */
	uint64_t buckets[KML_STATS_HIST_BUCKETS];
};

/* Return codes of kml_parse_line() besides 0 (a record). */
#define KML_PARSE_SKIP	1	/* comment or a type this client predates */

int kml_parse_header(const char *line, size_t len);
int kml_parse_line(const char *line, size_t len, struct kml_rec *rec);

struct kml_snapshot {
	struct kml_rec *recs;
	size_t n;
};

int kml_parse_text(const char *text, size_t len, struct kml_snapshot *snap,
		   size_t *bad_line);
void kml_snapshot_free(struct kml_snapshot *snap);

#endif
