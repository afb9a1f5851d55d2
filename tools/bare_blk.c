/* SPDX-License-Identifier: MIT */
/* bare_blk: the baseline loops for benchmarks and data checks — libipt's
 * block decoder (pt_blk_next + pt_blk_event only) or its instruction
 * decoder (pt_insn_next + pt_insn_event) over one PT stream and an image,
 * with nothing else done per block.
 *
 *   bare_blk [--insn|--flow] [--cpu F/M/S] [--mtc-freq N] [--nom-freq N]
 *            [--cpuid-15 EAX,EBX] [--elf FILE[:BASE]]...
 *            [--raw FILE:ADDR]... [--repeat N]
 *            [-v] TRACE
 *
 * --flow runs ptscope's flow layer (decoder/flow.c) with a sink that only
 * counts, to measure what it adds over the bare block loop; it uses
 * ptscope's own flow engine where it can, --flow-libipt libipt's block
 * decoder only.  --compare runs both and checks that they report the
 * same branch events (kind, ips, time, instruction count, error) and
 * counts; it prints the first difference and exits 1.  --mutate N
 * [--seed S] compares on N damaged copies of the stream (1-4 random bytes
 * changed in each) instead, --save FILE writing the first that differs.
 * --elf follows ptxed: BASE is where the lowest PT_LOAD segment goes,
 * omitted or 0 means the link addresses.  --raw loads FILE's bytes at ADDR
 * as libipt's own file section (pt_image_add_file, as ptxed --raw does);
 * with --flow it goes through ptscope's image (img_add_raw) like decode's
 * --raw.  Prints one line:
 *   instructions N blocks N events N errors N nomap N seconds S
 * (-v also prints each error and enable/disable event with its ip).
 */
#include <errno.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/threads.h"
#include "ptscope/error.h"

struct counts {
	uint64_t insns, blocks, events, errors, nomap;
	uint64_t calls, returns; /* --insn: near calls and returns */
};

static int verbose;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -1;
	}
	*buf = malloc(n ? (size_t)n : 1);
	if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		free(*buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

static void note_error(struct counts *c, int status, uint64_t off, uint64_t ip)
{
	c->errors++;
	if (status == -pte_nomap)
		c->nomap++;
	if (verbose)
		printf("error at offset 0x%" PRIx64 " ip 0x%" PRIx64 ": %s\n",
		       off, ip, pt_errstr(pt_errcode(status)));
}

static void note_event(struct counts *c, const struct pt_event *ev)
{
	c->events++;
	if (!verbose)
		return;
	switch (ev->type) {
	case ptev_enabled:
		printf("enabled 0x%" PRIx64 "\n", ev->variant.enabled.ip);
		break;
	case ptev_disabled:
		printf("disabled\n");
		break;
	case ptev_async_disabled:
		printf("async disabled at 0x%" PRIx64 "\n",
		       ev->variant.async_disabled.at);
		break;
	case ptev_async_branch:
		printf("async branch 0x%" PRIx64 " -> 0x%" PRIx64 "\n",
		       ev->variant.async_branch.from,
		       ev->variant.async_branch.to);
		break;
	case ptev_overflow:
		printf("overflow\n");
		break;
	default:
		break;
	}
}

static void run_blk(const struct pt_config *cfg, struct pt_image *image,
		    struct counts *c)
{
	struct pt_block_decoder *d = pt_blk_alloc_decoder(cfg);
	int status;

	if (!d)
		return;
	pt_blk_set_image(d, image);
	for (;;) {
		status = pt_blk_sync_forward(d);
		if (status < 0)
			break;
		for (;;) {
			struct pt_block block;
			uint64_t off = 0;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(d, &ev, sizeof(ev));
				if (status < 0)
					break;
				note_event(c, &ev);
			}
			if (status < 0 || (status & pts_eos))
				break;
			block.ninsn = 0;
			block.ip = 0;
			status = pt_blk_next(d, &block, sizeof(block));
			c->insns += block.ninsn;
			c->blocks += block.ninsn != 0;
			if (status < 0) {
				pt_blk_get_offset(d, &off);
				if (status != -pte_eos)
					note_error(c, status, off, block.ip);
				break;
			}
		}
		if (status == -pte_eos)
			break;
	}
	pt_blk_free_decoder(d);
}

static void run_insn(const struct pt_config *cfg, struct pt_image *image,
		     struct counts *c)
{
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(cfg);
	uint64_t last_ip = 0;
	int status;

