/* SPDX-License-Identifier: MIT */
/* Perfetto protobuf writer: the ptscope event stream → a Perfetto Trace.
 *
 * Layout (docs/format-perfetto.md has the details):
 *   sequence 1: defaults (absolute MONOTONIC timestamps), a clock snapshot
 *     that makes MONOTONIC the trace clock, every TrackDescriptor, the
 *     metadata instants (written by flush);
 *   one sequence per thread: SEQ_INCREMENTAL_STATE_CLEARED + defaults
 *     (incremental clock 64, the thread's track), a clock snapshot tying
 *     clock 64 to MONOTONIC at the thread's first event, then TrackEvent
 *     packets with ns deltas and interned names, categories, annotation
 *     names and source locations.
 *
 * Event packets are encoded by hand into a reusable buffer (no allocation
 * per event); the rare packets (descriptors, snapshots, defaults) are built
 * as protobuf-c messages and packed.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto.h"
#include "src/output/perfetto_samples.h"
#include "src/output/sink.h"

/* protobuf-c's name for "the packet has a sequence id" */
#define SEQ_ID_SET                                                             \
	PFTRACE__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID

#define PF_OUT_FLUSH (256u << 10) /* hand bytes to the sink past this */

/* Wire types and the field tags of the hot path. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };
#define TAG(field, wt) (((uint32_t)(field) << 3) | (wt))

/* Kinds of interned data, each with its own iid space. */
enum pf_kind { PFK_NAME, PFK_CAT, PFK_ANNOT, PFK_LOC, PFK_COUNT };

/* A growable byte buffer. */
struct pf_buf {
	uint8_t *p; /* owned */
	size_t len, cap;
};

/* Open-addressing hash map from byte keys to a 64-bit value. */
struct pf_ent {
	uint64_t hash;
	char *key; /* owned copy, NUL-terminated; NULL: empty slot */
	size_t klen;
	uint64_t val;
};

struct pf_map {
	struct pf_ent *e; /* owned */
	size_t cap, n;
};

/* A set of iids (a bitmap), e.g. those already interned on a sequence. */
struct pf_bits {
	uint64_t *w; /* owned */
	size_t nwords;
};

struct pf_seq {
	uint32_t id;
	uint64_t clock; /* last value of the incremental clock */
	struct pf_bits sent[PFK_COUNT]; /* iids already defined here */
};

/* The end of a COMPLETE event, written when time reaches it.  It carries
 * the span's name and category: trace_processor closes the topmost open
 * slice of that name (its SliceTracker::End), so the end still finds its
 * span when slices that never end (a B without E in JSON) sit above it. */
struct pf_pend {
	uint64_t end;
	char *name, *cat; /* owned copies, or NULL */
};

struct pf_thread {
	uint64_t pid, tid;
	uint64_t uuid;
	int described; /* TrackDescriptor written */
	int started;   /* sequence opened (flags, defaults, clock) */
	struct pf_seq seq;
	struct pf_pend *pend; /* min-heap of deferred COMPLETE ends (owned) */
	size_t npend, cap;
	/* Zero-length COMPLETEs still open, all at zero_ts: trace_processor
	 * stacks an instant or another zero-length slice at the same time
	 * inside them (as it does JSON's), anything else closes them. */
	uint64_t zero_ts;
	size_t nzero;
};

struct pf_meta {
	char *key, *value; /* owned */
};

struct pf_writer {
	struct ps_writer base; /* must be first */
	struct pf_buf out;     /* packets not yet handed to the sink */
	struct pf_buf ev;      /* scratch: the TrackEvent being encoded */
	struct pf_buf in;      /* scratch: its InternedData */
	struct pf_buf key;     /* scratch: composite hash keys */
	struct pf_map iids[PFK_COUNT]; /* string/location → iid */
	uint64_t next_iid[PFK_COUNT];
	struct pf_map threads;	/* (pid, tid) → struct pf_thread * */
	struct pf_map procs;	/* pid → uuid | described << 63 */
	struct pf_map counters; /* (pid, name) / (group, series) → uuid */
	struct pf_thread *last; /* lookup cache */
	struct pf_seq global;
	uint64_t next_uuid;
	uint32_t next_seq;
	uint64_t global_uuid; /* track for global instants, 0 until used */
	uint64_t min_ts;      /* earliest event time (for metadata) */
	int any_event;
	struct pf_meta *metas; /* owned */
	size_t nmeta, metacap;
	struct pfs *samples; /* call-stack samples, made on the first */
};

/* ---- buffers and varints ----------------------------------------------- */

static int buf_grow(struct pf_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *p;

	while (cap < b->len + need)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory growing a %zu-byte buffer",
				     cap);
	b->p = p;
	b->cap = cap;
	return 0;
}

static inline int buf_reserve(struct pf_buf *b, size_t need)
{
	if (b->len + need <= b->cap)
		return 0;
	return buf_grow(b, need);
}

