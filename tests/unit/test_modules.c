/* SPDX-License-Identifier: MIT */
/* Tests for module lists (src/record/core/modules.c): /proc/PID/maps of this
 * process and of a child, build ids (checked against the note the loader
 * mapped), vDSO and memory reads, archives and finding files again. */
#include <elf.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/recording/build_id.h"
#include "src/replay/locate.h"
#include "src/recording/recfile.h"
#include "tests/harness.h"

static volatile uint64_t marker = 0x1122334455667788ULL;

__attribute__((noinline)) static int local_code(int x)
{
	return x * 3;
}

/* The build id of the main program as the loader mapped it. */
struct note_find {
	uint8_t id[64];
	size_t len;
};

static int find_note(struct dl_phdr_info *info, size_t size, void *data)
{
	struct note_find *nf = data;

	/* The first object is the main program. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + 12 <= end) {
			uint32_t nsz, dsz, type;

			memcpy(&nsz, p, 4);
			memcpy(&dsz, p + 4, 4);
			memcpy(&type, p + 8, 4);
			if (type == NT_GNU_BUILD_ID && nsz == 4 &&
			    !memcmp(p + 12, "GNU", 4) && dsz <= 64) {
				memcpy(nf->id, p + 16, dsz);
				nf->len = dsz;
				return 1;
			}
			p += 12 + ((nsz + 3) & ~3u) + ((dsz + 3) & ~3u);
		}
	}
	return 1;
}

TEST(reads_this_process)
{
	const struct mod_map *m;
	struct mod_list l, ex;
	struct note_find nf = {{0}, 0};
	int saw_libc = 0;

	CHECK_EQ(mod_read(0, 0, &l), 0);
	CHECK(l.n > 5);
	for (size_t i = 1; i < l.n; i++)
		CHECK(l.maps[i].start >= l.maps[i - 1].end);
	m = mod_find(&l, (uintptr_t)&local_code);
	CHECK(m != NULL);
	CHECK(m->prot & PROT_EXEC);
	CHECK(strstr(m->path, "test_modules") != NULL);
	CHECK(m->inode != 0);
	dl_iterate_phdr(find_note, &nf);
	CHECK(nf.len == 20);
	CHECK_EQ(m->build_id_len, nf.len);
	CHECK(!memcmp(m->build_id, nf.id, nf.len));
	m = mod_find(&l, (uintptr_t)&marker);
	CHECK(m && (m->prot & PROT_WRITE) && !(m->prot & PROT_EXEC));
	CHECK(mod_find(&l, 0) == NULL);

	CHECK_EQ(mod_read(0, MOD_EXEC | MOD_FILE, &ex), 0);
	CHECK(ex.n > 0 && ex.n < l.n);
	for (size_t i = 0; i < ex.n; i++) {
		CHECK(ex.maps[i].prot & PROT_EXEC);
		CHECK(ex.maps[i].inode || !strcmp(ex.maps[i].path, "[vdso]"));
		if (strstr(ex.maps[i].path, "/libc.so.6")) {
			saw_libc = 1;
			CHECK(ex.maps[i].build_id_len == 20);
		}
	}
	CHECK(saw_libc);
	mod_list_fini(&ex);
	mod_list_fini(&l);
	mod_list_fini(NULL);
}

TEST(build_ids_and_bad_files)
{
	uint8_t a[64], b[64];
	char hex[129];
	int n;

	n = buildid_read("/proc/self/exe", a, sizeof(a));
	CHECK_EQ(n, 20);
	/* The second call comes from the cache and agrees. */
	CHECK_EQ(buildid_read("/proc/self/exe", b, sizeof(b)), 20);
	CHECK(!memcmp(a, b, 20));
	buildid_hex(a, 20, hex, sizeof(hex));
	CHECK_EQ(strlen(hex), 40);
	buildid_hex(a, 20, hex, 5);
	CHECK_EQ(strlen(hex), 4);
	CHECK_EQ(buildid_read("/proc/self/exe", b, 4), PS_ERR_LIMIT);
	CHECK_EQ(buildid_read("/etc/hostname", a, sizeof(a)), PS_ERR_FORMAT);
	CHECK_EQ(buildid_read("/nonexistent/x", a, sizeof(a)), PS_ERR_IO);
	CHECK_EQ(buildid_read(NULL, a, sizeof(a)), PS_ERR_INVAL);
}

