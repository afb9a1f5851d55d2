/* SPDX-License-Identifier: MIT */
/* x86 instruction lengths from the opcode maps' rules (Intel SDM vol. 2,
 * chapter 2 and appendix A), without capstone (see insn.h):
 *  - insn_quick: the common x86-64 encodings, length and kind of control
 *    transfer.  Learning a block decodes each of its instructions once, and
 *    on code run once (start-up, a large program's first pass) that is most
 *    of a decode: capstone 4 spends about 3,000 instructions on each (it
 *    sorts a table per call), this about 120.  Anything it is not sure of
 *    goes to capstone, so the result is capstone's wherever both decode
 *    (but after an EVEX instruction with embedded rounding, where capstone
 *    4 takes a byte too many and this gives the SDM's and libipt's
 *    length).  It takes VEX/EVEX (glibc's string functions) by
 *    insn_fallback_len's rule, locked read-modify-writes, the 0F 38 / 0F
 *    3A maps, xgetbv, rdtscp and addr32 call too, so that a program's
 *    usual code never needs capstone, which is loaded only then
 *    (capstone_load.h).
 *  - insn_fallback_len: VEX/EVEX and hint-NOP instructions capstone 4 does
 *    not know, when capstone fails. */
#include "decoder/insn.h"

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

/* The end (bytes from @p) of the VEX or EVEX instruction whose escape byte
 * (C5, C4, 62) is p[@i], or 0: not one, or cut short; its map and opcode in
 * *@map and *@op. */
static size_t vex_end(const uint8_t *p, size_t n, size_t i, int addr16,
		      unsigned *map, uint8_t *op)
{
	size_t pre, rest;

	if (i + 1 >= n)
		return 0;
	switch (p[i]) {
	case 0xc5:
		pre = 2;
		*map = 1;
		break;
	case 0xc4:
		pre = 3;
		*map = p[i + 1] & 0x1f;
		break;
	case 0x62:
		/* P1 bit 2 is always 1 in EVEX */
		if (i + 2 >= n || !(p[i + 2] & 0x04))
			return 0;
		pre = 4;
		*map = p[i + 1] & 0x07;
		break;
	default:
		return 0;
	}
	/* VEX maps 1-3; EVEX also 5 and 6 (AVX512-FP16) */
	if (*map == 0 || *map == 4 || *map == 7 || (*map > 3 && pre != 4) ||
	    i + pre >= n)
		return 0;
	*op = p[i + pre];
	i += pre + 1;
	/* vzeroupper/vzeroall: the one VEX instruction without ModRM */
	if (pre != 4 && *map == 1 && *op == 0x77)
		return i;
	rest = modrm_len(p + i, n - i, addr16);
	if (!rest)
		return 0;
	i += rest + (vex_has_imm8(*map, *op) ? 1 : 0);
	return i <= n && i <= 15 ? i : 0;
}

size_t insn_fallback_len(int bits, const uint8_t *p, size_t n)
{
	size_t i = 0, rest;
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
	return vex_end(p, n, i, addr16, &map, &op);
}

/* What follows an opcode (one-byte and 0F maps). */
enum {
	Q_M = 1,      /* a ModRM operand */
	Q_I8 = 2,     /* an imm8 (or rel8) */
	Q_IZ = 4,     /* an imm16/imm32 (or rel32) by operand size */
	Q_I16 = 8,    /* an imm16 */
	Q_X = 16,     /* a case of its own: see quick_special() */
	Q_DEFER = 32, /* undefined in 64-bit mode, a prefix, VEX/EVEX, system
		       * instructions: left to capstone */
};

/* The maps below, by row (high nibble) and column (low nibble). */
#define NO 0
#define M_ Q_M
#define I1 Q_I8
#define IZ Q_IZ
#define W2 Q_I16
#define MI (Q_M | Q_I8)
#define MZ (Q_M | Q_IZ)
#define XX Q_X
#define DD Q_DEFER

/* clang-format off */

/* The one-byte map in 64-bit mode.  Prefixes (26 2E 36 3E 40-4F 64-67 F0
 * F2 F3) and the 0F escape are taken before it is read.  XX: 8D lea (no
 * register form), 8F pop or AMD XOP, A0-A3 mov with a full-address offset,
 * B8-BF mov imm32 or imm64, C6/C7 mov or xabort/xbegin, C8 enter, F6/F7
 * test's immediate, FE/FF by the ModRM reg field.  DD: undefined in 64-bit
 * mode, prefixes, VEX/EVEX (C4 C5 62, taken by quick_vex before the map is
 * read), far transfers (9A EA), and E0-E2 loop*, which capstone 4 counts
 * as no transfer. */