static inline size_t vlen(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The put_* helpers assume the caller reserved enough room. */
static inline void put_varint(struct pf_buf *b, uint64_t v)
{
	uint8_t *p = b->p + b->len;

	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = (size_t)(p - b->p);
}

static inline void put_fixed64(struct pf_buf *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static inline void put_bytes(struct pf_buf *b, const void *p, size_t n)
{
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Room for a tag, a length and @n bytes. */
#define HDR 16

/* ---- hashing and the map ----------------------------------------------- */

static uint64_t hash_bytes(const void *data, size_t n, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);

	while (n >= 8) {
		uint64_t k;

		memcpy(&k, p, 8);
		h = (h ^ (k * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t k = 0;

		memcpy(&k, p, n);
		h = (h ^ (k * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static int map_rehash(struct pf_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct pf_ent *e = calloc(cap, sizeof(*e));

	if (!e)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory growing a table to %zu "
				     "entries",
				     cap);
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].key)
			continue;
		j = m->e[i].hash & (cap - 1);
		while (e[j].key)
			j = (j + 1) & (cap - 1);
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

/* The entry for @key, or NULL.  With @create an absent key is inserted
 * (copied, value 0) and *fresh set; NULL then means out of memory. */
static struct pf_ent *map_get(struct pf_map *m, const void *key, size_t klen,
			      int create, int *fresh)
{
	uint64_t h = hash_bytes(key, klen, 0);
	size_t j;

	if (fresh)
		*fresh = 0;
	if (m->cap) {
		for (j = h & (m->cap - 1); m->e[j].key;
		     j = (j + 1) & (m->cap - 1))
			if (m->e[j].hash == h && m->e[j].klen == klen &&
			    !memcmp(m->e[j].key, key, klen))
				return &m->e[j];
	}
	if (!create)
		return NULL;
	if ((m->n + 1) * 4 > m->cap * 3 && map_rehash(m))
		return NULL;
	for (j = h & (m->cap - 1); m->e[j].key; j = (j + 1) & (m->cap - 1))
		;
	m->e[j].key = malloc(klen + 1);
	if (!m->e[j].key) {
		ps_err_detail(PS_ERR_NOMEM, "out of memory copying a key");
		return NULL;
	}
	memcpy(m->e[j].key, key, klen);
	m->e[j].key[klen] = 0;
	m->e[j].hash = h;
	m->e[j].klen = klen;
	m->e[j].val = 0;
	m->n++;
	if (fresh)
		*fresh = 1;
	return &m->e[j];
}

static void map_free(struct pf_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->e[i].key);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* Sets bit @i; returns 1 if it was already set, <0 on error. */
static int bits_test_set(struct pf_bits *b, uint64_t i)
{
	size_t w = (size_t)(i >> 6);

	if (w >= b->nwords) {
		size_t n = b->nwords ? b->nwords : 4;
		uint64_t *p;

		while (n <= w)
			n *= 2;
		p = realloc(b->w, n * sizeof(*p));
		if (!p)
			return ps_err_detail(PS_ERR_NOMEM,
					     "out of memory for interning "
					     "state");
		memset(p + b->nwords, 0, (n - b->nwords) * sizeof(*p));
		b->w = p;
		b->nwords = n;
	}
	if (b->w[w] & (1ull << (i & 63)))
		return 1;
	b->w[w] |= 1ull << (i & 63);
	return 0;
}

static void seq_free(struct pf_seq *s)
{
	for (int k = 0; k < PFK_COUNT; k++)
		free(s->sent[k].w);
}

/* ---- output ------------------------------------------------------------ */

static int out_drain(struct pf_writer *w)
{
	int err;

	if (!w->out.len)
		return 0;
	err = ps_sink_write(w->base.sink, w->out.p, w->out.len);
	w->out.len = 0;
	return err;
}

/* Append one rare packet built with protobuf-c. */
static int emit_msg(struct pf_writer *w, Pftrace__TracePacket *pkt)
{
	size_t n = pftrace__trace_packet__get_packed_size(pkt);
	int err = buf_reserve(&w->out, n + HDR);

	if (err)
		return err;
	put_varint(&w->out, TAG(1, WT_LEN));
	put_varint(&w->out, n);
	w->out.len += pftrace__trace_packet__pack(pkt, w->out.p + w->out.len);
	return 0;
}

static void pkt_init(Pftrace__TracePacket *pkt, uint32_t seq)
{
	pftrace__trace_packet__init(pkt);
	pkt->optional_trusted_packet_sequence_id_case = SEQ_ID_SET;
	pkt->trusted_packet_sequence_id = seq;
}

/* First packet of a sequence: state cleared, defaults for what follows. */
static int emit_seq_start(struct pf_writer *w, uint32_t seq, uint32_t clock,
			  uint64_t track)
{
	Pftrace__TracePacket pkt;
	Pftrace__TracePacketDefaults def = PFTRACE__TRACE_PACKET_DEFAULTS__INIT;
	Pftrace__TrackEventDefaults tdef = PFTRACE__TRACK_EVENT_DEFAULTS__INIT;

	pkt_init(&pkt, seq);
	pkt.has_sequence_flags = 1;
	pkt.sequence_flags =
	    PFTRACE__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
	def.has_timestamp_clock_id = 1;
	def.timestamp_clock_id = clock;
	if (track) {
		tdef.has_track_uuid = 1;
		tdef.track_uuid = track;
		def.track_event_defaults = &tdef;
	}
	pkt.trace_packet_defaults = &def;
	return emit_msg(w, &pkt);
}

/* A clock snapshot on @seq: MONOTONIC = @ts and, when @incr, the
 * sequence's incremental clock = @ts too (so its deltas are ns). */
static int emit_clock(struct pf_writer *w, uint32_t seq, uint64_t ts, int incr)
{
	Pftrace__TracePacket pkt;
	Pftrace__ClockSnapshot snap = PFTRACE__CLOCK_SNAPSHOT__INIT;
	Pftrace__ClockSnapshot__Clock c[2];
	Pftrace__ClockSnapshot__Clock *cp[2] = {&c[0], &c[1]};

	pkt_init(&pkt, seq);
	pftrace__clock_snapshot__clock__init(&c[0]);
	pftrace__clock_snapshot__clock__init(&c[1]);
	c[0].has_clock_id = c[0].has_timestamp = 1;
	c[0].clock_id = PFTW_CLOCK_MONOTONIC;
	c[0].timestamp = ts;
	c[1].has_clock_id = c[1].has_timestamp = 1;
	c[1].timestamp = ts;
	if (incr) {
		c[1].clock_id = PFTW_CLOCK_INCR;
		c[1].has_is_incremental = 1;
		c[1].is_incremental = 1;
	} else {
		/* Pins BOOTTIME to MONOTONIC so that a reader that ignores
		 * primary_trace_clock still converts our times unchanged. */
		c[1].clock_id = PFTW_CLOCK_BOOTTIME;
		snap.has_primary_trace_clock = 1;
		snap.primary_trace_clock =
		    PFTRACE__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC;
	}
	snap.n_clocks = 2;
	snap.clocks = cp;
	pkt.data_case = PFTRACE__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	pkt.clock_snapshot = &snap;
	return emit_msg(w, &pkt);
}

static int emit_track(struct pf_writer *w, Pftrace__TrackDescriptor *td)
{
	Pftrace__TracePacket pkt;

	pkt_init(&pkt, PFTW_SEQ_GLOBAL);
	pkt.data_case = PFTRACE__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	pkt.track_descriptor = td;
	return emit_msg(w, &pkt);
}

/* ---- tracks ------------------------------------------------------------ */

#define PROC_DESCRIBED (1ull << 63)

/* The process track's uuid; its descriptor is written on first use, and
 * again whenever @name is given (Perfetto keeps the last one). */
static int process_track(struct pf_writer *w, uint64_t pid, const char *name,
			 uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__ProcessDescriptor pd = PFTRACE__PROCESS_DESCRIPTOR__INIT;
	struct pf_ent *e = map_get(&w->procs, &pid, sizeof(pid), 1, NULL);

	if (!e)
		return PS_ERR_NOMEM;
	if (!e->val)
		e->val = w->next_uuid++;
	*uuid = e->val & ~PROC_DESCRIBED;
	if ((e->val & PROC_DESCRIBED) && !name)
		return 0;
	e->val |= PROC_DESCRIBED;
	td.has_uuid = 1;
	td.uuid = *uuid;
	pd.has_pid = 1;
	pd.pid = (int32_t)pid;
	pd.process_name = (char *)name;
	td.process = &pd;
	return emit_track(w, &td);
}

static int thread_describe(struct pf_writer *w, struct pf_thread *th,
			   const char *name)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__ThreadDescriptor tdd = PFTRACE__THREAD_DESCRIPTOR__INIT;
	uint64_t parent;
	int err = process_track(w, th->pid, NULL, &parent);

	if (err)
		return err;
	td.has_uuid = td.has_parent_uuid = 1;
	td.uuid = th->uuid;
	td.parent_uuid = parent;
	tdd.has_pid = tdd.has_tid = 1;
	tdd.pid = (int32_t)th->pid;
	tdd.tid = (int32_t)th->tid;
	tdd.thread_name = (char *)name;
	td.thread = &tdd;
	th->described = 1;
	return emit_track(w, &td);
}

static struct pf_thread *thread_get(struct pf_writer *w, uint64_t pid,
				    uint64_t tid)
{
	uint64_t k[2] = {pid, tid};
	struct pf_thread *th = w->last;
	struct pf_ent *e;
	int fresh;

	if (th && th->pid == pid && th->tid == tid)
		return th;
	e = map_get(&w->threads, k, sizeof(k), 1, &fresh);
	if (!e)
		return NULL;
	if (fresh) {
		th = calloc(1, sizeof(*th));
		if (!th) {
			ps_err_detail(PS_ERR_NOMEM,
				      "out of memory for a thread's state");
			e->val = 0;
			return NULL;
		}
		th->pid = pid;
		th->tid = tid;
		th->uuid = w->next_uuid++;
		th->seq.id = w->next_seq++;
		e->val = (uint64_t)(uintptr_t)th;
	}
	th = (struct pf_thread *)(uintptr_t)e->val;
	if (th)
		w->last = th;
	else
		ps_err_detail(PS_ERR_NOMEM,
			      "out of memory for a thread's state");
	return th;
}

/* Opens the thread's sequence at its first event time @ts. */
static int thread_start(struct pf_writer *w, struct pf_thread *th, uint64_t ts)
{
	int err = 0;

	if (!th->described)
		err = thread_describe(w, th, NULL);
	if (!err)
		err = emit_seq_start(w, th->seq.id, PFTW_CLOCK_INCR, th->uuid);
	if (!err)
		err = emit_clock(w, th->seq.id, ts, 1);
	th->seq.clock = ts;
	th->started = 1;
	return err;
}

/* A named global track (metadata, global instants); returns its uuid. */
static int global_track(struct pf_writer *w, const char *name, uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;

	*uuid = w->next_uuid++;
	td.has_uuid = 1;
	td.uuid = *uuid;
	td.name = (char *)name;
	return emit_track(w, &td);
}

/* The counter track for series @series of counter @name in @pid: a group
 * track named @name under the process, a counter track per series. */
static int counter_track(struct pf_writer *w, uint64_t pid, const char *name,
			 const char *series, uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__CounterDescriptor cd = PFTRACE__COUNTER_DESCRIPTOR__INIT;
	size_t nl = strlen(name), sl = strlen(series);
	struct pf_ent *e;
	uint64_t group, parent;
	int fresh, err;

	w->key.len = 0;
	if ((err = buf_reserve(&w->key, 9 + nl + sl)))
		return err;
	put_bytes(&w->key, &pid, 8);
	put_bytes(&w->key, "g", 1);
	put_bytes(&w->key, name, nl);
	e = map_get(&w->counters, w->key.p, w->key.len, 1, &fresh);
	if (!e)
		return PS_ERR_NOMEM;
	if (fresh) {
		if ((err = process_track(w, pid, NULL, &parent)))
			return err;
		e->val = w->next_uuid++;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = e->val;
		td.parent_uuid = parent;
		td.name = (char *)name;
		if ((err = emit_track(w, &td)))
			return err;
	}
	group = e->val;

	w->key.len = 0;
	put_bytes(&w->key, &group, 8);
	put_bytes(&w->key, "s", 1);
	put_bytes(&w->key, series, sl);
	e = map_get(&w->counters, w->key.p, w->key.len, 1, &fresh);
	if (!e)
		return PS_ERR_NOMEM;
	if (fresh) {
		/* "counter series", the name trace_processor gives a JSON
		 * counter's series, so both formats show the same tracks */
		char *full = malloc(nl + 1 + sl + 1);

		if (!full)
			return ps_err_detail(
			    PS_ERR_NOMEM, "out of memory for a counter track");
		memcpy(full, name, nl);
		full[nl] = ' ';
		memcpy(full + nl + 1, series, sl + 1);
		e->val = w->next_uuid++;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = e->val;
		td.parent_uuid = group;
		td.name = full;
		td.counter = &cd;
		err = emit_track(w, &td);
		free(full);
		if (err)
			return err;
	}
	*uuid = e->val;
	return 0;
}

/* ---- interning --------------------------------------------------------- */

/* Field numbers of InternedData's lists, by kind. */
static const uint32_t interned_field[PFK_COUNT] = {2, 1, 3, 4};

/* The iid of string @s of @kind; defines it in the packet's InternedData
 * (w->in) unless @seq already has it. */
static int intern_str(struct pf_writer *w, struct pf_seq *seq,
		      enum pf_kind kind, const char *s, uint64_t *iid)
{
	size_t n = strlen(s);
	struct pf_ent *e = map_get(&w->iids[kind], s, n, 1, NULL);
	size_t body;
	int err;

	if (!e)
		return PS_ERR_NOMEM;
	if (!e->val)
		e->val = ++w->next_iid[kind];
	*iid = e->val;
	err = bits_test_set(&seq->sent[kind], *iid);
	if (err)
		return err < 0 ? err : 0;
	body = 1 + vlen(*iid) + 1 + vlen(n) + n;
	if ((err = buf_reserve(&w->in, body + HDR)))
		return err;
	put_varint(&w->in, TAG(interned_field[kind], WT_LEN));
	put_varint(&w->in, body);
	put_varint(&w->in, TAG(1, WT_VARINT));
	put_varint(&w->in, *iid);
	put_varint(&w->in, TAG(2, WT_LEN));
	put_varint(&w->in, n);
	put_bytes(&w->in, s, n);
	return 0;
}

static size_t str_field_len(uint32_t field, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return s ? vlen(TAG(field, WT_LEN)) + vlen(n) + n : 0;
}

static void put_str_field(struct pf_buf *b, uint32_t field, const char *s)
{
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	put_varint(b, TAG(field, WT_LEN));
	put_varint(b, n);
	put_bytes(b, s, n);
}

/* The iid of the SourceLocation (function @name + @info). */
static int intern_loc(struct pf_writer *w, struct pf_seq *seq, const char *name,
		      const struct ps_span_info *info, uint64_t *iid)
{
	const char *parts[3] = {name, info->module, info->file};
	struct pf_ent *e;
	size_t body;
	int err;

	/* Key: the three strings (0xff marks a NULL one), address, line. */
	w->key.len = 0;
	for (int i = 0; i < 3; i++) {
		size_t n = parts[i] ? strlen(parts[i]) + 1 : 1;

		if ((err = buf_reserve(&w->key, n + 12)))
			return err;
		if (parts[i])
			put_bytes(&w->key, parts[i], n);
		else
			put_bytes(&w->key, "\xff", 1);
	}
	put_bytes(&w->key, &info->address, 8);
	put_bytes(&w->key, &info->line, 4);
	e = map_get(&w->iids[PFK_LOC], w->key.p, w->key.len, 1, NULL);
	if (!e)
		return PS_ERR_NOMEM;
	if (!e->val)
		e->val = ++w->next_iid[PFK_LOC];
	*iid = e->val;
	err = bits_test_set(&seq->sent[PFK_LOC], *iid);
	if (err)
		return err < 0 ? err : 0;
	body = 1 + vlen(*iid) + str_field_len(2, info->file) +
	       str_field_len(3, name) + str_field_len(5001, info->module);
	if (info->line)
		body += 1 + vlen(info->line);
	if (info->address)
		body += vlen(TAG(5002, WT_VARINT)) + vlen(info->address);
	if ((err = buf_reserve(&w->in, body + HDR)))
		return err;
	put_varint(&w->in, TAG(interned_field[PFK_LOC], WT_LEN));
	put_varint(&w->in, body);
	put_varint(&w->in, TAG(1, WT_VARINT));
	put_varint(&w->in, *iid);
	put_str_field(&w->in, 2, info->file);
	put_str_field(&w->in, 3, name);
	if (info->line) {
		put_varint(&w->in, TAG(4, WT_VARINT));
		put_varint(&w->in, info->line);
	}
	put_str_field(&w->in, 5001, info->module);
	if (info->address) {
		put_varint(&w->in, TAG(5002, WT_VARINT));
		put_varint(&w->in, info->address);
	}
	return 0;
}

/* ---- track events ------------------------------------------------------ */

/* What a TrackEvent carries beyond its type; unused fields are 0/NULL. */
struct pf_te {
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

static int put_annotation(struct pf_writer *w, struct pf_seq *seq,
			  const struct ps_arg *a)
{
	uint64_t iid;
	size_t body, slen = 0;
	int err = intern_str(w, seq, PFK_ANNOT, a->name ? a->name : "", &iid);

	if (err)
		return err;
	body = 1 + vlen(iid);
	switch (a->type) {
	case PS_ARG_NULL:
		break;
	case PS_ARG_BOOL:
		body += 2;
		break;
	case PS_ARG_INT:
		body += 1 + vlen((uint64_t)a->v.i);
		break;
	case PS_ARG_UINT:
	case PS_ARG_POINTER:
		body += 1 + vlen(a->v.u);
		break;
	case PS_ARG_DOUBLE:
		body += 9;
		break;
	case PS_ARG_STRING:
		slen = a->v.s ? strlen(a->v.s) : 0;
		body += 1 + vlen(slen) + slen;
		break;
	}
	if ((err = buf_reserve(&w->ev, body + HDR)))
		return err;
	put_varint(&w->ev, TAG(4, WT_LEN));
	put_varint(&w->ev, body);
	put_varint(&w->ev, TAG(1, WT_VARINT));
	put_varint(&w->ev, iid);
	switch (a->type) {
	case PS_ARG_NULL:
		break;
	case PS_ARG_BOOL:
		put_varint(&w->ev, TAG(2, WT_VARINT));
		put_varint(&w->ev, a->v.b ? 1 : 0);
		break;
	case PS_ARG_INT:
		put_varint(&w->ev, TAG(4, WT_VARINT));
		put_varint(&w->ev, (uint64_t)a->v.i);
		break;
	case PS_ARG_UINT:
		put_varint(&w->ev, TAG(3, WT_VARINT));
		put_varint(&w->ev, a->v.u);
		break;
	case PS_ARG_POINTER:
		put_varint(&w->ev, TAG(7, WT_VARINT));
		put_varint(&w->ev, a->v.u);
		break;
	case PS_ARG_DOUBLE: {
		uint64_t bits;

		memcpy(&bits, &a->v.d, 8);
		put_varint(&w->ev, TAG(5, WT_I64));
		put_fixed64(&w->ev, bits);
		break;
	}
	case PS_ARG_STRING:
		put_varint(&w->ev, TAG(6, WT_LEN));
		put_varint(&w->ev, slen);
		put_bytes(&w->ev, a->v.s, slen);
		break;
	}
	return 0;
}

/* Encode @te as a TrackEvent at @ts on sequence @seq and append the
 * packet.  With @incr the time is a delta on the sequence's incremental
 * clock (absolute MONOTONIC when it would go back); without, absolute
 * MONOTONIC, the default of sequence 1. */
static int emit_event(struct pf_writer *w, struct pf_seq *seq, int incr,
		      uint64_t ts, const struct pf_te *te)
{
	struct pf_buf *b = &w->ev;
	uint64_t iid, tsval = ts;
	int abs_clock = 0;
	size_t plen;
	int err;

	b->len = 0;
	w->in.len = 0;
	if ((err = buf_reserve(b, 64)))
		return err;
	if (te->legacy_phase) {
		/* LegacyEvent { phase, unscoped_id, bind_to_enclosing } */
		size_t body =
		    2 + 1 + vlen(te->flow) + (te->legacy_phase == 'f' ? 2 : 0);

		put_varint(b, TAG(6, WT_LEN));
		put_varint(b, body);
		put_varint(b, TAG(2, WT_VARINT));
		put_varint(b, (uint64_t)te->legacy_phase);
		put_varint(b, TAG(6, WT_VARINT));
		put_varint(b, te->flow);
		if (te->legacy_phase == 'f') {
			put_varint(b, TAG(12, WT_VARINT));
			put_varint(b, 1);
		}
	} else {
		put_varint(b, TAG(9, WT_VARINT));
		put_varint(b, (uint64_t)te->type);
	}
	if (te->name) {
		if ((err = intern_str(w, seq, PFK_NAME, te->name, &iid)))
			return err;
		put_varint(b, TAG(10, WT_VARINT));
		put_varint(b, iid);
	}
	if (te->category) {
		if ((err = intern_str(w, seq, PFK_CAT, te->category, &iid)))
			return err;
		put_varint(b, TAG(3, WT_VARINT));
		put_varint(b, iid);
	}
	if (te->track) {
		put_varint(b, TAG(11, WT_VARINT));
		put_varint(b, te->track);
	}
	if (te->info) {
		if ((err = intern_loc(w, seq, te->name, te->info, &iid)))
			return err;
		put_varint(b, TAG(34, WT_VARINT));
		put_varint(b, iid);
	}
	if (te->flow_field) {
		put_varint(b, TAG(te->flow_field, WT_I64));
		put_fixed64(b, te->flow);
	}
	if (te->counter) {
		const struct ps_arg *a = te->counter;

		if (a->type == PS_ARG_DOUBLE) {
			uint64_t bits;

			memcpy(&bits, &a->v.d, 8);
			put_varint(b, TAG(44, WT_I64));
			put_fixed64(b, bits);
		} else {
			int64_t v = a->type == PS_ARG_INT    ? a->v.i
				    : a->type == PS_ARG_BOOL ? a->v.b
							     : (int64_t)a->v.u;

			put_varint(b, TAG(30, WT_VARINT));
			put_varint(b, (uint64_t)v);
		}
	}
	for (size_t i = 0; i < te->nargs; i++)
		if ((err = put_annotation(w, seq, &te->args[i])))
			return err;

	/* Time: a delta on the incremental clock unless it would go back. */
	if (incr) {
		if (ts >= seq->clock) {
			tsval = ts - seq->clock;
			seq->clock = ts;
		} else {
			abs_clock = 1;
		}
	}
	plen = 1 + vlen(tsval) + 1 + vlen(seq->id) + 1 + vlen(b->len) + b->len;
	if (w->in.len)
		plen += 1 + vlen(w->in.len) + w->in.len;
	if (abs_clock)
		plen += 3;
	if ((err = buf_reserve(&w->out, plen + HDR)))
		return err;
	put_varint(&w->out, TAG(1, WT_LEN));
	put_varint(&w->out, plen);
	put_varint(&w->out, TAG(8, WT_VARINT));
	put_varint(&w->out, tsval);
	put_varint(&w->out, TAG(10, WT_VARINT));
	put_varint(&w->out, seq->id);
	put_varint(&w->out, TAG(11, WT_LEN));
	put_varint(&w->out, b->len);
	put_bytes(&w->out, b->p, b->len);
	if (w->in.len) {
		put_varint(&w->out, TAG(12, WT_LEN));
		put_varint(&w->out, w->in.len);
		put_bytes(&w->out, w->in.p, w->in.len);
	}
	if (abs_clock) {
		put_varint(&w->out, TAG(58, WT_VARINT));
		put_varint(&w->out, PFTW_CLOCK_MONOTONIC);
	}
	if (w->out.len >= PF_OUT_FLUSH)
		return out_drain(w);
	return 0;
}

/* ---- deferred ends of COMPLETE events ---------------------------------- */

static int pend_push(struct pf_thread *th, uint64_t end, const char *name,
		     const char *cat)
{
	struct pf_pend e = {end, name ? strdup(name) : NULL,
			    cat ? strdup(cat) : NULL};
	size_t i;

	if ((name && !e.name) || (cat && !e.cat))
		goto nomem;
	if (th->npend == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 16;
		struct pf_pend *p = realloc(th->pend, cap * sizeof(*p));

		if (!p)
			goto nomem;
		th->pend = p;
		th->cap = cap;
	}
	for (i = th->npend++; i && th->pend[(i - 1) / 2].end > end;
	     i = (i - 1) / 2)
		th->pend[i] = th->pend[(i - 1) / 2];
	th->pend[i] = e;
	return 0;
nomem:
	free(e.name);
	free(e.cat);
	return ps_err_detail(PS_ERR_NOMEM,
			     "out of memory deferring a span end");
}

static struct pf_pend pend_pop(struct pf_thread *th)
{
	struct pf_pend top = th->pend[0], last = th->pend[--th->npend];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < th->npend) {
		if (c + 1 < th->npend && th->pend[c + 1].end < th->pend[c].end)
			c++;
		if (th->pend[c].end >= last.end)
			break;
		th->pend[i] = th->pend[c];
		i = c;
	}
	if (th->npend)
		th->pend[i] = last;
	return top;
}

/* Write the deferred ends at or before @ts (all with @ts == UINT64_MAX):
 * children end before their parents since they end earlier. */
static int pend_flush(struct pf_writer *w, struct pf_thread *th, uint64_t ts)
{
	struct pf_te te = {.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END};

	while (th->npend && th->pend[0].end <= ts) {
		struct pf_pend p = pend_pop(th);
		int err;

		te.name = p.name;
		te.category = p.cat;
		err = emit_event(w, &th->seq, 1, p.end, &te);
		free(p.name);
		free(p.cat);
		if (err)
			return err;
	}
	return 0;
}

/* Close the open zero-length slices (they are the innermost). */
static int zero_flush(struct pf_writer *w, struct pf_thread *th)
{
	struct pf_te te = {.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END};

	for (; th->nzero; th->nzero--) {
		int err = emit_event(w, &th->seq, 1, th->zero_ts, &te);

		if (err)
			return err;
	}
	return 0;
}

/* Write the ends that trace_processor would apply before @ev, the way its
 * slice tracker treats JSON "X" events: a slice ending at or before a new
 * slice, instant or end is closed first, except that zero-length slices
 * and instants at one time stack.  A flow event binds to whatever is still
 * open at its time, so ends at its very time stay after it. */
static int close_before(struct pf_writer *w, struct pf_thread *th,
			const struct ps_event *ev)
{
	int zero = (ev->type == PS_EV_COMPLETE && !ev->dur) ||
		   (ev->type == PS_EV_INSTANT && ev->scope == PS_SCOPE_THREAD);
	int flow = ev->type == PS_EV_FLOW_BEGIN ||
		   ev->type == PS_EV_FLOW_STEP || ev->type == PS_EV_FLOW_END;
	int err = 0;

	if (th->nzero && (th->zero_ts < ev->ts || (!zero && !flow)))
		err = zero_flush(w, th);
	if (flow)
		return err || !th->npend || !ev->ts
			   ? err
			   : pend_flush(w, th, ev->ts - 1);
	if (!err && th->npend)
		err = pend_flush(w, th, ev->ts);
	return err;
}

/* ---- ops --------------------------------------------------------------- */

static int pf_process(struct ps_writer *base, uint64_t pid, const char *name)
{
	struct pf_writer *w = (struct pf_writer *)base;
	uint64_t uuid;

	return process_track(w, pid, name ? name : "", &uuid);
}

static int pf_thread_name(struct ps_writer *base, uint64_t pid, uint64_t tid,
			  const char *name)
{
	struct pf_writer *w = (struct pf_writer *)base;
	struct pf_thread *th = thread_get(w, pid, tid);

	if (!th)
		return PS_ERR_NOMEM;
	return thread_describe(w, th, name ? name : "");
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

static int pf_meta(struct ps_writer *base, const char *key, const char *value)
{
	struct pf_writer *w = (struct pf_writer *)base;

	if (w->nmeta == w->metacap) {
		size_t cap = w->metacap ? w->metacap * 2 : 8;
		struct pf_meta *m = realloc(w->metas, cap * sizeof(*m));

		if (!m)
			return ps_err_detail(PS_ERR_NOMEM,
					     "out of memory for metadata");
		w->metas = m;
		w->metacap = cap;
	}
	w->metas[w->nmeta].key = dup_str(key);
	w->metas[w->nmeta].value = dup_str(value);
	if (!w->metas[w->nmeta].key || !w->metas[w->nmeta].value) {
		free(w->metas[w->nmeta].key);
		free(w->metas[w->nmeta].value);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for metadata");
	}
	w->nmeta++;
	return 0;
}

static int pf_counter(struct pf_writer *w, struct pf_thread *th,
		      const struct ps_event *ev)
{
	struct pf_te te = {.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER};
	const char *name = ev->name ? ev->name : "counter";

	int err;

	/* Describe every series first, so that the values follow each
	 * other and the reader joins them into one event again. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ev->nargs; i++) {
			const struct ps_arg *a = &ev->args[i];

			if (a->type == PS_ARG_NULL || a->type == PS_ARG_STRING)
				continue; /* not a number: nothing to plot */
			err = counter_track(w, ev->pid, name,
					    a->name ? a->name : "", &te.track);
			if (!err && pass) {
				te.counter = a;
				err = emit_event(w, &th->seq, 1, ev->ts, &te);
			}
			if (err)
				return err;
		}
	}
	return 0;
}

static int pf_event(struct ps_writer *base, const struct ps_event *ev)
{
	struct pf_writer *w = (struct pf_writer *)base;
	struct pf_te te = {0};
	struct pf_thread *th;
	int err = 0;

	if (!ev)
		return ps_err_detail(PS_ERR_INVAL,
				     "perfetto writer: NULL event");
	th = thread_get(w, ev->pid, ev->tid);
	if (!th)
		return PS_ERR_NOMEM;
	if (!th->started && (err = thread_start(w, th, ev->ts)))
		return err;
	if ((th->npend || th->nzero) && (err = close_before(w, th, ev)))
		return err;
	if (!w->any_event || ev->ts < w->min_ts)
		w->min_ts = ev->ts;
	w->any_event = 1;

	te.name = ev->name;
	te.category = ev->category;
	te.args = ev->args;
	te.nargs = ev->nargs;
	switch (ev->type) {
	case PS_EV_BEGIN:
	case PS_EV_COMPLETE:
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
		te.info = ev->info;
		err = emit_event(w, &th->seq, 1, ev->ts, &te);
		if (err || ev->type != PS_EV_COMPLETE)
			return err;
		if (!ev->dur) {
			th->zero_ts = ev->ts;
			th->nzero++;
			return 0;
		}
		return pend_push(th, ev->ts + ev->dur, ev->name, ev->category);
	case PS_EV_END:
		/* Perfetto matches an end to the open slice; no name. */
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		te.name = te.category = NULL;
		return emit_event(w, &th->seq, 1, ev->ts, &te);
	case PS_EV_INSTANT:
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_INSTANT;
		if (ev->scope == PS_SCOPE_PROCESS) {
			err = process_track(w, ev->pid, NULL, &te.track);
		} else if (ev->scope == PS_SCOPE_GLOBAL) {
			if (!w->global_uuid)
				err = global_track(w, PFTW_GLOBAL_TRACK,
						   &w->global_uuid);
			te.track = w->global_uuid;
		}
		if (err)
			return err;
		return emit_event(w, &th->seq, 1, ev->ts, &te);
	case PS_EV_COUNTER:
		return pf_counter(w, th, ev);
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
	case PS_EV_FLOW_END:
		/* Chrome's legacy flow events: trace_processor binds them to
		 * the enclosing slice, as it does JSON's, and adds no slice
		 * (an instant carrying flow_ids would be one). */
		te.legacy_phase = ev->type == PS_EV_FLOW_BEGIN	? 's'
				  : ev->type == PS_EV_FLOW_STEP ? 't'
								: 'f';
		te.flow = ev->flow_id;
		te.info = NULL;
		return emit_event(w, &th->seq, 1, ev->ts, &te);
	}
	return ps_err_detail(PS_ERR_INVAL,
			     "perfetto writer: unknown event "
			     "type %d",
			     (int)ev->type);
}

/* All metadata in one chrome_events packet on sequence 1: trace_processor
 * puts ChromeEventBundle.metadata in its metadata table, where a slice per
 * key would be noise among the program's own slices. */
static int emit_metadata(struct pf_writer *w)
{
	Pftrace__TracePacket pkt;
	Pftrace__ChromeEventBundle bundle = PFTRACE__CHROME_EVENT_BUNDLE__INIT;
	Pftrace__ChromeMetadata *md, **mp;
	int err;

	md = calloc(w->nmeta, sizeof(*md));
	mp = calloc(w->nmeta, sizeof(*mp));
	if (!md || !mp) {
		free(md);
		free(mp);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for metadata");
	}
	for (size_t i = 0; i < w->nmeta; i++) {
		pftrace__chrome_metadata__init(&md[i]);
		md[i].name = w->metas[i].key;
		md[i].value_case = PFTRACE__CHROME_METADATA__VALUE_STRING_VALUE;
		md[i].string_value = w->metas[i].value;
		mp[i] = &md[i];
	}
	bundle.n_metadata = w->nmeta;
	bundle.metadata = mp;
	pkt_init(&pkt, PFTW_SEQ_GLOBAL);
	pkt.has_timestamp = 1;
	pkt.timestamp = w->any_event ? w->min_ts : 0;
	pkt.data_case = PFTRACE__TRACE_PACKET__DATA_CHROME_EVENTS;
	pkt.chrome_events = &bundle;
	err = emit_msg(w, &pkt);
	free(md);
	free(mp);
	return err;
}

/* Sample packets go to the sink beside the rest (order between
 * sequences does not matter to a reader). */
static int samples_drain(struct pf_writer *w)
{
	const uint8_t *p;
	size_t n;
	int err;

	if (!w->samples || !(p = pfs_bytes(w->samples, &n)) || !n)
		return 0;
	err = out_drain(w);
	if (!err)
		err = ps_sink_write(w->base.sink, p, n);
	pfs_clear(w->samples);
	return err;
}

static int pf_sample(struct ps_writer *base, const struct ps_sample *smp)
{
	struct pf_writer *w = (struct pf_writer *)base;
	size_t n;
	int err;

	if (!w->samples && (err = pfs_new(w->next_seq++, &w->samples)))
		return err;
	err = pfs_add(w->samples, smp);
	if (!err && pfs_bytes(w->samples, &n) && n > PF_OUT_FLUSH)
		err = samples_drain(w);
	return err;
}

static int pf_flush(struct ps_writer *base)
{
	struct pf_writer *w = (struct pf_writer *)base;
	int err;

	if ((err = samples_drain(w)))
		return err;

	for (size_t i = 0; i < w->threads.cap; i++) {
		struct pf_thread *th;

		if (!w->threads.e[i].key)
			continue;
		th = (struct pf_thread *)(uintptr_t)w->threads.e[i].val;
		if (th && th->nzero && (err = zero_flush(w, th)))
			return err;
		if (th && th->npend && (err = pend_flush(w, th, UINT64_MAX)))
			return err;
	}
	if (w->nmeta && (err = emit_metadata(w)))
		return err;
	return out_drain(w);
}

static void pf_destroy(struct ps_writer *base)
{
	struct pf_writer *w = (struct pf_writer *)base;

	if (!w)
		return;
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct pf_thread *th;

		if (!w->threads.e[i].key)
			continue;
		th = (struct pf_thread *)(uintptr_t)w->threads.e[i].val;
		if (!th)
			continue;
		seq_free(&th->seq);
		for (size_t k = 0; k < th->npend; k++) {
			free(th->pend[k].name);
			free(th->pend[k].cat);
		}
		free(th->pend);
		free(th);
	}
	map_free(&w->threads);
	map_free(&w->procs);
	map_free(&w->counters);
	for (int k = 0; k < PFK_COUNT; k++)
		map_free(&w->iids[k]);
	seq_free(&w->global);
	for (size_t i = 0; i < w->nmeta; i++) {
		free(w->metas[i].key);
		free(w->metas[i].value);
	}
	free(w->metas);
	pfs_free(w->samples);
	free(w->out.p);
	free(w->ev.p);
	free(w->in.p);
	free(w->key.p);
	free(w);
}

static const struct ps_writer_ops pf_ops = {
    .name = "perfetto",
    .process = pf_process,
    .thread = pf_thread_name,
    .meta = pf_meta,
    .event = pf_event,
    .flush = pf_flush,
    .destroy = pf_destroy,
    .sample = pf_sample,
};

int pftw_writer_new(struct ps_sink *sink, struct ps_writer **out)
{
	struct pf_writer *w;
	int err;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "pftw_writer_new needs a sink and an out "
				     "pointer");
	w = calloc(1, sizeof(*w));
	if (!w)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the Perfetto writer");
	w->base.ops = &pf_ops;
	w->base.sink = sink;
	w->next_uuid = 1;
	w->global.id = PFTW_SEQ_GLOBAL;
	w->next_seq = PFTW_SEQ_GLOBAL + 1;
	err = emit_seq_start(w, PFTW_SEQ_GLOBAL, PFTW_CLOCK_MONOTONIC, 0);
	if (!err)
		err = emit_clock(w, PFTW_SEQ_GLOBAL, 0, 0);
	if (err) {
		pf_destroy(&w->base);
		return err;
	}
	*out = &w->base;
	return 0;
}
