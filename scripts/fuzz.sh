#!/usr/bin/env bash
# Runs every libFuzzer program in BUILD/fuzz/ for SECONDS each and prints,
# per target: executions, coverage (libFuzzer's cov: edges and ft:
# features at the end) and crashes.  Usage: scripts/fuzz.sh BUILD SECONDS
#
# Each target starts from its seeds (tests/fuzz/corpus/NAME/) plus what
# earlier runs found (BUILD/fuzz-corpus/NAME/, kept between runs).  A
# crash, leak, timeout or out-of-memory input is saved as
# BUILD/fuzz-crashes/NAME-*; copy it to tests/fuzz/regress/NAME/ once
# fixed, where test_fuzz_regress replays it forever.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${1:-build-fuzz}
secs=${2:-60}
export PTSCOPE_TESTDATA=${PTSCOPE_TESTDATA:-$top/../shared/testdata}
# Fuzzing finds leaks as crashes; UBSan reports stop the run.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
failed=0
printf '%-18s %12s %8s %8s %8s %s\n' target executions exec/s cov ft crashes
for prog in "$build"/fuzz/*; do
	[ -x "$prog" ] || continue
	name=$(basename "$prog")
	seeds=tests/fuzz/corpus/$name
	work=$build/fuzz-corpus/$name
	crashes=$build/fuzz-crashes
	log=$build/fuzz-logs/$name.log
	mkdir -p "$work" "$crashes" "$(dirname "$log")"
	note=""
	if [ "$name" = ptdecode ] && [ ! -d "$PTSCOPE_TESTDATA/real-pt" ]; then
		note=" (no shared/testdata: raw-code mode only)"
	fi
	"$prog" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$crashes/$name-" \
		"$work" "$seeds" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	# crash-, leak-, timeout-, oom- inputs fail the run; slow-unit- ones
	# (over 10 s, under the timeout) are reported only.
	found=$(ls "$crashes" 2>/dev/null | grep -cE "^$name-(crash|leak|timeout|oom)-")
	slow=$(ls "$crashes" 2>/dev/null | grep -c "^$name-slow-unit-")
	[ "$slow" -gt 0 ] && note="$note ($slow slow inputs kept in $crashes)"
	printf '%-18s %12s %8s %8s %8s %s%s\n' "$name" "${execs:-?}" \
		"${rate:-?}" "${cov:-?}" "${ft:-?}" "$found" "$note"
	if [ $rc -ne 0 ] || [ "$found" -ne 0 ]; then
		failed=1
		echo "  $name: exit status $rc; see $log and $crashes/$name-*"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" |
			head -n 3 | sed 's/^/  /'
	fi
done
[ $failed -eq 0 ] && echo "fuzz: no crashes" || echo "fuzz: crashes found"
exit $failed
