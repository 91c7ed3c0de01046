#!/usr/bin/env bash
# bench/salting-auto.sh: the hot-key issue's salting acceptance, end to
# end.  A 3-node cluster (--replicas 3, forward mode, --acks quorum, the
# default sampling of 1 %) takes build/bench/sload from 3 x BENCH_C
# clients spread over the nodes (pipelines of BENCH_P): half of the
# requests INCR one key, the rest GET keys drawn from Zipf(1.2) over
# 1,000,000, each sent to a node that leads it, as a cluster client
# sends them (the keys of a node's clients carry a hash tag of a slot it
# leads) -- for BENCH_SECS seconds, in modes on fresh clusters:
#
#   off     relief switched off (--hot-key-writes 0): the same cluster,
#           every INCR of the key on its one partition (2 in 3 of them
#           forwarded there by the node the client sent it to);
#   leader  relief off, and each client sends its INCRs to the key's
#           leader, as a cluster client does (no forwarding);
#   auto    the defaults: the key's leader salts it by itself once its
#           tracker sees more than --hot-key-writes (5000/s) for
#           --hot-key-time (2 s); INCR answers the new total;
#   local   the same with --salted-incr-reply local.
#
# A poller asks the key's leader for PK.HOTKEYS every 100 ms and notes
# when the key first shows (detected) and when it shows salted.  The
# key's rate is the median of sload's per-second counts of acknowledged
# INCRs over the second half of the run (salted by then in auto and
# local).  Every run checks that GET of the key equals the INCRs
# acknowledged.  The modes take turns to go first, BENCH_RUNS runs each;
# the table shows medians and the ratio to "off".  The issue's targets:
# detected <= 2 s, salted <= 5 s after, the key's rate >= 2x "off".
#
# BENCH_NODE_CPU=X caps each node at X of a core (root, cgroup-v1; the
# cap's period is BENCH_CG_PERIOD_US, default 100000), as in
# bench/hotread.sh.
#
# Environment: BENCH_SECS (default 20), BENCH_RUNS (default 3), BENCH_C
# (default 16), BENCH_P (default 16), BENCH_MODES (default "off leader
# auto local"), BENCH_NODE_CPU, BENCH_CG_PERIOD_US, SLOAD, PARTKV.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
SECS=${BENCH_SECS:-20}
RUNS=${BENCH_RUNS:-3}
C=${BENCH_C:-16}
P=${BENCH_P:-16}
SLOAD=${SLOAD:-$root/build/bench/sload}
PROG=salting-auto
KEY='celebrity:likes'
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools redis-cli /usr/bin/python3
[[ -x $SLOAD ]] || die "$SLOAD not built (make build/bench/sload)"
cg_setup "${BENCH_NODE_CPU:-}"
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-salting-auto.XXXXXX")
pkc_pid=""
poll_pid=""
cleanup() {
    [[ -n $poll_pid ]] && kill "$poll_pid" 2>/dev/null
    stop_ours "${pkc_pid:-}" "$work/"
    cg_remove "${cg_all[@]}"
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
read -r -a modes <<<"${BENCH_MODES:-off leader auto local}"
results=$work/results
: >"$results"

# poll PORT T0: prints "detected S" and "salted S N" (seconds after T0,
# the epoch time the load began) the first time each is seen.
poll() {
    /usr/bin/python3 - "$1" "$2" "$KEY" <<'EOF'
import sys, time
import redis
port, t0, key = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3].encode()
r = redis.Redis(port=port, socket_timeout=2)
seen = salted = False
while not salted:
    try:
        for e in r.execute_command("PK.HOTKEYS", "COUNT", "10"):
            f = {e[i]: e[i + 1] for i in range(0, len(e), 2)}
            if f[b"key"] != key:
                continue
            if not seen:
                seen = True
                print("detected %.2f" % (time.time() - t0), flush=True)
            if int(f[b"salted"]) > 0:
                salted = True
                print("salted %.2f %d" % (time.time() - t0, int(f[b"salted"])),
                      flush=True)
    except redis.RedisError:
        pass
    time.sleep(0.1)
EOF
}

