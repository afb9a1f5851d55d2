/* SPDX-License-Identifier: MIT */
/* Fuzz target: the perf data ring of an intel_pt event (sideband records:
 * MMAP2, COMM, EXIT, SWITCH, ITRACE_START, AUX, LOST, samples), read by
 * src/record/intel-pt/sideband.c.  Input: 8 bytes of sample_type, 8 of data_head,
 * 8 of data_tail, then the data pages (cut to a power of two). */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "src/record/intel-pt/sideband.h"
#include "tests/fuzz/fuzz.h"

static int each(void *ctx, const uint8_t *rec, size_t len)
{
	const struct sb_layout *lay = ctx;
	struct sb_record r;

	sb_parse(rec, len, lay, &r);
	return 0;
}

FUZZ_TARGET(sideband)
{
	struct perf_event_mmap_page meta;
	struct sb_layout lay = {0};
	uint64_t ring = 1;
	uint8_t *copy;

	if (size < 25)
		return 0;
	memset(&meta, 0, sizeof(meta));
	memcpy(&lay.sample_type, data, 8);
	memcpy(&meta.data_head, data + 8, 8);
	memcpy(&meta.data_tail, data + 16, 8);
	lay.sample_id_all = data[0] & 1;
	lay.sample_regs_user = 1u << 5; /* DI */
	data += 24;
	size -= 24;
	while (ring * 2 <= size)
		ring *= 2;
	/* The reader never writes the data pages; a copy keeps ASan exact
	 * about the ring's end. */
	copy = malloc(ring);
	if (!copy)
		return 0;
	memcpy(copy, data, ring);
	sb_ring_read(&meta, copy, ring, each, &lay);
	free(copy);
	return 0;
}
