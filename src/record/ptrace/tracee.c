/* SPDX-License-Identifier: MIT */
/* ptrace primitives for the recorder (see tracee.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/crash_guard.h"
#include "src/record/ptrace/tracee.h"

enum trc_stop trc_classify(int status, int *sig)
{
	int event = (unsigned)status >> 16;

	*sig = 0;
	if (WIFEXITED(status)) {
		*sig = WEXITSTATUS(status);
		return TRC_EXITED;
	}
	if (WIFSIGNALED(status)) {
		*sig = WTERMSIG(status);
		return TRC_KILLED;
	}
	*sig = WSTOPSIG(status);
	switch (event) {
	case 0:
		return *sig == SIGTRAP ? TRC_STEP : TRC_SIGNAL;
	case PTRACE_EVENT_CLONE:
		return TRC_CLONE;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		return TRC_FORK;
	case PTRACE_EVENT_EXEC:
		return TRC_EXEC;
	case PTRACE_EVENT_EXIT:
		return TRC_EXIT;
	case PTRACE_EVENT_STOP:
		return TRC_EVSTOP;
	default:
		return TRC_OTHER;
	}
}

unsigned long trc_options(int kill_on_exit)
{
	unsigned long o =
	    PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;

	if (kill_on_exit)
		o |= PTRACE_O_EXITKILL;
	return o;
}

static int perm_detail(pid_t tid)
{
	return ps_err_detail(PS_ERR_PERM,
			     "not allowed to trace process %d: run ptscope as "
			     "root, or as the target's owner with "
			     "kernel.yama.ptrace_scope=0",
			     (int)tid);
}

int trc_check_access(pid_t pid)
{
	if (kill(pid, 0) == 0)
		return 0;
	if (errno == EPERM)
		return perm_detail(pid);
	return ps_err_detail(PS_ERR_NOT_FOUND, "no process with pid %d",
			     (int)pid);
}

/* The value of "Key:" in /proc/@pid/status as text into @buf. */
static int status_field(pid_t pid, const char *key, char *buf, size_t size)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return PS_ERR_NOT_FOUND;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		snprintf(buf, size, "%s", line + klen + 1);
		found = 1;
		break;
	}
	fclose(f);
	return found ? 0 : PS_ERR_NOT_FOUND;
}

/* Who traces @tid already (TracerPid), or 0. */
static long tracer_of(pid_t tid)
{
	char v[32];

	if (status_field(tid, "TracerPid", v, sizeof(v)))
		return 0;
	return strtol(v, NULL, 10);
}

/* Has @tid exited (a zombie, or gone)?  The kernel refuses to trace a
 * zombie with EPERM, which must not read as a permission problem. */
static int exited(pid_t tid)
{
	char v[32];

	if (status_field(tid, "State", v, sizeof(v)))
		return 1;
	return strchr(v, 'Z') || strchr(v, 'X');
}

int trc_seize(pid_t tid)
{
	long tracer;

	if (ptrace(PTRACE_SEIZE, tid, 0, trc_options(0)) == 0) {
		cg_track(tid);
		return 0;
	}
	if (errno == ESRCH)
		return ps_err_detail(PS_ERR_NOT_FOUND, "thread %d is gone",
				     (int)tid);
	if (errno == EPERM && (tracer = tracer_of(tid)) > 0)
		return ps_err_detail(PS_ERR_PERM,
				     "process %d is already traced by process "
				     "%ld (a debugger?); detach it first",
				     (int)tid, tracer);
	if (errno == EPERM && exited(tid))
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "process %d has exited (a zombie "
				     "waiting for its parent): nothing is "
				     "left to trace",
				     (int)tid);
	if (errno == EPERM)
		return perm_detail(tid);
	return ps_err_detail(PS_ERR_TARGET, "cannot trace thread %d: %s",
			     (int)tid, strerror(errno));
}

/* The child side of trc_spawn: wait until the parent has seized us, then
 * exec; report an exec failure through @errfd. Never returns. */
static void spawn_child(char *const argv[], int gofd, int errfd)
{
	char c;
	int e;

	while (read(gofd, &c, 1) < 0 && errno == EINTR)
		;
	execvp(argv[0], argv);
	e = errno;
	if (write(errfd, &e, sizeof(e)) != sizeof(e))
		_exit(126);
	_exit(127);
}

