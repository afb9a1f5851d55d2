/* SPDX-License-Identifier: MIT */
/* The recorder core as backends and the recorder's parts see it: the one
 * header they include.  The core (this folder) holds a session's
 * processes, threads, their modules, marks, snapshots, the trigger
 * registry and the virtual clock; it knows no backend and no trigger
 * kind.
 *
 *  - A backend (engine) plugs in through struct rec_backend below and owns
 *    its control loop: it adds processes and threads, reports trigger
 *    hits and lets the core take snapshots.
 *  - A trigger kind (breakpoint, latency: src/record/triggers/) registers
 *    with the core through struct rec_trigger_kind; backends only call
 *    the rec_triggers_* dispatchers.
 *  - Kernel events (src/record/kevents/) hook into new processes and
 *    snapshots through struct rec_extension.
 *
 * The caller's view (options, results) is options.h, reached through
 * src/record/recorder.h.
 */
#ifndef PTSCOPE_RECORD_CORE_CORE_H
#define PTSCOPE_RECORD_CORE_CORE_H

#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#include "ptscope/recording.h"
#include "src/record/core/modules.h"
#include "src/record/core/options.h"

struct rec_session;
struct rec_thr;
struct rec_proc;

/* PT of one thread in one image (exec epoch) of its process. */
struct rec_pt_chunk {
	uint32_t epoch;
	uint8_t *data; /* malloc'ed: whoever holds the chunk frees it */
	size_t len;
};

/* A recording backend (engine): step, qemu, intel-pt, sample.  Each one owns
 * its control loop and plugs into the core through this table only. */
struct rec_backend {
	const char *name; /* "step", "qemu", "intel-pt", "sample" */
	int emulated;	  /* 1: packets come from an emulator */
	/* 1: the trigger mark goes at the start of the step that hit the
	 * breakpoint (t->step_ns), not at the breakpoint sample's time. */
	int marks_at_step;
	/* 1: triggers are hardware breakpoints on every thread, armed by the
	 * breakpoint trigger kind; 0: the backend watches the trigger
	 * addresses (rec_proc.taddr) itself. */
	int hw_breakpoints;
	/* 1: the backend feeds kernel events to the recorder
	 * (src/record/kevents/kevents.h: rkev_step per step on a virtual
	 * clock, or rkev_poll per loop turn on CLOCK_MONOTONIC); 0: the
	 * sidecar is not started. */
	int kernel_events;
	/* Start @argv and record until it ends, a trigger, a crash, a stop
	 * request or --duration; the last snapshot is taken.  Returns 0 or
	 * PS_ERR_*. */
	int (*run)(struct rec_session *s, char *const argv[]);
	/* Attach to processes @pids (NULL: this backend cannot attach). */
	int (*attach)(struct rec_session *s, const pid_t *pids, size_t n);
	/* Free the backend's per-thread/per-process state (s->bk, t->bk,
	 * p->bk) before the core frees the session. */
	void (*fini)(struct rec_session *s);
	/* Copy @t's PT for a snapshot: *chunks, a malloc'ed array of *n
	 * chunks (each one's data malloc'ed; the core frees both), one per
	 * image of @t's process the engine holds PT of (usually one, in
	 * t->epoch; rec_pt_one_chunk wraps a single buffer).  PT of earlier
	 * images that the core keeps (rec_proc_exec) is added by the core.
	 * PS_ERR_NOT_FOUND: none for this thread. */
	int (*snapshot)(struct rec_session *s, const struct rec_thr *t,
			struct rec_pt_chunk **chunks, size_t *n);
	/* A sampling backend (sample) gives call-stack samples instead of
	 * PT: @t's for a snapshot into *@out (out->data malloc'ed; pid, tid
	 * and snapshot are filled in by the core).  NULL for PT backends;
	 * when set, snapshot is not called.  PS_ERR_NOT_FOUND: none. */
	int (*samples)(struct rec_session *s, const struct rec_thr *t,
		       struct rec_samples *out);
	/* @t's trace clock now (ns). */
	uint64_t (*now)(struct rec_session *s, const struct rec_thr *t);
	/* Re-read @p's mappings before a snapshot (NULL: the core's
	 * rec_proc_refresh_maps; qemu leaves QEMU's own objects out). */
	int (*maps)(struct rec_session *s, struct rec_proc *p);
	/* Backend facts for the recording (clock conversion, QEMU version);
	 * may be NULL. */
	void (*fill_info)(struct rec_session *s, struct rec_info *info);
	/* Code no process mapping holds that every process's trace may run
	 * through (intel-pt --kernel: the kernel text): *raws (borrowed,
	 * pid ignored) are added to each process of a snapshot.  Returns
	 * how many; may be NULL. */
	size_t (*extra_code)(struct rec_session *s,
			     const struct rec_raw_code **raws);
};

