/* SPDX-License-Identifier: MIT */
/* The packet reader's packets (fast_packets.h): fetching a packet's kind,
 * the event queue, and what IP, TNT and event packets do, each as
 * the libipt 2.0.5 function it is named after (libipt/src/
 * pt_query_decoder.c, pt_last_ip.c, pt_tnt_cache.c, pt_event_queue.c,
 * pt_decoder_function.c). */
#include <string.h>

#include "decoder/fast_packets.h"

/* fq_fetch_kind's answer for every byte that is a whole opcode by itself
 * (0: the extended opcode 0x02, unknown); a CYC's first byte ends in 11. */
/* clang-format off */
const uint8_t fq_opcode_kind[256] = {
    /* 00 */ K_PAD, K_PGD, 0, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 08 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* 10 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 18 */ K_TNT8, K_TSC, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* 20 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 28 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* 30 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 38 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* 40 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 48 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* 50 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 58 */ K_TNT8, K_MTC, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* 60 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 68 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* 70 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 78 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* 80 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 88 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* 90 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* 98 */ K_TNT8, K_MODE, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* a0 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* a8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* b0 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* b8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* c0 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* c8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* d0 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* d8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
    /* e0 */ K_TNT8, K_PGD, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* e8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_TIP, K_TNT8, K_CYC,
    /* f0 */ K_TNT8, K_PGE, K_TNT8, K_CYC, K_TNT8, 0, K_TNT8, K_CYC,
    /* f8 */ K_TNT8, 0, K_TNT8, K_CYC, K_TNT8, K_FUP, K_TNT8, K_CYC,
};
/* clang-format on */

int fq_fetch_kind(const struct fq *q, const uint8_t *p, int *kind)
{
	uint8_t opc;

	*kind = K_NONE;
	if (p == q->end)
		return -pte_eos;
	opc = *p;
	switch (opc) {
	case 0x00:
		*kind = K_PAD;
		return 0;
	case 0x99:
		*kind = K_MODE;
		return 0;
	case 0x19:
		*kind = K_TSC;
		return 0;
	case 0x59:
		*kind = K_MTC;
		return 0;
	case 0x02:
		if (p + 1 == q->end)
			return -pte_eos;
		switch (p[1]) {
		case 0x82:
			*kind = K_PSB;
			return 0;
		case 0xa3:
			*kind = K_TNT64;
			return 0;
		case 0x23:
			*kind = K_PSBEND;
			return 0;
		case 0x03:
			*kind = K_CBR;
			return 0;
		case 0x73:
			*kind = K_TMA;
			return 0;
		case 0x43:
			*kind = K_PIP;
			return 0;
		case 0xf3:
			*kind = K_OVF;
			return 0;
		default:
			return FQ_UNSUPPORTED; /* VMCS, PTW, power events, ...
						*/
		}
	default:
		break;
	}
	if (!(opc & 1)) {
		*kind = K_TNT8;
		return 0;
	}
	if ((opc & 3) == 3) {
		*kind = K_CYC;
		return 0;
	}
	switch (opc & 0x1f) {
	case 0x0d:
		*kind = K_TIP;
		return 0;
	case 0x1d:
		*kind = K_FUP;
		return 0;
	case 0x11:
		*kind = K_PGE;
		return 0;
	case 0x01:
		*kind = K_PGD;
		return 0;
	}
	return FQ_UNSUPPORTED;
}

const int8_t fq_ip_size[8] = {0, 2, 4, 6, 6, -1, 8, -1};

int fq_packet_size(const struct fq *q, const uint8_t *p, int kind)
{
	uint64_t v;
	int size;

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
			return -pte_bad_packet;
		size = 2;
		break;
	case K_CBR:
		size = 4;
		break;
	case K_TMA:
		if (q->end >= p + 7 && (p[4] || ((p[5] | p[6] << 8) & ~0x1ff)))
			return -pte_bad_packet;
		size = 7;
		break;
	case K_TSC:
	case K_PIP:
		size = 8;
		break;
	case K_TNT64:
		if (q->end >= p + 8 &&
		    !(p[2] | p[3] | p[4] | p[5] | p[6] | p[7]))
			return -pte_bad_packet;
		size = 8;
		break;
	case K_PSB:
		if (q->end >= p + 16)
			for (int i = 2; i < 16; i += 2)
				if (p[i] != 0x02 || p[i + 1] != 0x82)
					return -pte_bad_packet;
		size = 16;
		break;
	case K_TIP:
	case K_FUP:
	case K_PGE:
	case K_PGD:
		size = fq_ip_size[(p[0] >> 5) & 7];
		if (size < 0)
			return -pte_bad_packet;
		size++;
		break;
	case K_CYC:
		return fq_read_cyc(p, q->end, &v);
	default:
		return FQ_UNSUPPORTED;
	}
	return q->end < p + size ? -pte_eos : size;
}

void fq_evq_init(struct fq *q)
{
	for (int i = 0; i < FQB_COUNT; i++)
		q->q[i].head = q->q[i].n = 0;
}

