/* SPDX-License-Identifier: GPL-2.0-or-later */
/* exec in the guest.  QEMU 7.2 runs a guest's execve natively (the new
 * program would run outside QEMU, untraced), and a plugin cannot change a
 * system call.  So the plugin, at execve's entry, resolves what the
 * kernel would run (#! interpreters, see qemu_shebang.h) and, for an
 * x86-64 program, makes the exec itself: execve of qemu-x86_64 with this
 * plugin and the program's argv and environment.  The process keeps its
 * pid; the new plugin connects to ptscope (sock=) and says HELLO.  What
 * QEMU cannot run (another architecture, 32-bit) goes on natively with a
 * word to ptscope.  If the exec fails, QEMU's own execve runs next and
 * returns the kernel's error to the guest.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/qemu/qemu_proto.h"
#include "src/record/qemu/qemu_shebang.h"

#define AT_FDCWD_ (-100)
#define AT_EMPTY_PATH_ 0x1000
#define MAX_ARGS 65536

/* A guest string (malloc'ed), or NULL: read a page piece at a time. */
static char *guest_str(uint64_t addr)
{
	size_t cap = 0, len = 0;
	char *s = NULL;

	if (!addr)
		return NULL;
	for (;;) {
		size_t want = 4096 - ((addr + len) & 4095);
		ssize_t n;
		char *e;

		if (len + want + 1 > cap) {
			char *ns = realloc(s, cap = 2 * (len + want + 1));

			if (!ns) {
				free(s);
				return NULL;
			}
			s = ns;
		}
		n = qpl_read_guest(NULL, addr + len, s + len, want);
		if (n <= 0 || len + (size_t)n > (1u << 20)) {
			free(s);
			return NULL;
		}
		e = memchr(s + len, 0, (size_t)n);
		len += (size_t)n;
		if (e)
			return s;
	}
}

/* A guest NULL-ended array of strings (malloc'ed, NULL-ended), or NULL. */
static char **guest_strv(uint64_t addr, size_t *count)
{
	size_t n = 0;
	char **v = calloc(1, sizeof(*v));

	*count = 0;
	if (!v)
		return NULL;
	while (addr && n < MAX_ARGS) {
		uint64_t p;
		char **nv;

		if (qpl_read_u64(addr + 8 * n, &p) || !p)
			break;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n] = guest_str(p);
		if (!v[n])
			break;
		v[++n] = NULL;
	}
	*count = n;
	return v;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The file execve/execveat names, as a path this process can open. */
