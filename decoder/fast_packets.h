/* SPDX-License-Identifier: MIT */
/* The packet reader's state (used through fast_query.h) and what each PT
 * packet does to it, shared by the reader's files: fast_packets.c (IP, TNT,
 * event and PSB+ packets, libipt's pt_qry_decode_* and pt_qry_header_*),
 * fast_psb.c (PSB+), fast_overflow.c (OVF), fast_time.c (timing packets and
 * libipt's pt_time rules) and fast_query.c (the queries).  Internal to the
 * decoder library. */
#ifndef PTSCOPE_DECODER_FAST_PACKETS_H
#define PTSCOPE_DECODER_FAST_PACKETS_H

#include <endian.h>
#include <intel-pt.h>
#include <stdint.h>
#include <string.h>

/* Something this reader does not handle: give the stream to libipt. */
#define FQ_UNSUPPORTED (-1000)

/* libipt's struct pt_time, for the packets handled here. */
struct fq_time {
	uint64_t tsc, base, fc;
	uint32_t ctc, ctc_cyc, lost_mtc, lost_cyc;
	uint8_t cbr;
	uint8_t have_tsc, have_cbr, have_tma, have_mtc;
};

/* libipt's struct pt_time_cal: the fast-counter:cycles ratio (fcr, a
 * fixed-point number with FQ_FCR_SHR fraction bits) that turns CYC
 * packets' cycle counts into time, estimated from the cycles counted
 * between two MTCs, two TSCs in PSB+, or from CBR and the nominal
 * frequency. */
#define FQ_FCR_SHR 8
struct fq_tcal {
	uint64_t fcr, min_fcr, max_fcr; /* no ratio yet: min_fcr > max_fcr */
	uint64_t tsc, cyc_tsc, cyc_mtc;
	uint32_t ctc, lost_mtc;
	uint8_t have_mtc, check_skl168;
};

/* The reader's clock: what the packets so far left for the next timing
 * packet to build on. */
struct fq_clock {
	struct fq_time time;
	struct fq_tcal tcal;
};

/* Events waiting for the packet they bind to (libipt's pt_event_queue). */
#define FQ_EVQ_SIZE 8
struct fq_evq {
	struct pt_event ev[FQ_EVQ_SIZE];
	uint8_t head, n;
};

enum fq_bind { FQB_PSBEND, FQB_TIP, FQB_FUP, FQB_COUNT };

struct fq {
	const uint8_t *begin, *end, *pos;
	const uint8_t *sync; /* the PSB the reader last started at */
	int next; /* kind of the packet at pos (fast_query.c), 0: none */
	uint64_t ip;
	uint8_t have_ip, ip_suppressed;
	uint8_t enabled, consume_packet;
	uint64_t tnt, tnt_index; /* libipt's TNT cache */
	struct fq_time time;
	struct fq_tcal tcal;
	uint64_t last_tsc; /* the time at the packet that answered the last */
	uint8_t last_have_tsc; /* query (libipt's last_time) */
	struct fq_evq q[FQB_COUNT];
	struct pt_event standalone;
	struct pt_event *event; /* published by the last packet decoded */
	/* configuration */
	uint8_t mtc_freq, nom_freq, bdm70, skd007, skl168;
	uint8_t skd010, apl11, apl12;
	/* a segment's decoder started at a PSB in the middle of a stream:
	 * the calibration that CYC needs is what the packets before left,
	 * unknown here, so a CYC is FQ_UNSUPPORTED */
	uint8_t cyc_unknown;
	uint8_t saw_cyc; /* a CYC was read */
	/* fq_start takes its clock from here instead of starting afresh
	 * (once; NULL: afresh) */
	const struct fq_clock *seed;
	/* the clock at the PSB at snap_at, before reading it */
	const uint8_t *snap_at;
	struct fq_clock snap;
	uint8_t snapped;
	uint32_t eax, ebx;
};

/* Packet kinds (libipt's decoder functions); 0: none fetched. */
enum fq_kind {
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
	K_MTC,
	K_PIP,
	K_CYC,
	K_OVF
};

/* Kinds of the one-byte opcodes (0: look further, fq_fetch_kind). */
extern const uint8_t fq_opcode_kind[256];

/* pt_df_fetch: the kind of the packet at @p: 0, -pte_eos or
 * FQ_UNSUPPORTED. */
int fq_fetch_kind(const struct fq *q, const uint8_t *p, int *kind);

