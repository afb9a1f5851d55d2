/* SPDX-License-Identifier: MIT */
/* The intel-pt backend (prefix iptb_): Intel PT in hardware, one
 * intel_pt event per thread with its AUX area in overwrite mode
 * (pt_thread.h), threads followed with ptrace events only (clone, exec,
 * exit, signals: they run at full speed in between), triggers as
 * hardware breakpoints in each thread's PT group.
 * docs/intel-pt-backend.md explains the choices.
 *
 * The control loop (intel_pt.c) drives the pieces below; they are
 * declared here so the unit tests can drive them too, with a test
 * double of the kernel (struct ptk_ops) in place of the real one.
 */
#ifndef PTSCOPE_RECORD_INTEL_PT_H
#define PTSCOPE_RECORD_INTEL_PT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptscope/recording.h"
#include "src/record/intel-pt/pt_clock.h"
#include "src/record/intel-pt/pt_kernel.h"
#include "src/record/intel-pt/pt_pmu.h"
#include "src/record/intel-pt/pt_thread.h"

struct rec_session;
struct rec_thr;
struct rec_proc;

#define IPTB_MAX_REFUSED 8

/* Backend state (s->bk). */
struct iptb {
	const struct ptk_ops *k;
	struct ptpmu pmu;
	struct ptpmu_config pc;
	struct ptt_config tc;
	struct ptclk clk;
	int have_clk;
	int sigpipe[2];
	struct pollfd *pfds; /* poll set, rebuilt per service call */
	size_t pfds_cap;
	uint64_t overrun_ns; /* last user-space stop past a trigger */
	/* Trigger addresses the kernel refused a breakpoint for (said once,
	 * not tried again). */
	uint64_t refused[IPTB_MAX_REFUSED];
	size_t nrefused;
	/* --kernel: the kernel text for the decoder (kcore.h), or none. */
	struct rec_raw_code ktext; /* bytes owned */
};

/* Per-process state (p->bk). */
struct iptb_proc {
	char *filter;	/* --filter text for its image (owned), or NULL */
	uint32_t epoch; /* the image (exec epoch) it was built for */
};

/* Per-thread state (t->bk). */
struct iptb_thr {
	struct ptt pt;
	int lost_marked; /* a LOST mark was written for this thread */
};

/* Discover the PMU and build the config for s->o (no thread yet), with
 * kernel @k; sets s->bk.  Returns 0 or the one-sentence errors of
 * ptpmu_discover / ptpmu_build, PS_ERR_INVAL (bad option). */
int iptb_open(struct rec_session *s, const struct ptk_ops *k);

/* Start tracing @t (stopped or not yet running): open, arm its
 * breakpoints, enable.  Returns 0 or ptt_open's errors. */
int iptb_thread_start(struct rec_session *s, struct rec_thr *t);

/* Breakpoints on @t for every trigger address of its process. */
int iptb_arm(struct rec_session *s, struct rec_thr *t);

/* Wait up to @timeout_ms for a perf fd (or the SIGCHLD pipe), then
 * handle every breakpoint sample (trigger hits: marks, snapshots,
 * s->stop_reason) and sideband record.  Returns 0 or PS_ERR_*. */
int iptb_service(struct rec_session *s, int timeout_ms);

/* @t is about to exit: its PT stops there (the buffer stays for the
 * snapshot), its breakpoints go. */
void iptb_thread_end(struct rec_session *s, struct rec_thr *t);

/* @t's id is gone while its events live on in another task (an exec by
 * a thread other than the main one): what its PT holds of the old image
 * is kept (rec_thr_keep_pt), then its events are closed. */
void iptb_thread_retire(struct rec_session *s, struct rec_thr *t);

/* @t stopped for fatal signal @sig (fault address @addr, 0 if none) at
 * @ip: PT stops, a signal mark, s->stop_reason = "signal". */
int iptb_crash(struct rec_session *s, struct rec_thr *t, int sig, uint64_t addr,
	       int has_addr, uint64_t ip);

/* The kernel run and attach use: &ptk_real; the unit tests put their
 * double here to run the ptrace control loop without PT hardware. */
extern const struct ptk_ops *iptb_kernel;

/* intel_pt_loop.c: the backend's run and attach (struct rec_backend). */
int iptb_run(struct rec_session *s, char *const argv[]);
int iptb_attach(struct rec_session *s, const pid_t *pids, size_t n);

#endif /* PTSCOPE_RECORD_INTEL_PT_H */
