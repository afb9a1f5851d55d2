/* SPDX-License-Identifier: MIT */
/* The flow layer's driver (see flow.h): a libipt block decoder per stream,
 * synced at its first PSB, run block by block and event by event (the
 * meaning of each is flow_branches.c's), resynced after errors, paused
 * when the sink asks, ended with BR_END. */
#include "decoder/flow.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/blockcache.h"
#include "decoder/branch_pack.h"
#include "decoder/fast_flow.h"
#include "decoder/fast_query.h"
#include "decoder/fast_runs.h"
#include "decoder/flow_run.h"
#include "decoder/insn.h"
#include "ptscope/error.h"

/* Instructions the decoder may walk without reading one more byte of
 * trace.  Only direct jumps and calls run without packets (a conditional
 * branch takes a TNT bit, at most 47 per 8-byte packet); a damaged
 * stream can send the decoder into a loop of direct jumps that never
 * ends.  A million instructions with no conditional or indirect branch is
 * megabytes of straight-line code, which real programs do not have, so
 * past this the stream is treated as damaged here and resynced. */
#define FLOW_MAX_INSNS_WITHOUT_TRACE (1ull << 20)

/* A stream decoded in steps (flow_open): the run and where it stands. */
struct flow_stream {
	struct flow_run r;
	struct ff_decoder *ff; /* the fast engine while it decodes */
	int fell_back;	       /* it handed the stream to libipt */
	int fast_done;	       /* it decoded the whole stream */
	int segment;	       /* a segment (flow_open_segment) */
	uint64_t seg_ip;       /* where the next segment begins */
	uint64_t seg_start_ip; /* where this one must begin */
	struct fq_clock seed;  /* the clock a segment started from */
	int seeded;
	struct pt_config cfg;
	int status; /* libipt status to go on from */
	int done;   /* BR_END was sent, or the decode failed */
	size_t len;
	struct dec_stats *stats;
};

int flow_pt_config(const struct dec_config *cfg, struct pt_config *c)
{
	if (!cfg || !c)
		return PS_ERR_INVAL;
	if (cfg->cpu.is_intel) {
		c->cpu.vendor = pcv_intel;
		c->cpu.family = cfg->cpu.family;
		c->cpu.model = cfg->cpu.model;
		c->cpu.stepping = cfg->cpu.stepping;
		if (pt_cpu_errata(&c->errata, &c->cpu) < 0)
			return ps_err_detail(
			    PS_ERR_DECODE, "libipt rejects cpu %u/%u/%u",
			    cfg->cpu.family, cfg->cpu.model, cfg->cpu.stepping);
	}
	c->mtc_freq = cfg->mtc_freq;
	c->nom_freq = cfg->nom_freq;
	c->cpuid_0x15_eax = cfg->cpuid_0x15_eax;
	c->cpuid_0x15_ebx = cfg->cpuid_0x15_ebx;
	return 0;
}

int flow_new(const struct dec_config *cfg, struct img_image *img,
	     const struct flow_funcs *funcs, struct flow_decoder **out)
{
	struct flow_decoder *fd;

	if (!cfg || !img || !out)
		return PS_ERR_INVAL;
	fd = calloc(1, sizeof(*fd));
	if (!fd)
		return PS_ERR_NOMEM;
	fd->cfg = *cfg;
	fd->img = img;
	if (funcs)
		fd->fn = *funcs;
	if (bc_new(&fd->bc) || insn_new(&fd->insn) ||
	    fr_new(img, fd->insn, &fd->runs)) {
		flow_free(fd);
		return PS_ERR_NOMEM;
	}
	fd->fast = 1;
	fd->img_gen = img_generation(img);
	*out = fd;
	return 0;
}

void flow_free(struct flow_decoder *fd)
{
	if (!fd)
		return;
	bc_free(fd->bc);
	fr_free(fd->runs);
	insn_free(fd->insn);
	free(fd->walk);
	free(fd);
}

void flow_set_block_fn(struct flow_decoder *fd, flow_block_fn fn)
{
	if (fd)
		fd->block = fn;
}

void flow_set_fast(struct flow_decoder *fd, int on)
{
	if (fd)
		fd->fast = on;
}

void flow_invalidate(struct flow_decoder *fd)
{
	if (fd) {
		bc_clear(fd->bc);
		fr_clear(fd->runs);
	}
}

/* Errors that mean "libipt could not follow the code" rather than "the
 * trace bytes are inconsistent". */
static int is_code_error(int status)
{
	return status == -pte_nomap || status == -pte_bad_insn ||
	       status == -pte_bad_image;
}

/* Decode from *@pstatus (a sync point, or where the last run paused)
 * until end of stream (returns 0), a decode error (returns 1, *derr, *dip
 * set), a pause the sink asked for (returns 2, *@pstatus saved), or a
 * sink/memory error (< 0).  Pauses fall between blocks and events. */
