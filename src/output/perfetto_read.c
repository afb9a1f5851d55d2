/* SPDX-License-Identifier: MIT */
/* Perfetto protobuf reader: a Trace in memory → ptscope events.
 *
 * The Trace's top-level packet fields are walked one at a time (a large
 * trace is never unpacked whole); each TracePacket is unpacked with
 * protobuf-c into an arena and interpreted with its sequence's state:
 * interned data, TracePacketDefaults, sequence-scoped (incremental) clocks
 * (perfetto_read_state.c).  Tracks map to (pid, tid) through their
 * descriptors.  The conventions of our writer (metadata track, counter
 * groups, flow instants, SourceLocation fields) are undone
 * (perfetto_read_event.c); other producers' TrackEvent traces read as well
 * as they map.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto.h"
#include "src/output/perfetto_reader.h"

/* protobuf-c's name for "the packet has a sequence id" */
#define SEQ_ID_SET                                                             \
	PFTRACE__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID

/* ---- one packet --------------------------------------------------------- */

static int read_packet(struct pfrd_reader *r, const Pftrace__TracePacket *p)
{
	uint32_t seq = p->optional_trusted_packet_sequence_id_case == SEQ_ID_SET
			   ? p->trusted_packet_sequence_id
			   : 0;
	struct pfrd_seq *s = pfrd_seq_get(r, seq);
	int err;

	if (!s)
		return PS_ERR_NOMEM;
	if (p->data_case != PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT ||
	    p->track_event->type != PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER) {
		if ((err = pfrd_cnt_flush(r)))
			return err;
	}
	if ((p->has_sequence_flags &&
	     (p->sequence_flags &
	      PFTRACE__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED)) ||
	    (p->has_incremental_state_cleared && p->incremental_state_cleared))
		pfrd_seq_reset(s);
	if (p->trace_packet_defaults) {
		const Pftrace__TracePacketDefaults *d =
		    p->trace_packet_defaults;

		s->has_clock = d->has_timestamp_clock_id;
		s->clock = d->timestamp_clock_id;
		s->track = d->track_event_defaults &&
				   d->track_event_defaults->has_track_uuid
			       ? d->track_event_defaults->track_uuid
			       : 0;
	}
	if (p->interned_data &&
	    (err = pfrd_read_interned(r, s, p->interned_data)))
		return err;
	switch (p->data_case) {
	case PFTRACE__TRACE_PACKET__DATA_CLOCK_SNAPSHOT:
		return pfrd_read_clock(r, seq ? s : NULL, p->clock_snapshot);
	case PFTRACE__TRACE_PACKET__DATA_TRACK_DESCRIPTOR:
		return pfrd_read_track(r, p->track_descriptor);
	case PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT:
		return pfrd_read_event(r, seq, s, p);
	case PFTRACE__TRACE_PACKET__DATA_CHROME_EVENTS:
		return pfrd_read_chrome_metadata(r, p->chrome_events);
	case PFTRACE__TRACE_PACKET__DATA_PROCESS_TREE:
		for (size_t i = 0; i < p->process_tree->n_processes; i++) {
			const Pftrace__ProcessTree__Process *pr =
			    p->process_tree->processes[i];

			if (pr->has_pid && pr->has_ppid && pr->ppid > 0 &&
			    (err = ps_write_parent(r->dst, (uint32_t)pr->pid,
						   (uint32_t)pr->ppid)))
				return err;
		}
		return 0;
	default:
		return 0; /* other data sources: nothing for us */
	}
}

/* ---- an arena for protobuf-c, reset after every packet ----------------- */

struct pfrd_arena {
	uint8_t *buf; /* owned */
	size_t cap, used;
	void *big;   /* chain of blocks that did not fit (owned) */
	size_t want; /* bytes the last packet needed in all */
};

static void *arena_alloc(void *data, size_t size)
{
	struct pfrd_arena *a = data;
	void **blk;

	size = (size + 15) & ~(size_t)15;
	a->want += size;
	if (size <= a->cap - a->used) {
		void *p = a->buf + a->used;

		a->used += size;
		return p;
	}
	blk = malloc(sizeof(void *) * 2 + size);
	if (!blk)
		return NULL;
	blk[0] = a->big;
	a->big = blk;
	return blk + 2;
}

static void arena_free(void *data, void *p)
{
	/* Everything goes at once in arena_reset. */
}

static void arena_reset(struct pfrd_arena *a)
{
	while (a->big) {
		void **blk = a->big;

		a->big = blk[0];
		free(blk);
	}
	if (a->want > a->cap) {
		/* Grow so the next packet like this one fits. */
		size_t cap = a->cap ? a->cap : 4096;
		uint8_t *p;

		while (cap < a->want)
			cap *= 2;
		p = malloc(cap);
		if (p) {
			free(a->buf);
			a->buf = p;
			a->cap = cap;
		}
	}
	a->used = a->want = 0;
}

static void arena_fini(struct pfrd_arena *a)
{
	arena_reset(a);
	free(a->buf);
}

