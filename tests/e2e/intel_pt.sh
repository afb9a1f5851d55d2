#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The intel-pt backend from the command line: its options are refused with
# the other backends and checked for bad values; without the PMU, asking
# for it says why in one sentence; with the PMU, a run with a trigger, a
# crash, and each timer resolution give a trace that decodes.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# refuse NAME PATTERN CMD...: CMD fails with PATTERN on stderr, no file.
refuse() {
	local name=$1 pat=$2
	shift 2
	rm -f "$T/o.fxt"
	if "$@" >"$T/$name.out" 2>"$T/$name.err"; then
		fail "$name" "exit status 0"
	elif ! grep -qE -- "$pat" "$T/$name.err"; then
		fail "$name" "stderr was: $(tr '\n' '|' <"$T/$name.err")"
	elif [ -e "$T/o.fxt" ]; then
		fail "$name" "an output file was left"
	else
		pass "$name"
	fi
}

refuse ipt_kernel_needs_intel_pt "--kernel, --filter and --timer-resolution need the intel-pt backend \(this recording uses step\)" \
	"$PTSCOPE" run -b step --kernel -o "$T/o.fxt" -- "$S/demo" 3
refuse ipt_filter_needs_intel_pt "need the intel-pt backend" \
	"$PTSCOPE" run -b step --filter libc -o "$T/o.fxt" -- "$S/demo" 3
refuse ipt_bad_timer "bad --timer-resolution 'fast': use low, normal or high" \
	"$PTSCOPE" run --timer-resolution=fast -o "$T/o.fxt" -- "$S/demo" 3

if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	refuse ipt_absent_says_why "^ptscope run: intel_pt PMU not found: .*; use --backend=emulated$" \
		"$PTSCOPE" run -b intel-pt -t handle_request -o "$T/o.fxt" -- "$S/demo" 3
	refuse ipt_attach_absent_says_why "intel_pt PMU not found" \
		"$PTSCOPE" attach -b intel-pt -p $$ -o "$T/o.fxt"
	for n in ipt_run_trigger ipt_crash ipt_timer_low ipt_timer_high ipt_filter; do
		skip $n "no intel_pt PMU"
	done
	exit 0
fi

# With the hardware.
out=$T/ipt
if "$PTSCOPE" run -b intel-pt -q -t handle_request -o "$out.fxt" -- "$S/demo" 20 >"$out.stdout" 2>"$out.err" &&
	"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>&1 &&
	grep -q 'name="main"' "$out.slices" && grep -q 'instant.*name="trigger"' "$out.slices"; then
	pass ipt_run_trigger
else
	fail ipt_run_trigger "$(tail -n2 "$out.err" | tr '\n' '|')"
fi
(ulimit -c 0; exec "$PTSCOPE" run -b intel-pt -q -o "$out.crash.fxt" -- "$S/crash") >/dev/null 2>"$out.crash.err"
rc=$?
if [ $rc -eq 139 ] && "$PTSCOPE" dump --slices "$out.crash.fxt" | grep -q 'name="SIGSEGV"'; then
	pass ipt_crash
else
	fail ipt_crash "status $rc: $(tail -n1 "$out.crash.err")"
fi
for r in low high; do
	if "$PTSCOPE" run -b intel-pt -q --timer-resolution=$r -o "$out.$r.fxt" -- "$S/demo" 5 >/dev/null 2>"$out.$r.err" &&
		"$PTSCOPE" dump --slices "$out.$r.fxt" | grep -q 'name="main"'; then
		pass ipt_timer_$r
	elif grep -q "which this CPU lacks" "$out.$r.err"; then
		skip ipt_timer_$r "$(cat "$out.$r.err")"
	else
		fail ipt_timer_$r "$(tail -n1 "$out.$r.err")"
	fi
done
if "$PTSCOPE" run -b intel-pt -q --filter demo -o "$out.f.fxt" -- "$S/demo" 5 >/dev/null 2>"$out.f.err" &&
	"$PTSCOPE" dump --slices "$out.f.fxt" | grep -q 'name="handle_request"'; then
	pass ipt_filter
elif grep -q "caps/ip_filtering is 0" "$out.f.err"; then
	skip ipt_filter "$(cat "$out.f.err")"
else
	fail ipt_filter "$(tail -n1 "$out.f.err")"
fi
