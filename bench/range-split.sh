#!/usr/bin/env bash
# bench/range-split.sh: automatic load splits and merges of the range
# scheme, measured against the acceptance criteria of the issue (3 nodes,
# R = 3, forward mode).  Every case runs on a fresh cluster:
#
#   1. uniform read-heavy load (95% GET / 5% SET over BENCH_KEYS preloaded
#      keys "key:%012d") on one initial range.  First a calibration
#      cluster with --split-qps 0 measures the GET rate of the load
#      against the single range (all of it served by that range's leader:
#      one node's GET rate) and the 95/5 mix's throughput without
#      splitting.  Then a cluster with --split-qps = a quarter of that GET
#      rate takes the same mix: seconds from load start (and from the
#      moment the leader's finder started, i.e. the threshold was crossed)
#      to the first load split (target <= 8 s after the threshold), ranges
#      at 60 s (target >= 8), and throughput once the splits and the
#      leader balancing are done, over the no-split throughput (target
#      >= 2x).
#   2. monotonic inserts ("ts:%015d", increasing) at 2x --split-qps for
#      60 s on one range, --split-size 1 GiB: load splits (target <= 2)
#      and the hot range's load_split verdict (expected "increasing").
#   3. 95% full-range scans (PK.RANGE from "-" to "+" in pages of
#      BENCH_SCAN_PAGE keys) + 5% point GETs at 1.5x --split-qps for
#      BENCH_SCAN_S seconds: splits (target 0).
#   4. uniform 95/5 load alternating 1.2x <-> 0.8x --split-qps every 30 s
#      for BENCH_ALT_S seconds, --merge-delay BENCH_MERGE_DELAY: split and
#      merge events per range (target <= 2), then the load stops and the
#      seconds until the ranges have merged back into one (target <=
#      merge delay + 120 s).
#
# Load generators.
#   Case 1 uses redis-benchmark: it is C and costs the 2 shared cores far
#   less per request than any Python client, and case 1 is a throughput
#   measurement, where the generator's CPU is taken from the nodes.  Per
#   node two processes run at once, `-t get -c BENCH_C_GET` and `-t set
#   -c BENCH_C_SET` (19:1, the 95:5 proportion), `-r BENCH_KEYS -d 16`, so
#   keys are the preloaded "key:%012d"; every node gets the same, and
#   forwards what it does not lead.  The processes run without end; a
#   Python tap timestamps their progress lines (one every 250 ms, the rate
#   of the last 250 ms), so a timed window is the mean of the ticks in it,
#   summed over the processes; figures are medians of 3 windows of
#   BENCH_WINDOW_S seconds.  redis-benchmark exits on an error reply (a
#   write caught by a split): the tap restarts it and the count of
#   restarts is printed.  The SET share actually achieved is printed too.
#   Cases 2-4 need a fixed rate, which redis-benchmark cannot hold: a
#   Python generator (2 processes, one raw-RESP connection per node each,
#   batches sent round robin to the nodes, pipelined; a token bucket
#   refilled continuously at the target rate holding at most one second of
#   backlog, the rest dropped and counted) prints the rate it achieved.
#
# Events are counted two ways: the nodes' log lines ("range N split at",
# "range N merged into range M", collected from `cluster up`'s stderr and
# timestamped as they appear, 0.1 s resolution) and a poll of `partkv
# range list --json` once a second (range bounds appearing and
# disappearing; this also gives each event's position in the key space).
#
# Environment: BENCH_CASES (default 1,2,3,4), BENCH_SCAN_S (default 300),
# BENCH_ALT_S (default 600), BENCH_MERGE_DELAY (default 60), BENCH_QPS
# (--split-qps of cases 2-4, default 2500, the server's default),
# BENCH_KEYS (default 100000), BENCH_WINDOW_S (default 10),
# BENCH_SCAN_PAGE (default 50), BENCH_C_GET / BENCH_C_SET (default 19 / 1),
# BENCH_KEEP=1 keeps the work directory (logs) and prints its path, PARTKV.
# BENCH_CLIENT (default forward): smart runs build/bench/rload in place of
# redis-benchmark in case 1, with the same arguments -- a range-aware
# client that sends each request to its range's leader, so no node
# forwards (forwarding costs a node more than serving: bench/README.md).
# BENCH_QPS_OF (default get): mix takes --split-qps as a quarter of the
# 95/5 mix's rate on one range, rather than of the GET-only rate.
# BENCH_NODE_CPU (default empty: off), e.g. 0.3: case 1 only, every node of
# both clusters is capped at that share of one core, each in a cgroup-v1
# cpu cgroup of its own (/sys/fs/cgroup/cpu/partkv-bench-PID-N,
# cpu.cfs_quota_us = BENCH_NODE_CPU x cpu.cfs_period_us 100000), to stand
# in for nodes on machines of their own: with the nodes and the load
# generators sharing the machine's cores uncapped, the one-range baseline
# already takes every core and splitting cannot add any.  The cap, and per
# measurement each node's CPU use, throttled periods and CPU per request,
# the load generators' CPU and the machine's, are printed.  It needs a
# writable /sys/fs/cgroup/cpu (root); without one the script exits 2.
# The numbers are reported, not asserted: PASS/FAIL is printed beside each
# one, and the script exits 0 when it ran.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTKV_SRC=${PARTKV:-$root/build/partkv}
PY=/usr/bin/python3
PROG=range-split
CASES=${BENCH_CASES:-1,2,3,4}
SCAN_S=${BENCH_SCAN_S:-300}
ALT_S=${BENCH_ALT_S:-600}
MERGE_DELAY=${BENCH_MERGE_DELAY:-60}
QPS=${BENCH_QPS:-2500}
NKEYS=${BENCH_KEYS:-100000}
WINDOW_S=${BENCH_WINDOW_S:-10}
SCAN_PAGE=${BENCH_SCAN_PAGE:-50}
C_GET=${BENCH_C_GET:-19}
C_SET=${BENCH_C_SET:-1}
KEEP=${BENCH_KEEP:-0}
NODE_CPU=${BENCH_NODE_CPU:-}
CLIENT=${BENCH_CLIENT:-forward}
QPS_OF=${BENCH_QPS_OF:-get}
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

