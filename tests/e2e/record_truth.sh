#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptscope run (emulated backend) on every sample: the decoded spans must be
# the emulator's ground truth (--truth): the same functions, called in the
# same order, at the same nesting, on each thread.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# compare EXE TRUTH SLICES: prints "ok N" or the first difference.
# Only the sample's own functions are compared (its FUNC symbols, from readelf; the
# libraries' internals have no symbol tables to name them by).  For each
# call of one of them, in order per thread: the function and its nearest
# calling sample function must be the same in the truth and in the trace.
#
# Truth lines: "tid kind from to icount ns".  A call opens a frame; a jmp
# to a function entry is a tail call that replaces the top frame; a ret
# closes frames up to the one whose call site precedes the return address
# (so longjmp and exceptions unwind on the next return).
compare() {
	readelf -sW "$1" | awk '$4 == "FUNC" && $7 != "UND" && $8 != "" { sub(/@.*/, "", $8); print "sym", $2, $8 }' >"$T/syms"
	sort -t' ' -k3,3 -k4,4n -k5,5n "$3" >"$T/sorted"
	awk '
	function hex(s,  i, v) {
		v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return sprintf("%.0f", v)
	}
	function field(line, key,  v) {
		v = line; if (!sub(".*" key "=", "", v)) return ""
		sub(/[ }].*/, "", v); gsub(/"/, "", v); return v
	}
	FNR == 1 { file++ }
	file == 1 { symoff[$3] = hex($2); next }
	# The functions the truth sees called: the truth logs indirect jumps
	# only, so a function entered by a direct tail jump (crt code) is
	# left out on both sides.
	file == 2 && $2 == "call" { called[hex($4)] = 1; next }
	file == 2 { next }
	# Trace: find the load base from main, then rebuild parents.
	file == 3 && $1 == "slice" && /cat="function"/ {
		a = field($0, "address"); nm = $0
		sub(/.* name="/, "", nm); sub(/".*/, "", nm)
		tid = field($0, "tid"); d = field($0, "depth") + 0
		if (nm == "main" && base == "") base = hex(a) - symoff["main"]
		n = ++nsl; sl_tid[n] = tid; sl_a[n] = hex(a); sl_d[n] = d
		sl_inf[n] = ($0 ~ /inferred=true/)
		next
	}
	file == 4 && FNR == 1 {
		for (nm in symoff) {
			a = sprintf("%.0f", base + symoff[nm])
			if (a in called) exe[a] = nm
		}
		for (n = 1; n <= nsl; n++) {
			tid = sl_tid[n]; d = sl_d[n]
			stk[tid, d] = sl_a[n]
			for (k = d + 1; (tid, k) in stk; k++) delete stk[tid, k]
			if (!(sl_a[n] in exe) || sl_inf[n]) continue
			p = "-"
			for (k = d - 1; k >= 0; k--)
				if ((tid, k) in stk && (stk[tid, k] in exe)) { p = exe[stk[tid, k]]; break }
			m = ++ns[tid]; s_fn[tid, m] = exe[sl_a[n]]; s_par[tid, m] = p
		}
	}
	file == 4 && $1 ~ /^[0-9]+$/ {
		tid = $1; k = $2; to = hex($4)
		if (k == "call") {
			top = ++sp[tid]; site[tid, top] = hex($3); ent[tid, top] = to
		} else if (k == "jmp" && (to in exe)) {
			if (sp[tid] == 0) { sp[tid] = 1; site[tid, 1] = 0 }
			top = sp[tid]; ent[tid, top] = to
		} else if (k == "ret") {
			for (i = sp[tid]; i > 0; i--)
				if (site[tid, i] + 0 < to + 0 && to - site[tid, i] <= 15) break
			sp[tid] = i > 0 ? i - 1 : (sp[tid] > 0 ? sp[tid] - 1 : 0)
			next
		} else next
		if (!(to in exe)) next
		p = "-"
		for (i = sp[tid] - 1; i > 0; i--)
			if (ent[tid, i] in exe) { p = exe[ent[tid, i]]; break }
		m = ++nt[tid]; t_fn[tid, m] = exe[to]; t_par[tid, m] = p
	}
	END {
		if (base == "") { print "no span of main in the trace"; exit 1 }
		total = 0
		for (tid in nt) {
			for (i = 1; i <= nt[tid]; i++) {
				if (i > ns[tid]) { print "thread " tid ": the trace ends before call #" i " " t_fn[tid, i] " (from " t_par[tid, i] ")"; exit 1 }
				if (t_fn[tid, i] != s_fn[tid, i] || t_par[tid, i] != s_par[tid, i]) {
					print "thread " tid " call #" i ": truth " t_fn[tid, i] " from " t_par[tid, i] ", trace " s_fn[tid, i] " from " s_par[tid, i]; exit 1
				}
			}
			if (ns[tid] > nt[tid]) { print "thread " tid ": " ns[tid] - nt[tid] " more calls in the trace, first " s_fn[tid, i]; exit 1 }
			total += nt[tid]
		}
		for (tid in ns) if (!(tid in nt)) { print "thread " tid ": calls in the trace but none in the truth"; exit 1 }
		if (!total) { print "no call of the sample in the truth"; exit 1 }
		print "ok " total
	}' "$T/syms" "$2" "$T/sorted" "$2"
}

