// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the `kml-probe report` file reader: any bytes must
 * be refused or accepted without reading out of bounds (ASan) and without
 * looping, and an accepted file must add up: every call record is in
 * exactly one function's histogram and one thread's count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../userspace/kml_probe_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(struct kml_pf *pf)
{
	uint64_t calls = 0, threads = pf->other_calls;

	for (unsigned int i = 0; i < pf->nfuncs; i++) {
		uint64_t h = 0;

		for (int k = 0; k < KML_PROBE_BUCKETS; k++)
			h += pf->funcs[i].hist[k];
		if (h != pf->funcs[i].calls)
			abort();
		calls += h;
	}
	for (unsigned int i = 0; i < pf->nthreads; i++)
		threads += pf->threads[i].calls;
	if (calls != pf->records || threads != pf->records)
		abort();
	if (pf->complete && pf->end.records != pf->records)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kml_pf pf;
	char err[256];
	/* An exact-size copy: ASan then sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);

	memcpy(copy, data, size);
	for (int force = 0; force < 2; force++) {
		err[0] = '\0';
		if (kml_pf_parse(copy, size, force, &pf, err, sizeof(err)) == 0)
			check(&pf);
		else if (!err[0])
			abort();	/* every refusal says why */
	}
	free(copy);
	return 0;
}
