#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The small tools in tools/: what a developer runs by hand.
. "$(dirname "$0")/lib.sh"
B=$PTSCOPE_BUILD
demo=$B/samples/demo

# symbols: the functions of the demo, named as the decoder names spans
out=$("$B/tools/symbols" "$demo")
if grep -qE '^ +0x[0-9a-f]+ +[0-9]+  slow_scan  samples/demo.c:[0-9]+$' <<<"$out" &&
	grep -qE '  atoi@plt$' <<<"$out"; then
	pass symbols_lists_functions_with_lines_and_plt
else
	fail symbols_lists_functions_with_lines_and_plt "got: $(head -5 <<<"$out")"
fi

start=$(awk '$3 == "slow_scan" { print $1 }' <<<"$out")
inside=$(printf '%#x' $((start + 3)))
if "$B/tools/symbols" "$demo" "$inside" 0x5 |
	tr -s ' ' | grep -q "^$inside $start [0-9]* slow_scan" &&
	"$B/tools/symbols" "$demo" 0x5 | grep -q ' demo+0x5$'; then
	pass symbols_resolves_addresses_and_unknowns
else
	fail symbols_resolves_addresses_and_unknowns "slow_scan at $start"
fi

if err=$("$B/tools/symbols" "$demo" nonsense 2>&1 >/dev/null); then
	fail symbols_rejects_bad_address "exit 0"
elif grep -q "'nonsense' is not an address" <<<"$err"; then
	pass symbols_rejects_bad_address
else
	fail symbols_rejects_bad_address "said: $err"
fi

# ptdump: every packet of a real recording, with offsets
pt=$PTSCOPE_TESTDATA/real-pt/lldb-single-thread/3842849.trace
if [ -f "$pt" ]; then
	n=$("$B/tools/ptdump" "$pt" | grep -c 'psb')
	if [ "$n" -ge 1 ]; then
		pass ptdump_shows_packets
	else
		fail ptdump_shows_packets "no psb in $("$B/tools/ptdump" "$pt" | head -3)"
	fi
else
	skip ptdump_shows_packets "no real-pt test data at $pt"
fi
