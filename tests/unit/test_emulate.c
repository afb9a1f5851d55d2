/* SPDX-License-Identifier: MIT */
/* Tests for the emulated PT backend (src/record/emulate/).
 *
 * The oracle round trip: single-step a real sample with ptrace, feed every
 * step to emu_step(), decode the snapshot with libipt's own instruction
 * decoder over the child's mappings, and require the decoded instruction
 * sequence to be exactly the stepped one, with timestamps and ground truth
 * that agree with it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <intel-pt.h>

#include "ptscope/error.h"
#include "src/record/emulate/emulate.h"
#include "src/record/emulate/encode.h"
#include "src/record/emulate/icache.h"
#include "src/record/emulate/insn.h"
#include "src/record/emulate/ring.h"
#include "tests/harness.h"

/* ---- the instruction classifier ---------------------------------------- */

struct insn_case {
	const char *name;
	uint8_t bytes[16];
	size_t n;
	int cls;
	int len;
	int32_t disp;
	int flags;
};

static const struct insn_case insn_cases[] = {
    {"call rel32", {0xe8, 0x10, 0x00, 0x00, 0x00}, 5, EMU_I_CALL, 5, 16, 0},
    {"call rel32 back",
     {0xe8, 0xfb, 0xff, 0xff, 0xff},
     5,
     EMU_I_CALL,
     5,
     -5,
     0},
    {"call *%rax", {0xff, 0xd0}, 2, EMU_I_CALL_IND, 2, 0, 0},
    {"call *0x10(%rip)",
     {0xff, 0x15, 0x10, 0, 0, 0},
     6,
     EMU_I_CALL_IND,
     6,
     0,
     0},
    {"call *(%rax,%rbx,8)", {0xff, 0x14, 0xd8}, 3, EMU_I_CALL_IND, 3, 0, 0},
    {"call *0x8(%rsp)", {0xff, 0x54, 0x24, 0x08}, 4, EMU_I_CALL_IND, 4, 0, 0},
    {"call *disp32(,%rax,8)",
     {0xff, 0x14, 0xc5, 1, 2, 3, 4},
     7,
     EMU_I_CALL_IND,
     7,
     0,
     0},
    {"call *%r11", {0x41, 0xff, 0xd3}, 3, EMU_I_CALL_IND, 3, 0, 0},
    {"notrack call *%rax", {0x3e, 0xff, 0xd0}, 3, EMU_I_CALL_IND, 3, 0, 0},
    {"lcall *(%rax)", {0xff, 0x18}, 2, EMU_I_FAR, 2, 0, 0},
    {"ret", {0xc3}, 1, EMU_I_RET, 1, 0, 0},
    {"ret $8", {0xc2, 0x08, 0x00}, 3, EMU_I_RET, 3, 0, 0},
    {"rep ret", {0xf3, 0xc3}, 2, EMU_I_RET, 2, 0, 0},
    {"bnd ret", {0xf2, 0xc3}, 2, EMU_I_RET, 2, 0, 0},
    {"lret", {0xcb}, 1, EMU_I_FAR, 1, 0, 0},
    {"iretq", {0x48, 0xcf}, 2, EMU_I_FAR, 2, 0, 0},
    {"jz short", {0x74, 0x05}, 2, EMU_I_JCC, 2, 5, 0},
    {"jnz short back", {0x75, 0xf0}, 2, EMU_I_JCC, 2, -16, 0},
    {"jg near", {0x0f, 0x8f, 0x00, 0x01, 0x00, 0x00}, 6, EMU_I_JCC, 6, 256, 0},
    {"loop", {0xe2, 0xfe}, 2, EMU_I_JCC, 2, -2, 0},
    {"jrcxz", {0xe3, 0x02}, 2, EMU_I_JCC, 2, 2, 0},
    {"jmp rel8", {0xeb, 0x03}, 2, EMU_I_JMP, 2, 3, 0},
    {"jmp rel32",
     {0xe9, 0x00, 0x00, 0x00, 0x80},
     5,
     EMU_I_JMP,
     5,
     INT32_MIN,
     0},
    {"bnd jmp rel32", {0xf2, 0xe9, 1, 0, 0, 0}, 6, EMU_I_JMP, 6, 1, 0},
    {"jmp *%rax", {0xff, 0xe0}, 2, EMU_I_JMP_IND, 2, 0, 0},
    {"notrack jmp *(%rdx,%rax,4)",
     {0x3e, 0xff, 0x24, 0x82},
     4,
     EMU_I_JMP_IND,
     4,
     0,
     0},
    {"bnd jmp *0x2fe2(%rip)",
     {0xf2, 0xff, 0x25, 0xe2, 0x2f, 0, 0},
     7,
     EMU_I_JMP_IND,
     7,
     0,
     0},
    {"jmp *0x1000(%rax)",
     {0xff, 0xa0, 0, 0x10, 0, 0},
     6,
     EMU_I_JMP_IND,
     6,
     0,
     0},
    {"ljmp *(%rax)", {0xff, 0x28}, 2, EMU_I_FAR, 2, 0, 0},
    {"syscall", {0x0f, 0x05}, 2, EMU_I_TRAP, 2, 0, 0},
    {"sysenter", {0x0f, 0x34}, 2, EMU_I_TRAP, 2, 0, 0},
    {"int3", {0xcc}, 1, EMU_I_TRAP, 1, 0, 0},
    {"int $0x80", {0xcd, 0x80}, 2, EMU_I_TRAP, 2, 0, 0},
    {"int1", {0xf1}, 1, EMU_I_TRAP, 1, 0, 0},
    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, EMU_I_OTHER, 4, 0, 0},
    {"nop", {0x90}, 1, EMU_I_OTHER, 1, 0, 0},
    {"push %rbp", {0x55}, 1, EMU_I_OTHER, 1, 0, 0},
    {"mov %rsp,%rbp", {0x48, 0x89, 0xe5}, 3, EMU_I_OTHER, 3, 0, 0},
    {"movabs $imm64,%rax",
     {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8},
     10,
     EMU_I_OTHER,
     10,
     0,
     0},
    {"inc (%rax) via ff /0", {0xff, 0x00}, 2, EMU_I_OTHER, 2, 0, 0},
    {"push (%rax) via ff /6", {0xff, 0x30}, 2, EMU_I_OTHER, 2, 0, 0},
    {"rep stosb", {0xf3, 0xaa}, 2, EMU_I_OTHER, 2, 0, EMU_IF_REP},
    {"rep movsq", {0xf3, 0x48, 0xa5}, 3, EMU_I_OTHER, 3, 0, EMU_IF_REP},
    {"repne scasb", {0xf2, 0xae}, 2, EMU_I_OTHER, 2, 0, EMU_IF_REP},
    {"movsb (no rep)", {0xa4}, 1, EMU_I_OTHER, 1, 0, 0},
    {"vzeroupper (VEX c5)", {0xc5, 0xf8, 0x77}, 3, EMU_I_OTHER, 3, 0, 0},
    {"vpcmpeqb (VEX c4)",
     {0xc4, 0xe2, 0x7d, 0x29, 0xc1},
     5,
     EMU_I_OTHER,
     5,
     0,
     0},
    {"vmovdqu64 (EVEX)",
     {0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x06},
     6,
     EMU_I_OTHER,
     6,
     0,
     0},
    {"lock cmpxchg", {0xf0, 0x48, 0x0f, 0xb1, 0x0a}, 5, EMU_I_OTHER, 5, 0, 0},
    {"nopw %cs:0(%rax,%rax)",
     {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0},
     10,
     EMU_I_OTHER,
     10,
     0,
     0},
    {"fs mov",
     {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0},
     9,
     EMU_I_OTHER,
     9,
     0,
     0},
};

