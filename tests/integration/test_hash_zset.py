"""Hashes and sorted sets beyond the basics: exact Redis 7.0 replies and
errors in RESP2 and RESP3, hostile counts, SCAN cursors under writes, set
algebra.  Run the same file against redis-server with
PARTKV_TEST_TARGET=redis."""
import pytest

from server import RespError

WRONGTYPE = ("WRONGTYPE Operation against a key holding the wrong kind of "
             "value")
NOTINT = "ERR value is not an integer or out of range"
NOTFLOAT = "ERR value is not a valid float"
SYNTAX = "ERR syntax error"
RANGE = ("ERR value is out of range, value must between "
         "-9223372036854775807 "
         "and 9223372036854775807")


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


# ------------------------------------------------------------------ hashes

def test_hsetnx_hkeys_hvals_hstrlen(raw):
    assert raw.call("HSETNX", "h", "a", "1") == 1
    assert raw.call("HSETNX", "h", "a", "2") == 0
    assert raw.call("HSET", "h", "b", "hello") == 1
    assert raw.call("HKEYS", "h") == ["a", "b"]
    assert raw.call("HVALS", "h") == ["1", "hello"]
    assert raw.call("HSTRLEN", "h", "b") == 5
    assert raw.call("HSTRLEN", "h", "zz") == 0
    assert raw.call("HSTRLEN", "nokey", "zz") == 0
    assert raw.call("HKEYS", "nokey") == []
    raw.call("SET", "s", "x")
    for c in (("HSETNX", "s", "a", "1"), ("HKEYS", "s"), ("HVALS", "s"),
              ("HSTRLEN", "s", "a"), ("HRANDFIELD", "s"),
              ("HSCAN", "s", "0"), ("HINCRBYFLOAT", "s", "a", "1")):
        assert err(raw.call(*c)) == WRONGTYPE


def test_hincrbyfloat(raw):
    assert raw.call("HINCRBYFLOAT", "h", "f", "10.5") == "10.5"
    assert raw.call("HINCRBYFLOAT", "h", "f", "0.1") == "10.6"
    assert raw.call("HINCRBYFLOAT", "h", "f", "-10.6") == "0"
    assert raw.call("HINCRBYFLOAT", "h", "g", "5.0e3") == "5000"
    raw.call("HSET", "h", "s", "abc", "i", "7")
    assert raw.call("HINCRBYFLOAT", "h", "i", "1.5") == "8.5"
    assert err(raw.call("HINCRBYFLOAT", "h", "s", "1")) == \
        "ERR hash value is not a float"
    assert err(raw.call("HINCRBYFLOAT", "h", "f", "x")) == NOTFLOAT
    assert err(raw.call("HINCRBYFLOAT", "h", "f", "inf")) == \
        "ERR value is NaN or Infinity"
    # long double, as Redis: 1.7e308 + 1.7e308 is still finite.
    raw.call("HSET", "h", "big", "1.7e308")
    assert raw.call("HINCRBYFLOAT", "h", "big", "1.7e308").startswith("34")
    assert raw.call("HGET", "h", "s") == "abc"


def test_hrandfield(raw, r3):
    assert raw.call("HRANDFIELD", "nokey") is None
    assert raw.call("HRANDFIELD", "nokey", "3") == []
    raw.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert raw.call("HRANDFIELD", "h") in ("a", "b", "c")
    got = raw.call("HRANDFIELD", "h", "10")
    assert sorted(got) == ["a", "b", "c"]
    got = raw.call("HRANDFIELD", "h", "2")
    assert len(set(got)) == 2
    got = raw.call("HRANDFIELD", "h", "-7")
    assert len(got) == 7 and set(got) <= {"a", "b", "c"}
    got = raw.call("HRANDFIELD", "h", "-4", "WITHVALUES")
    assert len(got) == 8
    for f, v in zip(got[::2], got[1::2]):
        assert {"a": "1", "b": "2", "c": "3"}[f] == v
    assert raw.call("HRANDFIELD", "h", "0") == []
    # RESP3: WITHVALUES is an array of pairs.
    got = r3.call("HRANDFIELD", "h", "2", "WITHVALUES")
    assert len(got) == 2 and all(len(p) == 2 for p in got)
    # Hostile counts: refused, nothing allocated.
    assert err(raw.call("HRANDFIELD", "h", "-9223372036854775808")) == RANGE
    assert err(raw.call("HRANDFIELD", "h", "-9223372036854770000",
                        "WITHVALUES")) == "ERR value is out of range"
    assert err(raw.call("HRANDFIELD", "h", "9223372036854770000",
                        "WITHVALUES")) == "ERR value is out of range"
    assert err(raw.call("HRANDFIELD", "h", "x")) == NOTINT
    assert err(raw.call("HRANDFIELD", "h", "1", "WITHSCORES")) == SYNTAX
    assert err(raw.call("HRANDFIELD", "h", "1", "WITHVALUES", "x")) == SYNTAX