/* Trigger kinds a session may have (breakpoint, latency). */
#define REC_MAX_KINDS 4

/* An earlier image (exec epoch) of a process: what decoding the PT of
 * that image needs, kept after the exec for every later snapshot. */
struct rec_image {
	uint32_t epoch;
	uint64_t start_ns; /* trace time it started (0: at the start) */
	char comm[32];	   /* the process's name while it ran */
	char *path;	   /* its program (owned), or NULL */
	struct mod_list mods;
	uint8_t *vdso; /* owned, or NULL */
	size_t vdso_len;
	uint64_t vdso_addr;
};

/* A traced process. */
struct rec_proc {
	pid_t pid;
	pid_t ppid;	   /* the traced process that created it; 0: a root */
	uint32_t epoch;	   /* its image: 0 at the start, +1 at each exec */
	uint64_t epoch_ns; /* trace time the current image started */
	char comm[32];	   /* its name in the current image */
	char *path;	   /* the current image's program (owned), or NULL */
	struct rec_image *images; /* earlier images (owned), oldest first */
	size_t nimages;
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
	void *bk; /* backend's per-process state */
	/* Trigger addresses resolved in this process: where a backend that
	 * watches addresses itself stops, and what the breakpoint kind arms
	 * (rec_taddr_add). */
	struct rec_taddr {
		uint64_t addr;
		char *symbol;	   /* owned */
		int is_trigger_fn; /* ptscope_trigger: rdi is a reason */
	} taddr[REC_MAX_TRIGGERS];
	size_t ntaddr;
	/* Bit i: trigger spec i (rec_options.triggers) is resolved here. */
	unsigned resolved;
	/* Bit i: spec i names nothing in this image, and while children are
	 * followed that is no error: another process may have it. */
	unsigned absent;
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
	char comm[32];
	/* The image (process epoch) the engine's PT of this thread is in;
	 * PT of earlier images is kept by the core (rec_proc_exec). */
	uint32_t epoch;
	struct rec_pt_chunk *kept; /* owned, oldest first */
	size_t nkept;
	void *bk; /* backend's per-thread state */
	/* Each trigger kind's per-thread state, by the kind's slot (owned by
	 * the kind), and how many things the kinds armed on it (a backend
	 * checks for hits only when there are some). */
	void *trig[REC_MAX_KINDS];
	int narmed;
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

	/* Registered trigger kinds and their state (triggers.c). */
	const struct rec_trigger_kind *kinds[REC_MAX_KINDS];
	void *kstate[REC_MAX_KINDS];
	size_t nkinds;
	int triggers_pending;	/* some spec still waits for its module */
	unsigned triggers_ever; /* bit i: spec i resolved in some process */
	/* Spec i named nothing in some process: the first sentence saying
	 * so (owned), told at the end if no process ever had it. */
	char *trigger_absent[REC_MAX_TRIGGERS];

	struct rec_mark *marks; /* text owned */
	size_t nmarks, marks_cap;
	size_t marks_snapped; /* marks already in an earlier snapshot */

	struct vclk vc;

	/* The kernel-event part (src/record/kevents/), or NULL when off; it
	 * hears of new processes and adds to snapshots through @ext. */
	struct rkev *kev;
	const struct rec_extension *ext;

	uint64_t start_ns, start_real_ns;
	const char *stop_reason; /* set: take the snapshot and stop */
	struct rec_result *res;
};

/* A stop request: 1 SIGINT, 2 --duration, 3 SIGTERM or SIGHUP.  Every
 * engine looks at it at least every REC_STOP_POLL_MS, whatever it waits
 * for. */
extern volatile sig_atomic_t rec_stop_flag;
#define REC_STOP_POLL_MS 100

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

