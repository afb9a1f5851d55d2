/* SPDX-License-Identifier: MIT */
/* Call-stack samples in a Perfetto trace (prefix pfs_), so that
 * Perfetto's own profile views (flame graph, the CPU profile of a
 * thread) work on a sampled recording: one PerfSample packet per sample
 * on a sequence of their own, with the functions, mappings, frames and
 * callstacks they use interned on that sequence (InternedData fields 5,
 * 17, 19, 6, 7).  In trace_processor they become perf_sample rows over
 * stack_profile_callsite / stack_profile_frame.  The Perfetto writer
 * (perfetto.c) hands the packets to its sink.
 */
#ifndef PTSCOPE_OUTPUT_PERFETTO_SAMPLES_H
#define PTSCOPE_OUTPUT_PERFETTO_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/writer.h"

struct pfs;

/* Samples on trusted sequence @seq.  Returns 0 or PS_ERR_NOMEM. */
int pfs_new(uint32_t seq, struct pfs **out);
void pfs_free(struct pfs *s); /* accepts NULL */

/* Encode @smp (as Trace.packet entries) into the pending bytes. */
int pfs_add(struct pfs *s, const struct ps_sample *smp);

/* The pending bytes, then forget them. */
const uint8_t *pfs_bytes(const struct pfs *s, size_t *len);
void pfs_clear(struct pfs *s);

#endif /* PTSCOPE_OUTPUT_PERFETTO_SAMPLES_H */
