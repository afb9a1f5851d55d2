/* SPDX-License-Identifier: MIT */
/* Sidecar feature: any tracepoint (--event tracepoint:CAT:NAME; kernel
 * side: tracepoint.bpf.c).  The record layout comes from the
 * tracepoint's format file in tracefs, so the decoder can show every
 * field as an argument. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/bpf/event.h"
#include "src/bpf/features.h"
#include "bpf/tracepoint.skel.h"

/* One "field:TYPE NAME;  offset:N;  size:N;  signed:N;" line into @f.
 * Returns 1 for a field to keep, 0 to skip (common_*), -1 if not a field
 * line. */
static int parse_field(const char *line, struct sdc_field *f)
{
	const char *p = strstr(line, "field:"), *semi, *name, *br;
	unsigned off, size, sgn;
	char decl[256];
	size_t n;

	if (!p)
		return -1;
	p += 6;
	semi = strchr(p, ';');
	if (!semi || (size_t)(semi - p) >= sizeof(decl))
		return -1;
	memcpy(decl, p, (size_t)(semi - p));
	decl[semi - p] = 0;
	if (sscanf(semi, "; offset:%u; size:%u; signed:%u;", &off, &size,
		   &sgn) != 3 &&
	    sscanf(semi, ";\toffset:%u;\tsize:%u;\tsigned:%u;", &off, &size,
		   &sgn) != 3)
		return -1;
	br = strchr(decl, '[');
	n = br ? (size_t)(br - decl) : strlen(decl);
	while (n && decl[n - 1] == ' ')
		n--;
	name = decl + n;
	while (name > decl && name[-1] != ' ' && name[-1] != '*')
		name--;
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(decl + n - name),
		 name);
	if (!strncmp(f->name, "common_", 7))
		return 0;
	f->offset = (uint16_t)off;
	f->size = (uint16_t)size;
	f->is_signed = sgn != 0;
	f->is_dataloc = !strncmp(decl, "__data_loc", 10);
	f->is_string = (br && strstr(decl, "char") != NULL) ||
		       (f->is_dataloc && strstr(decl, "char") != NULL);
	return 1;
}

/* Fields of CAT:NAME into @d; *size: the record's fixed part. */
static int read_format(const char *cat, const char *name, struct sdc_desc *d,
		       unsigned *size)
{
	char path[512], line[512];
	struct sdc_field f;
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/%s/format",
		 cat, name);
	fp = fopen(path, "r");
	if (!fp)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "no tracepoint %s:%s in this kernel (see "
				     "/sys/kernel/tracing/events/)",
				     cat, name);
	*size = 0;
	while (fgets(line, sizeof(line), fp)) {
		int k = parse_field(line, &f);

		if (k < 0)
			continue;
		if (f.offset + f.size > *size && k >= 0)
			*size = f.offset + f.size;
		if (k == 1 && d->nfields < SDC_MAX_FIELDS)
			d->fields[d->nfields++] = f;
	}
	fclose(fp);
	/* __data_loc strings follow the fixed part: keep what fits. */
	for (size_t i = 0; i < d->nfields; i++)
		if (d->fields[i].is_dataloc)
			*size = SDC_DATA_MAX;
	return 0;
}

static void tp_destroy(void *p)
{
	ps_tracepoint__destroy(p);
}

/* @target: "CAT:NAME" (its form checked by sdc_check_custom). */
static int tracepoint_start(const struct sdc_maps *m, const char *target,
			    unsigned id, struct sdc_desc *d,
			    struct sdc_part *part)
{
	const char *c = strchr(target, ':');
	struct ps_tracepoint *sk;
	char cat[128], name[128];
	struct bpf_link *l;
	char what[300];
	unsigned size = 0;
	int r;

	snprintf(cat, sizeof(cat), "%.*s", (int)(c - target), target);
	snprintf(name, sizeof(name), "%s", c + 1);
	/* = "%s:%s" of cat and name: d->name is no longer than either of
	 * them, so cutting them short never shows in it */
	snprintf(d->name, sizeof(d->name), "%s", target);
	d->is_kfunc = 0;
	r = read_format(cat, name, d, &size);
	if (r)
		return r;
	snprintf(what, sizeof(what), "tracepoint %s:%s", cat, name);
	sk = ps_tracepoint__open();
	if (!sk)
		return sdc_fail(what, -errno);
	sk->rodata->event_id = (__u16)id;
	sk->rodata->record_size = size > SDC_DATA_MAX ? SDC_DATA_MAX : size;
	r = sdc_share_maps(sk->obj, m);
	if (!r && (r = ps_tracepoint__load(sk)))
		r = sdc_fail(what, r);
	if (!r) {
		l = bpf_program__attach_tracepoint(sk->progs.on_tracepoint, cat,
						   name);
		if (!l)
			r = sdc_fail(what, -errno);
		else
			sk->links.on_tracepoint = l;
	}
	if (r) {
		ps_tracepoint__destroy(sk);
		return r;
	}
	part->skel = sk;
	part->destroy = tp_destroy;
	return 0;
}

/* tracefs holds the tracepoint's format file (and its id, for attaching). */
const struct sdc_custom_kind sdc_tracepoint_kind = {.needs_tracefs = 1,
						    .start = tracepoint_start};
