/* SPDX-License-Identifier: MIT */
/* x86 instruction classification with capstone (see insn.h). */
#include "decoder/insn.h"

#include <capstone/capstone.h>
#include <pthread.h>
#include <stdlib.h>

#include "ptscope/error.h"

/* Capstone keeps tables of its own, built on first use without a lock
 * (capstone 4's x86 register tables are sorted in place by whichever
 * thread needs them first), so decoders on several threads (decoder/
 * split.c) take turns.  Only learning new code decodes instructions. */
static pthread_mutex_t capstone_lock = PTHREAD_MUTEX_INITIALIZER;

struct insn_decoder {
	csh cs[3]; /* 16, 32, 64-bit handles, opened on first use */
	int open[3];
	cs_insn *insn[3];
};

int insn_new(struct insn_decoder **out)
{
	struct insn_decoder *d;

	if (!out)
		return PS_ERR_INVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return PS_ERR_NOMEM;
	*out = d;
	return 0;
}

void insn_free(struct insn_decoder *d)
{
	if (!d)
		return;
	for (int i = 0; i < 3; i++) {
		if (d->open[i]) {
			cs_free(d->insn[i], 1);
			cs_close(&d->cs[i]);
		}
	}
	free(d);
}

static int open_mode(struct insn_decoder *d, int idx)
{
	static const cs_mode modes[3] = {CS_MODE_16, CS_MODE_32, CS_MODE_64};

	if (d->open[idx])
		return 0;
	if (cs_open(CS_ARCH_X86, modes[idx], &d->cs[idx]) != CS_ERR_OK)
		return ps_err_detail(PS_ERR_INTERNAL,
				     "capstone cannot open an x86 decoder");
	cs_option(d->cs[idx], CS_OPT_DETAIL, CS_OPT_ON);
	d->insn[idx] = cs_malloc(d->cs[idx]);
	if (!d->insn[idx]) {
		cs_close(&d->cs[idx]);
		return PS_ERR_NOMEM;
	}
	d->open[idx] = 1;
	return 0;
}

static int has_group(const cs_insn *in, uint8_t grp)
{
	for (int i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == grp)
			return 1;
	return 0;
}

static void classify(const cs_insn *in, struct insn_info *out)
{
	const cs_x86 *x = &in->detail->x86;

	out->cls = INSN_OTHER;
	out->direct = 0;
	out->target = 0;
	switch (in->id) {
	case X86_INS_CALL:
		out->cls = INSN_CALL;
		break;
	case X86_INS_JMP:
		out->cls = INSN_JUMP;
		break;
	case X86_INS_RET:
		out->cls = INSN_RET;
		return;
	case X86_INS_LCALL:
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
		out->cls = INSN_SYSCALL;
		return;
	case X86_INS_LJMP:
		out->cls = INSN_FAR_JUMP;
		return;
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
	case X86_INS_SYSRET:
	case X86_INS_SYSEXIT:
		out->cls = INSN_FAR_RET;
		return;
	default:
		if (has_group(in, CS_GRP_JUMP))
			out->cls = INSN_COND;
		else
			return;
	}
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		out->direct = 1;
		out->target = (uint64_t)x->operands[0].imm;
	}
}

/* Bytes of a ModRM operand (ModRM itself, SIB, displacement) at @p,
 * @n available; @addr16: 16-bit addressing.  Returns 0 if cut short. */
static size_t modrm_len(const uint8_t *p, size_t n, int addr16)
{
	uint8_t mod, rm;

	if (n < 1)
		return 0;
	mod = p[0] >> 6;
	rm = p[0] & 7;
	if (mod == 3)
		return 1;
	if (addr16) {
		if (mod == 1)
			return 2;
		return mod == 2 || rm == 6 ? 3 : 1;
	}
	if (rm == 4) {
		if (n < 2)
			return 0;
		if (mod == 0 && (p[1] & 7) == 5)
			return 6;
		return mod == 1 ? 3 : mod == 2 ? 6 : 2;
	}
	if (mod == 1)
		return 2;
	return mod == 2 || rm == 5 ? 5 : 1;
}

/* Whether a VEX/EVEX instruction of opcode map @map has an imm8: all of
 * map 3 (0F3A); in map 1 (0F) the shuffles, shifts by immediate, compares
 * and word inserts/extracts. */