TEST(insn_classifies_hand_written_bytes)
{
	struct emu_insn_decoder *d;
	size_t i;

	CHECK_EQ(emu_insn_decoder_new(&d), 0);
	for (i = 0; i < sizeof(insn_cases) / sizeof(insn_cases[0]); i++) {
		const struct insn_case *c = &insn_cases[i];
		struct emu_insn in;

		POISON(in);
		if (emu_insn_decode(d, c->bytes, c->n, 0x401000, &in) != 0 ||
		    in.cls != c->cls || in.len != c->len ||
		    in.disp != c->disp || in.flags != c->flags ||
		    in.ip != 0x401000) {
			harness_failf(__FILE__, __LINE__,
				      "%s: class %s len %d disp %d flags %d",
				      c->name, emu_insn_class_name(in.cls),
				      in.len, in.disp, in.flags);
			emu_insn_decoder_free(d);
			return;
		}
	}
	emu_insn_decoder_free(d);
}

TEST(insn_truncated_and_bad_input)
{
	struct emu_insn_decoder *d;
	struct emu_insn in;
	static const uint8_t call[] = {0xe8, 1, 2, 3, 4};
	static const uint8_t prefixes[15] = {0x66, 0x66, 0x66, 0x66, 0x66,
					     0x66, 0x66, 0x66, 0x66, 0x66,
					     0x66, 0x66, 0x66, 0x66, 0x66};
	static const uint8_t junk[] = {0x0f, 0xff, 0xff};
	static const uint8_t ff_sib[] = {0xff, 0x14};
	size_t n;

	CHECK_EQ(emu_insn_decoder_new(&d), 0);
	/* Every cut of a call rel32 but the whole is truncated. */
	for (n = 1; n < sizeof(call); n++)
		CHECK_EQ(emu_insn_decode(d, call, n, 0x1000, &in),
			 PS_ERR_TRUNCATED);
	CHECK_EQ(emu_insn_decode(d, ff_sib, sizeof(ff_sib), 0x1000, &in),
		 PS_ERR_TRUNCATED);
	CHECK_EQ(emu_insn_decode(d, prefixes, sizeof(prefixes), 0x1000, &in),
		 PS_ERR_TRUNCATED);
	CHECK_EQ(emu_insn_decode(d, call, 0, 0x1000, &in), PS_ERR_TRUNCATED);
	/* Unknown opcodes are "other" with an unknown length, not errors. */
	CHECK_EQ(emu_insn_decode(d, junk, sizeof(junk), 0x1000, &in), 0);
	CHECK_EQ(in.cls, EMU_I_OTHER);
	CHECK_EQ(emu_insn_decode(d, call, sizeof(call), 0, &in), PS_ERR_INVAL);
	CHECK_EQ(emu_insn_decode(NULL, call, sizeof(call), 1, &in),
		 PS_ERR_INVAL);
	CHECK_EQ(emu_insn_decode(d, NULL, 5, 1, &in), PS_ERR_INVAL);
	CHECK_STR(emu_insn_class_name(EMU_I_TRAP), "trap");
	CHECK_STR(emu_insn_class_name(99), "unknown");
	emu_insn_decoder_free(d);
	emu_insn_decoder_free(NULL);
}

/* ---- the instruction cache --------------------------------------------- */

TEST(icache_grows_finds_and_drops)
{
	struct emu_icache c;
	struct emu_insn in;
	uint64_t ip;

	CHECK_EQ(emu_icache_init(&c), 0);
	memset(&in, 0, sizeof(in));
	for (ip = 0x400000; ip < 0x400000 + 3 * 20000; ip += 3) {
		in.ip = ip;
		in.len = 3;
		in.disp = (int32_t)ip;
		CHECK(emu_icache_add(&c, &in) != NULL);
	}
	CHECK_EQ(c.used, 20000);
	for (ip = 0x400000; ip < 0x400000 + 3 * 20000; ip += 3) {
		const struct emu_insn *e = emu_icache_find(&c, ip);

		CHECK(e && e->disp == (int32_t)ip);
		CHECK(emu_icache_find(&c, ip + 1) == NULL);
	}
	/* Drop [0x401000, 0x402000): an insn at 0x400fff..0x401001 goes. */
	CHECK_EQ(emu_icache_drop(&c, 0x401000, 0x1000), 0);
	for (ip = 0x400000; ip < 0x400000 + 3 * 20000; ip += 3) {
		int gone = ip + 3 > 0x401000 && ip < 0x402000;

		CHECK_EQ(emu_icache_find(&c, ip) == NULL, gone);
	}
	/* Replacing keeps one entry. */
	in.ip = 0x400000;
	in.len = 7;
	CHECK(emu_icache_add(&c, &in) != NULL);
	CHECK_EQ(emu_icache_find(&c, 0x400000)->len, 7);
	in.ip = 0;
	CHECK(emu_icache_add(&c, &in) == NULL);
	CHECK_EQ(emu_icache_drop(&c, 0, UINT64_MAX), 0);
	CHECK_EQ(c.used, 0);
	CHECK_EQ(emu_icache_drop(NULL, 0, 1), PS_ERR_INVAL);
	emu_icache_fini(&c);
}

/* ---- packets ------------------------------------------------------------ */

TEST(ip_compression_is_the_shortest)
{
	CHECK_EQ(emu_pkt_ipc(0, 0, 0x401000), pt_ipc_sext_48);
	CHECK_EQ(emu_pkt_ipc(0, 0, 0xffff800000001000ull), pt_ipc_sext_48);
	CHECK_EQ(emu_pkt_ipc(0, 0, 0x0000900000001000ull), pt_ipc_full);
	CHECK_EQ(emu_pkt_ipc(0x401000, 1, 0x40ffff), pt_ipc_update_16);
	CHECK_EQ(emu_pkt_ipc(0x401000, 1, 0x7f0000401000ull), pt_ipc_sext_48);
	CHECK_EQ(emu_pkt_ipc(0x7f0000401000ull, 1, 0x7f0012345678ull),
		 pt_ipc_update_32);
	CHECK_EQ(emu_pkt_ipc(0x0000900000001000ull, 1, 0x00009000ffff1000ull),
		 pt_ipc_update_32);
	CHECK_EQ(emu_pkt_ipc(0x0000900000001000ull, 1, 0x0000a00000001000ull),
		 pt_ipc_update_48);
}

