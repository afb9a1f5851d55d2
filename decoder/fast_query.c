/* SPDX-License-Identifier: MIT */
/* ptscope's reader of PT packets (see fast_query.h).  Each function says
 * which libipt 2.0.5 function it answers like (libipt/src/
 * pt_query_decoder.c, pt_time.c, pt_last_ip.c, pt_tnt_cache.c,
 * pt_decoder_function.c): the flow engine above must see the same
 * answers, times and status flags in the same order, so the rules are
 * kept, not improved.  What libipt does with packets outside the list in
 * fast_query.h is not copied: those return FQ_UNSUPPORTED. */
#include "decoder/fast_query.h"

#include <string.h>

/* Packet kinds (libipt's decoder functions). */
enum {
	K_NONE,
	K_PAD,
	K_PSB,
	K_PSBEND,
	K_TIP,
	K_TNT8,
	K_TNT64,
	K_PGE,
	K_PGD,
	K_FUP,
	K_MODE,
	K_TSC,
	K_CBR,
	K_TMA,
	K_MTC
};

/* pt_df_fetch: the kind of the packet at @p. */
static int fetch_kind(const struct fq *q, const uint8_t *p, int *kind)
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
		default:
			return FQ_UNSUPPORTED; /* OVF, PIP, VMCS, PTW, ... */
		}
	default:
		break;
	}
	if (!(opc & 1)) {
		*kind = K_TNT8;
		return 0;
	}
	if ((opc & 3) == 3)
		return FQ_UNSUPPORTED; /* CYC */
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

static int fetch(struct fq *q)
{
	return fetch_kind(q, q->pos, &q->next);
}

/* ---- event queue (pt_event_queue.c) ---- */

static void evq_init(struct fq *q)
{
	for (int i = 0; i < FQB_COUNT; i++)
		q->q[i].head = q->q[i].n = 0;
}

static struct pt_event *evq_enqueue(struct fq *q, int bind)
{
	struct fq_evq *e = &q->q[bind];
	struct pt_event *ev;

	if (e->n == FQ_EVQ_SIZE)
		return NULL;
	ev = &e->ev[(e->head + e->n) % FQ_EVQ_SIZE];
	e->n++;
	memset(ev, 0, sizeof(*ev));
	return ev;
}

static struct pt_event *evq_dequeue(struct fq *q, int bind)
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

static struct pt_event *evq_standalone(struct fq *q)
{
	memset(&q->standalone, 0, sizeof(q->standalone));
	return &q->standalone;
}

/* ---- time (pt_time.c, without CYC) ---- */

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

static void time_tsc(struct fq_time *t, uint64_t tsc)
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

static int time_tma(struct fq *q, uint16_t ctc, uint16_t fc)
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
static int time_mtc(struct fq *q, uint8_t payload)
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

/* ---- packets ---- */

/* pt_pkt_read_ip: the packet's size, its compression and payload. */
static int read_ip(const struct fq *q, uint8_t *ipc, uint64_t *v)
{
	static const int8_t sizes[8] = {0, 2, 4, 6, 6, -1, 8, -1};
	int n;

	*ipc = (uint8_t)((q->pos[0] >> 5) & 7);
	n = sizes[*ipc];
	*v = 0;
	if (n < 0)
		return -pte_bad_packet;
	if (q->end < q->pos + 1 + n)
		return -pte_eos;
	for (int i = 0; i < n; i++)
		*v |= (uint64_t)q->pos[1 + i] << (8 * i);
	return n + 1;
}

/* pt_last_ip_update_ip */
static void update_ip(struct fq *q, uint8_t ipc, uint64_t v)
{
	switch (ipc) {
	case 0:
		q->ip_suppressed = 1;
		return;
	case 1:
		q->ip = (q->ip & ~0xffffull) | v;
		break;
	case 2:
		q->ip = (q->ip & ~0xffffffffull) | v;
		break;
	case 3:
		q->ip = (v & (1ull << 47)) ? v | ~0xffffffffffffull : v;
		break;
	case 4:
		q->ip = (q->ip & ~0xffffffffffffull) | v;
		break;
	default:
		q->ip = v;
		break;
	}
	q->have_ip = 1;
	q->ip_suppressed = 0;
}

/* pt_qry_decode_ip: read and apply an IP packet; returns its size. */
static int decode_ip(struct fq *q)
{
	uint8_t ipc;
	uint64_t v;
	int size = read_ip(q, &ipc, &v);

	if (size > 0)
		update_ip(q, ipc, v);
	return size;
}

/* pt_last_ip_query */
static int last_ip(const struct fq *q, uint64_t *ip)
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
static void event_ip(const struct fq *q, uint64_t *ip, struct pt_event *ev)
{
	if (last_ip(q, ip) < 0)
		ev->ip_suppressed = 1;
}

