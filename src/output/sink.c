/* SPDX-License-Identifier: MIT */
/* Buffered, atomic (temporary file + rename), optionally gzipped output.
 * A path that names something other than a file (/dev/null, a FIFO, a
 * terminal) is written in place: a file renamed over it would replace
 * the device. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ptscope/error.h"
#include "src/output/sink.h"
#include "src/output/tmpfile.h"

#define SINK_BUF (1u << 20)
/* The temporary file is allocated ahead of the writes, in steps that
 * double from the first to the last size (see reserve()). */
#define SINK_RESERVE_MIN (4ull << 20)
#define SINK_RESERVE_MAX (64ull << 20)

struct ps_sink {
	int fd; /* -1 for a memory sink */
	int is_stdout;
	int in_place;	/* fd is the path itself (a device, a FIFO): closed at
			 * the end, nothing renamed */
	char *path;	/* final name (owned), NULL for stdout/memory */
	char *tmp_path; /* temporary name (owned) */
	int tmp_slot;	/* its tmpfile.h slot, -1: none */
	uint8_t *buf;	/* pending bytes (owned) */
	size_t len, cap;
	uint64_t total;	   /* bytes accepted, before compression */
	int failed;	   /* a write failed: every later call fails */
	uint64_t on_disk;  /* bytes written to fd */
	uint64_t reserved; /* bytes of it allocated ahead (reserve()) */
	int may_reserve;   /* fd is our temporary file and fallocate works */
	int gzip;
	z_stream z;    /* when gzip */
	uint8_t *zbuf; /* compressed output staging (owned) */
};

/* Allocate the temporary file's blocks ahead of @n more bytes.  A file
 * system with delayed allocation (ext4) otherwise reserves, looks up and
 * records each 4 KB page as it is written, which costs more than copying
 * it (half a write's time for a trace), and renaming the file over an
 * older trace then writes it all back at once (ext4's auto_da_alloc).
 * Allocated ahead with fallocate, the pages go straight in.  What is left
 * unused at the end is cut off (ps_sink_commit).  A file system without
 * fallocate, or short of space for the step, is written as before: the
 * writes themselves say whether the space runs out. */
static void reserve(struct ps_sink *s, size_t n)
{
	uint64_t step;

	if (!s->may_reserve || s->on_disk + n <= s->reserved)
		return;
	step = s->reserved < SINK_RESERVE_MIN ? SINK_RESERVE_MIN : s->reserved;
	if (step > SINK_RESERVE_MAX)
		step = SINK_RESERVE_MAX;
	if (step < n)
		step = n;
	if (fallocate(s->fd, FALLOC_FL_KEEP_SIZE, (off_t)s->reserved,
		      (off_t)step)) {
		s->may_reserve = 0;
		return;
	}
	s->reserved += step;
}

