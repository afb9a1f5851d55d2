/* SPDX-License-Identifier: MIT */
/* Streams decoded on several cores (see session.h, dec_split).
 *
 * Each stream is cut at PSBs whose PSB+ says where the code stands (a FUP)
 * and when (a TSC).  The segments of all the streams form one list, in
 * stream order, which the caller's thread makes while the workers already
 * decode the segments planned (finding the cuts reads the stream across,
 * and a first read of its pages is not free: 11 ms of a 27 MB stream on a
 * VM).  Two kinds of work are taken by whichever of the JOBS threads
 * (JOBS - 1 workers, the session's crew.h, and the caller's) is free:
 *   flow  a segment's branch events, by the thread's own flow decoder for
 *         the segment's process (flow.h, segment mode), into a buffer; any
 *         segment, at most JOBS * 4 past the last one joined, so memory
 *         does not grow with the trace;
 *   join  the next segment's events handed to its stream's stack builder,
 *         which writes the stream's spans: one thread at a time, in
 *         order, with instruction counts and times carried across seams.
 * The flow work of the next streams goes on while a stream is joined, so
 * threads' streams are decoded concurrently, and each stack builder and
 * writer sees exactly what flow_decode over its whole stream would give
 * it, in the same order as one stream after another: the trace is the
 * same byte for byte.  Where a seam is not clean, the stream is decoded
 * whole again at its end, past the events already handed on.
 */
#include <intel-pt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/branch_pack.h"
#include "decoder/crew.h"
#include "decoder/flow.h"
#include "decoder/session.h"
#include "decoder/threads.h"
#include "ptscope/error.h"

/* Segments are about this long: a seam costs a PSB+ search and the
 * segment's flow decoder its set-up, and a segment's branch events are held
 * in memory until it is joined (packed, branch_pack.h: about 500 KB for
 * 64 KiB of call-heavy PT).  A shorter stream is cut in about
 * SPLIT_PER_STREAM segments, down to SPLIT_SEGMENT_MIN: a CPU's PT holds
 * over ten times the instructions a byte of the emulated backends' (no
 * TSC every 8 ns, six TNT bits a packet), so 64 KiB of it is several ms
 * of work, and a stream of a few hundred KB came in too few segments for
 * the threads to share evenly (bench calls_long_cpu, 393 KB: 6 segments,
 * -j2 0.059 s; in 16 KiB ones 0.052 s). */
#define SPLIT_SEGMENT_MAX (64 * 1024)
#define SPLIT_SEGMENT_MIN (16 * 1024)
#define SPLIT_PER_STREAM 48
#define SPLIT_SPARE 64 /* event buffers kept for reuse */

struct split_seg {
	struct flow_seg seg;
	size_t stream; /* index in split.st */
	struct br_pack ev;
	struct dec_stats stats;
	struct flow_seg_clock clock;
	/* the clock it started from is a whole decode's there (the first
	 * segment's, or the one the segment before reached, itself true) */
	int clock_true;
	int state; /* 0: waiting, 1: being decoded, 2: done */
	int last;  /* its stream's last segment */
	int err;
	char *detail; /* err's message (owned), see dec_keep_detail */
};

/* A joined stream's state across its segments. */
struct join {
	br_sink_fn sink;
	void *ctx;
	uint64_t last_ts, base, handed;
	int sent;
};

struct split_stream {
	const struct dec_stream *in;
	struct dec_proc *p;
	size_t first, nseg; /* its segments in split.seg */
	struct stk *stk;    /* while it is joined */
	uint64_t epoch;	    /* its writer's stable epoch before ours */
	struct join j;
	struct dec_stats sum; /* of the segments joined */
	int whole;	      /* a seam was not clean: decode it whole */
	int err;	      /* its result */
	char *detail;	      /* err's message (owned) */
};

