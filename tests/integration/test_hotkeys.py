"""PK.HOTKEYS: a node's hottest keys by sampled requests -- on a skewed
load the hot keys come first with their read and write rates, the error
bound covers the estimate, SLOT filters by partition, bad arguments and
tracking switched off give errors.  Rates are checked loosely (the test
machine is shared), the ranking strictly."""
import random
import time

import pytest
import redis

import cluster as pkcluster

pytestmark = pytest.mark.partkv_only


def entries(rep):
    """PK.HOTKEYS (RESP2) as a list of dicts."""
    out = []
    for e in rep:
        d = {e[i]: e[i + 1] for i in range(0, len(e), 2)}
        for k in ("reads_per_sec", "writes_per_sec", "error_per_sec"):
            d[k] = float(d[k])
        out.append(d)
    return out


class SkewedLoad:
    """From a thread: about a third of the requests GET one key, a sixth
    INCR another, the rest GET 10,000 others; n counts them."""

    def __init__(self, port, hot_reads=b"celebrity", hot_writes=b"counter"):
        import threading
        self.r = redis.Redis(port=port)
        self.keys = (hot_reads, hot_writes)
        self.n, self.stop = 0, threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        rnd = random.Random(5)
        while not self.stop.is_set():
            pipe = self.r.pipeline(transaction=False)
            for _ in range(300):
                x = rnd.random()
                if x < 1 / 3:
                    pipe.get(self.keys[0])
                elif x < 0.5:
                    pipe.incr(self.keys[1])
                else:
                    pipe.get(b"k%05d" % rnd.randrange(10000))
            pipe.execute()
            self.n += 300

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join(10)
        return False


def test_hot_keys_ranked(server_factory):
    srv = server_factory(extra=["--hotkeys-sample", "0.1"])
    r = srv.client()
    r.set("celebrity", "x")
    with SkewedLoad(srv.port) as load:
        time.sleep(3)
        n0, t0 = load.n, time.monotonic()
        time.sleep(2)
        got = entries(r.execute_command("PK.HOTKEYS", "COUNT", "5"))
        rate = (load.n - n0) / (time.monotonic() - t0)
    assert [e["key"] for e in got[:2]] == ["celebrity", "counter"], got
    reads, writes = got[0], got[1]
    # The one SET of "celebrity" may have been sampled: it decays from 10
    # (1/0.1) by half a second, and is under 1 by now.
    assert reads["writes_per_sec"] < 1 and writes["reads_per_sec"] == 0
    # Rates: a third and a sixth of the request rate, within 30 % (the
    # load's own rate varies on a shared machine; the tracker's accuracy
    # is test_topk's).
    assert abs(reads["reads_per_sec"] - rate / 3) < 0.3 * rate / 3, \
        (rate, got)
    assert abs(writes["writes_per_sec"] - rate / 6) < 0.3 * rate / 6, \
        (rate, got)
    assert all(e["error_per_sec"] >= 0 and e["partition"] == 0 for e in got)
    assert len(got) == 5
    assert len(entries(r.execute_command("PK.HOTKEYS"))) == 10
    for bad in (["COUNT", "0"], ["COUNT", "129"], ["COUNT"], ["SLOT", "-1"],
                ["NOPE", "1"]):
        with pytest.raises(redis.ResponseError, match="syntax"):
            r.execute_command("PK.HOTKEYS", *bad)


def test_tracking_off(server_factory):
    srv = server_factory(extra=["--hotkeys-sample", "0"])
    with pytest.raises(redis.ResponseError, match="off"):
        srv.client().execute_command("PK.HOTKEYS")


def test_bad_sample_flag(partkv):
    p = partkv("server", "--hotkeys-sample", "2", check=False, timeout=10)
    assert p.returncode == 2 and "--hotkeys-sample" in p.stderr


@pytest.fixture(scope="module")
def hot3():
    """Three nodes tracking every command; a load of INCR counter and
    GETs of 50 other keys has run (and a tick has passed)."""
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1,
                          extra=["--hotkeys-sample", "1"])
    gen = pkcluster.serving(c)
    c = next(gen)
    cl = redis.RedisCluster(host=c.nodes[0].host, port=c.nodes[0].port)
    for _ in range(3):
        for i in range(300):
            cl.incr("counter")
            cl.get("k%d" % (i % 50))
        time.sleep(0.3)
    time.sleep(1.1)
    yield c
    for _ in gen:
        pass


