/* SPDX-License-Identifier: MIT */
/* Fuzz target: the sample backend's walk of a backward (overwrite-mode)
 * perf ring (src/record/sample/sample_ring.c: sring_parse), then the
 * records it made (src/recording/samples.c: recs_next).  Input: 8 bytes
 * of data_head, then the ring (cut to a power of two). */
#include <stdlib.h>
#include <string.h>

#include "src/record/sample/sample_probe.h"
#include "src/record/sample/sample_ring.h"
#include "src/recording/samples.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(samplering)
{
	struct perf_event_attr a;
	struct recs_buf b = {0};
	struct recs_sample s;
	uint64_t head, ring = 1;
	size_t off = 0;

	if (size < 9)
		return 0;
	memcpy(&head, data, 8);
	data += 8;
	size -= 8;
	while (ring * 2 <= size)
		ring *= 2;
	sprobe_attr(&a, 0, 1000);
	a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
			 PERF_SAMPLE_BRANCH_STACK;
	a.sample_regs_user = SPROBE_REGS_MASK;
	a.sample_stack_user = 4096;
	if (sring_parse(&a, data, ring, head, &b) == 0)
		while (recs_next(b.p, b.len, &off, &s) == 1)
			if (s.stack_len > 4096 || s.nregs > SPROBE_NREGS)
				abort(); /* more than the attr asks for */
	free(b.p);
	return 0;
}
