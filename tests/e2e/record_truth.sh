#!/usr/bin/env bash
# ptscope run (emulated backend) on every sample: the decoded spans must be
# the emulator's ground truth (--truth): the same functions, called in the
# same order, at the same nesting, on each thread.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# compare TRUTH SLICES: prints "ok N" or the first difference.
# Truth lines: "tid kind from to icount ns".  Every call starts a frame;
# a jmp to a function entry (one the trace knows as a span start) is a
# tail call that replaces the top frame; a ret closes frames up to the one
# whose call site precedes the return address.  Trace: `dump --slices`,
# function spans that were seen being called (not inferred).
compare() {
	awk '
	FNR == 1 { file++ }
	file == 1 && $1 == "slice" && /cat="function"/ && !/inferred=true/ {
		tid = $3; sub("tid=", "", tid)
		d = $5; sub("depth=", "", d)
		a = $0; sub(/.*address=/, "", a); sub(/[ }].*/, "", a)
		n = ++ns[tid]; saddr[tid, n] = a; sdep[tid, n] = d
		entry[a] = 1
		next
	}
	file == 2 && $1 ~ /^[0-9]+$/ {
		tid = $1; k = $2
		if (k == "call") {
			top = ++sp[tid]; site[tid, top] = $3
			n = ++nt[tid]; taddr[tid, n] = $4; tdep[tid, n] = top
		} else if (k == "jmp" && ($4 in entry) && sp[tid] > 0) {
			n = ++nt[tid]; taddr[tid, n] = $4; tdep[tid, n] = sp[tid]
		} else if (k == "ret") {
			to = strtonum($4)
			for (i = sp[tid]; i > 0; i--) {
				c = strtonum(site[tid, i])
				if (c < to && to - c <= 15)
					break
			}
			if (i > 0)
				sp[tid] = i - 1
			else if (sp[tid] > 0)
				sp[tid]--
		}
	}
	END {
		total = 0
		for (tid in nt) {
			if (!(tid in ns)) { print "thread " tid ": no spans in the trace"; exit 1 }
			if (ns[tid] != nt[tid]) {
				for (i = 1; i <= nt[tid] && i <= ns[tid]; i++)
					if (taddr[tid, i] != saddr[tid, i]) break
				print "thread " tid ": " nt[tid] " calls in truth, " ns[tid] " spans in trace; first difference at #" i ": truth " taddr[tid, i] ", trace " saddr[tid, i]
				exit 1
			}
			off = sdep[tid, 1] - tdep[tid, 1]
			for (i = 1; i <= nt[tid]; i++) {
				if (taddr[tid, i] != saddr[tid, i]) {
					print "thread " tid " call #" i ": truth " taddr[tid, i] ", trace " saddr[tid, i]; exit 1
				}
				if (sdep[tid, i] - tdep[tid, i] != off) {
					print "thread " tid " call #" i " (" taddr[tid, i] "): depth " sdep[tid, i] " in trace, " tdep[tid, i] "+" off " in truth"; exit 1
				}
			}
			total += nt[tid]
		}
		for (tid in ns) if (!(tid in nt)) { print "thread " tid ": spans without truth"; exit 1 }
		print "ok " total
	}' "$2" "$1"
}

check_sample() { # name, args...
	local name=$1 out msg
	shift
	out=$T/$name
	if ! "$PTSCOPE" run -q --backend=emulated --truth "$out.truth" \
		-o "$out.fxt" -- "$S/$name" "$@" >"$out.stdout" 2>"$out.err"; then
		# crash exits 128+11 by design
		[ "$name" = crash ] || { fail "truth_$name" "ptscope run failed: $(tail -n1 "$out.err")"; return; }
	fi
	"$PTSCOPE" dump --slices "$out.fxt" >"$out.slices" 2>"$out.err2" ||
		{ fail "truth_$name" "dump failed: $(tail -n1 "$out.err2")"; return; }
	msg=$(compare "$out.truth" "$out.slices")
	case $msg in
	ok*) pass "truth_$name (${msg#ok } calls)" ;;
	*) fail "truth_$name" "$msg" ;;
	esac
}

check_sample demo 30
check_sample crash
check_sample threads
check_sample recursion
check_sample exceptions
