/* SPDX-License-Identifier: MIT */
/* Reading and parsing the perf data ring (sideband.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <asm/perf_regs.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/sideband.h"

struct rd {
	const uint8_t *p;
	size_t len, off;
	int bad;
};

static uint64_t rd_u64(struct rd *r)
{
	uint64_t v = 0;

	if (r->off + 8 > r->len) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p + r->off, 8);
	r->off += 8;
	return v;
}

static uint32_t rd_u32(struct rd *r)
{
	uint32_t v = 0;

	if (r->off + 4 > r->len) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p + r->off, 4);
	r->off += 4;
	return v;
}

static size_t id_trailer_size(const struct sb_layout *lay)
{
	uint64_t t = lay->sample_type;
	size_t n = 0;

	if (!lay->sample_id_all)
		return 0;
	n += t & PERF_SAMPLE_TID ? 8 : 0;
	n += t & PERF_SAMPLE_TIME ? 8 : 0;
	n += t & PERF_SAMPLE_ID ? 8 : 0;
	n += t & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	n += t & PERF_SAMPLE_CPU ? 8 : 0;
	n += t & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
	return n;
}

/* The sample_id trailer at the end of a non-sample record. */
static void rd_trailer(struct rd *r, const struct sb_layout *lay,
		       struct sb_id *id)
{
	uint64_t t = lay->sample_type;

	if (t & PERF_SAMPLE_TID) {
		id->pid = rd_u32(r);
		id->tid = rd_u32(r);
		id->has_tid = 1;
	}
	if (t & PERF_SAMPLE_TIME) {
		id->time = rd_u64(r);
		id->has_time = 1;
	}
	if (t & PERF_SAMPLE_ID) {
		id->id = rd_u64(r);
		id->has_id = 1;
	}
	if (t & PERF_SAMPLE_STREAM_ID)
		rd_u64(r);
	if (t & PERF_SAMPLE_CPU) {
		id->cpu = rd_u32(r);
		rd_u32(r);
		id->has_cpu = 1;
	}
	if (t & PERF_SAMPLE_IDENTIFIER) {
		id->id = rd_u64(r);
		id->has_id = 1;
	}
}

/* A NUL-terminated string in [off, end); NULL if it has no NUL. */
static const char *rd_str(struct rd *r, size_t end)
{
	const char *s = (const char *)r->p + r->off;

	if (end > r->len || r->off > end || !memchr(s, 0, end - r->off)) {
		r->bad = 1;
		return NULL;
	}
	r->off = end;
	return s;
}

static int parse_sample(struct rd *r, const struct sb_layout *lay,
			struct sb_record *o)
{
	uint64_t t = lay->sample_type;

	if (t & PERF_SAMPLE_IDENTIFIER) {
		o->sid.id = rd_u64(r);
		o->sid.has_id = 1;
	}
	if (t & PERF_SAMPLE_IP)
		o->u.sample.ip = rd_u64(r);
	if (t & PERF_SAMPLE_TID) {
		o->sid.pid = rd_u32(r);
		o->sid.tid = rd_u32(r);
		o->sid.has_tid = 1;
	}
	if (t & PERF_SAMPLE_TIME) {
		o->sid.time = rd_u64(r);
		o->sid.has_time = 1;
	}
	if (t & PERF_SAMPLE_ADDR)
		rd_u64(r);
	if (t & PERF_SAMPLE_ID) {
		o->sid.id = rd_u64(r);
		o->sid.has_id = 1;
	}
	if (t & PERF_SAMPLE_STREAM_ID)
		rd_u64(r);
	if (t & PERF_SAMPLE_CPU) {
		o->sid.cpu = rd_u32(r);
		rd_u32(r);
		o->sid.has_cpu = 1;
	}
	if (t & PERF_SAMPLE_PERIOD)
		rd_u64(r);
	/* READ, CALLCHAIN, RAW, BRANCH_STACK are never requested here. */
	if (t & (PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
		 PERF_SAMPLE_BRANCH_STACK))
		return PS_ERR_UNSUPPORTED;
	if (t & PERF_SAMPLE_REGS_USER) {
		uint64_t abi = rd_u64(r);

		if (abi) {
			for (int bit = 0; bit < 64; bit++) {
				uint64_t v;

				if (!(lay->sample_regs_user >> bit & 1))
					continue;
				v = rd_u64(r);
				if (bit == PERF_REG_X86_DI) {
					o->u.sample.rdi = v;
					o->u.sample.has_rdi = 1;
				}
			}
		}
	}
	return r->bad ? PS_ERR_TRUNCATED : 0;
}

int sb_parse(const uint8_t *rec, size_t len, const struct sb_layout *lay,
	     struct sb_record *o)
{
	struct perf_event_header h;
	struct rd r = {rec, len, sizeof(h), 0};
	size_t body_end;

