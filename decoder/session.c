/* SPDX-License-Identifier: MIT */
/* The decoder session (decoder/decoder.h): one image and one symbol space
 * per pid over a shared section cache and shared symbol modules; streams
 * go flow → stack → writer. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/crew.h"
#include "decoder/decoder.h"
#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/inline.h"
#include "decoder/session.h"
#include "decoder/stack.h"
#include "decoder/symbols.h"
#include "decoder/threads.h"
#include "ptscope/error.h"

double dec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Can dec_split decode streams with @cfg? */
static int can_split(const struct dec_config *cfg)
{
	return cfg->jobs > 1 && !cfg->libipt_flow && !cfg->inline_frames;
}

int dec_session_new(const struct dec_config *cfg, struct dec_session **out)
{
	struct dec_session *s;
	int err;

	if (!out)
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_session_new: out is NULL");
	*out = NULL;
	if (!cfg)
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_session_new: cfg is NULL");
	if (cfg->time.has_conv && cfg->time.shift > 63)
		return ps_err_detail(PS_ERR_INVAL,
				     "time shift %u is out of range: perf's "
				     "time_shift is below 64",
				     cfg->time.shift);
	s = calloc(1, sizeof(*s));
	if (!s)
		return PS_ERR_NOMEM;
	s->cfg = *cfg;
	err = img_cache_new(&s->cache);
	/* the workers make their heaps ready while the caller loads the
	 * code (crew.h) */
	if (!err && can_split(cfg))
		err = dec_crew_new(cfg->jobs - 1 < DEC_SPLIT_WORKERS
				       ? (size_t)cfg->jobs - 1
				       : DEC_SPLIT_WORKERS,
				   &s->crew);
	if (err < 0) {
		img_cache_free(s->cache);
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

static void proc_free(struct dec_proc *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		stk_free(p->threads[i].stk);
	free(p->threads);
	flow_free(p->flow);
	for (size_t i = 0; i < DEC_SPLIT_WORKERS; i++)
		flow_free(p->split_flow[i]);
	img_free(p->img);
	sym_space_free(p->syms);
}

void dec_session_free(struct dec_session *s)
{
	size_t i;

	if (!s)
		return;
	dec_crew_free(s->crew);
	for (i = 0; i < s->nprocs; i++)
		proc_free(&s->procs[i]);
	free(s->procs);
	for (i = 0; i < s->nmods; i++) {
		sym_module_free(s->mods[i].m);
		free(s->mods[i].path);
	}
	free(s->mods);
	img_cache_free(s->cache);
	free(s);
}

const struct dec_stats *dec_get_stats(const struct dec_session *s)
{
	return &s->stats;
}

struct dec_proc *dec_proc_find_epoch(struct dec_session *s, uint64_t pid,
				     uint32_t epoch)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid && s->procs[i].epoch == epoch)
			return &s->procs[i];
	return NULL;
}

struct dec_proc *dec_proc_find(struct dec_session *s, uint64_t pid)
{
	return dec_proc_find_epoch(s, pid, 0);
}

int dec_proc_get(struct dec_session *s, uint64_t pid, struct dec_proc **out)
{
	return dec_proc_get_epoch(s, pid, 0, out);
}

int dec_proc_get_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		       struct dec_proc **out)
{
	struct dec_proc *p = dec_proc_find_epoch(s, pid, epoch);
	int err;

	if (p) {
		*out = p;
		return 0;
	}
	p = realloc(s->procs, (s->nprocs + 1) * sizeof(*p));
	if (!p)
		return PS_ERR_NOMEM;
	s->procs = p;
	p = &s->procs[s->nprocs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->epoch = epoch;
	err = img_new(s->cache, &p->img);
	if (!err)
		err = sym_space_new(&p->syms);
	if (err < 0) {
		proc_free(p);
		return err;
	}
	s->nprocs++;
	*out = p;
	return 0;
}

/* Symbols of @path, read once per session; @name labels it (NULL: the
 * path's base name). */
static int module_get(struct dec_session *s, const char *path, const char *name,
		      struct sym_module **out)
{
	struct dec_module *mods;
	int err;

	for (size_t i = 0; i < s->nmods; i++) {
		if (!strcmp(s->mods[i].path, path)) {
			*out = s->mods[i].m;
			return 0;
		}
	}
	mods = realloc(s->mods, (s->nmods + 1) * sizeof(*mods));
	if (!mods)
		return PS_ERR_NOMEM;
	s->mods = mods;
	mods[s->nmods].path = strdup(path);
	if (!mods[s->nmods].path)
		return PS_ERR_NOMEM;
	err = sym_module_load(path, name,
			      s->cfg.span_info || s->cfg.inline_frames,
			      &mods[s->nmods].m);
	if (err < 0) {
		free(mods[s->nmods].path);
		return err;
	}
	*out = mods[s->nmods++].m;
	return 0;
}

int dec_add_elf(struct dec_session *s, uint64_t pid, const char *path,
		uint64_t base, uint64_t file_offset, uint64_t size)
{
	return dec_add_elf_as(s, pid, path, NULL, base, file_offset, size);
}

int dec_add_elf_as(struct dec_session *s, uint64_t pid, const char *path,
		   const char *name, uint64_t base, uint64_t file_offset,
		   uint64_t size)
{
	return dec_add_elf_in(s, pid, 0, path, name, base, file_offset, size);
}

int dec_add_elf_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		      const char *path, uint64_t base, uint64_t file_offset,
		      uint64_t size)
{
	return dec_add_elf_in(s, pid, epoch, path, NULL, base, file_offset,
			      size);
}

