/* SPDX-License-Identifier: MIT */
/* The packet reader's PSB+ (fast_packets.h): the status packets between a
 * PSB and its PSBEND and the events they leave for PSBEND, as libipt
 * 2.0.5's pt_qry_decode_psb, pt_qry_read_psb_header, pt_qry_header_* and
 * pt_qry_decode_psbend do (libipt/src/pt_query_decoder.c), with erratum
 * BDM70. */
#include "decoder/fast_packets.h"

/* check_erratum_bdm70: a FUP in PSB+ while tracing is off, followed by
 * a TIP.PGE (only status packets between), is bogus.  Returns 1 if so,
 * 0 if not, -pte_bad_packet where libipt's packet decoder rejects a
 * packet on the way, FQ_UNSUPPORTED for one this reader cannot tell. */
static int bdm70_applies(const struct fq *q, const uint8_t *p)
{
	for (;;) {
		int kind, size, err = fq_fetch_kind(q, p, &kind);

		if (err == -pte_eos)
			return 0;
		if (err)
			return err;
		switch (kind) {
		case K_PGE:
		case K_PGD:
		case K_TIP:
		case K_FUP:
		case K_TNT64:
		case K_PSB:
		case K_PAD:
		case K_MODE:
		case K_PSBEND:
		case K_MTC:
		case K_CBR:
		case K_TMA:
		case K_TSC:
		case K_PIP:
		case K_CYC:
			break;
		default:
			return 0;
		}
		/* pt_pkt_next reads each packet whole: one cut by the end
		 * is the end (not a TIP.PGE), a bad one an error */
		size = fq_packet_size(q, p, kind);
		if (size == -pte_eos)
			return 0;
		if (size < 0)
			return size;
		switch (kind) {
		case K_PGE:
			return 1;
		case K_PGD:
		case K_TIP:
		case K_FUP:
		case K_TNT64:
		case K_PSB:
			return 0;
		}
		p += size;
	}
}

/* pt_qry_read_psb_header: the packets between PSB and PSBEND. */
static int read_psb_header(struct fq *q)
{
	q->have_ip = 0;
	q->ip_suppressed = 0;
	q->ip = 0;
	for (;;) {
		int err = fq_fetch_kind(q, q->pos, &q->next), size;

		if (err)
			return err;
		switch (q->next) {
		case K_PSBEND:
		case K_OVF: /* ends PSB+ too (its events go first) */
			return 0;
		case K_PAD:
			q->pos++;
			break;
		case K_FUP: {
			uint8_t ipc;
			uint64_t v;

			size = fq_read_ip(q, &ipc, &v);
			if (size < 0)
				return size;
			if (q->bdm70 && !q->enabled) {
				err = bdm70_applies(q, q->pos + size);
				if (err < 0)
					return err;
				if (err) {
					q->pos += size;
					break;
				}
			}
			fq_update_ip(q, ipc, v);
			if (ipc)
				q->enabled = 1;
			q->pos += size;
			break;
		}
		case K_MODE:
			err = fq_decode_mode(q, 1);
			if (err)
				return err;
			break;
		case K_PIP:
			err = fq_decode_pip(q, 1);
			if (err)
				return err;
			break;
		case K_TSC:
		case K_CBR:
		case K_TMA:
		case K_MTC:
		case K_CYC:
			err = fq_decode_timing(q, q->next, 1);
			if (err)
				return err;
			break;
		default:
			return -pte_bad_context;
		}
	}
}

int fq_decode_psb(struct fq *q)
{
	const uint8_t *psb = q->pos;
	int err;

	if (psb == q->snap_at && !q->snapped) {
		q->snap.time = q->time;
		q->snap.tcal = q->tcal;
		q->snapped = 1;
	}
	if (q->end < psb + 16)
		return -pte_eos;
	for (int i = 2; i < 16; i += 2)
		if (psb[i] != 0x02 || psb[i + 1] != 0x82)
			return -pte_bad_packet;
	/* pt_tcal_update_psb: SKL168 may have dropped a CYC just before */
	if (q->skl168)
		q->tcal.check_skl168 = 1;
	q->pos += 16;
	err = read_psb_header(q);
	if (err < 0) {
		q->pos = psb;
		q->q[FQB_PSBEND].n = 0;
		q->next = K_PSB;
		return err;
	}
	return 0;
}

int fq_psbend_event(struct fq *q, struct pt_event *ev)
{
	ev->status_update = 1;
	switch (ev->type) {
	case ptev_exec_mode:
		fq_event_ip(q, &ev->variant.exec_mode.ip, ev);
		break;
	case ptev_tsx:
		fq_event_ip(q, &ev->variant.tsx.ip, ev);
		break;
	case ptev_async_paging:
		fq_event_ip(q, &ev->variant.async_paging.ip, ev);
		break;
	case ptev_cbr:
		break;
	default:
		return -pte_internal;
	}
	q->event = ev;
	return 0;
}

/* pt_qry_decode_psbend: publish the PSB+ status events one by one. */
int fq_decode_psbend(struct fq *q)
{
	struct pt_event *ev = fq_evq_dequeue(q, FQB_PSBEND);

	if (!ev) {
		q->pos += 2;
		return 0;
	}
	return fq_psbend_event(q, ev);
}
