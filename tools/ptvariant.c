/* SPDX-License-Identifier: MIT */
/* ptvariant: a copy of a PT stream as a CPU with other settings, or one
 * that lost packets, would have written it, for tests and benchmarks of
 * the decoder on what the emulated backends do not write.  The control
 * flow stays the program's.
 *
 *   ptvariant [--cyc] [--cbr N | --first-cbr N] [--mtc | --mtc-clock]
 *             [--tnt-full | --ovf K] IN OUT
 *
 * --cyc        cycle-accurate mode (IA32_RTIT_CTL.CYCEn, perf's
 *              intel_pt/cyc=1/, what magic-trace records): a CYC packet
 *              before each TNT, TIP, TIP.PGE, TIP.PGD and FUP outside
 *              PSB+, its cycle count from a fixed sequence (no cycles are
 *              known here: the emulated recordings count instructions).
 * --cbr N      a CBR packet of ratio N in each PSB+: with the nominal
 *              frequency (decode --nom-freq) it calibrates CYC from the
 *              first PSB+, where TSC-only timing cannot.
 * --first-cbr N  the same in the first PSB+ only: the calibration then
 *              comes from the stream's start, however far away.
 * --mtc        an MTC after each TSC outside PSB+ (payloads counting up;
 *              no TMA, so they move no time): MTCs take over CYC's
 *              calibration from PSB+ TSCs, and without CPUID 0x15 they
 *              cannot calibrate.
 * --mtc-clock  timing as perf records it by default (intel_pt//: TSC and
 *              MTC on, MTCFreq 3, no CYC): a TSC and a TMA in each PSB+,
 *              elsewhere no TSC but an MTC each time the crystal clock
 *              passes a multiple of 8 ticks, the clock taken as the TSC
 *              divided by MTC_CLOCK_RATIO (decode with --mtc-freq 3
 *              --cpuid-15 2,100).  The emulated backends write a TSC
 *              every 8 ns instead, most of their streams' bytes; a CPU's
 *              stream is mostly flow.  Where the trace has no packets (a
 *              system call under user-only tracing), a CPU goes on
 *              writing an MTC each period, since timing packets do not
 *              depend on the code traced: so does this, up to 256 of
 *              them, and past that one every 128 periods, which lets a
 *              decoder count the 8-bit payload's wraps as well.
 * --tnt-full   TNT bits packed as a CPU packs them: six to a TNT packet,
 *              which only a packet other than a timing one (MTC, a TSC
 *              --mtc-clock drops) ends early.  The emulated backends end
 *              a TNT at every packet, so their TNTs hold 2-3 bits where
 *              most of a CPU's hold 6 (57,248 of the 69,516 in
 *              shared/testdata/real-pt's Skylake perf.data).
 * --ovf K      before every K-th PSB, the CPU's buffer overflows: the
 *              packets from 2 KiB after the PSB before it are lost, and
 *              an OVF and a FUP of the address the PSB+ gives (where
 *              tracing went on) take their place. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OVF_AFTER 2048 /* bytes after a PSB where an overflow may start */
/* --mtc-clock: TSC ticks per crystal clock tick (CPUID 0x15 EBX/EAX =
 * 100/2) and crystal clock ticks per MTC (MTCFreq 3: 2^3). */
#define MTC_CLOCK_RATIO 50
#define MTC_FREQ 3

struct out {
	uint8_t *buf;
	size_t len, cap;
};