struct split {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct dec_session *s;
	struct split_stream *st;
	struct split_seg *seg; /* [cap]: never moves, threads hold it */
	size_t cap;
	size_t nseg;	     /* planned: their ends are known */
	int planned;	     /* and no more will come */
	size_t next, joined; /* next to decode; handed to the sink */
	size_t ahead;	     /* how far decoding may run ahead */
	int joining;	     /* a thread joins */
	size_t flowing;	     /* flow work under way */
	int quiet;	     /* no flow work may start (see whole()) */
	int stop, err;	     /* a fatal error: no more work */
	char *detail;	     /* err's message (owned) */
	size_t nworkers;     /* started, each with its index */
	double t_work;	     /* when the workers were started */
	double t_flow, t_join, t_wait; /* the threads' seconds, summed */
	double t_start;		       /* ... until each began to work */
	double t_plan;		       /* the caller's, cutting meanwhile */
	dec_stream_done_fn done;
	void *done_ctx;
	/* event buffers the joiner is done with, for the next segments
	 * (fresh memory costs a page fault per 4 KiB) */
	struct br_pack spare[SPLIT_SPARE];
	size_t nspare;
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

/* Where a cycle-accurate segment that starts at the PSB at @off takes its
 * clock from (flow_seg.fold_from): the PSB two before it, not before
 * @floor (the segment before's start).  The clock at a PSB depends on
 * the packets since the TSC of the PSB+ before it (libipt's
 * pt_tcal_header_tsc calibrates from the TSCs of two PSB+s and the
 * cycles between), so folding from there gives the clock a fold of the
 * whole segment before gives, at an eighth of the cost on a 4 KiB PSB
 * period.  Where it does not, the seam check finds it (seam_clock_true)
 * and the stream is decoded whole: slower, never different. */
static uint64_t fold_start(struct pt_packet_decoder *pd, uint64_t off,
			   uint64_t floor)
{
	uint64_t at = off;

	for (int i = 0; i < 2; i++)
		if (pt_pkt_sync_set(pd, at) < 0 ||
		    pt_pkt_sync_backward(pd) < 0 ||
		    pt_pkt_get_sync_offset(pd, &at) < 0 || at <= floor)
			return floor;
	return at;
}

/* A packet decoder over stream @in, or NULL (no memory, or a
 * configuration libipt does not take: the stream is then not cut). */
static struct pt_packet_decoder *stream_packets(const struct split *sp,
						const struct dec_stream *in)
{
	struct pt_config c;

	pt_config_init(&c);
	if (!in->len || flow_pt_config(&sp->s->cfg, &c))
		return NULL;
	c.begin = (uint8_t *)in->pt;
	c.end = (uint8_t *)in->pt + in->len;
	return pt_pkt_alloc_decoder(&c);
}

/* A stream being cut (plan_begin, plan_step). */
struct planner {
	size_t stream;
	struct pt_packet_decoder *pd, *hd; /* NULL: the stream stays whole */
	struct split_seg *last;		   /* its end is looked for */
};

/* How long the segments of a stream of @len bytes are. */
static size_t segment_len(size_t len)
{
	size_t n = len / SPLIT_PER_STREAM;

	return n < SPLIT_SEGMENT_MIN   ? SPLIT_SEGMENT_MIN
	       : n > SPLIT_SEGMENT_MAX ? SPLIT_SEGMENT_MAX
				       : n;
}

/* Upper bound of the segments of @n streams: a cut comes segment_len or
 * more after the one before. */
static size_t plan_cap(const struct dec_stream *in, size_t n)
{
	size_t cap = 0;

	for (size_t i = 0; i < n; i++)
		cap += in[i].len / segment_len(in[i].len) + 1;
	return cap;
}

/* Start cutting stream @i: its first segment, from its start. */
static void plan_begin(struct split *sp, size_t i, struct planner *pl)
{
	struct split_stream *ss = &sp->st[i];

	memset(pl, 0, sizeof(*pl));
	pl->stream = i;
	ss->first = sp->nseg;
	pl->last = &sp->seg[sp->nseg];
	pl->last->stream = i;
	pl->pd = stream_packets(sp, ss->in);
	pl->hd = pl->pd ? stream_packets(sp, ss->in) : NULL;
	if (!pl->pd || !pl->hd) {
		pt_pkt_free_decoder(pl->pd);
		pt_pkt_free_decoder(pl->hd);
		pl->pd = pl->hd = NULL;
	}
}

/* pl->last's end is known: hand it to the threads (@last: it ends the
 * stream). */
static void plan_publish(struct split *sp, struct planner *pl, int last)
{
	struct split_stream *ss = &sp->st[pl->stream];

	pthread_mutex_lock(&sp->mu);
	pl->last->last = last;
	sp->nseg++;
	if (last)
		ss->nseg = sp->nseg - ss->first;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->mu);
}

