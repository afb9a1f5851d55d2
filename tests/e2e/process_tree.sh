#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Process trees (docs/process-trees.md): every process the command starts —
# fork, vfork, posix_spawn, system(), a grandchild, an exec, a #! script, a
# pipeline — appears under its real pid (samples/tree writes them to
# $TREE_PIDS) with its own functions' exact call counts; a child's crash is
# marked on it and ptscope keeps the command's exit status; a trigger fires
# in a grandchild; --no-follow traces the command alone; Ctrl-C and SIGTERM
# end a tree run with the trace written and nothing left stopped.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
B=${BACKEND:-step}
tree=$S/tree

# run NAME [ptscope options] -- command...: the trace in $T/NAME.fxt, the
# real pids in $T/NAME.pids, ptscope's status in $rc.
run() {
	local name=$1
	shift
	rm -f "$T/$name.fxt" "$T/$name.pids"
	TREE_PIDS=$T/$name.pids timeout -s KILL 120 "$PTSCOPE" run -b "$B" \
		-o "$T/$name.fxt" "$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	"$PTSCOPE" dump --slices "$T/$name.fxt" >"$T/$name.slices" 2>&1
}

# calls NAME PID FUNC: how many calls of FUNC the trace shows in process PID.
calls() {
	grep -c "^slice pid=$2 .* name=\"$3\" cat=\"function\"" "$T/$1.slices"
}

# pids_traced NAME: every pid in NAME.pids has a process in the trace.
pids_traced() {
	local pid missing=""
	for pid in $(awk '{ print $1 }' "$T/$1.pids"); do
		grep -q "^process pid=$pid " "$T/$1.slices" || missing="$missing $pid"
	done
	[ -z "$missing" ] || echo "not in the trace:$missing"
}

# check NAME WHAT EXPECTED GOT
check() {
	if [ "$3" = "$4" ]; then pass "$1"; else fail "$1" "$2: expected $3, got $4"; fi
}

# fork: three workers, each worker_fn 3 times; the parent parent_fn once.
run fork -- "$tree" fork 3
root=$(head -1 "$T/fork.pids" | cut -d' ' -f1)
kids=$(awk 'NR > 1 { print $1 }' "$T/fork.pids")
got="$(calls fork "$root" parent_fn)"
for k in $kids; do got="$got $(calls fork "$k" worker_fn)"; done
check tree_fork_each_worker_its_own_process "parent_fn, worker_fn per child, status" \
	"1 3 3 3 0" "$got $rc$(pids_traced fork)"

# vfork + exec, posix_spawn, system() (sh -c, then the program)
for mode in vfork spawn system; do
	run "$mode" -- "$tree" "$mode" 2
	leaf=$(tail -1 "$T/$mode.pids" | cut -d' ' -f1)
	check "tree_${mode}_child_traced" "leaf_fn calls in $leaf, status" \
		"2 0" "$(calls "$mode" "$leaf" leaf_fn) $rc$(pids_traced "$mode")"
done
if grep -q '^process pid=[0-9]* "sh"' "$T/system.slices"; then
	pass tree_system_shell_is_a_process
else
	fail tree_system_shell_is_a_process "$(grep ^process "$T/system.slices" | tr '\n' '|')"
fi

# exec: the same process goes on in the new program, with an exec mark
run exec -- "$tree" exec 3
root=$(head -1 "$T/exec.pids" | cut -d' ' -f1)
check tree_exec_continues_in_the_new_image "before_exec, leaf_fn in $root" \
	"1 3" "$(calls exec "$root" before_exec) $(calls exec "$root" leaf_fn)"
if grep -q "^instant pid=$root .*name=\"exec\" cat=\"ptscope\".*program=\"$tree\"" "$T/exec.slices"; then
	pass tree_exec_marked_with_the_program
else
	fail tree_exec_marked_with_the_program "$(grep 'name="exec"' "$T/exec.slices" | head -2 | tr '\n' '|')"
