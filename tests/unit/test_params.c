/* SPDX-License-Identifier: MIT */
/* The DWARF parameter reader (decoder/params.c) on build/samples/args:
 * each function's parameters in order, their kinds and where the SysV
 * ABI puts them at the entry, and where the return value is. */
#include <string.h>

#include "decoder/params.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

static struct prm_table *load(void)
{
	struct prm_table *t = NULL;

	if (prm_table_load(ts_sample("args"), 0, &t))
		return NULL;
	return t;
}

static const struct prm_param *param(const struct prm_func *f, unsigned i)
{
	return f && i < f->n ? &f->p[i] : NULL;
}

#define CHECK_PARAM(f, i, nm, ty, where, idx)                                  \
	do {                                                                   \
		const struct prm_param *p_ = param(f, i);                      \
		CHECK(p_ != NULL);                                             \
		if (!p_)                                                       \
			break;                                                 \
		CHECK_STR(p_->name, nm);                                       \
		CHECK_EQ(p_->type, ty);                                        \
		CHECK_EQ(p_->at, where);                                       \
		CHECK_EQ(p_->index, idx);                                      \
	} while (0)

TEST(integers_in_registers)
{
	struct prm_table *t = load();
	const struct prm_func *f;

	CHECK(t != NULL);
	f = prm_table_by_name(t, "add");
	CHECK(f != NULL);
	CHECK_EQ(f->n, 2);
	CHECK_PARAM(f, 0, "a", PRM_INT, PRM_AT_REG, 0);
	CHECK_PARAM(f, 1, "b", PRM_INT, PRM_AT_REG, 1);
	CHECK_EQ(f->ret.type, PRM_INT);
	CHECK_EQ(f->ret.at, PRM_AT_RAX);
	CHECK_EQ(f->ret.size, 4);
	CHECK(prm_table_find(t, f->entry) == f);
	f = prm_table_by_name(t, "scale");
	CHECK_PARAM(f, 0, "v", PRM_UINT, PRM_AT_REG, 0);
	CHECK_PARAM(f, 1, "k", PRM_UINT, PRM_AT_REG, 1);
	CHECK_EQ(f->p[1].size, 1);
	prm_table_free(t);
}

TEST(doubles_take_xmm_in_their_own_order)
{
	struct prm_table *t = load();
	const struct prm_func *f = prm_table_by_name(t, "mix");

	CHECK(f != NULL);
	CHECK_EQ(f->n, 3);
	CHECK_PARAM(f, 0, "x", PRM_DOUBLE, PRM_AT_XMM, 0);
	CHECK_PARAM(f, 1, "n", PRM_INT, PRM_AT_REG, 0);
	CHECK_PARAM(f, 2, "y", PRM_DOUBLE, PRM_AT_XMM, 1);
	CHECK_EQ(f->ret.type, PRM_DOUBLE);
	CHECK_EQ(f->ret.at, PRM_AT_XMM);
	prm_table_free(t);
}

TEST(seventh_and_eighth_on_the_stack)
{
	struct prm_table *t = load();
	const struct prm_func *f = prm_table_by_name(t, "many");

	CHECK(f != NULL);
	CHECK_EQ(f->n, 8);
	CHECK_PARAM(f, 5, "f", PRM_INT, PRM_AT_REG, 5);
	CHECK_PARAM(f, 6, "g", PRM_INT, PRM_AT_STACK, 8);
	CHECK_PARAM(f, 7, "h", PRM_INT, PRM_AT_STACK, 16);
	CHECK_EQ(f->p[7].size, 8);
	prm_table_free(t);
}

TEST(enum_bool_char_pointer)
{
	struct prm_table *t = load();
	const struct prm_func *f = prm_table_by_name(t, "color_code");

	CHECK(f != NULL);
	CHECK_PARAM(f, 0, "c", PRM_ENUM, PRM_AT_REG, 0);
	CHECK_STR(prm_enum_name(&f->p[0], 6), "BLUE");
	CHECK_STR(prm_enum_name(&f->p[0], 5), "GREEN");
	CHECK(prm_enum_name(&f->p[0], 4) == NULL);
	f = prm_table_by_name(t, "is_even");
	CHECK_PARAM(f, 0, "v", PRM_INT, PRM_AT_REG, 0);
	CHECK_EQ(f->ret.type, PRM_BOOL);
	f = prm_table_by_name(t, "upper");
	CHECK_PARAM(f, 0, "c", PRM_CHAR, PRM_AT_REG, 0);
	CHECK_EQ(f->ret.type, PRM_CHAR);
	f = prm_table_by_name(t, "length");
	CHECK_PARAM(f, 0, "p", PRM_PTR, PRM_AT_REG, 0);
	prm_table_free(t);
}

TEST(memory_return_takes_rdi_float_takes_xmm)
{
	struct prm_table *t = load();
	const struct prm_func *f = prm_table_by_name(t, "triple_of");

	CHECK(f != NULL);
	CHECK_PARAM(f, 0, "a", PRM_INT, PRM_AT_REG, 1);
	CHECK_PARAM(f, 1, "b", PRM_INT, PRM_AT_REG, 2);
	CHECK_EQ(f->ret.type, PRM_NONE);
	f = prm_table_by_name(t, "half");
	CHECK_PARAM(f, 0, "f", PRM_FLOAT, PRM_AT_XMM, 0);
	CHECK_EQ(f->ret.type, PRM_FLOAT);
	CHECK_EQ(f->ret.at, PRM_AT_XMM);
	prm_table_free(t);
}

TEST(raw_adds_symbols_without_dwarf)
{
	struct prm_table *t = NULL, *r = NULL;

	CHECK_EQ(prm_table_load(ts_sample("args"), 0, &t), 0);
	CHECK_EQ(prm_table_load(ts_sample("args"), 1, &r), 0);
	CHECK(prm_table_count(r) > prm_table_count(t));
	/* _start has no DWARF: raw, no parameters */
	CHECK(prm_table_by_name(t, "_start") == NULL);
	CHECK(prm_table_by_name(r, "_start") != NULL);
	CHECK(prm_table_by_name(r, "_start")->raw);
	CHECK(!prm_table_by_name(r, "add")->raw);
	CHECK_STR(prm_reg_name(5), "r9");
	prm_table_free(t);
	prm_table_free(r);
}

TEST(bad_files)
{
	struct prm_table *t = (struct prm_table *)1;

	CHECK_EQ(prm_table_load("/nonexistent/x", 0, &t), PS_ERR_IO);
	CHECK(t == NULL);
	CHECK_EQ(prm_table_load("/etc/hostname", 0, &t), PS_ERR_FORMAT);
	CHECK(prm_table_find(NULL, 0) == NULL);
	CHECK_EQ(prm_table_count(NULL), 0);
}
