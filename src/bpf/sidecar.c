/* SPDX-License-Identifier: MIT */
/* The eBPF sidecar's core (see sidecar.h): the shared maps, the ring
 * buffer, and which parts to start.  The top of src/bpf/: it starts the
 * features through their ops (features.h), one table row each, and the
 * latency timer through latency.c; none of them calls back here. */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ptscope/error.h"
#include "src/bpf/features.h"
#include "src/bpf/latency.h"
#include "src/bpf/sidecar.h"

#define RING_BYTES (8u << 20)
#define MAX_PARTS (8 + SDC_MAX_CUSTOM + LAT_MAX_FUNCS)

struct sidecar {
	struct sdc_maps maps;
	struct sdc_part parts[MAX_PARTS];
	size_t nparts;
	struct ring_buffer *rb;
	sdc_event_fn fn; /* during sdc_consume */
	void *ctx;
	int stop;
	struct sdc_desc descs[SDC_MAX_CUSTOM];
	size_t ndescs;
	struct ps_latency *lat[LAT_MAX_FUNCS];
};

/* The built-in features: --events name, bit, ops.  sdc_open starts them
 * in this order (proc first: see there). */
static const struct {
	const char *name;
	unsigned bit;
	const struct sdc_feature *ops;
} features[] = {
    {"sched", SDC_F_SCHED, &sdc_sched_feature},
    {"syscalls", SDC_F_SYSCALLS, &sdc_syscalls_feature},
    {"signals", SDC_F_SIGNALS, &sdc_signals_feature},
    {"faults", SDC_F_FAULTS, &sdc_faults_feature},
    {"block", SDC_F_BLOCK, &sdc_blockio_feature},
    {"proc", SDC_F_PROC, &sdc_proc_feature},
};
#define NFEATURES (sizeof(features) / sizeof(features[0]))

/* The kinds of custom events: --event PREFIX..., ops. */
static const struct {
	const char *prefix;
	const struct sdc_custom_kind *ops;
} custom_kinds[] = {
    {"tracepoint:", &sdc_tracepoint_kind},
    {"kprobe:", &sdc_kfunc_kind},
};

const char *sdc_feature_name(unsigned bit)
{
	for (size_t i = 0; i < NFEATURES; i++)
		if (bit == features[i].bit)
			return features[i].name;
	return "?";
}

int sdc_parse_features(const char *list, unsigned *out)
{
	char buf[256], *save = NULL, *tok;
	unsigned f = 0;

	if (snprintf(buf, sizeof(buf), "%s", list ? list : "") >=
	    (int)sizeof(buf))
		goto bad;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		if (!strcmp(tok, "all")) {
			f |= SDC_F_ALL;
			continue;
		}
		for (i = 0; i < NFEATURES; i++)
			if (!strcmp(tok, features[i].name))
				break;
		if (i == NFEATURES)
			goto bad;
		f |= features[i].bit;
	}
	if (!f)
		goto bad;
	*out = f;
	return 0;
bad:
	return ps_err_detail(PS_ERR_INVAL,
			     "bad --events list '%s': give names from sched, "
			     "syscalls, signals, faults, block, proc (or all), "
			     "separated by commas",
			     list ? list : "");
}

int sdc_check_custom(const char *spec)
{
	const char *c;

	if (!strncmp(spec, "tracepoint:", 11)) {
		c = strchr(spec + 11, ':');
		if (c && c > spec + 11 && c[1] && !strchr(c + 1, ':') &&
		    !strchr(spec, '/'))
			return 0;
	} else if (!strncmp(spec, "kprobe:", 7) && spec[7] &&
		   !strchr(spec + 7, ':') && !strchr(spec, '/')) {
		return 0;
	}
	return ps_err_detail(PS_ERR_INVAL,
			     "bad --event '%s': use tracepoint:CATEGORY:NAME "
			     "(e.g. tracepoint:sched:sched_process_fork) or "
			     "kprobe:FUNCTION (e.g. kprobe:do_sys_openat2)",
			     spec);
}

/* libbpf's messages would go to stderr: the library stays quiet, and
 * failures become one sentence each (sdc_fail). */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

