/* SPDX-License-Identifier: MIT */
/* mkperfdata: write a perf.data (file or pipe layout) around raw Intel PT
 * streams, the way `perf record -e intel_pt//u` would have, for tests and
 * for trying `ptscope decode perf.data` without PT hardware:
 *
 *   mkperfdata -o OUT [--pipe] [--config HEX] [--cpuid STR]
 *              [--tsc-conv MULT,SHIFT,ZERO] [--mtc-period N] [--ctc D,N]
 *              [--nom N] [--task PID,TID,NAME]... [--mmap
 * PID,ADDR,FILE[,AS]]...
 *              [--pt FILE,TID]... | [--cpu-pt FILE,CPU,SWITCHES]...
 *              [--chunk BYTES] [--overlap BYTES] [--ring BYTES]
 *              [--bid-in-mmap] [--kernel]
 *              [--no-build-ids] [--no-pt]
 *   mkperfdata --to-pipe IN -o OUT     (a file-layout perf.data → pipe)
 *
 * --mmap records FILE's executable mapping at ADDR under the name AS
 * (default FILE's absolute path) with FILE's build id in the build-id table (or
 * in the MMAP2 record with --bid-in-mmap).  --pt is one thread's stream
 * (per-thread mmaps); --cpu-pt one CPU's, with LLDB-style raw perf switch
 * records (per-CPU mmaps, SWITCH_CPU_WIDE).  --chunk splits each stream
 * into AUXTRACE records of that size; --overlap makes each one repeat the
 * previous one's last bytes (and marks snapshot mode); --ring writes
 * them as perf's snapshot mode does on a ring of that size.  --kernel
 * marks the intel_pt event as tracing kernel code too (intel_pt// rather
 * than intel_pt//u).
 */
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/le.h"

#define MAXN 64
#define PMU_TYPE 8
#define ID_PT 101
#define ID_SIDEBAND 102
#define SAMPLE_TYPE                                                            \
	(PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CPU | PD_SAMPLE_IDENTIFIER)
#define TRAILER 32

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			fprintf(stderr, "mkperfdata: out of memory\n");
			exit(1);
		}
	}
	if (p)
		memcpy(b->p + b->n, p, n);
	else
		memset(b->p + b->n, 0, n);
	b->n += n;
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}
static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void header(struct buf *b, uint32_t type, uint16_t misc, size_t size)
{
	uint16_t s = (uint16_t)size;

	put32(b, type);
	put(b, &misc, 2);
	put(b, &s, 2);
}

static void trailer(struct buf *b, uint32_t pid, uint32_t tid, uint64_t time,
		    uint32_t cpu)
{
	put32(b, pid);
	put32(b, tid);
	put64(b, time);
	put32(b, cpu);
	put32(b, 0);
	put64(b, ID_SIDEBAND);
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "mkperfdata: cannot read %s\n", path);
		exit(1);
	}
	p = malloc((size_t)n + 1);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "mkperfdata: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void attr(struct buf *b, uint32_t type, uint64_t config, uint64_t flags)
{
	size_t at = b->n;

	put(b, NULL, 112);
	memcpy(b->p + at, &type, 4);
	b->p[at + 4] = 112;
	memcpy(b->p + at + 8, &config, 8);
	uint64_t st = SAMPLE_TYPE, one = 1;
	memcpy(b->p + at + 16, &one, 8);
	memcpy(b->p + at + 24, &st, 8);
	memcpy(b->p + at + 40, &flags, 8);
}

struct task {
	uint32_t pid, tid;
	char name[16];
};
struct mapping {
	uint32_t pid;
	uint64_t addr;
	char *file, *as;
	struct pd_build_id bid;
	uint64_t size, pgoff;
};
struct stream {
	char *file, *switches;
	uint32_t tid, cpu;
};

static struct {
	const char *out;
	int pipe, bid_in_mmap, no_bids, no_pt, per_cpu, snapshot, kernel;
	uint64_t config, tc[3];
	int has_tc;
	const char *cpuid;
	uint64_t ctc_d, ctc_n, nom, mtc_period;
	struct task tasks[MAXN];
	int ntasks;
	struct mapping maps[MAXN];
	int nmaps;
	struct stream streams[MAXN];
	int nstreams;
	size_t chunk, overlap, ring;
} o = {.config = 0x2400};

