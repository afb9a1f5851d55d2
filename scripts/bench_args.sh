#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What --args costs on the qemu backend (docs/bench-args.md): the
# call-heavy program of bench_qemu.sh (a recursive Fibonacci: a call
# with one int argument and a long return every ~10 instructions), side
# by side in one run without and with --args: instructions per second
# while recording (median of ROUNDS, 3), and how many spans the 4 MiB
# ring (the default snapshot size) holds at the end.
#
#   scripts/bench_args.sh [BUILD]      (make bench runs it)
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-32}
PTSCOPE=$BUILD/ptscope
OUT=docs/bench-args.md
B=$BUILD/bench
mkdir -p "$B"
if ! command -v qemu-x86_64 >/dev/null; then
	echo "bench_args: qemu-x86_64 not installed (apt-get install qemu-user): skipped"
	exit 0
fi
cat >"$B/calls.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { int n = argc > 1 ? atoi(argv[1]) : 30; printf("%ld\n", fib(n)); return 0; }
C
cc -O1 -g -fno-inline -o "$B/calls" "$B/calls.c" || exit 1

now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rate() { awk -v n="$1" -v ns="$2" 'BEGIN { printf "%.1f M", n / (ns / 1e9) / 1e6 }'; }

# one configuration: prints "instructions ns spans bytes"
measure() {
	local tag=$1 t0 t1 ts=() insns spans bytes
	shift
	for _ in $(seq "$ROUNDS"); do
		t0=$(now)
		"$PTSCOPE" record -b qemu --no-events "$@" -o "$B/args_$tag.ptsc" -- "$B/calls" "$N" >/dev/null 2>"$B/args_$tag.err" ||
			{ echo "bench_args: ptscope failed: $(tail -n1 "$B/args_$tag.err")" >&2; exit 1; }
		t1=$(now)
		ts+=($((t1 - t0)))
	done
	insns=$(sed -n 's/.*traced \([0-9]*\) instructions.*/\1/p' "$B/args_$tag.err" | tail -n1)
	bytes=$(sed -n 's/.*(1 threads, \([0-9]*\) bytes of PT).*/\1/p' "$B/args_$tag.err" | tail -n1)
	spans=$("$PTSCOPE" decode -o "$B/args_$tag.fxt" "$B/args_$tag.ptsc" 2>&1 | sed -n 's/^\([0-9]*\) spans written.*/\1/p')
	echo "$insns $(median "${ts[@]}") $spans $bytes"
}

read -r i0 t0 s0 b0 < <(measure off)
read -r i1 t1 s1 b1 < <(measure on --args)
calls=$(awk -v n="$N" 'BEGIN { a = 1; b = 1; for (i = 2; i <= n; i++) { c = a + b + 1; a = b; b = c } print b }')
{
	echo "# --args on the qemu backend"
	echo
	echo "What recording arguments and return values costs: \`scripts/bench_args.sh\`"
	echo "(\`make bench\` runs it), $(date -u +%Y-%m-%d), $(nproc) CPUs,"
	echo "$(qemu-x86_64 --version | head -n1).  The call-heavy program is a recursive"
	echo "Fibonacci, fib($N): $calls calls of \`long fib(int n)\`, one int argument and"
	echo "a long return value each, a call every ~10 instructions.  Both runs are"
	echo "\`ptscope record -b qemu --no-events\` with the default 4 MiB ring, one run"
	echo "after the other; the rate is the median of $ROUNDS rounds of wall time"
	echo "(start to recording written), the spans are those the ring held at the end."
	echo
	echo "| | instructions | instructions/s | spans in 4 MiB | bytes per span |"
	echo "|---|---|---|---|---|"
	echo "| without --args | $i0 | $(rate "$i0" "$t0") | $s0 | $(awk -v b="$b0" -v s="$s0" 'BEGIN { printf "%.1f", b / s }') |"
	echo "| with --args | $i1 | $(rate "$i1" "$t1") | $s1 | $(awk -v b="$b1" -v s="$s1" 'BEGIN { printf "%.1f", b / s }') |"
	echo
	echo "Each call with --args adds two data windows (docs/args.md): the argument"
	echo "(FUP, TIP.PGD, a 4-byte header PTW and one 4-byte value PTW, MODE.Exec,"
	echo "TIP.PGE) and the return value, about 40 bytes, where the call and its"
	echo "return alone take a few bits of TNT and a TIP.  So the ring holds that"
	echo "many fewer calls: the reason --args is off by default and limited to the"
	echo "main program.  The rate drops with the register reads and the packets"
	echo "written at every call and return; both rates move with the machine's"
	echo "load (2 CPUs shared), so compare the two rows of one run."
	echo
	echo "Reproduce: \`scripts/bench_args.sh\` (ROUNDS=3, N=$N by default)."
} >"$OUT"
cat "$OUT"
