#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every trace ptscope writes imports into Perfetto's trace processor with
# no error or data-loss stat and no invented thread (issue 21): each
# bundled sample recorded on each emulated engine (step, and qemu where it
# is installed), with kernel events and with --no-events, decoded into
# .fxt, .pftrace and .json; `ptscope run` straight into each format; and
# `ptscope convert` between them.  The tids a trace may hold are the ones
# the recorder traced, read from the recording itself (its THREAD, PT and
# PROCESS sections, docs/recording-format.md), never from a trace.
#
# To stay near a minute on 2 cores, qemu records every sample both ways
# and the single-step engine (thousands of times slower than the program,
# seconds per sample) a representative few that stay short when stepped:
# crash (a signal), recursion (longjmp), inline, slowcall (a sleep) and
# kevents (two threads, a blocking read, a signal, a fault).
# PERFETTO_IMPORT_ALL=1 records every sample on step too.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
B=${PTSCOPE_BUILD:-build}
TOP=${PTSCOPE_TOP:-.}
TP=${PERFETTO_TP:-$TOP/../shared/tools/perfetto/trace_processor_shell}
if [ ! -x "$P" ]; then
	skip perfetto_import "no ptscope binary at $P (run make first)"
	exit 0
fi
if [ ! -x "$TP" ]; then
	skip perfetto_import "no Perfetto trace processor at $TP (set PERFETTO_TP to one)"
	exit 0
fi
S=$B/samples
# name and arguments of every bundled sample (docs/samples.md)
SAMPLES=("demo" "crash" "threads" "recursion" "exceptions" "signals"
	"kevents" "slowcall 2 50" "sleepers" "aliases" "inline" "plugin 2"
	"exec_thread" "children 0.1" "qsortcb 0.1" "split 0.1" "busy 0.2")
STEP_FEW=" crash recursion inline slowcall kevents "

# The tids a recording's threads had: its THREAD, PT and PROCESS sections.
real_tids() {
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
if d[:8] != b'PTSCREC\n':
    sys.exit('not a recording')
off = struct.unpack_from('<I', d, 12)[0]
tids = set()
while off + 16 <= len(d):
    typ, _, n = struct.unpack_from('<IIQ', d, off)
    p = off + 16
    if typ in (3, 4):  # THREAD, PT: u64 pid, u64 tid
        pid, tid = struct.unpack_from('<QQ', d, p)
        tids.update((pid, tid))
    elif typ == 10:  # PROCESS: u64 pid, u64 ppid
        tids.add(struct.unpack_from('<Q', d, p)[0])
    off = p + n
print(' '.join(str(t) for t in sorted(tids)))
PY
}

# check NAME TRACE "TIDS": loads TRACE, fails on error/data-loss stats and
# on threads whose tid is not in TIDS (tid 0 is Perfetto's own idle
# thread, always present).
checked=0
check() {
	local name=$1 f=$2 tids=" $3 " out bad=""
	if ! out=$("$TP" query "$f" "select 'stat', name || '=' || value from stats
		where value > 0 and severity in ('error', 'data_loss')
		union all select 'tid', tid from thread where tid != 0" 2>&1); then
		fail "$name" "trace processor could not load $f: $(echo "$out" | tail -2)"
		return
	fi
	while IFS=, read -r kind val; do
		kind=${kind//\"/} val=${val//\"/}
		case $kind in
		stat) bad="$bad stat $val;" ;;
		tid) case $tids in *" $val "*) ;; *) bad="$bad thread $val not the target's;" ;; esac ;;
		esac
	done <<<"$(echo "$out" | tail -n +2)"
	checked=$((checked + 1))
	if [ -n "$bad" ]; then fail "$name" "$f:$bad"; else pass "$name"; fi
}

ENGINES="step"
if command -v qemu-x86_64 >/dev/null && [ -e "$B/qemu/libptscope-qemu.so" ]; then
	ENGINES="qemu step"
else
	skip perfetto_import_qemu "qemu-x86_64 or the qemu plugin is missing: step only"
