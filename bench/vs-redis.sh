#!/usr/bin/env bash
# vs-redis: partkv beside redis-server 7 under redis-benchmark, same machine,
# same run, comparable durability.
#
#   partkv server --fsync everysec
#   redis-server  --appendonly yes --appendfsync everysec --save ""
#
# Every run of every case starts a fresh pair of servers, each in an
# empty temp dir on a free port of 127.0.0.1, and stops them after it, so
# that the runs whose median the table shows are independent: no run
# inherits keys, lists grown by earlier runs or, in partkv, the free pages
# LMDB keeps after a large delete (a free list of ~20k pages, left by
# DEL of a list of millions of elements, made later writes ~25% slower in
# one experiment: LMDB reuses its oldest free pages first, so COW copies
# land on cold pages).  Cases are
# SET, GET, INCR, HSET, ZADD, LPUSH, LPOP, SADD, SPOP, LRANGE_100 at -P 1
# and -P 16, each with
#   redis-benchmark -c 50 -r 100000 -n $BENCH_N -P <p> -t <test> --csv
# and MULTI (MULTI, SET, INCR, EXEC as one request), which redis-benchmark
# cannot send, with build/bench/mload at the same -c -r -n -P.  Before each
# GET run an untimed SET run writes the keys it reads; before each LPOP
# and SPOP run the key it pops (mylist, myset) is filled with BENCH_N
# elements (redis-cli --pipe, 1000 per RPUSH / SADD), so every run pops
# from a full key.
# The two servers alternate within a case (the one going first swaps every
# run) and each case runs BENCH_RUNS times; the table shows medians.
#
# Server CPU: utime+stime of the whole server process (all threads;
# /proc/PID/stat fields 14 and 15, in CLK_TCK ticks) read before and after
# each redis-benchmark run, as CPU seconds per million requests.  Work done
# in forked children (redis AOF rewrites) is not in those fields; the
# number of redis forks is printed at the end.
#
# The last line sums SET and GET (requests over total time, CPU over total
# requests) at -P 1 and -P 16 and prints partkv/redis ratios beside the
# acceptance targets (throughput >= 0.80x, CPU per request <= 1.25x).  It
# only prints; it does not fail on them.
#
# Environment: BENCH_N (requests per run, default 300000), BENCH_RUNS
# (default 3), BENCH_TESTS (the cases, space separated, default all of
# the above), PARTKV (binary, default build/partkv), REDIS_SERVER,
# REDIS_BENCHMARK, REDIS_CLI.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${BENCH_N:-300000}
RUNS=${BENCH_RUNS:-3}
PARTKV=${PARTKV:-$root/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
PY=/usr/bin/python3
MLOAD=${MLOAD:-$root/build/bench/mload}
read -ra TESTS <<<"${BENCH_TESTS:-SET GET INCR HSET ZADD LPUSH LPOP SADD SPOP LRANGE_100 MULTI}"
PIPES=(1 16)
CLIENTS=50
KEYSPACE=100000

PROG=vs-redis
# die, stop, free_port, wait_redis, cpu_ticks, child_ticks, rb_rows
source "$root/bench/lib.sh"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_N must be a positive integer, got '$N'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, got '$RUNS'"
need_tools "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI" "$PY"
[[ -x $MLOAD ]] || die "$MLOAD not built (make bench builds it)"
TCK=$(getconf CLK_TCK)

work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-vs-redis.XXXXXX")
pk_pid=""
rd_pid=""

cleanup() {
    stop "$pk_pid"
    stop "$rd_pid"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forks=0
child=0 # redis's reaped children, CLK_TCK ticks
declare -A PID PORT

# start_pair: a fresh partkv and a fresh redis, each in an empty directory
start_pair() {
    rm -rf "$work/partkv" "$work/redis" "$work/partkv.out" "$work/partkv.err"
    mkdir -p "$work/partkv" "$work/redis"
    start_partkv_node "$work/partkv"
    rd_port=$(free_port)
    "$REDIS_SERVER" --port "$rd_port" --bind 127.0.0.1 --dir "$work/redis" \
        --appendonly yes --appendfsync everysec --save "" \
        --daemonize no --logfile "" >"$work/redis.log" 2>&1 &
    rd_pid=$!
    wait_redis "$rd_port" "$rd_pid" "$work/redis.log"
    PID=([partkv]=$pk_pid [redis]=$rd_pid)
    PORT=([partkv]=$pk_port [redis]=$rd_port)
}

# stop_pair: counts redis's AOF rewrite forks and their CPU, stops both
stop_pair() {
    local f
    f=$("$REDIS_CLI" -p "$rd_port" info stats |
        tr -d '\r' | sed -n 's/^total_forks:\([0-9]*\).*/\1/p')
    forks=$((forks + ${f:-0}))
    child=$((child + $(child_ticks "$rd_pid")))
    stop "$pk_pid"
    stop "$rd_pid"
    pk_pid="" rd_pid=""
}

start_pair
rd_version=$("$REDIS_CLI" -p "$rd_port" info server |
    sed -n 's/^redis_version:\([^[:space:]]*\).*/\1/p')
stop_pair
echo "vs-redis: partkv (--fsync everysec) and redis $rd_version" \
    "(appendonly everysec, no RDB), a fresh pair for every run"
echo "vs-redis: -c $CLIENTS -r $KEYSPACE -n $N, $RUNS runs per case," \
    "$(nproc) CPUs (redis-benchmark shares them)"
raw=$work/raw.tsv
: >"$raw"

# one SERVER TEST P RUN: appends "server test p run rps p50 p99 cpu_s" to raw
one() {
    local srv=$1 test=$2 p=$3 run=$4 pid=${PID[$1]} c0 c1 out line
    local tool=("$REDIS_BENCHMARK" -t "$test" --csv)
    [[ $test == MULTI ]] && tool=("$MLOAD")
    c0=$(cpu_ticks "$pid")
    out=$(timeout 600 "${tool[@]}" -h 127.0.0.1 -p "${PORT[$srv]}" \
        -c "$CLIENTS" -r "$KEYSPACE" -n "$N" -P "$p") ||
        die "${tool[0]##*/} $test -P $p against $srv failed"
    c1=$(cpu_ticks "$pid")
    line=$(rb_rows <<<"$out" | awk -F'\t' -v srv="$srv" -v p="$p" \
        -v run="$run" -v tck="$TCK" -v dt=$((c1 - c0)) '
        { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.4f\n", srv, $1, p, run,
              $2, $3, $4, dt / tck }')
    [[ -n $line ]] || die "could not parse redis-benchmark output: $out"
    printf '%s\n' "$line" >>"$raw"
    local f
    IFS=$'\t' read -ra f <<<"$line"
    printf '  %-6s %-4s P%-2s run %d: %10s req/s  p50 %s  p99 %s ms  cpu %ss\n' \
        "$srv" "$test" "$p" "$run" "${f[4]}" "${f[5]}" "${f[6]}" "${f[7]}"
}

# fill SERVER TEST: for LPOP and SPOP, the key the test pops gets N
# elements e:0 .. e:N-1; for GET, SET writes the keys it reads
fill() {
    local srv=$1 key cmd
    case $2 in
    LPOP) key=mylist cmd=RPUSH ;;
    SPOP) key=myset cmd=SADD ;;
    GET)
        "$REDIS_BENCHMARK" -h 127.0.0.1 -p "${PORT[$srv]}" -t set -q \
            -c "$CLIENTS" -r "$KEYSPACE" -n "$N" -P 16 >/dev/null ||
            die "filling keys for GET on $srv failed"
        return 0
        ;;
    *) return 0 ;;
    esac
    awk -v n="$N" -v key="$key" -v cmd="$cmd" 'BEGIN {
        for (i = 0; i < n; i += 1000) {
            m = n - i < 1000 ? n - i : 1000
            printf "*%d\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", m + 2,
                length(cmd), cmd, length(key), key
            for (j = i; j < i + m; j++)
                printf "$%d\r\ne:%d\r\n", length("e:" j), j
        } }' | "$REDIS_CLI" -p "${PORT[$srv]}" --pipe >/dev/null ||
        die "filling $key on $srv failed"
}

