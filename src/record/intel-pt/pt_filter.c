/* SPDX-License-Identifier: MIT */
/* --filter → PERF_EVENT_IOC_SET_FILTER text (pt_filter.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/pt_filter.h"

static int too_many(uint64_t n, uint64_t max, const char *spec);

/* The actions of perf's --filter syntax, in the kernel's words
 * (perf_event_parse_addr_filter knows filter, start and stop; "stop" with
 * a size is a TraceStop region). */
static const char *const actions[] = {"filter", "tracestop", "start", "stop"};

static int action_of(const char *tok)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(tok, actions[i]))
			return i;
	return -1;
}

/* A spec in the raw form: an action keyword first, or a range with '@'. */
static int is_raw(const char *spec)
{
	char first[16];
	size_t n = strcspn(spec, " ,\n\t");

	if (n < sizeof(first)) {
		memcpy(first, spec, n);
		first[n] = 0;
		if (action_of(first) >= 0)
			return 1;
	}
	return strchr(spec, '@') != NULL;
}

static int raw_error(const char *spec, const char *why)
{
	return ps_err_detail(PS_ERR_UNSUPPORTED, "--filter '%s': %s", spec,
			     why);
}

/* One range "START[/SIZE][@FILE]" with action @act appended to @b as the
 * kernel's text. */
static int raw_range(const char *spec, int act, const char *src, char *b,
		     size_t size, size_t *len)
{
	unsigned long long start, rsize = 0;
	const char *p = src, *file;
	char *end;
	int n;

	start = strtoull(p, &end, 0);
	if (end == p)
		goto bad;
	p = end;
	if (*p == '/') {
		rsize = strtoull(p + 1, &end, 0);
		if (end == p + 1)
			goto bad;
		p = end;
	}
	if (*p && *p != '@')
		goto bad;
	file = *p == '@' ? p + 1 : NULL;
	if (act == 2)
		return raw_error(
		    spec, "Intel PT cannot start tracing at an address "
			  "(the kernel's pt_event_addr_filters_validate "
			  "refuses 'start'); use filter START/SIZE@FILE");
	if (!rsize)
		return raw_error(
		    spec, "Intel PT filters need a size (it has no "
			  "single-address stop); use filter or tracestop "
			  "START/SIZE@FILE");
	if (!file || !*file)
		return raw_error(spec,
				 "a range without @FILE is a kernel address "
				 "range, which user-space tracing cannot use; "
				 "give START/SIZE@FILE (START a file offset)");
	n = snprintf(b + *len, size - *len, "%s%s 0x%llx/0x%llx@%s",
		     *len ? "," : "", act == 0 ? "filter" : "stop", start,
		     rsize, file);
	if (n < 0 || (size_t)n >= size - *len)
		return ps_err_detail(PS_ERR_LIMIT, "--filter '%s' is too long",
				     spec);
	*len += (size_t)n;
	return 0;
bad:
	return ps_err_detail(PS_ERR_INVAL,
			     "--filter '%s': '%s' is not START/SIZE@FILE", spec,
			     src);
}

/* The raw form → the kernel's text: tokens split where the kernel splits
 * them (strsep on space, comma, newline), perf's "tracestop" spelt "stop",
 * each range checked for what Intel PT takes. */