/* Find the stream's next cut, about segment_len past the last: returns
 * 1 when found (the segment before it handed on, the next begun), 0 when
 * the stream ends (its last segment handed on). */
static int plan_step(struct split *sp, struct planner *pl)
{
	const struct dec_stream *in = sp->st[pl->stream].in;
	size_t len = in->len, seg = segment_len(len);
	struct pt_packet_decoder *pd = pl->pd, *hd = pl->hd;

	while (pd) {
		uint64_t off = 0, end = 0, ip = 0, start = pl->last->seg.start;
		uint64_t from = start + seg - 1, at;
		struct split_seg *prev = pl->last, *next = prev + 1;

		/* No cut comes before start + seg: look for the next
		 * PSB from there, not from each PSB in between (a scan of
		 * every byte of the stream).  The search starts one byte past
		 * the point set (pt_pkt_sync_forward). */
		if (pt_pkt_get_sync_offset(pd, &at) < 0 || at < from) {
			if (from >= len || pt_pkt_sync_set(pd, from) < 0)
				break;
		}
		if (pt_pkt_sync_forward(pd) < 0 ||
		    pt_pkt_get_sync_offset(pd, &off) < 0)
			break;
		/* a short tail is a part of its own: merged into the part
		 * before, that one's events (7 MB for 64 KiB of call-heavy
		 * PT as a CPU writes it) outgrew their buffer, the decode's
		 * peak memory (bench calls_x16_cpu -j2: 62 to 51 MB) */
		if (off < start + seg)
			continue;
		if (!seam_at(hd, off, &end, &ip))
			continue;
		prev->seg.stop_at = end;
		prev->seg.stop_ip = ip;
		prev->seg.next_start = off;
		/* next is not the threads' until published, after prev */
		next->stream = pl->stream;
		next->seg.start = off;
		next->seg.start_ip = ip;
		plan_publish(sp, pl, 0);
		pl->last = next;
		return 1;
	}
	pt_pkt_free_decoder(pl->pd);
	pt_pkt_free_decoder(pl->hd);
	pl->pd = pl->hd = NULL;
	plan_publish(sp, pl, 1);
	return 0;
}

static int segment_once(struct split *sp, struct flow_decoder *fd,
			struct split_seg *s)
{
	const struct dec_stream *in = sp->st[s->stream].in;
	/* Written for every event: kept on this thread's stack meanwhile,
	 * not in sp->seg beside what the other threads use. */
	struct br_pack ev = s->ev;
	struct flow_stream *st;
	int err;

	err = flow_open_segment(fd, in->pt, in->len, &s->seg, br_pack_sink, &ev,
				&s->stats, &st);
	if (!err) {
		do
			err = flow_step(st);
		while (err == FLOW_PAUSE);
		flow_seg_clock(st, &s->clock);
		flow_close(st);
	}
	s->ev = ev;
	return err;
}

/* fold_start for segment @s (not its stream's first), worked out by the
 * thread that needs it: only a cycle-accurate stream does, and reading
 * back from each cut cost the thread that cuts a page or two more per
 * segment, before any could be decoded. */
static uint64_t seg_fold_from(struct split *sp, const struct split_seg *s)
{
	uint64_t floor = (s - 1)->seg.start, from = floor;
	struct pt_packet_decoder *pd = stream_packets(sp, sp->st[s->stream].in);

	if (pd)
		from = fold_start(pd, s->seg.start, floor);
	pt_pkt_free_decoder(pd);
	return from;
}

/* @fd: the thread's flow decoder for the segment's process, kept for all
 * its segments (what it learns about the code serves the next one).  A
 * segment is decoded afresh first; one of a cycle-accurate stream stops
 * at its first CYC and is decoded again from the clock the timing
 * packets before it give (working that out costs a pass over the timing
 * packets since fold_from, which other streams need not pay). */
static int decode_segment(struct split *sp, struct flow_decoder *fd,
			  struct split_seg *s)
{
	int err = segment_once(sp, fd, s);

