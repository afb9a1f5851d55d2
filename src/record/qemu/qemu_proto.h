/* SPDX-License-Identifier: MIT */
/* The wire protocol between ptscope (src/record/qemu/qemu_engine.c) and its
 * QEMU plugin (qemu/), over one stream socket per guest process: the
 * command's QEMU inherits its end of a socketpair (fd=N); every other
 * process (a fork child, a program started by exec under a new QEMU)
 * connects to ptscope's listening unix socket (sock=NAME, abstract when
 * it starts with '@') and sends HELLO.  Every message is a header {u32 type,
 * u32 length} followed by
 * @length bytes of payload, little-endian host structs (both ends run on
 * the same machine, built from this header).
 *
 * The plugin only reports and waits; ptscope decides.  A vCPU thread that
 * sends HELLO, MAPS, ENTRY or HIT waits for ptscope's RESUME before it
 * runs on.  DUMP stops the whole guest (every thread parked at a block
 * boundary or inside a system call) and answers with DUMP_DATA; the guest
 * stays stopped until RESUME.
 */
#ifndef PTSCOPE_RECORD_QEMU_PROTO_H
#define PTSCOPE_RECORD_QEMU_PROTO_H

#include <stdint.h>

/* Bumped on any change below; the plugin refuses another version. */
#define QP_VERSION 2

enum qp_type {
	/* plugin → ptscope */
	QP_HELLO = 1,	  /* struct qp_hello + nranges × struct qp_range */
	QP_MAPS = 2,	  /* struct qp_tid: code was mapped (mmap/mprotect) */
	QP_ENTRY = 3,	  /* struct qp_tid: the watched entry point ran */
	QP_HIT = 4,	  /* struct qp_hit */
	QP_DUMP_DATA = 5, /* u32 n, then n × (struct qp_thread + PT) */
	QP_END = 6,	  /* struct qp_end, then DUMP_DATA follows */
	QP_FAIL = 7,	  /* a sentence: the plugin cannot trace */
	QP_EXEC = 8,	  /* struct qp_exec + the program's path */
	QP_SYSCALL = 9,	  /* struct qp_syscall (QP_WATCH_SYSCALLS): no reply */
	QP_THREAD = 10, /* struct qp_tid: a thread began (QP_WATCH_SYSCALLS) */
	QP_SLOW = 11,	/* struct qp_slow: a timed call ran too long */
	QP_EXEC_FAIL = 12, /* struct qp_tid: the exec failed: no reply */
	/* ptscope → plugin */
	QP_WATCH = 16,	/* struct qp_watch + n × u64 trigger addresses */
	QP_DUMP = 17,	/* no payload */
	QP_RESUME = 18, /* struct qp_resume */
	QP_ARGS = 19,	/* n × struct emu_fn (src/record/emulate/args.h):
			 * the calls whose arguments to record (--args) */
};

struct qp_header {
	uint32_t type;
	uint32_t len;
};

/* Address ranges of QEMU's own objects (the emulator, its libraries,
 * this plugin): mappings there are not the guest's. */
struct qp_range {
	uint64_t start, end;
};

/* Followed by nranges × struct qp_range, then the guest program's path
 * (pathlen bytes, no NUL). */
struct qp_hello {
	uint32_t version;    /* QP_VERSION */
	uint32_t qemu_api;   /* the plugin API version QEMU offers */
	uint64_t guest_base; /* guest address + guest_base = host address */
	uint32_t regs_ok;    /* bit 0: guest registers readable (signals,
			      * rdi); bit 1: its xmm registers too (--args) */
	uint32_t nranges;
	uint32_t pid, ppid;
	uint64_t clock;	 /* the trace clock it starts at (fork, exec) */
	uint32_t forked; /* 1: a fork child, tracing from the fork on */
	uint32_t pathlen;
};

enum qp_exec_kind {
	QP_EXEC_QEMU = 0,   /* it runs again under a new QEMU and plugin */
	QP_EXEC_NATIVE = 1, /* it cannot be traced: the text says why */
	QP_EXEC_STOP = 2    /* children are not followed (--no-follow) */
};

/* execve is about to replace the process: ptscope takes its PT first
 * (DUMP) and answers.  Followed by a sentence (QP_EXEC_NATIVE) or the
 * program's path. */
struct qp_exec {
	uint32_t tid;
	uint32_t kind; /* enum qp_exec_kind */
};

struct qp_tid {
	uint32_t tid;
	uint32_t pad;
};

struct qp_hit {
	uint32_t tid;
	uint32_t index; /* into the last WATCH's addresses */
	uint64_t ip;
	uint64_t rdi; /* first argument (ptscope_trigger's reason) */
	uint64_t now; /* the thread's trace clock at the hit, ns */
};

enum qp_end_kind { QP_END_EXIT = 0, QP_END_CRASH = 1 };

struct qp_end {
	uint32_t kind;	 /* enum qp_end_kind */
	uint32_t tid;	 /* the thread that ended the process */
	uint64_t status; /* exit status (QP_END_EXIT) */
	uint64_t ip;	 /* crash: the faulting instruction */
	uint64_t addr;	 /* crash: the fault address, if known */
	uint64_t now;
};

struct qp_thread {
	uint32_t tid;
	uint32_t alive; /* 0: the thread has exited */
	uint64_t now;	/* its trace clock, ns */
	uint64_t insns; /* instructions it ran */
	uint64_t birth; /* its trace clock when it started, ns */
	uint64_t len;	/* PT bytes that follow (0: none yet) */
};

/* A guest system call, for placing kernel events on the trace clock. */
struct qp_syscall {
	uint32_t tid;
	uint32_t pad;
	int64_t nr;
	uint64_t v0, v1; /* trace clock at entry and return */
	uint64_t r0, r1; /* CLOCK_MONOTONIC around it */
};

/* A call of a timed function (latency trigger) that ran longer than its
 * threshold; the thread waits for RESUME. */
struct qp_slow {
	uint32_t tid;
	uint32_t index;	     /* into the last WATCH's timed functions */
	uint64_t addr;	     /* the function */
	uint64_t start, end; /* trace clock at its entry and return */
};

/* A timed function (latency trigger): follows the trigger addresses. */
struct qp_timed {
	uint64_t addr;
	uint64_t ns; /* threshold */
};

/* qp_watch.flags */
#define QP_WATCH_MAPS 1	    /* report code mappings (QP_MAPS) */
#define QP_WATCH_SYSCALLS 2 /* report every system call (QP_SYSCALL) */
#define QP_WATCH_FOLLOW 4   /* follow fork children and exec */

/* Trace everything at @entry on (0: from the first instruction, or
 * tracing is already on); report what @flags asks for; stop at each of
 * the @n addresses that follow (u64 each); time each call of the
 * @ntimed functions after them (struct qp_timed). */
struct qp_watch {
	uint64_t entry;
	uint32_t flags;
	uint32_t n;
	uint32_t ntimed;
	uint32_t pad;
};

enum qp_resume_mode {
	QP_GO = 0,     /* keep tracing */
	QP_UNTRACE = 1 /* stop tracing; the guest runs on at QEMU's speed */
};

/* Ends a stopped world (after DUMP) and answers thread @tid's
 * notification (0: none; QP_UNTRACE answers every thread). */
struct qp_resume {
	uint32_t mode;
	uint32_t tid;
};

#endif /* PTSCOPE_RECORD_QEMU_PROTO_H */
