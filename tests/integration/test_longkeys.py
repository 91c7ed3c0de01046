"""Keys of any length: strings, expiry, hashes, sorted sets, SCAN and KEYS
under keys of 500 bytes, 10 KB and 1 MB (and binary keys with NUL bytes)
behave as under short keys, and as in Redis.  partkv stores a key whose
encoding passes 240 bytes under a digest with the whole key beside it
(src/store/pk_keyenc.h); nothing here may tell.

Run the same file against redis-server with PARTKV_TEST_TARGET=redis."""
import time

import pytest
import redis

SIZES = (500, 10 * 1024, 1 << 20)


def key_of(n, tag="k"):
    """A key of n bytes whose head is shared by all keys of one tag, so
    that long keys differ only far past the part partkv keeps in clear."""
    body = (tag * n)[: n - 8]
    return body + "%08d" % n


def binary_key(n):
    return b"\x00" * (n // 2) + b"\x01\xff" * (n // 4) + b"\x00" * (n % 4)


@pytest.mark.parametrize("n", SIZES)
def test_strings(r, n):
    k = key_of(n)
    assert r.set(k, "v1") is True
    assert r.get(k) == "v1"
    assert r.exists(k) == 1
    assert r.type(k) == "string"
    assert r.strlen(k) == 2
    assert r.append(k, "23") == 4
    assert r.get(k) == "v123"
    assert r.set(k, "x", nx=True) is None
    assert r.set(k, "x", xx=True, get=True) == "v123"
    assert r.incr(key_of(n, "i")) == 1
    assert r.incrby(key_of(n, "i"), 41) == 42
    # The same key one byte shorter, or with the last byte changed, is
    # another key.
    assert r.get(k[:-1]) is None
    assert r.get(k[:-1] + "9") is None
    assert r.mget([k, key_of(n, "i"), "missing"]) == ["x", "42", None]
    assert r.delete(k, key_of(n, "i"), "missing") == 2
    assert r.get(k) is None
    assert r.exists(k) == 0
    assert r.type(k) == "none"


@pytest.mark.parametrize("n", SIZES)
def test_binary_keys(rb, n):
    k = binary_key(n)
    assert rb.set(k, b"\x00val") is True
    assert rb.get(k) == b"\x00val"
    assert rb.get(k + b"\x00") is None
    assert rb.get(k[:-1]) is None
    assert rb.delete(k) == 1


@pytest.mark.parametrize("n", SIZES)
def test_expiry(r, n):
    k = key_of(n)
    assert r.set(k, "v") is True
    assert r.ttl(k) == -1
    assert r.expire(k, 100) is True
    assert 99 <= r.ttl(k) <= 100
    assert 0 < r.pttl(k) <= 100000
    assert r.persist(k) is True
    assert r.ttl(k) == -1
    assert r.pexpire(k, 1) is True
    # Gone once expired, whether found by a read or by the active cycle.
    for _ in range(200):
        if r.exists(k) == 0:
            break
        time.sleep(0.01)
    assert r.get(k) is None
    assert r.ttl(k) == -2
    assert r.expire(k, 100) is False
    assert r.set(k, "v", ex=50) is True
    assert 49 <= r.ttl(k) <= 50


@pytest.mark.parametrize("n", SIZES)
def test_hash(r, n):
    k = key_of(n, "h")
    assert r.hset(k, mapping={"f1": "v1", "f2": "v2"}) == 2
    assert r.hget(k, "f1") == "v1"
    assert r.hgetall(k) == {"f1": "v1", "f2": "v2"}
    assert r.hlen(k) == 2
    assert r.hincrby(k, "n", 5) == 5
    assert r.hdel(k, "f1", "n") == 2
    assert r.hgetall(k) == {"f2": "v2"}
    assert r.type(k) == "hash"
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get(k)
    assert r.hdel(k, "f2") == 1
    assert r.exists(k) == 0


@pytest.mark.parametrize("n", SIZES)
def test_zset(r, n):
    k = key_of(n, "z")
    assert r.zadd(k, {"a": 1, "b": 2, "c": 3}) == 3
    assert r.zrange(k, 0, -1) == ["a", "b", "c"]
    assert r.zrange(k, 0, -1, withscores=True) == [
        ("a", 1.0), ("b", 2.0), ("c", 3.0)]
    assert r.zrangebyscore(k, 2, "+inf") == ["b", "c"]
    assert r.zscore(k, "b") == 2.0
    assert r.zcard(k) == 3
    assert r.zrem(k, "a") == 1
    assert r.type(k) == "zset"
    assert r.delete(k) == 1
    assert r.zcard(k) == 0


def test_scan_returns_whole_keys(r):
    want = set()
    for n in SIZES:
        for tag in "abc":
            want.add(key_of(n, tag))
    want |= {"short1", "short2"}
    for k in want:
        assert r.set(k, "v") is True
    got = set()
    cur = 0
    while True:
        cur, keys = r.scan(cur, count=2)
        got.update(keys)
        if cur == 0:
            break
    assert got == want
    # MATCH looks at the whole key, including its far end.
    tail = "*%08d" % (10 * 1024)
    assert set(r.scan_iter(match=tail, count=100)) == {
        key_of(10 * 1024, t) for t in "abc"}
    assert set(r.scan_iter(_type="string", count=100)) == want
    assert r.dbsize() == len(want)


def test_keys(r):
    want = {key_of(n) for n in SIZES} | {"short"}
    for k in want:
        r.set(k, "v")
    try:
        got = r.keys("*")
    except redis.ResponseError as e:
        if "unknown command" in str(e):
            pytest.skip("KEYS is not on this branch")
        raise
    assert set(got) == want
    assert set(r.keys("k*%08d" % 500)) == {key_of(500)}


@pytest.mark.partkv_only
def test_long_keys_survive_restart(server):
    c = server.client()
    for n in SIZES:
        c.set(key_of(n), "v%d" % n)
        c.hset(key_of(n, "h"), "f", "v")
    c.close()
    server.stop()
    server.start()
    c = server.client()
    for n in SIZES:
        assert c.get(key_of(n)) == "v%d" % n
        assert c.hgetall(key_of(n, "h")) == {"f": "v"}
    assert c.dbsize() == 2 * len(SIZES)
    c.close()


@pytest.mark.parametrize("n", SIZES)
def test_rename_copy_dump_restore(r, n):
    """A key's records move between short and long names: the META of a
    long key carries its own full name, never the source's."""
    k, k2 = key_of(n), key_of(n, "c")
    r.set(k, "v")
    assert r.rename(k, "short") is True
    assert r.get("short") == "v"
    assert r.rename("short", k) is True
    assert r.get(k) == "v"
    assert r.copy(k, k2) is True
    assert r.get(k2) == "v" and r.get(k) == "v"
    assert sorted(r.scan_iter()) == sorted([k, k2])
    r.hset(key_of(n, "h"), mapping={"f": "1", "g": "2"})
    assert r.rename(key_of(n, "h"), key_of(n, "j")) is True
    assert r.hgetall(key_of(n, "j")) == {"f": "1", "g": "2"}
    payload = r.dump(key_of(n, "j"))
    assert r.restore("plain", 0, payload) == "OK"
    assert r.hgetall("plain") == {"f": "1", "g": "2"}
    assert r.restore(key_of(n, "q"), 0, r.dump("plain")) == "OK"
    assert r.hgetall(key_of(n, "q")) == {"f": "1", "g": "2"}
    assert key_of(n, "q") in set(r.scan_iter())


# Fields and members of any length: partkv keeps one of 240 bytes or more
# under its first 224 bytes and a digest, with the whole member beside it.
MSIZES = (239, 240, 241, 1000, 10 * 1024, 1 << 20)
# Keys the long members live under: short, and long (digest prefix).
MKEYS = ("short", 500)


def mkey(kind, tag):
    """One slot for all keys of a test: the multi-key commands need it."""
    return "{m}" + (tag + "key" if kind == "short" else key_of(kind, tag))


def pair_of(n, tag="m"):
    """Two members of n bytes sharing all but their last byte."""
    a = key_of(n, tag)
    return a, a[:-1] + "X"


@pytest.mark.parametrize("kind", MKEYS)
@pytest.mark.parametrize("n", MSIZES)
def test_long_fields(r, n, kind):
    k = mkey(kind, "h")
    f1, f2 = pair_of(n, "f")
    assert r.hset(k, mapping={f1: "v1", f2: "v2", "s": "v3"}) == 3
    assert r.hset(k, f1, "w1") == 0
    assert r.hget(k, f1) == "w1"
    assert r.hget(k, f2) == "v2"
    assert r.hget(k, f1[:-1]) is None
    assert r.hget(k, f1[:224]) is None
    assert r.hmget(k, [f2, "s", f1 + "y"]) == ["v2", "v3", None]
    assert r.hexists(k, f1) is True
    assert r.hexists(k, f1 + "y") is False
    assert r.hstrlen(k, f2) == 2
    assert r.hlen(k) == 3
    assert r.hgetall(k) == {f1: "w1", f2: "v2", "s": "v3"}
    assert sorted(r.hkeys(k)) == sorted([f1, f2, "s"])
    assert sorted(r.hvals(k)) == ["v2", "v3", "w1"]
    # HSCAN's MATCH sees the whole field, up to its last byte.
    assert dict(r.hscan_iter(k, match="*X", count=1)) == {f2: "v2"}
    assert dict(r.hscan_iter(k, count=1)) == {f1: "w1", f2: "v2", "s": "v3"}
    assert r.hincrby(k, f2 + "n", 7) == 7
    assert r.hsetnx(k, f2 + "n", "0") == 0
    assert r.hdel(k, f1, f2 + "n", f1 + "y") == 2
    assert r.hgetall(k) == {f2: "v2", "s": "v3"}


@pytest.mark.parametrize("kind", MKEYS)
@pytest.mark.parametrize("n", MSIZES)
def test_long_set_members(r, n, kind):
    k, k2 = mkey(kind, "s"), mkey(kind, "t")
    m1, m2 = pair_of(n)
    assert r.sadd(k, m1, m2, "a") == 3
    assert r.sadd(k, m1) == 0
    assert r.sismember(k, m1) is True
    assert r.sismember(k, m1[:-1]) is False
    assert r.smismember(k, [m2, m1 + "y", "a"]) == [1, 0, 1]
    assert r.smembers(k) == {m1, m2, "a"}
    assert r.scard(k) == 3
    assert set(r.sscan_iter(k, match="*X", count=1)) == {m2}
    assert set(r.sscan_iter(k, count=1)) == {m1, m2, "a"}
    assert r.sadd(k2, m2, "b") == 2
    assert r.sinter(k, k2) == {m2}
    assert r.sunion(k, k2) == {m1, m2, "a", "b"}
    assert r.sdiff(k, k2) == {m1, "a"}
    assert r.srem(k, m2, m1 + "y") == 1
    assert r.smembers(k) == {m1, "a"}
    assert r.smove(k, k2, m1) is True
    assert r.smembers(k2) == {m1, m2, "b"}
    assert r.srandmember(k) == "a"
    popped = r.spop(k2, 3)
    assert set(popped) == {m1, m2, "b"}


@pytest.mark.parametrize("kind", MKEYS)
@pytest.mark.parametrize("n", MSIZES)
def test_long_zset_members(r, n, kind):
    k = mkey(kind, "z")
    m1, m2 = pair_of(n)
    # b1 and b2 differ within their first bytes: byte order holds even in
    # partkv; m1 and m2 share a head, so only the set of them is fixed.
    b1, b2 = "a" + m1[1:], "c" + m1[1:]
    assert r.zadd(k, {m1: 1, m2: 2, b1: 3, b2: 4, "b": 5}) == 5
    assert r.zadd(k, {m1: 1.5}) == 0
    assert r.zscore(k, m1) == 1.5
    assert r.zscore(k, m1[:-1]) is None
    assert r.zmscore(k, [m2, m1 + "y"]) == [2.0, None]
    assert r.zrank(k, m2) == 1
    assert r.zrevrank(k, b1) == 2
    assert r.zrange(k, 0, -1) == [m1, m2, b1, b2, "b"]
    assert r.zrange(k, 0, 0, withscores=True) == [(m1, 1.5)]
    assert r.zrangebyscore(k, 2, 3) == [m2, b1]
    # Lex ranges: all members share score 0 in a second key.
    lk = mkey(kind, "l")
    assert r.zadd(lk, {m1: 0, m2: 0, b1: 0, b2: 0, "b": 0}) == 5
    assert r.zrangebylex(lk, "[" + b1, "[" + b2) == [b1, "b", b2]
    assert r.zrangebylex(lk, "(" + b1, "(" + b2) == ["b"]
    assert sorted(r.zrangebylex(lk, "[" + m1, "[" + m2)) == sorted([m1, m2])
    assert r.zrangebylex(lk, "(" + m1, "(" + m2) == []
    assert sorted(r.zrangebylex(lk, "(" + b2, "+")) == sorted([m1, m2])
    assert r.zlexcount(lk, "[" + m1, "+") == 2
    assert r.zlexcount(lk, "-", "[" + m1) == 4
    assert r.zremrangebylex(lk, "[" + m1[:-1], "[" + m2) == 2
    assert r.zrange(lk, 0, -1) == [b1, "b", b2]
    assert dict(r.zscan_iter(k, match="*X", count=1)) == {m2: 2.0}
    assert len(dict(r.zscan_iter(k, count=1))) == 5
    assert r.zunionstore(k + "u", [k, lk]) == 5
    assert r.zscore(k + "u", b2) == 4.0
    assert r.zpopmin(k) == [(m1, 1.5)]
    assert r.zrem(k, m2, m1) == 1
    assert r.zcard(k) == 3


@pytest.mark.parametrize("n", (241, 1 << 20))
def test_long_members_rename_dump(r, n):
    m1, m2 = pair_of(n)
    r.zadd("z", {m1: 1, m2: 2})
    r.hset("h", mapping={m1: "1", m2: "2"})
    r.sadd("s", m1, m2)
    for k in ("z", "h", "s"):
        assert r.rename(k, key_of(500, k)) is True
        assert r.copy(key_of(500, k), k + "c") is True
        assert r.restore(k + "r", 0, r.dump(key_of(500, k))) == "OK"
    for k in (key_of(500, "z"), "zc", "zr"):
        assert r.zrange(k, 0, -1, withscores=True) == [(m1, 1.0), (m2, 2.0)]
    for k in (key_of(500, "h"), "hc", "hr"):
        assert r.hgetall(k) == {m1: "1", m2: "2"}
    for k in (key_of(500, "s"), "sc", "sr"):
        assert r.smembers(k) == {m1, m2}
