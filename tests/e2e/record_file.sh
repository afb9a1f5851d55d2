#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptscope record → .ptsc → ptscope decode: the same spans as run gives;
# --archive makes a recording decode after its binaries are gone; a cut
# recording is refused with one sentence.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples

# Slices of a trace without the run-specific metadata line.
slices() { "$PTSCOPE" dump --slices "$1" | grep -v '^meta "command"'; }

# record + decode equals run (same sample, both deterministic in what
# they call; times differ, so compare names and depths only).  Kernel
# events (page faults, preemptions) differ from run to run: off here.
shape() { slices "$1" | sed -E 's/ ts=[0-9]+//; s/ dur=[0-9]+//; s/pid=[0-9]+/pid=P/; s/tid=[0-9]+/tid=T/; s/address=0x[0-9a-f]+//; s/(meta "pid") .*/\1/'; }

"$PTSCOPE" run -b "${BACKEND:-step}" -q --no-events -o "$T/run.fxt" -- "$S/recursion" >/dev/null 2>"$T/run.err"
if "$PTSCOPE" record -b "${BACKEND:-step}" -q --no-events -o "$T/rec.ptsc" -- "$S/recursion" >/dev/null 2>"$T/rec.err" &&
	"$PTSCOPE" decode "$T/rec.ptsc" -o "$T/dec.fxt" >/dev/null 2>"$T/dec.err"; then
	if diff <(shape "$T/run.fxt") <(shape "$T/dec.fxt") >"$T/shape.diff"; then
		pass "record_decode_equals_run"
	else
		fail "record_decode_equals_run" "first difference: $(head -n 4 "$T/shape.diff" | tr '\n' '|')"
	fi
else
	fail "record_decode_equals_run" "$(tail -qn1 "$T/rec.err" "$T/dec.err" | tr '\n' '|')"
fi
if slices "$T/dec.fxt" | grep -q '^meta "snapshot_reason" "exit"' &&
	slices "$T/dec.fxt" | grep -q '^meta "emulated" "true"'; then
	pass "record_metadata"
else
	fail "record_metadata" "snapshot_reason/emulated metadata missing"
fi

# --archive: copy the sample away, record it, delete it, decode.
mkdir -p "$T/arch"
cp "$S/recursion" "$T/arch/gone"
"$PTSCOPE" record -b "${BACKEND:-step}" -q --archive -o "$T/arch.ptsc" -- "$T/arch/gone" >/dev/null 2>"$T/arch.err"
rm -f "$T/arch/gone"
if "$PTSCOPE" decode "$T/arch.ptsc" -o "$T/arch.fxt" >/dev/null 2>"$T/archdec.err" &&
	slices "$T/arch.fxt" | grep -q 'name="descend"'; then
	pass "record_archive_decodes_without_binary"
else
	fail "record_archive_decodes_without_binary" "$(tail -qn1 "$T/arch.err" "$T/archdec.err" | tr '\n' '|')"
fi

# Without --archive, the missing binary is reported once and the rest
# (libraries) still decodes.
cp "$S/recursion" "$T/arch/gone2"
"$PTSCOPE" record -b "${BACKEND:-step}" -q -o "$T/noarch.ptsc" -- "$T/arch/gone2" >/dev/null 2>&1
rm -f "$T/arch/gone2"
"$PTSCOPE" decode "$T/noarch.ptsc" -o "$T/noarch.fxt" >/dev/null 2>"$T/noarch.err"
if [ "$(grep -c 'gone2' "$T/noarch.err")" = 1 ]; then
	pass "record_missing_binary_warned_once"
else
	fail "record_missing_binary_warned_once" "stderr: $(tr '\n' '|' <"$T/noarch.err")"
fi

# A recording cut in half: one sentence, non-zero, no trace file.
size=$(stat -c %s "$T/rec.ptsc")
head -c $((size / 2)) "$T/rec.ptsc" >"$T/cut.ptsc"
"$PTSCOPE" decode "$T/cut.ptsc" -o "$T/cut.fxt" >/dev/null 2>"$T/cut.err"
rc=$?
if [ $rc -ne 0 ] && [ ! -e "$T/cut.fxt" ] && [ "$(wc -l <"$T/cut.err")" -ge 1 ]; then
	pass "record_truncated_refused"
else
	fail "record_truncated_refused" "exit $rc: $(tr '\n' '|' <"$T/cut.err")"
fi

# record -p: attach mode saves a recording too.
"$S/demo" 30000000 >/dev/null &
pid=$!
sleep 0.3
if "$PTSCOPE" record -b step -q -p $pid --duration 0.3 -o "$T/att.ptsc" 2>"$T/att.err" &&
	"$PTSCOPE" decode "$T/att.ptsc" -o "$T/att.fxt" >/dev/null 2>&1 &&
	slices "$T/att.fxt" | grep -q '^meta "snapshot_reason" "duration"'; then
	pass "record_attach"
else
	fail "record_attach" "$(tail -n1 "$T/att.err")"
fi
kill $pid 2>/dev/null
wait $pid 2>/dev/null || : # killed on purpose: not this test's status
