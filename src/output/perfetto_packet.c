/* SPDX-License-Identifier: MIT */
/* The Perfetto writer's protobuf encoding (see perfetto_writer.h).
 *
 * Event packets are encoded by hand into a reusable buffer (no allocation
 * per event): a TrackEvent with its interned name, category and source
 * location, its debug annotations, and the InternedData that defines
 * what the sequence has not seen yet; the time is a delta on the
 * sequence's incremental clock.  The rare packets (sequence defaults,
 * clock snapshots, track descriptors, the metadata bundle) are built as
 * protobuf-c messages and packed.  docs/format-perfetto.md lists them.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto_writer.h"
#include "src/output/sink.h"

/* protobuf-c's name for "the packet has a sequence id" */
#define SEQ_ID_SET                                                             \
	PFTRACE__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID

/* ---- buffers and the rare packets ---------------------------------------- */

int pftw_buf_grow(struct pftw_buf *b, size_t need)
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

int pftw_out_drain(struct pftw_writer *w)
{
	int err;

	if (!w->out.len)
		return 0;
	err = ps_sink_write(w->base.sink, w->out.p, w->out.len);
	w->out.len = 0;
	return err;
}

/* Append one rare packet built with protobuf-c. */
static int emit_msg(struct pftw_writer *w, Pftrace__TracePacket *pkt)
{
	size_t n = pftrace__trace_packet__get_packed_size(pkt);
	int err = pftw_buf_reserve(&w->out, n + PFTW_HDR);

	if (err)
		return err;
	pftw_put_varint(&w->out, PFTW_TAG(1, PFTW_WT_LEN));
	pftw_put_varint(&w->out, n);
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
int pftw_emit_seq_start(struct pftw_writer *w, uint32_t seq, uint32_t clock,
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

/* A clock snapshot on @seq (perfetto_writer.h). */
int pftw_emit_clock(struct pftw_writer *w, uint32_t seq, uint64_t ts, int incr)
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

int pftw_emit_track(struct pftw_writer *w, Pftrace__TrackDescriptor *td)
{
	Pftrace__TracePacket pkt;

	pkt_init(&pkt, PFTW_SEQ_GLOBAL);
	pkt.data_case = PFTRACE__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	pkt.track_descriptor = td;
	return emit_msg(w, &pkt);
}

/* ---- InternedData entries ---------------------------------------------- */

/* Field numbers of InternedData's lists, by kind. */
static const uint32_t interned_field[PFTW_IID_KINDS] = {2, 1, 3, 4};

/* The iid of string @s of @kind; defines it in the packet's InternedData
 * (w->in) unless @seq already has it. */
static int intern_str(struct pftw_writer *w, struct pftw_seq *seq,
		      enum pftw_kind kind, const char *s, uint64_t *iid)
{
	size_t n = strlen(s);
	size_t body;
	int err = pftw_iid(w, seq, kind, s, n, iid);

	if (err <= 0)
		return err;
	body = 1 + pftw_vlen(*iid) + 1 + pftw_vlen(n) + n;
	if ((err = pftw_buf_reserve(&w->in, body + PFTW_HDR)))
		return err;
	pftw_put_varint(&w->in, PFTW_TAG(interned_field[kind], PFTW_WT_LEN));
	pftw_put_varint(&w->in, body);
	pftw_put_varint(&w->in, PFTW_TAG(1, PFTW_WT_VARINT));
	pftw_put_varint(&w->in, *iid);
	pftw_put_varint(&w->in, PFTW_TAG(2, PFTW_WT_LEN));
	pftw_put_varint(&w->in, n);
	pftw_put_bytes(&w->in, s, n);
	return 0;
}

static size_t str_field_len(uint32_t field, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return s ? pftw_vlen(PFTW_TAG(field, PFTW_WT_LEN)) + pftw_vlen(n) + n
		 : 0;
}

static void put_str_field(struct pftw_buf *b, uint32_t field, const char *s)
{
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	pftw_put_varint(b, PFTW_TAG(field, PFTW_WT_LEN));
	pftw_put_varint(b, n);
	pftw_put_bytes(b, s, n);
}

/* The iid of the SourceLocation (function @name + @info). */
static int intern_loc(struct pftw_writer *w, struct pftw_seq *seq,
		      const char *name, const struct ps_span_info *info,
		      uint64_t *iid)
{
	const char *parts[3] = {name, info->module, info->file};
	size_t body;
	int err;

	/* Key: the three strings (0xff marks a NULL one), address, line. */
	w->key.len = 0;
	for (int i = 0; i < 3; i++) {
		size_t n = parts[i] ? strlen(parts[i]) + 1 : 1;

		if ((err = pftw_buf_reserve(&w->key, n + 12)))
			return err;
		if (parts[i])
			pftw_put_bytes(&w->key, parts[i], n);
		else
			pftw_put_bytes(&w->key, "\xff", 1);
	}
	pftw_put_bytes(&w->key, &info->address, 8);
	pftw_put_bytes(&w->key, &info->line, 4);
	err = pftw_iid(w, seq, PFTW_IID_LOC, w->key.p, w->key.len, iid);
	if (err <= 0)
		return err;
	body = 1 + pftw_vlen(*iid) + str_field_len(2, info->file) +
	       str_field_len(3, name) + str_field_len(5001, info->module);
	if (info->line)
		body += 1 + pftw_vlen(info->line);
	if (info->address)
		body += pftw_vlen(PFTW_TAG(5002, PFTW_WT_VARINT)) +
			pftw_vlen(info->address);
	if ((err = pftw_buf_reserve(&w->in, body + PFTW_HDR)))
		return err;
	pftw_put_varint(&w->in,
			PFTW_TAG(interned_field[PFTW_IID_LOC], PFTW_WT_LEN));
	pftw_put_varint(&w->in, body);
	pftw_put_varint(&w->in, PFTW_TAG(1, PFTW_WT_VARINT));
	pftw_put_varint(&w->in, *iid);
	put_str_field(&w->in, 2, info->file);
	put_str_field(&w->in, 3, name);
	if (info->line) {
		pftw_put_varint(&w->in, PFTW_TAG(4, PFTW_WT_VARINT));
		pftw_put_varint(&w->in, info->line);
	}
	put_str_field(&w->in, 5001, info->module);
	if (info->address) {
		pftw_put_varint(&w->in, PFTW_TAG(5002, PFTW_WT_VARINT));
		pftw_put_varint(&w->in, info->address);
	}
	return 0;
}

/* ---- TrackEvent packets ------------------------------------------------ */

static int put_annotation(struct pftw_writer *w, struct pftw_seq *seq,
			  const struct ps_arg *a)
{
	uint64_t iid;
	size_t body, slen = 0;
	int err =
	    intern_str(w, seq, PFTW_IID_ANNOT, a->name ? a->name : "", &iid);

	if (err)
		return err;
	body = 1 + pftw_vlen(iid);
	switch (a->type) {
	case PS_ARG_NULL:
		break;
	case PS_ARG_BOOL:
		body += 2;
		break;
	case PS_ARG_INT:
		body += 1 + pftw_vlen((uint64_t)a->v.i);
		break;
	case PS_ARG_UINT:
	case PS_ARG_POINTER:
		body += 1 + pftw_vlen(a->v.u);
		break;
	case PS_ARG_DOUBLE:
		body += 9;
		break;
	case PS_ARG_STRING:
		slen = a->v.s ? strlen(a->v.s) : 0;
		body += 1 + pftw_vlen(slen) + slen;
		break;
	}
	if ((err = pftw_buf_reserve(&w->ev, body + PFTW_HDR)))
		return err;
	pftw_put_varint(&w->ev, PFTW_TAG(4, PFTW_WT_LEN));
	pftw_put_varint(&w->ev, body);
	pftw_put_varint(&w->ev, PFTW_TAG(1, PFTW_WT_VARINT));
	pftw_put_varint(&w->ev, iid);
	switch (a->type) {
	case PS_ARG_NULL:
		break;
	case PS_ARG_BOOL:
		pftw_put_varint(&w->ev, PFTW_TAG(2, PFTW_WT_VARINT));
		pftw_put_varint(&w->ev, a->v.b ? 1 : 0);
		break;
	case PS_ARG_INT:
		pftw_put_varint(&w->ev, PFTW_TAG(4, PFTW_WT_VARINT));
		pftw_put_varint(&w->ev, (uint64_t)a->v.i);
		break;
	case PS_ARG_UINT:
		pftw_put_varint(&w->ev, PFTW_TAG(3, PFTW_WT_VARINT));
		pftw_put_varint(&w->ev, a->v.u);
		break;
	case PS_ARG_POINTER:
		pftw_put_varint(&w->ev, PFTW_TAG(7, PFTW_WT_VARINT));
		pftw_put_varint(&w->ev, a->v.u);
		break;
	case PS_ARG_DOUBLE: {
		uint64_t bits;

		memcpy(&bits, &a->v.d, 8);
		pftw_put_varint(&w->ev, PFTW_TAG(5, PFTW_WT_I64));
		pftw_put_fixed64(&w->ev, bits);
		break;
	}
	case PS_ARG_STRING:
		pftw_put_varint(&w->ev, PFTW_TAG(6, PFTW_WT_LEN));
		pftw_put_varint(&w->ev, slen);
		pftw_put_bytes(&w->ev, a->v.s, slen);
		break;
	}
	return 0;
}

/* Encode @te as a TrackEvent packet (perfetto_writer.h). */
int pftw_emit_event(struct pftw_writer *w, struct pftw_seq *seq, int incr,
		    uint64_t ts, const struct pftw_te *te)
{
	struct pftw_buf *b = &w->ev;
	uint64_t iid, tsval = ts;
	int abs_clock = 0;
	size_t plen;
	int err;

	b->len = 0;
	w->in.len = 0;
	if ((err = pftw_buf_reserve(b, 64)))
		return err;
	if (te->legacy_phase) {
		/* LegacyEvent { phase, unscoped_id, bind_to_enclosing } */
		size_t body = 2 + 1 + pftw_vlen(te->flow) +
			      (te->legacy_phase == 'f' ? 2 : 0);

		pftw_put_varint(b, PFTW_TAG(6, PFTW_WT_LEN));
		pftw_put_varint(b, body);
		pftw_put_varint(b, PFTW_TAG(2, PFTW_WT_VARINT));
		pftw_put_varint(b, (uint64_t)te->legacy_phase);
		pftw_put_varint(b, PFTW_TAG(6, PFTW_WT_VARINT));
		pftw_put_varint(b, te->flow);
		if (te->legacy_phase == 'f') {
			pftw_put_varint(b, PFTW_TAG(12, PFTW_WT_VARINT));
			pftw_put_varint(b, 1);
		}
	} else {
		pftw_put_varint(b, PFTW_TAG(9, PFTW_WT_VARINT));
		pftw_put_varint(b, (uint64_t)te->type);
	}
	if (te->name) {
		if ((err = intern_str(w, seq, PFTW_IID_NAME, te->name, &iid)))
			return err;
		pftw_put_varint(b, PFTW_TAG(10, PFTW_WT_VARINT));
		pftw_put_varint(b, iid);
	}
	if (te->category) {
		if ((err =
			 intern_str(w, seq, PFTW_IID_CAT, te->category, &iid)))
			return err;
		pftw_put_varint(b, PFTW_TAG(3, PFTW_WT_VARINT));
		pftw_put_varint(b, iid);
	}
	if (te->track) {
		pftw_put_varint(b, PFTW_TAG(11, PFTW_WT_VARINT));
		pftw_put_varint(b, te->track);
	}
	if (te->info) {
		if ((err = intern_loc(w, seq, te->name, te->info, &iid)))
			return err;
		pftw_put_varint(b, PFTW_TAG(34, PFTW_WT_VARINT));
		pftw_put_varint(b, iid);
	}
	if (te->flow_field) {
		pftw_put_varint(b, PFTW_TAG(te->flow_field, PFTW_WT_I64));
		pftw_put_fixed64(b, te->flow);
	}
	if (te->counter) {
		const struct ps_arg *a = te->counter;

		if (a->type == PS_ARG_DOUBLE) {
			uint64_t bits;

			memcpy(&bits, &a->v.d, 8);
			pftw_put_varint(b, PFTW_TAG(44, PFTW_WT_I64));
			pftw_put_fixed64(b, bits);
		} else {
			int64_t v = a->type == PS_ARG_INT    ? a->v.i
				    : a->type == PS_ARG_BOOL ? a->v.b
							     : (int64_t)a->v.u;

			pftw_put_varint(b, PFTW_TAG(30, PFTW_WT_VARINT));
			pftw_put_varint(b, (uint64_t)v);
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
	plen = 1 + pftw_vlen(tsval) + 1 + pftw_vlen(seq->id) + 1 +
	       pftw_vlen(b->len) + b->len;
	if (w->in.len)
		plen += 1 + pftw_vlen(w->in.len) + w->in.len;
	if (abs_clock)
		plen += 3;
	if ((err = pftw_buf_reserve(&w->out, plen + PFTW_HDR)))
		return err;
	pftw_put_varint(&w->out, PFTW_TAG(1, PFTW_WT_LEN));
	pftw_put_varint(&w->out, plen);
	pftw_put_varint(&w->out, PFTW_TAG(8, PFTW_WT_VARINT));
	pftw_put_varint(&w->out, tsval);
	pftw_put_varint(&w->out, PFTW_TAG(10, PFTW_WT_VARINT));
	pftw_put_varint(&w->out, seq->id);
	pftw_put_varint(&w->out, PFTW_TAG(11, PFTW_WT_LEN));
	pftw_put_varint(&w->out, b->len);
	pftw_put_bytes(&w->out, b->p, b->len);
	if (w->in.len) {
		pftw_put_varint(&w->out, PFTW_TAG(12, PFTW_WT_LEN));
		pftw_put_varint(&w->out, w->in.len);
		pftw_put_bytes(&w->out, w->in.p, w->in.len);
	}
	if (abs_clock) {
		pftw_put_varint(&w->out, PFTW_TAG(58, PFTW_WT_VARINT));
		pftw_put_varint(&w->out, PFTW_CLOCK_MONOTONIC);
	}
	if (w->out.len >= PFTW_OUT_FLUSH)
		return pftw_out_drain(w);
	return 0;
}

/* All metadata in one chrome_events packet on sequence 1: trace_processor
 * puts ChromeEventBundle.metadata in its metadata table, where a slice per
 * key would be noise among the program's own slices. */
int pftw_emit_metadata(struct pftw_writer *w)
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

int pftw_emit_tree(struct pftw_writer *w)
{
	Pftrace__TracePacket pkt;
	Pftrace__ProcessTree tree;
	int n = pft_msg(&w->tree, &tree), err;

	if (n <= 0)
		return n;
	pkt_init(&pkt, PFTW_SEQ_GLOBAL);
	pkt.has_timestamp = 1;
	pkt.timestamp = w->any_event ? w->min_ts : 0;
	pkt.data_case = PFTRACE__TRACE_PACKET__DATA_PROCESS_TREE;
	pkt.process_tree = &tree;
	err = emit_msg(w, &pkt);
	pft_msg_free(&tree);
	return err;
}
