/* SPDX-License-Identifier: MIT */
/* What `ptscope selftest` compares between two backends (prefix stc_): for
 * one case, the outcome of one recording — how often each of the sample's
 * own functions was called, the marks that end or explain the trace
 * (trigger, latency, signal), and how the program ended — and the first
 * difference between two outcomes, as one line.
 */
#ifndef PTSCOPE_CLI_SELFTEST_COMPARE_H
#define PTSCOPE_CLI_SELFTEST_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#define STC_MAX_MARKS 8

struct stc_func {
	char *name; /* owned */
	uint64_t calls;
};

struct stc_mark {
	int kind;      /* enum rec_mark_kind */
	char text[96]; /* the first line of its text: the symbol, signal */
};

struct stc_outcome {
	struct stc_func *funcs; /* owned, sorted by name */
	size_t nfuncs, cap;
	struct stc_mark marks[STC_MAX_MARKS];
	size_t nmarks;
	int exited, exit_code, killed_by;
	int snapshots;
	char error[256]; /* the recording failed: why (one sentence) */
};

void stc_init(struct stc_outcome *o);
void stc_fini(struct stc_outcome *o); /* accepts an initialised empty one */

/* One more call of @name.  Returns 0 or PS_ERR_NOMEM. */
int stc_call(struct stc_outcome *o, const char *name);

/* A mark of @kind whose text starts with @text (up to its first line);
 * past STC_MAX_MARKS they are not kept. */
void stc_mark(struct stc_outcome *o, int kind, const char *text);

/* Calls counted, over all functions. */
uint64_t stc_total(const struct stc_outcome *o);

/* Compare outcome @a (of backend @an) with @b (@bn): 0 when they agree —
 * the same way of ending, the same marks in the same order, every
 * function called as often, and some calls at all; else 1 with the first
 * difference in @why, e.g. "plugin_step: 5 calls on intel-pt, 4 on
 * qemu". */
int stc_compare(const struct stc_outcome *a, const char *an,
		const struct stc_outcome *b, const char *bn, char *why,
		size_t size);

#endif /* PTSCOPE_CLI_SELFTEST_COMPARE_H */
