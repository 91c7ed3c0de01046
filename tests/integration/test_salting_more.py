"""Salting of write-hot strings, hashes and sorted sets, and the expiry
commands and RENAME of salted keys (pk_salted.h), on 3 nodes with 3
copies in forward mode: a SET of a salted string writes one random part
stamped by a hybrid logical clock and GET answers the newest, so a read
after an acknowledged SET answers it or a later one, from any node and
through salting and folding; HINCRBY, HINCRBYFLOAT and ZINCRBY write one
part and answer the total, HGET, HGETALL, HLEN and ZSCORE sum the parts;
EXPIRE and friends reach every part and TTL answers for the whole key;
RENAME folds the key back first."""
import threading
import time

import pytest
import redis

import cluster as pkcluster
from test_salting import raw_keys, retry, salted_parts

pytestmark = pytest.mark.partkv_only


@pytest.fixture(scope="module")
def sc3():
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hotkeys-sample", "1",
               "--hot-key-writes", "0"]))


def wait_parts(c, key, n):
    """Waits until every node's map salts key into n parts (0: none)."""
    ok, waited = pkcluster.wait_until(
        lambda: all(salted_parts(c, key, i) == n
                    for i in range(len(c.nodes))), 10, interval=0.1)
    assert ok, "%s not in %d parts everywhere after %.1fs" % (key, n, waited)


def parts_of(c, key):
    """The stored parts of key (sub-keys) on the nodes."""
    return [k for k in raw_keys(c) if k.endswith(b"\x00salt\x00" +
                                                 key.encode())]


def no_internal_keys(c):
    return not [k for k in raw_keys(c) if b"\x00salt" in k]


def test_set_get_last_writer_wins(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].set("title", "first")
    assert rs[1].execute_command("PK.SALT", "title", 4) == "OK"
    wait_parts(c, "title", 4)
    assert [r.get("title") for r in rs] == ["first"] * 3
    assert rs[2].type("title") == "string" and rs[0].exists("title") == 1
    # One client, every node in turn: each GET anywhere sees its last SET.
    for i in range(300):
        assert retry(lambda: rs[i % 3].set("title", "v%d" % i)) is True
        for r in rs:
            assert r.get("title") == "v%d" % i
    # The writes went to several parts, and the stamps never leak.
    assert len(parts_of(c, "title")) >= 2
    for r in rs:
        assert r.get("title") == "v299"
    listed = set().union(*(set(nd.client().keys("*")) for nd in c.nodes))
    assert "title" in listed and not [k for k in listed if "salt" in k]
    # Folded back: the newest value, plain, and the stamps gone.
    assert rs[0].execute_command("PK.UNSALT", "title") == "OK"
    wait_parts(c, "title", 0)
    assert [r.get("title") for r in rs] == ["v299"] * 3
    assert rs[1].strlen("title") == 4
    assert no_internal_keys(c)
    assert rs[2].append("title", "!") == 5


def test_set_options_fold_first(sc3):
    c = sc3
    r = c.nodes[0].client()
    r.set("opt", "plain")
    assert r.execute_command("PK.SALT", "opt", 2) == "OK"
    for i in range(10):
        retry(lambda: r.set("opt", "x%d" % i))
    # NX cannot be split: the key is folded back, then SET NX runs.
    assert r.set("opt", "nx", nx=True) is None
    wait_parts(c, "opt", 0)
    assert r.get("opt") == "x9"
    assert r.set("opt", "xx", xx=True, ex=100) is True
    assert r.get("opt") == "xx" and 90 < r.ttl("opt") <= 100


def test_salt_string_refusal_and_counter_set(sc3):
    c = sc3
    r = c.nodes[1].client()
    # A salted counter that is SET folds back first, then the SET runs.
    assert r.execute_command("PK.SALT", "cnt2", 2) == "OK"
    for _ in range(10):
        r.incr("cnt2")
    assert r.set("cnt2", "hello") is True
    wait_parts(c, "cnt2", 0)
    assert r.get("cnt2") == "hello"
    # A missing key is salted as a counter; a text value as a string.
    assert r.execute_command("PK.SALT", "cnt2", 2) == "OK"
    assert r.get("cnt2") == "hello"
    with pytest.raises(redis.ResponseError):
        r.incr("cnt2")  # not a number: folded, then INCR fails as Redis
    assert r.get("cnt2") == "hello"


