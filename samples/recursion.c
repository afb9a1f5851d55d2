/* SPDX-License-Identifier: MIT */
/* recursion: deep recursion left by longjmp from the bottom, so many frames
 * close at once; then a mutual recursion that returns normally.
 *
 *   ptscope run -- build/samples/recursion */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf escape;

static int descend(int depth)
{
	if (depth == 0)
		longjmp(escape, 42); /* closes every descend() frame */
	return descend(depth - 1) + 1;
}

static int is_odd(int n);

static int is_even(int n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

static int is_odd(int n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

static int try_descend(int depth)
{
	int v = setjmp(escape);

	if (v)
		return v;
	return descend(depth);
}

int main(void)
{
	int a = try_descend(20);
	int b = is_even(15);

	printf("recursion: longjmp gave %d, is_even(15) = %d\n", a, b);
	return 0;
}
