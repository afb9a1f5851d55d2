/* Fuzz target: files of raw perf context-switch records (LLDB's
 * *.perf_context_switch_trace, `ptscope decode --switches`). */
#include <stdlib.h>

#include "decoder/decoder.h"
#include "tests/fuzz/fuzz.h"

FUZZ_TARGET(switches)
{
	struct dec_switch *sw = NULL;

	if (dec_parse_switches("fuzz", data, size, &sw) >= 0)
		free(sw);
	return 0;
}
