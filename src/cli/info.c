/* SPDX-License-Identifier: MIT */
/* ptscope info: what this machine offers for recording, one screen, and
 * for each missing piece what to do.  Always exits 0 (it is a report). */
#include <cpuid.h>
#include <dirent.h>
#include <elfutils/version.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/sample/sample_probe.h"
#include "src/cli/commands.h"
#include "src/record/backend.h"
#include "src/record/triggers/bp.h"
#include "src/record/intel-pt/pt_pmu.h"
#include "src/record/intel-pt/pt_thread.h"
#include "src/record/recorder.h"

#define PMU_DIR "/sys/bus/event_source/devices"

static void usage(FILE *f)
{
	fprintf(f, "usage: ptscope info\n\n"
		   "Print what this machine offers for recording: the CPU, "
		   "Intel PT and its\ncapabilities, hardware breakpoints, "
		   "perf and ptrace settings, privileges,\neBPF/BTF, "
		   "kprobes/uprobes, tracefs, qemu-user, and which backend "
		   "'auto'\npicks; for each missing piece, what to do.\n");
}

/* The first line of @path into @buf (newline dropped); 0 if read. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int ok;

	buf[0] = 0;
	if (!f)
		return -1;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok ? 0 : -1;
}

static void row(const char *key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void row(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("  %-22s ", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void todo(const char *what)
{
	printf("  %-22s -> %s\n", "", what);
}

static void cpu_section(void)
{
	unsigned a, b, c, d, fam, model, step;
	char vendor[13] = "", name[256] = "";
	struct ptpmu_cpu pc;
	FILE *f;

	printf("CPU\n");
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(vendor, &b, 4);
		memcpy(vendor + 4, &d, 4);
		memcpy(vendor + 8, &c, 4);
		vendor[12] = 0;
	}
	__cpuid(1, a, b, c, d);
	fam = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	step = a & 0xf;
	if (fam == 0xf)
		fam += (a >> 20) & 0xff;
	if (fam == 0x6 || fam >= 0xf)
		model += ((a >> 16) & 0xf) << 4;
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		char line[512];

		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10)) {
				char *v = strchr(line, ':');

				if (v)
					snprintf(name, sizeof(name), "%s",
						 v + 2);
				name[strcspn(name, "\n")] = 0;
				break;
			}
		fclose(f);
	}
	ptpmu_cpu_probe(&pc);
	row("vendor", "%s%s%s", vendor, name[0] ? " — " : "", name);
	row("family/model/stepping", "%u / %u (0x%x) / %u", fam, model, model,
	    step);
	row("virtual machine", "%s", pc.hypervisor ? "yes" : "no");
	row("Intel PT (cpuid)", "%s", pc.pt_cpuid ? "yes" : "no");
}

static void caps_list(const char *dir)
{
	char path[512], val[64], line[1024];
	struct dirent *de;
	size_t len = 0;
	DIR *d = opendir(dir);

	if (!d)
		return;
	line[0] = 0;
	while ((de = readdir(d))) {
		int n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_line(path, val, sizeof(val)))
			continue;
		n = snprintf(line + len, sizeof(line) - len, "%s%s=%s",
			     len ? " " : "", de->d_name, val);
		if (n < 0 || (size_t)n >= sizeof(line) - len)
			break;
		len += (size_t)n;
	}
	closedir(d);
	/* Wrap at ~70 columns under the key. */
	for (char *p = line, *start = line;; p++) {
		if (*p && (p - start < 64 || *p != ' '))
			continue;
		printf("  %-22s %.*s\n", start == line ? "caps" : "",
		       (int)(p - start), start);
		if (!*p)
			break;
		start = p + 1;
	}
}

/* Open (and close) one intel_pt event on ourselves with the defaults:
 * can this user record? */
