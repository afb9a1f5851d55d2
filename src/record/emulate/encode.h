/* SPDX-License-Identifier: MIT */
/* PT packet generation with libipt's encoder (prefix emu_pkt_).
 *
 * Packets go into a small linear buffer that the caller drains into the
 * ring after each step.  This layer keeps the two pieces of packet state
 * hardware keeps: the last IP (for IP compression) and the pending TNT
 * bits, which are flushed before any other packet, as hardware does. */
#ifndef PTSCOPE_RECORD_EMULATE_ENCODE_H
#define PTSCOPE_RECORD_EMULATE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

/* A TNT-64 packet holds up to 47 bits (libipt: bit_size < 48). */
#define EMU_TNT_MAX 47

struct emu_pkt {
	struct pt_encoder *enc; /* owned; writes into buf */
	uint8_t *buf;		/* caller's buffer */
	size_t cap;
	uint64_t last_ip; /* for IP compression; valid if have_ip */
	int have_ip;	  /* cleared by a PSB */
	uint64_t tnt;	  /* pending bits, oldest in the highest bit */
	unsigned tnt_bits;
};

/* Returns 0, PS_ERR_INVAL or PS_ERR_NOMEM. */
int emu_pkt_init(struct emu_pkt *k, uint8_t *buf, size_t cap);
void emu_pkt_fini(struct emu_pkt *k);

/* Bytes written since the last emu_pkt_rewind(). */
size_t emu_pkt_used(const struct emu_pkt *k);
/* Start writing at buf[0] again (after the bytes were copied out). */
void emu_pkt_rewind(struct emu_pkt *k);

/* Each returns 0 or PS_ERR_INTERNAL (buffer full: a bug). */
int emu_pkt_tnt_flush(struct emu_pkt *k);
static inline int emu_pkt_tnt(struct emu_pkt *k, int taken)
{
	k->tnt = (k->tnt << 1) | (taken ? 1 : 0);
	if (++k->tnt_bits == EMU_TNT_MAX)
		return emu_pkt_tnt_flush(k);
	return 0;
}
int emu_pkt_tsc(struct emu_pkt *k, uint64_t tsc);
int emu_pkt_mode64(struct emu_pkt *k);
/* TIP, TIP.PGE, FUP (@type ppt_tip, ppt_tip_pge, ppt_fup) to @ip. */
int emu_pkt_ip(struct emu_pkt *k, enum pt_packet_type type, uint64_t ip);
/* TIP.PGD with the IP suppressed (entry into the untraced kernel). */
int emu_pkt_pgd(struct emu_pkt *k);
/* Any other packet (PTW), after the pending TNT bits. */
int emu_pkt_raw(struct emu_pkt *k, const struct pt_packet *pkt);
/* PSB (forgets the last IP) and PSBEND. */
int emu_pkt_psb(struct emu_pkt *k);
int emu_pkt_psbend(struct emu_pkt *k);

/* The compression hardware would pick for @ip after @last (have_last: 0
 * after a PSB): the shortest payload that reconstructs @ip. */
enum pt_ip_compression emu_pkt_ipc(uint64_t last, int have_last, uint64_t ip);

#endif /* PTSCOPE_RECORD_EMULATE_ENCODE_H */
