/* SPDX-License-Identifier: MIT */
/* A small perf.data reader (prefix pd_): finds the AUX area data (Intel PT
 * bytes) that PERF_RECORD_AUXTRACE records carry, in both the file and the
 * pipe layout of perf.data.  Internal to the decoder library; also used by
 * the intel-pt recording backend and tests.
 *
 * Layout facts used (tools/perf/Documentation/perf.data-file-format.txt):
 * the file starts with magic "PERFILE2" and a u64 header size; the file
 * layout (header size 104) has a data section {offset, size} at byte 40;
 * the pipe layout (header size 16) is followed directly by records.  Each
 * record is {u32 type, u16 misc, u16 size} + payload; an AUXTRACE record
 * (type 71) has payload {u64 size, offset, reference; u32 idx, tid, cpu,
 * reserved} and is followed by `size` bytes of AUX data not counted in
 * its header size.
 */
#ifndef PTSCOPE_DECODER_PERFDATA_H
#define PTSCOPE_DECODER_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#define PD_RECORD_AUXTRACE 71

struct pd_aux {
	const uint8_t *data; /* points into the caller's buffer */
	uint64_t size;	     /* bytes at data */
	uint64_t offset;     /* offset of this chunk in the AUX area stream */
	uint64_t reference;
	uint32_t idx; /* mmap index (per-CPU: usually the cpu) */
	uint32_t tid;
	uint32_t cpu;
};

/* Called for each AUXTRACE chunk in file order; a negative return stops
 * the walk and is returned. */
typedef int (*pd_aux_fn)(void *ctx, const struct pd_aux *aux);

/* Walk the records of perf.data bytes @buf (@len).  Returns the number of
 * AUXTRACE chunks seen, PS_ERR_INVAL (NULL), PS_ERR_FORMAT (bad magic or
 * header, a record with size < 8), PS_ERR_TRUNCATED (a record or its AUX
 * data runs past the end), or the callback's negative value. */
int pd_walk_aux(const uint8_t *buf, size_t len, pd_aux_fn fn, void *ctx);

/* Concatenate, in file order, the AUX data of every chunk whose cpu is
 * @cpu (or all chunks when @cpu < 0) into a malloc'ed *out, *out_len.
 * Returns the number of chunks (0: *out NULL), or the errors of
 * pd_walk_aux, PS_ERR_NOMEM. */
int pd_collect_aux(const uint8_t *buf, size_t len, int cpu, uint8_t **out,
		   size_t *out_len);

#endif /* PTSCOPE_DECODER_PERFDATA_H */
