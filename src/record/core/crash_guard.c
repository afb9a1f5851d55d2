/* Detach the target cleanly if ptscope crashes (crash_guard.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/record/core/crash_guard.h"

#define CG_MAX 4096 /* threads remembered; later ones are not guarded */

static volatile pid_t tracked[CG_MAX];
static volatile sig_atomic_t ntracked;
static const int guarded[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NGUARDED (sizeof(guarded) / sizeof(guarded[0]))
static struct sigaction before[NGUARDED];
static int installed;

void cg_track(pid_t tid)
{
	for (sig_atomic_t i = 0; i < ntracked; i++)
		if (tracked[i] == tid)
			return;
	if (ntracked < CG_MAX) {
		tracked[ntracked] = tid;
		ntracked = ntracked + 1;
	}
}

/* Is SIGTRAP pending for @tid (thread or process queue)?  Read with
 * plain system calls: this runs in a signal handler. */
static int trap_pending(pid_t tid)
{
	char path[64], buf[2048];
	const char *keys[] = {"SigPnd:", "ShdPnd:"};
	ssize_t n;
	int fd, len = 0;
	pid_t v = tid;
	char digits[16];

	while (v && len < (int)sizeof(digits))
		digits[len++] = (char)('0' + v % 10), v /= 10;
	memcpy(path, "/proc/", 6);
	for (int i = 0; i < len; i++)
		path[6 + i] = digits[len - 1 - i];
	memcpy(path + 6 + len, "/status", 8);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (int k = 0; k < 2; k++) {
		const char *p = strstr(buf, keys[k]);
		unsigned long long mask = 0;

		if (!p)
			continue;
		for (p += strlen(keys[k]); *p == '\t' || *p == ' '; p++)
			;
		for (; *p && *p != '\n'; p++)
			mask = mask << 4 |
			       (unsigned)(*p <= '9' ? *p - '0'
						    : (*p | 32) - 'a' + 10);
		if (mask & (1ull << (SIGTRAP - 1)))
			return 1;
	}
	return 0;
}

/* Detach @tid with its trap flag cleared and no single-step SIGTRAP left
 * to kill it.  A thread that is running (the one being stepped, or one in
 * a system call) is not in a ptrace stop: interrupt it and wait (a
 * little) for the stop; an interrupt that overtook the trap of the step
 * in flight leaves that SIGTRAP queued, so let it arrive and drop it. */
static void detach_one(pid_t tid)
{
	struct timespec ms = {0, 1000000};
	int interrupted = 0;

	for (int tries = 0; tries < 200; tries++) {
		int st;
		pid_t r;

		if (!trap_pending(tid) && ptrace(PTRACE_DETACH, tid, 0, 0) == 0)
			return;
		if (!interrupted) {
			interrupted = 1;
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 &&
			    errno == ESRCH &&
			    waitpid(tid, &st, __WALL | WNOHANG) < 0)
				return; /* gone, or not ours */
		}
		r = waitpid(tid, &st, __WALL | WNOHANG);
		if (r < 0)
			return;
		if (r == 0) {
			/* Stopped with a step trap still queued: let it
			 * arrive (the next stop reports it, and is dropped). */
			if (trap_pending(tid))
				ptrace(PTRACE_CONT, tid, 0, 0);
			nanosleep(&ms, NULL);
			continue;
		}
		if (!WIFSTOPPED(st))
			return; /* it exited */
		if (WSTOPSIG(st) == SIGTRAP && !(st >> 16)) {
			/* the trap of a step: drop it as we let go */
			ptrace(PTRACE_DETACH, tid, 0, 0);
			return;
		}
		if (trap_pending(tid))
			ptrace(PTRACE_CONT, tid, 0, 0); /* take it next */
	}
	ptrace(PTRACE_DETACH, tid, 0, 0);
}

void cg_detach_all(void)
{
	for (sig_atomic_t i = 0; i < ntracked; i++)
		if (tracked[i] > 0)
			detach_one(tracked[i]);
	ntracked = 0;
}

static void on_crash(int sig)
{
	size_t k = 0;

	cg_detach_all();
	while (k < NGUARDED && guarded[k] != sig)
		k++;
	/* Back to what was there before (the default, or a sanitizer's
	 * handler) and let the signal do its work: a fault re-faults on
	 * return, a sent signal is still pending. */
	if (k < NGUARDED)
		sigaction(sig, &before[k], NULL);
	else
		signal(sig, SIG_DFL);
	raise(sig);
}

void cg_install(void)
{
	struct sigaction sa;

	if (installed)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_NODEFER | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NGUARDED; i++)
		sigaction(guarded[i], &sa, &before[i]);
	ntracked = 0;
	installed = 1;
}

void cg_uninstall(void)
{
	if (!installed)
		return;
	for (size_t i = 0; i < NGUARDED; i++)
		sigaction(guarded[i], &before[i], NULL);
	ntracked = 0;
	installed = 0;
}
