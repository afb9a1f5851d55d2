/* SPDX-License-Identifier: MIT */
/* Sidecar feature: a kernel function (--event kprobe:FUNC; kernel side:
 * kfunc.bpf.c).  kprobe/kretprobe where the kernel has kprobes; else
 * fentry/fexit through BPF trampolines, which need the function in the
 * kernel's BTF.  When neither exists, one sentence says so. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/bpf/features.h"
#include "bpf/kfunc.skel.h"

static int have_kprobes(void)
{
	return !access("/sys/bus/event_source/devices/kprobe", F_OK);
}

static void kf_destroy(void *p)
{
	ps_kfunc__destroy(p);
}

static int kfunc_start(const struct sdc_maps *m, const char *func, unsigned id,
		       struct sdc_desc *d, struct sdc_part *part)
{
	int kprobes = have_kprobes();
	struct ps_kfunc *sk;
	char what[200];
	int r;

	snprintf(d->name, sizeof(d->name), "%s", func);
	d->is_kfunc = 1;
	snprintf(what, sizeof(what), "kernel function %s", func);
	sk = ps_kfunc__open();
	if (!sk)
		return sdc_fail(what, -errno);
	sk->rodata->event_id = (__u16)id;
	bpf_program__set_autoload(sk->progs.on_kprobe, kprobes);
	bpf_program__set_autoload(sk->progs.on_kretprobe, kprobes);
	bpf_program__set_autoload(sk->progs.on_fentry, !kprobes);
	bpf_program__set_autoload(sk->progs.on_fexit, !kprobes);
	r = 0;
	if (!kprobes) {
		r = bpf_program__set_attach_target(sk->progs.on_fentry, 0,
						   func);
		if (!r)
			r = bpf_program__set_attach_target(sk->progs.on_fexit,
							   0, func);
		if (r)
			r = ps_err_detail(PS_ERR_NOT_FOUND,
					  "cannot trace kernel function '%s': "
					  "this kernel has no kprobes and no "
					  "BTF entry (fentry) for it",
					  func);
	}
	if (!r)
		r = sdc_share_maps(sk->obj, m);
	if (!r && (r = ps_kfunc__load(sk)) < 0) {
		if (r == -ESRCH || r == -ENOENT || r == -EINVAL)
			r = ps_err_detail(PS_ERR_NOT_FOUND,
					  "cannot trace kernel function '%s': "
					  "this kernel has no kprobes and no "
					  "BTF entry (fentry) for it",
					  func);
		else if (r == -EPERM || r == -EACCES)
			r = ps_err_detail(PS_ERR_UNSUPPORTED,
					  "cannot trace kernel function '%s': "
					  "this kernel has no kprobes and "
					  "refuses BPF trampolines (fentry)",
					  func);
		else
			r = sdc_fail(what, r);
	}
	if (!r && kprobes) {
		sk->links.on_kprobe = bpf_program__attach_kprobe(
		    sk->progs.on_kprobe, false, func);
		sk->links.on_kretprobe = bpf_program__attach_kprobe(
		    sk->progs.on_kretprobe, true, func);
		if (!sk->links.on_kprobe || !sk->links.on_kretprobe)
			r = ps_err_detail(PS_ERR_NOT_FOUND,
					  "cannot trace kernel function '%s': "
					  "no kprobe can be placed on it",
					  func);
	} else if (!r) {
		sk->links.on_fentry = bpf_program__attach(sk->progs.on_fentry);
		sk->links.on_fexit = bpf_program__attach(sk->progs.on_fexit);
		if (!sk->links.on_fentry || !sk->links.on_fexit)
			r = sdc_fail(what, -errno);
	}
	if (r) {
		ps_kfunc__destroy(sk);
		return r;
	}
	part->skel = sk;
	part->destroy = kf_destroy;
	return 0;
}

const struct sdc_custom_kind sdc_kfunc_kind = {.start = kfunc_start};
