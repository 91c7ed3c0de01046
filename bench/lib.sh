# shellcheck shell=bash
# lib.sh: helpers shared by the bench/*.sh scripts.  Sourced, not run
# (not executable, so `make bench` skips it).  Before sourcing, set
#   PROG  the prefix of error messages ("vs-redis")
#   PY    a python3 (default /usr/bin/python3)

PY=${PY:-/usr/bin/python3}

die() { echo "$PROG: $*" >&2; exit 1; }

# median: the median of the numbers on stdin, one per line
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

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

# wait_redis PORT PID LOG: waits up to 10 s for redis-server PID to answer
# PING on PORT; if it does not, prints LOG and dies
wait_redis() {
    local port=$1 pid=$2 log=$3 i
    for ((i = 0; i < 100; i++)); do
        [[ $("$REDIS_CLI" -p "$port" ping 2>/dev/null) == PONG ]] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ $("$REDIS_CLI" -p "$port" ping 2>/dev/null) == PONG ]] ||
        { cat "$log" >&2; die "redis-server on port $port did not start"; }
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

# start_partkv_node DIR [ARG...]: a single node with --fsync everysec (and
# ARGs) in DIR, its output in DIR.out/DIR.err; waits for its ready line and
# sets pk_pid and pk_port (the caller stops it by PID).
start_partkv_node() {
    local dir=$1 i
    shift
    : >"$dir.out" # exists before the job's redirect runs
    "$PARTKV" server --port 0 --dir "$dir" --fsync everysec "$@" \
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

# --- helpers for rebalance.sh ----------------------------------------------

# machine_info: one line with the CPU count, CPU model and load average.
machine_info() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    echo "machine: $(nproc) CPUs (${model:-unknown model}), load average" \
        "$(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"
}

# own_partkv SRC WORK: the script's own copy of the binary at WORK/partkv,
# set as PARTKV (`cluster up` starts its nodes from /proc/self/exe, so a
# rebuild while the script runs changes nothing); and the traps that run
# the script's cleanup function on exit and on INT/TERM.
own_partkv() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    cp "$1" "$2/partkv" || die "cannot copy $1"
    PARTKV=$2/partkv
    "$PARTKV" help >/dev/null 2>&1 || die "$1 does not run (a rebuild in progress?)"
}

# stop_ours PID PATTERN: stop PID only while its command line still holds
# PATTERN (e.g. the script's temp dir), so a reused PID is left alone.
stop_ours() {
    local pid=$1 pat=$2
    [[ -n $pid ]] || return 0
    if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$pat"; then
        stop "$pid"
    fi
}