static void auxtrace(struct buf *d, const uint8_t *p, size_t n, uint64_t off,
		     uint32_t idx, uint32_t tid, uint32_t cpu)
{
	header(d, PD_RECORD_AUXTRACE, 0, 8 + PD_AUXTRACE_PAYLOAD);
	put64(d, pad8(n));
	put64(d, off);
	put64(d, off ^ 0x5a5a);
	put32(d, idx);
	put32(d, tid);
	put32(d, cpu);
	put32(d, 0);
	put(d, p, n);
	put(d, NULL, pad8(n) - n);
}

/* One stream as AUXTRACE records, chunked and overlapping as asked.
 * --ring N is perf's snapshot mode on an N-byte AUX ring, a snapshot
 * every --chunk bytes: until the ring wraps each snapshot holds the new
 * bytes at their offset; after, the whole ring at the ring position of
 * its oldest byte (perf's intel_pt_find_snapshot). */
static void aux_stream(struct buf *d, const uint8_t *p, size_t n, uint32_t idx,
		       uint32_t tid, uint32_t cpu)
{
	size_t step = o.chunk ? o.chunk : n, pos = 0;

	while (pos < n) {
		size_t from = pos > o.overlap ? pos - o.overlap : 0;
		size_t to = pos + step < n ? pos + step : n;

		if (o.overlap && to < n)
			/* an unpadded size, so the next offset is exact */
			to -= to % 8;
		if (o.ring && to > o.ring)
			auxtrace(d, p + to - o.ring, o.ring, to % o.ring, idx,
				 tid, cpu);
		else
			auxtrace(d, p + from, to - from, from, idx, tid, cpu);
		pos = to;
	}
}

