#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sample backend (docs/sample-backend.md): what auto picks for attach
# and says; time shares of a program with a known split; threads; a
# breakpoint trigger and a latency trigger; DWARF unwinding through libc's
# qsort; Perfetto's own samples; attach and detach leave the target as it
# was; --frequency.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
P=$PTSCOPE
TP=${PTSCOPE_TP:-$PTSCOPE_TOP/../shared/tools/perfetto/trace_processor_shell}
cd "$T" || exit 1

# Milliseconds of sampled spans named NAME in FILE (any thread).
ms_of() { # FILE NAME
	"$P" dump --slices "$1" 2>/dev/null |
		awk -v n="name=\"$2\"" '$0 ~ n && /cat="sampled/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^dur=/) { sub("dur=", "", $i); s += $i } }
			END { printf "%d\n", s / 1e6 }'
}

# auto for attach: sample, with the sentence about step.
"$S/split" 5 >"$T/auto.out" &
tp=$!
sleep 0.3
"$P" attach -p $tp -d 3 -s 16M -o "$T/auto.fxt" 2>"$T/auto.err"
rc=$?
wait $tp
if [ $rc -eq 0 ] && grep -q '^ptscope: backend: sample (.*--backend=step is exact but slows the program about ten thousand times)$' "$T/auto.err"; then
	pass auto_attach_picks_sample_and_says_why
else
	fail auto_attach_picks_sample_and_says_why "exit $rc: $(head -n2 "$T/auto.err")"
fi

# Time shares: heavy 60%, medium 30%, light 10% of split's CPU time.  3 s
# in a 16M ring keep about 1500 samples: chance alone moves a share by
# about 1.3 points (one standard deviation), the bounds are 6 of those.
h=$(ms_of "$T/auto.fxt" heavy) m=$(ms_of "$T/auto.fxt" medium) l=$(ms_of "$T/auto.fxt" light)
tot=$((h + m + l))
if [ "$tot" -gt 600 ] &&
	[ $((h * 100 / tot)) -ge 52 ] && [ $((h * 100 / tot)) -le 68 ] &&
	[ $((m * 100 / tot)) -ge 23 ] && [ $((m * 100 / tot)) -le 37 ] &&
	[ $((l * 100 / tot)) -ge 5 ] && [ $((l * 100 / tot)) -le 15 ]; then
	pass time_shares_match_the_known_split
else
	fail time_shares_match_the_known_split "heavy $h ms, medium $m ms, light $l ms (want 60/30/10 of the total)"
fi

# The trace says it was sampled, and at what rate: metadata, category,
# summary line.
if "$P" dump "$T/auto.fxt" | grep -q '^meta "sampled" "true"' &&
	"$P" dump "$T/auto.fxt" | grep -q '^meta "sample_rate_hz" "500"' &&
	"$P" dump "$T/auto.fxt" | grep -q 'cat="sampled at 500 Hz"' &&
	grep -q 'call-stack samples at 500 Hz: sampled, not exact' "$T/auto.err"; then
	pass trace_says_sampled_and_rate
else
	fail trace_says_sampled_and_rate "$(grep snapshot "$T/auto.err")"
fi

# Threads: every worker of split is sampled, each with its heavy share.
"$P" run -q -b sample -o "$T/thr.fxt" -- "$S/split" 1 3 >/dev/null 2>"$T/thr.err"
n=$("$P" dump --slices "$T/thr.fxt" 2>/dev/null | grep 'name="heavy"' | grep -o 'tid=[0-9]*' | sort -u | wc -l)
if [ "$n" -eq 3 ]; then pass threads_each_sampled; else
	fail threads_each_sampled "heavy on $n threads, want 3: $(cat "$T/thr.err")"; fi

