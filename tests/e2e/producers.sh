#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Chrome JSON as other tools write it (tests/data/producers/README.md):
# Chrome itself, Rust's tracing-chrome, Python's VizTracer, PyTorch's
# profiler, perf script exporters.  Each reads to the slices we expect
# (the .slices file beside it, checked by hand against Perfetto's JSON
# importer's rules: docs/convert.md), and each converted copy (.fxt,
# .pftrace, .json, .json.gz) means the same.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
D=${PTSCOPE_TOP:-.}/tests/data/producers
if [ ! -x "$P" ]; then
	skip producers "no ptscope binary at $P (run make first)"
	exit 0
fi
for json in "$D"/*.json; do
	n=$(basename "$json" .json)
	if "$P" dump --slices "$json" >"$T/$n.slices" 2>"$T/$n.err" &&
		cmp -s "$D/$n.slices" "$T/$n.slices"; then
		pass "producer_${n}_reads_as_expected"
	else
		fail "producer_${n}_reads_as_expected" "$(cat "$T/$n.err"; diff "$D/$n.slices" "$T/$n.slices" | head -6)"
	fi
	for ext in fxt pftrace json json.gz; do
		if "$P" convert -q "$json" -o "$T/$n.$ext" &&
			"$P" dump --slices "$T/$n.$ext" >"$T/$n.$ext.slices" &&
			cmp -s "$D/$n.slices" "$T/$n.$ext.slices"; then
			pass "producer_${n}_to_$ext"
		else
			fail "producer_${n}_to_$ext" "$(diff "$D/$n.slices" "$T/$n.$ext.slices" | head -6)"
		fi
	done
done
