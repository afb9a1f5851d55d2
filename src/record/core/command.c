/* SPDX-License-Identifier: MIT */
/* The command a recording runs, found as execve would find it (see
 * core.h): asked by the recorder before anything else, so that a name
 * that is not there is the one sentence ptscope says, and by the qemu
 * backend, which hands QEMU the path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"

int rec_find_command(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
	} else {
		out[0] = 0;
		if (!path)
			path = "/usr/local/bin:/usr/bin:/bin";
		while (*path) {
			const char *e = strchr(path, ':');
			size_t n = e ? (size_t)(e - path) : strlen(path);

			snprintf(out, size, "%.*s/%s", (int)n, n ? path : ".",
				 name);
			if (!access(out, X_OK))
				break;
			out[0] = 0;
			path += n + (e ? 1 : 0);
		}
	}
	if (!out[0] || access(out, F_OK))
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "cannot run '%s': no such file or "
				     "command in PATH",
				     name);
	if (access(out, X_OK))
		return ps_err_detail(PS_ERR_PERM,
				     "cannot run '%s': permission denied "
				     "(is it executable?)",
				     name);
	return 0;
}
