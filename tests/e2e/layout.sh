#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The house rules, checked from the code (scripts/check_layout.py): no
# include circle between modules, the recorder's core knows no engine,
# engines reach the core through core/core.h, no file over 800 lines.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v python3 >/dev/null; then
	skip layout "python3 is not installed"
	exit 0
fi
out=$(cd "$root" && python3 scripts/check_layout.py 2>&1)
while read -r verdict rule rest; do
	rule=${rule%:}
	case $verdict in
	PASS) pass "layout_$rule" ;;
	FAIL) fail "layout_$rule" "$rest" ;;
	esac
done <<<"$out"
grep -qE '^(PASS|FAIL) ' <<<"$out" || fail layout_checker_ran "said: $out"
