/* SPDX-License-Identifier: MIT */
/* --filter for the intel-pt backend (prefix ptf_): turn what the user
 * wrote into the text PERF_EVENT_IOC_SET_FILTER takes.
 *
 *   NAME          a file mapped in the target (its path, its base name,
 *                 or the start of its base name: "libfoo" matches
 *                 libfoo.so.1): every executable mapping of it, as
 *                 "filter 0xOFFSET/0xSIZE@PATH" (OFFSET: file offset)
 *   START/SIZE@FILE, START@FILE
 *                 one range in the kernel's own form (file offsets)
 *   filter|start|stop|tracestop ...
 *                 the kernel's syntax, passed through
 */
#ifndef PTSCOPE_RECORD_PT_FILTER_H
#define PTSCOPE_RECORD_PT_FILTER_H

#include <stdint.h>

#include "src/record/core/core.h"

/* The filter text for @spec against @mods (may be NULL for the raw
 * forms) into a malloc'ed *@out.  @max_ranges: caps/num_address_ranges.
 * Returns 0, PS_ERR_NOT_FOUND (no mapped file matches: the detail lists
 * what is mapped), PS_ERR_LIMIT (more ranges than the CPU has),
 * PS_ERR_INVAL (empty spec), PS_ERR_NOMEM. */
int ptf_build(const char *spec, const struct mod_list *mods,
	      uint64_t max_ranges, char **out);

#endif /* PTSCOPE_RECORD_PT_FILTER_H */
