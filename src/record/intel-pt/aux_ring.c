/* SPDX-License-Identifier: MIT */
/* Snapshot extraction from an overwrite-mode AUX area (aux_ring.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/aux_ring.h"

int aux_wrapped(const uint8_t *base, uint64_t size, uint64_t head,
		uint64_t written)
{
	if (!size)
		return 0;
	if (head >= size || written >= size)
		return 1;
	for (uint64_t i = head; i < size; i++)
		if (base[i])
			return 1;
	return 0;
}

int aux_extract(const uint8_t *base, uint64_t size, uint64_t head, int wrapped,
		uint8_t **out, size_t *len)
{
	uint64_t h, n;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	if (!size)
		return ps_err_detail(PS_ERR_INVAL, "empty AUX area");
	h = head % size;
	n = wrapped ? size : h;
	if (!n)
		return PS_ERR_NOT_FOUND;
	buf = malloc(n);
	if (!buf)
		return PS_ERR_NOMEM;
	if (wrapped) {
		memcpy(buf, base + h, size - h);
		memcpy(buf + (size - h), base, h);
	} else {
		memcpy(buf, base, h);
	}
	*out = buf;
	*len = n;
	return 0;
}
