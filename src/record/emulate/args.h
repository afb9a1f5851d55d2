/* SPDX-License-Identifier: MIT */
/* Arguments and return values as PTW packets (prefix emu_args_, emu_fn):
 * the emulated backends' --args.  The recorder hands each process a table
 * of functions (entry address → where each value is at the entry, from
 * DWARF: src/record/args.c) and each thread a way to read its registers;
 * the core then writes, when control reaches a listed entry by a call or
 * a jump, a data window with the values, and before the matching return
 * one with the return value.  The format is docs/args.md:
 *
 *   FUP(ip) TIP.PGD · PTW(header) PTW(value)... · MODE.Exec TIP.PGE(ip)
 *
 * at the next instruction @ip (not yet run): tracing pauses and resumes
 * in place, and libipt reports the PTW packets between as ptwrite events
 * (with tracing off they bind to no instruction).  Header (a 4-byte
 * payload): bits 0-7 EMU_PTW_MAGIC, 8-11 kind (EMU_W_*), 12-15 number of
 * value packets that follow, 16-31 the low 16 bits of the function's
 * entry.
 */
#ifndef PTSCOPE_RECORD_EMULATE_ARGS_H
#define PTSCOPE_RECORD_EMULATE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#define EMU_PTW_MAGIC 0xa5
#define EMU_FN_MAXV 15

/* What a window holds (header bits 8-11). */
enum emu_window_kind {
	EMU_W_ARGS = 1, /* the parameters DWARF lists, in its order */
	EMU_W_RET = 2,	/* the return value */
	EMU_W_RAW = 3,	/* rdi, rsi, rdx, rcx, r8, r9 (no DWARF) */
	EMU_W_WRITE = 4 /* ptscope_write(value): one value */
};

/* emu_fn.loc[i]: where value i is at the entry. */
#define EMU_LOC_REG(k) ((uint8_t)(k))	       /* k: 0 rdi .. 5 r9 */
#define EMU_LOC_XMM(k) ((uint8_t)(0x10 + (k))) /* xmm0..7, low 8 bytes */
#define EMU_LOC_STACK(off) ((uint8_t)(0x80 + (off) / 8)) /* rsp + off */

/* emu_fn.ret */
enum { EMU_RET_NONE = 0, EMU_RET_RAX = 1, EMU_RET_XMM0 = 2 };

/* One function to record (a plain struct: the qemu backend sends an
 * array of them to its plugin). */
struct emu_fn {
	uint64_t entry; /* run-time address */
	uint8_t kind;	/* EMU_W_ARGS, EMU_W_RAW or EMU_W_WRITE */
	uint8_t nvals;
	uint8_t ret; /* EMU_RET_* */
	uint8_t pad[5];
	uint8_t loc[16];
};

/* A thread's registers at a step, as its backend reads them. */
struct emu_regs {
	uint64_t rax, rdi, rsi, rdx, rcx, r8, r9, rsp;
	uint64_t xmm[8]; /* low 8 bytes of xmm0..7 (when asked for) */
};

/* Fill @r for the thread (@want_xmm: xmm too).  Returns 0 or < 0 (the
 * values are then not recorded). */
typedef int (*emu_regs_fn)(void *ctx, struct emu_regs *r, int want_xmm);

struct emu_process;
struct emu_thread;

/* Record the calls of @fns[0..n) in @p (copied; replaces the previous
 * table; n 0: none).  Returns 0 or PS_ERR_NOMEM. */
int emu_process_set_fns(struct emu_process *p, const struct emu_fn *fns,
			size_t n);

/* How @t's registers are read (without it nothing is recorded). */
void emu_thread_set_regs(struct emu_thread *t, emu_regs_fn fn, void *ctx);

/* Write a data window of @n values (kind @kind, function @entry) at @t's
 * next instruction.  Returns 0 or PS_ERR_*. */
int emu_data(struct emu_thread *t, unsigned kind, uint64_t entry,
	     const uint64_t *v, unsigned n);

#endif /* PTSCOPE_RECORD_EMULATE_ARGS_H */