int sdc_mount_tracefs(void)
{
	struct stat st;

	if (!stat("/sys/kernel/tracing/events", &st))
		return 0;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) &&
	    errno != EBUSY)
		return ps_err_detail(errno == EPERM ? PS_ERR_PERM
						    : PS_ERR_NO_HW,
				     "cannot mount tracefs at "
				     "/sys/kernel/tracing: %s",
				     strerror(errno));
	return 0;
}

static int create_maps(struct sidecar *sc)
{
	sc->maps.targets =
	    bpf_map_create(BPF_MAP_TYPE_HASH, "targets", 4, 4, 4096, NULL);
	if (sc->maps.targets < 0)
		return sdc_fail("the target filter map", -errno);
	sc->maps.events = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0,
					 RING_BYTES, NULL);
	if (sc->maps.events < 0)
		return sdc_fail("the ring buffer", -errno);
	sc->maps.lost =
	    bpf_map_create(BPF_MAP_TYPE_ARRAY, "lost", 4, 8, 1, NULL);
	if (sc->maps.lost < 0)
		return sdc_fail("the lost-event counter", -errno);
	return 0;
}

static int on_ring(void *ctx, void *data, size_t size)
{
	struct sidecar *sc = ctx;

	if (size < sizeof(struct sdc_event) || sc->stop)
		return 0;
	sc->stop = sc->fn(sc->ctx, data);
	return sc->stop;
}

static int start_feature(struct sidecar *sc, const struct sdc_feature *f,
			 int emit)
{
	int r = f->start(&sc->maps, emit, &sc->parts[sc->nparts]);

	if (!r)
		sc->nparts++;
	return r;
}

/* Does any feature in @bits attach through tracefs? */
static int need_tracefs(unsigned bits)
{
	for (size_t i = 0; i < NFEATURES; i++)
		if ((bits & features[i].bit) && features[i].ops->needs_tracefs)
			return 1;
	return 0;
}

static int start_custom(struct sidecar *sc, const char *spec)
{
	struct sdc_desc *d = &sc->descs[sc->ndescs];
	struct sdc_part *p = &sc->parts[sc->nparts];
	unsigned id = (unsigned)sc->ndescs;
	const struct sdc_custom_kind *k = NULL;
	size_t i, len = 0;
	int r;

	r = sdc_check_custom(spec);
	if (r)
		return r;
	for (i = 0; !k; i++) { /* sdc_check_custom knows every prefix */
		len = strlen(custom_kinds[i].prefix);
		if (!strncmp(spec, custom_kinds[i].prefix, len))
			k = custom_kinds[i].ops;
	}
	memset(d, 0, sizeof(*d));
	if (k->needs_tracefs)
		r = sdc_mount_tracefs();
	if (!r)
		r = k->start(&sc->maps, spec + len, id, d, p);
	if (r)
		return r;
	sc->ndescs++;
	sc->nparts++;
	return 0;
}

/* libbpf reads and parses the kernel's BTF (5 MB here) anew for every
 * object it loads, in blocks of several MB.  With glibc's defaults the
 * first is mapped and unmapped, and the later ones come from the heap's
 * top, which is given back to the kernel at each free: every object
 * faulted the same 11 MB in again (17,000 of the 23,000 page faults of
 * `ptscope run -- true`, a third of its start on a VM).  They stay in
 * the heap while the objects load; the heap is trimmed once after. */
static void keep_large_blocks(int on)
{
	if (on) {
		mallopt(M_MMAP_THRESHOLD, 32 << 20); /* glibc's largest */
		mallopt(M_TRIM_THRESHOLD, 256 << 20);
	} else {
		mallopt(M_TRIM_THRESHOLD, 128 << 10); /* glibc's default */
		malloc_trim(0);
	}
}

