/* SPDX-License-Identifier: MIT */
/* qsortcb: most of the time in a comparison callback that libc's qsort
 * calls — code without frame pointers (Debian's libc) between the
 * program's frames, which only DWARF unwinding gets through.
 *
 *   build/samples/qsortcb SECONDS
 *
 * main → sort_round → qsort (libc) → ... → by_weight, over and over. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096

static int data[N];
static volatile unsigned sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A deliberately slow comparison: the callback is where time goes. */
static int by_weight(const void *a, const void *b)
{
	unsigned x = (unsigned)*(const int *)a, y = (unsigned)*(const int *)b;

	for (int i = 0; i < 40; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
	}
	sink += x ^ y;
	return (*(const int *)a > *(const int *)b) -
	       (*(const int *)a < *(const int *)b);
}

static void sort_round(unsigned seed)
{
	for (int i = 0; i < N; i++)
		data[i] = (int)((seed + (unsigned)i) * 2654435761u >> 8);
	qsort(data, N, sizeof(data[0]), by_weight);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2, end = now() + secs;
	unsigned rounds = 0;

	while (now() < end)
		sort_round(rounds++);
	printf("qsortcb: %u rounds, first %d\n", rounds, data[0] <= data[1]);
	return 0;
}
