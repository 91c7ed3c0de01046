"""Start/stop a local partkv cluster (`partkv cluster up`) for tests, and
small helpers around it (free port blocks, redis-cli, PK.COORD calls).

Like server.py, nothing is ever signalled by name: the Cluster object only
signals the PID of the `cluster up` process it started itself, and node
PIDs taken from its summary (after checking /proc/<pid>/cmdline still
names this cluster's data directory, so a reused PID is never hit).
"""
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import server as pkserver

SUMMARY_RE = re.compile(
    r"^partkv cluster: (?P<nodes>\d+) nodes, (?P<slots>\d+) (?P<kind>\S+) "
    r"partitions, (?P<replicas>\d+) replicas, "
    r"(?:acks (?P<acks>leader|quorum|all), )?(?P<mode>redirect|forward) "
    r"mode, coordinator on (?P<host>\S+):(?P<port>\d+), "
    r"data in (?P<dir>.*) \((?P<map>new|existing) map\)$")
NODE_RE = re.compile(
    r"^  node (\d+)  (\S+):(\d+)  pid (\d+)  id ([0-9a-f]{40})$")
TRY_RE = re.compile(r"^try: redis-cli (?:--tls --cacert \S+ )?(?:-c )?-p (\d+)$")

NODES_PREFIX = "/partkv/default/nodes/"
MAP_KEY = "/partkv/default/map"


class ClusterError(Exception):
    pass


def free_port_block(n, tries=200):
    """A base port P such that P..P+n-1 are all free on 127.0.0.1 right
    now (checked by binding them all at once).  Chosen below the Linux
    ephemeral range so that port-0 binds elsewhere are unlikely to take
    them before the cluster does."""
    rnd = random.Random()
    for _ in range(tries):
        base = rnd.randrange(20000, 32000 - n)
        socks = []
        try:
            for i in range(n):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise ClusterError("no block of %d free ports found" % n)


class Node:
    def __init__(self, index, host, port, pid, id):
        self.index = index
        self.host = host
        self.port = port
        self.pid = pid
        self.id = id

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def raw(self, **kw):
        """pkserver.RespClient on this node (errors returned, not raised)."""
        kw.setdefault("timeout", 10.0)
        return pkserver.RespClient(self.host, self.port, **kw)

    def client(self, **kw):
        import redis
        kw.setdefault("decode_responses", True)
        kw.setdefault("socket_timeout", 10)
        kw.setdefault("socket_connect_timeout", 5)
        return redis.Redis(host=self.host, port=self.port, **kw)

    def __repr__(self):
        return "<Node %d %s pid %d id %s>" % (self.index, self.addr,
                                               self.pid, self.id)