/* session.c: threads and processes. */
struct rec_thr *rec_thr_find(struct rec_session *s, pid_t tid);
struct rec_proc *rec_proc_find(struct rec_session *s, pid_t pid);
int rec_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out);
int rec_thr_add(struct rec_session *s, struct rec_proc *p, pid_t tid,
		enum rec_thr_state state, struct rec_thr **out);
/* Re-read @p's mappings (after mmap/munmap/exec). */
int rec_proc_refresh_maps(struct rec_session *s, struct rec_proc *p);

/* proctree.c: the process tree.  1 if children are followed (the
 * default; --no-follow turns it off). */
int rec_follows(const struct rec_session *s);
/* 1 once every root of the tree (the command, or each attached process)
 * has ended: the recording ends with them, and what the tree still runs
 * (a daemon, a background job) is let go untraced. */
int rec_roots_gone(const struct rec_session *s);
/* Thread @t is gone (counted once). */
void rec_thr_set_gone(struct rec_session *s, struct rec_thr *t);
/* Thread @t ended, @exited with @code or killed by signal @code: it is
 * gone, and if it was its process's main thread the process is, and for
 * the command's process that is the command's result. */
void rec_thr_ended(struct rec_session *s, struct rec_thr *t, int exited,
		   int code);
/* @parent created process @pid (fork, vfork, clone without CLONE_THREAD,
 * clone3, posix_spawn): it joins the session with ppid = parent->pid and
 * its parent's image (modules, program, name); kernel events follow it
 * and the triggers are resolved in it (the engine arms its threads as it
 * adds them).  Returns 0, PS_ERR_NOMEM, or a mapping read error
 * (PS_ERR_NOT_FOUND: it is gone already). */
int rec_proc_add_child(struct rec_session *s, struct rec_proc *parent,
		       pid_t pid, struct rec_proc **out);
/* Thread @t of @p ran exec of @path (NULL: /proc/PID/exe) at trace time
 * @now (the thread that remains, tid == pid after the kernel's
 * de_thread).  The engine has
 * ended the old image's PT of @t; the core keeps what @t's snapshot op
 * returns now as the old image's PT (so the engine starts @t's PT afresh
 * after the call), keeps the old image's modules, puts an exec mark on
 * @t, bumps p->epoch (and t->epoch), reads the new image's mappings and
 * name, and resolves the triggers again from scratch.  Returns 0 or
 * PS_ERR_*. */
int rec_proc_exec(struct rec_session *s, struct rec_proc *p, struct rec_thr *t,
		  uint64_t now, const char *path);
/* Wrap one PT buffer of @t (in t->epoch) as the snapshot op's answer; on
 * failure @buf is freed.  Returns 0 or PS_ERR_NOMEM. */
int rec_pt_one_chunk(const struct rec_thr *t, uint8_t *buf, size_t len,
		     struct rec_pt_chunk **chunks, size_t *n);
/* Keep @data (taken over) as @t's PT of image @epoch for every later
 * snapshot; the oldest kept chunk goes past REC_KEPT_MAX.  Returns 0 or
 * PS_ERR_NOMEM (then @data is freed). */
#define REC_KEPT_MAX 8
int rec_thr_keep_pt(struct rec_thr *t, uint32_t epoch, uint8_t *data,
		    size_t len);
/* The program @pid runs (/proc/PID/exe), malloc'ed, or NULL. */
char *rec_exe_path(pid_t pid);
/* The name of thread @tid of @pid (/proc/PID/task/TID/comm) into @buf
 * ("" when it is gone). */
void rec_read_comm(pid_t pid, pid_t tid, char *buf, size_t size);

/* Marks: copies @text. */
int rec_mark_add(struct rec_session *s, enum rec_mark_kind kind,
		 const struct rec_thr *t, uint64_t time_ns, uint64_t address,
		 uint64_t value, const char *text);

/* Set up an empty session for @o, reporting into @res (cleared), with
 * backend @be.  rec_session_fini frees what the core holds; the caller
 * ends the backend, trigger kinds and extensions first. */
void rec_session_init(struct rec_session *s, const struct rec_options *o,
		      const struct rec_backend *be, struct rec_result *res);
void rec_session_fini(struct rec_session *s);
/* The session's clock starts (start_ns): after its parts are open. */
void rec_session_start(struct rec_session *s);

