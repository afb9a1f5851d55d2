/* SPDX-License-Identifier: MIT */
/* Shared unit-test helpers: see support.h. */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <intel-pt.h>

#include "ptscope/error.h"
#include "src/output/sink.h"
#include "src/output/text.h"
#include "tests/harness.h"
#include "tests/support.h"

static void *xrealloc(void *p, size_t n)
{
	void *np = realloc(p, n ? n : 1);

	if (!np)
		abort();
	return np;
}

static char *xstrdup(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		abort();
	return d;
}

/* ---- the recording writer ---- */

static struct ts_item *rec_add(struct ts_recorder *r, enum ts_kind kind)
{
	struct ts_item *it;

	if (r->n == r->cap) {
		/* events[] never outgrows items[]: same capacity */
		r->cap = r->cap ? r->cap * 2 : 64;
		r->items = xrealloc(r->items, r->cap * sizeof(*r->items));
		r->events = xrealloc(r->events, r->cap * sizeof(*r->events));
	}
	if (kind == TS_EVENT)
		r->events[r->count[TS_EVENT]] = r->n;
	r->count[kind]++;
	it = &r->items[r->n++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	return it;
}

static int rec_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct ts_item *it = rec_add((struct ts_recorder *)w, TS_PROCESS);

	it->ev.pid = pid;
	it->value = xstrdup(name);
	return 0;
}

static int rec_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		      const char *name)
{
	struct ts_item *it = rec_add((struct ts_recorder *)w, TS_THREAD);

	it->ev.pid = pid;
	it->ev.tid = tid;
	it->value = xstrdup(name);
	return 0;
}

static int rec_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct ts_item *it = rec_add((struct ts_recorder *)w, TS_PARENT);

	it->ev.pid = pid;
	it->ev.tid = ppid;
	return 0;
}

static int rec_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct ts_item *it = rec_add((struct ts_recorder *)w, TS_META);

	it->key = xstrdup(key);
	it->value = xstrdup(value);
	return 0;
}

static int rec_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct ts_recorder *r = (struct ts_recorder *)w;
	struct ts_item *it;

	r->seen++;
	if (r->fail_at && r->seen >= r->fail_at)
		return ps_err_detail(PS_ERR_IO, "recording writer: stop");
	if (r->check)
		return r->check(r, ev);
	it = rec_add(r, TS_EVENT);
	it->ev = *ev;
	it->ev.name = xstrdup(ev->name);
	it->ev.category = xstrdup(ev->category);
	it->args = xrealloc(NULL, ev->nargs * sizeof(*it->args));
	for (size_t i = 0; i < ev->nargs; i++) {
		it->args[i] = ev->args[i];
		it->args[i].name = xstrdup(ev->args[i].name);
		if (ev->args[i].type == PS_ARG_STRING)
			it->args[i].v.s = xstrdup(ev->args[i].v.s);
	}
	it->ev.args = it->args;
	if (ev->info) {
		it->info = *ev->info;
		it->info.module = xstrdup(ev->info->module);
		it->info.file = xstrdup(ev->info->file);
		it->has_info = 1;
		it->ev.info = &it->info;
	}
	return 0;
}

static int rec_flush(struct ps_writer *w)
{
	return 0;
}

static void rec_destroy(struct ps_writer *w)
{
}

static const struct ps_writer_ops rec_ops = {
    .name = "recorder",
    .process = rec_process,
    .thread = rec_thread,
    .meta = rec_meta,
    .event = rec_event,
    .flush = rec_flush,
    .destroy = rec_destroy,
    .parent = rec_parent,
};

void ts_rec_init(struct ts_recorder *r)
{
	memset(r, 0, sizeof(*r));
	r->base.ops = &rec_ops;
}

void ts_rec_free(struct ts_recorder *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct ts_item *it = &r->items[i];

		free((char *)it->ev.name);
		free((char *)it->ev.category);
		for (size_t j = 0; j < it->ev.nargs; j++) {
			free((char *)it->args[j].name);
			if (it->args[j].type == PS_ARG_STRING)
				free((char *)it->args[j].v.s);
		}
		free(it->args);
		free((char *)it->info.module);
		free((char *)it->info.file);
		free(it->key);
		free(it->value);
	}
	free(r->items);
	free(r->events);
	ts_rec_init(r);
}

