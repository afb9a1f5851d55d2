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
#include "src/record/qemu/qemu_engine.h"

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

		if (n && (size_t)snprintf(buf, size, "%.*s/qemu-x86_64",
					  (int)n, path) < size &&
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
	const char *env = getenv("PTSCOPE_QEMU_PLUGIN");
	char exe[PATH_MAX - 64], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		return access(buf, R_OK) ? PS_ERR_NOT_FOUND : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return PS_ERR_NOT_FOUND;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, size, "%s/qemu/libptscope-qemu.so", exe);
	if (!access(buf, R_OK))
		return 0;
	snprintf(buf, size, "%s/../lib/ptscope/libptscope-qemu.so", exe);
	if (!access(buf, R_OK))
		return 0;
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "the QEMU plugin libptscope-qemu.so is not next "
			     "to ptscope (%s/qemu/) nor installed in "
			     "%s/../lib/ptscope/; rebuild with make, or use "
			     "--backend=step",
			     exe, exe);
}

/* @name as execve would find it (PATH search), into @out. */
int qemu_find_program(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
	} else {
		out[0] = 0;
		if (!path)
			path = "/usr/local/bin:/usr/bin:/bin";
		while (*path) {
			const char *e = strchr(path, ':');
			size_t n = e ? (size_t)(e - path) : strlen(path);

			snprintf(out, size, "%.*s/%s", (int)n, n ? path : ".",
				 name);
			if (!access(out, X_OK))
				break;
			out[0] = 0;
			path += n + (e ? 1 : 0);
		}
	}
	if (!out[0] || access(out, F_OK))
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "cannot run '%s': no such file or "
				     "command in PATH",
				     name);
	if (access(out, X_OK))
		return ps_err_detail(PS_ERR_PERM,
				     "cannot run '%s': permission denied "
				     "(is it executable?)",
				     name);
	return 0;
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

int qemu_spawn(struct rec_session *s, struct qemu_bk *q, const char *qemu,
	       const char *plugin, char *const argv[])
{
	int sv[2], tfd = s->o->truth ? fileno(s->o->truth) : -1;
	size_t argc = 0;
	char parg[PATH_MAX + 256], host_pre[2 * PATH_MAX], guest_pre[PATH_MAX];
	const char *pre;
	char **qargv;
	pid_t pid;

	while (argv[argc])
		argc++;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return ps_err_detail(PS_ERR_IO, "socketpair: %s",
				     strerror(errno));
	if (strchr(plugin, ','))
		return ps_err_detail(PS_ERR_INVAL,
				     "the QEMU plugin path '%s' has a comma, "
				     "which QEMU cannot pass",
				     plugin);
	snprintf(parg, sizeof(parg), "%s,fd=%d,start=%llu,ring=%llu,argc=%zu",
		 plugin, sv[1], (unsigned long long)s->start_ns,
		 (unsigned long long)(s->o->snapshot_size
					  ? s->o->snapshot_size
					  : REC_DEFAULT_SNAPSHOT_SIZE),
		 argc);
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
	qargv = calloc(argc + 10, sizeof(*qargv));
	if (!qargv)
		return PS_ERR_NOMEM;
	qargv[0] = (char *)qemu;
	qargv[1] = "-plugin";
	qargv[2] = parg;
	qargv[3] = "-0";
	qargv[4] = argv[0];
	qargv[5] = pre && *pre ? "-E" : "-U";
	qargv[6] = pre && *pre ? guest_pre : "LD_PRELOAD";
	qargv[7] = q->exe;
	for (size_t i = 1; i < argc; i++)
		qargv[7 + i] = argv[i];
	pid = fork();
	if (pid < 0) {
		free(qargv);
		return ps_err_detail(PS_ERR_IO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", host_pre, 1);
		fcntl(sv[1], F_SETFD, 0);
		if (tfd >= 0)
			fcntl(tfd, F_SETFD, 0);
		execv(qemu, qargv);
		_exit(127);
	}
	free(qargv);
	close(sv[1]);
	q->fd = sv[0];
	q->pid = pid;
	s->res->pid = pid;
	return 0;
}
