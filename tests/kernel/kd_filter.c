/* SPDX-License-Identifier: MIT */
/* Address filters in the kernel double (kdouble.h): the text of
 * PERF_EVENT_IOC_SET_FILTER parsed as perf_event_parse_addr_filter does,
 * validated as pt_event_addr_filters_validate does, file ranges bound to
 * the task's mappings as perf_event_addr_filters_apply,
 * perf_addr_filter_apply, perf_addr_filter_vma_adjust and
 * perf_addr_filter_match do (kernel/events/core.c), and the MSR values of
 * pt_event_addr_filters_sync (arch/x86/events/intel/pt.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tests/kernel/kdouble.h"

enum { ACT_FILTER, ACT_START, ACT_STOP };

/* match_token's %u: simple_strtoul(s, &end, 0) and at least a digit. */
static int num(const char *s, const char **end, uint64_t *v)
{
	char *e;

	*v = strtoull(s, &e, 0);
	*end = e;
	return e != s;
}

/* One source token: "%u/%u@%s", "%u/%u", "%u@%s" or "%u" (if_tokens, in
 * that order).  Returns 1 and fills the filter, or 0. */
static int source(const char *tok, struct kd_filter *f, int *kernel)
{
	const char *p;
	uint64_t a, b = 0;

	if (!num(tok, &p, &a))
		return 0;
	if (*p == '/') {
		if (!num(p + 1, &p, &b))
			return 0;
	}
	f->offset = a;
	f->size = b;
	if (*p == '@') {
		snprintf(f->path, sizeof(f->path), "%s", p + 1);
		*kernel = 0;
		return p[1] != 0;
	}
	*kernel = 1;
	return *p == 0;
}

static int parse(struct kd *k, struct kd_event *e, const char *text,
		 struct kd_filter *out, int *nout)
{
	char *copy = strdup(text), *s = copy, *tok;
	int state = 0, n = 0, kernel = 0, r = 0; /* 0 action, 1 source */
	struct stat st;

	(void)k;
	if (!copy)
		abort();
	while (!r && (tok = strsep(&s, " ,\n"))) {
		if (!*tok)
			continue;
		if (!strcmp(tok, "filter") || !strcmp(tok, "start") ||
		    !strcmp(tok, "stop")) {
			if (state != 0 || n == KD_MAX_FILTERS) {
				r = -EINVAL;
				break;
			}
			memset(&out[n], 0, sizeof(out[n]));
			out[n].action = tok[0] == 'f'	? ACT_FILTER
					: tok[2] == 'a' ? ACT_START
							: ACT_STOP;
			state = 1;
			continue;
		}
		if (state != 1 || !source(tok, &out[n], &kernel)) {
			r = -EINVAL;
			break;
		}
		/* The filter is complete: it must agree with itself and the
		 * event. */
		if ((kernel && e->attr.exclude_kernel) ||
		    (out[n].action == ACT_FILTER && !out[n].size))
			r = -EINVAL;
		else if (!kernel && stat(out[n].path, &st))
			r = -errno; /* kern_path() */
		else if (!kernel && !S_ISREG(st.st_mode))
			r = -EINVAL;
		if (!r && !kernel) {
			out[n].dev = st.st_dev;
			out[n].ino = st.st_ino;
		}
		n++;
		state = 0;
	}
	if (!r && state != 0)
		r = -EINVAL;
	free(copy);
	*nout = n;
	return r;
}

/* pt_event_addr_filters_validate(): no "start", no single addresses,
 * at most caps/num_address_ranges. */
static int pt_validate(struct kd *k, const struct kd_filter *f, int n)
{
	long long max = kd_cap(k, "num_address_ranges");

	for (int i = 0; i < n; i++) {
		if (!f[i].size || f[i].action == ACT_START)
			return -EOPNOTSUPP;
		if (i + 1 > max)
			return -EOPNOTSUPP;
	}
	return 0;
}

int kd_filter_set(struct kd *k, struct kd_event *e, const char *text)
{
	struct kd_filter f[KD_MAX_FILTERS];
	int n = 0, r;

	/* perf_event_set_filter: only PMUs with address filters. */
	if (e->kind != KD_PT || kd_cap(k, "num_address_ranges") <= 0)
		return -EINVAL;
	r = parse(k, e, text, f, &n);
	if (!r)
		r = pt_validate(k, f, n);
	if (r)
		return r;
	memcpy(e->filters, f, sizeof(f[0]) * (size_t)n);
	e->nfilters = n;
	snprintf(e->filter_text, sizeof(e->filter_text), "%s", text);
	kd_filter_apply(k, e);
	return 0;
}