int sdc_open(const struct sdc_config *cfg, struct sidecar **out)
{
	struct sidecar *sc;
	struct stat st;
	int r;

	*out = NULL;
	if (cfg->ncustom > SDC_MAX_CUSTOM)
		return ps_err_detail(PS_ERR_LIMIT, "at most %d --event given",
				     SDC_MAX_CUSTOM);
	if (!getenv("PTSCOPE_BPF_DEBUG"))
		libbpf_set_print(quiet);
	if (geteuid() != 0)
		return ps_err_detail(PS_ERR_PERM,
				     "loading eBPF programs needs root "
				     "(CAP_BPF and CAP_PERFMON)");
	if (stat("/sys/kernel/btf/vmlinux", &st))
		return ps_err_detail(PS_ERR_NO_HW, "this kernel has no BTF "
						   "(/sys/kernel/btf/vmlinux)");
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return PS_ERR_NOMEM;
	sc->maps.targets = sc->maps.events = sc->maps.lost = -1;
	sc->maps.recorder_tgid = cfg->recorder_tgid;
	r = create_maps(sc);
	keep_large_blocks(1);
	/* proc always, and first: its fork handler adds each child of a
	 * target to the filter, so the whole process tree is followed */
	if (!r)
		r = start_feature(sc, &sdc_proc_feature,
				  !!(cfg->features & SDC_F_PROC));
	if (!r && need_tracefs(cfg->features))
		r = sdc_mount_tracefs();
	for (size_t i = 0; i < NFEATURES && !r; i++) {
		if (features[i].bit == SDC_F_PROC ||
		    !(cfg->features & features[i].bit))
			continue;
		r = start_feature(sc, features[i].ops, 1);
	}
	for (size_t i = 0; i < cfg->ncustom && !r; i++)
		r = start_custom(sc, cfg->custom[i]);
	keep_large_blocks(0);
	if (!r) {
		sc->rb = ring_buffer__new(sc->maps.events, on_ring, sc, NULL);
		if (!sc->rb)
			r = sdc_fail("the ring buffer reader", -errno);
	}
	if (r) {
		sdc_close(sc);
		return r;
	}
	*out = sc;
	return 0;
}

void sdc_close(struct sidecar *sc)
{
	if (!sc)
		return;
	ring_buffer__free(sc->rb);
	for (size_t i = sc->nparts; i-- > 0;)
		sc->parts[i].destroy(sc->parts[i].skel);
	for (unsigned i = 0; i < LAT_MAX_FUNCS; i++)
		sdc_latency_destroy(sc->lat[i]);
	if (sc->maps.targets >= 0)
		close(sc->maps.targets);
	if (sc->maps.events >= 0)
		close(sc->maps.events);
	if (sc->maps.lost >= 0)
		close(sc->maps.lost);
	free(sc);
}

int sdc_add_pid(struct sidecar *sc, pid_t tgid)
{
	__u32 k = (__u32)tgid, one = 1;

	if (bpf_map_update_elem(sc->maps.targets, &k, &one, BPF_ANY))
		return sdc_fail("the target filter", -errno);
	return 0;
}

int sdc_consume(struct sidecar *sc, sdc_event_fn fn, void *ctx)
{
	int r;

	sc->fn = fn;
	sc->ctx = ctx;
	sc->stop = 0;
	r = ring_buffer__consume(sc->rb);
	if (sc->stop)
		return sc->stop;
	return r < 0 ? sdc_fail("reading the ring buffer", r) : 0;
}

int sdc_wait_fd(const struct sidecar *sc)
{
	return sc && sc->rb ? ring_buffer__epoll_fd(sc->rb) : -1;
}

uint64_t sdc_lost(const struct sidecar *sc)
{
	__u32 k = SDC_LOST_SLOT;
	__u64 v = 0;

	if (bpf_map_lookup_elem(sc->maps.lost, &k, &v))
		return 0;
	return v;
}

size_t sdc_descs(const struct sidecar *sc, const struct sdc_desc **out)
{
	*out = sc->descs;
	return sc->ndescs;
}

int sdc_time_calls(struct sidecar *sc, unsigned index, const char *binary,
		   uint64_t func_offset, uint64_t func_addr,
		   uint64_t threshold_ns)
{
	if (index >= LAT_MAX_FUNCS || sc->lat[index])
		return ps_err_detail(
		    PS_ERR_LIMIT, "at most %d latency triggers", LAT_MAX_FUNCS);
	return sdc_latency_start(&sc->maps, index, binary, func_offset,
				 func_addr, threshold_ns, &sc->lat[index]);
}

uint64_t sdc_untimed(const struct sidecar *sc)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < LAT_MAX_FUNCS; i++)
		total += sdc_latency_untimed(sc->lat[i]);
	return total;
}
