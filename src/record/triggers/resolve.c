/* SPDX-License-Identifier: MIT */
/* Trigger specs → run-time code addresses (see resolve.h): parsing a
 * spec, and choosing how to resolve it. */
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


#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/record/triggers/resolve.h"
#include "src/record/triggers/resolve_internal.h"

#define TRIGGER_FN "ptscope_trigger"

/* ---- parsing ---- */

static int bad_spec(const char *text, const char *why)
{
	return ps_err_detail(PS_ERR_INVAL,
			     "bad trigger '%s': %s (use '.', FUNCTION, "
			     "FUNCTION@MODULE, FILE:LINE or addr:0xADDR)",
			     text, why);
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int rsv_parse(const char *text, struct rsv_spec *out)
{
	struct rsv_spec s;
	const char *colon, *at;

	if (!out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_parse: no output");
	if (!text || !*text)
		return bad_spec("", "empty");
	memset(&s, 0, sizeof(s));
	s.text = strdup(text);
	if (!s.text)
		return PS_ERR_NOMEM;
	colon = strrchr(text, ':');
	if (!strcmp(text, ".")) {
		s.kind = RSV_SYMBOL;
		s.name = strdup(TRIGGER_FN);
		if (!s.name)
			goto nomem;
	} else if (!strncmp(text, "addr:", 5)) {
		char *end;

		s.kind = RSV_ADDR;
		errno = 0;
		s.addr = strtoull(text + 5, &end, 0);
		if (errno || end == text + 5 || *end || !s.addr ||
		    text[5] == '-') {
			free(s.text);
			return bad_spec(text, "the address is not a number");
		}
	} else if (colon && colon > text && colon[-1] != ':' &&
		   all_digits(colon + 1)) {
		unsigned long line;

		s.kind = RSV_LINE;
		errno = 0;
		line = strtoul(colon + 1, NULL, 10);
		if (errno || line == 0 || line > UINT32_MAX) {
			free(s.text);
			return bad_spec(text, "line numbers start at 1");
		}
		s.line = (unsigned)line;
		s.file = strndup(text, (size_t)(colon - text));
		if (!s.file)
			goto nomem;
	} else {
		s.kind = RSV_SYMBOL;
		at = strrchr(text, '@');
		if (at && (at == text || !at[1])) {
			free(s.text);
			return bad_spec(text, "a name and a module are needed "
					      "around '@'");
		}
		s.name = at ? strndup(text, (size_t)(at - text)) : strdup(text);
		if (!s.name)
			goto nomem;
		if (at) {
			s.module = strdup(at + 1);
			if (!s.module)
				goto nomem;
		}
		if (!strcmp(s.name, ".")) {
			/* ".@MODULE": the trigger function of MODULE. */
			free(s.name);
			s.name = strdup(TRIGGER_FN);
			if (!s.name)
				goto nomem;
		}
	}
	*out = s;
	return 0;
nomem:
	rsv_spec_fini(&s);
	return PS_ERR_NOMEM;
}

void rsv_spec_fini(struct rsv_spec *s)
{
	if (!s)
		return;
	free(s->text);
	free(s->name);
	free(s->module);
	free(s->file);
	memset(s, 0, sizeof(*s));
}

/* ---- entry points ---- */

int rsv_resolve_maps(const struct rsv_spec *spec, const struct mod_list *l,
		     struct rsv_result *out)
{
	const struct mod_map *m;

	if (!spec || !l || !out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: bad args");
	out->t = NULL;
	out->n = 0;
	out->near_miss = 0;
	switch (spec->kind) {
	case RSV_SYMBOL:
		return rsv_resolve_symbol(spec, l, out);
	case RSV_LINE:
		return rsv_resolve_line(spec, l, out);
	case RSV_ADDR:
		m = mod_find(l, spec->addr);
		if (!m || !(m->prot & PROT_EXEC))
			return ps_err_detail(PS_ERR_INVAL,
					     "address 0x%" PRIx64 " is not in "
					     "the target's code",
					     spec->addr);
		return rsv_add_target(out, spec->addr, m->path, spec->text);
	}
	return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: unknown spec kind");
}

int rsv_resolve(const struct rsv_spec *spec, pid_t pid, struct rsv_result *out)
{
	struct mod_list l;
	int r;

	if (!spec || !out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: bad args");
	out->t = NULL;
	out->n = 0;
	out->near_miss = 0;
	r = mod_read(pid, MOD_EXEC, &l);
	if (r)
		return r;
	r = rsv_resolve_maps(spec, &l, out);
	mod_list_fini(&l);
	return r;
}
