/* SPDX-License-Identifier: MIT */
/* perf.data records → struct pd_recording (see perfdata.h): the Intel PT
 * configuration (AUXTRACE_INFO, TIME_CONV, the PT event's attribute, the
 * CPUID feature), the sideband (MMAP, MMAP2, COMM, SWITCH,
 * SWITCH_CPU_WIDE, ITRACE_START, FORK, EXIT, AUX, LOST), the build-id table
 * and the AUXTRACE chunks. */
#include <stdlib.h>
#include <string.h>

#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/le.h"

#define PD_ATTR_SIZE_VER0 64
#define PD_AUX_FLAG_TRUNCATED 1
#define PD_AUX_FLAG_PARTIAL 4
#define PD_PROT_EXEC 4

/* Append one zeroed element to a growing array. */
static void *grow(void *arr, size_t *n, size_t elem)
{
	uint8_t *v = realloc(arr, (*n + 1) * elem);

	if (!v)
		return NULL;
	memset(v + *n * elem, 0, elem);
	(*n)++;
	return v;
}

#define PUSH(r, field, count)                                                  \
	({                                                                     \
		void *g_ = grow((r)->field, &(r)->count, sizeof(*(r)->field)); \
		if (g_)                                                        \
			(r)->field = g_;                                       \
		g_ ? &(r)->field[(r)->count - 1] : NULL;                       \
	})

static int note_task(struct pd_recording *r, uint32_t pid, uint32_t tid)
{
	if (pid == UINT32_MAX || tid == UINT32_MAX || (!pid && !tid))
		return 0;
	for (size_t i = 0; i < r->ntasks; i++)
		if (r->tasks[i].tid == tid) {
			r->tasks[i].pid = pid;
			return 0;
		}
	if (!PUSH(r, tasks, ntasks))
		return PS_ERR_NOMEM;
	r->tasks[r->ntasks - 1].pid = pid;
	r->tasks[r->ntasks - 1].tid = tid;
	return 0;
}

uint32_t pd_tid_pid(const struct pd_recording *r, uint32_t tid)
{
	for (size_t i = 0; i < r->ntasks; i++)
		if (r->tasks[i].tid == tid)
			return r->tasks[i].pid;
	return tid;
}

const struct pd_attr *pd_pt_attr(const struct pd_recording *r)
{
	if (!r->has_info || r->npriv <= PD_PT_PMU_TYPE)
		return NULL;
	for (size_t i = 0; i < r->attrs.n; i++)
		if (r->attrs.v[i].type == r->priv[PD_PT_PMU_TYPE])
			return &r->attrs.v[i];
	return NULL;
}

/* A NUL-terminated string of at most @max bytes at @p, or NULL. */
static char *str_at(const uint8_t *p, size_t max)
{
	return strndup((const char *)p, strnlen((const char *)p, max));
}

static int on_mmap(struct pd_recording *r, const struct pd_record *rec,
		   const struct pd_sample_id *sid)
{
	int two = rec->type == PD_RECORD_MMAP2;
	size_t fixed = two ? 64 : 32;
	const uint8_t *b = rec->body;
	struct pd_mmap *m;

	if (rec->body_len < fixed + 1)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf.data MMAP record at byte %llu is "
				     "too short",
				     (unsigned long long)rec->pos);
	if (rec->misc & PD_MISC_MMAP_DATA)
		return 0;
	if (two && !(le_rd32(b + 56) & PD_PROT_EXEC))
		return 0;
	m = PUSH(r, mmaps, nmmaps);
	if (!m)
		return PS_ERR_NOMEM;
	m->pid = le_rd32(b);
	m->tid = le_rd32(b + 4);
	m->start = le_rd64(b + 8);
	m->len = le_rd64(b + 16);
	m->pgoff = le_rd64(b + 24);
	m->path = str_at(b + fixed, rec->body_len - fixed);
	if (!m->path)
		return PS_ERR_NOMEM;
	if (two && (rec->misc & PD_MISC_MMAP_BUILD_ID) &&
	    b[32] <= PD_BUILD_ID_MAX) {
		m->bid.size = b[32];
		memcpy(m->bid.id, b + 36, m->bid.size);
	}
	m->time = sid->time;
	m->kernel = (rec->misc & PD_MISC_CPUMODE_MASK) == PD_MISC_KERNEL ||
		    m->pid == UINT32_MAX;
	m->seq = r->records;
	return m->kernel ? 0 : note_task(r, m->pid, m->tid);
}

