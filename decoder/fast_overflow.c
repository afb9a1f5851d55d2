/* SPDX-License-Identifier: MIT */
/* The packet reader's overflows (fast_packets.h): libipt 2.0.5's
 * pt_qry_decode_ovf and pt_qry_find_ovf_fup (libipt/src/
 * pt_query_decoder.c).  The CPU's internal buffer overflowed and packets
 * were lost; the OVF says where, and the packets after it whether tracing
 * was on when the overflow resolved. */
#include "decoder/fast_packets.h"

/* pt_qry_find_ovf_fup: after an OVF, the offset just past the FUP it binds
 * to (tracing went on), 0 if a packet says tracing was off when the
 * overflow resolved (it binds to a TIP.PGE then), or an error. */
static int find_ovf_fup(const struct fq *q)
{
	const uint8_t *p = q->pos;

	for (;;) {
		int kind, err, size;

		if (p >= q->end)
			return -pte_eos;
		err = fq_fetch_kind(q, p, &kind);
		if (err)
			return err == -pte_eos ? err : FQ_UNSUPPORTED;
		/* a packet libipt's decoder might read otherwise is
		 * libipt's */
		size = fq_packet_size(q, p, kind);
		if (size == -pte_bad_packet)
			return FQ_UNSUPPORTED;
		if (size < 0)
			return size;
		switch (kind) {
		case K_FUP:
			return (int)(p + size - q->pos);
		case K_PAD:
		case K_CBR:
		case K_TSC:
		case K_TMA:
		case K_MTC:
		case K_CYC:
			p += size;
			break;
		case K_PSB:
		case K_PGE:
		case K_MODE:
		case K_PIP:
		case K_OVF:
			return 0;
		case K_PSBEND:
		case K_TIP:
		case K_PGD:
		case K_TNT8:
		case K_TNT64:
			return -pte_bad_context;
		default:
			return FQ_UNSUPPORTED;
		}
	}
}

/* pt_qry_decode_ovf: the trace lost packets.  The decoder starts over
 * (the time kept, its calibration not); the overflow binds to the FUP
 * where tracing went on, or, if tracing was off by then, stands alone
 * with tracing off.  Where libipt would look for a lost FUP (SKD010) or
 * a packet too many (APL11, APL12), the stream is libipt's. */
int fq_decode_ovf(struct fq *q)
{
	struct pt_event *ev = fq_evq_dequeue(q, FQB_PSBEND);
	int offset;

	if (ev)
		return fq_psbend_event(q, ev);
	fq_reset(q); /* the time is kept */
	q->pos += 2;
	offset = find_ovf_fup(q);
	if (offset == FQ_UNSUPPORTED)
		return offset;
	if (offset <= 0) {
		if (q->skd010 || (q->apl11 && offset == -pte_bad_context))
			return FQ_UNSUPPORTED;
		if (offset < 0 && offset != -pte_eos)
			return offset;
		ev = fq_evq_standalone(q);
		ev->type = ptev_overflow;
		ev->ip_suppressed = 1;
		q->enabled = 0;
		q->event = ev;
		return 0;
	}
	if (q->apl12)
		return FQ_UNSUPPORTED;
	ev = fq_evq_enqueue(q, FQB_FUP);
	if (!ev)
		return -pte_internal;
	ev->type = ptev_overflow;
	q->enabled = 1;
	return 0;
}
