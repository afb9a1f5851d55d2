/* Decode and write in a child process (isolate.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/output/tmpfile.h"
#include "src/record/core/crash_guard.h"
#include "src/cli/isolate.h"

/* What the child sends back through the pipe. */
struct iso_reply {
	int err;
	struct replay_stats stats;
	char detail[1024];
};

static void child(int fd, iso_fn fn, void *ctx)
{
	struct iso_reply m;
	int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	size_t off = 0;

	/* This process holds nothing: if the OOM killer must kill, kill
	 * this one (raising one's own score needs no privilege). */
	if (adj >= 0) {
		if (write(adj, "1000", 4) < 0) {
			/* keep the default score */
		}
		close(adj);
	}
	cg_uninstall(); /* the traced threads are the parent's */
	/* Tests stand in for the OOM killer here (tests/e2e/target_safety.sh).
	 */
	if (getenv("PTSCOPE_TEST_KILL_DECODER"))
		raise(SIGKILL);
	memset(&m, 0, sizeof(m));
	m.err = fn(ctx, &m.stats);
	if (m.err)
		snprintf(m.detail, sizeof(m.detail), "%s",
			 ps_err_message(m.err));
	while (off < sizeof(m)) {
		ssize_t n = write(fd, (char *)&m + off, sizeof(m) - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	_exit(0);
}

int iso_run(iso_fn fn, void *ctx, struct replay_stats *stats)
{
	struct iso_reply m;
	size_t got = 0;
	int fds[2], st = 0;
	pid_t pid;

	if (ps_tmp_share() || pipe2(fds, O_CLOEXEC))
		return fn(ctx, stats);
	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return fn(ctx, stats);
	}
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], fn, ctx);
	}
	close(fds[1]);
	while (got < sizeof(m)) {
		ssize_t n = read(fds[0], (char *)&m + got, sizeof(m) - got);

		if (n < 0 && errno == EINTR)
			continue; /* Ctrl-C again: the writing goes on */
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got == sizeof(m)) {
		*stats = m.stats;
		if (m.err)
			return ps_err_detail(m.err, "%s", m.detail);
		return 0;
	}
	ps_tmp_remove_all(); /* what the dead child left half-written */
	if (WIFSIGNALED(st))
		return ps_err_detail(
		    PS_ERR_TARGET,
		    "decoding the snapshot failed: the decoder process was "
		    "killed by %s%s; the target was not affected",
		    ps_signame(WTERMSIG(st)),
		    WTERMSIG(st) == SIGKILL ? " (out of memory?)" : "");
	return ps_err_detail(PS_ERR_TARGET,
			     "decoding the snapshot failed: the decoder "
			     "process ended without an answer (status %d)",
			     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
