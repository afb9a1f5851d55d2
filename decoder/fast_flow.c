/* SPDX-License-Identifier: MIT */
/* The fast flow engine (see fast_flow.h).  The functions mirror libipt
 * 2.0.5's block decoder (libipt/src/pt_block_decoder.c), named after the
 * one each stands for, restricted to what fast_query.c reads: no VMCS,
 * PTWRITE, TSX abort or power events (those send the stream to libipt),
 * and of libipt's postponed instructions only a MOV to CR3 that a paging
 * event binds to.  Instructions come from the run cache, so a block that
 * ends at a branch needing trace is one cache probe plus one query. */
#include "decoder/fast_flow.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/fast_event.h"
#include "decoder/fast_query.h"
#include "decoder/fast_runs.h"
#include "decoder/fast_state.h"
#include "decoder/flow_run.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"

/* pt_blk_run's libipt counterpart gives up on a stream after this many
 * instructions without a new trace byte (flow.c says why); here such a
 * stream goes to libipt, which reports it. */
#define FF_MAX_INSNS_WITHOUT_TRACE (1ull << 20)

static void rs_push(struct ff_decoder *d, uint64_t ip)
{
	d->rs[d->rs_top] = ip;
	d->rs_top = d->rs_top == RETSTACK_SIZE ? 0 : d->rs_top + 1;
	if (d->rs_bottom == d->rs_top)
		d->rs_bottom =
		    d->rs_bottom == RETSTACK_SIZE ? 0 : d->rs_bottom + 1;
}

static int rs_pop(struct ff_decoder *d, uint64_t *ip)
{
	if (d->rs_top == d->rs_bottom)
		return -pte_retstack_empty;
	d->rs_top = d->rs_top ? d->rs_top - 1 : RETSTACK_SIZE;
	*ip = d->rs[d->rs_top];
	return 0;
}

/* pt_blk_status */
static int blk_status(const struct ff_decoder *d, int flags)
{
	if (!d->enabled)
		flags |= pts_ip_suppressed;
	if ((d->status & pts_eos) && !d->process_event)
		flags |= pts_eos;
	return flags;
}

/* pt_blk_fetch_event */
static int fetch_event(struct ff_decoder *d)
{
	int status;

	if (d->process_event)
		return 1;
	if (!(d->status & pts_event_pending))
		return 0;
	status = fq_event(&d->q, &d->event);
	if (status < 0)
		return status;
	d->process_event = 1;
	d->status = status;
	return 1;
}

static int is_decision(uint8_t cls)
{
	return cls != FR_SECTION;
}

/* pt_blk_next_ip for the instruction @in that needs trace, into *@ip
 * (pt_blk_proceed_with_trace without the ip-suppressed check). */
static inline __attribute__((always_inline)) int
next_ip_with_trace(struct ff_decoder *d, const struct ff_insn *in, uint64_t *ip)
{
	int status, taken;

	switch (in->cls) {
	case INSN_COND:
		status = fq_cond_branch(&d->q, &taken);
		if (status < 0)
			return status;
		*ip = taken ? in->target : in->ip + in->len;
		return status;
	case INSN_RET:
		status = fq_cond_branch(&d->q, &taken);
		if (status < 0) {
			if (status != -pte_bad_query)
				return status;
			break;
		}
		if (!taken)
			return -pte_bad_retcomp;
		{
			int err = rs_pop(d, ip);

			if (err < 0)
				return err;
		}
		return status;
	default:
		break;
	}
	return fq_indirect_branch(&d->q, ip);
}

/* pt_blk_proceed_with_trace */
static int proceed_with_trace(struct ff_decoder *d, const struct ff_insn *in)
{
	int status = next_ip_with_trace(d, in, &d->ip);

	if (status < 0)
		return status;
	d->status = status;
	if (status & pts_ip_suppressed)
		return -pte_noip;
	return 0;
}

/* Start @b (empty) in the mapping of @run. */
static void block_section(struct ff_decoder *d, const struct fr_run *run)
{
	d->sec_lo = run->sec_lo;
	d->sec_hi = run->sec_hi;
}

/* A run cache error: libipt's own (no code, bad code) as libipt reports
 * it; the rest goes to libipt. */
static int run_error(int err)
{
	if (err == -pte_nomap || err == -pte_bad_insn)
		return err;
	return err == PS_ERR_NOMEM ? FF_NOMEM : FF_FALLBACK;
}

/* insn_is_mov_cr3 for the instruction at @ip, @len bytes long: 1, 0, or
 * FF_FALLBACK (its bytes cannot be read again). */
