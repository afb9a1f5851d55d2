#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An output path that is not a file (/dev/null, a FIFO, a terminal) is
# written in place.  Outputs go to a temporary file renamed into place, and
# a file renamed over /dev/null replaces the device with a regular file
# that every later `>/dev/null` on the machine fills.  A FIFO and a copy
# of /dev/null's device in the scratch directory stand in for the real
# ones, so a failure here harms nothing.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
G=${PTSCOPE_BUILD:-build}/tools/gen_trace
if [ ! -x "$P" ] || [ ! -x "$G" ]; then
	skip output_in_place "no ptscope or tools/gen_trace (run make first)"
	exit 0
fi
"$G" -n 2000 -f json -o "$T/small.json" >/dev/null 2>&1
"$P" convert "$T/small.json" -o "$T/small.fxt" 2>/dev/null

# A FIFO: the reader gets the trace, the FIFO stays a FIFO.
rm -f "$T/out.fifo"
mkfifo "$T/out.fifo"
# (the reader gives up after a while: a ptscope that renamed a file over
# the FIFO never opens it)
timeout 20 cat "$T/out.fifo" >"$T/fifo.got" &
reader=$!
"$P" convert "$T/small.json" -o "$T/out.fifo" -f fxt 2>"$T/fifo.err"
rc=$?
wait $reader
if [ $rc = 0 ] && [ -p "$T/out.fifo" ] && cmp -s "$T/fifo.got" "$T/small.fxt"; then
	pass output_in_place_fifo
else
	fail output_in_place_fifo "exit $rc, $(stat -c %F "$T/out.fifo"), $(wc -c <"$T/fifo.got") bytes read: $(head -2 "$T/fifo.err")"
fi

# A character device (1,3 is /dev/null's): it stays one, for a trace and
# for a recording.
if [ "$(id -u)" = 0 ] && mknod -m 666 "$T/null" c 1 3 2>/dev/null; then
	why=""
	"$P" convert "$T/small.json" -o "$T/null" -f fxt 2>"$T/null.err" ||
		why="$why convert: $(head -1 "$T/null.err");"
	[ -c "$T/null" ] || why="$why convert made it a $(stat -c %F "$T/null");"
	S=${PTSCOPE_BUILD:-build}/samples/demo
	if [ -x "$S" ]; then
		"$P" record -q -b step -o "$T/null" -- "$S" >/dev/null 2>"$T/rec.err" ||
			why="$why record: $(head -1 "$T/rec.err");"
		[ -c "$T/null" ] || why="$why record made it a $(stat -c %F "$T/null");"
	fi
	if [ -z "$why" ]; then
		pass output_in_place_device
	else
		fail output_in_place_device "$why"
	fi
	rm -f "$T/null"
else
	skip output_in_place_device "making a device node needs root"
fi
rm -f "$T/out.fifo" "$T"/small.* "$T/fifo.got"
