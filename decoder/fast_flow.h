/* SPDX-License-Identifier: MIT */
/* ptscope's own flow engine (prefix ff_): what libipt's block decoder
 * (pt_blk_next, pt_blk_event) does, for the packets fast_query.c reads,
 * over the run cache of fast_runs.c instead of libipt's per-instruction
 * work.  flow.c drives it exactly as it drives libipt and feeds what it
 * decodes to the same flow_on_block / flow_on_event (flow_branches.c), so
 * the branch events, their times and counts are libipt's.  Wherever the
 * stream holds something it does not handle, or libipt would report an
 * error, ff_run returns FF_FALLBACK before reporting anything that could
 * differ, and flow.c decodes the stream with libipt instead (skipping
 * the events already reported).  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_FAST_FLOW_H
#define PTSCOPE_DECODER_FAST_FLOW_H

#include <stdint.h>

struct flow_run;
struct fq_clock;
struct fr_cache;
struct img_image;
struct pt_config;

/* Hand the stream to libipt (ff_open, ff_run). */
#define FF_FALLBACK (-3000)

struct ff_decoder;

/* Sync onto the first PSB of @cfg's buffer (the one pt_blk_sync_forward
 * would take) and read what follows it, as pt_blk_sync_forward does.
 * @runs: the process's run cache, @img its image.  Returns 0, FF_FALLBACK (also
 * when there is no PSB: libipt then says so), PS_ERR_NOMEM. */
int ff_open(const struct pt_config *cfg, struct fr_cache *runs,
	    struct img_image *img, struct ff_decoder **out);
void ff_close(struct ff_decoder *d); /* accepts NULL */

/* Start at the PSB at trace offset @off instead (pt_blk_sync_set), with
 * the clock @seed (NULL: afresh, as libipt starts). */
int ff_open_at(const struct pt_config *cfg, struct fr_cache *runs,
	       struct img_image *img, uint64_t off, const struct fq_clock *seed,
	       struct ff_decoder **out);

/* Segment mode: ff_run returns 3 where a continuous decode would begin
 * the block at @ip that follows the PSB+ ending at offset @psbend_end
 * (its status events handled, no TNT bits left), before reporting it;
 * FF_FALLBACK if it passes that PSB+ by far without getting there. */
void ff_set_stop(struct ff_decoder *d, uint64_t psbend_end, uint64_t ip);

/* A segment opened at a PSB in the middle of its stream (ff_open_at): the
 * packets before it calibrated the time of CYC packets, so a CYC here
 * makes ff_run return FF_FALLBACK (the segment is not a clean seam). */
void ff_set_mid_stream(struct ff_decoder *d);

/* Keep the clock the decoder has when it reaches the PSB at trace offset
 * @off (ff_seam_clock). */
void ff_set_snapshot(struct ff_decoder *d, uint64_t off);

/* The clock kept by ff_set_snapshot (1) or none (0); *@saw_cyc: a CYC
 * packet was read. */
int ff_seam_clock(const struct ff_decoder *d, struct fq_clock *at,
		  int *saw_cyc);

/* Decode into @r (whose blk is NULL) as flow.c's run_synced does with
 * libipt: returns 0 at the end of the stream, 3 at a segment's stop
 * (ff_set_stop), 1 at a decode error (*@derr
 * the libipt error code, *@dip its ip or 0, as libipt reports them), 2
 * when the sink asked for a pause (call again to go on), FF_FALLBACK,
 * PS_ERR_NOMEM or the sink's error. */
int ff_run(struct ff_decoder *d, struct flow_run *r, int *derr, uint64_t *dip);

/* For resyncing after an error as flow.c does with libipt: the trace
 * offsets of the reader and of the PSB it last synced at
 * (pt_blk_get_offset, pt_blk_get_sync_offset); a sync at the PSB at @off
 * (pt_blk_sync_set) or at the next one (pt_blk_sync_forward), returning
 * libipt's status or error, or FF_FALLBACK. */
void ff_offsets(const struct ff_decoder *d, uint64_t *pos, uint64_t *sync);
int ff_sync_set(struct ff_decoder *d, uint64_t off);
int ff_sync_forward(struct ff_decoder *d);

/* flow_run's time source in fast mode: libipt's pt_blk_time. */
int ff_time(void *d, uint64_t *tsc);

#endif /* PTSCOPE_DECODER_FAST_FLOW_H */
