/* SPDX-License-Identifier: MIT */
/* What libipt's blocks and events mean as branch events (see flow.h and
 * flow_run.h): a block's instructions walked once and cached (calls and
 * tail calls run through inside it, how it ends), its end reported when
 * the next ip shows where it went, events mapped to BR_* kinds, and the
 * time of each event. */
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/blockcache.h"
#include "decoder/branch_pack.h"
#include "decoder/fast_runs.h"
#include "decoder/flow_run.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "decoder/timeconv.h"
#include "ptscope/error.h"

static int is_entry(const struct flow_decoder *fd, uint64_t ip)
{
	return fd->fn.is_func_entry && fd->fn.is_func_entry(fd->fn.ctx, ip);
}

/* The steps of a block that reports something (its start, its events,
 * each event's emit, the time) are inlined into the one function the
 * fast engine calls per block: as calls they cost a tenth of the flow
 * engine's instructions on call-heavy code (2026-12-07).  The exported
 * names below stay for flow.c and fast_flow.c's rarer paths. */
#define HOT static inline __attribute__((always_inline))

HOT int emit(struct flow_run *r, enum br_kind kind, uint64_t from, uint64_t to,
	     uint64_t ret, uint64_t tick, uint64_t icount, int err)
{
	struct br_event ev;
	uint64_t ts = (tick > r->last_ts || !r->sent) ? tick : r->last_ts + 1;

	r->last_ts = ts;
	r->sent = 1;
	r->branches++;
	if (r->seg_first)
		r->seg_bad = 1;
	if (r->skip) {
		r->skip--;
		return 0;
	}
	r->emitted++;
	if (r->pack)
		return br_pack_put(r->pack, kind, from, to, ret, ts, icount,
				   err);
	ev = (struct br_event){kind, from, to, ret, ts, icount, err};
	err = r->sink(r->ctx, &ev);
	if (err == FLOW_PAUSE) {
		r->pause = 1;
		return 0;
	}
	return err;
}

int flow_emit(struct flow_run *r, enum br_kind kind, uint64_t from, uint64_t to,
	      uint64_t ret, uint64_t tick, uint64_t icount, int err)
{
	return emit(r, kind, from, to, ret, tick, icount, err);
}

HOT void update_time(struct flow_run *r)
{
	uint32_t lost_mtc, lost_cyc;
	uint64_t tsc;

	if (r->blk ? pt_blk_time(r->blk, &tsc, &lost_mtc, &lost_cyc) < 0
		   : r->time_fn(r->time_ctx, &tsc) < 0)
		return; /* pte_no_time: no timing packet yet */
	if (r->have_tsc && tsc == r->tsc)
		return;
	r->tsc = tsc;
	r->tick = tc_to_ns(&r->fd->cfg.time, tsc);
	r->have_tsc = 1;
}

void flow_update_time(struct flow_run *r)
{
	update_time(r);
}

/* flow_time_now (flow_run.h) with the time read inline, for the hot
 * block path only.  The time read inline in flow_time_now itself, for
 * every caller, measured: the full decode the same or 1% faster, but the
 * flow engine alone 2.5% slower on loops_long (fast_flow.c's loop grows
 * by its rare paths' copies), so the rare paths keep the call. */
HOT void time_now(struct flow_run *r)
{
	if (r->time_stale) {
		r->time_stale = 0;
		update_time(r);
	}
}

/* Report the pending block end now that the next ip (@to, 0: unknown) is
 * known. */
HOT int resolve(struct flow_run *r, uint64_t to)
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

