/* SPDX-License-Identifier: MIT */
/* Data windows → call arguments and return values (see args.h). */
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "decoder/args.h"
#include "ptscope/error.h"

#define MAGIC 0xa5

int arg_feed(struct arg_rec *r, const struct br_event *ev)
{
	uint64_t p = ev->to;

	if (!ev->ret) {
		/* PTWRITE run by the program. */
		r->kind = 0;
		r->v[0] = p;
		return 2;
	}
	if (r->kind && r->n < r->want) {
		r->v[r->n++] = p;
		return r->n == r->want;
	}
	r->kind = 0;
	if ((p & 0xff) != MAGIC || p >> 32)
		return 0; /* a value without its header: ignored */
	r->kind = (int)((p >> 8) & 0xf);
	r->want = (unsigned)((p >> 12) & 0xf);
	r->n = 0;
	r->entry_lo = (uint16_t)(p >> 16);
	if (!r->kind || r->kind > ARG_WRITE) {
		r->kind = 0;
		return 0;
	}
	return r->want == 0;
}

int arg_attach(struct arg_rec *r, uint64_t start, struct arg_vals **slot)
{
	struct arg_vals *v = *slot;

	if ((uint16_t)start != r->entry_lo) {
		r->kind = 0;
		return 0;
	}
	if (!v && !(v = *slot = calloc(1, sizeof(*v))))
		return PS_ERR_NOMEM;
	if (r->kind == ARG_RET) {
		v->has_ret = 1;
		v->ret = r->v[0];
	} else {
		v->kind = r->kind;
		v->n = r->n;
		memcpy(v->v, r->v, sizeof(v->v));
	}
	r->kind = 0;
	return 0;
}

/* One value as its type shows it. */
static void show(const struct prm_param *pp, uint64_t v, struct ps_arg *a,
		 char **buf, size_t *size)
{
	unsigned sz = pp->size ? pp->size : 8;
	uint64_t mask = sz >= 8 ? ~0ull : (1ull << (8 * sz)) - 1;
	int n;

	v &= mask;
	switch ((enum prm_type)pp->type) {
	case PRM_INT:
		a->type = PS_ARG_INT;
		a->v.i = sz >= 8
			     ? (int64_t)v
			     : (int64_t)(v << (64 - 8 * sz)) >> (64 - 8 * sz);
		return;
	case PRM_BOOL:
		a->type = PS_ARG_BOOL;
		a->v.b = v != 0;
		return;
	case PRM_CHAR:
		a->type = PS_ARG_STRING;
		a->v.s = *buf;
		n = v >= 0x20 && v < 0x7f
			? snprintf(*buf, *size, "'%c'", (char)v)
			: snprintf(*buf, *size, "'\\x%02x'", (unsigned)v);
		break;
	case PRM_ENUM: {
		int64_t sv =
		    sz >= 8 ? (int64_t)v
			    : (int64_t)(v << (64 - 8 * sz)) >> (64 - 8 * sz);
		const char *name = prm_enum_name(pp, sv);

		if (name) {
			a->type = PS_ARG_STRING;
			a->v.s = name;
		} else {
			a->type = PS_ARG_INT;
			a->v.i = sv;
		}
		return;
	}
	case PRM_PTR:
		if (!v && pp->name) { /* raw registers (no name) stay hex */
			a->type = PS_ARG_STRING;
			a->v.s = "NULL";
		} else {
			a->type = PS_ARG_POINTER;
			a->v.u = v;
		}
		return;
	case PRM_DOUBLE:
		a->type = PS_ARG_DOUBLE;
		memcpy(&a->v.d, &v, 8);
		return;
	case PRM_FLOAT: {
		uint32_t b = (uint32_t)v;
		float f;

		memcpy(&f, &b, 4);
		a->type = PS_ARG_DOUBLE;
		a->v.d = f;
		return;
	}
	case PRM_UINT:
	default:
		a->type = PS_ARG_UINT;
		a->v.u = v;
		return;
	}
	if (n < 0 || (size_t)n >= *size) {
		a->v.s = "?";
		return;
	}
	*buf += n + 1;
	*size -= (size_t)n + 1;
}

/* Parameters the recorder placed, in its order (src/record/args.c). */
static int placed(const struct prm_param *p)
{
	return p->at == PRM_AT_REG || p->at == PRM_AT_XMM ||
	       (p->at == PRM_AT_STACK && p->index < 8 * 0x7f);
}

static const char *const arg_names[ARG_MAXV] = {
    "arg0", "arg1", "arg2",  "arg3",  "arg4",  "arg5",	"arg6", "arg7",
    "arg8", "arg9", "arg10", "arg11", "arg12", "arg13", "arg14"};

size_t arg_show(const struct prm_func *pf, const struct arg_vals *v,
		struct ps_arg *out, size_t max, char *buf, size_t size)
{
	static const struct prm_param raw = {
	    .name = NULL, .type = PRM_PTR, .size = 8};
	size_t k = 0;
	unsigned i = 0;

	if (v->kind == ARG_RAW) {
		for (; i < v->n && i < 6 && k < max; i++, k++) {
			out[k].name = prm_reg_name(i);
			show(&raw, v->v[i], &out[k], &buf, &size);
		}
	} else if (v->kind == ARG_ARGS && pf && !pf->raw) {
		for (unsigned j = 0; j < pf->n && k < max; j++) {
			if (pf->p[j].at == PRM_AT_CONST) {
				/* not passed: DWARF's constant */
				out[k].name = pf->p[j].name;
				show(&pf->p[j], pf->p[j].cval, &out[k], &buf,
				     &size);
				k++;
				continue;
			}
			if (!placed(&pf->p[j]) || i >= v->n)
				continue;
			out[k].name = pf->p[j].name && *pf->p[j].name
					  ? pf->p[j].name
					  : arg_names[i];
			show(&pf->p[j], v->v[i++], &out[k], &buf, &size);
			k++;
		}
	} else if (v->kind == ARG_ARGS) {
		static const struct prm_param u = {.type = PRM_UINT, .size = 8};

		for (; i < v->n && k < max; i++, k++) {
			out[k].name = arg_names[i];
			show(&u, v->v[i], &out[k], &buf, &size);
		}
	}
	if (v->has_ret && k < max) {
		const struct prm_param *rp =
		    pf && !pf->raw && pf->ret.type != PRM_NONE ? &pf->ret
							       : &raw;

		out[k].name = "return";
		show(rp, v->ret, &out[k], &buf, &size);
		k++;
	}
	return k;
}
