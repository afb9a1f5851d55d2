/* SPDX-License-Identifier: MIT */
/* perf.data header, record walk and AUX data (see perfdata.h). */
#include "perfdata/perfdata.h"

#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/le.h"

#define PD_MAGIC "PERFILE2"
#define PD_PIPE_HEADER_SIZE 16
#define PD_FILE_HEADER_MIN 104 /* up to the end of the feature bitmap */
#define PD_REC_HEADER 8

static int section(const uint8_t *buf, size_t len, size_t at, uint64_t *off,
		   uint64_t *size, const char *what)
{
	*off = le_rd64(buf + at);
	*size = le_rd64(buf + at + 8);
	if (*off > len || *size > len - *off)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "the perf.data %s section runs past the "
				     "end of the file (is it cut short?)",
				     what);
	return 0;
}

int pd_file_read(const uint8_t *buf, size_t len, struct pd_file *f)
{
	uint64_t hsize, unused;
	int err;

	if (!buf || !f)
		return PS_ERR_INVAL;
	memset(f, 0, sizeof(*f));
	if (len < PD_PIPE_HEADER_SIZE || memcmp(buf, PD_MAGIC, 8))
		return ps_err_detail(PS_ERR_FORMAT,
				     "not a perf.data file (no PERFILE2 "
				     "magic)");
	hsize = le_rd64(buf + 8);
	if (hsize == PD_PIPE_HEADER_SIZE) {
		f->pipe = 1;
		f->data_off = PD_PIPE_HEADER_SIZE;
		f->data_size = len - PD_PIPE_HEADER_SIZE;
		return 0;
	}
	if (hsize < PD_FILE_HEADER_MIN || hsize > len)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf.data header size %llu is invalid",
				     (unsigned long long)hsize);
	f->attr_size = le_rd64(buf + 16);
	err = section(buf, len, 24, &f->attrs_off, &f->attrs_size, "attrs");
	if (!err)
		err =
		    section(buf, len, 40, &f->data_off, &f->data_size, "data");
	if (!err)
		err = section(buf, len, 56, &unused, &unused, "event types");
	for (int i = 0; i < 4 && !err; i++)
		f->features[i] = le_rd64(buf + 72 + 8 * i);
	return err;
}

int pd_file_feature(const uint8_t *buf, size_t len, const struct pd_file *f,
		    int feat, const uint8_t **data, size_t *size)
{
	uint64_t at, off, sz;
	int idx = 0;

	if (f->pipe || feat <= 0 || feat >= PD_FEAT_MAX ||
	    !(f->features[feat / 64] >> (feat % 64) & 1))
		return 0;
	for (int i = 0; i < feat; i++)
		idx += (int)(f->features[i / 64] >> (i % 64) & 1);
	at = f->data_off + f->data_size + 16 * (uint64_t)idx;
	if (at > len || len - at < 16)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "the perf.data feature table runs past "
				     "the end of the file");
	off = le_rd64(buf + at);
	sz = le_rd64(buf + at + 8);
	if (off > len || sz > len - off)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "perf.data feature %d runs past the end "
				     "of the file",
				     feat);
	*data = buf + off;
	*size = (size_t)sz;
	return 1;
}

/* The size of what follows a record outside its header size (AUXTRACE
 * data, pipe tracing data), or a negative error. */
static int64_t trailing(const struct pd_record *r)
{
	if (r->type == PD_RECORD_AUXTRACE) {
		if (r->body_len < PD_AUXTRACE_PAYLOAD)
			return ps_err_detail(PS_ERR_FORMAT,
					     "AUXTRACE record at byte %llu is "
					     "too short",
					     (unsigned long long)r->pos);
		return (int64_t)le_rd64(r->body);
	}
	if (r->type == PD_RECORD_HEADER_TRACING_DATA && r->body_len >= 4)
		return (int64_t)((le_rd32(r->body) + 7u) & ~7u);
	return 0;
}

