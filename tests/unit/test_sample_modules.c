/* SPDX-License-Identifier: MIT */
/* Tests for the sample backend's choice of unwinder per module
 * (src/replay/sample_modules.c): a program built with frame pointers is
 * judged to keep them, Debian's libc (built without) is not. */
#include <stdio.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/replay/sample_modules.h"
#include "tests/harness.h"

/* The libc this test runs with (its own mapping). */
static int libc_path(char *out, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so.6")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(out, size, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

TEST(sample_program_keeps_frame_pointers)
{
	char path[512];
	double share;

	snprintf(path, sizeof(path), "%s/samples/demo", harness_build());
	share = smod_fp_share(path);

	printf("# demo: %.2f of its functions set up a frame pointer\n", share);
	CHECK(share >= SMOD_FP_SHARE);
}

TEST(debian_libc_has_no_frame_pointers)
{
	char path[512];
	double share;

	CHECK(libc_path(path, sizeof(path)));
	share = smod_fp_share(path);
	printf("# %s: %.2f of its functions set up a frame pointer\n", path,
	       share);
	CHECK(share >= 0);
	CHECK(share < SMOD_FP_SHARE);
}

TEST(missing_file_is_an_error_not_a_share)
{
	CHECK(smod_fp_share("/nonexistent/libnothing.so") < 0);
}

TEST(modules_are_found_by_pid_and_address)
{
	struct rec_module mods[3] = {
	    {.pid = 7, .start = 0x2000, .end = 0x3000, .path = "/bin/true"},
	    {.pid = 7, .start = 0x1000, .end = 0x2000, .path = "/bin/false"},
	    {.pid = 8, .start = 0x1000, .end = 0x9000, .path = "[vdso]"}};
	struct rec_info info = {0};
	struct recording in = {.info = &info, .mods = mods, .nmods = 3};
	struct smod_set s;

	CHECK_EQ(smod_build(&in, &s), 0);
	CHECK_EQ(s.n, 2); /* [vdso] has no file */
	CHECK(smod_find(&s, 7, 0, 0x1800) &&
	      !strcmp(smod_find(&s, 7, 0, 0x1800)->path, "/bin/false"));
	CHECK(smod_find(&s, 7, 0, 0x2000) &&
	      !strcmp(smod_find(&s, 7, 0, 0x2000)->path, "/bin/true"));
	CHECK(!smod_find(&s, 7, 0, 0x3000));
	CHECK(!smod_find(&s, 8, 0, 0x1800));
	smod_free(&s);
}
