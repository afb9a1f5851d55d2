/* Fuzz targets: one file per input parser (tests/fuzz/fuzz_NAME.c).
 *
 * A target is written once with FUZZ_TARGET(NAME) and used twice:
 *   - `make fuzz` links it with libfuzzer_main.c into build-fuzz/fuzz/NAME,
 *     a libFuzzer program (clang, ASan + UBSan), seeded from
 *     tests/fuzz/corpus/NAME/;
 *   - the unit test test_fuzz_regress links every target and replays the
 *     inputs in tests/fuzz/regress/NAME/ (crashes found earlier) and the
 *     seed corpus, so `make check` and `make check-asan` keep them fixed.
 *
 * A target must not print, exit, or keep state between inputs (a leak is
 * a finding).  Return 0.
 */
#ifndef PTSCOPE_TESTS_FUZZ_H
#define PTSCOPE_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

struct fuzz_target {
	const char *name;
	fuzz_fn fn;
};

void fuzz_register(const char *name, fuzz_fn fn);

/* The registered targets (in registration order); returns the count. */
size_t fuzz_targets(const struct fuzz_target **out);

#define FUZZ_TARGET(name)                                                      \
	static int fuzz_##name(const uint8_t *data, size_t size);              \
	__attribute__((constructor)) static void fuzz_reg_##name(void)         \
	{                                                                      \
		fuzz_register(#name, fuzz_##name);                             \
	}                                                                      \
	static int fuzz_##name(const uint8_t *data, size_t size)

/* shared/testdata (real Intel PT streams and their binaries): from
 * $PTSCOPE_TESTDATA, else ../shared/testdata beside the working directory.
 * Returns NULL when it cannot be found. */
const char *fuzz_testdata(void);

struct ps_writer;

/* A text writer into memory: every event a reader produces is formatted,
 * which exercises the strings and numbers it hands out.  NULL on no
 * memory.  Free with ps_writer_abort(). */
struct ps_writer *fuzz_text_writer(void);

#endif /* PTSCOPE_TESTS_FUZZ_H */
