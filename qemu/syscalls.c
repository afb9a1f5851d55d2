/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The plugin's view of a guest process's life beyond its code: the system
 * calls it makes (signal handlers installed, clone and fork (tree.c), exec
 * (exec.c), new
 * executable mappings), its exit, and a fatal signal QEMU does not report
 * to plugins.  Each ends in a message to ptscope (QP_EXEC, QP_MAPS,
 * QP_SYSCALL, QP_END).
 */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/qemu/qemu_proto.h"

#define SA_RESTORER_FLAG 0x04000000
#define PROT_EXEC_FLAG 0x4

static void note_sigaction(uint64_t sig, uint64_t act)
{
	uint64_t handler, flags, restorer;

	if (!act || sig == 0 || sig >= QPL_NSIG)
		return;
	/* struct kernel_sigaction: handler, flags, restorer, mask. */
	if (qpl_read_u64(act, &handler) || qpl_read_u64(act + 8, &flags) ||
	    qpl_read_u64(act + 16, &restorer))
		return;
	qpl.handler[sig] = handler > 1 ? handler : 0;
	qpl.restorer[sig] = flags & SA_RESTORER_FLAG ? restorer : 0;
	qpl.handler_lo = UINT64_MAX;
	qpl.handler_hi = 0;
	for (int s = 1; s < QPL_NSIG; s++) {
		if (!qpl.handler[s])
			continue;
		if (qpl.handler[s] < qpl.handler_lo)
			qpl.handler_lo = qpl.handler[s];
		if (qpl.handler[s] > qpl.handler_hi)
			qpl.handler_hi = qpl.handler[s];
	}
}

void qpl_on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
		    uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		    uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
	struct qpl_thread *q = qpl_self;

	(void)id, (void)vcpu, (void)a6;
	(void)a7, (void)a8;
	if (!q || qpl.untraced)
		return;
	switch (num) {
	case SYS_rt_sigaction:
		note_sigaction(a1, a2);
		break;
	case SYS_clone:
	case SYS_clone3:
	case SYS_fork:
	case SYS_vfork:
		if (q->emu)
			qpl.clone_clock = emu_now(q->emu);
		q->exit_status = num == SYS_clone ? a1 : 0;
		if (num == SYS_clone3 && qpl_read_u64(a1, &q->exit_status))
			q->exit_status = 0;
		break;
	case SYS_exit:
	case SYS_exit_group:
		q->exit_status = a1;
		break;
	case SYS_execve:
	case SYS_execveat:
		qpl_exec(q, num, a1, a2, a3, a4, a5);
		break;
	default:
		break;
	}
	q->sys_prot = num == SYS_mmap || num == SYS_mprotect ? a3 : 0;
	qpl_syscall_enter(q, num);
	if (num == SYS_exit)
		qpl_thread_exit(q);
}

void qpl_on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
			int64_t ret)
{
	struct qpl_thread *q = qpl_self;
	uint64_t ns;
	int child;

	(void)id, (void)vcpu;
	if (!q || qpl.untraced)
		return;
	/* A new process, whatever the flags said: QEMU turns vfork and
	 * clone(CLONE_VM|CLONE_VFORK) (posix_spawn, system()) into a plain
	 * fork, so only the pid tells a child from a new thread. */
	child = ret == 0 &&
		(num == SYS_fork || num == SYS_vfork || num == SYS_clone ||
		 num == SYS_clone3) &&
		getpid() != qpl.pid;
	if (child) {
		qpl_forked(q, qpl.clone_clock);
		if (qpl.untraced)
			return;
	}
	if ((num == SYS_execve || num == SYS_execveat) && ret < 0)
		qpl_exec_failed(q);
	qpl_check_fd(num);
	ns = qpl_syscall_leave(q, ret);
	q->pending_ns += ns;
	if (qpl.want_syscalls && qpl.tracing && q->emu) {
		struct qp_syscall m = {(uint32_t)q->tid,
				       0,
				       num,
				       q->sys_clock0,
				       q->sys_clock0 + ns,
				       q->sys_real0,
				       qpl_clock_ns()};

		qpl_send(QP_SYSCALL, &m, sizeof(m), NULL, 0);
	}
	if (qpl.want_maps && ret >= 0 && qpl.tracing &&
	    (num == SYS_mmap || num == SYS_mprotect) &&
	    (q->sys_prot & PROT_EXEC_FLAG)) {
		struct qp_tid m = {(uint32_t)q->tid, 0};

		qpl_notify_wait(q, QP_MAPS, &m, sizeof(m));
	}
}

