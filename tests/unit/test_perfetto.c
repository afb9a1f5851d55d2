/* SPDX-License-Identifier: MIT */
/* Perfetto writer and reader: events → .pftrace bytes → events, compared
 * field by field; the wire conventions Perfetto needs; bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/perfetto.h"
#include "src/output/sink.h"
#include "tests/harness.h"
#include "tests/support.h"

/* protobuf-c's name for "the packet has a sequence id" */
#define SEQ_ID_SET                                                             \
	PFTRACE__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID

/* ---- helpers ----------------------------------------------------------- */

static struct ps_event mk(enum ps_event_type type, uint64_t pid, uint64_t tid,
			  uint64_t ts, const char *name)
{
	struct ps_event e;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.pid = pid;
	e.tid = tid;
	e.ts = ts;
	e.name = name;
	return e;
}

#define CHECK_EV(got, want)                                                    \
	do {                                                                   \
		int d_ = ts_event_diff((got), (want));                         \
		if (d_) {                                                      \
			harness_failf(__FILE__, __LINE__,                      \
				      "event differs (ts_event_diff line %d)", \
				      d_);                                     \
			goto out;                                              \
		}                                                              \
	} while (0)

/* ---- round trips ------------------------------------------------------- */

TEST(every_kind_and_arg_type_round_trips)
{
	struct ps_span_info info = {"/usr/bin/app", 0x401136, "app.c", 42};
	struct ps_span_info bare = {NULL, 0x1000, NULL, 0};
	struct ps_arg args[] = {
	    {.name = "b", .type = PS_ARG_BOOL, .v.b = 1},
	    {.name = "i", .type = PS_ARG_INT, .v.i = -123456789012ll},
	    {.name = "u", .type = PS_ARG_UINT, .v.u = 0xfedcba9876543210ull},
	    {.name = "d", .type = PS_ARG_DOUBLE, .v.d = -2.5e-7},
	    {.name = "s", .type = PS_ARG_STRING, .v.s = "hello \"world\""},
	    {.name = "p", .type = PS_ARG_POINTER, .v.u = 0x7ffd1234},
	    {.name = "n", .type = PS_ARG_NULL},
	};
	struct ps_arg cargs[] = {
	    {.name = "rss", .type = PS_ARG_INT, .v.i = 4096},
	    {.name = "load", .type = PS_ARG_DOUBLE, .v.d = 0.75},
	};
	struct ps_event in[12], want[16];
	size_t nin = 0, nwant = 0, len = 0;
	struct ts_recorder r;
	struct ps_writer *pw;
	uint8_t *data;

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	CHECK(pw->ops->meta(pw, "backend", "emulated") == 0);
	CHECK(pw->ops->process(pw, 100, "app") == 0);
	CHECK(pw->ops->thread(pw, 100, 101, "worker") == 0);

	in[nin] = mk(PS_EV_BEGIN, 100, 101, 1000, "main");
	in[nin].category = "fn";
	in[nin].info = &info;
	in[nin].args = args;
	in[nin++].nargs = 7;
	in[nin] = mk(PS_EV_BEGIN, 100, 101, 1010, "leaf");
	in[nin++].info = &bare;
	in[nin] = mk(PS_EV_END, 100, 101, 1020, NULL);
	in[nin].args = args + 2;
	in[nin++].nargs = 1;
	in[nin] = mk(PS_EV_COMPLETE, 100, 101, 1030, "whole");
	in[nin++].dur = 5;
	in[nin] = mk(PS_EV_INSTANT, 100, 101, 1040, "tick");
	in[nin++].scope = PS_SCOPE_THREAD;
	in[nin] = mk(PS_EV_INSTANT, 100, 101, 1041, "proc");
	in[nin++].scope = PS_SCOPE_PROCESS;
	in[nin] = mk(PS_EV_INSTANT, 100, 101, 1042, "world");
	in[nin].scope = PS_SCOPE_GLOBAL;
	in[nin].category = "sys";
	in[nin].args = args + 4;
	in[nin++].nargs = 1;
	in[nin] = mk(PS_EV_COUNTER, 100, 101, 1050, "mem");
	in[nin].args = cargs;
	in[nin++].nargs = 2;
	in[nin] = mk(PS_EV_FLOW_BEGIN, 100, 101, 1060, "req");
	in[nin++].flow_id = 77;
	in[nin] = mk(PS_EV_FLOW_STEP, 100, 101, 1061, "req");
	in[nin++].flow_id = 77;
	in[nin] = mk(PS_EV_FLOW_END, 100, 101, 1062, "req");
	in[nin++].flow_id = 77;
	in[nin++] = mk(PS_EV_END, 100, 101, 1100, NULL);
	for (size_t i = 0; i < nin; i++)
		CHECK(ps_write_event(pw, &in[i]) == 0);
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK(pftw_probe(data, len) == 1);
	CHECK(pftw_read(data, len, &r.base) == 0);

	/* What the reader must give back, in this order. */
	for (size_t i = 0; i < nin; i++) {
		want[nwant] = in[i];
		if (in[i].type == PS_EV_END)
			want[nwant].name = NULL;
		if (in[i].type == PS_EV_COMPLETE) {
			want[nwant].type = PS_EV_BEGIN;
			/* the end carries the span's name and category, so
			 * trace_processor closes that span by name */
			want[nwant + 1] =
			    mk(PS_EV_END, 100, 101, 1035, in[i].name);
			want[nwant + 1].category = in[i].category;
			nwant++;
		}
		nwant++;
	}
	if (getenv("PFTW_DEBUG"))
		ts_rec_print(&r, stderr);
	CHECK_EQ(r.count[TS_EVENT], nwant);
	for (size_t i = 0; i < nwant; i++)
		CHECK_EV(ts_rec_event(&r, i), &want[i]);
	CHECK_EQ(r.count[TS_PROCESS], 1);
	CHECK_EQ(ts_rec_nth(&r, TS_PROCESS, 0)->ev.pid, 100);
	CHECK_STR(ts_rec_nth(&r, TS_PROCESS, 0)->value, "app");
	CHECK_EQ(r.count[TS_THREAD], 1);
	CHECK_EQ(ts_rec_nth(&r, TS_THREAD, 0)->ev.tid, 101);
	CHECK_STR(ts_rec_nth(&r, TS_THREAD, 0)->value, "worker");
	CHECK_EQ(r.count[TS_META], 1);
	CHECK_STR(ts_rec_nth(&r, TS_META, 0)->key, "backend");
	CHECK_STR(ts_rec_nth(&r, TS_META, 0)->value, "emulated");
out:
	free(data);
	ts_rec_free(&r);
}

