"""Replication and failover: followers hold copies, --acks, WAIT,
READONLY, a stopped leader replaced in seconds and acknowledging nothing
afterwards, and kill -9 / SIGSTOP cycles with writers whose histories are
checked for lost writes and by the linearizability checker.

PARTKV_FAULT_CYCLES (default 10; `make test-faults` runs 40) sets the
number of fault cycles of each test_fault_cycles schedule, and
PARTKV_FAULT_SEED its random choices.
"""
import os
import random
import signal
import statistics
import time

import pytest
import redis

from cluster import keyslot, wait_until
from lincheck import History
from replfault import (SlotClient, Workers, final_reads, lost_writes,
                       node_pid, signal_node, wait_all_served)

CYCLES = int(os.environ.get("PARTKV_FAULT_CYCLES", "6"))
# --fsync for the fault cycles' nodes (make test-faults also runs them
# with "always": the leaders then send records before their commit).
FAULT_FSYNC = os.environ.get("PARTKV_FAULT_FSYNC")


def up(cluster_factory, acks="quorum", nodes=3, replicas=3, extra=()):
    c = cluster_factory(nodes=nodes, replicas=replicas,
                        extra=["--acks", acks, *extra])
    c.wait_serving()
    return c


def ports(c):
    return [n.port for n in c.nodes]


def leader_port(c, key):
    return c.node_for_slot(keyslot(key)).port


def key_led_by(c, port, prefix="k"):
    for i in range(100000):
        k = "%s%d" % (prefix, i)
        if leader_port(c, k) == port:
            return k
    raise AssertionError("no key led by %d" % port)


# ---------------------------------------------------------------------------
# copies, acks, WAIT, READONLY
# ---------------------------------------------------------------------------

def test_followers_hold_every_key(cluster_factory):
    c = up(cluster_factory)
    rc = c.rc()
    try:
        for i in range(600):
            rc.set("f%d" % i, "v%d" % i)
    finally:
        rc.close()

    # DBSIZE counts what a node leads; after READONLY, every copy it holds
    # (as a Redis replica counts its master's keys).
    def copies(n):
        r = n.client()
        r.execute_command("READONLY")
        return r.dbsize()

    def all_copies():
        return all(copies(n) == 600 for n in c.nodes)
    ok, _ = wait_until(all_copies, 10.0)
    assert ok, [copies(n) for n in c.nodes]
    assert sum(n.client().dbsize() for n in c.nodes) == 600
    # READONLY reads the follower's copy; without it, MOVED to the leader.
    k = "f7"
    lead = leader_port(c, k)
    follower = next(n for n in c.nodes if n.port != lead)
    r = redis.Redis(port=follower.port, decode_responses=True)
    with pytest.raises(redis.exceptions.ResponseError, match="MOVED"):
        r.get(k)
    r.execute_command("READONLY")
    assert r.get(k) == "v7"
    r.execute_command("READWRITE")
    with pytest.raises(redis.exceptions.ResponseError, match="MOVED"):
        r.get(k)
    with pytest.raises(redis.exceptions.ResponseError, match="MOVED"):
        r.execute_command("READONLY") and r.set(k, "x")
    r.close()


@pytest.mark.parametrize("acks", ["leader", "quorum", "all"])
def test_acks_and_wait(cluster_factory, acks):
    c = up(cluster_factory, acks=acks)
    k = key_led_by(c, c.nodes[1].port)
    r = redis.Redis(port=c.nodes[1].port, decode_responses=True)
    assert r.set(k, "a") is True
    # WAIT counts the followers that have this connection's writes.
    assert r.execute_command("WAIT", 2, 2000) == 2
    assert r.execute_command("WAIT", 0, 0) >= {"leader": 0, "quorum": 1,
                                               "all": 2}[acks]
    info = r.info("replication")
    assert info["connected_slaves"] == 2 and info["partkv_acks"] == acks
    with pytest.raises(redis.exceptions.ResponseError, match="integer"):
        r.execute_command("WAIT", "x", 0)
    r.close()


