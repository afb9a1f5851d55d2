/* SPDX-License-Identifier: MIT */
/* libipt block decoding → branch events (see flow.h). */
#include "decoder/flow.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/blockcache.h"
#include "decoder/insn.h"
#include "decoder/timeconv.h"
#include "ptscope/error.h"

struct flow_decoder {
	struct dec_config cfg;
	struct img_image *img; /* not owned */
	struct flow_funcs fn;
	struct bc_cache *bc;	   /* owned */
	struct insn_decoder *insn; /* owned */
	uint64_t img_gen;	   /* image generation the cache was built on */
	struct bc_branch *walk;	   /* scratch for learning a block */
	size_t walk_cap;
	flow_block_fn block; /* NULL unless inline frames are wanted */
};

/* A block's last instruction whose report needs the next ip. */
struct flow_pending {
	int valid;
	uint8_t end; /* enum bc_end */
	uint64_t from, ret, end_target;
	uint64_t tick, icount;
	struct bc_block *entry; /* for the indirect-jump memo */
};

/* State of one flow_decode() call. */
struct flow_run {
	struct flow_decoder *fd;
	struct pt_block_decoder *blk;
	br_sink_fn sink;
	void *ctx;
	uint64_t icount, blocks, branches;
	uint64_t nomap, decode_err, overflow, truncated;
	uint64_t tsc;  /* last raw time from libipt */
	uint64_t tick; /* tsc converted */
	int have_tsc;
	int time_stale;	  /* libipt moved since tick was read */
	uint64_t last_ts; /* time of the last event sent */
	int sent;	  /* events sent so far */
	int need_enable;  /* the next block starts with BR_ENABLE */
	uint64_t last_ip; /* last instruction of the last block */
	int stale;	  /* the rest of the stream is stale data */
	int pause;	  /* the sink asked to pause (FLOW_PAUSE) */
	struct flow_pending pend;
	uint64_t still_off;   /* trace offset of the last block */
	uint64_t still_insns; /* instructions walked since it moved */
};

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
	if (bc_new(&fd->bc) || insn_new(&fd->insn)) {
		flow_free(fd);
		return PS_ERR_NOMEM;
	}
	fd->img_gen = img_generation(img);
	*out = fd;
	return 0;
}

void flow_free(struct flow_decoder *fd)
{
	if (!fd)
		return;
	bc_free(fd->bc);
	insn_free(fd->insn);
	free(fd->walk);
	free(fd);
}

void flow_set_block_fn(struct flow_decoder *fd, flow_block_fn fn)
{
	if (fd)
		fd->block = fn;
}

void flow_invalidate(struct flow_decoder *fd)
{
	if (fd)
		bc_clear(fd->bc);
}

static int is_entry(const struct flow_decoder *fd, uint64_t ip)
{
	return fd->fn.is_func_entry && fd->fn.is_func_entry(fd->fn.ctx, ip);
}

static int emit(struct flow_run *r, enum br_kind kind, uint64_t from,
		uint64_t to, uint64_t ret, uint64_t tick, uint64_t icount,
		int err)
{
	struct br_event ev;

	ev.kind = kind;
	ev.from = from;
	ev.to = to;
	ev.ret = ret;
	ev.ts = (tick > r->last_ts || !r->sent) ? tick : r->last_ts + 1;
	ev.icount = icount;
	ev.err = err;
	r->last_ts = ev.ts;
	r->sent = 1;
	r->branches++;
	err = r->sink(r->ctx, &ev);
	if (err == FLOW_PAUSE) {
		r->pause = 1;
		return 0;
	}
	return err;
}

static void update_time(struct flow_run *r)
{
	uint32_t lost_mtc, lost_cyc;
	uint64_t tsc;

	if (pt_blk_time(r->blk, &tsc, &lost_mtc, &lost_cyc) < 0)
		return; /* pte_no_time: no timing packet yet */
	if (r->have_tsc && tsc == r->tsc)
		return;
	r->tsc = tsc;
	r->tick = tc_to_ns(&r->fd->cfg.time, tsc);
	r->have_tsc = 1;
}

