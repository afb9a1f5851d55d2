/* SPDX-License-Identifier: MIT */
/* The ptrace side of recording (prefix trc_): start a command or seize
 * running threads, read a stopped thread's registers, classify wait(2)
 * stops, and know which signals would kill the target.
 *
 * Every thread is attached with PTRACE_SEIZE (so PTRACE_INTERRUPT can stop
 * a thread blocked in a system call, and detaching leaves nothing behind)
 * with PTRACE_O_TRACECLONE (new threads are traced from their first
 * instruction), TRACEEXEC and TRACEEXIT.  Fork and vfork children are not
 * followed: they run untraced.
 */
#ifndef PTSCOPE_RECORD_TRACEE_H
#define PTSCOPE_RECORD_TRACEE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a wait(2) status of a traced thread means. */
enum trc_stop {
	TRC_EXITED, /* the thread is gone: exited (code) */
	TRC_KILLED, /* the thread is gone: killed by a signal (sig) */
	TRC_STEP,   /* a single step (or other SIGTRAP) completed */
	TRC_SIGNAL, /* signal-delivery-stop for sig */
	TRC_CLONE,  /* PTRACE_EVENT_CLONE: a new thread (msg = tid) */
	TRC_FORK,   /* PTRACE_EVENT_FORK/VFORK (not followed) */
	TRC_EXEC,   /* PTRACE_EVENT_EXEC: the program was replaced */
	TRC_EXIT,   /* PTRACE_EVENT_EXIT: the thread is about to exit */
	TRC_EVSTOP, /* PTRACE_EVENT_STOP: seize/interrupt/group stop */
	TRC_OTHER   /* any other ptrace event */
};

/* Classify @status for thread @tid; *sig gets the signal (TRC_SIGNAL,
 * TRC_KILLED, TRC_EVSTOP) or exit code (TRC_EXITED). */
enum trc_stop trc_classify(int status, int *sig);

/* Options for PTRACE_SEIZE; @kill_on_exit adds PTRACE_O_EXITKILL (the
 * target dies with ptscope: for commands ptscope started). */
unsigned long trc_options(int kill_on_exit);

/* Fork and exec @argv (PATH searched) as a seized tracee, and wait until
 * it stops at the new program's first instruction (PTRACE_EVENT_EXEC).
 * Returns 0 with *pid set, or PS_ERR_NOT_FOUND / PS_ERR_PERM (the command
 * cannot be run: detail names it and why), PS_ERR_TARGET, PS_ERR_IO. */
int trc_spawn(char *const argv[], pid_t *pid);

/* Let the freshly exec'ed, stopped @pid run untraced to its program entry
 * point (AT_ENTRY), past the dynamic loader, with a software breakpoint
 * taken out again when hit; it stops there with all its start-up
 * libraries mapped.  Signals meanwhile
 * are delivered.  Returns 0, 1 if the process ended first (*status: its
 * wait status), or PS_ERR_TARGET / PS_ERR_IO. */
int trc_run_to_entry(pid_t pid, int *status);

/* The thread ids of process @pid (from /proc/PID/task), malloc'ed.
 * Returns the count, PS_ERR_NOT_FOUND (no such process), PS_ERR_NOMEM. */
int trc_threads(pid_t pid, pid_t **tids);

/* PTRACE_SEIZE @tid with trc_options(0).  Returns 0, PS_ERR_NOT_FOUND
 * (gone), PS_ERR_PERM (detail says how to allow ptrace), PS_ERR_TARGET. */
int trc_seize(pid_t tid);

/* 0 if process @pid exists and may be traced as far as a signal test can
 * tell; else PS_ERR_NOT_FOUND or PS_ERR_PERM with the sentence that says
 * how to allow tracing. */
int trc_check_access(pid_t pid);

/* The thread group (process) id of thread @tid, or PS_ERR_NOT_FOUND. */
pid_t trc_tgid(pid_t tid);
/* The parent process of @pid (/proc/PID/status PPid), or 0. */
pid_t trc_ppid(pid_t pid);

/* A stopped thread's instruction pointer / an integer register, by its
 * offset in struct user_regs_struct. Returns 0 or PS_ERR_TARGET. */
int trc_reg(pid_t tid, size_t offset, uint64_t *val);
int trc_ip(pid_t tid, uint64_t *ip);

/* Fault address and code of the signal that stopped @tid (0 if unknown). */
int trc_siginfo(pid_t tid, uint64_t *addr, int *code);

/* 1 if delivering @sig to process @pid will end it (its action is the
 * default one and that default terminates: SigCgt and SigIgn bits of
 * /proc/PID/status are both clear), else 0. */
int trc_signal_is_fatal(pid_t pid, int sig);

/* 1 if @sig is pending for thread @tid itself (SigPnd), else 0. */
int trc_signal_pending(pid_t tid, int sig);

/* 1 if @pid has a handler installed for @sig (SigCgt), else 0. */
int trc_signal_is_caught(pid_t pid, int sig);

#endif /* PTSCOPE_RECORD_TRACEE_H */