def test_follower_data_current_after_wait_and_kill(cluster_factory):
    """Followers put records in their log at once and into their data in
    batches (pk_store_log_defer / settle): a READONLY read right after
    WAIT still sees every write, and a follower killed -9 before it
    settled has every value after its restart."""
    c = up(cluster_factory)
    lead = c.nodes[0]
    tag = key_led_by(c, lead.port, prefix="t")
    r = redis.Redis(port=lead.port, decode_responses=True)
    followers = [n for n in c.nodes if n.port != lead.port]

    def write_round(rnd):
        pipe = r.pipeline(transaction=False)
        for i in range(3000):
            pipe.set("{%s}:%d" % (tag, i), "r%d-%d" % (rnd, i))
        pipe.delete("{%s}:7" % tag)
        pipe.hset("{%s}:h" % tag, mapping={"a": rnd, "b": "x"})
        res = pipe.execute()
        assert all(x is True for x in res[:3000]) and res[3000] == 1, res
        assert r.execute_command("WAIT", 2, 5000) == 2

    def check(port, rnd):
        f = redis.Redis(port=port, decode_responses=True)
        try:
            f.execute_command("READONLY")
            pipe = f.pipeline(transaction=False)
            for i in range(3000):
                pipe.get("{%s}:%d" % (tag, i))
            pipe.hgetall("{%s}:h" % tag)
            got = pipe.execute()
        finally:
            f.close()
        want = ["r%d-%d" % (rnd, i) if i != 7 else None for i in range(3000)]
        assert got[:3000] == want
        assert got[3000] == {"a": str(rnd), "b": "x"}

    write_round(1)
    for f in followers:
        check(f.port, 1)  # read at once: no settle timer has run yet
    write_round(2)
    victim = followers[0]
    pid = node_pid(victim.port)
    assert signal_node(pid, signal.SIGKILL, c.dir)
    # `cluster up` restarts it; it settles what it had at open.
    def back():
        try:
            return node_pid(victim.port) not in (None, pid) and \
                redis.Redis(port=victim.port).ping()
        except Exception:
            return False
    assert wait_until(back, 15.0, 0.1)[0]
    deadline = time.time() + 10
    while True:  # until it has a map and serves READONLY reads
        try:
            check(victim.port, 2)
            break
        except redis.exceptions.RedisError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    r.close()


def test_cluster_commands_list_replicas(cluster_factory):
    """With --announce-replicas yes (tests/integration/test_topology.py has
    the default, which lists only leaders)."""
    c = up(cluster_factory, extra=["--announce-replicas", "yes"])
    with c.nodes[0].raw() as raw:
        slots = raw.execute("CLUSTER", "SLOTS")
        nodes = raw.execute("CLUSTER", "NODES")
    assert all(len(r) == 5 for r in slots), slots  # leader + 2 replicas
    text = nodes if isinstance(nodes, str) else nodes.decode()
    assert text.count("slave") == 0 or "master" in text


def test_quorum_write_waits_for_a_follower(cluster_factory):
    """With both followers stopped, a quorum write is not acknowledged
    (TRYAGAIN after the ack timeout); once one follower is back, writes
    are acknowledged again."""
    c = up(cluster_factory)
    lead = c.nodes[0].port
    k = key_led_by(c, lead)
    pids = [node_pid(n.port) for n in c.nodes[1:]]
    marker = c.dir
    r = redis.Redis(port=lead, decode_responses=True, socket_timeout=10)
    try:
        for p in pids:
            assert signal_node(p, signal.SIGSTOP, marker)
        with pytest.raises(redis.exceptions.ResponseError, match="TRYAGAIN"):
            r.set(k, "unacked")
    finally:
        for p in pids:
            signal_node(p, signal.SIGCONT, marker)
    ok, _ = wait_until(lambda: _try_set(r, k, "acked"), 10.0, 0.1)
    assert ok
    r.close()


def _try_set(r, k, v):
    try:
        return r.set(k, v) is True
    except redis.exceptions.RedisError:
        return False


# ---------------------------------------------------------------------------
# failover
# ---------------------------------------------------------------------------

