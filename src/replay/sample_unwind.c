/* SPDX-License-Identifier: MIT */
/* DWARF unwinding of samples with libdwfl (sample_unwind.h). */
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/replay/sample_unwind.h"

/* PERF_REG_X86_* numbers (asm/perf_regs.h) of DWARF registers 0..16:
 * rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
static const int dwarf_to_perf[17] = {0,  3,  2,  1,  4,  5,  6,  7, 16,
				      17, 18, 19, 20, 21, 22, 23, 8};

/* One process's Dwfl, and the sample being unwound in it. */
struct sunw_proc {
	uint64_t pid;
	uint32_t epoch;
	Dwfl *dwfl; /* NULL: could not be set up (no module) */
	/* The current sample (the callbacks read these). */
	uint64_t tid;
	Dwarf_Word regs[17];
	uint64_t sp;
	const uint8_t *stack;
	size_t stack_len;
	uint64_t *pcs;
	size_t n, max;
};

struct sunw {
	const struct smod_set *mods;
	struct sunw_proc *procs;
	size_t nprocs;
};

static char *debuginfo_path;
static const Dwfl_Callbacks offline_cb = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
    .section_address = dwfl_offline_section_address,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct sunw_proc *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return (pid_t)p->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct sunw_proc *p = arg;

	(void)dwfl;
	/* Only the copied stack: reading the target's memory is not
	 * possible after the fact. */
	if (addr < p->sp || addr - p->sp + 8 > p->stack_len)
		return false;
	memcpy(result, p->stack + (addr - p->sp), 8);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct sunw_proc *p = thread_arg;

	return dwfl_thread_state_registers(thread, 0, 17, p->regs);
}

static const Dwfl_Thread_Callbacks thread_cb = {
    .next_thread = next_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

int sunw_new(const struct smod_set *mods, struct sunw **out)
{
	struct sunw *u = calloc(1, sizeof(*u));

	if (!u)
		return PS_ERR_NOMEM;
	u->mods = mods;
	*out = u;
	return 0;
}

void sunw_free(struct sunw *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].dwfl)
			dwfl_end(u->procs[i].dwfl);
	free(u->procs);
	free(u);
}

/* Report @pid's modules (each file once, at start - file offset: where
 * its first page is, perf's convention) and attach the callbacks. */
static void proc_setup(struct sunw *u, struct sunw_proc *p)
{
	int any = 0;

	p->dwfl = dwfl_begin(&offline_cb);
	if (!p->dwfl)
		return;
	dwfl_report_begin(p->dwfl);
	for (size_t i = 0; i < u->mods->n; i++) {
		const struct smod *m = &u->mods->m[i];
		int dup = 0;

		if (m->pid != p->pid || m->epoch != p->epoch || !m->file)
			continue;
		for (size_t k = 0; k < i && !dup; k++)
			dup = u->mods->m[k].pid == p->pid &&
			      u->mods->m[k].epoch == p->epoch &&
			      u->mods->m[k].file &&
			      !strcmp(u->mods->m[k].file, m->file);
		if (!dup && dwfl_report_elf(p->dwfl, m->path, m->file, -1,
					    m->start - m->offset, false))
			any = 1;
	}
	dwfl_report_end(p->dwfl, NULL, NULL);
	if (!any ||
	    !dwfl_attach_state(p->dwfl, NULL, (pid_t)p->pid, &thread_cb, p)) {
		dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
}

static struct sunw_proc *proc_get(struct sunw *u, uint64_t pid, uint32_t epoch)
{
	struct sunw_proc *np;

	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid && u->procs[i].epoch == epoch)
			return &u->procs[i];
	/* The Dwfl keeps a pointer to its entry: grow by reallocating a
	 * new table only before any is attached is not possible, so the
	 * entries are allocated once, for every process there can be. */
	if (!u->procs) {
		size_t cap = 0;

		for (size_t i = 0; i < u->mods->n; i++)
			if (!i || u->mods->m[i].pid != u->mods->m[i - 1].pid ||
			    u->mods->m[i].epoch != u->mods->m[i - 1].epoch)
				cap++;
		u->procs = calloc(cap ? cap : 1, sizeof(*u->procs));
		if (!u->procs)
			return NULL;
	}
	{
		int known = 0;

		for (size_t i = 0; i < u->mods->n && !known; i++)
			known = u->mods->m[i].pid == pid &&
				u->mods->m[i].epoch == epoch;
		if (!known)
			return NULL;
	}
	np = &u->procs[u->nprocs++];
	memset(np, 0, sizeof(*np));
	np->pid = pid;
	np->epoch = epoch;
	proc_setup(u, np);
	return np;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct sunw_proc *p = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (p->n == p->max)
		return DWARF_CB_ABORT;
	/* A caller's pc is the return address itself, as in the kernel's
	 * frame-pointer chain; the symbolizer looks one byte before it. */
	p->pcs[p->n++] = pc;
	return DWARF_CB_OK;
}

size_t sunw_unwind(struct sunw *u, uint64_t pid, uint32_t epoch, uint64_t tid,
		   uint64_t regs_mask, const struct recs_sample *smp,
		   uint64_t *pcs, size_t max)
{
	struct sunw_proc *p;
	uint64_t perf[64] = {0};
	size_t k = 0;

	if (!smp->nregs || !smp->stack_len || !max)
		return 0;
	for (int b = 0; b < 64 && k < smp->nregs; b++)
		if (regs_mask & (1ull << b))
			perf[b] = recs_u64(smp->regs, k++);
	if (!(regs_mask & (1ull << 7)) || !(regs_mask & (1ull << 8)))
		return 0; /* no sp or ip */
	p = proc_get(u, pid, epoch);
	if (!p || !p->dwfl)
		return 0;
	for (int i = 0; i < 17; i++)
		p->regs[i] = perf[dwarf_to_perf[i]];
	p->tid = tid;
	p->sp = perf[7];
	p->stack = smp->stack;
	p->stack_len = smp->stack_len;
	p->pcs = pcs;
	p->n = 0;
	p->max = max;
	/* It ends where the copied stack or the CFI does; what was found
	 * so far is the result either way. */
	dwfl_getthread_frames(p->dwfl, (pid_t)tid, on_frame, p);
	return p->n;
}
