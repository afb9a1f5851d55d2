/* SPDX-License-Identifier: MIT */
/* Shared helpers for the unit tests, linked into every test program the way
 * tests/harness.c is:
 *
 *   - a recording ps_writer that keeps a deep copy of every call it gets,
 *     in order, with lookups by kind and an event comparison;
 *   - reading a whole file into memory;
 *   - the paths of the built samples and of shared/testdata/real-pt.
 *
 * Allocation failures here abort(): a test helper has nobody to report to.
 */
#ifndef PTSCOPE_TESTS_SUPPORT_H
#define PTSCOPE_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ptscope/event.h"
#include "ptscope/writer.h"

/* ---- the recording writer ---- */

enum ts_kind {
	TS_EVENT,
	TS_PROCESS,
	TS_THREAD,
	TS_META,
	TS_PARENT, /* ev.pid's parent is ev.tid */
	TS_NKINDS
};

struct ts_item {
	enum ts_kind kind;
	struct ps_event ev;  /* strings are owned copies; PROCESS/THREAD set
				ev.pid (and ev.tid) */
	struct ps_arg *args; /* owned; ev.args points here */
	struct ps_span_info info; /* ev.info points here when has_info */
	int has_info;
	char *key, *value; /* owned; META: both; PROCESS/THREAD: name */
};

struct ts_recorder {
	struct ps_writer base;
	struct ts_item *items; /* every call in order (owned) */
	size_t n, cap;
	size_t count[TS_NKINDS]; /* items of each kind */
	size_t *events;		 /* index in items of each event (owned) */
	/* Streaming mode: when set, events go to @check and are not kept. */
	int (*check)(struct ts_recorder *r, const struct ps_event *ev);
	size_t seen; /* events received, kept or checked */
	int bad;     /* free for @check to use */
	/* Refuse the event with this 1-based number and every later one
	 * with PS_ERR_IO (0: never). */
	size_t fail_at;
};

void ts_rec_init(struct ts_recorder *r);
/* Frees everything the recorder holds and re-initialises it. */
void ts_rec_free(struct ts_recorder *r);
/* The @i-th event kept (0-based), NULL past the end. */
const struct ps_event *ts_rec_event(const struct ts_recorder *r, size_t i);
/* The @i-th item of @kind, NULL past the end. */
const struct ts_item *ts_rec_nth(const struct ts_recorder *r, enum ts_kind kind,
				 size_t i);
/* One line per item, for debugging a failed test. */
void ts_rec_print(const struct ts_recorder *r, FILE *f);

/* 0 if @a and @b mean the same event (type, ids, ts, names, flow id for
 * flows, scope for instants, span info, args), else the source line of
 * the first difference found. */
int ts_event_diff(const struct ps_event *a, const struct ps_event *b);

/* ---- writers into memory ---- */

/* A writer made by @make (e.g. fxt_writer_new) on a new memory sink, with
 * (*out)->sink set; NULL on failure. */
struct ps_writer *ts_writer_on_memory(int (*make)(struct ps_sink *,
						  struct ps_writer **));

/* The text writer (src/output/text.h) on a memory sink: the slices form
 * if @slices, else the event form.  NULL on failure. */
struct ps_writer *ts_text_on_memory(int slices);

/* Flush @w, copy out what its memory sink holds (NUL-terminated, not
 * counted in *@len; @len may be NULL), destroy @w and its sink.  With @err the
 * flush result goes there and the bytes come back anyway; without, a failed
 * flush returns NULL.  Caller frees. */
uint8_t *ts_writer_bytes(struct ps_writer *w, size_t *len, int *err);

/* ---- files and paths ---- */

/* The whole file at @path, NUL-terminated (not counted in *@len); NULL if
 * it cannot be read.  Caller frees. */
uint8_t *ts_read_file(const char *path, size_t *len);

/* The .text section of ELF file @path: a malloc'd copy of its bytes (NULL
 * if the file or the section is missing), its size in *len and, if @addr,
 * its link address in *addr. */
uint8_t *ts_elf_text(const char *path, size_t *len, uint64_t *addr);

/* $PTSCOPE_TESTDATA/real-pt/@rel and $PTSCOPE_BUILD/samples/@name.  The
 * result lives in one of 8 rotating static buffers, so a few may be used
 * at once. */
const char *ts_realpt(const char *rel);
const char *ts_sample(const char *name);

/* ---- a libipt encoder into a fixed buffer, for synthetic PT streams ---- */

struct pt_encoder;

struct ts_enc {
	uint8_t buf[4096];    /* the stream */
	struct pt_encoder *e; /* owned until ts_enc_done */
	int bad;	      /* set by the test's packet helpers on error */
};

/* Zero @w's buffer and start an encoder over it (bad = 1 on failure). */
void ts_enc_init(struct ts_enc *w);
/* Free the encoder; the stream's length in bytes. */
size_t ts_enc_done(struct ts_enc *w);

/* Packets (w->bad set on an encoder error): one with no payload; a
 * TIP-family packet, @ip sign-extended from 48 bits or suppressed (0);
 * MODE.Exec 64-bit; TSC, TMA (a: ctc, b: fc), MTC or CBR with payload
 * @a; a TNT-8 from "T"/"N" letters, oldest first. */
enum pt_packet_type;
void ts_pkt(struct ts_enc *w, enum pt_packet_type type);
void ts_pkt_ip(struct ts_enc *w, enum pt_packet_type type, uint64_t ip);
void ts_pkt_mode64(struct ts_enc *w);
void ts_pkt_timing(struct ts_enc *w, enum pt_packet_type type, uint64_t a,
		   uint64_t b);
void ts_pkt_tnt(struct ts_enc *w, const char *bits);

#endif
