"""The range scheme: partitions are contiguous ranges of the key order,
nodes forward, PK.RANGE reads across ranges in key order from any node with
a continuation cursor, and the proxy routes by range.  Checked against a
model: a sorted list of the keys written."""
import bisect
import json
import os
import random
import signal
import subprocess
import time

import pytest
import redis

import cluster as pkcluster
import server as pkserver

pytestmark = pytest.mark.partkv_only

SPLITS = ["d", "h", "m", "q", "u"]  # six ranges


@pytest.fixture(scope="module")
def rc3():
    assert os.access(pkserver.partkv_path(), os.X_OK), "build partkv first"
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, base_port=0, replicas=3,
        extra=["--scheme", "range", "--presplit-keys", ",".join(SPLITS)]))


@pytest.fixture(scope="module")
def model(rc3):
    """Keys written once for the module, spread over every range, with
    NULs, prefixes of each other and the split points themselves."""
    rnd = random.Random(15)
    keys = set(SPLITS) | {"", "a", "a\0", "a\0b", "m\0", "zz\xff"}
    alpha = "abcdefghijklmnopqrstuvwxyz0\0"
    while len(keys) < 1500:
        keys.add("".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 6))))
    keys.discard("")
    r = client(rc3.nodes[0], decode=False)
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.set(k.encode("latin-1"), b"v:" + k.encode("latin-1"))
    assert all(pipe.execute())
    return sorted(k.encode("latin-1") for k in keys)


def client(node, decode=True):
    return redis.Redis(host=node.host, port=node.port, socket_timeout=10,
                       decode_responses=decode)


def tryagain(fn, *args):
    """fn(*args), again after a TRYAGAIN (a leader change: Redis clients
    retry it), at most 100 times."""
    for attempt in range(100):
        try:
            return fn(*args)
        except redis.ResponseError as e:
            if "TRYAGAIN" not in str(e) or attempt == 99:
                raise
            time.sleep(0.05)


def read_all(r, lo, hi, limit=None, rev=False, withvalues=False):
    """Every key of PK.RANGE lo hi, following the continuation; also the
    number of calls it took."""
    out, calls, start = [], 0, lo
    while True:
        args = ["PK.RANGE", start, hi]
        if limit:
            args += ["LIMIT", limit]
        if withvalues:
            args.append("WITHVALUES")
        if rev:
            args.append("REV")
        cont, items = tryagain(r.execute_command, *args)
        calls += 1
        out += items
        if cont == b"":
            return out, calls
        assert calls < 10000
        start = cont


def model_range(keys, lo, hi):
    """The keys of the model between two ZRANGEBYLEX bounds."""
    def bound(b, low):
        if b == b"-":
            return 0
        if b == b"+":
            return len(keys)
        k = b[1:]
        if b[:1] == b"[":
            return bisect.bisect_left(keys, k) if low else \
                bisect.bisect_right(keys, k)
        return bisect.bisect_right(keys, k) if low else \
            bisect.bisect_left(keys, k)
    i, j = bound(lo, True), bound(hi, False)
    return keys[i:j] if i < j else []


def test_summary_and_info(rc3):
    assert rc3.summary["mode"] == "forward"
    assert rc3.summary["slots"] == len(SPLITS) + 1
    assert "range partitions" in rc3.summary["line"]
    info = client(rc3.nodes[1]).info("partitions")
    assert info["scheme"] == "range" and info["partitions"] == 6


def test_cluster_slots_explains(rc3):
    with pytest.raises(redis.ResponseError) as e:
        client(rc3.nodes[2]).execute_command("CLUSTER", "SLOTS")
    assert "key range" in str(e.value)


def test_one_keyspace_from_every_node(rc3, model):
    for i, k in enumerate(model[::7]):
        assert client(rc3.nodes[i % 3], decode=False).get(k) == b"v:" + k
    # Each range's keys sit in its own partition: PK.PARTITIONS per range
    # on the leaders adds up to the model.
    assert sum(client(n).dbsize() for n in rc3.nodes) == len(model)