static int spawn_failed(char *const argv[], int e)
{
	if (e == ENOENT)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "cannot run '%s': no such file or "
				     "command in PATH",
				     argv[0]);
	if (e == EACCES || e == EPERM)
		return ps_err_detail(PS_ERR_PERM,
				     "cannot run '%s': permission denied "
				     "(is it executable?)",
				     argv[0]);
	return ps_err_detail(PS_ERR_TARGET, "cannot run '%s': %s", argv[0],
			     strerror(e));
}

int trc_spawn(char *const argv[], pid_t *out)
{
	int go[2], ef[2], st, sig, e = 0;
	pid_t pid;

	if (!argv || !argv[0] || !out)
		return ps_err_detail(PS_ERR_INVAL, "no command to run");
	if (pipe2(go, O_CLOEXEC))
		return ps_err_detail(PS_ERR_IO, "pipe: %s", strerror(errno));
	if (pipe2(ef, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return ps_err_detail(PS_ERR_IO, "pipe: %s", strerror(errno));
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(go[0]);
		close(go[1]);
		close(ef[0]);
		close(ef[1]);
		return ps_err_detail(PS_ERR_IO, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(go[1]);
		close(ef[0]);
		spawn_child(argv, go[0], ef[1]);
	}
	close(go[0]);
	close(ef[1]);
	if (ptrace(PTRACE_SEIZE, pid, 0, trc_options(1))) {
		e = errno;
		kill(pid, SIGKILL);
		close(go[1]);
		close(ef[0]);
		waitpid(pid, &st, 0);
		return e == EPERM ? perm_detail(pid)
				  : ps_err_detail(PS_ERR_TARGET,
						  "cannot trace '%s': %s",
						  argv[0], strerror(e));
	}
	close(go[1]);
	for (;;) {
		if (waitpid(pid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			close(ef[0]);
			return ps_err_detail(PS_ERR_TARGET,
					     "waiting for '%s': %s", argv[0],
					     strerror(e));
		}
		switch (trc_classify(st, &sig)) {
		case TRC_EXEC:
			close(ef[0]);
			*out = pid;
			return 0;
		case TRC_EXITED:
		case TRC_KILLED:
			if (read(ef[0], &e, sizeof(e)) != sizeof(e))
				e = 0;
			close(ef[0]);
			return e ? spawn_failed(argv, e)
				 : ps_err_detail(PS_ERR_TARGET,
						 "'%s' ended before it started",
						 argv[0]);
		case TRC_SIGNAL:
			ptrace(PTRACE_CONT, pid, 0, sig);
			break;
		default:
			ptrace(PTRACE_CONT, pid, 0, 0);
			break;
		}
	}
}

/* AT_ENTRY from /proc/PID/auxv, or 0. */
static uint64_t auxv_entry(pid_t pid)
{
	unsigned char rec[16];
	char path[64];
	uint64_t type, val, entry = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		memcpy(&type, rec, 8);
		memcpy(&val, rec + 8, 8);
		if (type == AT_ENTRY) {
			entry = val;
			break;
		}
		if (type == AT_NULL)
			break;
	}
	close(fd);
	return entry;
}

/* The program's first instruction is reached with a software breakpoint
 * (int3 in place of its first byte, put back at the hit), not a debug
 * register: some virtual machines take DR0-DR7 writes and never fire them
 * (bp_hw_fires, src/record/triggers/bp.h), and the program would run to
 * its end untraced. */
int trc_run_to_entry(pid_t pid, int *status)
{
	uint64_t entry = auxv_entry(pid), ip;
	struct user_regs_struct regs;
	long word;
	uint8_t first; /* the byte the int3 takes the place of */
	int st, sig = 0;

	if (!entry || trc_ip(pid, &ip))
		return ps_err_detail(PS_ERR_TARGET,
				     "cannot find the entry point of process "
				     "%d",
				     (int)pid);
	if (ip == entry)
		return 0; /* static executable: no loader ran */
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, 0);
	first = (uint8_t)word;
	if (errno || ptrace(PTRACE_POKETEXT, pid, (void *)entry,
			    (void *)((word & ~0xffL) | 0xcc)))
		return ps_err_detail(PS_ERR_TARGET,
				     "cannot set a breakpoint at the entry "
				     "point of process %d: %s",
				     (int)pid, strerror(errno));
	for (;;) {
		if (ptrace(PTRACE_CONT, pid, 0, sig))
			return ps_err_detail(PS_ERR_TARGET,
					     "cannot resume process %d: %s",
					     (int)pid, strerror(errno));
		sig = 0;
		if (waitpid(pid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return ps_err_detail(PS_ERR_TARGET, "waitpid: %s",
					     strerror(errno));
		}
		switch (trc_classify(st, &sig)) {
		case TRC_EXITED:
		case TRC_KILLED:
			*status = st;
			return 1;
		case TRC_STEP:
			sig = 0;
			if (ptrace(PTRACE_GETREGS, pid, 0, &regs))
				break;
			if (regs.rip != entry + 1) {
				sig = SIGTRAP; /* not ours: the program's */
				break;
			}
			/* the first byte back (the word's other bytes as
			 * they are now), and the instruction run from its
			 * start */
			errno = 0;
			word = ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, 0);
			regs.rip = entry;
			if (errno || ptrace(PTRACE_POKETEXT, pid, (void *)entry,
					    (void *)((word & ~0xffL) | first)))
				return ps_err_detail(
				    PS_ERR_TARGET,
				    "cannot take the entry breakpoint out of "
				    "process %d: %s",
				    (int)pid, strerror(errno));
			if (ptrace(PTRACE_SETREGS, pid, 0, &regs))
				return ps_err_detail(
				    PS_ERR_TARGET,
				    "cannot set the registers of process %d: "
				    "%s",
				    (int)pid, strerror(errno));
			return 0;
		case TRC_SIGNAL:
			break; /* deliver it */
		default:
			sig = 0;
			break;
		}
	}
}

int trc_threads(pid_t pid, pid_t **tids)
{
	char path[64];
	struct dirent *de;
	size_t n = 0, cap = 16;
	pid_t *v;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return ps_err_detail(PS_ERR_NOT_FOUND, "no process with pid %d",
				     (int)pid);
	v = malloc(cap * sizeof(*v));
	if (!v) {
		closedir(d);
		return PS_ERR_NOMEM;
	}
	while ((de = readdir(d))) {
		char *end;
		long t = strtol(de->d_name, &end, 10);

		if (*end || t <= 0)
			continue;
		if (n == cap) {
			pid_t *nv = realloc(v, 2 * cap * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return PS_ERR_NOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = (pid_t)t;
	}
	closedir(d);
	*tids = v;
	return (int)n;
}

pid_t trc_tgid(pid_t tid)
{
	char v[64];
	char *end;
	long t;

	if (status_field(tid, "Tgid", v, sizeof(v)))
		return PS_ERR_NOT_FOUND;
	t = strtol(v, &end, 10);
	if (end == v || t <= 0)
		return PS_ERR_NOT_FOUND;
	return (pid_t)t;
}

pid_t trc_ppid(pid_t pid)
{
	char v[64];
	char *end;
	long t;

	if (status_field(pid, "PPid", v, sizeof(v)))
		return 0;
	t = strtol(v, &end, 10);
	return end == v || t <= 0 ? 0 : (pid_t)t;
}

int trc_reg(pid_t tid, size_t offset, uint64_t *val)
{
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, tid, (void *)offset, 0);
	if (v == -1 && errno)
		return PS_ERR_TARGET;
	*val = (uint64_t)v;
	return 0;
}

int trc_ip(pid_t tid, uint64_t *ip)
{
	return trc_reg(tid, offsetof(struct user_regs_struct, rip), ip);
}

int trc_siginfo(pid_t tid, uint64_t *addr, int *code)
{
	siginfo_t si;

	*addr = 0;
	*code = 0;
	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si))
		return PS_ERR_TARGET;
	*code = si.si_code;
	switch (si.si_signo) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGTRAP:
		*addr = (uint64_t)(uintptr_t)si.si_addr;
		break;
	}
	return 0;
}

/* Bit (sig - 1) of the hex mask "Key:" in /proc/PID/status. */
static int mask_bit(pid_t pid, const char *key, int sig)
{
	char v[64];
	unsigned long long m;

	if (sig < 1 || sig > 64 || status_field(pid, key, v, sizeof(v)))
		return 0;
	m = strtoull(v, NULL, 16);
	return (m >> (sig - 1)) & 1;
}

int trc_signal_pending(pid_t tid, int sig)
{
	return mask_bit(tid, "SigPnd", sig);
}

int trc_signal_is_caught(pid_t pid, int sig)
{
	return mask_bit(pid, "SigCgt", sig);
}

/* Signals whose default action does not end the process. */
static int default_is_harmless(int sig)
{
	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return 1;
	}
	return 0;
}

int trc_signal_is_fatal(pid_t pid, int sig)
{
	if (default_is_harmless(sig))
		return 0;
	if (sig == SIGKILL)
		return 1;
	return !mask_bit(pid, "SigCgt", sig) && !mask_bit(pid, "SigIgn", sig);
}
