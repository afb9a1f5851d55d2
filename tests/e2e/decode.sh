#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ptscope decode` as a new user runs it: the real Intel PT recordings of
# shared/testdata/real-pt into .fxt/.json/.pftrace traces, read back with
# `ptscope dump --slices`, and bad inputs that must fail with one clear
# sentence, a non-zero exit and no output file.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
D=${PTSCOPE_TESTDATA:-../shared/testdata}/real-pt

if [ ! -x "$P" ]; then
	fail decode_program "$P is not built"
	exit 0
fi
if [ ! -d "$D" ]; then
	skip decode_realpt "no test data at $D"
	exit 0
fi

# run NAME ARGS...: decode, keep stderr in $T/NAME.err
run() {
	local name=$1
	shift
	"$P" decode "$@" >"$T/$name.out" 2>"$T/$name.err"
}

# --- good inputs --------------------------------------------------------
S=$D/lldb-single-thread
if run single --pt "$S/3842849.trace" --elf "$S/a.out" --cpu 6/79/1 \
	--pid 1234 --tid 3842849 -o "$T/single.fxt" &&
	[ -s "$T/single.fxt" ]; then
	"$P" dump --slices "$T/single.fxt" >"$T/single.txt" 2>&1
	if grep -q 'tid=3842849 .*depth=0 .*name="main".*inferred=true' \
		"$T/single.txt"; then
		pass decode_single_thread_fxt
	else
		fail decode_single_thread_fxt "no inferred main slice: $(head -3 "$T/single.txt")"
	fi
	if grep -q 'ui.perfetto.dev' "$T/single.err" &&
		grep -q "$T/single.fxt" "$T/single.err"; then
		pass decode_says_where_and_how_to_open
	else
		fail decode_says_where_and_how_to_open "$(cat "$T/single.err")"
	fi
else
	fail decode_single_thread_fxt "$(cat "$T/single.err")"
fi

M=$D/lldb-multi-file
if run multi --pt "$M/multi-file.trace" --elf "$M/a.out" \
	--elf "$M/libfoo.so:0x7ffff7bd9000" --elf "$M/libbar.so:0x7ffff79d7000" \
	--cpu 6/79/1 --stats -o "$T/multi.json"; then
	"$P" dump --slices "$T/multi.json" >"$T/multi.txt" 2>&1
	if grep -q 'depth=1 .*name="foo()" .*module="libfoo.so"' "$T/multi.txt" &&
		grep -q 'depth=2 .*name="bar()" .*module="libbar.so"' "$T/multi.txt" &&
		grep -q 'instant .*name="decode error: no memory mapped at 0x7ffff7df1950"' \
			"$T/multi.txt"; then
		pass decode_multi_file_json
	else
		fail decode_multi_file_json "slices: $(tr '\n' '|' <"$T/multi.txt" | cut -c1-400)"
	fi
	if grep -q '^decoded 4096 bytes of PT: 45 instructions' "$T/multi.err" &&
		grep -q '1 no memory mapped' "$T/multi.err" &&
		grep -q 'instructions/s' "$T/multi.err"; then
		pass decode_stats
	else
		fail decode_stats "$(cat "$T/multi.err")"
	fi
else
	fail decode_multi_file_json "$(cat "$T/multi.err")"
fi

C=$D/lldb-per-cpu
percpu=(--pt "$C/cores/45.intelpt_trace" --cpu-id 45
	--switches "$C/cores/45.perf_context_switch_trace"
	--pt "$C/cores/51.intelpt_trace" --cpu-id 51
	--switches "$C/cores/51.perf_context_switch_trace"
	--elf "$C/modules/m.out" --cpu 6/85/4
	--tsc-conv 1076264588,31,18433473881008870804)
if run percpu "${percpu[@]}" --pid 3497234 -o "$T/percpu.pftrace"; then
	"$P" dump --slices "$T/percpu.pftrace" >"$T/percpu.txt" 2>&1
	if grep -q 'pid=3497234 tid=3497497 .*name="bar()"' "$T/percpu.txt" &&
		grep -q 'pid=3497234 tid=3497496 .*name="foo()"' "$T/percpu.txt"; then
		pass decode_per_cpu_split_into_threads
	else
		fail decode_per_cpu_split_into_threads "$(head -5 "$T/percpu.txt")"
	fi
