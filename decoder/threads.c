/* SPDX-License-Identifier: MIT */
/* Threads with room for libipt's block decoder (see threads.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/heap.h"
#include "decoder/threads.h"
#include "ptscope/error.h"

/* This thread has DEC_STACK_SIZE of stack (made by dec_thread_create). */
static __thread int roomy;

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_main(void *p)
{
	struct start st = *(struct start *)p;

	free(p);
	dec_heap_huge();
	roomy = 1;
	return st.fn(st.arg);
}

int dec_thread_create(pthread_t *th, void *(*fn)(void *), void *arg)
{
	struct start *st = malloc(sizeof(*st));
	pthread_attr_t attr;
	int r;

	if (!st)
		return ENOMEM;
	st->fn = fn;
	st->arg = arg;
	r = pthread_attr_init(&attr);
	if (!r) {
		r = pthread_attr_setstacksize(&attr, DEC_STACK_SIZE);
		if (!r)
			r = pthread_create(th, &attr, thread_main, st);
		pthread_attr_destroy(&attr);
	}
	if (r)
		free(st);
	return r;
}

int dec_keep_detail(char **detail, int err)
{
	free(*detail);
	*detail = err < 0 ? strdup(ps_err_message(err)) : NULL;
	return err;
}

int dec_give_detail(const char *detail, int err)
{
	return err < 0 && detail ? ps_err_detail(err, "%s", detail) : err;
}

struct call {
	int (*fn)(void *);
	void *arg;
	int ret;
	char *detail; /* the error's message, for the caller's thread */
};

static void *call_main(void *p)
{
	struct call *c = p;

	c->ret = dec_keep_detail(&c->detail, c->fn(c->arg));
	return NULL;
}

int dec_with_stack(int (*fn)(void *), void *arg)
{
	struct call c = {fn, arg, 0, NULL};
	pthread_t th;

	if (roomy)
		return fn(arg);
	if (dec_thread_create(&th, call_main, &c))
		return ps_err_detail(PS_ERR_NOMEM,
				     "cannot start a decoding thread");
	pthread_join(th, NULL);
	dec_give_detail(c.detail, c.ret);
	free(c.detail);
	return c.ret;
}