static const uint8_t map1[256] = {
    /*      0   1   2   3   4   5   6   7   8   9   A   B   C   D   E   F */
    /* 0 */ M_, M_, M_, M_, I1, IZ, DD, DD, M_, M_, M_, M_, I1, IZ, DD, DD,
    /* 1 */ M_, M_, M_, M_, I1, IZ, DD, DD, M_, M_, M_, M_, I1, IZ, DD, DD,
    /* 2 */ M_, M_, M_, M_, I1, IZ, DD, DD, M_, M_, M_, M_, I1, IZ, DD, DD,
    /* 3 */ M_, M_, M_, M_, I1, IZ, DD, DD, M_, M_, M_, M_, I1, IZ, DD, DD,
    /* 4 */ DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD,
    /* 5 */ NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO,
    /* 6 */ DD, DD, DD, M_, DD, DD, DD, DD, IZ, MZ, I1, MI, NO, NO, NO, NO,
    /* 7 */ I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1, I1,
    /* 8 */ MI, MZ, DD, MI, M_, M_, M_, M_, M_, M_, M_, M_, M_, XX, M_, XX,
    /* 9 */ NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, DD, NO, NO, NO, NO, NO,
    /* A */ XX, XX, XX, XX, NO, NO, NO, NO, I1, IZ, NO, NO, NO, NO, NO, NO,
    /* B */ I1, I1, I1, I1, I1, I1, I1, I1, XX, XX, XX, XX, XX, XX, XX, XX,
    /* C */ MI, MI, W2, NO, DD, DD, XX, XX, XX, NO, W2, NO, NO, I1, DD, NO,
    /* D */ M_, M_, M_, M_, DD, DD, DD, NO, M_, M_, M_, M_, M_, M_, M_, M_,
    /* E */ DD, DD, DD, I1, I1, I1, I1, I1, IZ, IZ, DD, I1, NO, NO, NO, NO,
    /* F */ DD, NO, DD, DD, NO, NO, XX, XX, NO, NO, NO, NO, NO, NO, XX, XX,
};

/* The 0F map.  XX: AE fences and state saves, or ptwrite (F3 /4, which
 * libipt treats as a transfer of its own and capstone 4 does not know), B8
 * popcnt (F3) or jmpe, BA bt* imm8 (/4-/7 only), 01 xgetbv and rdtscp
 * only.  DD: 0F 00 and the rest of 0F 01 (system), 0F 20-23 (control
 * registers: the ModRM is always a register form), 3DNow!, vmread/vmwrite
 * or SSE4a (78-7B), the undefined rows, and 0F 38 / 0F 3A, the three-byte
 * maps (read before this table is). */
static const uint8_t map2[256] = {
    /*      0   1   2   3   4   5   6   7   8   9   A   B   C   D   E   F */
    /* 0 */ DD, XX, M_, M_, DD, NO, NO, NO, NO, NO, DD, NO, DD, M_, DD, DD,
    /* 1 */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* 2 */ DD, DD, DD, DD, DD, DD, DD, DD, M_, M_, M_, M_, M_, M_, M_, M_,
    /* 3 */ NO, NO, NO, NO, NO, NO, DD, DD, DD, DD, DD, DD, DD, DD, DD, DD,
    /* 4 */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* 5 */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* 6 */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* 7 */ MI, MI, MI, MI, M_, M_, M_, NO, DD, DD, DD, DD, M_, M_, M_, M_,
    /* 8 */ IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ,
    /* 9 */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* A */ NO, NO, NO, M_, MI, M_, DD, DD, NO, NO, DD, M_, MI, M_, XX, M_,
    /* B */ M_, M_, M_, M_, M_, M_, M_, M_, XX, DD, XX, M_, M_, M_, M_, M_,
    /* C */ M_, M_, MI, M_, MI, MI, MI, M_, NO, NO, NO, NO, NO, NO, NO, NO,
    /* D */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* E */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_,
    /* F */ M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, M_, DD,
};

/* clang-format on */

