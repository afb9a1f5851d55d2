#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptscope's own flow engine (decoder/fast_*.c) against libipt's block
# decoder: the same branch events (kind, ips, time, instruction count,
# error) and counts on every stream we have, whole and damaged.
#   - genuine PT of a static program recorded by the emulated backend,
#     its code from the ELF file and as a raw image (--raw);
#   - the real Intel recordings of shared/testdata/real-pt (the lldb sets
#     with nomap errors and stale tails; perf.data's AUX data with MTC,
#     TMA, CBR, PIP and kernel addresses no image maps);
#   - copies of each with 1-4 random bytes changed (build/tools/bare_blk
#     --compare --mutate), which send both decoders through errors,
#     resyncs and the fast engine's hand-overs to libipt.
# libipt is run twice first on each stream: on a block's first visit its
# block decoder ends the block at each direct call, so a call's time can
# come from an earlier packet; the fast engine gives every block the
# answer libipt gives once the block is in its cache.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
B=${BARE_BLK:-build/tools/bare_blk}
D=${PTSCOPE_TESTDATA:-../shared/testdata}/real-pt
MUT=${FLOW_MUTATIONS:-200}

for f in "$P" "$B"; do
	if [ ! -x "$f" ]; then
		fail flow_engines_programs "$f is not built"
		exit 0
	fi
done

# same NAME ARGS...: bare_blk --compare ARGS, expect "same"
same() {
	local name=$1
	shift
	if "$B" --compare "$@" >"$T/$name.out" 2>&1 &&
		grep -q ': same$' "$T/$name.out"; then
		pass "$name"
	else
		fail "$name" "$(tail -12 "$T/$name.out" | tr '\n' '|')"
	fi
}

# damaged NAME ARGS...: bare_blk --compare --mutate, expect 0 different
damaged() {
	local name=$1
	shift
	if "$B" --compare --mutate "$MUT" --seed 7 "$@" >"$T/$name.out" 2>&1 &&
		grep -q ', different: 0$' "$T/$name.out"; then
		pass "$name"
	else
		fail "$name" "$(grep -B12 -m1 differs "$T/$name.out" | tr '\n' '|')"
	fi
}

# ours NAME SAME: the stream of the `same` check SAME was decoded by
# ptscope's engine alone, no part of it handed to libipt.
ours() {
	if grep -q "ptscope's engine decoded it (0 fallbacks)" "$T/$2.out"; then
		pass "$1"
	else
		fail "$1" "$(tail -1 "$T/$2.out")"
	fi
}