static int vex_has_imm8(unsigned map, uint8_t op)
{
	if (map == 3)
		return 1;
	if (map != 1)
		return 0;
	return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
	       op == 0xc5 || op == 0xc6;
}

size_t insn_fallback_len(int bits, const uint8_t *p, size_t n)
{
	size_t i = 0, pre, rest;
	int addr16 = bits == 16, legacy = 0;
	unsigned map;
	uint8_t op;

	for (; i < n && i < 14; i++) {
		uint8_t c = p[i];

		if (c == 0x67) {
			addr16 = bits == 32;
		} else if (c == 0x66 || c == 0xf2 || c == 0xf3 || c == 0xf0 ||
			   (bits == 64 && (c & 0xf0) == 0x40)) {
			legacy = 1; /* not allowed before VEX/EVEX */
		} else if (c != 0x26 && c != 0x2e && c != 0x36 && c != 0x3e &&
			   c != 0x64 && c != 0x65) {
			break;
		}
	}
	if (i + 1 >= n)
		return 0;
	/* 0F 18-1F: hint NOPs and prefetches, where CET's endbr and
	 * rdssp live (capstone 4 fails on rdsspq, used by libgcc's
	 * unwinder): ModRM, no immediate. */
	if (p[i] == 0x0f && p[i + 1] >= 0x18 && p[i + 1] <= 0x1f) {
		rest = modrm_len(p + i + 2, n - i - 2, addr16);
		i += 2 + rest;
		return rest && i <= n && i <= 15 ? i : 0;
	}
	/* Outside 64-bit mode these bytes are LDS/LES/BOUND unless the next
	 * byte would be a register-form ModRM. */
	if (legacy || (bits != 64 && p[i + 1] < 0xc0))
		return 0;
	switch (p[i]) {
	case 0xc5:
		pre = 2;
		map = 1;
		break;
	case 0xc4:
		pre = 3;
		map = p[i + 1] & 0x1f;
		break;
	case 0x62:
		/* P1 bit 2 is always 1 in EVEX */
		if (i + 2 >= n || !(p[i + 2] & 0x04))
			return 0;
		pre = 4;
		map = p[i + 1] & 0x07;
		break;
	default:
		return 0;
	}
	/* VEX maps 1-3; EVEX also 5 and 6 (AVX512-FP16) */
	if (map == 0 || map == 4 || map == 7 || (map > 3 && pre != 4) ||
	    i + pre >= n)
		return 0;
	op = p[i + pre];
	i += pre + 1;
	/* vzeroupper/vzeroall: the one VEX instruction without ModRM */
	if (pre != 4 && map == 1 && op == 0x77)
		return i;
	rest = modrm_len(p + i, n - i, addr16);
	if (!rest)
		return 0;
	i += rest + (vex_has_imm8(map, op) ? 1 : 0);
	return i <= n && i <= 15 ? i : 0;
}

int insn_decode(struct insn_decoder *d, int bits, uint64_t ip,
		const uint8_t *bytes, size_t len, struct insn_info *out)
{
	const uint8_t *code = bytes;
	uint64_t addr = ip;
	size_t size = len;
	int idx, err, ok;

	if (!d || !bytes || !out)
		return PS_ERR_INVAL;
	idx = bits == 64 ? 2 : bits == 32 ? 1 : bits == 16 ? 0 : -1;
	if (idx < 0)
		return PS_ERR_INVAL;
	pthread_mutex_lock(&capstone_lock);
	err = open_mode(d, idx);
	ok = !err &&
	     cs_disasm_iter(d->cs[idx], &code, &size, &addr, d->insn[idx]);
	pthread_mutex_unlock(&capstone_lock);
	if (err)
		return err;
	if (!ok) {
		size_t vlen = insn_fallback_len(bits, bytes, len);

		if (!vlen)
			return PS_ERR_DECODE;
		out->len = (uint8_t)vlen;
		out->cls = INSN_OTHER;
		out->direct = 0;
		out->target = 0;
		return 0;
	}
	out->len = (uint8_t)d->insn[idx]->size;
	classify(d->insn[idx], out);
	if (bits != 64 && out->direct)
		out->target &= bits == 32 ? 0xffffffffu : 0xffffu;
	return 0;
}
