#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every unit-test program ($BUILD/tests/test_*) and every end-to-end
# script (tests/e2e/*.sh), counts their PASS/FAIL/SKIP lines and prints one
# closing line: "N passed, N failed, N skipped".  Exit status 1 on any failure.
#
# End-to-end scripts print the same PASS/FAIL/SKIP lines (tests/e2e/lib.sh
# helps) and get BUILD, PTSCOPE (the program), PTSCOPE_TOP, PTSCOPE_TESTDATA
# and a scratch directory TMPDIR_E2E in their environment.
#
# tests/run.sh NAME...  runs only the named ones (test_json, record_crash,
# record_crash[qemu]), for work on one part.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
export PTSCOPE_TOP="$top"
export PTSCOPE_BUILD="$top/$BUILD"
export PTSCOPE="$top/$BUILD/ptscope"
if [ -z "${PTSCOPE_TESTDATA:-}" ]; then
	for d in "$top/../shared/testdata" "$top/shared/testdata"; do
		[ -d "$d" ] && PTSCOPE_TESTDATA=$(cd "$d" && pwd) && break
	done
fi
export PTSCOPE_TESTDATA=${PTSCOPE_TESTDATA:-$top/../shared/testdata}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

pass=0 fail=0 skip=0
failures="$log/failures" # every FAIL line, repeated before the closing line
: >"$failures"
wanted() { # name: on the command line, or no names given
	[ ${#only[@]} -eq 0 ] && return 0
	for w in "${only[@]}"; do
		[ "$w" = "$1" ] || [ "e2e/$w" = "$1" ] && return 0
	done
	return 1
}
only=("$@")
run_one() { # name, command...
	local name=$1 out rc
	shift
	wanted "$name" || return 0
	out="$log/$(basename "$name").out"
	"$@" >"$out" 2>&1
	rc=$?
	local p f s
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	grep -E '^(FAIL|SKIP) ' "$out" | sed "s|^|  $name: |"
	grep -E '^FAIL ' "$out" | sed "s|^|  $name: |" >>"$failures"
	# A program that failed without saying which test failed (a crash, a
	# missing file) still counts as one failure.
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "  $name: FAIL exited with status $rc; last lines:"
		tail -n 5 "$out" | sed 's/^/    /'
		echo "  $name: FAIL exited with status $rc" >>"$failures"
	fi
	printf '%-28s %4d passed %3d failed %3d skipped\n' "$name" "$p" "$f" "$s"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "$(basename "$t")" "$t"
done
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	[ "$(basename "$t")" = lib.sh ] && continue
	export TMPDIR_E2E="$log/$(basename "$t" .sh).d"
	mkdir -p "$TMPDIR_E2E"
	run_one "e2e/$(basename "$t" .sh)" bash "$t"
done
# The recording tests again on the qemu backend, where QEMU is installed.
QEMU_E2E="record_trigger record_crash record_file record_threads_clock record_errors kevents args process_tree"
if command -v qemu-x86_64 >/dev/null; then
	for n in $QEMU_E2E; do
		export TMPDIR_E2E="$log/$n.qemu.d"
		mkdir -p "$TMPDIR_E2E"
		BACKEND=qemu run_one "e2e/$n[qemu]" bash "tests/e2e/$n.sh"
	done
else
	echo "SKIP qemu backend tests: qemu-x86_64 not installed (apt-get install qemu-user)"
	skip=$((skip + 1))
fi
# CI shows only the end of the log: name the failures again there.
if [ -s "$failures" ]; then
	echo "failures:"
	cat "$failures"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