/* The packets emu_pkt writes read back with libipt's packet decoder. */
TEST(packets_read_back)
{
	uint8_t buf[256];
	struct emu_pkt k;
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	struct pt_packet pkt;
	int i;

	CHECK_EQ(emu_pkt_init(&k, buf, sizeof(buf)), 0);
	CHECK_EQ(emu_pkt_psb(&k), 0);
	CHECK_EQ(emu_pkt_tsc(&k, 123456789), 0);
	CHECK_EQ(emu_pkt_mode64(&k), 0);
	CHECK_EQ(emu_pkt_ip(&k, ppt_fup, 0x7f0000401000ull), 0);
	CHECK_EQ(emu_pkt_psbend(&k), 0);
	/* 1,0,1 then 50 alternating bits: a TNT-8 and a full TNT-64. */
	CHECK_EQ(emu_pkt_tnt(&k, 1), 0);
	CHECK_EQ(emu_pkt_tnt(&k, 0), 0);
	CHECK_EQ(emu_pkt_tnt(&k, 1), 0);
	CHECK_EQ(emu_pkt_tnt_flush(&k), 0);
	for (i = 0; i < 50; i++)
		CHECK_EQ(emu_pkt_tnt(&k, i & 1), 0);
	CHECK_EQ(k.tnt_bits, 50 - EMU_TNT_MAX);
	CHECK_EQ(emu_pkt_ip(&k, ppt_tip, 0x7f0000401234ull), 0);
	CHECK_EQ(emu_pkt_pgd(&k), 0);

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + emu_pkt_used(&k);
	pd = pt_pkt_alloc_decoder(&cfg);
	CHECK(pd != NULL);
	CHECK_EQ(pt_pkt_sync_forward(pd), 0);
#define NEXT(t)                                                                \
	do {                                                                   \
		CHECK(pt_pkt_next(pd, &pkt, sizeof(pkt)) > 0);                 \
		CHECK_EQ(pkt.type, t);                                         \
	} while (0)
	NEXT(ppt_psb);
	NEXT(ppt_tsc);
	CHECK_EQ(pkt.payload.tsc.tsc, 123456789);
	NEXT(ppt_mode);
	NEXT(ppt_fup);
	CHECK_EQ(pkt.payload.ip.ipc, pt_ipc_sext_48);
	CHECK_EQ(pkt.payload.ip.ip, 0x7f0000401000ull);
	NEXT(ppt_psbend);
	NEXT(ppt_tnt_8);
	CHECK_EQ(pkt.payload.tnt.bit_size, 3);
	CHECK_EQ(pkt.payload.tnt.payload, 5);
	NEXT(ppt_tnt_64);
	CHECK_EQ(pkt.payload.tnt.bit_size, EMU_TNT_MAX);
	NEXT(ppt_tnt_8); /* flushed by the TIP */
	CHECK_EQ(pkt.payload.tnt.bit_size, 50 - EMU_TNT_MAX);
	NEXT(ppt_tip);
	CHECK_EQ(pkt.payload.ip.ipc, pt_ipc_update_16);
	CHECK_EQ(pkt.payload.ip.ip & 0xffff, 0x1234);
	NEXT(ppt_tip_pgd);
	CHECK_EQ(pkt.payload.ip.ipc, pt_ipc_suppressed);
	CHECK_EQ(pt_pkt_next(pd, &pkt, sizeof(pkt)), -pte_eos);
#undef NEXT
	pt_pkt_free_decoder(pd);
	emu_pkt_fini(&k);
}

/* ---- the ring ----------------------------------------------------------- */

TEST(ring_keeps_oldest_whole_psb)
{
	struct emu_ring r;
	uint8_t chunk[100], *out;
	size_t len;
	int i;

	CHECK_EQ(emu_ring_init(&r, 1000, 250), 0);
	CHECK_EQ(emu_ring_copy(&r, 0, &out, &len), PS_ERR_NOT_FOUND);
	for (i = 0; i < 25; i++) {
		memset(chunk, i, sizeof(chunk));
		if (i % 3 == 0)
			emu_ring_mark_psb(&r);
		emu_ring_put(&r, chunk, sizeof(chunk));
	}
	/* 2500 bytes written; the ring holds [1500, 2500); PSBs every
	 * 300 bytes, the oldest whole one at 1500 (chunk 15). */
	CHECK_EQ(r.head, 2500);
	CHECK_EQ(emu_ring_last_psb(&r), 2400);
	CHECK_EQ(emu_ring_copy(&r, 7, &out, &len), 0);
	CHECK_EQ(len, 1000);
	for (i = 0; i < 1000; i++)
		CHECK_EQ(out[i], 15 + i / 100);
	free(out);
	/* One byte more and the PSB at 1500 is cut: start at 1800. */
	emu_ring_put(&r, chunk, 1);
	CHECK_EQ(emu_ring_copy(&r, 0, &out, &len), 0);
	CHECK_EQ(len, 701);
	CHECK_EQ(out[0], 18);
	free(out);
	emu_ring_fini(&r);
	CHECK_EQ(emu_ring_init(&r, 0, 1), PS_ERR_INVAL);
}

/* ---- the API on bad input ----------------------------------------------- */

static ssize_t read_nothing(void *ctx, uint64_t addr, void *buf, size_t len)
{
	errno = EIO;
	return -1;
}

static ssize_t read_bytes(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *code = ctx;

	/* A 16-byte "program" at 0x1000. */
	if (addr < 0x1000 || addr >= 0x1010)
		return -1;
	if (len > 0x1010 - addr)
		len = 0x1010 - addr;
	memcpy(buf, code + (addr - 0x1000), len);
	return (ssize_t)len;
}

TEST(api_rejects_bad_input)
{
	struct emu_config cfg;
	struct emu_process *p;
	struct emu_thread *t;
	uint8_t *buf;
	size_t len;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_size = 4096;
	cfg.read_mem = read_nothing;
	CHECK_EQ(emu_process_new(NULL, 1, &p), PS_ERR_INVAL);
	CHECK_EQ(emu_process_new(&cfg, 0, &p), PS_ERR_INVAL);
	cfg.ring_size = 10;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), PS_ERR_INVAL);
	cfg.ring_size = 4096;
	cfg.read_mem = NULL;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), PS_ERR_INVAL);
	cfg.read_mem = read_nothing;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), 0);
	CHECK_EQ(emu_thread_new(p, 1, 0, 0, &t), PS_ERR_INVAL);
	CHECK_EQ(emu_thread_new(p, 1, 0x1000, 0, &t), 0);
	/* Unreadable code is the target's fault, said in one sentence. */
	CHECK_EQ(emu_step(t, 0x1000, 0x1001, 0), PS_ERR_TARGET);
	CHECK(strstr(ps_err_message(PS_ERR_TARGET), "0x1000") != NULL);
	CHECK_EQ(emu_step(t, 0, 0x1001, 0), PS_ERR_INVAL);
	CHECK_EQ(emu_step(NULL, 1, 2, 0), PS_ERR_INVAL);
	CHECK_EQ(emu_async(NULL, 1, 2), PS_ERR_INVAL);
	CHECK_EQ(emu_stop(NULL, 1), PS_ERR_INVAL);
	CHECK_EQ(emu_snapshot(NULL, &buf, &len), PS_ERR_INVAL);
	CHECK_EQ(emu_snapshot(t, NULL, &len), PS_ERR_INVAL);
	CHECK_EQ(emu_now(NULL), 0);
	CHECK_EQ(emu_instructions(NULL), 0);
	/* The thread still snapshots: PSB, PGE, then the tail. */
	CHECK_EQ(emu_snapshot(t, &buf, &len), 0);
	CHECK(len > 16);
	free(buf);
	emu_thread_free(t);
	emu_thread_free(NULL);
	emu_process_free(p);
	emu_process_free(NULL);
}

/* A call cut by the end of readable memory is reported, not guessed. */
TEST(code_cut_short_is_an_error)
{
	static uint8_t code[16] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
				   0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
				   0x90, 0xe8, 0x00, 0x00};
	struct emu_config cfg;
	struct emu_process *p;
	struct emu_thread *t;
	uint64_t ip;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_size = 4096;
	cfg.read_mem = read_bytes;
	cfg.read_ctx = code;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), 0);
	CHECK_EQ(emu_thread_new(p, 1, 0x1000, 1000, &t), 0);
	for (ip = 0x1000; ip < 0x100d; ip++)
		CHECK_EQ(emu_step(t, ip, ip + 1, 0), 0);
	CHECK_EQ(emu_instructions(t), 13);
	CHECK_EQ(emu_now(t), 1000 + 13 * EMU_PS_PER_INSN / 1000);
	CHECK_EQ(emu_step(t, 0x100d, 0x1012, 0), PS_ERR_TARGET);
	emu_thread_free(t);
	emu_process_free(p);
}

/* ---- the oracle round trip ---------------------------------------------- */

struct run {
	pid_t pid;
	struct emu_process *proc[2]; /* [0] big ring + truth, [1] tiny ring */
	struct emu_thread *thr[2];
	char *truth;
	size_t truth_len;
	FILE *truth_f;
	/* completed instructions: ip and virtual time before its step */
	uint64_t *ip, *ns;
	size_t n, cap;
	/* every step, for the benchmark */
	uint64_t *step_from, *step_to;
	size_t steps, steps_cap;
	size_t syscalls;
	size_t skipped_traps;		 /* steps that ran two instructions */
	uint64_t signal_from, signal_to; /* the delivered signal, if any */
	int stopped_by;			 /* signal that ended it, 0: exit */
	uint64_t end_ip;
	size_t tiny_ring;
	size_t pt_bytes; /* size of the big ring's snapshot */
};

