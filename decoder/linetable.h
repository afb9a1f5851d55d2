/* SPDX-License-Identifier: MIT */
/* DWARF line tables read by ptscope itself (linetable.c, linetable_read.c;
 * prefix lt_).
 *
 * The decoder gives each function's span the file:line of its entry, so
 * the first function it meets in a compile unit costs that unit's whole
 * line table.  libdw's dwarf_getsrclines builds it a row at a time (a
 * list node each, then a sort through a comparison function): on code
 * that runs once that was a third of the decode (3,000 functions in one
 * unit: 54 M instructions of 154 M).  This reader runs the same line
 * program into one array and answers as libdw's dwarf_getsrc_die and
 * dwarf_linesrc would, by the same rules (elfutils 0.188,
 * libdw/dwarf_getsrclines.c): the rows sorted by address, an
 * end_sequence before a row at the same address, program order
 * otherwise; the last row made an end_sequence; an address takes the last
 * row at or below it unless that row ends a sequence; file names joined
 * to their directory as libdw joins them.
 *
 * Whatever it does not handle the way libdw does (a split or type unit,
 * DWARF forms other than the usual ones, a value that libdw would find out
 * of range, data libdw would reject) is PS_ERR_UNSUPPORTED: the caller
 * asks libdw then, so the answer is always libdw's.
 * tests/unit/test_linetable.c compares the two on every row of every unit
 * of the system's debug files.  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_LINETABLE_H
#define PTSCOPE_DECODER_LINETABLE_H

#include <stdint.h>

#include <elfutils/libdw.h>

/* The line tables of one Dwarf handle, read on demand and kept. */
struct lt_cache;

/* Returns 0, PS_ERR_UNSUPPORTED (no .debug_line this reader can read, a
 * relocatable file), PS_ERR_NOMEM. */
int lt_cache_new(Dwarf *dw, struct lt_cache **out);
void lt_cache_free(struct lt_cache *c); /* accepts NULL */

/* What dwarf_getsrc_die(@cu, @addr) then dwarf_linesrc and dwarf_lineno
 * give: 1 and *@file (valid while @c is; NULL where dwarf_linesrc has
 * none), *@line; 0 when libdw finds no line; PS_ERR_UNSUPPORTED when libdw must
 * answer; PS_ERR_NOMEM. */
int lt_lookup(struct lt_cache *c, Dwarf_Die *cu, uint64_t addr,
	      const char **file, int *line);

#endif /* PTSCOPE_DECODER_LINETABLE_H */
