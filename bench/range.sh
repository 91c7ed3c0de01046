#!/usr/bin/env bash
# bench/range.sh: the seeds' lesson on key-range partitioning, measured.
#
# Sensor readings are written in time order, as sensors send them, to a
# fresh 3-node cluster (R = 3, forward mode) for each of three layouts:
#
#   (a) range scheme, raw timestamps    sensor-reading:2026-11-30T12:00:00.000
#   (b) range scheme, compound keys     {sensor:N}:2026-11-30T12:00:00.000
#   (c) hash scheme, both key shapes    (md5 mod 48 partitions)
#
# The range clusters start pre-split (--presplit 6 --presplit-sample) from
# a sample of the keys of the day before, as a store that has been running
# for a while would be split.  Each case first loads that day (untimed),
# then times the load of the next day: writes/s, and each node's share of
# the new keys (DBSIZE on a node counts the keys of the partitions it
# leads, so its growth is the writes it led).  Then it times, median of
# BENCH_READS runs, reading one day back:
#
#   day, all sensors  (a) one PK.RANGE over the day's keys, page by page
#                     (b) one PK.RANGE per sensor, its day under its prefix
#                     (c) raw keys: SCAN MATCH on every node (a hash
#                         cannot keep a day together)
#   day, one sensor   (b) one PK.RANGE under {sensor:7}
#                     (c) one PK.RANGE under the {sensor:7} hash tag
#
# The client is four Python processes (redis-py, pipelines of 200, batches
# sent round robin to the three nodes, which forward), on the same two
# cores as the nodes, so absolute rates are the client's as much as the
# cluster's; the cases are compared under the same client.  The table is
# what README.md quotes.
#
# Environment: BENCH_READINGS (readings per day, default 30000),
# BENCH_SENSORS (default 20), BENCH_READS (default 5), PARTKV.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
PY=/usr/bin/python3
READINGS=${BENCH_READINGS:-30000}
SENSORS=${BENCH_SENSORS:-20}
READS=${BENCH_READS:-5}
PROG=range
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools "$PY"
"$PY" -c "import redis" 2>/dev/null || die "python3-redis is missing (make deps)"
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-range.XXXXXX")
cluster_pids=()

