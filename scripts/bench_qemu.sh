#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The qemu backend's speed (docs/bench-qemu.md): a call-heavy and a
# loop-heavy program, side by side in one run — native, under qemu-x86_64
# without a plugin, under ptscope's qemu backend writing PT, and under the
# single-step backend on a shortened run.  Median of ROUNDS (3) rounds.
#
#   scripts/bench_qemu.sh [BUILD]      (make bench runs it)
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PTSCOPE=$BUILD/ptscope
OUT=docs/bench-qemu.md
B=$BUILD/bench
mkdir -p "$B"
if ! command -v qemu-x86_64 >/dev/null; then
	echo "bench_qemu: qemu-x86_64 not installed (apt-get install qemu-user): skipped"
	exit 0
fi

# calls: a recursive Fibonacci (a call and a return every ~10 instructions);
# loop: a byte-mixing loop (a conditional branch every ~8 instructions).
cat >"$B/calls.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { int n = argc > 1 ? atoi(argv[1]) : 30; printf("%ld\n", fib(n)); return 0; }
C
cat >"$B/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 100000000, h = 1469598103934665603L;
	for (long i = 0; i < n; i++) { h ^= i & 0xff; h *= 1099511628211L; if (h & 1) h += i; }
	printf("%ld\n", h); return 0;
}
C
cc -O1 -g -fno-inline -o "$B/calls" "$B/calls.c" || exit 1
cc -O1 -g -o "$B/loop" "$B/loop.c" || exit 1

now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.3f", ns / 1e9 }'; }
rate() { # instructions/s as "12.3 M" or "45.6 k"
	awk -v n="$1" -v ns="$2" 'BEGIN { r = n / (ns / 1e9)
		if (r >= 1e6) printf "%.1f M", r / 1e6; else printf "%.1f k", r / 1e3 }'
}

# time_ns CMD...: wall time of one run, output discarded.
time_ns() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null 2>"$B/last.err"
	t1=$(now)
	echo $((t1 - t0))
}

# instructions traced by ptscope (from its summary line).
traced() { sed -n 's/.*traced \([0-9]*\) instructions.*/\1/p' "$B/last.err" | tail -n1; }

row() { # name, full arg, short arg for the step backend
	local name=$1 arg=$2 sarg=$3 nat=() qem=() plug=() stp=() insns sinsns
	for _ in $(seq "$ROUNDS"); do
		nat+=("$(time_ns "$B/$name" "$arg")")
		qem+=("$(time_ns qemu-x86_64 "$B/$name" "$arg")")
		plug+=("$(time_ns "$PTSCOPE" record -b qemu --no-events -o "$B/$name.ptsc" -- "$B/$name" "$arg")")
		insns=$(traced)
		[ -n "$insns" ] || { echo "bench_qemu: ptscope failed: $(tail -n1 "$B/last.err")" >&2; exit 1; }
	done
	stp=("$(time_ns "$PTSCOPE" record -b step --no-events -o "$B/$name.step.ptsc" -- "$B/$name" "$sarg")")
	sinsns=$(traced)
	local mn mq mp ms
	mn=$(median "${nat[@]}")
	mq=$(median "${qem[@]}")
	mp=$(median "${plug[@]}")
	ms=${stp[0]}
	printf '| %s | %s | %s s | %s s | %s s | %s s (%s insns) |\n' "$name $arg" "$insns" \
		"$(secs "$mn")" "$(secs "$mq")" "$(secs "$mp")" "$(secs "$ms")" "$sinsns"
	printf '| | instructions/s | %s | %s | **%s** | %s |\n' \
		"$(rate "$insns" "$mn")" "$(rate "$insns" "$mq")" "$(rate "$insns" "$mp")" "$(rate "$sinsns" "$ms")"
	echo "$name: native ${nat[*]}; qemu ${qem[*]}; ptscope qemu ${plug[*]}; step ${stp[*]} (ns)" >>"$B/rounds"
	awk -v n="$name" -v i="$insns" -v mq="$mq" -v mp="$mp" -v si="$sinsns" -v ms="$ms" 'BEGIN {
		printf "- %s: tracing with the plugin takes %.1f× the time of plain QEMU; it traces %.0f× as many instructions per second as the step backend.\n",
			n, mp / mq, (i / mp) / (si / ms) }' >>"$B/summary"
}

: >"$B/rounds"
: >"$B/summary"
{
	echo "# qemu backend: tracing speed"
	echo
	echo "\`scripts/bench_qemu.sh\` (run by \`make bench\`) runs two programs side by side in"
	echo "one run, median of $ROUNDS rounds of wall time for the whole command: natively,"
	echo "under \`qemu-x86_64\` without a plugin, under \`ptscope record --backend=qemu\`"
	echo "(QEMU plus our plugin writing PT into the snapshot ring, and the recording file"
	echo "written at exit), and under the single-step backend on a shortened run (one"
	echo "round).  The instruction count is the one ptscope traced (loader included);"
	echo "instructions/s divides it by each wall time, so the native and plain-QEMU rows"
	echo "say how fast the same work runs there.  Kernel events are off (\`--no-events\`):"
	echo "loading the eBPF programs adds a fixed ~0.3 s at start (docs/events.md)."
	echo
	echo "- **calls**: recursive Fibonacci, a call and a return every ~10 instructions."
	echo "- **loop**: a hashing loop, a conditional branch every ~8 instructions."
	echo
	echo "| program | instructions | native | qemu-x86_64 | ptscope qemu | ptscope step |"
	echo "|---|---:|---:|---:|---:|---:|"
	row calls 32 18
	row loop 100000000 30000
	echo
	cat "$B/summary"
	echo
	echo "Each round (ns):"
	echo
	sed 's/^/    /' "$B/rounds"
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs (a virtual"
	echo "machine shared with other jobs: load average $(cut -d' ' -f1-3 /proc/loadavg) while"
	echo "measuring), kernel $(uname -r), $(qemu-x86_64 --version | head -n1).  Measured on $(date -u +%F)."
	echo
	echo "Reproduce: \`make && scripts/bench_qemu.sh\` (ROUNDS=N)."
} >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"
cat "$OUT"
