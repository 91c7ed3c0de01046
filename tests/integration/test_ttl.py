"""Expiry: lazy (on access) and active (in the background)."""
import time

import pytest

from server import RespError


def wait_until(pred, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def test_ex_lazy(r):
    t0 = time.monotonic()
    assert r.set("k", "v", ex=1)
    assert r.ttl("k") in (0, 1)
    assert r.get("k") == "v"
    time.sleep(max(0, t0 + 1.1 - time.monotonic()))
    assert r.get("k") is None
    assert r.exists("k") == 0
    assert r.ttl("k") == -2
    assert r.type("k") == "none"


def test_ex_gone_within_2s(r):
    t0 = time.monotonic()
    r.set("k", "v", ex=1)
    while r.get("k") is not None:
        assert time.monotonic() - t0 < 2.0, "key still there after 2 s"
        time.sleep(0.02)
    assert time.monotonic() - t0 >= 0.9, "expired too early"


def test_active_expiry(server, r):
    """DBSIZE drops without anyone touching the keys."""
    r.set("persistent", "v")
    p = r.pipeline(transaction=False)
    for i in range(20):
        p.set("e%d" % i, "v", ex=1)
    for i in range(5):
        p.hset("eh%d" % i, "f", "v")
        p.expire("eh%d" % i, 1)
        p.zadd("ez%d" % i, {"m": 1})
        p.pexpire("ez%d" % i, 1000)
    p.execute()
    t0 = time.monotonic()
    assert r.dbsize() == 31
    assert wait_until(lambda: r.dbsize() == 1, 3.0), \
        "DBSIZE still %d after 3 s" % r.dbsize()
    assert time.monotonic() - t0 >= 0.8
    assert r.get("persistent") == "v"
    assert [k for k in r.scan_iter()] == ["persistent"]


def test_active_expiry_info_keyspace(r):
    r.set("a", "v", px=300)
    r.set("b", "v")
    assert wait_until(lambda: r.info("keyspace").get("db0", {}).get("keys")
                      == 1, 3.0)


def test_px(r):
    t0 = time.monotonic()
    r.set("k", "v", px=300)
    assert 0 < r.pttl("k") <= 300
    assert r.ttl("k") in (0, 1)
    time.sleep(max(0, t0 + 0.45 - time.monotonic()))
    assert r.get("k") is None
    assert r.pttl("k") == -2


def test_pexpire_and_expire(r):
    r.set("a", "v")
    r.set("b", "v")
    assert r.pexpire("a", 200) is True
    assert r.expire("b", 1) is True
    time.sleep(0.35)
    assert r.get("a") is None
    assert r.get("b") == "v"
    time.sleep(0.9)
    assert r.get("b") is None


def test_persist(r):
    r.set("k", "v", px=400)
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    time.sleep(0.6)
    assert r.get("k") == "v"
    assert r.persist("k") is False


def test_ttl_values(r):
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.pttl("k") == -1
    r.expire("k", 10)
    assert r.ttl("k") == 10
    assert 9000 < r.pttl("k") <= 10000


def test_overwrite_clears_ttl(r):
    r.set("k", "v", px=300)
    r.set("k", "w")
    time.sleep(0.45)
    assert r.get("k") == "w"
    assert r.ttl("k") == -1


def test_getdel_and_del_of_expired(r):
    r.set("k", "v", px=100)
    r.hset("h", "f", "v")
    r.pexpire("h", 100)
    time.sleep(0.25)
    assert r.getdel("k") is None
    assert r.delete("k", "h") == 0
    assert r.hgetall("h") == {}
    assert r.hset("h", "g", "1") == 1  # a new hash, no leftover fields
    assert r.hgetall("h") == {"g": "1"}
    assert r.ttl("h") == -1


def test_expired_not_counted_or_scanned(r):
    r.set("keep", "v")
    r.set("gone", "v", px=100)
    r.zadd("zgone", {"m": 1})
    r.pexpire("zgone", 100)
    time.sleep(0.25)
    assert r.exists("gone", "zgone", "keep") == 1
    assert r.mget("gone", "keep") == [None, "v"]
    assert r.zcard("zgone") == 0
    assert r.zrange("zgone", 0, -1) == []
    assert set(r.scan_iter()) == {"keep"}


def test_incr_on_expired_starts_from_zero(r):
    r.set("n", "41", px=100)
    time.sleep(0.25)
    assert r.incr("n") == 1
    assert r.ttl("n") == -1


def test_set_keepttl(raw):
    raw.call("SET", "k", "v", "EX", "100")
    rep = raw.call("SET", "k", "w", "KEEPTTL")
    if isinstance(rep, RespError):
        pytest.skip("SET KEEPTTL not supported: %s" % rep.message)
    assert rep == "OK"
    assert raw.call("GET", "k") == "w"
    assert 98 <= raw.call("TTL", "k") <= 100
    assert isinstance(raw.call("SET", "k", "x", "KEEPTTL", "EX", "5"),
                      RespError)


def test_ttl_survives_restart(server_factory):
    s = server_factory(fsync="always")
    c = s.client()
    c.set("long", "v", ex=1000)
    c.set("short", "v", px=600)
    c.close()
    assert s.stop() == 0
    time.sleep(0.8)
    s.start()
    c = s.client()
    assert 990 <= c.ttl("long") <= 1000
    assert c.get("short") is None
    c.close()
