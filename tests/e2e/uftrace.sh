#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real output of another tracer: small programs that recurse, longjmp,
# throw and run threads are traced by uftrace, `uftrace dump --chrome`
# writes Chrome JSON (pid but no tid, B/E pairs that do not balance after a
# longjmp), and `ptscope convert` must read it as Perfetto's JSON importer
# does: no tid is the main thread (tid = pid) and keeps its name; an E
# closes the topmost open slice of its name; an E that matches nothing is
# dropped; frames a longjmp skipped never end.  Every converted copy
# (.fxt, .pftrace, .json) means the same as the original (dump --slices).
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
if [ ! -x "$P" ]; then
	skip uftrace "no ptscope binary at $P (run make first)"
	exit 0
fi
if ! command -v uftrace >/dev/null; then
	skip uftrace "uftrace is not installed (make deps installs it)"
	exit 0
fi

cat >"$T/prog.c" <<'EOF'
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
static jmp_buf jb;
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
void deep(int n) { if (n == 0) longjmp(jb, 1); deep(n - 1); }
void *worker(void *a) { fib(4); return a; }
int main(void)
{
	pthread_t t;
	if (!setjmp(jb))
		deep(3);
	pthread_create(&t, 0, worker, 0);
	pthread_join(t, 0);
	printf("%d\n", fib(5));
	return 0;
}
EOF
cat >"$T/exc.cc" <<'EOF'
#include <cstdio>
#include <stdexcept>
int thrower(int n) { if (n == 0) throw std::runtime_error("x"); return thrower(n - 1) + 1; }
int catcher(int n) { try { return thrower(n); } catch (const std::exception &) { return -1; } }
int main() { std::printf("%d\n", catcher(3) + catcher(0)); return 0; }
EOF
if ! gcc -pg -O0 -pthread -o "$T/prog" "$T/prog.c" ||
	! g++ -pg -O0 -o "$T/exc" "$T/exc.cc"; then
	fail uftrace_build "cannot compile the traced programs with -pg"
	exit 0
fi
for p in prog exc; do
	if ! (cd "$T" && uftrace record -d "$p.data" "./$p" >/dev/null 2>"$p.err" &&
		uftrace dump -d "$p.data" --chrome >"$p.json" 2>>"$p.err"); then
		skip "uftrace_$p" "uftrace cannot trace here: $(head -c 200 "$T/$p.err")"
		exit 0
	fi
done

"$P" dump --slices "$T/prog.json" >"$T/prog.slices" 2>"$T/err"
pid=$(sed -n 's/.*"ph":"M","pid":\([0-9]*\),"name":"process_name".*/\1/p' "$T/prog.json" | head -1)

# no tid: the main thread, tid = pid, named by uftrace's thread_name record
if grep -q "^thread pid=$pid tid=$pid \"\[$pid\] prog\"$" "$T/prog.slices" &&
	! grep -q ' tid=0 ' "$T/prog.slices" &&
	grep -q "^slice pid=$pid tid=$pid .* name=\"main\"" "$T/prog.slices"; then
	pass uftrace_main_thread_is_tid_eq_pid_and_named
else
	fail uftrace_main_thread_is_tid_eq_pid_and_named "$(head -12 "$T/prog.slices")"
fi

# the worker thread's events carry its tid and land in the process
if grep -q "^slice pid=$pid tid=[0-9]* .*name=\"worker\"" "$T/prog.slices" &&
	! grep -q "^slice pid=$pid tid=$pid .*name=\"worker\"" "$T/prog.slices"; then
	pass uftrace_worker_on_its_own_thread
else
	fail uftrace_worker_on_its_own_thread "$(grep worker "$T/prog.slices")"
fi

# recursion: every fib call is one finished slice, nested by depth
nb=$(grep -c '"ph":"B",.*"name":"fib"' "$T/prog.json")
nf=$(grep -c 'name="fib"' "$T/prog.slices")
nu=$(grep 'name="fib"' "$T/prog.slices" | grep -c 'dur=unfinished')
maxd=$(grep 'name="fib"' "$T/prog.slices" | sed 's/.* depth=\([0-9]*\) .*/\1/' | sort -n | tail -1)
if [ "$nb" -gt 10 ] && [ "$nf" = "$nb" ] && [ "$nu" = 0 ] && [ "$maxd" -ge 4 ]; then
	pass uftrace_recursion_every_call_a_slice
else
	fail uftrace_recursion_every_call_a_slice "B=$nb slices=$nf unfinished=$nu maxdepth=$maxd"
fi

# longjmp: uftrace closes _setjmp a second time (an E that matches no open
# slice: dropped), the deep frames and longjmp never end, main still ends
# by name, and what follows nests under the frames left open.
main_line=$(grep "^slice pid=$pid tid=$pid .*name=\"main\"" "$T/prog.slices")
ndeep=$(grep -c 'name="deep".*' "$T/prog.slices")
ndeep_open=$(grep 'name="deep"' "$T/prog.slices" | grep -c 'dur=unfinished')
lj=$(grep 'name="longjmp"' "$T/prog.slices")
nsetjmp=$(grep -c 'name="_setjmp"' "$T/prog.slices")
pc=$(grep 'name="pthread_create"' "$T/prog.slices")
if [ "$ndeep" = 4 ] && [ "$ndeep_open" = 4 ] &&
	echo "$lj" | grep -q 'depth=5 dur=unfinished' &&
	! echo "$main_line" | grep -q unfinished &&
	[ "$nsetjmp" = 1 ] && echo "$pc" | grep -q 'depth=6 dur=[0-9]'; then
	pass uftrace_longjmp_like_perfetto
else
	fail uftrace_longjmp_like_perfetto "deep=$ndeep open=$ndeep_open longjmp=[$lj] main=[$main_line] setjmp=$nsetjmp pthread_create=[$pc]"
fi

# exceptions: uftrace balances the unwound frames itself; all end
"$P" dump --slices "$T/exc.json" >"$T/exc.slices" 2>>"$T/err"
nt=$(grep -c 'name="thrower"' "$T/exc.slices")
if [ "$nt" = 5 ] && ! grep -q unfinished "$T/exc.slices" &&
	grep -q 'depth=5 dur=[0-9]* name="thrower"' "$T/exc.slices"; then
	pass uftrace_exceptions_all_slices_end
else
	fail uftrace_exceptions_all_slices_end "$(grep -E 'thrower|catcher' "$T/exc.slices")"
fi

# every format means the same as the JSON itself, "main" included: it ends
# while the frames the longjmp skipped stay open above it, which Perfetto
# protobuf can say only because its end events carry the slice's name
for p in prog exc; do
	for ext in fxt pftrace json; do
		if "$P" convert -q "$T/$p.json" -o "$T/$p.$ext" &&
			"$P" dump --slices "$T/$p.$ext" >"$T/$p.$ext.slices" &&
			cmp -s "$T/$p.slices" "$T/$p.$ext.slices"; then
			pass "uftrace_${p}_to_$ext"
		else
			fail "uftrace_${p}_to_$ext" "$(diff "$T/$p.slices" "$T/$p.$ext.slices" | head -5)"
		fi
	done
done
