/* SPDX-License-Identifier: MIT */
/* Call-stack samples → spans, samples and metadata (sample_spans.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/recording/samples.h"
#include "src/replay/sample_modules.h"
#include "src/replay/sample_spans.h"
#include "src/replay/sample_stacks.h"
#include "src/replay/sample_unwind.h"

/* An open span: a function at one depth of the thread's stack. */
struct open_frame {
	const struct sym_func *fn;
	enum sstk_unwinder how;
};

struct thread_run {
	struct ps_writer *w;
	const struct sspan_opts *o;
	uint64_t pid, tid;
	char cat[48];
	struct open_frame open[SSTK_MAX];
	size_t nopen;
	uint64_t spans;
};

static int span_begin(struct thread_run *r, const struct open_frame *f,
		      uint64_t ts)
{
	struct ps_arg arg = {.name = "unwinder",
			     .type = PS_ARG_STRING,
			     .v.s = sstk_unwinder_name(f->how)};
	struct ps_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = PS_EV_BEGIN;
	ev.pid = r->pid;
	ev.tid = r->tid;
	ev.ts = ts;
	ev.name = f->fn->name;
	ev.category = r->cat;
	ev.info = r->o->span_info ? &f->fn->info : NULL;
	ev.args = &arg;
	ev.nargs = 1;
	return r->w->ops->event(r->w, &ev);
}

static int span_end(struct thread_run *r, uint64_t ts)
{
	struct ps_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = PS_EV_END;
	ev.pid = r->pid;
	ev.tid = r->tid;
	ev.ts = ts;
	ev.name = r->open[r->nopen - 1].fn->name;
	ev.category = r->cat;
	r->nopen--;
	r->spans++;
	return r->w->ops->event(r->w, &ev);
}

/* Close the open spans above depth @keep at @ts. */
static int close_to(struct thread_run *r, size_t keep, uint64_t ts)
{
	int e = 0;

	while (r->nopen > keep && !e)
		e = span_end(r, ts);
	return e;
}

/* Sample stack @s (innermost first): keep the common outer part open,
 * close the rest at @close_ts, open the new frames at @open_ts. */
static int advance(struct thread_run *r, const struct sstk *s,
		   uint64_t close_ts, uint64_t open_ts)
{
	size_t same = 0;
	int e;

	while (same < r->nopen && same < s->n &&
	       r->open[same].fn == s->fn[s->n - 1 - same])
		same++;
	e = close_to(r, same, close_ts);
	for (size_t d = same; d < s->n && !e; d++) {
		struct open_frame *f = &r->open[r->nopen++];

		f->fn = s->fn[s->n - 1 - d];
		f->how = s->how;
		e = span_begin(r, f, open_ts);
	}
	return e;
}

static int write_sample(struct ps_writer *w, struct smod_set *mods,
			uint64_t pid, uint32_t epoch, uint64_t tid, uint64_t ts,
			const struct sstk *s)
{
	struct ps_sample_frame fr[SSTK_MAX];
	struct ps_sample smp = {pid, tid,  ts,
				fr,  s->n, sstk_unwinder_name(s->how)};

	for (size_t k = 0; k < s->n; k++) {
		const struct smod *m = smod_find(mods, pid, epoch, s->pc[k]);

		memset(&fr[k], 0, sizeof(fr[k]));
		fr[k].name = s->fn[k]->name;
		fr[k].module = m ? m->path : s->fn[k]->info.module;
		fr[k].pc = s->pc[k];
		if (m) {
			fr[k].map_start = m->start;
			fr[k].map_end = m->end;
			fr[k].map_offset = m->offset;
		}
	}
	return ps_write_sample(w, &smp);
}

struct totals {
	uint64_t by[SSTK_N];
	uint64_t samples;
};

/* One thread's SAMPLES section. */
static int thread_samples(struct sstk_ctx *c, const struct rec_samples *sm,
			  uint64_t period, struct ps_writer *spans,
			  struct ps_writer *w, const struct sspan_opts *o,
			  struct totals *tot, uint64_t *nspans)
{
	static struct sstk cur; /* large: not on the stack */
	struct thread_run r;
	struct recs_sample smp;
	size_t off = 0;
	uint64_t last = 0;
	int any = 0, got, e = 0;

