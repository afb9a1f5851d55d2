/* SPDX-License-Identifier: MIT */
/* Classify x86-64 instructions for PT: a hand decoder for the branch
 * opcodes, capstone for the length of the rest (see insn.h). */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/capstone_load.h"
#include "ptscope/error.h"
#include "src/record/emulate/insn.h"

struct emu_insn_decoder {
	const struct cs_api *api; /* capstone, loaded by the first decoder */
	csh cs;			  /* capstone handle, 64-bit mode, no detail */
	cs_insn *scratch; /* owned: one instruction for cs_disasm_iter */
};

int emu_insn_decoder_new(struct emu_insn_decoder **out)
{
	struct emu_insn_decoder *d;
	const struct cs_api *api;
	int err;

	if (!out)
		return PS_ERR_INVAL;
	err = cs_api_get(&api);
	if (err)
		return err;
	d = calloc(1, sizeof(*d));
	if (!d)
		return PS_ERR_NOMEM;
	d->api = api;
	if (api->open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
		free(d);
		return ps_err_detail(PS_ERR_INTERNAL,
				     "capstone could not open an x86-64 "
				     "disassembler; check libcapstone");
	}
	d->scratch = api->malloc(d->cs);
	if (!d->scratch) {
		api->close(&d->cs);
		free(d);
		return PS_ERR_NOMEM;
	}
	*out = d;
	return 0;
}

void emu_insn_decoder_free(struct emu_insn_decoder *d)
{
	if (!d)
		return;
	d->api->free(d->scratch, 1);
	d->api->close(&d->cs);
	free(d);
}

const char *emu_insn_class_name(int cls)
{
	switch ((enum emu_insn_class)cls) {
	case EMU_I_OTHER:
		return "other";
	case EMU_I_JCC:
		return "jcc";
	case EMU_I_JMP:
		return "jmp";
	case EMU_I_CALL:
		return "call";
	case EMU_I_JMP_IND:
		return "jmp-ind";
	case EMU_I_CALL_IND:
		return "call-ind";
	case EMU_I_RET:
		return "ret";
	case EMU_I_FAR:
		return "far";
	case EMU_I_TRAP:
		return "trap";
	}
	return "unknown";
}

static int is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66:
	case 0x67:
	case 0xf0:
	case 0xf2:
	case 0xf3:
	case 0x2e:
	case 0x36:
	case 0x3e:
	case 0x26:
	case 0x64:
	case 0x65:
		return 1;
	}
	return 0;
}

static int is_string_op(uint8_t op)
{
	return (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) ||
	       (op >= 0x6c && op <= 0x6f);
}

/* Bytes of ModRM + SIB + displacement starting at @b[0] (the ModRM byte),
 * 64-bit addressing (the 0x67 prefix keeps the same layout); 0 if @n is too
 * short to tell. */
static size_t modrm_size(const uint8_t *b, size_t n)
{
	uint8_t mod, rm;
	size_t size = 1;

	if (n < 1)
		return 0;
	mod = b[0] >> 6;
	rm = b[0] & 7;
	if (mod == 3)
		return 1;
	if (rm == 4) {
		if (n < 2)
			return 0;
		size++;
		if (mod == 0 && (b[1] & 7) == 5)
			size += 4;
	} else if (mod == 0 && rm == 5) {
		size += 4; /* rip-relative */
	}
	if (mod == 1)
		size += 1;
	else if (mod == 2)
		size += 4;
	return size;
}

static int32_t read_s32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	v = le32toh(v);
	return (int32_t)v;
}

/* Set a direct branch with a rel8 or rel32 displacement at @b[@at]. */
static int direct(struct emu_insn *out, int cls, const uint8_t *b, size_t n,
		  size_t at, size_t rel)
{
	if (at + rel > n)
		return PS_ERR_TRUNCATED;
	out->cls = (uint8_t)cls;
	out->len = (uint8_t)(at + rel);
	out->disp = rel == 1 ? (int8_t)b[at] : read_s32(b + at);
	return 0;
}

