#!/usr/bin/env bash
# Kernel events (eBPF sidecar) merged into the function timeline, on the
# emulated (step) backend, and latency triggers NAME>DURATION.
# samples/kevents makes known calls (nanosleep, openat, write, a read a
# second thread fills, a page fault, a signal): the trace must hold those
# spans and instants inside the right functions, in order, nothing lost.
# samples/slowcall makes one slow call in a thousand: -t 'handle>500us'
# must fire on it alone and the trace must hold all of it.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
CHECK="python3 $(dirname "$0")/kevents_check.py"

if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip kevents "kernel events need root and BTF (/sys/kernel/btf/vmlinux)"
	exit 0
fi

# check NAME DUMPFILE MODE: the trace checker's verdict as one line.
check() {
	local why
	if why=$($CHECK "$3" "$2" 2>&1); then pass "$1"; else fail "$1" "$why"; fi
}

for fmt in fxt pftrace; do
	out=$T/kev.$fmt
	if "$PTSCOPE" run -q -b "${BACKEND:-step}" -o "$out" -- "$S/kevents" >"$T/kev.out" 2>&1; then
		"$PTSCOPE" dump --slices "$out" >"$T/kev.$fmt.txt"
		check "kevents_merged_$fmt" "$T/kev.$fmt.txt" kevents
	else
		fail "kevents_merged_$fmt" "$(cat "$T/kev.out")"
	fi
done

# The off-CPU track is the thread's, not a thread: in .pftrace a track
# named "COMM scheduler" under the thread (read back as 0x40000000|tid),
# in .fxt no thread beyond the program's (docs/events.md).
if grep -q '^thread .*"kevents scheduler"' "$T/kev.pftrace.txt"; then
	pass kevents_sched_track_named
else
	fail kevents_sched_track_named "no track named 'kevents scheduler' in the .pftrace"
fi
if grep -qE '^thread pid=[0-9]+ tid=[0-9]{9,}' "$T/kev.fxt.txt"; then
	fail kevents_no_invented_thread "$(grep -E '^thread pid=[0-9]+ tid=[0-9]{9,}' "$T/kev.fxt.txt" | head -1)"
else
	pass kevents_no_invented_thread
fi

# Record, then decode: the recording carries the kernel events.
if "$PTSCOPE" record -q -b "${BACKEND:-step}" -o "$T/kev.ptsc" -- "$S/kevents" >/dev/null 2>&1 &&
	"$PTSCOPE" decode "$T/kev.ptsc" -o "$T/kevd.fxt" >/dev/null 2>&1; then
	"$PTSCOPE" dump --slices "$T/kevd.fxt" >"$T/kevd.txt"
	check kevents_record_decode "$T/kevd.txt" kevents
else
	fail kevents_record_decode "record or decode failed"
fi

# --no-events: no kernel events at all.
"$PTSCOPE" run -q -b "${BACKEND:-step}" --no-events -o "$T/none.fxt" -- "$S/kevents" >/dev/null 2>&1
if "$PTSCOPE" dump "$T/none.fxt" | grep -q 'cat="syscall"'; then
	fail kevents_off "syscall spans with --no-events"
else
	pass kevents_off
fi

# --events=syscalls: syscalls only, no scheduler track.
"$PTSCOPE" run -q -b "${BACKEND:-step}" --events=syscalls -o "$T/sys.fxt" -- "$S/kevents" >/dev/null 2>&1
"$PTSCOPE" dump "$T/sys.fxt" >"$T/sys.txt"
if grep -q 'cat="syscall"' "$T/sys.txt" && ! grep -q 'cat="sched"' "$T/sys.txt"; then
	pass kevents_select
else
	fail kevents_select "--events=syscalls did not give syscalls alone"
fi

# A custom tracepoint, its fields as arguments, inside the function.
"$PTSCOPE" run -q -b "${BACKEND:-step}" --events=syscalls \
	--event tracepoint:syscalls:sys_enter_openat -o "$T/tp.fxt" -- "$S/kevents" >/dev/null 2>&1
"$PTSCOPE" dump --slices "$T/tp.fxt" >"$T/tp.txt"
if $CHECK inside "$T/tp.txt" syscalls:sys_enter_openat do_open >/dev/null &&
	grep 'name="syscalls:sys_enter_openat"' "$T/tp.txt" | grep -q 'flags=1'; then
	pass kevents_custom_tracepoint
else
	fail kevents_custom_tracepoint "no sys_enter_openat instant with its fields inside do_open"
fi

# A kernel function: kprobes, else fentry; this kernel may have neither.
if "$PTSCOPE" run -q -b "${BACKEND:-step}" --events=syscalls --event kprobe:do_sys_openat2 \
	-o "$T/kf.fxt" -- "$S/kevents" >"$T/kf.out" 2>&1; then
	"$PTSCOPE" dump --slices "$T/kf.fxt" >"$T/kf.txt"
	if $CHECK inside "$T/kf.txt" do_sys_openat2 do_open >/dev/null; then
		pass kevents_kernel_function
	else
		fail kevents_kernel_function "no do_sys_openat2 span inside do_open"
	fi
