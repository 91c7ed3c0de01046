"""SORT and SORT_RO with python3-redis and raw RESP2/RESP3: lists, sets and
sorted sets as sources, numeric and ALPHA order, BY keys and hash fields,
BY nosort, GET, LIMIT clamping, STORE, Redis 7.0's error texts, hostile
arguments, key extraction, MULTI and the cluster rules.
PARTKV_TEST_TARGET=redis runs the same expectations against redis-server."""
import pytest
import redis

from server import RespError

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
# python3-redis drops the "ERR " of an error's text.
BADDOUBLE = "One or more scores can't be converted into double"
NOTINT = "value is not an integer or out of range"
I64_MIN = "-9223372036854775808"
I64_MAX = "9223372036854775807"


def sort(r, *args):
    return r.execute_command("SORT", *args)


def test_list_numeric_alpha_desc(r):
    r.rpush("l", 3, 1, 2, 10, "1.5", "-inf")
    assert sort(r, "l") == ["-inf", "1", "1.5", "2", "3", "10"]
    assert sort(r, "l", "DESC") == ["10", "3", "2", "1.5", "1", "-inf"]
    assert sort(r, "l", "ALPHA") == ["-inf", "1", "1.5", "10", "2", "3"]
    assert sort(r, "l", "alpha", "desc") == ["3", "2", "10", "1.5", "1",
                                              "-inf"]
    # The last of ASC / DESC wins.
    assert sort(r, "l", "DESC", "ASC") == sort(r, "l")
    assert r.sort("l", start=1, num=2) == ["1", "1.5"]
    assert sort(r, "nokey") == []
    assert r.execute_command("SORT_RO", "l", "LIMIT", "0", "1") == ["-inf"]


def test_equal_scores_sort_by_bytes(r):
    r.rpush("l", "b", "a", "c")
    for e in ("b", "a", "c"):
        r.set("w_" + e, 1)
    # Equal weights: the elements' bytes decide, reversed with DESC.
    assert sort(r, "l", "BY", "w_*") == ["a", "b", "c"]
    assert sort(r, "l", "BY", "w_*", "DESC") == ["c", "b", "a"]
    r.rpush("n", "01", "1", "1.0", "1")
    assert sort(r, "n") == ["01", "1", "1", "1.0"]


def test_numeric_parsing_like_strtod(r):
    r.rpush("l", "", " 2", "0x10", "inf", "1e3")
    # strtod over the whole value: "" is 0, leading spaces and hex are fine.
    assert sort(r, "l") == ["", " 2", "0x10", "1e3", "inf"]
    for bad in ("nan", "1 ", "abc", "1e400", "1e-400"):
        r.delete("b")
        r.rpush("b", "1", bad)
        with pytest.raises(redis.ResponseError, match="^" + BADDOUBLE):
            sort(r, "b")
        # Nothing is stored after the error.
        r.set("dst", "keep")
        with pytest.raises(redis.ResponseError, match="^" + BADDOUBLE):
            sort(r, "b", "STORE", "dst")
        assert r.get("dst") == "keep"
    # No numeric weights are read when nothing is sorted, or with ALPHA.
    assert sort(r, "b", "BY", "nosort") == ["1", "1e-400"]
    assert sort(r, "b", "ALPHA") == ["1", "1e-400"]