static void records(struct buf *d)
{
	uint64_t t0 = 1000;
	uint64_t priv[PD_PT_PRIV_MAX] = {0};

	if (o.per_cpu) {
		for (int i = 0; i < o.nstreams; i++) {
			size_t n;
			uint8_t *sw = slurp(o.streams[i].switches, &n);

			if (n >= 32) {
				uint64_t t = le_rd64(sw + 24);

				if (i == 0 || t - 1000 < t0)
					t0 = t - 1000;
			}
			free(sw);
		}
	}
	/* TIME_CONV: shift, mult, zero, cycles, mask, cap_zero, cap_short */
	header(d, PD_RECORD_TIME_CONV, 0, 8 + 48);
	put64(d, o.tc[1]);
	put64(d, o.tc[0]);
	put64(d, o.tc[2]);
	put64(d, 0);
	put64(d, 0);
	put64(d, o.has_tc);
	if (!o.no_pt) {
		priv[PD_PT_PMU_TYPE] = PMU_TYPE;
		priv[PD_PT_TIME_SHIFT] = o.tc[1];
		priv[PD_PT_TIME_MULT] = o.tc[0];
		priv[PD_PT_TIME_ZERO] = o.tc[2];
		priv[PD_PT_CAP_USER_TIME_ZERO] = o.has_tc;
		priv[PD_PT_TSC_BIT] = 0x400;
		priv[PD_PT_NORETCOMP_BIT] = 0x800;
		priv[PD_PT_HAVE_SCHED_SWITCH] = o.per_cpu ? 3 : 0;
		priv[PD_PT_SNAPSHOT_MODE] = o.overlap || o.ring;
		priv[PD_PT_PER_CPU_MMAPS] = o.per_cpu;
		priv[PD_PT_MTC_BIT] = 0x200;
		priv[PD_PT_MTC_FREQ_BITS] = 0x3c000;
		priv[PD_PT_TSC_CTC_N] = o.ctc_n;
		priv[PD_PT_TSC_CTC_D] = o.ctc_d;
		priv[PD_PT_CYC_BIT] = 0x2;
		priv[PD_PT_MAX_NONTURBO_RATIO] = o.nom;
		header(d, PD_RECORD_AUXTRACE_INFO, 0,
		       8 + 8 + 8 * PD_PT_PRIV_MAX);
		put32(d, PD_AUXTRACE_INTEL_PT);
		put32(d, 0);
		put(d, priv, sizeof(priv));
	}
	for (int i = 0; i < o.ntasks; i++) {
		struct task *t = &o.tasks[i];
		size_t nl = pad8(strlen(t->name) + 1);

		header(d, PD_RECORD_COMM, PD_MISC_COMM_EXEC,
		       8 + 8 + nl + TRAILER);
		put32(d, t->pid);
		put32(d, t->tid);
		put(d, NULL, nl);
		memcpy(d->p + d->n - nl, t->name, strlen(t->name));
		trailer(d, t->pid, t->tid, t0 + i, 0);
	}
	for (int i = 0; i < o.nmaps; i++) {
		struct mapping *m = &o.maps[i];
		size_t nl = pad8(strlen(m->as) + 1);
		uint16_t misc = PD_MISC_USER;

		if (o.bid_in_mmap && m->bid.size)
			misc |= PD_MISC_MMAP_BUILD_ID;
		header(d, PD_RECORD_MMAP2, misc, 8 + 64 + nl + TRAILER);
		put32(d, m->pid);
		put32(d, m->pid);
		put64(d, m->addr);
		put64(d, m->size);
		put64(d, m->pgoff);
		if (misc & PD_MISC_MMAP_BUILD_ID) {
			uint8_t idb[24] = {0};

			idb[0] = m->bid.size;
			memcpy(idb + 4, m->bid.id, m->bid.size);
			put(d, idb, 24);
		} else {
			put32(d, 8);
			put32(d, 1);
			put64(d, 1000 + i);
			put64(d, 0);
		}
		put32(d, 5); /* PROT_READ | PROT_EXEC */
		put32(d, 2); /* MAP_PRIVATE */
		put(d, NULL, nl);
		memcpy(d->p + d->n - nl, m->as, strlen(m->as));
		trailer(d, m->pid, m->pid, t0 + 100 + i, 0);
	}
	if (o.no_pt)
		return;
	for (int i = 0; i < o.nstreams; i++) {
		struct stream *s = &o.streams[i];
		size_t n;
		uint8_t *pt = slurp(s->file, &n);

		if (!o.per_cpu) {
			uint32_t pid = s->tid;

			for (int k = 0; k < o.ntasks; k++)
				if (o.tasks[k].tid == s->tid)
					pid = o.tasks[k].pid;
			header(d, PD_RECORD_ITRACE_START, 0, 8 + 8 + TRAILER);
			put32(d, pid);
			put32(d, s->tid);
			trailer(d, pid, s->tid, t0 + 500, 0);
			aux_stream(d, pt, n, (uint32_t)i, s->tid, UINT32_MAX);
		} else {
			size_t sn, off = 0;
			uint8_t *sw = slurp(s->switches, &sn);

			/* LLDB's records: {hdr; next_prev pid, tid; pid,
			 * tid; time}: re-emitted with this file's trailer */
			while (off + 8 <= sn) {
				uint16_t size = le_rd16(sw + off + 6);
				uint32_t type = le_rd32(sw + off);

				if (size < 8 || off + size > sn)
					break;
				if (type == PD_RECORD_SWITCH_CPU_WIDE &&
				    size >= 32) {
					header(d, type, le_rd16(sw + off + 4),
					       8 + 8 + TRAILER);
					put(d, sw + off + 8, 8);
					trailer(d, le_rd32(sw + off + 16),
						le_rd32(sw + off + 20),
						le_rd64(sw + off + 24), s->cpu);
				}
				off += size;
			}
			free(sw);
			aux_stream(d, pt, n, (uint32_t)i,
				   o.ntasks ? o.tasks[0].tid : UINT32_MAX,
				   s->cpu);
		}
		free(pt);
	}
}

