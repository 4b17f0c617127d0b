/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KML_PROBE_TARGET_H
#define _KML_PROBE_TARGET_H

#include <linux/types.h>

u64 kml_probe_target(u64 arg, u32 depth, u64 delay_ns);

#endif /* _KML_PROBE_TARGET_H */
