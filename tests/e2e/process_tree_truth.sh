#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptscope run follows the whole process tree (docs/process-trees.md),
# checked against the emulator's ground truth (process_tree.sh checks
# the pids the program reports itself):
# every process of build/samples/tree's trees appears under its real pid
# with its own functions' exact call counts (the same in the trace, in the
# emulator's ground truth (--truth) and as the sample's source says), its
# parent, exec marks; a child's crash is marked, a trigger in a grandchild
# fires, the command's exit status is kept; scripts, a pipeline,
# --no-follow, Ctrl-C, SIGTERM and SIGHUP in the middle.  BACKEND=qemu runs it on
# the qemu backend (default: step).
. "$(dirname "$0")/lib.sh"
BK=${BACKEND:-step}
S=$PTSCOPE_BUILD/samples
TREE=$S/tree
if [ ! -x "$TREE" ]; then
	skip "tree_$BK" "no $TREE (run make first)"
	exit 0
fi
if [ "$BK" = qemu ] && ! command -v qemu-x86_64 >/dev/null; then
	skip "tree_$BK" "qemu-x86_64 not installed"
	exit 0
fi

# run NAME ARGS...: ptscope run with a truth file; status in $T/NAME.rc
run() {
	local name=$1
	shift
	(ulimit -c 0; exec "$PTSCOPE" run -q -b "$BK" --truth "$T/$name.truth" \
		-o "$T/$name.fxt" "$@") >"$T/$name.out" 2>"$T/$name.err" </dev/null
	echo $? >"$T/$name.rc"
	"$PTSCOPE" dump --slices "$T/$name.fxt" >"$T/$name.slices" 2>&1
}

# counts NAME: "pid function trace truth" per process and sample function.
# The truth counts the calls to the addresses the trace names the function
# at in that process (so a missing process or a misnamed address shows).
counts() {
	awk '
	FNR == 1 { file++ }
	file == 1 && $1 == "slice" && /cat="function"/ &&
	    / name="(leaf_fn|worker_fn|parent_fn|before_exec|crash_in_child)"/ {
		nm = $0; sub(/.* name="/, "", nm); sub(/".*/, "", nm)
		pid = $2; sub(/pid=/, "", pid)
		a = $0; sub(/.*address=/, "", a); sub(/[ }].*/, "", a)
		if ($0 !~ /inferred=true/) n[pid " " nm]++
		addr[pid " " tolower(a)] = nm
		next
	}
	file == 2 && $2 == "call" {
		k = $1 " " tolower($4)
		if (k in addr) t[$1 " " addr[k]]++
	}
	END {
		for (k in n) print k, n[k], t[k] + 0
		for (k in t) if (!(k in n)) print k, 0, t[k]
	}' "$T/$1.slices" "$T/$1.truth" | sort
}

# expect_counts NAME "FUNC COUNT" ...: one process each, in pid order;
# every process with sample calls must be listed, with exact counts.
expect_counts() {
	local name=$1 got want msg
	shift
	got=$(counts "$name" | awk '{ print $2, $3, $4 }' | tr '\n' ';')
	want=$(for w in "$@"; do set -- $w; echo "$1 $2 $2"; done | tr '\n' ';')
	# order the processes by pid: counts sorts by pid as text; pids of
	# one run have as many digits, so the order is the creation order.
	if [ "$got" = "$want" ]; then
		pass "tree_${BK}_${name}_counts ($(counts "$name" | wc -l) process functions)"
	else
		msg="want (func trace truth) '$want', got '$got'"
		fail "tree_${BK}_${name}_counts" "$msg"
	fi
}

has() { grep -qE "$2" "$T/$1.slices"; }
nproc_of() { grep -c '^process ' "$T/$1.slices"; }

check_rc() { # name want
	local rc
	rc=$(cat "$T/$1.rc")
	if [ "$rc" = "$2" ]; then pass "tree_${BK}_$1_status_$2"; else fail "tree_${BK}_$1_status_$2" "status $rc: $(tail -n1 "$T/$1.err")"; fi
}

