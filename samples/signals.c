/* SPDX-License-Identifier: MIT */
/* signals: a SIGALRM handler interrupts a computation several times; the
 * handler's own calls must appear inside the function it interrupted, as
 * an asynchronous entry, and the computation must resume where it was.
 *
 *   ptscope run -- build/samples/signals */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t ticks;

static int count_tick(int n)
{
	return n + 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	ticks = count_tick(ticks);
}

static long mix(long x)
{
	return x * 2654435761u % 1000003;
}

static long work(long rounds)
{
	long acc = 0;

	for (long i = 0; i < rounds; i++)
		acc += mix(acc + i);
	return acc;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = {{0, 2000}, {0, 2000}};
	long acc = 0;

	(void)argc, (void)argv;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (ticks < 5)
		acc += work(1000);
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signals: %d ticks, acc %ld\n", (int)ticks, acc % 1000);
	return 0;
}
