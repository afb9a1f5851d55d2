/* SPDX-License-Identifier: MIT */
/* Fuzz target: the kernel events of a recording (SIDECAR sections written
 * by the eBPF sidecar, src/record/kevents/kreplay.c) turned into trace events.
 * The input's first byte picks the section type (the sidecar's three and
 * others); the rest is the section's bytes. */
#include <stdlib.h>

#include "src/record/kevents/kevents.h"
#include "src/replay/replay.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(kevents)
{
	struct rec_sidecar sc;
	struct rec_info info = {.backend = "step", .emulated = 1};
	struct recording in = {0};
	struct krp_counts st = {0};
	struct ps_writer *w;

	if (size < 1)
		return 0;
	sc.type = data[0] % 8;
	sc.bytes = data + 1;
	sc.len = size - 1;
	in.info = &info;
	in.sidecars = &sc;
	in.nsidecars = 1;
	w = fuzz_text_writer();
	if (!w)
		return 0;
	krp_write(&in, w, NULL, &st);
	ps_writer_abort(w);
	return 0;
}