PARTKV=$PARTKV_SRC
need_tools "$PY" redis-benchmark redis-cli
case $CLIENT in
forward) ;;
smart)
    RLOAD_BIN=${RLOAD:-$root/build/bench/rload}
    [[ -x $RLOAD_BIN ]] || { echo "$PROG: BENCH_CLIENT=smart needs $RLOAD_BIN (make build/bench/rload)" >&2; exit 2; }
    export RLOAD_BIN
    ;;
*) echo "$PROG: BENCH_CLIENT must be forward or smart (got '$CLIENT')" >&2; exit 2 ;;
esac
[[ $QPS_OF == get || $QPS_OF == mix ]] ||
    { echo "$PROG: BENCH_QPS_OF must be get or mix (got '$QPS_OF')" >&2; exit 2; }
cg_setup "$NODE_CPU"
work=$(mktemp -d "${TMPDIR:-/tmp}/partkv-range-split.XXXXXX")
cluster_pids=()
bg_pids=()
pkc_pid=""
pkc_ports=()

cleanup() {
    local pid
    for pid in "${bg_pids[@]}"; do stop_ours "$pid" "$work/"; done
    stop_ours "$pkc_pid" "$work/"
    for pid in "${cluster_pids[@]}"; do stop_ours "$pid" "$work/"; done
    cg_remove "${cg_all[@]}"
    if [[ $KEEP == 1 ]]; then
        echo "$PROG: work directory kept: $work" >&2
    else
        rm -rf "$work"
    fi
}
own_partkv "$PARTKV_SRC" "$work"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
results=$work/results
: >"$results"

# --- the Python side: load generators, the redis-benchmark tap, the
# monitor and the analysis, one file with subcommands -----------------------
cat >"$work/rs.py" <<'EOF'
import ctypes, json, os, random, re, selectors, signal, socket, statistics
import subprocess, sys, time

def die_with_parent():
    """The kernel sends SIGTERM to this process when its parent dies."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

# ---- RESP over a raw socket ------------------------------------------------

class Err(bytes):
    pass

def parse(buf, pos):
    """One reply at pos: (value, next pos), or None if incomplete."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    t = buf[pos]
    if t == 36:  # $
        n = int(buf[pos + 1:nl])
        if n < 0:
            return None, nl + 2
        end = nl + 2 + n
        if len(buf) < end + 2:
            return None
        return bytes(buf[nl + 2:end]), end + 2
    if t == 42:  # *
        n = int(buf[pos + 1:nl])
        p, items = nl + 2, []
        for _ in range(max(n, 0)):
            r = parse(buf, p)
            if r is None:
                return None
            items.append(r[0])
            p = r[1]
        return items, p
    if t == 45:  # -
        return Err(buf[pos + 1:nl]), nl + 2
    if t == 58:  # :
        return int(buf[pos + 1:nl]), nl + 2
    return bytes(buf[pos + 1:nl]), nl + 2  # + and anything simple

def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
    def call(self, payload, n):
        self.s.sendall(payload)
        out, pos = [], 0
        while len(out) < n:
            r = parse(self.buf, pos) if pos < len(self.buf) else None
            if r is None:
                del self.buf[:pos]
                pos = 0
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    raise EOFError("connection closed")
                self.buf += chunk
                continue
            out.append(r[0])
            pos = r[1]
        del self.buf[:pos]
        return out

# ---- rate-controlled load (cases 2-4) --------------------------------------

