"""Online rebalancing end to end: `partkv rebalance plan|apply|status|pause|
resume|cancel` and `partkv node drain|remove|weight` against a real
`partkv cluster up` (3 nodes, R=1) plus nodes started here, with real
clients running the whole time.

Covered:
  * a 4th node joins a loaded cluster and a balanced plan is applied while
    a RedisCluster writer and reader and a plain client behind
    `partkv proxy` keep going: no acknowledged write lost, no client
    error, the final map is the plan, every node ends with 4096 slots and
    the sources drop what they gave away;
  * kill -9 of the source, then of the target, in the middle of a
    throttled move, each restarted with the same argv: apply finishes by
    itself and every slot has exactly one owner holding its keys;
  * cancel, pause/resume and status from another process while a
    throttled apply runs;
  * drain + remove of a node, a stale plan refused, and the CLI's small
    contracts (0 moves when balanced, bad flags exit 2 with one line,
    unknown node, ring moves more than balanced).

"Throttled" tests make the plan first, then put ~20 MB (2,000 values of
10 KB, hash-tagged into 20 slots) into slots that plan moves from node 1 to
the new node, so that at --rate 4MB/s those moves take several seconds.
The driver starts moves sorted by source, so node 0's (small) moves go
first and node 1's heavy ones follow.

Every process is started on 127.0.0.1 with ephemeral ports and stopped by
its PID (the `procs` fixture and cluster_factory); nothing is signalled
by name.  Slow tests carry the `slow` mark (run them alone with -m slow);
every wait is bounded.
"""
import json
import logging
import os
import random
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter

import pytest
import redis
from redis.crc import key_slot

import pmap
import server as pkserver
from cluster import (Proxy, join_server, partkv_cli, slot_owner_ports,
                     wait_until)

pytestmark = pytest.mark.partkv_only

slow = pytest.mark.slow  # registered in conftest.py

NSLOTS = 16384
HEAVY_SLOTS_N = 20
HEAVY_KEYS_PER_SLOT = 100
HEAVY_VALUE = 10_000
APPLY_TIMEOUT = 60


# ---------------------------------------------------------------------------
# helpers: the CLI
# ---------------------------------------------------------------------------

def cli(cl, *args, timeout=60):
    """`partkv ARGS --cluster <node0> --secret S`."""
    return partkv_cli(*args, "--cluster", cl.nodes[0].addr, "--secret",
                      cl.secret, timeout=timeout)


def make_plan(cl, *extra):
    """`rebalance plan --json` -> the parsed plan."""
    p = cli(cl, "rebalance", "plan", "--json", *extra)
    assert p.returncode == 0, "rebalance plan failed: %s%s" % (p.stdout,
                                                               p.stderr)
    return json.loads(p.stdout)


def status(cl):
    """`rebalance status --json` -> dict."""
    p = cli(cl, "rebalance", "status", "--json")
    assert p.returncode == 0, "rebalance status failed: %s" % p.stderr
    return json.loads(p.stdout)


class Apply:
    """`partkv rebalance apply ID --yes ...` in the background, output in
    files.  Registered in procs, so teardown kills it by PID if a test
    left it running."""

    def __init__(self, cl, procs, plan_id, *extra):
        self.dir = tempfile.mkdtemp(prefix="partkv-apply-")
        self.out = open(os.path.join(self.dir, "stdout"), "w+")
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.cl, self.procs = cl, procs
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [pkserver.partkv_path(), "rebalance", "apply", plan_id,
             "--cluster", cl.nodes[0].addr, "--secret", cl.secret, "--yes",
             *extra],
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err,
            start_new_session=True)
        procs.append(self)

    def running(self):
        return self.proc.poll() is None

    def wait(self, timeout=APPLY_TIMEOUT):
        """Exit status (asserts it exits within timeout)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("rebalance apply still running after %ds\n%s"
                                 "\n%s" % (timeout, self.text(),
                                           diagnostics(self.cl, self.procs)))

    def text(self):
        parts = []
        for name, f in (("stdout", self.out), ("stderr", self.err)):
            f.flush()
            f.seek(0)
            parts.append("--- apply %s ---\n%s" % (name, f.read()[-3000:]))
        return "\n".join(parts)

    def cleanup(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.out.close()
        self.err.close()
        for name in ("stdout", "stderr"):
            try:
                os.unlink(os.path.join(self.dir, name))
            except OSError:
                pass
        os.rmdir(self.dir)


# ---------------------------------------------------------------------------
# helpers: the cluster's state
# ---------------------------------------------------------------------------

def call(node, *args):
    """One command on a node (anything with host/port), errors raised."""
    with pkserver.RespClient(node.host, node.port, timeout=10) as c:
        return c.execute(*args)


def owners(node):
    """slot -> master port, per CLUSTER SLOTS on node."""
    return slot_owner_ports(call(node, "CLUSTER", "SLOTS"))


def answers_ping(node):
    """True once node accepts a connection and answers PING."""
    try:
        return call(node, "PING") == "PONG"
    except OSError:
        return False


def converged_owners(nodes, timeout=10):
    """slot -> port once every node's CLUSTER SLOTS agrees (asserts).  A
    node that refuses the connection (one just restarted after kill -9,
    not listening yet) is asked again until the timeout."""
    refused = []

    def same():
        try:
            maps = [owners(n) for n in nodes]
        except ConnectionRefusedError as e:
            refused.append(str(e))
            return None
        return maps[0] if all(m == maps[0] for m in maps) else None
    m, waited = wait_until(same, timeout, interval=0.1)
    assert m, "nodes disagree on CLUSTER SLOTS after %.1fs (refused: %r)" % (
        waited, refused[-3:])
    return m


def pk_moves(node):
    """PK.MOVES on node as a list of dicts ([] if the node is down)."""
    try:
        rep = call(node, "PK.MOVES")
    except (OSError, pkserver.ConnectionClosed):
        return []
    return [dict(zip(s[::2], s[1::2])) for s in rep]


def moves_idle(nodes):
    return all(pk_moves(n) == [] for n in nodes)


def dbsize(node):
    return call(node, "DBSIZE")


def count_keys_in_slots(node, slots):
    """{slot: COUNTKEYSINSLOT} on node, pipelined."""
    out = {}
    slots = list(slots)
    with pkserver.RespClient(node.host, node.port, timeout=30) as c:
        for i in range(0, len(slots), 2000):
            chunk = slots[i:i + 2000]
            c.send_raw(b"".join(pkserver.encode_command(
                "CLUSTER", "COUNTKEYSINSLOT", s) for s in chunk))
            for s in chunk:
                n = c.read()
                assert isinstance(n, int), "COUNTKEYSINSLOT %d: %r" % (s, n)
                out[s] = n
    return out


def node_line(node, node_id):
    """node_id's line of CLUSTER NODES on node, or None."""
    for line in call(node, "CLUSTER", "NODES").splitlines():
        if line.startswith(node_id + " "):
            return line
    return None


