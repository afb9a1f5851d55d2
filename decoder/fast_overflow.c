/* SPDX-License-Identifier: MIT */
/* The packet reader's overflows (fast_packets.h): libipt 2.0.5's
 * pt_qry_decode_ovf and pt_qry_find_ovf_fup (libipt/src/
 * pt_query_decoder.c).  The CPU's internal buffer overflowed and packets
 * were lost; the OVF says where, and the packets after it whether tracing
 * was on when the overflow resolved. */
#include "decoder/fast_packets.h"

/* The size of the packet at @p of @kind as libipt's packet decoder reads
 * it whole (pt_pkt_next), -pte_eos where the buffer ends inside it, or
 * FQ_UNSUPPORTED where that decoder might see something else. */
static int whole_packet(const struct fq *q, const uint8_t *p, int kind)
{
	static const int8_t ip_size[8] = {0, 2, 4, 6, 6, -1, 8, -1};
	int size;
	uint64_t v;

	switch (kind) {
	case K_PAD:
	case K_TNT8:
		size = 1;
		break;
	case K_MTC:
	case K_PSBEND:
	case K_OVF:
		size = 2;
		break;
	case K_MODE:
		if (q->end >= p + 2 && (p[1] & 0xe0) > 0x20)
			return FQ_UNSUPPORTED;
		size = 2;
		break;
	case K_CBR:
		size = 4;
		break;
	case K_TMA:
		if (q->end >= p + 7 && (p[4] || ((p[5] | p[6] << 8) & ~0x1ff)))
			return FQ_UNSUPPORTED;
		size = 7;
		break;
	case K_TSC:
	case K_PIP:
		size = 8;
		break;
	case K_TNT64:
		if (q->end >= p + 8 &&
		    !(p[2] | p[3] | p[4] | p[5] | p[6] | p[7]))
			return FQ_UNSUPPORTED;
		size = 8;
		break;
	case K_PSB:
		if (q->end >= p + 16)
			for (int i = 2; i < 16; i += 2)
				if (p[i] != 0x02 || p[i + 1] != 0x82)
					return FQ_UNSUPPORTED;
		size = 16;
		break;
	case K_TIP:
	case K_FUP:
	case K_PGE:
	case K_PGD:
		size = ip_size[(p[0] >> 5) & 7];
		if (size < 0)
			return FQ_UNSUPPORTED;
		size++;
		break;
	case K_CYC:
		return fq_read_cyc(p, q->end, &v);
	default:
		return FQ_UNSUPPORTED;
	}
	return q->end < p + size ? -pte_eos : size;
}

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
		size = whole_packet(q, p, kind);
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