static int run_synced(struct flow_run *r, int *pstatus, int *derr,
		      uint64_t *dip)
{
	int status = *pstatus;

	for (;;) {
		struct pt_block b;
		int err;

		if (r->pause) {
			r->pause = 0;
			*pstatus = status;
			return 2;
		}
		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(r->blk, &ev, sizeof(ev));
			r->time_stale = 1;
			if (status < 0) {
				flow_time_now(r);
				*derr = status;
				*dip = 0;
				return status == -pte_eos ? 0 : 1;
			}
			flow_time_now(r);
			err = flow_on_event(r, &ev);
			if (err < 0)
				return err;
		}
		if (status & pts_eos) {
			flow_time_now(r);
			return 0;
		}
		b.ninsn = 0;
		b.ip = 0;
		status = pt_blk_next(r->blk, &b, sizeof(b));
		r->time_stale = 1;
		if (b.ninsn) {
			uint64_t off = 0;

			err = flow_on_block(r, &b);
			if (err < 0)
				return err;
			pt_blk_get_offset(r->blk, &off);
			if (off != r->still_off) {
				r->still_off = off;
				r->still_insns = 0;
			}
			r->still_insns += b.ninsn;
			if (r->still_insns > FLOW_MAX_INSNS_WITHOUT_TRACE &&
			    status >= 0) {
				r->still_insns = 0;
				status = -pte_bad_context;
			}
		}
		if (status < 0) {
			/* What the caller writes next (an error, the end)
			 * is at the time of this position, before any
			 * resync. */
			flow_time_now(r);
			if (status == -pte_eos)
				return 0;
			*derr = status;
			*dip = b.ninsn ? 0 : b.ip;
			return 1;
		}
	}
}

/* The PSB+ at @psb ends (after its PSBEND) at @end? */
static int psb_plus_ends_at(const struct pt_config *cfg, uint64_t psb,
			    uint64_t end)
{
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(cfg);
	int found = 0;

	if (!pd)
		return 0;
	if (pt_pkt_sync_set(pd, psb) >= 0) {
		for (int i = 0; i < 64; i++) {
			struct pt_packet p;
			uint64_t off = 0;

			if (pt_pkt_next(pd, &p, sizeof(p)) < 0)
				break;
			if (p.type != ppt_psbend)
				continue;
			pt_pkt_get_offset(pd, &off);
			found = off == end;
			break;
		}
	}
	pt_pkt_free_decoder(pd);
	return found;
}

/* Resync after a decode error.  libipt reads a PSB+ that follows a
 * branch ahead of time; when the error comes right after that, its own
 * pt_blk_sync_forward() would skip the PSB already read, so sync onto
 * that PSB when the PSB+ ends exactly where the decoder stands. */
static int resync(struct flow_stream *st)
{
	static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82};
	struct pt_block_decoder *blk = st->r.blk;
	const struct pt_config *cfg = &st->cfg;
	uint64_t pos = 0, sync = 0, lo;
	const uint8_t *buf = cfg->begin;

	if (st->ff)
		ff_offsets(st->ff, &pos, &sync);
	else if (pt_blk_get_offset(blk, &pos) < 0 ||
		 pt_blk_get_sync_offset(blk, &sync) < 0)
		pos = 0;
	if (pos < sizeof(psb))
		goto forward;
	lo = pos > 256 ? pos - 256 : 0;
	if (lo <= sync)
		lo = sync + 1;
	for (uint64_t p = pos - sizeof(psb); p >= lo && p <= pos; p--) {
		if (memcmp(buf + p, psb, sizeof(psb)))
			continue;
		if (psb_plus_ends_at(cfg, p, pos))
			return st->ff ? ff_sync_set(st->ff, p)
				      : pt_blk_sync_set(blk, p);
		break;
	}
forward:
	return st->ff ? ff_sync_forward(st->ff) : pt_blk_sync_forward(blk);
}

static void add_stats(const struct flow_stream *fs, size_t len,
		      struct dec_stats *st)
{
	const struct flow_run *r = &fs->r;

	if (!st)
		return;
	if (fs->fell_back)
		st->flow_fallbacks++;
	else if (fs->fast_done)
		st->flow_fast++;
	st->bytes += len;
	st->instructions += r->icount;
	st->blocks += r->blocks;
	st->calls += r->calls;
	st->returns += r->returns;
	st->branches += r->branches;
	st->err_overflow += r->overflow;
	st->err_nomap += r->nomap;
	st->err_decode += r->decode_err;
	st->err_truncated += r->truncated;
}