# Each process under its real pid: the pids the trace shows as processes
# with sample code are distinct, and each child has a parent line.
check_parents() { # name nchildren
	local n
	n=$(grep -c '^parent ' "$T/$1.slices")
	if [ "$n" -ge "$2" ]; then pass "tree_${BK}_$1_parents ($n)"; else fail "tree_${BK}_$1_parents" "$n parent lines, want >= $2"; fi
}

# fork: two workers, worker_fn 3 times each; the parent calls parent_fn.
run fork "--" "$TREE" fork 2
check_rc fork 0
expect_counts fork "parent_fn 1" "worker_fn 3" "worker_fn 3"
check_parents fork 2

# exec: before_exec in the old image, leaf_fn in the new one, same pid,
# with an exec mark naming the program.
run exec -- "$TREE" exec 2
check_rc exec 0
expect_counts exec "before_exec 1" "leaf_fn 2"
if has exec 'instant .*name="exec" cat="ptscope".*program=".*tree"' && [ "$(nproc_of exec)" -eq 1 ]; then
	pass "tree_${BK}_exec_mark"
else
	fail "tree_${BK}_exec_mark" "no exec mark or not one process"
fi

# vfork + exec, posix_spawn, system(): the child runs leaf_fn 2 times.
for m in vfork spawn system; do
	run $m -- "$TREE" $m 2
	check_rc $m 0
	expect_counts $m "leaf_fn 2"
	check_parents $m 1
done
# system(): the shell child shows under its new name.
if grep -qE '^process pid=[0-9]+ "(sh|dash)"' "$T/system.slices"; then
	pass "tree_${BK}_system_shell_named"
else
	fail "tree_${BK}_system_shell_named" "$(grep '^process ' "$T/system.slices" | tr '\n' '|')"
fi

# grandchild: leaf_fn in the grandchild; a trigger on it fires there.
run grandchild -- "$TREE" grandchild 2
check_rc grandchild 0
expect_counts grandchild "leaf_fn 2"
check_parents grandchild 2
run trig -t leaf_fn -- "$TREE" grandchild 2
gc=$(awk '$1 == "parent" { p[$2] = $3 } END { for (c in p) { x = p[c]; sub(/ppid=/, "pid=", x); if (x in p) { sub(/pid=/, "", c); print c } } }' "$T/trig.slices")
if [ -n "$gc" ] && grep -qE "^instant pid=$gc .*name=\"trigger\".*symbol=\"leaf_fn\"" "$T/trig.slices" &&
	grep -q '"snapshot_reason" "trigger"' "$T/trig.slices"; then
	pass "tree_${BK}_trigger_in_grandchild"
else
	fail "tree_${BK}_trigger_in_grandchild" "grandchild '$gc': $(grep -E 'trigger' "$T/trig.slices" | head -n2 | tr '\n' '|')"
fi
check_rc trig 0

# crashchild: the child's SIGSEGV is marked on it with the address; the
# command's own status (3) is kept; a snapshot is written.
run crashchild -- "$TREE" crashchild
check_rc crashchild 3
if grep -qE '^instant pid=[0-9]+ .*name="SIGSEGV" cat="ptscope".*fault address 0x0' "$T/crashchild.slices" &&
	! grep -qE "^instant pid=$(grep -m1 '^meta "pid"' "$T/crashchild.slices" | tr -dc 0-9) .*name=\"SIGSEGV\" cat=\"ptscope\"" "$T/crashchild.slices"; then
	pass "tree_${BK}_child_crash_marked"
else
	fail "tree_${BK}_child_crash_marked" "$(grep SIGSEGV "$T/crashchild.slices" | head -n2 | tr '\n' '|')"
fi
if grep -qE '^slice pid=[0-9]+ .*name="crash_in_child"' "$T/crashchild.slices"; then pass "tree_${BK}_child_crash_spans"; else fail "tree_${BK}_child_crash_spans" "no crash_in_child span"; fi

