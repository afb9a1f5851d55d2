/* SPDX-License-Identifier: MIT */
/* Starting the qemu backend: qemu-x86_64, the plugin, the program (see
 * qemu_engine.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/own_file.h"
#include "src/record/qemu/qemu_engine.h"
#include "src/record/qemu/qemu_shebang.h"

/* libptscope-qemu.so beside the ptscope binary (build tree) or in
 * ../lib/ptscope (installed); PTSCOPE_QEMU_PLUGIN overrides. */
int qemu_find(char *buf, size_t size)
{
	const char *env = getenv("PTSCOPE_QEMU");
	const char *path = getenv("PATH");

	if (env && *env) {
		if (access(env, X_OK))
			return ps_err_detail(PS_ERR_NOT_FOUND,
					     "PTSCOPE_QEMU=%s is not an "
					     "executable file",
					     env);
		snprintf(buf, size, "%s", env);
		return 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);

		if (n &&
		    (size_t)snprintf(buf, size, "%.*s/qemu-x86_64", (int)n,
				     path) < size &&
		    !access(buf, X_OK))
			return 0;
		path += n + (end ? 1 : 0);
	}
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "qemu-x86_64 not found: install qemu-user "
			     "(apt-get install qemu-user) or use "
			     "--backend=step");
}

int qemu_plugin_path(char *buf, size_t size)
{
	char exe[PATH_MAX - 64];
	int r = ps_own_file("PTSCOPE_QEMU_PLUGIN", "qemu/libptscope-qemu.so",
			    "libptscope-qemu.so", R_OK, buf, size, exe,
			    sizeof(exe));

	if (r && exe[0])
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "the QEMU plugin libptscope-qemu.so is "
				     "not next to ptscope (%s/qemu/) nor "
				     "installed in %s/../lib/ptscope/; rebuild "
				     "with make, or use --backend=step",
				     exe, exe);
	return r;
}

void qemu_version(const char *qemu, char *buf, size_t size)
{
	char cmd[PATH_MAX + 32], line[256];
	FILE *f;

	snprintf(buf, size, "unknown");
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", qemu);
	f = popen(cmd, "r");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		const char *v = strstr(line, "version ");

		if (v) {
			snprintf(buf, size, "%s", v + 8);
			buf[strcspn(buf, " \n")] = 0;
		}
	}
	pclose(f);
}

/* What the command runs: the program QEMU loads into q->exe, the argv
 * its guest gets into *@gargv (malloc'ed; strings borrowed from @prog and
 * @argv).  #! scripts as the kernel runs them; a file that is neither
 * ELF nor script through /bin/sh, as execvp does. */
static int command(struct qemu_bk *q, char *const argv[], struct qx_prog *prog,
		   char ***gargv, size_t *gargc)
{
	char path[PATH_MAX], **v;
	size_t argc = 0, k = 0;
	int r;

	while (argv[argc])
		argc++;
	r = rec_find_command(argv[0], path, sizeof(path));
	if (r)
		return r;
	if (qx_resolve(path, argv[0], prog))
		return PS_ERR_NOMEM;
	if (prog->kind == QX_NOT_ELF) {
		char *sv[2] = {"/bin/sh", path};

		qx_prog_free(prog);
		if (qx_resolve("/bin/sh", "/bin/sh", prog))
			return PS_ERR_NOMEM;
		for (size_t i = 0; i < 2; i++)
			if (prog->npre < QX_MAX_PRE &&
			    !(prog->pre[prog->npre++] = strdup(sv[i])))
				return PS_ERR_NOMEM;
		/* pre[0] stays /bin/sh: drop the copy. */
		free(prog->pre[1]);
		memmove(prog->pre + 1, prog->pre + 2,
			(prog->npre - 2) * sizeof(prog->pre[0]));
		prog->npre--;
	}
	if (prog->kind == QX_FOREIGN)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "cannot trace '%s': it is %s, and "
				     "qemu-x86_64 runs x86-64 programs only",
				     prog->scripts ? prog->path : argv[0],
				     prog->why);
	if (prog->kind != QX_X86_64)
		return ps_err_detail(
		    PS_ERR_TARGET, "cannot run '%s': %s", argv[0],
		    prog->err == ELOOP ? "too many levels of #! interpreters"
		    : prog->err == ENOEXEC ? "its #! line names no interpreter"
					   : strerror(prog->err));
	if (!realpath(prog->path, q->exe))
		snprintf(q->exe, sizeof(q->exe), "%s", prog->path);
	v = calloc(prog->npre + argc + 1, sizeof(*v));
	if (!v)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < prog->npre; i++)
		v[k++] = prog->pre[i];
	for (size_t i = 1; i < argc; i++)
		v[k++] = argv[i];
	*gargv = v;
	*gargc = k;
	return 0;
}

