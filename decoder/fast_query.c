/* SPDX-License-Identifier: MIT */
/* ptscope's reader of PT packets: the queries (see fast_query.h), each as
 * the libipt 2.0.5 function it is named after (libipt/src/
 * pt_query_decoder.c): the flow engine above must see the same answers,
 * times and status flags in the same order, so the rules are kept, not
 * improved.  What libipt does with packets outside the list in
 * fast_query.h is not copied: those return FQ_UNSUPPORTED. */
#include <string.h>

#include "decoder/fast_packets.h"

static int fetch(struct fq *q)
{
	return fq_fetch_fast(q, q->pos, &q->next);
}

static inline int is_event_kind(int k)
{
	return k == K_PGE || k == K_PGD || k == K_MODE || k == K_CBR ||
	       k == K_PIP || k == K_OVF;
}

/* pt_qry_will_event */
static inline int will_event(const struct fq *q)
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
static inline int will_eos(const struct fq *q)
{
	int kind;

	if (q->next != K_NONE)
		return 0;
	return fq_fetch_kind(q, q->pos, &kind) == -pte_eos;
}

/* pt_qry_status_flags */
static inline int status_flags(const struct fq *q)
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
	int kind, err = fq_fetch_kind(q, q->pos, &kind);

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
		if (q->next == K_PAD) {
			q->pos++;
			continue;
		}
		err = fq_decode(q, q->next);
		if (err) {
			if (err == -pte_eos) {
				q->pos = q->end;
				q->next = K_NONE;
			}
			return err;
		}
	}
}

/* A query was answered by the packet just decoded: keep the time at it
 * (libipt's last_time) and read ahead to the next packet that matters.
 * The end of the trace is not an error here. */
static int answered(struct fq *q)
{
	int err;

	q->last_tsc = q->time.tsc;
	q->last_have_tsc = q->time.have_tsc;
	err = read_ahead(q);
	return err == -pte_eos ? 0 : err;
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
	q->skd007 = cfg->errata.skd007;
	q->skl168 = cfg->errata.skl168;
	q->skd010 = cfg->errata.skd010;
	q->apl11 = cfg->errata.apl11;
	q->apl12 = cfg->errata.apl12;
	fq_tcal_init(&q->tcal);
}

void fq_reset(struct fq *q)
{
	q->enabled = 0;
	q->consume_packet = 0;
	q->event = NULL;
	q->have_ip = q->ip_suppressed = 0;
	q->ip = 0;
	q->tnt = q->tnt_index = 0;
	q->last_tsc = 0;
	q->last_have_tsc = 0;
	fq_tcal_init(&q->tcal);
	fq_evq_init(q);
}

int fq_start(struct fq *q, const uint8_t *psb, uint64_t *ip)
{
	int err, status;

	fq_reset(q);
	if (q->seed) {
		q->time = q->seed->time;
		q->tcal = q->seed->tcal;
		q->seed = NULL;
	} else {
		memset(&q->time, 0, sizeof(q->time));
	}
	q->sync = psb;
	q->pos = psb;
	err = fetch(q);
	if (err)
		return err;
	if (q->next != K_PSB)
		return -pte_nosync;
	err = fq_decode(q, K_PSB);
	if (err < 0)
		return err;
	if (ip && fq_last_ip(q, ip) == 0)
		ip = NULL;
	err = read_ahead(q);
	if (err < 0)
		return err;
	status = status_flags(q);
	if (ip && fq_last_ip(q, ip) < 0)
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
		err = fq_decode(q, kind);
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
	err = answered(q);
	if (err < 0)
		return err;
	return 0;
}

int fq_cond_branch_slow(struct fq *q, int *taken)
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

	/* The common case, what the loop below does for a TIP with no event
	 * bound to it. */
	if (q->next == K_TIP && !q->q[FQB_TIP].n) {
		uint8_t ipc;
		uint64_t v;
		int size = fq_read_ip(q, &ipc, &v);

		if (size > 0) {
			fq_update_ip(q, ipc, v);
			q->pos += size;
			q->event = NULL;
			if (q->ip_suppressed || !q->have_ip)
				flags |= pts_ip_suppressed;
			else
				*ip = q->ip;
			goto have_tip;
		}
	}
	for (;;) {
		int kind = q->next;

		if (kind == K_NONE)
			return fetch_error(q);
		if (will_event(q))
			return -pte_bad_query;
		q->event = NULL;
		if ((kind == K_TNT8 || kind == K_TNT64) && q->tnt_index)
			return -pte_bad_query;
		err = fq_decode(q, kind);
		if (err)
			return err;
		if (q->event)
			return -pte_event_ignored;
		if (kind == K_TIP) {
			uint64_t to;

			if (fq_last_ip(q, &to) < 0)
				flags |= pts_ip_suppressed;
			else
				*ip = to;
			break;
		}
		err = read_ahead(q);
		if (err)
			return err;
	}
