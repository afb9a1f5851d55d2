/* SPDX-License-Identifier: MIT */
/* Trigger specs that name a source line, FILE:LINE (see
 * resolve_internal.h): the lowest is_stmt address of that line in the
 * DWARF line tables of the target's modules. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdw.h>

#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/recording/build_id.h"
#include "src/record/triggers/resolve.h"
#include "src/record/triggers/resolve_internal.h"


/* ---- source lines ---- */

/* Does DWARF file name @src (often absolute) name the spec's @want?
 * A bare name compares with the base name, a path with the tail. */
static int file_matches(const char *src, const char *want)
{
	size_t ls = strlen(src), lw = strlen(want);

	if (!strchr(want, '/'))
		return !strcmp(rsv_base_name(src), want);
	if (lw > ls)
		return 0;
	return !strcmp(src + ls - lw, want) &&
	       (ls == lw || src[ls - lw - 1] == '/' || want[0] == '/');
}

struct line_search {
	int file_seen; /* some CU has the file */
	int found;
	uint64_t lowest;  /* lowest is_stmt address of the line */
	unsigned nearest; /* closest line with code, for the detail */
};

static void search_lines(Dwarf *dw, const struct rsv_spec *spec,
			 struct line_search *ls)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getsrclines(&cu, &lines, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *ln = dwarf_onesrcline(lines, i);
				const char *src;
				int no;
				bool stmt;
				Dwarf_Addr a;

				if (!ln ||
				    !(src = dwarf_linesrc(ln, NULL, NULL)) ||
				    !file_matches(src, spec->file) ||
				    dwarf_lineno(ln, &no) || no <= 0)
					continue;
				ls->file_seen = 1;
				if ((unsigned)no != spec->line) {
					unsigned d =
					    (unsigned)no > spec->line
						? (unsigned)no - spec->line
						: spec->line - (unsigned)no;
					unsigned b =
					    ls->nearest > spec->line
						? ls->nearest - spec->line
						: spec->line - ls->nearest;

					if (!ls->nearest || d < b)
						ls->nearest = (unsigned)no;
					continue;
				}
				if (dwarf_linebeginstatement(ln, &stmt) ||
				    !stmt || dwarf_lineaddr(ln, &a))
					continue;
				if (!ls->found || a < ls->lowest)
					ls->lowest = a;
				ls->found = 1;
			}
		}
		off = next;
	}
}

/* DWARF of @path: in the file, or in its separate debug file found by
 * build id under /usr/lib/debug/.build-id. */
static Dwarf *open_dwarf(const char *path, int *fd)
{
	uint8_t id[REC_BUILD_ID_MAX];
	char hex[2 * REC_BUILD_ID_MAX + 1], dbg[256];
	Dwarf *dw;
	int n;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0) {
		dw = dwarf_begin(*fd, DWARF_C_READ);
		if (dw)
			return dw;
		close(*fd);
	}
	n = buildid_read(path, id, sizeof(id));
	if (n < 2)
		return NULL;
	buildid_hex(id, (size_t)n, hex, sizeof(hex));
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 hex, hex + 2);
	*fd = open(dbg, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	dw = dwarf_begin(*fd, DWARF_C_READ);
	if (!dw)
		close(*fd);
	return dw;
}

int rsv_resolve_line(const struct rsv_spec *spec, const struct mod_list *l,
			struct rsv_result *out)
{
	const char **paths = calloc(l->n + 1, sizeof(*paths));
	unsigned nearest = 0;
	int seen = 0, r = RSV_PENDING;
	size_t np;

	if (!paths)
		return PS_ERR_NOMEM;
	np = rsv_distinct_paths(l, paths);
	for (size_t i = 0; i < np; i++) {
		struct line_search ls = {0, 0, 0, 0};
		uint64_t addr;
		char sym[64];
		Dwarf *dw;
		int fd;

		dw = open_dwarf(rsv_file_of(l, paths[i]), &fd);
		if (!dw)
			continue;
		search_lines(dw, spec, &ls);
		dwarf_end(dw);
		close(fd);
		seen |= ls.file_seen;
		if (ls.nearest && !nearest)
			nearest = ls.nearest;
		if (!ls.found)
			continue;
		r = rsv_runtime_addr(l, paths[i], ls.lowest, &addr);
		if (r == PS_ERR_NOT_FOUND) {
			r = RSV_PENDING;
			continue;
		}
		if (r)
			break;
		snprintf(sym, sizeof(sym), "%s:%u", rsv_base_name(spec->file),
			 spec->line);
		r = rsv_add_target(out, addr, paths[i], sym);
		break;
	}
	free(paths);
	if (r == RSV_PENDING && seen) {
		if (nearest)
			return ps_err_detail(PS_ERR_NOT_FOUND,
					     "%s has no code at line %u; the "
					     "nearest line with code is %u",
					     spec->file, spec->line, nearest);
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s has no code at line %u", spec->file,
				     spec->line);
	}
	return r;
}
