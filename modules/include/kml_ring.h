/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-kernel API of kml_ring: how other modules write records that every
 * consumer of /dev/kml_ring receives.
 */
#ifndef _KML_RING_H
#define _KML_RING_H

#include <linux/types.h>
#include "../../uapi/linux/kml_ring.h"

int kml_ring_write(u32 type, const void *data, u32 len);

#endif /* _KML_RING_H */
