# SPDX-License-Identifier: MIT
# SPDX-License-Identifier: MIT
# Helpers for end-to-end tests (sourced).  Each check prints one PASS/FAIL
# line that tests/run.sh counts.
#   pass NAME / fail NAME WHY / skip NAME WHY
#   expect NAME CMD...   : PASS if CMD exits 0
set -u
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
expect() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi
}
T=${TMPDIR_E2E:-$(mktemp -d)}
