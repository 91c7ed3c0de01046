"""Global secondary indexes while partitions move and leaders fail: a
writer keeps writing (each HSET acknowledged or not), and repeated
FT.SEARCH ... CONSISTENT queries from other nodes must hold every document
acknowledged before the query began, exactly once, and none that an
acknowledged change had taken out of the answer before it began.

The writer adds documents with the tag "live" and moves older ones to
"gone".  A write whose reply never came (an error, a timeout) leaves its
document uncertain: it may be in either answer, and is not written again.
A query may fail meanwhile (TRYAGAIN, CLUSTERDOWN, a timeout): that is
counted, not a failure; but some answers must come, and each is checked.
After the fault every node must answer CONSISTENT queries exactly.
"""
import signal
import threading
import time

import pytest
import redis

import test_rebalance as reb
from test_rebalance import procs  # noqa: F401  (the fixture)
from cluster import wait_until
from replfault import signal_node

pytestmark = pytest.mark.partkv_only

N0 = 300      # documents before the fault
LIMIT = 100000


def make_index(c):
    """The global index and N0 live documents, acknowledged; waits until
    every node has built it."""
    r = redis.Redis(port=c.nodes[0].port, decode_responses=True)
    assert r.execute_command("FT.CREATE", "gidx", "ON", "HASH", "PREFIX",
                             "1", "gf:", "GLOBAL", "SCHEMA", "t", "TAG", "n",
                             "NUMERIC") == "OK"
    clients = [n.client() for n in c.nodes]

    def built():
        for x in clients:
            if "gidx" not in x.execute_command("FT._LIST"):
                return False
            info = x.execute_command("FT.INFO", "gidx")
            if float(dict(zip(info[::2], info[1::2]))[
                    "percent_indexed"]) != 1.0:
                return False
        return True
    assert wait_until(built, 30, 0.1)[0], r.execute_command("FT.INFO",
                                                           "gidx")
    for x in clients:
        x.close()
    rc = c.rc()
    p = rc.pipeline()
    for i in range(N0):
        p.hset("gf:0:%d" % i, mapping={"t": "live", "n": i})
    p.execute()
    rc.close()
    r.close()
    return ["gf:0:%d" % i for i in range(N0)]


class Writer:
    """HSETs through RedisCluster: new documents tagged live, and every
    fourth write an older live one tagged gone.  The sets are changed
    under a lock only once a reply came (a move takes its document out of
    `live` before it is sent)."""

    def __init__(self, c, live):
        self.rc = c.rc(socket_timeout=2, socket_connect_timeout=2)
        self.lock = threading.Lock()
        self.live = set(live)       # acknowledged live, not being moved
        self.gone = set()           # acknowledged gone
        self.uncertain = set()      # a write with no reply
        self.attempted = set(live)  # every key ever written
        self.moves = []             # keys picked to move, in order
        self.acked = self.errors = 0
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def snapshot(self):
        """(live, gone, moves so far): before a query is sent."""
        with self.lock:
            return (frozenset(self.live), frozenset(self.gone),
                    len(self.moves))

    def moved_since(self, n):
        """Keys picked to move since the snapshot that counted n moves:
        they may be in either answer of a query sent after it."""
        with self.lock:
            return set(self.moves[n:])

    def run(self):
        i = 0
        while not self.stop_ev.is_set():
            i += 1
            move = None
            if i % 4 == 0:
                with self.lock:
                    if self.live:
                        move = min(self.live)
                        self.live.discard(move)
                        self.moves.append(move)
            key = move or "gf:1:%d" % i
            with self.lock:
                self.attempted.add(key)
            try:
                self.rc.hset(key, mapping={"t": "gone" if move else "live",
                                           "n": i})
            except (redis.RedisError, OSError):
                with self.lock:
                    self.uncertain.add(key)
                    self.errors += 1
                time.sleep(0.05)
                continue
            with self.lock:
                (self.gone if move else self.live).add(key)
                self.acked += 1
            time.sleep(0.002)

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join(30)
        self.rc.close()


def judge(res, snap, w, tag="live"):
    """What is wrong with FT.SEARCH's reply res for @t:{tag}, given the
    writer's snapshot taken before it was sent: a list of strings.  A
    document the writer began to move after the snapshot may be in
    either answer."""
    live, gone, n = snap
    moving = w.moved_since(n)
    got = res[1:]
    want, other = (live, gone) if tag == "live" else (gone, live)
    bad = []
    if res[0] != len(got):
        bad.append("total %d, %d keys returned" % (res[0], len(got)))
    if len(got) != len(set(got)):
        dups = sorted({k for k in got if got.count(k) > 1})
        bad.append("%d duplicates, e.g. %s" % (len(dups), dups[:3]))
    missing = sorted(want - set(got) - moving)
    if missing:
        bad.append("%d documents acknowledged %s before missing, e.g. %s"
                   % (len(missing), tag, missing[:3]))
    wrong = sorted((set(got) & other) - moving)
    if wrong:
        bad.append("%d documents acknowledged %s before, e.g. %s"
                   % (len(wrong), "gone" if tag == "live" else "live",
                      wrong[:3]))
    with w.lock:
        stray = sorted(set(got) - w.attempted)
    if stray:
        bad.append("%d documents never written: %s" % (len(stray),
                                                       stray[:3]))
    return bad


