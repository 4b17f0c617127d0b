/* SPDX-License-Identifier: GPL-2.0 */
/* kml-probe's commands that live outside kml-probe.c. */
#ifndef KML_PROBE_CMD_H
#define KML_PROBE_CMD_H

#include <linux/types.h>

void kml_probe_draw_hist(const __u64 *hist);
void kml_probe_json_buckets(const __u64 *hist);
int kml_probe_dev(void);
int kml_probe_record(int argc, char **argv);
int kml_probe_convert(int argc, char **argv);
int kml_probe_report(int argc, char **argv, int json);

#endif
