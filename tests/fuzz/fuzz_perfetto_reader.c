/* Fuzz target: the Perfetto protobuf reader (`ptscope convert/dump` of a
 * .pftrace file). */
#include "ptscope/writer.h"
#include "src/output/perfetto.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(perfetto_reader)
{
	struct ps_writer *w = fuzz_text_writer();

	if (!w)
		return 0;
	pftw_probe(data, size);
	pftw_read(data, size, w);
	ps_writer_abort(w);
	return 0;
}