	if (!d)
		return;
	pt_insn_set_image(d, image);
	for (;;) {
		status = pt_insn_sync_forward(d);
		if (status < 0)
			break;
		for (;;) {
			struct pt_insn insn;
			uint64_t off = 0;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(d, &ev, sizeof(ev));
				if (status < 0)
					break;
				note_event(c, &ev);
			}
			if (status < 0 || (status & pts_eos))
				break;
			/* libipt 2.0.5 leaves the old instruction in place
			 * when it returns end-of-trace. */
			memset(&insn, 0, sizeof(insn));
			status = pt_insn_next(d, &insn, sizeof(insn));
			if (insn.iclass != ptic_error) {
				c->insns++;
				c->calls += insn.iclass == ptic_call;
				c->returns += insn.iclass == ptic_return;
				last_ip = insn.ip;
			}
			if (status < 0) {
				pt_insn_get_offset(d, &off);
				if (status != -pte_eos)
					note_error(c, status, off, insn.ip);
				break;
			}
		}
		if (status == -pte_eos)
			break;
	}
	if (verbose)
		printf("last ip 0x%" PRIx64 "\n", last_ip);
	pt_insn_free_decoder(d);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

static int count_sink(void *ctx, const struct br_event *ev)
{
	(*(uint64_t *)ctx)++;
	return ev->kind == BR_END ? 0 : 0;
}

/* One flow decoder for every repeat, as `ptscope decode` keeps one per
 * process for all its threads (libipt's own block cache also lasts
 * across the bare loop's repeats). */
static struct flow_decoder *g_flow;

static void run_flow(const struct dec_config *dc, struct img_image *img,
		     const uint8_t *buf, size_t len, int fast, struct counts *c)
{
	struct dec_stats st;
	uint64_t n = 0;

	memset(&st, 0, sizeof(st));
	if (!g_flow && flow_new(dc, img, NULL, &g_flow))
		return;
	flow_set_fast(g_flow, fast);
	if (flow_decode(g_flow, buf, len, count_sink, &n, &st) == 0) {
		c->insns = st.instructions;
		c->blocks = st.blocks;
		c->events = n;
		c->errors = st.err_decode + st.err_nomap;
		c->nomap = st.err_nomap;
	}
}

static int quiet;

/* Both engines over the stream; 0 if they agree. */
static int compare(const struct dec_config *dc, struct img_image *img,
		   const uint8_t *buf, size_t len)
{
	struct br_list l[2] = {{0}};
	struct dec_stats st[2];
	int ret[2], bad = 0;

	/* libipt twice: its block cache then holds every block, as in the
	 * fast engine (on a block's first visit libipt ends it at each
	 * direct call, so a call's time can come from an earlier packet). */
	for (int e = -2; e < 2; e++) {
		struct flow_decoder *fd;
		int k = e < 0 ? 0 : e;

		memset(&st[k], 0, sizeof(st[k]));
		l[k].n = 0;
		if (flow_new(dc, img, NULL, &fd))
			return 1;
		flow_set_fast(fd, k);
		ret[k] = flow_decode(fd, buf, len, br_list_sink, &l[k], &st[k]);
		flow_free(fd);
	}
	for (size_t i = 0; i < l[0].n && i < l[1].n; i++) {
		const struct br_event *a = &l[0].ev[i], *b = &l[1].ev[i];

		if (a->kind == b->kind && a->from == b->from &&
		    a->to == b->to && a->ret == b->ret && a->ts == b->ts &&
		    a->icount == b->icount && a->err == b->err)
			continue;
		printf("event %zu differs:\n", i);
		for (size_t k = i >= 3 ? i - 3 : 0; k <= i + 1; k++)
			for (int e = 0; e < 2; e++)
				if (k < l[e].n)
					printf(
					    "  %s %zu: kind %d from 0x%" PRIx64
					    " to 0x%" PRIx64 " ret 0x%" PRIx64
					    " ts %" PRIu64 " icount %" PRIu64
					    " err %d\n",
					    e ? "ptscope" : "libipt ", k,
					    l[e].ev[k].kind, l[e].ev[k].from,
					    l[e].ev[k].to, l[e].ev[k].ret,
					    l[e].ev[k].ts, l[e].ev[k].icount,
					    l[e].ev[k].err);
		bad = 1;
		break;
	}
	if (bad && quiet)
		quiet = 2;
	if (!bad && (l[0].n != l[1].n || ret[0] != ret[1] ||
		     st[0].instructions != st[1].instructions ||
		     st[0].err_nomap != st[1].err_nomap ||
		     st[0].err_decode != st[1].err_decode ||
		     st[0].err_truncated != st[1].err_truncated ||
		     st[0].err_overflow != st[1].err_overflow)) {
		printf("counts differ: events %zu/%zu, return %d/%d, "
		       "instructions %" PRIu64 "/%" PRIu64 "\n",
		       l[0].n, l[1].n, ret[0], ret[1], st[0].instructions,
		       st[1].instructions);
		bad = 1;
	}
	if (quiet == 1 || (quiet && !bad)) {
		free(l[0].ev);
		free(l[1].ev);
		return bad;
	}
	printf("compare: %zu events, %" PRIu64
	       " instructions, ptscope's engine "
	       "%s (%" PRIu64 " fallbacks): %s\n",
	       l[1].n, st[1].instructions,
	       st[1].flow_fast ? "decoded it" : "handed it to libipt",
	       st[1].flow_fallbacks, bad ? "DIFFERENT" : "same");
	free(l[0].ev);
	free(l[1].ev);
	return bad;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bare_blk [--insn|--flow|--flow-libipt|--compare] "
		"[--cpu F/M/S] [--mtc-freq N] "
		"[--nom-freq N] [--cpuid-15 EAX,EBX]\n"
		"                [--elf FILE[:BASE]]... [--raw FILE:ADDR]... "
		"[--repeat N] [-v] "
		"TRACE\n");
}