# --multi-snapshot: the child's crash is one numbered snapshot, recording
# goes on, the command's status is kept.
rm -f "$T"/multi*.fxt
(ulimit -c 0; exec "$PTSCOPE" run -q -b "$BK" -m -o "$T/multi.fxt" -- "$TREE" crashchild) >"$T/multi.out" 2>"$T/multi.err" </dev/null
rc=$?
if [ $rc -eq 3 ] && [ -s "$T/multi.1.fxt" ] && [ ! -e "$T/multi.fxt" ] &&
	"$PTSCOPE" dump --slices "$T/multi.1.fxt" | grep -q 'name="SIGSEGV" cat="ptscope"'; then
	pass "tree_${BK}_child_crash_multi_snapshot"
else
	fail "tree_${BK}_child_crash_multi_snapshot" "status $rc, files: $(cd "$T" && ls multi*)"
fi

# exit status of the command
run status -- "$TREE" status 5
check_rc status 5

# A background child still running when the command ends is let go: not
# stopped, not killed; the command's status is kept.
rm -f "$T/bg.done"
"$PTSCOPE" run -q -b "$BK" -o "$T/bg.fxt" -- sh -c "(sleep 1; touch '$T/bg.done') & exit 4" >"$T/bg.out" 2>"$T/bg.err" </dev/null
rc=$?
st=$(ps -o stat= -C sleep 2>/dev/null | grep -c '^ *[Tt]')
for _ in $(seq 1 50); do [ -e "$T/bg.done" ] && break; sleep 0.1; done
if [ $rc -eq 4 ] && [ "$st" -eq 0 ] && [ -e "$T/bg.done" ]; then
	pass "tree_${BK}_background_let_go"
else
	fail "tree_${BK}_background_let_go" "status $rc, $st stopped sleep, done: $([ -e "$T/bg.done" ] && echo yes || echo no)"
fi

# attach -p follows the children created while attached (not on qemu:
# it runs commands only).
if [ "$BK" = qemu ]; then
	skip "tree_${BK}_attach_follows" "the qemu backend has no attach"
else
	printf '#!/bin/sh\nsleep 1\n"%s" fork 1\n' "$TREE" >"$T/att.sh"
	chmod +x "$T/att.sh"
	"$T/att.sh" </dev/null >/dev/null 2>&1 &
	ap=$!
	sleep 0.3
	"$PTSCOPE" attach -q -b "$BK" -p $ap -o "$T/att.fxt" >"$T/att.out" 2>"$T/att.err" </dev/null
	rc=$?
	wait $ap
	"$PTSCOPE" dump --slices "$T/att.fxt" >"$T/att.slices" 2>&1
	n=$(grep -c '^slice .*name="worker_fn"' "$T/att.slices")
	if [ $rc -eq 0 ] && [ "$n" -eq 3 ] && [ "$(nproc_of att)" -ge 3 ]; then
		pass "tree_${BK}_attach_follows"
	else
		fail "tree_${BK}_attach_follows" "status $rc, $n worker_fn spans (want 3), $(nproc_of att) processes"
	fi
fi

# A #!/bin/sh script that starts tree and then execs it.
printf '#!/bin/sh\n"%s" leaf 1\nexec "%s" leaf 2\n' "$TREE" "$TREE" >"$T/script.sh"
chmod +x "$T/script.sh"
run script -- "$T/script.sh"
check_rc script 0
expect_counts script "leaf_fn 2" "leaf_fn 1"
if has script 'name="exec" cat="ptscope".*program=".*tree"'; then pass "tree_${BK}_script_exec_mark"; else fail "tree_${BK}_script_exec_mark" "no exec mark"; fi

# A pipeline sh -c 'a | b'.
run pipe -- sh -c "'$TREE' leaf 1 | '$TREE' leaf 2"
check_rc pipe 0
c=$(counts pipe | awk '{ print $3 }' | sort | tr '\n' ' ')
if [ "$c" = "1 2 " ] && [ "$(counts pipe | awk '$3 != $4' | wc -l)" -eq 0 ]; then
	pass "tree_${BK}_pipeline_counts"