int dec_add_elf_in(struct dec_session *s, uint64_t pid, uint32_t epoch,
		   const char *path, const char *name, uint64_t base,
		   uint64_t file_offset, uint64_t size)
{
	struct sym_module *m;
	struct dec_proc *p;
	struct img_where where;
	uint64_t bias = 0, lo = 0, hi = 0;
	int err;

	if (!s || !path)
		return ps_err_detail(
		    PS_ERR_INVAL, "dec_add_elf: session and path are required");
	err = dec_proc_get_epoch(s, pid, epoch, &p);
	if (err < 0)
		return err;
	err = img_add_elf(p->img, path, base, file_offset, size);
	if (err < 0)
		return err;
	err = module_get(s, path, name, &m);
	if (err < 0)
		return err;
	if (size) {
		lo = base;
		hi = base + size;
		if (img_lookup(p->img, base, &where) == 0)
			bias = where.bias;
	} else if (base) {
		bias = base - sym_module_link_base(m);
	}
	err = sym_space_add(p->syms, m, bias, lo, hi);
	if (err < 0)
		return err;
	/* which addresses are function entries just changed */
	flow_invalidate(p->flow);
	return 0;
}

int dec_add_process(struct dec_session *s, uint64_t pid)
{
	struct dec_proc *p;

	if (!s)
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_add_process: session is NULL");
	return dec_proc_get(s, pid, &p);
}

int dec_add_raw(struct dec_session *s, uint64_t pid, const char *name,
		const void *bytes, size_t size, uint64_t vaddr)
{
	return dec_add_raw_epoch(s, pid, 0, name, bytes, size, vaddr);
}

int dec_add_raw_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		      const char *name, const void *bytes, size_t size,
		      uint64_t vaddr)
{
	struct dec_proc *p;
	int err;

	if (!s || !bytes || !size)
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "dec_add_raw: session and bytes are required");
	err = dec_proc_get_epoch(s, pid, epoch, &p);
	if (err < 0)
		return err;
	err = img_add_raw(p->img, name, bytes, size, vaddr);
	if (err < 0)
		return err;
	return sym_space_add_region(p->syms, name, vaddr, size);
}

/* Read-only: the flow layer may run on a thread of its own (pipeline.c)
 * while the stack builder looks symbols up. */
static int is_func_entry(void *ctx, uint64_t ip)
{
	return sym_is_func_entry(ctx, ip);
}

const struct sym_func *dec_symbolize(struct dec_session *s, uint64_t pid,
				     uint32_t epoch, uint64_t ip)
{
	struct dec_proc *p = s ? dec_proc_find_epoch(s, pid, epoch) : NULL;

	return p && p->syms ? sym_lookup(p->syms, ip) : NULL;
}

const struct sym_func *dec_lookup(void *ctx, uint64_t ip)
{
	return sym_lookup(ctx, ip);
}

struct flow_funcs dec_flow_funcs(struct dec_proc *p)
{
	struct flow_funcs fn = {.is_func_entry = is_func_entry, .ctx = p->syms};

	return fn;
}

int dec_proc_flow(struct dec_session *s, struct dec_proc *p)
{
	struct flow_funcs fn = dec_flow_funcs(p);

	int err;

	if (p->flow)
		return 0;
	err = flow_new(&s->cfg, p->img, &fn, &p->flow);
	if (!err)
		flow_set_fast(p->flow, !s->cfg.libipt_flow);
	return err;
}

static const struct prm_func *dec_params(void *ctx, const struct sym_func *fn)
{
	return fn ? sym_params(ctx, fn->start) : NULL;
}

void dec_stk_config(const struct dec_session *s, const struct dec_proc *p,
		    uint64_t tid, struct ps_writer *w, struct stk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pid = p->pid;
	cfg->tid = tid;
	cfg->w = w;
	cfg->lookup = dec_lookup;
	cfg->lookup_ctx = p->syms;
	cfg->span_info = s->cfg.span_info;
	cfg->params = dec_params;
}

int dec_no_psb(int err)
{
	if (err == PS_ERR_FORMAT)
		return ps_err_detail(
		    PS_ERR_FORMAT, "the trace has no PSB packet, so it is not "
				   "Intel PT data or it is cut too short: give "
				   "the raw PT stream (AUX area bytes)");
	return err;
}

int dec_decode_thread(struct dec_session *s, uint64_t pid, uint64_t tid,
		      const uint8_t *pt, size_t len, struct ps_writer *w)
{
	return dec_decode_thread_epoch(s, pid, 0, tid, pt, len, w);
}

