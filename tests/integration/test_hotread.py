"""Reads of a read-hot key served by every replica (pk_hotread.h), on 3
nodes with 3 copies in forward mode: a key read above --hot-key-reads is
served from a follower's own copy once a read index from the leader says
the copy holds every acknowledged write, and then under a read lease
without asking; the histories of readers on every node and a writer stay
linearizable -- also while the leader is stopped past its lease and
another takes over, and while leaders and followers are killed, restarted
(forgetting the leases they granted) and given their leadership back."""
import re
import signal
import threading
import time

import pytest
import redis

import cluster as pkcluster
from lincheck import History

pytestmark = pytest.mark.partkv_only

HOT = "hotread:{k}"


def hot_cluster():
    """3 nodes, 3 copies, forward mode, every read sampled, a key read 50
    times a second read-hot."""
    return pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hotkeys-sample", "1",
               "--hot-key-reads", "50"])


def started_with_hot_key(c):
    """Starts c and writes w0 to HOT: (index of HOT's leader)."""
    c.start()
    c.wait_serving()
    lead = leader_index(c, HOT)
    c.nodes[lead].client().set(HOT, "w0")
    return lead


@pytest.fixture(scope="module")
def hc3():
    yield from pkcluster.serving(hot_cluster())


def info_stats(node):
    """The hot_reads_* counters of a node's INFO."""
    text = node.client().execute_command("INFO", "stats")
    if isinstance(text, dict):
        return {k: int(v) for k, v in text.items()
                if k.startswith("hot_reads_")}
    out = {}
    for line in text.splitlines():
        if line.startswith("hot_reads_"):
            k, v = line.split(":", 1)
            out[k] = int(v)
    return out


def leader_index(c, key):
    """Index in c.nodes of the node that leads key's slot."""
    return c.nodes.index(c.node_for_slot(pkcluster.keyslot(key)))


class Load:
    """One writer (unique values) and readers, all recorded in a History.
    By default the writer is on the key's leader and readers_per_node
    readers on every node; `via` (host, port) sends every request there
    instead (a proxy), with 2 * readers_per_node readers."""

    def __init__(self, c, key, readers_per_node=2, via=None):
        self.c, self.key, self.via = c, key, via
        self.hist = History()
        self.stop = threading.Event()
        targets = [None] if via else list(range(len(c.nodes)))
        self.reads = [0] * len(targets)
        self.errors = []
        self.threads = [threading.Thread(target=self.writer, daemon=True)]
        for i in range(len(targets)):
            for _ in range(readers_per_node * (2 if via else 1)):
                self.threads.append(threading.Thread(
                    target=self.reader, args=(i,), daemon=True))

    def conn(self, i):
        host, port = self.via or (self.c.nodes[i].host, self.c.nodes[i].port)
        return redis.Redis(host=host, port=port, socket_timeout=5,
                           decode_responses=True)

    def writer_conn(self):
        return self.conn(0 if self.via else leader_index(self.c, self.key))

    def writer(self):
        r = self.writer_conn()
        seq = 0
        while not self.stop.is_set():
            seq += 1
            v = "w%d" % seq
            h = self.hist.invoke("writer", "set", self.key, v)
            try:
                r.set(self.key, v)
                self.hist.ok(h)
            except redis.RedisError as e:
                self.hist.info(h)  # may or may not have taken effect
                self.errors.append(repr(e))
                time.sleep(0.05)
                r = self.writer_conn()
            time.sleep(0.002)

    def reader(self, i):
        r = self.conn(i)
        name = "reader-%d-%d" % (i, threading.get_ident())
        while not self.stop.is_set():
            h = self.hist.invoke(name, "get", self.key)
            try:
                v = r.get(self.key)
                self.hist.ok(h, v)
                self.reads[i] += 1
            except redis.RedisError as e:
                self.hist.fail(h)  # a read that erred says nothing
                self.errors.append(repr(e))
                time.sleep(0.05)
                r = self.conn(i)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)
        return self


