/* SPDX-License-Identifier: MIT */
/* The fast flow engine's openings and syncs (see fast_flow.h): where a
 * stream or segment starts, and the resync after an error, each as the
 * libipt 2.0.5 function it is named after (libipt/src/pt_block_decoder.c
 * pt_blk_sync_*, pt_blk_start). */
#include <stdlib.h>
#include <string.h>

#include "decoder/fast_flow.h"
#include "decoder/fast_runs.h"
#include "decoder/fast_state.h"
#include "decoder/image.h"
#include "ptscope/error.h"

/* pt_blk_sync_reset */
static void sync_reset(struct ff_decoder *d)
{
	d->mode = ptem_unknown;
	d->ip = 0;
	d->status = 0;
	d->enabled = 0;
	d->process_event = 0;
	d->process_insn = 0;
	memset(&d->event, 0, sizeof(d->event));
	d->rs_top = d->rs_bottom = 0;
}

/* pt_blk_start, after the query decoder started with @status. */
static int blk_start(struct ff_decoder *d, int status)
{
	if (status < 0)
		return status;
	d->status = status;
	if (!(status & pts_ip_suppressed))
		d->enabled = 1;
	return ff_trailing_event(d);
}

int ff_time(void *ctx, uint64_t *tsc)
{
	struct ff_decoder *d = ctx;

	return fq_time(&d->q, tsc);
}

int ff_open(const struct pt_config *cfg, struct fr_cache *runs,
	    struct img_image *img, struct ff_decoder **out)
{
	struct pt_packet_decoder *pd;
	uint64_t off = 0;
	int status;

	*out = NULL;
	/* The PSB pt_blk_sync_forward finds: libipt's own search. */
	pd = pt_pkt_alloc_decoder(cfg);
	if (!pd)
		return FF_FALLBACK;
	status = pt_pkt_sync_forward(pd);
	if (status >= 0)
		status = pt_pkt_get_sync_offset(pd, &off);
	pt_pkt_free_decoder(pd);
	if (status < 0)
		return FF_FALLBACK;
	/* then as pt_blk_sync_set at that PSB */
	return ff_open_at(cfg, runs, img, off, NULL, out);
}

int ff_open_at(const struct pt_config *cfg, struct fr_cache *runs,
	       struct img_image *img, uint64_t off, const struct fq_clock *seed,
	       struct ff_decoder **out)
{
	struct ff_decoder *d;
	int status;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return PS_ERR_NOMEM;
	fq_init(&d->q, cfg);
	d->q.seed = seed;
	d->runs = runs;
	d->img = img;
	d->mode = ptem_unknown;
	d->skd022 = cfg->errata.skd022;
	/* pt_blk_sync_set → pt_blk_start */
	status = blk_start(d, fq_start(&d->q, cfg->begin + off, &d->ip));
	if (status < 0) {
		free(d);
		return status == FF_NOMEM ? PS_ERR_NOMEM : FF_FALLBACK;
	}
	d->flow_status = status;
	*out = d;
	return 0;
}

void ff_set_stop(struct ff_decoder *d, uint64_t psbend_end, uint64_t ip)
{
	d->stop_at = d->q.begin + psbend_end;
	d->stop_ip = ip;
}

void ff_set_mid_stream(struct ff_decoder *d)
{
	d->q.cyc_unknown = 1;
}

void ff_set_snapshot(struct ff_decoder *d, uint64_t off)
{
	d->q.snap_at = d->q.begin + off;
}

int ff_seam_clock(const struct ff_decoder *d, struct fq_clock *at, int *saw_cyc)
{
	*saw_cyc = d->q.saw_cyc;
	if (!d->q.snapped)
		return 0;
	*at = d->q.snap;
	return 1;
}

void ff_close(struct ff_decoder *d)
{
	free(d);
}

void ff_offsets(const struct ff_decoder *d, uint64_t *pos, uint64_t *sync)
{
	*pos = (uint64_t)(d->q.pos - d->q.begin);
	*sync = (uint64_t)(d->q.sync - d->q.begin);
}

static int sync_result(int status)
{
	if (status >= 0 || ff_is_libipt_error(status))
		return status;
	return FF_FALLBACK;
}

int ff_sync_set(struct ff_decoder *d, uint64_t off)
{
	const uint8_t *pos = d->q.begin + off;
	int status;

	/* pt_qry_sync_set → pt_sync_set → pt_qry_start */
	sync_reset(d);
	if (pos > d->q.end || d->q.end < pos + 2)
		status = -pte_eos;
	else if (pos[0] != 0x02 || pos[1] != 0x82)
		status = -pte_nosync;
	else
		status = fq_start(&d->q, pos, &d->ip);
	status = blk_start(d, status);
	if (status >= 0)
		d->flow_status = status;
	return sync_result(status);
}

int ff_sync_forward(struct ff_decoder *d)
{
	const uint8_t *pos = d->q.pos, *sync = NULL;
	ptrdiff_t space;
	int status;

	sync_reset(d);
	/* pt_qry_sync_forward */
	if (pos == d->q.sync)
		pos += 16;
	space = pos - d->q.begin;
	if (space >= 16)
		space = 15;
	pos -= space;
	status = fq_sync_forward(&d->q, pos, &sync);
	if (status >= 0)
		status = fq_start(&d->q, sync, &d->ip);
	status = blk_start(d, status);
	if (status >= 0)
		d->flow_status = status;
	return sync_result(status);
}
