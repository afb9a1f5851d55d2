/* SPDX-License-Identifier: MIT */
/* x86 instruction classification: the table decoder first (insn_len.c),
 * capstone for what it leaves (see insn.h). */
#include "decoder/insn.h"

#include <pthread.h>
#include <stdlib.h>

#include "decoder/capstone_load.h"
#include "ptscope/error.h"

/* Capstone keeps tables of its own, built on first use without a lock
 * (capstone 4's x86 register tables are sorted in place by whichever
 * thread needs them first), so decoders on several threads (decoder/
 * split.c) take turns.  Only learning new code decodes instructions. */
static pthread_mutex_t capstone_lock = PTHREAD_MUTEX_INITIALIZER;

struct insn_decoder {
	const struct cs_api *api; /* capstone, loaded on first use */
	csh cs[3];		  /* 16, 32, 64-bit handles, opened then */
	int open[3];
	cs_insn *insn[3];
};

int insn_new(struct insn_decoder **out)
{
	struct insn_decoder *d;

	if (!out)
		return PS_ERR_INVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return PS_ERR_NOMEM;
	*out = d;
	return 0;
}

void insn_free(struct insn_decoder *d)
{
	if (!d)
		return;
	for (int i = 0; i < 3; i++) {
		if (d->open[i]) {
			d->api->free(d->insn[i], 1);
			d->api->close(&d->cs[i]);
		}
	}
	free(d);
}

static int open_mode(struct insn_decoder *d, int idx)
{
	static const cs_mode modes[3] = {CS_MODE_16, CS_MODE_32, CS_MODE_64};
	int err;

	if (d->open[idx])
		return 0;
	if (!d->api && (err = cs_api_get(&d->api)) != 0)
		return err;
	if (d->api->open(CS_ARCH_X86, modes[idx], &d->cs[idx]) != CS_ERR_OK)
		return ps_err_detail(PS_ERR_INTERNAL,
				     "capstone cannot open an x86 decoder");
	d->api->option(d->cs[idx], CS_OPT_DETAIL, CS_OPT_ON);
	d->insn[idx] = d->api->malloc(d->cs[idx]);
	if (!d->insn[idx]) {
		d->api->close(&d->cs[idx]);
		return PS_ERR_NOMEM;
	}
	d->open[idx] = 1;
	return 0;
}

static int has_group(const cs_insn *in, uint8_t grp)
{
	for (int i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == grp)
			return 1;
	return 0;
}

static void classify(const cs_insn *in, struct insn_info *out)
{
	const cs_x86 *x = &in->detail->x86;

	out->cls = INSN_OTHER;
	out->direct = 0;
	out->target = 0;
	switch (in->id) {
	case X86_INS_CALL:
		out->cls = INSN_CALL;
		break;
	case X86_INS_JMP:
		out->cls = INSN_JUMP;
		break;
	case X86_INS_RET:
		out->cls = INSN_RET;
		return;
	case X86_INS_LCALL:
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
		out->cls = INSN_SYSCALL;
		return;
	case X86_INS_LJMP:
		out->cls = INSN_FAR_JUMP;
		return;
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
	case X86_INS_SYSRET:
	case X86_INS_SYSEXIT:
		out->cls = INSN_FAR_RET;
		return;
	default:
		if (has_group(in, CS_GRP_JUMP))
			out->cls = INSN_COND;
		else
			return;
	}
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		out->direct = 1;
		out->target = (uint64_t)x->operands[0].imm;
	}
}

int insn_decode(struct insn_decoder *d, int bits, uint64_t ip,
		const uint8_t *bytes, size_t len, struct insn_info *out)
{
	if (!d || !bytes || !out)
		return PS_ERR_INVAL;
	if (bits == 64 && insn_quick(bytes, len, ip, out))
		return 0;
	return insn_capstone(d, bits, ip, bytes, len, out);
}

int insn_capstone(struct insn_decoder *d, int bits, uint64_t ip,
		  const uint8_t *bytes, size_t len, struct insn_info *out)
{
	const uint8_t *code = bytes;
	uint64_t addr = ip;
	size_t size = len;
	int idx, err, ok;

	if (!d || !bytes || !out)
		return PS_ERR_INVAL;
	idx = bits == 64 ? 2 : bits == 32 ? 1 : bits == 16 ? 0 : -1;
	if (idx < 0)
		return PS_ERR_INVAL;
	pthread_mutex_lock(&capstone_lock);
	err = open_mode(d, idx);
	ok = !err &&
	     d->api->disasm_iter(d->cs[idx], &code, &size, &addr, d->insn[idx]);
	pthread_mutex_unlock(&capstone_lock);
	if (err)
		return err;
	if (!ok) {
		size_t vlen = insn_fallback_len(bits, bytes, len);

		if (!vlen)
			return PS_ERR_DECODE;
		out->len = (uint8_t)vlen;
		out->cls = INSN_OTHER;
		out->direct = 0;
		out->target = 0;
		return 0;
	}
	out->len = (uint8_t)d->insn[idx]->size;
	classify(d->insn[idx], out);
	if (bits != 64 && out->direct)
		out->target &= bits == 32 ? 0xffffffffu : 0xffffu;
	return 0;
}