one_run() { # one_run MODE RUN: prints "MODE RATE DETECTED SALTED"
    local mode=$1 run=$2
    local dir=$work/c-$run-$1 extra=() lead t0 acked got rate det sal
    local tags=() p i to=()
    case $mode in
    off | leader) extra=(--hot-key-writes 0) ;;
    local) extra=(--salted-incr-reply local) ;;
    esac
    start_partkv_cluster 3 "$dir" "s-$run-$mode" --replicas 3 \
        --route forward "${extra[@]}" >&2
    cg_cap >&2
    lead=$(leader_port "$KEY") || die "no leader found for $KEY"
    [[ $mode == leader ]] && to=(-L "$lead")
    for p in "${pkc_ports[@]}"; do # a hash tag of a slot p leads
        for ((i = 0; ; i++)); do
            ((i < 1000)) || die "no slot led by $p found"
            [[ $(leader_port "{t$i}") == "$p" ]] && break
        done
        tags+=("t$i")
    done
    t0=$(date +%s.%N)
    poll "$lead" "$t0" >"$dir.poll" 2>&1 &
    poll_pid=$!
    "$SLOAD" -p "$(IFS=,; echo "${pkc_ports[*]}")" -k "$KEY" -c "$((3 * C))" \
        -P "$P" -s "$SECS" -t "$(IFS=,; echo "${tags[*]}")" "${to[@]}" \
        >"$dir.sload" 2>&1 ||
        die "$mode: sload failed: $(tail -3 "$dir.sload")"
    kill "$poll_pid" 2>/dev/null || :
    wait "$poll_pid" 2>/dev/null || :
    poll_pid=""
    acked=$(sed -n 's/^sload acked=\([0-9]*\) .*/\1/p' "$dir.sload")
    got=$(redis-cli -p "${pkc_ports[1]}" GET "$KEY")
    [[ $got == "$acked" ]] || die "$mode: GET says $got after $acked acknowledged INCRs"
    rate=$(awk -v h="$((SECS / 2))" '/^sload t=/ {
            split($2, t, "="); split($3, v, "=")
            if (t[2] + 0 > h) print v[2] }' "$dir.sload" | median)
    det=$(awk '$1 == "detected" {print $2}' "$dir.poll")
    sal=$(awk '$1 == "salted" {print $2}' "$dir.poll")
    echo "$mode run $run: key $rate INCR/s, detected ${det:--} s, salted ${sal:--} s," \
        "$acked INCRs acknowledged and read back;" \
        "$(grep -c '^sload t=.* errors=[1-9]' "$dir.sload") seconds with error replies" >&2
    echo "$mode $rate ${det:--} ${sal:--}"
    cluster_done
}

machine_info
take_turns "$results"

col() { # col MODE N: the median of column N of MODE's rows ("-" if none)
    local v
    v=$(awk -v m="$1" -v n="$2" '$1 == m && $n != "-" {print $n}' "$results")
    if [[ -n $v ]]; then median <<<"$v"; else echo -; fi
}
echo
printf '%-6s %14s %9s %10s %10s\n' mode "key INCR/s" "vs off" detected salted
base=$(col off 2)
for m in "${modes[@]}"; do
    med=$(col "$m" 2)
    printf '%-6s %14.0f %9s %9s %9s\n' "$m" "$med" \
        "$(awk -v a="$med" -v b="$base" 'BEGIN {
            if (b > 0) printf "%.3fx", a / b; else print "-" }')" \
        "$(col "$m" 3)" "$(col "$m" 4)"
done
echo "(medians of $RUNS runs of ${SECS} s; the key's rate over the second half;" \
    "3 x $C clients, pipelines of $P, spread over the nodes; seconds after the" \
    "load began${BENCH_NODE_CPU:+; node CPU cap: $BENCH_NODE_CPU}$(
        [[ -n ${BENCH_NODE_CPU:-} ]] && echo ", period ${CG_PERIOD} us"))"
