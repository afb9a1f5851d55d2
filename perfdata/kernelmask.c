/* SPDX-License-Identifier: MIT */
/* Kernel masking: user+kernel PT → the user-only stream (kernelmask.h). */
#include "perfdata/kernelmask.h"

#include <intel-pt.h>
#include <string.h>

#include "ptscope/error.h"

/* First-byte opcodes (the IP compression is in bits 7:5). */
#define OP_TIP 0x0d
#define OP_TIP_PGE 0x11
#define OP_TIP_PGD 0x01
#define OP_IPC_MASK 0xe0

/* The full IP of an IP packet, given the last IP (SDM "IP compression"). */
static uint64_t full_ip(const struct pt_packet_ip *p, uint64_t last)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffff);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffff);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (p->ip & 0xffffffffffff);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	case pt_ipc_full:
		return p->ip;
	case pt_ipc_suppressed:
		break;
	}
	return last;
}

static void pad(uint8_t *p, int size)
{
	memset(p, 0, (size_t)size);
}

int km_mask_kernel(uint8_t *buf, size_t len)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet pkt;
	uint64_t last = 0, off;
	int kernel = 0, n = 0, size;

	if (!buf && len)
		return PS_ERR_INVAL;
	if (!len)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return PS_ERR_NOMEM;
	for (;;) {
		if (pt_pkt_sync_forward(d) < 0)
			break;
		/* after a sync the context is not known until an IP says */
		kernel = 0;
		while (pt_pkt_get_offset(d, &off) >= 0 &&
		       (size = pt_pkt_next(d, &pkt, sizeof(pkt))) > 0) {
			uint8_t *p = buf + off;
			int has_ip = pkt.payload.ip.ipc != pt_ipc_suppressed;
			uint64_t ip = 0;

			switch (pkt.type) {
			case ppt_psb:
				last = 0; /* PSB resets IP compression */
				break;
			case ppt_tip:
			case ppt_tip_pge:
			case ppt_tip_pgd:
			case ppt_fup:
				ip = full_ip(&pkt.payload.ip, last);
				if (has_ip)
					last = ip;
				break;
			default:
				break;
			}
			switch (pkt.type) {
			case ppt_tip:
				if (kernel && has_ip && !km_is_kernel(ip)) {
					p[0] = (uint8_t)((p[0] & OP_IPC_MASK) |
							 OP_TIP_PGE);
					kernel = 0;
					n++;
				} else if (!kernel && has_ip &&
					   km_is_kernel(ip)) {
					pad(p, size);
					p[0] = OP_TIP_PGD;
					kernel = 1;
					n++;
				} else if (kernel) {
					pad(p, size);
					n++;
				}
				break;
			case ppt_tip_pge:
				kernel = has_ip && km_is_kernel(ip);
				if (kernel) {
					pad(p, size);
					n++;
				}
				break;
			case ppt_tip_pgd:
			case ppt_tnt_8:
			case ppt_tnt_64:
				if (kernel) {
					pad(p, size);
					n++;
				}
				break;
			case ppt_fup:
				if (has_ip)
					kernel = km_is_kernel(ip);
				if (kernel) {
					pad(p, size);
					n++;
				}
				break;
			default:
				break;
			}
		}
	}
	pt_pkt_free_decoder(d);
	return n;
}
