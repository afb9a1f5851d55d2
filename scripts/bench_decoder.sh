#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Decoder throughput (called by `make bench`; writes docs/bench-decoder.md).
#
# Three streams, static programs recorded by ptscope's emulated
# backend, so the PT packets are real libipt-encoded packets of a real
# execution:
#   calls  three nested small functions in a loop: a span per 9
#          instructions, the worst case for the stack layer and writer;
#   loops  one small function with an inner loop: a span per ~70
#          instructions, closer to ordinary code;
#   raw    the calls stream with its code given as a raw memory image
#          (--raw FILE:ADDR, the way JIT code, the vDSO and dumped pages
#          arrive) instead of the ELF file;
#   cold   3,000 different functions, each run a few times: code seen
#          once or twice, where learning the code is most of the work (a
#          program's start-up, a large program's first pass);
#   python the start-up of the system's python3 (`/usr/bin/python3 -c
#          pass`, BENCH_PYTHON to change; its
#          libraries and their debug files as installed), recorded by
#          the qemu backend: a real program's mix of code run once and an
#          interpreter loop (skipped without qemu-x86_64).
# The PT bytes are taken out of each recording and decoded, in the same
# run, by:
#   bare block loop   build/tools/bare_blk          (pt_blk_next only)
#   bare insn loop    build/tools/bare_blk --insn   (pt_insn_next only)
#   flow layer        build/tools/bare_blk --flow   (branch events, ptscope's
#                     own flow engine) and --flow-libipt (libipt's block
#                     decoder under the same classification)
#   full path         ptscope decode --pt ... -o x.fxt  (flow + call stacks
#                     + symbols + file:line + Fuchsia writer), -j1 and, when
#                     decode has -j, on all cores (-j $(nproc)); and -j1 with
#                     --flow-engine libipt
# Each figure is the best of $ROUNDS rounds (the machine is shared).
# BENCH_CALLGRIND=1 also counts instructions executed (Ir) under callgrind
# for one pass of the bare block loop and of the full path: a second
# figure that machine noise does not move.
#
#   scripts/bench_decoder.sh [BUILD]   (ITER=20000 LOOP_ITER=20000 ROUNDS=5
#                                       ITER_LONG=100000 LOOP_ITER_LONG=500000
#                                       LONG_ROUNDS=7
#                                       BENCH_CALLGRIND=1 to change;
#                                       BENCH_OLD=/path/to/old/ptscope adds
#                                       its whole-command row, before/after)
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
ITER=${ITER:-20000}
LOOP_ITER=${LOOP_ITER:-20000}
COLD_FUNCS=${COLD_FUNCS:-3000} # stream 4's functions, each run COLD_ITER
COLD_ITER=${COLD_ITER:-3}     # times
ITER_LONG=${ITER_LONG:-100000}       # the long streams (target 2)
LOOP_ITER_LONG=${LOOP_ITER_LONG:-500000}
ROUNDS=${ROUNDS:-5}
# Rounds of the long streams: a few decodes in a row of them (each writes
# a trace of up to 100 MB) sometimes run 2-3x slower, so more than the
# tables' rounds, which are cheap here.
LONG_ROUNDS=${LONG_ROUNDS:-$((ROUNDS > 7 ? ROUNDS : 7))}
CALLGRIND=${BENCH_CALLGRIND:-0}
OLD=${BENCH_OLD:-} # another ptscope binary (before a change): one more row
REPS=5 # streams per full-path run (each decoded as its own thread)
P=$BUILD/ptscope
BARE=$BUILD/tools/bare_blk
PTVARIANT=$BUILD/tools/ptvariant
OUT=${BENCH_OUT:-docs/bench-decoder.md} # BENCH_OUT=FILE: a trial run elsewhere
# The cores this process may run on, when taskset can hold it to one.
ALLOWED=""
if command -v taskset >/dev/null; then
	ALLOWED=$(taskset -pc $$ | sed 's/.*: //' |
		awk -F, '{for (i = 1; i <= NF; i++) { n = split($i, r, "-");
			for (c = r[1]; c <= r[n]; c++) print c }}' | tr '\n' ' ')
fi
# The one-core rows are held to one core (BENCH_CORE, default the last
# allowed): a VM's cores can run at different speeds for minutes at a
# time, and a round's bare loop and full path, seconds apart, must meet
# the same one.
CORE=${BENCH_CORE:-$(echo $ALLOWED | awk '{print $NF}')}
ONE=()
if [ -n "$CORE" ] && taskset -c "$CORE" true 2>/dev/null; then
	ONE=(taskset -c "$CORE")
fi
for f in "$P" "$BARE"; do
	if [ ! -x "$f" ]; then
		echo "bench_decoder: $f is not built; run make first" >&2
		exit 1
	fi
done
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null; then
	echo "bench_decoder: BENCH_CALLGRIND=1 needs valgrind" >&2
	exit 1
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

cp samples/callchain.c "$W/calls.c"
cat >"$W/loops.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>

/* A checksum over a small table: ~70 instructions per call. */
static unsigned mix(const unsigned char *t, unsigned x)
{
	unsigned s = x;

	for (int i = 0; i < 12; i++)
		s = (s ^ t[(x + i) & 63]) * 16777619u;
	return s;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? strtoul(argv[1], 0, 0) : 1000, s = 0;
	unsigned char t[64];

	for (int i = 0; i < 64; i++)
		t[i] = (unsigned char)(i * 37 + 11);
	for (unsigned i = 0; i < n; i++)
		s += mix(t, i);
	printf("%u\n", s);
	return 0;
}
EOF

# Stream 4: COLD_FUNCS small functions with a loop and a branch of their
# own, called one after the other.
awk -v n="$COLD_FUNCS" 'BEGIN {
	print "#include <stdio.h>\n#include <stdlib.h>"
	for (i = 0; i < n; i++) {
		a = (i * 37) % 97 + 1; b = i % 9 + 3
		printf "__attribute__((noinline)) static unsigned f%d(unsigned x)\n{\n", i
		printf "\tunsigned s = x * %d;\n\tfor (unsigned k = 0; k < (x & %d); k++)\n", a, b
		printf "\t\ts = (s ^ k) & %d ? s + k * %d : s ^ (s >> %d);\n", 2 ^ (i % 5), a, b % 7 + 1
		printf "\treturn s %% %d == 1 ? s + 1 : s;\n}\n", b
	}
	print "int main(int argc, char **argv)\n{"
	print "\tunsigned r = argc > 1 ? atoi(argv[1]) : 1, s = 0;\n\tfor (unsigned j = 0; j < r; j++) {"
	for (i = 0; i < n; i++)
		printf "\t\ts += f%d(s + %d);\n", i, i
	print "\t}\n\tprintf(\"%u\\n\", s);\n\treturn 0;\n}"
}' >"$W/cold.c"

# record NAME ITER [OUT]: build $W/NAME, record ITER iterations of it and
# extract the PT to $W/OUT.pt (OUT: NAME)
record() {
	local out=${3:-$1}
	if [ ! -x "$W/$1" ] &&
		! gcc -O1 -g -fno-inline -static -no-pie -o "$W/$1" "$W/$1.c"; then
		echo "bench_decoder: cannot build a static program (libc.a missing?)" >&2
		exit 1
	fi
	echo "bench_decoder: recording $1 ($2 iterations) with the emulated backend..."
	if ! "$P" record -q -b emulated -s 512M -o "$W/$out.ptsc" -- "$W/$1" "$2" \
		>/dev/null 2>"$W/rec.err"; then
		echo "bench_decoder: recording failed: $(tail -2 "$W/rec.err")" >&2
		exit 1
	fi
	scripts/ptsc_pt.py "$W/$out.ptsc" "$W/$out.pt"
	if [ ! -s "$W/$out.pt" ]; then
		echo "bench_decoder: no PT in the $1 recording" >&2
		exit 1
	fi
}

decoding_secs() { # ERR-FILE PASSES: decode --stats' time, per pass
	grep -o '([0-9.]* s decoding)' "$1" | tr -d '(' |
		awk -v n="$2" '{print $1 / n}'
}