cleanup() {
    local pid
    stop "${pkc_pid:-}"
    for pid in "${cluster_pids[@]}"; do stop_ours "$pid" "$work/"; done
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# keys LAYOUT DAY: one key per line, the day's readings in time order.
keys() {
    "$PY" - "$1" "$2" "$READINGS" "$SENSORS" <<'EOF'
import sys
layout, day, n, sensors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
step = 86400000 // n
for i in range(n):
    ms = i * step
    ts = "2026-11-%02dT%02d:%02d:%02d.%03d" % (day, ms // 3600000, ms // 60000 % 60,
                                               ms // 1000 % 60, ms % 1000)
    if layout == "raw":
        print("sensor-reading:" + ts)
    else:
        print("{sensor:%d}:%s" % (i % sensors, ts))
EOF
}

results=$work/results
: >"$results"

# one CASE LAYOUT SCHEME-ARGS...: a fresh cluster, the two loads, the reads.
one() {
    local name=$1 layout=$2
    shift 2
    keys "$layout" 29 >"$work/$name.day29"
    keys "$layout" 30 >"$work/$name.day30"
    start_partkv_cluster 3 "$work/$name" "$secret" --replicas 3 "$@"
    cluster_pids+=("${pkc_pids[@]}")
    "$PY" - "$name" "$layout" "$SENSORS" "$READS" "$work/$name.day29" \
        "$work/$name.day30" "${pkc_ports[@]}" >>"$results" <<'EOF'
import multiprocessing, statistics, sys, time
import redis

LOADERS = 4

name, layout, sensors, reads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
day29 = open(sys.argv[5]).read().split()
day30 = open(sys.argv[6]).read().split()
ports = [int(p) for p in sys.argv[7:]]
nodes = [redis.Redis(port=p, socket_timeout=60) for p in ports]

def writer(keys, j):
    """Loader j of LOADERS: batches j, j + LOADERS, ... in time order."""
    conns = [redis.Redis(port=p, socket_timeout=60) for p in ports]
    for b in range(j * 200, len(keys), 200 * LOADERS):
        pipe = conns[(b // 200) % len(conns)].pipeline(transaction=False)
        for k in keys[b:b + 200]:
            pipe.set(k, "21.5")
        assert all(pipe.execute())

def load(keys):
    t0 = time.monotonic()
    procs = [multiprocessing.Process(target=writer, args=(keys, j))
             for j in range(LOADERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    return time.monotonic() - t0

def pk_range(r, lo, hi):
    n, start = 0, lo
    while True:
        cont, items = r.execute_command("PK.RANGE", start, hi, "LIMIT", 1000)
        n += len(items)
        if cont == b"":
            return n
        start = cont

def timed(fn):
    got, secs = None, []
    for _ in range(reads):
        t0 = time.monotonic()
        got = fn()
        secs.append(time.monotonic() - t0)
    return got, statistics.median(secs) * 1000

load(day29)
before = [r.dbsize() for r in nodes]
secs = load(day30)
share = [r.dbsize() - b for r, b in zip(nodes, before)]
total = sum(share)
assert total == len(day30), (share, len(day30))
rate = len(day30) / secs

r = nodes[0]
day_all = day_one = ("-", 0.0)
if layout == "raw" and name.startswith("range"):
    n, ms = timed(lambda: pk_range(r, "[sensor-reading:2026-11-29", "(sensor-reading:2026-11-30"))
    day_all = ("%d keys, 1 PK.RANGE" % n, ms)
elif layout == "compound":
    def all_sensors():
        return sum(pk_range(r, "[{sensor:%d}:2026-11-29" % s, "({sensor:%d}:2026-11-30" % s)
                   for s in range(sensors))
    n, ms = timed(all_sensors)
    day_all = ("%d keys, %d PK.RANGE" % (n, sensors), ms)
    n, ms = timed(lambda: pk_range(r, "[{sensor:7}:2026-11-29", "({sensor:7}:2026-11-30"))
    day_one = ("%d keys, 1 PK.RANGE" % n, ms)
else:  # hash scheme, raw keys: only a scan of every node finds a day
    def scan_all():
        return sum(1 for node in nodes
                   for _ in node.scan_iter(match="sensor-reading:2026-11-29*", count=1000))
    n, ms = timed(scan_all)
    day_all = ("%d keys, SCAN on 3 nodes" % n, ms)
print("\t".join([name, "%.0f" % rate, " ".join("%.0f%%" % (100 * s / total) for s in share),
                 day_all[0], "%.1f" % day_all[1], day_one[0], "%.1f" % day_one[1]]))
EOF
    stop "$pkc_pid"
    pkc_pid=""
}

range_sample() { # the day before, as the presplit sample
    keys "$1" 29 >"$work/sample.$1"
    echo "$work/sample.$1"
}

echo "range: $READINGS readings per day, $SENSORS sensors, 3 nodes, R = 3, reads: median of $READS"
machine_info
one "range-raw" raw --scheme range --presplit 6 --presplit-sample "$(range_sample raw)"
one "range-compound" compound --scheme range --presplit 6 --presplit-sample "$(range_sample compound)"
one "hash-raw" raw --scheme hash --partitions 48 --hash md5
one "hash-compound" compound --scheme hash --partitions 48 --hash md5

"$PY" - "$results" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print()
print("%-15s %9s  %-15s  %-28s %9s  %-20s %9s" % (
    "case", "writes/s", "node shares", "one day, all sensors", "ms", "one day, one sensor", "ms"))
print("-" * 116)
for r in rows:
    print("%-15s %9s  %-15s  %-28s %9s  %-20s %9s" % tuple(
        v if v not in ("0.0",) else "-" for v in r))
EOF