for p in "${PIPES[@]}"; do
    for test in "${TESTS[@]}"; do
        for ((run = 1; run <= RUNS; run++)); do
            if ((run % 2)); then order=(partkv redis); else order=(redis partkv); fi
            start_pair
            for srv in "${order[@]}"; do
                fill "$srv" "$test"
                one "$srv" "$test" "$p" "$run"
            done
            stop_pair
        done
    done
done

child_cpu=$(awk -v t="$child" -v tck="$TCK" 'BEGIN { printf "%.2f", t / tck }')

# --- report ----------------------------------------------------------------
"$PY" - "$raw" "$N" "$RUNS" "$forks" "$child_cpu" <<'EOF'
import sys
from statistics import median

raw, n, runs, forks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
child_cpu = float(sys.argv[5])
rows = {}
order = []
for line in open(raw):
    srv, test, p, run, rps, p50, p99, cpu = line.split("\t")
    key = (test, int(p))
    if key not in rows:
        rows[key] = {"partkv": [], "redis": []}
        order.append(key)
    rows[key][srv].append((float(rps), float(p50), float(p99), float(cpu)))

def med(key, srv, i):
    return median(r[i] for r in rows[key][srv])

def cpu_per_m(key, srv):  # CPU seconds per million requests
    return med(key, srv, 3) / n * 1e6

