/* SPDX-License-Identifier: MIT */
/* The ground-truth writer (see truth.h). */
#include <inttypes.h>

#include "src/record/emulate/truth.h"

const char *emu_truth_kind_name(int kind)
{
	switch ((enum emu_truth_kind)kind) {
	case EMU_T_START:
		return "start";
	case EMU_T_STOP:
		return "stop";
	case EMU_T_CALL:
		return "call";
	case EMU_T_RET:
		return "ret";
	case EMU_T_JMP:
		return "jmp";
	case EMU_T_FAR:
		return "far";
	case EMU_T_SYSCALL:
		return "syscall";
	case EMU_T_SIGNAL:
		return "signal";
	case EMU_T_ASYNC:
		return "async";
	}
	return NULL;
}

void emu_truth_header(FILE *f)
{
	fputs("# ptscope-truth 1: tid kind from to icount ns\n", f);
}

void emu_truth_event(FILE *f, pid_t tid, enum emu_truth_kind kind,
		     uint64_t from, uint64_t to, uint64_t icount, uint64_t ns)
{
	fprintf(f,
		"%d %s 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
		(int)tid, emu_truth_kind_name(kind), from, to, icount, ns);
}