/* A part of the recorder that is not a backend and that the core tells of
 * new processes and asks for snapshot sections (kernel events). */
struct rec_extension {
	/* Follow process @pid (rec_proc_add). */
	void (*proc_added)(struct rec_session *s, pid_t pid);
	/* Sections for a snapshot: *secs (malloc'ed array of *n, each bytes
	 * malloc'ed), freed with sections_free. */
	int (*sections)(struct rec_session *s, struct rec_sidecar **secs,
			size_t *n);
	void (*sections_free)(struct rec_sidecar *secs, size_t n);
	/* Events lost so far (a notice at each snapshot when not 0). */
	uint64_t (*lost)(const struct rec_session *s);
};

/* A timed function of a process, for a backend that times calls itself
 * (qemu: in its plugin) on behalf of a trigger kind. */
struct rec_timed_fn {
	uint64_t addr;
	uint64_t ns;  /* threshold */
	unsigned idx; /* spec, for rec_triggers_slow_call */
};

/* A kind of trigger (-t SPEC): breakpoint (NAME, FILE:LINE, addr:) and
 * latency (NAME>DURATION) in src/record/triggers/.  The recorder
 * registers the kinds; the core hands each spec to the first kind that
 * claims it and dispatches the rec_triggers_* calls below to every kind
 * with specs.  Every op but claims and init may be NULL. */
struct rec_trigger_kind {
	const char *name;
	/* 1 if @spec is of this kind. */
	int (*claims)(const char *spec);
	/* Take specs @idx[0..n) of s->o->triggers (n >= 1); the kind's
	 * per-thread state goes in t->trig[@slot].  Returns 0 or PS_ERR_*
	 * (a bad spec: one sentence). */
	int (*init)(struct rec_session *s, const unsigned *idx, size_t n,
		    unsigned slot, void **state);
	void (*fini)(struct rec_session *s, void *state);
	/* Find the specs in @p; @final: still unknown is an error. */
	int (*resolve)(struct rec_session *s, void *state, struct rec_proc *p,
		       int final);
	/* 1 if a spec still waits for a module to be mapped. */
	int (*pending)(const struct rec_session *s, const void *state);
	/* @p's code was replaced (exec): resolve again from scratch. */
	void (*forget)(struct rec_session *s, void *state, struct rec_proc *p);
	/* A thread to watch, and one that no longer runs traced. */
	int (*arm)(struct rec_session *s, void *state, struct rec_thr *t);
	void (*disarm)(struct rec_session *s, void *state, struct rec_thr *t);
	/* Hits of @t since the last look: returns how many, or PS_ERR_*. */
	int (*check)(struct rec_session *s, void *state, struct rec_thr *t);
	/* Emulated backends: @t's step from trace time @v0 took it to
	 * @next_ip at @v1.  Returns 1 to stop, 0, or PS_ERR_*. */
	int (*step)(struct rec_session *s, void *state, struct rec_thr *t,
		    uint64_t next_ip, uint64_t v0, uint64_t v1);
	/* The functions of @pid a backend should time itself. */
	size_t (*timed)(const struct rec_session *s, const void *state,
			pid_t pid, struct rec_timed_fn *out, size_t max);
	/* A timed call of spec @idx ran from @start to @end: too slow. */
	int (*slow_call)(struct rec_session *s, void *state, struct rec_thr *t,
			 unsigned idx, uint64_t addr, uint64_t start,
			 uint64_t end);
	/* 1 if the kind needs the eBPF sidecar on this session's backend. */
	int (*wants_sidecar)(const struct rec_session *s, const void *state);
};

/* triggers.c: the trigger registry. */
/* Hand each of s->o->triggers to the first of @kinds that claims it.
 * Returns 0, PS_ERR_LIMIT (more specs than debug registers), or what a
 * kind's init returned. */
int rec_triggers_init(struct rec_session *s,
		      const struct rec_trigger_kind *const *kinds,
		      size_t nkinds);
void rec_triggers_fini(struct rec_session *s);
/* 1 if any -t spec was given. */
int rec_triggers_wanted(const struct rec_session *s);
/* Resolve pending specs against @p; @final: report a spec that is still
 * unknown as an error.  Arms @p's threads for what was found. */
