/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure logic of kml_probe: argument checks, the call filter and naming,
 * free of kernel dependencies for host unit tests and fuzzing.
 */
#ifndef _KML_PROBE_LOGIC_H
#define _KML_PROBE_LOGIC_H

#include <linux/types.h>
#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif

#include "../../uapi/linux/kml_probe.h"

#define KML_PROBE_CALL_MAX_DELAY_NS	10000000ULL
#define KML_PROBE_CALL_MAX_DEPTH	8
#define KML_PROBE_CALL_MAX_COUNT	100000

int kml_probe_check_attach(const struct kml_probe_attach *a);
int kml_probe_check_name(const char *func, size_t len);
int kml_probe_check_call(const struct kml_probe_call *c);
__s64 kml_probe_elapsed(__u64 t0, __u64 t1);
int kml_probe_check_record(const struct kml_probe_record *rc);
bool kml_probe_is_part(const char *func);
bool kml_probe_pass(const struct kml_probe_attach *a, bool task, __u64 arg);
void kml_probe_set_name(const char *func, unsigned int slot, char *out,
			size_t len);

#endif /* _KML_PROBE_LOGIC_H */
