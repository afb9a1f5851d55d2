/* SPDX-License-Identifier: MIT */
/* args: calls with known arguments and return values (integers, an enum,
 * a bool, a char, a pointer, NULL, doubles, parameters passed on the
 * stack), then, with "crash", a NULL argument that faults.
 *
 *   ptscope run --args --backend=step -- build/samples/args [crash]
 *
 * Each call's arguments and return value show on its span.  The program
 * prints what it passed ("add a=3 b=-4 return=-1"), which
 * tests/e2e/args.sh compares with the trace. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ptscope/trigger.h"

enum color { RED, GREEN = 5, BLUE };

struct point {
	int x, y;
};

__attribute__((noinline)) int add(int a, int b)
{
	return a + b;
}

__attribute__((noinline)) unsigned long scale(unsigned long v, unsigned char k)
{
	return v * k;
}

__attribute__((noinline)) int color_code(enum color c)
{
	return (int)c * 10;
}

__attribute__((noinline)) double mix(double x, int n, double y)
{
	return x * n + y;
}

__attribute__((noinline)) bool is_even(long v)
{
	return v % 2 == 0;
}

__attribute__((noinline)) char upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
}

__attribute__((noinline)) int many(int a, int b, int c, int d, int e, int f,
				   int g, long h)
{
	return a + b + c + d + e + f + g + (int)h;
}

__attribute__((noinline)) int length(const struct point *p)
{
	return p ? p->x + p->y : -1;
}

struct triple {
	long a, b, c;
};

/* returned in memory: the caller passes its address in rdi */
__attribute__((noinline)) struct triple triple_of(int a, long b)
{
	struct triple t = {a, b, a + b};

	return t;
}

__attribute__((noinline)) float half(float f)
{
	return f / 2;
}

__attribute__((noinline)) int deref(int *p)
{
	return *p;
}

int main(int argc, char **argv)
{
	static struct point pt = {7, 8};
	int (*volatile fault)(int *) = deref;
	int r;
	double d;

	r = add(3, -4);
	printf("add a=3 b=-4 return=%d\n", r);
	printf("scale v=1000000000000 k=3 return=%lu\n",
	       scale(1000000000000ul, 3));
	printf("color_code c=BLUE return=%d\n", color_code(BLUE));
	d = mix(1.5, 4, 0.25);
	printf("mix x=1.5 n=4 y=0.25 return=%g\n", d);
	printf("is_even v=-6 return=%s\n", is_even(-6) ? "true" : "false");
	printf("upper c='q' return='%c'\n", upper('q'));
	printf("many a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=-8 return=%d\n",
	       many(1, 2, 3, 4, 5, 6, 7, -8));
	printf("length p=%p return=%d\n", (void *)&pt, length(&pt));
	printf("length p=NULL return=%d\n", length(NULL));
	printf("triple_of a=2 b=40 c=%ld\n", triple_of(2, 40).c);
	printf("half f=2.5 return=%g\n", half(2.5f));
	ptscope_write(0x1234);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "crash"))
		return fault(NULL);
	return 0;
}