fi

# a trigger in a grandchild fires there
run grandchild -t leaf_fn -- "$tree" grandchild 2
g=$(tail -1 "$T/grandchild.pids" | cut -d' ' -f1)
if grep -q "^instant pid=$g .*name=\"trigger\".*symbol=\"leaf_fn\"" "$T/grandchild.slices" &&
	grep -q 'snapshot 1 (trigger)' "$T/grandchild.err" && [ $rc -eq 0 ]; then
	pass tree_trigger_fires_in_a_grandchild
else
	fail tree_trigger_fires_in_a_grandchild "status $rc, grandchild $g: $(grep -E 'trigger|snapshot' "$T/grandchild.err" "$T/grandchild.slices" | head -3 | tr '\n' '|')"
fi

# a child's crash: marked on the child, the command's own status (3) kept
run crashchild -- "$tree" crashchild
c=$(tail -1 "$T/crashchild.pids" | cut -d' ' -f1)
if [ $rc -eq 3 ] &&
	grep -q "^instant pid=$c tid=$c .*name=\"SIGSEGV\" cat=\"ptscope\".*fault address 0x0" "$T/crashchild.slices" &&
	[ "$(calls crashchild "$c" crash_in_child)" = 1 ]; then
	pass tree_child_crash_marked_status_kept
else
	fail tree_child_crash_marked_status_kept "status $rc, child $c: $(grep SIGSEGV "$T/crashchild.slices" | head -2 | tr '\n' '|')"
fi

# the command's exit status is ptscope's
run status -- "$tree" status 5
check tree_exit_status_kept "ptscope's status" 5 "$rc"

# --no-follow: the command alone
run nofollow --no-follow -- "$tree" fork 2
check tree_no_follow_traces_the_command_alone "processes in the trace" \
	1 "$(grep -c '^process ' "$T/nofollow.slices")"

# a #!/bin/sh script that runs the program, and a pipeline
printf '#!/bin/sh\n"%s" leaf 2\nexit 4\n' "$tree" >"$T/script.sh"
chmod +x "$T/script.sh"
run script -- "$T/script.sh"
leaf=$(tail -1 "$T/script.pids" | cut -d' ' -f1)
check tree_shebang_script_followed "leaf_fn calls, status" \
	"2 4" "$(calls script "$leaf" leaf_fn) $rc"
run pipe -- sh -c "'$tree' leaf 2 | '$tree' leaf 3"
got=$(for p in $(awk '{ print $1 }' "$T/pipe.pids"); do calls pipe "$p" leaf_fn; done | sort | tr '\n' ' ')
check tree_pipeline_both_sides "leaf_fn calls per process" "2 3 " "$got"

# Ctrl-C and SIGTERM in the middle: the trace is written, ptscope ends
# with the command, nothing is left stopped.
for sig in INT TERM; do
	rm -f "$T/sig.fxt"
	"$PTSCOPE" run -b "$B" -o "$T/sig.fxt" -- "$S/children" 4 >"$T/sig.out" 2>&1 &
	p=$!
	sleep 1.5
	kill -"$sig" $p
	for _ in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
	if kill -0 $p 2>/dev/null; then
		fail "tree_sig${sig}_ends_the_run" "ptscope still runs 10 s after SIG$sig"
		kill -9 $p
		continue
	fi
	wait $p
	stopped=$(ps -eo stat,args | awk -v c="$S/children" '$1 ~ /^[tT]/ && index($0, c)' | wc -l)
	if [ -s "$T/sig.fxt" ] && grep -q 'snapshot 1 (interrupt)' "$T/sig.out" && [ "$stopped" = 0 ]; then
		pass "tree_sig${sig}_ends_the_run"
	else
		fail "tree_sig${sig}_ends_the_run" "stopped: $stopped; $(tr '\n' '|' <"$T/sig.out")"
	fi
done