struct pt_event *fq_evq_enqueue(struct fq *q, int bind)
{
	struct fq_evq *e = &q->q[bind];
	struct pt_event *ev;

	/* libipt's ring of 8 keeps a gap of one and the last event taken
	 * out: it holds 6 (pt_evq_enqueue) */
	if (e->n == FQ_EVQ_SIZE - 2)
		return NULL;
	ev = &e->ev[(e->head + e->n) % FQ_EVQ_SIZE];
	e->n++;
	memset(ev, 0, sizeof(*ev));
	return ev;
}

struct pt_event *fq_evq_dequeue(struct fq *q, int bind)
{
	struct fq_evq *e = &q->q[bind];
	struct pt_event *ev;

	if (!e->n)
		return NULL;
	ev = &e->ev[e->head];
	e->head = (uint8_t)((e->head + 1) % FQ_EVQ_SIZE);
	e->n--;
	return ev;
}

struct pt_event *fq_evq_standalone(struct fq *q)
{
	memset(&q->standalone, 0, sizeof(q->standalone));
	return &q->standalone;
}

/* pt_qry_decode_ip: read and apply an IP packet; returns its size. */
static int decode_ip(struct fq *q)
{
	uint8_t ipc;
	uint64_t v;
	int size = fq_read_ip(q, &ipc, &v);

	if (size > 0)
		fq_update_ip(q, ipc, v);
	return size;
}

/* pt_last_ip_query */
int fq_last_ip(const struct fq *q, uint64_t *ip)
{
	if (!q->have_ip) {
		*ip = 0;
		return -pte_noip;
	}
	if (q->ip_suppressed) {
		*ip = 0;
		return -pte_ip_suppressed;
	}
	*ip = q->ip;
	return 0;
}

/* pt_qry_event_ip */
void fq_event_ip(const struct fq *q, uint64_t *ip, struct pt_event *ev)
{
	if (fq_last_ip(q, ip) < 0)
		ev->ip_suppressed = 1;
}

static int tnt_update(struct fq *q, uint64_t payload)
{
	uint8_t bits;

	if (q->tnt_index)
		return -pte_bad_context;
	/* the highest set bit is the stop bit; the bits below it count */
	if (payload < 2)
		return -pte_bad_packet;
	bits = (uint8_t)(63 - __builtin_clzll(payload));
	q->tnt = payload & ~(1ull << bits);
	q->tnt_index = 1ull << (bits - 1);
	return 0;
}

static enum pt_exec_mode exec_mode(uint8_t bits)
{
	int csl = bits & 1, csd = bits & 2;

	if (csl)
		return csd ? ptem_unknown : ptem_64bit;
	return csd ? ptem_32bit : ptem_16bit;
}

static int decode_tip(struct fq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	ev = fq_evq_dequeue(q, FQB_TIP);
	if (ev) {
		switch (ev->type) {
		case ptev_async_branch:
			q->consume_packet = 1;
			fq_event_ip(q, &ev->variant.async_branch.to, ev);
			break;
		case ptev_exec_mode:
			fq_event_ip(q, &ev->variant.exec_mode.ip, ev);
			break;
		case ptev_async_paging:
			fq_event_ip(q, &ev->variant.async_paging.ip, ev);
			break;
		default:
			return -pte_bad_context;
		}
		q->event = ev;
		if (q->q[FQB_TIP].n || !q->consume_packet)
			return 0;
		q->consume_packet = 0;
	}
	q->pos += size;
	return 0;
}

static int decode_pge(struct fq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	if (!q->consume_packet) {
		ev = fq_evq_standalone(q);
		ev->type = ptev_enabled;
		if (fq_last_ip(q, &ev->variant.enabled.ip) < 0)
			return -pte_bad_packet;
		q->tnt = q->tnt_index = 0;
		q->consume_packet = 1;
		q->enabled = 1;
	} else {
		ev = fq_evq_dequeue(q, FQB_TIP);
		if (!ev)
			return -pte_internal;
		if (ev->type != ptev_exec_mode)
			return -pte_bad_context;
		fq_event_ip(q, &ev->variant.exec_mode.ip, ev);
	}
	q->event = ev;
	if (q->q[FQB_TIP].n)
		return 0;
	q->consume_packet = 0;
	q->pos += size;
	return 0;
}

static int decode_pgd(struct fq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	ev = fq_evq_dequeue(q, FQB_TIP);
	if (ev) {
		if (ev->type == ptev_async_branch) {
			uint64_t at = ev->variant.async_branch.from;

			ev->type = ptev_async_disabled;
			ev->variant.async_disabled.at = at;
			fq_event_ip(q, &ev->variant.async_disabled.ip, ev);
		} else if (ev->type == ptev_exec_mode ||
			   ev->type == ptev_async_paging) {
			ev->ip_suppressed = 1;
		} else {
			return -pte_bad_context;
		}
	} else {
		ev = fq_evq_standalone(q);
		ev->type = ptev_disabled;
		fq_event_ip(q, &ev->variant.disabled.ip, ev);
	}
	q->event = ev;
	if (q->q[FQB_TIP].n)
		return 0;
	q->enabled = 0;
	q->pos += size;
	return 0;
}

