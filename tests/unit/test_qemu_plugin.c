/* SPDX-License-Identifier: MIT */
/* The QEMU plugin (qemu/) driven by a test double of QEMU: this program
 * exports the plugin API functions the plugin calls (linked -rdynamic),
 * loads build/qemu/libptscope-qemu.so, and plays QEMU (translated blocks,
 * their execution, system calls, exit) and ptscope (the socket).  Each case
 * runs in a child process, since the plugin's state is per process.
 *
 * Checked: the API version and target QEMU offers are refused with one
 * sentence; executed blocks become PT that libipt decodes to exactly the
 * instructions that ran; the ground truth names the calls and returns. */
#include <dlfcn.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qemu/qemu-plugin-api.h"
#include "src/record/qemu/qemu_proto.h"
#include "tests/harness.h"

/* ---- the QEMU double ---------------------------------------------- */

struct qemu_plugin_insn {
	uint64_t vaddr;
	uint8_t bytes[16];
	size_t size;
};

struct qemu_plugin_tb {
	uint64_t vaddr;
	size_t n;
	struct qemu_plugin_insn insn[4];
	qemu_plugin_vcpu_udata_cb_t cb;
	void *udata;
};

static struct {
	qemu_plugin_vcpu_tb_trans_cb_t trans;
	qemu_plugin_vcpu_syscall_cb_t sys;
	qemu_plugin_vcpu_syscall_ret_cb_t sys_ret;
	qemu_plugin_udata_cb_t atexit_cb;
	void *atexit_data;
} fake;

void qemu_plugin_reset(qemu_plugin_id_t id, qemu_plugin_simple_cb_t cb)
{
	(void)id, (void)cb;
}
void qemu_plugin_register_vcpu_exit_cb(qemu_plugin_id_t id,
				       qemu_plugin_vcpu_simple_cb_t cb)
{
	(void)id, (void)cb;
}
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb)
{
	(void)id;
	fake.trans = cb;
}
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata)
{
	(void)flags;
	tb->cb = cb;
	tb->udata = userdata;
}
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id,
					  qemu_plugin_vcpu_syscall_cb_t cb)
{
	(void)id;
	fake.sys = cb;
}
void qemu_plugin_register_vcpu_syscall_ret_cb(
    qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_ret_cb_t cb)
{
	(void)id;
	fake.sys_ret = cb;
}
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata)
{
	(void)id;
	fake.atexit_cb = cb;
	fake.atexit_data = userdata;
}
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb)
{
	return tb->n;
}
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb)
{
	return tb->vaddr;
}
struct qemu_plugin_insn *
qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx)
{
	return (struct qemu_plugin_insn *)&tb->insn[idx];
}
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn)
{
	return insn->bytes;
}
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn)
{
	return insn->size;
}
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn)
{
	return insn->vaddr;
}
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn)
{
	(void)insn;
	return NULL; /* guest_base stays 0 */
}

/* ---- helpers ------------------------------------------------------- */

typedef int (*install_fn)(qemu_plugin_id_t, const qemu_info_t *, int, char **);

static install_fn load_plugin(void)
{
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/qemu/libptscope-qemu.so",
		 harness_build());
	h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	return h ? (install_fn)dlsym(h, "qemu_plugin_install") : NULL;
}

