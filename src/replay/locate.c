/* SPDX-License-Identifier: MIT */
/* Finding a recorded module's file when a recording is decoded (see
 * locate.h): the archived copy, extracted once into a cache, or the file
 * on this machine when its build id matches. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/recording/build_id.h"
#include "src/replay/locate.h"

static int mkdir_p(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(dir, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* Write the archived bytes to @path unless an identical file is there. */
static int extract(const struct rec_module *m, const char *path)
{
	char *tmp = NULL;
	struct stat st;
	size_t off = 0;
	int fd, e;

	/* Same build id and size: extracted before (by us or a decoder
	 * running at the same time). */
	if (m->build_id_len && stat(path, &st) == 0 &&
	    (uint64_t)st.st_size == m->archive_len)
		return 0;
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return PS_ERR_NOMEM;
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	while (off < m->archive_len) {
		ssize_t n = write(fd, m->archive + off, m->archive_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* rename: decoders running at once see the whole file or none. */
	if (rename(tmp, path) < 0)
		goto fail;
	free(tmp);
	return 0;
fail:
	e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return ps_err_detail(PS_ERR_IO,
			     "cannot extract %s from the "
			     "recording: %s",
			     path, strerror(e));
}

int replay_locate_module(const struct rec_module *m, const char *cache_dir, char *out,
	       size_t outsz)
{
	char hex[2 * REC_BUILD_ID_MAX + 1], dir[PATH_MAX];
	uint8_t id[REC_BUILD_ID_MAX];
	const char *base;
	int n;

	if (!m || !m->path || !out || !outsz)
		return ps_err_detail(PS_ERR_INVAL, "mod_locate: bad args");
	buildid_hex(m->build_id, m->build_id_len, hex, sizeof(hex));
	if (m->archive) {
		const char *tmp = getenv("TMPDIR");
		int r;

		base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
			base = "module";
		if (cache_dir)
			n = snprintf(dir, sizeof(dir), "%s/%s", cache_dir,
				     hex[0] ? hex : "noid");
		else
			n = snprintf(dir, sizeof(dir), "%s/ptscope-%u/%s",
				     tmp && *tmp ? tmp : "/tmp",
				     (unsigned)getuid(), hex[0] ? hex : "noid");
		if (n < 0 || (size_t)n >= sizeof(dir))
			return ps_err_detail(PS_ERR_LIMIT,
					     "cache path too long");
		if (mkdir_p(dir) < 0)
			return ps_err_detail(PS_ERR_IO, "cannot create %s: %s",
					     dir, strerror(errno));
		n = snprintf(out, outsz, "%s/%s", dir, base);
		if (n < 0 || (size_t)n >= outsz)
			return ps_err_detail(PS_ERR_LIMIT,
					     "path buffer too small");
		r = extract(m, out);
		return r;
	}
	if (access(m->path, R_OK) < 0)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s is not on this machine and the "
				     "recording has no copy of it: record "
				     "with --archive",
				     m->path);
	if (m->build_id_len) {
		n = buildid_read(m->path, id, sizeof(id));
		if (n > 0 && ((size_t)n != m->build_id_len ||
			      memcmp(id, m->build_id, (size_t)n)))
			return ps_err_detail(PS_ERR_NOT_FOUND,
					     "%s on this machine differs from "
					     "the recorded one (build id %s): "
					     "record with --archive",
					     m->path, hex);
	}
	n = snprintf(out, outsz, "%s", m->path);
	if (n < 0 || (size_t)n >= outsz)
		return ps_err_detail(PS_ERR_LIMIT, "path buffer too small");
	return 0;
}