best() { # smallest number on stdin
	sort -g | head -1
}
median_ratio() { # FILE-A FILE-B: median over lines of A's number / B's
	paste "$1" "$2" | awk '$2 > 0 {print $1 / $2}' | sort -g |
		awk '{v[NR] = $1} END {
			if (!NR) { print "n/a"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f", m }'
}
now() { date +%s.%N; }

# write_secs FILE: seconds to write FILE's bytes to a new file in 256 KiB
# writes, its space allocated first, as the .fxt writer and its sink do:
# what writing the trace costs with no decoding at all
write_secs() {
	"${ONE[@]}" python3 - "$1" "$W/w.bin" <<'EOF'
import os, sys, time
data = open(sys.argv[1], 'rb').read()
view = memoryview(data)
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
try:
    os.posix_fallocate(fd, 0, len(data))
except OSError:
    pass
t = time.perf_counter()
for i in range(0, len(data), 262144):
    os.write(fd, view[i:i + 262144])
t = time.perf_counter() - t
os.close(fd)
os.unlink(sys.argv[2])
print(t)
EOF
}

# measure NAME PT CODE-ARGS...: the rounds for stream NAME, into $W/NAME.*
measure() {
	local s=$1 pt=$2 args=() r t0 t1
	shift 2
	local code=("$@")
	for _ in $(seq $REPS); do args+=(--pt "$pt"); done
	: >"$W/$s.blk" >"$W/$s.insn" >"$W/$s.flow" >"$W/$s.full" \
		>"$W/$s.wall" >"$W/$s.noinfo" >"$W/$s.iflow" >"$W/$s.ifull" \
		>"$W/$s.jfull" >"$W/$s.jwall" >"$W/$s.write"
	for r in $(seq "$ROUNDS"); do
		"${ONE[@]}" "$BARE" "${code[@]}" --repeat 5 "$pt" >"$W/b.out"
		awk '{print $NF}' "$W/b.out" >>"$W/$s.blk"
		awk '{print $2}' "$W/b.out" >"$W/$s.insns"
		"${ONE[@]}" "$BARE" --insn "${code[@]}" --repeat 2 "$pt" |
			awk '{print $NF}' >>"$W/$s.insn"
		"${ONE[@]}" "$BARE" --flow "${code[@]}" --repeat 5 "$pt" |
			awk '{print $NF}' >>"$W/$s.flow"
		"${ONE[@]}" "$BARE" --flow-libipt "${code[@]}" --repeat 5 "$pt" |
			awk '{print $NF}' >>"$W/$s.iflow"
		"${ONE[@]}" "$P" decode "${args[@]}" "${code[@]}" $J1 -o "$W/$s.i.fxt" \
			--stats --flow-engine libipt 2>"$W/$s.i.err"
		decoding_secs "$W/$s.i.err" $REPS >>"$W/$s.ifull"
		t0=$(now)
		"${ONE[@]}" "$P" decode "${args[@]}" "${code[@]}" $J1 -o "$W/$s.fxt" --stats \
			2>"$W/$s.err"
		t1=$(now)
		decoding_secs "$W/$s.err" $REPS >>"$W/$s.full"
		echo "$t0 $t1" | awk -v n=$REPS '{print ($2 - $1) / n}' >>"$W/$s.wall"
		write_secs "$W/$s.fxt" | awk -v n=$REPS '{print $1 / n}' >>"$W/$s.write"
		"${ONE[@]}" "$P" decode "${args[@]}" "${code[@]}" $J1 -o "$W/$s.2.fxt" \
			--stats --no-info 2>"$W/$s.noinfo.err"
		decoding_secs "$W/$s.noinfo.err" $REPS >>"$W/$s.noinfo"
		if [ -n "$OLD" ]; then
			t0=$(now)
			"$OLD" decode "${args[@]}" "${code[@]}" -o "$W/$s.old.fxt" \
				2>/dev/null
			t1=$(now)
			echo "$t0 $t1" |
				awk -v n=$REPS '{print ($2 - $1) / n}' >>"$W/$s.oldwall"
		fi
		if [ -n "$JN" ]; then
			t0=$(now)
			"$P" decode "${args[@]}" "${code[@]}" $JN \
				-o "$W/$s.j.fxt" --stats 2>"$W/$s.j.err"
			t1=$(now)
			echo "$t0 $t1" |
				awk -v n=$REPS '{print ($2 - $1) / n}' >>"$W/$s.jwall"
			decoding_secs "$W/$s.j.err" $REPS >>"$W/$s.jfull"
			cmp -s "$W/$s.fxt" "$W/$s.j.fxt" ||
				echo "bench_decoder: $s: -j output differs from -j1" >&2
		fi
	done
	if [ "$CALLGRIND" = 1 ]; then
		valgrind --tool=callgrind --callgrind-out-file="$W/$s.cg.blk" \
			"$BARE" "${code[@]}" "$pt" >/dev/null 2>&1
		valgrind --tool=callgrind --callgrind-out-file="$W/$s.cg.full" \
			"$P" decode --pt "$pt" "${code[@]}" $J1 \
			-o "$W/$s.cg.fxt" >/dev/null 2>&1
		if [ -n "$OLD" ]; then
			valgrind --tool=callgrind \
				--callgrind-out-file="$W/$s.cg.old" \
				"$OLD" decode --pt "$pt" "${code[@]}" \
				-o "$W/$s.cg.fxt" >/dev/null 2>&1
		fi
	fi
}

record calls "$ITER"
record loops "$LOOP_ITER"
record cold "$COLD_ITER"
# The calls program's executable PT_LOAD segment as a raw image.
read -r RAW_OFF RAW_ADDR RAW_SIZE < <(readelf -lW "$W/calls" |
	awk '$1 == "LOAD" && / E / {print $2, $3, $5; exit}')
dd if="$W/calls" of="$W/raw.bin" bs=4096 skip=$((RAW_OFF)) count=$((RAW_SIZE)) \
	status=none iflag=skip_bytes,count_bytes
cp "$W/calls.pt" "$W/raw.pt"
# All cores when decode has -j; -j1 for the one-core rows then.
NCPU=$(nproc)
J1="" JN=""
if "$P" decode --help 2>&1 | grep -q -- '--jobs N'; then
	J1="-j1" JN="-j$NCPU"
fi
measure calls "$W/calls.pt" --elf "$W/calls"
measure loops "$W/loops.pt" --elf "$W/loops"
measure raw "$W/raw.pt" --raw "$W/raw.bin:$RAW_ADDR"
measure cold "$W/cold.pt" --elf "$W/cold"
# Stream 6: stream 1 in cycle-accurate form (a CYC before each packet that
# carries flow, a CBR in each PSB+; calibrated by CBR and the nominal
# frequency), as perf's intel_pt/cyc=1/ and magic-trace record.
"$PTVARIANT" --cyc --cbr 30 "$W/calls.pt" "$W/cyc.pt" 2>/dev/null
CYC_ARGS=(--nom-freq 12 --elf "$W/calls")
measure cyc "$W/cyc.pt" "${CYC_ARGS[@]}"
# Stream 7: stream 1 timed as perf records by default (intel_pt//: a TSC
# and a TMA in each PSB+, an MTC every 8 crystal-clock ticks; no TSC every
# 8 ns as the emulated backends write): what a CPU's stream looks like.
"$PTVARIANT" --mtc-clock "$W/calls.pt" "$W/mtc.pt" 2>/dev/null
MTC_TIMING=(--mtc-freq 3 --cpuid-15 2,100) # how such a stream is decoded
MTC_ARGS=("${MTC_TIMING[@]}" --elf "$W/calls")
measure mtc "$W/mtc.pt" "${MTC_ARGS[@]}"
# Streams 8-10: streams 1, 2 and 5 as a CPU writes them: stream 7's timing
# and TNT bits packed six to a packet (ptvariant --tnt-full).  The emulated
# backends end a TNT at every other packet, so theirs hold 2-3 bits where
# most of a CPU's hold 6.  as_cpu NAME: $W/NAME.pt so, into $W/NAME_cpu.pt
as_cpu() {
	"$PTVARIANT" --mtc-clock --tnt-full "$W/$1.pt" "$W/$1_cpu.pt" 2>/dev/null
}
LOOPS_MTC_ARGS=("${MTC_TIMING[@]}" --elf "$W/loops")
as_cpu calls
measure calls_cpu "$W/calls_cpu.pt" "${MTC_ARGS[@]}"
as_cpu loops
measure loops_cpu "$W/loops_cpu.pt" "${LOOPS_MTC_ARGS[@]}"
# Stream 5: python3's start-up, with the code of every module it maps.
# The distribution's binary itself (a wrapper such as pyenv's shim would
# add a shell and an exec: more than one image to give the bare loop).
PYTHON=${BENCH_PYTHON:-/usr/bin/python3}
PY=""
if command -v qemu-x86_64 >/dev/null && [ -x "$PYTHON" ]; then
	echo "bench_decoder: recording $PYTHON -c pass with the qemu backend..."
	mkdir -p "$W/pycode"
	if "$P" record -q -b qemu -s 512M -o "$W/python.ptsc" -- \
		"$PYTHON" -c pass >/dev/null 2>"$W/rec.err" &&
		scripts/ptsc_pt.py "$W/python.ptsc" "$W/python.pt" "$W/pycode" \
			>"$W/python.args" && [ -s "$W/python.pt" ]; then
		mapfile -t PY <"$W/python.args"
		measure python "$W/python.pt" "${PY[@]}"
		as_cpu python
		measure python_cpu "$W/python_cpu.pt" "${MTC_TIMING[@]}" \
			"${PY[@]}"
	else
		echo "bench_decoder: python3 could not be recorded: $(tail -1 "$W/rec.err")" >&2
		PY=""
	fi
fi
# once NAME PT CODE-ARGS...: one pass over a stream in a fresh process,
# nothing learned or cached before it: bare block loop and full path -j1
# into $W/NAME.blk1 and $W/NAME.full1
once() {
	local s=$1 pt=$2
	shift 2
	: >"$W/$s.blk1" >"$W/$s.full1"
	for _ in $(seq "$ROUNDS"); do
		"${ONE[@]}" "$BARE" "$@" "$pt" | awk '{print $NF}' >>"$W/$s.blk1"
		"${ONE[@]}" "$P" decode --pt "$pt" "$@" $J1 -o "$W/$s.1.fxt" --stats \
			2>"$W/$s.1.err"
		decoding_secs "$W/$s.1.err" 1 >>"$W/$s.full1"
	done
}
once cold "$W/cold.pt" --elf "$W/cold"
once calls "$W/calls.pt" --elf "$W/calls"
[ -n "$PY" ] && once python "$W/python.pt" "${PY[@]}"

# long NAME PT CODE-ARGS...: one long stream decoded with -j1 and on all
# cores, decode time of each round into $W/NAME.l1 and $W/NAME.lN; and
# with -j1 held to each core in turn (taskset), into $W/NAME.cK: a
# virtual machine's cores need not run at the same speed, and what all of
# them can do together is bounded by the sum of their speeds
long() {
	local s=$1 pt=$2 j c
	shift 2
	: >"$W/$s.l1" >"$W/$s.lN" >"$W/$s.tall"
	for c in $CORES; do : >"$W/$s.c$c"; done
	for _ in $(seq "$LONG_ROUNDS"); do
		for j in 1 N; do
			jobs=-j1
			[ $j = N ] && jobs=$JN
			"$P" decode --pt "$pt" "$@" $jobs \
				-o "$W/$s.l$j.fxt" --stats 2>"$W/$s.l$j.err"
			decoding_secs "$W/$s.l$j.err" 1 >>"$W/$s.l$j"
		done
		for c in $CORES; do
			taskset -c "$c" "$P" decode --pt "$pt" "$@" -j1 \
				-o "$W/$s.c.fxt" --stats 2>"$W/$s.c.err"
			decoding_secs "$W/$s.c.err" 1 >>"$W/$s.c$c"
		done
		# and one -j1 decode on every core at once: what the machine
		# gives each core while all of them work (a shared memory
		# bus, a host's clock, SMT siblings) bounds -jN too
		if [ -n "$CORES" ]; then
			for c in $CORES; do
				taskset -c "$c" "$P" decode --pt "$pt" "$@" -j1 \
					-o "$W/$s.t$c.fxt" --stats 2>"$W/$s.t$c.err" &
			done
			wait
			for c in $CORES; do decoding_secs "$W/$s.t$c.err" 1; done |
				sort -g | tail -1 >>"$W/$s.tall"
		fi
		cmp -s "$W/$s.l1.fxt" "$W/$s.lN.fxt" ||
			echo "bench_decoder: $s: -j output differs from -j1" >&2
	done
}
# fastest_alone NAME: the best -j1 time of any core held alone (long's
# $W/NAME.cK)
fastest_alone() {
	for c in $CORES; do best <"$W/$1.c$c"; done | best
}
# each allowed core in turn (up to 16 of them)
CORES=""
[ "$NCPU" -le 16 ] && CORES=$ALLOWED
if [ -n "$JN" ]; then
	record calls "$ITER_LONG" calls_long
	record loops "$LOOP_ITER_LONG" loops_long
	long calls_long "$W/calls_long.pt" --elf "$W/calls"
	"$PTVARIANT" --cyc --cbr 30 "$W/calls_long.pt" "$W/cyc_long.pt" 2>/dev/null
	long cyc_long "$W/cyc_long.pt" "${CYC_ARGS[@]}"
	long loops_long "$W/loops_long.pt" --elf "$W/loops"
	as_cpu calls_long
	long calls_long_cpu "$W/calls_long_cpu.pt" "${MTC_ARGS[@]}"
	as_cpu loops_long
	long loops_long_cpu "$W/loops_long_cpu.pt" "${LOOPS_MTC_ARGS[@]}"
fi
LONGS="calls_long loops_long cyc_long calls_long_cpu loops_long_cpu"

# peak NAME PT ARGS...: the peak resident memory (KB) of a -j1 and a -jN
# decode of PT, to $W/NAME.m1 and $W/NAME.mN, and its spans to
# $W/NAME.mspans.  The PT file is mapped, so it counts in it.
peak() {
	local s=$1 pt=$2
	shift 2
	stat -c %s "$pt" >"$W/$s.ptsize"
	for j in $J1 $JN; do
		python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL,
               stderr=open(sys.argv[1] + ".err", "w"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
			"$W/$s.mem" "$P" decode --pt "$pt" "$@" "$j" --stats \
			-o "$W/m.fxt" >"$W/$s.m${j#-j}"
		grep -o '[0-9]* spans in' "$W/$s.mem.err" | cut -d' ' -f1 \
			>"$W/$s.mspans"
	done
	rm -f "$W/m.fxt"
}
# Memory against trace length: stream 1's program recorded for 1, 5, 40
# and 80 times its iterations, in both forms
MEMS=""
if [ -n "$JN" ]; then
	for x in 8 16; do
		record calls "$((ITER_LONG * x))" "calls_x$x"
		as_cpu "calls_x$x"
	done
	for s in calls calls_long calls_x8 calls_x16; do
		peak "$s" "$W/$s.pt" --elf "$W/calls"
		peak "${s}_cpu" "$W/${s}_cpu.pt" "${MTC_ARGS[@]}"
		MEMS="$MEMS $s ${s}_cpu"
	done
	rm -f "$W"/calls_x*.pt "$W"/calls_x*.ptsc
fi

# line STREAM NAME SECONDS: one table row
line() {
	awk -v name="$2" -v s="$3" -v i="$(cat "$W/$1.insns")" \
		-v b="$(stat -c %s "$W/$1.pt")" -v base="$(best <"$W/$1.blk")" \
		'BEGIN { printf "| %s | %.1f | %.1f | %.1f | %.0f%% |\n", name, s * 1000, i / s / 1e6, b / s / 1e6, base / s * 100 }'
}
irs() { # total Ir of a callgrind output
	awk '/^summary:/ {print $2}' "$1"
}
# table STREAM
table() {
	local s=$1
	echo "| path | ms per pass | M instructions/s | PT MB/s | vs bare block loop |"
	echo "|---|---|---|---|---|"
	line "$s" "bare libipt block loop (pt_blk_next)" "$(best <"$W/$s.blk")"
	line "$s" "bare libipt instruction loop (pt_insn_next)" "$(best <"$W/$s.insn")"
	line "$s" "flow layer, libipt's block decoder (--flow-engine libipt)" "$(best <"$W/$s.iflow")"
	line "$s" "flow layer, ptscope's flow engine (the default)" "$(best <"$W/$s.flow")"
	line "$s" "full path with libipt's block decoder" "$(best <"$W/$s.ifull")"
	line "$s" "full path: flow + stacks + symbols + .fxt writer" "$(best <"$W/$s.full")"
	line "$s" "full path without span args (--no-info)" "$(best <"$W/$s.noinfo")"
	line "$s" "full path, whole command (ELF/DWARF load, file written)" "$(best <"$W/$s.wall")"
	line "$s" "the trace's bytes alone, written to a file (no decoding)" "$(best <"$W/$s.write")"
	if [ -n "$OLD" ]; then
		line "$s" "BENCH_OLD binary, whole command (its defaults)" "$(best <"$W/$s.oldwall")"
	fi
	if [ -n "$JN" ]; then
		line "$s" "full path on all $NCPU cores ($JN)" "$(best <"$W/$s.jfull")"
		line "$s" "full path, whole command, all $NCPU cores ($JN)" "$(best <"$W/$s.jwall")"
	else
		echo "| full path on all cores | (decode has no -j yet) | | | |"
	fi
	echo
	awk -v f="$(best <"$W/$s.full")" -v n="$(best <"$W/$s.insn")" \
		'BEGIN { printf "Full path vs the instruction loop: %.2fx as fast.\n", n / f }'
	awk -v b="$(best <"$W/$s.blk")" -v f="$(best <"$W/$s.flow")" \
		'BEGIN { printf "Flow engine alone vs the bare block loop: %.2fx as fast.\n", b / f }'
	awk -v b="$(best <"$W/$s.blk")" -v w="$(best <"$W/$s.full")" \
		'BEGIN { printf "Issue 19 target 1 (full path on one core >= 1.5x the bare block loop): %.2fx, %s", b / w, (b / w >= 1.5 ? "met" : "not met") }'
	echo "; the median of the rounds' own ratios (each round's two measured" \
		"seconds apart): $(median_ratio "$W/$s.blk" "$W/$s.full")x."
	awk -v b="$(best <"$W/$s.blk")" -v w="$(best <"$W/$s.wall")" \
		'BEGIN { printf "The same with the whole command (ELF/DWARF load, file written): %.2fx.\n", b / w }'
	awk -v b="$(best <"$W/$s.blk")" -v f="$(best <"$W/$s.flow")" \
		-v t="$(best <"$W/$s.write")" \
		'BEGIN { printf "The most the full path could reach here, were call stacks, symbols and encoding free (flow layer + writing the trace): %.1f ms a pass, %.2fx the bare block loop.\n", (f + t) * 1000, b / (f + t) }'
	if [ -n "$JN" ]; then
		awk -v w="$(best <"$W/$s.full")" -v j="$(best <"$W/$s.jfull")" -v n="$NCPU" -v reps=$REPS \
			'BEGIN { printf "All %d cores against one on these %d streams: %.2fx (issue 19 target 2, on a long stream: see Long streams below).\n", n, reps, w / j }'
		awk -v w="$(best <"$W/$s.wall")" -v j="$(best <"$W/$s.jwall")" \
			'BEGIN { printf "The same with the whole command: %.2fx.\n", w / j }'
	fi
	echo "Full path errors: \`$(grep '^errors:' "$W/$s.err")\` (per $REPS passes)."
	echo "The .fxt of $REPS passes is $(stat -c %s "$W/$s.fxt") bytes."
	if [ "$CALLGRIND" = 1 ]; then
		awk -v b="$(irs "$W/$s.cg.blk")" -v f="$(irs "$W/$s.cg.full")" \
			'BEGIN { printf "Callgrind, one pass each (whole process): bare block loop %.0f M Ir, full path %.0f M Ir, Ir ratio %.0f%%.\n", b / 1e6, f / 1e6, b / f * 100 }'
		if [ -n "$OLD" ]; then
			awk -v b="$(irs "$W/$s.cg.blk")" -v f="$(irs "$W/$s.cg.old")" \
				'BEGIN { printf "Callgrind, BENCH_OLD binary: %.0f M Ir, Ir ratio %.0f%%.\n", f / 1e6, b / f * 100 }'
		fi
	fi
}
spans() { # spans per pass
	grep -o '[0-9]* spans in' "$W/$1.err" | awk -v n=$REPS '{print $1 / n}'
}

{
	echo "# Decoder throughput"
	echo
	echo "Measured by \`scripts/bench_decoder.sh\` (\`make bench\`) on $(date -u +%Y-%m-%d),"
	echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores shared with other work;"
	echo "best of $ROUNDS rounds, all paths measured in the same run."
	if [ ${#ONE[@]} -gt 0 ]; then
		echo "The one-core rows (bare loops, flow layer, full path -j1) ran"
		echo "held to core $CORE (\`taskset\`), so that a round's bare loop and"
		echo "full path, seconds apart, ran on the same core; the -j rows on all."
	fi
	echo
	echo "## Stream 1: call-heavy"
	echo
	echo "A static program (\`main → top → mid → leaf\`, $ITER iterations)"
	echo "recorded by the emulated backend (returns compressed, a TNT bit"
	echo "each, as a CPU writes them by default): $(stat -c %s "$W/calls.pt") bytes of PT,"
	echo "$(cat "$W/calls.insns") instructions, $(spans calls) spans per pass (a span per"
	echo "$(awk -v i="$(cat "$W/calls.insns")" -v s="$(spans calls)" 'BEGIN { printf "%.0f", i / s }') instructions: the worst case for the stack layer and the writer)."
	echo
	table calls
	echo
	echo "## Stream 2: loop-heavy"
	echo
	echo "A static program calling one function with a 12-step inner loop"
	echo "($LOOP_ITER iterations): $(stat -c %s "$W/loops.pt") bytes of PT, $(cat "$W/loops.insns") instructions,"
	echo "$(spans loops) spans per pass (a span per $(awk -v i="$(cat "$W/loops.insns")" -v s="$(spans loops)" 'BEGIN { printf "%.0f", i / s }') instructions)."
	echo
	table loops
	echo
	echo "## Stream 3: raw code image"
	echo
	echo "Stream 1's PT with the program's code given as a raw image"
	echo "(\`--raw FILE:$RAW_ADDR\`, the executable segment's $RAW_SIZE bytes)"
	echo "instead of the ELF file: no symbols, so spans are named module+offset."
	echo "The bare loops get the file as libipt's own section (\`pt_image_add_file\`,"
	echo "what ptxed --raw does); ptscope takes it through its image (\`img_add_raw\`)."
	echo
	table raw
	echo
	echo "## Stream 4: code run once"
	echo
	echo "A static program of $COLD_FUNCS small functions (a loop and a branch each),"
	echo "called one after the other, $COLD_ITER times: $(stat -c %s "$W/cold.pt") bytes of PT,"
	echo "$(cat "$W/cold.insns") instructions, $(spans cold) spans per pass.  Each"
	echo "block is seen a few times, so learning the code is most of the"
	echo "work, as in a program's start-up.  The table's passes after the"
	echo "first find the code learned; the first pass alone, in a fresh"
	echo "process each (decode time; the bare loop's image is loaded before"
	echo "its clock starts, as decode's is):"
	echo
	echo "| stream | bare block loop, one pass | full path -j1, one pass | full vs bare |"
	echo "|---|---|---|---|"
	for s in cold calls $([ -n "$PY" ] && echo python); do
		awk -v n="$s" -v b="$(best <"$W/$s.blk1")" -v f="$(best <"$W/$s.full1")" \
			'BEGIN { printf "| %s | %.1f ms | %.1f ms | %.2fx |\n", n, b * 1000, f * 1000, b / f }'
	done
	echo
	table cold
	echo
	echo "## Stream 5: a real program's start-up"
	echo
	if [ -n "$PY" ]; then
		echo "\`$PYTHON -c pass\` ($("$PYTHON" --version 2>&1)) recorded by the"
		echo "qemu backend: $(stat -c %s "$W/python.pt") bytes of PT, $(cat "$W/python.insns") instructions,"
		echo "$(spans python) spans per pass, through $(grep -c '^--elf' "$W/python.args") modules (each given as"
		echo "\`--elf FILE:BASE\` where the recording saw it mapped; file:line from"
		echo "their debug files where installed).  Its first pass alone is in"
		echo "stream 4's table above."
		echo
		table python
	else
		echo "(not measured: needs qemu-x86_64 and $PYTHON)"
	fi
	echo
	echo "## Stream 6: cycle-accurate"
	echo
	echo "Stream 1's PT as a CPU with cycle-accurate mode writes it (perf's"
	echo "\`intel_pt/cyc=1/\`, what magic-trace records): \`build/tools/ptvariant --cyc\`"
	echo "adds a CYC packet before each packet that carries flow, a cycle count"
	echo "from a fixed sequence, and a CBR to each PSB+; decoded with"
	echo "\`--nom-freq 12\`, so CYC's time is calibrated from the first PSB+:"
	echo "$(stat -c %s "$W/cyc.pt") bytes of PT.  Until 2026-11-29 ptscope's flow"
	echo "engine handed every stream with a CYC to libipt: the row \"full path"
	echo "with libipt's block decoder\" is what it did then."
	echo
	table cyc
	echo
	echo "## Stream 7: call-heavy, timed as perf records by default"
	echo
	echo "Stream 1's PT with the timing packets a CPU writes under perf's"
	echo "defaults (\`intel_pt//\`: TSC and MTC on, MTCFreq 3, no CYC):"
	echo "\`build/tools/ptvariant --mtc-clock\` keeps a TSC and adds a TMA in each"
	echo "PSB+ and writes an MTC each time the crystal clock passes 8 ticks"
	echo "instead of the TSC the emulated backend writes every 8 ns; decoded"
	echo "with \`--mtc-freq 3 --cpuid-15 2,100\`: $(stat -c %s "$W/mtc.pt") bytes"
	echo "of PT against stream 1's $(stat -c %s "$W/calls.pt"), mostly TNT, as a CPU's"
	echo "stream is.  The same flow, calls and spans as stream 1."
	echo
	table mtc
	echo
	echo "## Streams 8-10: as a CPU writes them"
	echo
	echo "Streams 1, 2 and 5 with stream 7's timing and their TNT bits packed"
	echo "as a CPU packs them, six to a packet, a packet ended early only by"
	echo "one that is not a timing packet (\`build/tools/ptvariant --mtc-clock"
	echo "--tnt-full\`).  The emulated backends end a TNT packet at every other"
	echo "packet, so theirs hold 2-3 bits; a CPU fills most of its own (57,248"
	echo "of the 69,516 in the Skylake perf.data of shared/testdata/real-pt"
	echo "hold 6).  Decoded with \`--mtc-freq 3 --cpuid-15 2,100\`; the same"
	echo "flow, calls and spans as the streams they come from.  (Their PSBs"
	echo "stay where the emulated streams had them, so they come more often"
	echo "for the bytes than a CPU's would.)"
	echo
	echo "### Stream 8: call-heavy (stream 1), $(stat -c %s "$W/calls_cpu.pt") bytes of PT"
	echo
	table calls_cpu
	echo
	echo "### Stream 9: loop-heavy (stream 2), $(stat -c %s "$W/loops_cpu.pt") bytes of PT"
	echo
	table loops_cpu
	echo
	if [ -n "$PY" ]; then
		echo "### Stream 10: python3's start-up (stream 5), $(stat -c %s "$W/python_cpu.pt") bytes of PT"
		echo
		table python_cpu
		echo
	fi
	if [ -n "$JN" ]; then
		echo "## Long streams: one core against all $NCPU (issue 19 target 2)"
		echo
		echo "One stream each, decoded whole: streams 1 and 2's programs run"
		echo "$ITER_LONG and $LOOP_ITER_LONG iterations (cyc_long: calls_long in"
		echo "stream 6's cycle-accurate form; the _cpu ones: as a CPU writes"
		echo "them, streams 8-10's form).  Decode time, best of $LONG_ROUNDS."
		echo
		echo "| stream | PT bytes | spans | -j1 ms | $JN ms | $JN vs -j1 | median of the rounds' ratios |"
		echo "|---|---|---|---|---|---|---|"
		for s in $LONGS; do
			awk -v n="$s" -v b="$(stat -c %s "$W/$s.pt")" \
				-v sp="$(grep -o '[0-9]* spans in' "$W/$s.l1.err" | cut -d' ' -f1)" \
				-v a="$(best <"$W/$s.l1")" -v j="$(best <"$W/$s.lN")" \
				-v m="$(median_ratio "$W/$s.l1" "$W/$s.lN")" \
				'BEGIN { printf "| %s | %d | %d | %.1f | %.1f | %.2fx %s | %sx |\n", n, b, sp, a * 1000, j * 1000, a / j, (a / j >= 1.8 ? "(target met)" : "(target not met)"), m }'
		done
		echo
		if [ -n "$CORES" ]; then
			echo "The same -j1 decodes held to one core each (\`taskset -c K\`),"
			echo "in the same rounds.  If the cores run at different speeds, $JN"
			echo "can at best do what they do together: the fastest core's -j1"
			echo "time divided by each core's, summed (\"bound\"; $NCPU for equal"
			echo "cores).  $JN is compared here with the fastest core's -j1."
			echo
			hdr="| stream |" sep="|---|"
			for c in $CORES; do
				hdr="$hdr -j1 on core $c, ms |" sep="$sep---|"
			done
			echo "$hdr bound for $JN | $JN vs the fastest core | share of the bound |"
			echo "$sep---|---|---|"
			for s in $LONGS; do
				row="| $s |" sum=0
				a=$(fastest_alone "$s")
				for c in $CORES; do
					t=$(best <"$W/$s.c$c")
					row="$row $(awk -v t="$t" 'BEGIN { printf "%.1f", t * 1000 }') |"
					sum=$(awk -v s="$sum" -v a="$a" -v t="$t" 'BEGIN { print s + a / t }')
				done
				awk -v r="$row" -v b="$sum" -v a="$a" -v j="$(best <"$W/$s.lN")" \
					'BEGIN { printf "%s %.2fx | %.2fx | %.0f%% |\n", r, b, a / j, a / j / b * 100 }'
			done
			echo
			echo "The same -j1 decode run on all $NCPU cores at once (one copy"
			echo "held to each core), in the same rounds: a core's speed while"
			echo "every core works, which is what $JN gets.  \"Together\": the"
			echo "slowest copy's time; the machine's own bound for $JN is $NCPU"
			echo "times the fastest core's -j1 alone divided by it."
			echo
			echo "| stream | -j1 alone, fastest core, ms | $NCPU copies together, ms | machine's bound for $JN | $JN vs -j1 alone | share of that bound |"
			echo "|---|---|---|---|---|---|"
			for s in $LONGS; do
				a=$(fastest_alone "$s")
				awk -v n="$s" -v a="$a" -v t="$(best <"$W/$s.tall")" \
					-v j="$(best <"$W/$s.lN")" -v k="$NCPU" \
					'BEGIN { b = k * a / t; printf "| %s | %.1f | %.1f | %.2fx | %.2fx | %.0f%% |\n", n, a * 1000, t * 1000, b, a / j, a / j / b * 100 }'
			done
			echo
		fi
	fi
	if [ -n "$MEMS" ]; then
		echo "## Memory against trace length"
		echo
		echo "Stream 1's program recorded for $ITER, $ITER_LONG, $((ITER_LONG * 8))"
		echo "and $((ITER_LONG * 16)) iterations (calls, calls_long, calls_x8,"
		echo "calls_x16), as the emulated backend writes it and as a CPU writes"
		echo "it (_cpu): the peak resident memory of one decode (getrusage),"
		echo "with the PT file, which decode maps and reads whole, and less its"
		echo "size.  $JN keeps at most $((NCPU + 2)) parts of a stream decoded"
		echo "and not yet written, each of at most 64 KiB of PT: its memory"
		echo "grows with the stream until the parts are that long, then stays."
		echo
		echo "| stream | PT bytes | spans | -j1 peak, MB | -j1 less the PT, MB | $JN peak, MB | $JN less the PT, MB |"
		echo "|---|---|---|---|---|---|---|"
		for s in $MEMS; do
			awk -v n="$s" -v b="$(cat "$W/$s.ptsize")" \
				-v sp="$(cat "$W/$s.mspans")" \
				-v a="$(cat "$W/$s.m1")" -v j="$(cat "$W/$s.m$NCPU")" \
				'BEGIN { printf "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f |\n", n, b, sp, a / 1024, (a * 1024 - b) / 1048576, j / 1024, (j * 1024 - b) / 1048576 }'
		done
		echo
	fi
	echo "Reproduce: \`make && scripts/bench_decoder.sh\` (ITER=N, LOOP_ITER=N for"
	echo "longer streams in the tables, ITER_LONG=N, LOOP_ITER_LONG=N for the"
	echo "long ones; the emulated recording takes about 4 ms per 1,000"
	echo "iterations of stream 1; BENCH_CALLGRIND=1 adds the Ir counts;"
	echo "BENCH_OLD=/path/to/an/older/ptscope adds its whole-command row, for a"
	echo "before/after comparison in the same run).  Each -j run's .fxt is"
	echo "compared with the -j1 one (a message on stderr if they differ)."
	echo
	cat <<'EOT'
Noise: the machine is shared, so single runs of the same binary vary by
up to 2x (the bare loop alone measured 24-50 ms per pass within minutes);
each table keeps each path's best round, all taken in the same run.  The
callgrind Ir counts do not move with the load.

## Issue 19 (decode faster than libipt), where it stands

- **ptscope's own flow engine** (decoder/fast_*.c, the default; see
  docs/decode.md "The flow engine") follows the packets itself, with
  libipt 2.0.5's rules function by function (query decoder, block
  decoder, pt_time and pt_time_cal for TSC/TMA/MTC/CBR/CYC, overflows,
  errata BDM70, SKD007, SKD022 and SKL168), over a
  cache of "runs": the instructions from one branch that needs trace to
  the next, learned once (by ptscope's table decoder for the common
  x86-64 encodings, by libipt's own instruction decoder for a run with
  anything else; the runs are libipt's either way, which
  tests/unit/test_fast_runs.c checks on 240,000 runs of real code), with
  the run's call/return classification kept beside it.  A block is
  usually one query and no search: each run remembers the two runs that
  followed it last and has them loaded from memory while its own block is
  handled; a block with nothing to report only moves the counts.  It
  reports errors and resyncs as libipt does, and binds a PIP written
  with tracing on (a kernel trace switching address spaces) to the MOV
  to CR3 it belongs to, as libipt does; what it does not
  handle (PTWRITE, VMCS, power events, TSX aborts, an overflow where
  libipt works around SKD010/APL11/APL12, a PIP that binds to a far
  branch, code its classifier cannot
  follow) goes back to libipt, which decodes the
  stream again and hands on only the events not yet given.  The rows
  "flow layer, ptscope's flow engine" against "libipt's block decoder"
  above are that change; the full path rows show what it does end to
  end.  Raw code images decode at the speed of file-backed code (stream
  3 against stream 1): the runs do not care where the bytes come from.
- **Same events:** `bare_blk --compare` checks both engines event by
  event (kind, ips, time, instruction count, error) on these streams,
  the real Intel recordings of shared/testdata/real-pt (nomap errors,
  stale tails, perf.data AUX data with MTC/TMA/CBR/PIP) and thousands of
  damaged copies (tests/e2e/flow_engines.sh, the fuzz target flowdiff).
  libipt's own times depend on its block cache (on a block's first
  visit it ends the block at direct calls), so it is compared warm.
- **Target 1 (one core) is met on the loop-heavy stream, and on python3's
  start-up on the AMD EPYC machines, at the line on the Intel Xeon ones**
  (per pass, AMD EPYC: 2.1-2.5x and 1.75-1.9x; Intel Xeon: 2.0-2.17x and
  1.43-1.62x; python3's first pass alone, where the code is learned,
  1.55-1.7x on AMD EPYC since 2026-12-06, 1.3-1.4x before), **not on the
  call-heavy streams** (1, 3, 6 and 7: 1.0-1.2x on AMD EPYC, 0.85-1.0x
  on Intel Xeon, 0.96-1.05x there since the flow layer's inlining of
  2026-12-07) nor on code run once (4: 0.8-0.9x on AMD EPYC since the
  changes of the evening of 2026-12-06 below, 0.3-0.4x before; 0.6-0.7x
  on Xeon before them, 0.8-0.85x after).  The flow engine itself is
  slower against libipt on the Xeon machines (stream 1: 2.2x the bare
  loop's speed on AMD, 1.6-1.75x on Xeon, 1.84x since the inlining).  Since
  2026-11-29 the emulated recordings compress returns as a CPU does
  (docs/emulated-backend.md): a return is a TNT bit, not a TIP of 3 to
  7 bytes.  That made the bare loop about 15% faster on stream 1 and
  left ptscope's cost, which is per span, as it was.  Stream 7 has the
  timing packets a CPU writes under perf's defaults (MTCs, a TSC only in
  each PSB+) instead of the emulated backend's TSC every 8 ns, which
  are most of streams 1-6's bytes: both decoders gain a little, and the
  ratio is stream 1's.  A span every 9
  instructions is what bounds the call-heavy streams: 72 bytes of .fxt
  per span (a BEGIN with four args: module, address, file, line; and an
  END), 19 MB a pass.  The stack builder and the writer take about 110 M
  instructions a pass (about 420 a span: a call or return inside the
  innermost function takes a short way through the stack builder, and
  each function's BEGIN is copied from a template), and the kernel
  copies the 19 MB into the page cache.  Added to the flow engine's
  7 ms, that is 14 ms against the bare loop's 16; without the four args
  (--no-info), 12 ms.  The page cache's share fell on 2026-11-29: the
  trace file is allocated ahead in steps (fallocate), which took ext4's
  per-page bookkeeping out of write(2) (from 5 to about 3 ms a pass
  here) and the write-back that renaming over an older trace forced (30
  ms of the whole command for 5 passes).  On stream 4, learning the code
  (runs, classification, symbols, file:line) is most of the work; libdw's
  line tables were a third of its first pass until ptscope read them
  itself (below).
- **Target 2 (all cores, a long stream) is met at the line on the
  loop-heavy long stream, not on the call-heavy ones** (see "Long
  streams": loops_long 1.7-1.9x on AMD EPYC; on Intel Xeon 1.7-1.75x
  until -j's threads started with the session (2026-12-07, evening,
  below), 1.78x and 1.88x in the two runs since, 1.80x against the
  fastest core held alone; calls_long 1.45-1.65x then, 1.77-1.79x
  since; cyc_long 1.6-1.65x then, 1.67-1.69x since; two runs of the
  same decode on these machines differ by up to 2x).  `-j` cuts every thread's stream at PSBs into parts
  of about 64 KiB, whose flow any free thread decodes (the next
  streams' while one is written); one thread at a time hands the parts,
  in order, to the stack builder and the writer, which must see each
  stream in order.  On the call-heavy streams those two are half of the
  work, so they bound the gain on many cores, since only one thread at
  a time can join (the flow work runs at most N + 2 parts ahead, so
  memory stays flat).  On two cores neither thread waits (`--stats`,
  2026-12-07: on calls_long the two threads spent 0.117 s of their
  0.124 s following flow or joining), and what bounds it is the
  hand-over itself: a -j2 decode of calls_long executes 15% more
  instructions than -j1 (callgrind, 2026-12-07: 1.63 G against 1.42 G;
  1.66 G until 2026-12-06), nearly all of it packing each branch event (45
  instructions, written by the flow layer's flow_emit itself since
  2026-12-06, no call) and unpacking and joining it (about 45).  Until 2026-11-29 the events went across whole, 56
  bytes each; storing them on one core and reading them on the other
  cost the Xeon machines a fifth more work (task-clock) than -j1 on
  calls_long, more than the instructions say.  Packed into 16 bytes
  each (decoder/branch_pack.c: differences from the event before in
  fixed widths; a variable-length code, tried first, cost as much in
  branches as it saved), calls_long -j2 went from 1.37x to 1.45-1.65x of
  -j1 there, cyc_long from 1.28x to 1.4-1.5x (1.6-1.65x with the fold
  below).  (32-byte events had shown no gain
  on an AMD machine.)  Each thread's flow decoder learns the code once,
  and, until 2026-11-29, a scan of every
  byte of the stream for PSBs came before the threads started (now the search
  for a cut starts 64 KiB past the last one).  Handing the writer a
  thread of its own was tried (recording each event
  for it cost as much as writing it), and so was giving the file's write(2)
  calls a thread of their own (no gain: both cores are busy already).
  A cycle-accurate part also needs the clock its stream has at its PSB:
  its thread folds the timing packets since the PSB two before its cut
  first (the calibration at a PSB+ comes from the cycles since the PSB+
  before it).  Until 2026-11-29 it folded the whole part before it, a
  third more flow work on cyc_long: -j2 against -j1 went from 1.4-1.5x
  to 1.6-1.65x on the Xeon machines.
  The shorter streams of the tables above give less (1.4-1.7x): each
  thread's flow decoder learns the code once per decode, a fixed cost.
- **The AMD EPYC (family 26) machines of 2026-12-06**, where the tables
  were measured until 2026-12-07 (midday) (a Firecracker VM): a page of
  memory touched for the first time costs about 11 us there (a loop over
  32 MB of fresh pages; mapped with MAP_POPULATE, about half), against
  well under 1 us
  on the other machines.  What a decode allocates shows: the first pass
  of stream 4 touches about 3,400 pages more than the bare loop (libdw's
  line table of its 3,000 functions about 1,650, the learned runs'
  instructions 810 and the runs 370, the .fxt writer's tables 375;
  perf -e page-faults), so code run once is at 0.4x there against 0.6x
  on a Xeon.  On calls_long -j2 the thread that joins was busy 99% of
  the decode and the other 73% (perf, per thread): the stack builder,
  the writer and the file's write(2) calls are the bound: calls_long
  and cyc_long run -j2 at 1.2-1.3x of -j1 there, loops_long at
  1.3-1.7x.  Changes of
  2026-12-06, each measured there in interleaved runs: the packing
  above (calls_long -j2 0.063 to 0.059 s written to /dev/null), the
  pack's header kept on the flow thread's stack while it is written
  (it sat in the segment array beside what the other thread reads),
  and the .fxt writer's staging buffer cut from 2 MiB to 256 KiB and
  handed to write(2) without a copy, so it is still in the core's
  cache when the kernel copies it (calls_long -j2 to a file 0.088 to
  0.080 s; -j1 unchanged).  Before them, the same script there gave
  calls_long -j2 at 0.99x of -j1 and cyc_long 1.01x; after, 1.22x and
  1.19x.  Writing the file behind the decode on a thread of its own
  was tried again, also under SCHED_IDLE so that it takes only an idle
  core: slower there (calls_long -j2 0.080 to 0.107-0.119 s), dropped.
  Smaller parts (16 or 32 KiB instead of 64) touch fewer pages but
  cost loops_long 7-12%; kept at 64 KiB.
- **Later on 2026-12-06 (evening), on the same machine:**
  - The .fxt writer's full buffer was still copied into the output
    file's own 1 MiB buffer: it is drained when the next record does not
    fit, so a little under 256 KiB, below the 256 KiB at which the file
    took writes straight through (strace showed 1 MiB writes).  That
    threshold is 128 KiB now and a static assertion keeps the two sizes
    in step (calls x5 -j1 0.098 to 0.094 s; calls_long -j2 0.078 to
    0.071 s, interleaved runs).
  - **Huge pages for the decoder's heaps** (decoder/heap.h): each
    decoding thread's malloc heap, and decode's own before it opens the
    writer, is advised MADV_HUGEPAGE and grown 30 MB at once so that its
    2 MB ranges are whole when first touched.  A first pass of stream 4
    went from about 4,200 page faults to 700 and from 60 ms to 20-30 ms;
    calls x5 -j1 5% faster, calls_long -j2 15%, loops_long -j2 6%
    (interleaved runs; fewer TLB misses as well as fewer faults).
    PTSCOPE_HUGEPAGES=0 turns it off, for comparison.
  - **file:line from ptscope's own line-table reader**
    (decoder/linetable.h): libdw's dwarf_getsrclines built the 3,000
    functions' table of stream 4 a row at a time (54 M of the first
    pass's 154 M instructions); the reader takes 11 M and gives libdw's
    answers (tests/unit/test_linetable.c compares both at 2.1 million
    addresses of glibc's debug files).  Stream 4's first pass: 154 M to
    109 M Ir, against the bare loop's 160 M.
  - Together, over five runs of this script after them: stream 4's first
    pass against the bare loop went from 0.30x to 0.85-1.14x, python3's
    from 1.10x to 1.53-1.68x, stream 4 per pass from 0.37x to 0.82-0.90x.
  - **The two cores of this VM do not always run at the same speed.**
    A plain loop held to each core in turn (taskset) ran 1.6-2.2 times
    slower on core 0 for minutes at a time, then at core 1's speed again,
    with no other load and no steal time shown.  -jN can at best do
    what the cores do together, so "Long streams" now also times the
    -j1 decode held to each core in the same rounds, and gives -jN's
    bound from them and the share of it reached; and each long stream's
    median of the rounds' own -j1/-jN ratios beside the ratio of the
    best times.  Over five runs of this script: calls_long -j2 against
    -j1 1.05-1.54x, loops_long 1.23-1.74x, cyc_long 1.10-1.52x; the best
    run was one where both cores ran at the same speed throughout
    (calls_long 78% of its bound, loops_long 85%, cyc_long 77%).  A
    bound is only as good as its rounds: a core slow during its pinned
    rounds but not during -jN's makes -jN pass it (loops_long once at
    107%).  The target-1 lines now also give the median of the rounds'
    own ratios, each round's bare loop and full path measured seconds
    apart; it agrees with the ratio of the best times within 0.03 here.
- **2026-12-07 (night), on the same machine: what every decode pays
  before and beside its stream.**
  - capstone was linked in, and the dynamic loader relocating its
    1.7 MB of pointer tables cost every ptscope start about 370 of its
    530 page faults (perf -e page-faults -d), 4-5 ms at this VM's price
    of a fault.  It is loaded on first use now (decoder/capstone_load.h):
    `ptscope --version` went from 9.2 to 3.7 ms of CPU (perf stat -r 20).
  - The table decoder (decoder/insn_len.c) left VEX/EVEX (glibc's string
    functions), locked read-modify-writes, the 0F 38 / 0F 3A maps,
    xgetbv and addr32 call to capstone, and their runs to libipt's
    walk: every stream here still loaded capstone, python3's start-up
    for 1,026 instructions.  It takes them now, with libipt's lengths
    (tests/unit/test_fast_runs.c from every vector instruction of libc
    and libm) and capstone's (tests/unit/test_insn.c, random VEX/EVEX
    and locked instructions), and none of these streams loads capstone.
  - Measured in interleaved runs against the binary before, held to one
    core: whole-command CPU (perf stat -r 10) of stream 4's first pass
    31 to 24.5 ms, stream 1's 39 to 32 ms, LLDB's 8 KB per-CPU recording
    17 to 11.5 ms; decode time of stream 4's first pass 15 to 13 ms.
    Every trace is the same byte for byte.  The "BENCH_OLD binary" rows
    above, when present, are that binary.
- **2026-12-07 (morning), on the same machine: where -j2's time goes.**
  - The caller's thread used to find every cut before any other thread
    started.  On loops_long (27 MB) that took 11 ms: finding a cut
    reads the stream there, and a page of the file read for the first
    time costs about 2 us here (23 us for each 64 KiB the kernel maps
    around a fault).  Now the caller cuts while the other threads
    decode the parts already cut, and a cycle-accurate part's fold
    start is found by the thread that needs it, not at every cut.
    Interleaved runs against the binary before, -j2: loops_long 0.113
    to 0.102 s (median of 12), calls_long 0.077 to 0.073 s, cyc 0.069
    to 0.067 s.  The traces are the same byte for byte.
  - `--stats` now says where the threads' time went (docs/decode.md).
    calls_long -j2 with both cores equally fast: 0.062 s, of which the
    two threads spent 0.064 s following flow, 0.053 s joining, 0.001 s
    waiting: both busy all the time.  The same -j2 decode with both
    threads held to one core takes 0.102-0.114 s against -j1's
    0.090-0.092 s: handing the parts over (packing, unpacking, each
    part's set-up) is 15% more work, and two cores then run it 1.7x
    as fast as one.  Target 2 on the call-heavy streams needs that
    15% gone and the join itself cheaper.
  - When one core is slower (1.7x on this VM, for minutes), the thread
    that joins on it bounds the decode.  Handing the join to the
    faster thread (each thread's pace measured over its last parts)
    was tried: no gain with equal cores, nor with core 1 shared with a
    busy loop (the scheduler moves the threads between cores); dropped.
    Writing the file on a thread of its own was tried once more, with
    the writer's 256 KiB buffers handed over without a copy: calls_long
    -j2 0.080 to 0.087 s (both cores are busy already); dropped.
- **2026-12-07 (later), on the same machine: what -j2's extra work is.**
  perf (cpu-clock, 20 kHz) of two passes of calls_long to /dev/null:
  -j1 5.5 K samples, -j2 7.2 K, so -j2 does about 30% more work.  Of
  the 1.7 K more, 410 are packing the branch events (flow_emit: 672
  against 259), 369 unpacking them (inline in the join loop), 193 the
  writer's template copy (fxt_memo_span, 1,000 against 807), 111 the
  flow engine and about 130 the kernel clearing fresh pages:
  the hand-over, 16 bytes an event already, is nearly half of it.
  The join (call stacks and writer, in order, one thread at a time) is
  0.048-0.050 s of a 0.059-0.073 s -j2 decode writing a file, 0.035 s
  writing to /dev/null (the write() into the page cache), 0.039-0.042 s
  with --no-info.  Mapping the PT file with MAP_POPULATE was tried
  (27 MB in 1.5-2.3 ms, and its pages still cost 10.5-13 ms at first
  use here, against 16-17 ms): loops_long -j1 and -j2 moved 2 ms, within
  the noise of interleaved runs; dropped.  Target 2 on call-heavy code
  needs the writer's work off the joining thread: each part encoded
  into FXT bytes of its own against string references fixed before
  decoding, each part's call stack kept from depth 0, and the join left
  to name the ENDs that close frames opened in earlier parts and to
  copy the bytes out in order.
- **2026-12-07 (midday), on the same machine: -j2 experiments that
  gained nothing** (each an A/B of the decode time, 4-9 runs a side,
  mostly interleaved; every trace the same byte for byte):
  - the cutting thread reading each cut's 16 KiB with pread(2) instead
    of touching the mapped stream: its cutting time went from 8-12 to
    2 ms and the flow work up by as much (the first touch of the
    stream's pages moves to the threads that follow flow; the pages
    cost the same whoever touches them), loops_long -j2 0.077-0.084 s
    either way;
  - joining only on the caller's thread once the cutting is done
    (loops_long: the join's time 0.033 to 0.019 s, the flow's 0.110 to
    0.122 s), and joining each part on the thread that followed its
    flow: the same totals;
  - parts of 16, 32, 128 or 256 KiB instead of 64, and the .fxt
    writer's buffer at 64 or 128 KiB instead of 256 (the 64 KiB buffer:
    loops_long -j2 0.081 to 0.075 s, calls -j1 0.085 to 0.092 s):
    within the noise, or a loss elsewhere.
  - The join's share, with its sink made a no-op (a test build):
    calls_long -j2 with the join 0.053-0.064 s writing a file and
    0.045-0.057 s writing to /dev/null; without it 0.029-0.033 s (the
    flow work and the packing; unpacking adds about 1 ms).  With -j1 at
    0.086-0.094 s, the
    two threads' work (0.106 s) is 20% more than -j1's: -j2 runs at
    their work divided by two, so target 2 on call-heavy streams needs
    that 20% gone, which is the hand-over of every event (see above).
  - The same -j1 decode held to core 1 took 0.128 s and, a quarter of
    an hour later, 0.145 s (loops_long), with -j2 at 0.074-0.077 s both
    times: the VM's
    cores still change speed, so one run's ratio says little.
- **2026-12-07 (afternoon), an Intel Xeon VM (the tables above): where
  -j2's extra work goes, on loops_long.**  A -j2 decode's task-clock
  was 152 ms against -j1's 136 (perf stat); perf (cpu-clock) put most
  of the difference in the flow engine's own loop (ff_run, 18% more
  samples), spread over the same instructions as in -j1.
  - The machine is not the cause: one -j1 decode on each core at once
    took as long as one alone (the "machine's bound" table above, which
    this script measures since then: 1.85-2.0x).  A busy loop on the
    other core slowed a -j1 decode by up to 10% once; two decodes did
    not.
  - A test build cut the stream into parts on one core, with no second
    thread (flow, then join, part after part; the trace the same byte
    for byte): 0.132-0.140 s against -j1's 0.118-0.127, its flow work
    0.111-0.121 s against 0.103 s for the flow engine alone
    (bare_blk --flow), its joins 0.018-0.021 s.
  - With the flow thread's events dropped instead of packed, the parts'
    flow work was 0.102-0.108 s, the flow engine's own speed: cutting,
    the parts' set-up and the seams cost nothing measurable (26 parts
    of 1 MiB or 1,664 of 16 KiB did no better than 416 of 64 KiB).
    Packed into a 4 KiB ring and dropped (no join): 0.113-0.118 s in
    that first series, which made packing look dear (10 ns an event);
    records padded to 32 bytes, or written with non-temporal stores,
    changed nothing.
  - Measured again later on a quiet machine, after the inlining below,
    in series of 3-4 runs each way (one core, parts of 64 KiB): the
    parts' flow work 0.102-0.108 s with the joins between, 0.094-0.097
    s with the events dropped, 0.095-0.097 s packed into the ring,
    0.099-0.101 s packed, unpacked by the join and dropped there.  And
    bare_blk --flow with br_pack_sink as its sink, one pass of
    loops_long: 0.1024 s against 0.1014 s counting.  So packing costs
    about 1 ns an event, packing and unpacking about 3-4 ms on
    loops_long, and the rest of the excess (7-8 ms) is the joins'
    presence: a part's flow work on the core that has just built the
    previous part's spans and written them (stack builder, .fxt
    encoding) runs slower, by as much whether the joins write to a
    file or to /dev/null, and by as much with 26 parts as with 416.
    With parts of 4 MiB it was 0.100-0.101 s, but on two cores such
    parts cost calls_long a seventh (-j2 0.051-0.058 s with 64 KiB,
    0.058-0.061 s with 4 MiB; 1 MiB: 0.059-0.079), so 64 KiB stays.
    Two 16-byte records written as two 8-byte stores instead of six
    field stores: task-clock of -j2 on calls_long 98.5-99.4 ms before,
    101.9-103.7 after, dropped.
  - That is the 12-17% by which -j2's work exceeds -j1's, and the
    reason -j2 reaches 78-89% of the machine's bound, not 100%.
    With equal cores -j2 runs at 2 / (1 + that excess) times -j1, so
    1.8x allows 11%: target 2 needs about a third of the excess gone
    on loops_long.  On calls_long it cannot come from there: its joins
    alone (stack builder and writer, one part after another) took
    0.047-0.049 s of a -j2 decode (--stats), more than the 0.044 s
    that 1.8x of -j1's 0.079 s allows.  Both need the design without a
    hand-over (each part's spans built and encoded on the thread that
    followed its flow, the seams patched at the join), so that the
    writer's work is shared by the threads too.
  - The flow layer's steps for a block that reports something (its
    start, its events, each event's emit, the time) are inlined into
    the one function the fast engine calls per block (they were five
    calls): the flow engine alone on stream 1, 178.7 to 155.1 M Ir
    (callgrind, whole process) and about 10% faster; the full path of
    5 passes of stream 1, 291.8 to 268.3 M Ir, 0.087 to 0.081 s (best
    of 7 interleaved); loops_long -j1 0.121 to 0.119 s, -j2 0.070 to
    0.069 s, calls_long -j2 0.053 to 0.051 s.  What is left of the
    flow engine's cost on stream 1 is spread thin: no line of it has
    more than 2.3% of the Ir.