const struct ps_event *ts_rec_event(const struct ts_recorder *r, size_t i)
{
	if (i >= r->count[TS_EVENT])
		return NULL;
	return &r->items[r->events[i]].ev;
}

const struct ts_item *ts_rec_nth(const struct ts_recorder *r, enum ts_kind kind,
				 size_t i)
{
	for (size_t k = 0; k < r->n; k++)
		if (r->items[k].kind == kind && i-- == 0)
			return &r->items[k];
	return NULL;
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

void ts_rec_print(const struct ts_recorder *r, FILE *f)
{
	static const char *const kind[] = {"event", "process", "thread", "meta",
					   "parent"};

	for (size_t i = 0; i < r->n; i++) {
		const struct ts_item *it = &r->items[i];

		fprintf(f,
			"%zu %s type=%d pid=%llu tid=%llu ts=%llu %s %s %s\n",
			i, kind[it->kind], (int)it->ev.type,
			(unsigned long long)it->ev.pid,
			(unsigned long long)it->ev.tid,
			(unsigned long long)it->ev.ts, or_dash(it->ev.name),
			or_dash(it->key), or_dash(it->value));
	}
}

/* ---- comparing events ---- */

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

static int arg_eq(const struct ps_arg *a, const struct ps_arg *b)
{
	if (!str_eq(a->name, b->name) || a->type != b->type)
		return 0;
	switch (a->type) {
	case PS_ARG_NULL:
		return 1;
	case PS_ARG_BOOL:
		return !!a->v.b == !!b->v.b;
	case PS_ARG_INT:
		return a->v.i == b->v.i;
	case PS_ARG_UINT:
	case PS_ARG_POINTER:
		return a->v.u == b->v.u;
	case PS_ARG_DOUBLE:
		return a->v.d == b->v.d;
	case PS_ARG_STRING:
		return str_eq(a->v.s, b->v.s);
	}
	return 0;
}

int ts_event_diff(const struct ps_event *a, const struct ps_event *b)
{
	if (a->type != b->type)
		return __LINE__;
	if (a->pid != b->pid || a->tid != b->tid || a->ts != b->ts)
		return __LINE__;
	if (!str_eq(a->name, b->name) || !str_eq(a->category, b->category))
		return __LINE__;
	if (a->type >= PS_EV_FLOW_BEGIN && a->flow_id != b->flow_id)
		return __LINE__;
	if (a->type == PS_EV_INSTANT && a->scope != b->scope)
		return __LINE__;
	if (!a->info != !b->info)
		return __LINE__;
	if (a->info && (!str_eq(a->info->module, b->info->module) ||
			!str_eq(a->info->file, b->info->file) ||
			a->info->address != b->info->address ||
			a->info->line != b->info->line))
		return __LINE__;
	if (a->nargs != b->nargs)
		return __LINE__;
	for (size_t i = 0; i < a->nargs; i++)
		if (!arg_eq(&a->args[i], &b->args[i]))
			return __LINE__;
	return 0;
}

/* ---- writers into memory ---- */

struct ps_writer *ts_writer_on_memory(int (*make)(struct ps_sink *,
						  struct ps_writer **))
{
	struct ps_sink *sink;
	struct ps_writer *w;

	if (ps_sink_open_memory(&sink))
		return NULL;
	if (make(sink, &w)) {
		ps_sink_abort(sink);
		return NULL;
	}
	w->sink = sink;
	return w;
}

static int make_text_slices(struct ps_sink *s, struct ps_writer **w)
{
	struct text_options o = {.slices = 1};

	return text_writer_new(s, &o, w);
}

static int make_text_events(struct ps_sink *s, struct ps_writer **w)
{
	return text_writer_new(s, NULL, w);
}

struct ps_writer *ts_text_on_memory(int slices)
{
	return ts_writer_on_memory(slices ? make_text_slices
					  : make_text_events);
}

uint8_t *ts_writer_bytes(struct ps_writer *w, size_t *len, int *err)
{
	struct ps_sink *sink = w->sink;
	const uint8_t *data;
	uint8_t *copy = NULL;
	int ferr = w->ops->flush(w);
	size_t n;

	if (err)
		*err = ferr;
	if (!ferr || err) {
		ps_sink_memory_data(sink, &data, &n);
		copy = xrealloc(NULL, n + 1);
		memcpy(copy, data, n);
		copy[n] = 0;
		if (len)
			*len = n;
	}
	w->ops->destroy(w);
	ps_sink_abort(sink);
	return copy;
}

/* ---- files and paths ---- */

uint8_t *ts_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = xrealloc(NULL, (size_t)n + 1);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static const char *path_in(const char *dir, const char *sub, const char *rel)
{
	static char path[8][4096];
	static unsigned i;

	i = (i + 1) % 8;
	snprintf(path[i], sizeof(path[i]), "%s/%s/%s", dir, sub, rel);
	return path[i];
}

const char *ts_realpt(const char *rel)
{
	return path_in(harness_testdata(), "real-pt", rel);
}

const char *ts_sample(const char *name)
{
	return path_in(harness_build(), "samples", name);
}

/* ---- a libipt encoder into a fixed buffer ---- */

void ts_enc_init(struct ts_enc *w)
{
	struct pt_config cfg;

	memset(w->buf, 0, sizeof(w->buf));
	pt_config_init(&cfg);
	cfg.begin = w->buf;
	cfg.end = w->buf + sizeof(w->buf);
	w->e = pt_alloc_encoder(&cfg);
	w->bad = !w->e;
}

size_t ts_enc_done(struct ts_enc *w)
{
	uint64_t off = 0;

	pt_enc_get_offset(w->e, &off);
	pt_free_encoder(w->e);
	w->e = NULL;
	return (size_t)off;
}

static void ts_put(struct ts_enc *w, struct pt_packet *p)
{
	if (pt_enc_next(w->e, p) < 0)
		w->bad = 1;
}

void ts_pkt(struct ts_enc *w, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	ts_put(w, &p);
}

void ts_pkt_ip(struct ts_enc *w, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
	p.payload.ip.ip = ip;
	ts_put(w, &p);
}

void ts_pkt_mode64(struct ts_enc *w)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	ts_put(w, &p);
}