static int build_raw(const char *spec, uint64_t max, char **out)
{
	char *copy = strdup(spec), *s = copy, *tok, *buf;
	size_t size = strlen(spec) * 2 + 64, len = 0;
	uint64_t n = 0;
	int act = -1, r = 0;

	buf = malloc(size);
	if (!copy || !buf) {
		free(copy);
		free(buf);
		return PS_ERR_NOMEM;
	}
	while (!r && (tok = strsep(&s, " ,\n\t"))) {
		if (!*tok)
			continue;
		if (action_of(tok) >= 0 && act < 0) {
			act = action_of(tok);
			continue;
		}
		if (action_of(tok) >= 0) {
			r = ps_err_detail(PS_ERR_INVAL,
					  "--filter '%s': '%s' needs a range "
					  "after it",
					  spec, actions[act]);
			break;
		}
		r = raw_range(spec, act < 0 ? 0 : act, tok, buf, size, &len);
		n++;
		act = -1;
	}
	if (!r && act >= 0)
		r = ps_err_detail(PS_ERR_INVAL,
				  "--filter '%s': '%s' needs a range after it",
				  spec, actions[act]);
	if (!r && n > max)
		r = too_many(n, max, spec);
	free(copy);
	if (r) {
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}

static int matches(const char *spec, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(spec);

	base = base ? base + 1 : path;
	if (!strcmp(spec, path) || !strcmp(spec, base))
		return 1;
	return !strchr(spec, '/') && !strncmp(base, spec, n) && base[n] == '.';
}

static int too_many(uint64_t n, uint64_t max, const char *spec)
{
	return ps_err_detail(PS_ERR_LIMIT,
			     "--filter '%s' needs %llu address ranges, but "
			     "this CPU has %llu "
			     "(caps/num_address_ranges)",
			     spec, (unsigned long long)n,
			     (unsigned long long)max);
}

static int same_file(const struct mod_map *a, const struct mod_map *b)
{
	if (a->inode || b->inode)
		return a->inode == b->inode && a->dev_major == b->dev_major &&
		       a->dev_minor == b->dev_minor;
	return !strcmp(a->path, b->path);
}

/* Where a range for code mapping @m must start (a file offset) so that
 * the kernel binds it to @m: perf_event_addr_filters_apply takes the
 * first mapping of the file, in address order, that the range merely
 * touches (perf_addr_filter_match), and the read-only mapping before the
 * code usually ends exactly where the code starts — bound there the range
 * gets size 0.  So the range starts past every earlier mapping of the file
 * it would touch (a byte, in practice: the code's first byte is the
 * .init stub).  Returns m->end - m->start past the mapping if none fits. */
static uint64_t code_start(const struct mod_list *mods, const struct mod_map *m)
{
	uint64_t off = m->offset, size = m->end - m->start;
	int moved = 1;

	while (moved && off < m->offset + size) {
		moved = 0;
		for (size_t i = 0; i < mods->n; i++) {
			const struct mod_map *q = &mods->maps[i];
			uint64_t qend = q->offset + (q->end - q->start);
			uint64_t len = m->offset + size - off;

			if (q == m || q->start >= m->start || !same_file(q, m))
				continue;
			if (off > qend || off + len < q->offset)
				continue; /* no touch */
			off = qend + 1;
			moved = 1;
		}
	}
	return off;
}

int ptf_build(const char *spec, const struct mod_list *mods,
	      uint64_t max_ranges, char **out)
{
	char *buf = NULL, list[256];
	size_t len = 0, cap = 0, ll = 0;
	uint64_t n = 0;

	*out = NULL;
	if (!spec || !*spec)
		return ps_err_detail(PS_ERR_INVAL,
				     "--filter needs a file name or "
				     "START/SIZE@FILE");
	if (is_raw(spec))
		return build_raw(spec, max_ranges, out);
	list[0] = 0;
	for (size_t i = 0; mods && i < mods->n; i++) {
		const struct mod_map *m = &mods->maps[i];
		char item[4400];
		uint64_t start;
		int k;

		if (!(m->prot & PROT_EXEC) || m->path[0] != '/')
			continue;
		if (!matches(spec, m->path)) {
			const char *b = strrchr(m->path, '/') + 1;

			if (!strstr(list, b) &&
			    ll + strlen(b) + 3 < sizeof(list))
				ll += (size_t)snprintf(
				    list + ll, sizeof(list) - ll, "%s%s",
				    ll ? ", " : "", b);
			continue;
		}
		if (strpbrk(m->path, " ,\n"))
			return ps_err_detail(
			    PS_ERR_UNSUPPORTED,
			    "--filter '%s': the kernel cannot take the path "
			    "'%s' (its filter syntax splits on spaces and "
			    "commas)",
			    spec, m->path);
		start = code_start(mods, m);
		if (start >= m->offset + (m->end - m->start))
			continue;
		k = snprintf(item, sizeof(item), "%sfilter 0x%llx/0x%llx@%s",
			     n ? "," : "", (unsigned long long)start,
			     (unsigned long long)(m->offset +
						  (m->end - m->start) - start),
			     m->path);
		if (len + (size_t)k + 1 > cap) {
			size_t nc = (len + (size_t)k + 1) * 2;
			char *nb = realloc(buf, nc);

			if (!nb) {
				free(buf);
				return PS_ERR_NOMEM;
			}
			buf = nb;
			cap = nc;
		}
		memcpy(buf + len, item, (size_t)k + 1);
		len += (size_t)k;
		n++;
	}
	if (!n)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "--filter '%s': no such file is mapped "
				     "executable in the target (mapped: %s); "
				     "give one of those names or "
				     "START/SIZE@FILE",
				     spec, list[0] ? list : "none");
	if (n > max_ranges) {
		free(buf);
		return too_many(n, max_ranges, spec);
	}
	*out = buf;
	return 0;
}
