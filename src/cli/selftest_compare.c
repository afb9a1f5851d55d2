/* SPDX-License-Identifier: MIT */
/* Outcomes of a selftest case and their comparison (selftest_compare.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/recording.h"
#include "src/cli/selftest_compare.h"

void stc_init(struct stc_outcome *o)
{
	memset(o, 0, sizeof(*o));
}

void stc_fini(struct stc_outcome *o)
{
	for (size_t i = 0; i < o->nfuncs; i++)
		free(o->funcs[i].name);
	free(o->funcs);
	stc_init(o);
}

/* The index where @name is or would go (the list is sorted). */
static size_t find(const struct stc_outcome *o, const char *name, int *found)
{
	size_t lo = 0, hi = o->nfuncs;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(o->funcs[mid].name, name);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int stc_call(struct stc_outcome *o, const char *name)
{
	int found;
	size_t at = find(o, name, &found);
	char *copy;

	if (found) {
		o->funcs[at].calls++;
		return 0;
	}
	if (o->nfuncs == o->cap) {
		size_t nc = o->cap ? o->cap * 2 : 32;
		struct stc_func *nf = realloc(o->funcs, nc * sizeof(*nf));

		if (!nf)
			return PS_ERR_NOMEM;
		o->funcs = nf;
		o->cap = nc;
	}
	copy = strdup(name);
	if (!copy)
		return PS_ERR_NOMEM;
	memmove(&o->funcs[at + 1], &o->funcs[at],
		(o->nfuncs - at) * sizeof(o->funcs[0]));
	o->funcs[at] = (struct stc_func){copy, 1};
	o->nfuncs++;
	return 0;
}

void stc_mark(struct stc_outcome *o, int kind, const char *text)
{
	struct stc_mark *m;
	size_t n;

	if (o->nmarks == STC_MAX_MARKS)
		return;
	m = &o->marks[o->nmarks++];
	m->kind = kind;
	text = text ? text : "";
	n = strcspn(text, "\n");
	if (n >= sizeof(m->text))
		n = sizeof(m->text) - 1;
	memcpy(m->text, text, n);
	m->text[n] = 0;
}

uint64_t stc_total(const struct stc_outcome *o)
{
	uint64_t n = 0;

	for (size_t i = 0; i < o->nfuncs; i++)
		n += o->funcs[i].calls;
	return n;
}

static const char *mark_name(int kind)
{
	switch (kind) {
	case REC_MARK_TRIGGER:
		return "trigger";
	case REC_MARK_LATENCY:
		return "latency";
	case REC_MARK_SIGNAL:
		return "signal";
	default:
		return "mark";
	}
}

static void ending(const struct stc_outcome *o, char *buf, size_t size)
{
	if (o->killed_by)
		snprintf(buf, size, "killed by signal %d", o->killed_by);
	else if (o->exited)
		snprintf(buf, size, "exit status %d", o->exit_code);
	else
		snprintf(buf, size, "still running");
}

static int compare_marks(const struct stc_outcome *a, const char *an,
			 const struct stc_outcome *b, const char *bn, char *why,
			 size_t size)
{
	for (size_t i = 0; i < a->nmarks || i < b->nmarks; i++) {
		const struct stc_mark *ma = i < a->nmarks ? &a->marks[i] : NULL;
		const struct stc_mark *mb = i < b->nmarks ? &b->marks[i] : NULL;

		if (ma && mb && ma->kind == mb->kind &&
		    !strcmp(ma->text, mb->text))
			continue;
		snprintf(why, size, "%s mark: '%s' on %s, '%s' on %s",
			 mark_name(ma ? ma->kind : mb->kind),
			 ma ? ma->text : "none", an, mb ? mb->text : "none",
			 bn);
		return 1;
	}
	return 0;
}

int stc_compare(const struct stc_outcome *a, const char *an,
		const struct stc_outcome *b, const char *bn, char *why,
		size_t size)
{
	char ea[48], eb[48];
	size_t i = 0, j = 0;

	if (a->error[0] || b->error[0]) {
		snprintf(why, size, "%s: %s", a->error[0] ? an : bn,
			 a->error[0] ? a->error : b->error);
		return 1;
	}
	ending(a, ea, sizeof(ea));
	ending(b, eb, sizeof(eb));
	if (strcmp(ea, eb)) {
		snprintf(why, size, "the program ended with %s on %s, %s on %s",
			 ea, an, eb, bn);
		return 1;
	}
	if (compare_marks(a, an, b, bn, why, size))
		return 1;
	if (!stc_total(a) || !stc_total(b)) {
		snprintf(why, size, "no calls of the sample's functions on %s",
			 !stc_total(a) ? an : bn);
		return 1;
	}
	/* Both lists are sorted: walk them together. */
	while (i < a->nfuncs || j < b->nfuncs) {
		int c = i == a->nfuncs ? 1
			: j == b->nfuncs
			    ? -1
			    : strcmp(a->funcs[i].name, b->funcs[j].name);
		const char *name = c <= 0 ? a->funcs[i].name : b->funcs[j].name;
		uint64_t ca = c <= 0 ? a->funcs[i].calls : 0;
		uint64_t cb = c >= 0 ? b->funcs[j].calls : 0;

		if (ca != cb) {
			snprintf(why, size, "%s: %llu calls on %s, %llu on %s",
				 name, (unsigned long long)ca, an,
				 (unsigned long long)cb, bn);
			return 1;
		}
		i += c <= 0;
		j += c >= 0;
	}
	return 0;
}