check_sample() { # name, args...
	local name=$1 out msg
	shift
	out=$T/$BK.$name
	if ! "$PTSCOPE" run -q --backend=$BK --truth "$out.truth" \
		-o "$out.fxt" -- "$S/$name" "$@" >"$out.stdout" 2>"$out.err"; then
		# crash exits 128+11 by design
		[ "$name" = crash ] || { fail "truth_${BK}_$name" "ptscope run failed: $(tail -n1 "$out.err")"; return; }
	fi
	"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>"$out.err2" ||
		{ fail "truth_${BK}_$name" "dump failed: $(tail -n1 "$out.err2")"; return; }
	msg=$(compare "$S/$name" "$out.truth" "$out.slices")
	case $msg in
	ok*) pass "truth_${BK}_$name (${msg#ok } calls)" ;;
	*)
		# Say so when the decoder met instructions it cannot decode.
		bad=$(grep -c 'decode error: unknown instruction' "$out.slices")
		[ "$bad" -gt 0 ] && msg="$msg [the trace has $bad 'unknown instruction' decode errors]"
		fail "truth_${BK}_$name" "$msg" ;;
	esac
}

# signals: every SIGALRM shows as a [signal] span holding on_alarm, which
# calls count_tick; the comparison above models calls and returns, not
# asynchronous entries, so this one is checked by shape.
check_signals() {
	local out=$T/$BK.signals n
	if ! "$PTSCOPE" run -q --backend=$BK -o "$out.fxt" -- "$S/signals" >"$out.stdout" 2>"$out.err"; then
		fail "signals_$BK" "ptscope run failed: $(tail -n1 "$out.err")"
		return
	fi
	"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>&1
	n=$(awk '$1 == "slice" { d = $5; sub(/depth=/, "", d); nm = $0; sub(/.* name="/, "", nm); sub(/".*/, "", nm)
		if (nm == "[signal]") { sd = d; st = 1; next }
		if (st == 1 && nm == "on_alarm" && d == sd + 1) { st = 2; next }
		if (st == 2 && nm == "count_tick" && d == sd + 2) { ok++; st = 0; next }
		st = 0 } END { print ok + 0 }' "$out.slices")
	bad=$(grep -c 'decode error' "$out.slices")
	if [ "$n" -ge 5 ] && [ "$bad" -eq 0 ] && grep -q "signals: [0-9]* ticks" "$out.stdout"; then
		pass "signals_$BK ($n handler entries)"
	else
		fail "signals_$BK" "$n [signal]>on_alarm>count_tick nestings (want >= 5), $bad decode errors"
	fi
}

# Every backend that runs here: single-step, and QEMU when installed.
BACKENDS=step
if command -v qemu-x86_64 >/dev/null; then
	BACKENDS="step qemu"
else
	skip "truth_qemu" "qemu-x86_64 not installed (apt-get install qemu-user)"
fi
for BK in $BACKENDS; do
	check_sample demo 30
	check_sample crash
	check_sample threads
	check_sample recursion
	check_sample exceptions
	check_signals

	# threads: the main thread and its four workers, each on its own
	# timeline.
	n=$(awk '$1 == "slice" && /cat="function"/ { t[$3] = 1 } END { print length(t) }' "$T/$BK.threads.slices" 2>/dev/null)
	if [ "${n:-0}" -eq 5 ]; then
		pass "threads_own_timelines_$BK"
	else
		fail "threads_own_timelines_$BK" "${n:-0} threads with spans, want 5"
	fi
done
