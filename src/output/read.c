/* SPDX-License-Identifier: MIT */
/* ps_read_trace: open a trace file, undo gzip, tell its format from the
 * content and feed it to a writer.  JSON streams in chunks; the binary
 * formats' readers take the whole (uncompressed) file in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/json.h"
#include "src/output/perfetto.h"

/* Enough of the start of a file to recognise every format. */
#define HEAD_LEN (64u * 1024)

/* A zlib read failure as an error code with a detail. */
static int gz_failure(gzFile gz, const char *path, uint64_t at)
{
	int zerr;
	const char *msg = gzerror(gz, &zerr);

	if (zerr == Z_ERRNO)
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				     strerror(errno));
	if (zerr == Z_BUF_ERROR)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "%s: the gzip data ends early (after %llu "
				     "uncompressed bytes); the file is "
				     "truncated",
				     path, (unsigned long long)at);
	return ps_err_detail(PS_ERR_FORMAT,
			     "%s: corrupt gzip data after %llu uncompressed "
			     "bytes: %s",
			     path, (unsigned long long)at, msg);
}

/* Read up to @len bytes (fewer only at the end of the file). */
static int gz_read_full(gzFile gz, uint8_t *buf, size_t len, size_t *got)
{
	size_t n = 0;

	while (n < len) {
		unsigned want =
		    len - n > (1u << 30) ? 1u << 30 : (unsigned)(len - n);
		int r = gzread(gz, buf + n, want);

		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*got = n;
	return 0;
}

/* The rest of @gz after the @len bytes already in *@data (a buffer of
 * HEAD_LEN), all in one buffer for the binary readers. */
static int slurp(gzFile gz, const char *path, uint8_t **data, size_t *len,
		 const struct json_progress *pr)
{
	size_t cap = HEAD_LEN, got;
	uint8_t *nb;

	while (*len == cap) { /* a full buffer: there may be more */
		cap *= 2;
		nb = realloc(*data, cap);
		if (!nb)
			return ps_err_detail(PS_ERR_NOMEM,
					     "%s: out of memory reading %zu "
					     "bytes",
					     path, cap);
		*data = nb;
		if (gz_read_full(gz, *data + *len, cap - *len, &got))
			return gz_failure(gz, path, *len);
		*len += got;
		if (pr->fn)
			pr->fn(pr->ctx, (uint64_t)gzoffset(gz), pr->total);
	}
	return 0;
}

/* The format a file's first bytes show; PS_ERR_FORMAT if none. */
static int detect(const uint8_t *head, size_t n, const char *path)
{
	if (fxt_probe(head, n))
		return PS_FORMAT_FXT;
	if (json_probe(head, n))
		return PS_FORMAT_JSON;
	if (pftw_probe(head, n))
		return PS_FORMAT_PERFETTO;
	return ps_err_detail(PS_ERR_FORMAT,
			     "%s: not a trace ptscope can read (no Fuchsia "
			     "magic, not JSON, not a Perfetto protobuf)",
			     path);
}

/* Binary readers report offsets but not the file: add its name. */
static int with_path(int err, const char *path)
{
	char msg[512];

	if (err >= 0 || !strncmp(ps_err_message(err), path, strlen(path)))
		return err;
	snprintf(msg, sizeof(msg), "%s", ps_err_message(err));
	return ps_err_detail(err, "%s: %s", path, msg);
}

static int read_binary(gzFile gz, const char *path, int format, uint8_t **buf,
		       size_t len, struct ps_writer *dst,
		       const struct json_progress *pr)
{
	int err = slurp(gz, path, buf, &len, pr);

	if (err)
		return err;
	if (format == PS_FORMAT_FXT)
		return with_path(fxt_read(*buf, len, dst), path);
	return with_path(pftw_read(*buf, len, dst), path);
}

int ps_read_trace(const char *path, enum ps_format format,
		  struct ps_writer *dst)
{
	return ps_read_trace_progress(path, format, dst, NULL, NULL);
}

int ps_read_trace_progress(const char *path, enum ps_format format,
			   struct ps_writer *dst, ps_read_progress_fn progress,
			   void *ctx)
{
	struct json_progress pr = {progress, ctx, 0};
	uint8_t *head = NULL;
	size_t n = 0;
	struct stat st;
	gzFile gz;
	int fd, err;

	if (!path || !dst)
		return ps_err_detail(PS_ERR_INVAL,
				     "ps_read_trace needs a path and a writer");
	fd = !strcmp(path, "-") ? dup(STDIN_FILENO)
				: open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ps_err_detail(PS_ERR_IO,
				     "cannot open %s: %s; check the file name",
				     path, strerror(errno));
	if (fstat(fd, &st))
		st.st_mode = 0;
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return ps_err_detail(
		    PS_ERR_IO, "%s is a directory; give a trace file", path);
	}
	if (S_ISREG(st.st_mode))
		pr.total = (uint64_t)st.st_size;
	gz = gzdopen(fd, "rb");
	head = malloc(HEAD_LEN);
	if (!gz || !head) {
		if (gz)
			gzclose(gz);
		else
			close(fd);
		free(head);
		return PS_ERR_NOMEM;
	}
	gzbuffer(gz, 256 * 1024);
	if (gz_read_full(gz, head, HEAD_LEN, &n)) {
		err = gz_failure(gz, path, 0);
		goto out;
	}
	if (!n) {
		err = ps_err_detail(PS_ERR_FORMAT,
				    "%s is empty; it holds no trace", path);
		goto out;
	}
	if (format == PS_FORMAT_AUTO) {
		err = detect(head, n, path);
		if (err < 0)
			goto out;
		format = (enum ps_format)err;
	}
	switch (format) {
	case PS_FORMAT_JSON:
		err = json_read_gz(&pr, gz, head, n, path, dst);
		break;
	case PS_FORMAT_FXT:
	case PS_FORMAT_PERFETTO:
		err = read_binary(gz, path, format, &head, n, dst, &pr);
		break;
	case PS_FORMAT_TEXT:
		err = ps_err_detail(PS_ERR_UNSUPPORTED,
				    "%s: ptscope does not read its text form "
				    "back; give a .fxt, .pftrace or .json "
				    "trace",
				    path);
		break;
	default:
		err = ps_err_detail(PS_ERR_INVAL, "unknown input format %d",
				    (int)format);
	}
out:
	free(head);
	gzclose(gz);
	return err;
}
