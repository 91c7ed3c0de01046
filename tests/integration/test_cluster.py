"""partkv cluster mode end to end: `partkv cluster up`, real Redis Cluster
clients (redis-cli -c, redis-py RedisCluster, redis-benchmark --cluster),
the CLUSTER command family, and the embedded coordinator through PK.COORD.

Expectations follow /work/shared/REDIS-CLUSTER-NOTES.md (what redis 7.0
sends and what the clients need).  Every cluster runs on 127.0.0.1 in a
temp dir and is stopped by PID.
"""
import csv
import io
import os
import random
import signal
import subprocess
import time

import pytest

import cluster as pkcluster
from cluster import (MAP_KEY, NODES_PREFIX, kv_dict, pmap_with_epoch,
                     redis_cli, wait_until)
from etcd import Etcd
from server import RespError

pytestmark = pytest.mark.partkv_only

NSLOTS = 16384
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"

# Vectors from the notes (redis-cli cluster keyslot against redis 7.0.15).
KEYSLOT_VECTORS = [
    ("123456789", 12739),
    ("foo", 12182),
    ("{user1000}.following", 3443),
    ("{user1000}.followers", 3443),
    ("foo{}{bar}", 8363),
    ("foo{{bar}}zap", 4015),
    ("{bar", 4015),
    ("foo{bar}{zap}", 5061),
    ("a{b}c", 3300),
    ("{b}", 3300),
    ("key:{8M}}:000000000056", 5461),
    ("", 0),
]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def crc16(data):
    """CRC16/XMODEM (poly 0x1021, init 0)."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def keyslot(key):
    k = key.encode() if isinstance(key, str) else key
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) & 0x3FFF


def expected_owner(slot, n=3):
    """Index of the node owning slot in the 3-way split of the brief."""
    bounds = {3: [(0, 5460), (5461, 10922), (10923, 16383)]}[n]
    for i, (a, b) in enumerate(bounds):
        if a <= slot <= b:
            return i
    raise AssertionError(slot)


def keys_on(node_index, prefix, count=1):
    """count keys 'prefix:<i>' whose slot belongs to node_index."""
    out, i = [], 0
    while len(out) < count:
        k = "%s:%d" % (prefix, i)
        if expected_owner(keyslot(k)) == node_index:
            out.append(k)
        i += 1
    return out


def token():
    return "%08x" % random.getrandbits(32)


def parse_nodes(text):
    """CLUSTER NODES text -> list of field lists (split on single ' ')."""
    assert text.endswith("\n"), repr(text[-40:])
    assert "\r" not in text, repr(text)
    return [l.split(" ") for l in text[:-1].split("\n")]


def slot_ranges(fields):
    """Slot fields of a NODES line -> list of (a, b)."""
    out = []
    for f in fields:
        if f.startswith("["):
            continue
        a, _, b = f.partition("-")
        out.append((int(a), int(b or a)))
    return out


# ---------------------------------------------------------------------------
# the shared cluster
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cl():
    assert os.access(pkcluster.pkserver.partkv_path(), os.X_OK), \
        "build partkv first (make)"
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1,
                          secret="t-%032x" % random.getrandbits(128))
    try:
        c.start()
        c.wait_serving()  # see test_ready_means_serving
        yield c
        assert c.alive(), "cluster up exited early:\n" + c.logs()
        rc = c.stop()
        assert rc == 0, "cluster up exit %r after SIGTERM\n%s" % (
            rc, c.logs())
        left = c.leftover_nodes()
        assert not left, "node processes left after cluster up exited: %r" \
            % left
        assert "exited with status" not in c.stderr_text(), c.logs()
    finally:
        c.cleanup()


@pytest.fixture
def rc(cl):
    c = cl.rc()
    yield c
    c.close()


@pytest.fixture(scope="module", params=["embedded", "etcd"])
def bcl(request, cl):
    """The module's cluster on the embedded coordinator, or a cluster
    whose nodes use a real etcd (every coordinator test runs on both)."""
    if request.param == "embedded":
        yield cl
        return
    e = Etcd()
    c = None
    try:
        e.start()
        c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1,
                              secret="e-%032x" % random.getrandbits(128),
                              extra=["--coordinator",
                                     "etcd://" + e.endpoints])
        c.start()
        c.wait_serving()
        yield c
        assert c.stop() == 0, c.logs()
    finally:
        if c is not None:
            c.cleanup()
        e.stop()


@pytest.fixture
def coord(bcl):
    c = bcl.coord()
    yield c
    c.close()


# ---------------------------------------------------------------------------
# start-up summary
# ---------------------------------------------------------------------------

def test_ready_means_serving(cluster_factory):
    """Once `cluster up` prints "ready" every node should serve the map: a
    client started right then (redis-py RedisCluster raises on CLUSTERDOWN
    from CLUSTER SLOTS) must not see CLUSTERDOWN.  Checked on a fresh
    start and on a restart with the existing map."""
    c = cluster_factory(nodes=3, base_port=0, replicas=1)
    bad = []
    for phase in ("new", "existing"):
        if phase == "existing":
            assert c.stop() == 0, c.logs()
            c.start()
        assert c.summary["map"] == phase
        got = c.probe()
        waited = c.wait_serving()
        for i, rep in got.items():
            if isinstance(rep, RespError):
                bad.append("%s map: node %d answered %r to CLUSTER SLOTS "
                           "right after 'ready' (serving %.0f ms later)"
                           % (phase, i, rep.message, waited * 1000))
    assert not bad, "\n".join(bad)


def test_summary(cl):
    s = cl.summary
    assert s["nodes"] == 3 and s["slots"] == NSLOTS and s["replicas"] == 1
    assert s["map"] == "new"
    assert s["coord_port"] == cl.nodes[0].port
    assert len({n.port for n in cl.nodes}) == 3
    assert len({n.id for n in cl.nodes}) == 3
    for n in cl.nodes:
        assert n.host == "127.0.0.1"
        assert cl.node_alive(n.pid), n
        with open(os.path.join(cl.dir, "node-%d" % n.index, "node.id")) as f:
            assert f.read().strip() == n.id


# ---------------------------------------------------------------------------
# redis-cli
# ---------------------------------------------------------------------------

def test_redis_cli_c_follows_moved(cl):
    t = token()
    for owner in range(3):
        key = keys_on(owner, "cli%s" % t)[0]
        val = "v%d-%s" % (owner, t)
        # write through a node that does not own the key: must follow MOVED
        seed = cl.nodes[(owner + 1) % 3]
        p = redis_cli("-c", "-p", str(seed.port), "set", key, val)
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert p.stdout.strip() == "OK", (key, p.stdout, p.stderr)
        for n in cl.nodes:
            p = redis_cli("-c", "-p", str(n.port), "get", key)
            assert p.returncode == 0, (p.stdout, p.stderr)
            assert p.stdout.strip() == val, (key, n, p.stdout, p.stderr)
        # and the value really lives on the owner
        with cl.nodes[owner].raw() as c:
            assert c.call("GET", key) == val


def test_redis_cli_plain_gets_moved(cl):
    t = token()
    key = keys_on(2, "mv%s" % t)[0]
    slot = keyslot(key)
    want = "MOVED %d 127.0.0.1:%d" % (slot, cl.nodes[2].port)
    p = redis_cli("-p", str(cl.nodes[0].port), "get", key)
    assert p.stdout.strip() == want, (p.stdout, p.stderr)
    # exact bytes on the wire
    with cl.nodes[0].raw() as c:
        rep = c.call("SET", key, "x")
        assert isinstance(rep, RespError), rep
        assert c.last_raw == ("-%s\r\n" % want).encode()
    # a key of node 1 asked on node 2
    key1 = keys_on(1, "mv%s" % t)[0]
    with cl.nodes[2].raw() as c:
        assert c.call("GET", key1) == RespError(
            "MOVED %d 127.0.0.1:%d" % (keyslot(key1), cl.nodes[1].port))
    # the owner answers normally (nil)
    p = redis_cli("-p", str(cl.nodes[2].port), "get", key)
    assert p.returncode == 0 and p.stdout.strip() == "", (p.stdout, p.stderr)


# ---------------------------------------------------------------------------
# redis-py RedisCluster
# ---------------------------------------------------------------------------

def test_rediscluster_3000_keys(cl, rc):
    t = token()
    keys = ["k%s:%d" % (t, i) for i in range(3000)]
    for i, k in enumerate(keys):
        assert rc.set(k, "val-%d" % i) is True
    for i, k in enumerate(keys):
        assert rc.get(k) == "val-%d" % i, k
    # spread over all three nodes, each key only on its owner
    by_node = [[], [], []]
    for k in keys:
        by_node[expected_owner(keyslot(k))].append(k)
    assert all(len(b) > 700 for b in by_node), [len(b) for b in by_node]
    for i, n in enumerate(cl.nodes):
        with n.raw() as c:
            sample = by_node[i][:50]
            assert c.execute("MGET", *sample[:1]) == [
                "val-%d" % keys.index(sample[0])]
            for k in sample:
                assert c.call("GET", k) == "val-%d" % keys.index(k)
            other = by_node[(i + 1) % 3][0]
            rep = c.call("GET", other)
            assert isinstance(rep, RespError) and \
                rep.message.startswith("MOVED "), rep


def test_keyslot_vectors(cl, rc):
    for key, slot in KEYSLOT_VECTORS:
        assert keyslot(key) == slot, key   # the local model agrees
    for n in cl.nodes:
        with n.raw() as c:
            for key, slot in KEYSLOT_VECTORS:
                assert c.call("CLUSTER", "KEYSLOT", key) == slot, (n, key)
            assert c.last_raw == b":0\r\n"
    assert rc.keyslot("123456789") == 12739
    assert rc.cluster_keyslot("foo{bar}{zap}") == 5061


def test_rediscluster_pipeline_500(cl, rc):
    t = token()
    model = {}
    expect = []
    pipe = rc.pipeline()
    for i in range(500):
        op = i % 5
        if op in (0, 1):
            k = "p%s:s%d" % (t, i)
            pipe.set(k, "v%d" % i)
            model[k] = "v%d" % i
            expect.append(True)
        elif op in (2, 3):
            k = "p%s:c%d" % (t, i % 7)
            pipe.incr(k)
            model[k] = int(model.get(k, 0)) + 1
            expect.append(model[k])
        else:
            k = "p%s:s%d" % (t, i - 4)
            pipe.get(k)
            expect.append(model.get(k))
    got = pipe.execute()
    assert got == expect
    slots = {expected_owner(keyslot(k)) for k in model}
    assert slots == {0, 1, 2}
    for k, v in model.items():
        assert rc.get(k) == str(v), k


def test_mget_hash_tag(cl, rc):
    t = token()
    a, b, c_ = "{t%s}a" % t, "{t%s}b" % t, "{t%s}c" % t
    assert keyslot(a) == keyslot(b) == keyslot(c_)
    assert rc.mset({a: "1", b: "2"}) is True
    assert rc.mget(a, b, c_) == ["1", "2", None]
    owner = cl.nodes[expected_owner(keyslot(a))]
    with owner.raw() as r:
        assert r.execute("MGET", a, b, c_) == ["1", "2", None]
        assert r.execute("DEL", a, b, c_) == 2


def test_crossslot_raw(cl):
    t = token()
    # two keys on node 0 in different slots, and one on node 1
    k0 = keys_on(0, "xs%s" % t, 40)
    a = k0[0]
    b = next(k for k in k0 if keyslot(k) != keyslot(a))
    other = keys_on(1, "xs%s" % t)[0]
    with cl.nodes[0].raw() as c:
        for args in (("MGET", a, b), ("MGET", a, other),
                     ("MSET", a, "1", b, "2"), ("DEL", a, b),
                     ("EXISTS", a, b)):
            rep = c.call(*args)
            assert rep == RespError(CROSSSLOT), (args, rep)
            assert c.last_raw == ("-%s\r\n" % CROSSSLOT).encode()
        # nothing was written by the refused MSET
        assert c.call("EXISTS", a) == 0
        assert c.call("EXISTS", b) == 0
        # same slot is fine
        assert c.call("MGET", a, a) == [None, None]


def test_rediscluster_hash_and_zset(cl, rc):
    t = token()
    hashes = [keys_on(i, "h%s" % t)[0] for i in range(3)]
    zsets = [keys_on(i, "z%s" % t)[0] for i in range(3)]
    for i, h in enumerate(hashes):
        assert rc.hset(h, mapping={"a": "1", "b": "2", "n": str(i)}) == 3
        assert rc.hincrby(h, "a", 10) == 11
        assert rc.hget(h, "n") == str(i)
        assert rc.hgetall(h) == {"a": "11", "b": "2", "n": str(i)}
        assert rc.hdel(h, "b") == 1
        assert rc.hlen(h) == 2
        assert rc.hexists(h, "b") is False
        assert rc.hmget(h, "a", "b", "n") == ["11", None, str(i)]
        assert rc.type(h) == "hash"
    for i, z in enumerate(zsets):
        assert rc.zadd(z, {"x": 1, "y": 2.5, "z": -3}) == 3
        assert rc.zadd(z, {"x": 3}) == 0          # score update
        assert rc.zscore(z, "y") == 2.5
        assert rc.zrange(z, 0, -1, withscores=True) == [
            ("z", -3.0), ("y", 2.5), ("x", 3.0)]
        assert rc.zrangebyscore(z, 0, 10) == ["y", "x"]
        assert rc.zrevrange(z, 0, 0) == ["x"]
        assert rc.zrem(z, "z") == 1
        assert rc.zcard(z) == 2
        assert rc.type(z) == "zset"
        with cl.nodes[i].raw() as c:
            assert c.call("ZCARD", z) == 2
            assert c.call("HLEN", hashes[i]) == 2


def test_countkeysinslot_getkeysinslot(cl, rc):
    t = token()
    tag = "{ck%s}" % t
    keys = ["%s:%d" % (tag, i) for i in range(25)]
    slot = keyslot(keys[0])
    owner = cl.nodes[expected_owner(slot)]
    assert cl.node_for_slot(slot) is owner
    # Earlier tests of this module may have left keys in the same slot.
    with owner.raw() as c:
        before = c.call("CLUSTER", "COUNTKEYSINSLOT", slot)
        others = set(c.call("CLUSTER", "GETKEYSINSLOT", slot, 10000))
    for k in keys:
        rc.set(k, "1")
    with owner.raw() as c:
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", slot) == before + 25
        got = c.call("CLUSTER", "GETKEYSINSLOT", slot, 10000)
        assert isinstance(got, list), got
        assert sorted(got) == sorted(set(keys) | others), got
        some = c.call("CLUSTER", "GETKEYSINSLOT", slot, 5)
        assert len(some) == 5 and set(some) <= set(keys) | others, some
    rc.delete(keys[0])
    with owner.raw() as c:
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", slot) == before + 24


def test_slot_argument_errors(cl):
    """Error texts as redis 7.0.15 sends them (checked against a
    cluster-enabled redis-server 7.0.15)."""
    cases = [
        (("CLUSTER", "COUNTKEYSINSLOT", NSLOTS), "ERR Invalid slot"),
        (("CLUSTER", "COUNTKEYSINSLOT", -1), "ERR Invalid slot"),
        (("CLUSTER", "GETKEYSINSLOT", NSLOTS, 1),
         "ERR Invalid slot or number of keys"),
        (("CLUSTER", "GETKEYSINSLOT", 0, -1),
         "ERR Invalid slot or number of keys"),
    ]
    bad = []
    with cl.nodes[0].raw() as c:
        for args, want in cases:
            got = c.call(*args)
            if got != RespError(want):
                bad.append("%s: want -%s, got %r" % (" ".join(map(str, args)),
                                                     want, got))
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------
# redis-benchmark --cluster
# ---------------------------------------------------------------------------

def dbsizes(cl):
    out = []
    for n in cl.nodes:
        with n.raw() as c:
            out.append(c.execute("DBSIZE"))
    return out


def test_redis_benchmark_cluster(cl):
    before = dbsizes(cl)
    slot_counts_before = []
    for i, first in enumerate((0, 5461, 10923)):
        with cl.nodes[i].raw() as c:
            slot_counts_before.append(
                c.execute("CLUSTER", "COUNTKEYSINSLOT", first))
    p = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(cl.nodes[0].port),
         "--cluster", "-t", "set,get", "-n", "20000", "-c", "20",
         "-r", "1000", "--csv"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60)
    assert p.returncode == 0, (p.returncode, p.stdout[-2000:],
                               p.stderr[-2000:])
    text = p.stdout + p.stderr
    assert "Error" not in text and "error" not in text, text[-2000:]
    # the master list it parsed from CLUSTER NODES
    for n in cl.nodes:
        assert "127.0.0.1:%d" % n.port in text, text[:2000]
    rows = {}
    for row in csv.reader(io.StringIO(p.stdout)):
        if len(row) >= 2 and row[0] in ("SET", "GET"):
            rows[row[0]] = float(row[1])
    assert set(rows) == {"SET", "GET"}, p.stdout
    assert all(v > 0 for v in rows.values()), rows
    after = dbsizes(cl)
    assert sum(after) > sum(before), (before, after)
    # each client tags keys with its master's first slot
    for i, first in enumerate((0, 5461, 10923)):
        with cl.nodes[i].raw() as c:
            n = c.execute("CLUSTER", "COUNTKEYSINSLOT", first)
        assert n > slot_counts_before[i], (i, first, n)


# ---------------------------------------------------------------------------
# CLUSTER SLOTS / NODES / SHARDS / INFO / MYID
# ---------------------------------------------------------------------------

def test_info_coordinator_history(bcl):
    """INFO memory's coordinator_history_bytes: the embedded coordinator's
    node holds the recent events (the map's puts at least), in its heap
    (used_memory); the others, and every node on etcd, hold none."""
    for i, n in enumerate(bcl.nodes):
        with n.raw() as c:
            mem = dict(l.split(":", 1) for l in
                       c.execute("INFO", "memory").split("\r\n") if ":" in l)
        hist = int(mem["coordinator_history_bytes"])
        if i == 0 and "--coordinator" not in bcl.extra:
            assert 0 < hist < int(mem["used_memory"]), mem
        else:
            assert hist == 0, (i, mem)


def test_cluster_nodes_shape(cl):
    ids = {n.id: n for n in cl.nodes}
    for n in cl.nodes:
        with n.raw() as c:
            text = c.execute("CLUSTER", "NODES")
            myid = c.execute("CLUSTER", "MYID")
        assert myid == n.id
        lines = parse_nodes(text)
        assert len(lines) == 3, text
        mine = [l for l in lines if "myself" in l[2].split(",")]
        assert len(mine) == 1, text
        assert mine[0][0] == myid
        assert mine[0][1].split("@")[0] == n.addr
        covered = []
        for f in lines:
            assert len(f) >= 9, f
            assert f[0] in ids, f
            addr, _, bus = f[1].partition("@")
            assert addr == ids[f[0]].addr, f
            assert bus.isdigit(), f
            flags = f[2].split(",")
            assert "master" in flags and "slave" not in flags, f
            assert f[3] == "-", f
            assert f[4].isdigit() and f[5].isdigit() and f[6].isdigit(), f
            assert f[7] == "connected", f
            covered += slot_ranges(f[8:])
        covered.sort()
        assert covered == [(0, 5460), (5461, 10922), (10923, 16383)], covered


def test_cluster_slots_cover(cl):
    for n in cl.nodes:
        with n.raw() as c:
            slots = c.execute("CLUSTER", "SLOTS")
        seen = bytearray(NSLOTS)
        for entry in slots:
            start, end, master = entry[0], entry[1], entry[2]
            assert isinstance(start, int) and isinstance(end, int)
            assert 0 <= start <= end < NSLOTS
            assert len(master) >= 3, master
            ip, port, nid = master[0], master[1], master[2]
            assert ip == "127.0.0.1" and isinstance(port, int)
            owner = [x for x in cl.nodes if x.port == port]
            assert len(owner) == 1 and owner[0].id == nid, entry
            assert expected_owner(start) == owner[0].index
            assert expected_owner(end) == owner[0].index
            for s in range(start, end + 1):
                seen[s] += 1
        assert all(v == 1 for v in seen), \
            "slots covered != once: %r" % [i for i, v in enumerate(seen)
                                           if v != 1][:20]


def test_cluster_shards_shape(cl):
    with cl.nodes[1].raw() as c:
        shards = c.execute("CLUSTER", "SHARDS")
    assert len(shards) == 3
    got = []
    for sh in shards:
        d = dict(zip(sh[::2], sh[1::2]))
        assert set(d) >= {"slots", "nodes"}, sh
        sl = d["slots"]
        assert len(sl) % 2 == 0 and all(isinstance(x, int) for x in sl)
        assert len(d["nodes"]) >= 1
        nd = dict(zip(d["nodes"][0][::2], d["nodes"][0][1::2]))
        for f in ("id", "port", "ip", "endpoint", "role",
                  "replication-offset", "health"):
            assert f in nd, (f, nd)
        assert nd["role"] == "master" and nd["health"] == "online"
        node = [x for x in cl.nodes if x.id == nd["id"]][0]
        assert nd["port"] == node.port and nd["ip"] == "127.0.0.1"
        got += [(sl[i], sl[i + 1], node.index) for i in range(0, len(sl), 2)]
    assert sorted(got) == [(0, 5460, 0), (5461, 10922, 1),
                           (10923, 16383, 2)]


def test_cluster_info_and_info(cl):
    for n in cl.nodes:
        with n.raw() as c:
            ci = c.execute("CLUSTER", "INFO")
            info = c.execute("INFO")
            cl_sec = c.execute("INFO", "cluster")
            assert c.call("READONLY") == "OK"
            assert c.call("READWRITE") == "OK"
            assert c.call("ASKING") == "OK"
        assert ci.startswith("cluster_state:ok\r\n"), ci[:80]
        fields = dict(l.split(":", 1) for l in ci.split("\r\n") if l)
        assert fields["cluster_slots_assigned"] == str(NSLOTS)
        assert fields["cluster_slots_ok"] == str(NSLOTS)
        assert fields["cluster_known_nodes"] == "3"
        assert fields["cluster_size"] == "3"
        assert "# Cluster\r\ncluster_enabled:1\r\n" in info
        assert "cluster_enabled:1" in cl_sec


# ---------------------------------------------------------------------------
# coordinator: PK.AUTH / PK.COORD
# ---------------------------------------------------------------------------

def test_coord_needs_auth(bcl):
    cl = bcl
    with cl.nodes[0].raw() as c:
        rep = c.call("PK.COORD", "GET", MAP_KEY)
        assert isinstance(rep, RespError) and \
            rep.message.startswith("NOAUTH"), rep
        rep = c.call("PK.AUTH", "wrong-" + cl.secret)
        assert isinstance(rep, RespError), rep
        rep = c.call("PK.COORD", "RANGE", NODES_PREFIX)
        assert isinstance(rep, RespError) and \
            rep.message.startswith("NOAUTH"), rep
        assert c.call("PK.AUTH", cl.secret) == "OK"
        rev, kv = c.execute("PK.COORD", "GET", MAP_KEY)
        assert isinstance(rev, int) and kv is not None


def test_coord_put_get_del(coord):
    k = "/test/%s/pgd" % token()
    rev0, nil = coord.execute("PK.COORD", "GET", k)
    assert nil is None
    (r1,) = coord.execute("PK.COORD", "PUT", k, "v1", 0)
    assert r1 > rev0
    rev, kv = coord.execute("PK.COORD", "GET", k)
    d = kv_dict(kv)
    assert d == {"key": k, "value": "v1", "create_rev": r1, "mod_rev": r1,
                 "version": 1, "lease": 0}
    assert rev >= r1
    (r2,) = coord.execute("PK.COORD", "PUT", k, "v2", 0)
    d = kv_dict(coord.execute("PK.COORD", "GET", k)[1])
    assert (d["value"], d["create_rev"], d["mod_rev"], d["version"]) == (
        "v2", r1, r2, 2)
    (r3,) = coord.execute("PK.COORD", "DEL", k)
    assert r3 > r2
    assert coord.execute("PK.COORD", "GET", k)[1] is None
    ev = coord.execute("PK.COORD", "EVENTS", k, r1)
    assert [(e[0], e[1]) for e in ev] == [(0, r1), (0, r2), (1, r3)], ev


def test_coord_cas_conflict(coord):
    k = "/test/%s/cas" % token()
    # create-if-absent with expected revision 0
    (r1,) = coord.execute("PK.COORD", "CAS", k, 0, "a", 0)
    rep = coord.call("PK.COORD", "CAS", k, 0, "dup", 0)
    assert rep == RespError("ESTALE %d" % r1), rep
    # two writers that both read mod_rev r1: the first wins
    (r2,) = coord.execute("PK.COORD", "CAS", k, r1, "b", 0)
    assert r2 > r1
    rep = coord.call("PK.COORD", "CAS", k, r1, "c", 0)
    assert rep == RespError("ESTALE %d" % r2), rep
    d = kv_dict(coord.execute("PK.COORD", "GET", k)[1])
    assert d["value"] == "b" and d["mod_rev"] == r2 and d["version"] == 2


def test_coord_lease_expiry(coord):
    k = "/test/%s/lease" % token()
    rev, lease = coord.execute("PK.COORD", "GRANT", 1000)
    assert lease > 0
    (rput,) = coord.execute("PK.COORD", "PUT", k, "ephemeral", lease)
    t0 = time.monotonic()
    d = kv_dict(coord.execute("PK.COORD", "GET", k)[1])
    assert d["lease"] == lease and d["value"] == "ephemeral"

    def gone():
        return coord.execute("PK.COORD", "GET", k)[1] is None
    ok, _ = wait_until(gone, 5.0)
    waited = time.monotonic() - t0
    assert ok, "key with a 1000 ms lease still there after %.1fs" % waited
    assert 0.8 <= waited <= 3.0, "expired after %.2fs (ttl 1.0s)" % waited
    ev = coord.execute("PK.COORD", "EVENTS", k, rput)
    assert len(ev) == 2, ev
    assert ev[0][0] == 0 and ev[0][1] == rput
    assert ev[1][0] == 1 and ev[1][1] > rput and ev[1][2][0] == k, ev
    rep = coord.call("PK.COORD", "KEEPALIVE", lease)
    assert isinstance(rep, RespError) and \
        rep.message.startswith("NOTFOUND"), rep


def test_coord_lease_keepalive_and_revoke(coord):
    k = "/test/%s/ka" % token()
    _, lease = coord.execute("PK.COORD", "GRANT", 1000)
    coord.execute("PK.COORD", "PUT", k, "kept", lease)
    t_end = time.monotonic() + 2.2
    while time.monotonic() < t_end:
        assert coord.execute("PK.COORD", "KEEPALIVE", lease)[1] == lease
        time.sleep(0.3)
    assert coord.execute("PK.COORD", "GET", k)[1] is not None, \
        "kept-alive lease expired"
    (rrev,) = coord.execute("PK.COORD", "REVOKE", lease)
    assert coord.execute("PK.COORD", "GET", k)[1] is None
    ev = coord.execute("PK.COORD", "EVENTS", k, rrev)
    assert [(e[0], e[1]) for e in ev] == [(1, rrev)], ev


def test_coord_events_every_revision(coord):
    pfx = "/test/%s/ev/" % token()
    revs = []
    for i in range(20):
        (r,) = coord.execute("PK.COORD", "PUT", "%sk%02d" % (pfx, i % 7),
                             "v%d" % i, 0)
        revs.append(r)
    assert revs == sorted(revs) and len(set(revs)) == 20
    ev = coord.execute("PK.COORD", "EVENTS", pfx, revs[0])
    assert [e[1] for e in ev] == revs, ev
    assert all(e[0] == 0 for e in ev)
    for i, e in enumerate(ev):
        d = kv_dict(e[2])
        assert d["key"] == "%sk%02d" % (pfx, i % 7) and d["value"] == "v%d" % i
        assert d["mod_rev"] == revs[i]
        assert d["version"] == i // 7 + 1
    # from a revision in the middle: exactly the events at or after it
    ev = coord.execute("PK.COORD", "EVENTS", pfx, revs[10])
    assert [e[1] for e in ev] == revs[10:]
    # over the whole key space every revision appears, consecutively
    ev = coord.execute("PK.COORD", "EVENTS", "/", revs[0])
    seen = [e[1] for e in ev]
    assert seen == sorted(seen)
    assert sorted(set(seen)) == list(range(revs[0], seen[-1] + 1)), seen
    assert set(revs) <= set(seen)
    # nothing from the future
    cur = coord.execute("PK.COORD", "GET", pfx + "none")[0]
    assert coord.execute("PK.COORD", "EVENTS", pfx, cur + 1) == []
    # from_rev 0 means "from the next revision" (pk_coord.h): no history
    assert coord.execute("PK.COORD", "EVENTS", pfx, 0) == []


def test_coord_node_registrations(bcl, coord):
    cl = bcl
    rev, kvs = coord.execute("PK.COORD", "RANGE", NODES_PREFIX)
    regs = {kv_dict(kv)["key"]: kv_dict(kv) for kv in kvs}
    want = {NODES_PREFIX + n.id: n.addr for n in cl.nodes}
    assert {k: d["value"] for k, d in regs.items()} == want
    leases = [d["lease"] for d in regs.values()]
    assert all(l > 0 for l in leases) and len(set(leases)) == 3, regs
    _, kv = coord.execute("PK.COORD", "GET", MAP_KEY)
    d = kv_dict(kv)
    assert d["lease"] == 0 and len(d["value"]) > 0


# ---------------------------------------------------------------------------
# restart on the same dir: coordinator state, map and data survive
# ---------------------------------------------------------------------------

def test_restart_keeps_state(cluster_factory):
    base = pkcluster.free_port_block(3)
    c = cluster_factory(nodes=3, base_port=base, replicas=1,
                        secret="r-%016x" % random.getrandbits(64))
    assert c.summary["map"] == "new"
    assert [n.port for n in c.nodes] == [base, base + 1, base + 2]
    c.wait_serving()
    ids = [n.id for n in c.nodes]
    t = token()
    k = "/test/%s/persist" % t
    with c.coord() as co:
        (rput,) = co.execute("PK.COORD", "PUT", k, "durable", 0)
        before = kv_dict(co.execute("PK.COORD", "GET", k)[1])
        map_before = kv_dict(co.execute("PK.COORD", "GET", MAP_KEY)[1])
    rc = c.rc()
    data = {"d%s:%d" % (t, i): "x%d" % i for i in range(300)}
    for kk, v in data.items():
        rc.set(kk, v)
    rc.hset("h%s" % t, mapping={"f": "1"})
    rc.close()

    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()
    assert os.path.exists(os.path.join(c.dir, "node-0", "coord.state"))

    c.start()
    assert c.summary["map"] == "existing", c.summary["line"]
    c.wait_serving()
    assert [n.id for n in c.nodes] == ids
    assert [n.port for n in c.nodes] == [base, base + 1, base + 2]
    with c.coord() as co:
        after = kv_dict(co.execute("PK.COORD", "GET", k)[1])
        assert after == before, (before, after)
        assert after["mod_rev"] == rput
        # The same map; only its epoch may have moved (a new controller
        # bumps it once; nodes seen down while the cluster stopped are up
        # again).
        def raw(v):  # the client decodes bulks that are valid UTF-8
            return v.encode("utf-8", "surrogateescape") \
                if isinstance(v, str) else v

        def same_map():
            v = kv_dict(co.execute("PK.COORD", "GET", MAP_KEY)[1])["value"]
            return pmap_with_epoch(raw(v), 0) == pmap_with_epoch(
                raw(map_before["value"]), 0)
        assert wait_until(same_map, 5.0)[0]

        def registered():
            kvs = co.execute("PK.COORD", "RANGE", NODES_PREFIX)[1]
            return sorted((kv[0], kv[1]) for kv in kvs) == sorted(
                (NODES_PREFIX + n.id, n.addr) for n in c.nodes)
        ok, _ = wait_until(registered, 6.0)
        assert ok, co.execute("PK.COORD", "RANGE", NODES_PREFIX)
    rc = c.rc()
    try:
        for kk, v in data.items():
            assert rc.get(kk) == v, kk
        assert rc.hgetall("h%s" % t) == {"f": "1"}
    finally:
        rc.close()
    assert c.stop() == 0, c.logs()


# ---------------------------------------------------------------------------
# a node killed with SIGKILL: its lease runs out, the others keep serving
# ---------------------------------------------------------------------------

def test_killed_node_lease_expires(cluster_factory):
    c = cluster_factory(nodes=3, base_port=0, replicas=1,
                        secret="k-%016x" % random.getrandbits(64))
    c.wait_serving()
    victim = c.nodes[2]
    t = token()
    live_keys = {i: keys_on(i, "kn%s" % t, 5) for i in (0, 1)}
    with c.coord() as co:
        regs = {kv[0]: kv_dict(kv)
                for kv in co.execute("PK.COORD", "RANGE", NODES_PREFIX)[1]}
        assert NODES_PREFIX + victim.id in regs
        # SIGSTOP: a silent node whose lease runs out (a SIGKILLed one
        # would be restarted by `cluster up` at once).
        c.kill_node(2, signal.SIGSTOP)
        t0 = time.monotonic()
        _, kv = co.execute("PK.COORD", "GET", NODES_PREFIX + victim.id)
        assert kv is not None, "registration gone at once (lease ttl 3 s)"

        def gone():
            return co.execute("PK.COORD", "GET",
                              NODES_PREFIX + victim.id)[1] is None
        ok, _ = wait_until(gone, 8.0, 0.1)
        waited = time.monotonic() - t0
        assert ok, "registration of the killed node still there after " \
            "%.1fs" % waited
        assert waited <= 4.5, "lease took %.2fs to expire" % waited
        kvs = co.execute("PK.COORD", "RANGE", NODES_PREFIX)[1]
        assert sorted(kv[0] for kv in kvs) == sorted(
            NODES_PREFIX + n.id for n in c.nodes[:2]), kvs
        for kv in kvs:
            d = kv_dict(kv)
            assert d["lease"] == regs[d["key"]]["lease"], (d, regs)
        ev = co.execute("PK.COORD", "EVENTS", NODES_PREFIX + victim.id,
                        regs[NODES_PREFIX + victim.id]["mod_rev"] + 1)
        assert [e[0] for e in ev] == [1], ev
    # the survivors serve their slots
    for i, keys in live_keys.items():
        with c.nodes[i].raw() as r:
            for k in keys:
                assert r.call("SET", k, "alive") == "OK", (i, k)
                assert r.call("GET", k) == "alive"
            assert r.call("CLUSTER", "MYID") == c.nodes[i].id
    rc = c.rc()
    try:
        for keys in live_keys.values():
            for k in keys:
                assert rc.get(k) == "alive"
    finally:
        rc.close()
    # Dead for good now: `cluster up` reports it and starts it again.
    c.kill_node(2, signal.SIGKILL)
    line = "node 2 (port %d, pid %d) died (killed by signal 9); " \
        "restarted as pid" % (victim.port, victim.pid)
    _, _ = wait_until(lambda: line in c.stderr_text(), 10.0)
    assert line in c.stderr_text(), c.logs()
    assert not c.node_alive(victim.pid)
    assert c.alive()
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()
