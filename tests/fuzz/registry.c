/* The fuzz target registry and helpers shared by the targets (fuzz.h). */
#include <stdlib.h>
#include <sys/stat.h>

#include "src/output/sink.h"
#include "src/output/text.h"
#include "ptscope/writer.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_TARGETS 64

static struct fuzz_target targets[FUZZ_MAX_TARGETS];
static size_t ntargets;

void fuzz_register(const char *name, fuzz_fn fn)
{
	if (ntargets < FUZZ_MAX_TARGETS)
		targets[ntargets++] = (struct fuzz_target){name, fn};
}

size_t fuzz_targets(const struct fuzz_target **out)
{
	*out = targets;
	return ntargets;
}

const char *fuzz_testdata(void)
{
	static const char *const guesses[] = {"../shared/testdata",
					      "shared/testdata"};
	const char *env = getenv("PTSCOPE_TESTDATA");
	struct stat st;

	if (env && *env && !stat(env, &st))
		return env;
	for (size_t i = 0; i < sizeof(guesses) / sizeof(guesses[0]); i++)
		if (!stat(guesses[i], &st) && S_ISDIR(st.st_mode))
			return guesses[i];
	return NULL;
}

struct ps_writer *fuzz_text_writer(void)
{
	struct ps_sink *sink;
	struct ps_writer *w;

	if (ps_sink_open_memory(&sink))
		return NULL;
	if (text_writer_new(sink, NULL, &w)) {
		ps_sink_abort(sink);
		return NULL;
	}
	return w;
}
