#!/usr/bin/env bash
# tls: partkv over TLS beside redis-server 7 over TLS, same machine, same
# run, under redis-benchmark --tls.
#
#   partkv server --fsync everysec --tls-port P ... --tls-auth-clients no
#   redis-server  --appendonly yes --appendfsync everysec --save ""
#                 --port 0 --tls-port P ... --tls-auth-clients no
#
# One CA and one server certificate (EC P-256, made with openssl) serve
# both.  Every run starts a fresh pair of servers in empty temp dirs; the
# two alternate within a run (the one going first swaps every run); each
# case (SET and GET at -P 1 and -P 16, -c 50 -r 100000 -n BENCH_N) runs
# BENCH_RUNS times and the table shows medians, the ratio partkv/redis,
# and the spread of the ratios.  The target (issue 19) is >= 0.9x; the
# script only prints it.
#
# Environment: BENCH_N (default 200000), BENCH_RUNS (default 3), PARTKV,
# REDIS_SERVER, REDIS_BENCHMARK, REDIS_CLI.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${BENCH_N:-200000}
RUNS=${BENCH_RUNS:-3}
PARTKV=${PARTKV:-$root/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
PY=/usr/bin/python3
CLIENTS=50
KEYSPACE=100000

PROG=tls
source "$root/bench/lib.sh"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_N must be a positive integer, got '$N'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, got '$RUNS'"
need_tools "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI" "$PY" openssl

work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-tls.XXXXXX")
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

# --- certificates ------------------------------------------------------------
(
    cd "$work"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -days 2 -keyout ca.key -out ca.crt -subj /CN=bench-ca
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout srv.key -out srv.csr -subj /CN=localhost
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >srv.ext
    openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
        -days 2 -out srv.crt -extfile srv.ext
) >/dev/null 2>&1 || die "openssl could not make the certificates"
TLS_FILES=(--tls-cert-file "$work/srv.crt" --tls-key-file "$work/srv.key"
    --tls-ca-cert-file "$work/ca.crt" --tls-auth-clients no)

declare -A PORT

start_pair() {
    local i
    rm -rf "$work/partkv" "$work/redis"
    mkdir -p "$work/partkv" "$work/redis"
    start_partkv_node "$work/partkv" --tls-port 0 "${TLS_FILES[@]}"
    PORT[partkv]=""
    for ((i = 0; i < 50; i++)); do
        PORT[partkv]=$(sed -n 's/^partkv: tls on [^ ]*:\([0-9]*\)$/\1/p' \
            "$work/partkv.out")
        [[ -n ${PORT[partkv]} ]] && break
        sleep 0.1
    done
    [[ -n ${PORT[partkv]} ]] || die "partkv printed no TLS port"
    PORT[redis]=$(free_port)
    "$REDIS_SERVER" --port 0 --tls-port "${PORT[redis]}" "${TLS_FILES[@]}" \
        --bind 127.0.0.1 --dir "$work/redis" --appendonly yes \
        --appendfsync everysec --save "" --daemonize no --logfile "" \
        >"$work/redis.log" 2>&1 &
    rd_pid=$!
    for ((i = 0; i < 100; i++)); do
        "$REDIS_CLI" --tls --cacert "$work/ca.crt" -p "${PORT[redis]}" \
            ping 2>/dev/null | grep -q PONG && return 0
        kill -0 "$rd_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/redis.log" >&2
    die "redis-server with TLS did not start (built without TLS?)"
}

stop_pair() {
    stop "$pk_pid"
    stop "$rd_pid"
    pk_pid="" rd_pid=""
}

raw=$work/raw.tsv
: >"$raw"
rb() { # rb SERVER TEST P: redis-benchmark --tls, CSV rows
    timeout 600 "$REDIS_BENCHMARK" --tls --cacert "$work/ca.crt" \
        -h 127.0.0.1 -p "${PORT[$1]}" -c "$CLIENTS" -r "$KEYSPACE" -n "$N" \
        -P "$3" -t "$2" --csv
}

echo "tls: partkv (--fsync everysec) and redis $("$REDIS_SERVER" --version |
    sed -n 's/.*v=\([^ ]*\).*/\1/p') (appendonly everysec), both over TLS" \
    "(EC P-256, no client certificates)"
echo "tls: -c $CLIENTS -r $KEYSPACE -n $N, $RUNS runs, $(nproc) CPUs" \
    "(redis-benchmark shares them)"
for p in 1 16; do
    for ((run = 1; run <= RUNS; run++)); do
        if ((run % 2)); then order=(partkv redis); else order=(redis partkv); fi
        start_pair
        for srv in "${order[@]}"; do
            out=$(rb "$srv" set,get "$p") || die "redis-benchmark against $srv failed"
            rb_rows <<<"$out" | while IFS=$'\t' read -r test rps p50 p99; do
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$srv" "$test" "$p" "$run" \
                    "$rps" "$p99" >>"$raw"
                printf '  %-6s %-4s P%-2s run %d: %10s req/s  p99 %s ms\n' \
                    "$srv" "$test" "$p" "$run" "$rps" "$p99"
            done
        done
        stop_pair
    done
done

"$PY" - "$raw" <<'EOF'
import sys
from statistics import median

rows = {}
for line in open(sys.argv[1]):
    srv, test, p, run, rps, p99 = line.rstrip("\n").split("\t")
    rows.setdefault((test, int(p)), {}).setdefault(int(run), {})[srv] = \
        float(rps)
print("%-5s %-4s %12s %12s %7s  %s" % ("test", "P", "partkv/s", "redis/s",
                                        "ratio", "ratio per run"))
for (test, p), runs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    pk = median(r["partkv"] for r in runs.values())
    rd = median(r["redis"] for r in runs.values())
    per = [r["partkv"] / r["redis"] for _, r in sorted(runs.items())]
    print("%-5s P%-3d %12.0f %12.0f %6.2fx  %s (target >= 0.9x)" % (
        test, p, pk, rd, pk / rd, " ".join("%.2f" % x for x in per)))
EOF