# A breakpoint trigger: the mark, and the snapshot ends there.
"$P" run -b sample -t checkpoint -o "$T/trig.fxt" -- "$S/split" 2 >/dev/null 2>"$T/trig.err"
rc=$?
if [ $rc -eq 0 ] && "$P" dump "$T/trig.fxt" | grep -q 'instant .*name="trigger".*symbol="checkpoint"' &&
	grep -q 'snapshot 1 (trigger)' "$T/trig.err"; then
	pass trigger_marks_and_snapshots
else
	fail trigger_marks_and_snapshots "exit $rc: $(tail -n2 "$T/trig.err")"
fi

# A latency trigger (uprobe timer through the eBPF sidecar).
"$P" run -b sample -t 'spike>2ms' -o "$T/lat.fxt" -- "$S/split" 3 >/dev/null 2>"$T/lat.err"
rc=$?
if grep -q "kernel events are off" "$T/lat.err"; then
	skip latency_trigger_marks "no eBPF here: $(grep 'kernel events' "$T/lat.err")"
elif [ $rc -eq 0 ] && "$P" dump "$T/lat.fxt" | grep -q 'name="slow call".*symbol="spike"' &&
	grep -q 'snapshot 1 (latency)' "$T/lat.err"; then
	pass latency_trigger_marks
else
	fail latency_trigger_marks "exit $rc: $(tail -n2 "$T/lat.err")"
fi

# DWARF through libc (no frame pointers): by_weight, called by qsort,
# sits under sort_round and main; the frame-pointer chain alone would
# lose sort_round.
"$P" run -q -b sample -d 0.8 -o "$T/qs.fxt" -- "$S/qsortcb" 1.5 >/dev/null 2>"$T/qs.err"
sl=$("$P" dump --slices "$T/qs.fxt" 2>/dev/null)
bw=$(echo "$sl" | grep 'name="by_weight"' | grep -o 'depth=[0-9]*' | sort | uniq -c | sort -rn | head -n1 | sed 's/.*depth=//')
sr=$(echo "$sl" | grep 'name="sort_round"' | grep -o 'depth=[0-9]*' | head -n1 | sed 's/depth=//')
dw=$("$P" dump "$T/qs.fxt" | sed -n 's/^meta "sample_unwinders" "fp [0-9]*, dwarf \([0-9]*\).*/\1/p')
if [ -n "$bw" ] && [ -n "$sr" ] && [ "$bw" -gt "$sr" ] && [ "${dw:-0}" -gt 0 ] &&
	echo "$sl" | grep 'name="by_weight"' | grep -q 'unwinder="dwarf"' &&
	echo "$sl" | grep -q 'name="main"'; then
	pass dwarf_unwinds_through_libc_qsort
else
	fail dwarf_unwinds_through_libc_qsort "by_weight depth '$bw', sort_round depth '$sr', dwarf stacks '$dw'"
fi

# Perfetto's own callstack samples (its flame graph).
"$P" run -q -b sample -d 0.5 -o "$T/s.pftrace" -- "$S/split" 1 >/dev/null 2>&1
if [ ! -x "$TP" ]; then
	skip perfetto_callstack_samples "no trace_processor_shell at $TP"
else
	# Every sample is a perf_sample row; its callstack runs from the
	# thread's bottom through heavy to work (the leaf).
	printf '%s\n' "select count(*) from perf_sample s join stack_profile_callsite c on s.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id join stack_profile_callsite pc on c.parent_id = pc.id join stack_profile_frame pf on pc.frame_id = pf.id where f.name = 'work' and pf.name = 'heavy';" >"$T/q.sql"
	n=$("$TP" -q "$T/q.sql" "$T/s.pftrace" 2>/dev/null | grep -E '^[0-9]+$' | tail -n1)
	if [ "${n:-0}" -gt 10 ] 2>/dev/null; then pass perfetto_callstack_samples; else
		fail perfetto_callstack_samples "perf_sample rows in work under heavy: '$n'"; fi
fi

