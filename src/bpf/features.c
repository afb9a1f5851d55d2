/* SPDX-License-Identifier: MIT */
/* What every part of the sidecar shares (see features.h): one sentence
 * for each failure to load or attach, and handing the common maps to a
 * skeleton before it loads.  The bottom of src/bpf/: it calls nothing
 * else of the sidecar. */
#include <errno.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "ptscope/error.h"
#include "src/bpf/features.h"

int sdc_fail(const char *what, int err)
{
	if (err < 0)
		err = -err;
	if (err == EPERM || err == EACCES)
		return ps_err_detail(PS_ERR_PERM,
				     "loading %s needs root (CAP_BPF and "
				     "CAP_PERFMON)",
				     what);
	if (err == ENOENT || err == ESRCH)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s does not exist in this kernel", what);
	if (err == ENOSYS || err == EOPNOTSUPP || err == 524 /* ENOTSUPP */)
		return ps_err_detail(PS_ERR_NO_HW,
				     "this kernel cannot run %s (eBPF support "
				     "missing)",
				     what);
	return ps_err_detail(PS_ERR_UNSUPPORTED, "loading %s failed: %s", what,
			     strerror(err));
}

int sdc_share_maps(struct bpf_object *obj, const struct sdc_maps *m)
{
	static const char *const names[] = {"targets", "events", "lost"};
	const int fds[] = {m->targets, m->events, m->lost};

	for (int i = 0; i < 3; i++) {
		struct bpf_map *map =
		    bpf_object__find_map_by_name(obj, names[i]);
		int r;

		if (!map)
			continue;
		r = bpf_map__reuse_fd(map, fds[i]);
		if (r)
			return sdc_fail("the sidecar's shared maps", r);
	}
	return 0;
}