#undef NO
#undef M_
#undef I1
#undef IZ
#undef W2
#undef MI
#undef MZ
#undef XX
#undef DD

/* The prefixes an instruction starts with. */
struct quick_prefixes {
	unsigned legacy; /* how many legacy prefixes */
	int osize;	 /* 66: 16-bit operands */
	int asize;	 /* 67: 32-bit addresses */
	int rep;	 /* F3 */
	int repne;	 /* F2 */
	int rexw;	 /* REX.W */
	int lock;	 /* F0 */
};

/* What a byte is as a prefix in 64-bit mode. */
enum { P_NONE, P_SEG, P_OSIZE, P_ASIZE, P_REP, P_REPNE, P_LOCK, P_REX };

static const uint8_t prefix_kind[256] = {
    [0x26] = P_SEG,  [0x2e] = P_SEG,	      [0x36] = P_SEG,
    [0x3e] = P_SEG,  [0x40 ... 0x4f] = P_REX, [0x64] = P_SEG,
    [0x65] = P_SEG,  [0x66] = P_OSIZE,	      [0x67] = P_ASIZE,
    [0xf0] = P_LOCK, [0xf2] = P_REPNE,	      [0xf3] = P_REP,
};

/* Prefixes at @p: returns where the opcode starts, or -1 when something
 * is unusual (a REX not right before the opcode, more than 14). */
static int quick_prefixes(const uint8_t *p, size_t n, struct quick_prefixes *q)
{
	size_t i;
	int rex = 0;

	*q = (struct quick_prefixes){0};
	for (i = 0; i < n && i < 14; i++) {
		switch (prefix_kind[p[i]]) {
		case P_NONE:
			return (int)i;
		case P_REX:
			if (rex)
				return -1;
			rex = 1;
			q->rexw = (p[i] & 8) != 0;
			continue;
		case P_LOCK: /* checked against the opcode: quick_lockable */
			q->lock = 1;
			break;
		case P_OSIZE:
			q->osize = 1;
			break;
		case P_ASIZE:
			q->asize = 1;
			break;
		case P_REP:
			q->rep = 1;
			break;
		case P_REPNE:
			q->repne = 1;
			break;
		}
		if (rex) /* a REX before a legacy prefix is ignored */
			return -1;
		q->legacy++;
		/* 66 with F2/F3: capstone takes 66 as part of the opcode, not
		 * as the operand size (push imm differs) */
		if (q->osize && (q->rep || q->repne))
			return -1;
		/* lock with F2/F3: HLE's xacquire/xrelease */
		if (q->lock && (q->rep || q->repne))
			return -1;
	}
	return -1;
}

/* A transfer's kind (enum insn_class) from its opcode (@map 1 or 2) and
 * ModRM reg field, or -1: not a transfer.  *direct: a branch to ip +
 * length + its last immediate.  The far and system transfers that remain
 * (int, syscall, iret, sysret, retf) are INSN_SYSCALL / INSN_FAR_RET. */
static int quick_transfer(int map, uint8_t op, int reg, int *direct)
{
	*direct = 0;
	if (map == 2) {
		if (op >= 0x80 && op <= 0x8f)
			return *direct = 1, INSN_COND;
		if (op == 0x05 || op == 0x34)
			return INSN_SYSCALL;
		if (op == 0x07 || op == 0x35)
			return INSN_FAR_RET;
		return -1;
	}
	if ((op >= 0x70 && op <= 0x7f) || op == 0xe3)
		return *direct = 1, INSN_COND;
	switch (op) {
	case 0xe8:
		return *direct = 1, INSN_CALL;
	case 0xe9:
	case 0xeb:
		return *direct = 1, INSN_JUMP;
	case 0xc2:
	case 0xc3:
		return INSN_RET;
	case 0xca:
	case 0xcb:
	case 0xcf:
		return INSN_FAR_RET;
	case 0xcc:
	case 0xcd:
	case 0xf1:
		return INSN_SYSCALL;
	case 0xff:
		if (reg == 2)
			return INSN_CALL;
		if (reg == 4)
			return INSN_JUMP;
		return -1;
	}
	return -1;
}

/* Whether F0 (lock) may come before opcode @op of @map (1: one byte, 2: 0F)
 * with ModRM byte @modrm: the instructions the SDM's LOCK lists, with a
 * memory destination.  capstone rejects a lock anywhere else, so those are
 * left to it. */