# Attach and detach leave the target as it was: same output, same
# status, no tracer, not stopped — after --duration and after Ctrl-C.
# The target must outlive the attach: under AddressSanitizer on a busy
# machine, loading the kernel-event programs alone has taken over 1.5 s.
ref=$("$S/busy" 0.2)
ref_rc=$?
for how in duration sigint; do
	"$S/busy" 3.5 >"$T/busy.out" &
	tp=$!
	sleep 0.3
	if [ $how = duration ]; then
		"$P" attach -q -b sample -p $tp -d 0.5 -o "$T/busy.fxt" 2>"$T/busy.err"
		prc=$?
	else
		"$P" attach -q -b sample -p $tp -o "$T/busy.fxt" 2>"$T/busy.err" &
		pp=$!
		sleep 0.5
		kill -INT $pp
		wait $pp
		prc=$?
	fi
	tracer=$(awk '/^TracerPid/ {print $2}' /proc/$tp/status 2>/dev/null)
	state=$(awk '/^State/ {print $2}' /proc/$tp/status 2>/dev/null)
	wait $tp
	trc=$?
	if [ $prc -eq 0 ] && [ "${tracer:-0}" = 0 ] && [ "$state" != t ] && [ "$state" != T ] &&
		[ $trc -eq $ref_rc ] && [ "$(cat "$T/busy.out")" = "$ref" ]; then
		pass attach_detach_leaves_target_as_it_was_$how
	else
		fail attach_detach_leaves_target_as_it_was_$how "ptscope $prc, tracer '$tracer', state '$state', target $trc '$(cat "$T/busy.out")'"
	fi
done

# --frequency: the rate asked for, and said.  cpu-clock counts the
# thread's CPU time, so the samples are compared with the CPU time split
# got while attached (on a loaded machine it gets less than a CPU).
# Without the kernel events: loading them takes over a second under
# ASan, CPU time of split's that no sample can cover, and want/2 below
# was then missed by a sample or two.
"$S/split" 3 >/dev/null &
tp=$!
sleep 0.2
"$P" attach -b sample --no-events -F 200 -p $tp -d 1 -o "$T/f.fxt" \
	2>"$T/f.err" &
ap=$!
sleep 0.15 # attached by now
c0=$(awk '{print $14 + $15}' /proc/$tp/stat)
wait $ap
c1=$(awk '{print $14 + $15}' /proc/$tp/stat)
wait $tp
n=$(sed -n 's/.*rebuilt from \([0-9]*\) call-stack samples at 200 Hz.*/\1/p' "$T/f.err")
want=$(( (c1 - c0) * 200 / $(getconf CLK_TCK) ))
if [ -n "$n" ] && [ "$want" -gt 0 ] && [ "$n" -ge $((want / 2)) ] && [ "$n" -le $((want * 3 / 2 + 20)) ] &&
	"$P" dump "$T/f.fxt" | grep -q '^meta "sample_rate_hz" "200"'; then
	pass frequency_sets_the_rate
else
	fail frequency_sets_the_rate "$n samples at 200 Hz over $((c1 - c0)) ticks of split's CPU time (want about $want): $(grep snapshot "$T/f.err")"
fi
if "$P" run -b step -F 100 -o "$T/x.fxt" -- /bin/true 2>"$T/x.err"; then
	fail frequency_needs_sample "exit 0"
elif grep -q -- "--frequency needs the sample backend" "$T/x.err" && [ ! -e "$T/x.fxt" ]; then
	pass frequency_needs_sample
else
	fail frequency_needs_sample "$(cat "$T/x.err")"
fi
if "$P" attach -F 0 -p $$ -o "$T/x.fxt" 2>"$T/x.err"; then
	fail bad_frequency_refused "exit 0"
elif grep -q "bad --frequency '0'" "$T/x.err"; then pass bad_frequency_refused; else
	fail bad_frequency_refused "$(cat "$T/x.err")"; fi

