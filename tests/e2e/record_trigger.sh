#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Triggers with the emulated backend: -t . (ptscope_trigger), -t SYMBOL,
# -t FILE:LINE, and --multi-snapshot; each hit is an instant on the thread
# that hit it, inside the span of the function that was hit.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# mark_inside TRACE FUNCTION: the last trigger instant lies within a span
# of FUNCTION on the same thread; prints the instant's line on success.
# Span times come from the decoder, which knows the time only from timing
# packets (the emulator writes one per 8 ns of virtual time) and counts
# 1 ns per branch in between; the mark has the exact virtual time of the
# hit.  So a span's end is allowed 8 ns of slack.
mark_inside() {
	"$PTSCOPE" dump --slices "$1" | awk -v fn="$2" '
	function field(line, key,  v) {
		v = line; if (!sub(".*" key "=", "", v)) return ""
		sub(/[ }].*/, "", v); return v
	}
	$1 == "slice" && index($0, "name=\"" fn "\"") {
		n++; tid[n] = field($0, "tid"); b[n] = field($0, "ts") + 0
		e[n] = b[n] + field($0, "dur")
	}
	$1 == "instant" && /name="trigger"/ { mark = $0 }
	END {
		if (mark == "") { print "no trigger instant"; exit 1 }
		t = field(mark, "ts") + 0; mt = field(mark, "tid")
		for (i = 1; i <= n; i++)
			if (tid[i] == mt && b[i] <= t && t <= e[i] + 8) { print mark; exit 0 }
		print "trigger at " t " is outside every " fn " span: " mark; exit 1
	}'
}

# -t .: the run stops tracing at the first slow request, the program
# finishes untraced with its normal output.
out=$T/dot
if "$PTSCOPE" run -b "${BACKEND:-step}" -q -t . -o "$out.fxt" -- "$S/demo" 100 >"$out.stdout" 2>"$out.err"; then
	pass "trigger_dot_runs"
else
	fail "trigger_dot_runs" "exit $?: $(tail -n1 "$out.err")"
fi
if grep -qx "demo: 100 requests, 4 slow" "$out.stdout"; then
	pass "trigger_target_finishes"
else
	fail "trigger_target_finishes" "output was: $(cat "$out.stdout")"
fi
if m=$(mark_inside "$out.fxt" ptscope_trigger); then
	case $m in
	*'reason="slow request"'*'symbol="ptscope_trigger"'* | *'symbol="ptscope_trigger"'*'reason="slow request"'*)
		pass "trigger_mark_at_call" ;;
	*) fail "trigger_mark_at_call" "mark lacks reason/symbol: $m" ;;
	esac
else
	fail "trigger_mark_at_call" "$m"
fi
# The snapshot ends at the hit: the slow path that led to it is in it.
if "$PTSCOPE" dump --slices "$out.fxt" | grep -q 'name="slow_scan"'; then
	pass "trigger_shows_slow_path"
else
	fail "trigger_shows_slow_path" "no slow_scan span before the trigger"
fi

# -t SYMBOL on a function of the program.
out=$T/sym
"$PTSCOPE" run -b "${BACKEND:-step}" -q -t slow_scan -o "$out.fxt" -- "$S/demo" 100 >"$out.stdout" 2>"$out.err"
if m=$(mark_inside "$out.fxt" slow_scan); then
	pass "trigger_symbol"
else
	fail "trigger_symbol" "$m"
fi

# -t FILE:LINE: the line that calls slow_scan().
line=$(grep -n 'table\[slot\] = slow_scan(h);' "$PTSCOPE_TOP/samples/demo.c" | cut -d: -f1)
out=$T/line
"$PTSCOPE" run -b "${BACKEND:-step}" -q -t "demo.c:$line" -o "$out.fxt" -- "$S/demo" 100 >"$out.stdout" 2>"$out.err"
if m=$(mark_inside "$out.fxt" store); then
	pass "trigger_file_line"
else
	fail "trigger_file_line" "$m $(tail -n1 "$out.err")"
fi

# --multi-snapshot=2: one trace per hit, numbered, then tracing stops.
out=$T/multi
"$PTSCOPE" run -b "${BACKEND:-step}" -q -t . --multi-snapshot=2 -o "$out.fxt" -- "$S/demo" 100 \
	>"$out.stdout" 2>"$out.err"
if [ -s "$T/multi.1.fxt" ] && [ -s "$T/multi.2.fxt" ] && [ ! -e "$T/multi.3.fxt" ] &&
	[ ! -e "$T/multi.fxt" ]; then
	pass "multi_snapshot_files"
else
	fail "multi_snapshot_files" "$(ls "$T" | grep multi | tr '\n' ' ')"
fi
t1=$(mark_inside "$T/multi.1.fxt" ptscope_trigger | sed 's/.*ts=\([0-9]*\).*/\1/')
t2=$(mark_inside "$T/multi.2.fxt" ptscope_trigger | sed 's/.*ts=\([0-9]*\).*/\1/')
if [ -n "$t1" ] && [ -n "$t2" ] && [ "$t1" -lt "$t2" ]; then
	pass "multi_snapshot_marks"
else
	fail "multi_snapshot_marks" "marks '$t1' '$t2'"
fi
