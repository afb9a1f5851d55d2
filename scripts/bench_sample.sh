#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the sample backend costs the program it is attached to, side by
# side in one run, interleaved: samples/split's own work rate (rounds/s)
# unattached, under `ptscope attach` (sample backend, the default rate and
# 4x it), and under `perf record` at the same rate (frame-pointer call
# chains, and DWARF with the same 4 KiB stack copies); samples delivered
# per second; the history the default snapshot size holds; ptscope's RSS
# over a long attach.  Writes docs/bench-sample.md.
set -u
BUILD=${1:-build}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-4}
cd "$(dirname "$0")/.."
P=$BUILD/ptscope
S=$BUILD/samples/split
OUT=docs/bench-sample.md
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 2 ]; then
	echo "bench_sample: skipped: perf events are not allowed (perf_event_paranoid > 2, not root)"
	exit 0
fi
[ -x "$P" ] && [ -x "$S" ] || { echo "bench_sample: build first (make)"; exit 1; }
have_perf=0
command -v perf >/dev/null && have_perf=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ATT=$(echo "$SECS - 0.3" | bc)
HZ=500 # the default rate (REC_DEFAULT_FREQUENCY)

# split's two rates under HOW: "wall cpu" (rounds/s, rounds per CPU-s).
rate_of() { # label, how
	"$S" "$SECS" >"$T/split.out" &
	local pid=$!
	sleep 0.1
	case $2 in
	none) ;;
	sample*) "$P" attach -q -p $pid -d "$ATT" ${2#sample} -o "$T/s.fxt" 2>"$T/s.err" ;;
	perf-fp) perf record -q -e cpu-clock -F $HZ -g -p $pid -o "$T/perf.data" -- sleep "$ATT" >/dev/null 2>&1 ;;
	perf-dwarf) perf record -q -e cpu-clock -F $HZ --call-graph dwarf,4096 -p $pid -o "$T/perf.data" -- sleep "$ATT" >/dev/null 2>&1 ;;
	esac
	wait $pid
	sed -n 's/^split: \([0-9.]*\) rounds\/s, \([0-9.]*\) rounds per CPU-second/\1 \2/p' "$T/split.out"
}

modes="none sample sample-F1000 sample-F4000"
[ $have_perf = 1 ] && modes="$modes perf-fp perf-dwarf"
declare -A sum cpu
for m in $modes; do sum[$m]=""; cpu[$m]=""; done
for r in $(seq "$ROUNDS"); do
	for m in $modes; do
		arg=$m
		case $m in sample-F*) arg="sample-F ${m#sample-F}" ;; esac
		v=$(rate_of "$m" "$arg")
		sum[$m]="${sum[$m]} ${v% *}"
		cpu[$m]="${cpu[$m]} ${v#* }"
		echo "round $r $m: ${v% *} rounds/s, ${v#* } rounds per CPU-second"
	done
done

median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median ${sum[none]})
cbase=$(median ${cpu[none]})
row() { # label, mode
	local m v c cv
	m=$(median ${sum[$2]})
	v=$(echo "scale=1; 100 * $m / $base" | bc)
	c=$(median ${cpu[$2]})
	cv=$(echo "scale=1; 100 * $c / $cbase" | bc)
	echo "| $1 | $m | $v % | $c | $cv % |"
}


# Samples delivered per second, with a ring big enough for all of them.
"$S" 4 >/dev/null &
pid=$!
sleep 0.2
"$P" attach -p $pid -d 3 -s 64M -o "$T/d.fxt" 2>"$T/d.err"
wait $pid
delivered=$(sed -n 's/.*rebuilt from \([0-9]*\) call-stack samples.*/\1/p' "$T/d.err")

# History in the default snapshot size.
"$S" 4 >/dev/null &
pid=$!
sleep 0.2
"$P" attach -p $pid -d 3 -o "$T/h.fxt" 2>"$T/h.err"
wait $pid
held=$(sed -n 's/.*rebuilt from \([0-9]*\) call-stack samples.*/\1/p' "$T/h.err")
# From the first sampled span's start to the last one's end.
span=$("$P" dump --slices "$T/h.fxt" | awk '/cat="sampled/ {
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^ts=/) { sub("ts=", "", $i); ts = $i }
		if ($i ~ /^dur=/) { sub("dur=", "", $i); d = $i }
	}
	if (!n++ || ts < lo) lo = ts
	if (ts + d > hi) hi = ts + d
} END { if (n) printf "%.2f\n", (hi - lo) / 1e9 }')