static void probe_pt(const struct ptpmu *pmu)
{
	struct ptpmu_config pc;
	struct ptt_config tc;
	struct ptt t;
	int r;

	r = ptpmu_build(pmu, PTPMU_TIMER_DEFAULT, &pc);
	if (!r) {
		memset(&tc, 0, sizeof(tc));
		tc.k = &ptk_real;
		tc.type = pmu->type;
		memcpy(tc.cfg, pc.cfg, sizeof(tc.cfg));
		tc.aux_size = REC_DEFAULT_SNAPSHOT_SIZE;
		tc.data_pages = 16;
		tc.aux_pause = 0;
		tc.build_id = -1;
		r = ptt_open(&tc, 0, NULL, &t);
		if (!r)
			ptt_close(&tc, &t);
	}
	if (!r) {
		row("recording as you", "yes (4 MiB of AUX area per thread)");
		return;
	}
	row("recording as you", "no");
	todo(ps_err_message(r));
}

static int pt_section(void)
{
	struct ptpmu_cpu pc;
	struct ptpmu pmu;
	struct ptpmu_config cfg;
	int r;

	printf("\nIntel PT\n");
	ptpmu_cpu_probe(&pc);
	r = ptpmu_discover(&ptk_real, &pc, &pmu);
	if (r) {
		row("intel_pt PMU", "absent");
		todo(ps_err_message(r));
		return 0;
	}
	row("intel_pt PMU", "present (type %u)", pmu.type);
	caps_list(PMU_DIR "/intel_pt/caps");
	for (int t = PTPMU_TIMER_LOW; t <= PTPMU_TIMER_HIGH; t++) {
		static const char *const names[] = {"", "low", "normal",
						    "high"};
		char key[64];

		snprintf(key, sizeof(key), "--timer-resolution=%s", names[t]);
		r = ptpmu_build(&pmu, (enum ptpmu_timer)t, &cfg);
		if (r)
			row(key, "no: %s", ps_err_message(r));
		else
			row(key, "yes (config 0x%llx)",
			    (unsigned long long)cfg.cfg[0]);
	}
	probe_pt(&pmu);
	if (pmu.cap_ip_filtering)
		row("--filter", "yes, %llu address ranges",
		    (unsigned long long)pmu.cap_num_address_ranges);
	else
		row("--filter", "no (caps/ip_filtering is 0)");
	return 1;
}

static uint64_t cap_eff(void)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7)) {
			v = strtoull(line + 7, NULL, 16);
			break;
		}
	fclose(f);
	return v;
}

static void perf_section(int have_pt)
{
	char par[32], mlock[32], ptr[32];
	uint64_t caps = cap_eff();
	int perfmon = (caps >> 38) & 1, admin = (caps >> 21) & 1;
	int paranoid;

	printf("\nperf and ptrace\n");
	if (read_line("/proc/sys/kernel/perf_event_paranoid", par,
		      sizeof(par))) {
		row("perf_event_paranoid", "unknown (no perf events?)");
		todo("build the kernel with CONFIG_PERF_EVENTS");
		paranoid = 99;
	} else {
		paranoid = atoi(par);
		row("perf_event_paranoid", "%d", paranoid);
	}
	if (!read_line("/proc/sys/kernel/perf_event_mlock_kb", mlock,
		       sizeof(mlock))) {
		row("perf_event_mlock_kb", "%s", mlock);
		if (have_pt && geteuid() && !perfmon && atol(mlock) < 4096 + 4)
			todo("each traced thread locks --snapshot-size of "
			     "AUX area: raise it (sysctl "
			     "kernel.perf_event_mlock_kb=...) or run as root");
	}
	if (!read_line("/proc/sys/kernel/yama/ptrace_scope", ptr,
		       sizeof(ptr))) {
		row("ptrace_scope", "%s", ptr);
		if (atoi(ptr) >= 2 && geteuid())
			todo("attach needs root (ptrace_scope >= 2)");
		else if (atoi(ptr) == 1 && geteuid())
			todo("attach works on your own processes only as "
			     "root or with CAP_SYS_PTRACE (ptrace_scope 1); "
			     "run works");
	} else {
		row("ptrace_scope", "no Yama (classic ptrace rules)");
	}
	row("privileges", "%s%s%s%s", geteuid() ? "user" : "root",
	    perfmon ? ", CAP_PERFMON" : "", admin ? ", CAP_SYS_ADMIN" : "",
	    (caps >> 19) & 1 ? ", CAP_SYS_PTRACE" : "");
	if (geteuid() && !perfmon && !admin && paranoid > 2)
		todo("perf events are closed to users (paranoid > 2): run "
		     "as root, give ptscope CAP_PERFMON, or set "
		     "perf_event_paranoid to 2");
	if (geteuid() && !perfmon && !admin && paranoid > 1)
		todo("--kernel needs perf_event_paranoid <= 1, CAP_PERFMON "
		     "or root");
}

