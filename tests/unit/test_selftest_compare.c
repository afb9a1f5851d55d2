/* SPDX-License-Identifier: MIT */
/* The comparison `ptscope selftest` makes between two backends' outcomes
 * (src/cli/selftest_compare.c): equal outcomes agree, and each kind of
 * difference — a call count, a function only one side saw, a mark, the
 * way the program ended, nothing decoded, a failed recording — is found
 * and named in one line. */
#include <stdio.h>
#include <string.h>

#include "ptscope/recording.h"
#include "src/cli/selftest_compare.h"
#include "tests/harness.h"

static void fill(struct stc_outcome *o, int fib_calls)
{
	stc_init(o);
	for (int i = 0; i < fib_calls; i++)
		stc_call(o, "fib");
	stc_call(o, "main");
	stc_call(o, "worker");
	stc_call(o, "worker");
	o->exited = 1;
}

TEST(equal_outcomes_agree)
{
	struct stc_outcome a, b;
	char why[200] = "";

	fill(&a, 21);
	fill(&b, 21);
	stc_mark(&a, REC_MARK_TRIGGER, "ptscope_trigger\nslow request");
	stc_mark(&b, REC_MARK_TRIGGER, "ptscope_trigger\nanother reason");
	CHECK_EQ(stc_compare(&a, "intel-pt", &b, "qemu", why, sizeof(why)), 0);
	CHECK_EQ(stc_total(&a), 24);
	CHECK_EQ(a.nfuncs, 3);
	CHECK_STR(a.funcs[0].name, "fib"); /* kept sorted */
	stc_fini(&a);
	stc_fini(&b);
}

TEST(a_call_count_that_differs_fails_and_is_named)
{
	struct stc_outcome a, b;
	char why[200];

	fill(&a, 21);
	fill(&b, 20);
	CHECK_EQ(stc_compare(&a, "intel-pt", &b, "qemu", why, sizeof(why)), 1);
	CHECK_STR(why, "fib: 21 calls on intel-pt, 20 on qemu");
	stc_fini(&b);
	/* a function only one side saw */
	fill(&b, 21);
	stc_call(&b, "extra");
	CHECK_EQ(stc_compare(&a, "intel-pt", &b, "qemu", why, sizeof(why)), 1);
	CHECK_STR(why, "extra: 0 calls on intel-pt, 1 on qemu");
	stc_fini(&a);
	stc_fini(&b);
}

TEST(marks_endings_and_failures_are_compared)
{
	struct stc_outcome a, b;
	char why[200];

	fill(&a, 3);
	fill(&b, 3);
	stc_mark(&a, REC_MARK_SIGNAL, "SIGSEGV (fault address 0x0)");
	CHECK_EQ(stc_compare(&a, "qemu", &b, "step", why, sizeof(why)), 1);
	CHECK(strstr(why, "signal mark: 'SIGSEGV (fault address 0x0)' on "
			  "qemu, 'none' on step"));
	stc_mark(&b, REC_MARK_SIGNAL, "SIGSEGV (fault address 0x0)");
	CHECK_EQ(stc_compare(&a, "qemu", &b, "step", why, sizeof(why)), 0);
	b.exited = 0;
	b.killed_by = 11;
	CHECK_EQ(stc_compare(&a, "qemu", &b, "step", why, sizeof(why)), 1);
	CHECK(strstr(why, "exit status 0 on qemu, killed by signal 11"));
	b.killed_by = 0;
	b.exited = 1;
	snprintf(b.error, sizeof(b.error), "the kernel said no");
	CHECK_EQ(stc_compare(&a, "qemu", &b, "step", why, sizeof(why)), 1);
	CHECK_STR(why, "step: the kernel said no");
	stc_fini(&a);
	stc_fini(&b);
	/* nothing decoded on either side is no agreement */
	stc_init(&a);
	stc_init(&b);
	CHECK_EQ(stc_compare(&a, "qemu", &b, "step", why, sizeof(why)), 1);
	CHECK(strstr(why, "no calls"));
}
