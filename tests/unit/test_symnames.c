/* SPDX-License-Identifier: MIT */
/* Which name a user sees when several symbols name one address
 * (decoder/symnames.c), table-driven: each row is the symbols at one
 * address, as glibc defines them, and the name and aliases to show. */
#include <stdlib.h>
#include <string.h>

#include "decoder/symnames.h"
#include "tests/harness.h"

struct row {
	const char *names[6];
	uint8_t rank[6];
	uint8_t ifunc[6];
	uint8_t exported[6];
	const char *shown, *aliases;
};

#define G SYM_RANK_GLOBAL
#define W SYM_RANK_WEAK
#define L SYM_RANK_LOCAL

static const struct row rows[] = {
    /* glibc 2.36's libc.so.6 .symtab */
    {{"_IO_puts", "puts", "__GI__IO_puts"},
     {G, W, L},
     {0},
     {1, 1, 0},
     "puts",
     "_IO_puts, __GI__IO_puts"},
    {{"__libc_write", "__write", "write", "__GI___libc_write"},
     {G, W, W, L},
     {0},
     {0, 1, 1, 0},
     "write",
     "__libc_write, __write, __GI___libc_write"},
    {{"__libc_calloc", "calloc", "__calloc"},
     {G, W, G},
     {0},
     {0, 1, 0},
     "calloc",
     "__calloc, __libc_calloc"},
    {{"__brk", "brk"}, {G, W}, {0}, {0, 1}, "brk", "__brk"},
    /* fewer underscores first, then global over weak over local */
    {{"_x", "x_weak_but_plain"}, {G, W}, {0}, {0}, "x_weak_but_plain", "_x"},
    {{"f_local", "f_weak", "f_global"},
     {L, W, G},
     {0},
     {0},
     "f_global",
     "f_weak, f_local"},
    /* then the one .dynsym exports */
    {{"aaa", "bbb"}, {G, G}, {0}, {0, 1}, "bbb", "aaa"},
    /* an IFUNC resolver: the indirect function's name over helpers */
    {{"strchr_ifunc", "__GI_strchr", "index", "strchr"},
     {L, L, W, G},
     {0, 1, 1, 1},
     {0, 0, 1, 1},
     "strchr",
     "index, strchr_ifunc, __GI_strchr"},
    /* versioned twins read alike: no repeat among aliases */
    {{"memcpy", "memcpy"}, {L, G}, {1, 1}, {0, 1}, "memcpy", NULL},
    {{"only"}, {G}, {0}, {1}, "only", NULL},
};

TEST(the_name_a_programmer_calls_is_shown)
{
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct mfunc f[6];
		char buf[256];
		size_t n = 0;

		memset(f, 0xa5, sizeof(f)); /* poison */
		for (; n < 6 && rows[r].names[n]; n++)
			f[n] = (struct mfunc){.start = 0x1000,
					      .end = 0x1010,
					      .name = rows[r].names[n],
					      .rank = rows[r].rank[n],
					      .ifunc = rows[r].ifunc[n],
					      .exported = rows[r].exported[n]};
		qsort(f, n, sizeof(*f), sym_names_cmp);
		CHECK_STR(f[0].name, rows[r].shown);
		if (sym_names_aliases(f, n, buf, sizeof(buf)))
			CHECK_STR(buf, rows[r].aliases ? rows[r].aliases : "");
		else
			CHECK(rows[r].aliases == NULL);
	}
}

TEST(sized_symbols_and_addresses_come_first)
{
	struct mfunc f[] = {
	    {.start = 0x2000, .end = 0x2010, .name = "later"},
	    {.start = 0x1000, .end = 0x1000, .name = "unsized"},
	    {.start = 0x1000, .end = 0x1008, .name = "__sized"},
	};

	qsort(f, 3, sizeof(*f), sym_names_cmp);
	CHECK_STR(f[0].name, "__sized");
	CHECK_STR(f[1].name, "unsized");
	CHECK_STR(f[2].name, "later");
}

TEST(aliases_stop_at_the_buffer_size)
{
	struct mfunc f[] = {{.name = "a"}, {.name = "bbbb"}, {.name = "cccc"}};
	char buf[8];

	CHECK_EQ(sym_names_aliases(f, 3, buf, sizeof(buf)), 4);
	CHECK_STR(buf, "bbbb");
	CHECK_EQ(sym_names_aliases(f, 3, buf, 0), 0);
}