/* perf_addr_filter_match(): the same file, and the filter's range
 * touches the mapping's file range — touching at either end is enough. */
static int match(const struct kd_filter *f, dev_t dev, ino_t ino, uint64_t off,
		 uint64_t size)
{
	if (!f->path[0] || f->dev != dev || f->ino != ino)
		return 0;
	if (f->offset > off + size)
		return 0;
	if (f->offset + f->size < off)
		return 0;
	return 1;
}

/* perf_addr_filter_vma_adjust(). */
static int vma_adjust(struct kd_filter *f, uint64_t start, uint64_t end,
		      uint64_t off, dev_t dev, ino_t ino)
{
	uint64_t vsize = end - start;

	if (!match(f, dev, ino, off, vsize))
		return 0;
	if (f->offset < off) {
		f->start = start;
		f->rsize = vsize < f->size - (off - f->offset)
			       ? vsize
			       : f->size - (off - f->offset);
	} else {
		f->start = start + f->offset - off;
		f->rsize = end - f->start < f->size ? end - f->start : f->size;
	}
	return 1;
}

/* The task's mappings in address order: scripted, or /proc/PID/maps of a
 * real one.  Calls @fn until it returns 1. */
static void each_vma(struct kd_task *t, struct kd_filter *f)
{
	char path[64], line[600];
	FILE *fp;

	if (!t->real) {
		for (int i = 0; i < t->nmaps; i++) {
			const struct kd_map *m = &t->maps[i];

			if (vma_adjust(f, m->start, m->end, m->pgoff, m->dev,
				       m->ino))
				return;
		}
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	fp = fopen(path, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long s, e, off, ino;
		unsigned maj, mnr;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &s, &e, perm,
			   &off, &maj, &mnr, &ino) != 7 ||
		    !ino)
			continue; /* no file behind it */
		if (vma_adjust(f, s, e, off, makedev(maj, mnr), (ino_t)ino))
			break;
	}
	fclose(fp);
}

void kd_filter_apply(struct kd *k, struct kd_event *e)
{
	(void)k;
	if (!e->task || e->task->exited)
		return; /* TASK_TOMBSTONE */
	for (int i = 0; i < e->nfilters; i++) {
		struct kd_filter *f = &e->filters[i];

		if (!f->path[0]) {
			f->start = f->offset;
			f->rsize = f->size;
			continue;
		}
		f->start = f->rsize = 0;
		each_vma(e->task, f);
	}
}

/* perf_event_mmap → perf_addr_filters_adjust: only executable mappings
 * move filters, and a match replaces what was bound before. */
void kd_filter_mmap(struct kd *k, struct kd_event *e, uint64_t start,
		    uint64_t end, uint64_t pgoff, dev_t dev, ino_t ino,
		    int exec)
{
	(void)k;
	if (!exec)
		return;
	for (int i = 0; i < e->nfilters; i++)
		vma_adjust(&e->filters[i], start, end, pgoff, dev, ino);
}

/* x86-64 with 48-bit virtual addresses. */
static int canonical(uint64_t v)
{
	return (uint64_t)((int64_t)(v << 16) >> 16) == v;
}

void kd_filter_msrs(const struct kd_event *e, int i, uint64_t *a, uint64_t *b)
{
	const struct kd_filter *f = &e->filters[i];
	uint64_t n, lo, hi;

	if (f->path[0] && !f->start) {
		*a = *b = 0;
		return;
	}
	/* A range of size 0 wraps: n is ULONG_MAX, and the end is clamped
	 * to the top of the address space. */
	n = f->rsize - 1;
	lo = f->start;
	hi = lo > UINT64_MAX - n ? UINT64_MAX : lo + n;
	if (!canonical(lo))
		lo = 0xffff800000000000ull;
	if (!canonical(hi))
		hi = 0x00007fffffffffffull;
	if (hi < lo)
		lo = hi = 0;
	*a = lo;
	*b = hi;
}