static int on_comm(struct pd_recording *r, const struct pd_record *rec,
		   const struct pd_sample_id *sid)
{
	struct pd_comm *c;

	if (rec->body_len < 9)
		return 0;
	c = PUSH(r, comms, ncomms);
	if (!c)
		return PS_ERR_NOMEM;
	c->pid = le_rd32(rec->body);
	c->tid = le_rd32(rec->body + 4);
	memcpy(c->name, rec->body + 8,
	       rec->body_len - 8 < sizeof(c->name) - 1 ? rec->body_len - 8
						       : sizeof(c->name) - 1);
	c->name[sizeof(c->name) - 1] = '\0';
	c->exec = !!(rec->misc & PD_MISC_COMM_EXEC);
	c->time = sid->time;
	c->seq = r->records;
	return note_task(r, c->pid, c->tid);
}

/* A switch record, or an ITRACE_START (tracing begins in that task:
 * a switch in as far as routing the CPU's trace goes). */
static int on_switch(struct pd_recording *r, const struct pd_record *rec,
		     const struct pd_sample_id *sid)
{
	struct pd_cpu_switch *s;
	uint32_t pid = sid->pid, tid = sid->tid;

	if (rec->type == PD_RECORD_ITRACE_START) {
		if (rec->body_len < 8)
			return 0;
		pid = le_rd32(rec->body);
		tid = le_rd32(rec->body + 4);
	} else if (!sid->has_tid) {
		return 0;
	}
	if (!sid->has_time || !sid->has_cpu)
		return 0;
	s = PUSH(r, switches, nswitches);
	if (!s)
		return PS_ERR_NOMEM;
	s->cpu = sid->cpu;
	s->sw.time = sid->time;
	s->sw.pid = pid;
	s->sw.tid = tid;
	s->sw.out = rec->type != PD_RECORD_ITRACE_START &&
		    (rec->misc & PD_MISC_SWITCH_OUT);
	r->nswitch_records += rec->type != PD_RECORD_ITRACE_START;
	return note_task(r, pid, tid);
}

static int on_info(struct pd_recording *r, const struct pd_record *rec)
{
	size_t n;

	if (rec->body_len < 8)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf.data AUXTRACE_INFO record at byte "
				     "%llu is too short",
				     (unsigned long long)rec->pos);
	r->has_info = 1;
	r->info_type = le_rd32(rec->body);
	n = (rec->body_len - 8) / 8;
	r->npriv = n < PD_PT_PRIV_MAX ? n : PD_PT_PRIV_MAX;
	for (size_t i = 0; i < r->npriv; i++)
		r->priv[i] = le_rd64(rec->body + 8 + 8 * i);
	return 0;
}

static void on_time_conv(struct pd_recording *r, const struct pd_record *rec)
{
	if (rec->body_len < 24)
		return;
	r->has_time_conv = 1;
	r->tc_shift = le_rd64(rec->body);
	r->tc_mult = le_rd64(rec->body + 8);
	r->tc_zero = le_rd64(rec->body + 16);
	/* {time_cycles, time_mask, u8 cap_user_time_zero, ...} since 5.10 */
	r->tc_cap_zero = rec->body_len >= 41 ? rec->body[40] : -1;
}

static void cpuid_from(struct pd_recording *r, const uint8_t *p, size_t len)
{
	uint32_t n;

	if (len < 4)
		return;
	n = le_rd32(p);
	if (n > len - 4)
		n = (uint32_t)(len - 4);
	if (n >= sizeof(r->cpuid))
		n = sizeof(r->cpuid) - 1;
	memcpy(r->cpuid, p + 4, n);
	r->cpuid[n] = '\0';
}

static int on_feature(struct pd_recording *r, const struct pd_record *rec)
{
	uint64_t feat;

	if (rec->body_len < 8)
		return 0;
	feat = le_rd64(rec->body);
	if (feat == PD_FEAT_CPUID)
		cpuid_from(r, rec->body + 8, rec->body_len - 8);
	if (feat == PD_FEAT_BUILD_ID)
		return pd_build_ids_parse(&r->build_ids, rec->body + 8,
					  rec->body_len - 8);
	return 0;
}

static int on_attr(struct pd_recording *r, const struct pd_record *rec)
{
	size_t asize;

	if (rec->body_len < 8)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf.data HEADER_ATTR record at byte "
				     "%llu is too short",
				     (unsigned long long)rec->pos);
	asize = le_rd32(rec->body + 4);
	if (!asize)
		asize = PD_ATTR_SIZE_VER0;
	if (asize > rec->body_len)
		return ps_err_detail(PS_ERR_FORMAT,
				     "perf.data HEADER_ATTR record at byte "
				     "%llu is shorter than its attribute",
				     (unsigned long long)rec->pos);
	return pd_attrs_add(&r->attrs, rec->body, asize, rec->body + asize,
			    (rec->body_len - asize) / 8);
}