class Cluster(pkserver.Process):
    """`partkv cluster up` in the foreground, in its own session.

    start() waits for the line "ready" and parses the summary into
    self.summary (dict) and self.nodes (list of Node).  stop() sends
    SIGTERM to the `cluster up` PID and returns its exit status.
    """

    def __init__(self, nodes=3, base_port=0, replicas=1, secret=None,
                 dir=None, ready_timeout=30.0, extra=()):
        self.n = nodes
        self.extra = list(extra)
        self.base_port = base_port
        self.replicas = replicas
        self.secret = secret or "s-%016x" % random.getrandbits(64)
        self._own_dir = dir is None
        self.root = dir or tempfile.mkdtemp(prefix="partkv-cl-")
        if self._own_dir:
            pkserver.own(self)
        self.dir = os.path.join(self.root, "data")
        self.ready_timeout = ready_timeout
        self.proc = None
        self.returncode = None
        self.starts = 0
        self.nodes = []
        self.summary = None
        self._out = []
        self._errpath = None
        self._drain = None
        self._all_node_pids = set()

    def argv(self):
        a = [pkserver.partkv_path(), "cluster", "up", "--nodes", str(self.n),
             "--base-port", str(self.base_port), "--dir", self.dir,
             "--secret", self.secret]
        if self.replicas is not None:
            a += ["--replicas", str(self.replicas)]
        return a + self.extra

    # -- lifecycle --------------------------------------------------------
    def start(self):
        if self.proc is not None and self.proc.poll() is None:
            raise ClusterError("already running")
        self._out = []
        self.nodes = []
        self.summary = None
        self.returncode = None
        self._errpath = os.path.join(self.root, "cluster.stderr.%d"
                                     % self.starts)
        errf = open(self._errpath, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=errf, cwd=self.root,
                start_new_session=True)
        finally:
            errf.close()
        self.starts += 1
        ready = threading.Event()
        self._drain = threading.Thread(target=self._drain_stdout,
                                       args=(self.proc, ready), daemon=True)
        self._drain.start()
        deadline = time.monotonic() + self.ready_timeout
        try:
            while not ready.wait(0.05):
                if self.proc.poll() is not None:
                    time.sleep(0.1)
                    if ready.is_set():
                        break
                    raise ClusterError(
                        "cluster up exited with %s before ready\n%s"
                        % (self.proc.returncode, self.logs()))
                if time.monotonic() > deadline:
                    raise ClusterError("no 'ready' within %.0fs\n%s"
                                       % (self.ready_timeout, self.logs()))
            self._parse()
        except BaseException:
            self.kill()
            raise
        return self

    def _drain_stdout(self, proc, ready):
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._out.append(line)
            if line == "ready":
                ready.set()
        proc.stdout.close()

    def _parse(self):
        lines = list(self._out)
        summ = [SUMMARY_RE.match(l) for l in lines]
        summ = [m for m in summ if m]
        if len(summ) != 1:
            raise ClusterError("no single summary line in:\n%s"
                               % "\n".join(lines))
        m = summ[0]
        self.summary = {
            "nodes": int(m.group("nodes")), "slots": int(m.group("slots")),
            "replicas": int(m.group("replicas")),
            "coord_host": m.group("host"),
            "coord_port": int(m.group("port")), "dir": m.group("dir"),
            "map": m.group("map"), "mode": m.group("mode"),
            "line": m.group(0)}
        for l in lines:
            nm = NODE_RE.match(l)
            if nm:
                self.nodes.append(Node(int(nm.group(1)), nm.group(2),
                                       int(nm.group(3)), int(nm.group(4)),
                                       nm.group(5)))
        if [n.index for n in self.nodes] != list(range(self.n)):
            raise ClusterError("expected %d node lines in:\n%s"
                               % (self.n, "\n".join(lines)))
        tries = [TRY_RE.match(l) for l in lines]
        tries = [t for t in tries if t]
        if not tries or int(tries[0].group(1)) != self.nodes[0].port:
            raise ClusterError("no 'try: redis-cli -c -p <node0>' in:\n%s"
                               % "\n".join(lines))
        self._all_node_pids.update(n.pid for n in self.nodes)

    def probe(self):
        """{node index: reply to CLUSTER SLOTS} right now (errors as
        pkserver.RespError)."""
        out = {}
        for n in self.nodes:
            with n.raw() as c:
                out[n.index] = c.call("CLUSTER", "SLOTS")
        return out

    def wait_serving(self, timeout=5.0):
        """Waits until every node answers CLUSTER INFO with cluster_state:ok
        (returns seconds waited; raises ClusterError on timeout)."""
        t0 = time.monotonic()
        pending = list(self.nodes)
        while pending:
            with pending[0].raw() as c:
                rep = c.call("CLUSTER", "INFO")
            if isinstance(rep, str) and rep.startswith("cluster_state:ok"):
                pending.pop(0)
                continue
            if time.monotonic() - t0 > timeout:
                raise ClusterError("%r not serving after %.1fs: %r\n%s"
                                   % (pending[0], timeout, rep, self.logs()))
            time.sleep(0.01)
        return time.monotonic() - t0

    def stop(self, timeout=15.0):
        """SIGTERM to `cluster up` (by PID); SIGKILL after timeout.
        Returns the exit status (negative = killed by that signal)."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if self.wait(timeout) is None:
                self.kill()
        return self.wait(timeout)

    def kill(self):
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        rc = self.wait(10.0)
        self.reap_orphans()
        return rc

    def _is_our_node(self, pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            return False
        return (b"server" in cmd and
                any(a.startswith(self.dir.encode()) for a in cmd))

    def node_alive(self, pid):
        """True if pid still runs one of this cluster's nodes (a zombie
        counts as gone)."""
        if not self._is_our_node(pid):
            return False
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"

    def kill_node(self, index, sig=signal.SIGKILL):
        n = self.nodes[index]
        if not self._is_our_node(n.pid):
            raise ClusterError("node %d pid %d is not running" % (index, n.pid))
        os.kill(n.pid, sig)

    def leftover_nodes(self):
        return sorted(p for p in self._all_node_pids if self.node_alive(p))

    def reap_orphans(self):
        """SIGKILL node PIDs from any summary that still run this cluster's
        nodes (only after `cluster up` itself is gone)."""
        for pid in self.leftover_nodes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def cleanup(self):
        self.stop()
        self.reap_orphans()
        if self._own_dir:
            shutil.rmtree(self.root, ignore_errors=True)
            pkserver.disown(self)

    # -- diagnostics ------------------------------------------------------
    def stdout_text(self):
        return "\n".join(self._out)

    def stderr_text(self):
        try:
            with open(self._errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def logs(self, limit=4000):
        return "--- stdout ---\n%s\n--- stderr ---\n%s" % (
            self.stdout_text()[-limit:], self.stderr_text()[-limit:])

    # -- clients ----------------------------------------------------------
    def rc(self, **kw):
        """redis.cluster.RedisCluster seeded with node 0."""
        from redis.cluster import RedisCluster
        kw.setdefault("decode_responses", True)
        kw.setdefault("socket_timeout", 10)
        kw.setdefault("socket_connect_timeout", 5)
        return RedisCluster(host=self.nodes[0].host, port=self.nodes[0].port,
                            **kw)

    def coord(self):
        """Raw client on node 0 that has sent PK.AUTH <secret>."""
        c = self.nodes[0].raw()
        rep = c.call("PK.AUTH", self.secret)
        if rep != "OK":
            c.close()
            raise ClusterError("PK.AUTH: %r" % (rep,))
        return c

    def node_for_slot(self, slot):
        """The Node serving slot according to CLUSTER SLOTS on node 0."""
        with self.nodes[0].raw() as c:
            slots = c.execute("CLUSTER", "SLOTS")
        for start, end, master, *_ in slots:
            if start <= slot <= end:
                for n in self.nodes:
                    if n.port == master[1]:
                        return n
                raise ClusterError("slot %d served by unknown %r"
                                   % (slot, master))
        raise ClusterError("slot %d not in CLUSTER SLOTS" % slot)

    def __repr__(self):
        return "<Cluster pid=%s dir=%s nodes=%r>" % (
            self.proc.pid if self.proc else None, self.dir, self.nodes)


def serving(c):
    """Starts cluster c and yields it serving; then checks that it ran to
    the end and stops cleanly, leaving no node behind (a module fixture's
    body: `yield from serving(Cluster(...))`)."""
    try:
        c.start()
        c.wait_serving()
        yield c
        assert c.alive(), "cluster up exited early:\n" + c.logs()
        assert c.stop() == 0
        assert not c.leftover_nodes()
    finally:
        c.cleanup()


def redis_cli(*args, timeout=15):
    """Runs /usr/bin/redis-cli (stdin closed); returns CompletedProcess."""
    return subprocess.run(["redis-cli", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def kv_dict(kv):
    """[key, value, create_rev, mod_rev, version, lease] -> dict."""
    assert isinstance(kv, list) and len(kv) == 6, kv
    return {"key": kv[0], "value": kv[1], "create_rev": kv[2],
            "mod_rev": kv[3], "version": kv[4], "lease": kv[5]}


def wait_until(pred, timeout, interval=0.05):
    """Polls pred() until truthy; returns (value, seconds waited)."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return v, time.monotonic() - t0
        time.sleep(interval)


