/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The plugin's start: its arguments (see plugin.c), the channel to
 * ptscope (an inherited fd for the command, a new connection for a
 * program exec started), the ground truth, the callbacks. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/qemu/qemu_proto.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = PTSCOPE_QEMU_PLUGIN_VERSION;

static int arg_u64(const char *arg, const char *name, uint64_t *v)
{
	size_t n = strlen(name);
	char *end;

	if (strncmp(arg, name, n) || arg[n] != '=')
		return 0;
	*v = strtoull(arg + n + 1, &end, 0);
	return *end == 0 ? 1 : -1;
}

static int arg_str(const char *arg, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n) || arg[n] != '=')
		return 0;
	snprintf(buf, size, "%s", arg + n + 1);
	return 1;
}

/* The guest program on QEMU's command line (ptscope's own layout: every
 * option before it takes a value). */
static void find_exe(void)
{
	char buf[65536];
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	char *p, *end;

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	end = buf + n;
	p = buf + strlen(buf) + 1; /* argv[0]: qemu */
	while (p < end) {
		if (*p != '-') {
			if (!realpath(p, qpl.exe))
				snprintf(qpl.exe, sizeof(qpl.exe), "%s", p);
			return;
		}
		p += strlen(p) + 1; /* the option */
		if (p < end)
			p += strlen(p) + 1; /* its value */
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info, int argc,
					   char **argv)
{
	uint64_t fd = (uint64_t)-1, ring = 0, truth = (uint64_t)-1;
	struct emu_config cfg = {0};

	qpl.id = id;
	qpl.truth_fd = -1;
	for (int i = 0; i < argc; i++) {
		if (arg_u64(argv[i], "fd", &fd) == 1 ||
		    arg_u64(argv[i], "start", &qpl.start_ns) == 1 ||
		    arg_u64(argv[i], "ring", &ring) == 1 ||
		    arg_u64(argv[i], "argc", &qpl.argc) == 1 ||
		    arg_u64(argv[i], "truth", &truth) == 1 ||
		    arg_str(argv[i], "sock", qpl.sock, sizeof(qpl.sock)) ||
		    arg_str(argv[i], "name", qpl.name, sizeof(qpl.name)))
			continue;
		fprintf(stderr, "ptscope plugin: unknown argument '%s'\n",
			argv[i]);
		return -1;
	}
	if ((fd == (uint64_t)-1 && !qpl.sock[0]) || !ring) {
		fprintf(stderr, "ptscope plugin: is started by 'ptscope run "
				"--backend=qemu', not by hand\n");
		return -1;
	}
	qpl.pid = getpid();
	qpl.ring = ring;
	find_exe();
	if (qpl.name[0])
		prctl(PR_SET_NAME, qpl.name, 0, 0, 0);
	if (fd != (uint64_t)-1) {
		qpl.fd = qpl_high_fd((int)fd);
	} else {
		/* A program exec started: a channel of its own.  Without
		 * ptscope (it ended) the program runs untraced. */
		qpl.fd = qpl_connect();
		if (qpl.fd < 0) {
			qpl.untraced = 1;
			return 0;
		}
	}
	fcntl(qpl.fd, F_SETFD, FD_CLOEXEC);
	{
		struct stat st;

		qpl.fd_ino = fstat(qpl.fd, &st) ? 0 : (uint64_t)st.st_ino;
	}
	if (info->system_emulation || strcmp(info->target_name, "x86_64")) {
		qpl_fail("the ptscope plugin needs qemu-x86_64 (user mode), "
			 "not %s%s",
			 info->system_emulation ? "system emulation of " : "",
			 info->target_name);
		return -1;
	}
	if (info->version.min > PTSCOPE_QEMU_PLUGIN_VERSION ||
	    info->version.cur < PTSCOPE_QEMU_PLUGIN_VERSION) {
		qpl_fail("this QEMU offers plugin API versions %d to %d; the "
			 "ptscope plugin needs version %d (QEMU 7.2 or a "
			 "later compatible release)",
			 info->version.min, info->version.cur,
			 PTSCOPE_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (truth != (uint64_t)-1) {
		fcntl((int)truth, F_SETFD, FD_CLOEXEC);
		qpl.truth = qpl_truth_open((int)truth);
	}
	cfg.ring_size = ring;
	cfg.start_ns = qpl.start_ns;
	cfg.truth = qpl.truth;
	cfg.read_mem = qpl_read_guest;
	if (emu_process_new(&cfg, getpid(), &qpl.proc) ||
	    emu_insn_decoder_new(&qpl.dec) || qpl_world_init()) {
		qpl_fail("the ptscope plugin could not start (out of memory?)");
		return -1;
	}
	qpl_tree_init();
	qemu_plugin_register_vcpu_tb_trans_cb(id, qpl_on_tb_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, qpl_on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, qpl_on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, qpl_on_qemu_exit, NULL);
	return 0;
}
