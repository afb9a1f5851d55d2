/* SPDX-License-Identifier: MIT */
/* ptdump: print the Intel PT packets of a raw trace (or of the AUX data in
 * a perf.data file) with their offsets, using libipt's packet decoder.
 *
 *   ptdump [--count] [--perf [--cpu N]] FILE
 *
 * --count prints only "packets N errors N bytes N".  Exit status: 0, or 1
 * when the input could not be read or holds no PSB.
 */
#include <errno.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perfdata.h"
#include "ptscope/error.h"

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -1;
	for (;;) {
		size_t r;

		if (n == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 65536;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				fclose(f);
				return -1;
			}
			b = nb;
		}
		r = fread(b + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(b);
		fclose(f);
		return -1;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

static const char *ipc_str(enum pt_ip_compression c)
{
	switch (c) {
	case pt_ipc_suppressed:
		return "suppressed";
	case pt_ipc_update_16:
		return "upd16";
	case pt_ipc_update_32:
		return "upd32";
	case pt_ipc_update_48:
		return "upd48";
	case pt_ipc_sext_48:
		return "sext48";
	case pt_ipc_full:
		return "full";
	}
	return "?";
}

static void print_ip(const char *name, const struct pt_packet_ip *ip)
{
	if (ip->ipc == pt_ipc_suppressed)
		printf("%s (suppressed)", name);
	else
		printf("%s %s 0x%" PRIx64, name, ipc_str(ip->ipc), ip->ip);
}

static void print_packet(const struct pt_packet *p)
{
	switch (p->type) {
	case ppt_invalid:
	case ppt_unknown:
		printf("unknown");
		break;
	case ppt_pad:
		printf("pad");
		break;
	case ppt_psb:
		printf("psb");
		break;
	case ppt_psbend:
		printf("psbend");
		break;
	case ppt_fup:
		print_ip("fup", &p->payload.ip);
		break;
	case ppt_tip:
		print_ip("tip", &p->payload.ip);
		break;
	case ppt_tip_pge:
		print_ip("tip.pge", &p->payload.ip);
		break;
	case ppt_tip_pgd:
		print_ip("tip.pgd", &p->payload.ip);
		break;
	case ppt_tnt_8:
	case ppt_tnt_64: {
		printf("tnt.%d ", p->type == ppt_tnt_8 ? 8 : 64);
		for (int i = p->payload.tnt.bit_size - 1; i >= 0; i--)
			putchar((p->payload.tnt.payload >> i) & 1 ? '!' : '.');
		break;
	}
	case ppt_mode:
		if (p->payload.mode.leaf == pt_mol_exec)
			printf("mode.exec%s%s",
			       p->payload.mode.bits.exec.csl ? " cs.l" : "",
			       p->payload.mode.bits.exec.csd ? " cs.d" : "");
		else
			printf("mode.tsx%s%s",
			       p->payload.mode.bits.tsx.intx ? " intx" : "",
			       p->payload.mode.bits.tsx.abrt ? " abrt" : "");
		break;
	case ppt_pip:
		printf("pip 0x%" PRIx64 "%s", p->payload.pip.cr3,
		       p->payload.pip.nr ? " nr" : "");
		break;
	case ppt_tsc:
		printf("tsc 0x%" PRIx64, p->payload.tsc.tsc);
		break;
	case ppt_cbr:
		printf("cbr %u", p->payload.cbr.ratio);
		break;
	case ppt_tma:
		printf("tma ctc 0x%x fc 0x%x", p->payload.tma.ctc,
		       p->payload.tma.fc);
		break;
	case ppt_mtc:
		printf("mtc 0x%x", p->payload.mtc.ctc);
		break;
	case ppt_cyc:
		printf("cyc 0x%" PRIx64, p->payload.cyc.value);
		break;
	case ppt_stop:
		printf("stop");
		break;
	case ppt_ovf:
		printf("ovf");
		break;
	case ppt_vmcs:
		printf("vmcs 0x%" PRIx64, p->payload.vmcs.base);
		break;
	case ppt_mnt:
		printf("mnt 0x%" PRIx64, p->payload.mnt.payload);
		break;
	case ppt_exstop:
		printf("exstop%s", p->payload.exstop.ip ? " ip" : "");
		break;
	case ppt_mwait:
		printf("mwait hints 0x%x ext 0x%x", p->payload.mwait.hints,
		       p->payload.mwait.ext);
		break;
	case ppt_pwre:
		printf("pwre state %u sub %u%s", p->payload.pwre.state,
		       p->payload.pwre.sub_state,
		       p->payload.pwre.hw ? " hw" : "");
		break;
	case ppt_pwrx:
		printf("pwrx last %u deepest %u", p->payload.pwrx.last,
		       p->payload.pwrx.deepest);
		break;
	case ppt_ptw:
		printf("ptw%s 0x%" PRIx64, p->payload.ptw.ip ? " ip" : "",
		       p->payload.ptw.payload);
		break;
	}
}

static int dump(const uint8_t *buf, size_t len, int count_only)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	uint64_t packets = 0, errors = 0;
	int status;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec) {
		fprintf(stderr, "ptdump: cannot allocate a packet decoder\n");
		return 1;
	}
	status = pt_pkt_sync_forward(dec);
	if (status < 0) {
		fprintf(stderr, "ptdump: no PSB in %zu bytes\n", len);
		pt_pkt_free_decoder(dec);
		return 1;
	}
	for (;;) {
		struct pt_packet pkt;
		uint64_t off = 0;

		pt_pkt_get_offset(dec, &off);
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status == -pte_eos)
			break;
		if (status < 0) {
			errors++;
			if (!count_only)
				printf("%08" PRIx64 "  error: %s\n", off,
				       pt_errstr(pt_errcode(status)));
			status = pt_pkt_sync_forward(dec);
			if (status < 0)
				break;
			continue;
		}
		packets++;
		if (!count_only) {
			printf("%08" PRIx64 "  ", off);
			print_packet(&pkt);
			putchar('\n');
		}
	}
	pt_pkt_free_decoder(dec);
	printf("packets %" PRIu64 " errors %" PRIu64 " bytes %zu\n", packets,
	       errors, len);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ptdump [--count] [--perf [--cpu N]] FILE\n"
		"  Print the Intel PT packets in FILE (raw PT bytes, or with "
		"--perf the AUX data of a perf.data file).\n");
}

