/* SPDX-License-Identifier: MIT */
/* Private to kreplay*.c: the arguments of a kernel event, and the kernel
 * spans of one thread held back until they nest (kreplay_nest.c). */
#ifndef PTSCOPE_RECORD_KEVENTS_KREPLAY_NEST_H
#define PTSCOPE_RECORD_KEVENTS_KREPLAY_NEST_H

#include <stddef.h>
#include <stdint.h>

#include "src/record/kevents/kevents.h"

#define MAXARGS 12

struct args {
	struct ps_arg a[MAXARGS];
	size_t n;
	char str[4][128];
	size_t nstr;
};

/* A kernel span (system call, kernel function, time off the CPU) of one
 * thread, with the wakeup arrow that ends where it ends, if any. */
struct kspan {
	uint64_t pid, tid; /* tid: its track (KRP_SCHED_TID | tid too) */
	uint64_t t0, t1;
	char name[64];
	const char *cat; /* static */
	struct args a;	 /* string args in a.str: see sidx, soff */
	/* Which a.str (-1: none) and where in it each arg's string is:
	 * the pointers are set again when the span is written, as the
	 * array of spans moves. */
	signed char sidx[MAXARGS];
	unsigned char soff[MAXARGS];
	int flow; /* a wakeup arrow from (flow_tid, flow_ts) */
	uint64_t flow_tid, flow_ts;
	size_t seq;
};

struct kspans {
	struct kspan *v;
	size_t n, cap;
};

/* Keep a copy of the span [t0, t0 + dur] (its args copied too). */
int kspans_add(struct kspans *l, uint64_t pid, uint64_t tid, uint64_t t0,
	       uint64_t dur, const char *name, const char *cat,
	       const struct args *a);

/* Make thread @tid's spans in @l nest with its function spans (as @tap
 * saw them, may be NULL) and with each other, write them and their
 * arrows to @w, and empty @l.  *@written counts the spans. */
int kspans_write(struct kspans *l, struct ps_writer *w,
		 const struct krp_tap *tap, uint64_t tid, uint64_t *written);

void kspans_free(struct kspans *l);

#endif /* PTSCOPE_RECORD_KEVENTS_KREPLAY_NEST_H */