static int on_record(void *ctx, const struct pd_record *rec)
{
	struct pd_recording *r = ctx;
	struct pd_sample_id sid = {0};
	struct pd_chunk *c;
	int err = 0;

	r->records++;
	if (rec->type < PD_RECORD_HEADER_ATTR && rec->type != PD_RECORD_SAMPLE)
		pd_sample_id_parse(&r->attrs, rec->body, rec->body_len, &sid);
	switch (rec->type) {
	case PD_RECORD_MMAP:
	case PD_RECORD_MMAP2:
		return on_mmap(r, rec, &sid);
	case PD_RECORD_COMM:
		return on_comm(r, rec, &sid);
	case PD_RECORD_SWITCH:
	case PD_RECORD_SWITCH_CPU_WIDE:
	case PD_RECORD_ITRACE_START:
		return on_switch(r, rec, &sid);
	case PD_RECORD_FORK:
	case PD_RECORD_EXIT:
		if (rec->body_len >= 16)
			err = note_task(r, le_rd32(rec->body),
					le_rd32(rec->body + 8));
		return err;
	case PD_RECORD_AUX:
		if (rec->body_len >= 24) {
			uint64_t fl = le_rd64(rec->body + 16);

			r->aux_truncated += !!(fl & PD_AUX_FLAG_TRUNCATED);
			r->aux_partial += !!(fl & PD_AUX_FLAG_PARTIAL);
		}
		return 0;
	case PD_RECORD_LOST:
		r->lost += rec->body_len >= 16 ? le_rd64(rec->body + 8) : 0;
		return 0;
	case PD_RECORD_HEADER_ATTR:
		return on_attr(r, rec);
	case PD_RECORD_HEADER_BUILD_ID:
		return pd_build_ids_parse(&r->build_ids, rec->body - 8,
					  rec->body_len + 8);
	case PD_RECORD_HEADER_FEATURE:
		return on_feature(r, rec);
	case PD_RECORD_AUXTRACE_INFO:
		return on_info(r, rec);
	case PD_RECORD_TIME_CONV:
		on_time_conv(r, rec);
		return 0;
	case PD_RECORD_AUXTRACE:
		c = PUSH(r, chunks, nchunks);
		if (!c)
			return PS_ERR_NOMEM;
		c->aux.data = rec->aux;
		c->aux.size = rec->aux_len;
		c->aux.offset = le_rd64(rec->body + 8);
		c->aux.reference = le_rd64(rec->body + 16);
		c->aux.idx = le_rd32(rec->body + 24);
		c->aux.tid = le_rd32(rec->body + 28);
		c->aux.cpu = le_rd32(rec->body + 32);
		return 0;
	default:
		return 0;
	}
}

int pd_read(const uint8_t *buf, size_t len, struct pd_recording *r)
{
	const uint8_t *p;
	size_t n;
	int err;

	if (!buf || !r)
		return PS_ERR_INVAL;
	memset(r, 0, sizeof(*r));
	r->tc_cap_zero = -1;
	err = pd_file_read(buf, len, &r->file);
	if (!err)
		err = pd_attrs_read_file(&r->attrs, buf, len, &r->file);
	if (!err) {
		err = pd_file_feature(buf, len, &r->file, PD_FEAT_BUILD_ID, &p,
				      &n);
		if (err > 0)
			err = pd_build_ids_parse(&r->build_ids, p, n);
	}
	if (!err) {
		err =
		    pd_file_feature(buf, len, &r->file, PD_FEAT_CPUID, &p, &n);
		if (err > 0) {
			cpuid_from(r, p, n);
			err = 0;
		}
	}
	if (!err) {
		err = pd_walk(buf, len, on_record, r);
		if (err > 0)
			err = 0;
	}
	if (err < 0)
		pd_recording_free(r);
	return err;
}

void pd_recording_free(struct pd_recording *r)
{
	if (!r)
		return;
	pd_attrs_free(&r->attrs);
	pd_build_ids_free(&r->build_ids);
	for (size_t i = 0; i < r->nmmaps; i++)
		free(r->mmaps[i].path);
	free(r->mmaps);
	free(r->comms);
	free(r->switches);
	free(r->chunks);
	free(r->tasks);
	memset(r, 0, sizeof(*r));
}
