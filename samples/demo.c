/* SPDX-License-Identifier: MIT */
/* demo: a request loop whose rare slow path calls ptscope_trigger().
 *
 *   ptscope run -t . -- build/samples/demo
 *
 * Each "request" parses, hashes and stores a small record.  About one in 50
 * requests takes the slow path (a long linear scan); when it does, the
 * program calls ptscope_trigger() so the trace shows exactly what led up to
 * it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/trigger.h"

#define TABLE 64

static unsigned table[TABLE];

static unsigned parse(const char *s)
{
	unsigned v = 0;

	while (*s)
		v = v * 10 + (unsigned)(*s++ - '0');
	return v;
}

static unsigned hash(unsigned v)
{
	v ^= v >> 16;
	v *= 0x45d9f3bu;
	v ^= v >> 16;
	return v;
}

static unsigned slow_scan(unsigned key)
{
	unsigned best = 0;

	for (int round = 0; round < 20; round++)
		for (int i = 0; i < TABLE; i++)
			if ((table[i] ^ key) > best)
				best = table[i] ^ key;
	return best;
}

static int store(unsigned h)
{
	unsigned slot = h % TABLE;

	if (table[slot] && (h & 0x71) == 0x71) {
		/* The rare slow path: a collision that needs a full scan. */
		table[slot] = slow_scan(h);
		return 1;
	}
	table[slot] = h;
	return 0;
}

static int handle_request(int i)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", i * 7919);
	return store(hash(parse(buf)));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int slow = 0;

	for (int i = 0; i < n; i++) {
		if (handle_request(i)) {
			slow++;
			ptscope_trigger("slow request");
		}
	}
	printf("demo: %d requests, %d slow\n", n, slow);
	return 0;
}
