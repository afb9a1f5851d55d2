/* SPDX-License-Identifier: MIT */
/* One long stream decoded on several cores (see session.h, dec_split):
 * cut at PSBs whose PSB+ says where the code stands (a FUP) and when (a
 * TSC), each segment's flow decoded on one of JOBS - 1 worker threads
 * (or on the caller's while it waits) by a flow decoder of its own
 * (flow.h, segment mode) into a buffer of branch events, and
 * the buffers handed to the sink on the caller's thread in order, joined
 * at the seams: instruction counts and times carried across.  The sink sees
 * what flow_decode over the whole stream gives.  Where a seam is not clean, the
 * stream is decoded whole again, past the events already handed on.  At most
 * JOBS * 4 segments are decoded ahead of the sink: memory does not grow with
 * the stream. */
#include <intel-pt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "decoder/flow.h"
#include "decoder/session.h"
#include "ptscope/error.h"

/* Segments are at least this long (a seam costs a PSB+ search and a new
 * flow decoder's first visits). */
#define SPLIT_MIN_SEGMENT (64 * 1024)
#define SPLIT_MAX_SEGMENTS 4096

struct split_seg {
	struct flow_seg seg;
	uint64_t end; /* trace offset where the next segment starts */
	struct br_event *ev;
	size_t n, cap;
	struct dec_stats stats;
	int state; /* 0: waiting, 1: being decoded, 2: done */
	int err;
};

struct split {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct split_seg *seg;
	size_t nseg, next, taken; /* next to decode; handed to the sink */
	size_t ahead;		  /* how far decoding may run ahead */
	int stop;
	const uint8_t *pt;
	size_t len;
	const struct dec_config *cfg;
	struct img_image *img;
	struct flow_funcs fn;
	struct flow_decoder **fds; /* the process's, one per worker */
	size_t nfd;		   /* workers started */
	/* event buffers the joiner is done with, for the next segments
	 * (fresh memory costs a page fault per 4 KiB) */
	struct br_event *spare[64];
	size_t spare_cap[64], nspare;
};

/* The PSB+ at @off: its end (after PSBEND) and FUP address, if it is a
 * clean seam: tracing on (FUP), 64-bit code, a TSC (so the time after it
 * does not depend on what came before), nothing but status packets. */
static int seam_at(struct pt_packet_decoder *pd, uint64_t off, uint64_t *end,
		   uint64_t *ip)
{
	int fup = 0, tsc = 0, mode64 = 0;

	if (pt_pkt_sync_set(pd, off) < 0)
		return 0;
	for (int i = 0; i < 32; i++) {
		struct pt_packet p;

		if (pt_pkt_next(pd, &p, sizeof(p)) < 0)
			return 0;
		switch (p.type) {
		case ppt_psb:
		case ppt_pad:
		case ppt_cbr:
		case ppt_tma:
		case ppt_pip:
			break;
		case ppt_tsc:
			tsc = 1;
			break;
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_exec)
				mode64 = p.payload.mode.bits.exec.csl &&
					 !p.payload.mode.bits.exec.csd;
			else if (p.payload.mode.bits.tsx.abrt)
				return 0;
			break;
		case ppt_fup:
			if (p.payload.ip.ipc == pt_ipc_sext_48) {
				uint64_t v = p.payload.ip.ip;

				*ip = (v & (1ull << 47))
					  ? v | ~0xffffffffffffull
					  : v;
				fup = 1;
			} else if (p.payload.ip.ipc == pt_ipc_full) {
				*ip = p.payload.ip.ip;
				fup = 1;
			} else {
				return 0;
			}
			break;
		case ppt_psbend:
			return fup && tsc && mode64 &&
			       pt_pkt_get_offset(pd, end) >= 0;
		default:
			return 0;
		}
	}
	return 0;
}

/* Cut the stream: segments of about @want bytes.  Returns the count. */
static size_t plan(const struct dec_config *cfg, const uint8_t *pt, size_t len,
		   size_t want, struct split_seg *seg, size_t max)
{
	struct pt_packet_decoder *pd, *hd;
	struct pt_config c;
	size_t n = 1;

	memset(&seg[0], 0, sizeof(seg[0]));
	pt_config_init(&c);
	if (flow_pt_config(cfg, &c) < 0)
		return 1;
	c.begin = (uint8_t *)pt;
	c.end = (uint8_t *)pt + len;
	pd = pt_pkt_alloc_decoder(&c);
	hd = pt_pkt_alloc_decoder(&c);
	while (pd && hd && n < max) {
		uint64_t off = 0, end = 0, ip = 0;

		if (pt_pkt_sync_forward(pd) < 0 ||
		    pt_pkt_get_sync_offset(pd, &off) < 0)
			break;
		if (off < seg[n - 1].seg.start + want || len - off < want / 2)
			continue;
		if (!seam_at(hd, off, &end, &ip))
			continue;
		seg[n - 1].seg.stop_at = end;
		seg[n - 1].seg.stop_ip = ip;
		seg[n - 1].end = off;
		memset(&seg[n], 0, sizeof(seg[n]));
		seg[n].seg.start = off;
		seg[n].seg.start_ip = ip;
		n++;
	}
	pt_pkt_free_decoder(pd);
	pt_pkt_free_decoder(hd);
	seg[n - 1].end = len;
	return n;
}