fi
for eng in $ENGINES; do
	for spec in "${SAMPLES[@]}"; do
		set -- $spec
		s=$1
		shift
		for ev in events no-events; do
			if [ "$eng" = step ] && [ -z "${PERFETTO_IMPORT_ALL:-}" ] &&
				[[ $STEP_FEW != *" $s "* ]]; then
				continue
			fi
			evo=
			[ $ev = no-events ] && evo=--no-events
			rec=$T/$s.$eng.$ev.ptsc
			if ! timeout 120 "$P" record -q -b "$eng" $evo -o "$rec" \
				-- "$S/$s" "$@" >"$T/out" 2>&1 || [ ! -s "$rec" ]; then
				# crash dies of its signal, which record passes on
				if [ ! -s "$rec" ]; then
					fail "import_${s}_${eng}_$ev" "record failed: $(tail -2 "$T/out")"
					continue
				fi
			fi
			tids=$(real_tids "$rec")
			for fmt in fxt pftrace json; do
				if "$P" decode -q "$rec" -o "$rec.$fmt" >"$T/out" 2>&1; then
					check "import_${s}_${eng}_${ev}_$fmt" "$rec.$fmt" "$tids"
				else
					fail "import_${s}_${eng}_${ev}_$fmt" "decode failed: $(tail -2 "$T/out")"
				fi
			done
		done
	done
	# ptscope run straight into each format (kernel events on), and
	# convert between the formats (qemu: the quick one).
	[ "$eng" = qemu ] || continue
	for fmt in fxt pftrace json; do
		out=$T/run.$eng.$fmt
		"$P" run -q -b "$eng" -o "$out.$fmt" -- "$S/kevents" >"$T/out" 2>&1
		# no recording here: the tids the trace names that a kernel
		# can give (up to pid_max), which must be all Perfetto shows
		tids=$("$P" dump "$out.$fmt" 2>/dev/null |
			sed -n 's/^thread pid=\([0-9]*\) tid=\([0-9]*\).*/\1 \2/p' |
			tr ' ' '\n' | awk -v max="$(cat /proc/sys/kernel/pid_max)" \
			'$1 > 0 && $1 <= max' | tr '\n' ' ')
		check "run_kevents_${eng}_$fmt" "$out.$fmt" "$tids"
	done
	# Snapshots taken mid-run (a trigger, two of them): spans open at
	# the edge, and kernel events of threads the trace has no span of
	# (QEMU's own, waking the program).
	for fmt in fxt json; do
		out=$T/ms.$eng.$fmt
		rm -f "$T"/ms.$eng.*.$fmt
		"$P" run -q -b "$eng" --multi-snapshot=2 -t . -o "$out" \
			-- "$S/demo" >"$T/out" 2>&1
		for f in "$T"/ms.$eng.*.$fmt; do
			[ -e "$f" ] || { fail "run_demo_multi_${eng}_$fmt" "no snapshot written: $(tail -2 "$T/out")"; continue; }
			tids=$("$P" dump "$f" 2>/dev/null |
				sed -n 's/^thread pid=\([0-9]*\) tid=\([0-9]*\).*/\1 \2/p' |
				tr ' ' '\n' | awk -v max="$(cat /proc/sys/kernel/pid_max)" \
				'$1 > 0 && $1 <= max' | tr '\n' ' ')
			check "run_demo_multi_${eng}_$(basename "$f")" "$f" "$tids"
		done
	done
	rec=$T/kevents.$eng.events.ptsc
	tids=$(real_tids "$rec")
	for a in fxt pftrace json; do
		for b in fxt pftrace json; do
			[ $a = $b ] && continue
			if "$P" convert -q "$rec.$a" -o "$T/conv.$a.$b" --format "$b" >"$T/out" 2>&1; then
				check "convert_kevents_${eng}_${a}_to_$b" "$T/conv.$a.$b" "$tids"
			else
				fail "convert_kevents_${eng}_${a}_to_$b" "$(tail -2 "$T/out")"
			fi
		done
	done
done
[ "$checked" -gt 0 ] || fail perfetto_import "no trace was checked"
