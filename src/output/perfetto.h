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

/* ---- conventions shared by the writer and the reader ------------------- */

/* Sequence 1 carries track descriptors, metadata and the global clock
 * snapshot; each thread has its own sequence (2, 3, ...) whose timestamps
 * are deltas on the sequence-scoped incremental clock PFTW_CLOCK_INCR. */
#define PFTW_SEQ_GLOBAL 1u
#define PFTW_CLOCK_MONOTONIC 3u /* Perfetto's BUILTIN_CLOCK_MONOTONIC */
#define PFTW_CLOCK_BOOTTIME 6u	/* Perfetto's BUILTIN_CLOCK_BOOTTIME */
#define PFTW_CLOCK_INCR 64u	/* first sequence-scoped clock id */

/* meta(key, value) is written as ChromeEventBundle.metadata {name: key,
 * string_value: value} in one chrome_events packet at flush (Perfetto
 * files it in its metadata table, as Chrome's own metadata).  Older
 * versions wrote an instant named key on a global track of this name,
 * carrying one string debug annotation PFTW_META_ARG = value; the reader
 * still turns those back into meta() too. */
#define PFTW_META_TRACK "ptscope metadata"
#define PFTW_META_ARG "value"
/* Global-scope instants go on a global track of this name. */
#define PFTW_GLOBAL_TRACK "global"

#endif /* PTSCOPE_OUTPUT_PERFETTO_H */