have_tip:
	err = answered(q);
	if (err < 0)
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
		err = fq_decode(q, kind);
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
	err = answered(q);
	if (err < 0)
		return err;
	return status_flags(q);
}

int fq_time(const struct fq *q, uint64_t *tsc)
{
	*tsc = q->last_tsc;
	return q->last_have_tsc ? 0 : -pte_no_time;
}

/* pt_sync_forward (libipt/src/pt_sync.c): the first PSB that starts at or
 * after @start, searched a 64-bit word at a time. */
static const uint8_t *find_psb(const struct fq *q, const uint8_t *pos)
{
	/* At the end of the buffer libipt reads the byte past it here and,
	 * that byte not being 0x02 (as good as always), finds no PSB: a
	 * PSB that ends the buffer is one with nothing after it. */
	if (pos >= q->end)
		return NULL;
	if (*pos != 0x02)
		pos++;
	for (; pos + 1 < q->end; pos += 2)
		if (pos[0] != 0x02 || pos[1] != 0x82)
			break;
	pos -= 16;
	if (pos < q->begin || pos[0] != 0x02 || pos[1] != 0x82)
		return NULL;
	if (q->end < pos + 16)
		return NULL;
	for (int i = 2; i < 16; i += 2)
		if (pos[i] != 0x02 || pos[i + 1] != 0x82)
			return NULL;
	return pos;
}

int fq_sync_forward(const struct fq *q, const uint8_t *start,
		    const uint8_t **sync)
{
	const uint64_t lohi = 0x8202820282028202ull; /* 02 82 02 82 ... */
	const uint64_t hilo = 0x0282028202820282ull; /* 82 02 82 02 ... */
	const uint8_t *pos =
	    (const uint8_t *)(((uintptr_t)start + 7) & ~(uintptr_t)7);

	for (;;) {
		const uint8_t *cur = pos, *psb;
		uint64_t val;

		pos += 8;
		if (q->end < pos)
			return -pte_eos;
		memcpy(&val, cur, sizeof(val));
		if (val != lohi && val != hilo)
			continue;
		psb = find_psb(q, pos);
		if (!psb || psb < start)
			continue;
		*sync = psb;
		return 0;
	}
}

int fq_fold(const struct pt_config *cfg, const uint8_t *from, const uint8_t *to,
	    struct fq_clock *out)
{
	struct fq q;
	const uint8_t *sync;
	int err;

	fq_init(&q, cfg);
	if (fq_sync_forward(&q, from, &sync) < 0 || sync >= to)
		return -pte_nosync;
	q.pos = sync;
	while (q.pos < to) {
		int kind;
		uint8_t ipc;
		uint64_t v;

		err = fq_fetch_fast(&q, q.pos, &kind);
		if (err)
			return err;
		switch (kind) {
		case K_PAD:
		case K_TNT8:
			q.pos++;
			break;
		case K_TNT64:
		case K_PIP:
			q.pos += 8;
			break;
		case K_MODE:
			q.pos += 2;
			break;
		case K_PSBEND:
			/* the PSB+ events are not wanted here */
			fq_evq_init(&q);
			q.pos += 2;
			break;
		case K_OVF:
			/* fq_decode_ovf: starts over, but the time */
			fq_reset(&q);
			q.pos += 2;
			break;
		case K_TIP:
		case K_FUP:
		case K_PGE:
		case K_PGD:
			err = fq_read_ip(&q, &ipc, &v);
			if (err < 0)
				return err;
			q.pos += err;
			break;
		case K_PSB:
		case K_TSC:
		case K_MTC:
		case K_TMA:
		case K_CBR:
		case K_CYC:
			err = fq_decode(&q, kind);
			if (err)
				return err;
			break;
		default:
			return -pte_internal;
		}
	}
	if (q.pos != to)
		return -pte_bad_packet;
	out->time = q.time;
	out->tcal = q.tcal;
	return 0;
}
