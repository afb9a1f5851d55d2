/* SPDX-License-Identifier: MIT */
/* The Perfetto writer's state, private to its four files:
 *
 *   perfetto.c         the writer's ops: each event as TrackEvent packets
 *                      on its thread's sequence, the deferred ends of
 *                      COMPLETE events, metadata at flush
 *   perfetto_track.c   tracks: process, thread (and its packet sequence),
 *                      counter and global tracks, described on first use
 *   perfetto_packet.c  protobuf encoding: buffers and varints, the rare
 *                      packets (built with protobuf-c), TrackEvent packets
 *                      with their InternedData
 *   perfetto_intern.c  interning state: the byte-keyed map (also behind
 *                      the track tables), iids, what each sequence has had
 *                      defined
 *
 * Each file uses only those below it in this list.
 */
#ifndef PTSCOPE_OUTPUT_PERFETTO_WRITER_H
#define PTSCOPE_OUTPUT_PERFETTO_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/writer.h"
#include "src/output/perfetto_tree.h"
#include "src/output/perfetto_format.h"

#define PFTW_OUT_FLUSH (256u << 10) /* hand bytes to the sink past this */

struct pfs; /* perfetto_samples.h */

/* Wire types and the field tags of the hot path. */
enum { PFTW_WT_VARINT = 0, PFTW_WT_I64 = 1, PFTW_WT_LEN = 2 };
#define PFTW_TAG(field, wt) (((uint32_t)(field) << 3) | (wt))

/* Kinds of interned data, each with its own iid space. */
enum pftw_kind {
	PFTW_IID_NAME,
	PFTW_IID_CAT,
	PFTW_IID_ANNOT,
	PFTW_IID_LOC,
	PFTW_IID_KINDS
};

/* A growable byte buffer. */
struct pftw_buf {
	uint8_t *p; /* owned */
	size_t len, cap;
};

/* Open-addressing hash map from byte keys to a 64-bit value. */
struct pftw_ent {
	uint64_t hash;
	char *key; /* owned copy, NUL-terminated; NULL: empty slot */
	size_t klen;
	uint64_t val;
};

struct pftw_map {
	struct pftw_ent *e; /* owned */
	size_t cap, n;
};

/* A set of iids (a bitmap), e.g. those already interned on a sequence. */
struct pftw_bits {
	uint64_t *w; /* owned */
	size_t nwords;
};

struct pftw_seq {
	uint32_t id;
	uint64_t clock; /* last value of the incremental clock */
	struct pftw_bits sent[PFTW_IID_KINDS]; /* iids already defined here */
};

/* The end of a COMPLETE event, written when time reaches it.  It carries
 * the span's name and category: trace_processor closes the topmost open
 * slice of that name (its SliceTracker::End), so the end still finds its
 * span when slices that never end (a B without E in JSON) sit above it. */
struct pftw_pend {
	uint64_t end;
	char *name, *cat; /* owned copies, or NULL */
};

struct pftw_thread {
	uint64_t pid, tid;
	uint64_t uuid;
	int described; /* TrackDescriptor written */
	int started;   /* sequence opened (flags, defaults, clock) */
	struct pftw_seq seq;
	struct pftw_pend *pend; /* min-heap of deferred COMPLETE ends (owned) */
	size_t npend, cap;
	/* Zero-length COMPLETEs still open, all at zero_ts: trace_processor
	 * stacks an instant or another zero-length slice at the same time
	 * inside them (as it does JSON's), anything else closes them. */
	uint64_t zero_ts;
	size_t nzero;
};

struct pftw_meta {
	char *key, *value; /* owned */
};

struct pftw_writer {
	struct ps_writer base; /* must be first */
	struct pftw_buf out;   /* packets not yet handed to the sink */
	struct pftw_buf ev;    /* scratch: the TrackEvent being encoded */
	struct pftw_buf in;    /* scratch: its InternedData */
	struct pftw_buf key;   /* scratch: composite hash keys */
	struct pftw_map iids[PFTW_IID_KINDS]; /* string/location → iid */
	uint64_t next_iid[PFTW_IID_KINDS];
	struct pftw_map threads;  /* (pid, tid) → struct pftw_thread * */
	struct pftw_map procs;	  /* pid → uuid | described << 63 */
	struct pftw_map counters; /* (pid, name) / (group, series) → uuid */
	struct pftw_thread *last; /* lookup cache */
	struct pftw_seq global;
	uint64_t next_uuid;
	uint32_t next_seq;
	uint64_t global_uuid; /* track for global instants, 0 until used */
	uint64_t min_ts;      /* earliest event time (for metadata) */
	int any_event;
	struct pftw_meta *metas; /* owned */
	size_t nmeta, metacap;
	struct pft_tree tree; /* names and parents of processes */
	struct pfs *samples; /* call-stack samples, made on the first */
};

/* ---- buffers and varints (perfetto_packet.c) ---------------------------- */

/* Room for @need more bytes in @b.  Returns 0 or PS_ERR_NOMEM. */
int pftw_buf_grow(struct pftw_buf *b, size_t need);

static inline int pftw_buf_reserve(struct pftw_buf *b, size_t need)
{
	if (b->len + need <= b->cap)
		return 0;
	return pftw_buf_grow(b, need);
}

