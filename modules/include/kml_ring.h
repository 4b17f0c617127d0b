/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-kernel API of kml_ring: how other modules write records to every
 * consumer of /dev/kml_ring, or to one ring a process hands them by
 * descriptor (kml_probe's recorder does).
 */
#ifndef _KML_RING_H
#define _KML_RING_H

#include <linux/types.h>
#include "../../uapi/linux/kml_ring.h"

struct file;

/* To every sized ring; process or softirq context. */
int kml_ring_write(u32 type, const void *data, u32 len);

/* To one ring, named by a descriptor; any context, never waits on itself. */
struct file *kml_ring_fget(int fd);
int kml_ring_write_file(struct file *ring, u32 type, const void *data, u32 len);

#endif /* _KML_RING_H */
