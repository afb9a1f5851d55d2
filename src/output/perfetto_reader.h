/* SPDX-License-Identifier: MIT */
/* The Perfetto reader's state, private to its three files:
 *
 *   perfetto_read.c        the Trace's framing, one TracePacket at a time
 *                          (unpacked with protobuf-c into an arena), and
 *                          what each packet is handed to
 *   perfetto_read_event.c  TrackEvents → ptscope events: names, args,
 *                          counters merged from their series, flows, and
 *                          the metadata bundle
 *   perfetto_read_state.c  what the reader remembers between packets:
 *                          each sequence's interned data, defaults and
 *                          clocks; every track and what it belongs to
 *
 * Each file uses only those below it in this list.
 */
#ifndef PTSCOPE_OUTPUT_PERFETTO_READER_H
#define PTSCOPE_OUTPUT_PERFETTO_READER_H

#include <stddef.h>
#include <stdint.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/writer.h"

/* A uint64 → value map (open addressing). */
struct pfrd_ent {
	uint64_t key;
	void *val; /* NULL: empty slot */
};

struct pfrd_map {
	struct pfrd_ent *e; /* owned */
	size_t cap, n;
};

struct pfrd_loc {
	char *file, *module; /* owned, may be NULL */
	uint64_t address;
	uint32_t line;
};

struct pfrd_clock {
	int valid, incr;
	uint64_t unit;	   /* ns per tick */
	uint64_t ref_ns;   /* this clock at the snapshot, in ns */
	uint64_t ref_mono; /* the reference clock at the same instant */
	uint64_t last_ns;  /* last value (incremental clocks) */
};

enum pfrd_kind {
	PFRD_GENERIC,
	PFRD_PROCESS,
	PFRD_THREAD,
	PFRD_COUNTER,
	PFRD_META
};

struct pfrd_track {
	enum pfrd_kind kind;
	uint64_t parent; /* 0: none */
	uint64_t pid, tid;
	char *name; /* owned, may be NULL */
};

enum { PFRD_NAMES, PFRD_CATS, PFRD_ANNOTS, PFRD_LOCS, PFRD_NTABLES };

struct pfrd_seq {
	struct pfrd_map
	    tab[PFRD_NTABLES]; /* iid → char * / struct pfrd_loc * */
	int has_clock;
	uint32_t clock;		      /* default timestamp clock */
	uint64_t track;		      /* default track uuid, 0: none */
	struct pfrd_clock clocks[64]; /* sequence-scoped clocks 64..127 */
};

#define PFRD_MAX_MERGE 64 /* counter series merged into one event */

struct pfrd_reader {
	struct ps_writer *dst;
	size_t off;		/* byte offset of the current packet */
	struct pfrd_map seqs;	/* id → struct pfrd_seq * */
	struct pfrd_map tracks; /* uuid → struct pfrd_track * */
	struct pfrd_map flows;	/* flow id → (void *)1 while open, 2 ended */
	uint64_t last_ts;
	struct ps_arg *args; /* scratch for one event's args (owned) */
	size_t argcap;
	/* A counter event being merged from per-series packets. */
	int cnt_active;
	uint32_t cnt_seq;
	uint64_t cnt_group;
	struct ps_event cnt;
	struct ps_arg cnt_args[PFRD_MAX_MERGE];
};

/* ---- state (perfetto_read_state.c) -------------------------------------- */

void *pfrd_map_find(const struct pfrd_map *m, uint64_t key);
/* Store @val (non-NULL) under @key; *old receives a value it replaced.
 * Returns 0 or PS_ERR_NOMEM. */
int pfrd_map_put(struct pfrd_map *m, uint64_t key, void *val, void **old);
/* Empty @m, calling @fn (unless NULL) on every value. */
void pfrd_map_clear(struct pfrd_map *m, void (*fn)(void *));

/* PS_ERR_NOMEM with its one sentence. */
int pfrd_nomem(void);

/* Sequence @id's state, made on first use; NULL when out of memory. */
struct pfrd_seq *pfrd_seq_get(struct pfrd_reader *r, uint32_t id);
/* Forget what @s has interned and its defaults (incremental state
 * cleared); its clocks stay. */
void pfrd_seq_reset(struct pfrd_seq *s);
void pfrd_seq_free(void *seq);
void pfrd_track_free(void *track);

/* The packet parts that change the state.  Each returns 0,
 * PS_ERR_FORMAT (detail names the packet's byte offset), PS_ERR_NOMEM,
 * or (read_track) whatever the destination writer returned. */
int pfrd_read_interned(struct pfrd_reader *r, struct pfrd_seq *s,
		       const Pftrace__InternedData *in);
/* @s is NULL for a packet without a sequence id. */
int pfrd_read_clock(struct pfrd_reader *r, struct pfrd_seq *s,
		    const Pftrace__ClockSnapshot *cs);
/* Names of processes and threads go to the destination at once. */
int pfrd_read_track(struct pfrd_reader *r, const Pftrace__TrackDescriptor *td);

/* The packet's time in ns of the reference clock, in *ts.  Returns 0 or
 * PS_ERR_FORMAT (a clock no snapshot defined). */
int pfrd_packet_time(struct pfrd_reader *r, struct pfrd_seq *s,
		     const Pftrace__TracePacket *p, uint64_t *ts);

/* The process id a track belongs to (walking up its parents): 1 and
 * *pid, or 0 when it belongs to none. */
int pfrd_track_pid(struct pfrd_reader *r, const struct pfrd_track *t,
		   uint64_t *pid);

/* ---- events (perfetto_read_event.c) ------------------------------------- */

/* The TrackEvent of packet @p on sequence @seq (state @s) → events. */
int pfrd_read_event(struct pfrd_reader *r, uint32_t seq, struct pfrd_seq *s,
		    const Pftrace__TracePacket *p);
/* ChromeEventBundle.metadata → meta() calls. */
int pfrd_read_chrome_metadata(struct pfrd_reader *r,
			      const Pftrace__ChromeEventBundle *b);
/* Hand on the counter event being merged, if any. */
int pfrd_cnt_flush(struct pfrd_reader *r);

/* These return 0, PS_ERR_FORMAT (detail names the packet's byte offset),
 * PS_ERR_NOMEM, or whatever the destination writer returned. */

#endif /* PTSCOPE_OUTPUT_PERFETTO_READER_H */
