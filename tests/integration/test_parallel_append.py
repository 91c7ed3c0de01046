"""Parallel append (issue 18): a leader sends the records of an iteration
to its followers before its own commit, and acknowledges a write once a
quorum of copies -- its committed one among them -- has it.  Records
that went out before a commit that failed, or that never came (kill -9),
are on followers and not in the leader's log: the leader must not write
other records at their positions, so it steps down and the controller
promotes at a new leader epoch, without losing a write or letting the
copies diverge."""
import os
import re
import signal
import time

import pytest
import redis

import pmap
from cluster import Cluster, keyslot, wait_until


def info_sent_early(node):
    with node.raw() as c:
        text = c.call("INFO", "replication")
    m = re.search(r"partkv_records_sent_before_commit:(\d+)", text)
    assert m, text
    return int(m.group(1))


def leader_epochs(cl):
    """Each partition's leader epoch in the map node 0 holds."""
    n = cl.nodes[0]
    r = redis.Redis(host=n.host, port=n.port, socket_timeout=10)
    return [p["leader_epoch"] for p in
            pmap.decode(r.execute_command("PK.MAP"))["parts"]]


def slot_led_by(cl, index, prefix):
    """A key whose slot node index leads."""
    port = cl.nodes[index].port
    for i in range(10000):
        k = "%s:%d" % (prefix, i)
        if cl.node_for_slot(keyslot(k)).port == port:
            return k
    raise AssertionError("no key led by node %d" % index)


@pytest.fixture
def cl():
    c = Cluster(nodes=3, replicas=3,
                extra=["--enable-debug-command", "yes", "--fsync", "always"])
    c.start()
    c.wait_serving()
    yield c
    c.cleanup()


def every_copy(cl, key):
    """key's value on each node's copy (READONLY reads of followers)."""
    vals = []
    for n in cl.nodes:
        c = redis.Redis(host=n.host, port=n.port, socket_timeout=10,
                        decode_responses=True)
        c.execute_command("READONLY")
        try:
            vals.append(c.get(key))
        except redis.exceptions.ResponseError as e:  # MOVED: no copy
            vals.append("error: %s" % e)
    return vals


def test_records_leave_before_the_commit(cl):
    rc = cl.rc()
    before = sum(info_sent_early(n) for n in cl.nodes)
    for i in range(300):
        rc.set("pa:%d" % i, i)
    sent = sum(info_sent_early(n) for n in cl.nodes) - before
    # Two followers per partition; a record that waited for a full window
    # goes after the commit instead.
    assert sent >= 300, sent
    assert all(int(rc.get("pa:%d" % i)) == i for i in range(300))
    k = "pa:7"
    n = cl.node_for_slot(keyslot(k))
    with n.raw() as c:
        assert c.call("SET", k, "x") == "OK"
        assert c.call("WAIT", 2, 2000) == 2
    assert every_copy(cl, k) == ["x"] * 3


def retry(fn, timeout=15):
    """fn() until the cluster answers it (during a promotion a client may
    see MOVED loops, TRYAGAIN or a closed connection)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (redis.exceptions.ClusterError,
                redis.exceptions.ResponseError,
                redis.exceptions.ConnectionError):
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_failed_commit_after_records_went_out(cl):
    tag = slot_led_by(cl, 0, "fc")
    k, k2 = "{%s}a" % tag, "{%s}b" % tag
    slot = keyslot(k)
    rc = cl.rc()
    rc.set(k, "old")
    assert cl.nodes[0].raw().call("WAIT", 2, 2000) == 2
    epoch0 = leader_epochs(cl)[slot]
    sent0 = info_sent_early(cl.nodes[0])
    with cl.coord() as c:
        assert c.call("PK.REPL", "FAILCOMMITS", 1) == "OK"
        rep = c.call("SET", k, "new")
    assert "may or may not be applied" in str(rep), rep
    assert info_sent_early(cl.nodes[0]) > sent0
    # The leader stepped down; the controller promotes at a new epoch --
    # a follower that has the record (then the write is applied), or the
    # leader again if it answered first (then it is not).
    wait_until(lambda: leader_epochs(cl)[slot] > epoch0, 15)
    assert leader_epochs(cl)[slot] > epoch0, cl.logs()
    v = retry(lambda: rc.get(k))
    assert v in ("new", "old"), v
    retry(lambda: rc.set(k2, "after"))
    leader = cl.node_for_slot(slot)
    with leader.raw() as c:
        assert c.call("WAIT", 2, 5000) == 2
    # No copy diverges: every one has the promoted leader's record.
    assert every_copy(cl, k) == [v] * 3
    assert every_copy(cl, k2) == ["after"] * 3


def test_unclean_restart_steps_down_clean_restart_does_not(cl):
    rc = cl.rc()
    k = slot_led_by(cl, 1, "urk")
    slot = keyslot(k)
    for i in range(200):  # writes in flight around the kill
        rc.set("ur:%d" % i, i)
    rc.set(k, "before")
    epoch0 = leader_epochs(cl)[slot]
    cl.kill_node(1, signal.SIGKILL)
    wait_until(lambda: "stopped uncleanly" in cl.stderr_text(), 30)
    assert "stopped uncleanly" in cl.stderr_text(), cl.logs()
    wait_until(lambda: leader_epochs(cl)[slot] > epoch0, 15)
    assert leader_epochs(cl)[slot] > epoch0
    deadline = time.monotonic() + 20
    while True:
        try:
            assert rc.get(k) == "before"
            rc.set(k, "after")
            break
        except (redis.exceptions.ClusterError,
                redis.exceptions.ResponseError,
                redis.exceptions.ConnectionError):
            assert time.monotonic() < deadline, cl.logs()
            time.sleep(0.2)
    assert all(int(rc.get("ur:%d" % i)) == i for i in range(200))
    # SIGTERM: the node commits what it sent and leaves no marker.
    n_unclean = cl.stderr_text().count("stopped uncleanly")
    pid = [int(m) for m in re.findall(r"restarted as pid (\d+)",
                                      cl.stderr_text())][-1]
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: cl.stderr_text().count("restarted as pid") >= 2, 30)
    time.sleep(2)
    assert cl.stderr_text().count("stopped uncleanly") == n_unclean
