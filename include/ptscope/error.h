/* SPDX-License-Identifier: MIT */
/* ptscope error codes.
 *
 * Every library function returns an int: zero or positive on success, a
 * negative ps_error on failure.  Library code never prints; it may attach a
 * one-sentence detail (what is wrong and what to do) with ps_err_detail(), and
 * only main() prints ps_err_message().
 */
#ifndef PTSCOPE_ERROR_H
#define PTSCOPE_ERROR_H

enum ps_error {
	PS_OK = 0,
	PS_ERR_INTERNAL = -1, /* a broken internal assumption (a bug) */
	PS_ERR_INVAL = -2,    /* bad argument from the caller */
	PS_ERR_NOMEM = -3,    /* out of memory */
	PS_ERR_IO = -4,	      /* read/write/open failed (see errno in detail) */
	PS_ERR_FORMAT = -5,   /* malformed input data */
	PS_ERR_TRUNCATED = -6, /* input ends before a record does */
	PS_ERR_UNSUPPORTED =
	    -7,		       /* valid but not supported (version, feature) */
	PS_ERR_NOT_FOUND = -8, /* a named thing (symbol, file, pid) not found */
	PS_ERR_AMBIGUOUS = -9, /* a name matches more than one thing */
	PS_ERR_PERM = -10,     /* permission denied */
	PS_ERR_NO_HW =
	    -11, /* hardware feature missing (e.g. no intel_pt PMU) */
	PS_ERR_DECODE = -12,	 /* PT decode error (libipt) */
	PS_ERR_TARGET = -13,	 /* the traced target misbehaved or vanished */
	PS_ERR_LIMIT = -14,	 /* a size or count limit was exceeded */
	PS_ERR_INTERRUPTED = -15 /* stopped by a signal (Ctrl-C) */
};

/* A short generic text for @err; never NULL. */
const char *ps_errstr(int err);

/* Remember a one-sentence detail for @err (printf-style) in thread-local
 * storage and return @err, so a caller can write
 *     return ps_err_detail(PS_ERR_FORMAT, "%s: bad magic at byte %zu", p, off);
 */
int ps_err_detail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The detail stored for @err if the last detail was for @err, else
 * ps_errstr(@err).  Never NULL. */
const char *ps_err_message(int err);

/* Forget any stored detail. */
void ps_err_clear(void);

#endif /* PTSCOPE_ERROR_H */