def target_total(spec, t):
    """Requests due by t seconds: spec is "R", or "alt:LOW:HIGH:PERIOD"
    (HIGH for the first PERIOD, then LOW, ...)."""
    if not spec.startswith("alt:"):
        return float(spec) * t
    _, lo, hi, per = spec.split(":")
    lo, hi, per = float(lo), float(hi), float(per)
    k = int(t // per)
    done = (k // 2) * (lo + hi) * per + (k % 2) * hi * per
    return done + (hi if k % 2 == 0 else lo) * (t - k * per)

def rate_now(spec, t):
    return target_total(spec, t + 1) - target_total(spec, t)

VAL = b"v" * 16
SCANNERS = 16  # per process

def worker(j, nproc, mode, spec, dur, nkeys, page, ports, t0, counts, errs, extra):
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    rng = random.Random(1000003 * j + 17)
    conns = [Conn(p) for p in ports]
    sent = 0.0  # requests accounted for (sent, or dropped as backlog)
    ci = 0
    seq = j
    gk = b"*2\r\n$3\r\nGET\r\n$16\r\nkey:%012d\r\n"
    sk = b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$16\r\n" + VAL + b"\r\n"
    # scanners start at evenly spaced points of the key space, as if they
    # had been scanning for a while; each scan after the first is - to +
    cur = [b"(key:%012d" % ((j * SCANNERS + s) * nkeys // (nproc * SCANNERS))
           for s in range(SCANNERS)]
    if mode == "scan":
        cur[0] = b"-"
        extra[2] = 1  # its first scan is a whole one
    free = list(range(SCANNERS))
    limit = b"%d" % page
    kinds = {}
    while True:
        now = time.monotonic() - t0
        if now >= dur:
            break
        want = target_total(spec, now) / nproc
        floor = target_total(spec, max(0.0, now - 1.0)) / nproc
        if sent < floor:  # more than a second behind: drop the backlog
            extra[0] += int(floor - sent)
            sent = floor
        n = min(int(want - sent), 400)
        if n <= 0:
            time.sleep(0.002)
            continue
        parts, who = [], []
        if mode == "uniform":
            for _ in range(n):
                k = rng.randrange(nkeys)
                parts.append((sk if rng.random() < 0.05 else gk) % k)
        elif mode == "mono":
            for _ in range(n):
                k = b"ts:%015d" % seq
                seq += nproc
                parts.append(b"*3\r\n$3\r\nSET\r\n$18\r\n%s\r\n$16\r\n%s\r\n" % (k, VAL))
        else:  # scan: 95% pages of full scans, 5% GETs
            rng.shuffle(free)
            for _ in range(n):
                if rng.random() < 0.05:
                    parts.append(gk % rng.randrange(nkeys))
                    who.append(-1)
                elif not free:
                    break  # every scanner has a page in flight: next batch
                else:
                    s = free.pop()
                    parts.append(cmd(b"PK.RANGE", cur[s], b"+", b"LIMIT", limit))
                    who.append(s)
        c = conns[ci % len(conns)]
        ci += 1
        replies = c.call(b"".join(parts), len(parts))
        for i, r in enumerate(replies):
            if isinstance(r, Err):
                word = "%s: %s" % (parts[i].split(b"\r\n")[2].decode(),
                                   r[:60].decode(errors="replace"))
                kinds[word] = kinds.get(word, 0) + 1
                errs[j] += 1
            elif who and who[i] >= 0 and isinstance(r, list) and r:
                s = who[i]
                if r[0] in (b"", None):
                    if cur[s] == b"-" or extra[2 + s] > 0:
                        extra[1] += 1  # a full scan, - to +
                    extra[2 + s] = 1
                    cur[s] = b"-"
                else:
                    cur[s] = r[0]
        for s in who:
            if s >= 0:
                free.append(s)
        sent += len(parts)
        counts[j] += len(parts)
    with open("%s.err%d" % (os.environ["RS_OUT"], j), "w") as f:
        json.dump(kinds, f)

def cmd_load(a):
    """load MODE OUT DURATION SPEC NPROC NKEYS PAGE PORT...: per-second
    lines "unix_time elapsed target achieved errors" in OUT, a summary on
    stdout."""
    import multiprocessing as mp
    mode, out, dur, spec, nproc, nkeys, page = a[:7]
    dur, nproc, nkeys, page = float(dur), int(nproc), int(nkeys), int(page)
    ports = [int(p) for p in a[7:]]
    os.environ["RS_OUT"] = out
    die_with_parent()
    counts = mp.Array("q", nproc, lock=False)
    errs = mp.Array("q", nproc, lock=False)
    extras = [mp.Array("q", 2 + SCANNERS, lock=False) for _ in range(nproc)]
    t0 = time.monotonic() + 0.5
    procs = [mp.Process(target=worker, args=(j, nproc, mode, spec, dur, nkeys,
             page, ports, t0, counts, errs, extras[j])) for j in range(nproc)]
    for p in procs:
        p.start()
    def bye(*_):
        for p in procs:
            p.terminate()
        sys.exit(0)
    signal.signal(signal.SIGTERM, bye)
    f = open(out, "w", buffering=1)
    time.sleep(max(0.0, t0 - time.monotonic()))
    with open(out + ".t", "w") as tf:  # the load's start and end, Unix time
        tf.write("%.3f %.3f\n" % (time.time(), time.time() + dur))
    last, last_e, sec, per = 0, 0, 0, []
    while any(p.is_alive() for p in procs):
        sec += 1
        time.sleep(max(0.0, t0 + sec - time.monotonic()))
        tot, e = sum(counts), sum(errs)
        if sec <= dur + 0.5:
            per.append((sec, rate_now(spec, sec - 1), tot - last))
        f.write("%.3f %d %.0f %d %d\n" % (time.time(), sec, rate_now(spec, sec - 1),
                                         tot - last, e - last_e))
        last, last_e = tot, e
        if sec > dur + 30:
            bye()
    for p in procs:
        p.join()
    tot, e = sum(counts), sum(errs)
    kinds = {}
    for j in range(nproc):
        try:
            for k, v in json.load(open("%s.err%d" % (out, j))).items():
                kinds[k] = kinds.get(k, 0) + v
        except (OSError, ValueError):
            pass
    want = target_total(spec, dur)
    body = [c for s, t, c in per if 1 < s <= dur]  # whole seconds inside
    errtxt = ", ".join("%d x %s" % (v, k) for k, v in sorted(kinds.items()))
    print("load %s: %d requests in %.0f s = %.0f/s (target %.0f/s, %.1f%%); "
          "per second min %d max %d; dropped backlog %d; errors %d%s%s" % (
              mode, tot, dur, tot / dur, want / dur, 100.0 * tot / max(want, 1),
              min(body) if body else 0, max(body) if body else 0,
              sum(x[0] for x in extras), e, " (" + errtxt + ")" if errtxt else "",
              "; full scans %d" % sum(x[1] for x in extras) if mode == "scan" else ""))
    # the accuracy of alternating phases: achieved / target per phase
    if spec.startswith("alt:"):
        per_phase = {}
        for s, t, c in per:
            if 1 < s <= dur:
                per_phase.setdefault(t, []).append(c)
        print("load %s: per-second medians by target: %s" % (mode, ", ".join(
            "%.0f -> %.0f" % (t, statistics.median(v)) for t, v in sorted(per_phase.items()))))

# ---- redis-benchmark tap (case 1) ------------------------------------------

RPS = re.compile(rb"([A-Z_]+): rps=([0-9.]+)")

def cmd_rbload(a):
    """rbload LOG NKEYS PORT:TEST:CONNS...: one redis-benchmark per spec,
    without end; LOG gets "unix_time idx TEST rps" per progress tick (the
    rate of the last 250 ms) and "unix_time idx EXIT rc" when one exits
    (it is restarted)."""
    log, nkeys, specs = a[0], a[1], [s.split(":") for s in a[2:]]
    die_with_parent()
    f = open(log, "w", buffering=1)
    errf = open(log + ".stderr", "ab")
    sel = selectors.DefaultSelector()
    procs = {}
    def start(i):
        port, test, conns = specs[i]
        prog = os.environ.get("RLOAD_BIN") or "redis-benchmark"
        p = subprocess.Popen([prog, "-p", port, "-t", test, "-r", nkeys,
                              "-d", "16", "-c", conns, "-n", "2000000000", "-q"],
                             stdout=subprocess.PIPE, stderr=errf, stdin=subprocess.DEVNULL,
                             preexec_fn=die_with_parent)
        procs[i] = p
        sel.register(p.stdout, selectors.EVENT_READ, i)
    def bye(*_):
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            p.wait()
        sys.exit(0)
    signal.signal(signal.SIGTERM, bye)
    for i in range(len(specs)):
        start(i)
    while True:
        for key, _ in sel.select():
            i = key.data
            chunk = os.read(key.fd, 65536)
            now = time.time()
            if not chunk:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                rc = procs[i].wait()
                f.write("%.3f %d EXIT %d\n" % (now, i, rc))
                time.sleep(0.1)
                start(i)
                continue
            for m in RPS.finditer(chunk):
                f.write("%.3f %d %s %s\n" % (now, i, m.group(1).decode(), m.group(2).decode()))

def cmd_window(a):
    """window LOG T0 T1: "total get set exits" over (T0, T1]: per process
    the mean of its ticks inside, summed."""
    log, t0, t1 = a[0], float(a[1]), float(a[2])
    ticks, exits = {}, 0
    for line in open(log):
        w = line.split()
        t = float(w[0])
        if not t0 < t <= t1:
            continue
        if w[2] == "EXIT":
            exits += 1
            continue
        ticks.setdefault((int(w[1]), w[2]), []).append(float(w[3]))
    by = {}
    for (i, test), v in ticks.items():
        by[test] = by.get(test, 0.0) + sum(v) / len(v)
    print("%.0f %.0f %.0f %d" % (sum(by.values()), by.get("GET", 0), by.get("SET", 0), exits))

# ---- CPU use (case 1) ------------------------------------------------------

def ticks(pid, children=False):
    """utime+stime of /proc/PID/stat (all its threads), plus cutime+cstime
    if children; None if it is gone."""
    try:
        f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if children else 0)

def cmd_cpusnap(a):
    """cpusnap GENPID NODEPID... -- CGDIR...: one JSON line: per node its
    ticks and its cgroup's cpu.stat, the load generator's ticks (the tap,
    its reaped children and the live ones: the redis-benchmarks) and the
    machine's busy and total ticks."""
    i = a.index("--") if "--" in a else len(a)
    gen, nodes, cgs = a[0], a[1:i], a[i + 1:]
    g = ticks(gen, True) or 0
    try:
        kids = open("/proc/%s/task/%s/children" % (gen, gen)).read().split()
    except OSError:
        kids = []
    g += sum(ticks(k) or 0 for k in kids)
    thr = []
    for d in cgs:
        st = dict(l.split() for l in open(d + "/cpu.stat"))
        thr.append([int(st.get("nr_periods", 0)), int(st.get("nr_throttled", 0)),
                    int(st.get("throttled_time", 0))])
    c = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    print(json.dumps({"t": time.time(), "nodes": [ticks(p) for p in nodes],
                      "thr": thr, "gen": g, "ngen": len(kids),
                      "busy": sum(c) - c[3] - c[4], "all": sum(c)}))

def cmd_cpureport(a):
    """cpureport SNAP0 SNAP1 MON "PORT..." W...: one line, per node the
    cores it used, the share of its cgroup's periods throttled, the ranges
    it led at the end and its CPU microseconds per request of the
    cluster's mean throughput W; then the load generator's and the
    machine's cores."""
    s0, s1, mon, ports = json.loads(a[0]), json.loads(a[1]), a[2], a[3].split()
    rate = sum(float(x) for x in a[4:]) / max(1, len(a[4:]))
    hz = os.sysconf("SC_CLK_TCK")
    dt = s1["t"] - s0["t"]
    lead = {}
    ss = samples(mon)
    if ss:
        for r in ss[-1]["ranges"]:
            p = str(r["leader"]).rsplit(":", 1)[-1]
            lead[p] = lead.get(p, 0) + 1
    parts, tot = [], 0.0
    for i, p in enumerate(ports):
        x0, x1 = s0["nodes"][i], s1["nodes"][i]
        if x0 is None or x1 is None:
            parts.append("node %d gone" % i)
            continue
        cores = (x1 - x0) / hz / dt
        tot += cores
        t = ""
        if i < len(s0["thr"]) and i < len(s1["thr"]):
            np_ = s1["thr"][i][0] - s0["thr"][i][0]
            nt = s1["thr"][i][1] - s0["thr"][i][1]
            t = ", throttled %.0f%%" % (100.0 * nt / np_ if np_ else 0)
        parts.append("node %d %.2f cores (leads %d%s, %.1f us/req)" % (
            i, cores, lead.get(p, 0), t, 1e6 * cores / rate if rate else 0))
    gen = (s1["gen"] - s0["gen"]) / hz / dt
    busy = (s1["busy"] - s0["busy"]) / max(1, s1["all"] - s0["all"]) * (os.cpu_count() or 1)
    print("%s; nodes %.2f cores, %.1f us/req; load generators %.2f cores "
          "(%d processes, %.1f us/req); machine busy %.2f of %d cores" % (
              "; ".join(parts), tot, 1e6 * tot / rate if rate else 0, gen, s1["ngen"],
              1e6 * gen / rate if rate else 0, busy, os.cpu_count() or 1))

def cmd_cpucores(a):
    """cpucores CPUTXT: the per-node cores of a cpureport line, "a b c"."""
    print(" ".join(re.findall(r"node \d+ ([0-9.]+) cores", open(a[0]).read())))

# ---- monitor ---------------------------------------------------------------

def cmd_monitor(a):
    """monitor PARTKV OUT LOGOUT ERRFILE PORT...: `range list --json` once
    a second into OUT ({"t", "ranges"} per line), and the new lines of
    ERRFILE every 0.1 s into LOGOUT ("unix_time line")."""
    partkv, out, logout, errfile = a[:4]
    ports = a[4:]
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    fo, fl = open(out, "a", buffering=1), open(logout, "a", buffering=1)
    ef = open(errfile, "rb")  # lines already there get the start time
    pend = b""
    nxt = time.time()
    k = 0
    while True:
        data = ef.read()
        if data:
            pend += data
            *lines, pend = pend.split(b"\n")
            now = time.time()
            for l in lines:
                fl.write("%.3f %s\n" % (now, l.decode(errors="replace")))
        if time.time() >= nxt:
            nxt += 1.0
            for i in range(len(ports)):
                port = ports[(k + i) % len(ports)]
                t = time.time()
                try:
                    r = subprocess.run([partkv, "range", "list", "--cluster",
                                        "127.0.0.1:" + port, "--json"],
                                       capture_output=True, timeout=5)
                    ranges = json.loads(r.stdout) if r.returncode == 0 else None
                except (subprocess.TimeoutExpired, ValueError):
                    ranges = None
                if ranges is not None:
                    fo.write(json.dumps({"t": t, "ranges": ranges}) + "\n")
                    break
                k += 1
        time.sleep(0.1)

# ---- analysis --------------------------------------------------------------

SPLIT = re.compile(r"range (\d+) split at")
MERGE = re.compile(r"range (\d+) merged into range (\d+)")

def samples(mon):
    out = []
    for line in open(mon):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out

def logs(logf, t0=0, t1=1e30):
    out = []
    for line in open(logf):
        t, _, rest = line.rstrip("\n").partition(" ")
        if t0 <= float(t) <= t1:
            out.append((float(t), rest))
    return out

def bounds(s):
    return set(r["lo"] for r in s["ranges"] if r["lo"] is not None)

def ids(s):
    return set(r["range"] for r in s["ranges"])

def qps(r):
    return (r.get("reads_per_sec") or 0) + (r.get("writes_per_sec") or 0)

def bound_events(ss):
    """(t, "split"|"merge", bound) from consecutive samples' bounds."""
    ev = []
    for a, b in zip(ss, ss[1:]):
        ba, bb = bounds(a), bounds(b)
        ev += [(b["t"], "split", k) for k in sorted(bb - ba)]
        ev += [(b["t"], "merge", k) for k in sorted(ba - bb)]
    return ev

def nearest(ss, t):
    return min(ss, key=lambda s: abs(s["t"] - t)) if ss else None

def leaders_balanced(s):
    cnt = {}
    for r in s["ranges"]:
        cnt[r["leader"]] = cnt.get(r["leader"], 0) + 1
    vals = list(cnt.values()) + [0] * (3 - len(cnt))
    return max(vals) - min(vals) <= 1

def log_counts(lg):
    sp = [(t, l) for t, l in lg if SPLIT.search(l)]
    mg = [(t, l) for t, l in lg if MERGE.search(l)]
    return sp, mg

def cmd_stable(a):
    """stable MON SECONDS: "yes" if the range count has not changed for
    SECONDS and the leaders are balanced (counts within 1)."""
    ss = samples(a[0])
    if not ss:
        print("no"); return
    last = ss[-1]
    span = [s for s in ss if s["t"] >= last["t"] - float(a[1])]
    ok = (last["t"] - ss[0]["t"] >= float(a[1]) and
          all(ids(s) == ids(last) for s in span) and leaders_balanced(last))
    print("yes" if ok else "no")

def cmd_count(a):
    """count MON: the number of ranges in the last sample."""
    ss = samples(a[0])
    print(len(ss[-1]["ranges"]) if ss else 0)

def row(*f):
    print("\t".join(str(x) for x in f))

def verdicts(ss, t0, t1, pick):
    seen = {}
    for s in ss:
        if t0 <= s["t"] <= t1:
            r = pick(s)
            if r is not None:
                v = r.get("load_split") or "-"
                seen[v] = seen.get(v, 0) + 1
    return seen

def hot(s):
    """The range with the most requests per second."""
    rs = [r for r in s["ranges"] if "load_split" in r]
    return max(rs, key=qps) if rs else None

def cmd_case1(a):
    mon, logf, t0, qps_on, base, after, get_rate = a[0], a[1], float(a[2]), float(a[3]), float(a[4]), float(a[5]), float(a[6])
    ss = [s for s in samples(mon) if s["t"] >= t0 - 5]
    lg = logs(logf, t0)
    sp, _ = log_counts(lg)
    first_log = sp[0][0] if sp else None
    first_mon = next((s["t"] for s in ss if s["t"] >= t0 and len(s["ranges"]) > 1), None)
    first = first_log if first_log is not None else first_mon
    cross = next((s["t"] for s in ss if s["t"] >= t0 and any(
        (r.get("load_split") not in (None, "off")) or qps(r) >= qps_on for r in s["ranges"])), None)
    at60 = nearest([s for s in ss if s["t"] >= t0], t0 + 60)
    n60 = len(at60["ranges"]) if at60 else 0
    # how the range count grew: seconds after load start -> ranges
    grow, lastn = [], 0
    for s in ss:
        if s["t"] >= t0 and len(s["ranges"]) != lastn:
            lastn = len(s["ranges"])
            grow.append("%.0fs:%d" % (s["t"] - t0, lastn))
    print("case 1: threshold crossed at %s s, first split at %s s (log) / %s s (range list), "
          "%d load splits by log; ranges over time: %s" % (
              "%.1f" % (cross - t0) if cross else "never",
              "%.1f" % (first_log - t0) if first_log else "never",
              "%.1f" % (first_mon - t0) if first_mon else "never",
              len(sp), " ".join(grow)), file=sys.stderr)
    last = ss[-1] if ss else None
    if last:
        cnt = {}
        for r in last["ranges"]:
            cnt[r["leader"]] = cnt.get(r["leader"], 0) + 1
        print("case 1: at the end %d ranges, leaders per node %s" % (
            len(last["ranges"]), " ".join(str(v) for _, v in sorted(cnt.items()))), file=sys.stderr)
    d = (first - cross) if (first and cross) else None
    row("1", "first load split after threshold crossed",
        "%.1f s (%.1f s after load start)" % (d, first - t0) if d is not None else "no split",
        "<= 8 s", "PASS" if d is not None and d <= 8 else "FAIL")
    row("1", "ranges at 60 s", n60, ">= 8", "PASS" if n60 >= 8 else "FAIL")
    ratio = after / base if base else 0
    row("1", "throughput split+balanced / no split",
        "%.2fx (%.0f / %.0f req/s)" % (ratio, after, base), ">= 2x",
        "PASS" if ratio >= 2 else "FAIL")

def cmd_case2(a):
    mon, logf, t0, t1 = a[0], a[1], float(a[2]), float(a[3])
    ss = samples(mon)
    lg = logs(logf, t0, t1 + 2)
    sp, mg = log_counts(lg)
    mon_ev = [e for e in bound_events([s for s in ss if s["t"] >= t0 - 2]) if e[0] <= t1 + 2]
    last_range = lambda s: next((r for r in s["ranges"] if r["hi"] is None and "load_split" in r), None)
    seen = verdicts(ss, t0, t1, last_range)
    final = last_range(nearest([s for s in ss if s["t"] <= t1 - 2], t1 - 2)) or {}
    print("case 2: load splits by log %d, bounds added per range list %d; hot (last) "
          "range's load_split over %d samples: %s; at the end: %s" % (
              len(sp), sum(1 for e in mon_ev if e[1] == "split"), sum(seen.values()),
              ", ".join("%s %d" % kv for kv in sorted(seen.items(), key=lambda kv: -kv[1])),
              json.dumps({k: final.get(k) for k in ("range", "lo", "hi", "writes_per_sec",
                                                    "load_split", "split_key")})), file=sys.stderr)
    row("2", "load splits, monotonic inserts 60 s", len(sp), "<= 2", "PASS" if len(sp) <= 2 else "FAIL")
    row("2", "hot range load_split", "%s (final: %s)" % (
        "increasing seen %d/%d s" % (seen.get("increasing", 0), sum(seen.values())),
        final.get("load_split")), '"increasing"',
        "PASS" if seen.get("increasing", 0) > 0 else "FAIL")

def cmd_case3(a):
    mon, logf, t0, t1, secs = a[0], a[1], float(a[2]), float(a[3]), a[4]
    ss = samples(mon)
    sp, _ = log_counts(logs(logf, t0, t1 + 2))
    seen = verdicts(ss, t0, t1, hot)
    print("case 3: load splits by log %d; busiest range's load_split over %d samples: %s" % (
        len(sp), sum(seen.values()),
        ", ".join("%s %d" % kv for kv in sorted(seen.items(), key=lambda kv: -kv[1]))), file=sys.stderr)
    row("3", "splits, full-range scans %s s" % secs, len(sp), "0", "PASS" if not sp else "FAIL")

def cmd_case4(a):
    mon, logf, t0, t1, t_back, delay, secs = a[0], a[1], float(a[2]), float(a[3]), a[4], float(a[5]), a[6]
    ss = samples(mon)
    lg = logs(logf, t0, t1)
    sp, mg = log_counts(lg)
    during = [s for s in ss if t0 - 2 <= s["t"] <= t1]
    ev = bound_events(during)
    finest = max(during, key=lambda s: len(s["ranges"])) if during else None
    maxr = len(finest["ranges"]) if finest else 1
    # attribute each event (a bound appearing or disappearing) to the range
    # of the finest layout seen during the load that holds the bound
    per = {}
    if finest:
        for _, kind, b in ev:
            for r in finest["ranges"]:
                if (r["lo"] is None or r["lo"] <= b) and (r["hi"] is None or b < r["hi"]):
                    per[r["range"]] = per.get(r["range"], 0) + 1
                    break
    per_bound = {}
    for _, kind, b in ev:
        per_bound[b] = per_bound.get(b, 0) + 1
    nev = len(sp) + len(mg)
    hand = 0
    for x, y in zip(during, during[1:]):
        lx = {r["range"]: r["leader"] for r in x["ranges"]}
        hand += sum(1 for r in y["ranges"] if r["range"] in lx and lx[r["range"]] != r["leader"])
    worst = max(per.values()) if per else 0
    print("case 4: during the load %d splits and %d merges by log, %d bound changes by range "
          "list, %d leader changes; at most %d ranges; events per range of that layout: %s; "
          "most events at one bound: %d; events in time: %s" % (
              len(sp), len(mg), len(ev), hand, maxr,
              " ".join("r%s:%d" % kv for kv in sorted(per.items())) or "-",
              max(per_bound.values()) if per_bound else 0,
              " ".join("%.0fs:%s" % (t - t0, k) for t, k, _ in ev) or "-"), file=sys.stderr)
    row("4", "split/merge events per range, %s s alternating" % secs,
        "max %d per range (%d events / %d ranges max = %.1f)" % (worst, nev, maxr, nev / maxr),
        "<= 2", "PASS" if worst <= 2 and nev / maxr <= 2 else "FAIL")
    row("4", "(leader changes of a range during the load)", hand, "-", "-")
    if t_back == "never":
        row("4", "merge back after the load stops", "not within %.0f s" % (delay + 180),
            "<= %.0f s" % (delay + 120), "FAIL")
    else:
        row("4", "merge back after the load stops", "%.0f s" % float(t_back),
            "<= %.0f s" % (delay + 120), "PASS" if float(t_back) <= delay + 120 else "FAIL")

if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](sys.argv[2:])
EOF

rs() { "$PY" "$work/rs.py" "$@"; }
now() { echo "$EPOCHREALTIME"; }
# sleep_until T: sleeps until Unix time T (a float)
sleep_until() {
    local d
    d=$("$PY" -c "import sys,time;print(max(0.0,float(sys.argv[1])-time.time()))" "$1")
    sleep "$d"
}

# cluster NAME ARG...: a fresh 3-node R = 3 range cluster in $work/NAME
cluster() {
    local name=$1
    shift
    start_partkv_cluster 3 "$work/$name" "$secret" --replicas 3 --scheme range "$@"
    cluster_pids+=("${pkc_pids[@]}")
    cname=$name
}

# stop_cluster: stops it, and reports what looks wrong in its log
stop_cluster() {
    local t
    stop_ours "$pkc_pid" "$work/"
    pkc_pid=""
    t=$(grep -iE "died|abandoned|failed|assert|panic|Segmentation" "$work/$cname.err" | head -20 || true)
    if [[ -n $t ]]; then
        echo "$PROG: $cname: node log lines to look at:" >&2
        printf '    %s\n' "${t//$'\n'/$'\n'    }" >&2
    fi
    cg_remove "${node_cgs[@]}"
    node_cgs=()
}

# preload PORT: NKEYS keys "key:%012d" with 16-byte values, in key order,
# through redis-cli --pipe
preload() {
    "$PY" - "$NKEYS" <<'EOF' | redis-cli -p "$1" --pipe >"$work/$cname.preload" 2>&1
import sys
n = int(sys.argv[1])
out = sys.stdout.buffer
for b in range(0, n, 10000):
    out.write(b"".join(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$16\r\n%s\r\n" % (i, b"v" * 16)
                       for i in range(b, min(n, b + 10000))))
EOF
    grep -q "errors: 0, replies: $NKEYS" "$work/$cname.preload" ||
        { cat "$work/$cname.preload" >&2; die "preload failed"; }
}

# monitor_start: range list once a second and the timestamped node log
monitor_start() {
    : >"$work/$cname.mon"
    : >"$work/$cname.log"
    "$PY" "$work/rs.py" monitor "$PARTKV" "$work/$cname.mon" "$work/$cname.log" \
        "$work/$cname.err" "${pkc_ports[@]}" &
    mon_pid=$!
    bg_pids+=("$mon_pid")
    sleep 1.5
}
monitor_stop() { stop_ours "$mon_pid" "$work/"; }

nranges() { rs count "$work/$cname.mon"; }

# rb_start LOG TEST:CONNS...: the redis-benchmark load, every spec on every node
rb_start() {
    local log=$1 spec p specs=()
    shift
    for p in "${pkc_ports[@]}"; do
        for spec in "$@"; do specs+=("$p:$spec"); done
    done
    "$PY" "$work/rs.py" rbload "$log" "$NKEYS" "${specs[@]}" &
    rb_pid=$!
    bg_pids+=("$rb_pid")
}
rb_stop() { stop_ours "$rb_pid" "$work/"; }

# rb_windows LOG: 3 windows of WINDOW_S; prints "median_total
# median_set_share% exits node_cpus w1 w2 w3" (node_cpus: the CPUs the three
# nodes used over the windows, of the machine's 2), and writes the CPU
# detail over the windows (per node, the load generators, the machine) to
# $work/cpu.txt
rb_windows() {
    local log=$1 i a b w tot=() share=() ex=0 line c0 c1 a0 s0 s1
    a0=$(now)
    s0=$(rs cpusnap "$rb_pid" "${pkc_pids[@]}" -- "${node_cgs[@]}")
    c0=$(sum_ticks cpu_ticks "${pkc_pids[@]}" 2>/dev/null) || c0=""
    for ((i = 0; i < 3; i++)); do
        a=$(now)
        sleep "$WINDOW_S"
        b=$(now)
        sleep 0.4 # the last tick of the window is written
        read -ra w <<<"$(rs window "$log" "$a" "$b")"
        tot+=("${w[0]}")
        share+=("$("$PY" -c "import sys;t=float(sys.argv[1]);print('%.1f'%(100*float(sys.argv[2])/t if t else 0))" "${w[0]}" "${w[2]}")")
        ex=$((ex + w[3]))
    done
    line=$("$PY" -c "import statistics,sys;v=[float(x) for x in sys.argv[1:4]];s=[float(x) for x in sys.argv[4:]];print('%.0f %.1f' % (statistics.median(v), statistics.median(s)))" "${tot[@]}" "${share[@]}")
    c1=$(sum_ticks cpu_ticks "${pkc_pids[@]}" 2>/dev/null) || c1=""
    s1=$(rs cpusnap "$rb_pid" "${pkc_pids[@]}" -- "${node_cgs[@]}")
    rs cpureport "$s0" "$s1" "$work/$cname.mon" "${pkc_ports[*]}" "${tot[@]}" >"$work/cpu.txt"
    if [[ -n $c0 && -n $c1 ]]; then # CPUs the three nodes used, of 2
        c1=$("$PY" -c "import os,sys,time;print('%.2f' % ((int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf('SC_CLK_TCK') / (time.time() - float(sys.argv[3]))))" "$c0" "$c1" "$a0")
    else
        c1="?"
    fi
    echo "$line $ex $c1 ${tot[*]}"
}

result() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }

