/* SPDX-License-Identifier: MIT */
/* The process tree of a Perfetto trace (prefix pft_): which traced
 * process created which, written as one ProcessTree packet at the end.
 *
 * trace_processor fills process.parent_upid only from ProcessTree
 * packets, and only for entries with a cmdline, whose first element also
 * names the process; so the tree keeps each process's last name and
 * writes it as the cmdline, and the name agrees with the process's
 * ProcessDescriptor whatever order trace_processor reads them in.
 */
#ifndef PTSCOPE_OUTPUT_PERFETTO_TREE_H
#define PTSCOPE_OUTPUT_PERFETTO_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "perfetto_trace.pb-c.h"

struct pft_proc {
	uint64_t pid, ppid; /* ppid 0: no parent told */
	char *name;	    /* owned; NULL until named */
};

struct pft_tree {
	struct pft_proc *p; /* owned */
	size_t n, cap;
};

/* Note @pid's parent / name (the last one told wins).  Return 0 or
 * PS_ERR_NOMEM. */
int pft_parent(struct pft_tree *t, uint64_t pid, uint64_t ppid);
int pft_name(struct pft_tree *t, uint64_t pid, const char *name);

/* The ProcessTree of every process with a parent, into @tree (its arrays
 * malloc'ed: pft_msg_free).  Returns how many processes it holds (0:
 * nothing to write), or PS_ERR_NOMEM. */
int pft_msg(const struct pft_tree *t, Pftrace__ProcessTree *tree);
void pft_msg_free(Pftrace__ProcessTree *tree);

void pft_free(struct pft_tree *t);

#endif /* PTSCOPE_OUTPUT_PERFETTO_TREE_H */
