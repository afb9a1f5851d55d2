#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ptscope info` on this machine: exit 0, every section, and facts that
# agree with the machine (PMU present or not, paranoid level, qemu, the
# backend `auto` picks, which `ptscope run` then uses).
. "$(dirname "$0")/lib.sh"
out=$T/info.out

if "$PTSCOPE" info >"$out" 2>"$T/info.err"; then
	pass info_exits_0
else
	fail info_exits_0 "exit $?: $(tail -n1 "$T/info.err")"
fi
missing=""
for s in CPU "Intel PT" "perf and ptrace" Triggers "Kernel tracing" Backends \
	"intel_pt PMU" perf_event_paranoid perf_event_mlock_kb privileges \
	"hardware breakpoints" tracefs BTF eBPF kprobes uprobes qemu-x86_64 \
	"single-step" "auto for run" "auto for attach"; do
	grep -q "$s" "$out" || missing="$missing '$s'"
done
if [ -z "$missing" ]; then pass info_sections; else fail info_sections "missing:$missing"; fi

if [ -e /sys/bus/event_source/devices/intel_pt ]; then
	type=$(cat /sys/bus/event_source/devices/intel_pt/type)
	if grep -q "intel_pt PMU *present (type $type)" "$out" && grep -q "mtc_periods=" "$out"; then
		pass info_pmu_matches
	else
		fail info_pmu_matches "$(grep 'intel_pt PMU' "$out")"
	fi
else
	# absent, with the reason and what to do
	if grep -q "intel_pt PMU *absent" "$out" &&
		grep -q -- "-> intel_pt PMU not found: .*--backend=emulated" "$out"; then
		pass info_pmu_matches
	else
		fail info_pmu_matches "$(grep -A1 'intel_pt PMU' "$out" | tr '\n' '|')"
	fi
fi

par=$(cat /proc/sys/kernel/perf_event_paranoid)
if grep -qE "perf_event_paranoid +$par\$" "$out"; then pass info_paranoid; else
	fail info_paranoid "$(grep perf_event_paranoid "$out")"; fi

if command -v qemu-x86_64 >/dev/null; then
	q=$(command -v qemu-x86_64)
	if grep -q "qemu-x86_64 *$q — qemu-x86_64 version" "$out"; then pass info_qemu; else
		fail info_qemu "$(grep qemu-x86_64 "$out")"; fi
else
	if grep -q "qemu-x86_64 *not found" "$out" && grep -q "apt-get install qemu-user" "$out"; then
		pass info_qemu
	else
		fail info_qemu "$(grep -A1 qemu-x86_64 "$out" | tr '\n' '|')"
	fi
fi

# the backend info names for run is the one run then uses
want=$(sed -n 's/^ *auto for run *\([a-z-]*\).*/\1/p' "$out")
"$PTSCOPE" run -o "$T/auto.fxt" -- /bin/true >"$T/auto.out" 2>&1
got=$(sed -n 's/^ptscope: backend: \([a-z-]*\).*/\1/p' "$T/auto.out" | head -n1)
if [ -n "$want" ] && [ "$want" = "$got" ]; then pass info_auto_matches_run; else
	fail info_auto_matches_run "info says '$want', run used '$got'"; fi

if "$PTSCOPE" info --bogus >/dev/null 2>"$T/bogus.err"; then
	fail info_rejects_arguments "exit 0"
elif grep -q "it takes none" "$T/bogus.err"; then pass info_rejects_arguments; else
	fail info_rejects_arguments "$(cat "$T/bogus.err")"
fi
