/* SPDX-License-Identifier: MIT */
/* Timing packets for the packet reader (fast_packets.h): TSC, MTC, TMA,
 * CBR and CYC, with libipt 2.0.5's pt_time and pt_time_cal rules
 * (libipt/src/pt_time.c, pt_qry_apply_* in pt_query_decoder.c): each
 * packet updates the calibration first, then the time, and an error of
 * either (but a missing CPUID 0x15 ratio, -pte_bad_config, which libipt
 * ignores) leaves the packet unread. */
#include <stdint.h>
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

/* pt_time_ctc_fc: crystal clock ticks to TSC ticks; -pte_bad_config
 * without the CPUID 0x15 ratio. */
static int ctc_fc(const struct fq *q, uint64_t *fc, uint64_t ctc)
{
	if (!q->eax || !q->ebx)
		return -pte_bad_config;
	*fc = (ctc * q->ebx) / q->eax;
	return 0;
}

static int tcal_have_fcr(const struct fq_tcal *c)
{
	return c->min_fcr <= c->max_fcr;
}

/* The same for what follows: of both only what a later packet reads.
 * The time's lost_mtc and CBR are kept for libipt's pt_qry_time and
 * pt_qry_core_bus_ratio, which the flow engine does not ask; tcal_mtc
 * reads ctc and cyc_mtc once it has seen an MTC; the ratio counts once
 * there is one, and min_fcr/max_fcr only say whether there is; the
 * calibration's lost_mtc is never read. */
int fq_clock_same(const struct fq_clock *a, const struct fq_clock *b)
{
	const struct fq_time *s = &a->time, *t = &b->time;
	const struct fq_tcal *c = &a->tcal, *d = &b->tcal;
	int fcr = tcal_have_fcr(c);

	if (s->tsc != t->tsc || s->base != t->base || s->fc != t->fc ||
	    s->ctc != t->ctc || s->ctc_cyc != t->ctc_cyc ||
	    s->lost_cyc != t->lost_cyc || s->have_tsc != t->have_tsc ||
	    s->have_tma != t->have_tma || s->have_mtc != t->have_mtc)
		return 0;
	if (fcr != tcal_have_fcr(d) || (fcr && c->fcr != d->fcr))
		return 0;
	if (c->have_mtc != d->have_mtc ||
	    (c->have_mtc && (c->ctc != d->ctc || c->cyc_mtc != d->cyc_mtc)))
		return 0;
	return c->tsc == d->tsc && c->cyc_tsc == d->cyc_tsc &&
	       c->check_skl168 == d->check_skl168;
}

void fq_tcal_init(struct fq_tcal *c)
{
	memset(c, 0, sizeof(*c));
	c->min_fcr = UINT64_MAX;
}

static void tcal_set_fcr(struct fq_tcal *c, uint64_t fcr)
{
	c->fcr = fcr;
	if (fcr < c->min_fcr)
		c->min_fcr = fcr;
	if (fcr > c->max_fcr)
		c->max_fcr = fcr;
}

/* pt_tcal_header_tsc: a TSC in PSB+ calibrates by the cycles counted
 * since the TSC before, unless MTCs do it. */
static int tcal_header_tsc(struct fq_tcal *c, uint64_t tsc)
{
	uint64_t last_tsc = c->tsc, cyc = c->cyc_tsc, delta;

	c->tsc = tsc;
	c->cyc_tsc = 0;
	if (!last_tsc || !cyc || c->have_mtc)
		return 0;
	if (tsc < last_tsc) {
		tsc += 1ull << 56;
		if (tsc < last_tsc)
			return -pte_bad_packet;
	}
	delta = tsc - last_tsc;
	if (delta & ~(~0ull >> FQ_FCR_SHR))
		return -pte_internal;
	tcal_set_fcr(c, (delta << FQ_FCR_SHR) / cyc);
	return 0;
}

/* pt_tcal_header_cbr: with the nominal frequency, the core:bus ratio
 * gives the ratio. */
static int tcal_header_cbr(struct fq *q, uint8_t cbr)
{
	if (!q->nom_freq)
		return 0;
	if (!cbr)
		return -pte_bad_packet;
	tcal_set_fcr(&q->tcal, ((uint64_t)q->nom_freq << FQ_FCR_SHR) / cbr);
	return 0;
}

