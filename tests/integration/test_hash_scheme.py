"""The hash scheme: keys placed by md5_64 mod P, nodes in forward mode, so a
plain client on any node sees one keyspace; multi-key commands across
partitions are split and merged; CLUSTER SLOTS explains why it is not
served."""
import json
import os
import random
import subprocess

import pytest
import redis

import cluster as pkcluster
import server as pkserver

pytestmark = pytest.mark.partkv_only


@pytest.fixture(scope="module")
def hc():
    assert os.access(pkserver.partkv_path(), os.X_OK), "build partkv first"
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1,
                          extra=["--scheme", "hash", "--partitions", "64",
                                 "--hash", "md5"])
    try:
        c.start()
        c.wait_serving()
        yield c
        assert c.stop() == 0
        assert not c.leftover_nodes()
    finally:
        c.cleanup()


def client(node):
    return redis.Redis(host=node.host, port=node.port, socket_timeout=10,
                       decode_responses=True)


def test_summary(hc):
    assert hc.summary["mode"] == "forward"
    assert hc.summary["slots"] == 64
    assert "md5 partitions" in hc.summary["line"]


def test_one_keyspace_from_every_node(hc):
    t = "%08x" % random.getrandbits(32)
    before = sum(client(n).dbsize() for n in hc.nodes)
    for i in range(600):
        client(hc.nodes[i % 3]).set("h%s:%d" % (t, i), str(i))
    for i in range(600):
        assert client(hc.nodes[(i + 1) % 3]).get("h%s:%d" % (t, i)) == str(i)
    sizes = [client(n).dbsize() for n in hc.nodes]
    assert sum(sizes) - before == 600
    assert all(s > 0 for s in sizes), sizes


def test_split_and_merge(hc):
    t = "%08x" % random.getrandbits(32)
    r = client(hc.nodes[0])
    keys = ["m%s:%d" % (t, i) for i in range(40)]
    assert r.mset({k: k.upper() for k in keys}) is True
    got = r.mget(keys + ["m%s:missing" % t])
    assert got == [k.upper() for k in keys] + [None]
    assert r.exists(*keys[:10], "m%s:missing" % t) == 10
    assert r.delete(*keys[:5]) == 5
    assert client(hc.nodes[2]).mget(keys[:6]) == [None] * 5 + [keys[5].upper()]


def test_cluster_slots_explains(hc):
    with pytest.raises(redis.ResponseError) as e:
        client(hc.nodes[1]).execute_command("CLUSTER", "SLOTS")
    assert "only served with the slots scheme" in str(e.value)


def test_status_json(hc):
    n = hc.nodes[0]
    p = subprocess.run([pkserver.partkv_path(), "cluster", "status",
                        "--cluster", "%s:%d" % (n.host, n.port), "--json"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    st = json.loads(p.stdout)
    assert st["health"] == "ok" and st["partitions_assigned"] == 64
