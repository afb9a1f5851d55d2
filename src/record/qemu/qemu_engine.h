/* SPDX-License-Identifier: MIT */
/* The qemu backend's private parts (qemu_engine.c: the messages and the
 * run; qemu_chan.c: the sockets, one channel per guest process, read
 * without ever blocking; qemu_tree.c: processes that start, exec, end and
 * whole-tree dumps; qemu_launch.c: finding QEMU, the plugin and the
 * program, and starting them; qemu_guest.c: which mappings are the
 * guest's code, and its entry point). */
#ifndef PTSCOPE_RECORD_QEMU_ENGINE_H
#define PTSCOPE_RECORD_QEMU_ENGINE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/record/qemu/qemu_proto.h"
#include "src/record/core/core.h"
#include "src/record/emulate/args.h"

/* A message from the plugin. */
struct qmsg {
	uint32_t type;
	uint32_t len;
	uint8_t *data; /* owned */
	struct qmsg *next;
};

/* Per thread (rec_thr.bk): its PT as of the latest dump. */
struct qthr_bk {
	uint8_t *pt; /* latest PT copy, owned */
	size_t len;
	uint64_t now, insns;
	uint64_t call_v, call_r; /* end of its last system call: trace, real */
};

/* One plugin's socket: one guest process under one QEMU (an exec starts
 * a new channel for the same process). */
struct qchan {
	int fd;		       /* -1: closed */
	pid_t pid;	       /* its process (SO_PEERCRED, then HELLO) */
	struct rec_proc *proc; /* NULL before HELLO */
	uint8_t *in;	       /* bytes read, not yet a whole message */
	size_t inlen, incap;
	struct qmsg *queue, **qtail;
	int eof;      /* the plugin's end is closed */
	int eof_done; /* ... and that was handled */
	int dumping;  /* DUMP sent, DUMP_DATA not yet read */
	int stopped;  /* its guest is stopped by our DUMP: RESUME owed */
	int untraced; /* told QP_UNTRACE */
	int have_dump;
	struct qp_range *host; /* QEMU's own objects */
	uint32_t nhost;
	char exe[PATH_MAX]; /* the guest program */
	uint64_t entry;	    /* not yet reached; 0: tracing */
	int maps_stale;	    /* re-read the mappings (qemu_maps) */
	struct qp_end end;
	int ended;    /* END read */
	int end_data; /* ... and the DUMP_DATA after it */
	int end_done; /* ... and handled (marks, RESUME) */
	/* An exec announced (QP_EXEC): enum qp_exec_kind + 1, or 0. */
	int exec;
	char exec_text[PATH_MAX + 300];
	pid_t exec_tid;
	/* The timed functions (latency triggers) of the last WATCH. */
	struct rec_timed_fn timed[REC_MAX_TRIGGERS];
	size_t ntimed;
};

/* The backend's state (rec_session.bk). */
struct qemu_bk {
	int lfd;	   /* listening socket for new processes */
	char sock[108];	   /* its name ('@': abstract) */
	struct qchan **ch; /* every channel, oldest first (owned) */
	size_t nch;
	pid_t pid;	     /* the command (its QEMU): ptscope's child */
	char qemu[PATH_MAX]; /* qemu-x86_64 */
	char exe[PATH_MAX];  /* the command's program */
	char version[64];    /* "7.2.22" */
	char backend[96];    /* metadata: "qemu (QEMU 7.2.22)" */
	int reaped;	     /* the command ended: status in wstatus */
	int wstatus;
	int traced_any; /* some HELLO was answered */
	int started;	/* tracing began (the command reached its entry) */
	int stopping;	/* recording stopped: untrace who comes */
	size_t rr;	/* round robin over channels */
};

/* qemu_chan.c */
/* Listen on a fresh abstract unix socket (q->sock).  Returns 0 or
 * PS_ERR_IO. */
int qchan_listen(struct qemu_bk *q);
/* A channel for @fd (taken over), or NULL (out of memory; fd closed). */
struct qchan *qchan_add(struct qemu_bk *q, int fd, pid_t pid);
void qchan_close(struct qchan *c);
void qchan_free(struct qchan *c);
int qchan_send(struct qchan *c, uint32_t type, const void *a, uint32_t alen,
	       const void *b, uint32_t blen);