int rec_triggers_resolve(struct rec_session *s, struct rec_proc *p, int final);
/* A new thread to watch. */
int rec_triggers_arm(struct rec_session *s, struct rec_thr *t);
/* @t no longer runs traced (exit, exec, detach): every kind lets go of
 * it. */
void rec_triggers_disarm(struct rec_session *s, struct rec_thr *t);
/* @p's code was replaced (exec): forget what was resolved there. */
void rec_triggers_forget(struct rec_session *s, struct rec_proc *p);
/* Hits of @t since the last check become marks at @t's trace time.
 * Returns the number of hits or PS_ERR_*. */
int rec_triggers_check(struct rec_session *s, struct rec_thr *t);
/* Emulated backends, after each step (see rec_trigger_kind.step). */
int rec_triggers_step(struct rec_session *s, struct rec_thr *t,
		      uint64_t next_ip, uint64_t v0, uint64_t v1);
/* The functions of @pid a backend times itself, at most @max. */
size_t rec_triggers_timed(const struct rec_session *s, pid_t pid,
			  struct rec_timed_fn *out, size_t max);
/* A timed call of spec @idx by @t at @addr ran from @start to @end and was
 * too slow: mark, then snapshot or stop.  Returns 1 to stop, 0, or
 * PS_ERR_*. */
int rec_triggers_slow_call(struct rec_session *s, struct rec_thr *t,
			   unsigned idx, uint64_t addr, uint64_t start,
			   uint64_t end);
/* 1 if some trigger kind needs the eBPF sidecar. */
int rec_triggers_want_sidecar(const struct rec_session *s);
/* A kind's final look at @p found nothing for spec @idx: @err, whose
 * detail says why, and @near_miss if close names were offered.  Returns
 * 1 if that is no error (children are followed and another process may
 * have it: the core notes it, p->absent, and tells the sentence at the
 * end if no process ever had it), 0 if @err stands. */
int rec_trigger_absent(struct rec_session *s, struct rec_proc *p, unsigned idx,
		       int err, int near_miss);
/* At the command's end: PS_ERR_NOT_FOUND with the first sentence of a
 * spec that no traced process ever had, or 0. */
int rec_triggers_unmatched(const struct rec_session *s);
/* Record a trigger address of @p (the breakpoint kind).  Returns 0
 * (already there, or added), PS_ERR_LIMIT, PS_ERR_NOMEM. */
int rec_taddr_add(struct rec_proc *p, uint64_t addr, const char *symbol);
/* The trigger address @addr of @p, or NULL. */
const struct rec_taddr *rec_taddr_find(const struct rec_proc *p, uint64_t addr);

/* A trigger hit by @t at @ip at trace time @now: a mark (text: @symbol,
 * and @reason if not empty), then a snapshot (--multi-snapshot) or the
 * end of recording (s->stop_reason).  Returns 1 if recording should stop,
 * 0 to go on, or PS_ERR_*. */
int rec_trigger_hit(struct rec_session *s, struct rec_thr *t, uint64_t ip,
		    uint64_t now, uint64_t arg, const char *symbol,
		    const char *reason);

/* A trigger of any kind fired and its mark is made: count the hit, then
 * take a snapshot for @reason (--multi-snapshot) or end recording with
 * it (s->stop_reason).  Returns 1 if recording should stop, 0 to go on,
 * or PS_ERR_*. */
int rec_trigger_snapshot(struct rec_session *s, const char *reason);
/* Thread @t stopped at @ip for signal @sig that ends its process (@addr:
 * the fault address, if @has_addr) at trace time @now: its mark, the
 * signal kept for @t (t->inject), then what it does to the recording.
 * The command's own crash ends it and is its result; another process of
 * the tree is a trigger hit: a snapshot and, with --multi-snapshot below
 * its limit, recording goes on (returns 1: the engine lets that process
 * die of its signal now).  Returns 0, 1, or PS_ERR_*. */
int rec_crash_mark(struct rec_session *s, struct rec_thr *t, uint64_t now,
		   uint64_t ip, int sig, uint64_t addr, int has_addr);

/* command.c: @name as execve would find it (a PATH search when it has no
 * '/') into @out.  Returns 0, PS_ERR_NOT_FOUND or PS_ERR_PERM, with the
 * sentence the user sees. */
