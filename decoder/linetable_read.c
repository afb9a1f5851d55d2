/* SPDX-License-Identifier: MIT */
/* A compile unit's line program read into a table (see linetable_read.h).
 * Each rule below is libdw's (elfutils 0.188, read_srclines); where libdw
 * would fail, or store a value it cannot hold, the table is left to libdw
 * (PS_ERR_UNSUPPORTED), which then gives its own answer. */
#include <dwarf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/linetable_read.h"
#include "ptscope/error.h"

#define UNSUP PS_ERR_UNSUPPORTED

struct rd {
	const uint8_t *p, *end;
	int bad; /* libdw would fail, or read what this reader does not */
};

static uint64_t get_n(struct rd *r, unsigned n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* A LEB128 that ends within 10 bytes and the data (libdw gives
 * UINT64_MAX otherwise: left to it). */
static uint64_t get_leb(struct rd *r, int is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (int i = 0; i < 10 && r->p < r->end; i++) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (is_signed && shift < 64 && (b & 0x40))
				v |= ~0ull << shift;
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

static uint64_t uleb(struct rd *r)
{
	return get_leb(r, 0);
}

/* A NUL-terminated string at *@p within [p, end). */
static const char *cstr(struct rd *r)
{
	const uint8_t *z = memchr(r->p, 0, (size_t)(r->end - r->p));
	const char *s = (const char *)r->p;

	if (!z) {
		r->bad = 1;
		return NULL;
	}
	r->p = z + 1;
	return s;
}

static const char *sect_str(const struct lt_sect *s, uint64_t off)
{
	if (!s->p || off >= s->n || !memchr(s->p + off, 0, s->n - off))
		return NULL;
	return (const char *)s->p + off;
}

/* A DWARF 5 entry format's value of @form: the string for a string form (else
 * NULL), or a number in *@num; the reader moved past it. */
static const char *form_value(const struct lt_sections *c, struct rd *r,
			      unsigned form, unsigned offset_size,
			      uint64_t *num)
{
	uint64_t n;

	*num = UINT64_MAX;
	switch (form) {
	case DW_FORM_string:
		return cstr(r);
	case DW_FORM_line_strp:
	case DW_FORM_strp: {
		const char *s;

		n = get_n(r, offset_size);
		s = sect_str(form == DW_FORM_strp ? &c->str : &c->line_str, n);
		if (!s && !r->bad)
			r->bad = 1;
		return s;
	}
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
		*num = get_n(r, form == DW_FORM_data1	? 1
				: form == DW_FORM_data2 ? 2
				: form == DW_FORM_data4 ? 4
							: 8);
		return NULL;
	case DW_FORM_udata:
		*num = uleb(r);
		return NULL;
	case DW_FORM_data16:
		get_n(r, 8);
		get_n(r, 8);
		return NULL;
	case DW_FORM_block:
		n = uleb(r);
		if (!r->bad && n > (uint64_t)(r->end - r->p))
			r->bad = 1;
		else if (!r->bad)
			r->p += n;
		return NULL;
	default: /* strx, sup, alt, ...: libdw's */
		r->bad = 1;
		return NULL;
	}
}

static int add_file(struct lt_table *t, size_t *cap, const char *dir,
		    const char *name, int replace_first)
{
	size_t dl = dir ? strlen(dir) : 0, nl = strlen(name);
	char *s;

	/* libdw's join: an absolute name as it is, else dir "/" name, or
	 * the name alone when there is no directory (no DW_AT_comp_dir) */
	if (name[0] == '/' || !dir) {
		s = strdup(name);
	} else {
		s = malloc(dl + 1 + nl + 1);
		if (s) {
			memcpy(s, dir, dl);
			s[dl] = '/';
			memcpy(s + dl + 1, name, nl + 1);
		}
	}
	if (!s)
		return PS_ERR_NOMEM;
	if (replace_first) {
		free(t->file[0]);
		t->file[0] = s;
		return 0;
	}
	if (t->nfile == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		char **nf = realloc(t->file, nc * sizeof(*nf));

		if (!nf) {
			free(s);
			return PS_ERR_NOMEM;
		}
		t->file = nf;
		*cap = nc;
	}
	t->file[t->nfile++] = s;
	return 0;
}

struct state {
	uint64_t addr;
	int64_t line;
	uint32_t file, column, isa, discriminator;
	uint8_t is_stmt; /* only checked: libdw keeps one bit of it */
};

static int new_row(struct lt_table *t, size_t *cap, const struct state *st,
		   int end)
{
	struct lt_row *r;

	/* what libdw's add_new_line would not store: it fails then */
	if (st->line < INT_MIN || st->line > INT_MAX || st->column > 0xffff ||
	    st->isa > 0xff || st->discriminator > 0xffffff || st->is_stmt > 1)
		return UNSUP;
	if (t->nrow == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct lt_row *nr = realloc(t->row, nc * sizeof(*nr));

		if (!nr)
			return PS_ERR_NOMEM;
		t->row = nr;
		*cap = nc;
	}
	r = &t->row[t->nrow];
	r->addr = st->addr;
	r->line = (int32_t)st->line;
	r->file = st->file;
	r->seq = (uint32_t)t->nrow;
	r->end = (uint8_t)end;
	t->nrow++;
	return 0;
}

/* libdw's order: by address, an end_sequence first, then program order */
static int row_cmp(const void *a, const void *b)
{
	const struct lt_row *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->end != y->end)
		return x->end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int sorted(const struct lt_table *t)
{
	for (size_t i = 1; i < t->nrow; i++)
		if (row_cmp(&t->row[i - 1], &t->row[i]) > 0)
			return 0;
	return 1;
}

/* The header's directories and files; @r left at the program. */
static int read_header(const struct lt_sections *c, struct lt_table *t,
		       struct rd *r, unsigned version, unsigned offset_size,
		       const char *comp_dir, size_t *fcap)
{
	const char **dir = NULL;
	size_t ndir = 0;
	uint64_t num;
	int err = 0;

	if (version < 5) {
		const uint8_t *q = r->p;

		while (q < r->end && *q) {
			const uint8_t *z = memchr(q, 0, (size_t)(r->end - q));

			if (!z)
				return UNSUP;
			ndir++;
			q = z + 1;
		}
		if (q >= r->end)
			return UNSUP;
		dir = malloc((ndir + 1) * sizeof(*dir));
		if (!dir)
			return PS_ERR_NOMEM;
		dir[0] = comp_dir;
		for (size_t i = 1; i <= ndir; i++)
			dir[i] = cstr(r);
		ndir++;
		r->p++; /* the list's NUL */
		err = add_file(t, fcap, NULL, "???", 0);
		/* uleb() at the data's end is bad, as libdw's guard before
		 * each get_uleb128 makes it */
		while (!err && r->p < r->end && *r->p) {
			const char *name = cstr(r);
			uint64_t di = uleb(r);

			if (r->bad || di >= ndir) {
				err = UNSUP;
				break;
			}
			err = add_file(t, fcap, dir[di], name, 0);
			uleb(r); /* mtime */
			uleb(r); /* length */
			if (!err && r->bad)
				err = UNSUP;
		}
		if (!err && (r->p >= r->end || *r->p))
			err = UNSUP;
		r->p++;
		free(dir);
		return err;
	}
	/* DWARF 5: entry formats, then entries; libdw reads the path of
	 * each directory, the path and directory index of each file */
	for (int pass = 0; pass < 2 && !err; pass++) {
		unsigned form[256], nforms, path = 256, idx = 256;
		uint64_t count;

		if (r->p >= r->end) {
			err = UNSUP;
			break;
		}
		nforms = *r->p++;
		for (unsigned i = 0; i < nforms; i++) {
			uint64_t desc = uleb(r), f = uleb(r);

			if (r->bad || desc > 0xffff || f > 0xffff) {
				err = UNSUP;
				break;
			}
			form[i] = (unsigned)f;
			if (desc == DW_LNCT_path)
				path = i;
			else if (pass && desc == DW_LNCT_directory_index)
				idx = i;
		}
		if (err)
			break;
		if (nforms && (path == 256 || (pass && idx == 256))) {
			err = UNSUP;
			break;
		}
		count = uleb(r);
		if (r->bad || (!nforms && count) ||
		    (nforms && count > (uint64_t)(r->end - r->p) / nforms)) {
			err = UNSUP;
			break;
		}
		if (!pass) {
			dir = malloc((count ? count : 1) * sizeof(*dir));
			if (!dir) {
				err = PS_ERR_NOMEM;
				break;
			}
			ndir = count;
		} else {
			err = add_file(t, fcap, NULL, "???", 0);
		}
		for (uint64_t n = 0; n < count && !err; n++) {
			const char *s = NULL;
			uint64_t di = UINT64_MAX;

			for (unsigned m = 0; m < nforms && !r->bad; m++) {
				const char *v = form_value(c, r, form[m],
							   offset_size, &num);

				if (m == path)
					s = v;
				else if (m == idx)
					di = num;
			}
			if (r->bad || !s || (pass && di >= ndir)) {
				err = UNSUP;
				break;
			}
			if (!pass)
				dir[n] = s;
			else
				err = add_file(t, fcap, dir[di], s, n == 0);
		}
	}
	free(dir);
	return err;
}

/* libdw's read_srclines (see linetable_read.h). */
int lt_read_table(const struct lt_sections *c, struct lt_table *t,
		  const char *comp_dir, unsigned address_size)
{
	struct rd r = {c->line.p + t->off, c->line.p + c->line.n, 0};
	size_t fcap = 0, rcap = 0;
	unsigned version, offset_size = 4, min_inst, line_range, opcode_base;
	int line_base, err;
	uint8_t default_is_stmt;
	const uint8_t *std_len, *header_start;
	uint64_t unit_length, header_length;
	struct state st;

	if (t->off >= c->line.n || (address_size != 4 && address_size != 8))
		return UNSUP;
	unit_length = get_n(&r, 4);
	if (unit_length == 0xffffffff) {
		unit_length = get_n(&r, 8);
		offset_size = 8;
	}
	if (r.bad || unit_length > (uint64_t)(r.end - r.p))
		return UNSUP;
	r.end = r.p + unit_length;
	version = (unsigned)get_n(&r, 2);
	if (r.bad || version < 2 || version > 5)
		return UNSUP;
	if (version >= 5 && (get_n(&r, 1) != address_size || get_n(&r, 1)))
		return UNSUP;
	header_length = get_n(&r, offset_size);
	header_start = r.p;
	min_inst = (unsigned)get_n(&r, 1);
	/* max_ops_per_instr: op_index is always 0 with 1, as on x86 */
	if (version >= 4 && get_n(&r, 1) != 1)
		return UNSUP;
	default_is_stmt = (uint8_t)get_n(&r, 1);
	line_base = (int8_t)get_n(&r, 1);
	line_range = (unsigned)get_n(&r, 1);
	opcode_base = (unsigned)get_n(&r, 1);
	if (r.bad || opcode_base == 0 ||
	    (size_t)(r.end - r.p) < opcode_base - 1 ||
	    header_length > (uint64_t)(r.end - header_start))
		return UNSUP;
	std_len = r.p - 1;
	r.p += opcode_base - 1;
	err = read_header(c, t, &r, version, offset_size, comp_dir, &fcap);
	if (err)
		return err;
	/* (a CUBIN's 4-byte string offset at the header's end: libdw's) */
	if (r.bad || r.p != header_start + header_length)
		return UNSUP;
	memset(&st, 0, sizeof(st));
	st.file = 1;
	st.line = 1;
	st.is_stmt = default_is_stmt;
	while (r.p < r.end) {
		unsigned op = *r.p++;
		uint64_t v;

		if (op >= opcode_base) {
			if (!line_range)
				return UNSUP;
			st.line +=
			    line_base + (int)((op - opcode_base) % line_range);
			st.addr += (uint32_t)(min_inst * ((op - opcode_base) /
							  line_range));
			err = new_row(t, &rcap, &st, 0);
			st.discriminator = 0;
		} else if (op == 0) {
			unsigned len, sub;

			if (r.end - r.p < 2)
				return UNSUP;
			len = *r.p++;
			if ((size_t)(r.end - r.p) < len)
				return UNSUP;
			sub = *r.p++;
			switch (sub) {
			case DW_LNE_end_sequence:
				err = new_row(t, &rcap, &st, 1);
				memset(&st, 0, sizeof(st));
				st.file = 1;
				st.line = 1;
				st.is_stmt = default_is_stmt;
				break;
			case DW_LNE_set_address:
				st.addr = get_n(&r, address_size);
				break;
			case DW_LNE_define_file: /* DWARF 2-4, unused by
						  * compilers: libdw's */
				return UNSUP;
			case DW_LNE_set_discriminator:
				if (std_len[DW_LNE_set_discriminator] != 1 ||
				    r.p >= r.end)
					return UNSUP;
				st.discriminator = (uint32_t)uleb(&r);
				break;
			case DW_LNE_NVIDIA_inlined_call:
			case DW_LNE_NVIDIA_set_function_name:
				return UNSUP;
			default:
				if (!len)
					return UNSUP;
				r.p += len - 1;
				break;
			}
		} else if (op <= DW_LNS_set_isa) {
			static const uint8_t nargs[] = {
			    [DW_LNS_copy] = 0,
			    [DW_LNS_advance_pc] = 1,
			    [DW_LNS_advance_line] = 1,
			    [DW_LNS_set_file] = 1,
			    [DW_LNS_set_column] = 1,
			    [DW_LNS_negate_stmt] = 0,
			    [DW_LNS_set_basic_block] = 0,
			    [DW_LNS_const_add_pc] = 0,
			    [DW_LNS_fixed_advance_pc] = 1,
			    [DW_LNS_set_prologue_end] = 0,
			    [DW_LNS_set_epilogue_begin] = 0,
			    [DW_LNS_set_isa] = 1};

			if (std_len[op] != nargs[op])
				return UNSUP;
			if (nargs[op] && op != DW_LNS_fixed_advance_pc &&
			    r.p >= r.end)
				return UNSUP;
			switch (op) {
			case DW_LNS_copy:
				err = new_row(t, &rcap, &st, 0);
				st.discriminator = 0;
				break;
			case DW_LNS_advance_pc:
				v = uleb(&r);
				st.addr += (uint32_t)(min_inst * (uint32_t)v);
				break;
			case DW_LNS_advance_line:
				st.line += (int32_t)(uint32_t)get_leb(&r, 1);
				break;
			case DW_LNS_set_file:
				st.file = (uint32_t)uleb(&r);
				break;
			case DW_LNS_set_column:
				st.column = (uint32_t)uleb(&r);
				break;
			case DW_LNS_const_add_pc:
				if (!line_range)
					return UNSUP;
				st.addr +=
				    (uint32_t)(min_inst * ((255 - opcode_base) /
							   line_range));
				break;
			case DW_LNS_fixed_advance_pc:
				st.addr += get_n(&r, 2);
				break;
			case DW_LNS_set_isa:
				st.isa = (uint32_t)uleb(&r);
				break;
			case DW_LNS_negate_stmt:
				st.is_stmt = (uint8_t)(1 - st.is_stmt);
				break;
			default: /* flags, which no answer here uses */
				break;
			}
		} else {
			/* an opcode this reader (and libdw) does not know:
			 * its arguments skipped */
			for (unsigned n = std_len[op]; n > 0; n--) {
				if (r.p >= r.end)
					return UNSUP;
				uleb(&r);
			}
		}
		if (err)
			return err;
		if (r.bad)
			return UNSUP;
	}
	if (!sorted(t))
		qsort(t->row, t->nrow, sizeof(*t->row), row_cmp);
	/* libdw marks the highest address an end_sequence */
	if (t->nrow)
		t->row[t->nrow - 1].end = 1;
	return 0;
}

void lt_table_clear(struct lt_table *t)
{
	for (size_t i = 0; i < t->nfile; i++)
		free(t->file[i]);
	free(t->file);
	free(t->row);
	t->file = NULL;
	t->row = NULL;
	t->nfile = t->nrow = 0;
}
