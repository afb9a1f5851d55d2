/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness.  Each tests/unit/test_X.c becomes one program:
 *
 *   TEST(parses_empty_file) {
 *           CHECK(parse("") == PS_ERR_FORMAT);
 *           CHECK_EQ(count, 3);
 *   }
 *
 * The program prints "PASS name", "FAIL name: file:line: expr" or
 * "SKIP name: reason" per test and a closing "N passed, N failed, N skipped";
 * tests/run.sh adds the lines of every program up.  A test may be selected
 * by naming it on the command line.
 */
#ifndef PTSCOPE_TESTS_HARNESS_H
#define PTSCOPE_TESTS_HARNESS_H

#include <stdint.h>
#include <string.h>

typedef void (*harness_fn)(void);
void harness_register(const char *name, harness_fn fn);
void harness_fail(const char *file, int line, const char *what);
void harness_failf(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void harness_skip(const char *reason);

/* Absolute path of the repository's top directory and of shared/testdata
 * (from $PTSCOPE_TOP / $PTSCOPE_TESTDATA, set by tests/run.sh). */
const char *harness_top(void);
const char *harness_testdata(void);
const char *harness_build(void);

#define TEST(name)                                                             \
	static void name(void);                                                \
	__attribute__((constructor)) static void harness_reg_##name(void)      \
	{                                                                      \
		harness_register(#name, name);                                 \
	}                                                                      \
	static void name(void)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			harness_fail(__FILE__, __LINE__, #cond);               \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long check_a_ = (long long)(a);                           \
		long long check_b_ = (long long)(b);                           \
		if (check_a_ != check_b_) {                                    \
			harness_failf(__FILE__, __LINE__,                      \
				      "%s == %s (%lld != %lld)", #a, #b,       \
				      check_a_, check_b_);                     \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *check_a_ = (a), *check_b_ = (b);                   \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_)) {    \
			harness_failf(__FILE__, __LINE__,                      \
				      "%s == %s (\"%s\" != \"%s\")", #a, #b,   \
				      check_a_ ? check_a_ : "(null)",          \
				      check_b_ ? check_b_ : "(null)");         \
			return;                                                \
		}                                                              \
	} while (0)

#define SKIP(reason)                                                           \
	do {                                                                   \
		harness_skip(reason);                                          \
		return;                                                        \
	} while (0)

/* Fill a struct with a poison byte before a call, so fields the callee
 * forgot to set show up. */
#define POISON(x) memset(&(x), 0xa5, sizeof(x))

#endif