static ssize_t read_child(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = *(pid_t *)ctx;
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

static int push(uint64_t **a, uint64_t **b, size_t *n, size_t *cap, uint64_t x,
		uint64_t y)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 65536;
		uint64_t *na = realloc(*a, nc * sizeof(**a));
		uint64_t *nb;

		if (!na)
			return -1;
		*a = na;
		nb = realloc(*b, nc * sizeof(**b));
		if (!nb)
			return -1;
		*b = nb;
		*cap = nc;
	}
	(*a)[*n] = x;
	(*b)[*n] = y;
	(*n)++;
	return 0;
}

static uint64_t get_rip(pid_t pid)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) < 0)
		return 0;
	return regs.rip;
}

#define KERNEL_NS 1000 /* what the test says each syscall took */

static int is_syscall(pid_t pid, uint64_t ip)
{
	uint8_t b[2];

	return read_child(&pid, ip, b, 2) == 2 && b[0] == 0x0f && b[1] == 0x05;
}

/* Single-step @pid (stopped, traced) to its end, feeding both emulators.
 * Returns 0 or a message. */
static int is_cpuid(pid_t pid, uint64_t ip)
{
	uint8_t b[2];

	return read_child(&pid, ip, b, 2) == 2 && b[0] == 0x0f && b[1] == 0xa2;
}

static const char *step_all(struct run *r, size_t max_steps)
{
	uint64_t ip = get_rip(r->pid);
	int sig = 0, in_handler_entry = 0, st, i;
	uint64_t sig_from = 0;

	if (!ip)
		return "cannot read the child's registers";
	for (i = 0; i < 2; i++)
		if (emu_thread_new(r->proc[i], r->pid, ip, 0, &r->thr[i]) < 0)
			return "emu_thread_new failed";
	for (;;) {
		uint64_t next, now = emu_now(r->thr[0]), kns;

		if (r->steps > max_steps)
			return "too many steps";
		if (ptrace(PTRACE_SINGLESTEP, r->pid, NULL,
			   (void *)(uintptr_t)sig) < 0)
			return "PTRACE_SINGLESTEP failed";
		sig = 0;
		if (waitpid(r->pid, &st, 0) != r->pid || !WIFSTOPPED(st))
			return "child ended without an exit stop";
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
			/* exit_group never completes: stop before it. */
			r->end_ip = ip;
			for (i = 0; i < 2; i++)
				if (emu_stop(r->thr[i], ip) < 0)
					return "emu_stop failed";
			return NULL;
		}
		if (WSTOPSIG(st) != SIGTRAP) {
			/* Signal-delivery stop: nothing ran. */
			if (WSTOPSIG(st) == SIGUSR1) {
				sig = SIGUSR1;
				sig_from = ip;
				in_handler_entry = 1;
				continue;
			}
			r->stopped_by = WSTOPSIG(st);
			r->end_ip = ip;
			for (i = 0; i < 2; i++)
				if (emu_stop(r->thr[i], ip) < 0)
					return "emu_stop failed";
			return NULL;
		}
		next = get_rip(r->pid);
		if (!next)
			return "cannot read the child's registers";
		if (in_handler_entry) {
			/* The kernel stops at the handler before it runs. */
			in_handler_entry = 0;
			r->signal_from = sig_from;
			r->signal_to = next;
			for (i = 0; i < 2; i++)
				if (emu_async(r->thr[i], sig_from, next) < 0)
					return "emu_async failed";
			ip = next;
			continue;
		}
		kns = 0;
		if (is_syscall(r->pid, ip)) {
			kns = KERNEL_NS;
			r->syscalls++;
		}
		for (i = 0; i < 2; i++)
			if (emu_step(r->thr[i], ip, next, kns) < 0)
				return ps_err_message(PS_ERR_TARGET);
		if (push(&r->step_from, &r->step_to, &r->steps, &r->steps_cap,
			 ip, next) < 0)
			return "out of memory";
		if (next != ip &&
		    push(&r->ip, &r->ns, &r->n, &r->cap, ip, now) < 0)
			return "out of memory";
		/* Some hosts drop the trap after a CPUID (the hypervisor
		 * emulates it): the next instruction ran in the same step,
		 * and emu_step accounts for it (skipped_trap). */
		if (next != ip + 2 && is_cpuid(r->pid, ip)) {
			if (push(&r->ip, &r->ns, &r->n, &r->cap, ip + 2, now) <
			    0)
				return "out of memory";
			r->skipped_traps++;
		}
		ip = next;
	}
}

static const char *run_start(struct run *r, size_t tiny_ring)
{
	struct emu_config cfg;
	int i;

	memset(&cfg, 0, sizeof(cfg));
	r->tiny_ring = tiny_ring;
	r->truth_f = open_memstream(&r->truth, &r->truth_len);
	if (!r->truth_f)
		return "open_memstream failed";
	cfg.read_mem = read_child;
	cfg.read_ctx = &r->pid;
	cfg.start_ns = 5000000000ull;
	for (i = 0; i < 2; i++) {
		cfg.ring_size = i == 0 ? 64u << 20 : tiny_ring;
		cfg.truth = i == 0 ? r->truth_f : NULL;
		if (emu_process_new(&cfg, r->pid, &r->proc[i]) < 0)
			return "emu_process_new failed";
	}
	return NULL;
}

static const char no_ptrace[] = "ptrace is not permitted here";

/* Fork + exec @argv under ptrace; stops at the exec. */
static const char *run_exec(struct run *r, char *const argv[], size_t tiny_ring)
{
	int st;

	r->pid = fork();
	if (r->pid < 0)
		return "fork failed";
	if (r->pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, 1);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(r->pid, &st, 0) != r->pid)
		return "waitpid failed";
	if (WIFEXITED(st) && WEXITSTATUS(st) == 126) {
		r->pid = 0;
		return no_ptrace;
	}
	if (!WIFSTOPPED(st))
		return "child did not stop at exec";
	if (ptrace(PTRACE_SETOPTIONS, r->pid, NULL,
		   (void *)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)) < 0)
		return "PTRACE_SETOPTIONS failed";
	return run_start(r, tiny_ring);
}

static void run_free(struct run *r)
{
	int i, st;

	for (i = 0; i < 2; i++) {
		emu_thread_free(r->thr[i]);
		emu_process_free(r->proc[i]);
	}
	if (r->truth_f)
		fclose(r->truth_f);
	free(r->truth);
	free(r->ip);
	free(r->ns);
	free(r->step_from);
	free(r->step_to);
	if (r->pid > 0) {
		/* A tracee in its exit stop ignores SIGKILL until resumed. */
		kill(r->pid, SIGKILL);
		ptrace(PTRACE_CONT, r->pid, NULL, NULL);
		while (waitpid(r->pid, &st, 0) == r->pid && !WIFEXITED(st) &&
		       !WIFSIGNALED(st))
			ptrace(PTRACE_CONT, r->pid, NULL, NULL);
	}
}

/* The child's code as libipt sees it: files from /proc/PID/maps, anything
 * else (vDSO) read from the stopped child. */
static int image_read(uint8_t *buf, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx)
{
	ssize_t n = read_child(ctx, ip, buf, size);

	return n > 0 ? (int)n : -pte_nomap;
}

static struct pt_image *child_image(pid_t *pid)
{
	char path[64], line[1024];
	struct pt_image *img;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)*pid);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	img = pt_image_alloc("child");
	while (img && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], file[512];

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start,
			   &end, perms, &off, file) < 4)
			continue;
		if (perms[2] != 'x' || file[0] != '/')
			continue;
		pt_image_add_file(img, file, off, end - start, NULL, start);
	}
	fclose(f);
	if (img)
		pt_image_set_callback(img, image_read, pid);
	return img;
}

