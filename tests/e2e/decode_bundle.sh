#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ptscope decode BUNDLE.json`: LLDB's trace bundles (what `trace save`
# writes) as a new user hands them over.  The real recordings of
# shared/testdata/real-pt come with their bundle descriptions; each must
# give the trace the same streams spelled out with --pt/--elf give, byte
# for byte, and the instruction counts of a plain libipt loop (the data's
# README).  Bundles written here cover the rest of LLDB's schema: a kernel
# trace, a module that is a memory dump, numbers as strings, a build that
# is not the one the bundle names, and descriptions that must be refused
# with one sentence and no output.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
D=${PTSCOPE_TESTDATA:-../shared/testdata}/real-pt

if [ ! -x "$P" ]; then
	fail decode_bundle_program "$P is not built"
	exit 0
fi
if [ ! -d "$D" ]; then
	skip decode_bundle "no test data at $D"
	exit 0
fi
P=$(cd "$(dirname "$P")" && pwd)/$(basename "$P")
D=$(cd "$D" && pwd)
S=$D/lldb-single-thread
M=$D/lldb-multi-file
C=$D/lldb-per-cpu

# same NAME BUNDLE EXPECTED-STATS -- OPTIONS...: the bundle and the options
# give one trace, and --stats starts with EXPECTED-STATS.  Run from $T, so
# the bundle's relative paths must be taken from its own folder.
same() {
	local name=$1 bundle=$2 want=$3
	shift 4
	if ! (cd "$T" && "$P" decode "$bundle" --stats -o "$T/$name.b.fxt") \
		2>"$T/$name.b.err"; then
		fail "$name" "$(cat "$T/$name.b.err")"
	elif ! "$P" decode "$@" -o "$T/$name.o.fxt" 2>"$T/$name.o.err"; then
		fail "$name" "the options' decode failed: $(cat "$T/$name.o.err")"
	elif ! cmp -s "$T/$name.b.fxt" "$T/$name.o.fxt"; then
		fail "$name" "the traces differ: $("$P" dump --slices "$T/$name.b.fxt" | head -3)"
	elif ! grep -q "^decoded .* PT: $want" "$T/$name.b.err"; then
		fail "$name" "$(head -2 "$T/$name.b.err")"
	else
		pass "$name"
	fi
}

same bundle_single_thread "$S/trace.json" "21 instructions" -- \
	--pt "$S/3842849.trace" --elf "$S/a.out" --cpu 6/79/1 \
	--pid 1234 --tid 3842849
same bundle_multi_file "$M/multi-file-no-ld.json" "45 instructions (3 calls, 2 returns)" -- \
	--pt "$M/multi-file.trace" --elf "$M/a.out" \
	--elf "$M/libfoo.so:0x7ffff7bd9000" --elf "$M/libbar.so:0x7ffff79d7000" \
	--cpu 6/79/1 --pid 815455 --tid 815455
# 61,825 + 19,521 instructions on cpus 45 and 51
same bundle_per_cpu "$C/trace.json" "81346 instructions" -- \
	--pt "$C/cores/45.intelpt_trace" --cpu-id 45 \
	--switches "$C/cores/45.perf_context_switch_trace" \
	--pt "$C/cores/51.intelpt_trace" --cpu-id 51 \
	--switches "$C/cores/51.perf_context_switch_trace" \
	--elf "$C/modules/m.out" --cpu 6/85/4 \
	--tsc-conv 1076264588,31,18433473881008870804 --pid 3497234
if grep -q '1 no memory mapped' "$T/bundle_multi_file.b.err"; then
	pass bundle_multi_file_missing_ld_so
else
	fail bundle_multi_file_missing_ld_so "$(cat "$T/bundle_multi_file.b.err")"
fi

