"""Secondary index queries while partitions move and leaders fail: once
the writes a query depends on are acknowledged, every answer it gets holds
each document exactly once -- no duplicate from two nodes answering for one
partition, none missing from a partition nobody answered for.  A query may
fail meanwhile (TRYAGAIN, CLUSTERDOWN, a timeout); it must never be
wrong."""
import signal
import threading
import time

import pytest
import redis

import test_rebalance as reb
from test_rebalance import procs  # noqa: F401  (the fixture)
from cluster import wait_until
from replfault import signal_node

N = 600


def index_and_docs(c):
    """The index and N hashes, acknowledged (written through RedisCluster),
    then waits until the index is built everywhere."""
    rc = redis.RedisCluster(host="127.0.0.1", port=c.nodes[0].port,
                            decode_responses=True)
    r = redis.Redis(port=c.nodes[0].port, decode_responses=True)
    assert r.execute_command("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1",
                             "doc:", "SCHEMA", "t", "TAG", "n",
                             "NUMERIC") == "OK"
    for i in range(N):
        rc.hset("doc:%d" % i, mapping={"t": "even" if i % 2 == 0 else "odd",
                                       "n": i})
    rc.close()

    def built():
        info = r.execute_command("FT.INFO", "idx")
        d = dict(zip(info[::2], info[1::2]))
        return float(d["percent_indexed"]) == 1.0 and d["num_docs"] == N
    assert wait_until(built, 30, 0.2)[0], r.execute_command("FT.INFO", "idx")
    r.close()


class Querier:
    """Repeated FT.SEARCH from one node, each answer checked: the even
    documents, each once.  Errors are counted, not failures."""

    def __init__(self, port):
        self.r = redis.Redis(port=port, decode_responses=True,
                             socket_timeout=10)
        self.answers, self.errors, self.wrong = 0, 0, []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.want = {"doc:%d" % i for i in range(0, N, 2)}

    def run(self):
        while not self.stop_ev.is_set():
            try:
                res = self.r.execute_command(
                    "FT.SEARCH", "idx", "@t:{even}", "NOCONTENT", "LIMIT",
                    "0", str(N))
            except (redis.RedisError, OSError):
                self.errors += 1
                time.sleep(0.05)
                continue
            got = res[1:]
            if res[0] != len(self.want) or len(got) != len(set(got)) or \
                    set(got) != self.want:
                self.wrong.append((res[0], len(got), len(set(got)),
                                   sorted(set(got) ^ self.want)[:5]))
            self.answers += 1

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join(30)
        self.r.close()


def test_queries_during_rebalance(cluster_factory, procs):
    """Drain a node (R = 1): its partitions move to the others, with their
    index entries, while queries run from a node that keeps its own."""
    c = reb.settled(cluster_factory(nodes=3, replicas=1))
    index_and_docs(c)
    n2 = c.nodes[2]
    p = reb.cli(c, "node", "drain", n2.addr)
    assert p.returncode == 0, p.stderr
    plan = reb.make_plan(c)
    assert plan["moves"], plan
    q = Querier(c.nodes[0].port).start()
    try:
        ap = reb.Apply(c, procs, plan["id"], "--rate", "unlimited")
        assert ap.wait() == 0, ap.text()
        time.sleep(0.5)
    finally:
        q.stop()
    assert q.wrong == [], q.wrong[:3]
    assert q.answers > 0
    print("rebalance: %d answers, %d errors" % (q.answers, q.errors))
    # After the moves, every node answers the same, from the new owners.
    for node in c.nodes:
        r = redis.Redis(port=node.port, decode_responses=True)
        res = r.execute_command("FT.SEARCH", "idx", "@n:[0 +inf]",
                                "NOCONTENT", "LIMIT", "0", str(N))
        assert res[0] == N and len(set(res[1:])) == N
        r.close()


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL])
def test_queries_during_failover(cluster_factory, sig):
    """R = 3: a leader stopped (SIGSTOP past its lease) or killed (kill -9;
    `cluster up` restarts it): the followers take over its partitions, with
    the index entries they hold, and queries stay exact."""
    c = reb.settled(cluster_factory(nodes=3, replicas=3))
    index_and_docs(c)
    victim = c.nodes[1]
    pid = victim.pid
    q = Querier(c.nodes[0].port).start()
    try:
        time.sleep(0.5)
        assert signal_node(pid, sig, c.dir)
        time.sleep(4.0)
        if sig == signal.SIGSTOP:
            signal_node(pid, signal.SIGCONT, c.dir)
        time.sleep(2.0)
    finally:
        if sig == signal.SIGSTOP:
            signal_node(pid, signal.SIGCONT, c.dir)
        q.stop()
    assert q.wrong == [], q.wrong[:3]
    assert q.answers > 0, q.errors
    print("failover: %d answers, %d errors" % (q.answers, q.errors))