/* Start libipt's block decoder on the stream (flow_open's errors). */
static int open_libipt(struct flow_stream *st)
{
	size_t len = st->len;
	int status;

	st->r.blk = pt_blk_alloc_decoder(&st->cfg);
	if (!st->r.blk)
		return ps_err_detail(PS_ERR_DECODE,
				     "libipt refused the decoder "
				     "configuration");
	status = pt_blk_set_image(st->r.blk, img_pt_image(st->r.fd->img));
	if (status >= 0)
		status = pt_blk_sync_forward(st->r.blk);
	/* A PSB+ that libipt cannot read: try the next one. */
	for (int tries = 0; status < 0 && status != -pte_eos && tries < 1024;
	     tries++)
		status = pt_blk_sync_forward(st->r.blk);
	if (status < 0) {
		pt_blk_free_decoder(st->r.blk);
		st->r.blk = NULL;
		if (status == -pte_eos)
			return ps_err_detail(PS_ERR_FORMAT,
					     "no PSB packet in %zu bytes of "
					     "trace: not Intel PT data, or "
					     "the snapshot is too small",
					     len);
		return ps_err_detail(PS_ERR_DECODE, "libipt: %s",
				     pt_errstr(pt_errcode(status)));
	}
	st->status = status;
	return 0;
}

int flow_open(struct flow_decoder *fd, const uint8_t *pt, size_t len,
	      br_sink_fn sink, void *sink_ctx, struct dec_stats *stats,
	      struct flow_stream **out)
{
	struct flow_stream *st;
	int err;

	if (!out)
		return PS_ERR_INVAL;
	*out = NULL;
	if (!fd || !pt || !sink)
		return PS_ERR_INVAL;
	if (img_generation(fd->img) != fd->img_gen) {
		bc_clear(fd->bc);
		fr_clear(fd->runs);
		fd->img_gen = img_generation(fd->img);
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return PS_ERR_NOMEM;
	st->r.fd = fd;
	st->r.sink = sink;
	st->r.ctx = sink_ctx;
	st->r.pack = sink == br_pack_sink ? sink_ctx : NULL;
	st->r.need_enable = 1;
	st->len = len;
	st->stats = stats;
	pt_config_init(&st->cfg);
	err = flow_pt_config(&fd->cfg, &st->cfg);
	if (err) {
		free(st);
		return err;
	}
	st->cfg.begin = (uint8_t *)pt;
	st->cfg.end = (uint8_t *)pt + len;
	if (fd->fast && !fd->block && !img_callback_code(fd->img)) {
		err = ff_open(&st->cfg, fd->runs, fd->img, &st->ff);
		if (!err) {
			st->r.time_fn = ff_time;
			st->r.time_ctx = st->ff;
			*out = st;
			return 0;
		}
		if (err != FF_FALLBACK) {
			free(st);
			return err;
		}
		st->fell_back = 1;
	}
	err = open_libipt(st);
	if (err) {
		free(st);
		return err;
	}
	*out = st;
	return 0;
}

int flow_open_segment(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		      const struct flow_seg *seg, br_sink_fn sink,
		      void *sink_ctx, struct dec_stats *stats,
		      struct flow_stream **out)
{
	struct flow_stream *st;
	int err;