static int keep(void *ctx, const struct br_event *ev)
{
	struct split_seg *s = ctx;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		struct br_event *nev = realloc(s->ev, cap * sizeof(*nev));

		if (!nev)
			return PS_ERR_NOMEM;
		s->ev = nev;
		s->cap = cap;
	}
	s->ev[s->n++] = *ev;
	return 0;
}

/* @fd: the worker's flow decoder, kept for all its segments (what it
 * learns about the code serves the next one). */
static int decode_segment(struct split *sp, struct flow_decoder *fd,
			  struct split_seg *s)
{
	struct flow_stream *st;
	int err;

	err = flow_open_segment(fd, sp->pt, sp->len, &s->seg, keep, s,
				&s->stats, &st);
	if (!err) {
		do
			err = flow_step(st);
		while (err == FLOW_PAUSE);
		flow_close(st);
	}
	return err;
}

/* A used event buffer for @s, if the joiner has one (under sp->mu). */
static void take_spare(struct split *sp, struct split_seg *s)
{
	if (sp->nspare) {
		sp->nspare--;
		s->ev = sp->spare[sp->nspare];
		s->cap = sp->spare_cap[sp->nspare];
	}
}

static void *worker(void *arg)
{
	struct split *sp = arg;
	struct flow_decoder **fd;
	int nomem = 0;

	pthread_mutex_lock(&sp->mu);
	fd = &sp->fds[sp->nfd++];
	pthread_mutex_unlock(&sp->mu);
	if (!*fd)
		nomem = flow_new(sp->cfg, sp->img, &sp->fn, fd);
	pthread_mutex_lock(&sp->mu);
	for (;;) {
		struct split_seg *s;
		size_t i;

		while (!sp->stop && sp->next < sp->nseg &&
		       sp->next >= sp->taken + sp->ahead)
			pthread_cond_wait(&sp->cv, &sp->mu);
		if (sp->stop || sp->next >= sp->nseg)
			break;
		i = sp->next++;
		s = &sp->seg[i];
		s->state = 1;
		take_spare(sp, s);
		pthread_mutex_unlock(&sp->mu);
		s->err = nomem ? nomem : decode_segment(sp, *fd, s);
		pthread_mutex_lock(&sp->mu);
		s->state = 2;
		pthread_cond_broadcast(&sp->cv);
	}
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

/* The joiner's state across segments. */
struct join {
	br_sink_fn sink;
	void *ctx;
	uint64_t last_ts, base, handed;
	int sent;
};

static int hand(struct join *j, const struct br_event *ev)
{
	struct br_event e = *ev;
	int err;

	if (j->sent && e.ts <= j->last_ts)
		e.ts = j->last_ts + 1;
	e.icount += j->base;
	j->last_ts = e.ts;
	j->sent = 1;
	j->handed++;
	err = j->sink(j->ctx, &e);
	return err > 0 ? 0 : err; /* FLOW_PAUSE means nothing here */
}

/* Hand a segment's events on.  Returns 0 or the sink's error. */
static int join_segment(struct join *j, const struct split_seg *s)
{
	int err;

	for (size_t i = 0; i < s->n; i++) {
		err = hand(j, &s->ev[i]);
		if (err < 0)
			return err;
	}
	j->base += s->stats.instructions;
	return 0;
}

static void add_stats(struct dec_stats *to, const struct dec_stats *st)
{
	to->bytes += st->bytes;
	to->instructions += st->instructions;
	to->blocks += st->blocks;
	to->err_overflow += st->err_overflow;
	to->err_nomap += st->err_nomap;
	to->err_decode += st->err_decode;
	to->err_truncated += st->err_truncated;
	to->flow_fast += st->flow_fast;
	to->flow_fallbacks += st->flow_fallbacks;
	to->segments += st->segments;
}

/* The whole stream on one thread, past the first @skip events. */
struct skipper {
	br_sink_fn sink;
	void *ctx;
	uint64_t skip;
};

static int skip_sink(void *ctx, const struct br_event *ev)
{
	struct skipper *k = ctx;

	if (k->skip) {
		k->skip--;
		return 0;
	}
	return k->sink(k->ctx, ev);
}

int dec_split(struct dec_session *s, struct dec_proc *p, const uint8_t *pt,
	      size_t len, br_sink_fn sink, void *ctx, struct dec_stats *stats)
{
	size_t want, nthr = (size_t)s->cfg.jobs - 1;
	struct join j = {sink, ctx, 0, 0, 0, 0};
	struct dec_stats sum;
	size_t sp_nseg;
	pthread_t th[64];
	struct split sp;
	int err = 0, whole = 0;

	if (nthr > 64)
		nthr = 64;
	want = len / (nthr * 16);
	if (want < SPLIT_MIN_SEGMENT)
		want = SPLIT_MIN_SEGMENT;
	memset(&sp, 0, sizeof(sp));
	sp.seg = calloc(SPLIT_MAX_SEGMENTS, sizeof(*sp.seg));
	if (!sp.seg)
		return dec_pipeline(p->flow, pt, len, sink, ctx, stats);
	sp.nseg = plan(&s->cfg, pt, len, want, sp.seg, SPLIT_MAX_SEGMENTS);
	if (sp.nseg < 2) {
		free(sp.seg);
		return dec_pipeline(p->flow, pt, len, sink, ctx, stats);
	}
	sp.pt = pt;
	sp.len = len;
	sp.cfg = &s->cfg;
	sp.img = p->img;
	sp.fn = dec_flow_funcs(p);
	sp.fds = p->split_flow;
	sp.ahead = (nthr + 1) * 4;
	pthread_mutex_init(&sp.mu, NULL);
	pthread_cond_init(&sp.cv, NULL);
	/* jobs - 1 workers: the caller's thread decodes segments too while
	 * it waits for the next one to hand on */
	for (size_t i = 0; i < nthr; i++)
		if (pthread_create(&th[i], NULL, worker, &sp)) {
			nthr = i;
			break;
		}
	memset(&sum, 0, sizeof(sum));
	for (size_t k = 0; k < sp.nseg && !err && !whole; k++) {
		struct split_seg *sg = &sp.seg[k];

		pthread_mutex_lock(&sp.mu);
		while (sg->state != 2) {
			/* Waiting: decode a segment no worker has taken yet,
			 * with the process's own flow decoder. */
			if (sp.next < sp.nseg &&
			    sp.next < sp.taken + sp.ahead) {
				struct split_seg *o = &sp.seg[sp.next++];

				o->state = 1;
				take_spare(&sp, o);
				pthread_mutex_unlock(&sp.mu);
				o->err = decode_segment(&sp, p->flow, o);
				pthread_mutex_lock(&sp.mu);
				o->state = 2;
				pthread_cond_broadcast(&sp.cv);
				continue;
			}
			pthread_cond_wait(&sp.cv, &sp.mu);
		}
		pthread_mutex_unlock(&sp.mu);
		if (sg->err == FLOW_SEG_ABORT) {
			whole = 1;
		} else if (sg->err < 0) {
			err = sg->err;
		} else {
			err = join_segment(&j, sg);
			if (err > 0)
				whole = 1, err = 0;
			add_stats(&sum, &sg->stats);
		}
		pthread_mutex_lock(&sp.mu);
		if (sg->ev && sp.nspare < 64) {
			sp.spare[sp.nspare] = sg->ev;
			sp.spare_cap[sp.nspare++] = sg->cap;
		} else {
			free(sg->ev);
		}
		sg->ev = NULL;
		sp.taken = k + 1;
		if (err || whole)
			sp.stop = 1;
		pthread_cond_broadcast(&sp.cv);
		pthread_mutex_unlock(&sp.mu);
	}
	for (size_t i = 0; i < nthr; i++)
		pthread_join(th[i], NULL);
	sp_nseg = sp.nseg;
	for (size_t k = 0; k < sp.nseg; k++)
		free(sp.seg[k].ev);
	for (size_t k = 0; k < sp.nspare; k++)
		free(sp.spare[k]);
	free(sp.seg);
	pthread_mutex_destroy(&sp.mu);
	pthread_cond_destroy(&sp.cv);
	if (err)
		return err;
	if (getenv("SPLIT_DEBUG"))
		fprintf(stderr, "split %zu whole %d\n", sp_nseg, whole);
	if (whole) {
		/* A seam was not clean: one decode of the whole stream, its
		 * first events already handed on. */
		struct skipper k = {sink, ctx, j.handed};

		return flow_decode(p->flow, pt, len, skip_sink, &k, stats);
	}
	/* as one decode counts them: the stream once, by the flow engine */
	sum.bytes = len;
	sum.flow_fast = 1;
	sum.flow_fallbacks = 0;
	sum.segments = sp_nseg;
	add_stats(stats, &sum);
	stats->branches += j.handed;
	return 0;
}