else
	fail decode_per_cpu_split_into_threads "$(cat "$T/percpu.err")"
fi

# -j: the trace is the same byte for byte whatever the number of threads
# (several streams, per-thread and per-CPU, ELF and raw code).
# Streams under 64 KiB are decoded on one thread anyway: "long" is the
# real streams repeated past that (each repeat starts at a PSB).
for _ in $(seq 24); do cat "$C/cores/45.intelpt_trace" "$S/3842849.trace"; done >"$T/long.trace"
same_j=1
for set in single multi percpu raw long; do
	case $set in
	single) args=(--pt "$S/3842849.trace" --pt "$S/3842849.trace"
		--elf "$S/a.out" --cpu 6/79/1) ;;
	multi) args=(--pt "$M/multi-file.trace" --elf "$M/a.out"
		--elf "$M/libfoo.so:0x7ffff7bd9000"
		--raw "$M/libbar.so:0x7ffff79d7000" --cpu 6/79/1) ;;
	percpu) args=("${percpu[@]}" --pid 3497234) ;;
	raw) args=(--pt "$C/cores/45.intelpt_trace" --pt "$C/cores/51.intelpt_trace"
		--raw "$C/modules/m.out:0x400000" --cpu 6/85/4) ;;
	long) args=(--pt "$T/long.trace" --elf "$C/modules/m.out"
		--raw "$S/a.out:0x400000" --cpu 6/85/4) ;;
	esac
	for j in 1 2; do
		mkdir -p "$T/j$j"
		"$P" decode "${args[@]}" -j$j -o "$T/j$j/out.fxt" 2>&1 |
			sed "s|$T/j$j/||" >"$T/j$j/err"
	done
	if ! cmp -s "$T/j1/out.fxt" "$T/j2/out.fxt" ||
		! cmp -s "$T/j1/err" "$T/j2/err" || [ ! -s "$T/j1/out.fxt" ]; then
		same_j=0
		fail decode_jobs_same_trace "$set: -j1 and -j2 differ: $(cat "$T/j1/err" "$T/j2/err")"
	fi
done
[ $same_j = 1 ] && pass decode_jobs_same_trace

# --- bad inputs: exit != 0, one sentence, no output file -----------------
# bad NAME EXPECTED-WORDS ARGS...
bad() {
	local name=$1 words=$2
	shift 2
	rm -f "$T/bad.fxt"
	if run "$name" "$@" -o "$T/bad.fxt"; then
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
bad decode_missing_trace "cannot read --pt" --pt "$T/nope.trace" --elf "$S/a.out"
bad decode_missing_elf "cannot read --elf" --pt "$S/3842849.trace" --elf "$T/nope"
bad decode_not_elf "not an ELF file" --pt "$S/3842849.trace" \
	--elf "$D/README.md"
bad decode_bad_number "not a number" --pt "$S/3842849.trace" \
	--elf "$S/a.out" --pid abc
bad decode_bad_jobs "not a number" --pt "$S/3842849.trace" --elf "$S/a.out" \
	-j x
bad decode_bad_cpu "FAMILY/MODEL" --pt "$S/3842849.trace" --elf "$S/a.out" \
	--cpu intel
bad decode_no_psb "no PSB" --pt "$S/a.out" --elf "$S/a.out"
bad decode_no_code "no code given" --pt "$S/3842849.trace"
bad decode_per_cpu_needs_pid "--pid" "${percpu[@]}"
bad decode_cpu_id_needs_switches "--switches" --pt "$C/cores/45.intelpt_trace" \
	--cpu-id 45 --elf "$C/modules/m.out"
bad decode_missing_recording "$T/nope.ptsc" "$T/nope.ptsc"
if "$P" decode --pt "$S/3842849.trace" --elf "$S/a.out" >/dev/null 2>"$T/noout.err"; then
	fail decode_needs_output "exit status 0"
else
	grep -q -- "-o" "$T/noout.err" && pass decode_needs_output ||
		fail decode_needs_output "$(cat "$T/noout.err")"
fi
