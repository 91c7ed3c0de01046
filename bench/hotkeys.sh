#!/usr/bin/env bash
# bench/hotkeys.sh: what seeing the hot keys costs.  One partkv node
# (--fsync everysec) under redis-benchmark SET and GET (-c 50 -P 16,
# 100,000 keys, BENCH_N requests), with --hotkeys-sample 0 (tracking off:
# the anchor), 0.01 (the default) and 1 (every keyed command), each run
# on a fresh node in an empty dir, the three taking turns to go first,
# BENCH_RUNS runs each; the table shows the median requests/s and the
# ratio to tracking off.  The issue's targets: >= 0.99x at 1 %, >= 0.97x
# at 100 %.  The machine is noisy: read a ratio within about 3 % of 1 as
# "no cost measured".
#
# Environment: BENCH_N (default 500000), BENCH_RUNS (default 5), PARTKV.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
N=${BENCH_N:-500000}
RUNS=${BENCH_RUNS:-5}
PROG=hotkeys
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools redis-benchmark
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-hotkeys.XXXXXX")
pk_pid=""
cleanup() {
    stop_ours "${pk_pid:-}" "$work/"
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
samples=(0 0.01 1)
results=$work/results
: >"$results"

machine_info
for ((run = 0; run < RUNS; run++)); do
    for ((k = 0; k < 3; k++)); do
        s=${samples[$(((k + run) % 3))]}
        dir=$work/node-$run-$s
        mkdir -p "$dir"
        start_partkv_node "$dir" --hotkeys-sample "$s"
        redis-benchmark -p "$pk_port" -c 50 -P 16 -r 100000 -n "$N" \
            -t set,get --csv 2>/dev/null |
            awk -F'"' -v s="$s" '$2 == "SET" || $2 == "GET" {print s, $2, $4}' \
                >>"$results"
        stop "$pk_pid"
        pk_pid=""
        rm -rf "$dir"
    done
done

echo
printf '%-8s %-22s %14s %10s\n' test "--hotkeys-sample" "requests/s" "vs off"
for t in SET GET; do
    base=$(awk -v t="$t" '$1 == "0" && $2 == t {print $3}' "$results" | median)
    for s in "${samples[@]}"; do
        m=$(awk -v t="$t" -v s="$s" '$1 == s && $2 == t {print $3}' "$results" | median)
        printf '%-8s %-22s %14.0f %9.3fx\n' "$t" "$s" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')"
    done
done
echo "(medians of $RUNS runs, $N requests each, -c 50 -P 16)"