/* r->tick as of libipt's current position.  Reading the time costs a
 * call into libipt, so after a block it is read only if the block
 * reports something. */
static inline void time_now(struct flow_run *r)
{
	if (r->time_stale) {
		r->time_stale = 0;
		update_time(r);
	}
}

/* Report the pending block end now that the next ip (@to, 0: unknown) is
 * known. */
static int resolve(struct flow_run *r, uint64_t to)
{
	struct flow_pending *p = &r->pend;
	enum br_kind kind;

	if (!p->valid)
		return 0;
	p->valid = 0;
	switch (p->end) {
	case BC_END_CALL:
		kind = BR_CALL;
		break;
	case BC_END_RET:
		kind = BR_RETURN;
		break;
	case BC_END_JUMP:
	case BC_END_FAR_JUMP:
		if (!to)
			return 0;
		if (p->entry && p->entry->memo_to == to &&
		    p->entry->memo_entry >= 0) {
			if (!p->entry->memo_entry)
				return 0;
		} else {
			int e = is_entry(r->fd, to);

			if (p->entry) {
				p->entry->memo_to = to;
				p->entry->memo_entry = e;
			}
			if (!e)
				return 0;
		}
		kind = BR_JUMP;
		break;
	case BC_END_COND:
		if (to != p->end_target)
			return 0;
		kind = BR_JUMP;
		break;
	case BC_END_SYSCALL:
		kind = BR_SYSCALL;
		break;
	case BC_END_FAR_RET:
		kind = BR_FAR_RETURN;
		break;
	default:
		return 0;
	}
	return emit(r, kind, p->from, to, kind == BR_CALL ? p->ret : 0, p->tick,
		    p->icount, 0);
}

static int bits_of(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_16bit:
		return 16;
	case ptem_32bit:
		return 32;
	case ptem_64bit:
	case ptem_unknown:
		break;
	}
	return 64;
}

static int walk_push(struct flow_decoder *fd, size_t *n,
		     const struct bc_branch *br)
{
	if (*n == fd->walk_cap) {
		size_t ncap = fd->walk_cap ? fd->walk_cap * 2 : 16;
		struct bc_branch *nw = realloc(fd->walk, ncap * sizeof(*nw));

		if (!nw)
			return PS_ERR_NOMEM;
		fd->walk = nw;
		fd->walk_cap = ncap;
	}
	fd->walk[(*n)++] = *br;
	return 0;
}

/* Read the instruction bytes at @ip, joining adjacent mappings; a
 * truncated block's last instruction comes from libipt's copy. */
static int read_insn(struct flow_decoder *fd, const struct pt_block *b,
		     int last, uint64_t ip, uint8_t *buf)
{
	int n = img_read(fd->img, ip, buf, 15);

	if (last && b->truncated && b->size && (n < 0 || n < b->size)) {
		memcpy(buf, b->raw, b->size);
		return b->size;
	}
	if (n <= 0)
		return n;
	if (n < 15) {
		int m = img_read(fd->img, ip + (uint64_t)n, buf + n,
				 (size_t)(15 - n));

		if (m > 0)
			n += m;
	}
	return n;
}

/* Walk the instructions of a block seen for the first time and cache
 * what they do.  On failure *bad_ip / *bad_err say where and why. */