int qchan_resume(struct qchan *c, int mode, uint32_t tid);
/* Wait up to @ms for input on any channel or a new connection (a signal
 * ends the wait early), and read what there is without blocking.
 * Returns 0 or PS_ERR_*. */
int qchan_pump(struct qemu_bk *q, int ms);
/* The next message of @c, or NULL. */
struct qmsg *qchan_pop(struct qchan *c);
/* Take the first message of @c of type @type out of its queue (the
 * others stay in order), or NULL. */
struct qmsg *qchan_take(struct qchan *c, uint32_t type);
void qmsg_free(struct qmsg *m);
/* The open channel of process @pid with a HELLO, or NULL. */
struct qchan *qchan_of_pid(struct qemu_bk *q, pid_t pid);

/* qemu_engine.c: one message of @c. */
int qtree_handle(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		 struct qmsg *m);

/* qemu_tree.c */
/* Stop every traced process and take its PT (DUMP); waits, answering
 * nothing else, until each answered, ended, or stopped answering (a
 * notice; its trace ends there).  Returns 0 or PS_ERR_*. */
int qtree_dump_all(struct rec_session *s, struct qemu_bk *q);
/* Dump @c alone. */
int qtree_dump_one(struct rec_session *s, struct qemu_bk *q, struct qchan *c);
/* RESUME every stopped guest (@mode); @c's thread @tid is answered. */
void qtree_resume_all(struct qemu_bk *q, int mode, struct qchan *c,
		      uint32_t tid);
/* HELLO on @c: the command, a fork child or an exec.  Returns 0 or
 * PS_ERR_*. */
int qtree_hello(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		const struct qmsg *m);
/* The plugin's end of @c closed. */
int qtree_eof(struct rec_session *s, struct qemu_bk *q, struct qchan *c);
/* END and its last dump arrived on @c: marks, a child's crash as a
 * trigger hit, then the process may go. */
int qtree_ended(struct rec_session *s, struct qemu_bk *q, struct qchan *c);
/* Re-read @c's guest mappings.  Returns 0 or PS_ERR_*. */
int qtree_refresh(struct rec_session *s, struct qchan *c);
/* The thread @tid of @c's process (added when new). */
struct rec_thr *qtree_thread(struct rec_session *s, struct qchan *c, pid_t tid);
/* Tell @c's plugin where to stop (WATCH). */
int qtree_watch(struct rec_session *s, struct qchan *c);
/* DUMP_DATA of @c. */
int qtree_on_dump(struct rec_session *s, struct qchan *c, const struct qmsg *m);

/* qemu_launch.c */
/* The qemu-x86_64 to run (PTSCOPE_QEMU or PATH) into @buf.  Returns 0,
 * or PS_ERR_NOT_FOUND with the sentence the user sees. */
int qemu_find(char *buf, size_t size);
/* The plugin's path into @buf.  Returns 0 or PS_ERR_NOT_FOUND (detail
 * says where it looked and what to do). */
int qemu_plugin_path(char *buf, size_t size);
/* "7.2.22" from `@qemu --version`, or "unknown". */
void qemu_version(const char *qemu, char *buf, size_t size);
/* Start @qemu with the plugin on @argv (#! scripts followed as the
 * kernel does); fills q->pid, q->exe and the command's channel.
 * Returns 0 or PS_ERR_*. */
int qemu_spawn(struct rec_session *s, struct qemu_bk *q, const char *plugin,
	       char *const argv[]);

/* qemu_guest.c */
/* Drop QEMU's own objects from @p's mappings; keep the guest's code. */
void qemu_keep_guest_maps(const struct qchan *c, struct rec_proc *p);
/* --args: the guest program's table (*fns malloc'ed); 0, or 1: none. */
int qemu_args(struct rec_session *s, const struct qchan *c, int regs_ok,
	      struct emu_fn **fns, size_t *n);
/* The guest program's entry point (0: unknown). */
uint64_t qemu_entry_point(const struct qchan *c);

#endif /* PTSCOPE_RECORD_QEMU_ENGINE_H */
