/* SPDX-License-Identifier: MIT */
/* The FXT writer's CLOCK slot reuse (src/output/fxt_intern.c): a full string
 * table whose every slot is marked must still not hand out a slot that
 * the record being written refers to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/sink.h"
#include "tests/harness.h"

#define TABLE 32767 /* FXT_MAX_STRING_INDEX */

/* What the test looks at of one event read back. */
struct seen {
	char name[64], cat[64], key[64], val[64];
	size_t nargs;
};

/* A writer that keeps copies of the last two events read back. */
struct last {
	struct ps_writer base;
	size_t n;
	struct seen ev[2]; /* [n % 2]: the newest */
};

static void copy(char *dst, const char *s)
{
	snprintf(dst, 64, "%s", s ? s : "");
}

static int last_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct last *l = (struct last *)w;
	struct seen *s = &l->ev[++l->n % 2];

	copy(s->name, ev->name);
	copy(s->cat, ev->category);
	s->nargs = ev->nargs;
	if (ev->nargs) {
		copy(s->key, ev->args[0].name);
		copy(s->val, ev->args[0].type == PS_ARG_STRING
				 ? ev->args[0].v.s
				 : "(not a string)");
	}
	return 0;
}

static int ignore_meta(struct ps_writer *w, const char *k, const char *v)
{
	(void)w, (void)k, (void)v;
	return 0;
}

static const struct ps_writer_ops last_ops = {
    .name = "last", .meta = ignore_meta, .event = last_event};

/* Write @name as an instant (category @cat, one string arg if @key). */
static int instant(struct ps_writer *w, const char *name, const char *cat,
		   const char *key, const char *val)
{
	struct ps_arg arg = {.name = key, .type = PS_ARG_STRING, .v.s = val};
	struct ps_event ev = {.type = PS_EV_INSTANT,
			      .pid = 1,
			      .tid = 1,
			      .name = name,
			      .category = cat,
			      .args = key ? &arg : NULL,
			      .nargs = key ? 1 : 0};

	return ps_write_event(w, &ev);
}

TEST(fxt_clock_never_takes_the_records_own_slots)
{
	struct ps_sink *sink = NULL;
	struct ps_writer *w = NULL;
	struct last l = {.base.ops = &last_ops};
	const uint8_t *data;
	size_t len;
	char name[32];
	int err = 0;

	CHECK_EQ(ps_sink_open_memory(&sink), 0);
	CHECK_EQ(fxt_writer_new(sink, &w), 0);
	/* Fill every slot (fill_0 is slot 1, ...) and use each twice, so
	 * all are marked as in use and the hand must sweep the whole table
	 * and come back to where it started. */
	for (int pass = 0; pass < 2 && !err; pass++)
		for (int i = 0; i < TABLE && !err; i++) {
			snprintf(name, sizeof(name), "fill_%05d", i);
			err = instant(w, name, NULL, NULL, NULL);
		}
	CHECK_EQ(err, 0);
	/* The first two slots are this record's category and name; its
	 * arg's name and value are new and need slots: the sweep comes
	 * back to slots 1 and 2 with their marks cleared. */
	CHECK_EQ(instant(w, "fill_00001", "fill_00000", "newkey", "newvalue"),
		 0);
	/* ... and the table goes on working after that. */
	CHECK_EQ(instant(w, "fill_00002", "fill_00000", "newkey", "again"), 0);
	CHECK_EQ(w->ops->flush(w), 0);
	ps_sink_memory_data(sink, &data, &len);
	err = fxt_read(data, len, &l.base);
	w->ops->destroy(w);
	ps_sink_abort(sink);
	CHECK_EQ(err, 0);
	CHECK_EQ(l.n, 2 * TABLE + 2);
	CHECK_STR(l.ev[1].name, "fill_00001");
	CHECK_STR(l.ev[1].cat, "fill_00000");
	CHECK_EQ(l.ev[1].nargs, 1);
	CHECK_STR(l.ev[1].key, "newkey");
	CHECK_STR(l.ev[1].val, "newvalue");
	CHECK_STR(l.ev[0].name, "fill_00002");
	CHECK_STR(l.ev[0].cat, "fill_00000");
	CHECK_EQ(l.ev[0].nargs, 1);
	CHECK_STR(l.ev[0].key, "newkey");
	CHECK_STR(l.ev[0].val, "again");
}

/* Names used once are reused before names used again: a stream of
 * one-off names never pushes out a name that keeps being used. */
TEST(fxt_clock_one_off_names_go_first)
{
	struct ps_sink *sink = NULL;
	struct ps_writer *w = NULL;
	struct last l = {.base.ops = &last_ops};
	const uint8_t *data;
	size_t len, nhot = 0;
	char name[32];
	int err = 0;

	CHECK_EQ(ps_sink_open_memory(&sink), 0);
	CHECK_EQ(fxt_writer_new(sink, &w), 0);
	for (int i = 0; i < 4 * TABLE && !err; i++) {
		/* 100 hot names, each used every 100 one-off names */
		snprintf(name, sizeof(name), "hot_%d", i % 100);
		err = instant(w, name, NULL, NULL, NULL);
		snprintf(name, sizeof(name), "once_%d", i);
		if (!err)
			err = instant(w, name, NULL, NULL, NULL);
	}
	CHECK_EQ(err, 0);
	CHECK_EQ(w->ops->flush(w), 0);
	ps_sink_memory_data(sink, &data, &len);
	/* Each hot name's string record was written exactly once. */
	for (size_t off = 0; off + 8 <= len;) {
		uint64_t h = 0;
		size_t words;

		for (int b = 0; b < 8; b++)
			h |= (uint64_t)data[off + b] << (8 * b);
		words = (h >> 4) & 0xfff;
		if (!words)
			break;
		if ((h & 15) == 2 && off + 8 + 4 <= len &&
		    !memcmp(data + off + 8, "hot_", 4))
			nhot++;
		off += words * 8;
	}
	err = fxt_read(data, len, &l.base);
	w->ops->destroy(w);
	ps_sink_abort(sink);
	CHECK_EQ(nhot, 100);
	CHECK_EQ(err, 0);
	CHECK_EQ(l.n, 8 * TABLE);
	CHECK_STR(l.ev[0].name, "once_131067");
}