TEST(vdso_and_memory_of_a_child)
{
	uint64_t self_vdso = getauxval(AT_SYSINFO_EHDR), vaddr = 0, v = 0;
	struct mod_list l;
	uint8_t *bytes = NULL;
	size_t len = 0;
	int p[2];
	pid_t pid;

	CHECK(pipe(p) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c;

		marker = 0xabcdef0123456789ULL;
		close(p[1]);
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	/* The child changes marker after the fork: poll until visible. */
	for (int i = 0; i < 1000 && v != 0xabcdef0123456789ULL; i++) {
		CHECK_EQ(mod_read_mem(pid, (uintptr_t)&marker, &v, sizeof(v)),
			 sizeof(v));
		if (v != 0xabcdef0123456789ULL)
			usleep(1000);
	}
	CHECK(v == 0xabcdef0123456789ULL);
	CHECK_EQ(mod_read(pid, MOD_EXEC, &l), 0);
	CHECK(mod_find(&l, (uintptr_t)&local_code) != NULL);
	mod_list_fini(&l);
	CHECK_EQ(mod_read_vdso(pid, &bytes, &len, &vaddr), 0);
	/* fork keeps the layout: the child's vDSO is ours. */
	CHECK_EQ(vaddr, self_vdso);
	CHECK(len >= 4096);
	CHECK(!memcmp(bytes, "\177ELF", 4));
	CHECK(!memcmp(bytes, (const void *)(uintptr_t)self_vdso, len));
	free(bytes);
	close(p[1]);
	CHECK_EQ(waitpid(pid, NULL, 0), pid);
	/* Gone: a clear "not found". */
	CHECK_EQ(mod_read(pid, 0, &l), PS_ERR_NOT_FOUND);
	CHECK(mod_read_mem(pid, (uintptr_t)&marker, &v, sizeof(v)) < 0);
	/* Unmapped address: nothing read, no error. */
	CHECK_EQ(mod_read_mem(0, 16, &v, sizeof(v)), 0);
}

TEST(read_file_respects_the_limit)
{
	uint8_t *bytes = NULL;
	size_t len = 0;

	CHECK_EQ(mod_read_file("/proc/self/exe", 16, &bytes, &len),
		 PS_ERR_LIMIT);
	CHECK_EQ(mod_read_file("/proc/self/exe", 1ULL << 32, &bytes, &len), 0);
	CHECK(len > 1000);
	CHECK(!memcmp(bytes, "\177ELF", 4));
	free(bytes);
	CHECK_EQ(mod_read_file("/nonexistent/x", 1 << 20, &bytes, &len),
		 PS_ERR_IO);
}

/* --archive end to end: the module goes into a recording with its bytes;
 * on "another machine" (the path gone) mod_locate gives an extracted copy
 * with the same build id. */
TEST(archived_module_is_found_again)
{
	char dir[] = "/tmp/ptscope-mod-XXXXXX", rec[128], copy[128];
	char cache[128], found[512];
	const struct mod_map *m;
	const struct rec_module *rm;
	struct rec_module wm;
	struct rec_info info;
	struct mod_list l;
	struct recw *w;
	struct recr *r;
	uint8_t *bytes, *self, id[64];
	size_t len, slen;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(rec, sizeof(rec), "%s/a.ptsc", dir);
	snprintf(copy, sizeof(copy), "%s/prog", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	/* A copy of this program stands for the recorded module. */
	CHECK_EQ(mod_read_file("/proc/self/exe", 1ULL << 32, &self, &slen), 0);
	f = fopen(copy, "wb");
	CHECK(f);
	CHECK_EQ(fwrite(self, 1, slen, f), slen);
	fclose(f);
	CHECK_EQ(mod_read(0, MOD_EXEC, &l), 0);
	m = mod_find(&l, (uintptr_t)&local_code);
	CHECK(m);
	mod_to_rec(m, 1, &wm);
	wm.path = copy;
	CHECK_EQ(wm.build_id_len, 20);
	memset(&info, 0, sizeof(info));
	CHECK_EQ(recw_open(rec, &w), 0);
	CHECK_EQ(recw_header(w, &info), 0);
	CHECK_EQ(mod_read_file(copy, 1ULL << 32, &bytes, &len), 0);
	CHECK_EQ(recw_module(w, &wm, bytes, len), 0);
	wm.start += 0x10000000; /* unarchived twin, same file */
	CHECK_EQ(recw_module(w, &wm, NULL, 0), 0);
	free(bytes);
	CHECK_EQ(recw_finish(w), 0);
	mod_list_fini(&l);

	CHECK_EQ(recr_open(rec, &r), 0);
	CHECK_EQ(recr_modules(r, &rm), 2);
	/* On this machine the unarchived one is found at its path. */
	CHECK_EQ(replay_locate_module(&rm[1], cache, found, sizeof(found)), 0);
	CHECK_STR(found, copy);
	unlink(copy);
	CHECK_EQ(replay_locate_module(&rm[1], cache, found, sizeof(found)),
		 PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(PS_ERR_NOT_FOUND), "--archive"));
	/* The archived one comes out of the recording. */
	CHECK_EQ(replay_locate_module(&rm[0], cache, found, sizeof(found)), 0);
	CHECK(strncmp(found, cache, strlen(cache)) == 0);
	CHECK(strstr(found, "/prog") != NULL);
	CHECK_EQ(buildid_read(found, id, sizeof(id)), 20);
	CHECK(!memcmp(id, rm[0].build_id, 20));
	CHECK_EQ(mod_read_file(found, 1ULL << 32, &bytes, &len), 0);
	CHECK_EQ(len, slen);
	CHECK(!memcmp(bytes, self, slen));
	free(bytes);
	/* Twice: reuses the extracted file. */
	CHECK_EQ(replay_locate_module(&rm[0], cache, found, sizeof(found)), 0);
	CHECK_EQ(replay_locate_module(&rm[0], cache, found, 8), PS_ERR_LIMIT);
	recr_close(r);
	free(self);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_EQ(system(cmd), 0);
	}
}

/* A different file at the recorded path is not silently used. */
TEST(build_id_mismatch_is_refused)
{
	struct rec_module m;
	char found[256];

	memset(&m, 0, sizeof(m));
	m.path = "/proc/self/exe";
	m.build_id_len = 20;
	memset(m.build_id, 0x5a, 20);
	CHECK_EQ(replay_locate_module(&m, NULL, found, sizeof(found)), PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(PS_ERR_NOT_FOUND), "differs"));
	m.build_id_len = 0; /* no id recorded: the file is taken */
	CHECK_EQ(replay_locate_module(&m, NULL, found, sizeof(found)), 0);
	CHECK_STR(found, "/proc/self/exe");
}

TEST(missing_process_is_not_found)
{
	struct mod_list l;

	CHECK_EQ(mod_read(0x3ffffffe, 0, &l), PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(PS_ERR_NOT_FOUND), "no process"));
	CHECK_EQ(mod_read(0, 0, NULL), PS_ERR_INVAL);
}
