#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make demo`: run the demo sample under ptscope with its ptscope_trigger()
# as the trigger, write demo.fxt, and say how to look at it.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for f in "$BUILD/ptscope" "$BUILD/samples/demo"; do
	[ -x "$f" ] || { echo "demo: $f is not built (run make)" >&2; exit 1; }
done
echo "\$ $BUILD/ptscope run -t . -o demo.fxt -- $BUILD/samples/demo 200"
"$BUILD/ptscope" run -t . -o demo.fxt -- "$BUILD/samples/demo" 200 || exit 1
cat <<TXT

demo.fxt holds the calls that led up to the first slow request: the
slow_scan() loop inside store(), and the "trigger" mark where the program
called ptscope_trigger("slow request").
Open https://ui.perfetto.dev, click "Open trace file" and pick
$(pwd)/demo.fxt (or: $BUILD/ptscope dump demo.fxt | less).
TXT