static int is_mov_cr3(struct ff_decoder *d, uint64_t ip, uint8_t len)
{
	uint8_t b[15];

	if (len > sizeof(b) || img_read(d->img, ip, b, len) < len)
		return FF_FALLBACK;
	return insn_is_mov_cr3(b, len);
}

/* What a walk looks for (libipt's proceed functions and predicates). */
enum walk_to {
	TO_IP,	/* pt_blk_proceed_to_ip */
	TO_CR3, /* pt_blk_proceed_to_insn, pt_insn_changes_cr3 */
	TO_PIP	/* pt_blk_proceed_to_insn, pt_insn_binds_to_pip */
};

/* Does @in end a walk @to (TO_CR3, TO_PIP)?  1 yes (a MOV to CR3), 0
 * no, FF_FALLBACK for a far branch a paging event binds to (libipt would
 * postpone it, and proceeding past it needs trace: libipt's), or an
 * error. */
static int walk_stops_at(struct ff_decoder *d, enum walk_to to,
			 const struct fr_insn *in)
{
	if (to == TO_PIP &&
	    (in->cls == INSN_SYSCALL || in->cls == INSN_FAR_JUMP ||
	     in->cls == INSN_FAR_RET))
		return FF_FALLBACK;
	if (in->cls != INSN_OTHER)
		return 0;
	return is_mov_cr3(d, in->ip, in->len);
}

/* pt_blk_proceed_to_ip (@to TO_IP, to @ip) or pt_blk_proceed_to_insn
 * (the instruction a predicate meets), an instruction at a time: returns
 * 1 (reached @ip, or the instruction, which is *@last and where d->ip
 * stays), 0 (the block ends: another mapping next), -pte_bad_query
 * (*@last needs trace), FF_FALLBACK or an error. */
static int walk(struct ff_decoder *d, struct pt_block *b, enum walk_to to,
		uint64_t ip, struct ff_insn *last)
{
	int to_ip = to == TO_IP;

	for (;;) {
		struct fr_run *run;
		const struct fr_insn *ins;
		int err;

		if (to_ip && d->ip == ip)
			return 1;
		err = fr_get(d->runs, d->ip, &run);
		if (err)
			return run_error(err);
		if (b->ninsn &&
		    (run->sec_lo != d->sec_lo || run->sec_hi != d->sec_hi))
			return 0;
		if (!b->ninsn)
			block_section(d, run);
		ins = fr_insns(d->runs) + run->first;
		for (uint32_t i = 0; i < run->ninsn; i++) {
			const struct fr_insn *in = &ins[i];

			if (to_ip && in->ip == ip) {
				d->ip = ip;
				return 1;
			}
			if (b->ninsn == UINT16_MAX)
				return FF_FALLBACK;
			b->ninsn++;
			b->end_ip = in->ip;
			last->ip = in->ip;
			last->target = in->target;
			last->len = in->len;
			last->cls = in->cls;
			last->direct = in->direct;
			if (in->cls == INSN_CALL &&
			    !(in->direct && in->target == in->ip + in->len))
				rs_push(d, in->ip + in->len);
			if (!to_ip) {
				err = walk_stops_at(d, to, in);
				if (err) {
					d->ip = in->ip;
					return err;
				}
			}
			if (i + 1 == run->ninsn && is_decision(run->end)) {
				d->ip = in->ip;
				return -pte_bad_query;
			}
			if (in->direct &&
			    (in->cls == INSN_CALL || in->cls == INSN_JUMP))
				d->ip = in->target;
			else
				d->ip = in->ip + in->len;
		}
		/* The run left its mapping (d->ip is in another one), or
		 * libipt cannot decode what comes next. */
		if (run->end == FR_ERROR && !(to_ip && d->ip == ip))
			return run->error;
	}
}

/* pt_blk_set_disable_resume_ip */
static void disable_resume_ip(struct ff_decoder *d, const struct ff_insn *in)
{
	if (in->cls == INSN_CALL || in->cls == INSN_SYSCALL)
		d->ip = in->ip + in->len;
	else
		d->ip = 0;
}

/* Erratum SKD022 (pt_blk_handle_erratum_skd022) turns an asynchronous
 * disable at VMLAUNCH or VMRESUME (0f 01 c2, 0f 01 c3) into a synchronous
 * one; user code does not run those, and if it ever does, libipt
 * decides. */
static int skd022_check(struct ff_decoder *d, uint64_t at)
{
	uint8_t b[3];

	if (!d->skd022 || img_read(d->img, at, b, sizeof(b)) < 3)
		return 0;
	if (b[0] == 0x0f && b[1] == 0x01 && (b[2] == 0xc2 || b[2] == 0xc3))
		return FF_FALLBACK;
	return 0;
}