def test_concurrent_sets_read_your_writes(sc3):
    """Three clients, one per node, SET their own sequence numbers into
    one key while it is salted and folded back; after each acknowledged
    SET, a GET on another node answers a value no older than it (each
    writer checks its own)."""
    c = sc3
    stop = threading.Event()
    errors, done = [], [0, 0, 0]
    order = []  # (writer, n) acknowledged, in order of acknowledgement
    lock = threading.Lock()

    def writer(i):
        w = c.nodes[i].client()
        rd = c.nodes[(i + 1) % 3].client()
        n = 0
        while not stop.is_set():
            try:
                n += 1
                with lock:
                    started = len(order)  # acknowledged before my SET
                retry(lambda: w.set("lww", "%d:%d" % (i, n)))
                with lock:
                    order.append((i, n))
                    seen = {v: k for k, v in enumerate(order)}
                got = retry(lambda: rd.get("lww"))
                g = tuple(map(int, got.split(":")))
                # Mine, or a write not acknowledged before mine began
                # (concurrent or later): never one mine followed.
                if g != (i, n) and g in seen and seen[g] < started:
                    errors.append("%d:%d read %r, acknowledged before it"
                                  % (i, n, got))
                if g[0] == i and g[1] < n:
                    errors.append("%d:%d read its own older %r" %
                                  (i, n, got))
                done[i] += 1
            except redis.RedisError as e:
                errors.append(str(e))
    ths = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for t in ths:
        t.start()
    admin = c.nodes[2].client()
    try:
        for parts in (4, 2, 4):
            time.sleep(0.4)
            assert admin.execute_command("PK.SALT", "lww", parts) == "OK"
            time.sleep(0.8)
            assert admin.execute_command("PK.UNSALT", "lww") == "OK"
    finally:
        stop.set()
        for t in ths:
            t.join(15)
    assert not errors, errors[:5]
    assert sum(done) > 100
    last = admin.get("lww")
    assert tuple(map(int, last.split(":"))) in order


