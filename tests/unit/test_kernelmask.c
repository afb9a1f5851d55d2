/* SPDX-License-Identifier: MIT */
/* Kernel masking (perfdata/kernelmask.c) on real Intel PT: the LLDB
 * recordings were made user-only; "kernelize" turns each of their
 * disable/enable pairs into what user+kernel tracing records (a TIP into
 * kernel code, kernel branches, a PSB+ FUP in the kernel, a TIP back), so
 * masking must give back a stream that decodes exactly like the
 * original, where without masking the user code is lost. */
#include <intel-pt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "perfdata/kernelmask.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define KTEXT 0xffffffff81000100ull

struct out {
	uint8_t *p;
	size_t n;
};

static void emit(struct out *o, const void *p, size_t n)
{
	o->p = realloc(o->p, o->n + n);
	if (!o->p)
		abort();
	memcpy(o->p + o->n, p, n);
	o->n += n;
}

/* An IP packet with a sign-extended 48-bit IP. */
static void emit_ip(struct out *o, uint8_t op, uint64_t ip)
{
	uint8_t b[7] = {(uint8_t)(op | (pt_ipc_sext_48 << 5))};

	for (int i = 0; i < 6; i++)
		b[1 + i] = (uint8_t)(ip >> (8 * i));
	emit(o, b, sizeof(b));
}

static uint64_t full_ip(const struct pt_packet_ip *p, uint64_t last)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | p->ip;
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | p->ip;
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | p->ip;
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	case pt_ipc_full:
		return p->ip;
	default:
		return last;
	}
}

/* The user-only stream @in as user+kernel tracing would record it;
 * *@changes counts the disable/enable pairs turned into kernel visits. */
static uint8_t *kernelize(const uint8_t *in, size_t len, size_t *out_len,
			  int *changes)
{
	static const uint8_t tnt[1] = {0x06};		    /* one taken */
	static const uint8_t tip16[3] = {0x2d, 0x40, 0x02}; /* update-16 */
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	struct pt_packet pkt;
	struct out o = {0};
	uint64_t off, start, last = 0;
	int size, kernel = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)in;
	cfg.end = (uint8_t *)in + len;
	d = pt_pkt_alloc_decoder(&cfg);
	*changes = 0;
	if (!d || pt_pkt_sync_forward(d) < 0 ||
	    pt_pkt_get_offset(d, &start) < 0)
		abort();
	emit(&o, in, start); /* what comes before the first PSB, as is */
	while (pt_pkt_get_offset(d, &off) >= 0 &&
	       (size = pt_pkt_next(d, &pkt, sizeof(pkt))) > 0) {
		uint64_t ip = last;

		if (pkt.type == ppt_psb)
			last = 0;
		if (pkt.type == ppt_tip || pkt.type == ppt_fup ||
		    pkt.type == ppt_tip_pge || pkt.type == ppt_tip_pgd) {
			ip = full_ip(&pkt.payload.ip, last);
			if (pkt.payload.ip.ipc != pt_ipc_suppressed)
				last = ip;
		}
		if (pkt.type == ppt_tip_pgd && !kernel) {
			emit_ip(&o, 0x0d, KTEXT); /* TIP into the kernel */
			emit(&o, tnt, sizeof(tnt));
			emit(&o, tip16, sizeof(tip16));
			kernel = 1;
			(*changes)++;
			continue;
		}
		if (pkt.type == ppt_tip_pge && kernel) {
			emit_ip(&o, 0x0d, ip); /* TIP back to user */
			last = ip;
			kernel = 0;
			continue;
		}
		if (pkt.type == ppt_psbend && kernel)
			emit_ip(&o, 0x1d, KTEXT); /* PSB+ FUP in the kernel */
		emit(&o, in + off, (size_t)size);
	}
	pt_pkt_free_decoder(d);
	*out_len = o.n;
	return o.p;
}

static int decode_single(const uint8_t *pt, size_t len, struct ts_recorder *r,
			 struct dec_stats *st)
{
	struct dec_config cfg = {.cpu = {1, 6, 79, 1}, .span_info = 1};
	struct dec_session *s;
	int err;

	ts_rec_init(r);
	err = dec_session_new(&cfg, &s);
	if (!err)
		err = dec_add_elf(
		    s, 1234, ts_realpt("lldb-single-thread/a.out"), 0, 0, 0);
	if (!err)
		err = dec_decode_thread(s, 1234, 3842849, pt, len, &r->base);
	if (s)
		*st = *dec_get_stats(s);
	dec_session_free(s);
	return err;
}

static int same_events(const struct ts_recorder *a, const struct ts_recorder *b)
{
	if (a->count[TS_EVENT] != b->count[TS_EVENT])
		return 0;
	for (size_t i = 0; i < a->count[TS_EVENT]; i++)
		if (ts_event_diff(ts_rec_event(a, i), ts_rec_event(b, i)))
			return 0;
	return 1;
}

