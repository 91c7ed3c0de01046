# shellcheck shell=bash
# lib.sh: helpers shared by the bench/*.sh scripts.  Sourced, not run
# (not executable, so `make bench` skips it).  Before sourcing, set
#   PROG  the prefix of error messages ("vs-redis")
#   PY    a python3 (default /usr/bin/python3)

PY=${PY:-/usr/bin/python3}

die() { echo "$PROG: $*" >&2; exit 1; }

stop() { # stop PID: SIGTERM, wait up to 10 s, then SIGKILL
    local pid=$1 i
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
}

free_port() {
    "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# free_ports COUNT [OFFSET...]: prints a base port B such that B..B+COUNT-1
# (and the same ports plus each OFFSET, e.g. 10000 for Redis Cluster's bus
# ports) can all be bound on 127.0.0.1 now.  B is random and every port is
# kept below the kernel's ephemeral range, so outgoing connections (the
# benchmark's clients) cannot take them before the servers bind them.
free_ports() {
    "$PY" - "$@" <<'EOF'
import random, socket, sys
count = int(sys.argv[1])
offsets = [0] + [int(a) for a in sys.argv[2:]]
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
top = low - count - max(offsets)  # highest usable base + 1
if top <= 10000:
    sys.exit("no room for %d ports below %d" % (count, low))
def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(200):
    base = random.randrange(10000, top)
    if all(bindable(base + i + o) for o in offsets for i in range(count)):
        print(base)
        sys.exit(0)
sys.exit("no %d free consecutive ports found" % count)
EOF
}

# _stat PID: the fields of /proc/PID/stat from field 3 on.  The command
# name in field 2 may hold spaces or ')', so split after the last ')'.
_stat() {
    local st
    st=$(<"/proc/$1/stat") || die "server pid $1 is gone"
    echo "${st##*) }"
}

# cpu_ticks PID: utime+stime (fields 14, 15), in CLK_TCK ticks
cpu_ticks() {
    local s f
    s=$(_stat "$1") || exit 1
    read -ra f <<<"$s"
    echo $((f[11] + f[12]))
}

# child_ticks PID: cutime+cstime (fields 16, 17) of reaped children
child_ticks() {
    local s f
    s=$(_stat "$1") || exit 1
    read -ra f <<<"$s"
    echo $((f[13] + f[14]))
}

# sum_ticks FUNC PID...: FUNC (cpu_ticks or child_ticks) summed over PIDs
sum_ticks() {
    local fn=$1 pid s t=0
    shift
    for pid in "$@"; do
        s=$("$fn" "$pid") || exit 1
        t=$((t + s))
    done
    echo "$t"
}

# rb_rows: redis-benchmark --csv output on stdin, one line per test on
# stdout: "TEST<tab>rps<tab>p50_ms<tab>p99_ms".  The header row (its first
# column is "test") names the columns; lines before it (--cluster prints
# the masters it found) are skipped.
rb_rows() {
    awk -F, '
        { for (i = 1; i <= NF; i++) gsub(/"/, "", $i) }
        !hdr && $1 == "test" { for (i = 1; i <= NF; i++) col[$i] = i; hdr = 1; next }
        hdr && NF > 1 && ("rps" in col) {
            printf "%s\t%s\t%s\t%s\n", $1, $col["rps"],
                $col["p50_latency_ms"], $col["p99_latency_ms"]
        }'
}

# need_tools CMD...: dies unless $PARTKV is built and every CMD is on PATH.
need_tools() {
    [[ -x $PARTKV ]] || die "$PARTKV not built (run make)"
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null || die "$t not found"
    done
}

# start_partkv_node DIR: a single node with --fsync everysec in DIR, its
# output in DIR.out/DIR.err; waits for its ready line and sets pk_pid and
# pk_port (the caller stops it by PID).
start_partkv_node() {
    local dir=$1 i
    : >"$dir.out" # exists before the job's redirect runs
    "$PARTKV" server --port 0 --dir "$dir" --fsync everysec \
        >"$dir.out" 2>"$dir.err" &
    pk_pid=$!
    pk_port=""
    for ((i = 0; i < 100; i++)); do
        pk_port=$(sed -n 's/^partkv: ready on [^ ]*:\([0-9][0-9]*\) pid .*/\1/p' \
            "$dir.out" 2>/dev/null || true)
        [[ -n $pk_port ]] && break
        kill -0 "$pk_pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $pk_port ]] || { cat "$dir.err" >&2; die "partkv did not start"; }
}
