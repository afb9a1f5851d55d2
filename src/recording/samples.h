/* SPDX-License-Identifier: MIT */
/* The records inside a SAMPLES section (prefix recs_): one per call-stack
 * sample, as include/ptscope/recording.h lays them out.  The recorder
 * appends them (recs_put), the decoder walks them (recs_next).  All
 * integers little-endian.
 *
 *   0  u32 size of the whole record (8-byte multiple)
 *   4  u64 time (CLOCK_MONOTONIC ns)
 *  12  u16 callchain entries   u16 regs   u16 LBR entries   u16 flags
 *  20  u32 stack bytes
 *  24  callchain (u64 each, the sampled ip first, then return addresses)
 *      regs (u64 each, in PERF_REG_X86 order of the section's mask)
 *      stack bytes (from the user stack pointer up), padded to 8
 *      LBR entries (u64 from, u64 to), newest first
 */
#ifndef PTSCOPE_RECORDING_SAMPLES_H
#define PTSCOPE_RECORDING_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#define RECS_HEADER 24

/* A sample as parsed: arrays point into the section's bytes. */
struct recs_sample {
	uint64_t time;
	size_t nchain, nregs, nlbr, stack_len;
	unsigned flags;
	const uint8_t *chain; /* nchain × u64 */
	const uint8_t *regs;  /* nregs × u64 */
	const uint8_t *stack;
	const uint8_t *lbr; /* nlbr × (u64 from, u64 to) */
};

/* Entry @i of an array of u64 (little-endian). */
uint64_t recs_u64(const uint8_t *p, size_t i);

/* A growable buffer of records. */
struct recs_buf {
	uint8_t *p;
	size_t len, cap;
	uint32_t count;
};

/* Append one sample.  Returns 0 or PS_ERR_NOMEM; PS_ERR_INVAL when a
 * count does not fit its field. */
int recs_put(struct recs_buf *b, uint64_t time, const uint64_t *chain,
	     size_t nchain, const uint64_t *regs, size_t nregs,
	     const uint8_t *stack, size_t stack_len, const uint64_t *lbr,
	     size_t nlbr);

/* The record at *@off of @data (@len bytes) into @out, *@off moved past
 * it.  Returns 1, 0 at the end, or PS_ERR_FORMAT (a damaged record). */
int recs_next(const uint8_t *data, size_t len, size_t *off,
	      struct recs_sample *out);

#endif /* PTSCOPE_RECORDING_SAMPLES_H */
