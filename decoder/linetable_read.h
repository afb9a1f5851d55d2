/* SPDX-License-Identifier: MIT */
/* One compile unit's line table, as ptscope's line-table reader holds it
 * (private to linetable.c, which keeps and searches the tables, and
 * linetable_read.c, which reads one from its line program; see
 * linetable.h).  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_LINETABLE_READ_H
#define PTSCOPE_DECODER_LINETABLE_READ_H

#include <stddef.h>
#include <stdint.h>

struct lt_row {
	uint64_t addr;
	int32_t line;
	uint32_t file;
	uint32_t seq; /* program order, for a stable sort */
	uint8_t end;  /* end_sequence */
};

struct lt_table {
	uint64_t off;	    /* in .debug_line: the cache's key */
	int status;	    /* 0: read; PS_ERR_UNSUPPORTED: libdw answers */
	struct lt_row *row; /* libdw's order (see linetable.h) */
	size_t nrow;
	char **file; /* [nfile], owned: libdw's names */
	size_t nfile;
};

/* A section's bytes (NULL if the file has none). */
struct lt_sect {
	const uint8_t *p;
	size_t n;
};

struct lt_sections {
	struct lt_sect line, line_str, str;
};

/* Read the line program at @t->off of @s->line into @t's rows and files,
 * with @comp_dir (the unit's DW_AT_comp_dir, or NULL) as directory 0
 * before DWARF 5.  Returns 0, PS_ERR_UNSUPPORTED (libdw would fail, or
 * read what this reader does not), PS_ERR_NOMEM; on an error @t may hold
 * part of a table (lt_table_clear). */
int lt_read_table(const struct lt_sections *s, struct lt_table *t,
		  const char *comp_dir, unsigned address_size);

/* Free @t's rows and files, leaving it empty. */
void lt_table_clear(struct lt_table *t);

#endif /* PTSCOPE_DECODER_LINETABLE_READ_H */