def test_followers_serve_hot_reads_linearizably(hc3):
    c = hc3
    key = HOT
    lead = leader_index(c, key)
    c.nodes[lead].client().set(key, "w0")
    before = [info_stats(n) for n in c.nodes]
    load = Load(c, key).start()
    try:
        time.sleep(4.0)
    finally:
        load.finish()
    after = [info_stats(n) for n in c.nodes]
    served = [after[i].get("hot_reads_served", 0) -
              before[i].get("hot_reads_served", 0) for i in range(3)]
    print("reads per node %r, served by followers %r, stats %r" % (
        load.reads, served, after))
    followers = [i for i in range(3) if i != lead]
    for i in followers:
        assert served[i] > 0, "node %d served no read itself: %r" % (
            i, after[i])
        # Most of a follower's reads of the hot key are its own once hot.
        assert served[i] > load.reads[i] // 4, (served, load.reads)
    assert served[lead] == 0, "the leader counts no replica read"
    for i in followers:  # past the first index, under a read lease
        assert after[i].get("hot_reads_leases", 0) > 0, after[i]
        assert after[i]["hot_reads_indexes"] < served[i] // 10, after[i]
    # Every node keeps the hot key's GET reply (the leader by its own
    # tracker) and answers most reads from it.
    for i in range(3):
        hits = after[i].get("hot_reads_cache_hits", 0) - before[i].get(
            "hot_reads_cache_hits", 0)
        assert hits > 0, (i, after[i])
    assert not load.errors, load.errors[:5]
    res = load.hist.check(initial="w0", timeout_s=60)
    assert res.ok, res.summary()


def test_cache_not_used_inside_exec(hc3):
    """A read-hot key's GET reply is cached on its leader; a GET inside
    MULTI/EXEC after a SET of the key in the same transaction answers the
    new value (a transaction's writes move no log position until it
    ends, so the cache must not answer there)."""
    c = hc3
    key = "hotread:{x}"
    lead = leader_index(c, key)
    r = c.nodes[lead].client()
    r.set(key, "v1")

    def cached():
        for _ in range(300):
            assert r.get(key) == "v1"
        return info_stats(c.nodes[lead]).get("hot_reads_cache_hits", 0)
    before = info_stats(c.nodes[lead]).get("hot_reads_cache_hits", 0)
    ok, _ = pkcluster.wait_until(lambda: cached() > before + 100, 10, 0.2)
    assert ok, info_stats(c.nodes[lead])
    p = r.pipeline(transaction=True)
    p.set(key, "v2")
    p.get(key)
    assert p.execute() == [True, "v2"]
    assert r.get(key) == "v2"


def test_cold_key_is_forwarded(hc3):
    """A key read a few times a second stays with its leader."""
    c = hc3
    key = "hotread:cold"
    lead = leader_index(c, key)
    c.nodes[lead].client().set(key, "v")
    i = (lead + 1) % 3
    before = info_stats(c.nodes[i])
    r = c.nodes[i].client()
    for _ in range(20):
        assert r.get(key) == "v"
        time.sleep(0.05)
    after = info_stats(c.nodes[i])
    assert after.get("hot_reads_served", 0) == before.get(
        "hot_reads_served", 0)


def test_proxy_spreads_hot_reads_over_replicas(hc3):
    """partkv proxy sends reads of a read-hot key to every replica, whose
    followers serve them by read index; reads and writes through the proxy
    stay linearizable."""
    proxy_spreads(hc3, "hotread:{p}")


def test_proxy_spreads_hot_reads_in_redirect_mode():
    """Nodes in redirect mode serve the proxy's spread reads of a read-hot
    key the same way (instead of MOVED)."""
    c = pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--hotkeys-sample", "1", "--hot-key-reads", "50"])
    gen = pkcluster.serving(c)
    next(gen)
    proxy_spreads(c, "hotread:{r}")
    for _ in gen:
        pass


