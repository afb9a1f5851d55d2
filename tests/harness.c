/* SPDX-License-Identifier: MIT */
/* The test harness's main(): runs every registered test (or those named on
 * the command line), each in order, and prints a closing summary line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"

#define MAX_TESTS 1024

static struct {
	const char *name;
	harness_fn fn;
} tests[MAX_TESTS];
static int ntests;

enum { RES_PASS, RES_FAIL, RES_SKIP };
static int result;
static const char *current;

void harness_register(const char *name, harness_fn fn)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "harness: too many tests\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void harness_fail(const char *file, int line, const char *what)
{
	printf("FAIL %s: %s:%d: %s\n", current, file, line, what);
	result = RES_FAIL;
}

void harness_failf(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: %s:%d: ", current, file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	result = RES_FAIL;
}

void harness_skip(const char *reason)
{
	printf("SKIP %s: %s\n", current, reason);
	result = RES_SKIP;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

const char *harness_top(void)
{
	return env_or("PTSCOPE_TOP", ".");
}

const char *harness_testdata(void)
{
	return env_or("PTSCOPE_TESTDATA", "../shared/testdata");
}

const char *harness_build(void)
{
	return env_or("PTSCOPE_BUILD", "build");
}

static int selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int pass = 0, fail = 0, skip = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < ntests; i++) {
		if (!selected(argc, argv, tests[i].name))
			continue;
		current = tests[i].name;
		result = RES_PASS;
		tests[i].fn();
		if (result == RES_PASS) {
			printf("PASS %s\n", current);
			pass++;
		} else if (result == RES_FAIL) {
			fail++;
		} else {
			skip++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
	return fail ? 1 : 0;
}