int pd_walk(const uint8_t *buf, size_t len, pd_record_fn fn, void *ctx)
{
	struct pd_file f;
	uint64_t pos, end;
	int count = 0, err;

	if (!buf || !fn)
		return PS_ERR_INVAL;
	err = pd_file_read(buf, len, &f);
	if (err < 0)
		return err;
	pos = f.data_off;
	end = f.data_off + f.data_size;
	while (pos < end) {
		struct pd_record r = {0};
		uint16_t rsize;
		int64_t extra;

		if (end - pos < PD_REC_HEADER)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "perf.data record header cut at "
					     "byte %llu",
					     (unsigned long long)pos);
		r.type = le_rd32(buf + pos);
		r.misc = le_rd16(buf + pos + 4);
		rsize = le_rd16(buf + pos + 6);
		r.pos = pos;
		if (rsize < PD_REC_HEADER)
			return ps_err_detail(PS_ERR_FORMAT,
					     "perf.data record at byte %llu "
					     "has size %u",
					     (unsigned long long)pos, rsize);
		if (rsize > end - pos)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "perf.data record at byte %llu "
					     "runs past the end",
					     (unsigned long long)pos);
		if (r.type == PD_RECORD_COMPRESSED ||
		    r.type == PD_RECORD_COMPRESSED2)
			return ps_err_detail(
			    PS_ERR_UNSUPPORTED,
			    "this perf.data is compressed (perf record -z): "
			    "write an uncompressed copy with `perf inject -i "
			    "IN -o OUT` and decode that");
		r.body = buf + pos + PD_REC_HEADER;
		r.body_len = rsize - PD_REC_HEADER;
		extra = trailing(&r);
		if (extra < 0)
			return (int)extra;
		pos += rsize;
		if ((uint64_t)extra > end - pos)
			return ps_err_detail(
			    PS_ERR_TRUNCATED,
			    "the data after the perf.data record at byte %llu "
			    "runs past the end",
			    (unsigned long long)r.pos);
		if (r.type == PD_RECORD_AUXTRACE) {
			r.aux = buf + pos;
			r.aux_len = (uint64_t)extra;
		}
		pos += (uint64_t)extra;
		err = fn(ctx, &r);
		if (err < 0)
			return err;
		count++;
	}
	return count;
}

struct aux_walk {
	pd_aux_fn fn;
	void *ctx;
	int n;
};

static int aux_one(void *ctx, const struct pd_record *r)
{
	struct aux_walk *w = ctx;
	const uint8_t *p = r->body;
	struct pd_aux a;
	int err;

	if (r->type != PD_RECORD_AUXTRACE)
		return 0;
	a.data = r->aux;
	a.size = r->aux_len;
	a.offset = le_rd64(p + 8);
	a.reference = le_rd64(p + 16);
	a.idx = le_rd32(p + 24);
	a.tid = le_rd32(p + 28);
	a.cpu = le_rd32(p + 32);
	err = w->fn(w->ctx, &a);
	if (err < 0)
		return err;
	w->n++;
	return 0;
}

int pd_walk_aux(const uint8_t *buf, size_t len, pd_aux_fn fn, void *ctx)
{
	struct aux_walk w = {fn, ctx, 0};
	int err;

	if (!fn)
		return PS_ERR_INVAL;
	err = pd_walk(buf, len, aux_one, &w);
	return err < 0 ? err : w.n;
}

struct pd_collect {
	int cpu;
	uint8_t *buf;
	size_t len;
	int n;
};

static int collect_one(void *ctx, const struct pd_aux *a)
{
	struct pd_collect *c = ctx;
	uint8_t *nb;

	if (c->cpu >= 0 && a->cpu != (uint32_t)c->cpu)
		return 0;
	c->n++;
	if (!a->size)
		return 0;
	nb = realloc(c->buf, c->len + a->size);
	if (!nb)
		return PS_ERR_NOMEM;
	memcpy(nb + c->len, a->data, a->size);
	c->buf = nb;
	c->len += a->size;
	return 0;
}

int pd_collect_aux(const uint8_t *buf, size_t len, int cpu, uint8_t **out,
		   size_t *out_len)
{
	struct pd_collect c = {cpu, NULL, 0, 0};
	int err;

	if (!out || !out_len)
		return PS_ERR_INVAL;
	*out = NULL;
	*out_len = 0;
	err = pd_walk_aux(buf, len, collect_one, &c);
	if (err < 0) {
		free(c.buf);
		return err;
	}
	*out = c.buf;
	*out_len = c.len;
	return c.n;
}
