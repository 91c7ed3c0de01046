#!/usr/bin/env bash
# callgrind-cmds: instructions per request of a single partkv node, per
# command, counted by valgrind's callgrind.  Instruction counts do not
# depend on what else the machine runs, so unlike vs-redis.sh this is a
# regression guard that holds on a busy 2-CPU box.
#
# Not executable, so `make bench` skips it (it takes ~1 minute and needs
# valgrind).  Run it as
#
#   bash bench/callgrind-cmds.sh            # BENCH_N=20000 BENCH_P=16
#
# Each case gets its own node under callgrind in a fresh dir, driven by
#   redis-benchmark -c 50 -r 100000 -n $BENCH_N -P $BENCH_P -t <test>
# (MULTI: build/bench/mload, one request = MULTI/SET/INCR/EXEC).  LPOP,
# SPOP and LRANGE_100 (sent as LRANGE mylist 0 99) first get their key
# filled by a node run natively on the same dir, so the count holds only
# the reads and pops.  Printed per request:
#   total     the whole process's instructions, minus those of a node that
#             starts and stops with no load, over BENCH_N
#   dispatch  inclusive instructions of pk_cmd_dispatch over BENCH_N:
#             the commands' own work, without RESP parsing and socket I/O
#
# The regression guard: bench/callgrind-counts.txt keeps each command's
# counts at the defaults.  BENCH_CHECK=1 compares every command measured
# with them and exits 1 when a dispatch count grew by more than
# BENCH_TOLERANCE percent (default 3; runs on this machine agree within
# 0.5%); the total is shown beside it but not judged: it moves with when
# the journal's retention and the stats checkpoints fall (LPOP's total
# takes two values 12% apart from run to run).  BENCH_SAVE=1 writes the
# counts measured into the file instead.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${BENCH_N:-20000}
P=${BENCH_P:-16}
PARTKV=${PARTKV:-$root/build/partkv}
MLOAD=${MLOAD:-$root/build/bench/mload}
read -ra TESTS <<<"${BENCH_TESTS:-SET GET INCR DECR HSET HINCRBY ZADD ZINCRBY LPUSH SADD LPOP SPOP LRANGE_100 MULTI}"

PROG=callgrind-cmds
# BENCH_SERVER_ARGS adds flags to every node's command line (e.g.
# "--hotkeys-sample 1" for the cost of tracking every command).
# die, stop
source "$root/bench/lib.sh"
command -v valgrind >/dev/null || die "valgrind not found"
command -v callgrind_annotate >/dev/null || die "callgrind_annotate not found"
[[ -x $MLOAD ]] || die "$MLOAD not built (make build/bench/mload)"

work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-callgrind.XXXXXX")
pid=""
cleanup() {
    stop "$pid"
    rm -rf "$work"
}
trap cleanup EXIT

# node DIR [valgrind...]: starts a node in DIR, sets pid and port
node() {
    local dir=$1 i
    shift
    mkdir -p "$dir"
    : >"$dir.out"
    # shellcheck disable=SC2086 # BENCH_SERVER_ARGS: extra flags, split
    "$@" "$PARTKV" server --port 0 --dir "$dir" --fsync everysec \
        ${BENCH_SERVER_ARGS:-} >"$dir.out" 2>"$dir.err" &
    pid=$!
    port=""
    for ((i = 0; i < 600; i++)); do
        port=$(sed -n 's/^partkv: ready on [^ ]*:\([0-9][0-9]*\) pid .*/\1/p' \
            "$dir.out" 2>/dev/null || true)
        [[ -n $port ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $port ]] || { cat "$dir.err" >&2; die "partkv did not start"; }
}

load() { # load TEST N
    local t=$1 n=$2
    local rb=(redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -r 100000
        -n "$n" -P "$P" -q)
    if [[ $t == MULTI ]]; then
        "$MLOAD" -h 127.0.0.1 -p "$port" -c 50 -r 100000 -n "$n" -P "$P" \
            >/dev/null
    elif [[ $t == LRANGE_100 ]]; then # -t lrange_100 would LPUSH first
        "${rb[@]}" LRANGE mylist 0 99 >/dev/null
    elif [[ $t == DECR ]]; then # -t has no DECR, HINCRBY, ZINCRBY: the
        # keys and members of INCR, HSET and ZADD
        "${rb[@]}" DECR counter:__rand_int__ >/dev/null
    elif [[ $t == HINCRBY ]]; then
        "${rb[@]}" HINCRBY myhash element:__rand_int__ 1 >/dev/null
    elif [[ $t == ZINCRBY ]]; then
        "${rb[@]}" ZINCRBY myzset 1 element:__rand_int__ >/dev/null
    else
        "${rb[@]}" -t "$t" >/dev/null
    fi
}

# measure NAME: runs the prepared dir NAME under callgrind (load unless
# NAME is "idle"), prints "total dispatch" instructions
measure() {
    local name=$1 out=$work/cg.$1
    node "$work/$name" valgrind --tool=callgrind --callgrind-out-file="$out"
    [[ $name == idle ]] || load "$name" "$N"
    stop "$pid"
    pid=""
    callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
        /src\/server\/pk_cmd.c:pk_cmd_dispatch \[/ {
            gsub(",", "", $1); disp = $1 }
        END { print total + 0, disp + 0 }'
}

COUNTS=$root/bench/callgrind-counts.txt
TOL=${BENCH_TOLERANCE:-3}
measured=$work/measured
: >"$measured"

read -r idle _ < <(measure idle)
echo "callgrind-cmds: -c 50 -r 100000 -n $N -P $P; idle node $idle instructions"
printf '%-11s %10s %10s\n' command total dispatch
for t in "${TESTS[@]}"; do
    case $t in # fill the key natively first
    LPOP | LRANGE_100) node "$work/$t"; load LPUSH $((N + N / 4)); stop "$pid" ;;
    SPOP) node "$work/$t"; load SADD $((N * 2)); stop "$pid" ;;
    esac
    read -r total disp < <(measure "$t")
    awk -v t="$t" -v a="$total" -v i="$idle" -v d="$disp" -v n="$N" \
        'BEGIN { printf "%-11s %10.0f %10.0f\n", t, (a - i) / n, d / n }' |
        tee -a "$measured"
done

if [[ ${BENCH_SAVE:-} == 1 ]]; then
    { echo "# bench/callgrind-cmds.sh at -c 50 -r 100000 -n $N -P $P:" \
        "command, instructions per request (total, dispatch); the commit" \
        "that last wrote this file measured them"
      cat "$measured"; } >"$COUNTS"
    echo "callgrind-cmds: counts written to $COUNTS"
elif [[ ${BENCH_CHECK:-} == 1 ]]; then
    ((N == 20000 && P == 16)) || die "BENCH_CHECK needs the default BENCH_N and BENCH_P"
    awk -v tol="$TOL" '
        NR == FNR { if ($1 !~ /^#/) { tot[$1] = $2; disp[$1] = $3 }; next }
        !($1 in disp) { printf "%-11s (no stored count)\n", $1; next }
        {
            d = 100 * ($3 - disp[$1]) / disp[$1]
            bad = d > tol
            printf "%-11s dispatch %6d vs %6d %+6.1f%%  %-9s total %+6.1f%%\n",
                $1, $3, disp[$1], d, bad ? "REGRESSED" : "ok",
                100 * ($2 - tot[$1]) / tot[$1]
            fail += bad
        }
        END { exit fail > 0 }' "$COUNTS" "$measured" ||
        die "dispatch instructions per request grew by more than $TOL% (see above)"
    echo "callgrind-cmds: every command within $TOL% of $COUNTS"
fi