elif grep -q "no kprobes and refuses BPF trampolines" "$T/kf.out"; then
	skip kevents_kernel_function "this kernel has no kprobes and refuses fentry: $(tail -1 "$T/kf.out")"
else
	fail kevents_kernel_function "$(cat "$T/kf.out")"
fi

# Bad input: one sentence, non-zero exit, no output.
if ! "$PTSCOPE" run -b "${BACKEND:-step}" --events=bogus -o "$T/bad.fxt" -- "$S/kevents" 2>"$T/bad.err" &&
	grep -q "bad --events list" "$T/bad.err" && [ ! -e "$T/bad.fxt" ]; then
	pass kevents_bad_list
else
	fail kevents_bad_list "$(cat "$T/bad.err")"
fi
if ! "$PTSCOPE" run -b "${BACKEND:-step}" -t 'handle>5parsecs' -o "$T/bad2.fxt" -- "$S/slowcall" 2>"$T/bad2.err" &&
	grep -q "bad latency trigger" "$T/bad2.err"; then
	pass latency_bad_duration
else
	fail latency_bad_duration "$(cat "$T/bad2.err")"
fi

# The latency trigger: one slow call in a thousand.
if "$PTSCOPE" run -q -b "${BACKEND:-step}" -t 'handle>500us' -o "$T/lat.fxt" -- "$S/slowcall" >/dev/null 2>&1; then
	"$PTSCOPE" dump --slices "$T/lat.fxt" >"$T/lat.txt"
	check latency_trigger "$T/lat.txt" latency
else
	fail latency_trigger "run failed"
fi
# With --multi-snapshot: one trace per slow call, so exactly one.
rm -f "$T"/latm*
"$PTSCOPE" run -q -b "${BACKEND:-step}" -m -t 'handle>500us' -o "$T/latm.fxt" -- "$S/slowcall" >/dev/null 2>&1
n=$(ls "$T"/latm.*.fxt 2>/dev/null | wc -l)
if [ "$n" = 1 ] && [ -e "$T/latm.1.fxt" ]; then
	"$PTSCOPE" dump --slices "$T/latm.1.fxt" >"$T/latm.txt"
	check latency_multi_snapshot "$T/latm.txt" latency
else
	fail latency_multi_snapshot "$n traces, expected exactly one"
fi
# A threshold no call reaches: no slow-call mark at all.
"$PTSCOPE" run -q -b "${BACKEND:-step}" -t 'handle>50ms' -o "$T/lat0.fxt" -- "$S/slowcall" >/dev/null 2>&1
if "$PTSCOPE" dump "$T/lat0.fxt" | grep -q 'name="slow call"'; then
	fail latency_threshold "a slow-call mark under a 50 ms threshold"
else
	pass latency_threshold
fi

# attach: a latency trigger on a running process, which goes on after.
"$S/slowcall" 0 >/dev/null &
pid=$!
sleep 0.2
if "$PTSCOPE" attach -q -b step -p $pid -t 'handle>500us' -o "$T/latatt.fxt" >/dev/null 2>"$T/latatt.err" &&
	kill -0 $pid 2>/dev/null; then
	"$PTSCOPE" dump --slices "$T/latatt.fxt" >"$T/latatt.txt"
	check latency_attach "$T/latatt.txt" latency
else
	fail latency_attach "$(cat "$T/latatt.err")"
fi
kill $pid 2>/dev/null
wait $pid 2>/dev/null || true

# Without root: one sentence, and the recording goes on without them.
if command -v setpriv >/dev/null; then
	nb=$(mktemp -d) && chmod 755 "$nb" && chown 65534 "$nb"
	if setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PTSCOPE" run -b "${BACKEND:-step}" -o "$nb/t.fxt" -- "$S/kevents" >/dev/null 2>"$T/nobody.err" &&
		[ "$(grep -c 'kernel events are off: .*needs root' "$T/nobody.err")" = 1 ] &&
		"$PTSCOPE" dump "$nb/t.fxt" | grep -q 'name="do_sleep"'; then
		pass kevents_without_root
	else
		fail kevents_without_root "$(cat "$T/nobody.err")"
	fi
	rm -rf "$nb"
else
	skip kevents_without_root "setpriv (util-linux) is not installed"
fi

# Block I/O the target issues (direct writes reach the disk at once).
"$PTSCOPE" run -q -b "${BACKEND:-step}" --events=block,syscalls -o "$T/dd.fxt" -- \
	dd if=/dev/zero of="$T/ddfile" bs=4k count=2 oflag=direct >/dev/null 2>&1
"$PTSCOPE" dump "$T/dd.fxt" >"$T/dd.txt" 2>/dev/null
# (.fxt: async spans, read back on the thread's block I/O track,
# 0x20000000 | tid, with no thread record: docs/events.md)
if grep -q 'name="block I/O" cat="block".*bytes=4096' "$T/dd.txt" &&
	! grep -q '^thread .*"dd block I/O"' "$T/dd.txt"; then
	pass kevents_block_io
elif [ "$(stat -f -c %T "$T")" = tmpfs ]; then
	skip kevents_block_io "$T is on tmpfs: no block device to write to"
else
	fail kevents_block_io "no 4096-byte block I/O span, or a 'dd block I/O' thread"
fi