def ratio(a, b):
    return a / b if b else float("inf")

print()
print(f"partkv vs redis: medians of {runs} runs, {n} requests per run, "
      "50 clients, 100000 random keys")
hdr = (f"{'case':<9} | {'requests/s':^29} | {'p50 ms':^15} | {'p99 ms':^15} | "
       f"{'CPU s / 1M requests':^23}")
sub = (f"{'':<9} | {'partkv':>10} {'redis':>10} {'ratio':>7} | "
       f"{'partkv':>7} {'redis':>7} | {'partkv':>7} {'redis':>7} | "
       f"{'partkv':>7} {'redis':>7} {'ratio':>7}")
print(hdr.rstrip())
print(sub)
print("-" * len(sub))
for key in order:
    test, p = key
    a, b = med(key, "partkv", 0), med(key, "redis", 0)
    ca, cb = cpu_per_m(key, "partkv"), cpu_per_m(key, "redis")
    print(f"{test + ' P' + str(p):<9} | {a:>10.0f} {b:>10.0f} {ratio(a, b):>6.2f}x | "
          f"{med(key, 'partkv', 1):>7.3f} {med(key, 'redis', 1):>7.3f} | "
          f"{med(key, 'partkv', 2):>7.3f} {med(key, 'redis', 2):>7.3f} | "
          f"{ca:>7.2f} {cb:>7.2f} {ratio(ca, cb):>6.2f}x")
print("ratio = partkv/redis; throughput: higher is better for partkv, "
      "CPU: lower is better")
total_req = sum(len(v["redis"]) for v in rows.values()) * n
print(f"redis forked {forks} times (AOF rewrites); its reaped children used "
      f"{child_cpu:.2f} CPU s, {child_cpu / total_req * 1e6:.2f} s per 1M of all "
      "its requests, not in the table")

# SET+GET combined: both ran n requests, so combined req/s is the total
# requests over the total time, and CPU per request is total CPU over total
# requests.
parts = []
cparts = []
for p in sorted({p for _, p in order}):
    keys = [("SET", p), ("GET", p)]
    if not all(k in rows for k in keys):
        continue
    tput = {}
    cpu = {}
    for srv in ("partkv", "redis"):
        tput[srv] = 2 * n / sum(n / med(k, srv, 0) for k in keys)
        cpu[srv] = sum(med(k, srv, 3) for k in keys) / (2 * n)
    parts.append(f"P{p} {ratio(tput['partkv'], tput['redis']):.2f}x "
                 f"({tput['partkv']:.0f} vs {tput['redis']:.0f} req/s)")
    cparts.append(f"P{p} {ratio(cpu['partkv'], cpu['redis']):.2f}x "
                  f"({cpu['partkv'] * 1e6:.2f} vs {cpu['redis'] * 1e6:.2f} s/1M)")
print()
print("SET+GET partkv/redis: throughput " + ", ".join(parts) +
      " [target >= 0.80x]; server CPU per request " + ", ".join(cparts) +
      " [target <= 1.25x]")
EOF
