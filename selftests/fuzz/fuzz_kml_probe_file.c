// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the `kml-probe report` file reader: any bytes must
 * be refused or accepted without reading out of bounds (ASan) and without
 * looping, and an accepted file must add up: every call record is in
 * exactly one function's histogram and one thread's count. An accepted
 * file is also converted to perf.data (kml_perf_data.c), which must
 * succeed, with one sample per call record and the size it planned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../userspace/kml_perf_data.h"
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

static int count_bytes(void *ctx, const void *p, size_t n)
{
	(void)p;
	*(uint64_t *)ctx += n;
	return 0;
}

static void convert(const uint8_t *buf, size_t len, const struct kml_pf *pf)
{
	uint64_t bytes = 0;
	struct kml_perf_sink sink = { count_bytes, &bytes };
	struct kml_perf_stats st;
	char err[256];

	if (kml_perf_write(buf, len, pf, &sink, &st, err, sizeof(err)))
		abort();	/* what the reader accepts, the converter takes */
	if (st.samples != pf->records || st.bytes != bytes ||
	    st.data_offset + st.data_size > bytes)
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
		if (kml_pf_parse(copy, size, force, &pf, err, sizeof(err)) == 0) {
			check(&pf);
			convert(copy, size, &pf);
		}
		else if (!err[0])
			abort();	/* every refusal says why */
	}
	free(copy);
	return 0;
}
