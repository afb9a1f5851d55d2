#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ptscope decode perf.data` as a new user runs it: perf's own Intel PT
# recordings (file and pipe layout), perf.data files that tools/mkperfdata
# builds around the LLDB recordings and their binaries (per CPU and per
# thread), binaries found through perf's own build-id cache, a missing
# binary, and perf.data files without Intel PT data.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
MK=${PTSCOPE_BUILD:-build}/tools/mkperfdata
D=${PTSCOPE_TESTDATA:-../shared/testdata}/real-pt

if [ ! -x "$P" ] || [ ! -x "$MK" ]; then
	fail perfdata_programs "$P or $MK is not built"
	exit 0
fi
if [ ! -d "$D" ]; then
	skip perfdata_realpt "no test data at $D"
	exit 0
fi
D=$(cd "$D" && pwd)
K=$D/perf-data-skylake
export HOME=$T/home # the build-id cache of this test only
mkdir -p "$HOME"

# --- perf's own recordings --------------------------------------------
if "$P" decode "$K/perf.data.intel_pt-4.14" -o "$T/sky.fxt" --stats \
	2>"$T/sky.err"; then
	"$P" dump --slices "$T/sky.fxt" >"$T/sky.txt" 2>&1
	if grep -q '^process pid=3174 "echo"' "$T/sky.txt" &&
		grep -q 'decoded 149968 bytes of PT' "$T/sky.err"; then
		pass perfdata_file_every_cpu_decoded
	else
		fail perfdata_file_every_cpu_decoded "$(head -3 "$T/sky.txt") $(cat "$T/sky.err")"
	fi
	# the binaries are not on this machine: one sentence each
	if grep -q '^ptscope decode: warning: /usr/bin/coreutils (build id c0a88cf4408ddef75343a69e41602f4d3de34e68) is neither at that path nor in ~/.debug' "$T/sky.err" &&
		[ "$(grep -c 'libc-2.23.so' "$T/sky.err")" -eq 1 ]; then
		pass perfdata_missing_binary_named_once
	else
		fail perfdata_missing_binary_named_once "$(cat "$T/sky.err")"
	fi
else
	fail perfdata_file_every_cpu_decoded "$(cat "$T/sky.err")"
fi

if "$P" decode - -o "$T/pipe.json" <"$K/perf.data.piped.intel_pt-4.14" \
	2>"$T/pipe.err" && "$P" dump --slices "$T/pipe.json" >"$T/pipe.txt" 2>&1 &&
	grep -q '^process pid=.* "echo"' "$T/pipe.txt"; then
	pass perfdata_pipe_from_stdin
else
	fail perfdata_pipe_from_stdin "$(cat "$T/pipe.err")"
fi

# --- built around the LLDB recordings, with the binaries ----------------
C=$D/lldb-per-cpu
TC=1076264588,31,18433473881008870804
"$MK" -o "$T/percpu.data" --cpuid GenuineIntel,6,85,4 --tsc-conv $TC \
	--task 3497234,3497234,m.out --mmap "3497234,0x400000,$C/modules/m.out" \
	--cpu-pt "$C/cores/45.intelpt_trace,45,$C/cores/45.perf_context_switch_trace" \
	--cpu-pt "$C/cores/51.intelpt_trace,51,$C/cores/51.perf_context_switch_trace" \
	--chunk 1024 --pipe
if "$P" decode "$T/percpu.data" -o "$T/percpu.pftrace" 2>"$T/percpu.err"; then
	"$P" dump --slices "$T/percpu.pftrace" >"$T/percpu.txt" 2>&1
	"$P" decode --pt "$C/cores/45.intelpt_trace" --cpu-id 45 \
		--switches "$C/cores/45.perf_context_switch_trace" \
		--pt "$C/cores/51.intelpt_trace" --cpu-id 51 \
		--switches "$C/cores/51.perf_context_switch_trace" \
		--elf "$C/modules/m.out" --cpu 6/85/4 --tsc-conv $TC \
		--pid 3497234 -o "$T/raw.pftrace" 2>/dev/null
	"$P" dump --slices "$T/raw.pftrace" >"$T/raw.txt" 2>&1
	if grep -q 'pid=3497234 tid=3497497 .*name="bar()".*file=.*line=' "$T/percpu.txt" &&
		grep -q 'pid=3497234 tid=3497496 .*name="foo()"' "$T/percpu.txt" &&
		diff <(grep -v '^meta' "$T/raw.txt") \
			<(grep -v '^meta\|^process\|^thread' "$T/percpu.txt") >/dev/null; then
		pass perfdata_per_cpu_threads_with_file_line
	else
		fail perfdata_per_cpu_threads_with_file_line "$(head -5 "$T/percpu.txt")"
	fi
