#!/usr/bin/env bash
# replication: throughput and p99 of a 3-node partkv cluster at --acks
# leader, quorum and all, each beside a Redis Cluster of 3 masters with one
# replica each, same machine, same run.
#
#   partkv cluster up --nodes 3 --replicas $REPL_R --acks A --fsync everysec
#                                        (a fresh cluster for each A)
#   redis-server --cluster-enabled yes --appendonly yes
#                --appendfsync everysec --save ""     x 6, then
#   redis-cli --cluster create ... --cluster-replicas 1
#
# The anchor is Redis's default asynchronous replication: a master answers
# before its replica has the write.  It stays up for the whole script (its
# replicas are in sync before the first run; repl-diskless-sync-delay 0
# only shortens that initial sync).  REPL_R (default 3, partkv's default
# with 3 nodes: every partition on every node) is the number of copies of a
# partition; REPL_R=2 gives the same copy count as Redis's one replica
# (leader + 1 follower vs master + 1 replica).  With R=3, quorum is 2 of 3
# copies and all is 3; with R=2 both are 2.
#
# Each case is one
#   redis-benchmark --cluster -t set,get -c 50 -r 100000 -d 100 -n N -P p --csv
# against the first node (redis-benchmark sends only to masters/leaders),
# at -P 1 (-n $BENCH_N) and -P 16 (-n $BENCH_N_P16).  For each acks mode,
# each case runs BENCH_RUNS times, partkv and redis alternating (the one
# going first swaps every run), so every mode has its own Redis baseline
# measured next to it; tables show medians.  As in vs-redis-cluster.sh, a
# --cluster run's time is rounded up by up to ~0.25 s (its threads notice
# the end at a 250 ms tick): the per-run lines print the seconds behind
# each req/s.  p50/p99 come from redis-benchmark's CSV (ms).
#
# Per mode: req/s partkv and redis with their ratio, p99 partkv and redis,
# per test and pipeline depth, then "SET+GET throughput ratio P1 ..x, P16
# ..x" (total requests over total time, partkv/redis).  At the end, one
# summary line per mode and the acceptance target: acks=quorum SET+GET
# throughput >= 0.7x the Redis baseline (goal >= 1.0x).  The script only
# prints; it never fails on a target.  Keys per node at the end of each
# mode are printed as a sanity check (with replication, followers hold
# keys too).  If this partkv's `cluster up` does not accept --acks yet,
# every mode runs without it and the output says so.
#
# Steady state: a fresh node's journal grows into new file pages (on this
# VM a page touched for the first time costs more than the write); once it
# reaches its retention budget (64 MiB) the head is deleted as the tail
# grows and LMDB reuses freed pages.  BENCH_WARM=N writes N SETs (-P 16)
# into each fresh partkv cluster, and into Redis, before the measured runs
# of every mode, and prints the warm-up rates and the size of partkv's
# data files after it: 1,000,000 brings R=3 nodes past the budget.
#
# Environment: BENCH_N (requests per test per run at -P 1, default 150000),
# BENCH_N_P16 (at -P 16, default 1000000), BENCH_RUNS (default 3),
# REPL_R (1..3, default 3), REPL_ACKS (the modes to run, comma- or
# space-separated, default "leader,quorum,all"), PARTKV (binary, default
# build/partkv; a copy is taken at start), REDIS_SERVER, REDIS_BENCHMARK,
# REDIS_CLI.  Bad values: one line on stderr, exit 2.  About 5 minutes with
# the defaults on 2 CPUs (each mode's 3 runs x 2 systems take ~1.5 min;
# longer if replication slows partkv down).  Quick mode, ~20 s, a smoke
# test rather than a measurement (runs under a second, where the 250 ms
# rounding dominates):
#   BENCH_RUNS=1 BENCH_N=20000 BENCH_N_P16=100000 bench/replication.sh
# One mode at R=2:  REPL_ACKS=quorum REPL_R=2 bench/replication.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=replication
bad_env() { echo "$PROG: $*" >&2; exit 2; }

