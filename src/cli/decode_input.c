/* SPDX-License-Identifier: MIT */
/* What ptscope decode reads (see decode_input.h): raw Intel PT streams, per
 * thread or per CPU with their context switch records, together with the
 * code that ran (ELF files, raw bytes), or a perf.data recorded with
 * intel_pt (from a file or, in pipe layout, from standard input). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/cli/decode_input.h"

/* @path opened for reading if it is a regular file: the descriptor, its
 * size in *@size; or PS_ERR_IO with a detail. */
static int open_regular(const char *path, size_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return ps_err_detail(PS_ERR_IO, "%s is not a regular file",
				     path);
	}
	*size = (size_t)st.st_size;
	return fd;
}

int cmd_decode_read_file(const char *path, uint8_t **buf, size_t *len)
{
	int fd = open_regular(path, len);

	*buf = NULL;
	if (fd < 0)
		return fd;
	*buf = malloc(*len + 1);
	if (!*buf) {
		close(fd);
		return PS_ERR_NOMEM;
	}
	for (size_t got = 0; got < *len;) {
		ssize_t r = read(fd, *buf + got, *len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(*buf);
			*buf = NULL;
			close(fd);
			return ps_err_detail(PS_ERR_IO, "cannot read %s", path);
		}
		got += (size_t)r;
	}
	(*buf)[*len] = 0; /* text (a bundle's JSON) reads as a string */
	close(fd);
	return 0;
}

/* @path mapped read-only (the decode keeps every thread's stream at
 * hand: mapped, they take no memory of their own).  An empty file gives
 * no bytes, and a decode that says there is no PSB in them.  Undo with
 * munmap(*buf, *len) when *len is not 0. */
static int map_file(const char *path, const uint8_t **buf, size_t *len)
{
	static const uint8_t none[1];
	void *p;
	int fd = open_regular(path, len);

	*buf = NULL;
	if (fd < 0) {
		*len = 0;
		return fd;
	}
	if (!*len) {
		close(fd);
		*buf = none;
		return 0;
	}
	p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*len = 0;
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				     strerror(errno));
	}
	*buf = p;
	return 0;
}

/* FILE:FROM[-TO] of --pt or --raw (@opt): *@buf, *@len (the file's bytes)
 * cut to @from and @size bytes (0: to the end).  0, or an error when the
 * file is shorter than the range. */
static int cut_range(const char *opt, const char *path, uint64_t from,
		     uint64_t size, const uint8_t **buf, size_t *len)
{
	if (from > *len || size > *len - from)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s %s has %zu bytes, fewer than the "
				     "range asks for: check FROM-TO (file "
				     "offsets)",
				     opt, path, *len);
	*buf += from;
	*len = size ? (size_t)size : *len - (size_t)from;
	return 0;
}

/* The code bytes of --raw @c (FILE[:FROM[-TO]]:ADDR) into *@bytes
 * (malloc'ed, the caller frees it, also on an error).  0 or an error with
 * a detail. */
static int read_raw(const struct decode_code_input *c, uint8_t **bytes,
		    size_t *len)
{
	int err = cmd_decode_read_file(c->path, bytes, len);
	const uint8_t *at = *bytes;

	if (err < 0)
		return err;
	err = cut_range("--raw", c->path, c->from, c->size, &at, len);
	if (!err)
		memmove(*bytes, at, *len);
	if (!err && !*len)
		err = ps_err_detail(PS_ERR_FORMAT,
				    "--raw %s is empty: give the code bytes",
				    c->path);
	return err;
}

/* What spans call the code of --raw @c: its file's name, as an ELF
 * module is called (aout.bin+0x66f). */
static const char *raw_label(const struct decode_code_input *c)
{
	const char *slash = strrchr(c->path, '/');

	return slash ? slash + 1 : c->path;
}

/* The one process (other than the idle task) that the switch records
 * of every --switches file name, or 0 with a detail when there are
 * several or none. */
static int switch_pid(const struct decode_args *a, uint64_t *pid)
{
	uint64_t seen[8];
	size_t nseen = 0, more = 0;

	for (int i = 0; i < a->npt; i++) {
		struct dec_switch *sw;
		int n;

		if (!a->pt[i].switches)
			continue;
		n = dec_read_switches(a->pt[i].switches, &sw);
		if (n < 0)
			return n;
		for (int j = 0; j < n; j++) {
			size_t k;

			if (!sw[j].pid || sw[j].pid == UINT32_MAX)
				continue;
			for (k = 0; k < nseen && seen[k] != sw[j].pid; k++)
				;
			if (k < nseen)
				continue;
			if (nseen < 8)
				seen[nseen++] = sw[j].pid;
			else
				more = 1;
		}
		free(sw);
	}
	if (nseen == 1) {
		*pid = seen[0];
		return 0;
	}
	if (!nseen)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "the --switches files name no process: "
				     "give the traced process with --pid");
	return ps_err_detail(
	    PS_ERR_AMBIGUOUS,
	    "the --switches files name %zu%s processes (%" PRIu64 ", %" PRIu64
	    ", ...): say which one was traced with --pid",
	    nseen, more ? " or more" : "", seen[0], seen[1]);
}

