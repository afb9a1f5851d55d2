/* SPDX-License-Identifier: MIT */
/* children: a parent that forks two children, each computing for SECS
 * seconds in its own function, and waits for them — a small process
 * tree for the engines that follow children.
 *
 *   build/samples/children SECS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin(double secs, unsigned seed)
{
	double end = now() + secs;

	while (now() < end)
		for (unsigned i = 0; i < 10000; i++)
			sink += i * seed;
}

static void first_child(double secs)
{
	spin(secs, 3);
}
static void second_child(double secs)
{
	spin(secs, 5);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	pid_t a, b;
	int sa = 0, sb = 0;

	a = fork();
	if (a == 0) {
		first_child(secs);
		_exit(0);
	}
	b = fork();
	if (b == 0) {
		second_child(secs);
		_exit(0);
	}
	waitpid(a, &sa, 0);
	waitpid(b, &sb, 0);
	printf("children: %d %d\n", WEXITSTATUS(sa), WEXITSTATUS(sb));
	return 0;
}