int main(int argc, char **argv)
{
	int count_only = 0, perf = 0, cpu = -1, rc;
	const char *path = NULL;
	uint8_t *buf, *pt;
	size_t len, ptlen;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count")) {
			count_only = 1;
		} else if (!strcmp(argv[i], "--perf")) {
			perf = 1;
		} else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
			char *end;

			errno = 0;
			cpu = (int)strtol(argv[++i], &end, 10);
			if (errno || *end || cpu < 0) {
				fprintf(stderr, "ptdump: bad cpu '%s'\n",
					argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' || path) {
			usage();
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		usage();
		return 2;
	}
	if (read_file(path, &buf, &len) < 0) {
		fprintf(stderr, "ptdump: cannot read %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	pt = buf;
	ptlen = len;
	if (perf) {
		rc = pd_collect_aux(buf, len, cpu, &pt, &ptlen);
		if (rc < 0) {
			fprintf(stderr, "ptdump: %s: %s\n", path,
				ps_err_message(rc));
			free(buf);
			return 1;
		}
		if (!rc) {
			fprintf(stderr, "ptdump: %s: no AUX data%s\n", path,
				cpu >= 0 ? " for that cpu" : "");
			free(buf);
			return 1;
		}
	}
	rc = dump(pt, ptlen, count_only);
	if (pt != buf)
		free(pt);
	free(buf);
	return rc;
}