static int run_main(int argc, char **argv)
{
	struct dec_config dc;
	struct pt_config cfg;
	struct img_image *img = NULL;
	struct counts c = {0};
	const char *trace = NULL;
	uint64_t repeat = 1, v;
	int use_insn = 0, use_flow = 0, flow_fast = 1, use_compare = 0, err;
	uint64_t mutations = 0, seed = 1;
	const char *save = NULL;
	uint8_t *buf;
	size_t len;
	double t0;

	memset(&dc, 0, sizeof(dc));
	if (img_new(NULL, &img)) {
		fprintf(stderr, "bare_blk: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--insn")) {
			use_insn = 1;
		} else if (!strcmp(a, "--flow")) {
			use_flow = 1;
		} else if (!strcmp(a, "--flow-libipt")) {
			use_flow = 1;
			flow_fast = 0;
		} else if (!strcmp(a, "--mutate") && next &&
			   !parse_u64(next, &mutations)) {
			i++;
		} else if (!strcmp(a, "--save") && next) {
			save = next;
			i++;
		} else if (!strcmp(a, "--seed") && next &&
			   !parse_u64(next, &seed)) {
			i++;
		} else if (!strcmp(a, "--compare")) {
			use_flow = 1;
			use_compare = 1;
		} else if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "--cpu") && next) {
			unsigned f, m, s;

			if (sscanf(next, "%u/%u/%u", &f, &m, &s) != 3) {
				usage();
				return 2;
			}
			dc.cpu.is_intel = 1;
			dc.cpu.family = (uint16_t)f;
			dc.cpu.model = (uint8_t)m;
			dc.cpu.stepping = (uint8_t)s;
			i++;
		} else if (!strcmp(a, "--mtc-freq") && next &&
			   !parse_u64(next, &v)) {
			dc.mtc_freq = (uint8_t)v;
			i++;
		} else if (!strcmp(a, "--nom-freq") && next &&
			   !parse_u64(next, &v)) {
			dc.nom_freq = (uint8_t)v;
			i++;
		} else if (!strcmp(a, "--cpuid-15") && next) {
			if (sscanf(next, "%u,%u", &dc.cpuid_0x15_eax,
				   &dc.cpuid_0x15_ebx) != 2) {
				usage();
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--repeat") && next &&
			   !parse_u64(next, &repeat) && repeat) {
			i++;
		} else if (!strcmp(a, "--elf") && next) {
			char *path = strdup(next), *colon;
			uint64_t base = 0;

			colon = path ? strrchr(path, ':') : NULL;
			if (colon) {
				*colon = '\0';
				if (parse_u64(colon + 1, &base)) {
					usage();
					return 2;
				}
			}
			err = path ? img_add_elf(img, path, base, 0, 0)
				   : PS_ERR_NOMEM;
			if (err < 0) {
				fprintf(stderr, "bare_blk: %s\n",
					ps_err_message(err));
				return 1;
			}
			free(path);
			i++;
		} else if (!strcmp(a, "--raw") && next) {
			char *path = strdup(next), *colon;
			uint64_t addr = 0;
			uint8_t *bytes = NULL;
			size_t n = 0;

			colon = path ? strrchr(path, ':') : NULL;
			if (!colon ||
			    (*colon = '\0', parse_u64(colon + 1, &addr))) {
				usage();
				return 2;
			}
			if (read_file(path, &bytes, &n) < 0 || !n) {
				fprintf(stderr, "bare_blk: cannot read %s\n",
					path);
				return 1;
			}
			err = use_flow
				  ? img_add_raw(img, path, bytes, n, addr)
				  : pt_image_add_file(img_pt_image(img), path,
						      0, n, NULL, addr);
			if (err < 0) {
				fprintf(stderr, "bare_blk: cannot map %s\n",
					path);
				return 1;
			}
			free(bytes);
			free(path);
			i++;
		} else if (a[0] == '-' || trace) {
			usage();
			return 2;
		} else {
			trace = a;
		}
	}
	if (!trace) {
		usage();
		return 2;
	}
	if (read_file(trace, &buf, &len) < 0) {
		fprintf(stderr, "bare_blk: cannot read %s: %s\n", trace,
			strerror(errno));
		return 1;
	}
	pt_config_init(&cfg);
	if (flow_pt_config(&dc, &cfg) < 0) {
		fprintf(stderr, "bare_blk: libipt rejects this cpu\n");
		return 1;
	}
	cfg.begin = buf;
	cfg.end = buf + len;
	if (use_compare && mutations) {
		/* Damaged copies of the stream: 1-4 bytes changed each. */
		uint8_t *m = malloc(len ? len : 1);
		uint64_t bad = 0, fast = 0;

		srand((unsigned)seed);
		for (uint64_t k = 0; m && len && k < mutations; k++) {
			int nb = 1 + rand() % 4;

			memcpy(m, buf, len);
			for (int j = 0; j < nb; j++)
				m[(size_t)rand() % len] = (uint8_t)rand();
			quiet = 1;
			if (compare(&dc, img, m, len)) {
				printf("mutation %" PRIu64 " (seed %" PRIu64
				       ") differs\n",
				       k, seed);
				if (save && !bad) {
					FILE *f = fopen(save, "wb");

					if (f) {
						fwrite(m, 1, len, f);
						fclose(f);
						printf("written to %s\n", save);
					}
				}
				bad++;
			}
		}
		(void)fast;
		printf("mutations: %" PRIu64 ", different: %" PRIu64 "\n",
		       mutations, bad);
		free(m);
		img_free(img);
		free(buf);
		return bad ? 1 : 0;
	}
	if (use_compare) {
		err = compare(&dc, img, buf, len);
		img_free(img);
		free(buf);
		return err;
	}
	t0 = now_s();
	for (uint64_t r = 0; r < repeat; r++) {
		struct counts one = {0};

		if (use_flow)
			run_flow(&dc, img, buf, len, flow_fast, &one);
		else if (use_insn)
			run_insn(&cfg, img_pt_image(img), &one);
		else
			run_blk(&cfg, img_pt_image(img), &one);
		c = one;
		verbose = 0;
	}
	printf("instructions %" PRIu64 " blocks %" PRIu64 " events %" PRIu64
	       " errors %" PRIu64 " nomap %" PRIu64 " ",
	       c.insns, c.blocks, c.events, c.errors, c.nomap);
	if (use_insn)
		printf("calls %" PRIu64 " returns %" PRIu64 " ", c.calls,
		       c.returns);
	printf("seconds %.6f\n", (now_s() - t0) / (double)repeat);
	flow_free(g_flow);
	img_free(img);
	free(buf);
	return 0;
}

struct args {
	int argc;
	char **argv;
};

static int main_on_stack(void *p)
{
	struct args *a = p;

	return run_main(a->argc, a->argv);
}

/* On a thread with the stack libipt's block decoder may need
 * (decoder/threads.h): a damaged stream could otherwise end the tool. */
int main(int argc, char **argv)
{
	struct args a = {argc, argv};

	return dec_with_stack(main_on_stack, &a);
}