	*out = NULL;
	if (!fd->fast || fd->block || img_callback_code(fd->img))
		return FLOW_SEG_ABORT;
	err = flow_open(fd, pt, len, sink, sink_ctx, stats, &st);
	if (err < 0)
		return err;
	if (!st->ff) {
		flow_close(st);
		return FLOW_SEG_ABORT;
	}
	if (seg->start) {
		ff_close(st->ff);
		st->ff = NULL;
		st->seeded =
		    seg->fold && fq_fold(&st->cfg, pt + seg->fold_from,
					 pt + seg->start, &st->seed) == 0;
		err = ff_open_at(&st->cfg, fd->runs, fd->img, seg->start,
				 st->seeded ? &st->seed : NULL, &st->ff);
		if (err) {
			flow_close(st);
			return err == PS_ERR_NOMEM ? err : FLOW_SEG_ABORT;
		}
		if (!st->seeded)
			ff_set_mid_stream(st->ff);
		st->r.time_ctx = st->ff;
		st->r.seg_first = 1;
		st->seg_start_ip = seg->start_ip;
	}
	st->segment = 1;
	if (seg->next_start)
		ff_set_snapshot(st->ff, seg->next_start);
	if (seg->stop_at) {
		ff_set_stop(st->ff, seg->stop_at, seg->stop_ip);
		st->seg_ip = seg->stop_ip;
	}
	*out = st;
	return 0;
}

/* A segment's start does not continue the segment before it: something
 * was reported before its first block, it never got one, or that block
 * is not where the previous segment stopped. */
static int seam_spoiled(const struct flow_stream *st)
{
	const struct flow_run *r = &st->r;

	return r->seg_bad || r->seg_first ||
	       (st->seg_start_ip && r->seg_first_ip != st->seg_start_ip);
}

/* The fast engine gave up: decode the stream again with libipt, from the
 * start, without handing the sink the events it has had. */
static int to_libipt(struct flow_stream *st)
{
	struct flow_run *r = &st->r;
	struct flow_run fresh;

	memset(&fresh, 0, sizeof(fresh));
	fresh.fd = r->fd;
	fresh.sink = r->sink;
	fresh.ctx = r->ctx;
	fresh.pack = r->pack;
	fresh.need_enable = 1;
	fresh.skip = r->emitted;
	fresh.emitted = r->emitted;
	ff_close(st->ff);
	st->ff = NULL;
	*r = fresh;
	st->fell_back = 1;
	return open_libipt(st);
}

/* The end of the stream: what is held or pending, then BR_END. */
static int finish(struct flow_stream *st)
{
	struct flow_run *r = &st->r;
	int err;

	st->done = 1;
	if (r->stale)
		r->truncated++;
	err = flow_release_held(r);
	if (err >= 0)
		err = flow_resolve(r, 0);
	if (err >= 0)
		err = flow_emit(r, BR_END, 0, 0, 0, r->tick, r->icount, 0);
	r->pause = 0;
	return err < 0 ? err : 0;
}

int flow_step(struct flow_stream *st)
{
	struct flow_run *r;
	int err;

	if (!st)
		return PS_ERR_INVAL;
	if (st->done)
		return 0;
	r = &st->r;
	for (;;) {
		int derr = 0;
		uint64_t dip = 0;

		if (st->ff)
			err = ff_run(st->ff, r, &derr, &dip);
		else
			err = run_synced(r, &st->status, &derr, &dip);
		if (st->segment &&
		    (err == FF_FALLBACK || err == 1 ||
		     (err == 3 && (r->held || r->need_enable)))) {
			/* not a clean seam: the caller decodes the stream
			 * whole instead */
			st->done = 1;
			return FLOW_SEG_ABORT;
		}
		if (err == 3) {
			/* The next segment goes on at seg_ip: the pending end
			 * goes there, as it would in one decode. */
			st->done = 1;
			st->fast_done = 1;
			if (seam_spoiled(st))
				return FLOW_SEG_ABORT;
			err = flow_resolve(r, st->seg_ip);
			return err < 0 ? err : 0;
		}
		if (err == FF_FALLBACK) {
			err = to_libipt(st);
			if (err < 0)
				break;
			continue;
		}
		if (err == 2)
			return FLOW_PAUSE;
		if (err <= 0)
			break;
		st->status = resync(st);
		if (st->status == FF_FALLBACK) {
			err = to_libipt(st);
			if (err < 0)
				break;
			continue;
		}
		if (st->status < 0 && !is_code_error(derr)) {
			/* Inconsistent bytes and no PSB after them: the
			 * tail of a wrapped ring, not program flow. */
			r->stale = 1;
			break;
		}
		if (is_code_error(derr) && derr == -pte_nomap)
			r->nomap++;
		else
			r->decode_err++;
		err = flow_resolve(r, dip);
		if (err < 0)
			break;
		err = flow_release_held(r);
		if (err >= 0)
			err = flow_emit(r, BR_ERROR, dip, 0, 0, r->tick,
					r->icount, derr);
		if (err < 0 || st->status < 0)
			break;
		r->need_enable = 1;
	}
	if (err < 0) {
		st->done = 1;
		return err;
	}
	st->fast_done = st->ff != NULL;
	err = finish(st);
	if (!err && st->segment && seam_spoiled(st))
		return FLOW_SEG_ABORT;
	return err;
}

void flow_seg_clock(const struct flow_stream *st, struct flow_seg_clock *out)
{
	memset(out, 0, sizeof(*out));
	out->seeded = st->seeded;
	out->seed = st->seed;
	if (st->ff)
		out->ended = ff_seam_clock(st->ff, &out->at_end, &out->saw_cyc);
}

void flow_close(struct flow_stream *st)
{
	if (!st)
		return;
	ff_close(st->ff);
	pt_blk_free_decoder(st->r.blk);
	add_stats(st, st->len, st->stats);
	free(st);
}

int flow_decode(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		br_sink_fn sink, void *sink_ctx, struct dec_stats *stats)
{
	struct flow_stream *st;
	int err;

	err = flow_open(fd, pt, len, sink, sink_ctx, stats, &st);
	if (err < 0)
		return err;
	do
		err = flow_step(st);
	while (err == FLOW_PAUSE);
	flow_close(st);
	return err;
}
