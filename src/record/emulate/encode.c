/* SPDX-License-Identifier: MIT */
/* PT packets through libipt's encoder (see encode.h). */
#include <string.h>

#include "ptscope/error.h"
#include "src/record/emulate/encode.h"

int emu_pkt_init(struct emu_pkt *k, uint8_t *buf, size_t cap)
{
	struct pt_config config;

	if (!k || !buf || !cap)
		return PS_ERR_INVAL;
	memset(k, 0, sizeof(*k));
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + cap;
	k->enc = pt_alloc_encoder(&config);
	if (!k->enc)
		return PS_ERR_NOMEM;
	k->buf = buf;
	k->cap = cap;
	return 0;
}

void emu_pkt_fini(struct emu_pkt *k)
{
	if (!k)
		return;
	pt_free_encoder(k->enc);
	k->enc = NULL;
}

size_t emu_pkt_used(const struct emu_pkt *k)
{
	uint64_t off = 0;

	pt_enc_get_offset(k->enc, &off);
	return (size_t)off;
}

void emu_pkt_rewind(struct emu_pkt *k)
{
	pt_enc_sync_set(k->enc, 0);
}

static int put(struct emu_pkt *k, const struct pt_packet *pkt)
{
	int rc = pt_enc_next(k->enc, pkt);

	if (rc < 0)
		return ps_err_detail(PS_ERR_INTERNAL,
				     "PT encoder refused a packet (type %d): "
				     "%s",
				     (int)pkt->type, pt_errstr(pt_errcode(rc)));
	return 0;
}

int emu_pkt_tnt_flush(struct emu_pkt *k)
{
	struct pt_packet pkt;
	int rc;

	if (!k->tnt_bits)
		return 0;
	memset(&pkt, 0, sizeof(pkt));
	/* One byte carries up to 6 bits; longer runs take TNT-64. */
	pkt.type = k->tnt_bits <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pkt.payload.tnt.bit_size = (uint8_t)k->tnt_bits;
	pkt.payload.tnt.payload = k->tnt;
	rc = put(k, &pkt);
	k->tnt = 0;
	k->tnt_bits = 0;
	return rc;
}

/* Every packet but a TNT ends the pending TNT run first. */
static int put_flushed(struct emu_pkt *k, const struct pt_packet *pkt)
{
	int rc = emu_pkt_tnt_flush(k);

	return rc < 0 ? rc : put(k, pkt);
}

int emu_pkt_raw(struct emu_pkt *k, const struct pt_packet *pkt)
{
	return put_flushed(k, pkt);
}

int emu_pkt_tsc(struct emu_pkt *k, uint64_t tsc)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_tsc;
	pkt.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
	return put_flushed(k, &pkt);
}

int emu_pkt_mode64(struct emu_pkt *k)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_mode;
	pkt.payload.mode.leaf = pt_mol_exec;
	pkt.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return put_flushed(k, &pkt);
}

static int is_sext48(uint64_t ip)
{
	uint64_t top = ip >> 47;

	return top == 0 || top == (UINT64_MAX >> 47);
}

enum pt_ip_compression emu_pkt_ipc(uint64_t last, int have_last, uint64_t ip)
{
	uint64_t diff = last ^ ip;

	if (have_last && !(diff >> 16))
		return pt_ipc_update_16;
	if (have_last && !(diff >> 32))
		return pt_ipc_update_32;
	if (is_sext48(ip))
		return pt_ipc_sext_48;
	if (have_last && !(diff >> 48))
		return pt_ipc_update_48;
	return pt_ipc_full;
}

int emu_pkt_ip(struct emu_pkt *k, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet pkt;
	int rc;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = type;
	pkt.payload.ip.ipc = emu_pkt_ipc(k->last_ip, k->have_ip, ip);
	pkt.payload.ip.ip = ip;
	rc = put_flushed(k, &pkt);
	if (rc < 0)
		return rc;
	k->last_ip = ip;
	k->have_ip = 1;
	return 0;
}

int emu_pkt_pgd(struct emu_pkt *k)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_tip_pgd;
	pkt.payload.ip.ipc = pt_ipc_suppressed;
	return put_flushed(k, &pkt);
}

int emu_pkt_psb(struct emu_pkt *k)
{
	struct pt_packet pkt;
	int rc;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_psb;
	rc = put_flushed(k, &pkt);
	if (rc < 0)
		return rc;
	k->have_ip = 0;
	k->last_ip = 0;
	return 0;
}

int emu_pkt_psbend(struct emu_pkt *k)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_psbend;
	return put_flushed(k, &pkt);
}
