#!/usr/bin/env bash
# vs-redis-cluster: a 3-node partkv cluster beside a 3-master Redis Cluster
# under redis-benchmark --cluster, same machine, same run, comparable
# durability.
#
#   partkv cluster up --nodes 3 --replicas 1   (nodes at their default
#                                               --fsync everysec)
#   redis-server --cluster-enabled yes --appendonly yes
#                --appendfsync everysec --save ""     x 3, then
#   redis-cli --cluster create ... --cluster-replicas 0
#
# One copy of each key on both sides (partkv R=1, redis without replicas).
# Each system gets fresh temp dirs and free consecutive ports on 127.0.0.1
# (for redis, the bus ports +10000 are free too).  Each case is one
#   redis-benchmark --cluster -t set,get -c 50 -r 100000 -n $BENCH_N -P <p> --csv
# against the first node, at -P 1 and -P 16 (-n $BENCH_N_P16 there).  The
# two systems alternate within a case (the one going first swaps every run)
# and each case runs BENCH_RUNS times; the table shows medians.
#
# Run length: with --cluster, redis-benchmark runs one thread per master,
# and a thread whose clients have nothing left to send only notices the end
# at its next 250 ms throughput tick; the elapsed time behind req/s is
# rounded up by up to ~0.25 s.  At -P 16, 300000 requests take ~0.5 s and
# req/s snaps to 300000/0.50 or 300000/0.75, so -P 16 runs get 10x the
# requests by default (3M, a few seconds each).  The per-run lines show the
# seconds behind each req/s.
#
# Server CPU: utime+stime of the three server processes (all threads;
# /proc/PID/stat fields 14 and 15) read before and after each
# redis-benchmark run, summed, as CPU seconds per million requests.  One
# run does SET then GET, so CPU is only known for the pair: it is on the
# SET+GET row, over 2 x BENCH_N requests.  The idle `partkv cluster up`
# parent is not counted.  Work in forked children (redis AOF rewrites) is
# not in those fields; redis's fork count is printed at the end.
#
# The last line gives, at -P 1 and -P 16, the SET+GET throughput ratio
# (requests over total time), the CPU-per-request ratio, and the p99s.  It
# only prints; it does not fail on them.
#
# Environment: BENCH_N (requests per test per run at -P 1, default 300000),
# BENCH_N_P16 (at -P 16, default 10 x BENCH_N), BENCH_RUNS (default 3),
# PARTKV (binary, default build/partkv), REDIS_SERVER, REDIS_BENCHMARK,
# REDIS_CLI.  About 2 minutes with the defaults on 2 CPUs;
# BENCH_N=50000 BENCH_N_P16=500000 BENCH_RUNS=1 for a quick look.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${BENCH_N:-300000}
N16=${BENCH_N_P16:-$((${N//[^0-9]/0} * 10))}
RUNS=${BENCH_RUNS:-3}
PARTKV=${PARTKV:-$root/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
PY=/usr/bin/python3
TESTS=set,get
PIPES=(1 16)
CLIENTS=50
KEYSPACE=100000
NODES=3

PROG=vs-redis-cluster
# die, stop, free_ports, cpu_ticks, child_ticks, sum_ticks, rb_rows
source "$root/bench/lib.sh"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_N must be a positive integer, got '$N'"
[[ $N16 =~ ^[1-9][0-9]*$ ]] || die "BENCH_N_P16 must be a positive integer, got '$N16'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, got '$RUNS'"
need_tools "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI" "$PY"
TCK=$(getconf CLK_TCK)

work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-vs-redis-cluster.XXXXXX")
pk_pid=""   # partkv cluster up (stops its nodes on SIGTERM)
pk_nodes=() # its node processes
pk_ports=()
rd_pids=()
rd_ports=()

cleanup() {
    local pid
    stop "${pk_pid:-${pkc_pid:-}}" # pkc_pid: set before a failed start dies
    # Nodes outlive `cluster up` only if it died uncleanly.  Stop a node
    # only while its command line still names our temp dir, so a reused
    # PID is left alone.
    for pid in "${pk_nodes[@]}"; do
        if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$work/"; then
            stop "$pid"
        fi
    done
    for pid in "${rd_pids[@]}"; do stop "$pid"; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

info_field() { # PORT SECTION FIELD: one INFO value
    "$REDIS_CLI" -p "$1" info "$2" | tr -d '\r' |
        sed -n "s/^$3:\([^[:space:]]*\).*/\1/p"
}

cluster_state() { # PORT: cluster_state from CLUSTER INFO, empty if none
    "$REDIS_CLI" -p "$1" cluster info 2>/dev/null | tr -d '\r' |
        sed -n 's/^cluster_state:\([a-z]*\).*/\1/p'
}

keys_total() { # PORT...: keys summed over the nodes (INFO keyspace db0)
    local port t=0 k
    for port in "$@"; do
        k=$("$REDIS_CLI" -p "$port" info keyspace | tr -d '\r' |
            sed -n 's/^db0:keys=\([0-9]*\).*/\1/p')
        t=$((t + ${k:-0}))
    done
    echo "$t"
}

# --- start partkv ----------------------------------------------------------
pk_base=$(free_ports "$NODES") || die "no free ports for partkv"
# A later --base-port wins over the helper's 0: the run below the
# ephemeral range found above.
start_partkv_cluster "$NODES" "$work/partkv" \
    "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" --base-port "$pk_base"
pk_pid=$pkc_pid
pk_nodes=("${pkc_pids[@]}")
pk_ports=("${pkc_ports[@]}")
for ((i = 0; i < 100; i++)); do
    [[ $(cluster_state "${pk_ports[0]}") == ok ]] && break
    sleep 0.1
done
pk_state=$(cluster_state "${pk_ports[0]}")
[[ $pk_state == ok ]] || die "partkv cluster_state is '$pk_state', not ok"
pk_fsync=$(info_field "${pk_ports[0]}" persistence fsync)

# --- start redis -----------------------------------------------------------
rd_base=$(free_ports "$NODES" 10000) || die "no free ports for redis"
for ((i = 0; i < NODES; i++)); do
    port=$((rd_base + i))
    mkdir -p "$work/redis-$i"
    "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$work/redis-$i" \
        --cluster-enabled yes --cluster-config-file nodes.conf \
        --appendonly yes --appendfsync everysec --save "" \
        --daemonize no --logfile "" >"$work/redis-$i.log" 2>&1 &
    rd_pids+=($!)
    rd_ports+=("$port")
done
for ((i = 0; i < NODES; i++)); do
    wait_redis "${rd_ports[i]}" "${rd_pids[i]}" "$work/redis-$i.log"
done
addrs=()
for port in "${rd_ports[@]}"; do addrs+=("127.0.0.1:$port"); done
"$REDIS_CLI" --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
    >"$work/redis-create.log" 2>&1 ||
    { cat "$work/redis-create.log" >&2; die "redis-cli --cluster create failed"; }
# Every node must see the whole cluster before redis-benchmark asks one.
for ((i = 0; i < 300; i++)); do
    ok=1
    for port in "${rd_ports[@]}"; do
        [[ $(cluster_state "$port") == ok ]] || { ok=0; break; }
    done
    ((ok)) && break
    sleep 0.1
done
((ok)) || die "redis cluster_state did not become ok"

rd_version=$(info_field "${rd_ports[0]}" server redis_version)
echo "vs-redis-cluster: partkv $NODES nodes ports ${pk_ports[*]} pids ${pk_nodes[*]}" \
    "(cluster up pid $pk_pid, --replicas 1, fsync ${pk_fsync:-?});"
echo "vs-redis-cluster: redis $rd_version $NODES masters ports ${rd_ports[*]}" \
    "pids ${rd_pids[*]} (--cluster-replicas 0, appendonly everysec, no RDB)"
echo "vs-redis-cluster: -t $TESTS -c $CLIENTS -r $KEYSPACE --cluster," \
    "-n $N at -P 1, -n $N16 at -P 16," \
    "$RUNS runs per case, $(nproc) CPUs (redis-benchmark shares them)"

declare -A PIDS=([partkv]="${pk_nodes[*]}" [redis]="${rd_pids[*]}")
declare -A PORT=([partkv]=${pk_ports[0]} [redis]=${rd_ports[0]})
declare -A NREQ=([1]=$N [16]=$N16) # requests per test, by pipeline depth
raw=$work/raw.tsv
: >"$raw"

# one SYSTEM P RUN: appends "system test p run n rps p50 p99 cpu_s" per
# test to raw; cpu_s is the whole SET+GET run's, on every row.
one() {
    local srv=$1 p=$2 run=$3 n=${NREQ[$2]} pids c0 c1 out rows f
    read -ra pids <<<"${PIDS[$srv]}"
    c0=$(sum_ticks cpu_ticks "${pids[@]}")
    out=$(timeout 600 "$REDIS_BENCHMARK" -h 127.0.0.1 -p "${PORT[$srv]}" \
        --cluster -t "$TESTS" -n "$n" -r "$KEYSPACE" -c "$CLIENTS" -P "$p" \
        --csv 2>"$work/rb.err") ||
        { cat "$work/rb.err" >&2; die "redis-benchmark -P $p against $srv failed"; }
    c1=$(sum_ticks cpu_ticks "${pids[@]}")
    rows=$(rb_rows <<<"$out" | awk -F'\t' -v srv="$srv" -v p="$p" \
        -v run="$run" -v n="$n" -v tck="$TCK" -v dt=$((c1 - c0)) '
        { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.4f\n", srv, $1, p, run,
              n, $2, $3, $4, dt / tck }')
    [[ $(grep -c . <<<"$rows") == 2 ]] ||
        die "could not parse redis-benchmark output against $srv: $out"
    if [[ -s $work/rb.err ]]; then
        echo "  $srv P$p run $run: redis-benchmark stderr:" >&2
        sed 's/^/    /' "$work/rb.err" | head -5 >&2
    fi
    printf '%s\n' "$rows" >>"$raw"
    while IFS=$'\t' read -ra f; do
        printf '  %-6s P%-2s run %d: %-3s %10s req/s (%5.2f s)  p50 %s  p99 %s ms\n' \
            "$srv" "$p" "$run" "${f[1]}" "${f[5]}" \
            "$(awk -v n="$n" -v r="${f[5]}" 'BEGIN { print (r > 0 ? n / r : 0) }')" \
            "${f[6]}" "${f[7]}"
    done <<<"$rows"
    printf '  %-6s P%-2s run %d: cpu %ss over %d servers\n' "$srv" "$p" "$run" \
        "$(cut -f9 <<<"$rows" | head -1)" "${#pids[@]}"
}

for p in "${PIPES[@]}"; do
    for ((run = 1; run <= RUNS; run++)); do
        if ((run % 2)); then order=(partkv redis); else order=(redis partkv); fi
        for srv in "${order[@]}"; do
            one "$srv" "$p" "$run"
        done
    done
done

# Sanity: both systems stored keys on every node (SET replies are not
# checked by redis-benchmark).
pk_keys=$(keys_total "${pk_ports[@]}")
rd_keys=$(keys_total "${rd_ports[@]}")
forks=0
for port in "${rd_ports[@]}"; do
    nf=$(info_field "$port" stats total_forks)
    forks=$((forks + ${nf:-0}))
done
child_cpu=$(awk -v t="$(sum_ticks child_ticks "${rd_pids[@]}")" -v tck="$TCK" \
    'BEGIN { printf "%.2f", t / tck }')

# --- report ----------------------------------------------------------------
"$PY" - "$raw" "$RUNS" "$forks" "$child_cpu" "$pk_keys" "$rd_keys" <<'EOF'
import sys
from statistics import median

raw, runs, forks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
child_cpu = float(sys.argv[4])
pk_keys, rd_keys = int(sys.argv[5]), int(sys.argv[6])
rows = {}   # (test, p) -> srv -> [(rps, p50, p99)]
cpu = {}    # p -> srv -> {run: cpu_s of the SET+GET run}
nreq = {}   # p -> requests per test per run
order = []
pipes = []
for line in open(raw):
    srv, test, p, run, n, rps, p50, p99, c = line.rstrip("\n").split("\t")
    p = int(p)
    nreq[p] = int(n)
    key = (test, p)
    if key not in rows:
        rows[key] = {"partkv": [], "redis": []}
        order.append(key)
    if p not in cpu:
        cpu[p] = {"partkv": {}, "redis": {}}
        pipes.append(p)
    rows[key][srv].append((float(rps), float(p50), float(p99)))
    cpu[p][srv][run] = float(c)

def med(key, srv, i):
    return median(r[i] for r in rows[key][srv])

def ratio(a, b):
    return a / b if b else float("inf")

def cpu_per_m(p, srv):  # CPU seconds per million requests, SET+GET run
    return median(cpu[p][srv].values()) / (2 * nreq[p]) * 1e6

def both(p, srv):  # SET+GET req/s: total requests over total time
    return 2 / sum(1 / med((t, p), srv, 0) for t in ("SET", "GET"))

print()
per_run = ", ".join(f"P{p} {nreq[p]}" for p in pipes)
print(f"partkv cluster vs redis cluster: 3 nodes each, medians of {runs} runs, "
      f"requests per test per run {per_run}, 50 clients, 100000 random keys")
hdr = (f"{'case':<11} | {'requests/s':^29} | {'p50 ms':^15} | {'p99 ms':^15} | "
       f"{'CPU s / 1M requests':^23}")
sub = (f"{'':<11} | {'partkv':>10} {'redis':>10} {'ratio':>7} | "
       f"{'partkv':>7} {'redis':>7} | {'partkv':>7} {'redis':>7} | "
       f"{'partkv':>7} {'redis':>7} {'ratio':>7}")
print(hdr.rstrip())
print(sub)
print("-" * len(sub))
for p in pipes:
    for test in ("SET", "GET"):
        key = (test, p)
        a, b = med(key, "partkv", 0), med(key, "redis", 0)
        print(f"{test + ' P' + str(p):<11} | {a:>10.0f} {b:>10.0f} {ratio(a, b):>6.2f}x | "
              f"{med(key, 'partkv', 1):>7.3f} {med(key, 'redis', 1):>7.3f} | "
              f"{med(key, 'partkv', 2):>7.3f} {med(key, 'redis', 2):>7.3f} | "
              f"{'':>7} {'':>7} {'':>7}".rstrip())
    a, b = both(p, "partkv"), both(p, "redis")
    ca, cb = cpu_per_m(p, "partkv"), cpu_per_m(p, "redis")
    print(f"{'SET+GET P' + str(p):<11} | {a:>10.0f} {b:>10.0f} {ratio(a, b):>6.2f}x | "
          f"{'':>7} {'':>7} | {'':>7} {'':>7} | "
          f"{ca:>7.2f} {cb:>7.2f} {ratio(ca, cb):>6.2f}x")
print("ratio = partkv/redis; throughput: higher is better for partkv, "
      "CPU (summed over the 3 servers): lower is better")
print(f"keys stored at the end: partkv {pk_keys}, redis {rd_keys}")
total_req = sum(len(v["redis"]) * nreq[p] for (_, p), v in rows.items())
print(f"redis forked {forks} times (AOF rewrites); its reaped children used "
      f"{child_cpu:.2f} CPU s, {child_cpu / total_req * 1e6:.2f} s per 1M of all "
      "its requests, not in the table")

parts = []
for p in pipes:
    a, b = both(p, "partkv"), both(p, "redis")
    ca, cb = cpu_per_m(p, "partkv"), cpu_per_m(p, "redis")
    p99 = {t: (med((t, p), "partkv", 2), med((t, p), "redis", 2))
           for t in ("SET", "GET")}
    parts.append(f"P{p} {ratio(a, b):.2f}x ({a:.0f} vs {b:.0f} req/s, "
                 f"CPU {ratio(ca, cb):.2f}x, "
                 f"p99 SET {p99['SET'][0]:.3f} vs {p99['SET'][1]:.3f} ms, "
                 f"GET {p99['GET'][0]:.3f} vs {p99['GET'][1]:.3f} ms)")
print()
print("SET+GET cluster partkv/redis: throughput " + "; ".join(parts))
EOF