struct decoded {
	uint64_t *ip, *time;
	uint8_t *iclass;
	uint8_t *packet; /* the insn reads a packet (all but direct ones) */
	size_t n, cap;
	int end; /* the status that ended decoding */
	uint64_t async_from, async_to;
	uint64_t disabled_at;  /* the last async-disable location */
	int enables, disables; /* sync enable/disable events */
};

static void decoded_free(struct decoded *d)
{
	free(d->ip);
	free(d->time);
	free(d->iclass);
	free(d->packet);
}

/* Does libipt need a packet for @insn?  Branches do, except direct jumps
 * and calls (opcode e8/e9/eb after any prefixes). */
static int reads_packet(const struct pt_insn *insn)
{
	size_t i = 0;

	switch (insn->iclass) {
	case ptic_cond_jump:
	case ptic_return:
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		return 1;
	case ptic_call:
	case ptic_jump:
		while (i < insn->size &&
		       (insn->raw[i] == 0xf2 || insn->raw[i] == 0x3e ||
			insn->raw[i] == 0x66 || (insn->raw[i] & 0xf0) == 0x40))
			i++;
		return i < insn->size && insn->raw[i] == 0xff;
	default:
		return 0;
	}
}

static int decoded_push(struct decoded *d, const struct pt_insn *insn,
			uint64_t time)
{
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 65536;

		d->ip = realloc(d->ip, nc * sizeof(*d->ip));
		d->time = realloc(d->time, nc * sizeof(*d->time));
		d->iclass = realloc(d->iclass, nc);
		d->packet = realloc(d->packet, nc);
		if (!d->ip || !d->time || !d->iclass || !d->packet)
			return -1;
		d->cap = nc;
	}
	d->ip[d->n] = insn->ip;
	d->time[d->n] = time;
	d->iclass[d->n] = (uint8_t)insn->iclass;
	d->packet[d->n] = (uint8_t)reads_packet(insn);
	d->n++;
	return 0;
}

static int handle_events(struct pt_insn_decoder *dec, int status,
			 struct decoded *d)
{
	while (status & pts_event_pending) {
		struct pt_event ev;

		status = pt_insn_event(dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
		switch (ev.type) {
		case ptev_async_branch:
			d->async_from = ev.variant.async_branch.from;
			d->async_to = ev.variant.async_branch.to;
			break;
		case ptev_async_disabled:
			d->disabled_at = ev.variant.async_disabled.at;
			break;
		case ptev_enabled:
			d->enables++;
			break;
		case ptev_disabled:
			d->disables++;
			break;
		default:
			break;
		}
	}
	return status;
}

/* Decode @buf from the PSB at @psb (SIZE_MAX: the first one) to its end
 * with libipt's insn decoder. */
static void decode_at(const uint8_t *buf, size_t len, struct pt_image *img,
		      struct decoded *d, size_t psb)
{
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	int status;

	memset(d, 0, sizeof(*d));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec) {
		d->end = -pte_nomem;
		return;
	}
	pt_insn_set_image(dec, img);
	status = psb == SIZE_MAX ? pt_insn_sync_forward(dec)
				 : pt_insn_sync_set(dec, psb);
	for (;;) {
		struct pt_insn insn;
		uint64_t time = 0;
		uint32_t lost_mtc, lost_cyc;

		status = handle_events(dec, status, d);
		if (status < 0)
			break;
		status = pt_insn_next(dec, &insn, sizeof(insn));
		if (status < 0)
			break;
		pt_insn_time(dec, &time, &lost_mtc, &lost_cyc);
		if (decoded_push(d, &insn, time) < 0) {
			status = -pte_nomem;
			break;
		}
	}
	d->end = status;
	pt_insn_free_decoder(dec);
}

static void decode(const uint8_t *buf, size_t len, struct pt_image *img,
		   struct decoded *d)
{
	decode_at(buf, len, img, d, SIZE_MAX);
}

/* The decoded instructions must be the last d->n stepped ones, in order,
 * with non-decreasing times.  A time may be early, but at branches that
 * read a packet by less than EMU_TSC_THRESHOLD_NS.  It may be late, since
 * libipt fetches the next event before it returns an instruction, but never
 * past the next instruction that reads a packet (or the end). */
static const char *compare(const struct run *r, const struct decoded *d,
			   int whole, char *msg, size_t msz)
{
	size_t i, base;
	uint64_t late = emu_now(r->thr[0]);

	if (d->end != -pte_eos) {
		snprintf(msg, msz, "decoding ended with %s after %zu insns",
			 pt_errstr(pt_errcode(d->end)), d->n);
		return msg;
	}
	if (d->n == 0 || d->n > r->n || (whole && d->n != r->n)) {
		snprintf(msg, msz, "decoded %zu instructions, stepped %zu",
			 d->n, r->n);
		return msg;
	}
	base = r->n - d->n;
	for (i = 0; i < d->n; i++) {
		if (d->ip[i] != r->ip[base + i]) {
			snprintf(msg, msz,
				 "instruction %zu: decoded 0x%" PRIx64
				 ", stepped 0x%" PRIx64,
				 base + i, d->ip[i], r->ip[base + i]);
			return msg;
		}
	}
	for (i = d->n; i-- > 0;) {
		uint64_t ran = r->ns[base + i];

		if (d->time[i] > late || (i && d->time[i] < d->time[i - 1])) {
			snprintf(msg, msz,
				 "instruction %zu: time %" PRIu64
				 " after %" PRIu64 " or going backwards",
				 base + i, d->time[i], late);
			return msg;
		}
		if ((d->iclass[i] == ptic_cond_jump ||
		     d->iclass[i] == ptic_return) &&
		    d->time[i] + EMU_TSC_THRESHOLD_NS <= ran) {
			snprintf(msg, msz,
				 "branch %zu: time %" PRIu64 " lags %" PRIu64,
				 base + i, d->time[i], ran);
			return msg;
		}
		if (d->packet[i])
			late = ran;
	}
	return NULL;
}

/* Every truth line names a decoded instruction of the right class at its
 * icount, going where the next decoded instruction is, at its virtual
 * time; and every decoded call and return has its line. */
static const char *check_truth(const struct run *r, const struct decoded *d,
			       char *msg, size_t msz)
{
	FILE *f = fmemopen(r->truth, r->truth_len, "r");
	char line[256], kind[16];
	size_t calls = 0, rets = 0, want_calls = 0, want_rets = 0, i;
	int tid, starts = 0, stops = 0, signals = 0;

	if (!f)
		return "fmemopen failed";
	if (!fgets(line, sizeof(line), f) ||
	    strncmp(line, "# ptscope-truth 1", 17)) {
		fclose(f);
		return "truth has no header";
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t from, to, icount, ns;
		int want_class = -1;

		if (sscanf(line,
			   "%d %15s %" SCNx64 " %" SCNx64 " %" SCNu64
			   " %" SCNu64,
			   &tid, kind, &from, &to, &icount, &ns) != 6 ||
		    tid != r->pid) {
			snprintf(msg, msz, "bad truth line: %.120s", line);
			fclose(f);
			return msg;
		}
		if (!strcmp(kind, "start")) {
			starts++;
			continue;
		}
		if (!strcmp(kind, "stop")) {
			stops++;
			if (from != r->end_ip || icount != d->n)
				goto bad;
			continue;
		}
		if (!strcmp(kind, "signal")) {
			signals++;
			if (from != r->signal_from || to != r->signal_to)
				goto bad;
			continue;
		}
		if (!strcmp(kind, "call")) {
			want_class = ptic_call;
			calls++;
		} else if (!strcmp(kind, "ret")) {
			want_class = ptic_return;
			rets++;
		} else if (!strcmp(kind, "jmp")) {
			want_class = ptic_jump;
		} else if (!strcmp(kind, "syscall")) {
			want_class = ptic_far_call;
		}
		/* A signal may take the thread on from @to at once. */
		if (want_class < 0 || icount >= d->n ||
		    d->iclass[icount] != want_class || d->ip[icount] != from ||
		    (icount + 1 < d->n && d->ip[icount + 1] != to &&
		     !(to == r->signal_from &&
		       d->ip[icount + 1] == r->signal_to)) ||
		    r->ns[icount] != ns)
			goto bad;
	}
	fclose(f);
	for (i = 0; i < d->n; i++) {
		want_calls += d->iclass[i] == ptic_call;
		want_rets += d->iclass[i] == ptic_return;
	}
	if (calls != want_calls || rets != want_rets || starts != 1 ||
	    stops != 1 || signals != (r->signal_to != 0)) {
		snprintf(msg, msz,
			 "truth has %zu calls %zu rets %d starts %d stops, "
			 "trace %zu calls %zu rets",
			 calls, rets, starts, stops, want_calls, want_rets);
		return msg;
	}
	return NULL;
bad:
	fclose(f);
	snprintf(msg, msz, "truth line disagrees with the trace: %.120s", line);
	return msg;
}