static struct bc_block *learn(struct flow_run *r, const struct pt_block *b,
			      uint64_t *bad_ip, int *bad_err)
{
	struct flow_decoder *fd = r->fd;
	struct bc_block e;
	struct bc_branch br;
	struct insn_info in;
	uint64_t ip = b->ip;
	int bits = bits_of(b->mode);
	size_t nbr = 0;
	struct bc_block *s;

	memset(&e, 0, sizeof(e));
	e.ip = b->ip;
	e.end_ip = b->end_ip;
	e.ninsn = b->ninsn;
	e.memo_entry = -1;
	for (uint32_t i = 0; i < b->ninsn; i++) {
		uint8_t buf[15];
		int last = i + 1 == b->ninsn;
		int n = read_insn(fd, b, last, ip, buf);

		*bad_ip = ip;
		if (n <= 0) {
			*bad_err = -pte_nomap;
			return NULL;
		}
		if (insn_decode(fd->insn, bits, ip, buf, (size_t)n, &in)) {
			*bad_err = -pte_bad_insn;
			return NULL;
		}
		br.from = ip;
		br.ret = ip + in.len;
		br.to = in.target;
		br.index = i;
		if (last) {
			if (ip != b->end_ip) {
				*bad_err = -pte_internal;
				return NULL;
			}
			e.end_len = in.len;
			break;
		}
		if (in.cls == INSN_CALL && in.direct) {
			/* call-next-instruction only pushes an address */
			if (in.target != br.ret) {
				br.kind = BR_CALL;
				if (walk_push(fd, &nbr, &br))
					goto nomem;
			}
			ip = in.target;
		} else if (in.cls == INSN_JUMP && in.direct) {
			if (is_entry(fd, in.target)) {
				br.kind = BR_JUMP;
				br.ret = 0;
				if (walk_push(fd, &nbr, &br))
					goto nomem;
			}
			ip = in.target;
		} else if (in.cls == INSN_OTHER) {
			ip = br.ret;
		} else {
			/* libipt ends blocks at every transfer that needs
			 * trace; anything else means the bytes differ. */
			*bad_err = -pte_bad_insn;
			return NULL;
		}
	}
	/* The last instruction (in, br describe it). */
	switch (in.cls) {
	case INSN_CALL:
		if (!in.direct) {
			e.end = BC_END_CALL;
		} else if (in.target != br.ret) {
			br.kind = BR_CALL;
			if (walk_push(fd, &nbr, &br))
				goto nomem;
		}
		break;
	case INSN_JUMP:
		if (!in.direct) {
			e.end = BC_END_JUMP;
		} else if (is_entry(fd, in.target)) {
			br.kind = BR_JUMP;
			br.ret = 0;
			if (walk_push(fd, &nbr, &br))
				goto nomem;
		}
		break;
	case INSN_COND:
		if (in.direct && is_entry(fd, in.target)) {
			e.end = BC_END_COND;
			e.end_target = in.target;
		}
		break;
	case INSN_RET:
		e.end = BC_END_RET;
		break;
	case INSN_SYSCALL:
		e.end = BC_END_SYSCALL;
		break;
	case INSN_FAR_RET:
		e.end = BC_END_FAR_RET;
		break;
	case INSN_FAR_JUMP:
		e.end = BC_END_FAR_JUMP;
		break;
	default:
		break;
	}
	s = bc_add(fd->bc, &e, fd->walk, nbr);
	if (s)
		return s;
nomem:
	*bad_err = PS_ERR_NOMEM;
	return NULL;
}

