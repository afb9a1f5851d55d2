/* SPDX-License-Identifier: MIT */
/* Where a file that ships with ptscope is (header-only): the QEMU plugin,
 * the bundled samples.  In a build tree it is beside the binary; installed
 * (make install), under ../lib/ptscope from it; an environment variable
 * names it anywhere else. */
#ifndef PTSCOPE_OWN_FILE_H
#define PTSCOPE_OWN_FILE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"

/* @env's value when it is set (it must pass access(@mode)), else
 * @build_rel beside the running binary, else
 * ../lib/ptscope/@installed_rel from it.  Returns 0 with the path in
 * @buf, or PS_ERR_NOT_FOUND: with the binary's directory in @exedir for
 * the caller's sentence when neither place has it, else ("" in @exedir)
 * with a sentence of its own. */
static inline int ps_own_file(const char *env, const char *build_rel,
			      const char *installed_rel, int mode, char *buf,
			      size_t size, char *exedir, size_t exedir_size)
{
	const char *val = getenv(env);
	char exe[PATH_MAX - 64], *slash;
	ssize_t n;

	exedir[0] = 0;
	if (val && *val) {
		snprintf(buf, size, "%s", val);
		if (!access(buf, mode))
			return 0;
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s is set to '%s', which is not there "
				     "or cannot be used; correct it or unset "
				     "it",
				     env, val);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "cannot tell where ptscope runs from "
				     "(/proc/self/exe); set %s",
				     env);
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, size, "%s/%s", exe, build_rel);
	if (!access(buf, mode))
		return 0;
	snprintf(buf, size, "%s/../lib/ptscope/%s", exe, installed_rel);
	if (!access(buf, mode))
		return 0;
	snprintf(exedir, exedir_size, "%s", exe);
	return PS_ERR_NOT_FOUND;
}

#endif /* PTSCOPE_OWN_FILE_H */
