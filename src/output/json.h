/* SPDX-License-Identifier: MIT */
/* Chrome trace event format (JSON): writer and streaming reader.
 *
 * The writer emits the object form {"displayTimeUnit":"ns","traceEvents":
 * [...],"metadata":{...}} with ts/dur in microseconds to exactly three
 * decimals (nanosecond precision).  The reader is a SAX parser (yajl) fed in
 * chunks; it keeps the events (not the text) and hands them on at the end
 * in the order Perfetto's JSON importer uses (see json_order below).  See
 * docs/convert.md for how each phase maps onto the event model.
 */
#ifndef PTSCOPE_OUTPUT_JSON_H
#define PTSCOPE_OUTPUT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "ptscope/writer.h"

struct ps_sink;

/* A process's parent (ps_write_parent) is an "M" record of this name with
 * args {"ppid": N}: Chrome's format has none, viewers skip unknown "M"
 * records, and json_read turns it back into a parent. */
#define JSON_PARENT_RECORD "ptscope_parent"

/* A JSON writer on @sink (stored in (*out)->sink; ps_writer_finish commits
 * it).  Returns 0, PS_ERR_INVAL (NULL argument) or PS_ERR_NOMEM. */
int json_writer_new(struct ps_sink *sink, struct ps_writer **out);

/* Streaming reader: feed any chunking of the file, then finish.  @name is
 * the file name used in error details.  All functions return 0,
 * PS_ERR_FORMAT (invalid JSON or not a trace; the detail names the byte
 * offset), PS_ERR_TRUNCATED (input ends inside an event),
 * PS_ERR_LIMIT (nesting deeper than 256), PS_ERR_NOMEM, or whatever @dst
 * returned.  After an error, further feeds return the same error. */
struct json_reader;
int json_reader_new(const char *name, struct ps_writer *dst,
		    struct json_reader **out);
int json_reader_feed(struct json_reader *r, const uint8_t *buf, size_t len);
int json_reader_finish(struct json_reader *r);
/* Events handed to @dst so far, and events skipped (phases ptscope does
 * not model, malformed elements of traceEvents). */
uint64_t json_reader_events(const struct json_reader *r);
uint64_t json_reader_skipped(const struct json_reader *r);
void json_reader_free(struct json_reader *r); /* accepts NULL */

/* A whole JSON trace in memory → @dst.  Same returns as above. */
int json_read(const uint8_t *data, size_t len, struct ps_writer *dst);

/* How far json_read_gz got, for a progress display. */
struct json_progress {
	ps_read_progress_fn fn; /* NULL: nobody to tell */
	void *ctx;
	uint64_t total; /* bytes of the file as stored, 0: unknown */
};
/* @head (already read from @gz) then the rest of @gz, in chunks, telling
 * @progress (may be NULL) after each.  Returns as above, or PS_ERR_IO /
 * PS_ERR_FORMAT when zlib cannot read @gz. */
int json_read_gz(const struct json_progress *progress, gzFile gz,
		 const uint8_t *head, size_t head_len, const char *name,
		 struct ps_writer *dst);

/* Everything readable from @fd (plain or gzipped JSON; @fd stays open),
 * in chunks.  Returns as json_read_gz. */
int json_read_fd(int fd, const char *name, struct ps_writer *dst);

/* The order Perfetto's JSON importer gives events (json_order.c): every
 * event is kept and replayed sorted by ts; at one ts "E" (PS_EV_END) comes
 * first, then "X" (PS_EV_COMPLETE) longest first, then the rest in arrival
 * order.  An event added @with_previous (a v2 flow on its slice) keeps the
 * previous event's rank and follows it.  Strings are copied.
 * json_order_new/add return 0, PS_ERR_INVAL or PS_ERR_NOMEM; replay
 * returns 0, PS_ERR_NOMEM or the first error of @dst. */
struct json_order;
int json_order_new(struct json_order **out);
int json_order_add(struct json_order *o, const struct ps_event *e,
		   int with_previous);
size_t json_order_count(const struct json_order *o);
int json_order_replay(struct json_order *o, struct ps_writer *dst);
void json_order_free(struct json_order *o); /* accepts NULL */

/* 1 if the first non-blank byte of @data (after a UTF-8 BOM) is '{' or
 * '[', else 0. */
int json_probe(const uint8_t *data, size_t len);

/* Shortest text that reads back as exactly @d ("nan", "inf", "-inf" for
 * non-finite values), NUL-terminated in @buf (at least 32 bytes); returns
 * its length.  Shared with the text writer. */
size_t json_format_double(char *buf, double d);

/* Length of the valid UTF-8 sequence at @s (at most @n >= 1 bytes), 0 if
 * the bytes there are not valid UTF-8 (bad lead, truncated, overlong,
 * surrogate, above U+10FFFF).  Shared with the text writer, which escapes
 * what this rejects differently (\xNN instead of U+FFFD). */
size_t json_utf8_len(const unsigned char *s, size_t n);

/* Make room for @need elements of @elem bytes in the array *@p of *@cap
 * elements (doubling from 64).  Returns 0 or PS_ERR_NOMEM (*@p intact).
 * Shared by the JSON reader and the text writer. */
int json_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif /* PTSCOPE_OUTPUT_JSON_H */