# start_partkv_cluster NODES DIR SECRET [ARG...]: `partkv cluster up` in
# the background on free ports (--base-port 0, --replicas 1, then ARGs),
# its output in DIR.out/DIR.err.  Waits for "ready" and sets pkc_pid (the
# `cluster up` process, which stops its nodes on SIGTERM), pkc_pids and
# pkc_ports (per node, node 0 first: it hosts the coordinator).
start_partkv_cluster() {
    local n=$1 dir=$2 secret=$3 i
    shift 3
    : >"$dir.out" # exists before the job's redirect runs
    "$PARTKV" cluster up --nodes "$n" --base-port 0 --dir "$dir" \
        --secret "$secret" --replicas 1 "$@" >"$dir.out" 2>"$dir.err" &
    pkc_pid=$!
    # `cluster up` gives each node 10 s and registration 15 s.
    for ((i = 0; i < 600; i++)); do
        grep -qx ready "$dir.out" && break
        kill -0 "$pkc_pid" 2>/dev/null || break
        sleep 0.05
    done
    # "  node I  127.0.0.1:PORT  pid PID  id ID"
    # shellcheck disable=SC2034 # for the caller
    mapfile -t pkc_pids < <(sed -n \
        's/^  node [0-9]*  [^ ]*:[0-9]*  pid \([0-9]*\)  .*/\1/p' "$dir.out")
    mapfile -t pkc_ports < <(sed -n \
        's/^  node [0-9]*  [^ ]*:\([0-9]*\)  pid [0-9]*  .*/\1/p' "$dir.out")
    if ! grep -qx ready "$dir.out" || ((${#pkc_ports[@]} != n)); then
        cat "$dir.out" "$dir.err" >&2
        die "partkv cluster up did not become ready"
    fi
}

# resp_sets SLOTS KEYS VALSIZE SEED: a RESP stream of SET commands on
# stdout, for `redis-cli --pipe`.  For each slot in the comma-separated
# SLOTS, KEYS keys "{TAG}:NNNNNNN" whose hash tag TAG puts them in that
# Redis Cluster slot (CRC16/XMODEM mod 16384), each with a VALSIZE-byte
# base64 value cut at a random offset of a random pool (LZF cannot shrink
# it).  The same arguments give the same stream.
resp_sets() {
    "$PY" - "$@" <<'EOF'
import base64, random, sys
T = []
for i in range(256):
    c = i << 8
    for _ in range(8):
        c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
    T.append(c & 0xFFFF)
def slot(b):
    c = 0
    for x in b:
        c = ((c << 8) & 0xFFFF) ^ T[(c >> 8) ^ x]
    return c & 16383
slots = [int(s) for s in sys.argv[1].split(",") if s]
nkeys, vs, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want, tags, i = set(slots), {}, 0
while len(tags) < len(want):
    t = "r%d" % i
    s = slot(t.encode())
    if s in want and s not in tags:
        tags[s] = t
    i += 1
rng = random.Random(seed)
pool = base64.b64encode(rng.randbytes(max(3 << 20, vs)))
hdr = b"$%d\r\n" % vs
out = sys.stdout.buffer
for s in slots:
    buf = []
    for k in range(nkeys):
        key = ("{%s}:%07d" % (tags[s], k)).encode()
        o = rng.randrange(len(pool) - vs + 1)
        buf.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n%s%s\r\n"
                   % (len(key), key, hdr, pool[o:o + vs]))
    out.write(b"".join(buf))
EOF
}

# sample_moves OUT INTERVAL_MS PORT...: until stopped, asks every PORT for
# PK.MOVES each INTERVAL_MS and appends one line per session seen to OUT:
#   "T PORT TARGET STATE BYTES ELAPSED_MS PARTITIONS"
# T is the Unix time in seconds (bash's $EPOCHREALTIME is on the same
# clock).  A port with no session gives "T PORT - idle 0 0 0".  Run it in
# the background and stop it by PID.
sample_moves() {
    "$PY" - "$@" <<'EOF'
import socket, sys, time
out, step = sys.argv[1], int(sys.argv[2]) / 1000.0
ports = [int(p) for p in sys.argv[3:]]
class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")
    def read(self):
        line = self.f.readline()
        if not line:
            raise EOFError("connection closed")
        t, v = line[:1], line[1:-2]
        if t in (b"+", b"-"):
            return v.decode()
        if t == b":":
            return int(v)
        if t == b"$":
            n = int(v)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if t in (b"*", b"%"):
            n = int(v) * (2 if t == b"%" else 1)
            return [self.read() for _ in range(n)]
        raise ValueError(line)
    def moves(self):
        self.s.sendall(b"*1\r\n$8\r\nPK.MOVES\r\n")
        return self.read()
conns = {p: Conn(p) for p in ports}
f = open(out, "a", buffering=1)
nxt = time.monotonic()
while True:
    for p, c in conns.items():
        try:
            r = c.moves()
        except (OSError, EOFError):  # the node is gone: the run is over
            sys.exit(0)
        t = time.time()
        if not isinstance(r, list):
            continue
        if not r:
            f.write("%.4f %d - idle 0 0 0\n" % (t, p))
        for sess in r:
            d = dict(zip(sess[0::2], sess[1::2]))
            f.write("%.4f %d %s %s %d %d %d\n" % (t, p, d.get("target"),
                    d.get("state"), d.get("bytes", 0), d.get("elapsed_ms", 0),
                    d.get("partitions", 0)))
    nxt += step
    time.sleep(max(0.0, nxt - time.monotonic()))
EOF
}

# slot_tag SLOT: a short hash tag ("tNNN") whose keys "{tNNN}..." fall in
# Redis Cluster slot SLOT.
# cluster_done: stops the current cluster (start_partkv_cluster) and
# removes its nodes' cgroups (cg_cap).
cluster_done() {
    stop "$pkc_pid"
    pkc_pid=""
    cg_remove "${node_cgs[@]}"
    node_cgs=()
}

# take_turns FILE: RUNS runs of `one_run MODE RUN` (the caller's) for each
# of modes[], the modes taking turns to go first; their output to FILE.
# shellcheck disable=SC2154 # modes: the caller's
take_turns() {
    local run k
    for ((run = 0; run < RUNS; run++)); do
        for ((k = 0; k < ${#modes[@]}; k++)); do
            one_run "${modes[$(((k + run) % ${#modes[@]}))]}" "$run" >>"$1"
        done
    done
}

leader_port() { # leader_port KEY: the port CLUSTER SLOTS names for KEY's slot
    local slot
    slot=$(redis-cli -p "${pkc_ports[0]}" CLUSTER KEYSLOT "$1") || return 1
    redis-cli -p "${pkc_ports[0]}" CLUSTER SLOTS | awk -v s="$slot" '
        { l[NR] = $0 }
        END { for (i = 1; i + 3 <= NR; i++)
                  if (l[i] ~ /^[0-9]+$/ && l[i + 1] ~ /^[0-9]+$/ &&
                      l[i] + 0 <= s && s <= l[i + 1] + 0) { print l[i + 3]; exit 0 }
              exit 1 }'
}

slot_tag() {
    "$PY" - "$1" <<'EOF'
import sys
want, i = int(sys.argv[1]), 0
def slot(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        c &= 0xFFFF
    return c & 16383
while slot(("t%d" % i).encode()) != want:
    i += 1
print("t%d" % i)
EOF
}

# --- nodes capped in cgroups (BENCH_NODE_CPU of range-split.sh, hotread.sh)

CG_ROOT=/sys/fs/cgroup/cpu
CG_PERIOD=${BENCH_CG_PERIOD_US:-100000} # the cap's period: a throttled node sleeps up to this long
cg_quota=""  # cpu.cfs_quota_us per node, or empty: no cap
cg_share=""  # the share of one core it stands for
cg_all=()    # every cgroup made
node_cgs=()  # those of the current cluster's nodes, node 0 first

# cg_setup SHARE: caps to come at SHARE of one core per node (empty: none);
# exits 2 when SHARE is not a number in (0, 64] or cgroup-v1 cpu cannot be
# written (the scripts need root for it).
cg_setup() {
    cg_share=$1
    [[ -n $cg_share ]] || return 0
    cg_quota=$(awk -v v="$cg_share" -v p="$CG_PERIOD" 'BEGIN {
        if (v !~ /^[0-9]*\.?[0-9]+$/ || v + 0 <= 0 || v + 0 > 64) exit 1
        q = int(v * p + 0.5); print (q < 1000 ? 1000 : q) }') ||
        { echo "$PROG: BENCH_NODE_CPU must be a share of one core > 0, e.g. 0.3 (got '$cg_share')" >&2; exit 2; }
    if ! { [[ -f $CG_ROOT/cpu.cfs_quota_us && -w $CG_ROOT/cgroup.procs ]] &&
        mkdir "$CG_ROOT/partkv-bench-$$-check" 2>/dev/null &&
        rmdir "$CG_ROOT/partkv-bench-$$-check"; }; then
        echo "$PROG: BENCH_NODE_CPU is set but $CG_ROOT (cgroup-v1 cpu) is not writable" >&2
        exit 2
    fi
}

# cg_cap: after cg_setup, each node of the current cluster (pkc_pids) into
# a cpu cgroup of its own, capped at cg_quota per CG_PERIOD.  Writing a PID
# to cgroup.procs moves its whole thread group (checked against tasks);
# threads started later inherit the cgroup.
cg_cap() {
    local i d pid want got
    node_cgs=()
    [[ -n $cg_quota ]] || return 0
    for i in "${!pkc_pids[@]}"; do
        pid=${pkc_pids[i]}
        d=$CG_ROOT/partkv-bench-$$-${#cg_all[@]}
        mkdir "$d" || die "cannot make cgroup $d"
        cg_all+=("$d")
        node_cgs+=("$d")
        echo "$CG_PERIOD" >"$d/cpu.cfs_period_us"
        echo "$cg_quota" >"$d/cpu.cfs_quota_us"
        echo "$pid" >"$d/cgroup.procs" || die "cannot move node pid $pid into $d"
        want=$(printf '%s\n' "/proc/$pid/task/"* | sed 's#.*/##' | sort -n | tr '\n' ' ')
        got=$(sort -n "$d/tasks" | tr '\n' ' ')
        [[ $want == "$got" ]] || die "node pid $pid: threads $want, in $d: $got"
    done
    echo "node CPU cap: $cg_share of a core per node (cpu.cfs_quota_us $cg_quota /" \
        "cpu.cfs_period_us $CG_PERIOD), nodes ${pkc_pids[*]} in ${node_cgs[*]##*/}" \
        "($(wc -w <"${node_cgs[0]}/tasks") threads in node 0's)"
}

# cg_remove DIR...: removes the cgroups once their processes are gone
# (up to 10 s each)
cg_remove() {
    local d i
    for d in "$@"; do
        [[ -d $d ]] || continue
        for ((i = 0; i < 100; i++)); do
            [[ -s $d/cgroup.procs ]] || break
            sleep 0.1
        done
        rmdir "$d" 2>/dev/null || echo "$PROG: cannot remove cgroup $d (still holds: $(tr '\n' ' ' <"$d/cgroup.procs"))" >&2
    done
}

