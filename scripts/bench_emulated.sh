#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Emulated backend speed: instructions/s that `ptscope run` traces, next to
# the raw ptrace single-step rate (PTRACE_SINGLESTEP + waitpid(__WALL) +
# PTRACE_PEEKUSER of rip, nothing else) on the same program and machine.
# Writes docs/bench-emulated.md.  Usage: scripts/bench_emulated.sh [BUILD]
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
ARG=${ARG:-300} # demo requests: about 0.5 M instructions
PROG=$BUILD/samples/demo
OUT=docs/bench-emulated.md
for f in "$BUILD/ptscope" "$PROG"; do
	[ -x "$f" ] || { echo "bench_emulated: $f is not built (run make)" >&2; exit 1; }
done
mkdir -p "$BUILD/bench"
RAW=$BUILD/bench/raw_step
# The baseline: the least a single-stepper can do per instruction.
cat >"$BUILD/bench/raw_step.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	long steps = 0;
	pid_t pid;
	int st;

	if (argc < 2)
		return 2;
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
		if (waitpid(-1, &st, __WALL) < 0 || !WIFSTOPPED(st))
			break;
		ptrace(PTRACE_PEEKUSER, pid,
		       (void *)offsetof(struct user_regs_struct, rip), 0);
		steps++;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld %.6f\n", steps,
	       (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
C
cc -O2 -o "$RAW" "$BUILD/bench/raw_step.c" || exit 1

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
raw_rates="" emu_rates="" raw_line="" emu_line=""
for i in $(seq "$ROUNDS"); do
	# Alternate the two so machine load hits both alike.
	read -r steps secs < <("$RAW" "$PROG" "$ARG" 2>/dev/null | tail -n1)
	raw_rates="$raw_rates $(awk -v n="$steps" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')"
	raw_line="$steps steps in $secs s"
	line=$("$BUILD/ptscope" run --trace-loader -o "$BUILD/bench/emu.fxt" -- "$PROG" "$ARG" 2>&1 >/dev/null | grep '^ptscope: traced')
	emu_rates="$emu_rates $(echo "$line" | sed -E 's/.*\(([0-9]+) instructions\/s\).*/\1/')"
	emu_line=${line#ptscope: }
	echo "round $i: raw $(echo $raw_rates | awk '{print $NF}')/s, emulated $(echo $emu_rates | awk '{print $NF}')/s"
done
raw=$(echo $raw_rates | tr ' ' '\n' | median)
emu=$(echo $emu_rates | tr ' ' '\n' | median)
ratio=$(awk -v r="$raw" -v e="$emu" 'BEGIN { printf "%.2f", r / e }')
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
ncpu=$(nproc)
load=$(cut -d' ' -f1-3 /proc/loadavg)

cat >"$OUT" <<MD
# Emulated backend: tracing speed

\`scripts/bench_emulated.sh\` (run by \`make bench\`) single-steps the same
program two ways and reports the median of $ROUNDS rounds:

- **raw**: the least a ptrace single-stepper can do per instruction —
  \`PTRACE_SINGLESTEP\`, \`waitpid(__WALL)\`, \`PTRACE_PEEKUSER\` of rip — and
  nothing with the result ($BUILD/bench/raw_step.c, written by the script).
- **emulated**: \`ptscope run --trace-loader\` with the emulated backend: the
  same three calls per step, plus the emulator (PT packets through libipt's
  encoder into the snapshot ring), syscall timing and the trigger check.

Program: \`$PROG $ARG\` (the dynamic loader and the program, from the first
instruction after exec to the exit).

| | instructions/s (median) | per instruction |
|---|---:|---:|
| raw ptrace single-step | $raw | $(awk -v r="$raw" 'BEGIN { printf "%.1f µs", 1e6 / r }') |
| ptscope emulated backend | $emu | $(awk -v r="$emu" 'BEGIN { printf "%.1f µs", 1e6 / r }') |
| ratio raw / emulated | $ratio× | |

Each round: raw $raw_rates; emulated $emu_rates (instructions/s).
Last round: raw $raw_line; emulated: $emu_line.

Machine: $cpu, $ncpu CPUs (a virtual machine, shared with other jobs: load
average $load while measuring), kernel $(uname -r).  The cost per step is
almost all kernel work — the debug exception, the stop notification and two
context switches — so the emulator adds little on top; both numbers move
together with the machine's load.  Measured on $(date -u +%Y-%m-%d).

Reproduce: \`make && scripts/bench_emulated.sh\` (ROUNDS=N, ARG=requests).
MD
echo "bench_emulated: raw $raw/s, emulated $emu/s (ratio $ratio); written to $OUT"