static int tnt_update(struct fq *q, uint64_t payload)
{
	uint8_t bits = 0;

	if (q->tnt_index)
		return -pte_bad_context;
	for (uint64_t p = payload >> 1; p; p >>= 1)
		bits++;
	if (!bits)
		return -pte_bad_packet;
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
	ev = evq_dequeue(q, FQB_TIP);
	if (ev) {
		switch (ev->type) {
		case ptev_async_branch:
			q->consume_packet = 1;
			event_ip(q, &ev->variant.async_branch.to, ev);
			break;
		case ptev_exec_mode:
			event_ip(q, &ev->variant.exec_mode.ip, ev);
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
		ev = evq_standalone(q);
		ev->type = ptev_enabled;
		if (last_ip(q, &ev->variant.enabled.ip) < 0)
			return -pte_bad_packet;
		q->tnt = q->tnt_index = 0;
		q->consume_packet = 1;
		q->enabled = 1;
	} else {
		ev = evq_dequeue(q, FQB_TIP);
		if (!ev)
			return -pte_internal;
		if (ev->type != ptev_exec_mode)
			return -pte_bad_context;
		event_ip(q, &ev->variant.exec_mode.ip, ev);
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
	ev = evq_dequeue(q, FQB_TIP);
	if (ev) {
		if (ev->type == ptev_async_branch) {
			uint64_t at = ev->variant.async_branch.from;

			ev->type = ptev_async_disabled;
			ev->variant.async_disabled.at = at;
			event_ip(q, &ev->variant.async_disabled.ip, ev);
		} else if (ev->type == ptev_exec_mode) {
			ev->ip_suppressed = 1;
		} else {
			return -pte_bad_context;
		}
	} else {
		ev = evq_standalone(q);
		ev->type = ptev_disabled;
		event_ip(q, &ev->variant.disabled.ip, ev);
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
	err = last_ip(q, &ip);
	if (err < 0)
		return err;
	ev = evq_enqueue(q, FQB_TIP);
	if (!ev)
		return -pte_nomem;
	ev->type = ptev_async_branch;
	ev->variant.async_branch.from = ip;
	q->pos += size;
	return 0;
}

static int decode_mode(struct fq *q, int header)
{
	struct pt_event *ev;
	uint8_t payload, bits;

	if (q->end < q->pos + 2)
		return -pte_eos;
	payload = q->pos[1];
	bits = payload & 0x1f;
	switch (payload & 0xe0) {
	case 0x00:
		ev = evq_enqueue(q, header ? FQB_PSBEND : FQB_TIP);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_exec_mode;
		ev->variant.exec_mode.mode = exec_mode(bits);
		break;
	case 0x20:
		/* Transactions: only a PSB+ status without an abort. */
		if (!header || (bits & 2))
			return FQ_UNSUPPORTED;
		ev = evq_enqueue(q, FQB_PSBEND);
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

static int decode_timing(struct fq *q, int kind, int header)
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
		time_tsc(&q->time, v);
		q->pos += 8;
		return 0;
	case K_MTC:
		if (q->end < p + 2)
			return -pte_eos;
		err = time_mtc(q, p[1]);
		if (err < 0)
			return err;
		q->pos += 2;
		return 0;
	case K_TMA:
		if (q->end < p + 7)
			return -pte_eos;
		if (p[4] || ((p[5] | p[6] << 8) & ~0x1ff))
			return FQ_UNSUPPORTED; /* bad packet (or SKZ84) */
		err = time_tma(q, (uint16_t)(p[2] | p[3] << 8),
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
			ev = evq_enqueue(q, FQB_PSBEND);
			if (!ev)
				return -pte_nomem;
		} else {
			ev = evq_standalone(q);
			q->event = ev;
		}
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = p[2];
		q->pos += 4;
		return 0;
	}
	return -pte_internal;
}

static int decode(struct fq *q, int kind);

/* check_erratum_bdm70: a FUP in PSB+ while tracing is off, followed by
 * a TIP.PGE (only status packets between), is bogus.  Returns 1 if so,
 * 0 if not, FQ_UNSUPPORTED where libipt's packet decoder might see
 * something else. */
static int bdm70_applies(const struct fq *q, const uint8_t *p)
{
	for (;;) {
		int kind, err = fetch_kind(q, p, &kind);

		if (err == -pte_eos)
			return 0;
		if (err)
			return err;
		switch (kind) {
		case K_PGE:
			return 1;
		case K_PAD:
			p += 1;
			break;
		case K_MODE:
			if (q->end >= p + 2 && (p[1] & 0xe0) > 0x20)
				return FQ_UNSUPPORTED;
			/* fall through */
		case K_PSBEND:
		case K_MTC:
			p += 2;
			break;
		case K_CBR:
			p += 4;
			break;
		case K_TMA:
			p += 7;
			break;
		case K_TSC:
			p += 8;
			break;
		default:
			return 0;
		}
		if (p > q->end)
			return 0;
	}
}

/* pt_qry_read_psb_header: the packets between PSB and PSBEND. */
static int read_psb_header(struct fq *q)
{
	q->have_ip = 0;
	q->ip_suppressed = 0;
	q->ip = 0;
	for (;;) {
		int err = fetch(q), size;

		if (err)
			return err;
		switch (q->next) {
		case K_PSBEND:
			return 0;
		case K_PAD:
			q->pos++;
			break;
		case K_FUP: {
			uint8_t ipc;
			uint64_t v;

			size = read_ip(q, &ipc, &v);
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
			update_ip(q, ipc, v);
			if (ipc)
				q->enabled = 1;
			q->pos += size;
			break;
		}
		case K_MODE:
			err = decode_mode(q, 1);
			if (err)
				return err;
			break;
		case K_TSC:
		case K_CBR:
		case K_TMA:
		case K_MTC:
			err = decode_timing(q, q->next, 1);
			if (err)
				return err;
			break;
		default:
			return -pte_bad_context;
		}
	}
}

static int decode_psb(struct fq *q)
{
	const uint8_t *psb = q->pos;
	int err;

	if (q->end < psb + 16)
		return -pte_eos;
	for (int i = 2; i < 16; i += 2)
		if (psb[i] != 0x02 || psb[i + 1] != 0x82)
			return -pte_bad_packet;
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

/* pt_qry_decode_psbend: publish the PSB+ status events one by one. */
static int decode_psbend(struct fq *q)
{
	struct pt_event *ev = evq_dequeue(q, FQB_PSBEND);

	if (!ev) {
		q->pos += 2;
		return 0;
	}
	ev->status_update = 1;
	switch (ev->type) {
	case ptev_exec_mode:
		event_ip(q, &ev->variant.exec_mode.ip, ev);
		break;
	case ptev_tsx:
		event_ip(q, &ev->variant.tsx.ip, ev);
		break;
	case ptev_cbr:
		break;
	default:
		return -pte_internal;
	}
	q->event = ev;
	return 0;
}

static int decode(struct fq *q, int kind)
{
	switch (kind) {
	case K_PAD:
		q->pos++;
		return 0;
	case K_PSB:
		return decode_psb(q);
	case K_PSBEND:
		return decode_psbend(q);
	case K_TIP:
		return decode_tip(q);
	case K_TNT8:
		return tnt_update(q, q->pos[0] >> 1) ?: (q->pos++, 0);
	case K_TNT64: {
		uint64_t v = 0;
		int err;

		if (q->end < q->pos + 8)
			return -pte_eos;
		for (int i = 0; i < 6; i++)
			v |= (uint64_t)q->pos[2 + i] << (8 * i);
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
		return decode_mode(q, 0);
	case K_TSC:
	case K_CBR:
	case K_TMA:
	case K_MTC:
		return decode_timing(q, kind, 0);
	}
	return -pte_internal;
}

/* ---- queries ---- */

static int is_event_kind(int k)
{
	return k == K_PGE || k == K_PGD || k == K_MODE || k == K_CBR;
}

/* pt_qry_will_event */
static int will_event(const struct fq *q)
{
	if (is_event_kind(q->next))
		return 1;
	switch (q->next) {
	case K_PSBEND:
		return q->q[FQB_PSBEND].n != 0;
	case K_TIP:
		return q->q[FQB_TIP].n != 0;
	case K_FUP:
		return q->q[FQB_FUP].n != 0;
	}
	return 0;
}

/* pt_qry_will_eos */
static int will_eos(const struct fq *q)
{
	int kind;

	if (q->next != K_NONE)
		return 0;
	return fetch_kind(q, q->pos, &kind) == -pte_eos;
}

/* pt_qry_status_flags */
static int status_flags(const struct fq *q)
{
	int flags = 0;

	if (!q->tnt_index) {
		if (will_event(q))
			flags |= pts_event_pending;
		if (will_eos(q))
			flags |= pts_eos;
	}
	return flags;
}

/* pt_qry_provoke_fetch_error */
static int fetch_error(const struct fq *q)
{
	int kind, err = fetch_kind(q, q->pos, &kind);

	return err < 0 ? err : -pte_internal;
}

/* pt_qry_read_ahead */
static int read_ahead(struct fq *q)
{
	for (;;) {
		int err = fetch(q);

		if (err)
			return err;
		if (q->next == K_TIP || q->next == K_TNT8 ||
		    q->next == K_TNT64 || will_event(q))
			return 0;
		err = decode(q, q->next);
		if (err) {
			if (err == -pte_eos) {
				q->pos = q->end;
				q->next = K_NONE;
			}
			return err;
		}
	}
}

void fq_init(struct fq *q, const struct pt_config *cfg)
{
	memset(q, 0, sizeof(*q));
	q->begin = cfg->begin;
	q->end = cfg->end;
	q->mtc_freq = cfg->mtc_freq;
	q->nom_freq = cfg->nom_freq;
	q->eax = cfg->cpuid_0x15_eax;
	q->ebx = cfg->cpuid_0x15_ebx;
	q->bdm70 = cfg->errata.bdm70;
}

int fq_start(struct fq *q, const uint8_t *psb, uint64_t *ip)
{
	int err, status;

	q->enabled = 0;
	q->consume_packet = 0;
	q->event = NULL;
	q->have_ip = q->ip_suppressed = 0;
	q->ip = 0;
	q->tnt = q->tnt_index = 0;
	memset(&q->time, 0, sizeof(q->time));
	memset(&q->last_time, 0, sizeof(q->last_time));
	evq_init(q);
	q->pos = psb;
	err = fetch(q);
	if (err)
		return err;
	if (q->next != K_PSB)
		return -pte_nosync;
	err = decode_psb(q);
	if (err < 0)
		return err;
	if (ip && last_ip(q, ip) == 0)
		ip = NULL;
	err = read_ahead(q);
	if (err < 0)
		return err;
	status = status_flags(q);
	if (ip && last_ip(q, ip) < 0)
		status |= pts_ip_suppressed;
	return status;
}

/* pt_qry_cache_tnt */
static int cache_tnt(struct fq *q)
{
	int err;

	for (;;) {
		int kind = q->next;

		if (kind == K_NONE)
			return fetch_error(q);
		if (will_event(q) || kind == K_TIP)
			return -pte_bad_query;
		q->event = NULL;
		err = decode(q, kind);
		if (err)
			return err;
		if (q->event)
			return -pte_event_ignored;
		if (kind == K_TNT8 || kind == K_TNT64)
			break;
		err = read_ahead(q);
		if (err)
			return err;
	}
	q->last_time = q->time;
	err = read_ahead(q);
	if (err < 0 && err != -pte_eos)
		return err;
	return 0;
}

int fq_cond_branch(struct fq *q, int *taken)
{
	if (!q->tnt_index) {
		int err = cache_tnt(q);

		if (err < 0)
			return err;
	}
	*taken = (q->tnt & q->tnt_index) != 0;
	q->tnt_index >>= 1;
	return status_flags(q);
}

int fq_indirect_branch(struct fq *q, uint64_t *ip)
{
	int flags = 0, err;

	for (;;) {
		int kind = q->next;

		if (kind == K_NONE)
			return fetch_error(q);
		if (will_event(q))
			return -pte_bad_query;
		q->event = NULL;
		if ((kind == K_TNT8 || kind == K_TNT64) && q->tnt_index)
			return -pte_bad_query;
		err = decode(q, kind);
		if (err)
			return err;
		if (q->event)
			return -pte_event_ignored;
		if (kind == K_TIP) {
			uint64_t to;

			if (last_ip(q, &to) < 0)
				flags |= pts_ip_suppressed;
			else
				*ip = to;
			break;
		}
		err = read_ahead(q);
		if (err)
			return err;
	}
	q->last_time = q->time;
	err = read_ahead(q);
	if (err < 0 && err != -pte_eos)
		return err;
	return flags | status_flags(q);
}

int fq_event(struct fq *q, struct pt_event *ev)
{
	int err;

	if (q->tnt_index)
		return -pte_bad_query;
	for (;;) {
		int kind = q->next;

		if (kind == K_NONE)
			return fetch_error(q);
		if ((kind == K_TIP || kind == K_TNT8 || kind == K_TNT64) &&
		    !will_event(q))
			return -pte_bad_query;
		q->event = NULL;
		err = decode(q, kind);
		if (err)
			return err;
		if (q->event) {
			*ev = *q->event;
			break;
		}
		err = read_ahead(q);
		if (err)
			return err;
	}
	q->last_time = q->time;
	err = read_ahead(q);
	if (err < 0 && err != -pte_eos)
		return err;
	return status_flags(q);
}

int fq_time(const struct fq *q, uint64_t *tsc)
{
	*tsc = q->last_time.tsc;
	return q->last_time.have_tsc ? 0 : -pte_no_time;
}
