#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# attach: trace a running program for a while (--duration, then Ctrl-C),
# detach, and the program goes on to finish with the right output.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
N=30000000 # about 3 s untraced

# The expected output, from an untraced run alongside.
"$S/demo" $N >"$T/ref.out" &
ref=$!

attach_case() { # name, how (duration|sigint)
	local name=$1 how=$2 pid aps rc
	"$S/demo" $N >"$T/$name.out" &
	pid=$!
	sleep 0.3
	if [ "$how" = duration ]; then
		"$PTSCOPE" attach -q -p $pid --duration 0.5 -o "$T/$name.fxt" 2>"$T/$name.err"
		rc=$?
	else
		"$PTSCOPE" attach -q -p $pid -o "$T/$name.fxt" 2>"$T/$name.err" &
		aps=$!
		sleep 0.8
		kill -INT $aps
		wait $aps
		rc=$?
	fi
	[ $rc -eq 0 ] || { fail "attach_$name" "ptscope exit $rc: $(tail -n1 "$T/$name.err")"; kill $pid; return; }
	# Detached and untouched: it is still running, no longer traced.
	if kill -0 $pid 2>/dev/null && grep -q '^TracerPid:[[:space:]]*0$' /proc/$pid/status; then
		pass "attach_${name}_detached"
	else
		fail "attach_${name}_detached" "target gone or still traced"
	fi
	wait $pid
	rc=$?
	wait $ref 2>/dev/null
	if [ $rc -eq 0 ] && cmp -s "$T/ref.out" "$T/$name.out"; then
		pass "attach_${name}_target_correct"
	else
		fail "attach_${name}_target_correct" "exit $rc, output '$(cat "$T/$name.out")' vs '$(cat "$T/ref.out")'"
	fi
	if "$PTSCOPE" dump --slices "$T/$name.fxt" 2>&1 | grep -q 'name="handle_request"'; then
		pass "attach_${name}_trace"
	else
		fail "attach_${name}_trace" "no handle_request span in the trace"
	fi
}

attach_case duration duration
attach_case sigint sigint

# A pid that does not exist: one clear sentence, no output file.
"$PTSCOPE" attach -p 999999999 -o "$T/none.fxt" 2>"$T/none.err"
rc=$?
if [ $rc -ne 0 ] && grep -q "no process with pid 999999999" "$T/none.err" && [ ! -e "$T/none.fxt" ]; then
	pass "attach_missing_pid"
else
	fail "attach_missing_pid" "exit $rc: $(cat "$T/none.err")"
fi