def test_slot_filter_on_a_cluster(hot3):
    """On a cluster each node tracks the keys it leads (forwarded commands
    count where they run); SLOT keeps one partition's."""
    c = hot3
    slot = pkcluster.keyslot("counter")
    found = []
    for nd in c.nodes:
        r = redis.Redis(host=nd.host, port=nd.port, decode_responses=True)
        got = entries(r.execute_command("PK.HOTKEYS", "SLOT", slot))
        found += [(nd.addr, e) for e in got]
        assert all(e["partition"] == slot for e in got)
    assert len(found) == 1 and found[0][1]["key"] == "counter", found
    assert found[0][1]["node"] == found[0][0]
    assert found[0][1]["writes_per_sec"] > 0


def slot_stats(r, *args):
    """CLUSTER SLOT-STATS (RESP2) as [(slot, {metric: value})]."""
    rep = r.execute_command("CLUSTER", "SLOT-STATS", *args)
    return [(s, {m[i]: m[i + 1] for i in range(0, len(m), 2)})
            for s, m in rep]


def test_slot_stats_and_partitions():
    """CLUSTER SLOT-STATS in Redis 8.2's shape: the slots a node leads,
    key counts, CPU time and the exact RESP bytes of requests and
    replies; ORDERBY sorts; PK.PARTITIONS carries the same figures."""
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1)
    gen = pkcluster.serving(c)
    next(gen)
    try:
        cl = redis.RedisCluster(host=c.nodes[0].host, port=c.nodes[0].port)
        slot = pkcluster.keyslot("{t}a")
        for i in range(20):
            cl.set("{t}%02d" % i, "v")  # 28 + 2 bytes in, 5 out each
        owner = next(nd for nd in c.nodes
                     if redis.Redis(host=nd.host, port=nd.port).execute_command(
                         "CLUSTER", "COUNTKEYSINSLOT", slot) == 20)
        r = redis.Redis(host=owner.host, port=owner.port,
                        decode_responses=True)
        got = dict(slot_stats(r, "SLOTSRANGE", slot, slot))
        assert got[slot]["key-count"] == 20
        assert got[slot]["cpu-usec"] >= 0
        # *3 set {t}NN v in RESP: 4 + 9 + 11 + 7 = 31 bytes; +OK: 5
        assert got[slot]["network-bytes-in"] == 20 * 31, got
        assert got[slot]["network-bytes-out"] == 20 * 5, got
        top = slot_stats(r, "ORDERBY", "key-count", "LIMIT", "1")
        assert top == [(slot, got[slot])]
        asc = slot_stats(r, "ORDERBY", "key-count", "LIMIT", "3", "ASC")
        assert [s for s, _ in asc] == sorted(s for s, _ in asc)
        assert all(m["key-count"] == 0 for _, m in asc)
        whole = slot_stats(r, "SLOTSRANGE", 0, 16383)
        assert 5000 < len(whole) < 6000  # a third of the slots
        parts = {e[1]: dict(zip(e[::2], e[1::2]))
                 for e in r.execute_command("PK.PARTITIONS")}
        assert parts[slot]["network_bytes_in"] == 20 * 31
        for bad, msg in ((["SLOTSRANGE", 5, 2], "greater"),
                         (["SLOTSRANGE", 0, 16384], "out of range"),
                         (["ORDERBY", "bogus"], "Unrecognized"),
                         (["ORDERBY", "cpu-usec", "LIMIT", 0], "Limit"),
                         (["NOPE"], "syntax")):
            with pytest.raises(redis.ResponseError, match=msg):
                r.execute_command("CLUSTER", "SLOT-STATS", *bad)
    finally:
        for _ in gen:
            pass


def test_partkv_top(partkv, hot3):
    """partkv top --once (plain lines off a terminal) and --json: every
    node, the loaded partitions, the hot key of the load first."""
    import json
    c = hot3
    p = partkv("top", "--cluster", c.nodes[0].addr, "--json")
    view = json.loads(p.stdout)
    assert sorted(n["addr"] for n in view["nodes"]) == \
        sorted(n.addr for n in c.nodes)
    assert all(n["answered"] and n["state"] == "up" for n in view["nodes"])
    assert sum(n["leads"] for n in view["nodes"]) == 16384
    assert view["hot_keys"][0]["key"] == "counter", view["hot_keys"]
    slot = pkcluster.keyslot("counter")
    assert any(x["partition"] == slot and x["keys"] == 1
               for x in view["loaded_partitions"])
    p = partkv("top", "--cluster", c.nodes[0].addr, "--once")
    assert "\033" not in p.stdout  # not a terminal: plain lines
    assert "hot keys" in p.stdout and "counter" in p.stdout
    for n in c.nodes:
        assert n.addr in p.stdout
    p = partkv("top", "--once", check=False)
    assert p.returncode == 2 and "--cluster" in p.stderr
    p = partkv("top", "--cluster", c.nodes[0].addr, "--interval", "0",
               check=False)
    assert p.returncode == 2