def test_set_and_zset_sources(r):
    r.sadd("s", 5, 3, 40, 1)
    assert sort(r, "s") == ["1", "3", "5", "40"]
    assert sort(r, "s", "ALPHA", "DESC") == ["5", "40", "3", "1"]
    r.zadd("z", {"a": 1, "b": 5, "c": 2, "d": 10, "e": 3})
    assert sort(r, "z", "ALPHA", "DESC") == ["e", "d", "c", "b", "a"]
    with pytest.raises(redis.ResponseError, match="^" + BADDOUBLE):
        sort(r, "z")  # members, not scores, are the numbers
    assert sort(r, "z", "BY", "nosort") == ["a", "c", "e", "b", "d"]
    assert sort(r, "z", "BY", "nosort", "DESC") == ["d", "b", "e", "c", "a"]
    for args, want in ((("LIMIT", 0, 1), ["a"]),
                       (("DESC", "LIMIT", 0, 1), ["d"]),
                       (("LIMIT", 0, 2), ["a", "c"]),
                       (("DESC", "LIMIT", 0, 2), ["d", "b"]),
                       (("LIMIT", 1, 2), ["c", "e"]),
                       (("DESC", "LIMIT", 1, 2), ["b", "e"]),
                       (("LIMIT", 5, 10), []),
                       (("LIMIT", -10, 100), ["a", "c", "e", "b", "d"])):
        assert sort(r, "z", "BY", "nosort", *args) == want, args
    r.zadd("zn", {"10": 1, "9": 2, "8": 3})
    assert sort(r, "zn") == ["8", "9", "10"]


def test_list_nosort_keeps_order(r):
    r.rpush("l", 5, 3, 4, 1, 2)
    assert sort(r, "l", "BY", "nosort") == ["5", "3", "4", "1", "2"]
    assert sort(r, "l", "BY", "nosort", "DESC") == ["2", "1", "4", "3", "5"]
    assert sort(r, "l", "BY", "nosort", "LIMIT", 0, 3) == ["5", "3", "4"]
    assert sort(r, "l", "BY", "nosort", "LIMIT", 1, 2, "DESC") == ["1", "4"]
    assert sort(r, "l", "BY", "nosort", "STORE", "d") == 5
    assert r.lrange("d", 0, -1) == ["5", "3", "4", "1", "2"]
    # A constant BY stays in force when a later BY has a pattern.
    r.set("w_5", 100)
    assert sort(r, "l", "BY", "nosort", "BY", "w_*") == ["5", "3", "4", "1",
                                                         "2"]


def test_by_key_and_hash_field(r):
    r.rpush("l", 1, 2, 3, 4)
    r.mset({"w_1": 40, "w_2": 30, "w_3": 20})
    # A missing weight is 0.
    assert sort(r, "l", "BY", "w_*") == ["4", "3", "2", "1"]
    for e, w in ((1, "b"), (2, "a"), (3, "c")):
        r.hset("h_%d" % e, "f", w)
    assert sort(r, "l", "BY", "h_*->f", "ALPHA") == ["4", "2", "1", "3"]
    # ALPHA BY: a missing value sorts first, reversed with DESC.
    assert sort(r, "l", "BY", "h_*->f", "ALPHA", "DESC") == ["3", "1", "2",
                                                             "4"]
    # Wrong types weigh as missing.
    r.set("h_4", "zzz")
    assert sort(r, "l", "BY", "h_*->f", "ALPHA")[0] == "4"
    r.hset("w_4", "x", 1)
    assert sort(r, "l", "BY", "w_*")[0] == "4"
    assert sort(r, "l", "BY", "pre*post") == ["1", "2", "3", "4"]
    r.set("pre2post", -1)
    assert sort(r, "l", "BY", "pre*post")[0] == "2"


def test_get(r):
    r.rpush("l", 2, 1, 3)
    r.set("v_1", "one")
    r.hset("h_2", "f", "two")
    assert sort(r, "l", "GET", "#") == ["1", "2", "3"]
    assert sort(r, "l", "GET", "v_*", "GET", "#", "GET", "h_*->f") == [
        "one", "1", None, None, "2", "two", None, "3", None]
    assert sort(r, "l", "GET", "const") == [None, None, None]
    # A pattern ending in "->" names a string key that ends in "->".
    r.set("x:1->", "arrow")
    r.set("x:1", "plain")
    assert sort(r, "l", "GET", "x:*->", "LIMIT", 0, 1) == ["arrow"]
    # GET reads strings only, hash fields only from hashes.
    r.rpush("v_2", "list")
    r.set("h_3", "str")
    assert sort(r, "l", "GET", "v_*", "GET", "h_*->f") == [
        "one", None, None, "two", None, None]
    assert r.execute_command("SORT_RO", "l", "BY", "nosort", "GET",
                             "v_*") == [None, "one", None]