def test_full_range_in_order_from_every_node(rc3, model):
    for n in rc3.nodes:
        r = client(n, decode=False)
        got, calls = read_all(r, b"-", b"+")
        assert got == model
        assert calls >= 2  # the leaders of six ranges are three nodes
        got, _ = read_all(r, b"+", b"-", rev=True)
        assert got == model[::-1]


def test_pages_and_values(rc3, model):
    r = client(rc3.nodes[0], decode=False)
    got, calls = read_all(r, b"-", b"+", limit=37)
    assert got == model and calls >= len(model) // 37
    got, _ = read_all(r, b"-", b"+", limit=1000, withvalues=True)
    assert got[0::2] == model
    assert got[1::2] == [b"v:" + k for k in model]


def test_bounds_against_the_model(rc3, model):
    rnd = random.Random(7)
    edges = [b"-", b"+"] + [p + s.encode() for s in SPLITS for p in
                            (b"[", b"(")]
    for _ in range(120):
        def pick():
            if rnd.random() < 0.4:
                return rnd.choice(edges)
            return rnd.choice([b"[", b"("]) + \
                rnd.choice(model)[:rnd.randint(1, 3)]
        lo, hi = pick(), pick()
        r = client(rc3.nodes[rnd.randrange(3)], decode=False)
        want = model_range(model, lo, hi)
        got, _ = read_all(r, lo, hi, limit=rnd.choice([None, 5, 64]))
        assert got == want, (lo, hi)
        got, _ = read_all(r, hi, lo, limit=rnd.choice([None, 3]), rev=True)
        assert got == want[::-1], (hi, lo)


def test_errors(rc3):
    r = client(rc3.nodes[1])
    with pytest.raises(redis.ResponseError, match="not valid string range"):
        r.execute_command("PK.RANGE", "a", "+")
    with pytest.raises(redis.ResponseError, match="LIMIT"):
        r.execute_command("PK.RANGE", "-", "+", "LIMIT", "0")
    assert r.ping()


def test_proxy_routes_by_range(rc3, model):
    n = rc3.nodes[0]
    px = pkcluster.Proxy("%s:%d" % (n.host, n.port))
    try:
        px.start()
        r = redis.Redis(host=px.host, port=px.port, socket_timeout=10)
        rep, waited = pkcluster.wait_until(
            lambda: r.execute_command("PK.MAP"), 10)
        assert rep, "the proxy has no map after %.1fs" % waited
        # A leadership handoff that outlasts a held command's 3 s answers
        # TRYAGAIN (seen under a loaded make test); clients retry it.
        for k in model[::50]:
            assert tryagain(r.get, k) == b"v:" + k
        assert tryagain(r.set, b"proxy-key", b"1")
        assert tryagain(r.get, b"proxy-key") == b"1"
        got, _ = read_all(r, b"[p", b"(r")
        assert got == model_range(sorted(model + [b"proxy-key"]), b"[p",
                                  b"(r")
        assert tryagain(r.delete, b"proxy-key") == 1
    finally:
        px.stop()