static int write_all(struct ps_sink *s, const uint8_t *p, size_t n)
{
	reserve(s, n);
	s->on_disk += n;
	while (n) {
		ssize_t w = write(s->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;

			s->failed = 1;
			return ps_err_detail(
			    PS_ERR_IO, "cannot write %s: %s%s",
			    s->path ? s->path : "output", strerror(e),
			    e == ENOSPC ? "; free some space or write the "
					  "trace elsewhere (-o)"
					: "");
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Push buffered bytes to the file, through zlib when gzipping. */
static int drain(struct ps_sink *s, int finish)
{
	int err;

	if (s->fd < 0)
		return 0; /* memory sink keeps everything */
	if (!s->gzip) {
		err = write_all(s, s->buf, s->len);
		s->len = 0;
		return err;
	}
	s->z.next_in = s->buf;
	s->z.avail_in = (uInt)s->len;
	do {
		s->z.next_out = s->zbuf;
		s->z.avail_out = SINK_BUF;
		if (deflate(&s->z, finish ? Z_FINISH : Z_NO_FLUSH) ==
		    Z_STREAM_ERROR)
			return ps_err_detail(PS_ERR_INTERNAL,
					     "zlib stream error");
		err = write_all(s, s->zbuf, SINK_BUF - s->z.avail_out);
		if (err)
			return err;
	} while (s->z.avail_out == 0);
	s->len = 0;
	return 0;
}

static struct ps_sink *sink_alloc(void)
{
	struct ps_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = -1;
	s->tmp_slot = -1;
	s->cap = SINK_BUF;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		free(s);
		return NULL;
	}
	return s;
}

static void sink_free(struct ps_sink *s)
{
	if (s->gzip)
		deflateEnd(&s->z);
	free(s->zbuf);
	free(s->buf);
	free(s->path);
	free(s->tmp_path);
	free(s);
}

int ps_sink_open_memory(struct ps_sink **out)
{
	struct ps_sink *s = sink_alloc();

	if (!s)
		return PS_ERR_NOMEM;
	*out = s;
	return 0;
}

int ps_sink_open(const char *path, int gzip, struct ps_sink **out)
{
	struct ps_sink *s;
	const char *slash;

	if (!path || !out)
		return PS_ERR_INVAL;
	s = sink_alloc();
	if (!s)
		return PS_ERR_NOMEM;
	if (!strcmp(path, "-")) {
		s->fd = STDOUT_FILENO;
		s->is_stdout = 1;
	} else if (ps_path_is_special(path)) {
		s->path = strdup(path);
		s->fd = s->path ? open(path, O_WRONLY | O_CLOEXEC) : -1;
		if (s->fd < 0) {
			int e = errno;

			sink_free(s);
			return e == ENOMEM || !e
				   ? PS_ERR_NOMEM
				   : ps_err_detail(PS_ERR_IO,
						   "cannot write %s: %s", path,
						   strerror(e));
		}
		s->in_place = 1;
	} else {
		slash = strrchr(path, '/');
		s->path = strdup(path);
		if (!s->path || asprintf(&s->tmp_path, "%.*s.%s.XXXXXX",
					 slash ? (int)(slash - path + 1) : 0,
					 path, slash ? slash + 1 : path) < 0) {
			s->tmp_path = NULL;
			sink_free(s);
			return PS_ERR_NOMEM;
		}
		s->fd = mkstemp(s->tmp_path);
		if (s->fd < 0) {
			int e = errno;

			sink_free(s);
			return ps_err_detail(
			    PS_ERR_IO,
			    "cannot create %s: %s; check that "
			    "the directory exists and is writable",
			    path, strerror(e));
		}
		fchmod(s->fd, 0644);
		s->tmp_slot = ps_tmp_track(s->tmp_path);
		s->may_reserve = 1;
	}
	if (gzip) {
		s->zbuf = malloc(SINK_BUF);
		if (!s->zbuf || deflateInit2(&s->z, 6, Z_DEFLATED, 15 + 16, 8,
					     Z_DEFAULT_STRATEGY) != Z_OK) {
			ps_sink_abort(s);
			return PS_ERR_NOMEM;
		}
		s->gzip = 1;
	}
	*out = s;
	return 0;
}

int ps_sink_write(struct ps_sink *s, const void *buf, size_t len)
{
	int err;

	if (s->failed)
		return PS_ERR_IO;
	s->total += len;
	if (s->fd < 0) { /* memory: grow */
		if (s->len + len > s->cap) {
			size_t cap = s->cap;
			uint8_t *nb;

			while (cap < s->len + len)
				cap *= 2;
			nb = realloc(s->buf, cap);
			if (!nb) {
				s->failed = 1;
				return PS_ERR_NOMEM;
			}
			s->buf = nb;
			s->cap = cap;
		}
		memcpy(s->buf + s->len, buf, len);
		s->len += len;
		return 0;
	}
	if (len >= SINK_DIRECT && !s->gzip) {
		err = s->len ? drain(s, 0) : 0;
		return err ? err : write_all(s, buf, len);
	}
	if (s->len + len > s->cap) {
		err = drain(s, 0);
		if (err)
			return err;
		/* only gzip output gets here with more than the buffer
		 * holds (SINK_DIRECT above): compressed a buffer at a time */
		if (len > s->cap) {
			const uint8_t *p = buf;

			while (len) {
				size_t n = len < s->cap ? len : s->cap;

				memcpy(s->buf, p, n);
				s->len = n;
				err = drain(s, 0);
				if (err)
					return err;
				p += n;
				len -= n;
			}
			return 0;
		}
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

uint64_t ps_sink_bytes(const struct ps_sink *s)
{
	return s->total;
}

void ps_sink_memory_data(const struct ps_sink *s, const uint8_t **data,
			 size_t *len)
{
	*data = s->buf;
	*len = s->len;
}

int ps_sink_commit(struct ps_sink *s)
{
	int err = s->failed ? PS_ERR_IO : drain(s, 1);

	if (s->fd < 0) {
		sink_free(s);
		return err;
	}
	if (s->is_stdout) {
		sink_free(s);
		return err;
	}
	if (s->in_place) {
		if (close(s->fd) && !err)
			err = ps_err_detail(PS_ERR_IO, "cannot write %s: %s",
					    s->path, strerror(errno));
		sink_free(s);
		return err;
	}
	/* Blocks allocated ahead and not used go (ext4_setattr truncates
	 * what lies past the end even when the size does not change). */
	if (!err && s->reserved > s->on_disk &&
	    ftruncate(s->fd, (off_t)s->on_disk))
		err = ps_err_detail(PS_ERR_IO, "cannot write %s: %s", s->path,
				    strerror(errno));
	if (close(s->fd) && !err)
		err = ps_err_detail(PS_ERR_IO, "cannot write %s: %s", s->path,
				    strerror(errno));
	s->fd = -1;
	if (!err && rename(s->tmp_path, s->path))
		err = ps_err_detail(PS_ERR_IO, "cannot rename %s to %s: %s",
				    s->tmp_path, s->path, strerror(errno));
	if (err)
		unlink(s->tmp_path);
	ps_tmp_untrack(s->tmp_slot);
	sink_free(s);
	return err;
}

void ps_sink_abort(struct ps_sink *s)
{
	if (!s)
		return;
	if (s->fd >= 0 && s->in_place) {
		close(s->fd);
	} else if (s->fd >= 0 && !s->is_stdout) {
		close(s->fd);
		unlink(s->tmp_path);
		ps_tmp_untrack(s->tmp_slot);
	}
	sink_free(s);
}
