/* SPDX-License-Identifier: MIT */
/* Error strings and the thread-local detail message (see ptscope/error.h).
 * It lives in the decoder library because that is the one library every
 * ptscope program and test links. */
#include <stdarg.h>
#include <stdio.h>

#include "ptscope/error.h"

static __thread int detail_code;
static __thread char detail_text[512];

const char *ps_errstr(int err)
{
	switch ((enum ps_error)err) {
	case PS_OK:
		return "success";
	case PS_ERR_INTERNAL:
		return "internal error (a bug in ptscope)";
	case PS_ERR_INVAL:
		return "invalid argument";
	case PS_ERR_NOMEM:
		return "out of memory";
	case PS_ERR_IO:
		return "input/output error";
	case PS_ERR_FORMAT:
		return "malformed input";
	case PS_ERR_TRUNCATED:
		return "input is truncated";
	case PS_ERR_UNSUPPORTED:
		return "not supported";
	case PS_ERR_NOT_FOUND:
		return "not found";
	case PS_ERR_AMBIGUOUS:
		return "ambiguous name";
	case PS_ERR_PERM:
		return "permission denied";
	case PS_ERR_NO_HW:
		return "required hardware feature is missing";
	case PS_ERR_DECODE:
		return "trace decode error";
	case PS_ERR_TARGET:
		return "the target process failed";
	case PS_ERR_LIMIT:
		return "a limit was exceeded";
	case PS_ERR_INTERRUPTED:
		return "interrupted";
	}
	return "unknown error";
}

int ps_err_detail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail_text, sizeof(detail_text), fmt, ap);
	va_end(ap);
	detail_code = err;
	return err;
}

const char *ps_err_message(int err)
{
	if (err != PS_OK && err == detail_code && detail_text[0])
		return detail_text;
	return ps_errstr(err);
}

void ps_err_clear(void)
{
	detail_code = 0;
	detail_text[0] = '\0';
}
