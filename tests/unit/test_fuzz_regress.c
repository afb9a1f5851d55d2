/* Every fuzz target (tests/fuzz/fuzz_*.c) replays the inputs that once
 * crashed it (tests/fuzz/regress/NAME/) and its seed corpus
 * (tests/fuzz/corpus/NAME/).  A crash, a sanitizer report or a leak
 * (under `make check-asan`) fails the program; the test prints how many
 * inputs each target took. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/harness.h"
#include "tests/support.h"

/* Feed every regular file of @dir to @t; returns the count (0 when the
 * directory does not exist), -1 when a file cannot be read. */
static int replay_dir(const struct fuzz_target *t, const char *dir)
{
	struct dirent **names;
	int n, count = 0;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		uint8_t *data;
		size_t len;

		if (names[i]->d_name[0] != '.' && count >= 0) {
			snprintf(path, sizeof(path), "%s/%s", dir,
				 names[i]->d_name);
			data = ts_read_file(path, &len);
			if (!data) {
				fprintf(stderr, "cannot read %s\n", path);
				count = -1;
			} else {
				/* A copy of exactly @len bytes, so ASan sees
				 * any read past the input's end. */
				uint8_t *exact = malloc(len ? len : 1);

				memcpy(exact, data, len);
				t->fn(exact, len);
				free(exact);
				free(data);
				count++;
			}
		}
		free(names[i]);
	}
	free(names);
	return count;
}

TEST(fuzz_inputs_replay_cleanly)
{
	const struct fuzz_target *t;
	size_t n = fuzz_targets(&t);

	CHECK(n >= 7);
	for (size_t i = 0; i < n; i++) {
		char dir[4096];
		int regress, corpus;

		snprintf(dir, sizeof(dir), "%s/tests/fuzz/regress/%s",
			 harness_top(), t[i].name);
		regress = replay_dir(&t[i], dir);
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s",
			 harness_top(), t[i].name);
		corpus = replay_dir(&t[i], dir);
		CHECK(regress >= 0 && corpus > 0);
		printf("  %s: %d regression inputs, %d corpus inputs\n",
		       t[i].name, regress, corpus);
	}
}