/* pt_tcal_update_mtc: two MTCs with cycles counted between them. */
static int tcal_mtc(struct fq *q, uint8_t payload)
{
	struct fq_tcal *c = &q->tcal;
	uint32_t last_ctc = c->ctc, ctc, delta;
	uint64_t cyc = c->cyc_mtc, fc, fcr;
	int check_skl168 = c->check_skl168, err;

	c->check_skl168 = 0;
	ctc = (uint32_t)payload << q->mtc_freq;
	if (!c->have_mtc) {
		c->cyc_mtc = 0;
		c->ctc = ctc;
		c->have_mtc = 1;
		return 0;
	}
	if (!cyc)
		return 0;
	c->cyc_mtc = 0;
	c->ctc = ctc;
	c->lost_mtc += 1;
	err = ctc_delta(q, &delta, ctc, last_ctc);
	if (err < 0)
		return err;
	err = ctc_fc(q, &fc, delta);
	if (err < 0)
		return err;
	if (fc & ~(~0ull >> FQ_FCR_SHR))
		return -pte_internal;
	fcr = (fc << FQ_FCR_SHR) / cyc;
	/* SKL168: a CYC dropped right before the PSB; this MTC is counted
	 * as lost if MTCs were lost since, or a wrap CYC looks lost. */
	if (check_skl168) {
		if ((1u << q->mtc_freq) < delta)
			return 0;
		if (q->mtc_freq < 10 && tcal_have_fcr(c) &&
		    ((c->fcr * (cyc + 0xf00)) >> FQ_FCR_SHR) < fc)
			return 0;
	}
	tcal_set_fcr(c, fcr);
	c->lost_mtc = 0;
	return 0;
}

/* pt_time_adjust_cyc: the first CYC of an MTC period carries cycles of
 * the periods before it too; take off what they account for. */
static int adjust_cyc(const struct fq *q, uint64_t *cyc, uint64_t fcr)
{
	const struct fq_time *t = &q->time;
	uint32_t delta;
	uint64_t fc, old;
	int err;

	if (t->ctc == t->ctc_cyc)
		return 0;
	err = ctc_delta(q, &delta, t->ctc, t->ctc_cyc);
	if (err < 0)
		return err;
	err = ctc_fc(q, &fc, delta);
	if (err < 0)
		return err;
	old = (fc << FQ_FCR_SHR) / fcr;
	*cyc = *cyc < old ? 0 : *cyc - old;
	return 0;
}

/* pt_qry_apply_cyc: calibration, then pt_time_update_cyc. */
static int apply_cyc(struct fq *q, uint64_t cyc)
{
	struct fq_time *t = &q->time;
	uint64_t fcr, fc;
	int err;

	q->tcal.cyc_mtc += cyc;
	q->tcal.cyc_tsc += cyc;
	if (!tcal_have_fcr(&q->tcal)) {
		t->lost_cyc += 1;
		return 0;
	}
	fcr = q->tcal.fcr;
	if (!fcr) {
		t->lost_cyc += 1;
		return 0;
	}
	fc = t->fc;
	if (!fc) {
		err = adjust_cyc(q, &cyc, fcr);
		if (err < 0)
			return err == -pte_bad_config ? 0 : err;
	}
	fc += (cyc * fcr) >> FQ_FCR_SHR;
	t->fc = fc;
	t->tsc = t->base + fc;
	return 0;
}

int fq_read_cyc(const uint8_t *p, const uint8_t *end, uint64_t *value)
{
	const uint8_t *begin = p;
	uint64_t v = *p >> 3;
	unsigned shl = 5;
	int ext = *p++ & 4;

	while (ext) {
		uint64_t bits;

		if (end <= p)
			return -pte_eos;
		bits = *p++;
		ext = bits & 1;
		bits = (bits >> 1) << shl;
		shl += 7;
		if (64 < shl)
			return -pte_bad_packet;
		v |= bits;
	}
	*value = v;
	return (int)(p - begin);
}

/* check_erratum_skd007: a two-byte CYC whose second byte looks like an
 * extended opcode, followed by what looks like OVF's second byte, is the
 * start of an OVF (libipt then reads that OVF, which this reader leaves
 * to libipt). */
static int skd007_applies(const struct fq *q, int size, uint64_t v)
{
	const uint8_t *next = q->pos + size;

	return size == 2 && ((uint16_t)v & ~0x1f) == 0x20 && next < q->end &&
	       *next == 0xf3;
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
		v = fq_le64(p) >> 8;
		if (header) {
			err = tcal_header_tsc(&q->tcal, v);
			if (err < 0)
				return err;
		} else {
			/* pt_tcal_update_tsc: a TSC outside PSB+ may follow
			 * lost time; it only marks where to count from */
			q->tcal.tsc = v;
			q->tcal.cyc_tsc = 0;
		}
		fq_time_tsc(&q->time, v);
		q->pos += 8;
		return 0;
	case K_MTC:
		if (q->end < p + 2)
			return -pte_eos;
		err = tcal_mtc(q, p[1]);
		if (err < 0 && err != -pte_bad_config)
			return err;
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
		/* pt_tcal_update_cbr: outside PSB+, a new frequency; the
		 * calibration starts over */
		if (!header)
			fq_tcal_init(&q->tcal);
		err = tcal_header_cbr(q, p[2]);
		if (err < 0)
			return err;
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
	case K_CYC:
		q->saw_cyc = 1;
		if (q->cyc_unknown)
			return FQ_UNSUPPORTED;
		err = fq_read_cyc(p, q->end, &v);
		if (err < 0)
			return err;
		if (q->skd007 && skd007_applies(q, err, v))
			return FQ_UNSUPPORTED;
		q->pos += err;
		err = apply_cyc(q, v);
		if (err < 0)
			q->pos = p;
		return err;
	}
	return -pte_internal;
}