/* pt_blk_proceed_event */
static int proceed_event(struct ff_decoder *d, struct pt_block *b)
{
	struct pt_event *ev = &d->event;
	struct ff_insn last;
	int status;

	memset(&last, 0, sizeof(last));
	switch (ev->type) {
	case ptev_enabled:
	case ptev_cbr:
	case ptev_overflow:
		break;
	case ptev_disabled:
		/* pt_blk_proceed_to_disabled (SKL014 needs address
		 * filters, which ptscope never sets) */
		status = walk(d, b, ev->ip_suppressed ? TO_CR3 : TO_IP,
			      ev->variant.disabled.ip, &last);
		if (status <= 0) {
			if (status != -pte_bad_query)
				return status;
			disable_resume_ip(d, &last);
		}
		break;
	case ptev_async_disabled:
		status =
		    walk(d, b, TO_IP, ev->variant.async_disabled.at, &last);
		if (status <= 0)
			return status;
		status = skd022_check(d, ev->variant.async_disabled.at);
		if (status < 0)
			return status;
		break;
	case ptev_async_branch:
		status =
		    walk(d, b, TO_IP, ev->variant.async_branch.from, &last);
		if (status <= 0)
			return status;
		break;
	case ptev_exec_mode:
		if (ev->ip_suppressed)
			break;
		status = walk(d, b, TO_IP, ev->variant.exec_mode.ip, &last);
		if (status == -pte_bad_query)
			status = proceed_with_trace(d, &last);
		if (status < 0)
			return status;
		if (d->ip != ev->variant.exec_mode.ip)
			return 0;
		break;
	case ptev_paging:
		/* applied at once while tracing is off */
		if (!d->enabled)
			break;
		status = walk(d, b, TO_PIP, 0, &last);
		if (status <= 0)
			return status;
		/* pt_blk_postpone_insn: only one at a time */
		if (d->process_insn)
			return -pte_internal;
		d->process_insn = 1;
		d->pinsn = last;
		break;
	case ptev_async_paging:
		/* pt_blk_proceed_to_async_paging */
		if (ev->ip_suppressed)
			break;
		status = walk(d, b, TO_IP, ev->variant.async_paging.ip, &last);
		if (status == -pte_bad_query)
			status = proceed_with_trace(d, &last);
		if (status < 0)
			return status;
		if (d->ip != ev->variant.async_paging.ip)
			return 0;
		break;
	case ptev_tsx:
		if (ev->ip_suppressed)
			break;
		status = walk(d, b, TO_IP, ev->variant.tsx.ip, &last);
		if (status <= 0)
			return status;
		break;
	default:
		return FF_FALLBACK;
	}
	return blk_status(d, pts_event_pending);
}

/* pt_blk_proceed_postponed_insn (with pt_blk_clear_postponed_insn): past
 * the postponed MOV to CR3, which needs no trace, if tracing is still on. */
static void proceed_postponed(struct ff_decoder *d)
{
	if (!d->process_insn)
		return;
	if (d->enabled)
		d->ip = d->pinsn.ip + d->pinsn.len;
	d->process_insn = 0;
}

/* pt_blk_proceed_trailing_event */
int ff_trailing_event(struct ff_decoder *d)
{
	struct pt_event *ev = &d->event;
	int status = fetch_event(d);

	if (status <= 0) {
		if (status < 0)
			return status;
		proceed_postponed(d);
		return blk_status(d, 0);
	}
	switch (ev->type) {
	case ptev_disabled:
		if (!d->process_insn)
			break;
		/* a disable binds to the postponed MOV to CR3 ... */
		if (ev->ip_suppressed)
			return blk_status(d, pts_event_pending);
		/* ... or to where the decoder goes past it, which libipt
		 * computes here whether tracing is still on or not */
		d->ip = d->pinsn.ip + d->pinsn.len;
		d->process_insn = 0;
		if (d->ip == ev->variant.disabled.ip)
			return blk_status(d, pts_event_pending);
		break;
	case ptev_enabled:
	case ptev_cbr:
	case ptev_overflow:
		proceed_postponed(d);
		return blk_status(d, pts_event_pending);
	case ptev_async_disabled:
		proceed_postponed(d);
		if (d->ip != ev->variant.async_disabled.at)
			break;
		status = skd022_check(d, ev->variant.async_disabled.at);
		if (status < 0)
			return status;
		return blk_status(d, pts_event_pending);
	case ptev_async_branch:
		proceed_postponed(d);
		if (d->ip != ev->variant.async_branch.from)
			break;
		return blk_status(d, pts_event_pending);
	case ptev_exec_mode:
		proceed_postponed(d);
		if (!ev->ip_suppressed && d->ip != ev->variant.exec_mode.ip)
			break;
		return blk_status(d, pts_event_pending);
	case ptev_tsx:
		proceed_postponed(d);
		if (!ev->ip_suppressed && d->ip != ev->variant.tsx.ip)
			break;
		return blk_status(d, pts_event_pending);
	case ptev_async_paging:
		proceed_postponed(d);
		if (!ev->ip_suppressed && d->ip != ev->variant.async_paging.ip)
			break;
		return blk_status(d, pts_event_pending);
	case ptev_paging:
		if (!d->enabled)
			return blk_status(d, pts_event_pending);
		/* one paging event per instruction, and the postponed one
		 * already has its own (libipt's bound_paging is set whenever
		 * an instruction is postponed here): this one waits for the
		 * normal event flow */
		break;
	default:
		return FF_FALLBACK;
	}
	proceed_postponed(d);
	return blk_status(d, 0);
}

