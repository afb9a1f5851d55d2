/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ptscope QEMU plugin's shared state (prefix qpl_).  plugin.c turns
 * executed blocks into PT (one emu_thread per guest thread, see
 * src/record/emulate/emulate.h); world.c stops and resumes the guest, talks to
 * ptscope (src/record/qemu/qemu_proto.h) and keeps threads on one timeline.
 *
 * Threads: every guest thread runs on a host thread of its own (QEMU's
 * user mode), so per-thread state is thread-local and its PT ring is only
 * ever written by that thread.  Anything that reads another thread's ring
 * first stops the world (qpl_world_stop). */
#ifndef PTSCOPE_QEMU_PLUGIN_H
#define PTSCOPE_QEMU_PLUGIN_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "qemu/qemu-plugin-api.h"
#include "src/record/qemu/qemu_proto.h"
#include "src/record/emulate/args.h"
#include "src/record/emulate/emulate.h"
#include "src/record/emulate/insn.h"

/* One translated block, as the exec callback needs it. */
struct qpl_block {
	uint64_t start;
	uint32_t n;	      /* instructions */
	uint32_t watch_gen;   /* qpl.watch_gen when watch_at was computed */
	int32_t watch_at;     /* index of a watched instruction, or -1 */
	int32_t watch_which;  /* its index in qpl.watch */
	int32_t timed_which;  /* starts a timed function: its index, or -1 */
	struct emu_insn last; /* the final instruction, classified */
	uint64_t ips[];	      /* address of each instruction */
};

struct qpl_thread {
	pid_t tid;
	struct emu_thread *emu;	      /* NULL until tracing reaches it */
	const struct qpl_block *prev; /* last instruction still pending */
	uint64_t *env;		      /* guest CPUX86State, or NULL */
	uint64_t birth;		      /* trace clock at its start */
	uint64_t pending_ns; /* trace time of the system call just made */
	/* The system call in progress (world.c). */
	int64_t sys_nr;
	uint64_t sys_real0;   /* CLOCK_MONOTONIC at entry */
	uint64_t sys_idle0;   /* qpl.idle_ns then */
	uint64_t sys_seq0;    /* qpl.pub_seq then */
	uint64_t prev_seq0;   /* sys_seq0 of its previous system call */
	uint64_t sys_clock0;  /* its trace clock then */
	uint64_t pub_clock;   /* clock published at its latest syscall */
	uint64_t pub_seq;     /* qpl.pub_seq of that publication */
	uint64_t exit_status; /* argument of exit/exit_group; clone flags */
	uint64_t sys_prot;    /* mmap/mprotect protection */
	/* Timed calls it is inside (latency triggers), innermost last. */
	struct qpl_call {
		uint64_t ret, rsp, start;
		uint32_t which;
	} calls[64];
	int ncalls;
	int in_sys;
	int alive;
	int answer;		 /* ptscope answered its notification */
	int waiting;		 /* in qpl_notify_wait, counted quiet */
	struct qpl_thread *next; /* qpl.threads list, under qpl.lock */
};

#define QPL_MAX_WATCH 64
#define QPL_NSIG 65

struct qpl {
	qemu_plugin_id_t id;
	int fd;		    /* socket to ptscope */
	pid_t pid;	    /* this process (a fork child's own) */
	int follow;	    /* ptscope follows fork children and exec (WATCH) */
	char sock[108];	    /* ptscope's socket for new processes ("": none) */
	char exe[PATH_MAX]; /* the guest program QEMU loaded */
	char name[16];	    /* the process's name (comm) */
	uint64_t ring;	    /* PT ring size per thread */
	int truth_fd;	    /* -1: none */
	uint64_t truth_ino; /* its inode, to see it closed */
	char truth_path[PATH_MAX]; /* to open it again */
	uint64_t fd_ino;	   /* the socket's inode, to see it replaced */
	volatile unsigned fd_gen;  /* bumped at each new socket */
	uint64_t argc; /* the guest's, to validate register access */
	int regs_ok;   /* guest registers readable through env */
	int xmm_ok;    /* and its xmm registers (--args) */
	int regs_checked;
	uint64_t guest_base;
	struct emu_process *proc;
	struct emu_insn_decoder *dec;
	FILE *truth;
	uint64_t start_ns;

	/* Set by ptscope's WATCH. */
	uint64_t entry;	   /* start tracing here (0: started) */
	int want_maps;	   /* report code mappings */
	int want_syscalls; /* report system calls (kernel events) */
	uint64_t watch[QPL_MAX_WATCH];
	uint32_t nwatch;
	struct qp_timed timed[QPL_MAX_WATCH];
	uint32_t ntimed;
	uint32_t watch_gen; /* bumped by every WATCH */

	volatile int tracing;	/* PT is being produced */
	int untraced;		/* ptscope let go: never trace again */
	int reset_done;		/* callbacks removed after untrace */
	volatile int attention; /* the world is stopping: check at blocks */

	/* Signal handlers the guest installed (rt_sigaction), to recognise
	 * a signal delivery. */
	uint64_t handler[QPL_NSIG];
	uint64_t restorer[QPL_NSIG];
	uint64_t handler_lo, handler_hi; /* range of handler[], for speed */