TEST(masked_single_thread_decodes_like_user_only)
{
	struct ts_recorder orig, kern, masked;
	struct dec_stats so, sk, sm;
	uint8_t *pt, *k;
	size_t len, klen;
	int changes;

	pt = ts_read_file(ts_realpt("lldb-single-thread/3842849.trace"), &len);
	CHECK(pt);
	CHECK_EQ(decode_single(pt, len, &orig, &so), 0);
	CHECK_EQ(so.instructions, 21);
	/* a user-only stream has nothing to mask */
	CHECK_EQ(km_mask_kernel(pt, len), 0);

	k = kernelize(pt, len, &klen, &changes);
	CHECK_EQ(changes, 2);
	CHECK(klen > len);
	CHECK_EQ(decode_single(k, klen, &kern, &sk), 0);
	/* unmasked, the kernel code is missing: decode errors */
	CHECK(sk.err_nomap > 0);

	CHECK(km_mask_kernel(k, klen) >= 2 * changes);
	CHECK_EQ(decode_single(k, klen, &masked, &sm), 0);
	CHECK_EQ(sm.instructions, 21);
	CHECK_EQ(sm.err_nomap + sm.err_decode, 0);
	CHECK(same_events(&orig, &masked));
	/* masking is idempotent */
	CHECK_EQ(km_mask_kernel(k, klen), 0);
	ts_rec_free(&orig);
	ts_rec_free(&kern);
	ts_rec_free(&masked);
	free(k);
	free(pt);
}

TEST(masked_per_cpu_perf_data_decodes_like_user_only)
{
	static const int ids[2] = {45, 51};
	char path[2][512], name[128], cmd[8192],
	    dir[] = "/tmp/ptscope-kmXXXXXX";
	struct dec_perfdata_opts o = {0};
	struct dec_config cfg = {.span_info = 1};
	struct ts_recorder user, kern;
	struct dec_stats su, sk;
	uint8_t *data;
	size_t dlen;
	int changes, total = 0;

	CHECK(mkdtemp(dir));
	for (int i = 0; i < 2; i++) {
		size_t len, klen;
		uint8_t *pt, *k;
		FILE *f;

		snprintf(name, sizeof(name),
			 "lldb-per-cpu/cores/%d.intelpt_trace", ids[i]);
		pt = ts_read_file(ts_realpt(name), &len);
		CHECK(pt);
		k = kernelize(pt, len, &klen, &changes);
		total += changes;
		snprintf(path[i], sizeof(path[i]), "%s/%d.trace", dir, ids[i]);
		f = fopen(path[i], "wb");
		CHECK(f);
		CHECK_EQ(fwrite(k, 1, klen, f), klen);
		fclose(f);
		free(k);
		free(pt);
	}
	CHECK_EQ(total, 4); /* every disable of the two streams */
	/* the same recording, user-only and (kernelized) user+kernel */
	for (int v = 0; v < 2; v++) {
		snprintf(cmd, sizeof(cmd),
			 "%s/tools/mkperfdata -o %s/%d.data --cpuid "
			 "GenuineIntel,6,85,4 --tsc-conv "
			 "1076264588,31,18433473881008870804 --task "
			 "3497234,3497234,m.out --mmap 3497234,0x400000,%s "
			 "--cpu-pt %s,45,%s --cpu-pt %s,51,%s %s",
			 harness_build(), dir, v,
			 ts_realpt("lldb-per-cpu/modules/m.out"),
			 v ? path[0]
			   : ts_realpt("lldb-per-cpu/cores/45.intelpt_trace"),
			 ts_realpt(
			     "lldb-per-cpu/cores/45.perf_context_switch_trace"),
			 v ? path[1]
			   : ts_realpt("lldb-per-cpu/cores/51.intelpt_trace"),
			 ts_realpt(
			     "lldb-per-cpu/cores/51.perf_context_switch_trace"),
			 v ? "--kernel" : "");
		CHECK_EQ(system(cmd), 0);
	}
	snprintf(path[0], sizeof(path[0]), "%s/0.data", dir);
	data = ts_read_file(path[0], &dlen);
	CHECK(data);
	ts_rec_init(&user);
	CHECK_EQ(dec_decode_perfdata(&cfg, data, dlen, &o, &user.base, &su), 0);
	free(data);
	snprintf(path[1], sizeof(path[1]), "%s/1.data", dir);
	data = ts_read_file(path[1], &dlen);
	CHECK(data);
	ts_rec_init(&kern);
	CHECK_EQ(dec_decode_perfdata(&cfg, data, dlen, &o, &kern.base, &sk), 0);
	free(data);
	CHECK_EQ(su.instructions, 61825 + 19521);
	CHECK_EQ(sk.instructions, su.instructions);
	CHECK_EQ(sk.err_nomap, su.err_nomap);
	CHECK(same_events(&user, &kern));
	ts_rec_free(&user);
	ts_rec_free(&kern);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
}

TEST(mask_null_and_empty)
{
	CHECK_EQ(km_mask_kernel(NULL, 0), 0);
	CHECK_EQ(km_mask_kernel(NULL, 5), PS_ERR_INVAL);
	CHECK(km_is_kernel(0xffffffff81000000ull));
	CHECK(!km_is_kernel(0x7ffff7dd5000ull));
}