def _write_until_ok(cl, key, value, timeout=10.0):
    """Seconds until a SET through the slot client succeeds, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        st, rep = cl.call("SET", key, value)
        if st == "ok" and rep is True:
            return time.monotonic() - t0
        time.sleep(0.01)
        cl.refresh()
    return None


def _leaders(c):
    """Ports of the nodes that lead at least one of a sample of slots."""
    try:
        with c.nodes[0].raw() as raw:
            slots = raw.execute("CLUSTER", "SLOTS")
    except Exception:
        return set()
    return {master[1] for _, _, master, *_ in slots}


def _wait_node_up(c, port, timeout=15.0):
    def up_again():
        try:
            with c.nodes[0].raw() as raw:
                text = raw.execute("CLUSTER", "NODES")
        except Exception:
            return False
        text = text if isinstance(text, str) else text.decode()
        line = next((l for l in text.splitlines() if ":%d@" % port in l), "")
        return line and "fail" not in line
    return wait_until(up_again, timeout, 0.1)[0]


def test_stopped_leader_replaced_and_acknowledges_nothing(cluster_factory):
    """SIGSTOP a leader past its lease: a follower takes over; writes that
    were queued to the old leader are not acknowledged after SIGCONT, and
    none of their values is ever read."""
    c = up(cluster_factory)
    old = c.nodes[1]
    k = key_led_by(c, old.port)
    cl = SlotClient(ports(c))
    assert cl.call("SET", k, "before") == ("ok", True)
    pid = node_pid(old.port)
    raw = redis.Redis(port=old.port, socket_timeout=15,
                      decode_responses=True)
    raw.ping()
    assert signal_node(pid, signal.SIGSTOP, c.dir)
    try:
        took = _write_until_ok(cl, k, "after")
        assert took is not None, "no new leader within 10 s"
        # The stopped node's socket takes these; it runs them after CONT.
        pipe = raw.pipeline(transaction=False)
        for i in range(5):
            pipe.set(k, "stale-%d" % i)
        pipe.get(k)
        import threading
        res = {}
        t = threading.Thread(target=lambda: res.setdefault(
            "r", pipe.execute(raise_on_error=False)))
        t.start()
        time.sleep(0.3)
    finally:
        signal_node(pid, signal.SIGCONT, c.dir)
    t.join(20)
    replies = res["r"]
    assert not any(x is True for x in replies[:5]), replies
    assert replies[5] in (None, "before", "after") or isinstance(
        replies[5], Exception), replies
    assert _wait_node_up(c, old.port)
    assert cl.call("GET", k) == ("ok", "after")
    # The old leader, now a follower, drops its unacknowledged writes.
    def caught_up():
        r = redis.Redis(port=old.port, decode_responses=True)
        try:
            r.execute_command("READONLY")
            return r.get(k) == "after"
        finally:
            r.close()
    assert wait_until(caught_up, 10.0, 0.1)[0]
    cl.close()
    raw.close()


def test_leader_back_before_promotion_leads_on(cluster_factory):
    """A leader and one of its two followers stopped past their leases:
    the one follower left cannot promote itself (half of the replicas must
    answer).  When the old leader is back the controller fences it too and
    it leads on at the next epoch, with the other follower still stopped;
    every acknowledged value reads back."""
    c = up(cluster_factory)
    lead, other = c.nodes[1], c.nodes[2]
    k = key_led_by(c, lead.port)
    cl = SlotClient(ports(c), timeout=0.3)
    assert cl.call("SET", k, "before") == ("ok", True)
    lpid, opid = node_pid(lead.port), node_pid(other.port)
    assert signal_node(lpid, signal.SIGSTOP, c.dir)
    assert signal_node(opid, signal.SIGSTOP, c.dir)
    try:
        time.sleep(3.0)  # both leases (1.5 s) ran out; fences went out
        assert cl.call("SET", k, "during")[0] != "ok"  # 1 copy of 3
        assert signal_node(lpid, signal.SIGCONT, c.dir)
        took = _write_until_ok(cl, k, "after", timeout=15.0)
        assert took is not None, "old leader not serving again\n" + \
            _diagnose(c)
        assert leader_port(c, k) == lead.port
    finally:
        signal_node(lpid, signal.SIGCONT, c.dir)
        signal_node(opid, signal.SIGCONT, c.dir)
    assert cl.call("GET", k) == ("ok", "after")
    assert _wait_node_up(c, other.port)
    assert wait_until(lambda: _leaders(c) == {x.port for x in c.nodes},
                      20.0, 0.2)[0], _diagnose(c)
    cl.close()


def test_failover_time(cluster_factory):
    """Time from stopping a leader (SIGSTOP: it stays dead) to the first
    acknowledged write to one of its partitions; and from kill -9 (which
    `cluster up` restarts) to the same.  Printed; only bounded here."""
    c = up(cluster_factory)
    # A short timeout: a write sent to the stopped node is given up fast.
    cl = SlotClient(ports(c), timeout=0.3)
    stops, kills = [], []
    rng = random.Random(7)
    for i in range(4):
        # A node that leads something (a failed-over node leads nothing
        # until leaders are rebalanced), not the coordinator's host: with
        # the embedded coordinator stopped nothing can fail over.
        leads = _leaders(c)
        cands = [n for n in c.nodes[1:] if n.port in leads]
        if not cands:
            break
        n = rng.choice(cands)
        k = key_led_by(c, n.port, "ft%d-" % i)
        assert _write_until_ok(cl, k, "x") is not None
        pid = node_pid(n.port)
        sig = signal.SIGSTOP if i % 2 == 0 else signal.SIGKILL
        assert signal_node(pid, sig, c.dir)
        # A liveness bound, not a speed target (bench/failover.sh measures
        # that): under a loaded make test a round once took over 10 s, with
        # a follower's stream redialled after STALL_MS; the diagnosis below
        # is printed for any round over 10 s.
        took = _write_until_ok(cl, k, "y%d" % i, timeout=20.0)
        ctl = 0.0
        if sig == signal.SIGSTOP and took is not None:
            # The other leaders keep their leases while n stays stopped: a
            # balance round begun just before the stop left a handoff of
            # the controller's node's partitions that only n could finish,
            # and its retries kept the follower that answered from
            # promising that node anything (test_ctrl_retry.c).  Past the
            # promise of the failover's own map (about 1 s).
            time.sleep(1.2)
            k0 = key_led_by(c, c.nodes[0].port, "fc%d-" % i)
            ctl = _write_until_ok(cl, k0, "z%d" % i, timeout=10.0)
        if sig == signal.SIGSTOP:
            signal_node(pid, signal.SIGCONT, c.dir)
            stops.append(took)
        else:
            kills.append(took)
        if took is None or took >= 10 or ctl is None:
            print("round %d: no acknowledged write %s after %s (on node 0: "
                  "%s)\n%s\n%s" % (
                      i, "SIGSTOP" if sig == signal.SIGSTOP else "kill -9",
                      took, ctl, _diagnose(c), c.logs()))
        assert took is not None, (i, took)
        assert ctl is not None, (i, "node 0 lost its lease")
        assert _wait_node_up(c, n.port)
        # The controller gives it back its share of leaderships (balancing
        # waits until every follower streams again).
        assert wait_until(lambda: _leaders(c) == {x.port for x in c.nodes},
                          20.0, 0.2)[0], (i, _diagnose(c))
    print("failover after SIGSTOP: %s s; after kill -9 + restart: %s s"
          % (["%.2f" % t for t in stops], ["%.2f" % t for t in kills]))
    cl.close()


def _diagnose(c):
    """Each node's replication view, for a failure message."""
    out = []
    for n in c.nodes:
        try:
            with n.raw() as raw:
                raw.call("PK.AUTH", c.secret)
                out.append("%d: stepped %r" % (
                    n.port, raw.call("PK.REPL", "STEPPED")[:10]))
                out.append("%d: %s" % (n.port, raw.call("INFO", "replication")))
                out.append("%d: %s" % (n.port, raw.call("CLUSTER", "NODES")))
        except Exception as e:  # a node that does not answer
            out.append("%d: %r" % (n.port, e))
    return "\n".join(str(x) for x in out) + "\n"


