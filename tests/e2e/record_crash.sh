#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A crashing target: the snapshot is taken before it dies, the signal is
# the last event of the faulting thread, the target dies of SIGSEGV as it
# would without ptscope, and ptscope's status says so (128 + 11).
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
out=$T/crash

rm -f "$out.fxt"
(ulimit -c 0; exec "$PTSCOPE" run -b "${BACKEND:-step}" -o "$out.fxt" -- "$S/crash") >"$out.stdout" 2>"$out.err"
rc=$?
if [ $rc -eq 139 ]; then pass "crash_status_139"; else fail "crash_status_139" "exit status $rc"; fi
if grep -qE '^ptscope: target killed by SIGSEGV at 0x[0-9a-f]+ \(address 0x0\)$' "$out.err"; then
	pass "crash_reported"
else
	fail "crash_reported" "stderr: $(tr '\n' '|' <"$out.err")"
fi
if grep -qx "crash: sum is 45" "$out.stdout"; then
	pass "crash_output_kept"
else
	fail "crash_output_kept" "stdout: $(cat "$out.stdout")"
fi
if [ -s "$out.fxt" ]; then pass "crash_trace_written"; else fail "crash_trace_written" "no $out.fxt"; fi

# The SIGSEGV instant is on the crashing thread, after all its spans
# began, with the fault address; the chain of calls to the fault is there.
"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>&1
msg=$(awk '
	function field(line, key,  v) {
		v = line; if (!sub(".*" key "=", "", v)) return ""
		sub(/[ }].*/, "", v); return v
	}
	$1 == "slice" { if (field($0, "ts") + 0 > last) last = field($0, "ts") + 0 }
	$1 == "slice" && /name="update"/ { upd = 1 }
	$1 == "slice" && /name="find"/ { fnd = 1 }
	$1 == "instant" && /name="SIGSEGV"/ { sig = $0 }
	END {
		if (sig == "") { print "no SIGSEGV instant"; exit }
		if (sig !~ /fault address 0x0/) { print "no fault address: " sig; exit }
		if (field(sig, "ts") + 0 < last) { print "SIGSEGV is not at the end of the timeline"; exit }
		if (!upd || !fnd) { print "update/find spans missing"; exit }
		print "ok"
	}' "$out.slices")
if [ "$msg" = ok ]; then pass "crash_marked_at_end"; else fail "crash_marked_at_end" "$msg"; fi

# The same target untraced dies the same way (the status is the signal's).
{ (ulimit -c 0; exec "$S/crash") >/dev/null 2>&1; } 2>/dev/null
rc0=$?
if [ $rc0 -eq $rc ]; then pass "crash_same_death"; else fail "crash_same_death" "untraced $rc0, traced $rc"; fi
