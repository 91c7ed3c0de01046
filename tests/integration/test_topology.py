"""The topology Redis Cluster clients read: every leading node is a primary.

A partkv node leads some partitions and follows others; a Redis client
gives each node one role.  By default every node is announced as the
master of the partitions it leads and followers are not listed, so that
python3-redis, ioredis and redis-cli see every leading node as a primary
and a broadcast (DBSIZE, SCAN, KEYS, FLUSHALL) reaches every key exactly
once -- at R = 1, 2 and 3 alike.  --announce-replicas yes lists the
followers for clients that read from replicas (READONLY).
"""
import json
import os
import shutil
import subprocess
import time

import pytest
from redis.cluster import RedisCluster

from cluster import Cluster

# redis-py's default (DEFAULT_NODE) for DBSIZE and KEYS is one node.
PRIMARIES = RedisCluster.PRIMARIES

NKEYS = 300


def rcluster(cl, **kw):
    n = cl.nodes[0]
    return RedisCluster(host=n.host, port=n.port, **kw)


@pytest.fixture(params=[1, 2, 3], ids=lambda r: "R%d" % r)
def cl(request):
    c = Cluster(nodes=3, replicas=request.param)
    c.start()
    c.wait_serving()
    yield c
    c.cleanup()


def write_keys(rc, n=NKEYS):
    keys = ["topo:%d" % i for i in range(n)]
    for k in keys:
        rc.set(k, k)
    return keys


def test_primaries_and_broadcasts(cl):
    rc = rcluster(cl)
    try:
        prim = rc.get_primaries()
        assert sorted(n.port for n in prim) == sorted(
            n.port for n in cl.nodes)
        assert rc.get_replicas() == []
        keys = write_keys(rc)
        # redis-py 4.3.4 sends DBSIZE and KEYS to its default node only
        # (as with Redis Cluster); asked of the primaries, they add up.
        assert rc.dbsize(target_nodes=PRIMARIES) == NKEYS
        seen = [k.decode() for k in rc.scan_iter(count=50)]
        assert sorted(seen) == sorted(keys)  # each key exactly once
        got = rc.keys("topo:*", target_nodes=PRIMARIES)
        assert sorted(k.decode() for k in got) == sorted(keys)
        res = rc.flushall()  # {node: True} from every primary
        assert len(res) == 3 and all(res.values()), res
        assert rc.dbsize(target_nodes=PRIMARIES) == 0
        assert list(rc.scan_iter()) == []
        for k in keys[:20]:  # the flush reached every leader's keys
            assert rc.get(k) is None
    finally:
        rc.close()


def test_cluster_nodes_all_masters(cl):
    with cl.nodes[1].raw() as c:
        text = c.call("CLUSTER", "NODES")
    lines = [ln.split(" ") for ln in text.splitlines()]
    assert len(lines) == 3
    for f in lines:
        assert "slave" not in f[2].split(","), f
        assert f[3] == "-"
        assert len(f) > 8  # every node leads a share of the slots
    with cl.nodes[2].raw() as c:
        shards = c.call("CLUSTER", "SHARDS")
    assert len(shards) == 3
    for sh in shards:
        d = dict(zip(sh[::2], sh[1::2]))
        assert len(d["nodes"]) == 1


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="no redis-cli")
def test_redis_cli_cluster_check(cl):
    n = cl.nodes[0]
    p = subprocess.run(["redis-cli", "--cluster", "check",
                        "%s:%d" % (n.host, n.port)],
                       capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[OK] All nodes agree about slots configuration." in out, out
    assert "[OK] All 16384 slots covered." in out, out
    assert out.count("M: ") == 3, out


def read_until(get, want, tries=200):
    """get() until it returns want (a follower may be a write behind)."""
    for _ in range(tries):
        if get() == want:
            return True
        time.sleep(0.01)
    return False


NPM = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "build", "npm", "node_modules")

IOREDIS_JS = r"""
const Redis = require("ioredis");
const [host, ps, ns] = process.argv.slice(-3);
const [port, n] = [+ps, +ns];
(async () => {
  const c = new Redis.Cluster([{host, port}], {redisOptions: {}});
  await new Promise((ok, bad) => { c.once("ready", ok); c.once("error", bad); });
  for (let i = 0; i < n; i++) await c.set("io:" + i, "v" + i);
  let bad = 0;
  for (let i = 0; i < n; i++) if ((await c.get("io:" + i)) !== "v" + i) bad++;
  const masters = c.nodes("master");
  let total = 0;
  for (const m of masters) total += await m.dbsize();
  console.log(JSON.stringify({masters: masters.length,
                              slaves: c.nodes("slave").length, total, bad}));
  c.disconnect();
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


@pytest.mark.skipif(not os.path.isdir(os.path.join(NPM, "ioredis")),
                    reason="ioredis not installed (scripts/deps.sh)")
def test_ioredis_sees_every_primary(cl):
    n = cl.nodes[0]
    p = subprocess.run(["node", "-e", IOREDIS_JS, n.host, str(n.port), "200"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NODE_PATH=NPM))
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got == {"masters": 3, "slaves": 0, "total": 200, "bad": 0}, got


def test_announce_replicas_reads_from_followers():
    c = Cluster(nodes=3, replicas=3, extra=["--announce-replicas", "yes"])
    c.start()
    try:
        c.wait_serving()
        with c.nodes[0].raw() as r:
            slots = r.call("CLUSTER", "SLOTS")
        for entry in slots:
            assert len(entry) == 5  # start, end, the leader, 2 followers
            assert len({e[1] for e in entry[2:]}) == 3
        rc = rcluster(c, read_from_replicas=True)
        try:
            keys = write_keys(rc, 50)
            # redis-py spreads reads over a slot's replicas after READONLY.
            for k in keys:
                assert read_until(lambda: rc.get(k), k.encode()), k
        finally:
            rc.close()
        # Every node holds a copy of every key at R = 3 and answers a
        # READONLY read from it.
        for n in c.nodes:
            with n.raw() as r:
                assert r.call("READONLY") == "OK"
                for k in keys:
                    assert read_until(lambda: r.call("GET", k), k), (n, k)
    finally:
        c.cleanup()


@pytest.mark.partkv_only
def test_bad_announce_flag(partkv):
    p = partkv("server", "--announce-replicas", "maybe", check=False)
    assert p.returncode == 2
    assert "--announce-replicas" in p.stderr and "\n" == p.stderr[-1]
    assert p.stderr.count("\n") == 1
