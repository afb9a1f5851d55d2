#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A long conversion shows its progress on a terminal (one line redrawn in
# place, erased at the end, before the summary), and nothing of it when
# standard error is a file or a pipe, or with -q.  The terminal is a
# pseudo-terminal from script(1).
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
G=${PTSCOPE_BUILD:-build}/tools/gen_trace
if [ ! -x "$P" ] || [ ! -x "$G" ]; then
	skip progress "no ptscope or tools/gen_trace (run make first)"
	exit 0
fi
if ! command -v script >/dev/null; then
	skip progress "script(1) is not installed (util-linux), so no terminal to test on"
	exit 0
fi
# ~110 MB of JSON: a few seconds to convert, past the half second after
# which the line appears
"$G" -n 700000 -f json -o "$T/big.json" >/dev/null 2>&1
script -qec "'$P' convert '$T/big.json' -o '$T/big.fxt'" /dev/null >"$T/tty.out" 2>&1
tr '\r' '\n' <"$T/tty.out" >"$T/tty.lines"
if grep -qE 'ptscope convert: +[0-9]+% of [0-9.]+ MB read' "$T/tty.lines"; then
	pass progress_on_a_terminal
else
	fail progress_on_a_terminal "$(head -c 300 "$T/tty.out" | cat -v)"
fi
last=$(grep -v '^$' "$T/tty.lines" | tail -1)
if [[ $last == $'\e[K'"ptscope convert: $T/big.json ("*"events in"* ]]; then
	pass progress_erased_before_the_summary
else
	fail progress_erased_before_the_summary "$(echo "$last" | cat -v)"
fi
"$P" convert "$T/big.json" -o "$T/big2.fxt" 2>"$T/file.err"
if ! grep -q 'MB read' "$T/file.err" && ! grep -q $'\r' "$T/file.err" &&
	grep -q 'events in' "$T/file.err"; then
	pass progress_quiet_when_not_a_terminal
else
	fail progress_quiet_when_not_a_terminal "$(cat -v "$T/file.err" | head -c 300)"
fi
script -qec "'$P' convert -q '$T/big.json' -o '$T/big3.fxt'" /dev/null >"$T/q.out" 2>&1
if [ ! -s "$T/q.out" ]; then
	pass progress_quiet_with_q
else
	fail progress_quiet_with_q "$(cat -v "$T/q.out" | head -c 300)"
fi
rm -f "$T"/big*.json "$T"/big*.fxt
