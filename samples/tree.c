/* SPDX-License-Identifier: MIT */
/* tree: the process trees a real command builds, one per mode, each with
 * known call counts per process, for the engines that follow children.
 *
 *   build/samples/tree leaf N        leaf_fn N times, exit 0
 *   build/samples/tree fork N        N workers (fork), each worker_fn 3
 *                                    times; the parent waits, parent_fn once
 *   build/samples/tree vfork         vfork + exec of "tree leaf 2"
 *   build/samples/tree exec N        before_exec once, then exec "tree leaf N"
 *   build/samples/tree spawn N       posix_spawn of "tree leaf N", waits
 *   build/samples/tree system N      system("tree leaf N")
 *   build/samples/tree grandchild N  a child forks a grandchild that runs
 *                                    leaf_fn N times (trigger target)
 *   build/samples/tree crashchild    a child calls crash_in_child (NULL
 *                                    store, SIGSEGV); the parent waits and
 *                                    exits 3
 *   build/samples/tree status N      exits with status N
 * Each process prints nothing but what the mode says; exit status 0 unless
 * a mode says otherwise (a child that fails makes its parent exit 1).
 * With TREE_PIDS=FILE every process appends "PID PPID" to FILE, so a test
 * knows the real pids to look for in the trace. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile unsigned sink;
static const char *self;
static int *volatile nowhere; /* NULL the compiler cannot see through */

__attribute__((noinline)) void leaf_fn(unsigned i)
{
	for (unsigned k = 0; k < 100; k++)
		sink += k * (i + 1);
}

__attribute__((noinline)) void worker_fn(unsigned i)
{
	for (unsigned k = 0; k < 200; k++)
		sink += k ^ i;
}

__attribute__((noinline)) void parent_fn(int n)
{
	sink += (unsigned)n;
}

__attribute__((noinline)) void before_exec(void)
{
	sink++;
}

__attribute__((noinline)) void crash_in_child(int *p)
{
	*p = 1;
}

/* Append "PID PPID" to $TREE_PIDS (one write: lines never mix). */
static void note_pid(void)
{
	const char *path = getenv("TREE_PIDS");
	char line[64];
	int fd, n;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%d %d\n", (int)getpid(),
		     (int)getppid());
	if (write(fd, line, (size_t)n) != n)
		n = 0;
	close(fd);
}

static int wait_all(void)
{
	int st, bad = 0;

	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	return bad;
}

static int leaf(int n)
{
	for (int i = 0; i < n; i++)
		leaf_fn((unsigned)i);
	return 0;
}

static int forks(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			note_pid();
			for (unsigned k = 0; k < 3; k++)
				worker_fn(k);
			_exit(0);
		}
	}
	parent_fn(n);
	return wait_all();
}

static int run_vfork(void)
{
	pid_t pid = vfork();

	if (pid == 0) {
		execl(self, self, "leaf", "2", (char *)NULL);
		_exit(127);
	}
	return pid < 0 ? 1 : wait_all();
}

static int grandchild(int n)
{
	pid_t pid = fork();

	if (pid == 0) {
		pid_t g;

		note_pid();
		g = fork();
		if (g == 0) {
			note_pid();
			_exit(leaf(n));
		}
		_exit(g < 0 ? 1 : wait_all());
	}
	return pid < 0 ? 1 : wait_all();
}

static int crashchild(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		note_pid();
		crash_in_child(nowhere);
		_exit(0);
	}
	wait_all();
	return 3;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2;
	char cmd[4200], num[16];

	self = argv[0];
	note_pid();
	snprintf(num, sizeof(num), "%d", n);
	if (!strcmp(mode, "leaf"))
		return leaf(n);
	if (!strcmp(mode, "fork"))
		return forks(n);
	if (!strcmp(mode, "vfork"))
		return run_vfork();
	if (!strcmp(mode, "exec")) {
		before_exec();
		execl(self, self, "leaf", num, (char *)NULL);
		perror("tree: exec");
		return 127;
	}
	if (!strcmp(mode, "spawn")) {
		char *args[] = {(char *)self, "leaf", num, NULL};
		pid_t pid;

		if (posix_spawn(&pid, self, NULL, NULL, args, environ))
			return 1;
		return wait_all();
	}
	if (!strcmp(mode, "system")) {
		snprintf(cmd, sizeof(cmd), "'%s' leaf %d", self, n);
		return system(cmd) == 0 ? 0 : 1;
	}
	if (!strcmp(mode, "grandchild"))
		return grandchild(n);
	if (!strcmp(mode, "crashchild"))
		return crashchild();
	if (!strcmp(mode, "status"))
		return n;
	fprintf(stderr, "usage: tree leaf|fork|vfork|exec|spawn|system|"
			"grandchild|crashchild|status [N]\n");
	return 2;
}