else
	fail perfdata_per_cpu_threads_with_file_line "$(cat "$T/percpu.err")"
fi

# recorded at a path where the binary is not: found by build id in the
# cache that `perf buildid-cache -a` fills
S=$D/lldb-single-thread
"$MK" -o "$T/moved.data" --cpuid GenuineIntel,6,79,1 --tsc-conv $TC \
	--task 1234,3842849,a.out --mmap "1234,0x400000,$S/a.out,/gone/a.out" \
	--pt "$S/3842849.trace,3842849"
if "$P" decode "$T/moved.data" -o "$T/gone.json" 2>"$T/gone.err" &&
	grep -q 'warning: /gone/a.out (build id [0-9a-f]*) is neither' "$T/gone.err" &&
	"$P" dump --slices "$T/gone.json" | grep -q 'no memory mapped'; then
	pass perfdata_decode_goes_on_without_a_binary
else
	fail perfdata_decode_goes_on_without_a_binary "$(cat "$T/gone.err")"
fi
if ! perf buildid-cache -a "$S/a.out" >"$T/bc.err" 2>&1; then
	skip perfdata_perf_buildid_cache "perf buildid-cache failed: $(head -1 "$T/bc.err")"
elif "$P" decode "$T/moved.data" -o "$T/moved.json" 2>"$T/moved.err" &&
	"$P" dump --slices "$T/moved.json" |
	grep -q 'name="main".*file=".*main.cpp".*module="a.out"' &&
	! grep -q 'a.out' "$T/moved.err"; then
	pass perfdata_perf_buildid_cache
else
	fail perfdata_perf_buildid_cache "$(cat "$T/moved.err")"
fi

# --- code the recording does not carry: --elf and --raw -----------------
# recorded on another machine: a.out, libfoo.so and libbar.so under paths
# that are not here (and not in the build-id cache); ld.so not recorded
M=$D/lldb-multi-file
"$MK" -o "$T/away.data" --cpuid GenuineIntel,6,79,1 --tsc-conv $TC \
	--task 815455,815455,a.out \
	--mmap "815455,0x400000,$M/a.out,/away/a.out" \
	--mmap "815455,0x7ffff7bd9000,$M/libfoo.so,/away/lib/libfoo.so" \
	--mmap "815455,0x7ffff79d7000,$M/libbar.so,/away/lib/libbar.so" \
	--pt "$M/multi-file.trace,815455"
# the same stream decoded raw, with each binary at its address
"$P" decode --pt "$M/multi-file.trace" --elf "$M/a.out" \
	--elf "$M/libfoo.so:0x7ffff7bd9000" --elf "$M/libbar.so:0x7ffff79d7000" \
	--cpu 6/79/1 --tsc-conv $TC --pid 815455 -j1 --stats \
	-o "$T/away_ref.json" 2>"$T/away_ref.err"
"$P" dump --slices "$T/away_ref.json" 2>&1 | grep -v '^meta' >"$T/away_ref.txt"
# stands_in NAME DATA ARGS...: decode DATA with ARGS into $T/NAME.txt
# (slices, no meta, process or thread lines) and $T/NAME.err
stands_in() {
	"$P" decode "$2" "${@:3}" -j1 --stats -o "$T/$1.json" 2>"$T/$1.err" &&
		"$P" dump --slices "$T/$1.json" 2>&1 |
		grep -v '^meta\|^process\|^thread' >"$T/$1.txt"
}
if stands_in away_elf "$T/away.data" --elf "$M/a.out" --elf "$M/libfoo.so" \
	--elf "$M/libbar.so" &&
	grep -q 'decoded .* 45 instructions' "$T/away_elf.err" &&
	grep -q '1 no memory mapped' "$T/away_elf.err" &&
	! grep -q 'warning' "$T/away_elf.err" &&
	grep -q 'name="foo()".*module="libfoo.so"' "$T/away_elf.txt" &&
	diff "$T/away_ref.txt" "$T/away_elf.txt" >/dev/null; then
	pass perfdata_elf_stands_in_for_binaries_by_name
else
	fail perfdata_elf_stands_in_for_binaries_by_name "$(cat "$T/away_elf.err") $(diff "$T/away_ref.txt" "$T/away_elf.txt" | head -5)"
fi
# by build id under another name: the module keeps the name it ran under
cp "$M/libfoo.so" "$T/renamed.so"
if stands_in away_bid "$T/away.data" --elf "$M/a.out" --elf "$T/renamed.so" \
	--elf "$M/libbar.so" &&
	diff "$T/away_ref.txt" "$T/away_bid.txt" >/dev/null; then
	pass perfdata_elf_stands_in_by_build_id
