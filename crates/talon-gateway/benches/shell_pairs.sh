#!/bin/bash
# Interleaved pairs of two builds of the `shell` bench (docs/benchmarks.md,
# "A 10 MB command through the gateway"): BEFORE and AFTER are the two
# bench binaries (copied out of each build's target/release/deps/shell-*),
# N the number of pairs, OUT a TSV file; any NAME=VALUE after them is passed
# to both (TALON_BENCH_RUNS, TALON_BENCH_WATCH, TALON_BENCH_SHELL_BYTES).
# The order alternates per pair. Each line: pair, side, time, load, then
# the bench's TSV line (p50 p90 mean ms; RSS idle, after warm-up, peak,
# VmHWM, settled KiB; deltas seen; the samples).
#
#   shell_pairs.sh /tmp/shell-before /tmp/shell-after 10 /tmp/pairs.tsv TALON_BENCH_RUNS=40
set -euo pipefail
before=$1 after=$2 n=$3 out=$4
shift 4
: >"$out"
for i in $(seq 1 "$n"); do
  if ((i % 2)); then order="before after"; else order="after before"; fi
  for side in $order; do
    if [ "$side" = before ]; then bin=$before; else bin=$after; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$(env "$@" TALON_BENCH_TSV=1 "$bin" 2>/dev/null | grep '^TSV')
    printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$side" "$(date -u +%H:%M:%S)" "$load" "$line" >>"$out"
  done
done
