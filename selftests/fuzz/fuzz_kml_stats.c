// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for kml_stats' text handling: the control-command parser
 * the module runs on every write, and the clients' stats-file parser.
 * Invariants beyond "does not crash": an accepted command names a valid
 * set, and a parsed snapshot only holds valid names and bucket counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kml_stats/kml_stats_logic.h"
#include "../../userspace/kml_stats_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kml_snapshot s;
	struct kml_ctl_cmd cmd;
	size_t i, bad;

	if (kml_ctl_parse((const char *)data, size, &cmd) == 0 &&
	    cmd.op == KML_CTL_RESET_SET && !kml_stats_name_valid(cmd.set))
		abort();

	if (kml_parse_text((const char *)data, size, &s, &bad) == 0) {
		for (i = 0; i < s.n; i++) {
			if (!kml_stats_name_valid(s.recs[i].set) ||
			    !kml_stats_name_valid(s.recs[i].name))
				abort();
		}
		kml_snapshot_free(&s);
	}
	return 0;
}
