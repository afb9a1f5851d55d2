/* SPDX-License-Identifier: MIT */
/* x86 instruction classification for the flow layer (prefix insn_): the
 * length of an instruction, what kind of control transfer it is and, for
 * direct branches, the target.  Used when a block is seen for the first
 * time (flow_branches.c caches the result), which on code run once is most
 * of a decode: a table decoder (insn_len.c) takes the common x86-64
 * encodings, capstone (insn.c) the rest.  Internal to the decoder. */
#ifndef PTSCOPE_DECODER_INSN_H
#define PTSCOPE_DECODER_INSN_H

#include <stddef.h>
#include <stdint.h>

enum insn_class {
	INSN_OTHER,    /* no control transfer */
	INSN_CALL,     /* near call, direct (target set) or indirect */
	INSN_JUMP,     /* near unconditional jump, direct or indirect */
	INSN_COND,     /* conditional jump / loop / jcxz (target set) */
	INSN_RET,      /* near ret */
	INSN_SYSCALL,  /* syscall, sysenter, int n, int3, into, far call */
	INSN_FAR_JUMP, /* far jmp */
	INSN_FAR_RET   /* far ret, iret, sysret, sysexit */
};

struct insn_info {
	uint8_t len;	 /* bytes */
	uint8_t cls;	 /* enum insn_class */
	uint8_t direct;	 /* 1: a branch with an immediate target */
	uint64_t target; /* direct branches: where they go */
};

/* Bits of the code: 16, 32 or 64. */
struct insn_decoder;

/* Returns 0, PS_ERR_NOMEM, PS_ERR_INTERNAL (capstone failed to open). */
int insn_new(struct insn_decoder **out);
void insn_free(struct insn_decoder *d); /* accepts NULL */

/* Decode the instruction at @ip from @bytes (@len available, up to 15
 * needed) in @bits-bit mode.  Returns 0 and fills @out, PS_ERR_DECODE
 * (not a valid instruction), PS_ERR_INVAL (bad bits or NULL). */
int insn_decode(struct insn_decoder *d, int bits, uint64_t ip,
		const uint8_t *bytes, size_t len, struct insn_info *out);

/* Capstone alone (and insn_fallback_len when it fails): what insn_decode()
 * does with what insn_quick() leaves.  For tests. */
int insn_capstone(struct insn_decoder *d, int bits, uint64_t ip,
		  const uint8_t *bytes, size_t len, struct insn_info *out);

/* The table decoder alone: 1 and @out filled if the 64-bit instruction at
 * @p (@n bytes available, at @ip) is one of the common encodings it knows,
 * 0 if capstone must decide (insn_decode() asks it then).  Where both
 * decode, they agree (tests/unit/test_insn.c checks it). */
int insn_quick(const uint8_t *p, size_t n, uint64_t ip, struct insn_info *out);

/* The length of an instruction capstone 4 does not know but that cannot
 * transfer control, at @p (@n bytes available) in @bits-bit mode,
 * prefixes included: VEX (C4/C5) and EVEX (62) encoded AVX/AVX-512
 * instructions (glibc's EVEX string functions use VPTESTNMB and VPCMPB)
 * and the 0F 18-1F hint-NOP space (CET's rdsspq in libgcc's unwinder).
 * insn_decode() falls back to it when capstone fails: the length is all
 * the flow layer needs of these.  Returns 0 if @p is not such an
 * instruction or is cut short. */
size_t insn_fallback_len(int bits, const uint8_t *p, size_t n);

/* 1 if the 64-bit instruction at @b (@len bytes, all of it) is a MOV to
 * CR3 as libipt's decoder classifies it: map 1 opcode 0x22 with ModRM.reg
 * 3 and no REX.R, after legacy prefixes (a REX counts only as the last of
 * them) or inside a VEX or EVEX prefix (whose R bit libipt reads as REX.R
 * without inverting it); else 0. */
int insn_is_mov_cr3(const uint8_t *b, size_t len);

#endif /* PTSCOPE_DECODER_INSN_H */
