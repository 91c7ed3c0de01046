#!/usr/bin/env bash
# rebalance: partition moves on loopback -- copy throughput, throttle
# accuracy, and client latency while a rebalance runs -- each beside an
# anchor measured in the same run.
#
# Every run starts a fresh `partkv cluster up --nodes 4 --replicas 1` (one
# copy of each key, nodes at their default --fsync everysec) in a temp dir,
# loads data into a few slots of node 3, and drains node 3 (`partkv node
# drain`): the plan then moves its quarter of the 16384 slots (4096
# partitions, spread over nodes 0-2, at most --max-concurrent 1024 in
# flight by default).  Keys are "{tag}:N" whose hash tag picks the slot,
# with REBAL_VALUE-byte incompressible values, fed by redis-cli --pipe to
# node 3.  (A drain, not a join: a drain must move every loaded slot,
# while a join's plan chooses which slots move by their sizes.)  The plan's
# JSON "totals.bytes" is the byte count.  The nodes copy; the script
# samples PK.MOVES on node 3 every 100 ms (server-side "bytes" and
# "elapsed_ms" per session).
#
# 1. Unthrottled throughput: REBAL_MB (300) MB in REBAL_SLOTS (4) slots
#    spread over node 3's range; `rebalance apply --rate unlimited`.
#      end-to-end  plan bytes / wall time from just before apply to its
#                  exit (all 4096 moves, most of them empty partitions);
#      apply avg   the average apply prints on its "done:" line;
#      copy phase  bytes of the sessions that carried the data / the union
#                  of their copy windows (session start to the end of its
#                  snapshot copy, the end interpolated between samples).
#    Anchor: redis-server 7 (no persistence, repl-diskless-sync yes with
#    delay 0) holding the same keys and values; `redis-cli --rdb /dev/null`
#    (Redis's full-sync transfer: fork, RDB over the socket), its bytes
#    over its wall time.  Target: end-to-end >= 100 MB/s.
# 2. Throttle accuracy: for each rate R in REBAL_RATES (MB/s, "10 25"),
#    R x REBAL_THROTTLE_S (2.5) seconds of data in one slot of node 3, for
#    each placement in REBAL_THROTTLE_PLACES ("first boundary"): the first
#    move in the driver's order (sorted by target, then partition), whose
#    batch of 1024 goes to one target, or the last move to the first target,
#    whose batch also starts moves to the next target;
#    `rebalance apply --rate R`.  Achieved rate of the data session: its
#    bytes / its copy window (as above), and the steady slope between its
#    first and last copying samples; end-to-end bytes / apply wall time is
#    printed beside.  Target: copy-window rate within +-10 % of R.
# 3. Latency: REBAL_LAT_MB (300) MB in REBAL_LAT_SLOTS (3) slots of node 3,
#    redis-benchmark -c 50 -r 100000 -n REBAL_LAT_N (200000), SET then GET,
#    100-byte values, without --cluster, against node 0 (a target of the
#    moves, and the coordinator's host) on keys of one slot node 0 leads,
#    which does NOT move (redis-benchmark --cluster sends to the first slot
#    of each master; node 3's moves away and its clients would then only
#    collect MOVED errors).  The keyspace is written once before.  Anchor:
#    the same benchmark with no rebalance; then again while `rebalance
#    apply` runs at the default rate (50MB/s), started REBAL_LAT_DELAY
#    (0.5) s before the benchmark.  The share of the benchmark's wall time
#    during which apply was running is printed.  Target: p99 during / p99
#    without <= 2x.
#
# Medians of BENCH_RUNS (3) runs; one line per run as well.  Prints only;
# never fails on a target.  A copy of the partkv binary is taken at start,
# so a rebuild while the script runs does not change what it measures.
#
# Environment: BENCH_RUNS, REBAL_MB, REBAL_SLOTS, REBAL_VALUE (10000),
# REBAL_RATES, REBAL_THROTTLE_S, REBAL_THROTTLE_PLACES, REBAL_LAT_MB,
# REBAL_LAT_SLOTS, REBAL_LAT_N, REBAL_LAT_DELAY, REBAL_LAT_NODE (0),
# REBAL_LAT_RATE (empty: apply's default),
# REBAL_FSYNC (always|everysec|no; empty: default), REBAL_PARTS ("thru
# throttle latency": which parts run), PARTKV, REDIS_SERVER, REDIS_CLI,
# REDIS_BENCHMARK.  About 4 minutes with the defaults on 2 CPUs; for a
# quick look: BENCH_RUNS=1 REBAL_MB=100 REBAL_LAT_MB=100 REBAL_LAT_N=50000.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${BENCH_RUNS:-3}
MB=${REBAL_MB:-300}
SLOTS=${REBAL_SLOTS:-4}
VALUE=${REBAL_VALUE:-10000}
RATES=${REBAL_RATES:-10 25}
PLACES=${REBAL_THROTTLE_PLACES:-first boundary}
THR_S=${REBAL_THROTTLE_S:-2.5}
LAT_MB=${REBAL_LAT_MB:-300}
LAT_NODE=${REBAL_LAT_NODE:-0} # the node the benchmark talks to (0..2)
LAT_RATE=${REBAL_LAT_RATE:-}  # --rate of that rebalance; empty: the default
FSYNC=${REBAL_FSYNC:-}        # --fsync of every node; empty: the default
LAT_SLOTS=${REBAL_LAT_SLOTS:-3}
LAT_N=${REBAL_LAT_N:-200000}
LAT_DELAY=${REBAL_LAT_DELAY:-0.5}
PARTS=${REBAL_PARTS:-thru throttle latency}
PARTKV_SRC=${PARTKV:-$root/build/partkv}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
PY=/usr/bin/python3
NODES=4
CLIENTS=50
KEYSPACE=100000
SAMPLE_MS=100

