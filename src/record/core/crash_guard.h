/* If ptscope itself crashes while it traces (a fault, an abort), the
 * kernel would detach the target's threads with the single-step trap
 * flag still set, and the target would die of SIGTRAP.  The crash guard
 * (prefix cg_) remembers every thread ptscope traces and, on SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE or SIGABRT, detaches each one properly
 * (PTRACE_DETACH clears the trap flag) before ptscope dies of the signal
 * as it would have.  SIGKILL cannot be caught: docs/safety.md.
 */
#ifndef PTSCOPE_RECORD_CRASH_GUARD_H
#define PTSCOPE_RECORD_CRASH_GUARD_H

#include <sys/types.h>

/* Install the handlers (once per recording; cg_uninstall restores the
 * ones before, e.g. AddressSanitizer's, which still run afterwards). */
void cg_install(void);
void cg_uninstall(void);

/* A thread ptscope now traces (seized, spawned or cloned).  Threads that
 * are gone or detached need no removal: detaching them fails harmlessly. */
void cg_track(pid_t tid);

/* Detach every tracked thread now (async-signal-safe); used by the
 * handlers, and by tests. */
void cg_detach_all(void);

#endif