static int on_block(struct flow_run *r, const struct pt_block *b)
{
	const struct bc_branch *br;
	struct bc_block *e;
	uint64_t base = r->icount;
	int err;

	if (r->need_enable) {
		r->pend.valid = 0;
		r->need_enable = 0;
		time_now(r);
		err = emit(r, BR_ENABLE, 0, b->ip, 0, r->tick, base, 0);
	} else {
		err = resolve(r, b->ip);
	}
	if (err < 0)
		return err;
	r->blocks++;
	r->icount += b->ninsn;
	r->last_ip = b->end_ip;
	e = bc_find(r->fd->bc, b->ip, b->ninsn, b->end_ip);
	if (!e) {
		uint64_t bad_ip = 0;
		int bad_err = 0;

		e = learn(r, b, &bad_ip, &bad_err);
		if (!e) {
			if (bad_err == PS_ERR_NOMEM)
				return PS_ERR_NOMEM;
			/* The walker could not follow libipt: say so and
			 * restart the stack at the next block. */
			if (bad_err == -pte_nomap)
				r->nomap++;
			else
				r->decode_err++;
			r->need_enable = 1;
			time_now(r);
			return emit(r, BR_ERROR, bad_ip, 0, 0, r->tick,
				    r->icount, bad_err);
		}
	}
	if (r->fd->block || e->nbr || e->end != BC_END_NONE)
		time_now(r);
	if (r->fd->block) {
		struct flow_block fb = {b->ip, b->end_ip, b->ninsn, r->tick};

		err = r->fd->block(r->ctx, &fb, 0);
		if (err < 0)
			return err;
	}
	br = bc_branches(r->fd->bc, e);
	for (uint32_t i = 0; i < e->nbr; i++) {
		err = emit(r, (enum br_kind)br[i].kind, br[i].from, br[i].to,
			   br[i].ret, r->tick, base + br[i].index + 1, 0);
		if (err < 0)
			return err;
	}
	if (r->fd->block) {
		struct flow_block fb = {b->ip, b->end_ip, b->ninsn, r->tick};

		err = r->fd->block(r->ctx, &fb, 1);
		if (err < 0)
			return err;
	}
	if (e->end != BC_END_NONE) {
		r->pend.valid = 1;
		r->pend.end = e->end;
		r->pend.from = b->end_ip;
		r->pend.ret = b->end_ip + e->end_len;
		r->pend.end_target = e->end_target;
		r->pend.tick = r->tick;
		r->pend.icount = r->icount;
		r->pend.entry = e;
	}
	return 0;
}

static int on_event(struct flow_run *r, const struct pt_event *ev)
{
	int err;

	switch (ev->type) {
	case ptev_enabled:
		r->pend.valid = 0;
		r->need_enable = 0;
		return emit(r, BR_ENABLE, 0, ev->variant.enabled.ip, 0, r->tick,
			    r->icount, 0);
	case ptev_disabled: {
		uint64_t to = ev->ip_suppressed ? 0 : ev->variant.disabled.ip;
		uint64_t from = r->last_ip;
		int syscall = r->pend.valid && r->pend.end == BC_END_SYSCALL;

		if (r->pend.valid)
			from = r->pend.from;
		err = resolve(r, to);
		r->need_enable = 1;
		if (err < 0 || syscall)
			return err;
		return emit(r, BR_DISABLE, from, to, 0, r->tick, r->icount, 0);
	}
	case ptev_async_disabled:
		err = resolve(r, ev->variant.async_disabled.at);
		r->need_enable = 1;
		if (err < 0)
			return err;
		return emit(r, BR_INTERRUPT, ev->variant.async_disabled.at, 0,
			    0, r->tick, r->icount, 0);
	case ptev_async_branch:
		err = resolve(r, ev->variant.async_branch.from);
		if (err < 0)
			return err;
		return emit(r, BR_INTERRUPT, ev->variant.async_branch.from,
			    ev->variant.async_branch.to, 0, r->tick, r->icount,
			    0);
	case ptev_overflow:
		r->overflow++;
		err = resolve(r, 0);
		if (err < 0)
			return err;
		return emit(r, BR_OVERFLOW, 0,
			    ev->ip_suppressed ? 0 : ev->variant.overflow.ip, 0,
			    r->tick, r->icount, 0);
	case ptev_paging:
	case ptev_async_paging:
	case ptev_exec_mode:
	case ptev_tsx:
	case ptev_stop:
	case ptev_vmcs:
	case ptev_async_vmcs:
	case ptev_exstop:
	case ptev_mwait:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_ptwrite:
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
		/* Address space, power and data events do not change
		 * which function runs. */
		return 0;
	}
	return 0;
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
				time_now(r);
				*derr = status;
				*dip = 0;
				return status == -pte_eos ? 0 : 1;
			}
			time_now(r);
			err = on_event(r, &ev);
			if (err < 0)
				return err;
		}
		if (status & pts_eos) {
			time_now(r);
			return 0;
		}
		b.ninsn = 0;
		b.ip = 0;
		status = pt_blk_next(r->blk, &b, sizeof(b));
		r->time_stale = 1;
		if (b.ninsn) {
			uint64_t off = 0;

			err = on_block(r, &b);
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
			time_now(r);
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
static int resync(struct flow_run *r, const struct pt_config *cfg)
{
	static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82};
	uint64_t pos = 0, sync = 0, lo;
	const uint8_t *buf = cfg->begin;

	if (pt_blk_get_offset(r->blk, &pos) < 0 ||
	    pt_blk_get_sync_offset(r->blk, &sync) < 0 || pos < sizeof(psb))
		return pt_blk_sync_forward(r->blk);
	lo = pos > 256 ? pos - 256 : 0;
	if (lo <= sync)
		lo = sync + 1;
	for (uint64_t p = pos - sizeof(psb); p >= lo && p <= pos; p--) {
		if (memcmp(buf + p, psb, sizeof(psb)))
			continue;
		if (psb_plus_ends_at(cfg, p, pos))
			return pt_blk_sync_set(r->blk, p);
		break;
	}
	return pt_blk_sync_forward(r->blk);
}