def test_hscan_complete_under_writes(raw):
    fields = ["field:%05d" % i for i in range(500)]
    args = []
    for f in fields:
        args += [f, "v"]
    raw.call("HSET", "h", *args)
    seen, cursor, calls = [], "0", 0
    while True:
        cursor, items = raw.call("HSCAN", "h", cursor, "COUNT", "20")
        seen += items[::2]
        calls += 1
        # Writes between calls: new fields and deletions of others.
        raw.call("HSET", "h", "new:%d" % calls, "x")
        raw.call("HDEL", "h", "new:%d" % (calls - 1))
        if cursor == "0":
            break
    # Every field present throughout is returned (Redis: at least once).
    assert set(fields) <= set(seen)
    cursor, items = raw.call("HSCAN", "h", "0", "MATCH", "field:0000*",
                             "COUNT", "1000")
    assert sorted(items[::2]) == ["field:%05d" % i for i in range(10)]
    assert raw.call("HSCAN", "nokey", "0") == ["0", []]
    assert err(raw.call("HSCAN", "h", "x")) == "ERR invalid cursor"
    assert err(raw.call("HSCAN", "h", "0", "COUNT", "0")) == SYNTAX
    assert err(raw.call("HSCAN", "h", "0", "COUNT", "x")) == NOTINT
    assert err(raw.call("HSCAN", "h", "0", "MATCH")) == SYNTAX
    assert err(raw.call("HSCAN", "h", "0", "BOGUS", "1")) == SYNTAX


@pytest.mark.partkv_only
def test_hscan_exactly_once(raw):
    # partkv's cursor is a position in field order: a field present for
    # the whole scan comes back exactly once, even with writes between.
    raw.call("HSET", "h", *sum([["f%04d" % i, "v"] for i in range(300)], []))
    seen, cursor = [], "0"
    while True:
        cursor, items = raw.call("HSCAN", "h", cursor, "COUNT", "7")
        seen += items[::2]
        raw.call("HSET", "h", "a%s" % cursor, "x")
        if cursor == "0":
            break
    base = [f for f in seen if f.startswith("f")]
    assert sorted(base) == ["f%04d" % i for i in range(300)]


# -------------------------------------------------------------- sorted sets

