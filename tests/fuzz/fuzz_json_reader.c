/* Fuzz target: the Chrome JSON trace reader (`ptscope convert/dump` of a
 * .json file), whole and fed in two pieces split where the first byte
 * says (the streaming reader must not care where a read ends). */
#include "ptscope/writer.h"
#include "src/output/json.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(json_reader)
{
	struct json_reader *r;
	struct ps_writer *w = fuzz_text_writer();
	size_t cut;

	if (!w)
		return 0;
	json_probe(data, size);
	json_read(data, size, w);
	ps_writer_abort(w);
	if (size < 1 || !(w = fuzz_text_writer()))
		return 0;
	cut = size > 1 ? data[0] % size : 0;
	if (!json_reader_new("fuzz.json", w, &r)) {
		if (!json_reader_feed(r, data, cut) &&
		    !json_reader_feed(r, data + cut, size - cut))
			json_reader_finish(r);
		json_reader_free(r);
	}
	ps_writer_abort(w);
	return 0;
}