/* Snapshot both rings, decode them and run every check. */
static const char *verify(struct run *r, char *msg, size_t msz,
			  struct decoded *whole)
{
	struct pt_image *img = child_image(&r->pid);
	struct decoded tiny;
	uint8_t *buf[2] = {NULL, NULL};
	size_t len[2];
	const char *err = NULL;
	uint64_t want_now;

	if (!img)
		return "cannot build the image from /proc/PID/maps";
	fflush(r->truth_f);
	memset(&tiny, 0, sizeof(tiny));
	if (emu_snapshot(r->thr[0], &buf[0], &len[0]) < 0 ||
	    emu_snapshot(r->thr[1], &buf[1], &len[1]) < 0) {
		err = "emu_snapshot failed";
		goto out;
	}
	r->pt_bytes = len[0];
	decode(buf[0], len[0], img, whole);
	err = compare(r, whole, 1, msg, msz);
	if (!err)
		err = check_truth(r, whole, msg, msz);
	if (err)
		goto out;
	decode(buf[1], len[1], img, &tiny);
	err = compare(r, &tiny, 0, msg, msz);
	if (err)
		goto out;
	/* The tiny ring wrapped (if the trace outgrew it) and still
	 * decoded its tail. */
	if (len[1] > r->tiny_ring ||
	    (len[0] > r->tiny_ring && tiny.n >= r->n)) {
		snprintf(msg, msz,
			 "tiny ring snapshot: %zu bytes, %zu of %zu insns",
			 len[1], tiny.n, r->n);
		err = msg;
		goto out;
	}
	want_now = 5000000000ull +
		   (r->steps + r->skipped_traps) * EMU_PS_PER_INSN / 1000 +
		   r->syscalls * KERNEL_NS;
	if (emu_now(r->thr[0]) != want_now ||
	    emu_instructions(r->thr[0]) != r->n) {
		snprintf(msg, msz, "clock %" PRIu64 " != %" PRIu64,
			 emu_now(r->thr[0]), want_now);
		err = msg;
	}
out:
	decoded_free(&tiny);
	free(buf[0]);
	free(buf[1]);
	pt_image_free(img);
	return err;
}

static int have_sample(const char *name, char *path, size_t size)
{
	struct stat sb;

	snprintf(path, size, "%s/samples/%s", harness_build(), name);
	return stat(path, &sb) == 0;
}

#define TINY_RING 8192

/* Step @argv to its end, then check everything; @stop_sig: the signal
 * expected to end it (0: a normal exit). */
static void round_trip(const char *sample, const char *arg, int stop_sig)
{
	char path[512], msg[256];
	char *argv[3] = {path, (char *)arg, NULL};
	struct run r;
	struct decoded d;
	const char *err;

	if (!have_sample(sample, path, sizeof(path))) {
		snprintf(msg, sizeof(msg), "%.200s not built (run make)", path);
		harness_skip(msg);
		return;
	}
	memset(&r, 0, sizeof(r));
	memset(&d, 0, sizeof(d));
	err = run_exec(&r, argv, TINY_RING);
	if (!err)
		err = step_all(&r, 20000000);
	if (err == no_ptrace) {
		run_free(&r);
		SKIP(no_ptrace);
	}
	if (!err && r.stopped_by != stop_sig)
		err = "the child ended differently than expected";
	if (!err)
		err = verify(&r, msg, sizeof(msg), &d);
	if (!err && stop_sig && d.disabled_at != r.end_ip)
		err = "the trace does not end at the faulting instruction";
	if (err)
		harness_failf(__FILE__, __LINE__, "%s: %s", sample, err);
	else
		printf("INFO %s: %zu instructions, %zu steps, %zu syscalls, "
		       "%zu bytes of PT (%.3f per insn), %zu bytes of truth\n",
		       sample, r.n, r.steps, r.syscalls, r.pt_bytes,
		       (double)r.pt_bytes / r.n, r.truth_len);
	decoded_free(&d);
	run_free(&r);
}

/* ---- a synthetic program: stop/restart, a missed jump, rep, wraps ------- */

/* 0x1000: nop; jz 0x1004; nop; rep stosb; jmp 0x1000 */
static const uint8_t loop_code[] = {0x90, 0x74, 0x01, 0x90,
				    0xf3, 0xaa, 0xeb, 0xf8};

/* Code bytes at 0x1000 (@ctx: a struct code_at) for the emulator's reads
 * and libipt's image. */
struct code_at {
	const uint8_t *code;
	size_t len;
};

static const struct code_at loop_at = {loop_code, sizeof(loop_code)};

static ssize_t read_code(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct code_at *c = ctx;

	if (addr < 0x1000 || addr >= 0x1000 + c->len)
		return -1;
	if (len > 0x1000 + c->len - addr)
		len = 0x1000 + c->len - addr;
	memcpy(buf, c->code + (addr - 0x1000), len);
	return (ssize_t)len;
}

static int image_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx)
{
	ssize_t n = read_code(ctx, ip, buf, size);

	(void)asid;
	return n > 0 ? (int)n : -pte_nomap;
}

struct synth {
	struct emu_thread *t;
	uint64_t *ip, *ns;
	size_t n, cap;
};

static int synth_step(struct synth *s, uint64_t ip, uint64_t next)
{
	uint64_t now = emu_now(s->t);

	if (emu_step(s->t, ip, next, 0) < 0)
		return -1;
	return next == ip ? 0 : push(&s->ip, &s->ns, &s->n, &s->cap, ip, now);
}

/* The thread, its process and the steps kept. */
static void synth_free(struct synth *s, struct emu_process *p)
{
	emu_thread_free(s->t);
	emu_process_free(p);
	free(s->ip);
	free(s->ns);
}

/* One turn of the loop; @taken: the jz; @reps: rep iterations. */
static int synth_turn(struct synth *s, int taken, int reps)
{
	int rc = synth_step(s, 0x1000, 0x1001);

	if (!rc && taken)
		rc = synth_step(s, 0x1001, 0x1004);
	if (!rc && !taken)
		rc = synth_step(s, 0x1001, 0x1003);
	if (!rc && !taken)
		rc = synth_step(s, 0x1003, 0x1004);
	while (!rc && reps-- > 0)
		rc = synth_step(s, 0x1004, 0x1004);
	if (!rc)
		rc = synth_step(s, 0x1004, 0x1006);
	if (!rc)
		rc = synth_step(s, 0x1006, 0x1000);
	return rc;
}