def cluster_ok(nodes):
    return all(str(call(n, "CLUSTER", "INFO")).startswith("cluster_state:ok")
               for n in nodes)


def diagnostics(cl, procs):
    """What a failure message needs: rebalance status, PK.MOVES and the
    logs of every node (cluster up's and the ones started here)."""
    out = []
    p = cli(cl, "rebalance", "status")
    out.append("--- rebalance status ---\n%s%s" % (p.stdout, p.stderr))
    for n in cl.nodes + [s for s in procs
                         if isinstance(s, pkserver.Server)]:
        out.append("PK.MOVES on %s:%d: %r" % (n.host, n.port, pk_moves(n)))
    out.append(cl.logs(2000))
    for s in procs:
        if isinstance(s, pkserver.Server):
            out.append("--- %r ---\n%s" % (s, s.logs(2000)))
    return "\n".join(out)


def start_node4(cl, procs, fsync=None):
    """A 4th node joined through node 0; waits until CLUSTER NODES on node
    0 lists it as a master with no slots.  Returns (server, its id)."""
    s = join_server(cl, fsync=fsync)
    procs.append(s)
    s.start()
    node_id = call(s, "CLUSTER", "MYID")
    line, waited = wait_until(lambda: node_line(cl.nodes[0], node_id), 5)
    assert line, "node 4 (%s) not in CLUSTER NODES after %.1fs" % (node_id,
                                                                   waited)
    f = line.split()
    assert "master" in f[2] and f[8:] == [], "node 4 line: %r" % line
    return s, node_id


# ---------------------------------------------------------------------------
# helpers: data
# ---------------------------------------------------------------------------

def load(cl, items):
    """SETs items {key: value} with redis-cli --pipe, each to its slot's
    owner (per node 0's CLUSTER SLOTS)."""
    own = owners(cl.nodes[0])
    by_port = {}
    for k, v in items.items():
        by_port.setdefault(own[key_slot(k.encode())], []).append(
            pkserver.encode_command("SET", k, v))
    for port, cmds in by_port.items():
        p = subprocess.run(["redis-cli", "-p", str(port), "--pipe"],
                           input=b"".join(cmds), capture_output=True,
                           timeout=120)
        assert p.returncode == 0 and b"errors: 0," in p.stdout, (
            "redis-cli --pipe to %d: %r %r" % (port, p.stdout[-300:],
                                               p.stderr[-300:]))


def read_all(cl, keys):
    """{key: GET key} read from each key's owner (per CLUSTER SLOTS, which
    must have converged), pipelined; an error reply is kept as its
    pkserver.RespError so a comparison shows it."""
    own = converged_owners(cl.nodes)
    by_port = {}
    for k in keys:
        by_port.setdefault(own[key_slot(k.encode())], []).append(k)
    out = {}
    for port, ks in by_port.items():
        with pkserver.RespClient("127.0.0.1", port, timeout=30) as c:
            for i in range(0, len(ks), 2000):
                chunk = ks[i:i + 2000]
                c.send_raw(b"".join(pkserver.encode_command("GET", k)
                                    for k in chunk))
                for k in chunk:
                    out[k] = c.read()
    return out


