/* SPDX-License-Identifier: MIT */
/* --filter → PERF_EVENT_IOC_SET_FILTER text (pt_filter.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/pt_filter.h"

static int is_raw(const char *spec)
{
	static const char *const kw[] = {"filter ", "start ", "stop ",
					 "tracestop "};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (!strncmp(spec, kw[i], strlen(kw[i])))
			return 2;
	return strchr(spec, '@') ? 1 : 0;
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

/* Ranges in the raw form: one per ',' (the kernel's separator). */
static uint64_t count_ranges(const char *s)
{
	uint64_t n = 1;

	for (; *s; s++)
		n += *s == ',';
	return n;
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

int ptf_build(const char *spec, const struct mod_list *mods,
	      uint64_t max_ranges, char **out)
{
	char *buf = NULL, list[256];
	size_t len = 0, cap = 0, ll = 0;
	uint64_t n = 0;
	int raw;

	*out = NULL;
	if (!spec || !*spec)
		return ps_err_detail(PS_ERR_INVAL,
				     "--filter needs a file name or "
				     "START/SIZE@FILE");
	raw = is_raw(spec);
	if (raw) {
		n = count_ranges(spec);
		if (n > max_ranges)
			return too_many(n, max_ranges, spec);
		if (asprintf(&buf, "%s%s", raw == 1 ? "filter " : "", spec) < 0)
			return PS_ERR_NOMEM;
		*out = buf;
		return 0;
	}
	list[0] = 0;
	for (size_t i = 0; mods && i < mods->n; i++) {
		const struct mod_map *m = &mods->maps[i];
		char item[4400];
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
		k = snprintf(item, sizeof(item), "%sfilter 0x%llx/0x%llx@%s",
			     n ? "," : "", (unsigned long long)m->offset,
			     (unsigned long long)(m->end - m->start), m->path);
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