# counts NAME ARGS... PT: the instruction, call and return counts of
# `decode --pt PT ARGS --stats` must be libipt's instruction loop's
# (bare_blk --insn: every instruction's class, ptic_call and ptic_return),
# through errors and stale tails too.
counts() {
	local name=$1 n=$(($# - 1)) want got
	shift
	local args=("${@:1:n-1}") pt=${!#}
	want=$("$B" --insn "${args[@]}" "$pt" |
		awk '{print $2, "instructions (" $12, "calls,", $14, "returns)"}')
	got=$("$P" decode --pt "$pt" "${args[@]}" -o "$T/$name.fxt" --stats \
		2>&1 | sed -n 's/^decoded [0-9]* bytes of PT: \(.* returns)\),.*/\1/p')
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		pass "$name"
	else
		fail "$name" "libipt's instruction loop: '$want', decode: '$got'"
	fi
}

# --- an emulated recording -----------------------------------------------
if ! gcc -O1 -g -fno-inline -static -no-pie -o "$T/calls" samples/callchain.c \
	2>"$T/cc.err"; then
	skip flow_engines_emulated "no static libc to build the program: $(head -1 "$T/cc.err")"
elif ! "$P" record -q -b emulated -o "$T/calls.ptsc" -- "$T/calls" 3000 \
	>/dev/null 2>"$T/rec.err"; then
	fail flow_engines_emulated "recording failed: $(tail -2 "$T/rec.err")"
else
	scripts/ptsc_pt.py "$T/calls.ptsc" "$T/calls.pt"
	same flow_engines_emulated_elf --elf "$T/calls" "$T/calls.pt"
	ours flow_engines_emulated_needs_no_libipt flow_engines_emulated_elf
	# The executable segment as a raw image.
	read -r off addr size < <(readelf -lW "$T/calls" |
		awk '$1 == "LOAD" && / R E / { print $2, $3, $5; exit }')
	dd if="$T/calls" of="$T/raw.bin" bs=1 skip=$((off)) count=$((size)) \
		2>/dev/null
	same flow_engines_emulated_raw --raw "$T/raw.bin:$addr" "$T/calls.pt"
	counts flow_engines_counts_emulated --elf "$T/calls" "$T/calls.pt"
	counts flow_engines_counts_raw --raw "$T/raw.bin:$addr" "$T/calls.pt"
	# scripts/vs_libipt.sh, the same comparison for a user's recording,
	# with times: the counts the same, the times all there; a file that
	# is not raw PT and an option decode alone takes: one sentence each
	if scripts/vs_libipt.sh -r 1 -b "$(dirname "$P")" "$T/calls.pt" \
		--raw "$T/raw.bin:$addr" >"$T/vs.out" 2>&1 &&
		grep -q '^counts: the same$' "$T/vs.out" &&
		[ "$(grep -c ' ms' "$T/vs.out")" = 4 ]; then
		pass flow_engines_vs_libipt_script
	else
		fail flow_engines_vs_libipt_script "$(tr '\n' '|' <"$T/vs.out")"
	fi
	printf 'PERFILE2' >"$T/not.pt"
	why=""
	for a in "$T/not.pt" "$T/calls.pt --inline"; do
		# shellcheck disable=SC2086
		scripts/vs_libipt.sh -r 1 -b "$(dirname "$P")" $a \
			>"$T/vs.out" 2>"$T/vs.err"
		[ $? = 2 ] && [ ! -s "$T/vs.out" ] &&
			[ "$(wc -l <"$T/vs.err")" = 1 ] || why="$why $a: $(cat "$T/vs.err");"
	done
	if [ -z "$why" ]; then
		pass flow_engines_vs_libipt_bad_input
	else
		fail flow_engines_vs_libipt_bad_input "$why"
	fi
	# ptxed's --raw FILE:FROM-TO:ADDR and FILE:FROM:ADDR (file offsets,
	# TO not included): the same bytes from the ELF file itself, the same
	# trace; a range past the file's end or backwards: one sentence each,
	# no trace
	why=""
	"$P" decode --pt "$T/calls.pt" --raw "$T/raw.bin:$addr" \
		-o "$T/raw1.fxt" 2>/dev/null || why="$why FILE:ADDR failed;"
	"$P" decode --pt "$T/calls.pt" -o "$T/raw2.fxt" \
		--raw "$T/calls:$((off))-$((off + size)):$addr" 2>/dev/null ||
		why="$why FILE:FROM-TO:ADDR failed;"
	"$P" decode --pt "$T/calls.pt" -o "$T/raw3.fxt" \
		--raw "$T/calls:$off:$addr" 2>/dev/null ||
		why="$why FILE:FROM:ADDR failed;"
	# (spans are named after the file: the same name for the three)
	for k in 1 2 3; do
		"$P" dump "$T/raw$k.fxt" 2>/dev/null |
			sed -e 's#\(name\|module\)="\(raw\.bin\|calls\)#\1="CODE#g' \
				>"$T/raw$k.txt"
	done
	[ -s "$T/raw1.txt" ] && cmp -s "$T/raw1.txt" "$T/raw2.txt" &&
		cmp -s "$T/raw1.txt" "$T/raw3.txt" || why="$why the traces differ;"
	for r in "$off-$((off + 0x10000000))" "$((off + 16))-$off"; do
		"$P" decode --pt "$T/calls.pt" -o "$T/raw4.fxt" \
			--raw "$T/calls:$r:$addr" 2>"$T/raw4.err" &&
			why="$why range $r accepted;"
		[ -e "$T/raw4.fxt" ] && why="$why range $r wrote a trace;"
		[ "$(wc -l <"$T/raw4.err")" = 1 ] &&
			grep -q 'FROM-TO' "$T/raw4.err" ||
			why="$why range $r: $(cat "$T/raw4.err");"
	done
	# and --pt FILE:FROM-TO (FROM alone: to the end): the trace of those
	# bytes cut out of the file
	dd if="$T/calls.pt" of="$T/part.pt" bs=1 skip=4096 count=65536 \
		2>/dev/null
	"$P" decode --pt "$T/part.pt" --elf "$T/calls" -o "$T/part1.fxt" \
		2>/dev/null || why="$why the cut stream failed;"
	"$P" decode --pt "$T/calls.pt:4096-$((4096 + 65536))" --elf "$T/calls" \
		-o "$T/part2.fxt" 2>/dev/null || why="$why --pt FILE:FROM-TO failed;"
	cmp -s "$T/part1.fxt" "$T/part2.fxt" || why="$why --pt FROM-TO differs;"
	tail -c +4097 "$T/calls.pt" >"$T/tail.pt"
	"$P" decode --pt "$T/tail.pt" --elf "$T/calls" -o "$T/tail1.fxt" \
		2>/dev/null
	"$P" decode --pt "$T/calls.pt:4096" --elf "$T/calls" \
		-o "$T/tail2.fxt" 2>/dev/null || why="$why --pt FILE:FROM failed;"
	cmp -s "$T/tail1.fxt" "$T/tail2.fxt" || why="$why --pt FROM differs;"
	"$P" decode --pt "$T/calls.pt:0-0x40000000" --elf "$T/calls" \
		-o "$T/part3.fxt" 2>"$T/part3.err" && why="$why --pt range accepted;"
	[ ! -e "$T/part3.fxt" ] && [ "$(wc -l <"$T/part3.err")" = 1 ] ||
		why="$why --pt past the end: $(cat "$T/part3.err");"
	if [ -z "$why" ]; then
		pass flow_engines_raw_ranges
	else
		fail flow_engines_raw_ranges "$why"
	fi
	MUT=$((MUT / 10)) damaged flow_engines_emulated_damaged \
		--elf "$T/calls" "$T/calls.pt"

	# The decode command: both engines, the same counts; --stats says
	# which engine decoded the stream.
	"$P" decode "$T/calls.ptsc" -o "$T/fast.fxt" --stats 2>"$T/fast.err"
	"$P" decode "$T/calls.ptsc" -o "$T/ipt.fxt" --stats \
		--flow-engine libipt 2>"$T/ipt.err"
	# (libipt's block count is its own: on a first visit it ends blocks
	# at direct calls too)
	a=$(grep '^decoded' "$T/fast.err" | sed 's/[0-9]* blocks, //')
	b=$(grep '^decoded' "$T/ipt.err" | sed 's/[0-9]* blocks, //')
	if [ -n "$a" ] && [ "$a" = "$b" ] &&
		grep -q "flow engine: 1 streams by ptscope's, 0 handed to libipt" "$T/fast.err" &&
		grep -q "flow engine: 0 streams by ptscope's" "$T/ipt.err"; then
		pass flow_engines_decode_same_counts
	else
		fail flow_engines_decode_same_counts "ptscope: $a $(grep '^flow' "$T/fast.err") | libipt: $b"
	fi
fi

# jsame TAG ARGS...: `decode ARGS -jN` for N = 1, 2, 3 into $T/TAG.N.fxt
# (stderr in $T/TAG.N.err); the three traces must be the same byte for
# byte, else the reason is added to $why.
jsame() {
	local tag=$1 j
	shift
	for j in 1 2 3; do
		"$P" decode "$@" -j$j -o "$T/$tag.$j.fxt" 2>"$T/$tag.$j.err" ||
			why="$why $tag -j$j failed: $(tail -1 "$T/$tag.$j.err");"
	done
	cmp -s "$T/$tag.1.fxt" "$T/$tag.2.fxt" &&
		cmp -s "$T/$tag.1.fxt" "$T/$tag.3.fxt" ||
		why="$why $tag: -j2/-j3 trace differs from -j1;"
}

# -j: a long stream cut at PSBs, decoded on threads and joined: the same
# trace byte for byte as one decode, whole and damaged (a damaged seam
# sends the stream back to one decode, past what was handed on).
if [ -s "$T/calls.pt" ]; then
	why=""
	python3 - "$T/calls.pt" "$T/dmg" <<'EOF'
import random, sys
d = bytearray(open(sys.argv[1], 'rb').read())
random.seed(3)
for k in range(6):
    m = bytearray(d)
    for _ in range(1 + k % 3):
        m[random.randrange(len(d) // 8, len(d))] = random.randrange(256)
    open('%s%d.pt' % (sys.argv[2], k), 'wb').write(m)
EOF
	for f in "$T/calls.pt" "$T"/dmg*.pt; do
		jsame "$(basename "$f" .pt)" --pt "$f" --elf "$T/calls" --stats
	done
	"$P" decode --pt "$T/calls.pt" --elf "$T/calls" -j2 --stats \
		-o "$T/jj.fxt" 2>"$T/jj.err"
	if ! grep -q '^parallel: [1-9][0-9]* segments' "$T/jj.err"; then
		why="$why the stream was not cut: $(grep -c . "$T/jj.err") lines;"
	fi
	# where the two threads' time went: one line, every part named in
	# its place, none of it negative
	awk '/^parallel: 2 threads for / {
		gsub(/,/, "")
		n++
		for (i = 1; i <= NF; i++)
			if ($i == "s" && $(i - 1) < 0) bad = 1
		if ($0 !~ /following flow [0-9.]+ s joining \(call stacks and writer\) [0-9.]+ s waiting [0-9.]+ s cutting [0-9.]+ s starting [0-9.]+ s$/) bad = 1
	} END { exit !(n == 1 && !bad) }' "$T/jj.err" ||
		why="$why no thread time in --stats: $(grep '^parallel' "$T/jj.err");"
	if [ -z "$why" ]; then
		pass flow_engines_parallel_same_trace
	else
		fail flow_engines_parallel_same_trace "$why"
	fi
fi

# -j over several threads' streams in one decode: the next streams are
# decoded while one is written, and the trace is still the same as one
# stream after another.  Long, short (one segment), damaged (decoded whole
# again at its end, with no flow work running meanwhile) and whole again.
if [ -s "$T/calls.pt" ]; then
	why=""
	head -c 20000 "$T/calls.pt" >"$T/short.pt"
	set -- --pt "$T/calls.pt" --pt "$T/short.pt" --pt "$T/dmg0.pt" \
		--pt "$T/short.pt" --pt "$T/dmg4.pt" --pt "$T/calls.pt"
	jsame m "$@" --elf "$T/calls" --stats
	for j in 2 3; do
		grep '^decoded' "$T/m.1.err" | cmp -s - <(grep '^decoded' "$T/m.$j.err") ||
			why="$why -j$j counts differ: $(grep '^decoded' "$T/m.$j.err");"
	done
	grep -q ' in 6 thread parts' "$T/m.2.err" ||
		why="$why not 6 thread parts: $(grep '^decoded' "$T/m.2.err");"
	# a stream with no PSB among good ones: the same one sentence on
	# any number of threads (its message is made on a worker thread),
	# a non-zero exit and no file
	: >"$T/empty.pt"
	for j in 1 2 3; do
		if "$P" decode --pt "$T/calls.pt" --pt "$T/empty.pt" \
			--elf "$T/calls" -j$j -o "$T/e$j.fxt" 2>"$T/e$j.err"; then
			why="$why empty stream -j$j: exit 0;"
		fi
		[ -e "$T/e$j.fxt" ] && why="$why empty stream -j$j: a file was written;"
	done
	grep -q 'empty.pt has no PSB packet' "$T/e1.err" &&
		cmp -s "$T/e1.err" "$T/e2.err" && cmp -s "$T/e1.err" "$T/e3.err" ||
		why="$why empty stream: $(cat "$T/e1.err") | -j2: $(cat "$T/e2.err");"
	# threads of one recording (the replay path)
	TS=${PTSCOPE_BUILD:-build}/samples/threads
	if [ -x "$TS" ] &&
		"$P" record -q -b emulated -o "$T/thr.ptsc" -- "$TS" \
			>/dev/null 2>&1; then
		jsame threads_recording "$T/thr.ptsc"
	else
		why="$why could not record $TS;"
	fi
	if [ -z "$why" ]; then
		pass flow_engines_parallel_streams_same_trace
	else
		fail flow_engines_parallel_streams_same_trace "$why"
	fi
fi

# Cycle-accurate streams (CYC packets, perf's intel_pt/cyc=1/, what
# magic-trace records): build/tools/ptvariant --cyc adds a CYC before each
# packet that carries flow.  The flow engine follows CYC's time and its
# calibration (from CBR with the nominal frequency, PSB+ TSCs, MTCs) as
# libipt does; -j starts each segment from the clock the timing packets
# before it give and joins it only if that is the clock one decode has
# there (else the stream is decoded whole): the same trace on any -j.
CY=${PTSCOPE_BUILD:-build}/tools/ptvariant
if [ -s "$T/calls.pt" ] && [ -x "$CY" ]; then
	"$CY" --cyc --cbr 30 "$T/calls.pt" "$T/cyc.pt" 2>/dev/null
	"$CY" --cyc --first-cbr 30 --mtc "$T/calls.pt" "$T/cycm.pt" 2>/dev/null
	"$CY" --cyc "$T/calls.pt" "$T/cyc0.pt" 2>/dev/null
	same flow_engines_cyc --nom-freq 12 --elf "$T/calls" "$T/cyc.pt"
	ours flow_engines_cyc_needs_no_libipt flow_engines_cyc
	same flow_engines_cyc_mtc --nom-freq 12 --elf "$T/calls" "$T/cycm.pt"
	same flow_engines_cyc_uncalibrated --elf "$T/calls" "$T/cyc0.pt"
	counts flow_engines_counts_cyc --nom-freq 12 --elf "$T/calls" "$T/cyc.pt"
	MUT=$((MUT / 10)) damaged flow_engines_cyc_damaged --nom-freq 12 \
		--elf "$T/calls" "$T/cyc.pt"
	why=""
	jsame cyc --pt "$T/cyc.pt" --nom-freq 12 --elf "$T/calls" --stats
	jsame cycm --pt "$T/cycm.pt" --nom-freq 12 --elf "$T/calls" --stats
	jsame cyc0 --pt "$T/cyc0.pt" --elf "$T/calls" --stats
	# CYC's time is not TSC's: the calibrated trace differs from the
	# uncalibrated one (else the test above proves nothing)
	cmp -s "$T/cyc.1.fxt" "$T/cyc0.1.fxt" &&
		why="$why calibrated and uncalibrated traces are the same;"
	# the calibration comes again with each PSB+ CBR: the segments join
	grep -q '^parallel: [1-9][0-9]* segments' "$T/cyc.2.err" ||
		why="$why the CYC stream was not decoded in parallel;"
	if [ -z "$why" ]; then
		pass flow_engines_cyc_parallel_same_trace
	else
		fail flow_engines_cyc_parallel_same_trace "$why"
	fi
else
	skip flow_engines_cyc "no emulated recording or no $CY"
fi

# Overflows (OVF: the CPU's buffer overflowed and packets were lost):
# ptvariant --ovf 2 drops the packets before every 2nd PSB from 2 KiB
# after the PSB before it, in their place an OVF and the FUP where
# tracing went on.  The flow engine reports them as libipt does and goes
# on, with -j too; with CYC, the calibration starts over at each one.
if [ -s "$T/calls.pt" ] && [ -x "$CY" ]; then
	"$CY" --ovf 2 "$T/calls.pt" "$T/ovf.pt" 2>"$T/ovf.err"
	"$CY" --ovf 2 --cyc --cbr 30 "$T/calls.pt" "$T/ovfc.pt" 2>/dev/null
	if grep -q ' [1-9][0-9]* overflows' "$T/ovf.err"; then
		pass flow_engines_ovf_made
	else
		fail flow_engines_ovf_made "$(cat "$T/ovf.err")"
	fi
	same flow_engines_ovf --elf "$T/calls" "$T/ovf.pt"
	ours flow_engines_ovf_needs_no_libipt flow_engines_ovf
	same flow_engines_ovf_cyc --nom-freq 12 --elf "$T/calls" "$T/ovfc.pt"
	counts flow_engines_counts_ovf --elf "$T/calls" "$T/ovf.pt"
	MUT=$((MUT / 10)) damaged flow_engines_ovf_damaged --elf "$T/calls" \
		"$T/ovf.pt"
	why=""
	jsame ovf --pt "$T/ovf.pt" --elf "$T/calls" --stats
	jsame ovfc --pt "$T/ovfc.pt" --nom-freq 12 --elf "$T/calls" --stats
	grep -q '^errors: [1-9][0-9]* overflow' "$T/ovf.1.err" ||
		why="$why no overflow counted: $(grep '^errors' "$T/ovf.1.err");"
	if [ -z "$why" ]; then
		pass flow_engines_ovf_parallel_same_trace
	else
		fail flow_engines_ovf_parallel_same_trace "$why"
	fi
fi

# perf's default timing (intel_pt//: TSC and MTC on, MTCFreq 3, no CYC):
# ptvariant --mtc-clock keeps a TSC and a TMA in each PSB+ and writes an
# MTC, not a TSC, each time the crystal clock passes 8 ticks elsewhere, as
# a CPU does.  Times come from the MTCs by CPUID 0x15's ratio: both
# engines agree, -j too, and the trace's clock runs as the TSC-timed
# one's does (its last span ends within 0.2% of the same time).
if [ -s "$T/calls.pt" ] && [ -x "$CY" ]; then
	"$CY" --mtc-clock "$T/calls.pt" "$T/mtcc.pt" 2>/dev/null
	MC=(--mtc-freq 3 --cpuid-15 2,100)
	same flow_engines_mtc_clock "${MC[@]}" --elf "$T/calls" "$T/mtcc.pt"
	ours flow_engines_mtc_clock_needs_no_libipt flow_engines_mtc_clock
	counts flow_engines_counts_mtc_clock "${MC[@]}" --elf "$T/calls" \
		"$T/mtcc.pt"
	why=""
	jsame mtcc --pt "$T/mtcc.pt" "${MC[@]}" --elf "$T/calls" --stats
	# and cycle-accurate (intel_pt/cyc=1/): the segments' clocks, folded
	# from the PSB two before each cut, agree at every seam (a longer
	# run: MTC timing is an eighth of the bytes, too few to cut)
	"$P" record -q -b emulated -o "$T/long.ptsc" -- "$T/calls" 30000 \
		>/dev/null 2>&1 &&
		scripts/ptsc_pt.py "$T/long.ptsc" "$T/long.pt" >/dev/null &&
		"$CY" --cyc --cbr 30 --mtc-clock "$T/long.pt" "$T/mtccyc.pt" \
			2>/dev/null || why="$why could not record a longer run;"
	same flow_engines_mtc_clock_cyc --nom-freq 12 "${MC[@]}" \
		--elf "$T/calls" "$T/mtccyc.pt"
	jsame mtccyc --pt "$T/mtccyc.pt" --nom-freq 12 "${MC[@]}" \
		--elf "$T/calls" --stats
	grep -q '^parallel: [1-9][0-9]* segments' "$T/mtccyc.2.err" ||
		why="$why the cycle-accurate MTC stream was not decoded in parallel;"
	jsame tscc --pt "$T/calls.pt" --elf "$T/calls"
	PTDUMP=${PTSCOPE_BUILD:-build}/tools/ptdump
	"$PTDUMP" "$T/mtcc.pt" >"$T/mtcc.dump" 2>/dev/null
	ntsc=$(grep -c '  tsc ' "$T/mtcc.dump")
	[ "$ntsc" = "$(grep -c '  tma ' "$T/mtcc.dump")" ] &&
		[ "$ntsc" = "$(grep -c '  psb$' "$T/mtcc.dump")" ] &&
		grep -q '  mtc ' "$T/mtcc.dump" ||
		why="$why not one TSC and TMA a PSB+ and MTCs;"
	# same_clock TSC.fxt MTC.fxt MIN: both traces run at least MIN ns,
	# first time to last, within 0.2% of each other; else says so in $why
	same_clock() {
		local f1 l1 f2 l2
		read -r f1 l1 < <(span "$1")
		read -r f2 l2 < <(span "$2")
		awk -v a="$((l1 - f1))" -v b="$((l2 - f2))" -v min="$3" \
			'BEGIN { exit !(a > min && b > 0.998 * a && b < 1.002 * a) }' ||
			why="$why clock ran $((l2 - f2)) ns by MTC, $((l1 - f1)) by TSC;"
	}
	span() { # first and last time of a trace
		"$P" dump "$1" | awk '$2 ~ /^ts=/ { sub("ts=", "", $2);
			if (!n++) f = $2; l = $2 } END { print f, l }'
	}
	same_clock "$T/tscc.1.fxt" "$T/mtcc.1.fxt" 0
	if [ -z "$why" ]; then
		pass flow_engines_mtc_clock_times
	else
		fail flow_engines_mtc_clock_times "$why"
	fi
	# ... also across system calls longer than the MTC payload's wrap
	# (256 periods, 102 us here): a CPU goes on writing MTCs while the
	# kernel runs, so the sleeps' time is in the trace (it was lost, and
	# the test above failed when a system call was that slow)
	cat >"$T/gap.c" <<'EOF'
#include <unistd.h>
__attribute__((noinline)) int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}
int main(void)
{
	int s = 0;
	for (int k = 0; k < 3; k++) {
		s += work(2000);
		usleep(3000);
	}
	return s & 1;
}
EOF
	why=""
	if gcc -O1 -g -static -no-pie -o "$T/gap" "$T/gap.c" 2>/dev/null &&
		"$P" record -q -b emulated -o "$T/gap.ptsc" -- "$T/gap" \
			>/dev/null 2>&1 &&
		scripts/ptsc_pt.py "$T/gap.ptsc" "$T/gap.pt" >/dev/null &&
		"$CY" --mtc-clock "$T/gap.pt" "$T/gapm.pt" 2>/dev/null &&
		"$P" decode --pt "$T/gap.pt" --elf "$T/gap" -o "$T/gapt.fxt" \
			2>/dev/null &&
		"$P" decode --pt "$T/gapm.pt" "${MC[@]}" --elf "$T/gap" \
			-o "$T/gapm.fxt" 2>/dev/null; then
		same_clock "$T/gapt.fxt" "$T/gapm.fxt" 9000000 # 3 sleeps
		if [ -z "$why" ]; then
			pass flow_engines_mtc_clock_across_system_calls
		else
			fail flow_engines_mtc_clock_across_system_calls "$why"
		fi
	else
		fail flow_engines_mtc_clock_across_system_calls "could not build, record or decode the program with sleeps"
	fi
fi

# TNT packets as a CPU fills them: ptvariant --tnt-full packs the bits six
# to a packet, ended early only by a packet other than a timing one.  The
# emulated streams' TNTs hold 2-3 bits, so the flow engine's loop over
# blocks that report nothing while a TNT has bits left (quiet_blocks in
# decoder/fast_flow.c) takes few of their blocks and most of these.
if [ -s "$T/calls.pt" ] && [ -x "$CY" ]; then
	MC=(--mtc-freq 3 --cpuid-15 2,100)
	"$CY" --mtc-clock --tnt-full "$T/calls.pt" "$T/full.pt" 2>/dev/null
	"$CY" --mtc-clock --tnt-full --cyc --cbr 30 "$T/calls.pt" \
		"$T/fullc.pt" 2>/dev/null
	same flow_engines_tnt_full "${MC[@]}" --elf "$T/calls" "$T/full.pt"
	ours flow_engines_tnt_full_needs_no_libipt flow_engines_tnt_full
	same flow_engines_tnt_full_cyc --nom-freq 12 "${MC[@]}" \
		--elf "$T/calls" "$T/fullc.pt"
	counts flow_engines_counts_tnt_full "${MC[@]}" --elf "$T/calls" \
		"$T/full.pt"
	MUT=$((MUT / 10)) damaged flow_engines_tnt_full_damaged "${MC[@]}" \
		--elf "$T/calls" "$T/full.pt"
	why=""
	jsame full --pt "$T/full.pt" "${MC[@]}" --elf "$T/calls" --stats
	if [ -s "$T/long.pt" ]; then
		"$CY" --mtc-clock --tnt-full "$T/long.pt" "$T/fulll.pt" \
			2>/dev/null
		jsame fulll --pt "$T/fulll.pt" "${MC[@]}" --elf "$T/calls" \
			--stats
	fi
	# the same instructions as the stream it came from, in TNTs that are
	# mostly full (a CPU's, in real-pt's Skylake perf.data: 82%)
	grep -q "^decoded .* $("$P" decode --pt "$T/calls.pt" --elf "$T/calls" \
		-o /dev/null -f fxt --stats 2>&1 |
		sed -n 's/^decoded [0-9]* bytes of PT: \([0-9]*\) instr.*/\1/p') instr" \
		"$T/full.1.err" || why="$why not the same instructions;"
	"${PTSCOPE_BUILD:-build}"/tools/ptdump "$T/full.pt" 2>/dev/null |
		awk '$2 == "tnt.8" { n++; if (length($3) == 6) f++ }
			END { exit !(n > 0 && f > 0.8 * n) }' ||
		why="$why most TNT packets are not full;"
	if [ -z "$why" ]; then
		pass flow_engines_tnt_full_parallel_same_trace
	else
		fail flow_engines_tnt_full_parallel_same_trace "$why"
	fi
fi

# A wrong engine name: one sentence, non-zero exit, no file.
if "$P" decode --pt /dev/null --flow-engine fastest -o "$T/bad.fxt" \
	2>"$T/bad.err"; then
	fail flow_engines_bad_name "exit 0"
elif [ -e "$T/bad.fxt" ] || [ "$(wc -l <"$T/bad.err")" -gt 2 ] ||
	! grep -q "flow-engine 'fastest'" "$T/bad.err"; then
	fail flow_engines_bad_name "$(cat "$T/bad.err")"
else
	pass flow_engines_bad_name
fi

# --- real Intel PT ----------------------------------------------------------
if [ ! -d "$D" ]; then
	skip flow_engines_realpt "no test data at $D"
	exit 0
fi
S=$D/lldb-single-thread
M=$D/lldb-multi-file
C=$D/lldb-per-cpu
MF=(--cpu 6/79/1 --elf "$M/a.out" --elf "$M/libfoo.so:0x7ffff7bd9000"
	--elf "$M/libbar.so:0x7ffff79d7000")
same flow_engines_lldb_single --cpu 6/79/1 --elf "$S/a.out" "$S/3842849.trace"
same flow_engines_lldb_multi_file "${MF[@]}" "$M/multi-file.trace"
for c in 45 51; do
	same "flow_engines_lldb_cpu$c" --cpu 6/85/4 --elf "$C/modules/m.out" \
		"$C/cores/$c.intelpt_trace"
done
counts flow_engines_counts_lldb_multi_file "${MF[@]}" "$M/multi-file.trace"
counts flow_engines_counts_lldb_cpu51 --cpu 6/85/4 --elf "$C/modules/m.out" \
	"$C/cores/51.intelpt_trace"
damaged flow_engines_lldb_single_damaged --cpu 6/79/1 --elf "$S/a.out" \
	"$S/3842849.trace"
damaged flow_engines_lldb_multi_file_damaged "${MF[@]}" "$M/multi-file.trace"
damaged flow_engines_lldb_cpu51_damaged --cpu 6/85/4 \
	--elf "$C/modules/m.out" "$C/cores/51.intelpt_trace"

# perf.data: the AUX data of each CPU, decoded with the recording's
# timing parameters (README beside the data).
python3 - "$D/perf-data-skylake/perf.data.intel_pt-4.14" "$T/sky" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
data_off, data_sz = struct.unpack_from('<QQ', d, 40)
o, end, bufs = data_off, data_off + data_sz, {}
while o < end:
    typ, _misc, size = struct.unpack_from('<IHH', d, o)
    if typ == 71:  # PERF_RECORD_AUXTRACE
        sz, _off, _ref, _idx, _tid, cpu = struct.unpack_from('<QQQIII', d, o + 8)
        bufs[cpu] = bufs.get(cpu, b'') + d[o + size:o + size + sz]
        o += size + sz
    else:
        o += size
for c, b in bufs.items():
    open('%s%d.pt' % (sys.argv[2], c), 'wb').write(b)
EOF
SKY=(--cpu 6/78/3 --mtc-freq 3 --nom-freq 12 --cpuid-15 2,100)
if [ -s "$T/sky3.pt" ]; then
	same flow_engines_perf_mtc "${SKY[@]}" "$T/sky3.pt"
	damaged flow_engines_perf_mtc_damaged "${SKY[@]}" "$T/sky3.pt"
	# with CYCs: calibrated by its real MTCs, with SKL168 and SKD007
	if [ -x "$CY" ] && "$CY" --cyc "$T/sky3.pt" "$T/sky3c.pt" 2>/dev/null; then
		same flow_engines_perf_mtc_cyc "${SKY[@]}" "$T/sky3c.pt"
		damaged flow_engines_perf_mtc_cyc_damaged "${SKY[@]}" \
			"$T/sky3c.pt"
	fi
else
	fail flow_engines_perf_mtc "no AUX data found in the perf.data file"
fi

# --- code that calls itself with no branch between -----------------------
# libipt's block decoder follows such code by calling itself once a step,
# up to 65,535 steps (some 14 MB of stack, more than a thread's usual 8 MB:
# the fuzzer found ptscope dying of SIGSEGV there).  Decoded on a thread
# with room (decoder/threads.h), by either engine and -j: a trace, no crash.
python3 - tests/fuzz/regress/flowdiff/libipt-recursion-self-call "$T/self" <<'EOF2'
import sys
d = open(sys.argv[1], 'rb').read()[1:]  # mode byte 3: raw code, then PT
n = min((d[0] | d[1] << 8) % 4097, len(d) - 2)
open(sys.argv[2] + '.code', 'wb').write(d[2:2 + n])
open(sys.argv[2] + '.pt', 'wb').write(d[2 + n:])
EOF2
for how in "" "--flow-engine libipt" "-j2"; do
	name=flow_engines_self_call${how:+_$(echo "$how" | tr -dc 'a-z0-9')}
	"$P" decode --pt "$T/self.pt" --raw "$T/self.code:0x400000" $how \
		-o "$T/self.fxt" --stats >"$T/self.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q "spans written" "$T/self.out"; then
		pass "$name"
	else
		fail "$name" "exit $rc: $(tail -1 "$T/self.out")"
	fi
done
