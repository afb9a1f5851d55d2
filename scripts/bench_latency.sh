#!/usr/bin/env bash
# Cost of the eBPF call timer behind latency triggers (uprobe + uretprobe
# per timed call); results in docs/bench-latency.md.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "bench_latency: skipped: uprobes need root"
	exit 0
fi
for i in 1 2 3; do "$BUILD/tools/bench_latency" "$BUILD" 1000000; done
