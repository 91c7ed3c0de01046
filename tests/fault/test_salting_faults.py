"""The salting variant of the fault schedules (test_faults.py): a 3-node
cluster (R = 3, --acks quorum, forward mode) on etcd where one counter is
salted into 4 parts and folded back again and again (PK.SALT, PK.UNSALT
from a thread, at random running nodes) while three clients INCR it, one
per node, and nodes -- the counter's leader among them -- are killed
with kill -9 (and started again) and stopped with SIGSTOP, within their
lease and past it.  A fault so lands before, during or after every step
of some salting or fold (map edit, a part's read, its add with the
marker, its delete, the entry's removal).

Verdicts: the counter ends equal to the acknowledged INCRs, plus at most
those whose answer was lost (an error or a timeout: the INCR may have
been applied); and the register keys of the usual schedule, written
meanwhile, check linearizable with no acknowledged write lost.
"""
import random
import threading
import time

import redis

from test_faults import SEED, Run, kill_or_stop, n_of

KEY = "salted-counter"


class Counting:
    """Threads INCR KEY, each through its own node (another running one
    while it is down); acked counts the +OK-ed, unsure the others."""

    def __init__(self, c, n=3):
        self.c = c
        self.stop = threading.Event()
        self.acked = [0] * n
        self.unsure = [0] * n
        self.ths = [threading.Thread(target=self._run, args=(i,), daemon=True)
                    for i in range(n)]

    def _conn(self, i):
        nodes = [nd for nd in self.c.nodes if nd.alive() and not nd.stopped]
        mine = self.c.nodes[i % len(self.c.nodes)]
        nd = mine if mine in nodes else (nodes[0] if nodes else None)
        if nd is None:
            return None
        return redis.Redis(host=nd.host, port=nd.port, socket_timeout=3,
                           socket_connect_timeout=2)

    def _run(self, i):
        r = None
        while not self.stop.is_set():
            if r is None and (r := self._conn(i)) is None:
                time.sleep(0.1)
                continue
            try:
                r.incr(KEY)
                self.acked[i] += 1
            except redis.RedisError as e:
                # TRYAGAIN before anything was written is certain not to
                # count; an answer lost on the way may have.
                if not isinstance(e, redis.ResponseError) or \
                        "TRYAGAIN" not in str(e) or "not acknowledged" in str(e):
                    self.unsure[i] += 1
                if not isinstance(e, redis.ResponseError):
                    r = None
                time.sleep(0.02)

    def start(self):
        for t in self.ths:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.ths:
            t.join(20)


class Salter:
    """PK.SALT KEY 4 and PK.UNSALT KEY in turn from a thread, at random
    running nodes (forward mode takes them to the key's leader)."""

    def __init__(self, c, seed):
        self.c, self.rng = c, random.Random(seed)
        self.stop = threading.Event()
        self.done = {"salt": 0, "unsalt": 0}
        self.failed = {"salt": 0, "unsalt": 0}
        self.salted = False
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            up = [nd for nd in self.c.nodes if nd.alive() and not nd.stopped]
            if not up:
                time.sleep(0.1)
                continue
            nd = self.rng.choice(up)
            verb = "unsalt" if self.salted else "salt"
            args = ["PK.UNSALT", KEY] if self.salted else ["PK.SALT", KEY, 4]
            try:
                redis.Redis(host=nd.host, port=nd.port, socket_timeout=10,
                            socket_connect_timeout=2).execute_command(*args)
                self.done[verb] += 1
                self.salted = not self.salted
            except redis.RedisError as e:
                self.failed[verb] += 1
                # Whether it happened is the map's to say: "salted
                # already" / "not salted" put the thread right.
                if "salted already" in str(e):
                    self.salted = True
                elif "not salted" in str(e):
                    self.salted = False
            time.sleep(self.rng.uniform(0.2, 0.6))

    def start(self):
        self.th.start()
        return self

    def finish(self):
        self.stop.set()
        self.th.join(30)
        return "salter: %d saltings and %d folds done, %d and %d refused or " \
            "cut" % (self.done["salt"], self.done["unsalt"],
                     self.failed["salt"], self.failed["unsalt"])


def read_total(c, tries=100):
    for _ in range(tries):
        for nd in c.nodes:
            try:
                v = redis.Redis(host=nd.host, port=nd.port,
                                socket_timeout=5).get(KEY)
                return int(v or 0)
            except redis.RedisError:
                time.sleep(0.1)
    raise AssertionError("the counter cannot be read")


def test_kill_and_stop_during_salting(fcluster, tmp_path):
    """kill -9 (restarted after 0.2-2 s), SIGSTOP for 0.5-1.5 s and for
    3.5-5 s of the counter's leader or another node, in turn, while the
    counter is salted and folded back under three writers."""
    c = fcluster(extra=["--route", "forward", "--hot-key-writes", "0"])
    run = Run(c, tmp_path, "sks", per_node=3).start()
    cnt = Counting(c).start()
    sal = Salter(c, SEED).start()
    time.sleep(1.0)
    try:
        for cycle in range(n_of(6, 24)):
            lead = c.owner(c.slots(), KEY)
            nodes = [nd for nd in c.nodes if nd.port == lead] \
                if cycle % 2 == 0 and lead else c.nodes
            nd = run.rng.choice(nodes or c.nodes)
            doing = " (counter %s)" % ("salted" if sal.salted else "whole")
            if not kill_or_stop(run, nd, cycle % 3, doing):
                break
            time.sleep(run.rng.uniform(0.3, 1.0))
    finally:
        run.event(sal.finish())
        cnt.finish()
    if not run.liveness:
        run.settle("after the last fault")
    acked, unsure = sum(cnt.acked), sum(cnt.unsure)
    total = read_total(c)
    run.event("counter: %d INCRs acknowledged, %d unsure, value %d" % (
        acked, unsure, total))
    run.finish()
    assert sal.done["salt"] >= 2 and sal.done["unsalt"] >= 1, sal.finish()
    assert acked <= total <= acked + unsure, (acked, unsure, total)
    assert acked > 100
