/* SPDX-License-Identifier: MIT */
/* crash: a chain of calls that ends in a NULL pointer write (SIGSEGV).
 *
 *   ptscope run -- build/samples/crash
 *
 * The trace shows every call up to the fault, with the signal marked at the
 * end of the faulting thread's timeline. */
#include <stdio.h>
#include <stdlib.h>

struct node {
	int value;
	struct node *next;
};

static struct node *build(int n)
{
	struct node *head = NULL;

	for (int i = 0; i < n; i++) {
		struct node *nd = malloc(sizeof(*nd));

		nd->value = i;
		nd->next = head;
		head = nd;
	}
	return head;
}

static int sum(struct node *n)
{
	int s = 0;

	for (; n; n = n->next)
		s += n->value;
	return s;
}

static struct node *find(struct node *n, int value)
{
	for (; n; n = n->next)
		if (n->value == value)
			return n;
	return NULL;
}

static void update(struct node *list, int value)
{
	struct node *n = find(list, value);

	n->value = -1; /* value 99 is not in the list: n is NULL */
}

int main(void)
{
	struct node *list = build(10);

	printf("crash: sum is %d\n", sum(list));
	fflush(stdout);
	update(list, 3);
	update(list, 99);
	return 0;
}