# RSS of ptscope over a long attach, with kernel events (the default)
# and without, side by side; and the target's.
LONG=${LONG:-60}
STEP=${STEP:-10}
"$S" "$((LONG + 3))" >/dev/null &
tp=$!
"$S" "$((LONG + 3))" >/dev/null &
tq=$!
sleep 0.2
"$P" attach -q -p $tp -o "$T/l.fxt" 2>/dev/null &
pp=$!
"$P" attach -q --no-events -p $tq -o "$T/m.fxt" 2>/dev/null &
pq=$!
rss=""
for i in $(seq "$STEP" "$STEP" "$LONG"); do
	sleep "$STEP"
	a=$(awk '/^VmRSS/ {print $2}' /proc/$pp/status 2>/dev/null)
	b=$(awk '/^VmRSS/ {print $2}' /proc/$pq/status 2>/dev/null)
	c=$(awk '/^VmRSS/ {print $2}' /proc/$tp/status 2>/dev/null)
	rss="$rss
| $i | ${a:-?} | ${b:-?} | ${c:-?} |"
done
kill -INT $pp $pq
wait $pp $pq
wait $tp $tq

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
{
	cat <<HDR
# Benchmark: the sample backend's cost to the program it is attached to

Produced by \`scripts/bench_sample.sh\` (part of \`make bench\`; as root, or
with perf_event_paranoid <= 2), all rows in one run, interleaved round by
round so that load on the machine hits them alike.  Machine: $(nproc) vCPUs,
$cpu, Linux $(uname -r), $(date -u +%Y-%m-%d).

\`samples/split $SECS\` computes for $SECS s and prints its own work rate
(rounds per second).  ptscope or perf is attached 0.1 s after it starts,
for $ATT s, with everything on by default (\`ptscope attach -p PID -d
$ATT\`: the sample backend, kernel events through eBPF, a 4 MiB ring per
thread); the trace is then written after the detach.  perf records the
same event at the same rate (\`perf record -e cpu-clock -F $HZ -g\`, and
\`--call-graph dwarf,4096\`: the same 4 KiB stack copy ptscope takes).

Two measures of split's speed, medians of $ROUNDS rounds: rounds per
second of wall time (what a user sees; on a shared 2-vCPU machine it
moves with everyone else's load), and rounds per second of split's own
CPU time (what sampling costs the program itself: the timer interrupt,
the kernel's stack walk and stack copy are charged to it; other load
hardly moves it).

| run | rounds/s | of unattached | rounds per CPU-s | of unattached |
|---|---|---|---|---|
$(row "unattached" none)
$(row "ptscope attach (sample, $HZ Hz: the default)" sample)
$(row "ptscope attach -F 1000" sample-F1000)
$(row "ptscope attach -F 4000" sample-F4000)
HDR
	if [ $have_perf = 1 ]; then
		row "perf record -F $HZ -g" perf-fp
		row "perf record -F $HZ --call-graph dwarf,4096" perf-dwarf
	else
		echo "| perf | not installed | | | |"
	fi
	cat <<MID

Reading it: the wall-clock column moves with whatever else the machine
runs (load average $(cut -d' ' -f1 /proc/loadavg) at the end of this run), so it is shown, not
trusted.  Per CPU-second, compare ptscope at the default rate with perf
at the same rate; the higher rates show what a sample costs here.
Hence the default of $HZ Hz (docs/sample-backend.md).

Samples delivered: ${delivered:-?} in 3 s with a ring large enough to
hold them all (\`-s 64M\`), i.e. about $(( ${delivered:-0} / 3 )) per second of
wall time at $HZ Hz (cpu-clock counts the thread's CPU time: while it
waits for a CPU it is not sampled, so a thread that gets only part of a
CPU gets that part of the rate).

History held by the default snapshot size (4 MiB per thread): ${held:-?}
samples, the trace covering ${span:-?} s of split running at $HZ Hz (each
sample is about 4.3 KiB, most of it the 4 KiB stack copy for DWARF
unwinding; \`--snapshot-size\` scales it).

ptscope's resident memory while attached to \`samples/split\` for ${LONG} s,
in KiB, with kernel events (the default) and with \`--no-events\`, two
attaches side by side.  The samples stay in the kernel's ring (fixed
size) until a snapshot, so sampling adds nothing as time goes on; with
kernel events, ptscope keeps the newest RKEV_KEEP (32768) of them,
352 bytes each, and the sidecar's eBPF ring is 4 MiB: its RSS grows as
those fill (at the rate the program makes kernel events) and stops
about 15 MiB above where it started.

| seconds attached | ptscope | ptscope --no-events | target |
|---|---|---|---|$rss
MID
} >"$OUT"
cat "$OUT"