static char *exec_path(int64_t nr, uint64_t a1, uint64_t a2, uint64_t a5)
{
	char *p = guest_str(nr == SYS_execve ? a1 : a2), *r;
	int dirfd = nr == SYS_execveat ? (int)a1 : AT_FDCWD_;

	if (!p)
		return NULL;
	if (!strcmp(p, "/proc/self/exe") && qpl.exe[0]) {
		free(p);
		return strdup(qpl.exe);
	}
	if (nr == SYS_execveat && (a5 & AT_EMPTY_PATH_) && !p[0]) {
		free(p);
		return asprintf(&r, "/proc/self/fd/%d", dirfd) < 0 ? NULL : r;
	}
	if (p[0] == '/' || dirfd == AT_FDCWD_)
		return p;
	if (asprintf(&r, "/proc/self/fd/%d/%s", dirfd, p) < 0)
		r = NULL;
	free(p);
	return r;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/* Tell ptscope what comes and wait for its answer (it takes the PT). */
static void tell(struct qpl_thread *q, uint32_t kind, const char *text)
{
	size_t n = strlen(text);
	uint8_t *buf = malloc(sizeof(struct qp_exec) + n);
	struct qp_exec e = {(uint32_t)q->tid, kind};

	if (!buf)
		return;
	memcpy(buf, &e, sizeof(e));
	memcpy(buf + sizeof(e), text, n);
	qpl_notify_wait(q, QP_EXEC, buf, (uint32_t)(sizeof(e) + n));
	free(buf);
}

/* execve of qemu-x86_64 with this plugin on @prog, its argv being
 * prog->pre + @argv[1..], environment @envp.  Returns only on failure. */
static void exec_qemu(struct qpl_thread *q, const char *path,
		      const struct qx_prog *prog, char **argv, size_t argc,
		      char **envp, size_t envc)
{
	char qemu[PATH_MAX], parg[PATH_MAX + 512], name[16], pre[PATH_MAX + 16];
	size_t gargc = prog->npre + (argc > 1 ? argc - 1 : 0), k = 0, e = 0;
	char **qv = calloc(gargc + 12, sizeof(*qv));
	char **ev = calloc(envc + 2, sizeof(*ev));
	const char *guest_pre = NULL;
	char *hpre = NULL;
	Dl_info di;
	ssize_t n;

	if (!qv || !ev)
		goto out;
	n = readlink("/proc/self/exe", qemu, sizeof(qemu) - 1);
	if (n <= 0 || !dladdr((void *)&qpl, &di) || !di.dli_fname ||
	    strchr(di.dli_fname, ','))
		goto out;
	qemu[n] = 0;
	/* Its name, as the kernel would set it: the file exec named. */
	snprintf(name, sizeof(name), "%s", base_name(path));
	for (char *c = name; *c; c++)
		if (*c == ',' || *c == '=')
			*c = '_';
	snprintf(parg, sizeof(parg),
		 "%s,sock=%s,start=%llu,ring=%llu,argc=%zu,name=%s",
		 di.dli_fname, qpl.sock,
		 (unsigned long long)(q->emu ? emu_now(q->emu) : qpl.start_ns),
		 (unsigned long long)qpl.ring, gargc, name);
	if (qpl.truth_fd >= 0) {
		snprintf(parg + strlen(parg), sizeof(parg) - strlen(parg),
			 ",truth=%d", qpl.truth_fd);
		fflush(qpl.truth);
		fcntl(qpl.truth_fd, F_SETFD, 0);
	}
	/* QEMU gets the plugin preloaded (see syscalls.c, kill()); the
	 * guest the environment it asked for. */
	for (size_t i = 0; i < envc; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11)) {
			guest_pre = envp[i];
			continue;
		}
		ev[e++] = envp[i];
	}
	if (asprintf(&hpre, "LD_PRELOAD=%s", di.dli_fname) < 0)
		goto out;
	ev[e++] = hpre;
	qv[k++] = qemu;
	qv[k++] = "-plugin";
	qv[k++] = parg;
	qv[k++] = "-0";
	qv[k++] = prog->npre ? prog->pre[0] : (char *)path;
	if (guest_pre) {
		snprintf(pre, sizeof(pre), "%s", guest_pre);
		qv[k++] = "-E";
		qv[k++] = pre;
	} else {
		qv[k++] = "-U";
		qv[k++] = "LD_PRELOAD";
	}
	qv[k++] = (char *)prog->path;
	for (size_t i = 1; i < prog->npre; i++)
		qv[k++] = prog->pre[i];
	for (size_t i = 1; i < argc; i++)
		qv[k++] = argv[i];
	qv[k] = NULL;
	syscall(SYS_execve, qemu, qv, ev);
	if (qpl.truth_fd >= 0)
		fcntl(qpl.truth_fd, F_SETFD, FD_CLOEXEC);
out:
	free(hpre);
	free(qv);
	free(ev);
}

void qpl_exec(struct qpl_thread *q, int64_t nr, uint64_t a1, uint64_t a2,
	      uint64_t a3, uint64_t a4, uint64_t a5)
{
	uint64_t argp = nr == SYS_execve ? a2 : a3;
	uint64_t envp = nr == SYS_execve ? a3 : a4;
	char *path, **argv = NULL, **env = NULL, text[PATH_MAX + 300];
	size_t argc = 0, envc = 0;
	struct qx_prog prog;

	if (qpl.fd < 0 || !qpl.tracing)
		return;
	if (!qpl.follow) {
		/* Not followed: the trace so far, then the new program runs
		 * natively (the socket is close-on-exec). */
		tell(q, QP_EXEC_STOP, "");
		return;
	}
	path = exec_path(nr, a1, a2, a5);
	if (!path || qx_resolve(path, NULL, &prog)) {
		free(path);
		return;
	}
	argv = guest_strv(argp, &argc);
	qx_prog_free(&prog);
	if (qx_resolve(path, argc ? argv[0] : NULL, &prog))
		goto out;
	switch (prog.kind) {
	case QX_X86_64:
		env = guest_strv(envp, &envc);
		if (!argv || !env)
			break;
		tell(q, QP_EXEC_QEMU, prog.path);
		if (qpl.fd >= 0 && !qpl.untraced)
			exec_qemu(q, path, &prog, argv, argc, env, envc);
		break;
	case QX_FOREIGN:
		snprintf(text, sizeof(text),
			 "'%s' is %s, which qemu-x86_64 cannot trace: it runs "
			 "untraced",
			 path, prog.why);
		tell(q, QP_EXEC_NATIVE, text);
		break;
	default:
		/* The kernel refuses it (ENOENT, EACCES, ENOEXEC): QEMU's
		 * execve returns that to the guest. */
		break;
	}
out:
	qx_prog_free(&prog);
	strv_free(argv);
	strv_free(env);
	free(path);
}

void qpl_exec_failed(struct qpl_thread *q)
{
	struct qp_tid m = {(uint32_t)q->tid, 0};

	if (qpl.fd >= 0 && qpl.tracing)
		qpl_send(QP_EXEC_FAIL, &m, sizeof(m), NULL, 0);
}
