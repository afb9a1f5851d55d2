#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --args: every call of samples/args carries exactly the arguments and
# the return value the program passed and got (it prints them), shown by
# type (ints, an enum, a bool, a char, pointers, NULL, doubles, stack-
# passed parameters); ptscope_write() is an instant; the crash on a NULL
# argument shows it.  Runs on step, and on qemu as args[qemu].
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
B=${BACKEND:-step}
out=$T/args

"$PTSCOPE" run --args -b "$B" -o "$out.fxt" -- "$S/args" >"$out.stdout" 2>"$out.err"
rc=$?
if [ $rc -eq 0 ] && [ -s "$out.fxt" ]; then pass "args_run"; else fail "args_run" "status $rc: $(tr '\n' '|' <"$out.err")"; fi
"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>&1

# Each printed line "NAME k=v ... return=R" against the NAME spans, in
# order: the same keys and values, nothing missing, nothing extra
# (triple_of returns a struct in memory: no return value, and its
# parameters start at rsi).
msg=$(python3 - "$out.stdout" "$out.slices" <<'PY'
import re, sys
calls = [l.split() for l in open(sys.argv[1]) if "=" in l]
spans = {}
for l in open(sys.argv[2]):
    m = re.match(r'slice .* name="([^"]*)" cat="function" args=\{(.*)\}$', l)
    if not m:
        continue
    args = {}
    for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', m.group(2)):
        args[k] = v.strip('"')
    spans.setdefault(m.group(1), []).append(args)
bad = []
seen = {}
for c in calls:
    name, want = c[0], dict(kv.split("=", 1) for kv in c[1:])
    if name == "triple_of":
        want.pop("c")  # a field of the returned struct, not an argument
    i = seen.get(name, 0)
    seen[name] = i + 1
    got = spans.get(name, [])
    if i >= len(got):
        bad.append("no span %d of %s" % (i + 1, name))
        continue
    have = {k: v for k, v in got[i].items()
            if k not in ("address", "file", "line", "module")}
    if have != want:
        bad.append("%s: want %s, got %s" % (name, want, have))
print("; ".join(bad) if bad else "ok")
PY
)
if [ "$msg" = ok ]; then pass "args_every_call_exact"; else fail "args_every_call_exact" "$msg"; fi
n=$(grep -c '^length ' "$out.stdout")
if [ "$n" = 2 ]; then pass "args_sample_printed"; else fail "args_sample_printed" "$(cat "$out.stdout")"; fi

if grep -q 'instant .* name="ptscope_write" .*value=4660' "$out.slices"; then
	pass "args_ptscope_write_instant"
else
	fail "args_ptscope_write_instant" "no ptscope_write instant with value=4660"
fi

# Off by default: no span carries a return value.
"$PTSCOPE" run -b "$B" -o "$out.off.fxt" -- "$S/args" >/dev/null 2>&1
if "$PTSCOPE" dump --slices "$out.off.fxt" 2>&1 | grep "cat=\"function\"" | grep -q "return="; then
	fail "args_off_by_default" "spans carry values without --args"
else
	pass "args_off_by_default"
fi
# ptscope_write() is seen without --args too.
if "$PTSCOPE" dump --slices "$out.off.fxt" 2>&1 | grep -q 'instant .* name="ptscope_write" .*value=4660'; then
	pass "args_ptscope_write_without_args"
else
	fail "args_ptscope_write_without_args" "no ptscope_write instant without --args"
fi

# The crash on a NULL argument: the faulting function's span shows it,
# and the crash instant names it.
(ulimit -c 0; exec "$PTSCOPE" run --args -b "$B" -o "$out.crash.fxt" -- "$S/args" crash) >/dev/null 2>"$out.crash.err"
rc=$?
"$PTSCOPE" dump --slices "$out.crash.fxt" >"$out.crash.slices" 2>&1
if [ $rc -eq 139 ] && grep -q 'name="deref" .*p="NULL"' "$out.crash.slices"; then
	pass "args_crash_null_arg"
else
	fail "args_crash_null_arg" "status $rc; deref: $(grep 'name="deref"' "$out.crash.slices")"
fi
if grep -q 'instant .*name="SIGSEGV" .*argument="p"' "$out.crash.slices"; then
	pass "args_crash_names_argument"
else
	fail "args_crash_names_argument" "$(grep 'name="SIGSEGV"' "$out.crash.slices")"
fi

# A backend that cannot: one sentence, no trace.
if "$PTSCOPE" run --args -b sample -o "$out.bad.fxt" -- "$S/args" >/dev/null 2>"$out.bad.err"; then
	fail "args_needs_emulated" "sample backend accepted --args"
elif grep -q -- '--args needs an emulated backend' "$out.bad.err" && [ ! -e "$out.bad.fxt" ]; then
	pass "args_needs_emulated"
else
	fail "args_needs_emulated" "$(cat "$out.bad.err")"
fi

# A .constprop clone (gcc -O2 drops a constant parameter): the constant
# comes from DWARF, the other parameter from its register.
if command -v cc >/dev/null; then
	cat >"$T/clone.c" <<'C'
#include <stdio.h>
static int __attribute__((noinline)) scale(int x, int k) { return x * k + 1; }
int main(int argc, char **argv) { int s = 0; for (int i = 0; i < argc + 3; i++) s += scale(i, 7); printf("%d\n", s); return 0; }
C
	if cc -g -O2 -o "$T/clone" "$T/clone.c" 2>/dev/null && nm "$T/clone" | grep -q 'scale\.constprop'; then
		"$PTSCOPE" run --args -b "$B" -o "$out.clone.fxt" -- "$T/clone" >/dev/null 2>&1
		got=$("$PTSCOPE" dump --slices "$out.clone.fxt" 2>&1 | grep 'name="scale.constprop' |
			sed 's/.* k=\([-0-9]*\) .*return=\([-0-9]*\) x=\([-0-9]*\)}$/\3,\1,\2/' | tr '\n' ' ')
		if [ "$got" = "0,7,1 1,7,8 2,7,15 3,7,22 " ]; then
			pass "args_constprop_clone"
		else
			fail "args_constprop_clone" "x,k,return: $got"
		fi
	else
		skip "args_constprop_clone" "this compiler made no .constprop clone"
	fi
else
	skip "args_constprop_clone" "no C compiler"
fi
