/* SPDX-License-Identifier: MIT */
/* A MOV to CR3 as libipt 2.0.5's instruction decoder classifies one
 * (PTI_INST_MOV_CR3 in libipt/src/pt_ild.c: its prefix, opcode and ModRM
 * rules), for the flow engine: a PIP written while tracing is on binds to
 * the next one (see insn.h). */
#include "decoder/insn.h"

int insn_is_mov_cr3(const uint8_t *b, size_t len)
{
	size_t i = 0;
	int rex = 0, map, op, modrm, rex_r;

	if (len < 3)
		return 0;
	for (;; i++) {
		if (i >= len)
			return 0;
		switch (b[i]) {
		case 0x26:
		case 0x2e:
		case 0x36:
		case 0x3e:
		case 0x64:
		case 0x65:
		case 0x66:
		case 0x67:
		case 0xf0:
		case 0xf2:
		case 0xf3:
			rex = 0;
			continue;
		}
		if ((b[i] & 0xf0) == 0x40) {
			rex = b[i];
			continue;
		}
		break;
	}
	switch (b[i]) {
	case 0xc5: /* VEX, 2 bytes: map 1 */
		if (i + 3 >= len)
			return 0;
		rex_r = b[i + 1] & 0x80;
		map = 1;
		op = b[i + 2];
		modrm = b[i + 3];
		break;
	case 0xc4: /* VEX, 3 bytes */
		if (i + 4 >= len)
			return 0;
		rex_r = b[i + 1] & 0x80;
		map = b[i + 1] & 0x1f;
		op = b[i + 3];
		modrm = b[i + 4];
		break;
	case 0x62: /* EVEX */
		if (i + 5 >= len)
			return 0;
		rex_r = b[i + 1] & 0x80;
		map = b[i + 1] & 0x03;
		op = b[i + 4];
		modrm = b[i + 5];
		break;
	case 0x0f:
		if (i + 2 >= len)
			return 0;
		rex_r = rex & 0x04;
		map = 1;
		op = b[i + 1];
		modrm = b[i + 2];
		/* 0f 38, 0f 3a, 0f 39..3f and 3DNow! are other maps */
		if (op == 0x0f || (op & 0xf8) == 0x38)
			return 0;
		break;
	default:
		return 0;
	}
	return map == 1 && op == 0x22 && ((modrm >> 3) & 7) == 3 && !rex_r;
}
