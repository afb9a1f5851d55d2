#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptscope selftest as a new user runs it: one line per case, a summary,
# exit status 0; without Intel PT it says so in one sentence and compares
# the two emulated backends.  And it must fail when a call count differs:
# a stand-in sample that calls its function once more on each run (so the
# second backend of the pair sees one call more) makes it exit 1 and name
# the function.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
out=$T/selftest.out

"$PTSCOPE" selftest >"$out" 2>&1
rc=$?
cases=$("$PTSCOPE" selftest --list | wc -l)
if [ $rc -eq 0 ] && [ "$(grep -c '^  [a-z]* *ok  ' "$out")" -eq "$cases" ] &&
	grep -q "^ptscope selftest: $cases passed, 0 failed" "$out"; then
	pass selftest_all_cases_agree
else
	fail selftest_all_cases_agree "status $rc: $(tr '\n' '|' <"$out")"
fi
if [ -e /sys/bus/event_source/devices/intel_pt ]; then
	if grep -q "^ptscope selftest: intel-pt against" "$out"; then
		pass selftest_says_what_it_compares
	else
		fail selftest_says_what_it_compares "$(head -n2 "$out" | tr '\n' '|')"
	fi
elif command -v qemu-x86_64 >/dev/null &&
	[ "$(grep -c 'no Intel PT' "$out")" -eq 1 ] &&
	head -n1 "$out" | grep -q 'so the same comparison runs between the two emulated backends, qemu and step'; then
	pass selftest_says_what_it_compares
elif ! command -v qemu-x86_64 >/dev/null &&
	head -n1 "$out" | grep -q 'qemu-x86_64 is not installed'; then
	pass selftest_says_what_it_compares
else
	fail selftest_says_what_it_compares "$(head -n2 "$out" | tr '\n' '|')"
fi

# A sample that is not the same twice: it calls tick() once more on each
# run (a counter file beside it), in place of "recursion".
mk=$T/skewed
mkdir -p "$mk"
cat >"$mk/skew.c" <<'C'
#include <stdio.h>
__attribute__((noinline)) void tick(void) { __asm__ volatile(""); }
int main(void)
{
	char path[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/count", getenv("SKEW_DIR"));
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	f = fopen(path, "w");
	fprintf(f, "%d\n", n + 1);
	fclose(f);
	for (int i = 0; i <= n; i++)
		tick();
	return 0;
}
C
if ! cc -g -O1 -include stdlib.h -o "$mk/recursion" "$mk/skew.c" 2>"$T/cc.err"; then
	skip selftest_fails_on_a_count_difference "no C compiler: $(head -n1 "$T/cc.err")"
else
	echo 0 >"$mk/count"
	SKEW_DIR=$mk PTSCOPE_SAMPLES=$mk "$PTSCOPE" selftest recursion >"$T/skew.out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -qE '^  recursion +FAIL  tick: 1 calls on [a-z-]+, 2 on [a-z-]+$' "$T/skew.out" &&
		grep -q "^ptscope selftest: 0 passed, 1 failed" "$T/skew.out"; then
		pass selftest_fails_on_a_count_difference
	else
		fail selftest_fails_on_a_count_difference "status $rc: $(tr '\n' '|' <"$T/skew.out")"
	fi
fi

# Bad input: one sentence, status 2.
"$PTSCOPE" selftest nosuchcase >"$T/bad.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "no case 'nosuchcase'" "$T/bad.out" && [ "$(wc -l <"$T/bad.out")" -eq 1 ]; then
	pass selftest_unknown_case_is_one_sentence
else
	fail selftest_unknown_case_is_one_sentence "status $rc: $(cat "$T/bad.out")"
fi
"$PTSCOPE" selftest -b nosuch,step >"$T/bad2.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "unknown backend 'nosuch'" "$T/bad2.out" && [ "$(wc -l <"$T/bad2.out")" -eq 1 ]; then
	pass selftest_unknown_backend_is_one_sentence
else
	fail selftest_unknown_backend_is_one_sentence "status $rc: $(cat "$T/bad2.out")"
fi