	memset(o, 0, sizeof(*o));
	if (len < sizeof(h))
		return PS_ERR_TRUNCATED;
	memcpy(&h, rec, sizeof(h));
	if (h.size != len || h.size < sizeof(h))
		return PS_ERR_FORMAT;
	o->type = h.type;
	o->misc = h.misc;
	if (h.type == PERF_RECORD_SAMPLE)
		return parse_sample(&r, lay, o);
	if (len < sizeof(h) + id_trailer_size(lay))
		return PS_ERR_TRUNCATED;
	body_end = len - id_trailer_size(lay);
	{
		struct rd t = {rec, len, body_end, 0};

		rd_trailer(&t, lay, &o->sid);
	}
	r.len = body_end;
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		o->u.mmap2.pid = rd_u32(&r);
		o->u.mmap2.tid = rd_u32(&r);
		o->u.mmap2.addr = rd_u64(&r);
		o->u.mmap2.len = rd_u64(&r);
		o->u.mmap2.pgoff = rd_u64(&r);
		if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			uint8_t n;

			if (r.off + 24 > r.len) {
				r.bad = 1;
				break;
			}
			n = rec[r.off];
			o->u.mmap2.build_id_len = n > 20 ? 20 : n;
			memcpy(o->u.mmap2.build_id, rec + r.off + 4, 20);
			r.off += 24;
		} else {
			o->u.mmap2.maj = rd_u32(&r);
			o->u.mmap2.min = rd_u32(&r);
			o->u.mmap2.ino = rd_u64(&r);
			rd_u64(&r); /* ino_generation */
		}
		o->u.mmap2.prot = rd_u32(&r);
		o->u.mmap2.flags = rd_u32(&r);
		o->u.mmap2.filename = rd_str(&r, body_end);
		break;
	case PERF_RECORD_COMM:
		o->u.comm.pid = rd_u32(&r);
		o->u.comm.tid = rd_u32(&r);
		o->u.comm.exec = !!(h.misc & PERF_RECORD_MISC_COMM_EXEC);
		o->u.comm.comm = rd_str(&r, body_end);
		break;
	case PERF_RECORD_EXIT:
		o->u.exit.pid = rd_u32(&r);
		o->u.exit.ppid = rd_u32(&r);
		o->u.exit.tid = rd_u32(&r);
		o->u.exit.ptid = rd_u32(&r);
		o->u.exit.time = rd_u64(&r);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		o->u.sw.pid = rd_u32(&r);
		o->u.sw.tid = rd_u32(&r);
		/* fall through */
	case PERF_RECORD_SWITCH:
		o->u.sw.out = !!(h.misc & PERF_RECORD_MISC_SWITCH_OUT);
		o->u.sw.preempt =
		    o->u.sw.out &&
		    !!(h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		break;
	case PERF_RECORD_ITRACE_START:
		o->u.itrace.pid = rd_u32(&r);
		o->u.itrace.tid = rd_u32(&r);
		break;
	case PERF_RECORD_AUX:
		o->u.aux.offset = rd_u64(&r);
		o->u.aux.size = rd_u64(&r);
		o->u.aux.flags = rd_u64(&r);
		break;
	case PERF_RECORD_LOST:
		o->u.lost.id = rd_u64(&r);
		o->u.lost.lost = rd_u64(&r);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		o->u.lost.lost = rd_u64(&r);
		break;
	default:
		break;
	}
	return r.bad ? PS_ERR_TRUNCATED : 0;
}

/* The largest record we accept (the kernel's limit is 64 KiB: the header
 * size is a u16). */
#define SB_REC_MAX 65536

int sb_ring_read(struct perf_event_mmap_page *meta, const uint8_t *data,
		 uint64_t size, sb_record_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	uint8_t *tmp = NULL;
	int n = 0, r = 0;

	if (size < sizeof(struct perf_event_header) || (size & (size - 1)) ||
	    head - tail > size)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf data ring: %llu bytes pending in a "
				     "ring of %llu",
				     (unsigned long long)(head - tail),
				     (unsigned long long)size);
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & (size - 1);
		const uint8_t *rec;

		if (head - tail < sizeof(h)) {
			r = PS_ERR_FORMAT;
			break;
		}
		/* The kernel keeps headers 8-byte aligned, so never split;
		 * a damaged tail may not be. */
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) & (size - 1)];
		if (h.size < sizeof(h) || h.size > head - tail) {
			r = ps_err_detail(
			    PS_ERR_FORMAT,
			    "perf data ring: a record of %u bytes "
			    "at offset %llu does not fit",
			    h.size, (unsigned long long)tail);
			break;
		}
		if (off + h.size <= size) {
			rec = data + off;
		} else {
			size_t first = (size_t)(size - off);

			if (!tmp && !(tmp = malloc(SB_REC_MAX))) {
				r = PS_ERR_NOMEM;
				break;
			}
			memcpy(tmp, data + off, first);
			memcpy(tmp + first, data, h.size - first);
			rec = tmp;
		}
		tail += h.size;
		n++;
		r = fn(ctx, rec, h.size);
		if (r)
			break;
	}
	free(tmp);
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return r ? r : n;
}

void sb_aux_flags_text(uint64_t flags, char *buf, size_t size)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
	    {PERF_AUX_FLAG_TRUNCATED, "truncated"},
	    {PERF_AUX_FLAG_OVERWRITE, "overwrite"},
	    {PERF_AUX_FLAG_PARTIAL, "partial"},
	    {PERF_AUX_FLAG_COLLISION, "collision"},
	};
	size_t len = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int n;

		if (!(flags & names[i].bit))
			continue;
		n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
			     names[i].name);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
}
