/* SPDX-License-Identifier: MIT */
/* LLDB's Intel PT trace bundles for ptscope decode (see decode_input.h).
 *
 * A bundle is a folder of raw PT streams, context switch records and
 * binaries with a JSON description (`trace save` writes it, `trace load`
 * reads it; its schema is what `lldb -o "trace schema intel-pt"` prints).
 * Everything in it has a raw-stream option already, so the description is
 * read into the same struct decode_args those options fill, and the decode
 * is the one of --pt/--elf/--raw: a bundle and the options spelled out
 * give the same trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "ptscope/error.h"
#include "src/cli/decode_input.h"
#include "src/recording/build_id.h"

/* Where LLDB puts the kernel when the bundle does not say (x86-64 without
 * KASLR), as its schema documents. */
#define BUNDLE_KERNEL_BASE 0xffffffff81000000ull

/* The kernel of a kernel-only bundle is shown as this process, one thread
 * per CPU (tid = this + the CPU's id): LLDB shows it the same way. */
#define BUNDLE_KERNEL_PID 1

/* A bundle description is a small file; one larger is not one. */
#define BUNDLE_MAX_BYTES (16u << 20)

struct bundle {
	const char *path; /* the description, for messages */
	char *dir;	  /* its folder: relative paths start there */
	struct decode_args *a;
};