# ptscope info says what this machine offers for sampling, and it is what
# the backend used.
"$P" info >"$T/info.out" 2>&1
ev=$(sed -n 's/^  samples with *\([a-z-]*\).*/\1/p' "$T/info.out")
if grep -q '^  DWARF unwinding *yes (libdw' "$T/info.out" &&
	grep -q '^  LBR call stacks ' "$T/info.out" &&
	grep -q '^  frame-pointer chains *yes' "$T/info.out" &&
	[ -n "$ev" ] && "$P" dump "$T/auto.fxt" | grep -q "^meta \"sample_event\" \"$ev\""; then
	pass info_says_unwinders_and_events
else
	fail info_says_unwinders_and_events "$(sed -n '/^Sampling/,/^$/p' "$T/info.out" | tr '\n' '|'), event '$ev'"
fi

# A crash: the signal is marked before the program dies of it, as it would
# have.
"$P" run -b sample -o "$T/crash.fxt" -- "$S/crash" >/dev/null 2>"$T/crash.err"
rc=$?
if [ $rc -eq 139 ] && "$P" dump "$T/crash.fxt" | grep -q 'instant .*name="SIGSEGV"' &&
	grep -q 'snapshot 1 (signal)' "$T/crash.err"; then
	pass crash_marked_and_target_dies_of_it
else
	fail crash_marked_and_target_dies_of_it "exit $rc: $(tail -n2 "$T/crash.err")"
fi

# exec (a #! script that execs split): the new program's samples are
# symbolized in its own image, and the exec is marked.
printf '#!/bin/sh\nexec "%s" 1\n' "$S/split" >"$T/ex.sh"
chmod +x "$T/ex.sh"
"$P" run -q -b sample -o "$T/ex.fxt" -- "$T/ex.sh" >/dev/null 2>"$T/ex.err"
if "$P" dump --slices "$T/ex.fxt" 2>/dev/null | grep -q 'name="heavy".*module="split"' &&
	"$P" dump "$T/ex.fxt" | grep -q 'name="exec"'; then
	pass exec_samples_in_the_new_image
else
	fail exec_samples_in_the_new_image "$(cat "$T/ex.err"; "$P" dump "$T/ex.fxt" | grep -c heavy)"
fi

# Child processes (fork) are followed: each child is its own process in
# the trace, sampled in its own function, and says who its parent is.
"$P" run -q -b sample -o "$T/ch.pftrace" -- "$S/children" 1 >"$T/ch.out" 2>"$T/ch.err"
rc=$?
sl=$("$P" dump --slices "$T/ch.pftrace" 2>/dev/null)
p1=$(echo "$sl" | grep 'name="first_child"' | grep -o '^slice pid=[0-9]*' | sort -u | wc -l)
p2=$(echo "$sl" | grep 'name="second_child"' | grep -o '^slice pid=[0-9]*' | sort -u | wc -l)
if [ $rc -eq 0 ] && [ "$(cat "$T/ch.out")" = "children: 0 0" ] && [ "$p1" -eq 1 ] && [ "$p2" -eq 1 ] &&
	[ "$(echo "$sl" | grep -E 'name="(first|second)_child"' | grep -o '^slice pid=[0-9]*' | sort -u | wc -l)" -eq 2 ]; then
	pass children_followed_and_sampled
else
	fail children_followed_and_sampled "exit $rc, output '$(cat "$T/ch.out")', first_child in $p1 processes, second_child in $p2: $(tail -n1 "$T/ch.err")"
fi
if [ -x "$TP" ]; then
	printf '%s\n' "select count(*) from process c join process p on c.parent_upid = p.upid where c.name like '%children%' and p.name like '%children%';" >"$T/q2.sql"
	n=$("$TP" -q "$T/q2.sql" "$T/ch.pftrace" 2>/dev/null | grep -E '^[0-9]+$' | tail -n1)
	if [ "${n:-0}" -ge 2 ]; then pass children_know_their_parent; else
		fail children_know_their_parent "processes with a traced parent: '$n'"; fi
fi
