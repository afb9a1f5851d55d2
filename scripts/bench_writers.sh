#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Trace writer and converter benchmarks (run by `make bench` through
# scripts/bench.sh; alone: scripts/bench_writers.sh [BUILD]).
#
# 1. tools/gen_trace writes the same synthetic trace (SPANS spans, 4
#    threads, 3,000 Zipf-distributed names, nested calls) in every format:
#    bytes per span, spans per second, and the size next to Chrome JSON.
# 2. `ptscope convert` reads a ~100 MB Chrome JSON trace and writes .fxt
#    and .pftrace: MB/s and peak RSS (/usr/bin/time -v).
# Results go to docs/bench-writers.md.  The default run takes well under
# two minutes; SPANS and CONVERT_SPANS change the sizes.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
SPANS=${SPANS:-1000000}
CONVERT_SPANS=${CONVERT_SPANS:-640000} # about 100 MB of JSON
GEN=$BUILD/tools/gen_trace
P=$BUILD/ptscope
OUT=docs/bench-writers.md
for f in "$GEN" "$P" /usr/bin/time; do
	if [ ! -x "$f" ]; then
		echo "bench_writers: $f is missing (run make; apt-get install time)" >&2
		exit 1
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# gen_trace prints "spans events seconds" on stderr; the best of REPEAT
# runs is kept (the machine is shared, so single runs are noisy).
REPEAT=${REPEAT:-3}
gen() { # label, file, extra args...
	local label=$1 file=$2 best="" out secs events i
	shift 2
	for ((i = 0; i < REPEAT; i++)); do
		out=$("$GEN" -n "$SPANS" -t 4 "$@" 2>&1 >/dev/null)
		read -r _ events secs <<<"$out"
		best=$(awk -v a="$best" -v b="$secs" 'BEGIN{print (a == "" || b < a) ? b : a}')
	done
	local size=0
	[ "$file" != - ] && size=$(stat -c %s "$file")
	echo "$label $size $best $events"
}
rows=()
base=$(gen "(generator)" - --null)
rows+=("$base")
for ext in fxt pftrace json fxt.gz pftrace.gz json.gz; do
	rows+=("$(gen ".$ext" "$tmp/t.$ext" -o "$tmp/t.$ext")")
	rm -f "$tmp/t.$ext"
done
info_rows=()
for ext in fxt pftrace json; do
	info_rows+=("$(gen ".$ext" "$tmp/i.$ext" --info -o "$tmp/i.$ext")")
	rm -f "$tmp/i.$ext"
done

table() { # rows...
	local json_size
	json_size=$(printf '%s\n' "$@" | awk '$1==".json"{print $2}')
	echo "| output | bytes | bytes/span | size vs Chrome JSON | time (s) | spans/s |"
	echo "|---|---:|---:|---:|---:|---:|"
	printf '%s\n' "$@" | awk -v n="$SPANS" -v js="$json_size" '{
		if ($2 == 0) {
			printf "| %s | – | – | – | %.3f | %s |\n", $1, $3, ($3 > 0 ? sprintf("%.2f M", n / $3 / 1e6) : "–")
		} else {
			printf "| %s | %d | %.1f | %.1f%% | %.3f | %.2f M |\n", $1, $2, $2 / n, 100 * $2 / js, $3, n / $3 / 1e6
		}
	}'
}

# Conversion of a big JSON trace: throughput and peak memory.
"$GEN" -n "$CONVERT_SPANS" -t 4 -o "$tmp/big.json" 2>/dev/null
big_mb=$(awk -v s="$(stat -c %s "$tmp/big.json")" 'BEGIN{printf "%.1f", s/1e6}')
conv_rows=()
for ext in fxt pftrace json.gz; do
	/usr/bin/time -v "$P" convert "$tmp/big.json" -o "$tmp/big.$ext" \
		2>"$tmp/time.$ext"
	secs=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tmp/time.$ext")
	rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/time.$ext")
	osz=$(stat -c %s "$tmp/big.$ext")
	conv_rows+=("$ext $secs $rss $osz")
	rm -f "$tmp/big.$ext"
done
# dump --slices keeps every slice to sort it: its memory for comparison.
/usr/bin/time -v "$P" dump --slices "$tmp/big.json" >/dev/null 2>"$tmp/time.dump"
dump_rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/time.dump")

cpu=$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)
{
	echo "# Trace writer benchmarks"
	echo
	echo "Measured $(date -u '+%Y-%m-%d') on $cpu ($(nproc) cores, shared),"
	echo "ptscope built with \`make\` (-O2).  Reproduce with \`make bench\` or"
	echo "\`scripts/bench_writers.sh build\` (\`SPANS=…\` and \`CONVERT_SPANS=…\`"
	echo "change the sizes); the numbers below were written by that script."
	echo
	echo "## Writing $SPANS spans"
	echo
	echo "\`build/tools/gen_trace -n $SPANS -t 4 -o OUT\`: 4 threads, 3,000"
	echo "C++-style names drawn with Zipf's law, calls nested up to depth 24,"
	echo "each span a BEGIN/END pair (what the decoder hands to the writers)."
	echo "Time is the whole write including the generator (first row: the"
	echo "generator alone) and the final flush and rename, best of $REPEAT runs."
	echo
	table "${rows[@]}"
	echo
	echo "With \`--info\` (every span also carries its module and code"
	echo "address, as decoded spans do):"
	echo
	table "${info_rows[@]}"
	echo
	echo "## Converting a $big_mb MB Chrome JSON trace"
	echo
	echo "\`ptscope convert big.json -o big.EXT\` ($CONVERT_SPANS spans, made by"
	echo "\`gen_trace -n $CONVERT_SPANS -t 4 -o big.json\`), timed with"
	echo "\`/usr/bin/time -v\`:"
	echo
	echo "| output | output bytes | time (s) | input MB/s | peak RSS |"
	echo "|---|---:|---:|---:|---:|"
	printf '%s\n' "${conv_rows[@]}" | awk -v mb="$big_mb" '{
		printf "| .%s | %d | %.2f | %.0f | %.1f MB |\n", $1, $4, $2, ($2 > 0 ? mb / $2 : 0), $3 / 1024
	}'
	echo
	echo "The JSON text is parsed as a stream (yajl), but the events are kept"
	echo "until the end of the file and sorted the way Perfetto orders a JSON"
	echo "trace (by time, then E before B, X longest first), so memory grows"
	echo "with the number of events: about 2x the file size here.  For"
	echo "comparison, \`ptscope dump --slices\` on the same file, which also"
	echo "keeps every slice to sort them, peaked at"
	echo "$(awk -v k="$dump_rss" 'BEGIN{printf "%.1f", k/1024}') MB."
} >"$OUT"
echo "bench_writers: results in $OUT"
cat "$OUT"
