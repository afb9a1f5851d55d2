/* SPDX-License-Identifier: MIT */
/* slowcall: handle() is called 1000 times; call number 737 sleeps 2 ms,
 * every other call takes well under a microsecond.  A latency trigger
 * such as -t 'handle>500us' must fire on that call and no other.
 *
 *   slowcall [ROUNDS [CALLS [SLOW_MS]]]
 *       repeat (0: forever), 20 ms apart, for attach; CALLS per round
 *       (default 1000); the slow call sleeps SLOW_MS (default 2) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long total;
static long slow_ms = 2;

static void slow_part(void)
{
	struct timespec ts = {slow_ms / 1000, slow_ms % 1000 * 1000000};

	nanosleep(&ts, NULL);
}

static void handle(int i)
{
	total += (unsigned long)i;
	if (i == 737)
		slow_part();
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1;
	int calls = argc > 2 ? atoi(argv[2]) : 1000;
	struct timespec pause = {0, 20000000};

	if (argc > 3)
		slow_ms = atol(argv[3]);
	for (long r = 0; rounds <= 0 || r < rounds; r++) {
		if (r)
			nanosleep(&pause, NULL);
		for (int i = 0; i < calls; i++)
			handle(i);
	}
	printf("slowcall: %d calls, total %lu\n", calls, total);
	return 0;
}
