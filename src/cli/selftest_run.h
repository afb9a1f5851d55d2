/* SPDX-License-Identifier: MIT */
/* The cases of `ptscope selftest` and recording one of them on one backend
 * (prefix st_): the bundled samples run under the recorder, the snapshot
 * saved as a recording and decoded again, and the outcome counted
 * (selftest_compare.h).  Only the samples' own functions are counted —
 * libraries differ in what a backend sees of the dynamic loader — and,
 * when a trigger, latency or signal mark ends the trace, only the calls
 * that began before it: a backend that stops PT a little after the mark
 * (from user space) shows the same history up to it.
 */
#ifndef PTSCOPE_CLI_SELFTEST_RUN_H
#define PTSCOPE_CLI_SELFTEST_RUN_H

#include <stddef.h>

#include "src/cli/selftest_compare.h"

struct st_case {
	const char *name;    /* "threads" */
	const char *sample;  /* program in the samples directory */
	const char *args[4]; /* its arguments, NULL-terminated */
	const char *trigger; /* -t spec, or NULL */
	int filter;	     /* intel-pt: --filter on the sample's own code */
	const char *what;    /* what it shows, for --list */
};

extern const struct st_case st_cases[];
extern const size_t st_ncases;

/* The directory of the bundled samples: $PTSCOPE_SAMPLES, else
 * samples/ beside the ptscope program (a build tree), else
 * ../lib/ptscope/samples from it (installed).  Returns 0 or
 * PS_ERR_NOT_FOUND (the sentence says where it looked). */
int st_samples_dir(char *buf, size_t size);

/* Record case @c on @backend ("intel-pt", "qemu", "step") into @out
 * (initialised).  A failed recording is not an error of this call: it
 * goes into out->error.  Returns 0, or PS_ERR_NOMEM. */
int st_run(const struct st_case *c, const char *dir, const char *backend,
	   struct stc_outcome *out);

#endif /* PTSCOPE_CLI_SELFTEST_RUN_H */
