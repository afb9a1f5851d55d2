#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One raw PT stream decoded by ptscope and by libipt's own loops, side by
# side, in the same run: what each counts (instructions, near calls and
# returns, as libipt's instruction loop classes them) and how long each
# takes.  For recordings of your own: ptscope must give libipt's counts
# exactly, and its speed is shown against the bare block loop
# (pt_blk_next and nothing else), as docs/bench-decoder.md does for the
# bundled streams.
#
#   scripts/vs_libipt.sh [-r ROUNDS] [-b BUILD] TRACE [CODE OPTIONS...]
#
# CODE OPTIONS are those both decoders take, spelt as libipt's ptxed
# spells them: --elf FILE[:BASE], --raw FILE:ADDR, --cpu F/M/S,
# --mtc-freq N, --nom-freq N, --cpuid-15 EAX,EBX.  Each time is the best
# of ROUNDS (default 5) rounds; the one-core runs are held to one core
# (taskset), the last run uses all of them (-j N).  A short stream is
# decoded as several copies per run (each ptscope decode as threads of
# its own, the loops with --repeat), so that the clock can see it.
# Exit status: 0 when the counts agree, 1 when they do not, 2 for bad
# arguments or a decoder that failed.
set -u
ROUNDS=5
BUILD=build
usage() {
	echo "usage: scripts/vs_libipt.sh [-r ROUNDS] [-b BUILD] TRACE [--elf FILE[:BASE]] [--raw FILE:ADDR] [--cpu F/M/S] [--mtc-freq N] [--nom-freq N] [--cpuid-15 EAX,EBX]" >&2
	exit 2
}
die() {
	echo "vs_libipt: $*" >&2
	exit 2
}
while getopts r:b:h o; do
	case $o in
	r) ROUNDS=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
case $ROUNDS in
'' | *[!0-9]* | 0) die "-r takes a number of rounds, 1 or more (not '$ROUNDS')" ;;
esac
TRACE=$1
shift
P=$BUILD/ptscope
BARE=$BUILD/tools/bare_blk
for f in "$P" "$BARE"; do
	[ -x "$f" ] || die "$f is not built: run make first (or give -b BUILD)"
done
if [ ! -f "$TRACE" ] || [ ! -r "$TRACE" ]; then
	die "cannot read $TRACE: give a file of raw PT packets"
fi
BYTES=$(stat -c %s "$TRACE")
[ "$BYTES" -gt 0 ] || die "$TRACE is empty"
case "$(head -c 8 "$TRACE" | od -An -c | tr -d ' ')" in
PERFILE2* | PTSCOPE*)
	die "$TRACE is not raw PT: decode it with 'ptscope decode $TRACE', or take its PT out first (scripts/ptsc_pt.py for a .ptsc)"
	;;
