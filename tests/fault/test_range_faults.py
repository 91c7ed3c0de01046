"""The range variant of the fault schedules (test_faults.py): a 3-node
range-scheme cluster (R = 3, --acks quorum, forward mode) on etcd, split
in three, with splits and merges running the whole time -- an editor
thread runs `partkv range split` at a random key and `partkv range merge`
of a random range, keeping 3 to 8 ranges -- while nodes, leaders
included, are killed with kill -9 (and started again) and stopped with
SIGSTOP (within their lease, and past it: their ranges fail over), and
the coordinator (etcd) is killed with kill -9 and started again.  A
fault so lands before, during or after every step of some split or merge
(fence, drain, map edit, relabel, the move a merge may need first).

Verdicts as in test_faults: no acknowledged write lost and the history
linearizable (lincheck) always fail the test; liveness -- every node
serving with the same map and leading something within 10 s of each
fault, writes acknowledged again on every key -- fails it too, or is an
xfail with PARTKV_FAULT_STRICT=0.  At the end every replica must hold the
same keys per range as the others.  The editor's outcomes (edits done,
refused, abandoned) go to the fault-report lines.

Automatic splits and merges are off (--split-qps 0, --split-size 0,
--merge-delay 0) so that the edits are the editor's and the ranges stay
few enough for each fault to find one at work.
"""
import random
import subprocess
import threading
import time

import pytest
import redis

import faultlib as F
import server as pkserver
from cluster import wait_until
from test_faults import SEED, Run, kill_or_stop, n_of


class Editor:
    """Splits and merges on c, one at a time, from a thread, through the
    CLI on a node that runs (not stopped), at keys from keyfn(rng), keeping
    lo to hi ranges; counts outcomes."""

    def __init__(self, c, keyfn, seed, lo=3, hi=8):
        self.c, self.keyfn, self.lo, self.hi = c, keyfn, lo, hi
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.done = {"split": 0, "merge": 0}
        self.failed = {"split": 0, "merge": 0}
        self.last = None  # (verb, key) of the edit under way
        self.th = threading.Thread(target=self._run, daemon=True)

    def _node(self):
        up = [nd for nd in self.c.nodes if nd.alive() and not nd.stopped]
        return self.rng.choice(up) if up else None

    def _run(self):
        while not self.stop.is_set():
            nd = self._node()
            view = self.c.slots(nd) if nd else None
            if not view:
                time.sleep(0.2)
                continue
            n = len(view)
            verb = "split" if n <= self.lo or (
                n < self.hi and self.rng.random() < 0.5) else "merge"
            key = self.keyfn(self.rng)
            self.last = (verb, key)
            try:
                p = subprocess.run(
                    [pkserver.partkv_path(), "range", verb, key, "--cluster",
                     nd.addr, "--secret", self.c.secret],
                    stdin=subprocess.DEVNULL, capture_output=True, text=True,
                    timeout=100)
                ok = p.returncode == 0
            except subprocess.TimeoutExpired:
                ok = False
            (self.done if ok else self.failed)[verb] += 1
            time.sleep(self.rng.uniform(0.05, 0.3))

    def start(self):
        self.th.start()
        return self

    def finish(self):
        self.stop.set()
        self.th.join(120)
        return "editor: %d splits and %d merges done, %d and %d refused or " \
            "abandoned" % (self.done["split"], self.done["merge"],
                           self.failed["split"], self.failed["merge"])


def range_counts(c):
    """{node addr: {range: keys}} from each running node's PK.PARTITIONS."""
    out = {}
    for nd in c.nodes:
        rep = nd.call("PK.PARTITIONS", timeout=2.0)
        if isinstance(rep, list):
            out[nd.addr] = {e[1]: e[3] for e in rep}
    return out


def kill_coordinator(run, during):
    """kill -9 of the coordinator (the one etcd member), started again
    after 0.3-1.5 s: map edits under way wait for it and retry."""
    c = run.c
    c.etcd.kill_member(0)
    down = run.rng.uniform(0.3, 1.5)
    time.sleep(down)
    c.etcd.start_member(0)
    c.etcd.wait_ready()
    run.quiet()
    run.event("etcd kill -9, restarted after %.1fs%s" % (down, during))