	if (err == FLOW_SEG_ABORT && s->clock.saw_cyc && s->seg.start &&
	    !s->seg.fold) {
		br_pack_clear(&s->ev);
		memset(&s->stats, 0, sizeof(s->stats));
		s->seg.fold = 1;
		s->seg.fold_from = seg_fold_from(sp, s);
		err = segment_once(sp, fd, s);
	}
	return err;
}

/* Hand a segment's events on, each made what a decode of the whole
 * stream gives: counts go on from the segments before, and times never
 * go back (a segment raises them only within itself).  Returns 0 or the
 * sink's error. */
static int join_segment(struct join *j, struct split_seg *s)
{
	br_sink_fn sink = j->sink;
	void *ctx = j->ctx;
	uint64_t last = j->last_ts, n = 0;
	int sent = j->sent, err = 0;
	struct br_unpack u;
	struct br_event e;

	/* the counts go on from the segments before */
	br_unpack_init(&u, &s->ev, j->base);
	while (br_unpack_next(&u, &e)) {
		/* flow_emit's times rise within a segment, so only its
		 * first events can fall at or before the last one handed */
		if (__builtin_expect(sent && e.ts <= last, 0))
			e.ts = last + 1;
		last = e.ts;
		sent = 1;
		err = sink(ctx, &e);
		if (err < 0) /* FLOW_PAUSE means nothing here */
			break;
		n++;
	}
	j->last_ts = last;
	j->sent = sent;
	j->handed += n;
	if (err < 0)
		return err;
	j->base += s->stats.instructions;
	return 0;
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

/* Before a stream's first segment is joined: its stack builder. */
static int stream_begin(struct split *sp, struct split_stream *ss)
{
	int err = dec_stack_begin(sp->s, ss->p, ss->in, &ss->stk, &ss->epoch);

	ss->j.sink = stk_sink;
	ss->j.ctx = ss->stk;
	return err;
}

/* A seam of @ss was not clean: decode it whole on this thread, past the
 * events handed on.  It uses the process's flow decoder and possibly
 * libipt's, which read images that the flow work of other threads reads
 * too, so no flow work runs meanwhile. */
static int whole(struct split *sp, struct split_stream *ss)
{
	struct skipper k = {ss->j.sink, ss->j.ctx, ss->j.handed};
	const struct dec_stream *in = ss->in;
	int err;

	pthread_mutex_lock(&sp->mu);
	sp->quiet = 1;
	while (sp->flowing)
		pthread_cond_wait(&sp->cv, &sp->mu);
	pthread_mutex_unlock(&sp->mu);
	err = flow_decode(ss->p->flow, in->pt, in->len, skip_sink, &k,
			  &sp->s->stats);
	pthread_mutex_lock(&sp->mu);
	sp->quiet = 0;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->mu);
	return err;
}

/* After a stream's last segment is joined: the counts, and the caller's
 * word on its result.  Returns 0 or a fatal error. */
static int stream_end(struct split *sp, struct split_stream *ss)
{
	struct dec_stats *stats = &sp->s->stats;

	if (ss->whole && !ss->err) {
		ss->err = dec_keep_detail(&ss->detail, whole(sp, ss));
	} else if (!ss->err) {
		/* as one decode counts them: the stream once, by the flow
		 * engine */
		ss->sum.bytes = ss->in->len;
		ss->sum.flow_fast = 1;
		ss->sum.flow_fallbacks = 0;
		ss->sum.segments = ss->nseg > 1 ? ss->nseg : 0;
		dec_stats_add(stats, &ss->sum);
	}
	if (ss->stk) {
		dec_stack_end(sp->s, ss->in, ss->stk, ss->epoch);
		ss->stk = NULL;
	}
	stats->threads++;
	return sp->done(sp->done_ctx, (size_t)(ss - sp->st),
			dec_no_psb(dec_give_detail(ss->detail, ss->err)));
}

/* Did segment @sg start from the clock a whole decode has at its PSB:
 * the one @prev (its stream's segment before) reached there, from a
 * clock itself true? */
static int seam_clock_true(const struct split_seg *prev,
			   const struct split_seg *sg)
{
	return prev->clock_true && prev->clock.ended && sg->clock.seeded &&
	       fq_clock_same(&sg->clock.seed, &prev->clock.at_end);
}

/* Join the next segment (and end its stream after its last).  Called
 * with sp->mu held; it is dropped while working. */