@pytest.mark.parametrize("args,msg", [
    (["--scheme", "range", "--presplit-keys", "b,a,b"], "presplit-keys"),
    (["--scheme", "range", "--presplit-keys", "a,,b"], "presplit-keys"),
    (["--scheme", "slots", "--presplit", "4"], "goes with --scheme range"),
    (["--scheme", "range", "--partitions", "4"], "not --partitions"),
    (["--scheme", "range", "--presplit-sample", "/nonexistent"],
     "needs --presplit N"),
    (["--scheme", "range", "--presplit", "4", "--presplit-sample",
      "/nonexistent"], "presplit-sample"),
])
def test_bad_presplit_flags(args, msg, tmp_path):
    p = subprocess.run([pkserver.partkv_path(), "cluster", "up", "--nodes",
                        "1", "--base-port", "0", "--dir", str(tmp_path)]
                       + args, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert msg in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_presplit_even_and_sample(tmp_path):
    """N even ranges over printable ASCII, and N ranges from a sample."""
    sample = tmp_path / "sample"
    sample.write_text("".join("user:%04d\n" % i for i in range(1000)))
    for extra, parts in ((["--presplit", "8"], 8),
                         (["--presplit", "4", "--presplit-sample",
                           str(sample)], 4)):
        c = pkcluster.Cluster(nodes=1, base_port=0, replicas=1,
                              extra=["--scheme", "range"] + extra)
        try:
            c.start()
            c.wait_serving()
            assert c.summary["slots"] == parts
            r = client(c.nodes[0])
            for i in range(0, 1000, 3):
                r.set("user:%04d" % i, i)
            assert r.dbsize() == 334
            got, _ = read_all(client(c.nodes[0], decode=False), b"[user:0100",
                              b"(user:0200")
            assert got == [b"user:%04d" % i for i in range(102, 200, 3)]
            assert c.stop() == 0
        finally:
            c.cleanup()


def range_list(node, *extra):
    return subprocess.run([pkserver.partkv_path(), "range", "list",
                           "--cluster", "%s:%d" % (node.host, node.port)]
                          + list(extra), capture_output=True, text=True,
                          timeout=30)


def test_range_list(rc3, model):
    p = range_list(rc3.nodes[1], "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["lo"] for r in rows] == [None] + SPLITS
    assert [r["hi"] for r in rows] == SPLITS + [None]
    addrs = {"%s:%d" % (n.host, n.port) for n in rc3.nodes}
    assert all(r["leader"] in addrs for r in rows)
    assert sum(r["keys"] for r in rows) == len(model)
    for r in rows:  # each range's count is the model's keys in it
        lo = b"-" if r["lo"] is None else b"[" + r["lo"].encode()
        hi = b"+" if r["hi"] is None else b"(" + r["hi"].encode()
        assert r["keys"] == len(model_range(model, lo, hi)), r
    p = range_list(rc3.nodes[0])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["range", "from", "to", "leader"]
    assert [l.split()[1] for l in lines[1:]] == ["-inf"] + SPLITS
    assert lines[-1].split()[2] == "+inf"


def test_range_list_errors(rc3, tmp_path):
    p = subprocess.run([pkserver.partkv_path(), "range", "list"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--cluster" in p.stderr
    p = subprocess.run([pkserver.partkv_path(), "range", "split", "x"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--cluster" in p.stderr
    p = subprocess.run([pkserver.partkv_path(), "range", "merge", "x"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--cluster" in p.stderr
    p = subprocess.run([pkserver.partkv_path(), "range", "join", "x"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "usage" in p.stderr


@pytest.fixture(scope="module")
def rc4():
    """Four nodes, R = 2, six ranges: room for a drain and a failover."""
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=4, base_port=0, replicas=2,
        secret="rs-%032x" % random.getrandbits(128),
        extra=["--scheme", "range", "--presplit-keys", ",".join(SPLITS)]))


def full_read(node):
    """All keys by PK.RANGE from node, or None while it cannot answer."""
    try:
        got, _ = read_all(client(node, decode=False), b"-", b"+", limit=200)
        return got
    except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError):
        return None


def leaders(node):
    p = range_list(node, "--json")
    assert p.returncode == 0, p.stderr
    return [r["leader"] for r in json.loads(p.stdout)]


def test_drain_moves_ranges(rc4):
    keys = sorted(b"k%05d" % i for i in range(3000)) + \
        sorted(s.encode() + b"%03d" % i for s in SPLITS for i in range(50))
    keys.sort()
    r = client(rc4.nodes[0], decode=False)
    for b in range(0, len(keys), 500):
        pipe = r.pipeline(transaction=False)
        for k in keys[b:b + 500]:
            pipe.set(k, k)
        pipe.execute()
    n3 = rc4.nodes[3]
    cli = lambda *a: pkcluster.partkv_cli(*a, "--cluster", rc4.nodes[0].addr,
                                          "--secret", rc4.secret, timeout=60)
    p = cli("node", "drain", n3.addr)
    assert p.returncode == 0, p.stderr
    p = cli("rebalance", "plan", "--json")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["moves"], "node 3 held nothing to move"
    p = cli("rebalance", "apply", plan["id"], "--yes", "--rate", "unlimited")
    assert p.returncode == 0, p.stdout + p.stderr
    ok, _ = pkcluster.wait_until(
        lambda: n3.addr not in leaders(rc4.nodes[0]), 15, interval=0.2)
    assert ok, leaders(rc4.nodes[0])
    assert full_read(rc4.nodes[1]) == keys
    assert full_read(rc4.nodes[0]) == keys


def test_failover_keeps_every_range(rc4):
    """kill -9 of a leader: its ranges get new leaders (or it comes back),
    and a full read is whole again."""
    want = full_read(rc4.nodes[0])
    assert want
    victim = next(n for n in rc4.nodes[:3]
                  if n.addr in leaders(rc4.nodes[0]))
    rc4.kill_node(victim.index)
    other = next(n for n in rc4.nodes[:3] if n is not victim)
    ok, waited = pkcluster.wait_until(lambda: full_read(other) == want, 30,
                                      interval=0.2)
    assert ok, "no whole read %.1fs after kill -9" % waited


def test_load_splits():
    """Over --split-qps a range's requests are sampled: uniform keys split
    the range where the load divides (by itself, more than once), a
    monotonic key says "increasing" and one hot key says "hot key" and
    names it -- and neither of those two ranges is split.  (Replica reads
    are off: they would take the hot key's reads off its leader, whose
    requests are the ones sampled.)"""
    import threading
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=3,
                          extra=["--scheme", "range", "--presplit-keys",
                                 "d,m", "--split-qps", "150",
                                 "--hot-key-reads", "0"])
    gen = pkcluster.serving(c)
    next(gen)
    stop = threading.Event()

    def load():
        r = client(c.nodes[0])
        rnd, i = random.Random(3), 0
        while not stop.is_set():
            pipe = r.pipeline(transaction=False)
            for _ in range(40):
                i += 1
                pipe.set("z-ts:%012d" % i, 1)
                pipe.get("e%06d" % rnd.randrange(10 ** 6))
                pipe.get("a-hot")
            try:
                pipe.execute()
            except redis.ResponseError as e:
                # A new range's leadership may move (the controller
                # spreads leaders): Redis clients retry on TRYAGAIN.
                assert "TRYAGAIN" in str(e), e
    try:
        r = client(c.nodes[0])
        r.set("a-hot", 1)
        for i in range(0, 10 ** 6, 5000):
            r.set("e%06d" % i, 1)
        th = threading.Thread(target=load, daemon=True)
        th.start()

        def settled():
            p = range_list(c.nodes[1], "--json")
            assert p.returncode == 0, p.stderr
            rows = json.loads(p.stdout)
            inner = [x["lo"] for x in rows if x["lo"] and "d" < x["lo"] < "m"]
            ok = (len(inner) >= 2 and rows[0]["load_split"] == "hot key" and
                  rows[-1]["load_split"] == "increasing")
            return rows if ok else None
        rows, waited = pkcluster.wait_until(settled, 45, interval=0.5)
        assert rows, range_list(c.nodes[1]).stdout
        assert rows[0]["split_key"] == "a-hot"
        assert rows[-1]["split_key"] is None
        # Splits only where the load divides: none below d or from m on.
        los = [x["lo"] for x in rows]
        assert los[0] is None and "d" in los and "m" in los
        assert all(x is None or "d" <= x <= "m" for x in los), los
        stop.set()
        th.join(10)
    finally:
        stop.set()
        for _ in gen:
            pass


@pytest.fixture(scope="module")
def rsplit():
    """Three nodes, R = 3, two ranges (split at "m"), a known secret."""
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, base_port=0, replicas=3,
        secret="sp-%032x" % random.getrandbits(128),
        extra=["--scheme", "range", "--presplit-keys", "m"]))


class Writer:
    """SETs of new keys (KEY = LETTER-wNNNNN, the letters taken in turn)
    on node from a thread while the with-block runs; the block gets the
    list of acknowledged keys."""

    def __init__(self, node, letters):
        import threading
        self.node, self.letters = node, letters
        self.acked, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        w = client(self.node, decode=False)
        n, i = len(self.letters), 0
        while not self.stop.is_set():
            k = b"%s-w%05d" % (self.letters[i % n:i % n + 1], i)
            try:
                if w.set(k, k):
                    self.acked.append(k)
            except redis.RedisError:
                pass  # not acknowledged: may or may not be there
            i += 1

    def __enter__(self):
        self.th.start()
        return self.acked

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join(10)
        return False


def split_cli(c, key):
    return pkcluster.partkv_cli("range", "split", key, "--cluster",
                                c.nodes[0].addr, "--secret", c.secret,
                                timeout=60)


def test_split_under_writes(rsplit):
    """Manual splits while a writer runs: no acknowledged write is lost,
    every key is read once, in order, each range's count matches, and a
    follower that takes over a new range has relabelled its copy too."""
    import threading
    c = rsplit
    r = client(c.nodes[0], decode=False)
    base = sorted(b"%s%04d" % (ch, i) for ch in (b"c", b"h", b"k", b"p", b"t")
                  for i in range(400))
    pipe = r.pipeline(transaction=False)
    for k in base:
        pipe.set(k, k)
    pipe.hset(b"h-hash", b"f", b"v")  # hashes and TTLs move too
    base = sorted(base + [b"h-hash"])
    pipe.expire(b"t0001", 3600)
    pipe.execute()
    with Writer(c.nodes[1], b"chkpt") as acked:
        for key in ("h", "p", "k0200"):
            p = split_cli(c, key)
            assert p.returncode == 0, p.stdout + p.stderr
    assert len(acked) > 100
    rows = json.loads(range_list(c.nodes[2], "--json").stdout)
    assert [x["lo"] for x in rows] == [None, "h", "k0200", "m", "p"]
    got = full_read(c.nodes[2])
    assert got is not None
    assert len(got) == len(set(got)) and got == sorted(got)
    missing = set(base) | set(acked)
    missing -= set(got)
    assert not missing, sorted(missing)[:5]
    for x in rows:  # counts per range on their leaders match the keys
        lo = b"-" if x["lo"] is None else b"[" + x["lo"].encode()
        hi = b"+" if x["hi"] is None else b"(" + x["hi"].encode()
        assert x["keys"] == len(model_range(got, lo, hi)), x
    assert r.hget(b"h-hash", b"f") == b"v" and r.ttl(b"t0001") > 3000
    # A follower of the new range [k0200, m) takes it over with the keys.
    leader = next(x["leader"] for x in rows if x["lo"] == "k0200")
    victim = next(n for n in c.nodes if n.addr == leader)
    other = next(n for n in c.nodes if n is not victim)
    c.kill_node(victim.index)
    ok, waited = pkcluster.wait_until(lambda: full_read(other) == got, 30,
                                      interval=0.2)
    assert ok, "no whole read %.1fs after kill -9 of %s" % (waited, leader)


def test_split_refusals(rsplit):
    c = rsplit
    p = split_cli(c, "m")  # already a boundary
    assert p.returncode == 0 and "already" in p.stdout
    with pytest.raises(redis.AuthenticationError, match="PK.AUTH"):
        client(c.nodes[0]).execute_command("PK.SPLIT", "x")


def test_size_splits():
    """Writing 10x --split-size into one range: it splits at its middle
    as it grows, no range ends up over 2x the size, and every key reads
    back once, in order."""
    size = 100000
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=3,
                          extra=["--scheme", "range", "--split-qps", "0",
                                 "--split-size", str(size)])
    gen = pkcluster.serving(c)
    next(gen)
    try:
        r = client(c.nodes[0], decode=False)
        keys = [b"user:%06d" % i for i in range(0, 4000)]
        val = b"v" * 250
        largest = 0
        for b in range(0, len(keys), 100):  # ~1 MB in slices, in key order
            pipe = r.pipeline(transaction=False)
            for k in keys[b:b + 100]:
                pipe.set(k, val)
            try:
                pipe.execute()
            except redis.ResponseError as e:
                assert "TRYAGAIN" in str(e), e
                pipe = r.pipeline(transaction=False)
                for k in keys[b:b + 100]:
                    pipe.set(k, val)
                pipe.execute()
            rows = json.loads(range_list(c.nodes[0], "--json").stdout)
            largest = max([largest] + [x.get("bytes", 0) for x in rows])
            time.sleep(0.05)

        def settled():
            rows = json.loads(range_list(c.nodes[0], "--json").stdout)
            return rows if all(x.get("bytes", 0) <= size for x in rows) \
                else None
        rows, waited = pkcluster.wait_until(settled, 30, interval=0.5)
        assert rows, range_list(c.nodes[0]).stdout
        assert len(rows) >= 8, len(rows)
        assert largest <= 2 * size, largest
        # New ranges' leaders move while the controller balances them.
        ok, waited = pkcluster.wait_until(lambda: full_read(c.nodes[1]) ==
                                          keys, 30, interval=0.2)
        if not ok:
            try:
                got, _ = read_all(client(c.nodes[1], decode=False), b"-",
                                  b"+", limit=200)
                why = "%d keys of %d" % (len(got), len(keys))
            except redis.RedisError as e:
                why = repr(e)
            raise AssertionError("no whole read in %.1fs: %s" % (waited,
                                                                  why))
    finally:
        for _ in gen:
            pass


def node_pid(c, index):
    """The pid that runs node index of cluster c now (cluster up restarts
    a node that dies, under a new pid), or None."""
    want = ("node-%d" % index).encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if int(st[1]) == c.proc.pid and st[0] != "Z" and \
                any(a.endswith(want) for a in cmd):
            return int(d)
    return None


def test_kill_during_splits(rsplit):
    """kill -9 of the splitting leader or of a follower at a random moment
    of a split, five times, under a writer: afterwards every acknowledged
    write is there, each key once and in order, and every node holds as
    many keys in each range as the others (R = 3: all hold all).

    Liveness is checked too -- each killed node serves again within 30 s
    -- but a failure of that alone is an xfail naming it, after the safety
    checks passed, as PARTKV_FAULT_STRICT=0 does in tests/fault.  Before
    forwarded commands stopped being forwarded again (pk_cluster.c), about
    one run in thirty left a node's forwarding link waiting for ever."""
    import threading
    c = rsplit
    rnd = random.Random(21)
    acked, stop = [], threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            k = b"q%s-%06d" % (bytes([97 + i % 26]), i)
            try:
                if client(c.nodes[i % 3], decode=False).set(k, k):
                    acked.append(k)
            except redis.RedisError:
                pass
            i += 1
    th = threading.Thread(target=writer, daemon=True)
    th.start()
    kills, outcomes, stuck = 0, [], None
    try:
        for n in range(5):
            key = "q%s" % chr(98 + 4 * n)  # qb qf qj qn qr
            rows = json.loads(range_list(c.nodes[0], "--json").stdout)
            lead = next(x["leader"] for x in reversed(rows)
                        if x["lo"] is None or x["lo"] <= key)
            idx = next(i for i, nd in enumerate(c.nodes) if nd.addr == lead)
            victim = idx if n % 2 == 0 else (idx + 1) % 3
            p = subprocess.Popen(
                [pkserver.partkv_path(), "range", "split", key, "--cluster",
                 c.nodes[(victim + 1) % 3].addr, "--secret", c.secret],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(rnd.uniform(0.0, 0.05))
            pid = node_pid(c, victim)
            assert pid, "node %d is not running" % victim
            os.kill(pid, signal.SIGKILL)
            kills += 1
            out, err = p.communicate(timeout=60)  # done, refused, abandoned
            outcomes.append((key, victim == idx, p.returncode,
                             (out + err).decode().strip()[-80:]))
            ok, _ = pkcluster.wait_until(
                lambda: node_pid(c, victim) is not None and
                full_read(c.nodes[victim]) is not None, 30, interval=0.2)
            if not ok:
                stuck = "node %d not serving 30 s after kill -9 %s: %r" % (
                    victim, "(the leader)" if victim == idx else "", outcomes)
                break
    finally:
        stop.set()
        th.join(10)
    assert len(acked) > 100 and kills >= 1
    serving = [nd for nd in c.nodes if full_read(nd) is not None]
    assert serving, "no node serves"

    def whole():
        got = full_read(serving[0])
        return got if got is not None and not set(acked) - set(got) else None
    got, waited = pkcluster.wait_until(whole, 30, interval=0.5)
    assert got, "acknowledged writes missing after the kills"
    assert got == sorted(set(got))
    if stuck:
        pytest.xfail("liveness: " + stuck)

    # Every replica holds the same keys per range as its leader: the
    # per-partition counts of each node (PK.PARTITIONS) agree.
    def counts(nd):
        rep = client(nd).execute_command("PK.PARTITIONS")
        return {e[1]: e[3] for e in rep}
    ok, _ = pkcluster.wait_until(
        lambda: counts(c.nodes[0]) == counts(c.nodes[1]) == counts(c.nodes[2]),
        30, interval=0.5)
    assert ok, [counts(n) for n in c.nodes]


def test_scan_in_key_order():
    """SCAN on a node of the range scheme returns the keys of the ranges
    it leads in key order, also when a split gave a range in the middle a
    higher id; over all nodes every key comes once."""
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=3,
                          secret="sc-%032x" % random.getrandbits(128),
                          extra=["--scheme", "range", "--presplit-keys",
                                 "d,m,t"])
    gen = pkcluster.serving(c)
    next(gen)
    try:
        for key in ("f", "p", "b"):  # ids 4, 5, 6 sit between older ones
            p = split_cli(c, key)
            assert p.returncode == 0, p.stdout + p.stderr
        r = client(c.nodes[0], decode=False)
        keys = sorted(b"%s%03d" % (bytes([ch]), i) for ch in b"acegiknoqsuwy"
                      for i in range(40))
        pipe = r.pipeline(transaction=False)
        for k in keys:
            pipe.set(k, b"1")
        pipe.execute()
        seen = []
        for nd in c.nodes:
            got, cur = [], 0
            rn = client(nd, decode=False)
            while True:
                cur, page = rn.scan(cur, count=7)
                got += page
                if cur == 0:
                    break
            assert got == sorted(got), nd
            seen += got
        assert sorted(seen) == keys and len(seen) == len(keys)
    finally:
        for _ in gen:
            pass


def test_leaders_follow_load():
    """Balancing by load: two busy ranges led by one node (of six ranges,
    two per node by count) end up led by different nodes, while the
    leader counts stay within one of each other."""
    import threading
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=3,
                          extra=["--scheme", "range", "--presplit-keys",
                                 "b,d,f,h,j", "--split-qps", "0",
                                 "--merge-delay", "0"])
    gen = pkcluster.serving(c)
    next(gen)
    stop = threading.Event()
    try:
        def settled():
            rows = json.loads(range_list(c.nodes[0], "--json").stdout)
            per = {}
            for x in rows:
                per.setdefault(x["leader"], []).append(x["lo"])
            return per if sorted(map(len, per.values())) == [2, 2, 2] \
                else None
        per, _ = pkcluster.wait_until(settled, 30, interval=0.5)
        assert per, range_list(c.nodes[0]).stdout
        busy = next(iter(per.values()))  # the two ranges of one node
        keys = [(b"a" if lo is None else lo.encode()) + b"x%03d" % i
                for lo in busy for i in range(50)]
        r = client(c.nodes[0], decode=False)
        pipe = r.pipeline(transaction=False)
        for k in keys:
            pipe.set(k, k)
        pipe.execute()

        def load():
            w = client(c.nodes[1], decode=False)
            while not stop.is_set():
                p = w.pipeline(transaction=False)
                for k in keys:
                    p.get(k)
                try:
                    p.execute()
                except redis.RedisError:
                    time.sleep(0.05)  # a leader change: TRYAGAIN
        threads = [threading.Thread(target=load, daemon=True)
                   for _ in range(2)]
        for t in threads:
            t.start()

        def spread():
            rows = json.loads(range_list(c.nodes[0], "--json").stdout)
            lead = {x["lo"]: x["leader"] for x in rows}
            counts = {}
            for x in rows:
                counts[x["leader"]] = counts.get(x["leader"], 0) + 1
            return lead[busy[0]] != lead[busy[1]] and \
                max(counts.values()) - min(counts.values()) <= 1 and \
                len(counts) == 3
        ok, waited = pkcluster.wait_until(spread, 40, interval=0.5)
        assert ok, range_list(c.nodes[0]).stdout + c.logs()[-3000:]
        assert "handed over" in c.logs()
    finally:
        stop.set()
        for _ in gen:
            pass
