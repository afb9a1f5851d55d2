/* SPDX-License-Identifier: MIT */
/* callchain: three nested small functions in a loop (main → top → mid →
 * leaf), a call or return every few instructions: the worst case for a
 * decoder's call stacks and writer.  The decoder benchmark and the flow
 * engine test build it statically.  Usage: callchain [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>

static unsigned leaf(unsigned x)
{
	return x * 2654435761u + 1;
}

static unsigned mid(unsigned x)
{
	return leaf(x) ^ leaf(x >> 3);
}

static unsigned top(unsigned x)
{
	unsigned s = 0;

	for (int i = 0; i < 4; i++)
		s += mid(x + i);
	return s;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? strtoul(argv[1], 0, 0) : 1000, s = 0;

	for (unsigned i = 0; i < n; i++)
		s += top(i);
	printf("%u\n", s);
	return 0;
}