def zset(raw, key="z"):
    raw.call("ZADD", key, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")


def test_zincrby_zcount_zlexcount(raw, r3):
    assert raw.call("ZINCRBY", "z", "1.5", "m") == "1.5"
    assert r3.call("ZINCRBY", "z", "1", "m") == 2.5
    assert err(raw.call("ZINCRBY", "z", "x", "m")) == NOTFLOAT
    raw.call("ZADD", "z", "inf", "i")
    assert err(raw.call("ZINCRBY", "z", "-inf", "i")) == \
        "ERR resulting score is not a number (NaN)"
    zset(raw, "c")
    assert raw.call("ZCOUNT", "c", "2", "4") == 3
    assert raw.call("ZCOUNT", "c", "(2", "+inf") == 3
    assert raw.call("ZCOUNT", "c", "-inf", "(1") == 0
    assert raw.call("ZCOUNT", "nokey", "0", "1") == 0
    assert err(raw.call("ZCOUNT", "c", "x", "1")) == \
        "ERR min or max is not a float"
    assert raw.call("ZLEXCOUNT", "c", "[b", "(d") == 2
    assert raw.call("ZLEXCOUNT", "c", "-", "+") == 5
    assert err(raw.call("ZLEXCOUNT", "c", "b", "+")) == \
        "ERR min or max not valid string range item"


def test_zrank_zmscore(raw, r3):
    zset(raw)
    assert raw.call("ZRANK", "z", "a") == 0
    assert raw.call("ZRANK", "z", "e") == 4
    assert raw.call("ZREVRANK", "z", "e") == 0
    assert raw.call("ZREVRANK", "z", "b") == 3
    assert raw.call("ZRANK", "z", "zz") is None
    assert raw.call("ZRANK", "nokey", "a") is None
    assert raw.call("ZMSCORE", "z", "a", "zz", "e") == ["1", None, "5"]
    assert raw.call("ZMSCORE", "nokey", "a") == [None]
    assert r3.call("ZMSCORE", "z", "b", "zz") == [2.0, None]


def test_zrevrange_forms(raw):
    zset(raw)
    assert raw.call("ZREVRANGEBYSCORE", "z", "4", "2") == ["d", "c", "b"]
    assert raw.call("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES",
                    "LIMIT", "1", "2") == ["d", "4", "c", "3"]
    assert raw.call("ZREVRANGEBYLEX", "z", "[d", "(a") == ["d", "c", "b"]
    assert raw.call("ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", "0",
                    "1") == ["e"]
    assert raw.call("ZRANGE", "z", "(4", "2", "BYSCORE", "REV") == ["c", "b"]
    assert raw.call("ZRANGE", "z", "[c", "-", "BYLEX", "REV", "LIMIT", "1",
                    "-1") == ["b", "a"]
    assert raw.call("ZRANGE", "z", "-9223372036854775808",
                    "9223372036854775807") == ["a", "b", "c", "d", "e"]
    assert err(raw.call("ZRANGE", "z", "0", "1", "LIMIT", "0", "1")) == (
        "ERR syntax error, LIMIT is only supported in combination with "
        "either BYSCORE or BYLEX")


def test_zremrange(raw):
    zset(raw)
    assert raw.call("ZREMRANGEBYRANK", "z", "1", "2") == 2
    assert raw.call("ZRANGE", "z", "0", "-1") == ["a", "d", "e"]
    assert raw.call("ZREMRANGEBYRANK", "z", "-9223372036854775808",
                    "-9223372036854775807") == 0
    assert raw.call("ZREMRANGEBYSCORE", "z", "(1", "4") == 1
    assert raw.call("ZREMRANGEBYLEX", "z", "-", "+") == 2
    assert raw.call("EXISTS", "z") == 0
    assert raw.call("ZREMRANGEBYRANK", "nokey", "0", "-1") == 0
    assert err(raw.call("ZREMRANGEBYSCORE", "z", "1", "NaN")) == \
        "ERR min or max is not a float"
    assert err(raw.call("ZREMRANGEBYRANK", "z", "a", "1")) == NOTINT


def test_zrangestore(raw):
    zset(raw, "{t}src")
    raw.call("SET", "{t}dst", "string")
    assert raw.call("ZRANGESTORE", "{t}dst", "{t}src", "1", "3") == 3
    assert raw.call("ZRANGE", "{t}dst", "0", "-1", "WITHSCORES") == [
        "b", "2", "c", "3", "d", "4"]
    assert raw.call("ZRANGESTORE", "{t}dst", "{t}src", "(2", "+inf",
                    "BYSCORE", "LIMIT", "0", "2") == 2
    assert raw.call("ZRANGE", "{t}dst", "0", "-1") == ["c", "d"]
    assert raw.call("ZRANGESTORE", "{t}dst", "{t}src", "5", "10") == 0
    assert raw.call("EXISTS", "{t}dst") == 0
    assert raw.call("ZRANGESTORE", "{t}src", "{t}src", "0", "0") == 1
    assert raw.call("ZRANGE", "{t}src", "0", "-1") == ["a"]
    assert err(raw.call("ZRANGESTORE", "{t}dst", "{t}src", "0", "1",
                        "WITHSCORES")) == SYNTAX


def test_zunion_zinter_zdiff(raw, r3):
    raw.call("ZADD", "{t}a", "1", "x", "2", "y", "3", "z")
    raw.call("ZADD", "{t}b", "10", "y", "20", "z", "30", "w")
    assert raw.call("ZUNION", "2", "{t}a", "{t}b", "WITHSCORES") == [
        "x", "1", "y", "12", "z", "23", "w", "30"]
    assert raw.call("ZUNION", "2", "{t}a", "{t}b", "WEIGHTS", "2", "1",
                    "AGGREGATE", "MAX", "WITHSCORES") == [
        "x", "2", "y", "10", "z", "20", "w", "30"]
    assert raw.call("ZINTER", "2", "{t}a", "{t}b", "AGGREGATE", "MIN",
                    "WITHSCORES") == ["y", "2", "z", "3"]
    assert raw.call("ZDIFF", "2", "{t}a", "{t}b", "WITHSCORES") == ["x", "1"]
    assert raw.call("ZDIFF", "1", "{t}nokey") == []
    assert raw.call("ZINTERCARD", "2", "{t}a", "{t}b") == 2
    assert raw.call("ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "1") == 1
    assert raw.call("ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b") == 4
    assert raw.call("ZRANGE", "{t}d", "0", "-1") == ["x", "y", "z", "w"]
    assert raw.call("ZINTERSTORE", "{t}d", "2", "{t}a", "{t}nokey") == 0
    assert raw.call("EXISTS", "{t}d") == 0
    assert raw.call("ZDIFFSTORE", "{t}a", "2", "{t}a", "{t}b") == 1
    assert raw.call("ZRANGE", "{t}a", "0", "-1") == ["x"]
    # inf * 0 is 0, inf + -inf is 0.
    raw.call("ZADD", "{t}i", "inf", "m")
    raw.call("ZADD", "{t}j", "-inf", "m")
    assert raw.call("ZUNION", "2", "{t}i", "{t}j", "WITHSCORES") == [
        "m", "0"]
    assert raw.call("ZUNION", "1", "{t}i", "WEIGHTS", "0",
                    "WITHSCORES") == ["m", "0"]
    got = r3.call("ZUNION", "2", "{t}a", "{t}b", "WITHSCORES")
    assert got[0] == ["x", 1.0]
    # Errors, in Redis's order.
    assert err(raw.call("ZUNION", "0", "{t}a")) == \
        "ERR at least 1 input key is needed for 'zunion' command"
    assert err(raw.call("ZINTERSTORE", "{t}d", "0", "{t}a")) == \
        "ERR at least 1 input key is needed for 'zinterstore' command"
    assert err(raw.call("ZUNION", "x", "{t}a")) == NOTINT
    assert err(raw.call("ZUNION", "3", "{t}a", "{t}b")) == SYNTAX
    assert err(raw.call("ZUNION", "-9223372036854775808", "{t}a")) == \
        "ERR at least 1 input key is needed for 'zunion' command"
    assert err(raw.call("ZUNION", "9223372036854775807", "{t}a")) == SYNTAX
    assert err(raw.call("ZUNION", "1", "{t}a", "WEIGHTS", "x")) == \
        "ERR weight value is not a float"
    assert err(raw.call("ZUNION", "1", "{t}a", "AGGREGATE", "avg")) == SYNTAX
    assert err(raw.call("ZUNIONSTORE", "{t}d", "1", "{t}a",
                        "WITHSCORES")) == SYNTAX
    assert err(raw.call("ZDIFF", "1", "{t}a", "WEIGHTS", "1")) == SYNTAX
    assert err(raw.call("ZINTERCARD", "1", "{t}a", "LIMIT", "-1")) == \
        "ERR LIMIT can't be negative"
    raw.call("SET", "{t}s", "x")
    assert err(raw.call("ZUNION", "2", "{t}a", "{t}s")) == WRONGTYPE
    assert err(raw.call("ZUNION", "2", "{t}a", "{t}s", "BOGUS")) == WRONGTYPE


def test_zpop(raw, r3):
    zset(raw)
    assert raw.call("ZPOPMIN", "z") == ["a", "1"]
    assert raw.call("ZPOPMAX", "z", "2") == ["e", "5", "d", "4"]
    assert r3.call("ZPOPMIN", "z", "1") == [["b", 2.0]]
    assert r3.call("ZPOPMIN", "z") == ["c", 3.0]
    assert raw.call("EXISTS", "z") == 0
    assert raw.call("ZPOPMIN", "z") == []
    assert raw.call("ZPOPMIN", "z", "0") == []
    zset(raw)
    assert raw.call("ZPOPMIN", "z", "9223372036854775807") == [
        "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"]
    assert err(raw.call("ZPOPMIN", "z", "-1")) == \
        "ERR value is out of range, must be positive"
    assert err(raw.call("ZPOPMIN", "z", "1", "2")) == SYNTAX


def test_zmpop(raw, r3):
    zset(raw, "{t}b")
    assert raw.call("ZMPOP", "2", "{t}a", "{t}b", "MIN") == [
        "{t}b", [["a", "1"]]]
    assert raw.call("ZMPOP", "2", "{t}a", "{t}b", "MAX", "COUNT", "2") == [
        "{t}b", [["e", "5"], ["d", "4"]]]
    assert r3.call("ZMPOP", "1", "{t}b", "MIN", "COUNT", "10") == [
        "{t}b", [["b", 2.0], ["c", 3.0]]]
    assert raw.call("ZMPOP", "1", "{t}b", "MIN") is None
    assert r3.call("ZMPOP", "1", "{t}b", "MIN") is None
    for args, msg in (
            (("0", "{t}b", "MIN"), "ERR numkeys should be greater than 0"),
            (("-9223372036854775808", "{t}b", "MIN"),
             "ERR numkeys should be greater than 0"),
            (("9223372036854775807", "{t}b", "MIN"), SYNTAX),
            (("1", "{t}b", "BAD"), SYNTAX),
            (("1", "{t}b", "MIN", "COUNT"), SYNTAX),
            (("1", "{t}b", "MIN", "COUNT", "1", "COUNT", "2"), SYNTAX),
            (("1", "{t}b", "MIN", "COUNT", "0"),
             "ERR count should be greater than 0"),
            (("1", "{t}b", "MIN", "COUNT", "-9223372036854775808"),
             "ERR count should be greater than 0")):
        assert err(raw.call("ZMPOP", *args)) == msg
    raw.call("SET", "{t}s", "x")
    assert err(raw.call("ZMPOP", "2", "{t}a", "{t}s", "MIN")) == WRONGTYPE


def test_zrandmember(raw, r3):
    assert raw.call("ZRANDMEMBER", "nokey") is None
    assert raw.call("ZRANDMEMBER", "nokey", "2") == []
    zset(raw)
    assert raw.call("ZRANDMEMBER", "z") in list("abcde")
    assert sorted(raw.call("ZRANDMEMBER", "z", "100")) == list("abcde")
    got = raw.call("ZRANDMEMBER", "z", "-20", "WITHSCORES")
    assert len(got) == 40
    got = r3.call("ZRANDMEMBER", "z", "2", "WITHSCORES")
    assert len(got) == 2 and isinstance(got[0][1], float)
    assert err(raw.call("ZRANDMEMBER", "z", "-9223372036854775808")) == RANGE
    assert err(raw.call("ZRANDMEMBER", "z", "-9223372036854770000",
                        "WITHSCORES")) == "ERR value is out of range"
    assert err(raw.call("ZRANDMEMBER", "z", "1", "WITHVALUES")) == SYNTAX


def test_zscan(raw):
    raw.call("ZADD", "z", *sum([[str(i), "m%03d" % i] for i in range(200)],
                               []))
    seen, cursor = {}, "0"
    while True:
        cursor, items = raw.call("ZSCAN", "z", cursor, "COUNT", "15")
        for m, s in zip(items[::2], items[1::2]):
            seen[m] = s
        if cursor == "0":
            break
    assert seen == {"m%03d" % i: str(i) for i in range(200)}
    cursor, items = raw.call("ZSCAN", "z", "0", "MATCH", "m19*", "COUNT",
                             "1000")
    assert sorted(items[::2]) == ["m%03d" % i for i in range(190, 200)]
    raw.call("SET", "s", "x")
    assert err(raw.call("ZSCAN", "s", "0")) == WRONGTYPE


def test_command_getkeys(raw):
    assert raw.call("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "2", "a",
                    "b", "WEIGHTS", "1", "2") == ["d", "a", "b"]
    assert raw.call("COMMAND", "GETKEYS", "ZINTER", "2", "a", "b") == [
        "a", "b"]
    assert raw.call("COMMAND", "GETKEYS", "ZMPOP", "1", "a", "MIN") == ["a"]
    assert raw.call("COMMAND", "GETKEYS", "ZRANGESTORE", "d", "s", "0",
                    "1") == ["d", "s"]


def test_score_with_nul_inside_is_not_a_float(raw):
    """strtod stops at a NUL byte; the argument as a whole is no float."""
    r = raw.call("ZADD", "znul", b"1\x002", "m")
    assert isinstance(r, Exception) and "not a valid float" in str(r)
    assert raw.call("EXISTS", "znul") == 0