N=${BENCH_N:-150000}
[[ $N =~ ^[1-9][0-9]{0,8}$ ]] || bad_env "BENCH_N must be a positive integer below 1e9, got '$N'"
N16=${BENCH_N_P16:-1000000}
[[ $N16 =~ ^[1-9][0-9]{0,9}$ ]] || bad_env "BENCH_N_P16 must be a positive integer below 1e10, got '$N16'"
WARM=${BENCH_WARM:-0}
[[ $WARM =~ ^(0|[1-9][0-9]{0,9})$ ]] || bad_env "BENCH_WARM must be 0 or a positive integer below 1e10, got '$WARM'"
RUNS=${BENCH_RUNS:-3}
[[ $RUNS =~ ^[1-9][0-9]{0,2}$ ]] || bad_env "BENCH_RUNS must be an integer from 1 to 999, got '$RUNS'"
R=${REPL_R:-3}
[[ $R =~ ^[1-3]$ ]] || bad_env "REPL_R must be 1, 2 or 3 (3 nodes), got '$R'"
ACKS_IN=${REPL_ACKS-leader,quorum,all}
MODES=()
IFS=$', \t' read -ra acks_list <<<"$ACKS_IN" || true
for a in "${acks_list[@]}"; do
    [[ -n $a ]] || continue
    [[ $a == leader || $a == quorum || $a == all ]] ||
        bad_env "REPL_ACKS: each mode must be leader, quorum or all, got '$a'"
    [[ " ${MODES[*]} " == *" $a "* ]] || MODES+=("$a")
