/* SPDX-License-Identifier: MIT */
/* --args in the emulation core (args.h): the table of functions to record, the
 * calls waiting for their return value, the values read at the entry and
 * at the return (see args.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/emulate/emu.h"

/* Calls deeper than this get no return value (runaway recursion). */
#define EMU_FRAMES_MAX 4096

static size_t hslot(uint64_t a, size_t mask)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

void emu_args_proc_fini(struct emu_process *p)
{
	free(p->fns);
	free(p->fhash);
	p->fns = NULL;
	p->fhash = NULL;
	p->nfns = 0;
	p->fhash_mask = 0;
}

void emu_args_thread_fini(struct emu_thread *t)
{
	free(t->frames);
	t->frames = NULL;
	t->nframes = t->frames_cap = 0;
}

int emu_process_set_fns(struct emu_process *p, const struct emu_fn *fns,
			size_t n)
{
	size_t slots = 16;

	emu_args_proc_fini(p);
	if (!n)
		return 0;
	while (slots < 2 * n)
		slots *= 2;
	p->fns = malloc(n * sizeof(*fns));
	p->fhash = calloc(slots, sizeof(*p->fhash));
	if (!p->fns || !p->fhash) {
		emu_args_proc_fini(p);
		return PS_ERR_NOMEM;
	}
	memcpy(p->fns, fns, n * sizeof(*fns));
	p->fhash_mask = slots - 1;
	for (size_t i = 0; i < n; i++) {
		size_t s = hslot(fns[i].entry, p->fhash_mask);

		while (p->fhash[s])
			s = (s + 1) & p->fhash_mask;
		p->fhash[s] = (uint32_t)i + 1;
	}
	p->nfns = n;
	return 0;
}

void emu_thread_set_regs(struct emu_thread *t, emu_regs_fn fn, void *ctx)
{
	t->regs = fn;
	t->regs_ctx = ctx;
}

static const struct emu_fn *find_fn(const struct emu_process *p, uint64_t ip,
				    uint32_t *index)
{
	size_t s = hslot(ip, p->fhash_mask);

	while (p->fhash[s]) {
		const struct emu_fn *f = &p->fns[p->fhash[s] - 1];

		if (f->entry == ip) {
			*index = p->fhash[s] - 1;
			return f;
		}
		s = (s + 1) & p->fhash_mask;
	}
	return NULL;
}

static uint64_t reg_value(const struct emu_regs *r, unsigned k)
{
	const uint64_t v[6] = {r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9};

	return k < 6 ? v[k] : 0;
}

static int wants_xmm(const struct emu_fn *f)
{
	for (unsigned i = 0; i < f->nvals; i++)
		if (f->loc[i] >= 0x10 && f->loc[i] < 0x18)
			return 1;
	return 0;
}

static void push_frame(struct emu_thread *t, const struct emu_regs *r,
		       uint32_t fn, uint64_t ret)
{
	struct emu_frame *fr;

	if (t->nframes == t->frames_cap) {
		unsigned cap = t->frames_cap ? t->frames_cap * 2 : 64;

		if (cap > EMU_FRAMES_MAX)
			return;
		fr = realloc(t->frames, cap * sizeof(*fr));
		if (!fr)
			return;
		t->frames = fr;
		t->frames_cap = cap;
	}
	if (!ret &&
	    t->proc->cfg.read_mem(t->proc->cfg.read_ctx, r->rsp, &ret, 8) != 8)
		return;
	/* Calls left by longjmp or an exception (their frame lies below
	 * this one's) return no more. */
	while (t->nframes && t->frames[t->nframes - 1].rsp <= r->rsp)
		t->nframes--;
	fr = &t->frames[t->nframes++];
	fr->rsp = r->rsp;
	fr->ret = ret;
	fr->fn = fn;
}

int emu_args_entry(struct emu_thread *t, uint64_t ip, uint64_t ret)
{
	struct emu_process *p = t->proc;
	const struct emu_fn *f;
	struct emu_regs r;
	uint64_t v[EMU_FN_MAXV];
	uint32_t index;
	unsigned n;

	f = find_fn(p, ip, &index);
	if (!f || !t->regs)
		return 0;
	memset(&r, 0, sizeof(r));
	if (t->regs(t->regs_ctx, &r, wants_xmm(f)) < 0)
		return 0;
	n = f->nvals < EMU_FN_MAXV ? f->nvals : EMU_FN_MAXV;
	for (unsigned i = 0; i < n; i++) {
		uint8_t l = f->loc[i];

		v[i] = 0;
		if (l < 0x10)
			v[i] = reg_value(&r, l);
		else if (l < 0x18)
			v[i] = r.xmm[l - 0x10];
		else if (l >= 0x80 &&
			 p->cfg.read_mem(p->cfg.read_ctx,
					 r.rsp + (uint64_t)(l - 0x80) * 8,
					 &v[i], 8) != 8)
			v[i] = 0;
	}
	if (f->ret != EMU_RET_NONE)
		push_frame(t, &r, index, ret);
	if (!n && f->kind == EMU_W_ARGS)
		return 0; /* no parameters: only the return value */
	return emu_data(t, f->kind, f->entry, v, n);
}

int emu_args_ret(struct emu_thread *t, uint64_t ip, uint64_t next_ip)
{
	struct emu_regs r;
	const struct emu_fn *f;
	struct emu_frame *fr = NULL;
	unsigned k = t->nframes;
	uint64_t v;

	(void)ip;
	/* The top call, or one a few below it whose callees were left by
	 * longjmp or an exception. */
	while (k > 0 && t->nframes - k < 8) {
		if (t->frames[--k].ret == next_ip) {
			fr = &t->frames[k];
			break;
		}
	}
	if (!fr || !t->regs)
		return 0;
	f = &t->proc->fns[fr->fn];
	memset(&r, 0, sizeof(r));
	if (t->regs(t->regs_ctx, &r, f->ret == EMU_RET_XMM0) < 0)
		return 0;
	/* After the ret the stack pointer is one slot above the entry's. */
	if (r.rsp != fr->rsp + 8)
		return 0;
	t->nframes = k;
	v = f->ret == EMU_RET_XMM0 ? r.xmm[0] : r.rax;
	return emu_data(t, EMU_W_RET, f->entry, &v, 1);
}