static void probe_target(void) __attribute__((noinline, used));
static void probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

static void bp_section(void)
{
	struct bp *bp;
	int r;

	printf("\nTriggers\n");
	r = bp_hw_fires();
	if (r == 1) {
		row("hardware breakpoints", "yes (4 per thread)");
		return;
	}
	if (r == 0) {
		/* set, but never fire: some VMs drop the debug registers */
		r = bp_open(0, (uint64_t)(uintptr_t)&probe_target, &bp);
		row("hardware breakpoints",
		    r ? "set, but they never fire; no uprobe either"
		      : "set, but they never fire: triggers are uprobes");
		bp_close(r ? NULL : bp);
		if (r)
			todo(ps_err_message(r));
		return;
	}
	row("hardware breakpoints", "no");
	todo(ps_err_message(r));
}

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static int tracefs_mounted(char *where, size_t size)
{
	char line[512], dev[128], dir[256], type[64];
	FILE *f = fopen("/proc/mounts", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %255s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "tracefs")) {
			snprintf(where, size, "%s", dir);
			found = 1;
		}
	fclose(f);
	return found;
}

/* kprobes/uprobes: the perf PMU, or the tracefs interface. */
static void probes_row(const char *key, const char *kind, const char *tracefs,
		       const char *todo_text)
{
	char pmu[128], events[300];
	int have_pmu, have_events;

	snprintf(pmu, sizeof(pmu), PMU_DIR "/%s", kind);
	snprintf(events, sizeof(events), "%s/%s_events", tracefs, kind);
	have_pmu = exists(pmu);
	have_events = tracefs[0] && exists(events);
	if (have_pmu || have_events)
		row(key, "yes (%s%s%s)", have_pmu ? "perf PMU" : "",
		    have_pmu && have_events ? ", " : "",
		    have_events ? events : "");
	else {
		row(key, "no");
		todo(todo_text);
	}
}

static void kernel_section(void)
{
	char where[256] = "", v[32];
	uint64_t caps = cap_eff();
	int bpfcap = (caps >> 39) & 1 || (caps >> 21) & 1;

	printf("\nKernel tracing\n");
	if (tracefs_mounted(where, sizeof(where))) {
		row("tracefs", "mounted at %s", where);
	} else {
		row("tracefs", "not mounted");
		todo("mount -t tracefs nodev /sys/kernel/tracing");
	}
	probes_row("kprobes", "kprobe", where,
		   "a kernel built with CONFIG_KPROBES and "
		   "CONFIG_KPROBE_EVENTS");
	probes_row("uprobes", "uprobe", where,
		   "a kernel built with CONFIG_UPROBE_EVENTS");
	row("BTF", "%s",
	    exists("/sys/kernel/btf/vmlinux") ? "yes (/sys/kernel/btf/vmlinux)"
					      : "no");
	if (!exists("/sys/kernel/btf/vmlinux"))
		todo("a kernel built with CONFIG_DEBUG_INFO_BTF");
	if (!read_line("/proc/sys/kernel/unprivileged_bpf_disabled", v,
		       sizeof(v)))
		row("eBPF", "%s (unprivileged_bpf_disabled=%s)",
		    bpfcap || !geteuid() ? "usable"
		    : atoi(v)		 ? "root only"
					 : "usable",
		    v);
	else
		row("eBPF", "unknown (no bpf sysctl)");
	if (!bpfcap && geteuid() && atoi(v))
		todo("eBPF needs root or CAP_BPF");
}

