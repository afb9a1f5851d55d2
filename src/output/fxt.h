/* SPDX-License-Identifier: MIT */
/* The Fuchsia trace format (FXT): writer and reader.
 *
 * The writer turns the ptscope event model into FXT records (magic number,
 * provider info/section, initialization at 1 ns ticks, string and thread
 * tables with LRU slot reuse, kernel object records for processes and
 * threads, event records with arguments).  The reader parses any FXT byte
 * stream (ours or another producer's) back into ps_writer calls.  See
 * docs/format-fxt.md for the records we write.
 */
#ifndef PTSCOPE_OUTPUT_FXT_H
#define PTSCOPE_OUTPUT_FXT_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/writer.h"
#include "src/output/fxt_format.h"

struct ps_sink;

/* Writer: @sink is owned by the caller (ps_writer_finish commits it).
 * The header records are written at once.  Returns 0, PS_ERR_INVAL
 * (NULL argument), PS_ERR_NOMEM, or a sink error. */
int fxt_writer_new(struct ps_sink *sink, struct ps_writer **out);

/* Reader: a whole FXT file in memory → events into @dst (process/thread
 * names via dst->ops->process/thread, metadata via dst->ops->meta).
 * The trace must start with the magic number record.  Koid arguments come
 * back as PS_ARG_UINT; "module"/"address"/"file"/"line" arguments of a
 * begin/complete event come back as its ps_span_info; an empty category is
 * NULL, as is an empty name on an end event; async events and unknown
 * record, event and argument types are skipped.
 * Returns 0, PS_ERR_INVAL (NULL argument), PS_ERR_FORMAT /
 * PS_ERR_TRUNCATED with a detail naming the byte offset, PS_ERR_NOMEM, or
 * whatever @dst returned. */
int fxt_read(const uint8_t *data, size_t len, struct ps_writer *dst);

/* True if @data starts with the FXT magic number record. */
int fxt_probe(const uint8_t *data, size_t len);

#endif /* PTSCOPE_OUTPUT_FXT_H */
