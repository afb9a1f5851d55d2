#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The qemu backend as a user meets it: backend choice and its notices, a
# relative command path, a real program (python3) with a trigger on one of
# its functions, exec (followed), Ctrl-C and
# --duration on a long run, a missing plugin, and the trace's metadata.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
if ! command -v qemu-x86_64 >/dev/null; then
	skip "qemu_backend" "qemu-x86_64 not installed (apt-get install qemu-user)"
	exit 0
fi
cd "$PTSCOPE_TOP"

# auto takes qemu for run when it is installed, and says so once.
"$PTSCOPE" run -o "$T/auto.fxt" -- "$S/recursion" >/dev/null 2>"$T/auto.err"
if grep -q "backend: qemu" "$T/auto.err" &&
	"$PTSCOPE" dump "$T/auto.fxt" | grep -q 'meta "backend" "qemu (QEMU [0-9]'; then
	pass "qemu_auto_and_metadata"
else
	fail "qemu_auto_and_metadata" "$(head -n2 "$T/auto.err")"
fi

# Without qemu-x86_64 in PATH, auto falls back to step with the hint.
PATH=/nonexistent "$PTSCOPE" run -o "$T/noq.fxt" -- "$S/recursion" >/dev/null 2>"$T/noq.err"
if grep -q "install qemu-user" "$T/noq.err" && [ -s "$T/noq.fxt" ]; then
	pass "qemu_missing_falls_back_to_step"
else
	fail "qemu_missing_falls_back_to_step" "$(head -n2 "$T/noq.err")"
fi

# A command given by a relative path.
rel=$(realpath --relative-to="$PWD" "$S/demo")
if "$PTSCOPE" run -b qemu -q -t . -o "$T/rel.fxt" -- "$rel" 200 >/dev/null 2>"$T/rel.err" &&
	"$PTSCOPE" dump "$T/rel.fxt" | grep -q 'name="trigger"'; then
	pass "qemu_relative_path"
else
	fail "qemu_relative_path" "$(tail -n1 "$T/rel.err")"
fi

# A real program: python3 runs a script; trigger on a CPython API function
# called by the script (exported in python3's dynamic symbol table).
py=$(command -v python3.11 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -n "$py" ] && [ "$(file -bL "$py" | cut -c1-3)" = ELF ]; then
	if "$PTSCOPE" run -b qemu -t PyList_Append -o "$T/py.fxt" -- "$py" -c 'l = []
for i in range(3): l.append(i)
print(sum(l))' >"$T/py.out" 2>"$T/py.err"; then
		n=$("$PTSCOPE" dump --slices "$T/py.fxt" | grep -c '^slice')
		if grep -q '^3$' "$T/py.out" && [ "$n" -gt 1000 ] &&
			"$PTSCOPE" dump "$T/py.fxt" | grep -q 'name="trigger".*PyList_Append'; then
			pass "qemu_python3_trigger ($n spans)"
		else
			fail "qemu_python3_trigger" "$n spans; output $(cat "$T/py.out")"
		fi
	else
		fail "qemu_python3_trigger" "$(tail -n1 "$T/py.err")"
	fi
else
	skip "qemu_python3_trigger" "no python3 ELF binary here"
fi

# NAME@MODULE in a library the program dlopens later (python's _sqlite3
# extension loads libsqlite3): the trigger waits for the mapping.
if [ -n "$py" ] && "$py" -c 'import sqlite3' 2>/dev/null; then
	if "$PTSCOPE" run -b qemu -t 'sqlite3_open_v2@libsqlite3.so.0' -o "$T/sq.fxt" -- "$py" -c 'import sqlite3
print(sqlite3.connect(":memory:").execute("select 40+2").fetchone()[0])' >"$T/sq.out" 2>"$T/sq.err" &&
		grep -q '^42$' "$T/sq.out" &&
		"$PTSCOPE" dump "$T/sq.fxt" | grep -q 'name="trigger".*sqlite3_open_v2' &&
		! grep -q 'not an ELF' "$T/sq.err"; then
		pass "qemu_dlopen_trigger"
	else
		fail "qemu_dlopen_trigger" "$(tail -n2 "$T/sq.err")"
	fi
else
	skip "qemu_dlopen_trigger" "python3 has no sqlite3 module here"
fi

# exec: the new program runs again under QEMU, traced, after an exec mark
# naming it (process trees: tests/e2e/process_tree_qemu.sh).
if "$PTSCOPE" run -b qemu -o "$T/exec.fxt" -- /bin/sh -c 'exec /bin/echo replaced' >"$T/exec.out" 2>"$T/exec.err" &&
	grep -q replaced "$T/exec.out" &&
	"$PTSCOPE" dump "$T/exec.fxt" | grep -q 'name="exec" cat="ptscope".*echo'; then
	pass "qemu_exec_noted"