int flow_resolve(struct flow_run *r, uint64_t to)
{
	return resolve(r, to);
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
 * what they do; @known: the instructions as the table decoder gave them
 * already (see flow_learn_block), or NULL.  On failure *bad_ip / *bad_err
 * say where and why. */
static struct bc_block *learn(struct flow_run *r, const struct pt_block *b,
			      const struct fr_insn *known, uint64_t *bad_ip,
			      int *bad_err)
{
	struct flow_decoder *fd = r->fd;
	struct bc_block e;
	struct bc_branch br;
	struct insn_info in = {0};
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
		int last = i + 1 == b->ninsn;

		*bad_ip = ip;
		if (known) {
			/* what insn_decode would say of the same bytes */
			if (known[i].ip != ip) {
				*bad_err = -pte_internal;
				return NULL;
			}
			in.len = known[i].len;
			in.cls = known[i].cls;
			in.direct = known[i].direct;
			in.target = known[i].target;
		} else {
			uint8_t buf[15];
			int n = read_insn(fd, b, last, ip, buf);

			if (n <= 0) {
				*bad_err = -pte_nomap;
				return NULL;
			}
			if (insn_decode(fd->insn, bits, ip, buf, (size_t)n,
					&in)) {
				*bad_err = -pte_bad_insn;
				return NULL;
			}
		}
		if (in.cls == INSN_CALL && e.ncall < UINT16_MAX)
			e.ncall++;
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

int flow_learn_block(struct flow_run *r, const struct pt_block *b,
		     const struct fr_insn *insns, struct bc_block **out)
{
	uint64_t bad_ip = 0;
	int bad_err = 0;

	*out = bc_find(r->fd->bc, b->ip, b->ninsn, b->end_ip);
	if (!*out)
		*out = learn(r, b, insns, &bad_ip, &bad_err);
	if (*out)
		return 0;
	return bad_err == PS_ERR_NOMEM ? PS_ERR_NOMEM : 1;
}

/* What comes before a block's own events: a held disable, the enable or
 * the previous block's pending end. */
HOT int block_start(struct flow_run *r, const struct pt_block *b)
{
	uint64_t base = r->icount;
	int err;

	if (r->held) {
		err = flow_release_held(r);
		if (err < 0)
			return err;
	}
	if (r->need_enable && r->seg_first) {
		r->pend.valid = 0;
		r->need_enable = 0;
		r->seg_first = 0;
		r->seg_first_ip = b->ip;
		return 0;
	}
	if (r->need_enable) {
		r->pend.valid = 0;
		r->need_enable = 0;
		flow_time_now(r);
		err = flow_emit(r, BR_ENABLE, 0, b->ip, 0, r->tick, base, 0);
	} else {
		err = r->pend.valid ? resolve(r, b->ip) : 0;
	}
	return err;
}

/* The block's events, its classification @e known. */
HOT int block_events(struct flow_run *r, const struct pt_block *b,
		     struct bc_block *e, uint64_t base)
{
	const struct bc_branch *br;
	int err;

	r->calls += e->ncall;
	r->returns += e->end == BC_END_RET;
	/* Most blocks report nothing (no call or jump inside, nothing to
	 * resolve at their end). */
	if (!e->nbr && e->end == BC_END_NONE && !r->fd->block)
		return 0;
	time_now(r);
	if (r->fd->block) {
		struct flow_block fb = {b->ip, b->end_ip, b->ninsn, r->tick};

		err = r->fd->block(r->ctx, &fb, 0);
		if (err < 0)
			return err;
	}
	br = e->nbr ? bc_branches(r->fd->bc, e) : NULL;
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

/* The part of a block before its own events: what it resolves, then
 * the counts.  Returns 0 or the sink's error; *@base: the instruction
 * count before the block. */
HOT int block_enter(struct flow_run *r, const struct pt_block *b,
		    uint64_t *base)
{
	int err;

	*base = r->icount;
	err = block_start(r, b);
	if (err < 0)
		return err;
	r->blocks++;
	r->icount += b->ninsn;
	r->last_ip = b->end_ip;
	return 0;
}

int flow_on_known_block_events(struct flow_run *r, const struct pt_block *b,
			       struct bc_block *e)
{
	uint64_t base;
	int err = block_enter(r, b, &base);

	return err < 0 ? err : block_events(r, b, e, base);
}

int flow_on_block(struct flow_run *r, const struct pt_block *b)
{
	uint64_t base, bad_ip = 0;
	int bad_err = 0;
	struct bc_block *e;
	int err = block_enter(r, b, &base);

	if (err < 0)
		return err;
	e = bc_find(r->fd->bc, b->ip, b->ninsn, b->end_ip);
	if (!e)
		e = learn(r, b, NULL, &bad_ip, &bad_err);
	if (e)
		return block_events(r, b, e, base);
	if (bad_err == PS_ERR_NOMEM)
		return PS_ERR_NOMEM;
	/* The walker could not follow libipt: say so and restart the stack
	 * at the next block. */
	if (bad_err == -pte_nomap)
		r->nomap++;
	else
		r->decode_err++;
	r->need_enable = 1;
	flow_time_now(r);
	return flow_emit(r, BR_ERROR, bad_ip, 0, 0, r->tick, r->icount,
			 bad_err);
}

int flow_release_held(struct flow_run *r)
{
	if (!r->held)
		return 0;
	r->held = 0;
	r->in_window = 0;
	return flow_emit(r, BR_INTERRUPT, r->held_at, 0, 0, r->held_tick,
			 r->held_icount, 0);
}

int flow_on_event(struct flow_run *r, const struct pt_event *ev)
{
	int err;

	if (r->held) {
		/* A data window: PTW packets while tracing pauses at held_at,
		 * then it resumes there. */
		if (ev->type == ptev_ptwrite) {
			r->in_window = 1;
			return flow_emit(r, BR_PTWRITE, r->held_at,
					 ev->variant.ptwrite.payload, 1,
					 r->tick, r->icount, 0);
		}
		if (ev->type == ptev_enabled && r->in_window &&
		    ev->variant.enabled.ip == r->held_at) {
			r->held = 0;
			r->in_window = 0;
			r->need_enable = 0;
			return 0;
		}
		err = flow_release_held(r);
		if (err < 0)
			return err;
	}
	switch (ev->type) {
	case ptev_enabled:
		r->pend.valid = 0;
		r->need_enable = 0;
		return flow_emit(r, BR_ENABLE, 0, ev->variant.enabled.ip, 0,
				 r->tick, r->icount, 0);
	case ptev_disabled: {
		uint64_t to = ev->ip_suppressed ? 0 : ev->variant.disabled.ip;
		uint64_t from = r->last_ip;
		int syscall = r->pend.valid && r->pend.end == BC_END_SYSCALL;

		if (r->pend.valid)
			from = r->pend.from;
		err = flow_resolve(r, to);
		r->need_enable = 1;
		if (err < 0 || syscall)
			return err;
		return flow_emit(r, BR_DISABLE, from, to, 0, r->tick, r->icount,
				 0);
	}
	case ptev_async_disabled:
		err = flow_resolve(r, ev->variant.async_disabled.at);
		r->need_enable = 1;
		if (err < 0)
			return err;
		/* Reported by the next event, unless that one shows a data
		 * window (flow_release_held). */
		r->held = 1;
		r->in_window = 0;
		r->held_at = ev->variant.async_disabled.at;
		r->held_tick = r->tick;
		r->held_icount = r->icount;
		return 0;
	case ptev_ptwrite:
		/* PTWRITE run by the program (tracing on). */
		return flow_emit(r, BR_PTWRITE,
				 ev->ip_suppressed ? 0 : ev->variant.ptwrite.ip,
				 ev->variant.ptwrite.payload, 0, r->tick,
				 r->icount, 0);
	case ptev_async_branch:
		err = flow_resolve(r, ev->variant.async_branch.from);
		if (err < 0)
			return err;
		return flow_emit(r, BR_INTERRUPT, ev->variant.async_branch.from,
				 ev->variant.async_branch.to, 0, r->tick,
				 r->icount, 0);
	case ptev_overflow:
		r->overflow++;
		err = flow_resolve(r, 0);
		if (err < 0)
			return err;
		return flow_emit(r, BR_OVERFLOW, 0,
				 ev->ip_suppressed ? 0
						   : ev->variant.overflow.ip,
				 0, r->tick, r->icount, 0);
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
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
		/* Address space, power and data events do not change
		 * which function runs. */
		return 0;
	}
	return 0;
}
