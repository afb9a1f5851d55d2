/* SPDX-License-Identifier: MIT */
/* ptcyc: a copy of a PT stream in cycle-accurate form, as a CPU with
 * IA32_RTIT_CTL.CYCEn (perf's intel_pt/cyc=1/) would write it: a CYC packet
 * before each TNT, TIP, TIP.PGE, TIP.PGD and FUP outside PSB+, its cycle
 * count from a fixed sequence (no cycles are known here: the emulated
 * recordings count instructions).  The control flow is unchanged, the time
 * is now CYC's.  For tests and benchmarks of the decoder on streams the
 * emulated backends do not write (magic-trace records with cyc=1).
 *
 *   ptcyc [--cbr N | --first-cbr N] [--mtc] IN OUT
 *
 * --cbr N adds a CBR packet of ratio N to each PSB+: with the nominal
 * frequency (decode --nom-freq) it calibrates CYC from the first PSB+,
 * where the emulated recordings' TSC-only timing cannot.  --first-cbr N
 * adds it to the first PSB+ only: the calibration then comes from the
 * stream's start, however far away.  --mtc adds an MTC after each TSC
 * outside PSB+ (payloads counting up; no TMA, so they move no time): MTCs
 * take over the calibration from PSB+ TSCs, and without CPUID 0x15 they
 * cannot calibrate. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static void put_cyc(FILE *out, uint64_t v)
{
	uint8_t b = (uint8_t)((v & 0x1f) << 3 | 3);

	v >>= 5;
	if (v)
		b |= 4;
	fputc(b, out);
	while (v) {
		b = (uint8_t)((v & 0x7f) << 1);
		v >>= 7;
		if (v)
			b |= 1;
		fputc(b, out);
	}
}

int main(int argc, char **argv)
{
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	uint64_t off = 0, prev = 0;
	uint32_t r = 7;
	int cbr = 0, first_only = 0, mtc = 0, in_psb = 0, ncyc = 0;
	uint8_t ctc = 0;
	uint8_t *pt;
	size_t len = 0;
	FILE *out;

	while (argc > 3) {
		if (argc > 4 && (!strcmp(argv[1], "--cbr") ||
				 !strcmp(argv[1], "--first-cbr"))) {
			first_only = argv[1][2] == 'f';
			cbr = atoi(argv[2]);
			argv += 2;
			argc -= 2;
		} else if (!strcmp(argv[1], "--mtc")) {
			mtc = 1;
			argv++;
			argc--;
		} else {
			break;
		}
	}
	if (argc != 3 || cbr < 0 || cbr > 255) {
		fprintf(stderr,
			"usage: ptcyc [--cbr N | --first-cbr N] [--mtc] "
			"IN.pt OUT.pt\n");
		return 2;
	}
	pt = slurp(argv[1], &len);
	if (!pt) {
		fprintf(stderr, "ptcyc: cannot read %s\n", argv[1]);
		return 1;
	}
	out = fopen(argv[2], "wb");
	if (!out) {
		fprintf(stderr, "ptcyc: cannot write %s\n", argv[2]);
		return 1;
	}
	pt_config_init(&cfg);
	cfg.begin = pt;
	cfg.end = pt + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (pd && pt_pkt_sync_forward(pd) >= 0 &&
	    pt_pkt_get_sync_offset(pd, &off) >= 0) {
		fwrite(pt, 1, off, out);
		prev = off;
		for (;;) {
			struct pt_packet p;

			if (pt_pkt_next(pd, &p, sizeof(p)) < 0 ||
			    pt_pkt_get_offset(pd, &off) < 0)
				break;
			switch (p.type) {
			case ppt_tnt_8:
			case ppt_tnt_64:
			case ppt_tip:
			case ppt_tip_pge:
			case ppt_tip_pgd:
			case ppt_fup:
				if (in_psb)
					break;
				r = r * 1103515245u + 12345u;
				/* mostly short counts, now and then a long
				 * stall */
				put_cyc(out, (r >> 16) % 16
						 ? 1 + (r >> 8) % 120
						 : 1 + (r >> 4) % 60000);
				ncyc++;
				break;
			default:
				break;
			}
			fwrite(pt + prev, 1, off - prev, out);
			prev = off;
			if (p.type == ppt_psb) {
				in_psb = 1;
				if (cbr) {
					const uint8_t c[4] = {0x02, 0x03,
							      (uint8_t)cbr, 0};

					fwrite(c, 1, sizeof(c), out);
					if (first_only)
						cbr = 0;
				}
			} else if (p.type == ppt_psbend) {
				in_psb = 0;
			} else if (p.type == ppt_tsc && mtc && !in_psb) {
				fputc(0x59, out);
				fputc(ctc++, out);
			}
		}
	}
	/* what the packet decoder could not read, as it was */
	fwrite(pt + prev, 1, len - prev, out);
	pt_pkt_free_decoder(pd);
	free(pt);
	if (fclose(out) != 0) {
		fprintf(stderr, "ptcyc: cannot write %s\n", argv[2]);
		return 1;
	}
	fprintf(stderr, "ptcyc: %d CYC packets added\n", ncyc);
	return 0;
}
