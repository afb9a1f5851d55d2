/* SPDX-License-Identifier: MIT */
/* Tests for the error codes and detail messages (decoder/error.c). */
#include "ptscope/error.h"
#include "tests/harness.h"

TEST(every_code_has_text)
{
	for (int e = PS_OK; e >= PS_ERR_INTERRUPTED; e--)
		CHECK(strcmp(ps_errstr(e), "unknown error") != 0);
	CHECK_STR(ps_errstr(-999), "unknown error");
}

TEST(detail_belongs_to_its_code)
{
	ps_err_clear();
	CHECK_EQ(ps_err_detail(PS_ERR_FORMAT, "bad byte at %d", 7),
		 PS_ERR_FORMAT);
	CHECK_STR(ps_err_message(PS_ERR_FORMAT), "bad byte at 7");
	/* A different code does not pick up the stale detail. */
	CHECK_STR(ps_err_message(PS_ERR_IO), ps_errstr(PS_ERR_IO));
	ps_err_clear();
	CHECK_STR(ps_err_message(PS_ERR_FORMAT), ps_errstr(PS_ERR_FORMAT));
}
