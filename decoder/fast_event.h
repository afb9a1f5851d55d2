/* SPDX-License-Identifier: MIT */
/* pt_blk_event of the fast flow engine: the event at hand applied to the
 * decoder's state and handed out, as libipt 2.0.5's pt_blk_event does
 * (libipt/src/pt_block_decoder.c).  Only ff_run (fast_flow.c) calls it,
 * once an event; it is inline there because out of line, rare as events
 * are, it cost the engine 2-4% on the bench streams (the loop around
 * it compiled worse).  Internal to the decoder. */
#ifndef PTSCOPE_DECODER_FAST_EVENT_H
#define PTSCOPE_DECODER_FAST_EVENT_H

#include <intel-pt.h>

#include "decoder/fast_state.h"

/* pt_blk_event: the event at hand into *@out.  Returns its status flags,
 * a libipt error, or what is not one (ff_is_libipt_error): an event it
 * does not handle is -pte_internal, and ff_run hands the stream to
 * libipt. */
static inline int ff_blk_event(struct ff_decoder *d, struct pt_event *out)
{
	struct pt_event *ev = &d->event;

	if (!d->process_event)
		return -pte_bad_query;
	switch (ev->type) {
	case ptev_enabled:
		if (ev->variant.enabled.ip == d->ip)
			ev->variant.enabled.resumed = 1;
		if (ev->status_update || d->enabled)
			return -pte_bad_context;
		if (ev->ip_suppressed)
			return -pte_noip;
		d->ip = ev->variant.enabled.ip;
		d->enabled = 1;
		break;
	case ptev_async_disabled:
		if (d->ip != ev->variant.async_disabled.at)
			return -pte_bad_query;
		/* fall through */
	case ptev_disabled:
		if (ev->status_update || !d->enabled)
			return -pte_bad_context;
		d->enabled = 0;
		break;
	case ptev_async_branch:
		if (d->ip != ev->variant.async_branch.from)
			return -pte_bad_query;
		if (ev->status_update || !d->enabled)
			return -pte_bad_context;
		d->ip = ev->variant.async_branch.to;
		break;
	case ptev_exec_mode:
		if (!ev->ip_suppressed && d->ip != ev->variant.exec_mode.ip)
			return -pte_bad_query;
		if (ev->status_update && d->enabled &&
		    d->mode != ptem_unknown &&
		    d->mode != ev->variant.exec_mode.mode)
			return -pte_bad_status_update;
		d->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_tsx:
		if (!ev->ip_suppressed && d->ip != ev->variant.tsx.ip)
			return -pte_bad_query;
		break;
	case ptev_async_paging:
		/* pt_blk_process_paging: the cr3 selects nothing here (the
		 * image's sections are for any address space) */
		if (!ev->ip_suppressed && d->ip != ev->variant.async_paging.ip)
			return -pte_bad_query;
		break;
	case ptev_paging:
	case ptev_cbr:
		break;
	case ptev_overflow:
		/* pt_blk_process_overflow: on at the FUP's ip, or off */
		if (ev->status_update)
			return -pte_bad_context;
		d->enabled = !ev->ip_suppressed;
		d->ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
		break;
	default:
		return -pte_internal;
	}
	d->process_event = 0;
	*out = *ev;
	return ff_trailing_event(d);
}

#endif /* PTSCOPE_DECODER_FAST_EVENT_H */