def test_expire_ttl_persist(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    assert rs[0].execute_command("PK.SALT", "ectr", 4) == "OK"
    wait_parts(c, "ectr", 4)
    for i in range(40):
        rs[i % 3].incr("ectr")
    assert len(parts_of(c, "ectr")) >= 2
    assert [r.ttl("ectr") for r in rs] == [-1] * 3
    assert rs[1].expire("ectr", 100) is True
    assert all(95 < r.ttl("ectr") <= 100 for r in rs)
    assert all(95000 < r.pttl("ectr") <= 100000 for r in rs)
    assert rs[2].persist("ectr") is True
    assert rs[0].ttl("ectr") == -1
    assert rs[0].persist("ectr") is False
    assert rs[1].pexpire("ectr", 1500) is True
    assert rs[2].get("ectr") == "40"
    time.sleep(2.0)
    for r in rs:
        assert r.get("ectr") is None
        assert r.exists("ectr") == 0
        assert r.ttl("ectr") == -2
    assert rs[0].expire("ectr", 10) is False
    assert not parts_of(c, "ectr")
    # A salted string expires whole too.
    rs[0].set("estr", "a")
    assert rs[0].execute_command("PK.SALT", "estr", 2) == "OK"
    wait_parts(c, "estr", 2)
    for i in range(10):
        retry(lambda: rs[i % 3].set("estr", "b%d" % i))
    assert rs[2].expireat("estr", int(time.time()) + 2) is True
    assert 0 < rs[1].ttl("estr") <= 2
    time.sleep(3.0)
    assert [r.get("estr") for r in rs] == [None] * 3
    assert rs[1].type("estr") == "none"
    assert rs[0].execute_command("PK.UNSALT", "estr") == "OK"
    assert rs[0].execute_command("PK.UNSALT", "ectr") == "OK"
    wait_parts(c, "estr", 0)
    assert rs[0].get("estr") is None and rs[0].get("ectr") is None


def test_rename_folds_first(sc3):
    c = sc3
    r = c.nodes[0].client()
    assert r.execute_command("PK.SALT", "{rn}a", 4) == "OK"
    for _ in range(30):
        r.incr("{rn}a")
    assert r.rename("{rn}a", "{rn}b") is True
    wait_parts(c, "{rn}a", 0)
    assert r.get("{rn}b") == "30" and r.exists("{rn}a") == 0
    # A salted destination is folded back, then replaced whole.
    assert r.execute_command("PK.SALT", "{rn}b", 2) == "OK"
    wait_parts(c, "{rn}b", 2)
    for _ in range(10):
        r.incr("{rn}b")
    r.set("{rn}c", "7")
    assert r.rename("{rn}c", "{rn}b") is True
    wait_parts(c, "{rn}b", 0)
    assert r.get("{rn}b") == "7"
    assert no_internal_keys(c)


def test_hash_and_zset_counters(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].hset("stats", mapping={"views": 5, "name": "page"})
    rs[0].zadd("board", {"alice": 1.5, "bob": 2})
    assert rs[1].execute_command("PK.SALT", "stats", 4) == "OK"
    assert rs[2].execute_command("PK.SALT", "board", 4) == "OK"
    wait_parts(c, "stats", 4)
    wait_parts(c, "board", 4)
    views, likes, alice, carol = 5, 0, 1.5, 0
    for i in range(120):
        r = rs[i % 3]
        views += 2
        assert retry(lambda: r.hincrby("stats", "views", 2)) == views
        if i % 4 == 0:
            likes += 1
            assert retry(lambda: r.hincrby("stats", "likes", 1)) == likes
        alice += 1
        assert retry(lambda: r.zincrby("board", 1, "alice")) == alice
        if i % 5 == 0:
            carol += 3
            assert retry(lambda: r.zincrby("board", 3, "carol")) == carol
    assert float(rs[0].hincrbyfloat("stats", "ratio", 0.5)) == 0.5
    assert float(rs[1].hincrbyfloat("stats", "ratio", 0.25)) == 0.75
    assert len(parts_of(c, "stats")) >= 2 and len(parts_of(c, "board")) >= 2
    want = {"views": str(views), "likes": str(likes), "name": "page",
            "ratio": "0.75"}
    for r in rs:
        assert r.hget("stats", "views") == str(views)
        assert r.hget("stats", "name") == "page"
        assert r.hget("stats", "absent") is None
        assert r.hgetall("stats") == want
        assert r.hlen("stats") == 4
        assert r.zscore("board", "alice") == alice
        assert r.zscore("board", "bob") == 2
        assert r.zscore("board", "carol") == carol
        assert r.zscore("board", "nobody") is None
        assert r.type("stats") == "hash" and r.type("board") == "zset"
        assert r.exists("stats") == 1
    # Folded back: the sums in one key, the parts gone.
    assert rs[0].execute_command("PK.UNSALT", "stats") == "OK"
    assert rs[0].execute_command("PK.UNSALT", "board") == "OK"
    wait_parts(c, "stats", 0)
    wait_parts(c, "board", 0)
    for r in rs:
        assert r.hgetall("stats") == want
        assert r.zscore("board", "alice") == alice
        assert r.zrange("board", 0, -1, withscores=True) == sorted(
            [("alice", alice), ("bob", 2.0), ("carol", float(carol))],
            key=lambda p: p[1])
    assert no_internal_keys(c)
    # Other hash commands fold first.
    assert rs[1].execute_command("PK.SALT", "stats", 2) == "OK"
    wait_parts(c, "stats", 2)
    retry(lambda: rs[1].hincrby("stats", "views", 1))
    assert rs[2].hset("stats", "name", "other") == 0
    wait_parts(c, "stats", 0)
    assert rs[0].hget("stats", "views") == str(views + 1)
    assert retry(lambda: rs[0].delete("board")) == 1


def test_no_increment_lost_hash_zset(sc3):
    """Three clients, one per node, HINCRBY and ZINCRBY one key each
    while they are salted and folded back; the totals are the sums of
    the acknowledged increments."""
    c = sc3
    stop = threading.Event()
    hacked, zacked, failed = [0, 0, 0], [0, 0, 0], []

    def writer(i):
        r = c.nodes[i].client()
        while not stop.is_set():
            try:
                r.hincrby("hrace", "f%d" % (hacked[i] % 3), 1)
                hacked[i] += 1
                r.zincrby("zrace", 2, "m")
                zacked[i] += 1
            except redis.RedisError as e:
                failed.append(str(e))
    ths = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for t in ths:
        t.start()
    admin = c.nodes[2].client()
    try:
        for parts in (4, 2, 4):
            time.sleep(0.4)
            for k in ("hrace", "zrace"):
                assert retry(lambda: admin.execute_command(
                    "PK.SALT", k, parts)) == "OK"
            time.sleep(0.8)
            for k in ("hrace", "zrace"):
                assert admin.execute_command("PK.UNSALT", k) == "OK"
    finally:
        stop.set()
        for t in ths:
            t.join(15)
    assert not [e for e in failed if "TRYAGAIN" not in e], failed[:5]
    h = admin.hgetall("hrace")
    assert sum(hacked) <= sum(map(int, h.values())) <= sum(hacked) + len(
        failed)
    z = admin.zscore("zrace", "m")
    assert 2 * sum(zacked) <= z <= 2 * (sum(zacked) + len(failed))
    assert sum(hacked) > 100


def leader_client(c, key):
    """A client of key's leader, on one connection (MULTI is not
    forwarded)."""
    import pmap
    m = pmap.decode(c.nodes[0].client(decode_responses=False)
                    .execute_command("PK.MAP"))
    part = m["parts"][pkcluster.keyslot(key)]
    host, port = m["nodes"][part["replicas"][0]].rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), decode_responses=True,
                    single_connection_client=True, socket_timeout=10)
    return Raw(r)


