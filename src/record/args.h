/* SPDX-License-Identifier: MIT */
/* --args on the recorder's side (prefix rec_args_): the functions of a
 * process's main program whose calls the emulated backends record, with
 * where each value is at the entry (decoder/params.h), as the emulation
 * core's table (src/record/emulate/args.h).
 *
 * Only the main program's module: its own functions are what a user
 * asks about and what has DWARF; every call into the C library would
 * cost ring space (a window is ~16 bytes + 6-10 per value) for functions
 * whose parameters no debug information describes.
 */
#ifndef PTSCOPE_RECORD_ARGS_H
#define PTSCOPE_RECORD_ARGS_H

#include <stddef.h>

#include "src/record/core/modules.h"
#include "src/record/emulate/args.h"

/* rec_options.args */
enum { REC_ARGS_OFF = 0, REC_ARGS_DWARF = 1, REC_ARGS_RAW = 2 };

/* The table for program @exe mapped in @mods: every function DWARF
 * describes (kind EMU_W_ARGS), with @mode REC_ARGS_RAW every other
 * function symbol too (EMU_W_RAW), and ptscope_write (EMU_W_WRITE)
 * whatever the mode; REC_ARGS_OFF: only ptscope_write, found in the
 * symbol table (no DWARF is read).  *out is malloc'ed (NULL, 0: none).  Returns
 * 0, PS_ERR_NOMEM, or the file's error (then nothing is recorded). */
int rec_args_table(const struct mod_list *mods, const char *exe, int mode,
		   struct emu_fn **out, size_t *n);

#endif /* PTSCOPE_RECORD_ARGS_H */
