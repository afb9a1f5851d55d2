#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a new user gets wrong: each mistake gives one clear sentence on
# stderr, a non-zero status, and no output file.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# check NAME PATTERN CMD...: CMD fails, stderr matches PATTERN, no $T/o.*
check() {
	local name=$1 pat=$2 rc
	shift 2
	rm -f "$T"/o.*
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	if [ $rc -eq 0 ]; then
		fail "$name" "exit status 0"
	elif ! grep -qE "$pat" "$T/$name.err"; then
		fail "$name" "stderr was: $(tr '\n' '|' <"$T/$name.err")"
	elif ls "$T"/o.* >/dev/null 2>&1; then
		fail "$name" "an output file was left: $(ls "$T"/o.*)"
	else
		pass "$name"
	fi
}

check err_no_such_command "cannot run '/nonexistent/prog': no such file" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -o "$T/o.fxt" -- /nonexistent/prog
check err_command_not_in_path "cannot run 'no-such-cmd-xyz': no such file or command in PATH" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -o "$T/o.fxt" -- no-such-cmd-xyz
check err_not_executable "permission denied" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -o "$T/o.fxt" -- "$PTSCOPE_TOP/samples/demo.c"
check err_unknown_symbol "no function 'handle_requst'.*did you mean.*handle_request" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -t handle_requst -o "$T/o.fxt" -- "$S/demo" 5
check err_missing_output_dir "output directory '$T/nodir' does not exist" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -o "$T/nodir/o.fxt" -- "$S/demo" 5
check err_no_pid "no process with pid 999999999" \
	"$PTSCOPE" attach -p 999999999 -o "$T/o.fxt"
check err_bad_pid "bad pid list 'abc'" \
	"$PTSCOPE" attach -p abc -o "$T/o.fxt"
check err_no_command "no command given" \
	"$PTSCOPE" run -b "${BACKEND:-step}" -o "$T/o.fxt"
check err_unknown_option "unknown or incomplete option '--frobnicate'" \
	"$PTSCOPE" run -b "${BACKEND:-step}" --frobnicate -o "$T/o.fxt" -- "$S/demo"
check err_bad_size "bad size '12Q'" \
	"$PTSCOPE" run -b "${BACKEND:-step}" --snapshot-size 12Q -o "$T/o.fxt" -- "$S/demo"
check err_unknown_backend "unknown backend 'magic'" \
	"$PTSCOPE" run -b "${BACKEND:-step}" --backend magic -o "$T/o.fxt" -- "$S/demo"
if [ -e /sys/bus/event_source/devices/intel_pt ]; then
	skip err_no_intel_pt "this machine has Intel PT"
else
	check err_no_intel_pt "intel_pt PMU not found: .*Intel PT.*; use --backend=emulated" \
		"$PTSCOPE" run -b "${BACKEND:-step}" --backend intel-pt -o "$T/o.fxt" -- "$S/demo" 5
fi

# Permission: an unprivileged user may not trace a process it does not own.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	sleep 30 &
	victim=$!
	check err_permission "not allowed to trace process $victim" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$PTSCOPE" attach -p $victim -o /tmp/o.ptscope-never.fxt
	kill $victim
	wait $victim 2>/dev/null || : # ended on purpose
else
	skip err_permission "needs root, the nobody user and setpriv"
fi