static int read_msg(int fd, struct qp_header *h, uint8_t **data)
{
	size_t got = 0;

	if (read(fd, h, sizeof(*h)) != sizeof(*h))
		return -1;
	*data = malloc(h->len + 1);
	while (got < h->len) {
		ssize_t r = read(fd, *data + got, h->len - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	(*data)[h->len] = 0;
	return 0;
}

/* Install with QEMU offering @info; the child's verdict comes back as the
 * plugin's QP_FAIL sentence (or "" when it installed). */
static void install_reply(const qemu_info_t *info, char *out, size_t size)
{
	int sv[2];
	pid_t pid;

	out[0] = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return;
	pid = fork();
	if (pid == 0) {
		install_fn install = load_plugin();
		char fd_arg[32],
		    *argv[] = {fd_arg, "ring=65536", "start=1000", "argc=1"};

		snprintf(fd_arg, sizeof(fd_arg), "fd=%d", sv[1]);
		_exit(install && install(1, info, 4, argv) == -1 ? 0 : 1);
	}
	close(sv[1]);
	{
		struct qp_header h;
		uint8_t *d = NULL;

		if (read_msg(sv[0], &h, &d) == 0 && h.type == QP_FAIL)
			snprintf(out, size, "%s", (char *)d);
		free(d);
	}
	close(sv[0]);
	waitpid(pid, NULL, 0);
}

TEST(refuses_unsupported_api_version)
{
	qemu_info_t info = {.target_name = "x86_64", .version = {2, 3}};
	char msg[512];

	if (!load_plugin())
		SKIP("build/qemu/libptscope-qemu.so not built");
	install_reply(&info, msg, sizeof(msg));
	CHECK(strstr(msg, "plugin API versions 2 to 3") != NULL);
	CHECK(strstr(msg, "needs version 1") != NULL);
}

TEST(refuses_system_emulation)
{
	qemu_info_t info = {.target_name = "x86_64",
			    .version = {0, 1},
			    .system_emulation = true};
	char msg[512];

	if (!load_plugin())
		SKIP("build/qemu/libptscope-qemu.so not built");
	install_reply(&info, msg, sizeof(msg));
	CHECK(strstr(msg, "user mode") != NULL);
}

/* ---- a small guest program ---------------------------------------- */

/* A: 0x401000 nop; call 0x402000      B: 0x402000 nop; ret
 * C: 0x401006 nop; syscall (exit_group) */
static struct qemu_plugin_tb tb_a = {
    0x401000,
    2,
    {{0x401000, {0x90}, 1}, {0x401001, {0xe8, 0xfa, 0x0f, 0, 0}, 5}}};
static struct qemu_plugin_tb tb_b = {
    0x402000, 2, {{0x402000, {0x90}, 1}, {0x402001, {0xc3}, 1}}};
static struct qemu_plugin_tb tb_c = {
    0x401006, 2, {{0x401006, {0x90}, 1}, {0x401007, {0x0f, 0x05}, 2}}};

static int read_guest(uint8_t *buf, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx)
{
	struct qemu_plugin_tb *tbs[] = {&tb_a, &tb_b, &tb_c};

	(void)asid, (void)ctx;
	for (int t = 0; t < 3; t++)
		for (size_t i = 0; i < tbs[t]->n; i++) {
			const struct qemu_plugin_insn *in = &tbs[t]->insn[i];

			if (ip >= in->vaddr && ip < in->vaddr + in->size) {
				size_t n = in->vaddr + in->size - ip;

				n = n < size ? n : size;
				memcpy(buf, in->bytes + (ip - in->vaddr), n);
				return (int)n;
			}
		}
	return -pte_nomap;
}

/* QEMU calls block callbacks with its CPU state in rbp (the plugin reads
 * it there): call @cb the same way, with a CPU state whose stack pointer
 * points at argc = 1, as at a program's first instruction. */
static uint64_t fake_stack[4] = {1};
static uint64_t fake_env[64];

static void exec_block(struct qemu_plugin_tb *tb)
{
	fake_env[4] = (uint64_t)(uintptr_t)fake_stack;
	__asm__ volatile("mov %%rsp, %%rbx\n\t"
			 "sub $256, %%rsp\n\t"
			 "and $-16, %%rsp\n\t"
			 "push %%rbp\n\t"
			 "push %%rbp\n\t"
			 "mov %[env], %%rbp\n\t"
			 "call *%[fn]\n\t"
			 "pop %%rbp\n\t"
			 "pop %%rbp\n\t"
			 "mov %%rbx, %%rsp\n\t"
			 :
			 : [fn] "r"(tb->cb), [env] "r"(fake_env), "D"(0),
			   "S"(tb->udata)
			 : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11",
			   "memory", "cc");
}

/* ptscope's side: answer HELLO, then collect END and DUMP_DATA. */
struct responder {
	int fd;
	uint8_t *pt;
	uint64_t pt_len;
	uint32_t nthreads;
	struct qp_end end;
	int got_end;
};

static void *respond(void *arg)
{
	struct responder *r = arg;
	struct qp_header h;
	uint8_t *d;

	while (read_msg(r->fd, &h, &d) == 0) {
		if (h.type == QP_HELLO) {
			struct qp_watch w = {0, 0, 0};
			struct qp_resume rs = {QP_GO, (uint32_t)getpid()};
			struct qp_header wh = {QP_WATCH, sizeof(w)};
			struct qp_header rh = {QP_RESUME, sizeof(rs)};

			if (write(r->fd, &wh, sizeof(wh)) < 0 ||
			    write(r->fd, &w, sizeof(w)) < 0 ||
			    write(r->fd, &rh, sizeof(rh)) < 0 ||
			    write(r->fd, &rs, sizeof(rs)) < 0)
				break;
		} else if (h.type == QP_END) {
			memcpy(&r->end, d, sizeof(r->end));
			r->got_end = 1;
		} else if (h.type == QP_DUMP_DATA) {
			struct qp_thread th;

			memcpy(&r->nthreads, d, 4);
			memcpy(&th, d + 4, sizeof(th));
			r->pt_len = th.len;
			r->pt = malloc(th.len);
			memcpy(r->pt, d + 4 + sizeof(th), th.len);
			free(d);
			break;
		}
		free(d);
	}
	return NULL;
}

/* The child: run A, B, C, exit_group; exit 0 if the PT decodes to exactly
 * the five instructions before the syscall and the truth has the call and
 * the return. */
static int run_guest(const char *truth_path)
{
	qemu_info_t info = {.target_name = "x86_64", .version = {0, 1}};
	struct responder r = {0};
	install_fn install = load_plugin();
	char fd_arg[32], truth_arg[32];
	char *argv[] = {fd_arg, "ring=65536", "start=1000", "argc=1",
			truth_arg};
	uint64_t want[] = {0x401000, 0x401001, 0x402000, 0x402001, 0x401006};
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct pt_image *img;
	pthread_t th;
	int sv[2], tfd, n = 0, bad = 0, st;
	char line[256];
	FILE *f;

	tfd = open(truth_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (!install || tfd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 10;
	snprintf(fd_arg, sizeof(fd_arg), "fd=%d", sv[1]);
	snprintf(truth_arg, sizeof(truth_arg), "truth=%d", tfd);
	r.fd = sv[0];
	pthread_create(&th, NULL, respond, &r);
	if (install(1, &info, 5, argv))
		return 11;
	fake.trans(1, &tb_a);
	fake.trans(1, &tb_b);
	fake.trans(1, &tb_c);
	exec_block(&tb_a);
	exec_block(&tb_b);
	exec_block(&tb_c);
	fake.sys(1, 0, SYS_exit_group, 3, 0, 0, 0, 0, 0, 0, 0);
	fake.atexit_cb(1, fake.atexit_data);
	pthread_join(th, NULL);
	if (!r.got_end || r.end.kind != QP_END_EXIT || r.end.status != 3 ||
	    r.nthreads != 1 || !r.pt_len)
		return 12;

	/* libipt decodes the plugin's PT to what ran. */
	pt_config_init(&cfg);
	cfg.begin = r.pt;
	cfg.end = r.pt + r.pt_len;
	dec = pt_insn_alloc_decoder(&cfg);
	img = pt_insn_get_image(dec);
	pt_image_set_callback(img, read_guest, NULL);
	st = pt_insn_sync_forward(dec);
	if (st < 0)
		return 13;
	for (;;) {
		struct pt_insn insn;

		while (st >= 0 && (st & pts_event_pending)) {
			struct pt_event ev;

			st = pt_insn_event(dec, &ev, sizeof(ev));
		}
		if (st < 0)
			break;
		st = pt_insn_next(dec, &insn, sizeof(insn));
		if (st < 0)
			break;
		if (n < 5 && insn.ip != want[n])
			bad = 1;
		n++;
	}
	pt_insn_free_decoder(dec);
	if (n != 5 || bad)
		return 14;

	/* The ground truth has the call and the return. */
	f = fopen(truth_path, "r");
	if (!f)
		return 15;
	n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " call 0x401001 0x402000 "))
			n |= 1;
		if (strstr(line, " ret 0x402001 0x401006 "))
			n |= 2;
	}
	fclose(f);
	return n == 3 ? 0 : 16;
}

TEST(blocks_become_pt_that_decodes_to_what_ran)
{
	char truth[] = "/tmp/ptscope-qemu-truth-XXXXXX";
	int fd = mkstemp(truth), st = 0;
	pid_t pid;

	if (!load_plugin())
		SKIP("build/qemu/libptscope-qemu.so not built");
	CHECK(fd >= 0);
	close(fd);
	pid = fork();
	if (pid == 0)
		_exit(run_guest(truth));
	waitpid(pid, &st, 0);
	unlink(truth);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}