/* ---- the Trace framing ------------------------------------------------- */

/* Reads a varint at *off; 0, or PS_ERR_TRUNCATED / PS_ERR_FORMAT. */
static int get_varint(const uint8_t *d, size_t len, size_t *off, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= len)
			return PS_ERR_TRUNCATED;
		b = d[(*off)++];
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return PS_ERR_FORMAT;
}

/* Skips one field's value of wire type @wt at *off. */
static int skip_value(const uint8_t *d, size_t len, size_t *off, unsigned wt)
{
	uint64_t n;
	int err;

	switch (wt) {
	case 0:
		return get_varint(d, len, off, &n);
	case 1:
		n = 8;
		break;
	case 2:
		if ((err = get_varint(d, len, off, &n)))
			return err;
		break;
	case 5:
		n = 4;
		break;
	default:
		return PS_ERR_FORMAT;
	}
	if (n > len - *off)
		return PS_ERR_TRUNCATED;
	*off += (size_t)n;
	return 0;
}

static int frame_error(int err, size_t off)
{
	if (err == PS_ERR_TRUNCATED)
		return ps_err_detail(err,
				     "Perfetto trace is truncated: the record "
				     "at byte %zu runs past the end of the "
				     "file",
				     off);
	return ps_err_detail(PS_ERR_FORMAT,
			     "Perfetto trace is corrupt at byte %zu: not a "
			     "valid protobuf field",
			     off);
}

int pftw_read(const uint8_t *data, size_t len, struct ps_writer *dst)
{
	struct pfrd_reader r;
	struct pfrd_arena arena = {0};
	ProtobufCAllocator alloc = {arena_alloc, arena_free, &arena};
	size_t off = 0;
	int err = 0;

	if ((!data && len) || !dst)
		return ps_err_detail(PS_ERR_INVAL,
				     "pftw_read needs trace bytes and a "
				     "destination writer");
	memset(&r, 0, sizeof(r));
	r.dst = dst;
	while (!err && off < len) {
		size_t start = off;
		uint64_t tag, n;
		Pftrace__TracePacket *p;

		if ((err = get_varint(data, len, &off, &tag))) {
			err = frame_error(err, start);
			break;
		}
		if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
			err = frame_error(PS_ERR_FORMAT, start);
			break;
		}
		if (tag != ((1u << 3) | 2)) {
			/* Not a packet: a field a newer Trace may have. */
			if ((err = skip_value(data, len, &off, tag & 7)))
				err = frame_error(err, start);
			continue;
		}
		if ((err = get_varint(data, len, &off, &n))) {
			err = frame_error(err, start);
			break;
		}
		if (n > len - off) {
			err = ps_err_detail(PS_ERR_TRUNCATED,
					    "Perfetto trace is truncated: the "
					    "packet at byte %zu needs %llu "
					    "bytes, %zu remain",
					    start, (unsigned long long)n,
					    len - off);
			break;
		}
		p = pftrace__trace_packet__unpack(&alloc, (size_t)n,
						  data + off);
		if (!p) {
			arena_reset(&arena);
			err = ps_err_detail(PS_ERR_FORMAT,
					    "Perfetto trace is corrupt: the "
					    "packet at byte %zu is not a valid "
					    "TracePacket",
					    start);
			break;
		}
		r.off = start;
		err = read_packet(&r, p);
		arena_reset(&arena);
		off += (size_t)n;
	}
	if (!err)
		err = pfrd_cnt_flush(&r);
	pfrd_map_clear(&r.seqs, pfrd_seq_free);
	pfrd_map_clear(&r.tracks, pfrd_track_free);
	pfrd_map_clear(&r.flows, NULL);
	free(r.args);
	arena_fini(&arena);
	return err;
}

/* Walk the fields of a message prefix; 1 if every complete one is sound
 * and at least one is a TracePacket field we know. */
static int looks_like_packet(const uint8_t *d, size_t len)
{
	size_t off = 0;
	int known = 0;

	while (off < len) {
		uint64_t tag;
		unsigned field;

		if (get_varint(d, len, &off, &tag))
			return known; /* cut by the probe window */
		field = (unsigned)(tag >> 3);
		if (!field || (tag & 7) == 3 || (tag & 7) == 4 || (tag & 7) > 5)
			return 0;
		if (field == 6 || field == 8 || field == 10 || field == 11 ||
		    field == 12 || field == 13 || field == 58 || field == 59 ||
		    field == 60)
			known = 1;
		if (skip_value(d, len, &off, tag & 7))
			return known;
	}
	return known;
}

int pftw_probe(const uint8_t *data, size_t len)
{
	size_t off = 1;
	uint64_t n;

	if (!data || len < 2 || data[0] != ((1u << 3) | 2))
		return 0;
	if (get_varint(data, len, &off, &n) || n == 0)
		return 0;
	return looks_like_packet(data + off,
				 n < len - off ? (size_t)n : len - off);
}