TEST(synthetic_stop_restart_and_missed_jump)
{
	struct emu_config cfg;
	struct emu_process *p;
	struct synth s;
	struct pt_image *img;
	struct decoded d;
	uint8_t *buf;
	size_t len, i, base;
	int turn;

	memset(&cfg, 0, sizeof(cfg));
	memset(&s, 0, sizeof(s));
	cfg.ring_size = 4096;
	cfg.read_mem = read_code;
	cfg.read_ctx = (void *)&loop_at;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), 0);
	CHECK_EQ(emu_thread_new(p, 1, 0x1000, 777, &s.t), 0);
	for (turn = 0; turn < 3000; turn++) {
		CHECK_EQ(synth_turn(&s, turn % 3 != 0, turn % 5), 0);
		if (turn == 2900) {
			/* Stop, then trace again from the same place. */
			CHECK_EQ(emu_stop(s.t, 0x1000), 0);
			CHECK_EQ(emu_stop(s.t, 0x1000), 0);
		}
		if (turn == 2950) {
			/* The recorder "missed" a jump to 0x1003. */
			CHECK_EQ(synth_step(&s, 0x1003, 0x1004), 0);
			CHECK_EQ(synth_step(&s, 0x1004, 0x1006), 0);
			CHECK_EQ(synth_step(&s, 0x1006, 0x1000), 0);
		}
	}
	CHECK_EQ(emu_instructions(s.t), s.n);
	CHECK_EQ(emu_snapshot(s.t, &buf, &len), 0);
	CHECK(len <= 4096 + 64);
	img = pt_image_alloc("loop");
	CHECK(img != NULL);
	pt_image_set_callback(img, image_code, (void *)&loop_at);
	decode(buf, len, img, &d);
	CHECK_EQ(d.end, -pte_eos);
	CHECK(d.n > 100 && d.n < s.n);
	base = s.n - d.n;
	for (i = 0; i < d.n; i++) {
		CHECK_EQ(d.ip[i], s.ip[base + i]);
		CHECK(d.time[i] >= 777);
	}
	/* The restart is an enable, the missed jump an async branch, and
	 * the snapshot ends before 0x1000. */
	CHECK_EQ(d.enables, 1);
	CHECK_EQ(d.async_from, 0x1000);
	CHECK_EQ(d.async_to, 0x1003);
	CHECK_EQ(d.disabled_at, 0x1000);
	decoded_free(&d);
	free(buf);
	pt_image_free(img);
	synth_free(&s, p);
}

/* ---- a step that ran two instructions (a trap the host dropped) ------- */

/* 0x1000: cpuid; nop; nop; jz 0x1000; nop */
static const uint8_t cpuid_code[] = {0x0f, 0xa2, 0x90, 0x90, 0x74, 0xfa, 0x90};

static const struct code_at cpuid_at = {cpuid_code, sizeof(cpuid_code)};

/* Some hosts drop the single-step trap after an emulated CPUID: the step
 * from the CPUID stops one or two instructions on.  Those ran, and the
 * trace must say so; a step that lands anywhere else (backwards here) is
 * still an asynchronous branch. */
TEST(step_past_a_dropped_trap_counts_what_ran)
{
	struct emu_config cfg;
	struct emu_process *p;
	struct synth s;
	struct pt_image *img;
	struct decoded d;
	uint8_t *buf;
	size_t len, i;

	memset(&cfg, 0, sizeof(cfg));
	memset(&s, 0, sizeof(s));
	cfg.ring_size = 4096;
	cfg.read_mem = read_code;
	cfg.read_ctx = (void *)&cpuid_at;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), 0);
	CHECK_EQ(emu_thread_new(p, 1, 0x1000, 1000, &s.t), 0);
	for (int turn = 0; turn < 3; turn++) {
		uint64_t stop = turn == 0   ? 0x1002
				: turn == 1 ? 0x1003
					    : 0x1004;

		/* the CPUID's step, and what the oracle knows ran */
		CHECK_EQ(emu_step(s.t, 0x1000, stop, 0), 0);
		for (uint64_t at = 0x1000; at < stop;
		     at += at == 0x1000 ? 2 : 1)
			CHECK_EQ(push(&s.ip, &s.ns, &s.n, &s.cap, at, 0), 0);
		for (uint64_t at = stop; at < 0x1004; at++)
			CHECK_EQ(synth_step(&s, at, at + 1), 0);
		CHECK_EQ(synth_step(&s, 0x1004, 0x1000), 0);
	}
	CHECK_EQ(emu_instructions(s.t), s.n);
	CHECK_EQ(s.n, 12);
	/* past the jz: not straight-line, so an async branch from the
	 * CPUID, which did not complete */
	CHECK_EQ(emu_step(s.t, 0x1000, 0x1006, 0), 0);
	CHECK_EQ(emu_instructions(s.t), 12);
	CHECK_EQ(emu_stop(s.t, 0x1006), 0);
	CHECK_EQ(emu_snapshot(s.t, &buf, &len), 0);
	img = pt_image_alloc("cpuid");
	CHECK(img != NULL);
	pt_image_set_callback(img, image_code, (void *)&cpuid_at);
	decode(buf, len, img, &d);
	CHECK_EQ(d.end, -pte_eos);
	CHECK_EQ(d.n, 12);
	for (i = 0; i < d.n; i++)
		CHECK_EQ(d.ip[i], s.ip[i]);
	CHECK_EQ(d.async_from, 0x1000);
	CHECK_EQ(d.async_to, 0x1006);
	decoded_free(&d);
	free(buf);
	pt_image_free(img);
	synth_free(&s, p);
}

/* ---- return compression: deep calls, PSBs, a RET to elsewhere --------- */

/* 0x1000: call 0x2000; jmp 0x1000
 * 0x2000: jz 0x2008; call 0x2000; nop; ret */
static const uint8_t rec_code[] = {0xe8, 0xfb, 0x0f, 0x00, 0x00, 0xeb, 0xf9};
static const uint8_t rec_fn[] = {0x74, 0x06, 0xe8, 0xf9, 0xff,
				 0xff, 0xff, 0x90, 0xc3};

static ssize_t read_rec(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *code = rec_code;
	uint64_t base = 0x1000, size = sizeof(rec_code);

	(void)ctx;
	if (addr >= 0x2000) {
		code = rec_fn;
		base = 0x2000;
		size = sizeof(rec_fn);
	}
	if (addr < base || addr >= base + size)
		return -1;
	if (len > base + size - addr)
		len = base + size - addr;
	memcpy(buf, code + (addr - base), len);
	return (ssize_t)len;
}

static int image_rec(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	ssize_t n = read_rec(ctx, ip, buf, size);

	(void)asid;
	return n > 0 ? (int)n : -pte_nomap;
}

/* One descent to @depth and back up; @escape > 0: from that depth, a RET
 * goes straight back to 0x1005 (a longjmp's effect), skipping the frames
 * between.  Returns the RETs stepped, or -1. */
static int rec_turn(struct synth *s, int depth, int escape)
{
	int rets = 0;

	if (synth_step(s, 0x1000, 0x2000))
		return -1;
	for (int d = 1; d < depth; d++)
		if (synth_step(s, 0x2000, 0x2002) ||
		    synth_step(s, 0x2002, 0x2000))
			return -1;
	if (synth_step(s, 0x2000, 0x2008))
		return -1;
	for (int d = depth; d > 1; d--, rets++) {
		if (d == escape)
			break;
		if (synth_step(s, 0x2008, 0x2007) ||
		    synth_step(s, 0x2007, 0x2008))
			return -1;
	}
	if (synth_step(s, 0x2008, 0x1005) || synth_step(s, 0x1005, 0x1000))
		return -1;
	return rets + 1;
}

/* The ring's TIP packets (each RET a TIP unless compressed); the offsets
 * of its first @max PSBs into @psb, their number into *@npsb. */
static size_t count_tips(const uint8_t *buf, size_t len, uint64_t *psb,
			 size_t max, size_t *npsb)
{
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	struct pt_packet pkt;
	uint64_t off;
	size_t n = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd || pt_pkt_sync_forward(pd) < 0) {
		pt_pkt_free_decoder(pd);
		return 0;
	}
	*npsb = 0;
	while (pt_pkt_get_offset(pd, &off) >= 0 &&
	       pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0) {
		n += pkt.type == ppt_tip;
		if (pkt.type == ppt_psb && *npsb < max)
			psb[(*npsb)++] = off;
	}
	pt_pkt_free_decoder(pd);
	return n;
}