def test_store(r):
    r.rpush("l", 3, 1, 2)
    r.set("dst", "old", ex=100)
    assert sort(r, "l", "STORE", "dst") == 3
    assert r.type("dst") == "list"
    assert r.ttl("dst") == -1
    assert r.lrange("dst", 0, -1) == ["1", "2", "3"]
    # Nil GET values are stored as empty strings.
    r.set("v_2", "two")
    assert sort(r, "l", "GET", "v_*", "GET", "#", "STORE", "dst") == 6
    assert r.lrange("dst", 0, -1) == ["", "1", "two", "2", "", "3"]
    # The source may be the destination.
    assert sort(r, "l", "DESC", "STORE", "l") == 3
    assert r.lrange("l", 0, -1) == ["3", "2", "1"]
    # An empty result deletes the destination and creates nothing.
    r.delete("dst")
    r.hset("dst", "f", "v")
    assert sort(r, "nokey", "STORE", "dst") == 0
    assert r.exists("dst") == 0
    assert sort(r, "l", "LIMIT", 10, 1, "STORE", "dst") == 0
    assert r.exists("dst") == 0
    # The last STORE wins, also where COMMAND GETKEYS names another key.
    assert sort(r, "l", "STORE", "a", "STORE", "b") == 3
    assert r.exists("a") == 0 and r.llen("b") == 3
    assert sort(r, "l", "STORE", "get", "STORE", "other") == 3
    assert r.exists("get") == 0 and r.llen("other") == 3


def test_set_nosort_store_sorts_alpha(r):
    r.sadd("s", "b", "10", "a", "9")
    assert sort(r, "s", "BY", "nosort", "STORE", "d") == 4
    assert r.lrange("d", 0, -1) == ["10", "9", "a", "b"]
    assert sort(r, "s", "BY", "nosort", "DESC", "STORE", "d") == 4
    assert r.lrange("d", 0, -1) == ["b", "a", "9", "10"]


def test_errors(r):
    r.set("str", "x")
    r.hset("h", "f", "v")
    for k in ("str", "h"):
        with pytest.raises(redis.ResponseError, match="^" + WRONGTYPE):
            sort(r, k)
        with pytest.raises(redis.ResponseError, match="^" + WRONGTYPE):
            sort(r, k, "STORE", "dst")
    assert r.exists("dst") == 0
    r.rpush("l", 1)
    for args in (("FOO",), ("LIMIT", 1), ("BY",), ("GET",), ("STORE",),
                 ("ASC", "DESCX")):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            sort(r, "l", *args)
    # Options are checked before the key's type.
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        sort(r, "str", "FOO")
    for args in (("LIMIT", "x", 1), ("LIMIT", 0, "1.5"),
                 ("LIMIT", "99999999999999999999", 1)):
        with pytest.raises(redis.ResponseError, match="^" + NOTINT):
            sort(r, "l", *args)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("SORT_RO", "l", "STORE", "dst")
    with pytest.raises(redis.ResponseError, match="wrong number of arg"):
        r.execute_command("SORT")
    with pytest.raises(redis.ResponseError, match="wrong number of arg"):
        r.execute_command("SORT_RO")


