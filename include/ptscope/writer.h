/* SPDX-License-Identifier: MIT */
/* The trace writer interface.
 *
 * A writer is an ops table embedded at the start of each format's state
 * struct (see src/output/fxt.c, perfetto.c, json.c, text.c), so adding a
 * format touches one new file plus the table in src/output/writer.c.
 *
 * Life cycle: ps_writer_open() → any number of process/thread/meta/event
 * calls, in any order → ps_writer_finish() (flush, close, atomically rename
 * the temporary file to its final name) or ps_writer_abort() (remove the
 * temporary file).  Both free the writer.  A writer that was neither
 * finished nor aborted must be aborted: no partial file ever appears under
 * the requested name.
 *
 * Readers of existing traces (ps_read_trace) feed the same interface, which
 * is how `ptscope convert` (reader → writer) and `ptscope dump` (reader →
 * text writer) work.
 */
#ifndef PTSCOPE_WRITER_H
#define PTSCOPE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/event.h"

enum ps_format {
	PS_FORMAT_AUTO = 0, /* from the file name (or, when reading, content) */
	PS_FORMAT_FXT,	    /* Fuchsia trace format, .fxt (the default) */
	PS_FORMAT_PERFETTO, /* Perfetto protobuf, .pftrace / .perfetto-trace */
	PS_FORMAT_JSON,	    /* Chrome trace event format, .json */
	PS_FORMAT_TEXT	    /* ptscope's normalised text form (dump) */
};

struct ps_writer;

/* One frame of a call-stack sample. */
struct ps_sample_frame {
	const char *name;   /* function (borrowed) */
	const char *module; /* file path or label ("[vdso]"), may be NULL */
	uint64_t pc;	    /* code address in the frame */
	/* The module's mapping (0, 0: unknown): [map_start, map_end) at
	 * file offset map_offset. */
	uint64_t map_start, map_end, map_offset;
};

/* A call-stack sample (sampled recordings, the sample backend): where
 * thread (pid, tid) was at ts, innermost frame first, and which unwinder
 * found the stack ("fp", "dwarf", "lbr"). */
struct ps_sample {
	uint64_t pid, tid, ts;
	const struct ps_sample_frame *frames;
	size_t nframes;
	const char *unwinder;
};

struct ps_writer_ops {
	const char *name;
	/* Name a process / thread.  May come after events that use them. */
	int (*process)(struct ps_writer *w, uint64_t pid, const char *name);
	int (*thread)(struct ps_writer *w, uint64_t pid, uint64_t tid,
		      const char *name);
	/* Trace-wide metadata, e.g. ("backend", "emulated"). */
	int (*meta)(struct ps_writer *w, const char *key, const char *value);
	int (*event)(struct ps_writer *w, const struct ps_event *ev);
	/* Write what is buffered and the format's trailer; no more calls
	 * follow except destroy.  Does not close or rename the sink. */
	int (*flush)(struct ps_writer *w);
	/* Free the format's state (not the sink). Accepts NULL. */
	void (*destroy)(struct ps_writer *w);
	/* Process @pid was created by process @ppid (ps_write_parent).
	 * NULL in a writer that has no place for it.  May come after
	 * events that use them. */
	int (*parent)(struct ps_writer *w, uint64_t pid, uint64_t ppid);
	/* A call-stack sample, for formats with a profile of their own
	 * (Perfetto's flame graph); NULL: the format shows only the spans
	 * rebuilt from the samples. */
	int (*sample)(struct ps_writer *w, const struct ps_sample *s);
};

struct ps_sink; /* buffered output file: src/output/sink.h */

struct ps_writer {
	const struct ps_writer_ops *ops; /* static, not owned */
	struct ps_sink *sink;		 /* owned; closed by finish/abort */
	/* String stability, a speed hint that writers may ignore.  While
	 * stable_epoch is nonzero the producer promises that every string
	 * pointer in the events it writes stays valid and unchanged until
	 * the epoch ends, so a writer may trust a pointer it has already
	 * seen in this epoch without comparing text.  Producers use
	 * ps_writer_stable_begin/end; 0 (the default) means pointers are
	 * borrowed for one call only (event.h). */
	uint64_t stable_epoch;
	uint64_t stable_last; /* the last epoch handed out */
};

/* Start an epoch in which the caller's strings are stable (see above);
 * returns the previous epoch for ps_writer_stable_end. */
static inline uint64_t ps_writer_stable_begin(struct ps_writer *w)
{
	uint64_t prev = w->stable_epoch;

	w->stable_epoch = ++w->stable_last;
	return prev;
}

/* End the caller's epoch, going back to @prev (0: no promise). */
static inline void ps_writer_stable_end(struct ps_writer *w, uint64_t prev)
{
	w->stable_epoch = prev;
}

/* Hand @s to @w's sample op, if the format has one (else nothing). */
static inline int ps_write_sample(struct ps_writer *w,
				  const struct ps_sample *s)
{
	return w->ops->sample ? w->ops->sample(w, s) : 0;
}

/* "fxt", "perfetto" (also "pftrace", "proto"), "json", "text" → format;
 * PS_ERR_INVAL if unknown. */
int ps_format_from_name(const char *name);

/* Format implied by a file name's extension (ignoring a trailing ".gz");
 * *gzip is set to 1 if the name ends in ".gz".  PS_FORMAT_FXT when the
 * extension says nothing. */
int ps_format_from_path(const char *path, int *gzip);

/* Open a writer for @path ("-" is standard output) in @format
 * (PS_FORMAT_AUTO: from the extension).  Output goes to a temporary file
 * beside @path until ps_writer_finish().
 * Returns 0, PS_ERR_INVAL (bad format), PS_ERR_IO (cannot create). */
int ps_writer_open(const char *path, enum ps_format format,
		   struct ps_writer **out);

/* Flush, close and rename into place; frees @w.  On failure the temporary
 * file is removed and nothing appears under the requested name. */
int ps_writer_finish(struct ps_writer *w);

/* Discard everything written; frees @w.  Accepts NULL. */
void ps_writer_abort(struct ps_writer *w);

static inline int ps_write_event(struct ps_writer *w, const struct ps_event *ev)
{
	return w->ops->event(w, ev);
}

/* Tell @w the parent of process @pid (nothing if it cannot say it). */
static inline int ps_write_parent(struct ps_writer *w, uint64_t pid,
				  uint64_t ppid)
{
	return w->ops->parent ? w->ops->parent(w, pid, ppid) : 0;
}

/* Read a trace file in any format (detected from its content; gzip is
 * undone) and feed its events to @dst.  Errors carry a detail with the byte
 * offset where the input went wrong: PS_ERR_IO, PS_ERR_FORMAT,
 * PS_ERR_TRUNCATED, PS_ERR_UNSUPPORTED, or whatever @dst returned. */
int ps_read_trace(const char *path, enum ps_format format,
		  struct ps_writer *dst);

/* Told, while a trace is read, that @done of @total input bytes (as
 * stored: compressed for a .gz) are read; @total is 0 when unknown (a
 * pipe).  For a progress display; must not call back into the reader. */
typedef void (*ps_read_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* ps_read_trace, telling @progress (NULL: nobody) how far it got. */
int ps_read_trace_progress(const char *path, enum ps_format format,
			   struct ps_writer *dst, ps_read_progress_fn progress,
			   void *ctx);

#endif /* PTSCOPE_WRITER_H */
