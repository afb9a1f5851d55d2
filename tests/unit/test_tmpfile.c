/* Temporary output files removed when ptscope is interrupted or its
 * decoder process dies (src/output/tmpfile.h). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/output/sink.h"
#include "src/output/tmpfile.h"
#include "tests/harness.h"

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void make_file(char *path)
{
	int fd = mkstemp(path);

	if (fd >= 0)
		close(fd);
}

TEST(untracked_files_stay_tracked_ones_go)
{
	char a[] = "/tmp/ptscope-tmpfile-a.XXXXXX";
	char b[] = "/tmp/ptscope-tmpfile-b.XXXXXX";
	int sa, sb;

	make_file(a);
	make_file(b);
	CHECK(exists(a) && exists(b));
	sa = ps_tmp_track(a);
	sb = ps_tmp_track(b);
	CHECK(sa >= 0 && sb >= 0 && sa != sb);
	ps_tmp_untrack(sa);
	ps_tmp_remove_all();
	CHECK(exists(a));
	CHECK(!exists(b));
	unlink(a);
	ps_tmp_untrack(-1); /* accepted */
}

TEST(a_sink_is_tracked_until_commit)
{
	char dir[] = "/tmp/ptscope-tmpfile-d.XXXXXX";
	char path[256];
	struct ps_sink *s;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	CHECK_EQ(ps_sink_open(path, 0, &s), 0);
	CHECK_EQ(ps_sink_write(s, "x", 1), 0);
	/* What a signal handler does: the temporary file goes, and the
	 * final name never appears. */
	ps_tmp_remove_all();
	CHECK(ps_sink_commit(s) != 0);
	CHECK(!exists(path));
	CHECK_EQ(ps_sink_open(path, 0, &s), 0);
	CHECK_EQ(ps_sink_commit(s), 0);
	CHECK(exists(path));
	ps_tmp_remove_all(); /* committed: no longer tracked, stays */
	CHECK(exists(path));
	unlink(path);
	rmdir(dir);
}

/* The temporary file is allocated ahead of the writes (sink.c, reserve());
 * the trace keeps exactly the bytes written, in order, whatever the size
 * of the writes, and what was allocated past them is given back. */
TEST(a_sink_allocated_ahead_keeps_exact_bytes_and_gives_back_the_rest)
{
	char dir[] = "/tmp/ptscope-tmpfile-r.XXXXXX";
	char path[256];
	static uint8_t chunk[3 << 20], back[3 << 20];
	struct ps_sink *s;
	struct stat st;
	/* (around SINK_DIRECT, 128 KiB: a write that goes straight to the
	 * file after the bytes pending, and one just under it) */
	size_t total = 0, sizes[] = {1,	      4095,   3 << 20, 700000, 13,
				     3 << 20, 131071, 131072,  5,      262000};
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.fxt", dir);
	CHECK_EQ(ps_sink_open(path, 0, &s), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t j = 0; j < sizes[i]; j++)
			chunk[j] = (uint8_t)(i * 31 + j * 7);
		CHECK_EQ(ps_sink_write(s, chunk, sizes[i]), 0);
		total += sizes[i];
	}
	CHECK_EQ(ps_sink_commit(s), 0);
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ((size_t)st.st_size, total);
	/* Blocks in use: the file's, not the 4 + 8 MB allocated ahead. */
	CHECK((uint64_t)st.st_blocks * 512 < total + (1 << 20));
	f = fopen(path, "rb");
	CHECK(f);
	for (size_t i = 0; f && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK_EQ(fread(back, 1, sizes[i], f), sizes[i]);
		for (size_t j = 0; j < sizes[i]; j++)
			if (back[j] != (uint8_t)(i * 31 + j * 7)) {
				CHECK(!"byte differs");
				break;
			}
	}
	if (f)
		fclose(f);
	unlink(path);
	rmdir(dir);
}

TEST(a_dead_childs_file_is_removed_by_the_parent)
{
	char path[] = "/tmp/ptscope-tmpfile-c.XXXXXX";
	int st = 0;
	pid_t pid;

	CHECK_EQ(ps_tmp_share(), 0);
	CHECK_EQ(ps_tmp_share(), 0); /* idempotent */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		make_file(path);
		ps_tmp_track(path);
		raise(SIGKILL); /* the OOM killer, say */
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st));
	/* The child's name is in the shared list: the parent can remove
	 * the file it never knew. */
	ps_tmp_remove_all();
	{
		/* The child's mkstemp filled in its copy of path; look for
		 * leftovers by prefix instead. */
		FILE *p =
		    popen("ls /tmp | grep -c '^ptscope-tmpfile-c\\.'", "r");
		int n = -1;

		CHECK(p);
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
		CHECK_EQ(n, 0);
	}
}