TEST(out_of_order_events_keep_their_times)
{
	static const uint64_t ts[] = {5000, 5100, 4000, 4500,	   9000,
				      100,  9001, 3,	1ull << 50};
	struct ts_recorder r;
	struct ps_writer *pw;
	size_t len = 0, n = sizeof(ts) / sizeof(ts[0]);
	uint8_t *data;

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	for (size_t i = 0; i < n; i++) {
		struct ps_event e = mk(PS_EV_INSTANT, 7, 8, ts[i], "i");

		CHECK(ps_write_event(pw, &e) == 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK(pftw_read(data, len, &r.base) == 0);
	CHECK_EQ(r.count[TS_EVENT], n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(ts_rec_event(&r, i)->ts, ts[i]);
	free(data);
	ts_rec_free(&r);
}

/* Checks that the BEGIN/END events of one thread, stably sorted by time
 * (as Perfetto does), nest into @want spans "name:begin:end". */
static int nests_as(const struct ts_recorder *r, const char *const *want,
		    size_t n)
{
	struct {
		const char *name;
		uint64_t ts;
	} stack[16];
	size_t nev = r->count[TS_EVENT];
	size_t depth = 0, got = 0, *order = malloc(nev * sizeof(*order));
	char buf[64];
	int ok = 1;

	for (size_t i = 0; i < nev; i++)
		order[i] = i;
	for (size_t i = 1; i < nev; i++) /* insertion sort: stable */
		for (size_t j = i; j && ts_rec_event(r, order[j - 1])->ts >
					    ts_rec_event(r, order[j])->ts;
		     j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; ok && i < nev; i++) {
		const struct ps_event *e = ts_rec_event(r, order[i]);

		if (e->type == PS_EV_BEGIN && depth < 16) {
			stack[depth].name = e->name;
			stack[depth++].ts = e->ts;
		} else if (e->type == PS_EV_END && depth) {
			depth--;
			snprintf(buf, sizeof(buf), "%s:%llu:%llu",
				 stack[depth].name,
				 (unsigned long long)stack[depth].ts,
				 (unsigned long long)e->ts);
			ok = got < n && !strcmp(buf, want[got++]);
		} else {
			ok = 0;
		}
	}
	free(order);
	return ok && got == n && depth == 0;
}

TEST(complete_events_become_nested_begin_end)
{
	/* Children first, then their parent (an inferred caller frame),
	 * then a sibling that starts exactly when the parent ends, and a
	 * grandchild sharing its parent's end time. */
	static const struct {
		const char *name;
		uint64_t ts, dur;
	} spans[] = {
	    {"c1", 110, 10}, {"c2", 130, 20}, {"p", 100, 100},
	    {"s", 200, 50},  {"g", 240, 10},
	};
	static const char *const want[] = {
	    "c1:110:120", "c2:130:150", "p:100:200", "g:240:250", "s:200:250",
	};
	struct ts_recorder r;
	struct ps_writer *pw;
	size_t len = 0;
	uint8_t *data;

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	for (size_t i = 0; i < 5; i++) {
		struct ps_event e =
		    mk(PS_EV_COMPLETE, 1, 1, spans[i].ts, spans[i].name);

		e.dur = spans[i].dur;
		CHECK(ps_write_event(pw, &e) == 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK(pftw_read(data, len, &r.base) == 0);
	CHECK_EQ(r.count[TS_EVENT], 10);
	CHECK(nests_as(&r, want, 5));
	free(data);
	ts_rec_free(&r);
}

TEST(many_processes_and_threads)
{
	enum { NP = 40, NT = 5, NE = 20 };
	struct ts_recorder r;
	struct ps_writer *pw;
	size_t len = 0, k = 0;
	uint8_t *data;
	char name[32];

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	/* Interleave every thread at every step. */
	for (int e = 0; e < NE; e++)
		for (int pi = 0; pi < NP; pi++)
			for (int t = 0; t < NT; t++) {
				struct ps_event ev;

				snprintf(name, sizeof(name), "f%d_%d", pi,
					 e / 2);
				ev = mk(e % 2 ? PS_EV_END : PS_EV_BEGIN,
					1000 + pi, 100000 + pi * 100 + t,
					1000000 + e * 1000 + pi * 10 + t,
					e % 2 ? NULL : name);
				CHECK(ps_write_event(pw, &ev) == 0);
			}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK(pftw_read(data, len, &r.base) == 0);
	CHECK_EQ(r.count[TS_EVENT], NP * NT * NE);
	for (int e = 0; e < NE; e++)
		for (int pi = 0; pi < NP; pi++)
			for (int t = 0; t < NT; t++) {
				const struct ps_event *ev =
				    ts_rec_event(&r, k++);

				snprintf(name, sizeof(name), "f%d_%d", pi,
					 e / 2);
				CHECK_EQ(ev->pid, 1000 + pi);
				CHECK_EQ(ev->tid, 100000 + pi * 100 + t);
				CHECK_EQ(ev->ts,
					 1000000 + e * 1000 + pi * 10 + t);
				CHECK_EQ(ev->type,
					 e % 2 ? PS_EV_END : PS_EV_BEGIN);
				if (!(e % 2))
					CHECK_STR(ev->name, name);
			}
	free(data);
	ts_rec_free(&r);
}

TEST(hundred_thousand_distinct_names)
{
	enum { N = 100000 };
	struct ts_recorder r;
	struct ps_writer *pw;
	size_t len = 0;
	uint8_t *data;
	char name[32];

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	for (int i = 0; i < N; i++) {
		struct ps_event e;

		snprintf(name, sizeof(name), "function_%d", i);
		e = mk(PS_EV_COMPLETE, 1, 2, 10ull * i, name);
		e.dur = 5;
		CHECK(ps_write_event(pw, &e) == 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK(pftw_read(data, len, &r.base) == 0);
	CHECK_EQ(r.count[TS_EVENT], 2 * N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "function_%d", i);
		CHECK_STR(ts_rec_event(&r, 2 * i)->name, name);
		CHECK_EQ(ts_rec_event(&r, 2 * i)->ts, 10ull * i);
		CHECK_EQ(ts_rec_event(&r, 2 * i + 1)->type, PS_EV_END);
		CHECK_EQ(ts_rec_event(&r, 2 * i + 1)->ts, 10ull * i + 5);
	}
	free(data);
	ts_rec_free(&r);
}

/* ---- the wire conventions Perfetto relies on --------------------------- */

/* A small trace with two threads, interning and a counter. */
static uint8_t *small_trace(size_t *len)
{
	struct ps_arg a = {.name = "x", .type = PS_ARG_INT, .v.i = 5};
	struct ps_writer *pw;

	if (!(pw = ts_writer_on_memory(pftw_writer_new)))
		return NULL;
	pw->ops->meta(pw, "k", "v");
	pw->ops->process(pw, 1, "proc");
	for (int i = 0; i < 6; i++) {
		struct ps_event e =
		    mk(i % 2 ? PS_EV_END : PS_EV_BEGIN, 1, 1 + i % 3,
		       100 + i * 7, i % 2 ? NULL : "work");

		e.args = &a;
		e.nargs = 1;
		ps_write_event(pw, &e);
	}
	{
		struct ps_event c = mk(PS_EV_COUNTER, 1, 1, 200, "cnt");

		c.args = &a;
		c.nargs = 1;
		ps_write_event(pw, &c);
	}
	return ts_writer_bytes(pw, len, NULL);
}

TEST(every_packet_has_a_sequence_and_sequences_start_cleared)
{
	size_t len = 0, npk = 0;
	uint8_t *data = small_trace(&len);
	uint32_t seen[64];
	size_t nseen = 0;
	uint64_t tracks[64];
	size_t ntracks = 0;
	Pftrace__Trace *t;

	CHECK(data);
	t = pftrace__trace__unpack(NULL, len, data);
	CHECK(t);
	for (size_t i = 0; i < t->n_packet; i++) {
		Pftrace__TracePacket *pk = t->packet[i];
		size_t j;

		npk++;
		CHECK(pk->optional_trusted_packet_sequence_id_case ==
		      SEQ_ID_SET);
		for (j = 0; j < nseen; j++)
			if (seen[j] == pk->trusted_packet_sequence_id)
				break;
		if (j == nseen) {
			CHECK(nseen < 64);
			seen[nseen++] = pk->trusted_packet_sequence_id;
			CHECK(pk->has_sequence_flags);
			CHECK(pk->sequence_flags & 1);
		}
		if (pk->data_case ==
			PFTRACE__TRACE_PACKET__DATA_TRACK_DESCRIPTOR &&
		    ntracks < 64)
			tracks[ntracks++] = pk->track_descriptor->uuid;
		/* A default or explicit track is described before use. */
		if (pk->trace_packet_defaults &&
		    pk->trace_packet_defaults->track_event_defaults) {
			uint64_t u = pk->trace_packet_defaults
					 ->track_event_defaults->track_uuid;
			for (j = 0; j < ntracks && tracks[j] != u; j++)
				;
			CHECK(j < ntracks);
		}
		if (pk->data_case == PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT &&
		    pk->track_event->has_track_uuid) {
			for (j = 0; j < ntracks &&
				    tracks[j] != pk->track_event->track_uuid;
			     j++)
				;
			CHECK(j < ntracks);
		}
	}
	/* sequence 1 + 3 threads */
	CHECK_EQ(nseen, 4);
	CHECK(npk > 10);
	pftrace__trace__free_unpacked(t, NULL);
	free(data);
}

static size_t count_substr(const uint8_t *d, size_t len, const char *s)
{
	size_t n = 0, sl = strlen(s);

	for (size_t i = 0; i + sl <= len; i++)
		if (!memcmp(d + i, s, sl))
			n++;
	return n;
}

TEST(names_are_interned_once_per_sequence)
{
	struct ps_writer *pw;
	size_t len = 0;
	uint8_t *data;

	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	for (int i = 0; i < 1000; i++) {
		struct ps_event e = mk(PS_EV_COMPLETE, 1, 1 + i % 2, i * 10,
				       "a_rather_long_function_name");

		e.dur = 3;
		e.category = "category_name";
		CHECK(ps_write_event(pw, &e) == 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	CHECK_EQ(count_substr(data, len, "a_rather_long_function_name"), 2);
	CHECK_EQ(count_substr(data, len, "category_name"), 2);
	free(data);
}

TEST(field_numbers_are_perfettos)
{
	static const struct {
		const ProtobufCMessageDescriptor *d;
		const char *field;
		unsigned id;
	} f[] = {
	    {&pftrace__trace__descriptor, "packet", 1},
	    {&pftrace__trace_packet__descriptor, "timestamp", 8},
	    {&pftrace__trace_packet__descriptor, "timestamp_clock_id", 58},
	    {&pftrace__trace_packet__descriptor, "track_event", 11},
	    {&pftrace__trace_packet__descriptor, "track_descriptor", 60},
	    {&pftrace__trace_packet__descriptor, "clock_snapshot", 6},
	    {&pftrace__trace_packet__descriptor, "trusted_packet_sequence_id",
	     10},
	    {&pftrace__trace_packet__descriptor, "interned_data", 12},
	    {&pftrace__trace_packet__descriptor, "sequence_flags", 13},
	    {&pftrace__trace_packet__descriptor, "trace_packet_defaults", 59},
	    {&pftrace__track_event__descriptor, "name_iid", 10},
	    {&pftrace__track_event__descriptor, "category_iids", 3},
	    {&pftrace__track_event__descriptor, "type", 9},
	    {&pftrace__track_event__descriptor, "track_uuid", 11},
	    {&pftrace__track_event__descriptor, "counter_value", 30},
	    {&pftrace__track_event__descriptor, "double_counter_value", 44},
	    {&pftrace__track_event__descriptor, "flow_ids", 47},
	    {&pftrace__track_event__descriptor, "terminating_flow_ids", 48},
	    {&pftrace__track_event__descriptor, "debug_annotations", 4},
	    {&pftrace__track_event__descriptor, "source_location_iid", 34},
	    {&pftrace__interned_data__descriptor, "event_names", 2},
	    {&pftrace__interned_data__descriptor, "event_categories", 1},
	    {&pftrace__interned_data__descriptor, "debug_annotation_names", 3},
	    {&pftrace__interned_data__descriptor, "source_locations", 4},
	    {&pftrace__debug_annotation__descriptor, "pointer_value", 7},
	    {&pftrace__track_descriptor__descriptor, "parent_uuid", 5},
	    {&pftrace__track_descriptor__descriptor, "counter", 8},
	    {&pftrace__thread_descriptor__descriptor, "thread_name", 5},
	    {&pftrace__process_descriptor__descriptor, "process_name", 6},
	    {&pftrace__clock_snapshot__descriptor, "primary_trace_clock", 2},
	    {&pftrace__clock_snapshot__clock__descriptor, "is_incremental", 3},
	    {&pftrace__trace_packet__descriptor, "chrome_events", 5},
	    {&pftrace__track_event__descriptor, "legacy_event", 6},
	    {&pftrace__track_event__legacy_event__descriptor, "phase", 2},
	    {&pftrace__track_event__legacy_event__descriptor, "unscoped_id", 6},
	    {&pftrace__track_event__legacy_event__descriptor,
	     "bind_to_enclosing", 12},
	    {&pftrace__chrome_event_bundle__descriptor, "metadata", 2},
	    {&pftrace__chrome_metadata__descriptor, "name", 1},
	    {&pftrace__chrome_metadata__descriptor, "string_value", 2},
	    {&pftrace__chrome_metadata__descriptor, "bool_value", 3},
	    {&pftrace__chrome_metadata__descriptor, "int_value", 4},
	    {&pftrace__chrome_metadata__descriptor, "json_value", 5},
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		const ProtobufCFieldDescriptor *fd =
		    protobuf_c_message_descriptor_get_field_by_name(f[i].d,
								    f[i].field);

		CHECK(fd);
		CHECK_EQ(fd->id, f[i].id);
	}
}

/* Metadata must not become slices in trace_processor: it goes out as
 * ChromeEventBundle.metadata (Perfetto's metadata table), never as a
 * track event, and reads back as meta() calls, as do Chrome's int and bool
 * values. */
TEST(metadata_is_chrome_metadata_not_events)
{
	struct ps_writer *pw;
	struct ts_recorder rec;
	size_t len = 0, nmeta = 0, nevents = 0;
	uint8_t *data;
	Pftrace__Trace *t;
	struct ps_event e = mk(PS_EV_BEGIN, 1, 2, 500, "f");

	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	CHECK_EQ(pw->ops->meta(pw, "backend", "emulated"), 0);
	CHECK_EQ(ps_write_event(pw, &e), 0);
	CHECK_EQ(pw->ops->meta(pw, "command", "./app"), 0);
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	t = pftrace__trace__unpack(NULL, len, data);
	CHECK(t);
	for (size_t i = 0; i < t->n_packet; i++) {
		Pftrace__TracePacket *pk = t->packet[i];

		if (pk->data_case == PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT)
			nevents++;
		if (pk->data_case != PFTRACE__TRACE_PACKET__DATA_CHROME_EVENTS)
			continue;
		CHECK(pk->has_timestamp);
		CHECK_EQ(pk->timestamp, 500);
		CHECK_EQ(pk->chrome_events->n_metadata, 2);
		CHECK_STR(pk->chrome_events->metadata[0]->name, "backend");
		CHECK_STR(pk->chrome_events->metadata[0]->string_value,
			  "emulated");
		CHECK_STR(pk->chrome_events->metadata[1]->name, "command");
		nmeta++;
	}
	CHECK_EQ(nmeta, 1);
	CHECK_EQ(nevents, 1);
	pftrace__trace__free_unpacked(t, NULL);

	ts_rec_init(&rec);
	CHECK_EQ(pftw_read(data, len, &rec.base), 0);
	CHECK_EQ(rec.n, 3);
	CHECK_EQ(rec.items[0].kind, TS_EVENT);
	CHECK_EQ(rec.items[1].kind, TS_META);
	CHECK_STR(rec.items[1].key, "backend");
	CHECK_STR(rec.items[1].value, "emulated");
	CHECK_STR(rec.items[2].key, "command");
	CHECK_STR(rec.items[2].value, "./app");
	ts_rec_free(&rec);
	free(data);

	/* Chrome's own value kinds */
	{
		Pftrace__Trace tr = PFTRACE__TRACE__INIT;
		Pftrace__TracePacket pk, *pkp = &pk;
		Pftrace__ChromeEventBundle b =
		    PFTRACE__CHROME_EVENT_BUNDLE__INIT;
		Pftrace__ChromeMetadata m[3], *mp[3];
		uint8_t buf[256];

		pftrace__trace_packet__init(&pk);
		for (int i = 0; i < 3; i++) {
			pftrace__chrome_metadata__init(&m[i]);
			mp[i] = &m[i];
		}
		m[0].name = "num-cpus";
		m[0].value_case = PFTRACE__CHROME_METADATA__VALUE_INT_VALUE;
		m[0].int_value = -4;
		m[1].name = "highres-ticks";
		m[1].value_case = PFTRACE__CHROME_METADATA__VALUE_BOOL_VALUE;
		m[1].bool_value = 1;
		m[2].name = "trace-config";
		m[2].value_case = PFTRACE__CHROME_METADATA__VALUE_JSON_VALUE;
		m[2].json_value = "{\"a\":1}";
		b.n_metadata = 3;
		b.metadata = mp;
		pk.data_case = PFTRACE__TRACE_PACKET__DATA_CHROME_EVENTS;
		pk.chrome_events = &b;
		tr.n_packet = 1;
		tr.packet = &pkp;
		CHECK(pftrace__trace__get_packed_size(&tr) <= sizeof(buf));
		len = pftrace__trace__pack(&tr, buf);
		ts_rec_init(&rec);
		CHECK_EQ(pftw_read(buf, len, &rec.base), 0);
		CHECK_EQ(rec.n, 3);
		CHECK_STR(rec.items[0].value, "-4");
		CHECK_STR(rec.items[1].value, "true");
		CHECK_STR(rec.items[2].value, "{\"a\":1}");
		ts_rec_free(&rec);
	}
}

/* Flow events must not add slices in trace_processor: they go out as
 * Chrome legacy events (phase 's'/'t'/'f', unscoped_id, 'f' bound to the
 * enclosing slice) with no TrackEvent type, never as instants. */
TEST(flows_are_legacy_events_not_instants)
{
	static const enum ps_event_type kinds[] = {
	    PS_EV_FLOW_BEGIN, PS_EV_FLOW_STEP, PS_EV_FLOW_END};
	static const char phases[] = {'s', 't', 'f'};
	struct ps_writer *pw;
	struct ts_recorder rec;
	size_t len = 0, k = 0;
	uint8_t *data;
	Pftrace__Trace *t;
	struct ps_event e = mk(PS_EV_COMPLETE, 1, 2, 100, "outer");

	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	e.dur = 100;
	CHECK_EQ(ps_write_event(pw, &e), 0);
	for (int i = 0; i < 3; i++) {
		e = mk(kinds[i], 1, 2, 110 + (uint64_t)i, "hop");
		e.category = "ipc";
		e.flow_id = 0x1234567890ull;
		CHECK_EQ(ps_write_event(pw, &e), 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	t = pftrace__trace__unpack(NULL, len, data);
	CHECK(t);
	for (size_t i = 0; i < t->n_packet; i++) {
		Pftrace__TrackEvent *te = t->packet[i]->track_event;

		if (t->packet[i]->data_case !=
			PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT ||
		    !te->legacy_event)
			continue;
		CHECK(k < 3);
		CHECK(!te->has_type);
		CHECK_EQ(te->n_flow_ids + te->n_terminating_flow_ids, 0);
		CHECK_EQ(te->legacy_event->phase, phases[k]);
		CHECK_EQ(te->legacy_event->unscoped_id, 0x1234567890ull);
		CHECK_EQ(te->legacy_event->has_bind_to_enclosing, k == 2);
		k++;
	}
	CHECK_EQ(k, 3);
	pftrace__trace__free_unpacked(t, NULL);

	ts_rec_init(&rec);
	CHECK_EQ(pftw_read(data, len, &rec.base), 0);
	CHECK_EQ(rec.n, 5); /* outer's begin and end, three flow events */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(rec.items[1 + i].ev.type, kinds[i]);
		CHECK_EQ(rec.items[1 + i].ev.flow_id, 0x1234567890ull);
		CHECK_STR(rec.items[1 + i].ev.name, "hop");
		CHECK_STR(rec.items[1 + i].ev.category, "ipc");
	}
	ts_rec_free(&rec);
	free(data);
}

/* Ends are placed the way trace_processor treats JSON's "X": an instant or
 * zero-length slice at the time of a zero-length slice stacks inside it,
 * a slice or end closes it first, and a flow at a slice's end time still
 * binds to that slice (so its end comes after the flow). */
TEST(ends_follow_perfettos_x_rules)
{
	struct ps_writer *pw;
	size_t len = 0;
	uint8_t *data;
	Pftrace__Trace *t;
	char got[32];
	size_t n = 0;
	struct ps_event e;

	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	e = mk(PS_EV_COMPLETE, 1, 2, 100, "z");
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_INSTANT, 1, 2, 100, "i");
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_COMPLETE, 1, 2, 100, "z2");
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_BEGIN, 1, 2, 100, "b");
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_COMPLETE, 1, 2, 200, "x");
	e.dur = 10;
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_FLOW_BEGIN, 1, 2, 210, "f");
	e.flow_id = 1;
	CHECK_EQ(ps_write_event(pw, &e), 0);
	e = mk(PS_EV_END, 1, 2, 300, NULL);
	CHECK_EQ(ps_write_event(pw, &e), 0);
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	t = pftrace__trace__unpack(NULL, len, data);
	CHECK(t);
	for (size_t i = 0; i < t->n_packet && n + 1 < sizeof(got); i++) {
		Pftrace__TrackEvent *te = t->packet[i]->track_event;

		if (t->packet[i]->data_case !=
		    PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT)
			continue;
		got[n++] =
		    te->legacy_event ? 'F'
		    : te->type == PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
			? 'B'
		    : te->type == PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END
			? 'E'
			: 'I';
	}
	got[n] = '\0';
	/* z { i z2 { } } b { x { F } } */
	CHECK_STR(got, "BIBEEBBFEE");
	pftrace__trace__free_unpacked(t, NULL);
	free(data);
}

TEST(probe_tells_perfetto_from_other_formats)
{
	static const uint8_t fxt[] = {0x10, 0x00, 0x04, 0x46,
				      0x78, 0x54, 0x16, 0x00};
	static const char json[] = "{\"traceEvents\": []}";
	static const char text[] = "\n\x05hello";
	size_t len = 0;
	uint8_t *data = small_trace(&len);

	CHECK(data);
	CHECK(pftw_probe(data, len) == 1);
	CHECK(pftw_probe(data, 64) == 1); /* a prefix is enough */
	CHECK(pftw_probe(fxt, sizeof(fxt)) == 0);
	CHECK(pftw_probe((const uint8_t *)json, sizeof(json) - 1) == 0);
	CHECK(pftw_probe((const uint8_t *)text, sizeof(text) - 1) == 0);
	CHECK(pftw_probe(NULL, 0) == 0);
	free(data);
}

/* ---- bad input --------------------------------------------------------- */

TEST(null_arguments_are_rejected)
{
	struct ps_writer *w = NULL;
	struct ts_recorder r;

	ts_rec_init(&r);
	CHECK_EQ(pftw_writer_new(NULL, &w), PS_ERR_INVAL);
	CHECK_EQ(pftw_read(NULL, 4, &r.base), PS_ERR_INVAL);
	CHECK_EQ(pftw_read((const uint8_t *)"", 0, NULL), PS_ERR_INVAL);
	CHECK_EQ(pftw_read((const uint8_t *)"", 0, &r.base), 0);
	CHECK_EQ(r.count[TS_EVENT], 0);
}

TEST(truncation_at_every_offset_is_reported)
{
	size_t len = 0, boundaries = 0;
	uint8_t *data = small_trace(&len);
	struct ts_recorder r;

	CHECK(data);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		int err;

		memcpy(copy, data, cut);
		ts_rec_init(&r);
		err = pftw_read(copy, cut, &r.base);
		ts_rec_free(&r);
		free(copy);
		if (err == 0) {
			boundaries++; /* cut between two packets */
			continue;
		}
		if (err != PS_ERR_TRUNCATED && err != PS_ERR_FORMAT) {
			harness_failf(__FILE__, __LINE__,
				      "cut at %zu: error %d", cut, err);
			goto out;
		}
		if (!strstr(ps_err_message(err), "byte")) {
			harness_failf(__FILE__, __LINE__,
				      "cut at %zu: detail without offset: %s",
				      cut, ps_err_message(err));
			goto out;
		}
	}
	/* Only whole-packet cuts read cleanly; there are far fewer. */
	CHECK(boundaries > 5);
	CHECK(boundaries < len / 4);
out:
	free(data);
}

TEST(random_corruption_never_crashes)
{
	size_t len = 0;
	uint8_t *data = small_trace(&len);
	uint64_t x = 0x243f6a8885a308d3ull;
	int errors = 0;

	CHECK(data);
	for (int it = 0; it < 3000; it++) {
		uint8_t *copy = malloc(len);
		struct ts_recorder r;
		int err;

		memcpy(copy, data, len);
		for (int k = 0; k < 1 + it % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			copy[x % len] ^= (uint8_t)(1u << ((x >> 32) % 8));
		}
		ts_rec_init(&r);
		err = pftw_read(copy, len, &r.base);
		ts_rec_free(&r);
		free(copy);
		if (err)
			errors++;
		if (err && err != PS_ERR_FORMAT && err != PS_ERR_TRUNCATED) {
			harness_failf(__FILE__, __LINE__,
				      "iteration %d: unexpected error %d", it,
				      err);
			goto out;
		}
	}
	CHECK(errors > 100); /* flips are noticed, not silently absorbed */
out:
	free(data);
}

TEST(destination_errors_stop_the_read)
{
	size_t len = 0;
	uint8_t *data = small_trace(&len);
	struct ts_recorder r;

	CHECK(data);
	ts_rec_init(&r);
	r.fail_at = 2;
	CHECK_EQ(pftw_read(data, len, &r.base), PS_ERR_IO);
	CHECK_EQ(r.count[TS_EVENT], 1);
	ts_rec_free(&r);
	free(data);
}

/* ---- size -------------------------------------------------------------- */

TEST(repeated_spans_are_compact)
{
	enum { N = 100000, NAMES = 3000 };
	struct ps_writer *pw;
	size_t len = 0;
	uint8_t *data;
	uint64_t x = 88172645463325252ull, ts = 1000000000ull;
	char names[NAMES][24];

	for (int i = 0; i < NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "ns::func_%d", i);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	for (int i = 0; i < N; i++) {
		struct ps_event e;
		int k;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Zipf-like: name rank ~ 1/u */
		k = (int)((double)NAMES / (1.0 + (double)(x % 100000)));
		e = mk(PS_EV_BEGIN, 1, 1, ts, names[k % NAMES]);
		ts += 20 + x % 200;
		CHECK(ps_write_event(pw, &e) == 0);
		e = mk(PS_EV_END, 1, 1, ts, NULL);
		ts += 10 + (x >> 20) % 100;
		CHECK(ps_write_event(pw, &e) == 0);
	}
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	/* Each begin+end pair costs 22-26 bytes of framing, type,
	 * sequence and deltas; interned strings add little. */
	if (len > 26ull * N) {
		harness_failf(__FILE__, __LINE__, "%.2f bytes per span",
			      (double)len / N);
		free(data);
		return;
	}
	free(data);
}

/* A thread's off-CPU and block I/O tracks (event.h) are TrackDescriptor
 * children of its track, with no ThreadDescriptor (Perfetto would add a
 * thread), and read back as the same tracks with their names. */
TEST(thread_tracks_are_children_of_the_thread)
{
	struct ts_recorder r;
	struct ps_writer *pw;
	struct ps_event e;
	const struct ts_item *it;
	size_t len = 0, nthreads = 0;
	uint8_t *data;
	int named = 0;

	ts_rec_init(&r);
	CHECK((pw = ts_writer_on_memory(pftw_writer_new)) != NULL);
	pw->ops->thread(pw, 1, 2, "main");
	pw->ops->thread(pw, 1, PS_TID_SCHED | 2, "main scheduler");
	e = mk(PS_EV_BEGIN, 1, 2, 100, "f");
	CHECK(ps_write_event(pw, &e) == 0);
	e = mk(PS_EV_COMPLETE, 1, PS_TID_SCHED | 2, 110, "sleeping");
	e.dur = 20;
	CHECK(ps_write_event(pw, &e) == 0);
	e = mk(PS_EV_COMPLETE, 1, PS_TID_BLOCK | 2, 115, "block I/O");
	e.dur = 50;
	CHECK(ps_write_event(pw, &e) == 0);
	e = mk(PS_EV_END, 1, 2, 200, NULL);
	CHECK(ps_write_event(pw, &e) == 0);
	data = ts_writer_bytes(pw, &len, NULL);
	CHECK(data);
	/* No ThreadDescriptor names a track's tid: tid 0x40000002 would be
	 * the varint c2 80 80 80 04 after the tid field (2 << 3). */
	CHECK_EQ(count_substr(data, len, "\x10\x82\x80\x80\x80\x04"), 0);
	CHECK(pftw_read(data, len, &r.base) == 0);
	for (size_t i = 0; (it = ts_rec_nth(&r, TS_THREAD, i)); i++) {
		nthreads++;
		const char *n = it->value ? it->value : it->key;

		if (it->ev.tid == (PS_TID_SCHED | 2) && n &&
		    !strcmp(n, "main scheduler"))
			named = 1;
	}
	if (!named)
		ts_rec_print(&r, stderr);
	CHECK(named);
	CHECK(nthreads >= 2);
	CHECK_EQ(r.count[TS_EVENT], 6); /* a COMPLETE comes back as B + E */
	CHECK_EQ(ts_rec_event(&r, 1)->tid, PS_TID_SCHED | 2);
	CHECK_EQ(ts_rec_event(&r, 2)->tid, PS_TID_BLOCK | 2);
	free(data);
	ts_rec_free(&r);
}