static int quick_lockable(int map, uint8_t op, uint8_t modrm)
{
	int reg = modrm >> 3 & 7;

	if (modrm >= 0xc0)
		return 0;
	if (map == 2)
		return op == 0xb0 || op == 0xb1 || op == 0xc0 || op == 0xc1 ||
		       op == 0xab || op == 0xb3 || op == 0xbb ||
		       (op == 0xba && reg >= 5) || (op == 0xc7 && reg == 1);
	/* add or adc sbb and sub xor to memory (00 01 ... 30 31; 38 39 cmp) */
	if (op < 0x40)
		return (op & 7) <= 1 && op >> 3 != 7;
	switch (op) {
	case 0x80:
	case 0x81:
	case 0x83:
		return reg != 7;
	case 0x86:
	case 0x87:
		return 1;
	case 0xf6:
	case 0xf7:
		return reg == 2 || reg == 3;
	case 0xfe:
	case 0xff:
		return reg <= 1;
	}
	return 0;
}

/* An XX opcode's operands: the Q_* flags of what follows at p[*i], after
 * adding to *i the bytes it knows already (a full-address offset, mov's
 * imm64, enter's operands); where the ModRM byte decides, it is read and
 * its reg field put in *reg.  Q_DEFER for the forms left to capstone. */
static unsigned quick_special(int map, uint8_t op,
			      const struct quick_prefixes *q, const uint8_t *p,
			      size_t n, size_t *i, int *reg)
{
	int mod;

	if (map == 1 && op >= 0xa0 && op <= 0xa3) {
		*i += q->asize ? 4 : 8;
		return 0;
	}
	if (map == 1 && op >= 0xb8 && op <= 0xbf) {
		*i += q->rexw ? 8 : q->osize ? 2 : 4;
		return 0;
	}
	if (map == 1 && op == 0xc8) {
		*i += 3;
		return 0;
	}
	if (*i >= n)
		return Q_DEFER;
	*reg = p[*i] >> 3 & 7;
	mod = p[*i] >> 6;
	if (map == 2) {
		switch (op) {
		case 0x01: /* system instructions: only xgetbv and rdtscp */
			return !q->legacy && (p[*i] == 0xd0 || p[*i] == 0xf9)
				   ? Q_M
				   : Q_DEFER;
		case 0xae:
			return q->rep && *reg == 4 ? Q_DEFER : Q_M;
		case 0xb8:
			return q->rep ? Q_M : Q_DEFER;
		case 0xba:
			return *reg >= 4 ? Q_M | Q_I8 : Q_DEFER;
		}
		return Q_DEFER;
	}
	switch (op) {
	case 0x8d:
		return mod != 3 ? Q_M : Q_DEFER;
	case 0x8f:
		return *reg == 0 ? Q_M : Q_DEFER;
	case 0xc6:
		return *reg == 0 ? Q_M | Q_I8 : Q_DEFER;
	case 0xc7:
		return *reg == 0 ? Q_M | Q_IZ : Q_DEFER;
	case 0xf6:
		return *reg == 0 ? Q_M | Q_I8 : *reg == 1 ? Q_DEFER : Q_M;
	case 0xf7:
		return *reg == 0 ? Q_M | Q_IZ : *reg == 1 ? Q_DEFER : Q_M;
	case 0xfe:
		return *reg <= 1 ? Q_M : Q_DEFER;
	case 0xff:
		return *reg == 3 || *reg == 5 || *reg == 7 ? Q_DEFER : Q_M;
	}
	return Q_DEFER;
}

/* Whether quick_vex takes VEX/EVEX map 1 (0F) opcode @op: the rows where
 * the AVX instructions are and libipt 2.0.5, which reads VEX/EVEX map 1
 * with the legacy 0F map's tables (pt_ild.c: prefix_vex_done, then
 * modrm_dec, disp_dec, imm_dec), gives the length insn_fallback_len does:
 * a ModRM, and an imm8 exactly where vex_has_imm8 says.  The other rows
 * (system instructions, MOV to a control register, Jcc rel32, cpuid,
 * shld/shrd and bt imm8, bswap, ud0) are left to capstone, as before. */
