#!/usr/bin/env bash
# bench/hotread.sh: what serving a read-hot key from every replica gives.
# A 3-node cluster (--replicas 3, forward mode, --acks quorum) takes, from
# build/bench/hload (3 x BENCH_C clients, pipelines of BENCH_P), a mix of
# requests each of which is GET of one key with probability BENCH_GETS
# (default 0.9), else SET of the same key, sent to its leader as a cluster
# client sends writes -- for BENCH_SECS seconds, in three modes on fresh
# clusters:
#
#   leader    relief off (--hot-key-reads 0), every request sent to the
#             key's leader, as a cluster-aware client sends it: the
#             leader-only rate, the anchor;
#   forward   relief off, the GETs spread over the three nodes, the
#             followers forwarding them to the leader;
#   replicas  --hot-key-reads BENCH_HOT (default 1000), the GETs spread
#             over the three nodes: followers serve them from their own
#             copy under a read lease (or by read index); a read that saw
#             a write waits until the leader committed it;
#   followers as replicas, but the GETs go to the two followers only, as a
#             client that reads from replicas sends them (Lettuce's
#             ReadFrom.REPLICA): the leader keeps the writes.
#
# BENCH_WRITES=other makes the requests that are not GETs SETs of random
# other keys (1,000,000 of them, on every partition), sent to the client's
# own node and forwarded to their leaders, instead of SETs of the key sent
# to its leader.
#
# The mix is fixed by hload's draw, whatever the latencies.  The modes
# take turns to go first, BENCH_RUNS runs each; the table shows medians
# and the ratio to "leader".  Every run checks that
# GET of the key on every node then answers what the leader answers.  The
# issue's target: >= 2.5x of "leader".  On this 2-core machine the three
# nodes and the load generators share two cores, so more replicas serving
# cannot add CPU; BENCH_NODE_CPU=X (a share of one core; root, cgroup-v1)
# caps every node at X of a core, standing for nodes on machines of their
# own.
#
# Environment: BENCH_SECS (default 10), BENCH_RUNS (default 3), BENCH_C
# (clients per node, default 16), BENCH_P (pipeline, default 16),
# BENCH_GETS, BENCH_WRITES (hot or other), BENCH_HOT, BENCH_NODE_CPU,
# BENCH_CG_PERIOD_US (the cap's period, default 100000), BENCH_MODES (default
# "leader forward replicas"), PARTKV.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
SECS=${BENCH_SECS:-10}
RUNS=${BENCH_RUNS:-3}
HOT=${BENCH_HOT:-1000}
C=${BENCH_C:-16}
P=${BENCH_P:-16}
GETS=${BENCH_GETS:-0.9}
WRITES=${BENCH_WRITES:-hot}
HLOAD=${HLOAD:-$root/build/bench/hload}
PROG=hotread
KEY='key:__rand_int__'
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools redis-cli
[[ -x $HLOAD ]] || die "$HLOAD not built (make build/bench/hload)"
cg_setup "${BENCH_NODE_CPU:-}"
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-hotread.XXXXXX")
pkc_pid=""
cleanup() {
    stop_ours "${pkc_pid:-}" "$work/"
    cg_remove "${cg_all[@]}"
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
read -r -a modes <<<"${BENCH_MODES:-leader forward replicas}"
results=$work/results
: >"$results"

one_run() { # one_run MODE RUN: prints "MODE RPS GET/s SET/s SERVED"
    local mode=$1 run=$2
    local dir=$work/c-$run-$1 hot=0 lead p i served=0
    local ports gets sets got want wargs
    [[ $mode == replicas || $mode == followers ]] && hot=$HOT
    start_partkv_cluster 3 "$dir" "s-$run-$mode" --replicas 3 \
        --route forward --hot-key-reads "$hot" >&2
    cg_cap >&2
    redis-cli -p "${pkc_ports[0]}" SET "$KEY" v0 | grep -qx OK || die "SET failed"
    lead=$(leader_port "$KEY") || die "no leader found for $KEY"
    if [[ $mode == leader ]]; then
        ports=$lead
    elif [[ $mode == followers ]]; then
        ports=$(for p in "${pkc_ports[@]}"; do [[ $p == "$lead" ]] || echo "$p"; done |
            paste -sd,)
    else
        ports=$(IFS=,; echo "${pkc_ports[*]}")
    fi
    wargs=(-w hot -L "$lead")
    [[ $WRITES == other ]] && wargs=(-w other)
    "$HLOAD" -p "$ports" -k "$KEY" -c "$((3 * C))" -P "$P" -s "$SECS" \
        -g "$GETS" "${wargs[@]}" >"$dir.hload" 2>&1 ||
        die "$mode: hload failed: $(cat "$dir.hload")"
    gets=$(sed -n 's/.* gets=\([0-9]*\).*/\1/p' "$dir.hload")
    sets=$(sed -n 's/.* sets=\([0-9]*\).*/\1/p' "$dir.hload")
    echo "$mode $(cat "$dir.hload")" >&2
    want=$(redis-cli -p "$lead" GET "$KEY")
    [[ $want != v0 || $GETS == 1 || $WRITES == other ]] ||
        die "$mode: the SETs did not reach the key"
    for p in "${pkc_ports[@]}"; do
        got=$(redis-cli -p "$p" GET "$KEY")
        [[ $got == "$want" ]] || die "$mode: GET on $p says '$got', the leader '$want'"
        { redis-cli -p "$p" INFO stats | tr -d '\r' | grep '^hot_reads_' || :; } |
            tr '\n' ' ' | sed "s/^/$mode node $p: /" >&2
        echo >&2
        i=$(redis-cli -p "$p" INFO stats | tr -d '\r' |
            sed -n 's/^hot_reads_served://p')
        served=$((served + ${i:-0}))
    done
    for f in "${node_cgs[@]}"; do # how much each capped node was held back
        [[ -r $f/cpu.stat ]] && echo "$mode ${f##*/}: $(tr '\n' ' ' <"$f/cpu.stat")" >&2
    done
    echo "$mode $(awk -v a="$gets" -v b="$sets" 'BEGIN {print a + b}') $gets $sets $served"
    cluster_done
}

machine_info
take_turns "$results"

echo
printf '%-9s %12s %10s %10s %9s %14s   %s\n' mode "requests/s" "vs leader" \
    "GET/s" "SET share" "replica reads" "runs"
base=$(awk '$1 == "leader" {print $2}' "$results" | median)
for m in "${modes[@]}"; do
    med=$(awk -v m="$m" '$1 == m {print $2}' "$results" | median)
    printf '%-9s %12.0f %9.3fx %10.0f %8.1f%% %14.0f   %s\n' "$m" "$med" \
        "$(awk -v a="$med" -v b="$base" 'BEGIN {print a / b}')" \
        "$(awk -v m="$m" '$1 == m {print $3}' "$results" | median)" \
        "$(awk -v m="$m" '$1 == m {print 100 * $4 / $2}' "$results" | median)" \
        "$(awk -v m="$m" '$1 == m {print $5}' "$results" | median)" \
        "$(awk -v m="$m" '$1 == m {printf "%d ", $2}' "$results")"
done
echo "(medians of $RUNS runs of ${SECS} s; build/bench/hload, $((3 * C)) clients" \
    "-P $P: GET of one key with probability $GETS, else SET of" \
    "$([[ $WRITES == other ]] && echo "another key" || echo it);" \
    "node CPU cap: ${cg_share:-none}$([[ -n ${cg_share:-} ]] && echo ", period ${CG_PERIOD} us"))"