int cmd_decode_is_bundle(const char *path)
{
	char c = 0;
	FILE *f = fopen(path, "rb");
	int ch;

	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF &&
	       (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'))
		;
	c = (char)ch;
	fclose(f);
	return ch != EOF && c == '{';
}

void cmd_decode_args_release(struct decode_args *a)
{
	for (size_t i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	free(a->owned);
	a->owned = NULL;
	a->nowned = 0;
}

/* @s handed to a->owned, so it lives as long as @a; NULL when out of
 * memory (and @s freed). */
static char *own(struct decode_args *a, char *s)
{
	char **grown;

	if (!s)
		return NULL;
	grown = realloc(a->owned, (a->nowned + 1) * sizeof(*grown));
	if (!grown) {
		free(s);
		return NULL;
	}
	a->owned = grown;
	return a->owned[a->nowned++] = s;
}

/* The file @rel of the bundle: as it is when absolute, else in the
 * bundle's folder.  NULL when out of memory. */
static const char *bundle_file(struct bundle *b, const char *rel)
{
	size_t n;
	char *p;

	if (rel[0] == '/' || !b->dir[0])
		return own(b->a, strdup(rel));
	n = strlen(b->dir) + 1 + strlen(rel) + 1;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", b->dir, rel);
	return own(b->a, p);
}

static int bad_field(const struct bundle *b, const char *field,
		     const char *what)
{
	return ps_err_detail(PS_ERR_FORMAT,
			     "%s: \"%s\" %s (see `trace schema intel-pt` in "
			     "LLDB for the bundle layout)",
			     b->path, field, what);
}

static yajl_val field(yajl_val obj, const char *name)
{
	const char *path[] = {name, NULL};

	return obj && YAJL_IS_OBJECT(obj) ? yajl_tree_get(obj, path, yajl_t_any)
					  : NULL;
}

/* @v's string, "" when it is none. */
static const char *text_of(yajl_val v)
{
	const char *s = v && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;

	return s ? s : "";
}

/* A number as the schema allows it: a JSON integer, or a string holding
 * a decimal or 0x-hex one.  0, or -1 when @v is neither. */
static int number_of(yajl_val v, uint64_t *out)
{
	const char *s;
	char *end;

	if (!v)
		return -1;
	if (YAJL_IS_NUMBER(v))
		s = v->u.number.r; /* the text: past int64 too (timeZero) */
	else if (YAJL_IS_STRING(v))
		s = YAJL_GET_STRING(v);
	else
		return -1;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

/* Required number @name of @obj (named @where in messages) in *@out,
 * at most @max. */
static int need_number(const struct bundle *b, yajl_val obj, const char *name,
		       const char *where, uint64_t max, uint64_t *out)
{
	char f[96];

	snprintf(f, sizeof(f), "%s%s", where, name);
	if (number_of(field(obj, name), out))
		return bad_field(b, f,
				 field(obj, name) ? "is not a number (give an "
						    "integer or a decimal or "
						    "0x string)"
						  : "is missing");
	if (*out > max)
		return bad_field(b, f, "is out of range");
	return 0;
}

/* Required string @name of @obj. */
static int need_string(const struct bundle *b, yajl_val obj, const char *name,
		       const char *where, const char **out)
{
	char f[96];
	yajl_val v = field(obj, name);

	snprintf(f, sizeof(f), "%s%s", where, name);
	if (!*text_of(v))
		return bad_field(b, f, v ? "is not a file name" : "is missing");
	*out = text_of(v);
	return 0;
}

static int add_pt(struct bundle *b, const char *rel,
		  struct decode_pt_input **in)
{
	struct decode_args *a = b->a;

	if (a->npt == DECODE_MAX_INPUTS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "%s names more than %d PT streams",
				     b->path, DECODE_MAX_INPUTS);
	*in = &a->pt[a->npt];
	**in = (struct decode_pt_input){.cpu = -1};
	(*in)->path = bundle_file(b, rel);
	if (!(*in)->path)
		return PS_ERR_NOMEM;
	a->npt++;
	return 0;
}

/* "6AA9A4E2-6F28-...": LLDB's spelling of a GNU build id, as hex digits
 * in @hex; 0, or -1 when it is not one. */
static int uuid_hex(const char *uuid, char *hex, size_t size)
{
	size_t n = 0;

	for (; *uuid; uuid++) {
		if (*uuid == '-')
			continue;
		if (!strchr("0123456789abcdefABCDEF", *uuid) || n + 1 >= size)
			return -1;
		hex[n++] = (char)(*uuid | 0x20); /* lower case */
	}
	hex[n] = '\0';
	return n ? 0 : -1;
}

/* Warn when @path is not the build the bundle's @uuid names: its code
 * may not be what ran. */
static void check_build(const char *path, const char *uuid)
{
	uint8_t id[64];
	char want[160], have[160], msg[512];
	int n;

	if (!uuid || uuid_hex(uuid, want, sizeof(want)))
		return;
	n = buildid_read(path, id, sizeof(id));
	if (n <= 0)
		return;
	buildid_hex(id, (size_t)n, have, sizeof(have));
	/* LLDB adds a CRC to short ids; the id is the prefix */
	if (!strncmp(have, want, strlen(have)) ||
	    !strncmp(have, want, strlen(want)))
		return;
	snprintf(msg, sizeof(msg),
		 "%s has build id %s, not the %s the bundle names: the "
		 "decode may not follow the code that ran",
		 path, have, want);
	cmd_decode_warn(NULL, msg);
}

/* Code at @base for process @pid: an ELF file as --elf, anything else as
 * raw bytes (--raw: a memory dump); a file that cannot be read is warned
 * about and left out, as a missing binary of a perf.data is. */
static int add_code(struct bundle *b, const char *rel, uint64_t base,
		    uint64_t pid, const char *uuid)
{
	struct decode_args *a = b->a;
	struct decode_code_input *c;
	const char *path;
	char magic[4] = {0}, msg[600];
	int fd;

	if (a->ncode == DECODE_MAX_INPUTS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "%s names more than %d modules", b->path,
				     DECODE_MAX_INPUTS);
	path = bundle_file(b, rel);
	if (!path)
		return PS_ERR_NOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, sizeof(msg),
			 "module %s of %s cannot be read (%s): its code is "
			 "not decoded",
			 path, b->path, strerror(errno));
		cmd_decode_warn(NULL, msg);
		return 0;
	}
	if (read(fd, magic, 4) != 4)
		magic[0] = 0;
	close(fd);
	c = &a->code[a->ncode++];
	*c = (struct decode_code_input){.path = path,
					.addr = base,
					.raw = memcmp(magic, "\177ELF", 4) != 0,
					.pid = pid,
					.has_pid = 1};
	if (!c->raw)
		check_build(path, uuid);
	return 0;
}

static int read_cpu_info(struct bundle *b, yajl_val root)
{
	yajl_val ci = field(root, "cpuInfo"), vendor = field(ci, "vendor");
	uint64_t f, m, s = 0;
	int err;

	if (b->a->cpu_given)
		return 0;
	b->a->cpu_given = 1;
	if (!ci)
		return bad_field(b, "cpuInfo", "is missing");
	if (vendor && strcmp(text_of(vendor), "GenuineIntel")) {
		memset(&b->a->cfg.cpu, 0, sizeof(b->a->cfg.cpu));
		return 0; /* "unknown": no errata, as --cpu none */
	}
	err = need_number(b, ci, "family", "cpuInfo.", 0xffff, &f);
	if (!err)
		err = need_number(b, ci, "model", "cpuInfo.", 0xff, &m);
	if (!err && field(ci, "stepping"))
		err = need_number(b, ci, "stepping", "cpuInfo.", 0xff, &s);
	if (err)
		return err;
	b->a->cfg.cpu = (struct dec_cpu){.is_intel = 1,
					 .family = (uint16_t)f,
					 .model = (uint8_t)m,
					 .stepping = (uint8_t)s};
	return 0;
}

static int read_tsc_conv(struct bundle *b, yajl_val root)
{
	yajl_val t = field(root, "tscPerfZeroConversion");
	uint64_t mult, shift, zero;
	int err;

	if (!t || b->a->cfg.time.has_conv)
		return 0;
	err = need_number(b, t, "timeMult", "tscPerfZeroConversion.",
			  UINT32_MAX, &mult);
	if (!err)
		err = need_number(b, t, "timeShift", "tscPerfZeroConversion.",
				  63, &shift);
	if (!err)
		err = need_number(b, t, "timeZero", "tscPerfZeroConversion.",
				  UINT64_MAX, &zero);
	if (err)
		return err;
	b->a->cfg.time.has_conv = 1;
	b->a->cfg.time.mult = (uint32_t)mult;
	b->a->cfg.time.shift = (uint16_t)shift;
	b->a->cfg.time.zero = zero;
	return 0;
}

/* processes[i]: its modules, and its threads' streams (per-thread mode). */
static int read_process(struct bundle *b, yajl_val p, int *thread_streams)
{
	yajl_val mods = field(p, "modules"), thr = field(p, "threads");
	uint64_t pid;
	int err = need_number(b, p, "pid", "processes[].", UINT32_MAX, &pid);

	if (err)
		return err;
	if (!b->a->have_pid) {
		b->a->pid = pid; /* the one extra --elf/--raw go to */
		b->a->have_pid = 1;
	}
	if (b->a->nprocess == DECODE_MAX_INPUTS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "%s names more than %d processes", b->path,
				     DECODE_MAX_INPUTS);
	b->a->process[b->a->nprocess++] = pid;
	if (mods && !YAJL_IS_ARRAY(mods))
		return bad_field(b, "processes[].modules", "is not a list");
	for (size_t i = 0; mods && i < mods->u.array.len; i++) {
		yajl_val m = mods->u.array.values[i], uuid = field(m, "uuid");
		const char *file;
		uint64_t base;

		if (field(m, "file"))
			err = need_string(b, m, "file",
					  "processes[].modules[].", &file);
		else
			err = need_string(b, m, "systemPath",
					  "processes[].modules[].", &file);
		if (!err)
			err = need_number(b, m, "loadAddress",
					  "processes[].modules[].", UINT64_MAX,
					  &base);
		if (!err)
			err = add_code(b, file, base, pid, text_of(uuid));
		if (err)
			return err;
	}
	if (thr && !YAJL_IS_ARRAY(thr))
		return bad_field(b, "processes[].threads", "is not a list");
	for (size_t i = 0; thr && i < thr->u.array.len; i++) {
		yajl_val t = thr->u.array.values[i];
		struct decode_pt_input *in;
		const char *trace;
		uint64_t tid;

		err = need_number(b, t, "tid", "processes[].threads[].",
				  UINT32_MAX, &tid);
		if (err)
			return err;
		if (!field(t, "iptTrace"))
			continue; /* known from the switches of a CPU */
		err = need_string(b, t, "iptTrace", "processes[].threads[].",
				  &trace);
		if (!err)
			err = add_pt(b, trace, &in);
		if (err)
			return err;
		in->pid = pid;
		in->tid = tid;
		in->has_ids = 1;
		(*thread_streams)++;
	}
	return 0;
}

/* cpus[i]: a CPU's stream with its switch records, or in a kernel-only
 * bundle a thread of the kernel. */
static int read_cpu(struct bundle *b, yajl_val c, int kernel_only)
{
	struct decode_pt_input *in;
	const char *trace, *switches = NULL;
	uint64_t id;
	int err = need_number(b, c, "id", "cpus[].", 0xffff, &id);

	if (!err)
		err = need_string(b, c, "iptTrace", "cpus[].", &trace);
	if (!err && !kernel_only)
		err = need_string(b, c, "contextSwitchTrace", "cpus[].",
				  &switches);
	if (!err)
		err = add_pt(b, trace, &in);
	if (err)
		return err;
	if (kernel_only) {
		char name[32];

		snprintf(name, sizeof(name), "cpu %" PRIu64, id);
		in->pid = BUNDLE_KERNEL_PID;
		in->tid = BUNDLE_KERNEL_PID + 1 + id;
		in->has_ids = 1;
		in->process_name = "kernel";
		in->thread_name = own(b->a, strdup(name));
		return in->thread_name ? 0 : PS_ERR_NOMEM;
	}
	in->cpu = (int)id;
	in->switches = bundle_file(b, switches);
	return in->switches ? 0 : PS_ERR_NOMEM;
}

static int read_description(struct bundle *b, yajl_val root)
{
	yajl_val type = field(root, "type"), procs = field(root, "processes"),
		 cpus = field(root, "cpus"), kernel = field(root, "kernel");
	int err, thread_streams = 0, kernel_only;

	if (!root || !YAJL_IS_OBJECT(root))
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not a trace bundle description "
				     "(a JSON object)",
				     b->path);
	if (strcmp(text_of(type), "intel-pt"))
		return bad_field(b, "type",
				 "is not \"intel-pt\": ptscope decodes Intel "
				 "PT bundles");
	if (procs && !YAJL_IS_ARRAY(procs))
		return bad_field(b, "processes", "is not a list");
	if (cpus && !YAJL_IS_ARRAY(cpus))
		return bad_field(b, "cpus", "is not a list");
	kernel_only = kernel && (!procs || !procs->u.array.len);
	if (kernel && !kernel_only)
		return bad_field(b, "kernel",
				 "comes with processes: a bundle traces "
				 "either the kernel (with cpus) or processes");
	if (kernel_only && (!cpus || !cpus->u.array.len))
		return bad_field(b, "cpus",
				 "is missing: a kernel trace is one stream "
				 "per CPU");
	err = read_cpu_info(b, root);
	if (!err)
		err = read_tsc_conv(b, root);
	for (size_t i = 0; !err && procs && i < procs->u.array.len; i++)
		err =
		    read_process(b, procs->u.array.values[i], &thread_streams);
	if (err)
		return err;
	if (kernel_only) {
		uint64_t base = BUNDLE_KERNEL_BASE;
		const char *file;

		err = need_string(b, kernel, "file", "kernel.", &file);
		if (!err && field(kernel, "loadAddress"))
			err = need_number(b, kernel, "loadAddress", "kernel.",
					  UINT64_MAX, &base);
		if (!err)
			err = add_code(b, file, base, BUNDLE_KERNEL_PID, NULL);
		if (err)
			return err;
		b->a->pid = BUNDLE_KERNEL_PID;
		b->a->have_pid = 1;
	}
	if (cpus && cpus->u.array.len && thread_streams)
		return bad_field(b, "cpus",
				 "comes with threads' iptTrace streams: a "
				 "bundle has one or the other");
	if (cpus && cpus->u.array.len && !kernel_only &&
	    !b->a->cfg.time.has_conv)
		return bad_field(b, "tscPerfZeroConversion",
				 "is missing: per-CPU streams are split into "
				 "threads on perf's clock (or give "
				 "--tsc-conv)");
	for (size_t i = 0; !err && cpus && i < cpus->u.array.len; i++)
		err = read_cpu(b, cpus->u.array.values[i], kernel_only);
	if (!err && !b->a->npt)
		err = ps_err_detail(PS_ERR_NOT_FOUND,
				    "%s names no PT stream (no "
				    "processes[].threads[].iptTrace, no "
				    "cpus[].iptTrace)",
				    b->path);
	return err;
}

