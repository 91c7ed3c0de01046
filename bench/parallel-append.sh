#!/usr/bin/env bash
# parallel-append: a 3-node cluster, 3 copies, --acks quorum, --fsync
# always, with the leaders sending records before their commit
# (--parallel-append yes, the default) beside the same cluster sending
# them after it (--parallel-append no, the anchor), same machine, same
# run.  With fsync always a leader's commit waits for its disk; sent
# before, the followers' writes overlap it.
#
# Every run starts a fresh cluster of each kind (`cluster up`, ports
# picked free), the two alternating (the one going first swaps every
# run), and runs redis-benchmark --cluster -t set at -P 1 and -P 16
# (-c 32 -r 100000 -n BENCH_N) against it.  The table shows medians of
# BENCH_RUNS runs and the ratio yes/no with each run's ratio.  It only
# prints.
#
# Environment: BENCH_N (default 60000), BENCH_RUNS (default 3), PARTKV,
# REDIS_BENCHMARK.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${BENCH_N:-60000}
RUNS=${BENCH_RUNS:-3}
PARTKV=${PARTKV:-$root/build/partkv}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
PY=/usr/bin/python3

PROG=parallel-append
source "$root/bench/lib.sh"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_N must be a positive integer, got '$N'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, got '$RUNS'"
need_tools "$REDIS_BENCHMARK" "$PY"

work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-pa.XXXXXX")
cl_pid=""
cleanup() {
    stop "$cl_pid"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

raw=$work/raw.tsv
: >"$raw"

# one MODE RUN: a fresh cluster with --parallel-append MODE, both depths
one() {
    local mode=$1 run=$2 d=$work/c-$1-$2 port p out i
    mkdir -p "$d"
    "$PARTKV" cluster up --nodes 3 --base-port 0 --dir "$d/data" \
        --fsync always --acks quorum --parallel-append "$mode" \
        >"$d/out" 2>"$d/err" &
    cl_pid=$!
    for ((i = 0; i < 300; i++)); do
        grep -q '^ready$' "$d/out" && break
        kill -0 "$cl_pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q '^ready$' "$d/out" || { cat "$d/err" >&2; die "cluster up failed"; }
    port=$(sed -n 's/^  node 0  [^:]*:\([0-9]*\) .*/\1/p' "$d/out")
    for p in 1 16; do
        out=$(timeout 600 "$REDIS_BENCHMARK" --cluster -h 127.0.0.1 \
            -p "$port" -t set -c 32 -r 100000 -n "$N" -P "$p" --csv) ||
            die "redis-benchmark against --parallel-append $mode failed"
        rb_rows <<<"$out" | while IFS=$'\t' read -r test rps p50 p99; do
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$p" "$run" "$rps" \
                "$p50" "$p99" >>"$raw"
            printf '  parallel-append %-3s P%-2s run %d: %10s req/s  p50 %s  p99 %s ms\n' \
                "$mode" "$p" "$run" "$rps" "$p50" "$p99"
        done
    done
    stop "$cl_pid"
    cl_pid=""
}

echo "parallel-append: 3 nodes, 3 copies, --acks quorum, --fsync always;" \
    "SET -c 32 -r 100000 -n $N, $RUNS runs, $(nproc) CPUs"
for ((run = 1; run <= RUNS; run++)); do
    if ((run % 2)); then order=(yes no); else order=(no yes); fi
    for mode in "${order[@]}"; do
        one "$mode" "$run"
    done
done

"$PY" - "$raw" <<'EOF'
import sys
from statistics import median

rows = {}
for line in open(sys.argv[1]):
    mode, p, run, rps, p50, p99 = line.rstrip("\n").split("\t")
    rows.setdefault(int(p), {}).setdefault(int(run), {})[mode] = (
        float(rps), float(p50), float(p99))
print("%-4s %12s %12s %7s %9s %9s  %s" % (
    "P", "yes SET/s", "no SET/s", "ratio", "p50 yes", "p50 no",
    "ratio per run"))
for p, runs in sorted(rows.items()):
    yes = [r["yes"] for r in runs.values()]
    no = [r["no"] for r in runs.values()]
    per = [r["yes"][0] / r["no"][0] for _, r in sorted(runs.items())]
    print("P%-3d %12.0f %12.0f %6.2fx %8.2fms %8.2fms  %s" % (
        p, median(x[0] for x in yes), median(x[0] for x in no),
        median(x[0] for x in yes) / median(x[0] for x in no),
        median(x[1] for x in yes), median(x[1] for x in no),
        " ".join("%.2f" % x for x in per)))
EOF