else
	fail perfdata_elf_stands_in_by_build_id "$(cat "$T/away_bid.err")"
fi
# another build of the same name: used as asked, with one warning
if stands_in away_other "$T/away.data" --elf "$S/a.out" &&
	grep -q "^ptscope decode: warning: $S/a.out is not the build of /away/a.out that was recorded (build id [0-9a-f]*)" "$T/away_other.err" &&
	[ "$(grep -c 'away/a.out' "$T/away_other.err")" -eq 1 ]; then
	pass perfdata_elf_other_build_warned
else
	fail perfdata_elf_other_build_warned "$(cat "$T/away_other.err")"
fi
# a stand-in for nothing the recording maps: said, and the decode goes on
if stands_in away_none "$T/away.data" --elf "$K/perf.data.intel_pt-4.14.buildids" 2>/dev/null; then
	fail perfdata_elf_not_elf "decoded with a stand-in that is not ELF"
elif grep -q "cannot stand in for a binary of the recording" "$T/away_none.err" &&
	[ "$(grep -c . "$T/away_none.err")" -eq 1 ] && [ ! -e "$T/away_none.json" ]; then
	pass perfdata_elf_not_elf
else
	fail perfdata_elf_not_elf "$(cat "$T/away_none.err")"
fi
cp "$S/a.out" "$T/unused.so" # neither a name nor a build id of away.data
if stands_in away_unused "$T/away.data" --elf "$M/a.out" --elf "$T/unused.so" &&
	grep -q "warning: $T/unused.so stands in for nothing: $T/away.data maps no file of that name or build id" "$T/away_unused.err"; then
	pass perfdata_elf_stands_in_for_nothing
else
	fail perfdata_elf_stands_in_for_nothing "$(cat "$T/away_unused.err")"
fi
# a.out's code as raw bytes at its address (a memory dump): the same
# instructions, spans named by address (no symbols)
head -c $((0x8a4)) "$M/a.out" >"$T/aout.bin"
if stands_in away_raw "$T/away.data" --raw "$T/aout.bin:0x400000" \
	--elf "$M/libfoo.so" --elf "$M/libbar.so" &&
	grep -q 'decoded .* 45 instructions' "$T/away_raw.err" &&
	grep -q '1 no memory mapped' "$T/away_raw.err" &&
	grep -q 'name="aout.bin+0x' "$T/away_raw.txt"; then
	pass perfdata_raw_code_added
else
	fail perfdata_raw_code_added "$(cat "$T/away_raw.err") $(head -3 "$T/away_raw.txt")"
fi
# ... and the ELF file at an address of the user's (FILE:ADDR)
if stands_in away_at "$T/away.data" --elf "$M/a.out:0x400000" \
	--elf "$M/libfoo.so" --elf "$M/libbar.so" &&
	diff "$T/away_ref.txt" "$T/away_at.txt" >/dev/null; then
	pass perfdata_elf_at_an_address
else
	fail perfdata_elf_at_an_address "$(cat "$T/away_at.err")"
fi

# --- no Intel PT data, bad files: one sentence, no output ---------------
# nopt NAME WORDS FILE [OPTIONS]
nopt() {
	rm -f "$T/bad.fxt"
	if "$P" decode "${@:3}" -o "$T/bad.fxt" 2>"$T/$1.err"; then
		fail "$1" "exit status 0"
	elif [ -e "$T/bad.fxt" ]; then
		fail "$1" "left an output file"
	elif ! grep -q -- "$2" "$T/$1.err" ||
		[ "$(grep -c . "$T/$1.err")" -ne 1 ]; then
		fail "$1" "not one sentence with '$2': $(cat "$T/$1.err")"
	else
		pass "$1"
	fi
}
if perf record -q -e dummy -o "$T/dummy.data" -- true >"$T/rec.err" 2>&1; then
	nopt perfdata_no_pt_from_perf "perf.data holds no Intel PT data: " \
		"$T/dummy.data"
else
	skip perfdata_no_pt_from_perf "perf record -e dummy failed here: $(head -1 "$T/rec.err")"
fi
"$MK" -o "$T/nopt.data" --no-pt --task 1,1,init --mmap "1,0x400000,$S/a.out"
nopt perfdata_no_pt_built "perf.data holds no Intel PT data: " "$T/nopt.data"
nopt perfdata_pid_not_traced "process 42 has no Intel PT trace" \
	"$T/percpu.data" --pid 42
head -c 20000 "$K/perf.data.intel_pt-4.14" >"$T/cut.data"
nopt perfdata_cut_short "runs past the end" "$T/cut.data"
nopt perfdata_with_pt "a perf.data carries its own streams; leave out --pt" \
	"$T/away.data" --pt "$M/multi-file.trace"