# --- case 1 ------------------------------------------------------------------
case1() {
    local w get_rate base base_share qps t0 after t_end i cpu_base
    echo
    echo "== case 1: uniform 95% GET / 5% SET on one range, $NKEYS keys"
    cluster c1-nosplit --split-qps 0
    cg_cap
    preload "${pkc_ports[0]}"
    monitor_start
    rb_start "$work/c1-get.rb" "get:$((C_GET + C_SET))"
    sleep 3
    read -ra w <<<"$(rb_windows "$work/c1-get.rb")"
    rb_stop
    get_rate=${w[0]}
    echo "GET only, one range, no splits: ${w[0]} req/s (windows ${w[*]:4}; redis-benchmark restarts ${w[2]}; nodes used ${w[3]} CPUs)"
    echo "  CPU: $(<"$work/cpu.txt")"
    rb_start "$work/c1-base.rb" "get:$C_GET" "set:$C_SET"
    sleep 3
    read -ra w <<<"$(rb_windows "$work/c1-base.rb")"
    rb_stop
    base=${w[0]}
    base_share=${w[1]}
    echo "95/5 mix, one range, no splits: ${w[0]} req/s, SET share ${w[1]}% (windows ${w[*]:4}; restarts ${w[2]}; nodes used ${w[3]} CPUs)"
    echo "  CPU: $(<"$work/cpu.txt")"
    cpu_base=$(rs cpucores "$work/cpu.txt")
    monitor_stop
    stop_cluster
    if [[ $QPS_OF == mix ]]; then
        qps=$((${base%.*} / 4))
        echo "--split-qps $qps (a quarter of the 95/5 mix's rate on one range)"
    else
        qps=$((${get_rate%.*} / 4))
        echo "--split-qps $qps (a quarter of the GET rate)"
    fi
    ((qps > 0)) || die "no rate measured"

    cluster c1-split --split-qps "$qps"
    cg_cap
    preload "${pkc_ports[0]}"
    monitor_start
    sleep 2
    echo "after the preload: $(nranges) range(s)"
    t0=$(now)
    rb_start "$work/c1-split.rb" "get:$C_GET" "set:$C_SET"
    sleep_until "$("$PY" -c "print(float('$t0') + 62)")"
    echo "at 60 s: $(nranges) ranges"
    # splitting and leader balancing done: the range set unchanged for 15 s
    # and the leaders within one of each other; at most until 150 s
    t_end=$("$PY" -c "print(float('$t0') + 150)")
    for ((i = 0; i < 90; i++)); do
        [[ $(rs stable "$work/$cname.mon" 15) == yes ]] && break
        "$PY" -c "import sys,time;sys.exit(time.time() < float(sys.argv[1]))" "$t_end" && break
        sleep 1
    done
    echo "measuring at $("$PY" -c "import time;print('%.0f' % (time.time() - float('$t0')))") s: $(nranges) ranges ($(rs stable "$work/$cname.mon" 15 | sed 's/yes/stable, leaders balanced/;s/no/not stable/'))"
    read -ra w <<<"$(rb_windows "$work/c1-split.rb")"
    rb_stop
    after=${w[0]}
    echo "95/5 mix after splitting: ${w[0]} req/s, SET share ${w[1]}% (windows ${w[*]:4}; restarts ${w[2]}, in the whole run $(grep -c EXIT "$work/c1-split.rb" || true); nodes used ${w[3]} CPUs)"
    echo "  CPU: $(<"$work/cpu.txt")"
    monitor_stop
    rs case1 "$work/$cname.mon" "$work/$cname.log" "$t0" "$qps" "$base" "$after" "$get_rate" >>"$results"
    result 1 "(load: GET rate, --split-qps, SET share)" \
        "GET ${get_rate%.*}/s, qps $qps, SET $base_share%" "-" "-"
    result 1 "(cores per node, no split / split)" \
        "${NODE_CPU:+cap $NODE_CPU: }$cpu_base / $(rs cpucores "$work/cpu.txt")" "-" "-"
    stop_cluster
}