else
	fail "qemu_exec_noted" "$(tail -n1 "$T/exec.err")"
fi

# fork: the parent is traced, the child runs on (its output is there).
if "$PTSCOPE" run -b qemu -o "$T/fork.fxt" -- /bin/sh -c '/bin/echo child; echo parent' >"$T/fork.out" 2>"$T/fork.err" &&
	grep -q child "$T/fork.out" && grep -q parent "$T/fork.out" && [ -s "$T/fork.fxt" ]; then
	pass "qemu_fork_child_runs"
else
	fail "qemu_fork_child_runs" "$(tail -n1 "$T/fork.err")"
fi

# --duration on a long computation: snapshot then, program completes.
cat >"$T/spin.c" <<'C'
#include <stdio.h>
int main(void) { volatile unsigned long h = 1; for (unsigned long i = 0; i < 400000000UL; i++) h = h * 31 + i; printf("done\n"); return 0; }
C
cc -O1 -o "$T/spin" "$T/spin.c"
if "$PTSCOPE" run -b qemu --duration 0.3 -o "$T/dur.fxt" -- "$T/spin" >"$T/dur.out" 2>"$T/dur.err" &&
	grep -q done "$T/dur.out" && grep -q "(duration)" "$T/dur.err"; then
	pass "qemu_duration"
else
	fail "qemu_duration" "$(tail -n2 "$T/dur.err")"
fi

# Ctrl-C (SIGINT to ptscope): snapshot, the program finishes untraced.
"$PTSCOPE" run -b qemu -o "$T/int.fxt" -- "$T/spin" >"$T/int.out" 2>"$T/int.err" &
p=$!
sleep 0.5
kill -INT $p
wait $p
rc=$?
if [ $rc -eq 0 ] && grep -q done "$T/int.out" && grep -q "(interrupt)" "$T/int.err" && [ -s "$T/int.fxt" ]; then
	pass "qemu_ctrl_c"
else
	fail "qemu_ctrl_c" "exit $rc: $(tail -n2 "$T/int.err")"
fi

# A crash on one thread while another computes: the snapshot holds every
# thread, the signal is marked on the faulting one, the exit status is
# the native one.
cat >"$T/tcrash.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static volatile int *p;
__attribute__((noinline)) static int poke(int x) { return *p + x; }
static void *worker(void *a) { (void)a; usleep(20000); return (void *)(long)poke(1); }
static void *spinner(void *a) { volatile long s = 0; (void)a; for (;;) s++; return 0; }
int main(void) { pthread_t t, u; pthread_create(&u, 0, spinner, 0); pthread_create(&t, 0, worker, 0); pthread_join(t, 0); puts("not reached"); return 0; }
C
cc -g -O1 -pthread -o "$T/tcrash" "$T/tcrash.c"
(ulimit -c 0; exec "$PTSCOPE" run -b qemu --no-events -o "$T/tc.fxt" -- "$T/tcrash") >/dev/null 2>"$T/tc.err"
rc=$?
"$PTSCOPE" dump "$T/tc.fxt" >"$T/tc.dump" 2>&1
sig_tid=$(sed -n 's/^instant .* tid=\([0-9]*\) .*name="SIGSEGV".*/\1/p' "$T/tc.dump")
nthr=$(grep -c '^thread ' "$T/tc.dump")
pid=$(sed -n 's/^process pid=\([0-9]*\).*/\1/p' "$T/tc.dump")
if [ $rc -eq 139 ] && [ -n "$sig_tid" ] && [ "$sig_tid" != "$pid" ] && [ "$nthr" -eq 3 ]; then
	pass "qemu_thread_crash"
else
	fail "qemu_thread_crash" "exit $rc, SIGSEGV on tid '${sig_tid}' (pid $pid), $nthr threads: $(tail -n1 "$T/tc.err")"
fi

# A missing plugin: one sentence, no output file.
if PTSCOPE_QEMU_PLUGIN=/nonexistent.so "$PTSCOPE" run -b qemu -o "$T/np.fxt" -- "$S/recursion" >/dev/null 2>"$T/np.err"; then
	fail "qemu_missing_plugin" "succeeded"
elif [ "$(wc -l <"$T/np.err")" -le 2 ] && [ ! -e "$T/np.fxt" ]; then
	pass "qemu_missing_plugin"
else
	fail "qemu_missing_plugin" "$(cat "$T/np.err")"
fi

# attach is refused by name, with what to use instead.
if "$PTSCOPE" attach -b qemu -p $$ -o "$T/att.fxt" 2>"$T/att.err"; then
	fail "qemu_attach_refused" "succeeded"
elif grep -q "backend=step" "$T/att.err"; then
	pass "qemu_attach_refused"
else
	fail "qemu_attach_refused" "$(cat "$T/att.err")"
fi