int cmd_decode_bundle(const char *path, struct decode_args *a)
{
	struct bundle b = {.path = path, .a = a};
	char errbuf[256] = "", *slash;
	uint8_t *text;
	size_t len;
	yajl_val root;
	int err = cmd_decode_read_file(path, &text, &len);

	if (err)
		return err;
	if (len > BUNDLE_MAX_BYTES) {
		free(text);
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not a trace bundle description "
				     "(not a regular file of at most %u MB)",
				     path, BUNDLE_MAX_BYTES >> 20);
	}
	root = yajl_tree_parse((const char *)text, errbuf, sizeof(errbuf));
	free(text);
	if (!root) {
		char *nl = strchr(errbuf, '\n');

		if (nl)
			*nl = '\0';
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not valid JSON (%s): it should be "
				     "an LLDB trace bundle description",
				     path, errbuf[0] ? errbuf : "parse error");
	}
	b.dir = strdup(path);
	if (!b.dir) {
		yajl_tree_free(root);
		return PS_ERR_NOMEM;
	}
	slash = strrchr(b.dir, '/');
	if (slash)
		slash[slash == b.dir] = '\0'; /* "/x.json": the root */
	else
		b.dir[0] = '\0';
	err = read_description(&b, root);
	free(b.dir);
	yajl_tree_free(root);
	return err;
}
