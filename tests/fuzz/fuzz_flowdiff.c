/* SPDX-License-Identifier: MIT */
/* Fuzz target: ptscope's flow engine against libipt's block decoder.
 * Both decode the same random or mutated PT; any difference in the branch
 * events (kind, ips, time, instruction count, error) or in the counts is a
 * finding (the target traps).  libipt decodes the input three times and
 * the last run is compared: on a block's first visit libipt ends it at
 * direct calls, so times settle once its block cache holds the blocks.
 * An input that asks for 16- or 32-bit code, or on which libipt's last
 * two runs still differ, is skipped: libipt has no stable answer there.
 *
 * Input: as fuzz_ptdecode (its seeds fit): one mode byte, then the PT.
 *   mode & 3 == 0  lldb-single-thread/a.out
 *   mode & 3 == 1  lldb-multi-file/a.out + libfoo.so + libbar.so
 *   mode & 3 == 2  lldb-per-cpu/modules/m.out, the bytes as one stream
 *   mode & 3 == 3  raw code: two bytes of length L, then L bytes of code
 *                  mapped at 0x400000, then PT
 * Without the test data only mode 3 decodes. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/threads.h"
#include "tests/fuzz/fuzz.h"

#define MAX_EVENTS 65536

struct evs {
	struct br_event ev[MAX_EVENTS];
	size_t n, total;
};

static int keep(void *ctx, const struct br_event *ev)
{
	struct evs *e = ctx;

	if (e->n < MAX_EVENTS)
		e->ev[e->n++] = *ev;
	e->total++;
	return 0;
}

static int add_elf(struct img_image *img, const char *rel, uint64_t base)
{
	char path[4096];
	const char *td = fuzz_testdata();

	if (!td)
		return -1;
	snprintf(path, sizeof(path), "%s/real-pt/%s", td, rel);
	return img_add_elf(img, path, base, 0, 0) < 0 ? -1 : 0;
}

static int image(struct img_image *img, int kind)
{
	switch (kind) {
	case 0:
		return add_elf(img, "lldb-single-thread/a.out", 0);
	case 1:
		return add_elf(img, "lldb-multi-file/a.out", 0) ||
		       add_elf(img, "lldb-multi-file/libfoo.so",
			       0x7ffff7bd9000) ||
		       add_elf(img, "lldb-multi-file/libbar.so",
			       0x7ffff79d7000);
	default:
		return add_elf(img, "lldb-per-cpu/modules/m.out", 0);
	}
}

static int same(const struct evs *a, const struct evs *b)
{
	if (a->total != b->total || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct br_event *x = &a->ev[i], *y = &b->ev[i];

		if (x->kind != y->kind || x->from != y->from ||
		    x->to != y->to || x->ret != y->ret || x->ts != y->ts ||
		    x->icount != y->icount || x->err != y->err)
			return 0;
	}
	return 1;
}

static int same_result(const struct evs *e, const struct dec_stats *st,
		       const int *ret, int a, int b)
{
	return ret[a] == ret[b] && same(&e[a], &e[b]) &&
	       st[a].instructions == st[b].instructions &&
	       st[a].err_nomap == st[b].err_nomap &&
	       st[a].err_decode == st[b].err_decode &&
	       st[a].err_truncated == st[b].err_truncated &&
	       st[a].err_overflow == st[b].err_overflow;
}

/* Does the stream ask for code run in another mode than 64-bit (a
 * MODE.Exec packet)?  libipt's block cache keeps its entries by address
 * only (pt_blk_proceed_no_event_cached), so blocks decoded in one mode
 * are served in another, in the same decode or a later one on the same
 * image: its answer then depends on what it decoded before, and there is
 * no reference to compare with.  (ptscope's engine hands such streams to
 * libipt.) */
static int leaves_64bit(const uint8_t *data, size_t size)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	int found = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + size;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return 1;
	while (!found && pt_pkt_sync_forward(d) >= 0) {
		struct pt_packet p;

		while (!found && pt_pkt_next(d, &p, sizeof(p)) >= 0)
			found = p.type == ppt_mode &&
				p.payload.mode.leaf == pt_mol_exec &&
				pt_get_exec_mode(&p.payload.mode.bits.exec) !=
				    ptem_64bit;
	}
	pt_pkt_free_decoder(d);
	return found;
}

struct runs {
	const struct dec_config *cfg;
	struct img_image *img;
	const uint8_t *pt;
	size_t len;
	struct evs *e;
	struct dec_stats *st;
	int *ret;
};

/* libipt into slot 0 (twice, warming its block cache), then slot 2, then
 * ptscope's engine into slot 1.  Returns 0, or -1 when out of memory. */
static int four_runs(void *p)
{
	struct runs *r = p;

	for (int run = 0; run < 4; run++) {
		int fast = run == 3, k = fast ? 1 : run == 2 ? 2 : 0;
		struct flow_decoder *fd;

		r->e[k].n = r->e[k].total = 0;
		memset(&r->st[k], 0, sizeof(r->st[k]));
		if (flow_new(r->cfg, r->img, NULL, &fd))
			return -1;
		flow_set_fast(fd, fast);
		r->ret[k] =
		    flow_decode(fd, r->pt, r->len, keep, &r->e[k], &r->st[k]);
		flow_free(fd);
	}
	return 0;
}

FUZZ_TARGET(flowdiff)
{
	struct runs r;
	struct dec_config cfg = {.cpu = {1, 6, 79, 1}};
	struct img_image *img = NULL;
	struct evs *e = NULL;
	struct dec_stats st[3];
	int ret[3], kind;

	if (size < 1)
		return 0;
	kind = data[0] & 3;
	data++, size--;
	if (kind == 2)
		cfg.cpu = (struct dec_cpu){1, 6, 85, 4};
	e = calloc(3, sizeof(*e));
	if (!e || img_new(NULL, &img))
		goto out;
	if (kind == 3) {
		size_t code;

		if (size < 2)
			goto out;
		code = (size_t)(data[0] | data[1] << 8) % 4097;
		data += 2, size -= 2;
		if (code > size)
			code = size;
		if (!code || img_add_raw(img, "[code]", data, code, 0x400000))
			goto out;
		data += code, size -= code;
	} else if (image(img, kind)) {
		goto out;
	}
	if (leaves_64bit(data, size))
		goto out;
	/* on a thread with the stack libipt may need (decoder/threads.h) */
	r = (struct runs){&cfg, img, data, size, e, st, ret};
	if (dec_with_stack(four_runs, &r))
		goto out;
	/* Where libipt's own answer still changes from one warm run to the
	 * next, there is no reference to compare with. */
	if (!same_result(e, st, ret, 0, 2))
		goto out;
	if (!same_result(e, st, ret, 2, 1))
		__builtin_trap();
out:
	img_free(img);
	free(e);
	return 0;
}
