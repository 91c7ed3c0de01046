#!/bin/sh
# redis-suite.sh: runs units of Redis 7.0.15's own test suite in
# external-server mode against a partkv node and against redis-server, and
# scores partkv on the tests redis-server itself passes.
#
# For each unit both servers are started fresh (ephemeral ports, a temp
# dir, stopped by PID), the harness runs once against each under
# `timeout`, and its [ok]/[err]/[exception]/[skip] lines are compared:
#
#   unit/type/list   redis 150  partkv 40  (26.7%)
#
# A test redis passes counts for partkv only if partkv reports [ok] for it;
# tests a unit never reached (an [exception] or a timeout aborts the rest
# of the unit) count as failed.  The tests redis passes and partkv fails go
# to build/redis-suite/failing.txt (unit, test name, first line of the
# error), the harness outputs to build/redis-suite/<unit>.{redis,partkv}.
#
# Tag exclusions: the harness itself skips external:skip (and
# singledb:skip with --singledb) in external mode; needs:debug (DEBUG is
# not served), needs:repl (Redis's replication stream: SYNC, REPLCONF) and
# needs:config-maxmemory (eviction) are excluded here because partkv has
# no such mechanism.  large-memory tests are skipped unless --large-memory.
#
# Environment:
#   REDIS_SUITE   the Redis source tree (default ../redis, then /work/redis)
#   REDIS_SERVER  redis-server binary (default: redis-server on PATH)
#   PARTKV        partkv binary (default build/partkv)
#   UNITS         units to run (default: the nine below)
#   UNIT_TIMEOUT  seconds per unit and server (default 600)
#   DURABLE=1     pass --durable: an exception fails its test only, and the
#                 unit goes on (a kinder, less strict score)
#   SUITE_ARGS    extra harness arguments (e.g. --ignore-encoding)
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/redis-suite
PARTKV=${PARTKV:-$ROOT/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
UNITS=${UNITS:-"unit/type/string unit/type/incr unit/type/hash unit/type/zset
unit/type/list unit/type/set unit/expire unit/keyspace unit/multi"}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
TAGS="-needs:debug -needs:repl -needs:config-maxmemory"

if [ -z "${REDIS_SUITE:-}" ]; then
    REDIS_SUITE=$ROOT/../redis
    [ -f "$REDIS_SUITE/tests/test_helper.tcl" ] || REDIS_SUITE=/work/redis
fi
if [ ! -f "$REDIS_SUITE/tests/test_helper.tcl" ]; then
    echo "redis-suite: no Redis test suite at $REDIS_SUITE (or ../redis)."
    echo "  get it: git clone --depth 1 --branch 7.0.15" \
        "https://github.com/redis/redis ../redis"
    echo "  (or set REDIS_SUITE=path)"
    echo "redis-suite: skipped"
    exit 0
fi
for need in tclsh timeout /usr/bin/python3; do
    if ! command -v "$need" >/dev/null 2>&1; then
        echo "redis-suite: $need not found; skipped"
        exit 0
    fi
done
if [ -z "$REDIS_SERVER" ] || [ ! -x "$REDIS_SERVER" ]; then
    echo "redis-suite: redis-server not found (set REDIS_SERVER); skipped"
    exit 0
fi
if [ ! -x "$PARTKV" ]; then
    echo "redis-suite: $PARTKV not built (make first)" >&2
    exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/redis-suite.XXXXXX")
SRV_PID=
stop_server() {
    if [ -n "$SRV_PID" ]; then
        kill "$SRV_PID" 2>/dev/null
        i=0
        while kill -0 "$SRV_PID" 2>/dev/null && [ $i -lt 50 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -9 "$SRV_PID" 2>/dev/null
        wait "$SRV_PID" 2>/dev/null
        SRV_PID=
    fi
}
trap 'stop_server; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

free_port() {
    /usr/bin/python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server partkv|redis DIR: sets SRV_PID and SRV_PORT, or returns 1.
start_server() {
    rm -rf "$2"
    mkdir -p "$2"
    if [ "$1" = partkv ]; then
        # The file exists before the node starts: sed below may run
        # before the background shell has opened it.
        : >"$2/stdout"
        "$PARTKV" server --port 0 --dir "$2" >>"$2/stdout" 2>"$2/stderr" &
        SRV_PID=$!
        i=0
        while [ $i -lt 100 ]; do
            SRV_PORT=$(sed -n 's/^partkv: ready on [^:]*:\([0-9]*\) .*/\1/p' \
                "$2/stdout")
            [ -n "$SRV_PORT" ] && return 0
            kill -0 "$SRV_PID" 2>/dev/null || break
            sleep 0.1
            i=$((i + 1))
        done
    else
        SRV_PORT=$(free_port)
        "$REDIS_SERVER" --port "$SRV_PORT" --bind 127.0.0.1 --save "" \
            --appendonly no --dir "$2" --logfile "$2/log" &
        SRV_PID=$!
        i=0
        while [ $i -lt 100 ]; do
            if /usr/bin/python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' \
                "$SRV_PORT" 2>/dev/null; then
                return 0
            fi
            kill -0 "$SRV_PID" 2>/dev/null || break
            sleep 0.1
            i=$((i + 1))
        done
    fi
    echo "redis-suite: $1 did not start (see $2)" >&2
    stop_server
    return 1
}

# run_unit partkv|redis UNIT OUTFILE
run_unit() {
    if ! start_server "$1" "$TMP/$1"; then
        echo "[exception]: $1 server did not start" >"$3"
        return
    fi
    durable=
    [ "${DURABLE:-0}" = 1 ] && durable=--durable
    # The harness listens for its test client on a port below --baseport
    # (21079.. by default); other runs on this machine may hold those, so
    # each run takes a random range, and another one if that was taken.
    for try in 1 2 3; do
        bport=$(/usr/bin/python3 -c 'import random
print(random.randrange(20000, 40000))')
        # shellcheck disable=SC2086 # SUITE_ARGS is a word list on purpose
        (cd "$REDIS_SUITE" && timeout -k 10 "$UNIT_TIMEOUT" tclsh \
            tests/test_helper.tcl --host 127.0.0.1 --port "$SRV_PORT" \
            --singledb --single "$2" --clients 1 --timeout 120 \
            --baseport "$bport" --tags "$TAGS" $durable \
            ${SUITE_ARGS:-}) >"$3" 2>&1
        rc=$?
        grep -q "^couldn't open socket" "$3" || break
    done
    [ $rc -eq 124 ] && echo "[exception]: unit timed out after" \
        "${UNIT_TIMEOUT}s" >>"$3"
    if ! kill -0 "$SRV_PID" 2>/dev/null; then
        echo "[exception]: the $1 server died during the unit" >>"$3"
        cat "$TMP/$1/stderr" >>"$3" 2>/dev/null
    fi
    stop_server
}

mkdir -p "$OUT"
: >"$OUT/results.tsv"
for unit in $UNITS; do
    base=$(echo "$unit" | tr / _)
    echo "redis-suite: $unit ..." >&2
    run_unit redis "$unit" "$OUT/$base.redis"
    run_unit partkv "$unit" "$OUT/$base.partkv"
    printf '%s\t%s\t%s\n' "$unit" "$OUT/$base.redis" "$OUT/$base.partkv" \
        >>"$OUT/results.tsv"
done
exec /usr/bin/python3 "$ROOT/scripts/redis-suite-score.py" \
    "$OUT/results.tsv" "$OUT/failing.txt"
