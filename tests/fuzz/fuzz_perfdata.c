/* Fuzz target: perf.data (file and pipe layouts) — header, records,
 * attributes, sideband (MMAP2, COMM, SWITCH, ITRACE_START, ...), build
 * ids, AUXTRACE chunks, and joining the chunks into streams (full and
 * snapshot mode, per thread and per CPU), and decoding it all. */
#include <stdlib.h>

#include "perfdata/perfdata.h"
#include "ptscope/writer.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(perfdata)
{
	struct pd_recording rec;
	uint8_t *aux = NULL;
	size_t aux_len = 0;

	if (pd_collect_aux(data, size, -1, &aux, &aux_len) >= 0)
		free(aux);
	if (pd_read(data, size, &rec))
		return 0;
	for (int mode = 0; mode < 4; mode++) {
		struct pd_streams s;

		if (!pd_streams_build(&rec, mode & 1, mode >> 1, &s))
			pd_streams_free(&s);
	}
	for (size_t i = 0; i < rec.nmmaps; i++)
		pd_tid_pid(&rec, (uint32_t)i);
	pd_pt_attr(&rec);
	pd_recording_free(&rec);
	/* The whole import: streams decoded against whatever binaries the
	 * file names (most are not on this machine, which is a case too). */
	{
		struct dec_config cfg = {.span_info = 1};
		struct ps_writer *w = fuzz_text_writer();

		if (w) {
			dec_decode_perfdata(&cfg, data, size, NULL, w, NULL);
			ps_writer_abort(w);
		}
	}
	return 0;
}