# ---------------------------------------------------------------------------
# kill -9 and SIGSTOP cycles under load
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("faults", ["kill", "mixed"])
def test_fault_cycles(cluster_factory, tmp_path, faults):
    """Writers with unique values at acks=quorum while nodes, leaders
    included, are killed with kill -9 (cluster up restarts them) or, in
    the mixed schedule, also stopped past their lease (a failover);
    afterwards every acknowledged write reads back, no value appears that
    nobody wrote, and the histories are linearizable."""
    c = up(cluster_factory,
           extra=["--fsync", FAULT_FSYNC] if FAULT_FSYNC else [])
    stop_ratio = 0.0 if faults == "kill" else 0.4
    keys = ["lin%d" % i for i in range(12)]
    hist = History()
    w = Workers(hist, ports(c), keys, n=4, seed=11).start()
    rng = random.Random(int(os.environ.get("PARTKV_FAULT_SEED", "5")))
    log = []
    try:
        for cycle in range(CYCLES):
            time.sleep(rng.uniform(0.3, 1.0))
            # The mixed schedule spares node 0, the embedded coordinator's
            # host: stopping it stops every failover (known; see README),
            # and with it stopped or killed between failovers some
            # partitions were seen to stay fenced without a leader.
            first = 0 if faults == "kill" else 1
            n = c.nodes[rng.randrange(first, len(c.nodes))]
            pid = node_pid(n.port)
            if pid is None:
                continue
            if rng.random() >= stop_ratio:
                signal_node(pid, signal.SIGKILL, c.dir)
                log.append("kill -9 %d" % n.port)
            else:
                signal_node(pid, signal.SIGSTOP, c.dir)
                time.sleep(rng.uniform(1.8, 2.6))
                signal_node(pid, signal.SIGCONT, c.dir)
                log.append("stop %d" % n.port)
            # Back and serving before the next fault.
            wait_until(lambda: node_pid(n.port, 0.5) is not None, 15.0, 0.1)
            _wait_node_up(c, n.port)
    finally:
        counts = w.finish()
    assert wait_all_served(ports(c), keys), _diagnose(c) + c.logs()
    finals = final_reads(hist, ports(c), keys)
    path = tmp_path / "history.jsonl"
    hist.save(str(path))
    print("faults: %s; ops: %r" % (", ".join(log), counts))
    assert counts["acked"] > 50, counts
    bad = lost_writes(hist, finals)
    assert not bad, bad
    res = hist.check(timeout_s=120)
    assert res.ok, res.summary() + " (history: %s)" % path
