/* SPDX-License-Identifier: MIT */
/* perf.data event attributes and the sample_id trailer of sideband records
 * (see perfdata.h).  struct perf_event_attr: u32 type, u32 size, u64
 * config, sample_period, sample_type, read_format, then the bit fields. */
#include <stdlib.h>
#include <string.h>

#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/le.h"

#define PD_ATTR_MIN 48 /* through the bit fields */

int pd_attrs_add(struct pd_attrs *a, const uint8_t *p, size_t len,
		 const uint8_t *ids, size_t nids)
{
	struct pd_attr *v, *at;

	if (len < PD_ATTR_MIN)
		return ps_err_detail(PS_ERR_FORMAT,
				     "a perf.data event attribute has %zu "
				     "bytes, fewer than %d",
				     len, PD_ATTR_MIN);
	v = realloc(a->v, (a->n + 1) * sizeof(*v));
	if (!v)
		return PS_ERR_NOMEM;
	a->v = v;
	at = &v[a->n];
	memset(at, 0, sizeof(*at));
	at->type = le_rd32(p);
	at->config = le_rd64(p + 8);
	at->sample_type = le_rd64(p + 24);
	at->flags = le_rd64(p + 40);
	if (nids) {
		at->ids = malloc(nids * sizeof(*at->ids));
		if (!at->ids)
			return PS_ERR_NOMEM;
		for (size_t i = 0; i < nids; i++)
			at->ids[i] = le_rd64(ids + 8 * i);
		at->nids = nids;
	}
	a->n++;
	return 0;
}

int pd_attrs_read_file(struct pd_attrs *a, const uint8_t *buf, size_t len,
		       const struct pd_file *f)
{
	/* attr_size counts an entry: the attr, then its ids section */
	uint64_t entry = f->attr_size, asize = entry - 16;

	if (f->pipe || !f->attrs_size)
		return 0;
	if (entry < PD_ATTR_MIN + 16 || f->attrs_size % entry)
		return ps_err_detail(PS_ERR_FORMAT,
				     "the perf.data attrs section (%llu bytes "
				     "of %llu-byte attributes) is malformed",
				     (unsigned long long)f->attrs_size,
				     (unsigned long long)f->attr_size);
	for (uint64_t at = f->attrs_off; at < f->attrs_off + f->attrs_size;
	     at += entry) {
		uint64_t ioff = le_rd64(buf + at + asize);
		uint64_t isize = le_rd64(buf + at + asize + 8);
		int err;

		if (ioff > len || isize > len - ioff)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "perf.data event ids run past the "
					     "end of the file");
		err = pd_attrs_add(a, buf + at, asize, buf + ioff, isize / 8);
		if (err < 0)
			return err;
	}
	return 0;
}

void pd_attrs_free(struct pd_attrs *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].ids);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

static const struct pd_attr *attr_of_id(const struct pd_attrs *a, uint64_t id)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < a->v[i].nids; j++)
			if (a->v[i].ids[j] == id)
				return &a->v[i];
	return NULL;
}

static size_t trailer_size(uint64_t st)
{
	static const uint64_t bits[] = {PD_SAMPLE_TID, PD_SAMPLE_TIME,
					PD_SAMPLE_ID,  PD_SAMPLE_STREAM_ID,
					PD_SAMPLE_CPU, PD_SAMPLE_IDENTIFIER};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		n += (st & bits[i]) ? 8 : 0;
	return n;
}

void pd_sample_id_parse(const struct pd_attrs *a, const uint8_t *body,
			size_t len, struct pd_sample_id *out)
{
	const struct pd_attr *at;
	const uint8_t *p;
	uint64_t st;

	memset(out, 0, sizeof(*out));
	if (!a->n)
		return;
	/* perf puts IDENTIFIER last whenever events differ, so the id can
	 * be read before knowing which event wrote the record */
	at = &a->v[0];
	if ((at->sample_type & PD_SAMPLE_IDENTIFIER) && len >= 8) {
		const struct pd_attr *by =
		    attr_of_id(a, le_rd64(body + len - 8));

		if (by)
			at = by;
	}
	if (!(at->flags & PD_ATTR_SAMPLE_ID_ALL))
		return;
	st = at->sample_type;
	if (trailer_size(st) > len)
		return;
	p = body + len - trailer_size(st);
	if (st & PD_SAMPLE_TID) {
		out->has_tid = 1;
		out->pid = le_rd32(p);
		out->tid = le_rd32(p + 4);
		p += 8;
	}
	if (st & PD_SAMPLE_TIME) {
		out->has_time = 1;
		out->time = le_rd64(p);
		p += 8;
	}
	p += (st & PD_SAMPLE_ID) ? 8 : 0;
	p += (st & PD_SAMPLE_STREAM_ID) ? 8 : 0;
	if (st & PD_SAMPLE_CPU) {
		out->has_cpu = 1;
		out->cpu = le_rd32(p);
	}
}
