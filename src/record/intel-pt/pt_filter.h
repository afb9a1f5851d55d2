/* SPDX-License-Identifier: MIT */
/* --filter for the intel-pt backend (prefix ptf_): turn what the user
 * wrote into the text PERF_EVENT_IOC_SET_FILTER takes.
 *
 *   NAME          a file mapped in the target (its path, its base name,
 *                 or the start of its base name: "libfoo" matches
 *                 libfoo.so.1): every executable mapping of it, as
 *                 "filter 0xOFFSET/0xSIZE@PATH" (OFFSET: file offset),
 *                 starting past any earlier mapping of the file that the
 *                 kernel would otherwise bind the range to
 *   [filter|tracestop] START/SIZE@FILE, ...
 *                 perf's syntax (file offsets; ranges separated by
 *                 commas or spaces, as the kernel splits them), written
 *                 in the kernel's words ("tracestop" is its "stop");
 *                 "start" and single-address "stop" are refused, as
 *                 Intel PT refuses them (pt_event_addr_filters_validate)
 */
#ifndef PTSCOPE_RECORD_PT_FILTER_H
#define PTSCOPE_RECORD_PT_FILTER_H

#include <stdint.h>

#include "src/record/core/core.h"

/* The filter text for @spec against @mods, every file mapping of the
 * process (mod_read with MOD_FILE; may be NULL for the raw forms), into a
 * malloc'ed *@out.  @max_ranges: caps/num_address_ranges.
 * Returns 0, PS_ERR_NOT_FOUND (no mapped file matches: the detail lists
 * what is mapped), PS_ERR_LIMIT (more ranges than the CPU has),
 * PS_ERR_UNSUPPORTED (an action or range Intel PT cannot take),
 * PS_ERR_INVAL (empty or malformed spec), PS_ERR_NOMEM. */
int ptf_build(const char *spec, const struct mod_list *mods,
	      uint64_t max_ranges, char **out);

#endif /* PTSCOPE_RECORD_PT_FILTER_H */
