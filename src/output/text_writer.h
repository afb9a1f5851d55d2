/* SPDX-License-Identifier: MIT */
/* The text writer's state, private to its three files:
 *
 *   text.c         the writer's ops and the event form (one line per call)
 *   text_slices.c  the slices form: BEGIN/END matched per thread, every
 *                  item kept and printed sorted when flushed
 *   text_format.c  how the text form spells things: quoted strings,
 *                  canonical numbers, args sorted by name, labels, lines
 *
 * Each file uses only those below it in this list.
 */
#ifndef PTSCOPE_OUTPUT_TEXT_WRITER_H
#define PTSCOPE_OUTPUT_TEXT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/writer.h"

/* A growing string; a failed allocation is remembered and reported once. */
struct tx_buf {
	char *p;
	size_t len, cap;
	int failed;
};

/* A list of rendered "name=value" strings, sorted before printing. */
struct tx_args {
	char **v; /* owned strings */
	size_t n, cap;
};

/* One item of the slices form, kept until flush. */
struct tx_item {
	uint64_t pid, tid, ts;
	uint64_t end; /* ts + dur; UINT64_MAX when never ended */
	int rank;     /* sort order at equal ts: slices first */
	uint32_t depth;
	uint64_t seq; /* arrival order, the last tie breaker */
	int paired;   /* a slice made of a BEGIN and an END (not COMPLETE) */
	char *text;   /* owned: the line after the sort fields */
	const char *kind;
	int who; /* which of pid/tid the line shows (WHO_*) */
};

enum { WHO_NONE, WHO_PID, WHO_BOTH };

/* A slice whose END has not come yet. */
struct tx_open {
	size_t item;	     /* index into items */
	char *name, *cat;    /* owned copies */
	struct tx_args args; /* BEGIN args, then END args */
};

struct tx_thread {
	uint64_t pid, tid;
	struct tx_open *open; /* owned stack */
	size_t nopen, cap;
};

struct tx_name {
	uint64_t pid, tid; /* a parent (is_thread 2): tid is the ppid */
	int is_thread;	   /* 0 process, 1 thread, 2 parent */
	char *name;	   /* owned */
};

struct tx_meta {
	char *key, *value; /* owned */
	uint64_t seq;
};

struct text_writer {
	struct ps_writer base; /* must stay first */
	int slices;
	struct tx_buf line; /* the line being built */
	/* slices form (text_slices.c): */
	struct tx_item *items; /* owned */
	size_t nitems, items_cap;
	struct tx_thread *threads; /* owned */
	size_t nthreads, threads_cap;
	size_t last_thread;
	struct tx_name *names; /* owned */
	size_t nnames, names_cap;
	struct tx_meta *meta; /* owned */
	size_t nmeta, meta_cap;
	uint64_t seq;
};

static inline struct text_writer *to_text(struct ps_writer *w)
{
	return (struct text_writer *)w;
}

/* ---- spelling (text_format.c) ------------------------------------------- */

/* Append to @b; a failed allocation sets b->failed and drops the rest. */
void tb_mem(struct tx_buf *b, const char *s, size_t n);
void tb_str(struct tx_buf *b, const char *s);
void tb_fmt(struct tx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A quoted string: \" \\ \n \r \t, other control bytes and invalid UTF-8
 * as \xNN, valid UTF-8 as is. */
void tb_quoted(struct tx_buf *b, const char *str);
/* name="..." cat="..." for non-empty names and categories. */
void tb_label(struct tx_buf *b, const char *name, const char *cat);

/* @ev's args and span info (as the args "module", "address", "file",
 * "line", as writers show them), rendered, into @l.  Returns 0 or
 * PS_ERR_NOMEM. */
int tx_args_from_event(struct tx_args *l, const struct ps_event *ev);
/* " args={...}" sorted by name, nothing when @l is empty. */
void tx_args_print(struct tx_buf *b, struct tx_args *l);
void tx_args_free(struct tx_args *l);

/* qsort that accepts an empty array. */
void tx_sort(void *v, size_t n, size_t size,
	     int (*cmp)(const void *, const void *));

/* "begin", "end", "complete", ... by enum ps_event_type. */
extern const char *const tx_kind_name[];
const char *tx_scope_name(enum ps_scope s);

/* @b and a newline to the sink; @b is emptied.  Returns 0, PS_ERR_NOMEM
 * (something did not fit in memory) or a sink error. */
int tx_emit_line(struct text_writer *tw, struct tx_buf *b);

/* ---- the slices form (text_slices.c) ------------------------------------ */

/* Each returns 0, PS_ERR_NOMEM or (flush) a sink error. */
int tx_slices_event(struct text_writer *tw, const struct ps_event *ev);
/* The slices form keeps one name per process / thread: the last. */
int tx_slices_name(struct text_writer *tw, int is_thread, uint64_t pid,
		   uint64_t tid, const char *name);
/* Metadata, printed sorted by key (the last value of a key wins). */
int tx_slices_meta(struct text_writer *tw, const char *key, const char *value);
/* Print everything kept, sorted. */
int tx_slices_flush(struct text_writer *tw);
/* Free what the slices form keeps. */
void tx_slices_free(struct text_writer *tw);

#endif /* PTSCOPE_OUTPUT_TEXT_WRITER_H */