/* pt_blk_proceed_no_event over the run cache: a whole run to the next
 * branch that needs trace, and that query. */
static int proceed_no_event(struct ff_decoder *d, struct pt_block *b)
{
	struct fr_run *run;
	const uint64_t *calls;
	struct ff_insn in;
	int status, err;

	err = fr_get(d->runs, d->ip, &run);
	if (err)
		return run_error(err);
	block_section(d, run);
	if (run->ncalls) {
		calls = fr_calls(d->runs) + run->calls;
		for (uint32_t i = 0; i < run->ncalls; i++)
			rs_push(d, calls[i]);
	}
	b->ninsn = (uint16_t)run->ninsn;
	b->end_ip = run->end_ip;
	if (run->end == FR_SECTION || run->end == FR_ERROR) {
		d->ip = run->next_ip;
		if (run->end == FR_ERROR)
			return run->error;
		d->run = run;
		return 0;
	}
	d->run = run;
	in.ip = run->end_ip;
	in.len = run->end_len;
	in.cls = run->end;
	in.target = run->target;
	in.direct = 0;
	if (in.cls == INSN_CALL)
		rs_push(d, in.ip + in.len);
	status = next_ip_with_trace(d, &in, &d->ip);
	if (status < 0)
		return status;
	/* libipt's cached path keeps a suppressed ip without a word; such
	 * streams are libipt's. */
	if (status & pts_ip_suppressed)
		return FF_FALLBACK;
	d->status = status;
	return 0;
}

/* pt_blk_next */
static int blk_next(struct ff_decoder *d, struct pt_block *b)
{
	int status;

	memset(b, 0, sizeof(*b));
	b->ip = d->ip;
	b->mode = d->mode;
	d->run = NULL;
	status = fetch_event(d);
	if (status) {
		if (status < 0)
			return status;
		if (d->mode != ptem_64bit && d->enabled)
			return FF_FALLBACK;
		return proceed_event(d, b);
	}
	if (!d->enabled)
		return (d->status & pts_eos) ? -pte_eos : -pte_no_enable;
	if (d->mode != ptem_64bit)
		return FF_FALLBACK;
	status = proceed_no_event(d, b);
	if (status < 0)
		return status;
	/* most blocks: no event at hand (fetch_event would return 0), and
	 * nothing postponed (only an event's trailing path leaves an
	 * instruction postponed, and only while more events follow) */
	if (!d->process_event && !(d->status & pts_event_pending))
		return blk_status(d, 0);
	return ff_trailing_event(d);
}

/* Hand a block to the flow layer; a whole run's classification is kept
 * with the run, so later visits skip the block cache. */
static int on_block(struct ff_decoder *d, struct flow_run *r,
		    const struct pt_block *b)
{
	struct bc_block *e;
	int err;

	if (d->run && d->run->cls)
		return flow_on_known_block(r, b, d->run->cls);
	/* Where ptscope's instruction classifier disagrees with libipt,
	 * libipt's block boundaries decide. */
	err = flow_learn_block(r, b,
			       d->run && d->run->by_table
				   ? fr_insns(d->runs) + d->run->first
				   : NULL,
			       &e);
	if (err)
		return err < 0 ? err : FF_FALLBACK;
	if (d->run) {
		err = fr_keep_cls(d->runs, d->run, e);
		if (err)
			return err;
		return flow_on_known_block(r, b, d->run->cls);
	}
	return flow_on_block(r, b);
}

