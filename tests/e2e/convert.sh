#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A new user's session with `ptscope convert` and `ptscope dump`: a Chrome
# trace written the way Chrome and ftrace-to-JSON tools write them goes to
# every format and back, and each copy means the same as the original
# (dump --slices); bad input fails with a clear message and leaves nothing.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
if [ ! -x "$P" ]; then
	skip convert "no ptscope binary at $P (run make first)"
	exit 0
fi

cat >"$T/chrome.json" <<'EOF'
{"traceEvents": [
  {"name": "process_name", "ph": "M", "pid": 4242, "tid": 0, "args": {"name": "renderer"}},
  {"name": "thread_name", "ph": "M", "pid": 4242, "tid": 4243, "args": {"name": "CrRendererMain"}},
  {"name": "thread_name", "ph": "M", "pid": 4242, "tid": 4250, "args": {"name": "Compositor"}},
  {"name": "process_sort_index", "ph": "M", "pid": 4242, "tid": 0, "args": {"sort_index": -1}},
  {"name": "RunTask", "cat": "toplevel", "ph": "X", "pid": 4242, "tid": 4243, "ts": 1000123.456, "dur": 850.25,
   "args": {"src_file": "../../base/task/sequence_manager.cc", "src_func": "RunTask", "task": {"posted_from": {"line": 412, "file": "content/renderer.cc"}}}},
  {"name": "v8.run", "cat": "v8", "ph": "X", "pid": 4242, "tid": 4243, "ts": 1000130.001, "dur": 600,
   "args": {"fileName": "https://example.com/app.js", "data": {"frames": ["0x7f01", "0x7f02"]}}},
  {"name": "FunctionCall", "cat": "devtools.timeline", "ph": "B", "pid": 4242, "tid": 4243, "ts": 1000140, "args": {"data": {"functionName": "onClick"}}},
  {"name": "GCEvent", "cat": "v8,devtools.timeline", "ph": "X", "pid": 4242, "tid": 4243, "ts": 1000200.5, "dur": 12.5, "args": {"usedHeapSizeBefore": 1048576, "usedHeapSizeAfter": 524288}},
  {"name": "FunctionCall", "cat": "devtools.timeline", "ph": "E", "pid": 4242, "tid": 4243, "ts": 1000700},
  {"name": "TracingStartedInBrowser", "cat": "disabled-by-default-devtools.timeline", "ph": "I", "s": "t", "pid": 4242, "tid": 4243, "ts": 1000100},
  {"name": "NavigationStart", "cat": "blink.user_timing", "ph": "i", "s": "p", "pid": 4242, "tid": 4243, "ts": 1000101},
  {"name": "ClockSync", "cat": "__metadata", "ph": "i", "s": "g", "pid": 4242, "tid": 4243, "ts": 1000102},
  {"name": "JSHeap", "cat": "memory", "ph": "C", "pid": 4242, "tid": 4243, "ts": 1000300, "args": {"used": 524288, "total": 2097152.5}},
  {"name": "JSHeap", "cat": "memory", "ph": "C", "pid": 4242, "tid": 4243, "ts": 1000900, "args": {"used": 600000, "total": 2097152.5}},
  {"name": "PostTask", "cat": "toplevel.flow", "ph": "s", "id": "0x2a", "pid": 4242, "tid": 4243, "ts": 1000150},
  {"name": "PostTask", "cat": "toplevel.flow", "ph": "f", "bp": "e", "id": "0x2a", "pid": 4242, "tid": 4250, "ts": 1001000.75},
  {"name": "Compositor::Draw", "cat": "cc", "ph": "X", "pid": 4242, "tid": 4250, "ts": 1001000, "dur": 33.333,
   "args": {"frame": 17, "ok": true, "note": "quote \" backslash \\ tab \t unicode \u263a"}},
  {"name": "Paint", "cat": "cc", "ph": "B", "pid": 4242, "tid": 4250, "ts": 1001001},
  {"name": "Raster", "cat": "cc", "ph": "B", "pid": 4242, "tid": 4250, "ts": 1001002},
  {"ph": "E", "pid": 4242, "tid": 4250, "ts": 1001010, "args": {"tiles": 4}},
  {"ph": "E", "pid": 4242, "tid": 4250, "ts": 1001020},
  {"name": "async-load", "cat": "loading", "ph": "b", "id": "0x1", "pid": 4242, "tid": 4243, "ts": 1000105},
  {"name": "sched_switch", "cat": "ftrace", "ph": "X", "pid": "kernel", "tid": "swapper/0", "ts": 1000050, "dur": 5}
],
"displayTimeUnit": "ms",
"systemTraceEvents": "",
"metadata": {"clock-domain": "LINUX_CLOCK_MONOTONIC", "cpu-brand": "AMD EPYC", "num-cpus": 2}
}
EOF

if "$P" dump --slices "$T/chrome.json" >"$T/in.slices" 2>"$T/err"; then
	pass dump-input
else
	fail dump-input "$(cat "$T/err")"
fi
# What the slices form shows: nesting from timestamps, matched B/E with
# the E's args, names for numeric and string pids.
if grep -q '^slice pid=4242 tid=4243 ts=1000200500 depth=3 dur=12500 name="GCEvent"' "$T/in.slices" &&
	grep -q '^slice pid=4242 tid=4250 ts=1001002000 depth=2 dur=8000 name="Raster" cat="cc" args={tiles=4}' "$T/in.slices" &&
	grep -q '^thread pid=4242 tid=4243 "CrRendererMain"' "$T/in.slices" &&
	grep -q '"swapper/0"' "$T/in.slices" &&
	grep -q '^meta "num-cpus" "2"' "$T/in.slices"; then
	pass slices-content