static int put(struct out *o, const void *p, size_t n)
{
	if (!n)
		return 0; /* nothing to copy (and o->buf may not exist yet) */
	if (o->len + n > o->cap) {
		size_t cap = (o->cap + n) * 2;
		uint8_t *b = realloc(o->buf, cap);

		if (!b)
			return -1;
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

/* --mtc-clock: the MTCs of the periods after @from up to @to (their
 * payload the period's low 8 bits): each of them, or past 256 of them
 * one every 128 periods and the last.  0 or -1 (no memory). */
static int put_mtcs(struct out *o, uint64_t from, uint64_t to)
{
	uint64_t step;

	if (from >= to) /* no MTC yet (UINT64_MAX), or a clock gone back */
		from = to - 1;
	step = to - from > 256 ? 128 : 1;

	for (uint64_t k = from + step; k < to; k += step) {
		const uint8_t m[2] = {0x59, (uint8_t)k};

		if (put(o, m, sizeof(m)))
			return -1;
	}
	{
		const uint8_t m[2] = {0x59, (uint8_t)to};

		return put(o, m, sizeof(m));
	}
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* The CYC packet of @v cycles (pt_pkt_read_cyc's layout). */
static int put_cyc(struct out *o, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	b[n] = (uint8_t)((v & 0x1f) << 3 | 3);
	v >>= 5;
	if (v)
		b[n] |= 4;
	n++;
	while (v) {
		b[n] = (uint8_t)((v & 0x7f) << 1);
		v >>= 7;
		if (v)
			b[n] |= 1;
		n++;
	}
	return put(o, b, n);
}

/* The next CYC of the fixed sequence (no cycles are known here), its
 * state in *@r: mostly short counts, now and then a long stall. */
static int put_next_cyc(struct out *o, uint32_t *r, int *ncyc)
{
	*r = *r * 1103515245u + 12345u;
	(*ncyc)++;
	return put_cyc(o, (*r >> 16) % 16 ? 1 + (*r >> 8) % 120
					  : 1 + (*r >> 4) % 60000);
}

/* The address of the FUP in the PSB+ at @off, if it has a whole one. */
static int psb_fup(const struct pt_config *cfg, uint64_t off, uint64_t *ip)
{
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(cfg);
	int found = 0;

	if (pd && pt_pkt_sync_set(pd, off) >= 0) {
		for (int i = 0; i < 32 && !found; i++) {
			struct pt_packet p;

			if (pt_pkt_next(pd, &p, sizeof(p)) < 0 ||
			    p.type == ppt_psbend)
				break;
			if (p.type != ppt_fup)
				continue;
			if (p.payload.ip.ipc == pt_ipc_sext_48) {
				*ip = p.payload.ip.ip;
				if (*ip & (1ull << 47))
					*ip |= ~0xffffffffffffull;
				found = 1;
			} else if (p.payload.ip.ipc == pt_ipc_full) {
				*ip = p.payload.ip.ip;
				found = 1;
			} else {
				break;
			}
		}
	}
	pt_pkt_free_decoder(pd);
	return found;
}

/* TNT bits waiting to be written (--tnt-full): the oldest is the highest
 * of @n. */
struct tnt_run {
	uint64_t bits;
	int n;
};

/* The oldest @n (1-6) of the run's bits as a TNT-8 packet (pt_pkt_read_tnt_8's
 * layout: a stop bit above them, bit 0 clear), after a CYC with --cyc. */
static int put_tnt(struct out *o, struct tnt_run *t, int n, int cyc,
		   uint32_t *r, int *ncyc)
{
	uint8_t b = (uint8_t)((1u << n | (t->bits >> (t->n - n) & 0x3f)) << 1);

	t->n -= n;
	t->bits &= t->n ? (1ull << t->n) - 1 : 0;
	if (cyc && put_next_cyc(o, r, ncyc))
		return -1;
	return put(o, &b, 1);
}

static void usage(void)
{
	fprintf(stderr, "usage: ptvariant [--cyc] [--cbr N | --first-cbr N] "
			"[--mtc | --mtc-clock] [--tnt-full | --ovf K] IN.pt "
			"OUT.pt\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	struct out o = {0};
	uint64_t off = 0, prev = 0, last_psb = 0;
	uint32_t r = 7;
	int cyc = 0, cbr = 0, first_only = 0, mtc = 0, mtc_clock = 0, ovf = 0;
	int tnt_full = 0;
	struct tnt_run run = {0};
	uint64_t mtc_period = UINT64_MAX; /* --mtc-clock: the last MTC's */
	int in_psb = 0, ncyc = 0, novf = 0, npsb = 0, i;
	size_t cut = 0; /* where in o an overflow would start, 0: nowhere */
	uint8_t ctc = 0, *pt;
	size_t len = 0;
	FILE *f;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--cyc")) {
			cyc = 1;
		} else if (!strcmp(argv[i], "--mtc")) {
			mtc = 1;
		} else if (!strcmp(argv[i], "--mtc-clock")) {
			mtc_clock = 1;
		} else if ((!strcmp(argv[i], "--cbr") ||
			    !strcmp(argv[i], "--first-cbr")) &&
			   i + 1 < argc) {
			first_only = argv[i][2] == 'f';
			cbr = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--tnt-full")) {
			tnt_full = 1;
		} else if (!strcmp(argv[i], "--ovf") && i + 1 < argc) {
			ovf = atoi(argv[++i]);
		} else {
			usage();
		}
	}
	if (argc - i != 2 || cbr < 0 || cbr > 255 || ovf < 0 ||
	    (mtc && mtc_clock) || (tnt_full && ovf))
		usage();
	pt = slurp(argv[i], &len);
	if (!pt) {
		fprintf(stderr, "ptvariant: cannot read %s\n", argv[i]);
		return 1;
	}
	pt_config_init(&cfg);
	cfg.begin = pt;
	cfg.end = pt + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (pd && pt_pkt_sync_forward(pd) >= 0 &&
	    pt_pkt_get_sync_offset(pd, &off) >= 0) {
		if (put(&o, pt, off))
			goto nomem;
		prev = off;
		for (;;) {
			struct pt_packet p;
			uint64_t at = prev;

			if (pt_pkt_next(pd, &p, sizeof(p)) < 0 ||
			    pt_pkt_get_offset(pd, &off) < 0)
				break;
			if (p.type == ppt_psb && ovf && npsb++ &&
			    npsb % ovf == 0 && cut) {
				uint64_t ip;

				if (psb_fup(&cfg, at, &ip)) {
					uint8_t b[9] = {0x02, 0xf3, 0x7d};

					for (int k = 0; k < 6; k++)
						b[3 + k] =
						    (uint8_t)(ip >> 8 * k);
					o.len = cut;
					if (put(&o, b, sizeof(b)))
						goto nomem;
					novf++;
				}
			}
			if (tnt_full && !in_psb &&
			    (p.type == ppt_tnt_8 || p.type == ppt_tnt_64)) {
				run.bits = run.bits << p.payload.tnt.bit_size |
					   p.payload.tnt.payload;
				run.n += p.payload.tnt.bit_size;
				while (run.n >= 6)
					if (put_tnt(&o, &run, 6, cyc, &r,
						    &ncyc))
						goto nomem;
				prev = off;
				continue;
			}
			if (tnt_full && run.n && p.type != ppt_mtc &&
			    p.type != ppt_pad &&
			    !(p.type == ppt_tsc && mtc_clock && !in_psb) &&
			    put_tnt(&o, &run, run.n, cyc, &r, &ncyc))
				goto nomem;
			if (!in_psb && !cut && ovf && last_psb &&
			    at >= last_psb + OVF_AFTER)
				cut = o.len;
			switch (p.type) {
			case ppt_tnt_8:
			case ppt_tnt_64:
			case ppt_tip:
			case ppt_tip_pge:
			case ppt_tip_pgd:
			case ppt_fup:
				if (in_psb || !cyc)
					break;
				if (put_next_cyc(&o, &r, &ncyc))
					goto nomem;
				break;
			default:
				break;
			}
			if (p.type == ppt_tsc && mtc_clock) {
				uint64_t ctc =
				    p.payload.tsc.tsc / MTC_CLOCK_RATIO;

				prev = off;
				if (in_psb) {
					/* the TSC, then a TMA: the crystal
					 * clock's low 16 bits, no fast
					 * counter (it serves CYC only) */
					const uint8_t t[7] = {
					    0x02,
					    0x73,
					    (uint8_t)ctc,
					    (uint8_t)(ctc >> 8),
					    0,
					    0,
					    0};

					if (put(&o, pt + at, off - at) ||
					    put(&o, t, sizeof(t)))
						goto nomem;
					mtc_period = ctc >> MTC_FREQ;
				} else if (ctc >> MTC_FREQ != mtc_period) {
					if (put_mtcs(&o, mtc_period,
						     ctc >> MTC_FREQ))
						goto nomem;
					mtc_period = ctc >> MTC_FREQ;
				}
				continue;
			}
			if (put(&o, pt + prev, off - prev))
				goto nomem;
			prev = off;
			if (p.type == ppt_psb) {
				in_psb = 1;
				last_psb = at;
				cut = 0;
				if (cbr) {
					const uint8_t c[4] = {0x02, 0x03,
							      (uint8_t)cbr, 0};

					if (put(&o, c, sizeof(c)))
						goto nomem;
					if (first_only)
						cbr = 0;
				}
			} else if (p.type == ppt_psbend) {
				in_psb = 0;
			} else if (p.type == ppt_tsc && mtc && !in_psb) {
				const uint8_t m[2] = {0x59, ctc++};

				if (put(&o, m, sizeof(m)))
					goto nomem;
			}
		}
	}
	if (run.n && put_tnt(&o, &run, run.n, cyc, &r, &ncyc))
		goto nomem;
	/* what the packet decoder could not read, as it was */
	if (put(&o, pt + prev, len - prev))
		goto nomem;
	pt_pkt_free_decoder(pd);
	free(pt);
	f = fopen(argv[i + 1], "wb");
	if (!f || fwrite(o.buf, 1, o.len, f) != o.len || fclose(f) != 0) {
		fprintf(stderr, "ptvariant: cannot write %s\n", argv[i + 1]);
		return 1;
	}
	free(o.buf);
	fprintf(stderr, "ptvariant: %d CYC packets added, %d overflows\n", ncyc,
		novf);
	return 0;
nomem:
	fprintf(stderr, "ptvariant: out of memory\n");
	return 1;
}