# --- case 2 ------------------------------------------------------------------
case2() {
    local rate=$((2 * QPS)) t0 t1
    echo
    echo "== case 2: monotonic inserts at $rate/s for 60 s, --split-qps $QPS, --split-size 1 GiB"
    cluster c2 --split-qps "$QPS" --split-size 1073741824
    monitor_start
    rs load mono "$work/c2.load" 60 "$rate" 2 "$NKEYS" "$SCAN_PAGE" "${pkc_ports[@]}"
    read -r t0 t1 <"$work/c2.load.t"
    sleep 2
    monitor_stop
    rs case2 "$work/$cname.mon" "$work/$cname.log" "$t0" "$t1" >>"$results"
    stop_cluster
}

# --- case 3 ------------------------------------------------------------------
case3() {
    local rate=$((3 * QPS / 2)) t0 t1
    echo
    echo "== case 3: 95% full-range scans (pages of $SCAN_PAGE) + 5% GETs at $rate/s for $SCAN_S s, --split-qps $QPS"
    cluster c3 --split-qps "$QPS"
    preload "${pkc_ports[0]}"
    monitor_start
    sleep 3
    echo "after the preload: $(nranges) range(s)"
    rs load scan "$work/c3.load" "$SCAN_S" "$rate" 2 "$NKEYS" "$SCAN_PAGE" "${pkc_ports[@]}"
    read -r t0 t1 <"$work/c3.load.t"
    sleep 2
    monitor_stop
    rs case3 "$work/$cname.mon" "$work/$cname.log" "$t0" "$t1" "$SCAN_S" >>"$results"
    stop_cluster
}