/* The per-thread streams (no --switches), threads a->tid, +1, ...: what a
 * stream's end means for the decode. */
struct thread_inputs {
	const char **path; /* of each stream */
};

static int thread_done(void *ctx, size_t i, int err)
{
	const struct thread_inputs *t = ctx;

	if (err == PS_ERR_FORMAT)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s has no PSB packet: it is not an Intel "
				     "PT stream (give the AUX area bytes, e.g. "
				     "LLDB's *.trace or perf's AUX data)",
				     t->path[i]);
	return err;
}

/* Read every per-thread stream, then decode them together (on -j cores,
 * the next ones while one is written). */
static int decode_thread_inputs(struct dec_session *s,
				const struct decode_args *a,
				struct ps_writer *w)
{
	struct dec_stream st[DECODE_MAX_INPUTS];
	const uint8_t *map[DECODE_MAX_INPUTS];
	size_t maplen[DECODE_MAX_INPUTS];
	const char *path[DECODE_MAX_INPUTS];
	struct thread_inputs t = {path};
	size_t n = 0;
	int err = 0;

	for (int i = 0; i < a->npt && !err; i++) {
		if (a->pt[i].switches)
			continue;
		st[n] = (struct dec_stream){
		    .pid = a->pt[i].has_ids ? a->pt[i].pid : a->pid,
		    .tid = a->pt[i].has_ids ? a->pt[i].tid : a->tid + n,
		    .w = w};
		err = map_file(a->pt[i].path, &map[n], &maplen[n]);
		if (err < 0)
			break;
		st[n].pt = map[n];
		st[n].len = maplen[n];
		path[n++] = a->pt[i].path;
		err = cut_range("--pt", a->pt[i].path, a->pt[i].from,
				a->pt[i].size, &st[n - 1].pt, &st[n - 1].len);
		if (!err && a->pt[i].process_name)
			err = w->ops->process(w, st[n - 1].pid,
					      a->pt[i].process_name);
		if (!err && a->pt[i].thread_name)
			err = w->ops->thread(w, st[n - 1].pid, st[n - 1].tid,
					     a->pt[i].thread_name);
	}
	if (!err)
		err = dec_decode_streams(s, st, n, thread_done, &t);
	for (size_t i = 0; i < n; i++)
		if (maplen[i])
			munmap((void *)map[i], maplen[i]);
	return err;
}

/* Every per-CPU stream (those with --switches) decoded together, in time
 * order, so a thread's call stack carries over when it is switched out
 * and back in, on the same CPU or another. */
static int decode_cpu_inputs(struct dec_session *s, const struct decode_args *a,
			     struct ps_writer *w)
{
	struct dec_cpu_trace cpus[DECODE_MAX_INPUTS];
	struct dec_switch *sw[DECODE_MAX_INPUTS] = {0};
	uint8_t *pt[DECODE_MAX_INPUTS] = {0};
	size_t n = 0;
	int err = 0;

	for (int i = 0; i < a->npt && !err; i++) {
		const struct decode_pt_input *in = &a->pt[i];
		size_t len;
		int nsw;

		if (!in->switches)
			continue;
		err = cmd_decode_read_file(in->path, &pt[n], &len);
		if (err < 0)
			break;
		{
			const uint8_t *at = pt[n];

			err = cut_range("--pt", in->path, in->from, in->size,
					&at, &len);
			if (err < 0) {
				free(pt[n]);
				pt[n] = NULL;
				break;
			}
			memmove(pt[n], at, len);
		}
		nsw = dec_read_switches(in->switches, &sw[n]);
		if (nsw < 0) {
			err = nsw;
			free(pt[n]);
			pt[n] = NULL;
			break;
		}
		cpus[n] = (struct dec_cpu_trace){.cpu = in->cpu,
						 .pt = pt[n],
						 .len = len,
						 .sw = sw[n],
						 .nsw = (size_t)nsw};
		n++;
	}
	if (!err && n) {
		err = dec_decode_cpus(s, cpus, n, w);
		if (err == PS_ERR_FORMAT)
			err = ps_err_detail(
			    PS_ERR_FORMAT,
			    "none of the per-CPU --pt streams has a PSB "
			    "packet: they are not Intel PT streams (give the "
			    "AUX area bytes of each CPU)");
	}
	for (size_t i = 0; i < n; i++) {
		free(pt[i]);
		free(sw[i]);
	}
	return err;
}