	memset(&r, 0, sizeof(r));
	r.w = spans;
	r.o = o;
	r.pid = sm->pid;
	r.tid = sm->tid;
	c->epoch = sm->epoch;
	snprintf(r.cat, sizeof(r.cat), "sampled at %llu Hz",
		 (unsigned long long)(period ? 1000000000ull / period : 0));
	while (!e &&
	       (got = recs_next(sm->data, (size_t)sm->len, &off, &smp)) > 0) {
		uint64_t mid, close_ts, open_ts;

		sstk_build(c, sm->pid, sm->tid, sm->regs_mask, &smp, &cur);
		if (!cur.n)
			continue;
		if (any && smp.time - last > 2 * period) {
			/* The thread did not run for a while (it slept, or
			 * waited for a CPU): what it was in before is not known
			 * to go on, so every span closes and opens again. */
			e = close_to(&r, 0, last + period / 2);
			any = 0;
		}
		if (e)
			break;
		if (!any) {
			close_ts = open_ts = smp.time - period / 2;
		} else {
			mid = last + (smp.time - last) / 2;
			close_ts =
			    mid < last + period / 2 ? mid : last + period / 2;
			open_ts = mid > smp.time - period / 2
				      ? mid
				      : smp.time - period / 2;
		}
		e = advance(&r, &cur, close_ts, open_ts);
		if (!e)
			e = write_sample(w, c->mods, sm->pid, sm->epoch,
					 sm->tid, smp.time, &cur);
		tot->by[cur.how]++;
		tot->samples++;
		last = smp.time;
		any = 1;
	}
	if (!e && got < 0 && o->warn) {
		char msg[256];

		snprintf(msg, sizeof(msg), "thread %llu: %s",
			 (unsigned long long)sm->tid, ps_err_message(got));
		o->warn(o->warn_ctx, msg);
	}
	if (!e && any)
		e = close_to(&r, 0, last + period / 2);
	*nspans += r.spans;
	return e;
}

static int write_meta(struct ps_writer *w, const struct rec_info *i,
		      const struct totals *t)
{
	char hz[32], by[128], note[320];
	int r;

	snprintf(hz, sizeof(hz), "%u", i->sample_hz);
	snprintf(by, sizeof(by), "fp %llu, dwarf %llu, lbr %llu",
		 (unsigned long long)t->by[SSTK_FP],
		 (unsigned long long)t->by[SSTK_DWARF],
		 (unsigned long long)t->by[SSTK_LBR]);
	snprintf(note, sizeof(note),
		 "sampled, not traced: spans are rebuilt from call stacks "
		 "sampled at %u Hz (%s), so calls shorter than about %.3g ms "
		 "can be missing and every time is within about one period",
		 i->sample_hz,
		 i->sample_event && i->sample_event[0] ? i->sample_event : "?",
		 1000.0 / i->sample_hz);
	r = w->ops->meta(w, "sampled", "true");
	if (!r)
		r = w->ops->meta(w, "sample_rate_hz", hz);
	if (!r)
		r = w->ops->meta(w, "sample_event",
				 i->sample_event ? i->sample_event : "");
	if (!r)
		r = w->ops->meta(w, "sample_unwinders", by);
	if (!r)
		r = w->ops->meta(w, "sampling", note);
	return r;
}

int sspan_replay(const struct recording *in, struct dec_session *ds,
		 struct ps_writer *spans, struct ps_writer *w,
		 const struct sspan_opts *o, struct sspan_stats *st)
{
	struct smod_set mods;
	static struct sstk_ctx c;
	struct totals tot;
	uint32_t hz = in->info->sample_hz ? in->info->sample_hz : 1000;
	uint64_t period = 1000000000ull / hz;
	int r;

	memset(&tot, 0, sizeof(tot));
	memset(&c, 0, sizeof(c));
	c.ds = ds;
	c.mods = &mods;
	r = smod_build(in, &mods);
	if (!r)
		r = sunw_new(&mods, &c.unw);
	for (size_t i = 0; i < in->nsamples && !r; i++) {
		r = thread_samples(&c, &in->samples[i], period, spans, w, o,
				   &tot, &st->spans);
		st->threads++;
	}
	if (!r)
		r = write_meta(w, in->info, &tot);
	st->samples += tot.samples;
	st->sample_hz = hz;
	sunw_free(c.unw);
	smod_free(&mods);
	return r;
}
