/* SPDX-License-Identifier: MIT */
/* perf.data build-id table and finding the binaries a recording ran (see
 * perfdata.h).  A build-id record: {header; s32 pid; u8 build_id[24];
 * char filename[]}; with PD_MISC_BUILD_ID_SIZE, build_id[20] is its
 * length, else it is 20 bytes (shorter ids are zero-padded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder/decoder.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/le.h"

#define BID_REC_FIXED 36 /* header + pid + build_id[24] */

int pd_build_ids_parse(struct pd_build_ids *t, const uint8_t *p, size_t len)
{
	size_t pos = 0;

	while (pos + 8 <= len) {
		uint16_t misc = le_rd16(p + pos + 4);
		uint16_t size = le_rd16(p + pos + 6);
		struct pd_build_id_entry *v, *e;
		size_t nlen;

		if (size < BID_REC_FIXED || size > len - pos)
			return ps_err_detail(PS_ERR_FORMAT,
					     "a perf.data build-id record at "
					     "byte %zu of its table has size "
					     "%u",
					     pos, size);
		v = realloc(t->v, (t->n + 1) * sizeof(*v));
		if (!v)
			return PS_ERR_NOMEM;
		t->v = v;
		e = &v[t->n];
		memset(e, 0, sizeof(*e));
		e->pid = (int32_t)le_rd32(p + pos + 8);
		memcpy(e->bid.id, p + pos + 12, PD_BUILD_ID_MAX);
		e->bid.size = PD_BUILD_ID_MAX;
		if ((misc & PD_MISC_BUILD_ID_SIZE) &&
		    p[pos + 12 + PD_BUILD_ID_MAX] <= PD_BUILD_ID_MAX)
			e->bid.size = p[pos + 12 + PD_BUILD_ID_MAX];
		nlen = strnlen((const char *)p + pos + BID_REC_FIXED,
			       size - BID_REC_FIXED);
		e->path = strndup((const char *)p + pos + BID_REC_FIXED, nlen);
		if (!e->path)
			return PS_ERR_NOMEM;
		t->n++;
		pos += size;
	}
	return 0;
}

const struct pd_build_id *pd_build_ids_find(const struct pd_build_ids *t,
					    const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path) && t->v[i].bid.size)
			return &t->v[i].bid;
	return NULL;
}

void pd_build_ids_free(struct pd_build_ids *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

void pd_build_id_hex(const struct pd_build_id *b, char *out)
{
	for (int i = 0; i < b->size; i++)
		sprintf(out + 2 * i, "%02x", b->id[i]);
	out[2 * b->size] = '\0';
}

int pd_file_build_id(const char *path, struct pd_build_id *out)
{
	uint8_t id[DEC_BUILD_ID_MAX];
	int n;

	memset(out, 0, sizeof(*out));
	n = dec_elf_build_id(path, id);
	if (n < 0)
		return n;
	/* perf keeps 20 bytes: a longer id is compared by its start */
	if (n > PD_BUILD_ID_MAX)
		n = PD_BUILD_ID_MAX;
	memcpy(out->id, id, (size_t)n);
	out->size = (uint8_t)n;
	return 0;
}

int pd_build_id_equal(const struct pd_build_id *rec,
		      const struct pd_build_id *file)
{
	if (file->size > rec->size || !file->size)
		return 0;
	if (memcmp(rec->id, file->id, file->size))
		return 0;
	for (int i = file->size; i < rec->size; i++)
		if (rec->id[i])
			return 0;
	return 1;
}

enum { CAND_NONE, CAND_OK, CAND_OTHER_ID };

static int candidate(const char *path, const struct pd_build_id *bid)
{
	struct pd_build_id have;
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return CAND_NONE;
	if (pd_file_build_id(path, &have) < 0)
		return CAND_NONE;
	if (!bid || !bid->size)
		return CAND_OK;
	return pd_build_id_equal(bid, &have) ? CAND_OK : CAND_OTHER_ID;
}

/* A build-id cache entry: a file, or perf's newer directory holding
 * "elf" (or "vdso"). */
static int cache_entry(const char *base, const struct pd_build_id *bid,
		       char *out, size_t size)
{
	static const char *const names[] = {"", "/elf", "/vdso"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((size_t)snprintf(out, size, "%s%s", base, names[i]) >= size)
			return 0;
		if (candidate(out, bid) == CAND_OK)
			return 1;
	}
	return 0;
}

static int find_cached(const char *path, const struct pd_build_id *bid,
		       char *out, size_t size)
{
	char hex[2 * PD_BUILD_ID_MAX + 1], base[4096];
	const char *dirs[3];
	const char *home = getenv("HOME");
	char homedir[4096];
	size_t nd = 0;

	pd_build_id_hex(bid, hex);
	if (getenv("PERF_BUILDID_DIR") && *getenv("PERF_BUILDID_DIR"))
		dirs[nd++] = getenv("PERF_BUILDID_DIR");
	if (home && *home &&
	    (size_t)snprintf(homedir, sizeof(homedir), "%s/.debug", home) <
		sizeof(homedir))
		dirs[nd++] = homedir;
	for (size_t i = 0; i < nd; i++) {
		snprintf(base, sizeof(base), "%s/.build-id/%.2s/%s", dirs[i],
			 hex, hex + 2);
		if (cache_entry(base, bid, out, size))
			return 1;
		snprintf(base, sizeof(base), "%s/%s%s/%s", dirs[i],
			 path[0] == '/' ? "" : "/", path, hex);
		if (cache_entry(base, bid, out, size))
			return 1;
	}
	/* distributions link the binary itself here (the .debug file
	 * beside it has no code) */
	snprintf(base, sizeof(base), "/usr/lib/debug/.build-id/%.2s/%s", hex,
		 hex + 2);
	return candidate(base, bid) == CAND_OK &&
	       (size_t)snprintf(out, size, "%s", base) < size;
}

int pd_find_binary(const char *path, const struct pd_build_id *bid,
		   char **found)
{
	char hex[2 * PD_BUILD_ID_MAX + 1], buf[4096];
	int at_path;

	*found = NULL;
	at_path = path[0] == '/' ? candidate(path, bid) : CAND_NONE;
	if (at_path == CAND_OK) {
		*found = strdup(path);
		return *found ? 0 : PS_ERR_NOMEM;
	}
	if (bid && bid->size && find_cached(path, bid, buf, sizeof(buf))) {
		*found = strdup(buf);
		return *found ? 0 : PS_ERR_NOMEM;
	}
	if ((!bid || !bid->size) && path[0] != '/')
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "%s has no build id in the recording, so its code cannot "
		    "be found: it is not decoded (perf keeps it when recording "
		    "with build ids, the default; or give the file with --elf "
		    "FILE)",
		    path);
	if (!bid || !bid->size)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "%s is not on this machine and the recording has no build "
		    "id for it: its code is not decoded (copy the binary to "
		    "that path, or give it with --elf FILE)",
		    path);
	pd_build_id_hex(bid, hex);
	if (at_path == CAND_OTHER_ID)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "%s on this machine is not the one recorded (build id %s "
		    "differs), and no build-id cache has that one: its code "
		    "is not decoded (give the recorded binary with --elf FILE, "
		    "or add it with `perf buildid-cache -a FILE`)",
		    path, hex);
	return ps_err_detail(
	    PS_ERR_NOT_FOUND,
	    "%s (build id %s) is neither at that path nor in ~/.debug or "
	    "/usr/lib/debug/.build-id: its code is not decoded (give it "
	    "with --elf FILE, or add it with `perf buildid-cache -a FILE`)",
	    path, hex);
}