static void add_stats(const struct flow_run *r, size_t len,
		      struct dec_stats *st)
{
	if (!st)
		return;
	st->bytes += len;
	st->instructions += r->icount;
	st->blocks += r->blocks;
	st->branches += r->branches;
	st->err_overflow += r->overflow;
	st->err_nomap += r->nomap;
	st->err_decode += r->decode_err;
	st->err_truncated += r->truncated;
}

int flow_open(struct flow_decoder *fd, const uint8_t *pt, size_t len,
	      br_sink_fn sink, void *sink_ctx, struct dec_stats *stats,
	      struct flow_stream **out)
{
	struct flow_stream *st;
	int status, err;

	if (!out)
		return PS_ERR_INVAL;
	*out = NULL;
	if (!fd || !pt || !sink)
		return PS_ERR_INVAL;
	if (img_generation(fd->img) != fd->img_gen) {
		bc_clear(fd->bc);
		fd->img_gen = img_generation(fd->img);
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return PS_ERR_NOMEM;
	st->r.fd = fd;
	st->r.sink = sink;
	st->r.ctx = sink_ctx;
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
	st->r.blk = pt_blk_alloc_decoder(&st->cfg);
	if (!st->r.blk) {
		free(st);
		return ps_err_detail(PS_ERR_DECODE,
				     "libipt refused the decoder "
				     "configuration");
	}
	status = pt_blk_set_image(st->r.blk, img_pt_image(fd->img));
	if (status >= 0)
		status = pt_blk_sync_forward(st->r.blk);
	/* A PSB+ that libipt cannot read: try the next one. */
	for (int tries = 0; status < 0 && status != -pte_eos && tries < 1024;
	     tries++)
		status = pt_blk_sync_forward(st->r.blk);
	if (status < 0) {
		pt_blk_free_decoder(st->r.blk);
		free(st);
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
	*out = st;
	return 0;
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

		err = run_synced(r, &st->status, &derr, &dip);
		if (err == 2)
			return FLOW_PAUSE;
		if (err <= 0)
			break;
		st->status = resync(r, &st->cfg);
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
		err = resolve(r, dip);
		if (err < 0)
			break;
		err = emit(r, BR_ERROR, dip, 0, 0, r->tick, r->icount, derr);
		if (err < 0 || st->status < 0)
			break;
		r->need_enable = 1;
	}
	st->done = 1;
	if (err < 0)
		return err;
	if (r->stale)
		r->truncated++;
	err = resolve(r, 0);
	if (err >= 0)
		err = emit(r, BR_END, 0, 0, 0, r->tick, r->icount, 0);
	r->pause = 0;
	return err < 0 ? err : 0;
}

void flow_close(struct flow_stream *st)
{
	if (!st)
		return;
	pt_blk_free_decoder(st->r.blk);
	add_stats(&st->r, st->len, st->stats);
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
