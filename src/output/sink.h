/* SPDX-License-Identifier: MIT */
/* A buffered output file that appears under its name only when committed.
 *
 * ps_sink_open() creates "<dir>/.<name>.XXXXXX" beside the requested path;
 * ps_sink_commit() flushes, closes and renames it into place; on any
 * failure, or ps_sink_abort(), the temporary file is removed, so a failed
 * run never leaves a half-written trace.  With @gzip the bytes are
 * compressed (zlib, gzip wrapper) on the way.  "-" writes to standard
 * output (no rename).  A memory sink keeps the bytes for tests and readers.
 */
#ifndef PTSCOPE_OUTPUT_SINK_H
#define PTSCOPE_OUTPUT_SINK_H

#include <stddef.h>
#include <stdint.h>

struct ps_sink;

/* Returns 0, PS_ERR_IO (with detail naming the path), PS_ERR_NOMEM. */
int ps_sink_open(const char *path, int gzip, struct ps_sink **out);
int ps_sink_open_memory(struct ps_sink **out);

/* A write of this much or more goes straight to the file (after what is
 * pending), unless compressed: copying it into the sink's buffer first
 * costs about as much as the write.  A writer that stages its own output
 * hands it over in pieces at least this large. */
#define SINK_DIRECT (128u << 10)

/* Returns 0 or PS_ERR_IO (disk full, ...).  After an error every later
 * write fails too, and commit fails. */
int ps_sink_write(struct ps_sink *s, const void *buf, size_t len);

/* Bytes written so far (before compression). */
uint64_t ps_sink_bytes(const struct ps_sink *s);

/* Memory sink: the bytes written so far (valid until the next write or
 * the sink is freed). */
void ps_sink_memory_data(const struct ps_sink *s, const uint8_t **data,
			 size_t *len);

/* Flush, close, rename into place, free.  Returns 0 or PS_ERR_IO. */
int ps_sink_commit(struct ps_sink *s);

/* Close, remove the temporary file, free.  Accepts NULL. */
void ps_sink_abort(struct ps_sink *s);

#endif
