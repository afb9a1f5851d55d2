/* SPDX-License-Identifier: MIT */
/* The packet half of ptscope's own flow engine (prefix fq_): a reader of
 * Intel PT packets that answers the same questions, with the same answers,
 * as libipt 2.0's query decoder (pt_qry_cond_branch, pt_qry_indirect_branch,
 * pt_qry_event, pt_qry_time) for the packets ordinary user-space traces
 * hold: PSB+, PAD, TNT, TIP, TIP.PGE, TIP.PGD, FUP, MODE.Exec, MODE.TSX in
 * PSB+, PIP, TSC, TMA, MTC, CBR, CYC and OVF.  The time follows libipt's
 * pt_time and pt_time_cal rules for TSC, TMA, MTC, CBR and CYC.
 *
 * Everything else (an OVF where libipt works around SKD010, APL11 or
 * APL12, VMCS, PTW, power events, MNT, unknown
 * opcodes, a TSX abort, any inconsistency libipt would report as an error)
 * makes a call return FQ_UNSUPPORTED or the libipt error code; the caller
 * then hands the stream to libipt (fast_flow.c).  Internal to the decoder
 * library. */
#ifndef PTSCOPE_DECODER_FAST_QUERY_H
#define PTSCOPE_DECODER_FAST_QUERY_H

#include "decoder/fast_packets.h"

/* Set up @q over [@begin, @end) with @cfg's timing fields and errata. */
void fq_init(struct fq *q, const struct pt_config *cfg);

/* Start at the PSB at @psb (pt_qry_start): read its PSB+ and ahead.
 * Returns libipt status flags, *@ip set when not ip-suppressed, or a
 * negative error / FQ_UNSUPPORTED. */
int fq_start(struct fq *q, const uint8_t *psb, uint64_t *ip);

/* pt_qry_indirect_branch, pt_qry_event. */
int fq_indirect_branch(struct fq *q, uint64_t *ip);
int fq_event(struct fq *q, struct pt_event *ev);

/* pt_qry_cond_branch: fq_cond_branch inline for a TNT bit at hand that is
 * not its last (no packet to read, and pt_qry_status_flags is 0 while
 * TNT bits are left), fq_cond_branch_slow for the rest. */
int fq_cond_branch_slow(struct fq *q, int *taken);
static inline int fq_cond_branch(struct fq *q, int *taken)
{
	if (q->tnt_index > 1) {
		*taken = (q->tnt & q->tnt_index) != 0;
		q->tnt_index >>= 1;
		return 0;
	}
	return fq_cond_branch_slow(q, taken);
}

/* The clock a decode from the first PSB at or after @from has at the PSB
 * at @to, as the timing packets between set it (no flow is followed: a
 * decode that met an error between would have started over).  0, or a
 * libipt error / FQ_UNSUPPORTED where the packets cannot be read so. */
int fq_fold(const struct pt_config *cfg, const uint8_t *from, const uint8_t *to,
	    struct fq_clock *out);

/* pt_qry_time: the time at the packet that answered the last query.
 * Returns 0 or -pte_no_time (no TSC yet). */
int fq_time(const struct fq *q, uint64_t *tsc);

/* pt_sync_forward (libipt/src/pt_sync.c): the first PSB that starts at
 * or after @start, searched a 64-bit word at a time.  0 or -pte_eos. */
int fq_sync_forward(const struct fq *q, const uint8_t *start,
		    const uint8_t **sync);

#endif /* PTSCOPE_DECODER_FAST_QUERY_H */