/* The size of the packet at @p of @kind as libipt's packet decoder reads
 * it whole (pt_pkt_next): its size, -pte_eos where the buffer ends inside
 * it, -pte_bad_packet where that decoder rejects it (a reserved IP
 * compression, MODE leaf or TMA bit, a TNT64 with no bits, a broken PSB
 * pattern, a CYC of more than 64 bits), FQ_UNSUPPORTED for a kind this
 * reader does not size. */
int fq_packet_size(const struct fq *q, const uint8_t *p, int kind);

/* The common case of fq_fetch_kind, inline. */
static inline int fq_fetch_fast(const struct fq *q, const uint8_t *p, int *kind)
{
	if (p < q->end && fq_opcode_kind[*p]) {
		*kind = fq_opcode_kind[*p];
		return 0;
	}
	return fq_fetch_kind(q, p, kind);
}

/* Apply the packet at q->pos, of @kind (its pt_qry_decode_*). */
int fq_decode(struct fq *q, int kind);

/* The timing packets TSC, MTC, TMA, CBR and CYC, in PSB+ (@header) or
 * not. */
int fq_decode_timing(struct fq *q, int kind, int header);

/* Are @a and @b the same clock?  (Field by field: padding is not
 * compared.) */
int fq_clock_same(const struct fq_clock *a, const struct fq_clock *b);

/* pt_tcal_init: no calibration. */
void fq_tcal_init(struct fq_tcal *c);

/* pt_pkt_read_cyc: the size of the CYC packet at @p and its value, or
 * -pte_eos (cut by @end) or -pte_bad_packet (more than 64 bits). */
int fq_read_cyc(const uint8_t *p, const uint8_t *end, uint64_t *value);

/* pt_last_ip_query: 0, -pte_noip, -pte_ip_suppressed (*ip then 0). */
int fq_last_ip(const struct fq *q, uint64_t *ip);

/* pt_event_queue */
void fq_evq_init(struct fq *q);
struct pt_event *fq_evq_enqueue(struct fq *q, int bind);
struct pt_event *fq_evq_dequeue(struct fq *q, int bind);
struct pt_event *fq_evq_standalone(struct fq *q);

/* pt_qry_event_psbend: @ev, a PSB+ status event, published. */
int fq_psbend_event(struct fq *q, struct pt_event *ev);

/* pt_qry_reset but the time: the reader starts over (fast_query.c). */
void fq_reset(struct fq *q);

/* pt_qry_decode_ovf, for the OVF at q->pos (fast_overflow.c). */
int fq_decode_ovf(struct fq *q);

/* pt_qry_decode_psb and pt_qry_decode_psbend (fast_psb.c). */
int fq_decode_psb(struct fq *q);
int fq_decode_psbend(struct fq *q);

/* MODE and PIP packets, in PSB+ (@header) or not. */
int fq_decode_mode(struct fq *q, int header);
int fq_decode_pip(struct fq *q, int header);

/* pt_qry_event_ip: *@ip the last IP, or @ev's ip suppressed. */
void fq_event_ip(const struct fq *q, uint64_t *ip, struct pt_event *ev);

/* The 8 bytes at @p as a little-endian number (the caller has checked
 * they are in the buffer): one load instead of a loop over the bytes. */
static inline uint64_t fq_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* The payload bytes of a TIP, FUP, TIP.PGE or TIP.PGD by its IP
 * compression (the opcode's top 3 bits); -1: reserved. */
extern const int8_t fq_ip_size[8];

/* pt_pkt_read_ip: the packet's size, its compression and payload. */
static inline int fq_read_ip(const struct fq *q, uint8_t *ipc, uint64_t *v)
{
	int n;

	*ipc = (uint8_t)((q->pos[0] >> 5) & 7);
	n = fq_ip_size[*ipc];
	*v = 0;
	if (n < 0)
		return -pte_bad_packet;
	if (q->end < q->pos + 1 + n)
		return -pte_eos;
	if (q->end - q->pos >= 9) {
		*v = fq_le64(q->pos + 1);
		if (n < 8)
			*v &= (UINT64_C(1) << (8 * n)) - 1;
		return n + 1;
	}
	for (int i = 0; i < n; i++)
		*v |= (uint64_t)q->pos[1 + i] << (8 * i);
	return n + 1;
}

/* pt_last_ip_update_ip */
static inline void fq_update_ip(struct fq *q, uint8_t ipc, uint64_t v)
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

#endif /* PTSCOPE_DECODER_FAST_PACKETS_H */