# --- case 4 ------------------------------------------------------------------
case4() {
    local lo=$((4 * QPS / 5)) hi=$((6 * QPS / 5)) t0 t1 n0 back=never i n
    echo
    echo "== case 4: uniform 95/5 load alternating $hi/s <-> $lo/s every 30 s for $ALT_S s," \
        "--split-qps $QPS --merge-delay $MERGE_DELAY"
    cluster c4 --split-qps "$QPS" --merge-delay "$MERGE_DELAY"
    preload "${pkc_ports[0]}"
    monitor_start
    sleep 3
    n0=$(nranges)
    echo "after the preload: $n0 range(s)"
    rs load uniform "$work/c4.load" "$ALT_S" "alt:$lo:$hi:30" 2 "$NKEYS" "$SCAN_PAGE" "${pkc_ports[@]}"
    read -r t0 t1 <"$work/c4.load.t"
    echo "at the end of the load: $(nranges) ranges; waiting up to $((MERGE_DELAY + 180)) s for them to merge back to $n0"
    for ((i = 0; i < MERGE_DELAY + 180; i++)); do
        sleep 1
        n=$(nranges)
        if ((n <= n0)); then
            back=$("$PY" -c "import time;print('%.1f' % (time.time() - float('$t1')))")
            break
        fi
    done
    echo "merged back: $back s after the load stopped"
    sleep 1
    monitor_stop
    rs case4 "$work/$cname.mon" "$work/$cname.log" "$t0" "$t1" "$back" "$MERGE_DELAY" "$ALT_S" >>"$results"
    stop_cluster
}

if [[ $CLIENT == smart ]]; then
    load_from="rload (range-aware: to the leaders)"
else
    load_from="redis-benchmark (the nodes forward)"
fi
echo "range-split: 3 nodes, R = 3, forward mode, range scheme; cases $CASES; case 1 load from $load_from, --split-qps from the $QPS_OF rate${NODE_CPU:+; case 1 nodes capped at $NODE_CPU of a core each (BENCH_NODE_CPU)}"
machine_info
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
IFS=, read -ra todo <<<"$CASES"
for c in "${todo[@]}"; do
    echo
    echo "load average before case $c: $(cut -d' ' -f1-3 /proc/loadavg)"
    case $c in
    1) case1 ;;
    2) case2 ;;
    3) case3 ;;
    4) case4 ;;
    *) die "unknown case $c (BENCH_CASES takes 1,2,3,4)" ;;
    esac
done

echo
printf '%-4s %-48s %-46s %-10s %s\n' case criterion measured target verdict
printf '%s\n' "$(printf -- '-%.0s' {1..118})"
while IFS=$'\t' read -r c crit meas tgt v; do
    printf '%-4s %-48s %-46s %-10s %s\n' "$c" "$crit" "$meas" "$tgt" "$v"
done <"$results"
