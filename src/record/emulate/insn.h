/* SPDX-License-Identifier: MIT */
/* Instruction classification for the emulated PT backend (prefix emu_insn_).
 *
 * PT only cares about the control-flow class of an instruction, so the
 * branch opcodes are decoded here by hand (prefixes, opcode, ModRM length);
 * capstone is asked only for the length of everything else, on a cache
 * miss.  The classes follow libipt's (pt_ild.c) so that the packets we emit
 * are the ones its decoder asks for at the same instruction.
 */
#ifndef PTSCOPE_RECORD_EMULATE_INSN_H
#define PTSCOPE_RECORD_EMULATE_INSN_H

#include <stddef.h>
#include <stdint.h>

/* What an instruction makes PT emit. */
enum emu_insn_class {
	EMU_I_OTHER = 0, /* no branch: nothing */
	EMU_I_JCC,	 /* jcc, loop*, jrcxz: one TNT bit */
	EMU_I_JMP,	 /* direct jmp: nothing */
	EMU_I_CALL,	 /* direct call: nothing */
	EMU_I_JMP_IND,	 /* jmp r/m: TIP */
	EMU_I_CALL_IND,	 /* call r/m: TIP */
	EMU_I_RET,	 /* near ret (imm16 too): TIP, no compression */
	EMU_I_FAR,	 /* far jmp/call/ret, iret: TIP */
	EMU_I_TRAP	 /* syscall, sysenter, int n, int3, int1: into the
			  * untraced kernel: TIP.PGD, then TIP.PGE */
};

/* emu_insn.flags */
#define EMU_IF_REP 0x01 /* rep/repne string op: may single-step in place */

/* One decoded instruction; also the instruction-cache entry (16 bytes). */
struct emu_insn {
	uint64_t ip;   /* address; 0 marks an empty cache slot */
	int32_t disp;  /* direct branches: target = ip + len + disp */
	uint8_t len;   /* bytes; 0 when unknown (capstone could not decode) */
	uint8_t cls;   /* enum emu_insn_class */
	uint8_t flags; /* EMU_IF_* */
	uint8_t pad;
};

/* Longest x86 instruction; read this many bytes on a cache miss. */
#define EMU_INSN_MAX 15

struct emu_insn_decoder;

/* Returns 0, PS_ERR_NOMEM or PS_ERR_INTERNAL (capstone failed to open). */
int emu_insn_decoder_new(struct emu_insn_decoder **out);
void emu_insn_decoder_free(struct emu_insn_decoder *d); /* accepts NULL */

/* Decode the instruction at @ip from @bytes[0..@n).  Returns 0 and fills
 * *@out; PS_ERR_TRUNCATED when @n ends inside a branch instruction;
 * PS_ERR_INVAL on NULL arguments or @ip == 0.  An unknown non-branch
 * opcode is not an error: it is EMU_I_OTHER with len 0. */
int emu_insn_decode(struct emu_insn_decoder *d, const uint8_t *bytes, size_t n,
		    uint64_t ip, struct emu_insn *out);

/* "other", "jcc", ... for messages and tests. */
const char *emu_insn_class_name(int cls);

#endif /* PTSCOPE_RECORD_EMULATE_INSN_H */
