/* SPDX-License-Identifier: MIT */
/* The process tree of a Perfetto trace (perfetto_tree.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/perfetto_tree.h"

static struct pft_proc *get(struct pft_tree *t, uint64_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].pid == pid)
			return &t->p[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct pft_proc *np = realloc(t->p, cap * sizeof(*np));

		if (!np)
			return NULL;
		t->p = np;
		t->cap = cap;
	}
	t->p[t->n] = (struct pft_proc){.pid = pid};
	return &t->p[t->n++];
}

int pft_parent(struct pft_tree *t, uint64_t pid, uint64_t ppid)
{
	struct pft_proc *p = get(t, pid);

	if (!p)
		return PS_ERR_NOMEM;
	p->ppid = ppid;
	return 0;
}

int pft_name(struct pft_tree *t, uint64_t pid, const char *name)
{
	struct pft_proc *p = get(t, pid);
	char *c = strdup(name ? name : "");

	if (!p || !c) {
		free(c);
		return PS_ERR_NOMEM;
	}
	free(p->name);
	p->name = c;
	return 0;
}

int pft_msg(const struct pft_tree *t, Pftrace__ProcessTree *tree)
{
	Pftrace__ProcessTree__Process **pp, *pr;
	char **cmd;
	size_t n = 0;

	pftrace__process_tree__init(tree);
	for (size_t i = 0; i < t->n; i++)
		n += t->p[i].ppid != 0;
	if (!n)
		return 0;
	pp = calloc(n, sizeof(*pp));
	pr = calloc(n, sizeof(*pr));
	cmd = calloc(n, sizeof(*cmd));
	if (!pp || !pr || !cmd) {
		free(pp);
		free(pr);
		free(cmd);
		return PS_ERR_NOMEM;
	}
	n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pft_proc *p = &t->p[i];

		if (!p->ppid)
			continue;
		pftrace__process_tree__process__init(&pr[n]);
		pr[n].has_pid = pr[n].has_ppid = 1;
		pr[n].pid = (int32_t)p->pid;
		pr[n].ppid = (int32_t)p->ppid;
		cmd[n] = p->name ? p->name : "";
		pr[n].n_cmdline = 1;
		pr[n].cmdline = &cmd[n];
		pp[n] = &pr[n];
		n++;
	}
	tree->n_processes = n;
	tree->processes = pp;
	return (int)n;
}

void pft_msg_free(Pftrace__ProcessTree *tree)
{
	if (!tree->n_processes)
		return;
	/* pft_msg's three arrays: their first elements. */
	free(tree->processes[0]->cmdline);
	free(tree->processes[0]);
	free(tree->processes);
	tree->processes = NULL;
	tree->n_processes = 0;
}

void pft_free(struct pft_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->p[i].name);
	free(t->p);
	memset(t, 0, sizeof(*t));
}
