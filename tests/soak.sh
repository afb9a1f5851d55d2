#!/usr/bin/env bash
# make soak: stay attached (the step backend, or SOAK_BACKEND: e.g.
# SOAK_BACKEND=sample, which auto now picks for attach) for SECS seconds
# to a busy
# multi-threaded sample while its trigger fires again and again with
# --multi-snapshot, and show that
#   - ptscope's RSS and open file descriptors stay flat (RSS within 1 MB
#     of the first sample after the first quarter of the run),
#   - every snapshot decodes (ptscope dump reads it, with spans),
#   - the target's output and exit status are those of an untraced run,
#   - after Ctrl-C ptscope detaches and nothing is left behind: the target
#     runs on with TracerPid 0, no thread stopped, its signal mask and
#     dispositions as before, no breakpoint byte (int3) in its code.
# Usage: tests/soak.sh [SECS]   (BUILD picks the build directory)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
. tests/e2e/lib.sh
secs=${1:-120}
B=${BUILD:-build}
BE=${SOAK_BACKEND:-step}
P=$top/$B/ptscope
S=$top/$B/samples
T=$(mktemp -d)
trap 'kill $tp $pp 2>/dev/null; rm -rf "$T"' EXIT
life=$((secs + 20)) # the target outlives the soak to show it runs on

# The untraced reference.
ref=$("$S/busy" 1)
ref_rc=$?

"$S/busy" "$life" >"$T/target.out" &
tp=$!
sleep 0.5
sigs() { grep -E '^(SigBlk|SigIgn|SigCgt)' "/proc/$tp/status" | tr '\n' ' '; }
sigs_before=$(sigs)
"$P" attach -b "$BE" -p "$tp" -t . -m -s 32K -o "$T/s.fxt" 2>"$T/ptscope.err" &
pp=$!

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# The fewest open fds over five looks 50 ms apart: a look may fall while
# a snapshot is being written (its file and pipe are open then).
fds() {
	local m=999999 n
	for _ in 1 2 3 4 5; do
		n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
		[ "$n" -lt "$m" ] && m=$n
		sleep 0.05
	done
	echo $m
}
: >"$T/samples"
start=$(date +%s)
while [ $(($(date +%s) - start)) -lt "$secs" ] && kill -0 $pp 2>/dev/null; do
	sleep 2
	echo "$(($(date +%s) - start)) $(rss $pp) $(fds $pp) $(ls "$T" | grep -c '^s\..*\.fxt$')" >>"$T/samples"
done
echo "seconds rss_kB fds snapshots"
cat "$T/samples"

if ! kill -0 $pp 2>/dev/null; then
	fail soak_attached "ptscope ended early: $(tail -n 3 "$T/ptscope.err")"
	exit 1
fi
kill -INT $pp
wait $pp
prc=$?
[ $prc -eq 0 ] && pass soak_ptscope_exit ||
	fail soak_ptscope_exit "ptscope exited with $prc: $(tail -n 3 "$T/ptscope.err")"

# Flat: compare the last quarter's samples with the first one after the
# warm-up (the first few snapshots allocate the intern tables).
n=$(wc -l <"$T/samples")
if [ "$n" -lt 4 ]; then
	fail soak_flat "only $n samples; run longer"
else
	warm=$(sed -n "$((n / 4 + 1))p" "$T/samples")
	last=$(tail -n 1 "$T/samples")
	set -- $warm
	r0=$2
	set -- $last
	r1=$2 nsnap=$4
	# fds: a sample may fall while a snapshot file is open, so compare
	# the fewest seen in the first and in the second half: a leak raises
	# the floor.
	f0=$(head -n $((n / 2)) "$T/samples" | awk 'NR == 1 || $3 < m {m = $3} END {print m}')
	f1=$(tail -n $((n - n / 2)) "$T/samples" | awk 'NR == 1 || $3 < m {m = $3} END {print m}')
	# RSS may wobble with the allocator by a few pages; 1 MB more after
	# the warm-up (the PT rings, -s 32K per thread, are full by then) is
	# a leak: at 50 snapshots a second it would be 60 MB an hour.
	if [ "$r1" -gt $((r0 + 1024)) ]; then
		fail soak_rss_flat "RSS grew from $r0 kB to $r1 kB"
	else
		pass "soak_rss_flat ($r0 kB -> $r1 kB over $nsnap snapshots)"
	fi
	[ "$f1" -le "$f0" ] && pass "soak_fds_flat ($f0 fds, then $f1)" ||
		fail soak_fds_flat "open fds went from $f0 to $f1"
fi

# Detached, and nothing left behind.
sleep 0.5
if ! kill -0 $tp 2>/dev/null; then
	fail soak_target_alive "the target is gone after the detach"
else
	tracer=$(awk '/^TracerPid/ {print $2}' /proc/$tp/status)
	[ "$tracer" = 0 ] && pass soak_no_tracer ||
		fail soak_no_tracer "TracerPid is $tracer"
	sigs_after=$(sigs)
	[ "$sigs_after" = "$sigs_before" ] && pass soak_signal_dispositions_unchanged ||
		fail soak_signal_dispositions_unchanged "before: $sigs_before after: $sigs_after"
	stopped=$(grep -l '^State:.*\(t\|T\)' /proc/$tp/task/*/status 2>/dev/null | wc -l)
	[ "$stopped" -eq 0 ] && pass soak_no_stopped_thread ||
		fail soak_no_stopped_thread "$stopped threads stopped"
	# The trigger's first byte is what the binary says, not int3 (0xcc).
	addr=$(nm "$S/busy" | awk '$3 == "ptscope_trigger" {print $1}')
	base=$(awk -v f="$S/busy" '$6 == f && $3 == "00000000" {print $1; exit}' /proc/$tp/maps | cut -d- -f1)
	if [ -n "$addr" ] && [ -n "$base" ]; then
		live=$(python3 -c "
import sys
f = open('/proc/$tp/mem', 'rb'); f.seek(0x$base + 0x$addr); sys.stdout.write(f.read(1).hex())")
		disk=$(python3 -c "
import sys
f = open('$S/busy', 'rb'); f.seek(0x$addr); sys.stdout.write(f.read(1).hex())")
		[ "$live" = "$disk" ] && pass "soak_no_breakpoint_left (byte $live)" ||
			fail soak_no_breakpoint_left "code byte is $live, file says $disk"
	else
		skip soak_no_breakpoint_left "cannot locate ptscope_trigger in the target"
	fi
fi
wait $tp
trc=$?
out=$(cat "$T/target.out")
[ "$trc" = "$ref_rc" ] && [ "$out" = "$ref" ] && pass "soak_target_unchanged ($out, status $trc)" ||
	fail soak_target_unchanged "got '$out' status $trc, untraced: '$ref' status $ref_rc"

# Every snapshot decodes.
bad=0 good=0
for f in "$T"/s.*.fxt; do
	[ -e "$f" ] || continue
	if "$P" dump "$f" 2>/dev/null | grep -q '^begin '; then
		good=$((good + 1))
	else
		bad=$((bad + 1))
		[ $bad -le 5 ] && echo "  does not decode: $f"
	fi
done
[ $good -gt 0 ] && [ $bad -eq 0 ] && pass "soak_snapshots_decode ($good snapshots)" ||
	fail soak_snapshots_decode "$good good, $bad bad"
tail -n 2 "$T/ptscope.err"