static inline size_t pftw_vlen(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The put_* helpers assume the caller reserved enough room. */
static inline void pftw_put_varint(struct pftw_buf *b, uint64_t v)
{
	uint8_t *p = b->p + b->len;

	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = (size_t)(p - b->p);
}

static inline void pftw_put_fixed64(struct pftw_buf *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static inline void pftw_put_bytes(struct pftw_buf *b, const void *p, size_t n)
{
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Room for a tag, a length and @n bytes. */
#define PFTW_HDR 16

/* ---- interning state (perfetto_intern.c) -------------------------------- */

/* The entry for @key, or NULL.  With @create an absent key is inserted
 * (copied, value 0) and *fresh set; NULL then means out of memory. */
struct pftw_ent *pftw_map_get(struct pftw_map *m, const void *key, size_t klen,
			      int create, int *fresh);
void pftw_map_free(struct pftw_map *m);

/* The iid of @key (@klen bytes) among the interned data of @kind, in
 * *iid.  Returns 1 when @seq has not had it defined yet (it now counts as
 * defined: the caller writes the definition into the packet), 0 when it
 * has, or PS_ERR_NOMEM. */
int pftw_iid(struct pftw_writer *w, struct pftw_seq *seq, enum pftw_kind kind,
	     const void *key, size_t klen, uint64_t *iid);

void pftw_seq_free(struct pftw_seq *s);

/* ---- packets (perfetto_packet.c) ---------------------------------------- */

/* What a TrackEvent carries beyond its type; unused fields are 0/NULL. */
struct pftw_te {
	int type; /* PFTRACE__TRACK_EVENT__TYPE__* */
	const char *name;
	const char *category;
	const struct ps_span_info *info;
	const struct ps_arg *args;
	size_t nargs;
	uint64_t track;	     /* 0: the sequence's default track */
	uint64_t flow;	     /* with flow_field or legacy_phase */
	uint32_t flow_field; /* 47 flow_ids, 48 terminating_flow_ids, 0 */
	char legacy_phase;   /* 's', 't', 'f': a v1 flow event, no type */
	const struct ps_arg *counter; /* TYPE_COUNTER value */
};

/* Hand the packets written so far to the sink.  Returns 0 or a sink
 * error. */
int pftw_out_drain(struct pftw_writer *w);

/* First packet of a sequence: state cleared, defaults for what follows
 * (timestamps on @clock, events on @track unless 0). */
int pftw_emit_seq_start(struct pftw_writer *w, uint32_t seq, uint32_t clock,
			uint64_t track);

/* A clock snapshot on @seq: MONOTONIC = @ts and, when @incr, the
 * sequence's incremental clock = @ts too (so its deltas are ns). */
int pftw_emit_clock(struct pftw_writer *w, uint32_t seq, uint64_t ts, int incr);

/* A TrackDescriptor packet on sequence 1. */
int pftw_emit_track(struct pftw_writer *w, Pftrace__TrackDescriptor *td);

/* Encode @te as a TrackEvent at @ts on sequence @seq and append the
 * packet.  With @incr the time is a delta on the sequence's incremental
 * clock (absolute MONOTONIC when it would go back); without, absolute
 * MONOTONIC, the default of sequence 1. */
int pftw_emit_event(struct pftw_writer *w, struct pftw_seq *seq, int incr,
		    uint64_t ts, const struct pftw_te *te);

/* The processes' parents (struct pft_tree) as one ProcessTree packet;
 * nothing when no parent is known.  Returns 0 or the sink's error. */
int pftw_emit_tree(struct pftw_writer *w);
/* Every meta() so far in one chrome_events packet on sequence 1. */
int pftw_emit_metadata(struct pftw_writer *w);

/* All of the above return 0, PS_ERR_NOMEM or a sink error. */

/* ---- tracks (perfetto_track.c) ------------------------------------------ */

/* The process track's uuid; its descriptor is written on first use, and
 * again whenever @name is given (Perfetto keeps the last one). */
int pftw_process_track(struct pftw_writer *w, uint64_t pid, const char *name,
		       uint64_t *uuid);

/* Describe @th's track, named @name (NULL: no name). */
int pftw_thread_describe(struct pftw_writer *w, struct pftw_thread *th,
			 const char *name);

/* The state of thread (@pid, @tid), made on first use; NULL when out of
 * memory (with a detail). */
struct pftw_thread *pftw_thread_get(struct pftw_writer *w, uint64_t pid,
				    uint64_t tid);

/* Opens the thread's sequence at its first event time @ts. */
int pftw_thread_start(struct pftw_writer *w, struct pftw_thread *th,
		      uint64_t ts);

/* A named global track (metadata, global instants); returns its uuid. */
int pftw_global_track(struct pftw_writer *w, const char *name, uint64_t *uuid);

/* The counter track for series @series of counter @name in @pid: a group
 * track named @name under the process, a counter track per series. */
int pftw_counter_track(struct pftw_writer *w, uint64_t pid, const char *name,
		       const char *series, uint64_t *uuid);

/* The track functions return 0, PS_ERR_NOMEM or a sink error. */

#endif /* PTSCOPE_OUTPUT_PERFETTO_WRITER_H */