def assert_values(cl, expect, what):
    """Every key of expect {key: value} reads back with that value."""
    got = read_all(cl, list(expect))
    bad = [(k, v, got.get(k)) for k, v in expect.items() if got.get(k) != v]
    assert not bad, "%d of %d %s wrong, e.g. (key, want, got) %r" % (
        len(bad), len(expect), what, bad[:5])


def tag_for_slot(slots):
    """{slot: hash tag} with key_slot('{tag}...') == slot for each slot."""
    want, out, i = set(slots), {}, 0
    while len(out) < len(want):
        t = "t%d" % i
        s = key_slot(t.encode())
        if s in want and s not in out:
            out[s] = t
        i += 1
    return out


def heavy_items(slots):
    """~20 MB: HEAVY_KEYS_PER_SLOT values of HEAVY_VALUE bytes per slot."""
    tags = tag_for_slot(slots)
    items = {}
    for s in slots:
        for j in range(HEAVY_KEYS_PER_SLOT):
            k = "{%s}:big:%d" % (tags[s], j)
            items[k] = ("%s:%d:" % (k, j)).ljust(HEAVY_VALUE, "x")
    return items


def small_items(n, prefix="pre"):
    return {"%s:%d" % (prefix, i): "v%d-%s" % (i, prefix) for i in range(n)}


def assert_one_owner_per_slot(cl, nodes, expect_keys, uncertain=()):
    """Every slot is owned by one node (CLUSTER SLOTS covers all slots),
    its keys are on that node only, and the owner's COUNTKEYSINSLOT is the
    number of expected keys in it (plus at most the uncertain ones: writes
    whose outcome the client never learnt).  Waits for sources to drop
    what they gave away."""
    own = converged_owners(nodes)
    assert None not in own, "slots without an owner: %r" % [
        s for s, p in enumerate(own) if p is None][:10]
    want = Counter(key_slot(k.encode()) for k in expect_keys)
    maybe = Counter(key_slot(k.encode()) for k in uncertain)
    slots = sorted(set(want) | set(maybe))

    def problems():
        bad = []
        for n in nodes:
            counts = count_keys_in_slots(n, slots)
            for s in slots:
                if own[s] == n.port:
                    if not want[s] <= counts[s] <= want[s] + maybe[s]:
                        bad.append("owner %d of slot %d has %d keys, want %d"
                                   "(+%d)" % (n.port, s, counts[s], want[s],
                                              maybe[s]))
                elif counts[s]:
                    bad.append("non-owner %d holds %d keys of slot %d "
                               "(owner %d)" % (n.port, counts[s], s, own[s]))
        return bad
    bad, waited = wait_until(lambda: not problems(), 15, interval=0.5)
    left = problems()
    assert not left, "after %.1fs: %d problems, e.g. %r" % (waited, len(left),
                                                           left[:5])


# ---------------------------------------------------------------------------
# helpers: clients running during a rebalance
# ---------------------------------------------------------------------------

class BreakCount:
    """Counts, per thread, the redis-py commands whose send or reply broke
    (ConnectionError, TimeoutError): such a command may have been applied,
    and RedisCluster resends it on its own.  redis-py 4.3 gives a cluster
    client no way to choose its connection class, so the count wraps
    redis.connection.Connection itself (once; other threads only count)."""

    _local = threading.local()
    _installed = False

    @classmethod
    def get(cls):
        return getattr(cls._local, "n", 0)

    @classmethod
    def install(cls):
        if cls._installed:
            return
        cls._installed = True
        conn = redis.connection.Connection
        for name in ("send_command", "read_response"):
            setattr(conn, name, cls._counting(getattr(conn, name)))

    @classmethod
    def _counting(cls, fn):
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError):
                cls._local.n = cls.get() + 1
                raise
        return wrapper