/* A FUP outside PSB+ (nothing is queued for FUPs here: MODE.TSX outside
 * PSB+ is not handled): the source of an asynchronous branch. */
static int decode_fup(struct fq *q)
{
	struct pt_event *ev;
	uint64_t ip;
	int size = decode_ip(q), err;

	if (size < 0)
		return size;
	ev = fq_evq_dequeue(q, FQB_FUP);
	if (ev) {
		/* pt_qry_event_fup: only OVF binds to a FUP here */
		if (ev->type != ptev_overflow)
			return -pte_internal;
		q->consume_packet = 1;
		err = fq_last_ip(q, &ev->variant.overflow.ip);
		if (err < 0)
			return err;
		q->event = ev;
		if (q->q[FQB_FUP].n || !q->consume_packet)
			return 0;
		q->consume_packet = 0;
		q->pos += size;
		return 0;
	}
	err = fq_last_ip(q, &ip);
	if (err < 0)
		return err;
	ev = fq_evq_enqueue(q, FQB_TIP);
	if (!ev)
		return -pte_nomem;
	ev->type = ptev_async_branch;
	ev->variant.async_branch.from = ip;
	q->pos += size;
	return 0;
}

int fq_decode_mode(struct fq *q, int header)
{
	struct pt_event *ev;
	uint8_t payload, bits;

	if (q->end < q->pos + 2)
		return -pte_eos;
	payload = q->pos[1];
	bits = payload & 0x1f;
	switch (payload & 0xe0) {
	case 0x00:
		ev = fq_evq_enqueue(q, header ? FQB_PSBEND : FQB_TIP);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_exec_mode;
		ev->variant.exec_mode.mode = exec_mode(bits);
		break;
	case 0x20:
		/* Transactions: only a PSB+ status without an abort. */
		if (!header || (bits & 2))
			return FQ_UNSUPPORTED;
		ev = fq_evq_enqueue(q, FQB_PSBEND);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_tsx;
		ev->variant.tsx.speculative = bits & 1;
		break;
	default:
		return -pte_bad_packet;
	}
	q->pos += 2;
	return 0;
}

/* pt_qry_decode_pip, pt_qry_header_pip: a paging event, in PSB+ reported
 * at PSBEND, elsewhere standalone or bound to the TIP of an asynchronous
 * branch in flight. */
int fq_decode_pip(struct fq *q, int header)
{
	struct fq_evq *e = &q->q[FQB_TIP];
	struct pt_event *ev;
	uint64_t v = 0;
	int bound = header;

	if (q->end < q->pos + 8)
		return -pte_eos;
	v = fq_le64(q->pos) >> 16;
	for (int i = 0; !header && i < e->n; i++)
		if (e->ev[(e->head + i) % FQ_EVQ_SIZE].type ==
		    ptev_async_branch)
			bound = 1;
	if (bound) {
		ev = fq_evq_enqueue(q, header ? FQB_PSBEND : FQB_TIP);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_async_paging;
		ev->variant.async_paging.cr3 = (v >> 1) << 5;
		ev->variant.async_paging.non_root = v & 1;
	} else {
		ev = fq_evq_standalone(q);
		ev->type = ptev_paging;
		ev->variant.paging.cr3 = (v >> 1) << 5;
		ev->variant.paging.non_root = v & 1;
		q->event = ev;
	}
	q->pos += 8;
	return 0;
}

int fq_decode(struct fq *q, int kind)
{
	switch (kind) {
	case K_PAD:
		q->pos++;
		return 0;
	case K_PSB:
		return fq_decode_psb(q);
	case K_PSBEND:
		return fq_decode_psbend(q);
	case K_TIP:
		return decode_tip(q);
	case K_TNT8:
		return tnt_update(q, q->pos[0] >> 1) ?: (q->pos++, 0);
	case K_TNT64: {
		uint64_t v = 0;
		int err;

		if (q->end < q->pos + 8)
			return -pte_eos;
		v = fq_le64(q->pos) >> 16;
		err = tnt_update(q, v);
		if (err)
			return err;
		q->pos += 8;
		return 0;
	}
	case K_PGE:
		return decode_pge(q);
	case K_PGD:
		return decode_pgd(q);
	case K_FUP:
		return decode_fup(q);
	case K_MODE:
		return fq_decode_mode(q, 0);
	case K_TSC:
	case K_CBR:
	case K_TMA:
	case K_MTC:
	case K_CYC:
		return fq_decode_timing(q, kind, 0);
	case K_PIP:
		return fq_decode_pip(q, 0);
	case K_OVF:
		return fq_decode_ovf(q);
	}
	return -pte_internal;
}
