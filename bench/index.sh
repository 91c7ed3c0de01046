#!/usr/bin/env bash
# bench/index.sh: what a secondary index costs and gives.  A 3-node
# cluster (--replicas 3, --acks quorum, forward mode) takes BENCH_N HSETs
# of doc:<random> with three fields (tag t<random>, n <random>, body
# "w<random> common") from three redis-benchmark processes at once, one
# per node (-c 16 -P 16), in two modes on fresh clusters:
#
#   none    no index: the write rate of the same hashes, the anchor;
#   local   FT.CREATE idx ON HASH PREFIX 1 doc: SCHEMA tag TAG n NUMERIC
#           body TEXT before the load: every HSET also writes its entries,
#           in its own transaction, on its own partition.
#
# Then, on the local index, BENCH_Q selective queries (@tag:{t<random>},
# which matches a handful of documents) from one client, one at a time:
# latency p50/p99, and the nodes each query touched (a local index is
# scattered to every node that leads partitions: all of them).  The modes
# take turns to go first, BENCH_RUNS runs each; the table shows medians.
#
# A global index (partitioned by value: one node per query, written
# asynchronously) is not built yet; its row says so.
#
# Environment: BENCH_N (default 200000), BENCH_Q (default 1000),
# BENCH_RUNS (default 3), PARTKV.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
N=${BENCH_N:-200000}
Q=${BENCH_Q:-1000}
RUNS=${BENCH_RUNS:-3}
PROG=index
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools redis-benchmark redis-cli
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-index.XXXXXX")
pkc_pid=""
node_cgs=()
cleanup() {
    stop_ours "${pkc_pid:-}" "$work/"
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
modes=(none local)
results=$work/results
: >"$results"

# queries PORT: "p50_ms p99_ms nodes" of Q selective queries.
queries() {
    "$PY" - "$1" "$Q" <<'EOF'
import random, sys, time
import redis
port, q = int(sys.argv[1]), int(sys.argv[2])
r = redis.Redis(port=port)
slots = r.execute_command("CLUSTER SLOTS")
nodes = len({s[2][1] for s in slots})
lat = []
rng = random.Random(7)
hits = 0
for _ in range(q):
    t = "t%012d" % rng.randrange(1000000)
    t0 = time.perf_counter()
    res = r.execute_command("FT.SEARCH", "idx", "@tag:{%s}" % t, "NOCONTENT")
    lat.append((time.perf_counter() - t0) * 1e3)
    hits += res[0]
lat.sort()
print("%.3f %.3f %d %d" % (lat[len(lat) // 2], lat[int(len(lat) * 0.99)],
                           nodes, hits))
EOF
}

one_run() { # one_run MODE RUN: prints "MODE HSET/s P50 P99 NODES"
    local mode=$1 run=$2 dir=$work/c-$2-$1 rps q="- - -" docs t0 t1 p pids
    start_partkv_cluster 3 "$dir" "s-$run-$mode" --replicas 3 \
        --route forward >&2
    if [[ $mode == local ]]; then
        redis-cli -p "${pkc_ports[0]}" FT.CREATE idx ON HASH PREFIX 1 doc: \
            SCHEMA tag TAG n NUMERIC body TEXT | grep -qx OK ||
            die "FT.CREATE failed"
        # The index is there (empty) once every node builds it.
        for _ in $(seq 100); do
            redis-cli -p "${pkc_ports[0]}" FT.INFO idx | grep -A1 -x \
                percent_indexed | tail -1 | grep -qx 1 && break
            sleep 0.1
        done
    fi
    t0=$(date +%s.%N)
    pids=()
    for p in "${pkc_ports[@]}"; do
        redis-benchmark -p "$p" -c 16 -P 16 -n "$((N / 3))" -r 1000000 -q \
            HSET doc:__rand_int__ tag t__rand_int__ n __rand_int__ \
            body "w__rand_int__ common" >"$dir.rb-$p" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=$(date +%s.%N)
    grep -q ERR "$dir".rb-* && die "$mode: $(grep -h ERR "$dir".rb-* | head -1)"
    rps=$(awk -v a="$t0" -v b="$t1" -v n="$(((N / 3) * 3))" \
        'BEGIN {printf "%.0f", n / (b - a)}')
    if [[ $mode == local ]]; then
        q=$(queries "${pkc_ports[1]}")
        docs=$(redis-cli -p "${pkc_ports[2]}" FT.INFO idx |
            grep -A1 -x num_docs | tail -1)
        echo "$mode: num_docs $docs, queries: $q" >&2
        q=${q% *}
    fi
    echo "$mode $rps $q"
    cluster_done
}

machine_info
take_turns "$results"

echo
printf '%-8s %12s %9s %14s %14s %14s\n' index "HSET/s" "vs none" \
    "query p50 ms" "query p99 ms" "nodes/query"
base=$(awk '$1 == "none" {print $2}' "$results" | median)
for m in "${modes[@]}"; do
    med=$(awk -v m="$m" '$1 == m {print $2}' "$results" | median)
    if [[ $m == local ]]; then
        p50=$(awk '$1 == "local" {print $3}' "$results" | median)
        p99=$(awk '$1 == "local" {print $4}' "$results" | median)
        nodes=$(awk '$1 == "local" {print $5}' "$results" | median)
    else
        p50=- p99=- nodes=-
    fi
    printf '%-8s %12.0f %8.3fx %14s %14s %14s\n' "$m" "$med" \
        "$(awk -v a="$med" -v b="$base" 'BEGIN {print a / b}')" \
        "$p50" "$p99" "$nodes"
done
printf '%-8s %12s\n' global "(not built yet: no row)"
echo "(medians of $RUNS runs; $N HSETs of 3 fields by 3 redis-benchmark" \
    "-c 16 -P 16, one per node, over the wall time; $Q selective queries," \
    "one at a time)"