void cmd_decode_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ptscope decode: warning: %s\n", msg);
}

/* All of standard input (a perf.data in pipe layout: perf record -o -). */
static int read_stdin(uint8_t **buf, size_t *len)
{
	size_t cap = 0, got;

	*buf = NULL;
	*len = 0;
	do {
		if (*len == cap) {
			uint8_t *grown;

			cap = cap ? cap * 2 : 1 << 20;
			grown = realloc(*buf, cap);
			if (!grown) {
				free(*buf);
				*buf = NULL;
				return PS_ERR_NOMEM;
			}
			*buf = grown;
		}
		got = fread(*buf + *len, 1, cap - *len, stdin);
		*len += got;
	} while (got);
	if (ferror(stdin)) {
		free(*buf);
		*buf = NULL;
		return ps_err_detail(PS_ERR_IO,
				     "cannot read standard input: %s",
				     strerror(errno));
	}
	return 0;
}

/* Does @path start with perf.data's magic? */
int cmd_decode_is_perf_data(const char *path)
{
	char magic[8];
	FILE *f;
	int yes;

	if (!strcmp(path, "-"))
		return 1;
	f = fopen(path, "rb");
	if (!f)
		return 0;
	yes = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "PERFILE2", 8);
	fclose(f);
	return yes;
}

/* A perf.data of `perf record -e intel_pt//`: everything (code, timing,
 * threads) comes from the recording and the binaries it names, and the
 * code given with --elf and --raw: an --elf without an address stands in
 * for the binary of its name, the rest is added at its address. */
int cmd_decode_perf_data(struct decode_args *a, struct ps_writer *w,
			 struct dec_stats *st)
{
	struct dec_perfdata_opts o = {
	    .name = strcmp(a->recording, "-") ? a->recording : "stdin",
	    .warn = cmd_decode_warn,
	    .only_pid = a->have_pid ? a->pid : 0};
	struct dec_perfdata_code *code =
	    calloc(a->ncode ? (size_t)a->ncode : 1, sizeof(*code));
	uint8_t *buf = NULL;
	size_t len;
	int err = code ? 0 : PS_ERR_NOMEM;

	for (int i = 0; i < a->ncode && !err; i++) {
		const struct decode_code_input *c = &a->code[i];
		uint8_t *bytes = NULL;

		code[i] = (struct dec_perfdata_code){
		    .path = c->raw ? raw_label(c) : c->path,
		    .addr = c->addr,
		    .stand_in = !c->raw && !c->has_addr};
		if (c->raw) {
			err = read_raw(c, &bytes, &code[i].len);
			code[i].bytes = bytes;
		}
	}
	o.code = code;
	o.ncode = (size_t)a->ncode;
	if (!err)
		err = strcmp(a->recording, "-")
			  ? cmd_decode_read_file(a->recording, &buf, &len)
			  : read_stdin(&buf, &len);
	if (!err)
		err = w->ops->meta(w, "decoder", "ptscope decode (perf.data)");
	if (!err)
		err = dec_decode_perfdata(&a->cfg, buf, len, &o, w, st);
	free(buf);
	for (int i = 0; code && i < a->ncode; i++)
		free((void *)code[i].bytes);
	free(code);
	return err;
}

int cmd_decode_raw(struct decode_args *a, struct ps_writer *w,
		   struct dec_stats *out)
{
	struct dec_session *s = NULL;
	int err = 0;

	/* a per-CPU stream belongs to the process its switches name */
	for (int i = 0; i < a->npt && !a->have_pid; i++) {
		if (!a->pt[i].switches)
			continue;
		err = switch_pid(a, &a->pid);
		if (err < 0)
			return err;
		a->have_pid = 1;
	}
	if (!a->have_pid)
		a->pid = 1;
	if (!a->have_tid)
		a->tid = a->pid;
	err = dec_session_new(&a->cfg, &s);
	for (int i = 0; i < a->ncode && !err; i++) {
		const struct decode_code_input *c = &a->code[i];
		uint64_t pid = c->has_pid ? c->pid : a->pid;
		uint8_t *bytes;
		size_t len;

		if (!c->raw) {
			err = dec_add_elf(s, pid, c->path, c->addr, 0, 0);
			continue;
		}
		err = read_raw(c, &bytes, &len);
		if (!err)
			err = dec_add_raw(s, pid, raw_label(c), bytes, len,
					  c->addr);
		free(bytes);
	}
	for (int i = 0; i < a->nprocess && !err; i++)
		err = dec_add_process(s, a->process[i]);
	if (!err)
		err = decode_thread_inputs(s, a, w);
	if (!err)
		err = decode_cpu_inputs(s, a, w);
	if (s)
		*out = *dec_get_stats(s);
	dec_session_free(s);
	return err;
}