else
	fail "tree_${BK}_pipeline_counts" "$(counts pipe | tr '\n' ';')"
fi

# #!/usr/bin/env python3 script that starts tree: python's start-up is
# some 20 million instructions, minutes under single-step.
if [ "$BK" = step ] && [ -z "${PTSCOPE_SLOW_TESTS:-}" ]; then
	skip "tree_${BK}_python_script" "python3 start-up under single-step takes minutes (PTSCOPE_SLOW_TESTS=1 runs it)"
elif ! command -v python3 >/dev/null; then
	skip "tree_${BK}_python_script" "no python3"
else
	printf '#!/usr/bin/env python3\nimport subprocess, sys\nsys.exit(subprocess.call(["%s", "leaf", "2"]))\n' "$TREE" >"$T/script.py"
	chmod +x "$T/script.py"
	run python -- "$T/script.py"
	check_rc python 0
	if counts python | grep -qE ' leaf_fn 2 2$'; then pass "tree_${BK}_python_script"; else fail "tree_${BK}_python_script" "$(counts python | tr '\n' ';')"; fi
fi

# --no-follow: one process in the trace, the children still ran.
(exec "$PTSCOPE" run -q -b "$BK" --no-follow -o "$T/nf.fxt" -- "$TREE" spawn 2) >"$T/nf.out" 2>"$T/nf.err" </dev/null
rc=$?
"$PTSCOPE" dump --slices "$T/nf.fxt" >"$T/nf.slices" 2>&1
if [ $rc -eq 0 ] && [ "$(nproc_of nf)" -eq 1 ] && ! has nf 'name="leaf_fn"'; then
	pass "tree_${BK}_no_follow"
else
	fail "tree_${BK}_no_follow" "status $rc, $(nproc_of nf) processes"
fi

# Ctrl-C, SIGTERM and SIGHUP in the middle of a tree: the trace is written, every
# process is let go (none left stopped), the tree finishes by itself.
for sig in INT TERM HUP; do
	o=$T/sig$sig
	printf '#!/bin/sh\n"%s" fork 2\nsleep 2\n"%s" leaf 2\ntouch "%s.done"\n' "$TREE" "$TREE" "$o" >"$o.sh"
	chmod +x "$o.sh"
	rm -f "$o.done" "$o.fxt"
	"$PTSCOPE" run -q -b "$BK" -o "$o.fxt" -- "$o.sh" >"$o.out" 2>"$o.err" </dev/null &
	pp=$!
	# wait for the sleep: the tree is in the middle
	for _ in $(seq 1 600); do
		pgrep -P "$(pgrep -P $pp | head -n1)" -x sleep >/dev/null 2>&1 && break
		sleep 0.1
	done
	kids=$(pgrep -P $pp | tr '\n' ' ')
	kill -$sig $pp
	for _ in $(seq 1 300); do kill -0 $pp 2>/dev/null || break; sleep 0.1; done
	stopped=""
	for k in $kids $(for k in $kids; do pgrep -P "$k"; done); do
		st=$(ps -o stat= -p "$k" 2>/dev/null)
		case $st in T* | t*) stopped="$stopped $k($st)" ;; esac
	done
	if kill -0 $pp 2>/dev/null; then
		kill -KILL $pp
		fail "tree_${BK}_sig$sig" "ptscope did not end"
	elif [ -n "$stopped" ]; then
		fail "tree_${BK}_sig$sig" "left stopped:$stopped"
	elif [ ! -s "$o.fxt" ]; then
		fail "tree_${BK}_sig$sig" "no trace: $(tail -n1 "$o.err")"
	else
		for _ in $(seq 1 300); do [ -e "$o.done" ] && break; sleep 0.1; done
		if [ -e "$o.done" ]; then pass "tree_${BK}_sig${sig}_tree_finishes"; else fail "tree_${BK}_sig$sig" "the script did not finish after ptscope let go"; fi
	fi
done