/* Recorded with return compression on (the default) or off: libipt decodes
 * every instruction of the snapshot where it ran, from each of its PSBs,
 * through call chains deeper than the 64 return addresses a decoder keeps,
 * PSBs in the middle of them and RETs that do not go back to their call;
 * with compression on, most RETs take no TIP. */
static void ret_compression_case(int dis_retc, size_t *tips, size_t *rets)
{
	static const int depths[] = {3, 70, 1, 130, 12, 65, 64};
	struct emu_config cfg;
	struct emu_process *p;
	struct synth s;
	struct pt_image *img;
	struct decoded d;
	uint64_t psb[64];
	uint8_t *buf;
	size_t len, npsb = 0;

	memset(&cfg, 0, sizeof(cfg));
	memset(&s, 0, sizeof(s));
	/* a ring that wraps: the snapshot starts at a PSB in mid-run, where
	 * a decoder knows no call made before */
	cfg.ring_size = 16384;
	cfg.read_mem = read_rec;
	cfg.dis_retc = dis_retc;
	*rets = 0;
	CHECK_EQ(emu_process_new(&cfg, 1, &p), 0);
	CHECK_EQ(emu_thread_new(p, 1, 0x1000, 1000, &s.t), 0);
	for (int turn = 0; turn < 700; turn++) {
		int depth = depths[turn % 7] + turn % 3;
		int r = rec_turn(&s, depth, turn % 11 == 5 ? depth / 2 : 0);

		CHECK(r > 0);
		*rets += (size_t)r;
	}
	CHECK_EQ(emu_snapshot(s.t, &buf, &len), 0);
	img = pt_image_alloc("rec");
	CHECK(img != NULL);
	pt_image_set_callback(img, image_rec, NULL);
	*tips = count_tips(buf, len, psb, 64, &npsb);
	CHECK(npsb >= 3);
	for (size_t k = 0; k < npsb; k++) {
		size_t base;

		decode_at(buf, len, img, &d, psb[k]);
		if (d.end != -pte_eos || d.n < 1000 || d.n >= s.n) {
			harness_failf(__FILE__, __LINE__,
				      "from the PSB at %llu: %zu instructions, "
				      "then %s",
				      (unsigned long long)psb[k], d.n,
				      pt_errstr(pt_errcode(d.end)));
			decoded_free(&d);
			break;
		}
		base = s.n - d.n;
		for (size_t i = 0; i < d.n; i++)
			if (d.ip[i] != s.ip[base + i]) {
				harness_failf(
				    __FILE__, __LINE__,
				    "from the PSB at %llu: instruction %zu at "
				    "%#llx, stepped %#llx",
				    (unsigned long long)psb[k], i,
				    (unsigned long long)d.ip[i],
				    (unsigned long long)s.ip[base + i]);
				break;
			}
		decoded_free(&d);
	}
	free(buf);
	pt_image_free(img);
	synth_free(&s, p);
}

TEST(returns_compressed_as_the_cpu_does)
{
	size_t tips = 0, rets = 0, tips_off = 0, rets_off = 0;

	ret_compression_case(0, &tips, &rets);
	ret_compression_case(1, &tips_off, &rets_off);
	CHECK_EQ(rets, rets_off);
	/* In the snapshots: with DisRETC a TIP per RET, more than a
	 * thousand; compressed, a TIP for the RETs past the 64 kept, those
	 * to a call before the last PSB and the escapes. */
	CHECK(tips_off > 1000);
	CHECK(tips > 0 && tips < tips_off / 3);
	printf("INFO %zu returns; TIPs in the snapshot: %zu compressed, %zu "
	       "with DisRETC\n",
	       rets, tips, tips_off);
}

TEST(oracle_recursion)
{
	round_trip("recursion", NULL, 0);
}

TEST(oracle_demo)
{
	round_trip("demo", "3", 0);
}

TEST(oracle_crash_stops_at_fault)
{
	round_trip("crash", NULL, SIGSEGV);
}

/* ---- a real signal: async branch into the handler ----------------------- */

static volatile int handled;

__attribute__((noinline)) static void note_signal(int sig)
{
	handled += sig;
}

static void on_usr1(int sig)
{
	note_signal(sig);
}

static void signal_child(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	note_signal(handled);
	_exit(0);
}

TEST(oracle_signal_is_an_async_branch)
{
	char msg[256];
	struct run r;
	struct decoded d;
	const char *err;
	int st;

	memset(&r, 0, sizeof(r));
	memset(&d, 0, sizeof(d));
	fflush(stdout);
	r.pid = fork();
	CHECK(r.pid >= 0);
	if (r.pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		signal_child();
	}
	err = waitpid(r.pid, &st, 0) == r.pid && WIFSTOPPED(st)
		  ? NULL
		  : "child did not stop";
	if (!err &&
	    ptrace(PTRACE_SETOPTIONS, r.pid, NULL,
		   (void *)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)) < 0)
		err = "PTRACE_SETOPTIONS failed";
	if (!err)
		err = run_start(&r, TINY_RING);
	if (!err)
		err = step_all(&r, 2000000);
	if (!err && !r.signal_to)
		err = "no signal was delivered";
	if (!err)
		err = verify(&r, msg, sizeof(msg), &d);
	if (!err &&
	    (d.async_from != r.signal_from || d.async_to != r.signal_to))
		err = "libipt did not see the signal as an async branch";
	if (!err && d.enables < 2)
		err = "syscalls did not disable and enable tracing";
	if (err)
		harness_failf(__FILE__, __LINE__, "%s", err);
	decoded_free(&d);
	run_free(&r);
}

/* ---- speed ----------------------------------------------------------------
 */

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Replays recursion's steps: the first pass fills the cache, the second is
 * the hit path the recorder sees.  Reports the figure, asserts no time. */
TEST(bench_step_hit_path)
{
	char path[512], msg[256];
	char *argv[2] = {path, NULL};
	struct emu_config cfg;
	struct emu_process *p = NULL;
	struct emu_thread *t = NULL;
	struct run r;
	const char *err;
	double t0, t1;
	size_t i;
	int pass;

	if (!have_sample("recursion", path, sizeof(path)))
		SKIP("build/samples/recursion not built");
	memset(&r, 0, sizeof(r));
	err = run_exec(&r, argv, TINY_RING);
	if (!err)
		err = step_all(&r, 20000000);
	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_size = 1 << 20;
	cfg.read_mem = read_child;
	cfg.read_ctx = &r.pid;
	if (!err && emu_process_new(&cfg, r.pid, &p) < 0)
		err = "emu_process_new failed";
	for (pass = 0; !err && pass < 2; pass++) {
		emu_thread_free(t);
		t = NULL;
		if (emu_thread_new(p, r.pid, r.step_from[0], 1, &t) < 0) {
			err = "emu_thread_new failed";
			break;
		}
		t0 = seconds();
		for (i = 0; i < r.steps; i++)
			if (emu_step(t, r.step_from[i], r.step_to[i], 0) < 0) {
				snprintf(msg, sizeof(msg), "step %zu: %s", i,
					 ps_err_message(PS_ERR_TARGET));
				err = msg;
				break;
			}
		t1 = seconds();
		if (!err)
			printf("INFO emu_step %s: %.1f ns/step over %zu "
			       "steps\n",
			       pass ? "cached (hit path)" : "first pass",
			       (t1 - t0) * 1e9 / r.steps, r.steps);
	}
	if (!err && emu_instructions(t) != r.n)
		err = "the replay counted different instructions";
	if (err)
		harness_failf(__FILE__, __LINE__, "%s", err);
	emu_thread_free(t);
	emu_process_free(p);
	run_free(&r);
}