def proxy_spreads(c, key):
    """Readers and a writer of key through a proxy for 4 s: the proxy
    spreads the reads, the followers serve some, the history is
    linearizable."""
    lead = leader_index(c, key)
    c.nodes[lead].client().set(key, "w0")
    px = pkcluster.Proxy(c.nodes[0].addr,
                         extra=["--hot-key-reads", "50",
                                "--hotkeys-sample", "1"])
    try:
        px.start()
        raw = redis.Redis(host=px.host, port=px.port, socket_timeout=10)
        ok, waited = pkcluster.wait_until(
            lambda: raw.execute_command("PK.MAP"), 10)
        assert ok, "the proxy has no map after %.1fs" % waited
        before = [info_stats(n) for n in c.nodes]
        load = Load(c, key, via=(px.host, px.port)).start()
        try:
            time.sleep(4.0)
        finally:
            load.finish()
        after = [info_stats(n) for n in c.nodes]
        spread = info_stats(pkcluster.Node(0, px.host, px.port, px.pid,
                                           "proxy"))
    finally:
        px.stop()
    served = [after[i].get("hot_reads_served", 0) -
              before[i].get("hot_reads_served", 0) for i in range(3)]
    print("reads %r, proxy %r, served by followers %r" % (
        load.reads, spread, served))
    assert spread.get("hot_reads_spread", 0) > 0, spread
    for i in range(3):
        if i != lead:
            assert served[i] > 0, (i, served, after)
    assert not load.errors, load.errors[:5]
    res = load.hist.check(initial="w0", timeout_s=60)
    assert res.ok, res.summary()


def test_leader_stopped_past_its_lease():
    """SIGSTOP of the hot key's leader while every node reads it: the
    followers' reads wait for an index and fall back to the leader (or a
    new one); nothing read is older than what was acknowledged."""
    c = hot_cluster()
    try:
        lead = started_with_hot_key(c)
        load = Load(c, HOT).start()
        try:
            time.sleep(1.5)
            pid = c.nodes[lead].pid
            c.kill_node(lead, signal.SIGSTOP)
            time.sleep(3.0)
            c.kill_node(lead, signal.SIGCONT)
            time.sleep(2.0)
        finally:
            load.finish()
        print("reads per node %r, %d errors, e.g. %r; stopped pid %d" % (
            load.reads, len(load.errors), load.errors[:3], pid))
        assert sum(load.reads) > 100, load.reads
        res = load.hist.check(initial="w0", timeout_s=90)
        assert res.ok, res.summary()
    finally:
        if c.proc is not None:
            try:
                c.kill_node(lead, signal.SIGCONT)
            except Exception:
                pass
            c.stop()
        c.cleanup()


RESTART_RE = re.compile(
    r"node \d+ \(port \d+, pid (?P<old>\d+)\) died .*; restarted as pid "
    r"(?P<new>\d+)$", re.M)


def restarted(c, index, old_pid, timeout=15.0):
    """Waits for `cluster up` to restart node index (killed as old_pid);
    records and returns its new pid."""
    def find():
        for m in RESTART_RE.finditer(c.stderr_text()):
            if int(m.group("old")) == old_pid:
                return int(m.group("new"))
        return None
    pid, _ = pkcluster.wait_until(find, timeout, 0.05)
    assert pid, "node %d not restarted\n%s" % (index, c.logs())
    c.nodes[index].pid = pid
    c._all_node_pids.add(pid)
    return pid


@pytest.mark.long_fault
def test_leases_through_kills_and_restarts():
    """kill -9 of the hot key's leader, then of a follower holding a read
    lease, each restarted at once by `cluster up` while every node reads
    the key and a writer writes it: a restarted leader acknowledges nothing
    while leases it forgot may run, the leadership handed back to it waits
    for the leases to end, and the history stays linearizable."""
    c = hot_cluster()
    try:
        lead = started_with_hot_key(c)
        load = Load(c, HOT).start()
        leases = 0
        try:
            time.sleep(2.0)
            victims = [lead, (lead + 1) % 3]
            for v in victims:
                leases += sum(info_stats(n).get("hot_reads_leases", 0)
                              for n in c.nodes)
                old = c.nodes[v].pid
                c.kill_node(v, signal.SIGKILL)
                restarted(c, v, old)
                time.sleep(4.0)
        finally:
            load.finish()
        print("reads per node %r, %d errors, e.g. %r, leases %d" % (
            load.reads, len(load.errors), load.errors[:3], leases))
        assert leases > 0
        assert sum(load.reads) > 100, load.reads
        res = load.hist.check(initial="w0", timeout_s=90)
        assert res.ok, res.summary()
    finally:
        c.cleanup()