/* What the sample backend can use here (sample_probe.h). */
static void sampling_section(void)
{
	struct sprobe p;

	sprobe_run(&p);
	printf("\nSampling (sample backend)\n");
	row("cycles event", "%s",
	    p.cycles ? "yes (hardware PMU)"
		     : "no (no hardware PMU: a VM that does not pass one "
		       "through)");
	row("cpu-clock event", "%s",
	    p.cpu_clock ? "yes (software, hrtimer)" : "no");
	if (!p.cycles && !p.cpu_clock)
		todo("run as root, give ptscope CAP_PERFMON, or set "
		     "/proc/sys/kernel/perf_event_paranoid to 2 or lower");
	row("samples with", "%s",
	    p.cycles	  ? "cycles"
	    : p.cpu_clock ? "cpu-clock"
			  : "nothing");
	row("frame-pointer chains", "%s",
	    p.cycles || p.cpu_clock ? "yes (PERF_SAMPLE_CALLCHAIN)" : "no");
	row("DWARF unwinding", "%s (libdw 0.%d; user regs + stack copies)",
	    p.stack_user ? "yes" : "no", _ELFUTILS_VERSION);
	row("LBR call stacks", "%s",
	    p.lbr      ? "yes"
	    : p.cycles ? "no (this CPU has no LBR call-stack mode)"
		       : "no (needs a hardware PMU with LBR: Intel "
			 "Haswell or later)");
}

static void backends_section(void)
{
	char qemu[PATH_MAX], ver[256] = "";
	const struct rec_backend *be;
	const char *why;
	int r;

	printf("\nBackends\n");
	if (!rec_find_qemu(qemu, sizeof(qemu))) {
		char cmd[PATH_MAX + 32];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", qemu);
		p = popen(cmd, "r");
		if (p) {
			if (!fgets(ver, sizeof(ver), p))
				ver[0] = 0;
			pclose(p);
		}
		ver[strcspn(ver, "\n")] = 0;
		row("qemu-x86_64", "%s%s%s", qemu, ver[0] ? " — " : "", ver);
		if (!rec_backend_qemu.run)
			todo("this ptscope build has no qemu backend");
	} else {
		row("qemu-x86_64", "not found");
		todo("apt-get install qemu-user (traces `run` thousands of "
		     "times faster than single-stepping)");
	}
	row("single-step (step)", "yes (ptrace; runs anywhere, slowly)");
	for (int attach = 0; attach < 2; attach++) {
		r = rec_backend_select("auto", attach, &be, &why);
		if (r)
			row(attach ? "auto for attach" : "auto for run",
			    "none: %s", ps_err_message(r));
		else
			/* why: "backend: NAME (reason)" */
			row(attach ? "auto for attach" : "auto for run", "%s",
			    why && !strncmp(why, "backend: ", 9) ? why + 9
								 : be->name);
	}
}

int cmd_info(int argc, char **argv)
{
	struct utsname u;
	int have_pt;

	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr,
			"ptscope info: unexpected argument '%s'; it takes "
			"none\n",
			argv[1]);
		return 2;
	}
	if (!uname(&u))
		printf("ptscope info: %s %s %s\n\n", u.sysname, u.release,
		       u.machine);
	cpu_section();
	have_pt = pt_section();
	perf_section(have_pt);
	bp_section();
	kernel_section();
	sampling_section();
	backends_section();
	return 0;
}
