/* SPDX-License-Identifier: MIT */
/* Finding a recorded module's file when decoding (prefix replay_locate_). */
#ifndef PTSCOPE_REPLAY_LOCATE_H
#define PTSCOPE_REPLAY_LOCATE_H

#include <stddef.h>

#include "ptscope/recording.h"

/* Where to find the file of recorded module @m when decoding:
 *  - its archived copy, if the recording has one: written once to
 *    "<cache_dir>/<build id hex or 'noid'>/<basename>" and that path given;
 *  - else @m->path on this machine, if its build id matches (or either
 *    has none).
 * @cache_dir NULL: $TMPDIR or /tmp + "/ptscope-<uid>".  The path goes to
 * @out (size @outsz).  Returns 0, PS_ERR_NOT_FOUND (missing file or build
 * id mismatch: the detail says to record with --archive), PS_ERR_IO,
 * PS_ERR_LIMIT (@outsz too small). */
int replay_locate_module(const struct rec_module *m, const char *cache_dir, char *out,
	       size_t outsz);

#endif /* PTSCOPE_REPLAY_LOCATE_H */