static int fixed(struct emu_insn *out, int cls, size_t len, size_t n)
{
	if (len > n)
		return PS_ERR_TRUNCATED;
	out->cls = (uint8_t)cls;
	out->len = (uint8_t)len;
	return 0;
}

/* The branch opcodes; anything else is left as EMU_I_OTHER, len 0. */
static int classify(const uint8_t *b, size_t n, struct emu_insn *out)
{
	size_t i = 0, mr;
	int rep = 0;
	uint8_t op;

	while (i < n && i < EMU_INSN_MAX &&
	       (is_legacy_prefix(b[i]) || (b[i] & 0xf0) == 0x40)) {
		if (b[i] == 0xf2 || b[i] == 0xf3)
			rep = 1;
		i++;
	}
	if (i >= n)
		return PS_ERR_TRUNCATED;
	op = b[i];
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3))
		return direct(out, EMU_I_JCC, b, n, i + 1, 1);
	switch (op) {
	case 0xe8:
		return direct(out, EMU_I_CALL, b, n, i + 1, 4);
	case 0xe9:
		return direct(out, EMU_I_JMP, b, n, i + 1, 4);
	case 0xeb:
		return direct(out, EMU_I_JMP, b, n, i + 1, 1);
	case 0xc3:
		return fixed(out, EMU_I_RET, i + 1, n);
	case 0xc2:
		return fixed(out, EMU_I_RET, i + 3, n);
	case 0xcb:
	case 0xcf:
		return fixed(out, EMU_I_FAR, i + 1, n);
	case 0xca:
		return fixed(out, EMU_I_FAR, i + 3, n);
	case 0xcc:
	case 0xf1:
		return fixed(out, EMU_I_TRAP, i + 1, n);
	case 0xcd:
		return fixed(out, EMU_I_TRAP, i + 2, n);
	case 0xff:
		if (i + 1 >= n)
			return PS_ERR_TRUNCATED;
		mr = modrm_size(b + i + 1, n - i - 1);
		if (!mr)
			return PS_ERR_TRUNCATED;
		switch ((b[i + 1] >> 3) & 7) {
		case 2:
			return fixed(out, EMU_I_CALL_IND, i + 1 + mr, n);
		case 4:
			return fixed(out, EMU_I_JMP_IND, i + 1 + mr, n);
		case 3:
		case 5:
			return fixed(out, EMU_I_FAR, i + 1 + mr, n);
		}
		return 0;
	case 0x0f:
		if (i + 1 >= n)
			return PS_ERR_TRUNCATED;
		op = b[i + 1];
		if (op >= 0x80 && op <= 0x8f)
			return direct(out, EMU_I_JCC, b, n, i + 2, 4);
		if (op == 0x05 || op == 0x34)
			return fixed(out, EMU_I_TRAP, i + 2, n);
		return 0;
	}
	if (rep && is_string_op(op))
		out->flags |= EMU_IF_REP;
	return 0;
}

int emu_insn_decode(struct emu_insn_decoder *d, const uint8_t *bytes, size_t n,
		    uint64_t ip, struct emu_insn *out)
{
	const uint8_t *code;
	size_t size;
	uint64_t addr;
	int rc;

	if (!d || !bytes || !out || !ip)
		return PS_ERR_INVAL;
	memset(out, 0, sizeof(*out));
	out->ip = ip;
	if (n > EMU_INSN_MAX)
		n = EMU_INSN_MAX;
	rc = classify(bytes, n, out);
	if (rc < 0)
		return rc;
	if (out->cls != EMU_I_OTHER)
		return 0;
	/* Only the length is needed, and only to notice control flow that
	 * a non-branch cannot cause. */
	code = bytes;
	size = n;
	addr = ip;
	if (d->api->disasm_iter(d->cs, &code, &size, &addr, d->scratch))
		out->len = (uint8_t)d->scratch->size;
	return 0;
}
