/* SPDX-License-Identifier: MIT */
/* A module's function parameters from DWARF (prefix prm_): for each
 * function with code (DW_TAG_subprogram with an entry address), its
 * formal parameters in order, each with its name, how to show it (the
 * kind of its type, enumerators for an enum) and where the SysV x86-64
 * ABI puts it at the function's entry (an integer register, an xmm
 * register, or the stack), and where its return value is (rax, xmm0).
 *
 * The locations come from the types (at the entry instruction the ABI
 * decides them, whatever the optimisation level: an -O0 build describes
 * its parameters by their stack slots after the prologue), except where
 * DWARF says the parameter is in a register at the entry (an -O2 build's
 * location lists) or is a constant (DW_AT_const_value: a .constprop clone
 * that no longer takes it), which clones with dropped parameters need.  The
 * recorder (--args) writes the values this says and the decoder names and
 * shows them from the same table, so both agree on every index.
 *
 * Used by the decoder (decoder/args.c) and by the recorder
 * (src/record/args.c).  Never prints or exits.
 */
#ifndef PTSCOPE_DECODER_PARAMS_H
#define PTSCOPE_DECODER_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* How a value is shown. */
enum prm_type {
	PRM_NONE = 0, /* not passed in a way we read (struct by value...) */
	PRM_INT,      /* signed integer of @size bytes */
	PRM_UINT,     /* unsigned integer */
	PRM_BOOL,
	PRM_CHAR, /* char, signed or unsigned char */
	PRM_ENUM, /* enumerator name, else the number */
	PRM_PTR,  /* hex, NULL as NULL */
	PRM_DOUBLE,
	PRM_FLOAT
};

/* Where the value is at the function's entry. */
enum prm_loc {
	PRM_AT_NONE = 0,
	PRM_AT_REG,   /* integer register @index: rdi rsi rdx rcx r8 r9 */
	PRM_AT_XMM,   /* xmm@index (low 8 bytes) */
	PRM_AT_STACK, /* 8 bytes at rsp + @index at entry (index >= 8) */
	PRM_AT_RAX,   /* return value only: rax */
	PRM_AT_CONST  /* not passed: DWARF gives its value (@cval), e.g. in a
		       * .constprop clone */
};

struct prm_enum {
	int64_t value;
	const char *name;
};

struct prm_param {
	const char *name;	      /* "" when DWARF has none */
	uint8_t type;		      /* enum prm_type */
	uint8_t size;		      /* bytes of the type */
	uint8_t at;		      /* enum prm_loc */
	uint32_t index;		      /* register number or stack offset */
	const struct prm_enum *enums; /* PRM_ENUM: its enumerators */
	size_t nenums;
	uint64_t cval; /* PRM_AT_CONST */
};

struct prm_func {
	uint64_t entry;	  /* link-time address of the first instruction */
	const char *name; /* DWARF name, or the ELF symbol's (raw) */
	struct prm_param *p;
	unsigned n;	      /* parameters (0 for raw functions) */
	int raw;	      /* 1: no DWARF description (an ELF symbol only) */
	struct prm_param ret; /* ret.type PRM_NONE: void or not read */
};

struct prm_table;

/* Read the functions of the ELF file at @path.  @raw: also every function
 * symbol (.symtab/.dynsym) that DWARF does not describe, as a raw entry.
 * A file without DWARF gives an empty table (or only raw entries).
 * Returns 0, PS_ERR_IO (cannot open), PS_ERR_FORMAT (not ELF),
 * PS_ERR_NOMEM. */
int prm_table_load(const char *path, int raw, struct prm_table **out);
void prm_table_free(struct prm_table *t); /* accepts NULL */

/* Functions in entry order. */
size_t prm_table_count(const struct prm_table *t);
const struct prm_func *prm_table_func(const struct prm_table *t, size_t i);

/* The function whose entry is link address @entry, or NULL. */
const struct prm_func *prm_table_find(const struct prm_table *t,
				      uint64_t entry);
/* The first function named @name, or NULL. */
const struct prm_func *prm_table_by_name(const struct prm_table *t,
					 const char *name);

/* The enumerator of @p with value @v, or NULL. */
const char *prm_enum_name(const struct prm_param *p, int64_t v);

/* Names of the integer argument registers, by index ("rdi"...). */
const char *prm_reg_name(unsigned index);

#endif /* PTSCOPE_DECODER_PARAMS_H */
