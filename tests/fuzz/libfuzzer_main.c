/* The libFuzzer entry point of one fuzz program: it is linked with exactly
 * one tests/fuzz/fuzz_NAME.c, whose target it calls. */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_target *t;

	if (fuzz_targets(&t) != 1)
		__builtin_trap(); /* built wrong: one target per program */
	return t[0].fn(data, size);
}
