#!/usr/bin/env bash
# Runs every test on the sanitized build ($BUILD, built by `make check-asan`)
# and fails on any AddressSanitizer, LeakSanitizer or UBSan report, even one
# from a program whose non-zero exit a test expected (a bad-input case):
# every report goes to a log file in one directory, which must stay empty.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build-asan}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
chmod 1777 "$logs" # tests run some programs as another user
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="log_path=$logs/ubsan:halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
BUILD=$BUILD tests/run.sh
rc=$?
reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "---- sanitizer report $(basename "$f")"
		head -n 60 "$f"
	done
	echo "FAIL sanitizers: $(echo "$reports" | wc -l) report(s) above"
	exit 1
fi
echo "sanitizers: no reports"
exit $rc
