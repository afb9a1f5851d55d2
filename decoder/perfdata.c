/* SPDX-License-Identifier: MIT */
/* perf.data AUXTRACE records → Intel PT bytes (see perfdata.h). */
#include "decoder/perfdata.h"

#include <stdlib.h>
#include <string.h>

#include "decoder/le.h"
#include "ptscope/error.h"

#define PD_MAGIC "PERFILE2"
#define PD_PIPE_HEADER_SIZE 16
#define PD_FILE_DATA_OFF 40 /* {u64 offset, u64 size} of the data section */
#define PD_REC_HEADER 8
#define PD_AUXTRACE_PAYLOAD 40

int pd_walk_aux(const uint8_t *buf, size_t len, pd_aux_fn fn, void *ctx)
{
	uint64_t hsize, pos, end;
	int count = 0;

	if (!buf || !fn)
		return PS_ERR_INVAL;
	if (len < PD_PIPE_HEADER_SIZE || memcmp(buf, PD_MAGIC, 8))
		return ps_err_detail(PS_ERR_FORMAT,
				     "not a perf.data file (no PERFILE2 "
				     "magic)");
	hsize = le_rd64(buf + 8);
	if (hsize == PD_PIPE_HEADER_SIZE) {
		pos = PD_PIPE_HEADER_SIZE;
		end = len;
	} else {
		uint64_t off, size;

		if (hsize < PD_FILE_DATA_OFF + 16 || hsize > len)
			return ps_err_detail(PS_ERR_FORMAT,
					     "perf.data header size %llu is "
					     "invalid",
					     (unsigned long long)hsize);
		off = le_rd64(buf + PD_FILE_DATA_OFF);
		size = le_rd64(buf + PD_FILE_DATA_OFF + 8);
		if (off > len || size > len - off)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "perf.data data section runs "
					     "past the end of the file");
		pos = off;
		end = off + size;
	}
	while (pos < end) {
		uint32_t type;
		uint16_t rsize;

		if (end - pos < PD_REC_HEADER)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "perf.data record header cut at "
					     "byte %llu",
					     (unsigned long long)pos);
		type = le_rd32(buf + pos);
		rsize = le_rd16(buf + pos + 6);
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
		if (type == PD_RECORD_AUXTRACE) {
			const uint8_t *p = buf + pos + PD_REC_HEADER;
			struct pd_aux a;
			uint64_t dpos = pos + rsize;
			int err;

			if (rsize < PD_REC_HEADER + PD_AUXTRACE_PAYLOAD)
				return ps_err_detail(PS_ERR_FORMAT,
						     "AUXTRACE record at byte "
						     "%llu is too short",
						     (unsigned long long)pos);
			a.size = le_rd64(p);
			a.offset = le_rd64(p + 8);
			a.reference = le_rd64(p + 16);
			a.idx = le_rd32(p + 24);
			a.tid = le_rd32(p + 28);
			a.cpu = le_rd32(p + 32);
			if (a.size > end - dpos)
				return ps_err_detail(
				    PS_ERR_TRUNCATED,
				    "AUX data of the record at "
				    "byte %llu runs past the "
				    "end",
				    (unsigned long long)pos);
			a.data = buf + dpos;
			err = fn(ctx, &a);
			if (err < 0)
				return err;
			count++;
			pos = dpos + a.size;
		} else {
			pos += rsize;
		}
	}
	return count;
}

struct pd_collect {
	int cpu;
	uint8_t *buf;
	size_t len;
};

static int collect_one(void *ctx, const struct pd_aux *a)
{
	struct pd_collect *c = ctx;
	uint8_t *nb;

	if (c->cpu >= 0 && a->cpu != (uint32_t)c->cpu)
		return 0;
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

static int count_one(void *ctx, const struct pd_aux *a)
{
	int *n = ctx;

	if (n[0] < 0 || a->cpu == (uint32_t)n[0])
		n[1]++;
	return 0;
}

int pd_collect_aux(const uint8_t *buf, size_t len, int cpu, uint8_t **out,
		   size_t *out_len)
{
	struct pd_collect c = {cpu, NULL, 0};
	int n[2] = {cpu, 0};
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
	pd_walk_aux(buf, len, count_one, n);
	*out = c.buf;
	*out_len = c.len;
	return n[1];
}