PROG=rebalance
# die, stop, stop_ours, need_tools, rb_rows, machine_info,
# start_partkv_cluster, resp_sets, slot_tag, sample_moves
source "$root/bench/lib.sh"
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"; }
posnum() { [[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] || die "$1 must be a positive number, got '$2'"; }
posint BENCH_RUNS "$RUNS"
posint REBAL_MB "$MB"
posint REBAL_SLOTS "$SLOTS"
posint REBAL_VALUE "$VALUE"
posint REBAL_LAT_MB "$LAT_MB"
posint REBAL_LAT_SLOTS "$LAT_SLOTS"
posint REBAL_LAT_N "$LAT_N"
posnum REBAL_THROTTLE_S "$THR_S"
posnum REBAL_LAT_DELAY "$LAT_DELAY"
for r in $RATES; do posnum "a rate in REBAL_RATES" "$r"; done
for r in $PLACES; do
    [[ $r == first || $r == boundary ]] || die "REBAL_THROTTLE_PLACES: first or boundary, got '$r'"
done
PARTKV=$PARTKV_SRC
need_tools "$REDIS_SERVER" "$REDIS_CLI" "$REDIS_BENCHMARK" "$PY"

t_script=$EPOCHREALTIME
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-rebalance.XXXXXX")
c_pid=""    # partkv cluster up (stops its nodes on SIGTERM)
c_nodes=()  # its node PIDs
c_ports=()  # its node ports, node 0 first
rd_pid=""   # the redis-server anchor
s_pid=""    # the PK.MOVES sampler
ap_pid=""   # a background rebalance apply

cleanup() {
    local pid
    stop "$s_pid"
    stop "$ap_pid"
    stop "${c_pid:-${pkc_pid:-}}" # pkc_pid: set before a failed start dies
    # Nodes outlive `cluster up` only if it died uncleanly: stop a PID only
    # while its command line still names our temp dir.
    for pid in "${c_nodes[@]}"; do stop_ours "$pid" "$work/"; done
    stop "$rd_pid"
    rm -rf "$work"
}
own_partkv "$PARTKV_SRC" "$work"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

now() { echo "$EPOCHREALTIME"; }
fsub() { "$PY" -c "import sys; print('%.4f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }

# --- cluster per run -----------------------------------------------------------

# new_cluster NAME: a fresh 4-node cluster; sets c_pid, c_nodes, c_ports
# and c_slots (the slots node 3 leads, comma-separated).
new_cluster() {
    start_partkv_cluster "$NODES" "$work/$1" "$secret" ${FSYNC:+--fsync "$FSYNC"}
    c_pid=$pkc_pid
    c_nodes=("${pkc_pids[@]}")
    c_ports=("${pkc_ports[@]}")
    c_slots=$(own_slots "${c_ports[NODES - 1]}")
    [[ -n $c_slots ]] || die "node 3 leads no slot"
}

# own_slots PORT: the slots the node on PORT leads (CLUSTER NODES "myself").
own_slots() {
    "$REDIS_CLI" -p "$1" cluster nodes | "$PY" -c '
import sys
for line in sys.stdin:
    f = line.split()
    if len(f) > 2 and "myself" in f[2]:
        own = []
        for r in f[8:]:
            a, _, b = r.partition("-")
            own.extend(range(int(a), int(b or a) + 1))
        print(",".join(map(str, own)))'
}

# spread SLOTS COUNT: COUNT slots evenly spaced in the comma-separated
# SLOTS, the first one first.
spread() {
    "$PY" -c '
import sys
s = sys.argv[1].split(","); n = min(int(sys.argv[2]), len(s))
print(",".join(s[i * len(s) // n] for i in range(n)))' "$1" "$2"
}

# drain3: `partkv node drain` of node 3.
drain3() {
    "$PARTKV" node drain "127.0.0.1:${c_ports[NODES - 1]}" \
        --cluster "127.0.0.1:${c_ports[0]}" --secret "$secret" >"$work/drain.out" 2>&1 ||
        { cat "$work/drain.out" >&2; die "node drain failed"; }
}

end_cluster() {
    local pid
    stop "$c_pid"
    for pid in "${c_nodes[@]}"; do stop_ours "$pid" "$work/"; done
    rm -rf "${work:?}/$1"
    c_pid="" c_nodes=() c_ports=()
}

# plan OUT [ARG...]: `rebalance plan --json` into OUT; echoes the plan id.
plan() {
    local out=$1
    shift
    "$PARTKV" rebalance plan --cluster "127.0.0.1:${c_ports[0]}" \
        --secret "$secret" --json "$@" >"$out" 2>"$out.err" ||
        { cat "$out.err" >&2; die "rebalance plan failed"; }
    "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$out"
}

# load_slots PORT SLOTS KEYS SEED: KEYS keys of VALUE bytes per slot, into
# the node on PORT (their leader) with redis-cli --pipe.
load_slots() {
    local out
    out=$(resp_sets "$2" "$3" "$VALUE" "$4" | "$REDIS_CLI" -p "$1" --pipe 2>&1) ||
        { echo "$out" >&2; die "loading slots $2 into port $1 failed"; }
    grep -q 'errors: 0,' <<<"$out" || { echo "$out" >&2; die "errors loading slots $2"; }
}

# load3 SLOTS SLOT_BYTES SEED: SLOT_BYTES of values into each slot of
# SLOTS, on node 3.
load3() {
    local keys=$(($2 / VALUE))
    ((keys > 0)) || keys=1
    load_slots "${c_ports[NODES - 1]}" "$1" "$keys" "$3"
}

# check_plan PLAN SLOTS: dies unless every loaded slot is in the plan.
check_plan() {
    "$PY" - "$1" "$2" <<'EOF' || die "a loaded slot ($2) is not in the plan $1"
import json, sys
p = json.load(open(sys.argv[1]))
moving = {m["partition"] for m in p["moves"]}
want = {int(s) for s in sys.argv[2].split(",")}
sys.exit(0 if want <= moving else 1)
EOF
}

plan_field() { # PLAN EXPR: a value of the plan JSON, e.g. totals.bytes
    "$PY" - "$1" "$2" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)
EOF
}

start_sampler() { # OUT: PK.MOVES of node 3, the source
    sample_moves "$1" "$SAMPLE_MS" "${c_ports[NODES - 1]}" &
    s_pid=$!
}

stop_sampler() {
    stop "$s_pid"
    s_pid=""
}

# apply_timed ID OUT [ARG...]: runs `rebalance apply` in the foreground,
# its output in OUT; sets ap_t0/ap_t1 (Unix seconds just before and just
# after) and ap_avg (the MB/s of its "done:" line).
apply_timed() {
    local id=$1 out=$2 rc=0
    shift 2
    ap_t0=$(now)
    "$PARTKV" rebalance apply "$id" --cluster "127.0.0.1:${c_ports[0]}" \
        --secret "$secret" --yes "$@" >"$out" 2>&1 || rc=$?
    ap_t1=$(now)
    ((rc == 0)) || { tail -5 "$out" >&2; die "rebalance apply $id exited $rc"; }
    ap_avg=$(done_avg "$out")
}

# done_avg OUT: the average of apply's "done:" line, in MB/s.
done_avg() {
    "$PY" - "$1" <<'EOF'
import re, sys
u = {"B": 1e-6, "KB": 1e-3, "MB": 1, "GB": 1e3}
for line in open(sys.argv[1]):
    m = re.search(r"^done: .*\(average ([0-9.]+) (B|KB|MB|GB)/s\)", line)
    if m:
        print("%.2f" % (float(m.group(1)) * u[m.group(2)]))
        break
else:
    print("nan")
EOF
}

# sessions SAMPLES MIN_BYTES: the sessions in a sample_moves file that
# carried at least MIN_BYTES; prints one line
#   "N BYTES WINDOW_S RATE_MBS SLOPE_MBS"
# N: such sessions; BYTES: their bytes; WINDOW_S: the union of their copy
# windows (session start = sample time - elapsed_ms; copy end = the last
# "copying" sample plus the bytes still to copy at the session's slope);
# RATE = BYTES / WINDOW; SLOPE: bytes/s between the first and last
# "copying" samples (server clock), summed over the sessions.
sessions() {
    "$PY" - "$1" "$2" <<'EOF'
import sys
rank = {p: i for i, p in enumerate(
    ["begin", "copying", "catchup", "fenced", "final", "sync", "commit", "push"])}
cur, done = {}, []
for line in open(sys.argv[1]):
    t, port, target, state, b, el, n = line.split()
    if target == "-":
        for k in [k for k in cur if k[0] == port]:
            done.append(cur.pop(k))
        continue
    t, b, el = float(t), int(b), int(el)
    k = (port, target)
    s = cur.get(k)
    if s and (el < s["el"] or rank.get(state, 0) < rank.get(s["state"], 0)):
        done.append(cur.pop(k))
        s = None
    if s is None:
        s = cur[k] = {"start": t - el / 1000.0, "copy": [], "max": 0}
    s["el"], s["state"] = el, state
    s["max"] = max(s["max"], b)
    if state == "copying":
        s["copy"].append((el, b))
    elif rank.get(state, 0) > rank["copying"] and "after" not in s:
        s["after"] = el  # first sample past the snapshot copy
done.extend(cur.values())
minb = int(sys.argv[2])
wins, total, slope = [], 0, 0.0
for s in done:
    if s["max"] < minb:
        continue
    c = s["copy"]
    bf = s["max"]
    if len(c) >= 2 and c[-1][0] > c[0][0] and c[-1][1] > c[0][1]:
        sl = (c[-1][1] - c[0][1]) / ((c[-1][0] - c[0][0]) / 1000.0)
        end = c[-1][0] / 1000.0 + (bf - c[-1][1]) / sl
        slope += sl
    elif "after" in s:  # too short to have a slope: midway to the next sample
        end = ((c[-1][0] if c else 0) + s["after"]) / 2000.0
    else:
        continue
    wins.append((s["start"], s["start"] + end))
    total += bf
wins.sort()
span, cs, ce = 0.0, None, None
for a, b in wins:
    if ce is None or a > ce:
        if ce is not None:
            span += ce - cs
        cs, ce = a, b
    else:
        ce = max(ce, b)
if ce is not None:
    span += ce - cs
rate = total / span / 1e6 if span > 0 else float("nan")
print("%d %d %.4f %.2f %.2f" % (len(wins), total, span, rate, slope / 1e6))
EOF
}

mbs() { # BYTES SECONDS: MB/s
    "$PY" -c "import sys; print('%.2f' % (int(sys.argv[1]) / float(sys.argv[2]) / 1e6))" "$1" "$2"
}

raw=$work/raw.tsv # "part key run value..." rows for the report
: >"$raw"

machine_info
echo "rebalance: $PARTKV_SRC (a copy, built $(date -r "$PARTKV_SRC" '+%F %T'))," \
    "$NODES-node cluster up --replicas 1 per run, node 3 drained, $RUNS runs per case"

# --- 1. unthrottled throughput ------------------------------------------------
if [[ " $PARTS " == *" thru "* ]]; then
    echo
    echo "1. unthrottled move throughput: $MB MB in $SLOTS slots, $VALUE-byte values," \
        "rebalance apply --rate unlimited; anchor redis-cli --rdb /dev/null"
    slot_bytes=$((MB * 1000000 / SLOTS))
    rd_port=$(free_port)
    mkdir -p "$work/redis"
    "$REDIS_SERVER" --port "$rd_port" --bind 127.0.0.1 --dir "$work/redis" \
        --save "" --appendonly no --repl-diskless-sync yes \
        --repl-diskless-sync-delay 0 --daemonize no --logfile "" \
        >"$work/redis.log" 2>&1 &
    rd_pid=$!
    for ((i = 0; i < 100; i++)); do
        [[ $("$REDIS_CLI" -p "$rd_port" ping 2>/dev/null) == PONG ]] && break
        sleep 0.05
    done
    [[ $("$REDIS_CLI" -p "$rd_port" ping 2>/dev/null) == PONG ]] ||
        { cat "$work/redis.log" >&2; die "redis-server did not start"; }
    rd_loaded=0
    for ((run = 1; run <= RUNS; run++)); do
        new_cluster "t$run"
        loaded=$(spread "$c_slots" "$SLOTS")
        load3 "$loaded" "$slot_bytes" 100
        if ((!rd_loaded)); then # the same keys and values, once
            resp_sets "$loaded" $((slot_bytes / VALUE)) "$VALUE" 100 |
                "$REDIS_CLI" -p "$rd_port" --pipe >/dev/null
            rd_loaded=1
        fi
        drain3
        id=$(plan "$work/thru.json" --rate unlimited)
        check_plan "$work/thru.json" "$loaded"
        bytes=$(plan_field "$work/thru.json" totals.bytes)
        moves=$(plan_field "$work/thru.json" totals.moves)
        : >"$work/thru.samples"
        start_sampler "$work/thru.samples"
        apply_timed "$id" "$work/thru.apply" --rate unlimited
        stop_sampler
        wall=$(fsub "$ap_t1" "$ap_t0")
        e2e=$(mbs "$bytes" "$wall")
        read -r ns sbytes win crate slope < <(sessions "$work/thru.samples" 1000000)
        # anchor: Redis's full-sync transfer of the same data
        r0=$(now)
        # It exits 1 after the transfer: /dev/null cannot be ftruncated or
        # fsynced.  Success is its "Transfer finished with success" line.
        rdb_out=$("$REDIS_CLI" -p "$rd_port" --rdb /dev/null 2>&1) || true
        r1=$(now)
        rdb_bytes=$(sed -n 's/^Transfer finished with success after \([0-9]*\) bytes.*/\1/p' \
            <<<"$rdb_out" | tail -1)
        [[ -n $rdb_bytes ]] || { echo "$rdb_out" >&2; die "cannot read redis-cli --rdb's byte count"; }
        rwall=$(fsub "$r1" "$r0")
        rrate=$(mbs "$rdb_bytes" "$rwall")
        printf '  run %d: %s B in %s moves, apply %6.2f s: end-to-end %7.2f MB/s, apply avg %7.2f MB/s,' \
            "$run" "$bytes" "$moves" "$wall" "$e2e" "$ap_avg"
        printf ' copy phase %7.2f MB/s (%d data sessions, %s B in %.2f s); redis --rdb %s B in %.2f s = %7.2f MB/s\n' \
            "$crate" "$ns" "$sbytes" "$win" "$rdb_bytes" "$rwall" "$rrate"
        printf 'thru\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$bytes" "$wall" \
            "$e2e" "$ap_avg" "$crate" "$rdb_bytes" "$rwall" "$rrate" "$moves" >>"$raw"
        end_cluster "t$run"
    done
    stop "$rd_pid"
    rd_pid=""
fi

# --- 2. throttle accuracy -----------------------------------------------------

# place_slot PLAN PLACE: where in the driver's order to put the data.  The
# driver begins moves sorted by target node, then partition, up to 1024 in
# flight; "first" is the first move (its batch goes to one target only),
# "boundary" the last move to the first target (its batch also holds the
# first moves to the next target).  Prints "SLOT TARGET INDEX".
place_slot() {
    "$PY" - "$1" "$2" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
order = [n["addr"] for n in p["nodes"]]
mv = sorted((order.index(m["to_addr"]), m["partition"], m["to_addr"])
            for m in p["moves"] if m["role"] == "leader")
first = [m for m in mv if m[0] == mv[0][0]]
m = first[0] if sys.argv[2] == "first" else first[-1]
print(m[1], m[2], mv.index(m))
EOF
}

if [[ " $PARTS " == *" throttle "* ]]; then
    echo
    echo "2. throttle accuracy: rate R x $THR_S s of data in one slot of node 3, placed" \
        "first in the driver's order or at the boundary between its first two targets;" \
        "rebalance apply --rate R; PK.MOVES sampled every $SAMPLE_MS ms"
    for rate in $RATES; do
        want=$("$PY" -c "import sys; print(int(float(sys.argv[1]) * 1e6 * float(sys.argv[2])))" \
            "$rate" "$THR_S")
        for place in $PLACES; do
            for ((run = 1; run <= RUNS; run++)); do
                new_cluster "r$run"
                drain3
                plan "$work/probe.json" >/dev/null
                read -r loaded _ _ < <(place_slot "$work/probe.json" "$place")
                load3 "$loaded" "$want" 200
                id=$(plan "$work/thr.json" --rate "${rate}MB/s")
                check_plan "$work/thr.json" "$loaded"
                read -r s2 target idx < <(place_slot "$work/thr.json" "$place")
                [[ $s2 == "$loaded" ]] ||
                    echo "  (the plan with data put slot $s2 $place, not $loaded)"
                bytes=$(plan_field "$work/thr.json" totals.bytes)
                : >"$work/thr.samples"
                start_sampler "$work/thr.samples"
                apply_timed "$id" "$work/thr.apply" --rate "${rate}MB/s"
                stop_sampler
                wall=$(fsub "$ap_t1" "$ap_t0")
                e2e=$(mbs "$bytes" "$wall")
                read -r ns sbytes win crate slope < <(sessions "$work/thr.samples" $((want / 2)))
                printf '  %s MB/s %-8s run %d: slot %s (move %d, to %s), %s B; data session %s B in %.2f s = %6.2f MB/s' \
                    "$rate" "$place" "$run" "$loaded" "$idx" "$target" "$bytes" "$sbytes" "$win" "$crate"
                printf ' (slope %6.2f); end-to-end %6.2f MB/s over %.2f s, apply avg %s\n' \
                    "$slope" "$e2e" "$wall" "$ap_avg"
                printf 'throttle\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$place" "$run" \
                    "$bytes" "$crate" "$slope" "$e2e" "$wall" "$ns" >>"$raw"
                end_cluster "r$run"
            done
        done
    done
fi

# --- 3. latency during a rebalance -------------------------------------------
# bench PORT TAG N: SET then GET; prints "TEST<tab>rps<tab>p50<tab>p99" rows
bench() {
    local port=$1 tag=$2 n=$3 out t
    for t in SET GET; do
        if [[ $t == SET ]]; then
            set -- SET "{$tag}:__rand_int__" "$val"
        else
            set -- GET "{$tag}:__rand_int__"
        fi
        out=$(timeout 600 "$REDIS_BENCHMARK" -h 127.0.0.1 -p "$port" -c "$CLIENTS" \
            -n "$n" -r "$KEYSPACE" --csv "$@" 2>"$work/rb.err") ||
            { cat "$work/rb.err" >&2; die "redis-benchmark $t failed"; }
        rb_rows <<<"$out" | awk -F'\t' '{ split($1, w, " "); printf "%s\t%s\t%s\t%s\n", w[1], $2, $3, $4 }'
    done
}

if [[ " $PARTS " == *" latency "* ]]; then
    echo
    echo "3. latency: redis-benchmark -c $CLIENTS -r $KEYSPACE -n $LAT_N SET then GET (100 B)" \
        "on node 0, one slot that does not move; without, then during a drain of node 3" \
        "at the default 50MB/s moving $LAT_MB MB in $LAT_SLOTS slots"
    val=$(printf '%0100d' 0 | tr 0 v)
    for ((run = 1; run <= RUNS; run++)); do
        new_cluster "l$run"
        p0=${c_ports[LAT_NODE]}
        loaded=$(spread "$c_slots" "$LAT_SLOTS")
        load3 "$loaded" $((LAT_MB * 1000000 / LAT_SLOTS)) 300
        # The benchmark's slot: node 0's last; a drain of node 3 leaves it.
        bslot=$(own_slots "$p0")
        bslot=${bslot##*,}
        tag=$(slot_tag "$bslot")
        # Write the keyspace once, as redis-benchmark names its keys.
        "$PY" - "$tag" "$KEYSPACE" "$val" <<'EOF' | "$REDIS_CLI" -p "$p0" --pipe >/dev/null
import sys
tag, n, v = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
out = []
for i in range(n):
    k = ("{%s}:%012d" % (tag, i)).encode()
    out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
sys.stdout.buffer.write(b"".join(out))
EOF
        drain3
        id=$(plan "$work/lat.json")
        check_plan "$work/lat.json" "$loaded"
        "$PY" - "$work/lat.json" "$bslot" <<'EOF' || die "slot $bslot of node 0 is in the plan"
import json, sys
sys.exit(int(sys.argv[2]) in {m["partition"] for m in json.load(open(sys.argv[1]))["moves"]})
EOF
        bytes=$(plan_field "$work/lat.json" totals.bytes)
        # anchor: no rebalance
        b0=$(now)
        rows_without=$(bench "$p0" "$tag" "$LAT_N")
        b1=$(now)
        # during: apply in the background, the benchmark LAT_DELAY s later
        a0=$(now)
        "$PARTKV" rebalance apply "$id" --cluster "127.0.0.1:$p0" --secret "$secret" \
            --yes ${LAT_RATE:+--rate "$LAT_RATE"} >"$work/lat.apply" 2>&1 &
        ap_pid=$!
        sleep "$LAT_DELAY"
        d0=$(now)
        rows_during=$(bench "$p0" "$tag" "$LAT_N")
        d1=$(now)
        rc=0
        wait "$ap_pid" || rc=$?
        a1=$(now)
        ap_pid=""
        ((rc == 0)) || { tail -5 "$work/lat.apply" >&2; die "rebalance apply exited $rc"; }
        # The benchmark's slot stayed on node 0 and holds the keyspace.
        nk=$("$REDIS_CLI" -p "$p0" cluster countkeysinslot "$bslot")
        [[ $nk == "$KEYSPACE" ]] ||
            die "slot $bslot on node 0 holds $nk keys, not $KEYSPACE (did it move?)"
        overlap=$("$PY" -c '
import sys
a0, a1, d0, d1 = map(float, sys.argv[1:])
print("%.0f" % (100 * max(0.0, min(a1, d1) - max(a0, d0)) / (d1 - d0)))' "$a0" "$a1" "$d0" "$d1")
        awall=$(fsub "$a1" "$a0")
        printf '  run %d: slot %s on node 0; apply moved %s B in %.2f s (avg %s MB/s);' \
            "$run" "$bslot" "$bytes" "$awall" "$(done_avg "$work/lat.apply")"
        printf ' it ran during %s%% of the benchmark (%.2f s); without took %.2f s\n' \
            "$overlap" "$(fsub "$d1" "$d0")" "$(fsub "$b1" "$b0")"
        while IFS=$'\t' read -r t rps p50 p99; do
            printf '    %-3s without: %9s req/s p50 %s p99 %s ms\n' "$t" "$rps" "$p50" "$p99"
            printf 'lat\twithout\t%s\t%d\t%s\t%s\t%s\n' "$t" "$run" "$rps" "$p50" "$p99" >>"$raw"
        done <<<"$rows_without"
        while IFS=$'\t' read -r t rps p50 p99; do
            printf '    %-3s during:  %9s req/s p50 %s p99 %s ms\n' "$t" "$rps" "$p50" "$p99"
            printf 'lat\tduring\t%s\t%d\t%s\t%s\t%s\t%s\n' "$t" "$run" "$rps" "$p50" "$p99" \
                "$overlap" >>"$raw"
        done <<<"$rows_during"
        end_cluster "l$run"
    done
fi

# --- report --------------------------------------------------------------------
total=$(fsub "$(now)" "$t_script")
"$PY" - "$raw" "$RUNS" "$total" <<'EOF'
import sys
from statistics import median

raw, runs, total = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
thru, thr, lat = [], {}, {}
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    if f[0] == "thru":
        thru.append([float(x) for x in f[2:]])
    elif f[0] == "throttle":
        thr.setdefault((f[1], f[2]), []).append([float(x) for x in f[4:]])
    elif f[0] == "lat":
        lat.setdefault((f[2], f[1]), []).append([float(x) for x in f[4:]])

def med(rows, i):
    return median(r[i] for r in rows)

summary = []
print()
if thru:
    # bytes wall e2e avg copy rdb_bytes rwall rrate moves
    e2e, avg, cp, rr = (med(thru, i) for i in (2, 3, 4, 7))
    print(f"1. unthrottled move throughput, medians of {len(thru)} runs "
          f"({med(thru, 0) / 1e6:.1f} MB, {med(thru, 8):.0f} moves per run)")
    print(f"   {'measure':<44} {'MB/s':>9} {'/ redis --rdb':>14}")
    rows = [("partkv end-to-end (plan bytes / apply wall)", e2e),
            ("partkv apply's printed average", avg),
            ("partkv copy phase (data sessions, PK.MOVES)", cp),
            ("redis-cli --rdb /dev/null (anchor)", rr)]
    for name, v in rows:
        print(f"   {name:<44} {v:>9.2f} {v / rr:>13.2f}x")
    summary.append(f"unthrottled throughput: {e2e:.1f} MB/s end-to-end "
                   f"({e2e / rr:.2f}x redis --rdb {rr:.1f} MB/s; copy phase "
                   f"{cp:.1f} MB/s = {cp / rr:.2f}x)  target >= 100 MB/s: "
                   f"{'met' if e2e >= 100 else 'NOT met'}"
                   f"{'' if e2e >= 100 else (' (copy phase alone: ' + ('met' if cp >= 100 else 'not met') + ')')}")
if thr:
    print()
    print(f"2. throttle accuracy, medians of {runs} runs")
    print(f"   {'requested':>9} {'placement':<9} {'achieved':>9} {'ratio':>7} {'error':>8} "
          f"{'slope':>8} {'end-to-end':>11}   (MB/s)")
    parts, ok = [], True
    for (rate, place), rows in thr.items():
        r = float(rate)
        # bytes crate slope e2e wall ns
        a, s, e = med(rows, 1), med(rows, 2), med(rows, 3)
        err = (a / r - 1) * 100
        ok &= abs(err) <= 10
        print(f"   {r:>9.2f} {place:<9} {a:>9.2f} {a / r:>6.3f}x {err:>+7.1f}% {s:>8.2f} {e:>11.2f}")
        parts.append(f"{r:g} MB/s {place} -> {a:.2f} ({err:+.1f} %)")
    print("   achieved: data-session bytes / its copy window; slope: between its first "
          "and last copying samples; end-to-end: plan bytes / apply wall")
    summary.append("throttle: " + ", ".join(parts) + "  target within +-10 %: "
                   + ("met" if ok else "NOT met"))
if lat:
    print()
    print(f"3. latency on node 0 during a rebalance at 50MB/s, medians of {runs} runs")
    print(f"   {'test':<4} {'req/s without':>14} {'req/s during':>13} {'p50 without':>12} "
          f"{'p50 during':>11} {'p99 without':>12} {'p99 during':>11} {'p99 ratio':>10}")
    parts, ok = [], True
    for t in ("SET", "GET"):
        w, d = lat.get((t, "without")), lat.get((t, "during"))
        if not w or not d:
            continue
        ratio = med(d, 2) / med(w, 2)
        ok &= ratio <= 2
        print(f"   {t:<4} {med(w, 0):>14.0f} {med(d, 0):>13.0f} {med(w, 1):>12.3f} "
              f"{med(d, 1):>11.3f} {med(w, 2):>12.3f} {med(d, 2):>11.3f} {ratio:>9.2f}x")
        parts.append(f"{t} p99 {med(w, 2):.3f} -> {med(d, 2):.3f} ms ({ratio:.2f}x)")
    ov = median(r[3] for r in lat[("SET", "during")]) if ("SET", "during") in lat else 0
    print(f"   the rebalance ran during {ov:.0f}% of the benchmark (median)")
    summary.append("latency during rebalance: " + ", ".join(parts)
                   + "  target <= 2x: " + ("met" if ok else "NOT met"))
print()
print("summary (prints only, never fails):")
for s in summary:
    print("  " + s)
print(f"  script wall time {total:.0f} s")
EOF