# A kernel trace (LLDB: no processes, a kernel image, one stream per CPU
# shown as a thread of its own); numbers as strings, as the schema allows.
# m.out stands in for the kernel image, as in LLDB's own test.
mkdir -p "$T/kernel/cores"
cp "$C"/cores/*.intelpt_trace "$T/kernel/cores/"
cat >"$T/kernel/trace.json" <<EOF
{"type": "intel-pt",
 "cpuInfo": {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 4},
 "cpus": [{"id": 45, "iptTrace": "cores/45.intelpt_trace",
           "contextSwitchTrace": "cores/45.perf_context_switch_trace"},
          {"id": 51, "iptTrace": "cores/51.intelpt_trace",
           "contextSwitchTrace": "cores/51.perf_context_switch_trace"}],
 "tscPerfZeroConversion": {"timeMult": "1076264588", "timeShift": 31,
                           "timeZero": "0xffd0dad47df99594"},
 "kernel": {"file": "$C/modules/m.out", "loadAddress": "0x400000"}}
EOF
if "$P" decode "$T/kernel/trace.json" --stats -o "$T/kernel.fxt" \
	2>"$T/kernel.err"; then
	"$P" dump --slices "$T/kernel.fxt" >"$T/kernel.txt" 2>&1
	if grep -q '^decoded .* PT: 81346 instructions' "$T/kernel.err" &&
		grep -q 'process pid=1 "kernel"' "$T/kernel.txt" &&
		grep -q 'thread pid=1 tid=47 "cpu 45"' "$T/kernel.txt" &&
		grep -q 'tid=53 .*name="foo()"' "$T/kernel.txt"; then
		pass bundle_kernel_a_thread_per_cpu
	else
		fail bundle_kernel_a_thread_per_cpu "$(head -2 "$T/kernel.err") $(head -4 "$T/kernel.txt" | tr '\n' '|')"
	fi
else
	fail bundle_kernel_a_thread_per_cpu "$(cat "$T/kernel.err")"
fi

# A module that is a memory dump rather than a file (not ELF: the code
# bytes only), and one whose build is not the bundle's.
mkdir -p "$T/dump"
# a.out's executable segment: file offset 0, 0x6fc bytes at 0x400000;
# the ELF header is cut off, the 0x100 bytes of it loaded at 0x400100
tail -c +257 "$S/a.out" | head -c $((0x6fc - 0x100)) >"$T/dump/text.bin"
cp "$S/3842849.trace" "$T/dump/"
cat >"$T/dump/trace.json" <<EOF
{"type": "intel-pt",
 "cpuInfo": {"vendor": "GenuineIntel", "family": 6, "model": 79, "stepping": 1},
 "processes": [{"pid": 1234, "triple": "x86_64-*-linux",
   "threads": [{"tid": 3842849, "iptTrace": "3842849.trace"}],
   "modules": [{"systemPath": "[text]", "file": "text.bin",
                "loadAddress": "0x400100"}]}]}
EOF
if "$P" decode "$T/dump/trace.json" --stats -o "$T/dump.fxt" 2>"$T/dump.err" &&
	grep -q '^decoded .* PT: 21 instructions' "$T/dump.err" &&
	grep -q ' 0 no memory mapped' "$T/dump.err"; then
	pass bundle_module_memory_dump
else
	fail bundle_module_memory_dump "$(cat "$T/dump.err")"
fi
sed -e 's/"systemPath": "\[text\]", "file": "text.bin"/"systemPath": "a.out", "uuid": "0123ABCD-0000-0000-0000-000000000000-00000000"/' \
	-e 's/"0x400100"/4194304/' "$T/dump/trace.json" >"$T/dump/other.json"
cp "$S/a.out" "$T/dump/"
if "$P" decode "$T/dump/other.json" --stats -o "$T/other.fxt" 2>"$T/other.err" &&
	grep -q '^decoded .* PT: 21 instructions' "$T/other.err" &&
	grep -q 'warning: .*a.out has build id 6aa9a4e2.*not the 0123abcd' "$T/other.err"; then
	pass bundle_module_other_build_warned
else
	fail bundle_module_other_build_warned "$(cat "$T/other.err")"
fi

# A module that is gone: one warning, and the decode goes on (the code
# that ran there is "no memory mapped"), per-CPU threads and all.
mkdir -p "$T/gone/cores"
cp "$C"/cores/* "$T/gone/cores/"
sed 's|"file": "modules/m.out"|"file": "modules/gone.out"|' "$C/trace.json" >"$T/gone/trace.json"
if "$P" decode "$T/gone/trace.json" --stats -o "$T/gone.fxt" 2>"$T/gone.err" &&
	[ "$(grep -c 'warning: module .*gone.out .*cannot be read' "$T/gone.err")" = 1 ] &&
	grep -q '^decoded .* PT: 0 instructions' "$T/gone.err" &&
	grep -q '[1-9][0-9]* no memory mapped' "$T/gone.err"; then
	pass bundle_module_missing_warned
else
	fail bundle_module_missing_warned "$(cat "$T/gone.err")"
fi

# --- bad bundles: exit != 0, one sentence, no output file ----------------
# bad NAME EXPECTED-WORDS JSON [ARGS...]
bad() {
	local name=$1 words=$2 json=$3
	shift 3
	printf '%s\n' "$json" >"$T/dump/$name.json"
	rm -f "$T/bad.fxt"
	if "$P" decode "$T/dump/$name.json" "$@" -o "$T/bad.fxt" 2>"$T/$name.err"; then
		fail "$name" "exit status 0"
	elif [ -e "$T/bad.fxt" ]; then
		fail "$name" "left an output file"
	elif ! grep -qi -- "$words" "$T/$name.err"; then
		fail "$name" "message lacks '$words': $(cat "$T/$name.err")"
	elif [ "$(grep -c . "$T/$name.err")" -ne 1 ]; then
		fail "$name" "not one line: $(cat "$T/$name.err")"
	else
		pass "$name"
	fi
}
cpu='"cpuInfo": {"vendor": "GenuineIntel", "family": 6, "model": 79, "stepping": 1}'
thread='"threads": [{"tid": 1, "iptTrace": "3842849.trace"}]'
bad bundle_not_json "not valid JSON" '{"type": "intel-pt",'
bad bundle_not_intel_pt '"type" is not "intel-pt"' '{"type": "arm-etm"}'
bad bundle_no_stream "names no PT stream" \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, \"threads\": [{\"tid\": 1}], \"modules\": []}]}"
bad bundle_missing_stream "cannot read the bundle's stream" \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, \"threads\": [{\"tid\": 1, \"iptTrace\": \"nope.trace\"}], \"modules\": []}]}"
bad bundle_bad_address '"processes\[\].modules\[\].loadAddress" is not a number' \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, $thread, \"modules\": [{\"file\": \"a.out\", \"loadAddress\": \"0x4g\"}]}]}"
bad bundle_cpus_need_tsc_conversion "tscPerfZeroConversion\" is missing" \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, \"threads\": [], \"modules\": []}], \"cpus\": [{\"id\": 0, \"iptTrace\": \"3842849.trace\", \"contextSwitchTrace\": \"3842849.trace\"}]}"
bad bundle_kernel_with_processes "either the kernel" \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, $thread, \"modules\": []}], \"kernel\": {\"file\": \"a.out\"}}"
bad bundle_with_pt "leave out --pt" \
	"{\"type\": \"intel-pt\", $cpu, \"processes\": [{\"pid\": 1, $thread, \"modules\": []}]}" \
	--pt "$S/3842849.trace"