else
	fail slices-content "unexpected dump --slices output: $(head -c 600 "$T/in.slices")"
fi

for ext in fxt pftrace json json.gz fxt.gz; do
	out="$T/out.$ext"
	if ! "$P" convert "$T/chrome.json" -o "$out" 2>"$T/err"; then
		fail "convert-$ext" "$(cat "$T/err")"
		continue
	fi
	if ! grep -q "events in" "$T/err"; then
		fail "convert-$ext" "no summary line: $(cat "$T/err")"
		continue
	fi
	"$P" dump --slices "$out" >"$T/out.$ext.slices" 2>"$T/err" || {
		fail "convert-$ext" "dump failed: $(cat "$T/err")"
		continue
	}
	if diff -u "$T/in.slices" "$T/out.$ext.slices" >"$T/diff.$ext"; then
		pass "convert-$ext"
	else
		fail "convert-$ext" "meaning changed: $(head -20 "$T/diff.$ext" | tr '\n' '|')"
	fi
done

# gzip really compresses and is detected on reading.
if [ -f "$T/out.json.gz" ] && gzip -t "$T/out.json.gz" 2>/dev/null; then
	pass gzip-output
else
	fail gzip-output "out.json.gz is not gzip data"
fi

# A second conversion of our own JSON is byte-for-byte stable.
if "$P" convert -q "$T/out.json" -o "$T/again.json" &&
	cmp -s "$T/out.json" "$T/again.json"; then
	pass json-stable
else
	fail json-stable "JSON → JSON changed the bytes"
fi

# Text output through convert equals dump's event form.
if "$P" convert -q "$T/chrome.json" -o "$T/out.txt" &&
	"$P" dump "$T/chrome.json" | cmp -s - "$T/out.txt"; then
	pass text-output
else
	fail text-output "convert -o .txt differs from dump"
fi

# Chrome's streaming form: a bare array cut off before its ']'.
printf '[{"name":"a","ph":"X","pid":1,"tid":1,"ts":1,"dur":2},\n{"name":"b","ph":"X","pid":1,"tid":1,"ts":1.5,"dur":1},\n' >"$T/cut.json"
if "$P" dump --slices "$T/cut.json" >"$T/cut.slices" 2>"$T/err" &&
	grep -q 'ts=1500 depth=1 dur=1000 name="b"' "$T/cut.slices"; then
	pass unterminated-array
else
	fail unterminated-array "$(cat "$T/err" "$T/cut.slices")"
fi

# Bad JSON: a message with the byte offset, exit != 0, nothing written.
mkdir -p "$T/bad"
printf '{"traceEvents":[{"ph":"X","ts":1,}]}' >"$T/bad/bad.json"
"$P" convert "$T/bad/bad.json" -o "$T/bad/out.fxt" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'bad.json: invalid JSON at byte 33' "$T/err" &&
	[ ! -e "$T/bad/out.fxt" ] && [ "$(ls -A "$T/bad")" = bad.json ]; then
	pass bad-json
else
	fail bad-json "rc=$rc, stderr: $(cat "$T/err"), dir: $(ls -A "$T/bad")"
fi

# Truncated inside an event: an error, not a silently shorter trace.
head -c 300 "$T/chrome.json" >"$T/bad/trunc.json"
if ! "$P" convert "$T/bad/trunc.json" -o "$T/bad/t.pftrace" 2>"$T/err" &&
	grep -q 'truncated' "$T/err" && [ ! -e "$T/bad/t.pftrace" ]; then
	pass truncated-json
else
	fail truncated-json "$(cat "$T/err")"
fi

# Corrupt gzip.
head -c 200 "$T/out.json.gz" >"$T/bad/c.json.gz"
if ! "$P" dump "$T/bad/c.json.gz" >/dev/null 2>"$T/err" && grep -q 'gzip' "$T/err"; then
	pass corrupt-gzip
else
	fail corrupt-gzip "$(cat "$T/err")"
fi

"$P" convert "$T/missing.json" -o "$T/x.fxt" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "cannot open $T/missing.json: No such file" "$T/err" &&
	[ ! -e "$T/x.fxt" ]; then
	pass missing-input
else
	fail missing-input "rc=$rc: $(cat "$T/err")"
fi

"$P" convert "$T/chrome.json" -o "$T/no/such/dir/x.fxt" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "cannot create $T/no/such/dir/x.fxt" "$T/err"; then
	pass unwritable-output
else
	fail unwritable-output "rc=$rc: $(cat "$T/err")"
fi

"$P" convert "$T/chrome.json" -o "$T/x.out" --format xml 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "unknown format 'xml'" "$T/err"; then
	pass unknown-format
else
	fail unknown-format "rc=$rc: $(cat "$T/err")"
fi

# --format overrides the extension.
if "$P" convert -q "$T/chrome.json" -o "$T/forced.out" --format json &&
	head -c 1 "$T/forced.out" | grep -q '{'; then
	pass format-option
else
	fail format-option "--format json did not write JSON"
fi

expect help "$P" convert --help