esac
# Only the options both take, each with its value.
CODE=("$@")
for ((i = 0; i < ${#CODE[@]}; i += 2)); do
	case ${CODE[i]} in
	--elf | --raw | --cpu | --mtc-freq | --nom-freq | --cpuid-15)
		[ $((i + 1)) -lt ${#CODE[@]} ] ||
			die "${CODE[i]} needs a value"
		;;
	*) die "'${CODE[i]}' is not a code option both decoders take (--elf, --raw, --cpu, --mtc-freq, --nom-freq, --cpuid-15)" ;;
	esac
done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ONE=()
CORE=$(taskset -pc $$ 2>/dev/null | sed 's/.*[,-]//; s/.*: //')
if [ -n "$CORE" ] && taskset -c "$CORE" true 2>/dev/null; then
	ONE=(taskset -c "$CORE")
fi
JOBS=$(nproc)

# --- the counts ------------------------------------------------------------
if ! "$BARE" --insn "${CODE[@]}" "$TRACE" >"$W/ref" 2>"$W/ref.err"; then
	die "libipt's instruction loop failed: $(tail -1 "$W/ref.err")"
fi
# instructions N blocks N events N errors N nomap N calls N returns N seconds S
read -r R_INSN R_ERR R_NOMAP R_CALL R_RET < <(awk '{print $2, $8, $10, $12, $14}' "$W/ref")
if ! "$P" decode --pt "$TRACE" "${CODE[@]}" -j1 --stats -o "$W/x.fxt" \
	>"$W/dec" 2>&1 && ! grep -q '^decoded ' "$W/dec"; then
	die "ptscope decode failed: $(tail -1 "$W/dec")"
fi
read -r P_INSN P_CALL P_RET < <(sed -n \
	's/^decoded [0-9]* bytes of PT: \([0-9]*\) instructions (\([0-9]*\) calls, \([0-9]*\) returns).*/\1 \2 \3/p' "$W/dec")
P_ERRS=$(sed -n 's/^errors: \(.*\); .*/\1/p' "$W/dec")
[ -n "${P_INSN:-}" ] || die "ptscope decode said no counts: $(tail -1 "$W/dec")"

echo "$TRACE: $BYTES bytes of PT"
printf '%-28s %14s %10s %10s  %s\n' "" instructions calls returns errors
printf '%-28s %14s %10s %10s  %s\n' "libipt instruction loop" "$R_INSN" \
	"$R_CALL" "$R_RET" "$R_ERR ($R_NOMAP no memory mapped)"
printf '%-28s %14s %10s %10s  %s\n' "ptscope decode" "$P_INSN" "$P_CALL" \
	"$P_RET" "$P_ERRS"
SAME=1
if [ "$R_INSN $R_CALL $R_RET" = "$P_INSN $P_CALL $P_RET" ]; then
	echo "counts: the same"
else
	echo "counts: DIFFERENT"
	SAME=0
fi

# --- the times -------------------------------------------------------------
# Copies per run: about 4 MB of PT, 1 to 200 of them.
K=$(((4 * 1024 * 1024 + BYTES - 1) / BYTES))
[ "$K" -ge 1 ] || K=1
[ "$K" -le 200 ] || K=200
PTS=()
for ((i = 0; i < K; i++)); do PTS+=(--pt "$TRACE"); done
secs() { # ERR-FILE: decode --stats' time per copy
	sed -n 's/.*(\([0-9.]*\) s decoding).*/\1/p' "$1" | awk -v k="$K" '{print $1 / k}'
}
best() { sort -g | head -1; }
for f in blk insn j1 jn; do : >"$W/$f"; done
for ((r = 0; r < ROUNDS; r++)); do
	"${ONE[@]}" "$BARE" "${CODE[@]}" --repeat "$K" "$TRACE" |
		awk '{print $NF}' >>"$W/blk"
	"${ONE[@]}" "$BARE" --insn "${CODE[@]}" --repeat "$K" "$TRACE" |
		awk '{print $NF}' >>"$W/insn"
	"${ONE[@]}" "$P" decode "${PTS[@]}" "${CODE[@]}" -j1 --stats \
		-o "$W/t.fxt" >"$W/t.err" 2>&1 || die "ptscope decode failed: $(tail -1 "$W/t.err")"
	secs "$W/t.err" >>"$W/j1"
	"$P" decode "${PTS[@]}" "${CODE[@]}" -j"$JOBS" --stats \
		-o "$W/t.fxt" >"$W/t.err" 2>&1 || die "ptscope decode failed: $(tail -1 "$W/t.err")"
	secs "$W/t.err" >>"$W/jn"
done
BLK=$(best <"$W/blk")
INSN=$(best <"$W/insn")
J1=$(best <"$W/j1")
JN=$(best <"$W/jn")
echo "time per pass, best of $ROUNDS rounds ($K copies of the stream per run; one-core runs held to core ${CORE:-any}):"
awk -v blk="$BLK" -v insn="$INSN" -v j1="$J1" -v jn="$JN" -v n="$JOBS" -v k="$K" '
function ms(s) { return sprintf("%9.3f ms", s * 1000) }
function x(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "n/a" }
BEGIN {
	printf "  %-34s %s\n", "libipt block loop (pt_blk_next)", ms(blk)
	printf "  %-34s %s   %s the block loop\n", "libipt instruction loop", ms(insn), x(blk, insn)
	printf "  %-34s %s   %s the block loop\n", "ptscope decode -j1", ms(j1), x(blk, j1)
	printf "  %-34s %s   %s the block loop, %s -j1\n", "ptscope decode -j" n, ms(jn), x(blk, jn), x(j1, jn)
	if (j1 * k < 0.01)
		print "  (rough: a run of ptscope took under 10 ms, and decode --stats counts milliseconds)"
}'
[ "$SAME" = 1 ] || exit 1
exit 0