/* The faulting thread's block ended early at @ip: the rest did not run. */
static void cut_block(struct qpl_thread *q, uint64_t ip)
{
	const struct qpl_block *b = q->prev;

	for (uint32_t i = 0; b && i + 1 < b->n; i++)
		if (b->ips[i] == ip) {
			emu_unrun(q->emu, ip, b->n - 1 - i);
			break;
		}
}

/* The last word: END, then every thread's PT. */
static void send_end(struct qpl_thread *q, uint32_t kind, uint64_t status)
{
	struct qp_end e = {0};

	e.kind = kind;
	e.tid = q ? (uint32_t)q->tid : 0;
	e.status = status;
	if (kind == QP_END_CRASH && q && q->emu) {
		if (q->env && qpl.regs_ok) {
			e.ip = q->env[R_EIP];
			e.addr = q->env[R_CR2];
			cut_block(q, e.ip);
		}
		if (!e.ip && q->prev)
			e.ip = q->prev->last.ip;
	}
	e.now = q && q->emu ? emu_now(q->emu) : qpl.start_ns;
	qpl.tracing = 0;
	qpl.untraced = 1;
	if (q)
		q->answer = 0;
	if (qpl_send(QP_END, &e, sizeof(e), NULL, 0) == 0 &&
	    qpl_send_dump() == 0 && q)
		/* ptscope reads the guest's mappings before it lets the
		 * process go (they vanish as it exits); never wait for ever. */
		qpl_wait_answer(q, 10);
	if (qpl.truth)
		fflush(qpl.truth);
}

/* QEMU is ending the process: exit_group, the last thread's exit (and,
 * from QEMU 8.1 on, a fatal signal).  Every other vCPU is out of guest
 * code and our callbacks are gone, so the rings are still. */
void qpl_on_qemu_exit(qemu_plugin_id_t id, void *p)
{
	struct qpl_thread *q = qpl_self;

	(void)id, (void)p;
	if (qpl.fd < 0 || qpl.untraced)
		return;
	if (q && q->in_sys &&
	    (q->sys_nr == SYS_exit_group || q->sys_nr == SYS_exit))
		send_end(q, QP_END_EXIT, q->exit_status & 0xff);
	else
		send_end(q, QP_END_CRASH, 0);
}

/* QEMU 7.2 kills itself for a guest's fatal signal (dump_core_and_abort:
 * kill(getpid(), sig) after restoring the default action) without telling
 * plugins.  ptscope preloads this object into QEMU (LD_PRELOAD, removed
 * from the guest's environment with -U), so this kill() comes first: the
 * last snapshot is sent while the process is still whole. */
#pragma GCC visibility push(default)
int kill(pid_t pid, int sig)
{
	if (pid == getpid() && sig > 0 && sig != SIGCHLD && sig != SIGCONT &&
	    sig != SIGURG && sig != SIGWINCH && qpl.fd >= 0 && !qpl.untraced &&
	    qpl.proc) {
		struct sigaction sa;

		/* Only the fatal one: its action is the default by now. */
		if (!sigaction(sig, NULL, &sa) && sa.sa_handler == SIG_DFL) {
			qpl_world_stop_for_death(qpl_self, sig);
			send_end(qpl_self, QP_END_CRASH, (uint64_t)sig);
		}
	}
	return (int)syscall(SYS_kill, pid, sig);
}
#pragma GCC visibility pop
