// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for kml_ring's consumer-side walk: any bytes in the
 * data area and any head/tail must never make kml_ring_next() accept a
 * record that leaves the area or passes head, and never loop forever; and
 * placement must honour the watermark bound (kml_ring_watermark_max()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kml_ring/kml_ring_logic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t area[4096] __attribute__((aligned(8)));
	uint64_t tail, head, pos;
	uint32_t pad, sz, need;

	if (size < 16)
		return 0;
	memcpy(&tail, data, 8);
	memcpy(&head, data + 8, 8);
	memset(area, 0, sizeof(area));
	memcpy(area, data + 16, size - 16 < sizeof(area) ? size - 16 : sizeof(area));
	tail = kml_ring_clamp_tail(head, tail, sizeof(area));
	if (head - tail > sizeof(area))
		abort();
	for (pos = tail; pos < head; pos += sz) {
		if (kml_ring_next(area, sizeof(area), pos, head, &sz))
			break;
		if (sz == 0 || (pos & (sizeof(area) - 1)) + sz > sizeof(area) ||
		    sz > head - pos)
			abort();
	}
	if (kml_ring_place(head, tail, sizeof(area), 64, &pad) == 0 &&
	    pad + 64 > sizeof(area) - (head - tail))
		abort();
	/*
	 * Below the largest watermark, any record of up to a quarter of the
	 * area fits, padding included: the watermark is always reached.
	 */
	need = kml_ring_align(8 + (uint32_t)(tail % (sizeof(area) / 4 - 7)));
	if (head - tail < kml_ring_watermark_max(sizeof(area)) &&
	    kml_ring_place(head, tail, sizeof(area), need, &pad))
		abort();
	return 0;
}