def test_hostile_limits(r):
    r.rpush("l", *range(10))
    full = [str(i) for i in range(10)]
    cases = (((I64_MIN, I64_MAX), full), ((I64_MAX, I64_MAX), []),
             ((0, I64_MIN), full), ((I64_MIN, I64_MIN), full),
             ((-5, 3), ["0", "1", "2"]), ((8, I64_MAX), ["8", "9"]),
             ((9, 0), []), ((0, -1), full), ((0, -2), full))
    for (off, cnt), want in cases:
        for extra in ((), ("BY", "nosort"), ("ALPHA",)):
            got = sort(r, "l", "LIMIT", off, cnt, *extra)
            assert got == want, (off, cnt, extra)
        rev = [str(9 - int(e)) for e in want]
        assert sort(r, "l", "BY", "nosort", "DESC", "LIMIT", off,
                    cnt) == rev, (off, cnt)
    r.zadd("z", {"a": 1, "b": 2})
    assert sort(r, "z", "BY", "nosort", "LIMIT", I64_MIN, I64_MAX) == ["a",
                                                                      "b"]
    assert sort(r, "z", "BY", "nosort", "LIMIT", I64_MAX, 1) == []
    assert sort(r, "nokey", "LIMIT", I64_MAX, I64_MAX) == []
    # Many GETs of one pattern.
    gets = []
    for _ in range(500):
        gets += ["GET", "#"]
    assert sort(r, "l", "LIMIT", 0, 2, *gets) == ["0"] * 500 + ["1"] * 500


def test_binary_and_long_patterns(rb):
    rb.rpush(b"l", b"\x00\xff", b"\x00", b"a\x00b")
    # ALPHA compares C strings as Redis's strcoll does in the C locale
    # (equal ones keep their order), except with STORE (whole bytes).
    assert rb.execute_command("SORT", b"l", b"ALPHA") == [
        b"\x00\xff", b"\x00", b"a\x00b"]
    assert rb.execute_command("SORT", b"l", b"ALPHA", b"STORE", b"d") == 3
    assert rb.lrange(b"d", 0, -1) == [b"\x00", b"\x00\xff", b"a\x00b"]
    for e, w in ((b"\x00\xff", b"b\x00"), (b"\x00", b"b"),
                 (b"a\x00b", b"a")):
        rb.set(b"w" + e, w)
    assert rb.execute_command("SORT", b"l", b"ALPHA", b"BY", b"w*") == [
        b"a\x00b", b"\x00\xff", b"\x00"]
    assert rb.execute_command("SORT", b"l", b"ALPHA", b"BY", b"w*",
                              b"STORE", b"d") == 3
    assert rb.lrange(b"d", 0, -1) == [b"a\x00b", b"\x00", b"\x00\xff"]
    rb.set(b"k\x00\xff", b"v")
    assert rb.execute_command("SORT", b"l", b"ALPHA", b"GET", b"k*") == [
        b"v", None, None]
    long_pat = b"p" * 5000 + b"*"
    assert rb.execute_command("SORT", b"l", b"ALPHA", b"BY", long_pat,
                              b"GET", long_pat) == [None, None, None]


def test_resp3_and_raw(raw, r3):
    raw.call("RPUSH", "l", "2", "1")
    assert raw.call("SORT", "l", "GET", "x*") == [None, None]
    assert raw.last_raw == b"*2\r\n$-1\r\n$-1\r\n"
    assert raw.call("SORT", "nokey") == []
    assert raw.last_raw == b"*0\r\n"
    assert r3.call("SORT", "l", "GET", "#", "GET", "x*") == ["1", None, "2",
                                                             None]
    assert r3.last_raw == b"*4\r\n$1\r\n1\r\n_\r\n$1\r\n2\r\n_\r\n"
    assert r3.call("SORT", "l", "STORE", "d") == 2
    assert r3.last_raw == b":2\r\n"
    assert r3.call("SORT", "l", "FOO") == RespError("ERR syntax error")