static int vex_map1_quick(uint8_t op)
{
	return (op >= 0x10 && op <= 0x1f) || (op >= 0x28 && op <= 0x2f) ||
	       (op >= 0x40 && op <= 0x7f) || (op >= 0x90 && op <= 0x9f) ||
	       op == 0xae || (op >= 0xc2 && op <= 0xc6) ||
	       (op >= 0xd0 && op <= 0xfe);
}

/* A VEX or EVEX instruction at @p (no prefix before it): vector code, never
 * a transfer, its length by insn_fallback_len's rule (vex_end).  Maps 1-3
 * only (EVEX's newer maps are left to capstone, and libipt 2.0.5 reads
 * only two bits of EVEX's map field).  Returns 1 and fills @out, or 0. */
static int quick_vex(const uint8_t *p, size_t n, struct insn_info *out)
{
	unsigned map;
	uint8_t op;
	size_t len = vex_end(p, n, 0, 0, &map, &op);

	/* EVEX 0F 77 has a ModRM to vex_end, none to libipt */
	if (!len || map > 3 ||
	    (map == 1 && (!vex_map1_quick(op) || (p[0] == 0x62 && op == 0x77))))
		return 0;
	out->len = (uint8_t)len;
	out->cls = INSN_OTHER;
	out->direct = 0;
	out->target = 0;
	return 1;
}

int insn_quick(const uint8_t *p, size_t n, uint64_t ip, struct insn_info *out)
{
	struct quick_prefixes q;
	int at = quick_prefixes(p, n, &q), map = 1, kind, direct, reg = 0;
	size_t i, len;
	unsigned fl;
	uint8_t op;

	if (at < 0 || (size_t)at >= n)
		return 0;
	if (at == 0 && (p[0] == 0xc4 || p[0] == 0xc5 || p[0] == 0x62))
		return quick_vex(p, n, out);
	i = (size_t)at;
	op = p[i++];
	if (op == 0x0f) {
		if (i >= n)
			return 0;
		map = 2;
		op = p[i++];
	}
	if (map == 2 && (op == 0x38 || op == 0x3a)) {
		/* 0F 38 and 0F 3A (SSSE3, SSE4, crc32, movbe, adcx, sha): a
		 * ModRM always, 0F 3A an imm8 too, never a transfer, as
		 * libipt 2.0.5 reads them (pt_ild.c, opcode_dec and
		 * modrm_dec); capstone 4 rejects their unassigned opcodes,
		 * which no compiler emits */
		if (i >= n || q.lock)
			return 0;
		fl = op == 0x38 ? Q_M : Q_M | Q_I8;
		i++;
		kind = -1;
		direct = 0;
	} else {
		fl = map == 1 ? map1[op] : map2[op];
		if (fl & Q_X)
			fl = quick_special(map, op, &q, p, n, &i, &reg);
		if (fl & Q_DEFER)
			return 0;
		if (q.lock && (i >= n || !quick_lockable(map, op, p[i])))
			return 0;
		kind = quick_transfer(map, op, reg, &direct);
	}
	/* Prefixed transfers go to capstone: bnd, notrack, rep ret, and
	 * the operand size of a near branch (Intel and AMD differ); but
	 * addr32 call (67 E8, which linkers write for a call through the
	 * GOT they resolved) has its target as without it. */
	if (kind >= 0 && q.legacy &&
	    !(q.legacy == 1 && q.asize && !q.rexw && map == 1 && op == 0xe8))
		return 0;
	if (fl & Q_M) {
		size_t m = modrm_len(p + i, n - i, 0);

		if (!m)
			return 0;
		i += m;
	}
	if (fl & Q_I8)
		i += 1;
	if (fl & Q_I16)
		i += 2;
	if (fl & Q_IZ)
		i += q.osize && !q.rexw ? 2 : 4;
	len = i;
	if (len > n || len > 15)
		return 0;
	out->len = (uint8_t)len;
	out->cls = kind >= 0 ? (uint8_t)kind : INSN_OTHER;
	out->direct = (uint8_t)direct;
	out->target = 0;
	if (direct) {
		int64_t rel = fl & Q_I8 ? (int8_t)p[len - 1]
					: (int32_t)((uint32_t)p[len - 4] |
						    (uint32_t)p[len - 3] << 8 |
						    (uint32_t)p[len - 2] << 16 |
						    (uint32_t)p[len - 1] << 24);

		out->target = ip + len + (uint64_t)rel;
	}
	return 1;
}
