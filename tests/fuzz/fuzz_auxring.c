/* SPDX-License-Identifier: MIT */
/* Fuzz target: AUX snapshot extraction (src/record/intel-pt/aux_ring.c), the
 * intel-pt backend's view of the area the hardware writes round and
 * round.  Input: 8 bytes of aux_head, 8 of bytes-written, then the ring
 * (cut to a power of two). */
#include <stdlib.h>
#include <string.h>

#include "src/record/intel-pt/aux_ring.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(auxring)
{
	uint64_t head, written, ring = 1;
	uint8_t *out = NULL;
	size_t len = 0;
	int wrapped;

	if (size < 17)
		return 0;
	memcpy(&head, data, 8);
	memcpy(&written, data + 8, 8);
	data += 16;
	size -= 16;
	while (ring * 2 <= size)
		ring *= 2;
	wrapped = aux_wrapped(data, ring, head, written);
	if (aux_extract(data, ring, head, wrapped, &out, &len) == 0) {
		if (len > ring)
			abort(); /* never more than the ring holds */
		free(out);
	}
	return 0;
}
