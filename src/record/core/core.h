/* SPDX-License-Identifier: MIT */
/* The recorder's internal state, shared by the core (session.c,
 * snapshot.c, triggers.c) and the backends (step.c, qemu_engine.c, ...).
 * Not for other modules: they use recorder.h.
 */
#ifndef PTSCOPE_RECORD_SESSION_H
#define PTSCOPE_RECORD_SESSION_H

#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#include "ptscope/recording.h"
#include "src/record/backend.h"
#include "src/record/core/modules.h"
#include "src/record/recorder.h"
#include "src/record/triggers/resolve.h"

struct bp;

/* A traced process. */
struct rec_proc {
	pid_t pid;
	struct mod_list mods; /* executable file mappings and [vdso] */
	uint8_t *vdso;	      /* copy of the vDSO, or NULL */
	size_t vdso_len;
	uint64_t vdso_addr;
	uint64_t exe_start, exe_end; /* the main executable's code */
	uint64_t now; /* latest trace time seen in this process */
	int gone;     /* exited or detached */
	/* mod_read() flags for its mappings (0: MOD_EXEC | MOD_FILE); the
	 * qemu backend reads every file mapping, since QEMU maps guest code
	 * without host execute permission. */
	unsigned map_flags;
	void *bk;     /* backend's per-process state */
	/* Trigger addresses resolved in this process (triggers.c). */
	struct rec_taddr {
		uint64_t addr;
		char *symbol;	   /* owned */
		int is_trigger_fn; /* ptscope_trigger: rdi is a reason */
	} taddr[REC_MAX_TRIGGERS];
	size_t ntaddr;
	unsigned resolved; /* bit i: spec i resolved in this process */
	int final_checked; /* unknown names were reported as errors */
};

enum rec_thr_state {
	THR_NEW,      /* announced by clone, first stop not yet seen */
	THR_ATTACHED, /* seized and interrupted, first stop not yet seen */
	THR_WARM,     /* attach: one untraced step to leave any syscall */
	THR_RUNNING,  /* resumed, stop not yet seen */
	THR_STOPPED,  /* in a ptrace stop */
	THR_EXITING,  /* past PTRACE_EVENT_EXIT */
	THR_GONE
};

/* A traced thread. */
struct rec_thr {
	pid_t tid;
	struct rec_proc *proc;
	enum rec_thr_state state;
	uint64_t ip;	      /* where it stopped (next instruction) */
	uint64_t real_t0;     /* CLOCK_MONOTONIC ns when last resumed */
	uint64_t step_ns;     /* trace time before the last step ran */
	int inject;	      /* signal to deliver at the next resume */
	int entering_handler; /* the last resume delivered a caught signal */
	int traced;	      /* the backend started tracing it */
	int in_exec;	      /* resumed from the exec event: the first trap
			       * comes at the new entry, nothing ran */
	struct bp *bps[REC_MAX_TRIGGERS];
	int nbps;
	char comm[32];
	void *bk;  /* backend's per-thread state */
	void *lat; /* latency triggers' call stack (latency.c) */
	/* Time across threads (vclock.c). */
	uint64_t birth_ns; /* its creator's clock at clone */
	int born;	   /* birth_ns is known (clone event seen) */
	int birth_wait;	   /* 1: adopted before its clone event; 2: and
			    * its first stop waits for that event */
	int user;	   /* counted in vclk.n_user: steps user code */
	int in_sys;	   /* resumed to run a system call, not back yet */
	int parked;	   /* held stopped: ahead of the slowest thread */
	uint64_t sys_r0;   /* real time when the system call began */
	uint64_t sys_k0;   /* vclk.k_ns then */
	uint64_t sys_seq0; /* vclk.seq then */
	uint64_t last_seq; /* vclk.seq of its latest step */
	uint64_t sys_ns;   /* virtual duration of the last system call */
	unsigned sample;   /* steps since the last step-cost sample */
};

/* The process-wide virtual timeline (vclock.c). */
struct vclk {
	uint64_t k_ns;	   /* real time waited while no thread stepped */
	uint64_t seq;	   /* steps handled, all threads */
	uint64_t floor;	   /* clock of the slowest stepping thread */
	uint64_t step_min; /* least real cost of one single-step seen */
	size_t n_user;	   /* threads with ->user set */
	size_t n_parked;   /* threads with ->parked set */
	int recheck;	   /* the floor may have risen: try unparking */
};

struct rec_session {
	const struct rec_options *o;
	const struct rec_backend *be;
	void *bk; /* the backend's state */

	struct rec_proc **procs;
	size_t nprocs;
	struct rec_thr **thrs;
	size_t nthrs;
	size_t nlive;	      /* threads not THR_GONE */
	struct rec_thr *last; /* lookup cache */

	struct rsv_spec trig[REC_MAX_TRIGGERS]; /* parsed -t specs */
	size_t ntrig;
	int triggers_pending; /* some spec still waits for its module */