void dec_stats_add(struct dec_stats *to, const struct dec_stats *from)
{
	to->bytes += from->bytes;
	to->instructions += from->instructions;
	to->blocks += from->blocks;
	to->calls += from->calls;
	to->returns += from->returns;
	to->branches += from->branches;
	to->spans += from->spans;
	to->err_overflow += from->err_overflow;
	to->err_nomap += from->err_nomap;
	to->err_decode += from->err_decode;
	to->err_truncated += from->err_truncated;
	to->seconds += from->seconds;
	to->skipped += from->skipped;
	to->threads += from->threads;
	to->flow_fast += from->flow_fast;
	to->flow_fallbacks += from->flow_fallbacks;
	to->segments += from->segments;
	to->split_threads += from->split_threads;
	to->split_seconds += from->split_seconds;
	to->split_flow += from->split_flow;
	to->split_join += from->split_join;
	to->split_wait += from->split_wait;
	to->split_plan += from->split_plan;
	to->split_start += from->split_start;
}

int dec_stack_begin(struct dec_session *s, struct dec_proc *p,
		    const struct dec_stream *in, struct stk **stk,
		    uint64_t *epoch)
{
	struct stk_config cfg;
	int err;

	dec_stk_config(s, p, in->tid, in->w, &cfg);
	err = stk_new(&cfg, stk);
	if (err < 0)
		return err;
	/* Span names, categories and info strings are interned by the
	 * symbolizer or static: stable while this thread is decoded (the
	 * stack builder drops the promise for its formatted messages). */
	*epoch = ps_writer_stable_begin(in->w);
	return 0;
}

void dec_stack_end(struct dec_session *s, const struct dec_stream *in,
		   struct stk *stk, uint64_t epoch)
{
	ps_writer_stable_end(in->w, epoch);
	s->stats.spans += stk_get_counts(stk)->spans;
	stk_free(stk);
}

/* One stream on this thread, or with the flow layer on a second one. */
static int decode_one(struct dec_session *s, const struct dec_stream *in)
{
	struct dec_proc *p;
	struct stk *stk;
	double t0 = dec_now();
	uint64_t epoch;
	int err;

	err = dec_proc_get_epoch(s, in->pid, in->image, &p);
	if (!err)
		err = dec_proc_flow(s, p);
	if (err < 0)
		return err;
	if (s->cfg.inline_frames) {
		struct stk_config cfg;

		dec_stk_config(s, p, in->tid, in->w, &cfg);
		err = inl_decode_thread(p->flow, p->syms, &cfg, in->pt, in->len,
					&s->stats);
		s->stats.seconds += dec_now() - t0;
		return dec_no_psb(err);
	}
	err = dec_stack_begin(s, p, in, &stk, &epoch);
	if (err < 0)
		return err;
	if (s->cfg.jobs > 1)
		err = dec_pipeline(p->flow, in->pt, in->len, stk_sink, stk,
				   &s->stats);
	else
		err = flow_decode(p->flow, in->pt, in->len, stk_sink, stk,
				  &s->stats);
	dec_stack_end(s, in, stk, epoch);
	s->stats.threads++;
	s->stats.seconds += dec_now() - t0;
	return dec_no_psb(err);
}

static int check_stream(const struct dec_session *s,
			const struct dec_stream *in)
{
	if (!s || !in->w || (!in->pt && in->len))
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_decode_thread: session, trace and "
				     "writer are required");
	return 0;
}

static int pass_on(void *ctx, size_t i, int err)
{
	(void)ctx;
	(void)i;
	return err;
}

int dec_decode_thread_epoch(struct dec_session *s, uint64_t pid, uint32_t image,
			    uint64_t tid, const uint8_t *pt, size_t len,
			    struct ps_writer *w)
{
	struct dec_stream in = {pid, image, tid, pt, len, w};
	int err = check_stream(s, &in);

	return err < 0 ? err : dec_decode_streams(s, &in, 1, pass_on, NULL);
}

struct streams_call {
	struct dec_session *s;
	const struct dec_stream *st;
	size_t n;
	dec_stream_done_fn done;
	void *ctx;
};

static int decode_streams(void *p)
{
	struct streams_call *c = p;
	struct dec_session *s = c->s;
	const struct dec_stream *st = c->st;
	size_t n = c->n;
	int err;

	if (n && can_split(&s->cfg)) {
		err = dec_split(s, st, n, c->done, c->ctx);
		if (err != DEC_SPLIT_UNCUT)
			return err;
	}
	for (size_t i = 0; i < n; i++) {
		err = c->done(c->ctx, i, decode_one(s, &st[i]));
		if (err < 0)
			return err;
	}
	return 0;
}

int dec_decode_streams(struct dec_session *s, const struct dec_stream *st,
		       size_t n, dec_stream_done_fn done, void *ctx)
{
	struct streams_call c = {s, st, n, done, ctx};
	int err;

	if (!s || (n && !st) || !done)
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_decode_streams: session, streams "
				     "and a done function are required");
	for (size_t i = 0; i < n; i++) {
		err = check_stream(s, &st[i]);
		if (err < 0)
			return err;
	}
	return dec_with_stack(decode_streams, &c);
}