class Load:
    """Client threads that run until stop():

      writer  RedisCluster: SET w:<i>, now and then an overwrite of an
              older w: key and a DEL of a recent one (which must stay
              deleted), INCR of one of 32 counters and HINCRBY of one of
              40 hash fields; remembers every acknowledged value, DEL,
              INCR and HINCRBY
      reader  RedisCluster: GET of random preloaded keys, each must come
              back with its value
      proxy   redis.Redis through `partkv proxy`: SET px:<i>, then GET of
              an earlier px: key, which must hold what was acknowledged

    Every exception a client raised is kept in errors; an operation that
    raised leaves its key "uncertain" (it may or may not have happened).
    """

    def __init__(self, cl, preloaded, proxy=None, reader=True):
        self.cl = cl
        self.preloaded = preloaded
        self.proxy = proxy
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.errors = []
        self.acked = {}             # key -> last acknowledged value (None:
        #                             deleted)
        self.incrs = Counter()      # counter key -> acknowledged INCRs
        self.hincrs = Counter()     # (hash key, field) -> HINCRBYs
        self.uncertain = set()      # keys whose last write raised
        self.ops = Counter()        # thread -> operations done
        self.crashed = []           # exceptions that ended a thread
        loops = [self._writer]
        if reader:
            loops.append(self._reader)
        if proxy is not None:
            loops.append(self._proxy)
        self.threads = [threading.Thread(target=self._run, args=(fn,),
                                         daemon=True) for fn in loops]
        # INCR and HINCRBY are not idempotent, and redis-py resends a
        # command whose connection broke (it sleeps and retries the same
        # node, then reloads the slots and retries): a node killed after it
        # applied an INCR but before it replied sees it twice while the
        # caller saw one success.  _do() leaves such a key uncertain.
        BreakCount.install()
        # redis-py logs every MOVED with a traceback: keep that quiet.
        self._log = logging.getLogger("redis.cluster")
        self._level = self._log.level

    def start(self):
        self._log.setLevel(logging.CRITICAL)
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(60)
        self._log.setLevel(self._level)
        assert not any(t.is_alive() for t in self.threads), "client hung"
        assert not self.crashed, "client thread died: %r" % self.crashed

    def _run(self, loop):
        try:
            loop()
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            with self.lock:
                self.crashed.append("%s: %s: %s" % (loop.__name__,
                                                    type(e).__name__, e))

    def _err(self, who, op, e):
        with self.lock:
            self.errors.append("%s %s: %s: %s" % (who, op, type(e).__name__,
                                                  e))

    def _do(self, what, key, fn, on_ack):
        """Runs fn(); on success on_ack() under the lock, else the key is
        uncertain.  A success during which a connection broke (the client
        resent the command) leaves the key uncertain too."""
        breaks = BreakCount.get()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - counted, checked by tests
            self._err("writer", "%s %s" % (what, key), e)
            with self.lock:
                self.uncertain.add(key)
            return
        with self.lock:
            on_ack()
            if BreakCount.get() != breaks:
                self.uncertain.add(key)

    def _set_acked(self, key, val):
        self.acked[key] = val
        self.uncertain.discard(key)

    def _writer(self):
        rc = self.cl.rc()
        i = 0
        try:
            while not self.stop_ev.is_set():
                k, v = "w:%d" % i, "a%d" % i
                self._do("SET", k, lambda: rc.set(k, v),
                         lambda: self._set_acked(k, v))
                if i % 4 == 3:
                    ko, vo = "w:%d" % (i // 2), "b%d" % i
                    self._do("SET", ko, lambda: rc.set(ko, vo),
                             lambda: self._set_acked(ko, vo))
                if i % 5 == 4:
                    kd = "w:%d" % (i - 3)
                    self._do("DEL", kd, lambda: rc.delete(kd),
                             lambda: self._set_acked(kd, None))
                ctr = "ctr:%d" % (i % 32)
                self._do("INCR", ctr, lambda: rc.incr(ctr),
                         lambda: self.incrs.update([ctr]))
                if i % 3 == 0:
                    h, f = "h:%d" % (i % 8), "f%d" % (i % 5)
                    self._do("HINCRBY", h, lambda: rc.hincrby(h, f, 1),
                             lambda: self.hincrs.update([(h, f)]))
                i += 1
                self.ops["writer"] += 1
        finally:
            rc.close()

    def _reader(self):
        rc = self.cl.rc()
        rnd = random.Random(7)
        keys = list(self.preloaded)
        try:
            while not self.stop_ev.is_set():
                k = rnd.choice(keys)
                try:
                    v = rc.get(k)
                except Exception as e:  # noqa: BLE001
                    self._err("reader", "GET %s" % k, e)
                    continue
                if v != self.preloaded[k]:
                    self._err("reader", "GET %s" % k, AssertionError(
                        "got %r, want %r" % (v, self.preloaded[k])))
                self.ops["reader"] += 1
        finally:
            rc.close()

    def _proxy(self):
        c = redis.Redis(host=self.proxy.host, port=self.proxy.port,
                        decode_responses=True, socket_timeout=10,
                        socket_connect_timeout=5)
        mine = {}
        i = 0
        try:
            while not self.stop_ev.is_set():
                k, v = "px:%d" % i, "p%d" % i
                try:
                    c.set(k, v)
                    mine[k] = v
                    with self.lock:
                        self.acked[k] = v
                except Exception as e:  # noqa: BLE001
                    self._err("proxy", "SET %s" % k, e)
                    with self.lock:
                        self.uncertain.add(k)
                if i >= 10:
                    old = "px:%d" % (i - 10)
                    try:
                        got = c.get(old)
                        if old in mine and got != mine[old]:
                            self._err("proxy", "GET %s" % old, AssertionError(
                                "got %r, want %r" % (got, mine[old])))
                    except Exception as e:  # noqa: BLE001
                        self._err("proxy", "GET %s" % old, e)
                i += 1
                self.ops["proxy"] += 1
        finally:
            c.close()

    def check_durable(self):
        """Every acknowledged write reads back with its last acknowledged
        value (deleted keys stay deleted); counters and hash fields hold
        exactly their acknowledged INCRs and HINCRBYs (more only if some
        raised)."""
        with self.lock:
            expect = {k: v for k, v in self.acked.items()
                      if k not in self.uncertain}
            incrs, hincrs = dict(self.incrs), dict(self.hincrs)
            uncertain = set(self.uncertain)
        assert_values(self.cl, expect, "acknowledged writes")
        got = read_all(self.cl, list(incrs))
        for ctr, n in incrs.items():
            v = int(got[ctr])
            assert v == n or (ctr in uncertain and v > n), \
                "%s = %r after %d acknowledged INCRs" % (ctr, v, n)
        rc = self.cl.rc()
        try:
            for (h, f), n in hincrs.items():
                v = int(rc.hget(h, f))
                assert v == n or (h in uncertain and v > n), \
                    "HGET %s %s = %r after %d HINCRBYs" % (h, f, v, n)
        finally:
            rc.close()

    def live_keys(self):
        """Keys the clients left existing for sure, and keys that may exist
        (uncertain ones): (set, set)."""
        with self.lock:
            sure = {k for k, v in self.acked.items() if v is not None}
            sure |= set(self.incrs) | {h for h, _ in self.hincrs}
            maybe = set(self.uncertain)
        return sure - maybe, maybe


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------

@pytest.fixture
def procs():
    """Everything a test starts besides the cluster (joined or restarted
    nodes, proxies, apply drivers): each is stopped by its PID at
    teardown, last started first."""
    made = []
    yield made
    for p in reversed(made):
        p.cleanup()


def settled(cl, quiet=0.5, timeout=10):
    """cl, once every node holds the same map epoch and it has not moved
    for `quiet` seconds: the controller writes the map once more just
    after the cluster is ready, and a plan made before that is stale."""
    seen = {"epoch": None, "since": 0.0}

    def still():
        eps = {pmap.decode(n.client(decode_responses=False).execute_command(
            "PK.MAP"))["epoch"] for n in cl.nodes}
        now = time.monotonic()
        if len(eps) != 1 or eps != {seen["epoch"]}:
            seen.update(epoch=next(iter(eps)), since=now)
            return False
        return now - seen["since"] >= quiet
    ok, waited = wait_until(still, timeout, interval=0.05)
    assert ok, "the map kept changing for %.1fs" % waited
    return cl


@pytest.fixture
def cl3(cluster_factory):
    """3 nodes, R=1."""
    return settled(cluster_factory(nodes=3, replicas=1))


@pytest.fixture
def cl3_durable(cluster_factory):
    """3 nodes, R=1, --fsync always (for the kill -9 tests)."""
    return settled(cluster_factory(nodes=3, replicas=1,
                                   extra=["--fsync", "always"]))


def heavy_setup(cl, procs, fsync=None, small=3000, src=1):
    """Loads `small` small keys, joins a 4th node, makes a balanced plan,
    then loads ~20 MB into HEAVY_SLOTS_N of the slots that plan moves from
    node `src` to the new node.  (The planner hands over a node's smallest
    partitions, so data loaded first would be planned around; writes
    between plan and apply do not make a plan stale, and the moves copy
    whatever the partition holds then.)  Returns (items, node4, node4 id,
    plan, heavy slots)."""
    items = small_items(small)
    load(cl, items)
    n4, n4_id = start_node4(cl, procs, fsync=fsync)
    plan = make_plan(cl)
    mine = sorted(m["partition"] for m in plan["moves"]
                  if m["from_addr"] == cl.nodes[src].addr
                  and m["to"] == n4_id)
    assert len(mine) > 1000, "plan moves %d slots from node %d" % (
        len(mine), src)
    heavy_slots = mine[::len(mine) // HEAVY_SLOTS_N][:HEAVY_SLOTS_N]
    heavy = heavy_items(heavy_slots)
    load(cl, heavy)
    items.update(heavy)
    return items, n4, n4_id, plan, heavy_slots


def wait_heavy_copy(src, ap, timeout=30):
    """Waits until src runs a move session that has sent bytes (asserts,
    with the apply's output and the nodes' state, also when the apply
    exits first); returns PK.MOVES then."""
    sess, waited = wait_until(
        lambda: [s for s in pk_moves(src) if s.get("bytes", 0) > 0]
        or (None if ap.running() else "exited"), timeout, interval=0.02)
    assert sess and sess != "exited", \
        "no move session with bytes on %s after %.1fs (apply %s)\n%s\n%s" % (
            src.addr, waited, "running" if ap.running() else "exited",
            ap.text(), diagnostics(ap.cl, ap.procs))
    return sess


def check_plan_applied(cl, nodes, plan, before):
    """The converged map is the plan: planned slots are owned by the
    move's target, the others kept their owner."""
    after = converged_owners(nodes)
    planned = {m["partition"]: int(m["to_addr"].rsplit(":", 1)[1])
               for m in plan["moves"]}
    wrong = [(s, after[s], planned.get(s, before[s])) for s in range(NSLOTS)
             if after[s] != planned.get(s, before[s])]
    assert not wrong, "%d slots not where the plan put them, e.g. (slot, " \
        "owner, planned) %r" % (len(wrong), wrong[:5])
    return after


# ---------------------------------------------------------------------------
# 1. join + balanced rebalance under load
# ---------------------------------------------------------------------------

def test_join_rebalance_under_load(cl3, procs):
    cl = cl3
    pre = small_items(100_000)
    t = time.monotonic()
    load(cl, pre)
    assert sum(dbsize(n) for n in cl.nodes) == len(pre)
    load_s = time.monotonic() - t

    n4, n4_id = start_node4(cl, procs)
    nodes = cl.nodes + [n4]
    before = converged_owners(nodes)
    plan = make_plan(cl)
    moves = plan["moves"]
    assert abs(len(moves) - 4096) <= 2, "%d moves" % len(moves)
    assert {m["to"] for m in moves} == {n4_id}, "moves to other nodes"
    assert all(m["role"] == "leader" and not m["transfer"] for m in moves)
    for m in moves:
        assert before[m["partition"]] == int(m["from_addr"].split(":")[1]), m
    assert len({m["partition"] for m in moves}) == len(moves)
    for n in plan["nodes"]:
        assert abs(n["replicas_after"] - 4096) <= 1, n
    assert plan["totals"]["keys"] == sum(m["keys"] for m in moves)

    proxy = Proxy(cl.nodes[0].addr)
    procs.append(proxy)
    proxy.start()

    def proxy_serves():
        with pkserver.RespClient(proxy.host, proxy.port, timeout=5) as c:
            return c.call("GET", "pre:1") == pre["pre:1"]
    ok, waited = wait_until(proxy_serves, 5)
    assert ok, "proxy not serving after %.1fs" % waited

    clients = Load(cl, pre, proxy=proxy).start()
    try:
        time.sleep(0.5)
        ap = Apply(cl, procs, plan["id"], "--rate", "unlimited")
        rc = ap.wait()
        apply_s = time.monotonic() - ap.t0
        time.sleep(0.5)
    finally:
        clients.stop()
    print("load %.1fs, apply %.1fs, client ops %r" % (load_s, apply_s,
                                                      dict(clients.ops)))
    assert rc == 0, ap.text()
    assert re.search(r"^done: %d moves" % len(moves), ap.text(), re.M), \
        ap.text()
    assert clients.errors == [], "%d client errors, e.g. %r" % (
        len(clients.errors), clients.errors[:5])
    assert all(clients.ops[w] > 50 for w in ("writer", "reader", "proxy")), \
        "clients barely ran: %r" % dict(clients.ops)

    after = check_plan_applied(cl, nodes, plan, before)
    per_node = Counter(after)
    assert abs(per_node[n4.port] - 4096) <= 2, per_node
    assert all(abs(per_node[n.port] - 4096) <= 1 for n in nodes), per_node

    clients.check_durable()
    assert_values(cl, pre, "preloaded keys")
    sure, maybe = clients.live_keys()
    assert not maybe
    total = len(pre) + len(sure)
    sizes, waited = wait_until(
        lambda: (lambda s: s if sum(s) == total else None)(
            [dbsize(n) for n in nodes]), 15, interval=0.2)
    assert sizes, "sum of DBSIZE %r != %d keys after %.1fs" % (
        [dbsize(n) for n in nodes], total, waited)
    assert_one_owner_per_slot(cl, nodes, set(pre) | sure)
    assert moves_idle(nodes)
    assert cluster_ok(nodes)


# ---------------------------------------------------------------------------
# 2, 3. kill -9 of the source / the target in the middle of a move
# ---------------------------------------------------------------------------

def kill_mid_move(cl, procs, victim):
    items, n4, n4_id, plan, heavy = heavy_setup(cl, procs, fsync="always")
    nodes = cl.nodes + [n4]
    before = converged_owners(nodes)
    clients = Load(cl, items, reader=False).start()
    try:
        ap = Apply(cl, procs, plan["id"], "--rate", "4MB/s")
        sess = wait_heavy_copy(cl.nodes[1], ap)
        done_at_kill = status(cl)["moves"]["done"]
        t_kill = time.monotonic() - ap.t0
        if victim == "source":
            cl.kill_node(1)
            gone, _ = wait_until(lambda: not cl.node_alive(cl.nodes[1].pid),
                                 5)
            assert gone, "node 1 survived SIGKILL"
            # `cluster up` starts it again with its argv and port (after
            # 200 ms).  A second start by hand raced that restart: both
            # opened the data directory, one lost the port, and the node
            # was once found refusing connections after the apply.
            back, _ = wait_until(lambda: answers_ping(cl.nodes[1]), 30,
                                 interval=0.1)
            assert back, "node 1 not restarted by cluster up\n%s" % (
                diagnostics(cl, procs),)
        else:
            n4.kill()
            n4.start()
        assert ap.running(), "apply exited before the restart\n" + ap.text()
        rc = ap.wait(45)
        apply_s = time.monotonic() - ap.t0
        time.sleep(0.3)
    finally:
        clients.stop()
    print("%s killed at %.1fs (%d moves done, node 1 sessions %r); apply "
          "took %.1fs; %d client errors, e.g. %r" % (
              victim, t_kill, done_at_kill, sess, apply_s,
              len(clients.errors),
              clients.errors[:2]))
    assert rc == 0, "apply did not finish after the %s was restarted\n%s" \
        "\n%s" % (victim, ap.text(), diagnostics(cl, procs))
    check_plan_applied(cl, nodes, plan, before)
    clients.check_durable()
    assert_values(cl, items, "preloaded keys")
    sure, maybe = clients.live_keys()
    assert_one_owner_per_slot(cl, nodes, set(items) | sure, maybe)
    ok, _ = wait_until(lambda: moves_idle(nodes), 5)
    assert ok, "moves left running: %r" % [pk_moves(n) for n in nodes]


@slow
@pytest.mark.long_fault
def test_kill_source_mid_move(cl3_durable, procs):
    kill_mid_move(cl3_durable, procs, "source")


@slow
@pytest.mark.long_fault
def test_kill_target_mid_move(cl3_durable, procs):
    kill_mid_move(cl3_durable, procs, "target")


# ---------------------------------------------------------------------------
# 4. cancel
# ---------------------------------------------------------------------------

@slow
def test_cancel_mid_move(cl3, procs):
    cl = cl3
    items, n4, n4_id, plan, heavy = heavy_setup(cl, procs)
    nodes = cl.nodes + [n4]
    before = converged_owners(nodes)
    ap = Apply(cl, procs, plan["id"], "--rate", "4MB/s")
    wait_heavy_copy(cl.nodes[1], ap)
    # The other nodes' small moves finish while the heavy ones copy.
    st, waited = wait_until(
        lambda: (lambda st: st if st["moves"]["done"] > 0 else None)(
            status(cl)), 30, interval=0.1)
    assert st, "no move done %.1fs after the heavy copy began" % waited
    assert st["state"] == "running" and st["moves"]["in_flight"] > 0, st
    p = cli(cl, "rebalance", "cancel")
    assert p.returncode == 0, p.stderr
    assert "cancelled plan %s" % plan["id"] in p.stdout, p.stdout
    rc = ap.wait(30)
    assert rc != 0, "apply exited 0 after cancel\n" + ap.text()
    assert "cancelled" in ap.text(), ap.text()

    ok, waited = wait_until(lambda: moves_idle(nodes), 5, interval=0.1)
    assert ok, "moves still running %.1fs after cancel: %r" % (
        waited, [pk_moves(n) for n in nodes])
    after = converged_owners(nodes)
    planned = {m["partition"]: int(m["to_addr"].split(":")[1])
               for m in plan["moves"]}
    odd = [s for s in range(NSLOTS)
           if after[s] not in (before[s], planned.get(s, before[s]))]
    assert not odd, "slots owned by neither old nor new owner: %r" % odd[:5]
    moved = sum(after[s] != before[s] for s in range(NSLOTS))
    assert 0 < moved < len(plan["moves"]), moved
    st = status(cl)
    assert st["state"] == "cancelled" and st["moves"]["in_flight"] == 0, st
    assert st["moves"]["done"] == moved, (st, moved)
    assert_values(cl, items, "preloaded keys")
    assert_one_owner_per_slot(cl, nodes, items)
    assert cluster_ok(nodes)


# ---------------------------------------------------------------------------
# 5. drain + remove
# ---------------------------------------------------------------------------

def test_drain_and_remove(cl3, procs):
    cl = cl3
    items = small_items(6000)
    load(cl, items)
    n2 = cl.nodes[2]
    assert dbsize(n2) > 0

    p = cli(cl, "node", "remove", n2.id)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "still holds" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert node_line(cl.nodes[0], n2.id), "refused remove dropped the node"

    p = cli(cl, "node", "drain", n2.addr)  # by host:port
    assert p.returncode == 0, p.stderr
    assert "draining" in p.stdout, p.stdout
    before = converged_owners(cl.nodes)
    plan = make_plan(cl)
    held = before.count(n2.port)
    assert len(plan["moves"]) == held, (len(plan["moves"]), held)
    assert all(m["from"] == n2.id for m in plan["moves"])
    clients = Load(cl, items).start()
    try:
        ap = Apply(cl, procs, plan["id"], "--rate", "unlimited")
        rc = ap.wait()
        time.sleep(0.3)
    finally:
        clients.stop()
    assert rc == 0, ap.text()
    assert clients.errors == [], clients.errors[:5]
    after = check_plan_applied(cl, cl.nodes, plan, before)
    assert n2.port not in after
    assert all(abs(after.count(n.port) - NSLOTS // 2) <= 1
               for n in cl.nodes[:2]), Counter(after)
    ok, waited = wait_until(lambda: dbsize(n2) == 0, 15, interval=0.2)
    assert ok, "drained node still holds %d keys after %.1fs" % (dbsize(n2),
                                                                waited)

    p = cli(cl, "node", "remove", n2.id[:8])  # by prefix
    assert p.returncode == 0, p.stderr
    gone, _ = wait_until(lambda: all(node_line(n, n2.id) is None
                                     for n in cl.nodes[:2]), 5)
    assert gone, call(cl.nodes[0], "CLUSTER", "NODES")
    assert_values(cl, items, "keys")
    clients.check_durable()
    sure, maybe = clients.live_keys()
    assert sum(dbsize(n) for n in cl.nodes[:2]) == len(items) + len(sure)


# ---------------------------------------------------------------------------
# 6. pause / resume / status
# ---------------------------------------------------------------------------

@slow
def test_pause_resume_status(cl3, procs):
    cl = cl3
    items, n4, n4_id, plan, heavy = heavy_setup(cl, procs)
    nodes = cl.nodes + [n4]
    ap = Apply(cl, procs, plan["id"], "--rate", "4MB/s")
    wait_heavy_copy(cl.nodes[1], ap)
    p = cli(cl, "rebalance", "pause")
    assert p.returncode == 0 and "paused" in p.stdout, (p.stdout, p.stderr)
    time.sleep(1.0)

    def snapshot():
        st = status(cl)
        sent = sorted((s["target"], s["bytes"]) for s in st["sessions"])
        moves = [(s["target"], s["bytes"]) for s in pk_moves(cl.nodes[1])]
        return st["moves"]["done"], sent, moves, converged_owners(nodes)
    first = snapshot()
    time.sleep(1.0)
    second = snapshot()
    assert any(b > 0 for _, b in first[2]), (
        "no paused session with bytes on node 1: %r" % (first[2],))
    assert first[0] == second[0], "moves completed while paused: %d -> %d" % (
        first[0], second[0])
    assert first[1:3] == second[1:3], "bytes sent while paused: %r -> %r" % (
        first[1:3], second[1:3])
    assert first[3] == second[3], "the map changed while paused"
    assert first[0] < len(plan["moves"])
    st = status(cl)
    assert st["state"] == "paused" and st["plan"] == plan["id"], st
    text = cli(cl, "rebalance", "status")
    assert text.returncode == 0 and "%s: paused" % plan["id"] in text.stdout, \
        text.stdout
    assert ap.running(), "apply exited while paused\n" + ap.text()

    p = cli(cl, "rebalance", "resume")
    assert p.returncode == 0 and "running" in p.stdout, (p.stdout, p.stderr)
    assert ap.wait() == 0, ap.text()
    st = status(cl)
    assert st["state"] == "done" and st["moves"]["done"] == len(
        plan["moves"]), st
    assert_values(cl, items, "preloaded keys")


# ---------------------------------------------------------------------------
# 7. a stale plan is refused
# ---------------------------------------------------------------------------

def test_stale_plan_refused(cl3, procs):
    cl = cl3
    n4, n4_id = start_node4(cl, procs)
    nodes = cl.nodes + [n4]
    before = converged_owners(nodes)
    plan = make_plan(cl)
    assert len(plan["moves"]) > 0
    p = cli(cl, "node", "weight", cl.nodes[1].id, "2")
    assert p.returncode == 0, p.stderr
    ap = Apply(cl, procs, plan["id"])
    assert ap.wait(30) == 1, ap.text()
    assert "stale" in ap.text(), ap.text()
    time.sleep(0.3)
    assert converged_owners(nodes) == before, "a stale plan moved slots"
    assert moves_idle(nodes)
    # A fresh plan on the new map is accepted.
    fresh = make_plan(cl)
    assert fresh["epoch"] > plan["epoch"]


# ---------------------------------------------------------------------------
# 8. small contracts of the CLI
# ---------------------------------------------------------------------------

def test_plan_balanced_cluster_has_no_moves(cl3):
    plan = make_plan(cl3)
    assert plan["moves"] == [] and plan["totals"]["moves"] == 0, plan


@pytest.mark.parametrize("args", [
    ["rebalance", "plan", "--rate", "bogus"],
    ["rebalance", "plan", "--policy", "bogus"],
    ["rebalance", "plan", "--max-concurrent", "0"],
    ["rebalance", "apply", "--yes"],                 # no plan id
    ["rebalance", "apply", "1-abc", "--rate", "-5MB/s"],
    ["rebalance", "status", "--bogus"],
    ["rebalance", "frobnicate"],
    ["node", "weight", "abcdef", "heavy"],
])
def test_bad_flags_exit_2(cl3, args):
    p = cli(cl3, *args)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.strip(), (args, p.stderr)


@pytest.mark.parametrize("args", [
    ["rebalance", "plan"],
    ["rebalance", "apply", "1-abc", "--yes"],
    ["rebalance", "cancel"],
    ["node", "drain", "abcdef"],
])
def test_missing_cluster_exit_2(partkv, args):
    p = partkv(*args, check=False)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.strip(), (args, p.stderr)


def test_node_remove_unknown_id(cl3):
    p = cli(cl3, "node", "remove", "ffffffffffff")
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.strip(), "no message"
    assert all(node_line(cl3.nodes[0], n.id) for n in cl3.nodes)


def test_ring_moves_more_than_balanced(cl3, procs):
    cl = cl3
    n4, n4_id = start_node4(cl, procs)
    balanced = make_plan(cl, "--policy", "balanced")
    ring = make_plan(cl, "--policy", "ring")
    hrw = make_plan(cl, "--policy", "rendezvous")
    assert ring["policy"] == "ring" and hrw["policy"] == "rendezvous"
    assert len(ring["moves"]) > len(balanced["moves"]), (
        len(ring["moves"]), len(balanced["moves"]))
    assert len(hrw["moves"]) > 0
