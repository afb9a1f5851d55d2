/* SPDX-License-Identifier: MIT */
/* exec_thread: a worker thread (not the main one) execs a program while
 * the main thread waits; the kernel makes the worker the process's only
 * thread under the main thread's id (de_thread), and its perf events go
 * with it.
 *
 *   exec_thread [PROGRAM [ARGS...]]     (default /bin/true) */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static char **prog;

static int spin(int n)
{
	return n <= 1 ? n : spin(n - 1) + 1;
}

static void *worker(void *arg)
{
	char *dflt[] = {"/bin/true", NULL};

	(void)arg;
	spin(100);
	execv(prog[0] ? prog[0] : dflt[0], prog[0] ? prog : dflt);
	perror("exec_thread: execv");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;

	(void)argc;
	prog = argv + 1;
	spin(10);
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL); /* never returns: the worker execs */
	return 1;
}