static void build_ids(struct buf *b, uint32_t type)
{
	if (o.no_bids || o.bid_in_mmap)
		return;
	for (int i = 0; i < o.nmaps; i++) {
		struct mapping *m = &o.maps[i];
		size_t nl = pad8(strlen(m->as) + 1);
		uint8_t idb[24] = {0};

		if (!m->bid.size)
			continue;
		header(b, type, PD_MISC_USER | PD_MISC_BUILD_ID_SIZE,
		       8 + 4 + 24 + nl);
		put32(b, m->pid);
		memcpy(idb, m->bid.id, m->bid.size);
		idb[20] = m->bid.size;
		put(b, idb, 24);
		put(b, NULL, nl);
		memcpy(b->p + b->n - nl, m->as, strlen(m->as));
	}
}

static void cpuid_feature(struct buf *b)
{
	size_t n = pad8(strlen(o.cpuid) + 1);

	put32(b, (uint32_t)n);
	put(b, NULL, n);
	memcpy(b->p + b->n - n, o.cpuid, strlen(o.cpuid));
}

static void write_out(const struct buf *b)
{
	FILE *f = fopen(o.out, "wb");

	if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f)) {
		fprintf(stderr, "mkperfdata: cannot write %s\n", o.out);
		exit(1);
	}
}

static void write_file(void)
{
	struct buf b = {0}, d = {0}, feat = {0};
	uint64_t pt_flags =
	    PD_ATTR_SAMPLE_ID_ALL | (o.kernel ? 0 : PD_ATTR_EXCLUDE_KERNEL);
	uint64_t sb_flags = PD_ATTR_SAMPLE_ID_ALL | PD_ATTR_EXCLUDE_KERNEL |
			    (1ull << 8) | (1ull << 9) | (1ull << 23) |
			    (o.per_cpu ? 1ull << 26 : 0);
	uint64_t config = o.config | (o.mtc_period << 14);

	records(&d);
	if (o.pipe) {
		put(&b, "PERFILE2", 8);
		put64(&b, 16);
		if (!o.no_pt) {
			header(&b, PD_RECORD_HEADER_ATTR, 0, 8 + 112 + 8);
			attr(&b, PMU_TYPE, config, pt_flags);
			put64(&b, ID_PT);
		}
		header(&b, PD_RECORD_HEADER_ATTR, 0, 8 + 112 + 8);
		attr(&b, 1, 9, sb_flags);
		put64(&b, ID_SIDEBAND);
		if (o.cpuid) {
			header(&b, PD_RECORD_HEADER_FEATURE, 0,
			       8 + 8 + 4 + pad8(strlen(o.cpuid) + 1));
			put64(&b, PD_FEAT_CPUID);
			cpuid_feature(&b);
		}
		put(&b, d.p, d.n);
		build_ids(&b, PD_RECORD_HEADER_BUILD_ID);
		write_out(&b);
		free(b.p);
		free(d.p);
		return;
	}
	/* header | attrs | ids | data | feature table | features */
	int nattr = o.no_pt ? 1 : 2;
	uint64_t attrs_off = 104, ids_off = attrs_off + 128 * nattr;
	uint64_t data_off = ids_off + 8 * nattr;
	uint64_t bits =
	    (o.no_bids || o.bid_in_mmap ? 0 : 1ull << PD_FEAT_BUILD_ID) |
	    (o.cpuid ? 1ull << PD_FEAT_CPUID : 0);

	put(&b, "PERFILE2", 8);
	put64(&b, 104);
	put64(&b, 128);
	put64(&b, attrs_off);
	put64(&b, 128 * nattr);
	put64(&b, data_off);
	put64(&b, d.n);
	put64(&b, 0);
	put64(&b, 0);
	put64(&b, bits);
	put64(&b, 0);
	put64(&b, 0);
	put64(&b, 0);
	if (!o.no_pt) {
		attr(&b, PMU_TYPE, config, pt_flags);
		put64(&b, ids_off);
		put64(&b, 8);
	}
	attr(&b, 1, 9, sb_flags);
	put64(&b, ids_off + 8 * (nattr - 1));
	put64(&b, 8);
	if (!o.no_pt)
		put64(&b, ID_PT);
	put64(&b, ID_SIDEBAND);
	put(&b, d.p, d.n);
	{
		uint64_t tab = b.n, nfeat = __builtin_popcountll(bits);
		uint64_t at = tab + 16 * nfeat;
		struct buf bid = {0}, cid = {0};

		build_ids(&bid, PD_RECORD_HEADER_BUILD_ID);
		if (o.cpuid)
			cpuid_feature(&cid);
		if (bits & (1ull << PD_FEAT_BUILD_ID)) {
			put64(&feat, at);
			put64(&feat, bid.n);
			at += bid.n;
		}
		if (o.cpuid) {
			put64(&feat, at);
			put64(&feat, cid.n);
		}
		put(&b, feat.p, feat.n);
		if (bits & (1ull << PD_FEAT_BUILD_ID))
			put(&b, bid.p, bid.n);
		put(&b, cid.p, cid.n);
		free(bid.p);
		free(cid.p);
	}
	write_out(&b);
	free(b.p);
	free(d.p);
	free(feat.p);
}

