/* SPDX-License-Identifier: MIT */
/* The state of one stream in the fast flow engine (see fast_flow.h),
 * shared by its two files: fast_flow.c (libipt's block decoder rules,
 * pt_blk_next, pt_blk_event in fast_event.h, and ff_run) and fast_sync.c
 * (opening, syncing and resyncing, pt_blk_sync_*).  Internal to the
 * decoder. */
#ifndef PTSCOPE_DECODER_FAST_STATE_H
#define PTSCOPE_DECODER_FAST_STATE_H

#include <intel-pt.h>
#include <stdint.h>

#include "decoder/fast_query.h"

struct fr_cache;
struct fr_run;
struct img_image;

#define RETSTACK_SIZE 64 /* libipt's pt_retstack_size */

/* Out of memory inside the engine (PS_ERR_NOMEM would read as a libipt
 * error code). */
#define FF_NOMEM (-3001)

/* The last instruction a walk reached (libipt's insn/iext pair). */
struct ff_insn {
	uint64_t ip, target;
	uint8_t len, cls, direct;
};

struct ff_decoder {
	struct fq q;
	struct fr_cache *runs;
	struct img_image *img;
	uint64_t ip;
	enum pt_exec_mode mode;
	int status;	 /* libipt's decoder->status */
	int flow_status; /* what pt_blk_next/pt_blk_event last returned */
	int enabled;
	int process_event;
	/* pt_blk_postpone_insn: a MOV to CR3 that a paging event binds to,
	 * the decoder not yet past it (libipt's process_insn and insn; the
	 * only instruction postponed here, always with its paging event
	 * bound, so libipt's bound_paging is process_insn) */
	int process_insn;
	struct ff_insn pinsn;
	int skd022;
	struct pt_event event;
	uint64_t rs[RETSTACK_SIZE + 1];
	uint8_t rs_top, rs_bottom;
	/* the block being filled: the mapping its first instruction is in */
	uint64_t sec_lo, sec_hi;
	/* the run the last block was, whole (NULL: a block of the event
	 * path, or one that ended in an error) */
	struct fr_run *run;
	/* loop guard (flow.c's FLOW_MAX_INSNS_WITHOUT_TRACE) */
	const uint8_t *still_pos;
	/* segment mode (ff_set_stop): stop where the block at stop_ip
	 * after the PSB+ that ends at stop_at would begin */
	const uint8_t *stop_at;
	uint64_t stop_ip;
	uint64_t still_insns;
};

/* pt_blk_proceed_trailing_event: the status after the event (if any)
 * that binds to where the decoder stands. */
int ff_trailing_event(struct ff_decoder *d);

/* What ff_run makes of a status: libipt's own errors are reported as
 * libipt reports them (1), the rest hands the stream to libipt. */
static inline int ff_is_libipt_error(int status)
{
	return status < 0 && status > -pte_bad_cpu - 1 &&
	       status != -pte_internal;
}

#endif /* PTSCOPE_DECODER_FAST_STATE_H */