static void join_next(struct split *sp)
{
	size_t k = sp->joined;
	struct split_seg *sg = &sp->seg[k];
	struct split_stream *ss = &sp->st[sg->stream];
	int err = 0;

	sp->joining = 1;
	pthread_mutex_unlock(&sp->mu);
	if (k == ss->first)
		ss->err = dec_keep_detail(&ss->detail, stream_begin(sp, ss));
	sg->clock_true = k == ss->first || seam_clock_true(sg - 1, sg);
	if (ss->err || ss->whole) {
		/* nothing more of this stream is handed on */
	} else if (sg->clock.saw_cyc && !sg->clock_true) {
		/* its CYCs' times depend on a clock it may not have had */
		ss->whole = 1;
	} else if (sg->err == FLOW_SEG_ABORT) {
		ss->whole = 1;
	} else if (sg->err < 0) {
		ss->err = sg->err;
		ss->detail = sg->detail;
		sg->detail = NULL;
	} else {
		ss->err =
		    dec_keep_detail(&ss->detail, join_segment(&ss->j, sg));
		dec_stats_add(&ss->sum, &sg->stats);
	}
	if (sg->last)
		err = stream_end(sp, ss);
	pthread_mutex_lock(&sp->mu);
	if (sg->ev.buf && sp->nspare < SPLIT_SPARE) {
		br_pack_clear(&sg->ev);
		sp->spare[sp->nspare++] = sg->ev;
	} else {
		free(sg->ev.buf);
	}
	memset(&sg->ev, 0, sizeof(sg->ev));
	if (err < 0 && !sp->err) {
		sp->err = dec_keep_detail(&sp->detail, err);
		sp->stop = 1;
	}
	sp->joined = k + 1;
	sp->joining = 0;
	pthread_cond_broadcast(&sp->cv);
}

/* Decode the next segment's flow.  Called with sp->mu held, dropped while
 * working.  @worker: the thread's index, or -1 for the caller's. */
static void flow_next(struct split *sp, int worker)
{
	struct split_seg *s = &sp->seg[sp->next++];
	struct split_stream *ss = &sp->st[s->stream];
	struct flow_decoder **fd;

	s->state = 1;
	sp->flowing++;
	if (sp->nspare)
		s->ev = sp->spare[--sp->nspare];
	pthread_mutex_unlock(&sp->mu);
	fd = worker < 0 ? &ss->p->flow : &ss->p->split_flow[worker];
	if (!*fd) {
		struct flow_funcs fn = dec_flow_funcs(ss->p);

		s->err = flow_new(&sp->s->cfg, ss->p->img, &fn, fd);
	}
	if (!s->err)
		s->err = decode_segment(sp, *fd, s);
	if (s->err != FLOW_SEG_ABORT)
		dec_keep_detail(&s->detail, s->err);
	pthread_mutex_lock(&sp->mu);
	s->state = 2;
	sp->flowing--;
	pthread_cond_broadcast(&sp->cv);
}

/* What every thread runs, the caller's too, until no work is left;
 * joining first, since it must go in order. */
static void work(struct split *sp, int worker)
{
	double flow = 0, join = 0, wait = 0, t = dec_now(), t1;

	pthread_mutex_lock(&sp->mu);
	sp->t_start += t - sp->t_work;
	for (;;) {
		if (sp->stop || (sp->planned && sp->joined == sp->nseg))
			break;
		if (!sp->joining && sp->joined < sp->nseg &&
		    sp->seg[sp->joined].state == 2) {
			join_next(sp);
			t1 = dec_now();
			join += t1 - t;
		} else if (!sp->quiet && sp->next < sp->nseg &&
			   sp->next < sp->joined + sp->ahead) {
			flow_next(sp, worker);
			t1 = dec_now();
			flow += t1 - t;
		} else {
			pthread_cond_wait(&sp->cv, &sp->mu);
			t1 = dec_now();
			wait += t1 - t;
		}
		t = t1;
	}
	sp->t_flow += flow;
	sp->t_join += join;
	sp->t_wait += wait;
	pthread_mutex_unlock(&sp->mu);
}

static void worker_main(void *arg)
{
	struct split *sp = arg;
	int i;

	pthread_mutex_lock(&sp->mu);
	i = (int)sp->nworkers++;
	pthread_mutex_unlock(&sp->mu);
	work(sp, i);
}