void ts_pkt_timing(struct ts_enc *w, enum pt_packet_type type, uint64_t a,
		   uint64_t b)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	switch (type) {
	case ppt_tsc:
		p.payload.tsc.tsc = a;
		break;
	case ppt_tma:
		p.payload.tma.ctc = (uint16_t)a;
		p.payload.tma.fc = (uint16_t)b;
		break;
	case ppt_mtc:
		p.payload.mtc.ctc = (uint8_t)a;
		break;
	case ppt_cbr:
		p.payload.cbr.ratio = (uint8_t)a;
		break;
	case ppt_cyc:
		p.payload.cyc.value = a;
		break;
	default:
		break;
	}
	ts_put(w, &p);
}

void ts_pkt_tnt(struct ts_enc *w, const char *bits)
{
	struct pt_packet p;
	uint64_t v = 0;
	uint8_t n = 0;

	for (; *bits; bits++, n++)
		v = (v << 1) | (*bits == 'T');
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = n;
	p.payload.tnt.payload = v;
	ts_put(w, &p);
}

uint8_t *ts_elf_text(const char *path, size_t *len, uint64_t *addr)
{
	int fd = open(path, O_RDONLY);
	uint8_t *out = NULL;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !out && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		size_t str;
		const char *name;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || elf_getshdrstrndx(e, &str))
			break;
		name = elf_strptr(e, str, sh.sh_name);
		if (!name || strcmp(name, ".text"))
			continue;
		data = elf_getdata(scn, NULL);
		if (data && data->d_size && (out = malloc(data->d_size))) {
			memcpy(out, data->d_buf, data->d_size);
			*len = data->d_size;
			if (addr)
				*addr = sh.sh_addr;
		}
	}
	elf_end(e);
	close(fd);
	return out;
}