- **2026-12-07 (evening), on the same Xeon: -j's threads start with the
  session; three experiments dropped.**
  - -j's worker threads were started by each -j decode, and a thread
    first makes its heap ready (heap.h: MADV_COLLAPSE of its first
    2 MiB, then a first fault on each huge page): 1-13 ms a thread
    here, inside the decode time (`--stats` showed it as "starting"),
    while the -j1 decode's thread did the same before its clock
    started.  They start with the session now (decoder/crew.h) and do
    it while the code loads; a decode hands them its work.
    Interleaved runs against the binary before, -j2, median of 12:
    calls_long 0.0575 to 0.053 s, loops_long 0.0705 to 0.069 s.  The
    whole command did not change beyond the noise (the bench's code
    loads in a few ms; python3's recording, whose DWARF takes over
    100 ms to load, 209-219 ms either way): the gain is in the decode's
    own time, as -j1's was already.
  - The .fxt writer keeps 4,096 span templates instead of 1,024 (one
    slot per function, by the name's address): stream 4's 3,000
    functions, called in turn, took the general path for most spans.
    Its 5 passes: 240.5 to 218.9 M Ir (callgrind), for 0.6 MB more
    memory; 16,384 slots gave 2.5% more for 2.3 MB more again.
  - `--stats` gives the decoding time to 0.1 ms: whole milliseconds
    rounded a long stream's -j2 time by up to 2%, about the margin by
    which target 2 is missed.
  - Dropped: (1) a loop for blocks that report nothing, taking the TNT
    bits of the packet at hand without the general loop's tests
    (libxdc's way): 5-7% faster on loops_long with its TNT bits packed
    as a CPU packs them (6 a packet, a test build of ptvariant), 3-8%
    slower on the emulated streams, whose TNT packets hold 2-3 bits
    (the emulated backend ends one at every timing packet it writes;
    in the real Skylake recording of shared/testdata/real-pt, 57,248
    of 69,516 TNT packets hold 6), so there it is tried and rarely
    taken, and the test costs; callgrind showed 1% more instructions
    for 3-8% more time.  (2) The join handing the stack builder 64
    events at a time, to save a call through a pointer per event:
    calls_long -j2 0.051 to 0.055 s.  (3) The decode calls' own thread
    (the one with libipt's stack, started 0.4-6 ms into each decode)
    started with the session too: no change in the whole command.
- **2026-12-07 (late night), on the same Xeon: streams as a CPU writes
  them; blocks that report nothing in a loop of their own.**
  - The emulated backends do not write what a CPU writes: a TSC every
    8 ns, and a TNT packet ended at every other packet, so 2-3 bits a
    TNT where a CPU fills most of its own (57,248 of the 69,516 in the
    real Skylake perf.data hold 6).  `build/tools/ptvariant --tnt-full`
    packs the bits as a CPU does; with `--mtc-clock` (perf's default
    timing) stream 1's 1,105,856 bytes become 80,199, with the same
    instructions, calls and spans (tests/e2e/flow_engines.sh: both
    engines' events, the counts against libipt's instruction loop, -j
    traces, damaged copies).  Streams 8-10 and the long streams
    calls_long_cpu and loops_long_cpu are measured that way.
  - What they show: libipt's block loop hardly changes (stream 1 to
    stream 8: 17.4 to 15.2 ms a pass), its cost being per block;
    ptscope's flow engine gains more (9.5 to 7.5 ms), so call stacks,
    symbols and the writer are a larger share of the full path.  Where
    loops dominate, the full path is 2.9x the bare block loop (stream
    9), python3's start-up 1.6x (stream 10); call-heavy code stays
    under 1x (stream 8: 0.85x), and -j2 on calls_long_cpu is 1.66x
    of -j1 (its join, call stacks and writer in order, is the bound:
    0.052 s of a 0.054 s decode, --stats).
  - The loop over blocks that report nothing (dropped in the evening:
    on the emulated streams' short TNTs it cost 3-8%) is in, as
    `quiet_blocks` in decoder/fast_flow.c.  Flow layer alone
    (bare_blk --flow), interleaved against the binary before, best of
    5-9 rounds: loops_long_cpu 0.0709 to 0.0600 s (1.18x; 1.12-1.19x
    over four series), python3's start-up 1.04-1.10x (both forms),
    code run once 1.00-1.03x, the emulated call-heavy and
    cycle-accurate streams 0.95-1.01x, emulated loops_long 0.96-1.01x.
    The events are libipt's on every stream (bare_blk --compare,
    400 damaged copies each of streams 8 and 9, 200 of calls_long_cpu
    cycle-accurate, 30 of python3's).
  - -j cuts a stream under 3 MB into about 48 parts of at least
    16 KiB: calls_long_cpu, 393 KB, came in 6 parts of 64 KiB, too
    few for two threads to share (-j2 0.061 to 0.056 s, interleaved);
    streams over 3 MB keep 64 KiB parts.
  - What bounds target 1 on call-heavy code, measured: the new row
    "the trace's bytes alone, written to a file" (256 KiB writes into
    a file allocated ahead, as the sink writes) is 4.0 ms a pass on
    stream 1, whose trace has a span per 9 instructions, 72 bytes each
    (a BEGIN with its four span args, an END).  Were call stacks,
    symbols and encoding free, the full path would still take the flow
    layer's time plus that: 1.29x the bare block loop on stream 1,
    1.33x on stream 8, 1.17-1.40x on streams 3, 6 and 7.  So the 1.5x
    of target 1 is out of reach on call-heavy code while the trace
    holds this much; the rest of the gap is the call stacks and the
    writer (stream 8: 7.5 ms flow, 3.9 ms writing, 6.5 ms the rest).
  - Code layout: pt_blk_event moved out of line, rare as events are,
    cost the flow engine 2-4% (the loop around its call compiled
    worse); it stays inline (decoder/fast_event.h).  A change to
    split.c alone, which -j1 does not run, moved the hot functions by
    144 bytes and -j1 on stream 2 ran 5-7% slower in some interleaved
    series (0.0265 to 0.0283 s for 5 passes) and not in others:
    differences of that size between two builds can be layout.
    Aligning ff_run to 64 bytes did not help (0.0271 s); dropped.
  - Dropped: sizing -j's event buffers from the part's length up front,
    to spare the realloc chain and its huge-page clearing (12% of a
    -j2 profile of calls_long_cpu): -j2 time the same (0.0577 against
    0.0581 s).
- **2026-12-07, near midnight, on the same Xeon: memory against trace length,
  and the file written behind the decode tried a third time.**
  - "Keep memory flat in trace length" had no figure: the new section
    "Memory against trace length" measures the peak resident memory of
    -j1 and -jN decodes of stream 1's program recorded for 1 to 80
    times its iterations, in both forms.  -j1 stays within a few MB
    (its growth is the mapped PT file).  -jN grows with the stream
    until its parts reach 64 KiB of PT, then stays: at most a number
    of parts is decoded and not yet written, and a 64 KiB part of
    call-heavy PT as a CPU writes it is 7 MB of packed events.
  - That number was 4 per thread, 12 on two cores: 100 MB at the peak
    on calls_long_cpu recorded 8 times longer.  Now it is the threads
    plus 2 (decoder/split.c): 48 MB there.  Interleaved, 9 rounds,
    -j2: calls_long 0.0583 against 0.0598 s, cyc_long 0.0630 against
    0.0623 s, loops_long 0.0782 against 0.0776 s, calls_long_cpu x8
    0.44 s either way; 3 to 12 parts all ran the same.
  - Recorded 16 times longer, the peak was still 13 MB higher: a
    stream's last part took in a tail shorter than half a part, and
    half as many events again outgrew their buffer (it doubles).  A
    short tail is now a part of its own: 62 to 51 MB, the 3 MB more
    than at 8 times being the longer PT file.  -j2 of calls_long, 25
    rounds interleaved against the binary before both changes: best
    0.0577 against 0.0572 s, median 0.0618 against 0.0601 s (3%, the
    size of the layout differences seen before; --stats shows the
    same work, 84 parts instead of 83); calls_long_cpu, 15 rounds:
    medians 0.0657 against 0.0658 s.
  - `ptvariant --mtc-clock` wrote one MTC for a stretch without
    packets, however long; a CPU goes on writing one each period while
    the kernel runs (timing packets do not depend on the code traced),
    and past 256 periods (102 us here) the 8-bit payload wrapped and
    the time was lost (a test failed when a system call of the recorded
    program took that long).  It now writes them (past 256, one every
    128 periods): streams 8-10 and the _cpu long streams grew by about
    500 bytes (stream 8: 80,201 to 80,693).
  - Writing the file on a thread of its own, the producer handing over
    whole buffers (no copy), was tried again: on this Xeon, -j2 of
    calls_long_cpu went from 0.0566 to 0.0568 s with the thread at
    normal priority, 0.0539 s niced to 5, 0.0536 s under SCHED_IDLE.
    On two cores the thread competes with the two decoding ones: the
    work to share is the same (flow 42 ms, join 33 ms, write 22 ms),
    and it was already nearly balanced.  With the AMD machines' result
    (slower, above), dropped again.  Writing that stream's trace to a
    file costs a quarter of a -j1 decode (95 ms against 73 ms to
    /dev/null).
- **Every decoding thread has 64 MB of stack** (decoder/threads.h):
  libipt's block decoder, which decodes what ptscope's engine hands it,
  follows code that needs no trace by calling itself once a step, up to
  a block's 65,535 instructions (14 MB); fuzzing found code that calls
  itself ending a decode with SIGSEGV on the usual 8 MB.
- **What -j lost to the machine**, found with perf (cpu-clock, call
  graphs): the caches' hash tables were calloc'd, so a lookup mapped
  the kernel's zero page and the insert that followed replaced it,
  which flushes the TLB of every CPU the process runs on: an interrupt
  to the other core, a VM exit here (6% of a -j2 decode).  They are
  zeroed by writing now (include/ptscope/alloc.h).  And two threads
  learning code took turns on one lock meant for libipt's image; the
  table walk reads the image's own copy and needs none.  python3's
  start-up on 2 cores against 1 went from 1.25x to 1.5-1.8x, code run
  once from 0.9x to 1.2-1.5x.
- **Code run once** (streams 4 and 5): learning a run used to cost more
  than following it a thousand times, because capstone 4 spent about
  3,000 instructions decoding each x86 instruction and libipt's walk
  about 500 more.  The table decoder (decoder/insn_len.c) takes about
  120, and the block classification reuses the run's instructions.  On
  stream 4, one pass: 697 M Ir before, 163 M now (callgrind, whole
  process); the bare block loop's first pass is 159 M.
- `--flow-engine libipt` keeps the libipt path for comparison.

## Where the time goes (callgrind, one pass, 2026-11-29)

Instructions executed (Ir), whole process, against the bare libipt block
loop on the same stream (both recorded with returns compressed):

| part | stream 1 (call-heavy), M Ir | stream 5 (python3), M Ir |
|---|---|---|
| flow engine (packets, runs, classification, time; the first visit of each run included) | 172 | 1,740 |
| call stacks + symbol lookup + file:line | 50 | 145 |
| .fxt writer (templates, thread ref) | 61 | 146 |
| loading ELF/DWARF (libdw inflating libc's compressed debug sections: 277 M) | 5 | 305 |
| **full path, whole process** | **287** | **2,336** |
| bare libipt block loop, whole process | 356 | 4,123 |

With every return a TIP (the recordings before 2026-11-29) stream 1
took 319 M against the bare loop's 445 M; it was 360 M earlier that day
(the stack builder's short way for a call or return took 42 M off it),
394 M on 2026-11-28 and 711 M on 2026-11-21.  On stream 5 the flow
engine went from 2,450 M to 1,830 M on 2026-11-29 (the whole process
from 3,100 M): most blocks now cost no function call and no lookup-table
probe (each run remembers the runs that followed it), and packet
payloads are read with one load.  The rest of its time is memory: a big
program's runs do not fit in the caches, and the first touch of each
block's run is the single most costly instruction of the decode (perf
annotate).  Instructions are not the whole story on stream 1: the Ir
ratio is 1.24x, the time ratio 1.1-1.2x, the rest being the 19 MB a
pass written to memory and then to the file.

EOT
} >"$W/out.md"
cp "$W/out.md" "$OUT"
cat "$OUT"