int dec_split(struct dec_session *s, const struct dec_stream *in, size_t n,
	      dec_stream_done_fn done, void *done_ctx)
{
	/* jobs - 1 workers, started with the session: the caller's thread
	 * works too */
	size_t nthr = dec_crew_size(s->crew);
	struct planner pl;
	struct split sp;
	int more = 0;
	double t0 = dec_now();
	int err = 0;

	if (!n)
		return 0;
	memset(&sp, 0, sizeof(sp));
	sp.s = s;
	sp.done = done;
	sp.done_ctx = done_ctx;
	/* a part for each thread and two more: the parts decoded and not
	 * yet written are the decode's memory (a 64 KiB part of call-heavy
	 * PT as a CPU writes it is 7 MB of events); 4 per thread held twice
	 * the memory for no more speed (bench calls_long_cpu x8, -j2:
	 * 100 to 48 MB, 0.44 s either way) */
	sp.ahead = nthr + 1 + 2;
	sp.st = calloc(n, sizeof(*sp.st));
	sp.cap = plan_cap(in, n);
	sp.seg = calloc(sp.cap, sizeof(*sp.seg));
	if (!sp.st || !sp.seg) {
		free(sp.st);
		free(sp.seg);
		return PS_ERR_NOMEM;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct split_stream *ss = &sp.st[i];

		ss->in = &in[i];
		err = dec_proc_get_epoch(s, in[i].pid, in[i].image, &ss->p);
		if (!err)
			err = dec_proc_flow(s, ss->p);
	}
	pthread_mutex_init(&sp.mu, NULL);
	pthread_cond_init(&sp.cv, NULL);
	/* The first cut before any thread starts: a lone stream that has
	 * none is decoded as before. */
	if (!err) {
		plan_begin(&sp, 0, &pl);
		more = plan_step(&sp, &pl);
	}
	if (err < 0 || (n == 1 && !more)) {
		pthread_mutex_destroy(&sp.mu);
		pthread_cond_destroy(&sp.cv);
		free(sp.seg);
		free(sp.st);
		return err < 0 ? err : DEC_SPLIT_UNCUT;
	}
	sp.t_work = dec_now();
	dec_crew_run(s->crew, nthr, worker_main, &sp);
	/* the rest of the plan, while the workers decode what is planned
	 * (stream 0 goes on from its first cut) */
	for (size_t i = 0; i < n; i++) {
		if (i) {
			plan_begin(&sp, i, &pl);
			more = 1;
		}
		while (more)
			more = plan_step(&sp, &pl);
	}
	pthread_mutex_lock(&sp.mu);
	sp.t_plan = dec_now() - sp.t_work;
	sp.planned = 1;
	pthread_cond_broadcast(&sp.cv);
	pthread_mutex_unlock(&sp.mu);
	work(&sp, -1);
	pthread_mutex_lock(&sp.mu);
	sp.stop = 1;
	pthread_cond_broadcast(&sp.cv);
	pthread_mutex_unlock(&sp.mu);
	dec_crew_wait(s->crew);
	for (size_t i = 0; i < n; i++) {
		stk_free(sp.st[i].stk); /* a stream left by a fatal error */
		free(sp.st[i].detail);
	}
	for (size_t i = 0; i < sp.nseg; i++) {
		free(sp.seg[i].ev.buf);
		free(sp.seg[i].detail);
	}
	for (size_t i = 0; i < sp.nspare; i++)
		free(sp.spare[i].buf);
	free(sp.seg);
	free(sp.st);
	pthread_mutex_destroy(&sp.mu);
	pthread_cond_destroy(&sp.cv);
	s->stats.seconds += dec_now() - t0;
	s->stats.split_threads += nthr + 1;
	s->stats.split_seconds += dec_now() - sp.t_work;
	s->stats.split_plan += sp.t_plan;
	s->stats.split_start += sp.t_start - sp.t_plan;
	s->stats.split_flow += sp.t_flow;
	s->stats.split_join += sp.t_join;
	s->stats.split_wait += sp.t_wait;
	err = dec_give_detail(sp.detail, sp.err);
	free(sp.detail);
	return err;
}
