#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --inline end to end: samples/inline (mix() and scale() forced inline
# into work(), mix() calls leaf()) run under the emulated backend; the
# trace must show 4 mix spans (category "inline") right inside work, a
# scale span inside each, and leaf() inside mix; without --inline, none.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
S=${PTSCOPE_BUILD:-build}/samples/inline

if [ ! -x "$P" ] || [ ! -x "$S" ]; then
	fail inline_built "$P or $S is not built (run make)"
	exit 0
fi

# slices FILE: "depth name cat" of the sample's functions, in time order
slices() {
	"$P" dump --slices "$1" |
		sed -n 's/.* depth=\([0-9]*\) .* name="\(work\|mix\|scale\|leaf\)" cat="\([a-z]*\)".*/\1 \2 \3/p'
}

# check NAME FILE: the nesting the sample must show
check() {
	local name=$1 file=$2 got want d
	got=$(slices "$file")
	d=$(echo "$got" | awk '$2 == "work" { print $1; exit }')
	if [ -z "$d" ]; then
		fail "$name" "no work span in $file"
		return
	fi
	want=$(printf '%d work function\n' "$d"
		for i in 1 2 3 4; do
			printf '%d mix inline\n%d scale inline\n%d leaf function\n' \
				$((d + 1)) $((d + 2)) $((d + 2))
		done)
	if [ "$got" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "spans differ: $(echo "$got" | tr '\n' ',')"
	fi
}

if "$P" run --backend=step --inline -q -o "$T/inl.fxt" -- "$S" \
	>"$T/run.out" 2>"$T/run.err"; then
	check inline_run_nests_spans "$T/inl.fxt"
	if "$P" dump --slices "$T/inl.fxt" |
		grep 'name="scale" cat="inline"' | grep -q 'inlined=true' &&
		"$P" dump --slices "$T/inl.fxt" |
		grep 'name="scale" cat="inline"' | grep -q 'line=32'; then
		pass inline_span_args
	else
		fail inline_span_args "scale spans lack inlined=true/line=32"
	fi
else
	fail inline_run_nests_spans "ptscope run failed: $(head -c 300 "$T/run.err")"
fi

# record once, decode with and without --inline
if "$P" record --backend=step -q -o "$T/inl.ptsc" -- "$S" \
	>/dev/null 2>"$T/rec.err"; then
	if "$P" decode "$T/inl.ptsc" --inline -o "$T/dec.json" \
		>/dev/null 2>"$T/dec.err"; then
		check inline_decode_json "$T/dec.json"
	else
		fail inline_decode_json "decode --inline failed: $(head -c 300 "$T/dec.err")"
	fi
	if "$P" decode "$T/inl.ptsc" -o "$T/plain.fxt" >/dev/null 2>&1 &&
		! "$P" dump --slices "$T/plain.fxt" | grep -q 'cat="inline"' &&
		"$P" dump --slices "$T/plain.fxt" | grep -q 'name="leaf"'; then
		pass inline_off_shows_none
	else
		fail inline_off_shows_none "decode without --inline shows inline spans or no leaf"
	fi
else
	fail inline_record "ptscope record failed: $(head -c 300 "$T/rec.err")"
fi
