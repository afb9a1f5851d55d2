/* SPDX-License-Identifier: MIT */
/* Signal names as ptscope shows them everywhere (marks, messages, the
 * trace): "SIGSEGV" for SIGSEGV, "SIG42" for a signal without a name.
 * The string is a per-thread buffer, valid until the next call.
 */
#ifndef PTSCOPE_SIGNAME_H
#define PTSCOPE_SIGNAME_H

#include <stdio.h>
#include <string.h>

static inline const char *ps_signame(int sig)
{
	static __thread char buf[16];
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, sizeof(buf), "SIG%s", abbrev);
	else
		snprintf(buf, sizeof(buf), "SIG%d", sig);
	return buf;
}

#endif /* PTSCOPE_SIGNAME_H */
