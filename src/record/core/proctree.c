/* SPDX-License-Identifier: MIT */
/* The process tree (core.h): children join the session with their
 * parent's image, an exec starts a new image (exec epoch) of its process
 * while the old one's modules and PT are kept for every later snapshot,
 * and trigger specs that name nothing in one process may be found in
 * another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"

int rec_follows(const struct rec_session *s)
{
	return !s->o->no_follow;
}

int rec_roots_gone(const struct rec_session *s)
{
	int roots = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i]->ppid)
			continue;
		roots++;
		if (!s->procs[i]->gone)
			return 0;
	}
	return roots > 0;
}

void rec_thr_set_gone(struct rec_session *s, struct rec_thr *t)
{
	if (t->state != THR_GONE) {
		t->state = THR_GONE;
		s->nlive--;
	}
}

void rec_thr_ended(struct rec_session *s, struct rec_thr *t, int exited,
		   int code)
{
	rec_thr_set_gone(s, t);
	if (t->tid != t->proc->pid)
		return;
	t->proc->gone = 1;
	if (!s->res || t->proc->pid != s->res->pid)
		return;
	if (exited) {
		s->res->exited = 1;
		s->res->exit_code = code;
	} else {
		s->res->killed_by = code;
	}
}

int rec_proc_add_child(struct rec_session *s, struct rec_proc *parent,
		       pid_t pid, struct rec_proc **out)
{
	struct rec_proc *p;
	int r;

	r = rec_proc_add(s, pid, &p);
	if (r)
		return r;
	p->ppid = parent->pid;
	p->epoch_ns = parent->now;
	p->now = parent->now;
	p->map_flags = parent->map_flags;
	/* Until it runs exec it is its parent's program under its parent's
	 * name (the kernel copies comm at fork). */
	if (!p->comm[0])
		memcpy(p->comm, parent->comm, sizeof(p->comm));
	if (!p->path && parent->path) {
		p->path = strdup(parent->path);
		if (!p->path)
			return PS_ERR_NOMEM;
	}
	if (p->map_flags) {
		/* An engine that reads mappings its own way (qemu) re-reads
		 * them with them. */
		r = s->be->maps ? s->be->maps(s, p) : 0;
		if (r && r != PS_ERR_NOT_FOUND)
			return r;
	}
	*out = p;
	if (!rec_triggers_wanted(s))
		return 0;
	return rec_triggers_resolve(s, p, parent->final_checked);
}

int rec_thr_keep_pt(struct rec_thr *t, uint32_t epoch, uint8_t *data,
		    size_t len)
{
	struct rec_pt_chunk *k;

	if (t->nkept == REC_KEPT_MAX) {
		free(t->kept[0].data);
		memmove(t->kept, t->kept + 1,
			(t->nkept - 1) * sizeof(*t->kept));
		t->nkept--;
	}
	k = realloc(t->kept, (t->nkept + 1) * sizeof(*k));
	if (!k) {
		free(data);
		return PS_ERR_NOMEM;
	}
	t->kept = k;
	t->kept[t->nkept++] = (struct rec_pt_chunk){epoch, data, len};
	return 0;
}

int rec_pt_one_chunk(const struct rec_thr *t, uint8_t *buf, size_t len,
		     struct rec_pt_chunk **chunks, size_t *n)
{
	struct rec_pt_chunk *c = malloc(sizeof(*c));

	if (!c) {
		free(buf);
		return PS_ERR_NOMEM;
	}
	*c = (struct rec_pt_chunk){t->epoch, buf, len};
	*chunks = c;
	*n = 1;
	return 0;
}

/* The engine's PT of @t so far becomes the core's, in its epochs. */
static int keep_engine_pt(struct rec_session *s, struct rec_thr *t)
{
	struct rec_pt_chunk *c = NULL;
	size_t n = 0;
	int r;

	if (!s->be->snapshot)
		return 0; /* a sampling engine: no PT to keep */
	r = s->be->snapshot(s, t, &c, &n);
	if (r == PS_ERR_NOT_FOUND)
		return 0;
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (!r)
			r = rec_thr_keep_pt(t, c[i].epoch, c[i].data, c[i].len);
		else
			free(c[i].data);
	}
	free(c);
	return r;
}

/* The current image of @p joins its earlier ones. */
static int retire_image(struct rec_proc *p)
{
	struct rec_image *im;

	im = realloc(p->images, (p->nimages + 1) * sizeof(*im));
	if (!im)
		return PS_ERR_NOMEM;
	p->images = im;
	im = &p->images[p->nimages++];
	memset(im, 0, sizeof(*im));
	im->epoch = p->epoch;
	im->start_ns = p->epoch_ns;
	memcpy(im->comm, p->comm, sizeof(im->comm));
	im->path = p->path;
	im->mods = p->mods;
	im->vdso = p->vdso;
	im->vdso_len = p->vdso_len;
	im->vdso_addr = p->vdso_addr;
	p->path = NULL;
	memset(&p->mods, 0, sizeof(p->mods));
	p->vdso = NULL;
	p->vdso_len = 0;
	p->vdso_addr = 0;
	p->exe_start = p->exe_end = 0;
	return 0;
}

int rec_proc_exec(struct rec_session *s, struct rec_proc *p, struct rec_thr *t,
		  uint64_t now, const char *path)
{
	int r;

	r = keep_engine_pt(s, t);
	if (!r)
		r = retire_image(p);
	if (r)
		return r;
	p->epoch++;
	p->epoch_ns = now;
	t->epoch = p->epoch;
	if (now > p->now)
		p->now = now;
	p->path = path ? strdup(path) : rec_exe_path(p->pid);
	r = rec_mark_add(s, REC_MARK_EXEC, t, now, 0, p->epoch,
			 p->path ? p->path : "");
	if (r)
		return r;
	rec_read_comm(p->pid, t->tid, t->comm, sizeof(t->comm));
	if (t->comm[0])
		memcpy(p->comm, t->comm, sizeof(p->comm));
	r = s->be->maps ? s->be->maps(s, p) : rec_proc_refresh_maps(s, p);
	if (r && r != PS_ERR_NOT_FOUND)
		return r;
	/* The old code's trigger addresses mean nothing now. */
	rec_triggers_disarm(s, t);
	rec_triggers_forget(s, p);
	if (!rec_triggers_wanted(s))
		return 0;
	return rec_triggers_resolve(s, p, 0);
}

int rec_trigger_absent(struct rec_session *s, struct rec_proc *p, unsigned idx,
		       int err, int near_miss)
{
	if (!rec_follows(s) || idx >= REC_MAX_TRIGGERS)
		return 0;
	if (err != PS_ERR_NOT_FOUND && err != PS_ERR_INVAL)
		return 0;
	/* A close name in the command's own program: a misspelt name is
	 * far likelier than a namesake in some later process. */
	if (near_miss && !p->ppid && !p->epoch)
		return 0;
	p->absent |= 1u << idx;
	if (!s->trigger_absent[idx]) {
		s->trigger_absent[idx] = strdup(ps_err_message(err));
		if (!s->trigger_absent[idx])
			return 0;
	}
	return 1;
}

int rec_triggers_unmatched(const struct rec_session *s)
{
	for (size_t i = 0; i < s->o->ntriggers && i < REC_MAX_TRIGGERS; i++) {
		if (!s->trigger_absent[i] || (s->triggers_ever & (1u << i)))
			continue;
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s; no process of the command's tree "
				     "had it either",
				     s->trigger_absent[i]);
	}
	return 0;
}
