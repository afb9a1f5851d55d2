/* SPDX-License-Identifier: MIT */
/* The qemu backend's private parts (qemu_engine.c: the conversation with
 * the plugin and the run; qemu_launch.c: finding QEMU, the plugin and the
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

/* A message from the plugin, queued while a dump is awaited. */
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

/* The backend's state (rec_session.bk). */
struct qemu_bk {
	int fd; /* socket to the plugin */
	pid_t pid;
	struct rec_proc *proc;
	char exe[PATH_MAX];    /* the guest program */
	char version[64];      /* "7.2.22" */
	char backend[96];      /* metadata: "qemu (QEMU 7.2.22)" */
	struct qp_range *host; /* QEMU's own objects */
	uint32_t nhost;
	uint64_t entry;	    /* not yet reached; 0: tracing */
	struct qmsg *queue; /* read while waiting for DUMP_DATA */
	struct qmsg **qtail;
	int have_dump;
	struct qp_end end;
	int ended;
	char fail[512];
	/* The timed functions (latency triggers) of the last WATCH. */
	struct rec_timed_fn timed[REC_MAX_TRIGGERS];
	size_t ntimed;
};

/* qemu_launch.c */
/* The qemu-x86_64 to run (PTSCOPE_QEMU or PATH) into @buf.  Returns 0,
 * or PS_ERR_NOT_FOUND with the sentence the user sees. */
int qemu_find(char *buf, size_t size);
/* The plugin's path into @buf.  Returns 0 or PS_ERR_NOT_FOUND (detail
 * says where it looked and what to do). */
int qemu_plugin_path(char *buf, size_t size);
/* @name as execve would find it (PATH search) into @out.  Returns 0,
 * PS_ERR_NOT_FOUND or PS_ERR_PERM, with the sentence the user sees. */
int qemu_find_program(const char *name, char *out, size_t size);
/* "7.2.22" from `@qemu --version`, or "unknown". */
void qemu_version(const char *qemu, char *buf, size_t size);
/* Start @qemu with the plugin on @argv; fills q->fd, q->pid.  Returns 0
 * or PS_ERR_*. */
int qemu_spawn(struct rec_session *s, struct qemu_bk *q, const char *qemu,
	       const char *plugin, char *const argv[]);

/* qemu_guest.c */
/* Drop QEMU's own objects from @p's mappings; keep the guest's code. */
void qemu_keep_guest_maps(struct qemu_bk *q, struct rec_proc *p);
/* --args: the guest program's table (*fns malloc'ed); 0, or 1: none. */
int qemu_args(struct rec_session *s, struct qemu_bk *q, int regs_ok,
	      struct emu_fn **fns, size_t *n);
/* The guest program's entry point (0: unknown). */
uint64_t qemu_entry_point(struct qemu_bk *q);

#endif /* PTSCOPE_RECORD_QEMU_ENGINE_H */
