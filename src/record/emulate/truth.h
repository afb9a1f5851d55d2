/* SPDX-License-Identifier: MIT */
/* The ground-truth writer (prefix emu_truth_): one text line per control
 * transfer that matters for call stacks, in execution order per thread:
 *
 *   tid kind from to icount ns
 *
 * (format and meaning: docs/emulated-backend.md).  A test can rebuild the
 * exact call/return sequence of each thread from it. */
#ifndef PTSCOPE_RECORD_EMULATE_TRUTH_H
#define PTSCOPE_RECORD_EMULATE_TRUTH_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum emu_truth_kind {
	EMU_T_START,   /* tracing began: to = first ip */
	EMU_T_STOP,    /* tracing ended: from = next ip, not executed */
	EMU_T_CALL,    /* call (direct or indirect): from = call, to = callee */
	EMU_T_RET,     /* near ret: from = ret, to = return address */
	EMU_T_JMP,     /* indirect jmp (PLT, switch, longjmp, tail call) */
	EMU_T_FAR,     /* far jmp/call/ret, iret */
	EMU_T_SYSCALL, /* syscall/int: from = insn, to = where it resumed */
	EMU_T_SIGNAL, /* signal delivery: from = interrupted ip, to = handler */
	EMU_T_ASYNC   /* control moved where the insn at from cannot go */
};

/* The first line of a truth file: "# ptscope-truth 1 tid kind ...". */
void emu_truth_header(FILE *f);

/* One event; @icount = instructions the thread completed before it,
 * @ns = virtual time of it. */
void emu_truth_event(FILE *f, pid_t tid, enum emu_truth_kind kind,
		     uint64_t from, uint64_t to, uint64_t icount, uint64_t ns);

/* "call", "ret", ...; NULL for an unknown kind. */
const char *emu_truth_kind_name(int kind);

#endif /* PTSCOPE_RECORD_EMULATE_TRUTH_H */