	struct rec_mark *marks; /* text owned */
	size_t nmarks, marks_cap;
	size_t marks_snapped; /* marks already in an earlier snapshot */

	struct vclk vc;

	struct rkev *kev;    /* kernel events (kevents.c), or NULL */
	struct rec_lat *lat; /* latency triggers (latency.c), or NULL */

	uint64_t start_ns, start_real_ns;
	const char *stop_reason; /* set: take the snapshot and stop */
	struct rec_result *res;
};

extern volatile sig_atomic_t rec_stop_flag; /* 1: SIGINT, 2: duration */

uint64_t rec_clock_ns(void);

/* A one-sentence notice for the user (opts->notice). */
void rec_notice(struct rec_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --duration: SIGALRM sets rec_stop_flag to 2 (no SA_RESTART, so a
 * blocking wait returns EINTR).  Disarm restores what was there. */
struct rec_saved_timer {
	struct sigaction alrm;
	struct itimerval timer;
};
void rec_duration_arm(const struct rec_options *o, struct rec_saved_timer *sv);
void rec_duration_disarm(const struct rec_options *o,
			 struct rec_saved_timer *sv);

/* @t's trace clock now: the backend's, or its process's latest. */
uint64_t rec_thr_now(struct rec_session *s, const struct rec_thr *t);

/* Threads and processes. */
struct rec_thr *rec_thr_find(struct rec_session *s, pid_t tid);
struct rec_proc *rec_proc_find(struct rec_session *s, pid_t pid);
int rec_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out);
int rec_thr_add(struct rec_session *s, struct rec_proc *p, pid_t tid,
		enum rec_thr_state state, struct rec_thr **out);
/* Re-read @p's mappings (after mmap/munmap/exec). */
int rec_proc_refresh_maps(struct rec_session *s, struct rec_proc *p);

/* Marks: copies @text. */
int rec_mark_add(struct rec_session *s, enum rec_mark_kind kind,
		 const struct rec_thr *t, uint64_t time_ns, uint64_t address,
		 uint64_t value, const char *text);

/* triggers.c */
int rec_triggers_init(struct rec_session *s);
void rec_triggers_fini(struct rec_session *s);
/* Resolve pending specs against @p; @final: report a spec that is still
 * unknown as an error.  Opens breakpoints on @p's threads. */
int rec_triggers_resolve(struct rec_session *s, struct rec_proc *p, int final);
/* Breakpoints on a new thread. */
int rec_triggers_arm(struct rec_session *s, struct rec_thr *t);
void rec_triggers_disarm(struct rec_thr *t);
/* Forget @p's resolved addresses (exec replaced its code). */
void rec_triggers_forget(struct rec_proc *p);
/* Hits of @t since the last check become marks at @t's trace time.
 * Returns the number of hits or PS_ERR_*. */
int rec_triggers_check(struct rec_session *s, struct rec_thr *t);

/* A trigger hit by @t at @ip at trace time @now: a mark (text: @symbol,
 * and @reason if not empty), then a snapshot (--multi-snapshot) or the
 * end of recording (s->stop_reason).  Returns 1 if recording should stop,
 * 0 to go on, or PS_ERR_*. */
int rec_trigger_hit(struct rec_session *s, struct rec_thr *t, uint64_t ip,
		    uint64_t now, uint64_t arg, const char *symbol,
		    const char *reason);

/* ptrace_common.c, for the backends that hold threads with ptrace (step,
 * intel-pt).  Seize every thread of @p, including ones created meanwhile,
 * then resolve its triggers for good.  Returns 0 or PS_ERR_*. */
int rec_seize_threads(struct rec_session *s, struct rec_proc *p);
/* A thread that stopped before its creator's clone event was seen: add
 * it to its process (THR_NEW), or detach it if that is not traced.
 * Returns the thread or NULL. */
struct rec_thr *rec_thr_adopt(struct rec_session *s, pid_t tid);
/* Wait for the command that was started (res->pid) once it runs
 * untraced, and fill in how it ended (a stop request cuts it short). */
void rec_wait_target(struct rec_result *res);

/* A trigger of any kind fired and its mark is made: count the hit, then
 * take a snapshot for @reason (--multi-snapshot) or end recording with
 * it (s->stop_reason).  Returns 1 if recording should stop, 0 to go on,
 * or PS_ERR_*. */
int rec_trigger_snapshot(struct rec_session *s, const char *reason);

/* snapshot.c: collect every thread's PT and hand the snapshot over. */
int rec_snapshot_take(struct rec_session *s, const char *reason);
/* The snapshot that ends a session, for s->stop_reason (or "exit"):
 * skipped when --multi-snapshot already saved what there is to see. */
int rec_snapshot_final(struct rec_session *s);

#endif /* PTSCOPE_RECORD_SESSION_H */
