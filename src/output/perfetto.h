/* SPDX-License-Identifier: MIT */
/* Perfetto protobuf trace (.pftrace): writer and reader.
 *
 * The writer turns the ptscope event stream into a Perfetto Trace of
 * TrackEvent packets (one packet sequence per thread, interned names,
 * an incremental clock); the reader turns such a Trace back into events.
 * docs/format-perfetto.md describes exactly which packets we write.
 */
#ifndef PTSCOPE_OUTPUT_PERFETTO_H
#define PTSCOPE_OUTPUT_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/writer.h"
#include "src/output/perfetto_format.h"

struct ps_sink;

/* A Perfetto writer on @sink; the writer does not close the sink (the
 * caller stores it in (*out)->sink and ps_writer_finish() commits it).
 * Returns 0, PS_ERR_INVAL (NULL argument) or PS_ERR_NOMEM. */
int pftw_writer_new(struct ps_sink *sink, struct ps_writer **out);

/* A whole .pftrace in memory → events into @dst: process and thread
 * names, meta, then events as the packets give them.  Returns 0,
 * PS_ERR_FORMAT / PS_ERR_TRUNCATED (detail names the byte offset),
 * PS_ERR_NOMEM, PS_ERR_INVAL, or whatever @dst returned. */
int pftw_read(const uint8_t *data, size_t len, struct ps_writer *dst);

/* 1 if @data looks like a Perfetto Trace (it starts with field 1,
 * length-delimited, holding a plausible TracePacket), else 0. */
int pftw_probe(const uint8_t *data, size_t len);

#endif /* PTSCOPE_OUTPUT_PERFETTO_H */