	uint64_t clone_clock; /* creator's clock at the latest clone */

	/* World state, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t send_lock;
	struct qpl_thread *threads;
	int nlive;	     /* threads alive */
	int nquiet;	     /* of those: parked, waiting or in a syscall */
	int nrunning;	     /* alive and running guest code */
	int stopped;	     /* the world is stopped (DUMP until RESUME) */
	uint64_t resume_gen; /* bumped by every RESUME */
	uint64_t idle_ns;    /* real time with no thread running guest code */
	uint64_t idle_since; /* when nrunning last dropped to 0 */
	uint64_t pub_seq;
};

extern struct qpl qpl;

uint64_t qpl_clock_ns(void);

/* plugin.c */
/* The calling vCPU thread's state (NULL before its first block). */
extern __thread struct qpl_thread *qpl_self
    __attribute__((tls_model("initial-exec")));
/* Guest CPU state (QEMU 7.2 CPUX86State): regs[16] then eip; cr[2]
 * holds a fault's address.  Read only when qpl.regs_ok. */
enum { R_RDX = 2, R_RSP = 4, R_RDI = 7, R_EIP = 16, R_CR2 = 55 };
int qpl_read_u64(uint64_t addr, uint64_t *v);
/* QEMU translated a block: note its instructions, ask for its callback. */
void qpl_on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
/* Read guest memory (emu_config.read_mem). */
ssize_t qpl_read_guest(void *ctx, uint64_t addr, void *buf, size_t len);

/* The first guest instruction (@forked 0), or a fork child's first
 * moment (@forked 1, its clock starts at @clock): tell ptscope and wait
 * for its WATCH. */
void qpl_hello(struct qpl_thread *q, int forked, pid_t ppid, uint64_t clock);

/* tree.c: processes the guest creates. */
/* Connect to ptscope's socket qpl.sock.  Returns the fd or -1. */
int qpl_connect(void);
/* After a system call that may close or replace file descriptors: if
 * the guest closed our socket (a child closing every fd before exec, as
 * Python's subprocess does), open a new one and tell ptscope. */
void qpl_check_fd(int64_t nr);
/* @fd moved to a high number, out of the guest's way. */
int qpl_high_fd(int fd);
/* Keep the plugin's locks whole across the guest's fork. */
void qpl_tree_init(void);
/* This process is a new fork child of the traced one (its forking thread
 * @q is the only one left): a channel, a PT process and a control
 * thread of its own, then HELLO. */
void qpl_forked(struct qpl_thread *q, uint64_t clock);
/* The ground-truth stream on the file @fd names, opened again to append
 * (several processes share the file; each writes whole lines). */
FILE *qpl_truth_open(int fd);

/* exec.c: the guest calls execve/execveat (@nr with its arguments):
 * an x86-64 program re-enters QEMU with this plugin; what QEMU cannot
 * run goes on natively, untraced, and ptscope is told either way. */
void qpl_exec(struct qpl_thread *q, int64_t nr, uint64_t a1, uint64_t a2,
	      uint64_t a3, uint64_t a4, uint64_t a5);
/* The execve returned: it failed, the process goes on as it was. */
void qpl_exec_failed(struct qpl_thread *q);

/* syscalls.c: QEMU's system call and exit callbacks. */
void qpl_on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
		    uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		    uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
void qpl_on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
			int64_t ret);
void qpl_on_qemu_exit(qemu_plugin_id_t id, void *p);

/* world.c */
int qpl_world_init(void);
/* A new guest thread registers (its first block). */
void qpl_thread_register(struct qpl_thread *q);
/* Park here while the world is stopped. */
void qpl_world_check(struct qpl_thread *q);
/* Send @type+@payload and wait for ptscope's RESUME. */
void qpl_notify_wait(struct qpl_thread *q, uint32_t type, const void *payload,
		     uint32_t len);
/* Wait up to @seconds for ptscope's RESUME of @q (q->answer). */
void qpl_wait_answer(struct qpl_thread *q, int seconds);
/* System call entry and return bookkeeping (quiet counts, timeline).
 * qpl_syscall_leave returns the trace time the call took. */
void qpl_syscall_enter(struct qpl_thread *q, int64_t nr);
uint64_t qpl_syscall_leave(struct qpl_thread *q, int64_t ret);
/* The process is dying of a signal on @self_thread's host thread (outside
 * our callbacks): stop the others as far as they can be, for the last
 * dump.  The world is never resumed. */
void qpl_world_stop_for_death(struct qpl_thread *self_thread, int sig);
/* The thread exits (exit syscall). */
void qpl_thread_exit(struct qpl_thread *q);
/* Send a message (whole, under send_lock).  Returns 0 or -1. */
int qpl_send(uint32_t type, const void *a, uint32_t alen, const void *b,
	     uint32_t blen);
/* Every thread's PT as DUMP_DATA; the caller has stopped the world or
 * QEMU is exiting. */
int qpl_send_dump(void);
/* A sentence for ptscope (QP_FAIL) and stderr; tracing stops. */
void qpl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* PTSCOPE_QEMU_PLUGIN_H */