# ---------------------------------------------------------------------------
# `partkv proxy`, slot arithmetic and the encoded map's epoch (used by
# test_proxy.py)
# ---------------------------------------------------------------------------

class Proxy(pkserver.Server):
    """`partkv proxy --port P --cluster HOST:PORT` as a pkserver.Server:
    same ready-line parsing ("partkv: ready on HOST:PORT pid PID"), same
    stop/kill by PID.  Its temp dir only holds its stderr."""

    def __init__(self, seed, port=0, extra=(), **kw):
        super().__init__(kind="partkv", port=port, extra=extra, **kw)
        self.seed = seed          # "host:port" of the node it follows

    def argv(self):
        return [pkserver.partkv_path(), "proxy", "--port", str(self.port),
                "--cluster", self.seed] + self.extra


def crc16(data):
    """CRC16/XMODEM (poly 0x1021, init 0), as Redis Cluster's key slots."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def keyslot(key):
    """Redis Cluster slot of key (hash tags honoured)."""
    k = key.encode() if isinstance(key, str) else key
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) & 0x3FFF


def slot_owner_ports(slots_reply, nslots=16384):
    """CLUSTER SLOTS reply -> list: slot -> port of its master (None if
    unassigned)."""
    out = [None] * nslots
    for start, end, master, *_ in slots_reply:
        for s in range(start, end + 1):
            out[s] = master[1]
    return out


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC32C (Castagnoli, reflected, init/xorout 0xffffffff)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


PMAP_MAGIC = b"PKMP"
PMAP_EPOCH_OFF = 8


def pmap_epoch(value):
    """The epoch of an encoded map (src/core/pk_pmap_codec.c, format 1:
    u64 big-endian at offset 8); checks magic and trailing CRC32C."""
    import struct
    if value[:4] != PMAP_MAGIC or len(value) < 32:
        raise ClusterError("not an encoded map: %r" % (value[:16],))
    if crc32c(value[:-4]) != struct.unpack(">I", value[-4:])[0]:
        raise ClusterError("encoded map fails its CRC32C")
    return struct.unpack(">Q", value[PMAP_EPOCH_OFF:PMAP_EPOCH_OFF + 8])[0]


def pmap_with_epoch(value, epoch):
    """value (an encoded map) with its epoch replaced and the CRC32C
    recomputed."""
    import struct
    pmap_epoch(value)  # validates
    b = bytearray(value)
    b[PMAP_EPOCH_OFF:PMAP_EPOCH_OFF + 8] = struct.pack(">Q", epoch)
    b[-4:] = struct.pack(">I", crc32c(bytes(b[:-4])))
    return bytes(b)


# ---------------------------------------------------------------------------
# Nodes outside `cluster up` (a joining node, a killed node started again)
# and the partkv CLI (used by test_rebalance.py)
# ---------------------------------------------------------------------------

def node_argv(pid, port=None):
    """The argv a running node was started with, from /proc/<pid>/cmdline
    (read it BEFORE killing the node).  With port, a "--port 0" is
    replaced by that port, so the node comes back on the address the map
    knows it by."""
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0")]
    while argv and argv[-1] == "":
        argv.pop()
    if port is not None and "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    return argv


class ArgvServer(pkserver.Server):
    """A partkv process started from an exact argv (e.g. node_argv() of a
    cluster node that was killed), as a pkserver.Server: same ready-line
    check, same stop/kill by PID.  Its own temp dir only holds its
    stdout/stderr; the data directory is whatever argv names."""

    def __init__(self, argv, **kw):
        port = 0
        if "--port" in argv:
            port = int(argv[argv.index("--port") + 1])
        super().__init__(kind="partkv", port=port, **kw)
        self._argv = list(argv)

    def argv(self):
        return list(self._argv)


def join_server(cluster, fsync=None, extra=()):
    """A pkserver.Server (not started) that joins cluster through node 0:
    `partkv server --port 0 --dir <tmp> --join <node0> --cluster-secret S`.
    The caller starts it and must stop it (cleanup())."""
    n0 = cluster.nodes[0]
    return pkserver.Server(kind="partkv", fsync=fsync,
                           extra=["--join", n0.addr, "--cluster-secret",
                                  cluster.secret] + list(extra))


def partkv_cli(*args, timeout=60):
    """Runs `partkv ARGS...` (stdin closed); returns CompletedProcess with
    text stdout/stderr."""
    return subprocess.run([pkserver.partkv_path(), *args],
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)
