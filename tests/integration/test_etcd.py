"""A cluster whose coordinator is a real etcd: it serves, fails over, and
its data path does not depend on etcd -- with etcd killed, nodes keep
serving reads and writes for the partitions they own with the map they
hold (requests/s before and during are printed), and map changes wait
until etcd is back.
"""
import random
import signal
import threading
import time

import pytest
import redis

from cluster import Cluster, keyslot, wait_until
from etcd import Etcd
from replfault import SlotClient, node_pid, signal_node


def etcd_cluster(e, **kw):
    c = Cluster(nodes=3, replicas=3,
                secret="x-%032x" % random.getrandbits(128),
                extra=["--coordinator", "etcd://" + e.endpoints] +
                list(kw.pop("extra", ())), **kw)
    c.start()
    c.wait_serving()
    return c


def rate(ports, seconds, prefix):
    """SET+GET pairs per second through a slot client for `seconds`, and
    the errors seen."""
    cl = SlotClient(ports, timeout=1.0)
    n = errs = 0
    t_end = time.monotonic() + seconds
    try:
        while time.monotonic() < t_end:
            k = "%s%d" % (prefix, n % 500)
            st, rep = cl.call("SET", k, "v%d" % n)
            st2, rep2 = cl.call("GET", k)
            if st == "ok" and rep is True and st2 == "ok" and \
                    rep2 == "v%d" % n:
                n += 1
            else:
                errs += 1
    finally:
        cl.close()
    return n / seconds, errs


def test_cluster_on_etcd_serves_and_survives_etcd_loss():
    e = Etcd()
    e.start()
    c = None
    try:
        c = etcd_cluster(e)
        ports = [n.port for n in c.nodes]
        rc = c.rc()
        for i in range(300):
            rc.set("e%d" % i, "v%d" % i)
        assert all(rc.get("e%d" % i) == "v%d" % i for i in range(300))
        rc.close()

        before, errs = rate(ports, 3.0, "pre")
        assert errs == 0
        e.kill_member(0)  # etcd is gone
        during, errs = rate(ports, 3.0, "dur")
        print("SET+GET pairs/s with etcd up: %.0f; with etcd killed: %.0f "
              "(%.2fx)" % (before, during, during / before))
        assert errs == 0, "the data path failed without etcd"
        assert during > 0.3 * before
        # A map change waits: a stopped leader is not failed over ...
        victim = c.nodes[2]
        pid = node_pid(victim.port)
        k = next("w%d" % i for i in range(100000)
                 if c.node_for_slot(keyslot("w%d" % i)).port == victim.port)
        assert signal_node(pid, signal.SIGSTOP, c.dir)
        try:
            cl = SlotClient([n.port for n in c.nodes[:2]], timeout=0.3)
            time.sleep(3.0)
            st, _ = cl.call("SET", k, "x")
            assert st != "ok", "failed over without a coordinator"
            # ... until etcd is back.
            e.start_member(0)
            e.wait_ready()
            t0 = time.monotonic()
            ok, _ = wait_until(lambda: cl.call("SET", k, "y") == ("ok", True),
                               20.0, 0.1)
            print("failover %.2f s after etcd came back"
                  % (time.monotonic() - t0))
            assert ok, c.logs()
            cl.close()
        finally:
            signal_node(pid, signal.SIGCONT, c.dir)
        assert c.stop() == 0, c.logs()
    finally:
        if c is not None:
            c.cleanup()
        e.stop()


@pytest.mark.long_fault
def test_three_member_etcd_leader_killed_during_failover():
    """A 3-member etcd whose members are killed one at a time while a
    leader is stopped: the failover still happens once a quorum of etcd
    answers, and writes go on."""
    e = Etcd(3)
    e.start()
    c = None
    try:
        c = etcd_cluster(e)
        victim = c.nodes[1]
        k = next("m%d" % i for i in range(100000)
                 if c.node_for_slot(keyslot("m%d" % i)).port == victim.port)
        cl = SlotClient([n.port for n in c.nodes], timeout=0.3)
        assert cl.call("SET", k, "a") == ("ok", True)
        pid = node_pid(victim.port)
        assert signal_node(pid, signal.SIGSTOP, c.dir)
        try:
            e.kill_member(0)  # one of three: quorum stays
            ok, _ = wait_until(lambda: cl.call("SET", k, "b") == ("ok", True),
                               25.0, 0.1)
            assert ok, c.logs() + e.logs()
        finally:
            signal_node(pid, signal.SIGCONT, c.dir)
        assert cl.call("GET", k) == ("ok", "b")
        cl.close()
        assert c.stop() == 0, c.logs()
    finally:
        if c is not None:
            c.cleanup()
        e.stop()
