#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the tests that decode on several threads (decode -j, decoder/split.c)
# with the ThreadSanitizer build ($BUILD, built by `make check-tsan`) and
# fails on any report, even from a program whose non-zero exit a test
# expected: every report goes to a log file in one directory, which must
# stay empty.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build-tsan}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
# the parallel decode: one stream cut, several streams, damaged seams,
# real Intel PT and perf.data (per-thread and per-CPU), a recording's
# threads and processes
BUILD=$BUILD tests/run.sh flow_engines decode perfdata convert
rc=$?
reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "---- ThreadSanitizer report $(basename "$f")"
		head -n 80 "$f"
	done
	echo "FAIL threads: $(echo "$reports" | wc -l) ThreadSanitizer report(s) above"
	exit 1
fi
echo "threads: no ThreadSanitizer reports"
exit $rc
