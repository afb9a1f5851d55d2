#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: runs every area's benchmark script (scripts/bench_*.sh); each
# writes its results to docs/bench-*.md and says how to reproduce them.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
rc=0
for b in scripts/bench_*.sh; do
	[ -f "$b" ] || continue
	echo "== $b"
	bash "$b" "$BUILD" || rc=1
done
exit $rc