int rec_find_command(const char *name, char *out, size_t size);

/* snapshot.c: collect every thread's PT and hand the snapshot over. */
int rec_snapshot_take(struct rec_session *s, const char *reason);
/* The snapshot that ends a session, for s->stop_reason (or "exit"):
 * skipped when --multi-snapshot already saved what there is to see. */
int rec_snapshot_final(struct rec_session *s);

/* vclock.c: one virtual timeline for every thread the step backend steps
 * (prefix vclk_; see docs/emulated-backend.md, "Time across threads").
 * Each thread's clock is its emulator clock (0.5 ns per step plus system
 * call time); this keeps the clocks of different threads comparable:
 *  - a new thread starts at its creator's clock at clone;
 *  - a thread whose clock runs more than VCLK_WINDOW_NS ahead of the
 *    slowest thread that is stepping user code is parked (not resumed)
 *    until the others catch up or block;
 *  - a system call lasts the real time the recorder spent waiting while
 *    no thread was being stepped (the tracer's slowness and its own work
 *    removed), or its full real time if it ended by its own timeout (a
 *    sleep), minus the cost of the step itself; and it ends no earlier
 *    than the clock of any thread that stepped while it was in the kernel
 *    (one of them may have woken it). */
/* How far (virtual ns) a thread may run ahead of the slowest stepping
 * thread: 2,000 instructions.  Cross-thread order is exact to this. */
#define VCLK_WINDOW_NS 1000
/* Before parked threads go on because every other thread is in a system
 * call, the recorder waits this long (real ns) for a short call to come
 * back, so that it does not end after the parked threads' clocks. */
#define VCLK_GRACE_NS 100000
/* One step in this many has its real cost measured (VCLK step_min). */
#define VCLK_SAMPLE_EVERY 64

void vclk_init(struct vclk *v);

/* The recorder waited @real_ns in waitpid: if no thread was stepping user
 * code meanwhile, only the kernel ran (system calls at native speed). */
static inline void vclk_waited(struct vclk *v, uint64_t real_ns)
{
	v->k_ns += real_ns;
}

/* @t is resumed at real time @real; @in_sys: its next step runs a system
 * call.  A thread resumed from an event stop inside a system call (clone,
 * a signal) keeps its call's start. */
void vclk_resume(struct rec_session *s, struct rec_thr *t, uint64_t real,
		 int in_sys);

/* @t no longer steps user code: it exits, execs, crashed or is detached. */
void vclk_leave(struct rec_session *s, struct rec_thr *t);

/* @t's step came back: it is now the newest step. */
static inline void vclk_stepped(struct vclk *v, struct rec_thr *t)
{
	t->last_seq = ++v->seq;
}

/* A plain step of @t took @real_cost ns of real time: keep the least. */
void vclk_sample(struct vclk *v, uint64_t real_cost);

/* 1 if system call @nr, returning @ret (rax), ended by its own timeout
 * (nanosleep, a futex or poll that timed out): its real time is real. */
int vclk_timed_out(uint64_t nr, int64_t ret);

/* @t's system call returned, seen at real time @real; @before: @t's clock
 * before the step; @timed: see vclk_timed_out().  Sets and returns
 * t->sys_ns, the trace time the call took, and clears t->in_sys. */
uint64_t vclk_syscall_end(struct rec_session *s, struct rec_thr *t,
			  uint64_t real, uint64_t before, int timed);

/* 1 if @t, whose clock is @now, runs too far ahead and must be parked.
 * Cheap unless @t is ahead of the cached floor. */
int vclk_ahead(struct rec_session *s, struct rec_thr *t, uint64_t now);

/* 1 if a thread whose clock is @now is within the window of the floor
 * last computed (a parked thread may go on). */
int vclk_may_run(const struct rec_session *s, uint64_t now);

/* Hold @t (stopped by the caller): it counts as stepping user code, at
 * its clock, until the caller resumes it. */
void vclk_park(struct rec_session *s, struct rec_thr *t);

/* Recompute the floor: the least clock of threads stepping user code
 * (parked ones included); UINT64_MAX if there are none. */
uint64_t vclk_floor(struct rec_session *s);

#endif /* PTSCOPE_RECORD_CORE_CORE_H */