/* A file-layout perf.data → the same records in pipe layout. */
static int to_pipe_one(void *ctx, const struct pd_record *r)
{
	struct buf *b = ctx;

	put(b, r->body - 8, r->body_len + 8);
	if (r->aux)
		put(b, r->aux, r->aux_len);
	return 0;
}

static void to_pipe(const char *in)
{
	struct buf b = {0};
	struct pd_file f;
	const uint8_t *p;
	size_t len, n;
	uint8_t *buf = slurp(in, &len);
	int err;

	err = pd_file_read(buf, len, &f);
	if (err < 0 || f.pipe) {
		fprintf(stderr,
			"mkperfdata: %s is not a file-layout perf.data\n", in);
		exit(1);
	}
	put(&b, "PERFILE2", 8);
	put64(&b, 16);
	for (uint64_t at = f.attrs_off; at < f.attrs_off + f.attrs_size;
	     at += f.attr_size) {
		uint64_t asz = f.attr_size - 16;
		uint64_t ioff = le_rd64(buf + at + asz);
		uint64_t isz = le_rd64(buf + at + asz + 8);

		header(&b, PD_RECORD_HEADER_ATTR, 0, 8 + asz + isz);
		put(&b, buf + at, asz);
		put(&b, buf + ioff, isz);
	}
	if (pd_file_feature(buf, len, &f, PD_FEAT_CPUID, &p, &n) > 0) {
		header(&b, PD_RECORD_HEADER_FEATURE, 0, 8 + 8 + n);
		put64(&b, PD_FEAT_CPUID);
		put(&b, p, n);
	}
	if (pd_walk(buf, len, to_pipe_one, &b) < 0) {
		fprintf(stderr, "mkperfdata: %s: %s\n", in, ps_err_message(-5));
		exit(1);
	}
	if (pd_file_feature(buf, len, &f, PD_FEAT_BUILD_ID, &p, &n) > 0) {
		size_t at0 = b.n;

		put(&b, p, n);
		/* the same records, typed as pipe build-id records */
		for (size_t at = at0; at + 8 <= b.n;) {
			uint32_t t = PD_RECORD_HEADER_BUILD_ID;
			uint16_t sz = le_rd16(b.p + at + 6);

			memcpy(b.p + at, &t, 4);
			if (sz < 8)
				break;
			at += sz;
		}
	}
	write_out(&b);
	free(b.p);
	free(buf);
}

