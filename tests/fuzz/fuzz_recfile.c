/* Fuzz target: a recording file (.ptsc) — the reader's validation, then
 * replay of whatever it accepted (archived modules, raw code, threads, PT,
 * marks, call-stack samples) into a text trace, as `ptscope decode
 * rec.ptsc` would.  Modules
 * that are not archived would be read from this machine's disk, not from
 * the input: they are left out, so every byte decoded comes from the
 * input and a run does not depend on the files installed.
 *
 * Each section carries a CRC, so nearly every mutation would only test
 * the CRC check.  The input is read twice: as it is, then with every
 * section's CRC made right, so mutations reach the field parsers. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ptscope/le.h"
#include "ptscope/writer.h"
#include "src/recording/recfile.h"
#include "src/replay/replay.h"
#include "tests/fuzz/fuzz.h"

/* A copy of @data with each section's CRC recomputed (NULL: no memory). */
static uint8_t *fix_crcs(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	size_t off;

	if (!copy)
		return NULL;
	memcpy(copy, data, size);
	if (size < REC_HEADER_SIZE)
		return copy;
	off = le_rd32(copy + 12);
	while (off <= size && size - off >= REC_SECTION_HEADER_SIZE) {
		uint64_t len = le_rd64(copy + off + 8);
		uint8_t *p = copy + off + REC_SECTION_HEADER_SIZE;
		uint32_t crc;

		if (len > size - off - REC_SECTION_HEADER_SIZE)
			break;
		/* over type, length and payload (src/recording/recfile_write.c) */
		crc = (uint32_t)crc32(0, copy + off, 4);
		crc = (uint32_t)crc32(crc, copy + off + 8, 8);
		crc = (uint32_t)crc32(crc, p, (uInt)len);
		memcpy(copy + off + 4, &crc, 4); /* x86: little-endian */
		off += REC_SECTION_HEADER_SIZE + len;
	}
	return copy;
}

static void replay_one(const uint8_t *data, size_t size)
{
	struct replay_options opts = {.span_info = 1};
	struct recording in = {0};
	struct ps_writer *w;
	const struct rec_module *all;
	struct rec_module *archived;
	struct recr *r;
	size_t mods;

	if (recr_open_mem(data, size, "fuzz.ptsc", &r))
		return;
	in.info = recr_info(r);
	mods = recr_modules(r, &all);
	archived = calloc(mods ? mods : 1, sizeof(*archived));
	if (!archived) {
		recr_close(r);
		return;
	}
	for (size_t i = 0; i < mods; i++)
		if (all[i].archive)
			archived[in.nmods++] = all[i];
	in.mods = archived;
	in.nthreads = recr_threads(r, &in.threads);
	in.npts = recr_pts(r, &in.pts);
	in.nmarks = recr_marks(r, &in.marks);
	in.nraws = recr_raw_codes(r, &in.raws);
	in.nprocs = recr_processes(r, &in.procs);
	in.nsamples = recr_samples(r, &in.samples);
	w = fuzz_text_writer();
	if (w) {
		replay_input(&in, w, &opts, NULL);
		ps_writer_abort(w);
	}
	free(archived);
	recr_close(r);
}

FUZZ_TARGET(recfile)
{
	uint8_t *fixed;

	replay_one(data, size);
	fixed = fix_crcs(data, size);
	if (fixed) {
		replay_one(fixed, size);
		free(fixed);
	}
	return 0;
}
