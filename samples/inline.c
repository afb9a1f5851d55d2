/* SPDX-License-Identifier: MIT */
/* inline: always_inline helpers (one nested in another) inside a noinline
 * function, so `ptscope run --inline` shows them as nested spans even
 * though the Makefile builds samples with -fno-inline.
 *
 *   ptscope run --backend=emulated --inline -o inline.json -- \
 *       build/samples/inline */
#include <stdio.h>

static volatile int sink;

/* A real call made from inside inlined code. */
static __attribute__((noinline)) int leaf(int x)
{
	sink = x;
	return x * 3 + 1;
}

/* Innermost inlined helper: a loop, so its code spans several blocks. */
static inline __attribute__((always_inline)) int scale(int x)
{
	int acc = 0;

	for (int i = 0; i < (x & 7) + 2; i++)
		acc += sink + i;
	return acc;
}

/* Inlined helper that inlines scale() and calls leaf(). */
static inline __attribute__((always_inline)) int mix(int x)
{
	int s = scale(x);

	return leaf(s + x);
}

static __attribute__((noinline)) int work(int n)
{
	int total = 0;

	for (int i = 0; i < n; i++)
		total += mix(i);
	return total;
}

int main(void)
{
	printf("%d\n", work(4));
	return 0;
}
