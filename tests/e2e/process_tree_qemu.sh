#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Process trees on the qemu backend: every tree of samples/tree, scripts
# (#!/bin/sh, #!/usr/bin/env python3, nested #!), a PATH lookup, a
# pipeline, exec of a 32-bit program, and Ctrl-C / SIGTERM in the middle
# of system().  Each process must show under its real pid with its own
# functions' call counts equal to the plugin's ground truth (--truth),
# and the command's exit status must be kept.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
TREE=$S/tree
if ! command -v qemu-x86_64 >/dev/null; then
	skip "process_tree_qemu" "qemu-x86_64 not installed (apt-get install qemu-user)"
	exit 0
fi
FNS='leaf_fn|worker_fn|parent_fn|before_exec'

# "pid fn count" of the trace's spans of the sample's functions.
trace_counts() {
	"$PTSCOPE" dump --slices "$1" | awk -v fns="^\"($FNS)\"$" '
		/^slice/ { pid = ""; name = ""; addr = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^pid=/) pid = substr($i, 5)
				if ($i ~ /^name=/) name = substr($i, 6)
				if ($i ~ /^args=\{address=/) addr = substr($i, 15)
			}
			if (name ~ fns) { n[pid " " name]++; a[name] = addr } }
		END { for (k in n) print k, n[k]; for (f in a) print "addr", f, a[f] }' | sort
}

# "pid fn count" from the truth: calls to the functions' addresses, by
# thread (the samples' processes are single-threaded: tid = pid).
truth_counts() {
	local tr=$1 addrs=$2
	awk -v addrs="$addrs" '
		BEGIN { n = split(addrs, v, " "); for (i = 1; i + 1 <= n; i += 2) fn[v[i + 1]] = v[i] }
		/^#/ { next }
		$2 == "call" && ($4 in fn) { c[$1 " \"" fn[$4] "\""]++ }
		END { for (k in c) print k, c[k] }' "$tr" | sort
}