int qemu_spawn(struct rec_session *s, struct qemu_bk *q, const char *plugin,
	       char *const argv[])
{
	int sv[2], tfd = s->o->truth ? fileno(s->o->truth) : -1, r;
	size_t gargc = 0;
	char parg[PATH_MAX + 512], host_pre[2 * PATH_MAX], guest_pre[PATH_MAX];
	char name[16], **gargv = NULL;
	struct qx_prog prog;
	const char *pre, *b;
	char **qargv;
	pid_t pid;

	if (strchr(plugin, ','))
		return ps_err_detail(PS_ERR_INVAL,
				     "the QEMU plugin path '%s' has a comma, "
				     "which QEMU cannot pass",
				     plugin);
	r = command(q, argv, &prog, &gargv, &gargc);
	if (r) {
		qx_prog_free(&prog);
		return r;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		qx_prog_free(&prog);
		free(gargv);
		return ps_err_detail(PS_ERR_IO, "socketpair: %s",
				     strerror(errno));
	}
	/* Its name, as the kernel sets it: the file exec named. */
	b = strrchr(argv[0], '/');
	snprintf(name, sizeof(name), "%s", b ? b + 1 : argv[0]);
	for (char *c = name; *c; c++)
		if (*c == ',' || *c == '=')
			*c = '_';
	snprintf(parg, sizeof(parg),
		 "%s,fd=%d,sock=%s,start=%llu,ring=%llu,argc=%zu,name=%s",
		 plugin, sv[1], q->sock, (unsigned long long)s->start_ns,
		 (unsigned long long)(s->o->snapshot_size
					  ? s->o->snapshot_size
					  : REC_DEFAULT_SNAPSHOT_SIZE),
		 gargc, name);
	if (tfd >= 0) {
		fflush(s->o->truth);
		snprintf(parg + strlen(parg), sizeof(parg) - strlen(parg),
			 ",truth=%d", tfd);
	}
	/* The plugin is also preloaded into QEMU (its kill() sees a fatal
	 * signal before QEMU dies of it, see qemu/plugin.c); the guest gets
	 * the environment it would have had. */
	pre = getenv("LD_PRELOAD");
	if (pre && *pre) {
		snprintf(guest_pre, sizeof(guest_pre), "LD_PRELOAD=%s", pre);
		snprintf(host_pre, sizeof(host_pre), "%s %s", plugin, pre);
	} else {
		snprintf(host_pre, sizeof(host_pre), "%s", plugin);
	}
	qargv = calloc(gargc + 10, sizeof(*qargv));
	if (!qargv) {
		qx_prog_free(&prog);
		free(gargv);
		return PS_ERR_NOMEM;
	}
	qargv[0] = q->qemu;
	qargv[1] = "-plugin";
	qargv[2] = parg;
	qargv[3] = "-0";
	qargv[4] = gargv[0];
	qargv[5] = pre && *pre ? "-E" : "-U";
	qargv[6] = pre && *pre ? guest_pre : "LD_PRELOAD";
	qargv[7] = q->exe;
	for (size_t i = 1; i < gargc; i++)
		qargv[7 + i] = gargv[i];
	pid = fork();
	if (pid < 0) {
		free(qargv);
		free(gargv);
		qx_prog_free(&prog);
		return ps_err_detail(PS_ERR_IO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", host_pre, 1);
		fcntl(sv[1], F_SETFD, 0);
		if (tfd >= 0)
			fcntl(tfd, F_SETFD, 0);
		execv(q->qemu, qargv);
		_exit(127);
	}
	free(qargv);
	free(gargv);
	qx_prog_free(&prog);
	close(sv[1]);
	q->pid = pid;
	s->res->pid = pid;
	return qchan_add(q, sv[0], pid) ? 0 : PS_ERR_NOMEM;
}
