/* Fuzz target: the Fuchsia trace format reader (`ptscope convert/dump`
 * of a .fxt file). */
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(fxt_reader)
{
	struct ps_writer *w = fuzz_text_writer();

	if (!w)
		return 0;
	fxt_probe(data, size);
	fxt_read(data, size, w);
	ps_writer_abort(w);
	return 0;
}
