/* Fuzz target: a DWARF line program, as ptscope's line-table reader reads
 * one from an ELF file's .debug_line (decoder/linetable_read.h).  The
 * input is the section; its first byte picks the address size and whether
 * a compile directory is given.  DWARF 5 names are looked up in the input
 * itself as .debug_line_str and .debug_str, so offsets into them land. */
#include "decoder/linetable_read.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(linetable)
{
	struct lt_sections s = {{0}};
	struct lt_table t = {0};

	if (!size)
		return 0;
	s.line.p = data + 1;
	s.line.n = size - 1;
	s.line_str = s.line;
	s.str = s.line;
	lt_read_table(&s, &t, data[0] & 2 ? "/comp/dir" : NULL,
		      data[0] & 1 ? 4 : 8);
	lt_table_clear(&t);
	return 0;
}