def test_command_getkeys_and_info(raw):
    gk = ("COMMAND", "GETKEYS")
    assert raw.call(*gk, "SORT", "abc", "STORE", "def") == ["abc", "def"]
    assert raw.call(*gk, "SORT_RO", "abc") == ["abc"]
    assert raw.call(*gk, "SORT", "abc", "STORE", "invalid", "STORE",
                    "stillbad", "STORE", "def") == ["abc", "def"]
    assert raw.call(*gk, "SORT", "abc", "GET", "store", "BY", "store",
                    "LIMIT", "store", "store", "x") == ["abc"]
    assert raw.call(*gk, "SORT", "abc") == ["abc"]
    info = raw.call("COMMAND", "INFO", "SORT", "SORT_RO")
    assert info[0][:2] == ["sort", -2] and info[0][3:6] == [1, 1, 1]
    assert "movablekeys" in info[0][2] and "write" in info[0][2]
    assert info[1][:2] == ["sort_ro", -2] and info[1][3:6] == [1, 1, 1]
    assert "readonly" in info[1][2]
    assert "movablekeys" in info[1][2]


def test_multi(r):
    r.zadd("z", {"a": 1, "b": 5, "c": 2})
    p = r.pipeline(transaction=True)
    p.execute_command("SORT", "z", "BY", "nosort", "ASC")
    p.execute_command("SORT", "z", "BY", "nosort", "DESC", "STORE", "d")
    p.lrange("d", 0, -1)
    assert p.execute() == [["a", "c", "b"], 3, ["b", "c", "a"]]


def test_watch_sees_store(server):
    a = server.client()
    b = server.client()
    a.rpush("l", 1)
    with a.pipeline(transaction=True) as p:
        p.watch("d")
        b.execute_command("SORT", "l", "STORE", "d")
        p.multi()
        p.get("x")
        with pytest.raises(redis.WatchError):
            p.execute()
    a.close()
    b.close()


def test_store_wakes_blocked_pop(server):
    import threading
    a = server.client()
    b = server.client()
    a.rpush("l", 2, 1)
    got = []
    t = threading.Thread(target=lambda: got.append(b.blpop("d", 5)))
    t.start()
    import time
    time.sleep(0.2)
    assert a.execute_command("SORT", "l", "STORE", "d") == 2
    t.join(6)
    assert got == [("d", "1")]
    assert a.lrange("d", 0, -1) == ["2"]
    a.close()
    b.close()


@pytest.mark.partkv_only
def test_cluster_rules(cluster_factory):
    """In a cluster, Redis 7.0 refuses GET and BY patterns; BY nosort is
    fine, and STORE's destination must share the source's slot."""
    c = cluster_factory(nodes=2, base_port=0, replicas=1)
    c.wait_serving()
    rc = c.rc()
    rc.rpush("{t}l", 3, 1, 2)
    node = c.node_for_slot(rc.keyslot("{t}l"))
    with node.raw() as n:
        assert n.call("SORT", "{t}l") == ["1", "2", "3"]
        assert n.call("SORT", "{t}l", "BY", "{t}w_*") == RespError(
            "ERR BY option of SORT denied in Cluster mode.")
        assert n.call("SORT", "{t}l", "GET", "#") == RespError(
            "ERR GET option of SORT denied in Cluster mode.")
        assert n.call("SORT_RO", "{t}l", "GET", "{t}*") == RespError(
            "ERR GET option of SORT denied in Cluster mode.")
        assert n.call("SORT", "{t}l", "BY", "nosort", "DESC") == ["2", "1",
                                                                 "3"]
        assert n.call("SORT", "{t}l", "STORE", "{t}d") == 3
        assert n.call("LRANGE", "{t}d", "0", "-1") == ["1", "2", "3"]
        rep = n.call("SORT", "{t}l", "STORE", "other")
        assert isinstance(rep, RespError) and rep.message.startswith(
            "CROSSSLOT"), rep
        # Parser and key finder disagree here: still refused.
        rep = n.call("SORT", "{t}l", "STORE", "get", "STORE", "other")
        assert isinstance(rep, RespError) and rep.message.startswith(
            "CROSSSLOT"), rep
    assert rc.sort("{t}l", desc=True, store="{t}e") == 3
    assert rc.lrange("{t}e", 0, -1) == ["3", "2", "1"]
    rc.close()