done
((${#MODES[@]})) || bad_env "REPL_ACKS names no mode (leader, quorum, all)"

PARTKV_SRC=${PARTKV:-$root/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
PY=/usr/bin/python3
TESTS=set,get
PIPES=(1 16)
CLIENTS=50
KEYSPACE=100000
VALSIZE=100
NODES=3

# die, stop, stop_ours, free_ports, need_tools, start_partkv_cluster,
# rb_rows, machine_info
source "$root/bench/lib.sh"
PARTKV=$PARTKV_SRC
need_tools "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI" "$PY"

t_start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-replication.XXXXXX")
pkc_pid=""  # the current `partkv cluster up` (stops its nodes on SIGTERM)
pkc_pids=() # its node processes
pkc_ports=()
rd_pids=()
rd_ports=()

# Redis rewrites its command line to "redis-server 127.0.0.1:PORT
# [cluster]": stop a PID only while it still names its port.
stop_redis() {
    local i
    for i in "${!rd_pids[@]}"; do
        stop_ours "${rd_pids[i]}" "127.0.0.1:${rd_ports[i]}"
    done
}

stop_partkv() {
    local pid
    stop "$pkc_pid"
    # Nodes outlive `cluster up` only if it died uncleanly.
    for pid in "${pkc_pids[@]}"; do stop_ours "$pid" "$work/"; done
    pkc_pid=""
    pkc_pids=()
    pkc_ports=()
}

cleanup() {
    stop_partkv
    stop_redis
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"

# Does `cluster up` take --acks?  An unknown option fails the parse before
# anything starts, and getopt reports the first bad one: --acks if it is
# unknown, else --no-such-option.
probe=$("$PARTKV" cluster up --acks leader --no-such-option 2>&1 || true)
if [[ $probe == *"'--acks'"* ]]; then acks_flag=0; else acks_flag=1; fi

info_field() { # PORT SECTION FIELD: one INFO value
    "$REDIS_CLI" -p "$1" info "$2" | tr -d '\r' |
        sed -n "s/^$3:\([^[:space:]]*\).*/\1/p"
}

cluster_state() { # PORT: cluster_state from CLUSTER INFO, empty if none
    "$REDIS_CLI" -p "$1" cluster info 2>/dev/null | tr -d '\r' |
        sed -n 's/^cluster_state:\([a-z]*\).*/\1/p'
}

roles() { # PORT: "MASTERS REPLICAS" in that node's CLUSTER NODES
    "$REDIS_CLI" -p "$1" cluster nodes 2>/dev/null | awk '
        $3 ~ /(^|,)master(,|$)/ && $4 == "-" && NF >= 9 { m++ }
        $3 ~ /(^|,)slave(,|$)/ && $4 != "-" { r++ }
        END { printf "%d %d\n", m, r }'
}

node_keys() { # PORT: keys in db0 on that node (0 if none)
    local k
    k=$("$REDIS_CLI" -p "$1" info keyspace | tr -d '\r' |
        sed -n 's/^db0:keys=\([0-9]*\).*/\1/p')
    echo "${k:-0}"
}

# --- redis: 3 masters + 3 replicas, up for the whole script ------------------
rd_base=$(free_ports $((2 * NODES)) 10000) || die "no free ports for redis"
for ((i = 0; i < 2 * NODES; i++)); do
    port=$((rd_base + i))
    mkdir -p "$work/redis-$i"
    "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$work/redis-$i" \
        --cluster-enabled yes --cluster-config-file nodes.conf \
        --appendonly yes --appendfsync everysec --save "" \
        --repl-diskless-sync-delay 0 \
        --daemonize no --logfile "" >"$work/redis-$i.log" 2>&1 &
    rd_pids+=($!)
    rd_ports+=("$port")
done
for ((i = 0; i < 2 * NODES; i++)); do
    port=${rd_ports[i]}
    for ((j = 0; j < 100; j++)); do
        [[ $("$REDIS_CLI" -p "$port" ping 2>/dev/null) == PONG ]] && break
        kill -0 "${rd_pids[i]}" 2>/dev/null || break
        sleep 0.1
    done
    [[ $("$REDIS_CLI" -p "$port" ping 2>/dev/null) == PONG ]] ||
        { cat "$work/redis-$i.log" >&2; die "redis-server on port $port did not start"; }
done
addrs=()
for port in "${rd_ports[@]}"; do addrs+=("127.0.0.1:$port"); done
"$REDIS_CLI" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
    >"$work/redis-create.log" 2>&1 ||
    { cat "$work/redis-create.log" >&2; die "redis-cli --cluster create failed"; }
# Every node sees the whole cluster and every replica is in sync before
# redis-benchmark asks one.
rd_masters=()
rd_replicas=()
for ((i = 0; i < 600; i++)); do
    ok=1
    rd_masters=()
    rd_replicas=()
    for port in "${rd_ports[@]}"; do
        [[ $(cluster_state "$port") == ok ]] || { ok=0; break; }
        # Its view of the others too: a node that still lists a replica as
        # a slotless master makes redis-benchmark warn and skip it.
        [[ $(roles "$port") == "$NODES $NODES" ]] || { ok=0; break; }
        case $(info_field "$port" replication role) in
        master) rd_masters+=("$port") ;;
        slave)
            rd_replicas+=("$port")
            [[ $(info_field "$port" replication master_link_status) == up &&
                $(info_field "$port" replication master_sync_in_progress) == 0 ]] ||
                { ok=0; break; }
            ;;
        *) ok=0; break ;;
        esac
    done
    ((ok && ${#rd_masters[@]} == NODES && ${#rd_replicas[@]} == NODES)) && break
    ok=0
    sleep 0.1
done
((ok)) || die "redis cluster did not become ok with $NODES masters and $NODES synced replicas"
for port in "${rd_masters[@]}"; do
    n=$(info_field "$port" replication connected_slaves)
    [[ $n == 1 ]] || die "redis master on port $port has '$n' replicas, not 1"
done
rd_version=$(info_field "${rd_ports[0]}" server redis_version)

# --- partkv: a fresh cluster per acks mode -----------------------------------
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

start_partkv() { # MODE: sets pkc_pid, pkc_pids, pkc_ports
    local mode=$1 base i st
    local extra=(--replicas "$R" --fsync everysec)
    ((acks_flag)) && extra+=(--acks "$mode")
    base=$(free_ports "$NODES") || die "no free ports for partkv"
    # A later --base-port wins over the helper's 0.
    start_partkv_cluster "$NODES" "$work/pk-$mode" "$secret" \
        --base-port "$base" "${extra[@]}"
    for ((i = 0; i < 100; i++)); do
        [[ $(cluster_state "${pkc_ports[0]}") == ok ]] && break
        sleep 0.1
    done
    st=$(cluster_state "${pkc_ports[0]}")
    [[ $st == ok ]] || die "partkv (acks $mode) cluster_state is '$st', not ok"
}

# --- runs ---------------------------------------------------------------------
machine_info
echo "$PROG: partkv $PARTKV_SRC (a copy, built $(date -r "$PARTKV_SRC" '+%F %T')):" \
    "cluster up --nodes $NODES --replicas $R --fsync everysec --acks A," \
    "A in ${MODES[*]}, a fresh cluster per mode"
((acks_flag)) || echo "$PROG: NOTE this partkv's \`cluster up\` does not accept --acks:" \
    "every mode runs WITHOUT it (the nodes' default); the modes are not distinct"
echo "$PROG: redis $rd_version: $NODES masters (ports ${rd_masters[*]}) +" \
    "$NODES replicas (ports ${rd_replicas[*]}), --cluster-replicas 1," \
    "asynchronous replication, appendonly everysec, no RDB"
echo "$PROG: -t $TESTS -c $CLIENTS -r $KEYSPACE -d $VALSIZE --cluster," \
    "-n $N at -P 1, -n $N16 at -P 16, runs per case and mode: $RUNS," \
    "warm-up SETs per mode: $WARM," \
    "$(nproc) CPUs (redis-benchmark shares them)"

declare -A NREQ=([1]=$N [16]=$N16) # requests per test, by pipeline depth
raw=$work/raw.tsv # "mode system test p run n rps p50 p99" rows
: >"$raw"
keys=$work/keys.tsv # "mode system keys-per-node..." rows
: >"$keys"

# one MODE SYSTEM PORT P RUN: one redis-benchmark run; appends its rows
# to raw and prints them.
one() {
    local mode=$1 srv=$2 port=$3 p=$4 run=$5 n=${NREQ[$4]} out rows f
    out=$(timeout 600 "$REDIS_BENCHMARK" -h 127.0.0.1 -p "$port" \
        --cluster -t "$TESTS" -n "$n" -r "$KEYSPACE" -c "$CLIENTS" \
        -d "$VALSIZE" -P "$p" --csv 2>"$work/rb.err") ||
        { cat "$work/rb.err" >&2; die "redis-benchmark -P $p against $srv (acks $mode) failed"; }
    rows=$(rb_rows <<<"$out" | awk -F'\t' -v m="$mode" -v srv="$srv" \
        -v p="$p" -v run="$run" -v n="$n" '
        $2 + 0 > 0 { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
                     m, srv, $1, p, run, n, $2, $3, $4 }')
    [[ $(grep -c . <<<"$rows") == 2 ]] ||
        die "could not parse redis-benchmark output against $srv: $out"
    if [[ -s $work/rb.err ]]; then
        echo "  $srv P$p run $run: redis-benchmark stderr:" >&2
        sed 's/^/    /' "$work/rb.err" | head -5 >&2
    fi
    printf '%s\n' "$rows" >>"$raw"
    while IFS=$'\t' read -ra f; do
        printf '  %-6s %-6s P%-2s run %d: %-3s %10s req/s (%5.2f s)  p50 %s  p99 %s ms\n' \
            "$mode" "$srv" "$p" "$run" "${f[2]}" "${f[6]}" \
            "$(awk -v n="$n" -v r="${f[6]}" 'BEGIN { print n / r }')" \
            "${f[7]}" "${f[8]}"
    done <<<"$rows"
}

# warm MODE: BENCH_WARM SETs into both systems (not measured; rates shown).
warm() {
    local srv out
    for srv in partkv redis; do
        out=$(timeout 1800 "$REDIS_BENCHMARK" -h 127.0.0.1 -p "${PORT[$srv]}" \
            --cluster -t set -n "$WARM" -r "$KEYSPACE" -c "$CLIENTS" \
            -d "$VALSIZE" -P 16 --csv 2>"$work/rb.err") ||
            { cat "$work/rb.err" >&2; die "warm-up against $srv (acks $1) failed"; }
        echo "  $1 $srv warm-up: $WARM SETs at P16, $(rb_rows <<<"$out" | awk -F'\t' '{printf "%.0f", $2}') req/s"
    done
    echo "  $1 partkv data files after warm-up: $(du -sm "$work/pk-$1" | cut -f1) MiB (3 nodes)"
}

turn=0 # swaps the system going first every run, across modes too
for mode in "${MODES[@]}"; do
    echo
    start_partkv "$mode"
    flag="--acks $mode"
    ((acks_flag)) || flag="--acks not passed"
    echo "acks=$mode: partkv nodes ports ${pkc_ports[*]} pids ${pkc_pids[*]}" \
        "(cluster up pid $pkc_pid, $flag)"
    declare -A PORT=([partkv]=${pkc_ports[0]} [redis]=${rd_masters[0]})
    ((WARM)) && warm "$mode"
    for p in "${PIPES[@]}"; do
        for ((run = 1; run <= RUNS; run++)); do
            if ((turn++ % 2 == 0)); then order=(partkv redis); else order=(redis partkv); fi
            for srv in "${order[@]}"; do
                one "$mode" "$srv" "${PORT[$srv]}" "$p" "$run"
            done
        done
    done
    # Sanity: where the keys are (redis-benchmark does not check SET replies).
    pk_k=()
    for port in "${pkc_ports[@]}"; do pk_k+=("$(node_keys "$port")"); done
    rd_k=()
    for port in "${rd_masters[@]}" "${rd_replicas[@]}"; do rd_k+=("$(node_keys "$port")"); done
    printf '%s\tpartkv\t%s\n' "$mode" "${pk_k[*]}" >>"$keys"
    printf '%s\tredis\t%s\n' "$mode" "${rd_k[*]}" >>"$keys"
    stop_partkv
    rm -rf "$work/pk-$mode" "$work/pk-$mode.out" "$work/pk-$mode.err"
done

forks=0
for port in "${rd_ports[@]}"; do
    nf=$(info_field "$port" stats total_forks)
    forks=$((forks + ${nf:-0}))
done

# --- report -------------------------------------------------------------------
"$PY" - "$raw" "$keys" "$RUNS" "$R" "$acks_flag" "$forks" \
    "$((SECONDS - t_start))" <<'EOF'
import sys
from statistics import median

raw, keysf, runs, r = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
acks_flag, forks, elapsed = sys.argv[5] == "1", sys.argv[6], int(sys.argv[7])
rows = {}   # (mode, test, p) -> srv -> [(rps, p50, p99)]
nreq = {}   # p -> requests per test per run
modes, pipes = [], []
for line in open(raw):
    mode, srv, test, p, run, n, rps, p50, p99 = line.rstrip("\n").split("\t")
    p = int(p)
    nreq[p] = int(n)
    if mode not in modes:
        modes.append(mode)
    if p not in pipes:
        pipes.append(p)
    key = (mode, test, p)
    rows.setdefault(key, {"partkv": [], "redis": []})
    rows[key][srv].append((float(rps), float(p50), float(p99)))
keys = {}
for line in open(keysf):
    mode, srv, k = line.rstrip("\n").split("\t")
    keys[(mode, srv)] = k

def med(key, srv, i):
    return median(x[i] for x in rows[key][srv])

def ratio(a, b):
    return a / b if b else float("inf")

def both(mode, p, srv):  # SET+GET req/s: total requests over total time
    return 2 / sum(1 / med((mode, t, p), srv, 0) for t in ("SET", "GET"))

def thr(mode):  # "P1 0.85x, P16 0.91x"
    return ", ".join(f"P{p} {ratio(both(mode, p, 'partkv'), both(mode, p, 'redis')):.2f}x"
                     for p in pipes)

note = "" if acks_flag else " (--acks NOT passed: cluster up lacks it)"
for mode in modes:
    print()
    print(f"acks={mode}{note}: partkv 3 nodes R={r} vs redis 3 masters + "
          f"3 async replicas, {'medians of %d runs' % runs if runs > 1 else '1 run'}, "
          "requests per test per run "
          + ", ".join(f"P{p} {nreq[p]}" for p in pipes))
    sub = (f"{'case':<11} | {'partkv':>10} {'redis':>10} {'ratio':>7} | "
           f"{'partkv':>7} {'redis':>7}")
    print(f"{'':<11} | {'requests/s':^29} | {'p99 ms':^15}")
    print(sub)
    print("-" * len(sub))
    for p in pipes:
        for test in ("SET", "GET"):
            key = (mode, test, p)
            a, b = med(key, "partkv", 0), med(key, "redis", 0)
            print(f"{test + ' P' + str(p):<11} | {a:>10.0f} {b:>10.0f} "
                  f"{ratio(a, b):>6.2f}x | {med(key, 'partkv', 2):>7.3f} "
                  f"{med(key, 'redis', 2):>7.3f}")
        a, b = both(mode, p, "partkv"), both(mode, p, "redis")
        print(f"{'SET+GET P' + str(p):<11} | {a:>10.0f} {b:>10.0f} {ratio(a, b):>6.2f}x |")
    print(f"keys per node at the end: partkv {keys.get((mode, 'partkv'), '?')}; "
          f"redis masters then replicas {keys.get((mode, 'redis'), '?')}")
    print(f"acks={mode}: SET+GET throughput ratio {thr(mode)}")

print()
print(f"summary, partkv/redis (R={r}{note}); p99 in ms, partkv vs redis:")
for mode in modes:
    p99 = "; ".join(
        f"P{p} SET {med((mode, 'SET', p), 'partkv', 2):.3f} vs "
        f"{med((mode, 'SET', p), 'redis', 2):.3f}, GET "
        f"{med((mode, 'GET', p), 'partkv', 2):.3f} vs "
        f"{med((mode, 'GET', p), 'redis', 2):.3f}" for p in pipes)
    print(f"  acks={mode:<6} SET+GET throughput ratio {thr(mode)}; p99 {p99}")
print(f"redis forked {forks} times (AOF rewrites, replica syncs)")
target = ("target: acks=quorum SET+GET throughput >= 0.70x the Redis Cluster "
          "baseline (goal >= 1.00x)")
if "quorum" in modes:
    print(f"{target}: measured {thr('quorum')}")
else:
    print(f"{target}: not measured (quorum not in REPL_ACKS)")
print(f"run time {elapsed} s")
EOF