static void usage(void)
{
	fprintf(stderr, "usage: see the comment at the top of "
			"tools/mkperfdata.c\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"pipe", no_argument, NULL, 'P'},
	    {"config", required_argument, NULL, 'c'},
	    {"cpuid", required_argument, NULL, 'i'},
	    {"tsc-conv", required_argument, NULL, 't'},
	    {"mtc-period", required_argument, NULL, 'M'},
	    {"ctc", required_argument, NULL, 'C'},
	    {"nom", required_argument, NULL, 'N'},
	    {"task", required_argument, NULL, 'k'},
	    {"mmap", required_argument, NULL, 'm'},
	    {"pt", required_argument, NULL, 'p'},
	    {"cpu-pt", required_argument, NULL, 'u'},
	    {"chunk", required_argument, NULL, 'h'},
	    {"overlap", required_argument, NULL, 'v'},
	    {"ring", required_argument, NULL, 'R'},
	    {"bid-in-mmap", no_argument, NULL, 'b'},
	    {"no-build-ids", no_argument, NULL, 'B'},
	    {"no-pt", no_argument, NULL, 'n'},
	    {"kernel", no_argument, NULL, 'K'},
	    {"to-pipe", required_argument, NULL, 'T'},
	    {NULL, 0, NULL, 0},
	};
	const char *topipe = NULL;
	char a[4096], b[4096], c[4096], d[4096];
	int ch;

	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			o.out = optarg;
			break;
		case 'P':
			o.pipe = 1;
			break;
		case 'c':
			o.config = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			o.cpuid = optarg;
			break;
		case 't':
			if (sscanf(optarg, "%" SCNu64 ",%" SCNu64 ",%" SCNu64,
				   &o.tc[0], &o.tc[1], &o.tc[2]) != 3)
				usage();
			o.has_tc = 1;
			break;
		case 'M':
			o.mtc_period = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			if (sscanf(optarg, "%" SCNu64 ",%" SCNu64, &o.ctc_d,
				   &o.ctc_n) != 2)
				usage();
			break;
		case 'N':
			o.nom = strtoull(optarg, NULL, 0);
			break;
		case 'k': {
			struct task *t = &o.tasks[o.ntasks];

			if (o.ntasks == MAXN ||
			    sscanf(optarg, "%u,%u,%15s", &t->pid, &t->tid,
				   t->name) != 3)
				usage();
			o.ntasks++;
			break;
		}
		case 'm': {
			struct mapping *m = &o.maps[o.nmaps];
			char e[64] = "", f[64] = "";
			size_t len;
			int n =
			    sscanf(optarg,
				   "%4095[^,],%4095[^,],%4095[^,],%4095[^,],"
				   "%63[^,],%63s",
				   a, b, c, d, e, f);

			if (o.nmaps == MAXN || n < 3 || n == 5)
				usage();
			m->pid = (uint32_t)strtoul(a, NULL, 0);
			m->addr = strtoull(b, NULL, 0);
			m->file = strdup(c);
			/* perf records absolute paths */
			m->as = n >= 4 ? strdup(d) : realpath(c, NULL);
			if (!m->as)
				usage();
			if (!strcmp(c, "-")) {
				/* a binary that is not here: no build id */
				m->size = 0x22000;
			} else {
				free(slurp(c, &len));
				m->size = len;
				if (pd_file_build_id(c, &m->bid) < 0)
					usage();
			}
			if (n == 6) {
				m->pgoff = strtoull(e, NULL, 0);
				m->size = strtoull(f, NULL, 0);
			}
			o.nmaps++;
			break;
		}
		case 'p':
		case 'u': {
			struct stream *s = &o.streams[o.nstreams];
			int n = sscanf(optarg, "%4095[^,],%4095[^,],%4095s", a,
				       b, c);

			if (o.nstreams == MAXN || n < 2 || (ch == 'u' && n < 3))
				usage();
			s->file = strdup(a);
			if (ch == 'p') {
				s->tid = (uint32_t)strtoul(b, NULL, 0);
			} else {
				s->cpu = (uint32_t)strtoul(b, NULL, 0);
				s->switches = strdup(c);
				o.per_cpu = 1;
			}
			o.nstreams++;
			break;
		}
		case 'h':
			o.chunk = strtoull(optarg, NULL, 0);
			break;
		case 'v':
			o.overlap = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			o.ring = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			o.bid_in_mmap = 1;
			break;
		case 'B':
			o.no_bids = 1;
			break;
		case 'n':
			o.no_pt = 1;
			break;
		case 'K':
			o.kernel = 1;
			break;
		case 'T':
			topipe = optarg;
			break;
		default:
			usage();
		}
	}
	if (!o.out)
		usage();
	if (topipe)
		to_pipe(topipe);
	else
		write_file();
	for (int i = 0; i < o.nmaps; i++) {
		free(o.maps[i].file);
		free(o.maps[i].as);
	}
	for (int i = 0; i < o.nstreams; i++) {
		free(o.streams[i].file);
		free(o.streams[i].switches);
	}
	return 0;
}
