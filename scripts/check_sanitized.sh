#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs tests on a sanitized build and fails on any report, even one from a
# program whose non-zero exit a test expected (a bad-input case): every
# report goes to a log file in one directory, which must stay empty.
#   scripts/check_sanitized.sh asan   every test on build-asan/ (make
#                                     check-asan): AddressSanitizer,
#                                     LeakSanitizer, UBSan
#   scripts/check_sanitized.sh tsan   the tests that decode on several
#                                     threads (decode -j, decoder/split.c)
#                                     on build-tsan/ (make check-tsan):
#                                     ThreadSanitizer
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kind=${1:-}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
case $kind in
asan)
	BUILD=${BUILD:-build-asan}
	chmod 1777 "$logs" # tests run some programs as another user
	export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="log_path=$logs/ubsan:halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
	export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
	tests=() # all of them
	what="sanitizer report" done="sanitizers: no reports" lines=60
	fail="sanitizers"
	;;
tsan)
	BUILD=${BUILD:-build-tsan}
	export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
	# the parallel decode: one stream cut, several streams, damaged
	# seams, real Intel PT and perf.data (per-thread and per-CPU), a
	# recording's threads and processes; and the thread pool (a unit
	# test: make check-tsan builds only the programs and the unit tests
	# named there)
	tests=(test_crew flow_engines decode perfdata convert)
	what="ThreadSanitizer report" done="threads: no ThreadSanitizer reports"
	lines=80 fail="threads"
	;;
*)
	echo "usage: scripts/check_sanitized.sh asan|tsan" >&2
	exit 2
	;;
esac
BUILD=$BUILD tests/run.sh "${tests[@]}"
rc=$?
reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "---- $what $(basename "$f")"
		head -n "$lines" "$f"
	done
	echo "FAIL $fail: $(echo "$reports" | wc -l) report(s) above"
	exit 1
fi
echo "$done"
exit $rc