/* The loop guard: @ninsn more instructions followed since the trace
 * last moved (a packet read); 1 once there are too many. */
static inline int too_long_without_trace(struct ff_decoder *d, uint32_t ninsn)
{
	if (d->q.pos != d->still_pos) {
		d->still_pos = d->q.pos;
		d->still_insns = 0;
	}
	d->still_insns += ninsn;
	return d->still_insns > FF_MAX_INSNS_WITHOUT_TRACE;
}

/* Blocks that report nothing, one after another, while the TNT packet at
 * hand has bits left: each what the loop of ff_run does for it (blk_next,
 * proceed_no_event, the loop guard, on_block and flow_on_known_block's
 * first case), without the tests for what cannot change from one such
 * block to the next: no event comes (no packet is read), nothing is
 * postponed or pending, the mode stays and no stop is reached (a segment
 * stops only with no TNT bits left).  A CPU fills most TNT packets (6
 * bits), so most of a loop's blocks go this way on a real recording; the
 * emulated backends' TNTs hold 2-3 bits.  Called with no status flags;
 * returns 0, or FF_FALLBACK where the loop guard trips. */
static inline __attribute__((always_inline)) int
quiet_blocks(struct ff_decoder *d, struct flow_run *r)
{
	if (d->q.tnt_index <= 1 || d->status || d->process_event ||
	    d->process_insn || !d->enabled || d->mode != ptem_64bit ||
	    !flow_run_quiet(r))
		return 0;
	do {
		uint32_t idx;
		struct fr_run *run = fr_peek(d->runs, d->ip, &idx);
		const struct bc_block *e;

		if (!run || run->end != INSN_COND || !run->cls)
			return 0;
		e = run->cls;
		if (!flow_block_quiet(e))
			return 0;
		/* blk_next and proceed_no_event */
		fr_take(d->runs, run, idx);
		block_section(d, run);
		if (run->ncalls) {
			const uint64_t *calls = fr_calls(d->runs) + run->calls;

			for (uint32_t i = 0; i < run->ncalls; i++)
				rs_push(d, calls[i]);
		}
		d->run = run;
		/* fq_cond_branch with a bit at hand that is not the last */
		d->ip = (d->q.tnt & d->q.tnt_index)
			    ? run->target
			    : run->end_ip + run->end_len;
		d->q.tnt_index >>= 1;
		r->time_stale = 1;
		if (too_long_without_trace(d, run->ninsn))
			return FF_FALLBACK;
		/* flow_on_known_block: only the counts move */
		flow_count_quiet(r, run->ninsn, run->end_ip, e);
	} while (d->q.tnt_index > 1);
	return 0;
}

int ff_run(struct ff_decoder *d, struct flow_run *r, int *derr, uint64_t *dip)
{
	int status = d->flow_status;

	for (;;) {
		struct pt_block b;
		int err;

		if (r->pause) {
			r->pause = 0;
			d->flow_status = status;
			return 2;
		}
		while (status & pts_event_pending) {
			struct pt_event ev;

			status = ff_blk_event(d, &ev);
			r->time_stale = 1;
			if (status < 0) {
				if (!ff_is_libipt_error(status))
					return status == FF_NOMEM ? PS_ERR_NOMEM
								  : FF_FALLBACK;
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
		if (d->stop_at && d->q.pos >= d->stop_at) {
			if (d->q.pos > d->stop_at + 65536)
				return FF_FALLBACK; /* the seam was missed */
			if (!d->q.tnt_index && !d->process_event &&
			    !d->process_insn && d->enabled &&
			    d->ip == d->stop_ip) {
				d->flow_status = status;
				return 3;
			}
		}
		if (status & pts_eos) {
			flow_time_now(r);
			d->flow_status = status;
			return 0;
		}
		if (!status) {
			err = quiet_blocks(d, r);
			if (err)
				return err;
		}
		status = blk_next(d, &b);
		if (status < 0 && !ff_is_libipt_error(status))
			return status == FF_NOMEM ? PS_ERR_NOMEM : FF_FALLBACK;
		r->time_stale = 1;
		if (b.ninsn) {
			if (too_long_without_trace(d, b.ninsn))
				return FF_FALLBACK;
			err = on_block(d, r, &b);
			if (err)
				return err;
		}
		if (status < 0) {
			flow_time_now(r);
			if (status == -pte_eos)
				return 0;
			*derr = status;
			*dip = b.ninsn ? 0 : b.ip;
			return 1;
		}
	}
}