# run NAME WANT_STATUS WANT ARGS...: WANT is "fn:count:count..." per
# process, e.g. worker_fn:3:3 parent_fn:1 (counts sorted).
check() {
	local name=$1 want_st=$2 want=$3
	shift 3
	local out=$T/$name
	"$PTSCOPE" run -q --truth "$out.truth" -o "$out.fxt" -- "$@" >"$out.out" 2>"$out.err"
	local st=$?
	if [ "$st" != "$want_st" ]; then
		fail "tree_$name" "exit status $st, want $want_st: $(tail -n1 "$out.err")"
		return
	fi
	trace_counts "$out.fxt" >"$out.tc"
	local addrs
	addrs=$(awk '$1 == "addr" { gsub(/"/, "", $2); printf "%s %s ", $2, $3 }' "$out.tc")
	grep -v '^addr' "$out.tc" >"$out.trace"
	truth_counts "$out.truth" "$addrs" >"$out.truthc"
	# Every pid in the trace is a real process of the run (a process
	# line), and the counts per process equal the truth's.
	local got
	got=$(for fn in ${want//:*/}; do :; done
		for w in $want; do
			f=${w%%:*}
			awk -v f="\"$f\"" '$2 == f { print $3 }' "$out.trace" | sort -n | tr '\n' ':' | sed "s/^/$f:/; s/:$//"
			echo
		done | tr '\n' ' ' | sed 's/ $//')
	local procs
	procs=$("$PTSCOPE" dump "$out.fxt" | grep -c '^process pid=')
	if ! diff -q "$out.trace" "$out.truthc" >/dev/null; then
		fail "tree_$name" "trace and truth differ: $(diff "$out.trace" "$out.truthc" | head -n4 | tr '\n' ' ')"
	elif [ "$got" != "$want" ]; then
		fail "tree_$name" "counts $got, want $want"
	else
		pass "tree_$name ($procs processes: $got)"
	fi
}

check leaf 0 "leaf_fn:3" "$TREE" leaf 3
check fork 0 "worker_fn:3:3:3 parent_fn:1" "$TREE" fork 3
check vfork 0 "leaf_fn:2" "$TREE" vfork
check exec 0 "leaf_fn:4 before_exec:1" "$TREE" exec 4
check spawn 0 "leaf_fn:2" "$TREE" spawn 2
check system 0 "leaf_fn:2" "$TREE" system 2
check grandchild 0 "leaf_fn:3" "$TREE" grandchild 3
check status 7 "" "$TREE" status 7

# The process tree of a fork: three distinct children of the parent.
n=$("$PTSCOPE" dump "$T/fork.fxt" | grep -c '^parent pid=')
[ "$n" = 3 ] && pass "tree_fork_parents" || fail "tree_fork_parents" "$n parent records, want 3"

# Scripts, as the kernel runs them, and a PATH lookup.
printf '#!/bin/sh\n"%s" leaf 2\n' "$TREE" >"$T/a.sh"
printf '#!%s\n' "$T/a.sh" >"$T/nested.sh"
mkdir -p "$T/bin" && cp "$TREE" "$T/bin/mytree"
chmod +x "$T/a.sh" "$T/nested.sh"
check script_sh 0 "leaf_fn:2" "$T/a.sh"
check script_nested 0 "leaf_fn:2" "$T/nested.sh"
check path_lookup 0 "leaf_fn:2" env PATH="$T/bin:/usr/bin:/bin" mytree leaf 2
check pipeline 0 "leaf_fn:1:2" sh -c "'$TREE' leaf 1 | '$TREE' leaf 2"
if [ -x /usr/bin/python3 ]; then
	printf '#!/usr/bin/env python3\nimport subprocess\nsubprocess.run(["%s", "leaf", "3"], check=True)\n' "$TREE" >"$T/b.py"
	chmod +x "$T/b.py"
	check script_python 0 "leaf_fn:3" "$T/b.py"
else
	skip "tree_script_python" "no /usr/bin/python3"
fi

# A script's process is named after the script; the exec mark names the
# program.
if "$PTSCOPE" dump "$T/script_sh.fxt" | grep -q '^process pid=[0-9]* "a.sh"' &&
	"$PTSCOPE" dump "$T/script_sh.fxt" | grep -q 'name="exec" cat="ptscope".*samples/tree'; then
	pass "tree_script_names"
else
	fail "tree_script_names" "$("$PTSCOPE" dump "$T/script_sh.fxt" | grep -E '^process|name="exec"' | head -n3 | tr '\n' ' ')"
fi

# A 32-bit program runs untraced: one line on stderr, a mark, the rest of
# the tree traced.
i386=/usr/lib32/ld-linux.so.2
if [ -x "$i386" ] && ! "$i386" --version >/dev/null 2>&1; then
	skip "tree_exec_32bit_untraced" "$i386 does not run on this kernel (no IA32 emulation: $("$i386" --version 2>&1 | head -n1 | sed 's/.*: //'))"
elif [ -x "$i386" ]; then
	"$PTSCOPE" run -o "$T/i386.fxt" -- sh -c "'$i386' --version >/dev/null; '$TREE' leaf 1" >/dev/null 2>"$T/i386.err"
	st=$?
	if [ $st = 0 ] && [ "$(grep -c 'qemu-x86_64 cannot trace' "$T/i386.err")" = 1 ] &&
		"$PTSCOPE" dump "$T/i386.fxt" | grep -q 'name="note".*32-bit' &&
		"$PTSCOPE" dump --slices "$T/i386.fxt" | grep -q 'name="leaf_fn"'; then
		pass "tree_exec_32bit_untraced"
	else
		fail "tree_exec_32bit_untraced" "status $st: $(head -n3 "$T/i386.err" | tr '\n' ' ')"
	fi
else
	skip "tree_exec_32bit_untraced" "no 32-bit program ($i386) here"
fi

# Not ELF and no #!: the kernel refuses it; the sentence says so.
printf 'echo plain-ran\n' >"$T/plain.txt" && chmod +x "$T/plain.txt"
if "$PTSCOPE" run -q -o "$T/bad.fxt" -- "$T/plain.txt" >/dev/null 2>"$T/bad.err"; then
	# execvp runs such a file with /bin/sh, and so does ptscope.
	pass "tree_not_elf_runs_with_sh"
else
	fail "tree_not_elf_runs_with_sh" "$(tail -n1 "$T/bad.err")"
fi

# A trigger fires in a grandchild; and in a program a script starts.
for what in "grandchild:$TREE grandchild 2" "script:$T/a.sh"; do
	n=${what%%:*}
	# shellcheck disable=SC2086
	"$PTSCOPE" run -q -t leaf_fn -o "$T/trig_$n.fxt" -- ${what#*:} >/dev/null 2>"$T/trig_$n.err"
	st=$?
	root=$("$PTSCOPE" dump "$T/trig_$n.fxt" | awk -F'"' '/^meta "pid"/ { print $4 }')
	tp=$("$PTSCOPE" dump "$T/trig_$n.fxt" | sed -n 's/^instant.* pid=\([0-9]*\) .*name="trigger".*leaf_fn.*/\1/p' | head -n1)
	if [ $st = 0 ] && [ -n "$tp" ] && [ "$tp" != "$root" ] &&
		"$PTSCOPE" dump "$T/trig_$n.fxt" | grep -q 'snapshot_reason" "trigger'; then
		pass "tree_trigger_in_$n (pid $tp, command $root)"
	else
		fail "tree_trigger_in_$n" "status $st, trigger pid '$tp', command $root: $(tail -n1 "$T/trig_$n.err")"
	fi
done

# A child that dies of a signal: marked on it, a snapshot of the whole
# tree, and the command's own status.
"$PTSCOPE" run -q -o "$T/crash.fxt" -- sh -c "sh -c 'kill -SEGV \$\$'; '$TREE' leaf 1; exit 3" >/dev/null 2>"$T/crash.err"
st=$?
if [ $st = 3 ] && "$PTSCOPE" dump "$T/crash.fxt" | grep -q 'name="SIGSEGV" cat="ptscope"' &&
	"$PTSCOPE" dump "$T/crash.fxt" | grep -q 'snapshot_reason" "signal' &&
	[ "$("$PTSCOPE" dump "$T/crash.fxt" | grep -c '^process pid=')" = 2 ]; then
	pass "tree_crash_in_child"
else
	fail "tree_crash_in_child" "status $st: $(tail -n1 "$T/crash.err")"
fi

# Ctrl-C and SIGTERM in the middle of system(): ptscope writes the trace,
# exits promptly (the command runs on untraced to its end), and nothing is
# left stopped.
for sig in INT TERM; do
	set -m
	"$PTSCOPE" run -q -o "$T/sig$sig.fxt" -- sh -c "'$TREE' system 2; sleep 4; '$TREE' system 1" >/dev/null 2>"$T/sig$sig.err" &
	pid=$!
	set +m
	sleep 1.5
	t0=$(date +%s%N)
	kill -$sig $pid
	for _ in $(seq 1 150); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	t1=$(date +%s%N)
	if kill -0 $pid 2>/dev/null; then
		fail "tree_sig$sig" "ptscope still running 15 s after SIG$sig"
		kill -KILL $pid
		continue
	fi
	wait $pid
	st=$?
	# this run's processes: the job's process group (set -m) is $pid; a
	# stopped copy of the sample from anything else on the machine is not
	# this run's (shown below, in case)
	ps -eo stat=,pgid=,pid=,args= |
		awk -v t="$TREE" '$1 ~ /^[tT]/ && index($0, t)' >"$T/stopped$sig"
	stopped=$(awk -v g="$pid" '$2 == g' "$T/stopped$sig" | wc -l)
	ms=$(((t1 - t0) / 1000000))
	if [ "$stopped" = 0 ] && [ -s "$T/sig$sig.fxt" ] &&
		"$PTSCOPE" dump "$T/sig$sig.fxt" | grep -q 'snapshot_reason" "interrupt'; then
		pass "tree_sig$sig (exit $st after $ms ms)"
	else
		fail "tree_sig$sig" "status $st, $stopped stopped, $(tail -n1 "$T/sig$sig.err"); stopped copies of the sample: $(tr '\n' ';' <"$T/stopped$sig")"
	fi
done