class Raw:
    """Commands on one connection, replies as sent (no redis-py reply
    callbacks: SET in MULTI answers QUEUED, not a bool)."""

    def __init__(self, r):
        self.conn = r.connection

    def execute_command(self, *args):
        self.conn.send_command(*args)
        return self.conn.read_response()


def test_fold_keeps_part0_expiry(sc3):
    """A fold of a salted string whose newest value is in another part
    keeps the key's expiry."""
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    for n in range(4):
        k = "fttl%d" % n
        rs[0].set(k, "hello")
        assert rs[0].execute_command("PK.SALT", k, 2) == "OK"
        wait_parts(c, k, 2)
        for i in range(6):
            retry(lambda: rs[i % 3].set(k, "v%d" % i))
        assert rs[1].expire(k, 1000) is True
        assert rs[2].execute_command("PK.UNSALT", k) == "OK"
        wait_parts(c, k, 0)
        assert rs[0].get(k) == "v5"
        assert 990 < rs[0].ttl(k) <= 1000, (k, rs[0].ttl(k))


def test_exec_refuses_a_key_salted_after_queueing(sc3):
    """A SET queued in MULTI before its key was salted is not run on part 0
    alone (it would lose to the stamped parts): EXEC answers TRYAGAIN and
    the key is folded back; the transaction again then runs."""
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].set("mx1", "orig")
    lr = leader_client(c, "mx1")
    assert lr.execute_command("MULTI") == "OK"
    assert lr.execute_command("SET", "mx1", "from-exec") == "QUEUED"
    assert rs[1].execute_command("PK.SALT", "mx1", 2) == "OK"
    wait_parts(c, "mx1", 2)
    retry(lambda: rs[2].set("mx1", "stamped-before-exec"))
    with pytest.raises(redis.ResponseError) as ei:
        lr.execute_command("EXEC")
    assert "TRYAGAIN" in str(ei.value)
    wait_parts(c, "mx1", 0)
    assert rs[0].get("mx1") == "stamped-before-exec"
    assert lr.execute_command("MULTI") == "OK"
    assert lr.execute_command("SET", "mx1", "from-exec") == "QUEUED"
    assert lr.execute_command("EXEC") == ["OK"]
    assert [r.get("mx1") for r in rs] == ["from-exec"] * 3


def test_watch_of_a_key_salted_since_fails_exec(sc3):
    """Writes to a salted key's parts run elsewhere: a WATCH of the key
    fails EXEC once the key is salted, as a write to it would."""
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].set("{wy}0", 5)
    lr = leader_client(c, "{wy}0")
    assert lr.execute_command("WATCH", "{wy}0") == "OK"
    assert rs[1].execute_command("PK.SALT", "{wy}0", 2) == "OK"
    wait_parts(c, "{wy}0", 2)
    for i in range(6):
        retry(lambda: rs[i % 3].incr("{wy}0"))
    assert lr.execute_command("MULTI") == "OK"
    assert lr.execute_command("SET", "{wy}side", "0") == "QUEUED"
    assert lr.execute_command("EXEC") is None
    assert rs[0].get("{wy}side") is None
    assert rs[2].get("{wy}0") == "11"
    # Salted with no write seen here: a write to another part could have
    # come first, so EXEC fails too (a WATCH that a write would fail).
    assert rs[0].execute_command("PK.UNSALT", "{wy}0") == "OK"
    wait_parts(c, "{wy}0", 0)
    assert lr.execute_command("WATCH", "{wy}0") == "OK"
    assert rs[1].execute_command("PK.SALT", "{wy}0", 2) == "OK"
    wait_parts(c, "{wy}0", 2)
    assert lr.execute_command("MULTI") == "OK"
    assert lr.execute_command("SET", "{wy}side", "1") == "QUEUED"
    assert lr.execute_command("EXEC") is None
    assert rs[0].get("{wy}side") is None


def test_incrby_needs_an_integer_increment(sc3):
    """INCRBY/DECRBY of a salted counter refuse what Redis refuses, and the
    counter stays as it was."""
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].set("nint", 10)
    assert rs[0].execute_command("PK.SALT", "nint", 2) == "OK"
    wait_parts(c, "nint", 2)
    for bad in ("1.5", "1e3", "abc", " 5"):
        for r in rs:
            with pytest.raises(redis.ResponseError) as ei:
                r.execute_command("INCRBY", "nint", bad)
            assert "not an integer" in str(ei.value), (bad, ei.value)
            with pytest.raises(redis.ResponseError):
                r.execute_command("DECRBY", "nint", bad)
    assert [r.get("nint") for r in rs] == ["10"] * 3
    assert rs[1].incrby("nint", 5) == 15
    assert rs[0].execute_command("PK.UNSALT", "nint") == "OK"