class Querier:
    """Repeated CONSISTENT queries from one node (mostly @t:{live}, every
    fifth @t:{gone}), each judged against the writer's sets taken before
    it was sent.  Errors are counted."""

    def __init__(self, port, writer):
        self.r = redis.Redis(port=port, decode_responses=True,
                             socket_timeout=12, socket_connect_timeout=2)
        self.w = writer
        self.port = port
        self.answers, self.errors, self.wrong = 0, 0, []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        n = 0
        while not self.stop_ev.is_set():
            n += 1
            tag = "gone" if n % 5 == 0 else "live"
            snap = self.w.snapshot()
            try:
                res = self.r.execute_command(
                    "FT.SEARCH", "gidx", "@t:{%s}" % tag, "NOCONTENT",
                    "CONSISTENT", "LIMIT", "0", str(LIMIT))
            except (redis.RedisError, OSError):
                self.errors += 1
                time.sleep(0.05)
                continue
            bad = judge(res, snap, self.w, tag)
            if bad:
                self.wrong.append("port %d, @t:{%s} (%d live, %d gone "
                                  "acknowledged before): %s"
                                  % (self.port, tag, len(snap[0]),
                                     len(snap[1]), "; ".join(bad)))
            self.answers += 1

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join(30)
        self.r.close()


def final_check(c, w):
    """After the fault, with the writer stopped: every node answers
    CONSISTENT queries, each exactly (an uncertain write either way)."""
    snap = w.snapshot()
    live, gone = snap[0], snap[1]
    for node in c.nodes:
        r = redis.Redis(port=node.port, decode_responses=True,
                        socket_timeout=12)
        for tag in ("live", "gone"):
            last = []

            def answer():
                try:
                    res = r.execute_command(
                        "FT.SEARCH", "gidx", "@t:{%s}" % tag, "NOCONTENT",
                        "CONSISTENT", "LIMIT", "0", str(LIMIT))
                except (redis.RedisError, OSError) as e:
                    last[:] = [repr(e)]
                    return None
                return res
            res, _ = wait_until(answer, 30, 0.2)
            assert res is not None, "node %s: no CONSISTENT answer after " \
                "the fault: %s" % (node, last)
            bad = judge(res, snap, w, tag)
            extra = set(res[1:]) - (live if tag == "live" else gone) - \
                w.uncertain
            if extra:
                bad.append("%d documents beyond the acknowledged ones, "
                           "e.g. %s" % (len(extra), sorted(extra)[:3]))
            assert not bad, "node %s, @t:{%s} after the fault: %s" % (
                node, tag, "; ".join(bad))
        r.close()


def run_fault(c, query_nodes, fault):
    """The writer and a querier per node in query_nodes around fault();
    then the checks."""
    live = make_index(c)
    w = Writer(c, live).start()
    qs = [Querier(c.nodes[i].port, w).start() for i in query_nodes]
    try:
        time.sleep(0.5)
        fault()
        time.sleep(1.0)
    finally:
        for q in qs:
            q.stop()
        w.stop()
    wrong = [x for q in qs for x in q.wrong]
    assert not wrong, "%d wrong answers, e.g.:\n%s" % (
        len(wrong), "\n".join(wrong[:5]))
    answers = sum(q.answers for q in qs)
    assert answers > 0, [q.errors for q in qs]
    assert w.acked > 50, (w.acked, w.errors)
    final_check(c, w)
    return "%d writes acknowledged (%d errors), %d answers checked (%d " \
        "errors)" % (w.acked, w.errors, answers, sum(q.errors for q in qs))


def test_global_queries_during_rebalance(cluster_factory, procs):
    """R = 1: node 2 drained while the writer writes; its partitions move
    (with their outboxes and global entries) to nodes 0 and 1, which
    answer the queries."""
    c = reb.settled(cluster_factory(nodes=3, replicas=1))

    def fault():
        p = reb.cli(c, "node", "drain", c.nodes[2].addr)
        assert p.returncode == 0, p.stderr
        plan = reb.make_plan(c)
        assert plan["moves"], plan
        ap = reb.Apply(c, procs, plan["id"], "--rate", "unlimited")
        assert ap.wait() == 0, ap.text()
    print("rebalance: " + run_fault(c, [0, 1], fault))


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL],
                         ids=["SIGSTOP", "SIGKILL"])
def test_global_queries_during_failover(cluster_factory, sig):
    """R = 3: node 1 stopped past its lease (SIGSTOP for 4s) or killed
    (kill -9; `cluster up` restarts it): the followers take over its
    partitions, outboxes included, and CONSISTENT stays exact."""
    c = reb.settled(cluster_factory(nodes=3, replicas=3))
    victim = c.nodes[1]
    pid = victim.pid

    def fault():
        assert signal_node(pid, sig, c.dir)
        try:
            time.sleep(4.0)
        finally:
            if sig == signal.SIGSTOP:
                signal_node(pid, signal.SIGCONT, c.dir)
        time.sleep(1.0)
    print("%s: %s" % (signal.Signals(sig).name, run_fault(c, [0, 2], fault)))