def test_range_kill_and_stop_during_edits(fcluster, tmp_path):
    """kill -9 (restarted after 0.2-2 s), SIGSTOP for 0.5-1.5 s and for
    3.5-5 s of a node -- the leader of the range the editor works on, or
    another -- and kill -9 of the coordinator, in turn, while splits and
    merges run."""
    name = "rks"
    c = fcluster(presplit="%s-3,%s-6" % (name, name),
                 extra=["--split-qps", "0", "--split-size", "0",
                        "--merge-delay", "0"])
    run = Run(c, tmp_path, name, per_node=5).start()
    ed = Editor(c, lambda rng: "%s-%d" % (name, rng.randint(0, 999)),
                SEED).start()
    time.sleep(1.0)
    for cycle in range(n_of(8, 32)):
        key = (ed.last or ("", name + "-0"))[1]
        lead = c.leader_port(key)
        nodes = [nd for nd in c.nodes if nd.port == lead] \
            if cycle % 2 == 0 and lead else c.nodes
        nd = run.rng.choice(nodes or c.nodes)
        doing = " during range %s %s" % ed.last if ed.last else ""
        if cycle % 4 == 3:
            kill_coordinator(run, doing)
        elif not kill_or_stop(run, nd, cycle % 4, doing):
            break
        time.sleep(run.rng.uniform(0.3, 1.0))
    run.event(ed.finish())
    if not run.liveness:
        run.settle("after the last fault")
    view = c.slots()
    run.event("%d ranges at the end" % len(view or ()))
    ok, _ = wait_until(lambda: len({repr(sorted(v.items())) for v in
                                    range_counts(c).values()}) == 1, 30, 0.5)
    counts = range_counts(c)
    run.finish()
    assert ed.done["split"] + ed.done["merge"] >= 3, ed.finish()
    assert ok, "replicas disagree on keys per range: %r" % counts


def read_range(c, rng, page=2000):
    """Every key of PK.RANGE - + in pages, each page from a random running
    node (a page that meets TRYAGAIN or a failing node is asked again);
    (keys, pages)."""
    out, start, pages = [], b"-", 0
    conns = {}
    while True:
        for attempt in range(200):
            nd = rng.choice([n for n in c.nodes
                             if n.alive() and not n.stopped])
            r = conns.get(nd.port)
            if r is None:
                r = conns[nd.port] = redis.Redis(
                    host=nd.host, port=nd.port, socket_timeout=5)
            try:
                cont, items = r.execute_command("PK.RANGE", start, b"+",
                                                "LIMIT", page)
                break
            except (redis.ResponseError, redis.ConnectionError,
                    redis.TimeoutError) as e:
                if isinstance(e, redis.ResponseError) and \
                        "TRYAGAIN" not in str(e) and "forwarding" not in str(e):
                    raise
                conns.pop(nd.port, None)
                time.sleep(0.05)
        else:
            raise AssertionError("no page at %r" % start)
        pages += 1
        out += items
        if cont == b"":
            return out, pages
        start = cont


@pytest.mark.skipif(not F.LONG, reason="the long schedule (make test-faults)")
def test_range_read_million(fcluster, tmp_path):
    """The acceptance read: 1,000,000 keys in 40 ranges, read whole with
    PK.RANGE (pages of 500 from random nodes) three to eight times, until
    six splits or merges ran during the reads
    and the controller moves leaderships (balancing, merges' handoffs):
    every key once, in order, equal to the model."""
    n = 1000000
    keys = [b"k%07d" % i for i in range(n)]
    bounds = ",".join("k%07d" % (i * n // 40) for i in range(1, 40))
    c = fcluster(presplit=bounds, extra=["--split-qps", "0", "--split-size",
                                         "0", "--merge-delay", "0"])
    t0 = time.monotonic()
    conns = [redis.Redis(host=nd.host, port=nd.port, socket_timeout=30)
             for nd in c.nodes]
    for b in range(0, n, 5000):
        pipe = conns[(b // 5000) % 3].pipeline(transaction=False)
        for k in keys[b:b + 5000]:
            pipe.set(k, k)
        assert all(pipe.execute())
    load_s = time.monotonic() - t0
    assert len(c.slots()) == 40
    ed = Editor(c, lambda rng: "k%07d" % rng.randrange(n), SEED, lo=30,
                hi=50).start()
    rng = random.Random(SEED)
    try:
        time.sleep(2)
        edits = 0
        for i in range(8):  # until enough edits overlapped the reads
            t = time.monotonic()
            before = sum(ed.done.values())
            got, pages = read_range(c, rng, page=500)
            during = sum(ed.done.values()) - before
            edits += during
            F.note("million: read %d: %d keys in %d pages, %.1fs, %d edits "
                   "done meanwhile (load took %.1fs)" % (
                       i, len(got), pages, time.monotonic() - t, during,
                       load_s))
            assert len(got) == n and got == keys, (
                len(got), len(set(got)), next((j for j, (a, b) in enumerate(
                    zip(got, keys)) if a != b), None))
            if i >= 2 and edits >= 6:
                break
        assert edits >= 3, "too few splits/merges during the reads"
    finally:
        F.note("million: " + ed.finish() + "; %d ranges at the end"
               % len(c.slots() or ()))
