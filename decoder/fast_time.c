/* SPDX-License-Identifier: MIT */
/* Timing packets for the packet reader (fast_packets.h): TSC, MTC, TMA
 * and CBR, with libipt 2.0.5's pt_time rules (libipt/src/pt_time.c,
 * pt_qry_apply_*), without CYC and its calibration (streams with CYC go
 * to libipt). */
#include <string.h>

#include "decoder/fast_packets.h"

static int ctc_delta(const struct fq *q, uint32_t *delta, uint32_t ctc,
		     uint32_t last)
{
	if (ctc < last) {
		ctc += 1u << (q->mtc_freq + 8);
		if (ctc < last)
			return -pte_bad_packet;
	}
	*delta = ctc - last;
	return 0;
}

static void fq_time_tsc(struct fq_time *t, uint64_t tsc)
{
	t->have_tsc = 1;
	t->have_tma = 0;
	t->have_mtc = 0;
	t->tsc = t->base = tsc;
	t->ctc = 0;
	t->fc = 0;
	t->lost_mtc = 0;
	t->lost_cyc = 0;
}

static int fq_time_tma(struct fq *q, uint16_t ctc, uint16_t fc)
{
	struct fq_time *t = &q->time;
	uint32_t mtc_hi = q->mtc_freq + 8u;
	uint32_t mask = (1u << mtc_hi) - 1u;

	if (!t->have_tsc || t->have_tma)
		return -pte_bad_context;
	if (t->have_mtc)
		return -pte_internal;
	t->have_tma = 1;
	t->base -= fc;
	t->fc += fc;
	if (mtc_hi <= 16)
		t->have_mtc = 1;
	t->ctc = t->ctc_cyc = ctc & mask;
	return 0;
}

/* pt_time_update_mtc as pt_qry_apply_mtc calls it (-pte_bad_config is
 * not an error there). */
static int fq_time_mtc(struct fq *q, uint8_t payload)
{
	struct fq_time *t = &q->time;
	uint32_t last_ctc, ctc, delta;
	uint64_t base;
	int have_tma = t->have_tma, have_mtc = t->have_mtc;

	if (t->have_tsc && !have_tma)
		return 0;
	base = t->base;
	last_ctc = t->ctc;
	ctc = (uint32_t)payload << q->mtc_freq;
	if (t->fc || t->lost_cyc || !have_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = 1;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (!have_mtc) {
		uint32_t lo, hi;

		if (!have_tma)
			return 0;
		if (last_ctc & ~0xffffu)
			return -pte_internal;
		lo = ctc & 0xffffu;
		hi = ctc & ~0xffffu;
		if (lo < last_ctc) {
			hi -= 1u << 16;
			hi &= 0xffu << q->mtc_freq;
		}
		last_ctc |= hi;
	}
	if (ctc_delta(q, &delta, ctc, last_ctc) < 0) {
		t->lost_mtc += 1;
		return -pte_bad_packet;
	}
	if (!q->eax || !q->ebx)
		return 0; /* -pte_bad_config: ignored */
	base += ((uint64_t)delta * q->ebx) / q->eax;
	t->tsc = t->base = base;
	return 0;
}

int fq_decode_timing(struct fq *q, int kind, int header)
{
	const uint8_t *p = q->pos;
	struct pt_event *ev;
	uint64_t v = 0;
	int err;

	switch (kind) {
	case K_TSC:
		if (q->end < p + 8)
			return -pte_eos;
		for (int i = 0; i < 7; i++)
			v |= (uint64_t)p[1 + i] << (8 * i);
		fq_time_tsc(&q->time, v);
		q->pos += 8;
		return 0;
	case K_MTC:
		if (q->end < p + 2)
			return -pte_eos;
		err = fq_time_mtc(q, p[1]);
		if (err < 0)
			return err;
		q->pos += 2;
		return 0;
	case K_TMA:
		if (q->end < p + 7)
			return -pte_eos;
		if (p[4] || ((p[5] | p[6] << 8) & ~0x1ff))
			return FQ_UNSUPPORTED; /* bad packet (or SKZ84) */
		err = fq_time_tma(q, (uint16_t)(p[2] | p[3] << 8),
				  (uint16_t)(p[5] | p[6] << 8));
		if (err < 0)
			return err;
		q->pos += 7;
		return 0;
	case K_CBR:
		if (q->end < p + 4)
			return -pte_eos;
		if (!p[2])
			return -pte_bad_packet;
		q->time.have_cbr = 1;
		q->time.cbr = p[2];
		if (header) {
			ev = fq_evq_enqueue(q, FQB_PSBEND);
			if (!ev)
				return -pte_nomem;
		} else {
			ev = fq_evq_standalone(q);
			q->event = ev;
		}
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = p[2];
		q->pos += 4;
		return 0;
	}
	return -pte_internal;
}
