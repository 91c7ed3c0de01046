"""Set commands with the exact replies Redis 7.0 sends, in RESP2 and RESP3,
hostile input included, and a random-operation comparison against a Python
model.  Run the same file against redis-server with
PARTKV_TEST_TARGET=redis."""
import random

import pytest

from server import RespError, RespSet

WRONGTYPE = ("WRONGTYPE Operation against a key holding the wrong kind of "
             "value")
NOTINT = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
POSITIVE = "ERR value is out of range, must be positive"


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


def test_basics(raw):
    assert raw.call("SADD", "s", "a", "b", "a") == 2
    assert raw.call("SADD", "s", "b", "c") == 1
    assert raw.call("SCARD", "s") == 3
    assert raw.call("SCARD", "nope") == 0
    assert sorted(raw.call("SMEMBERS", "s")) == ["a", "b", "c"]
    assert raw.call("SMEMBERS", "nope") == []
    assert raw.call("SISMEMBER", "s", "a") == 1
    assert raw.call("SISMEMBER", "s", "z") == 0
    assert raw.call("SISMEMBER", "nope", "z") == 0
    assert raw.call("SMISMEMBER", "s", "a", "z", "c") == [1, 0, 1]
    assert raw.call("SMISMEMBER", "nope", "a", "b") == [0, 0]
    assert raw.call("SREM", "s", "a", "z") == 1
    assert raw.call("SREM", "nope", "a") == 0
    assert raw.call("SREM", "s", "b", "c") == 2
    assert raw.call("EXISTS", "s") == 0  # never exists empty
    assert raw.call("SADD", "e", "") == 1  # the empty member
    assert raw.call("SMEMBERS", "e") == [""]
    assert raw.call("TYPE", "e") == "set"


def test_binary_members(rb):
    members = {b"\x00", b"\x00\x00", b"\xff" * 40, b"a\x00b", b""}
    assert rb.sadd("b", *members) == len(members)
    assert rb.smembers("b") == members
    assert rb.sismember("b", b"\x00\x00")
    assert not rb.sismember("b", b"\x00\x01")


def test_resp3_types(r3):
    r3.call("SADD", "s{t}", "a", "b")
    r3.call("SADD", "t{t}", "b", "c")
    assert r3.call("SMEMBERS", "s{t}") == RespSet(["a", "b"])
    assert r3.last_raw.startswith(b"~2\r\n")
    for cmd in (["SINTER", "s{t}", "t{t}"], ["SUNION", "s{t}", "t{t}"],
                ["SDIFF", "s{t}", "t{t}"], ["SPOP", "nope", "3"],
                ["SMEMBERS", "nope"]):
        r3.call(*cmd)
        assert r3.last_raw.startswith(b"~"), cmd
    r3.call("SMISMEMBER", "s{t}", "a", "z")
    assert r3.last_raw == b"*2\r\n:1\r\n:0\r\n"
    r3.call("SRANDMEMBER", "s{t}", "5")
    assert r3.last_raw.startswith(b"*2\r\n")
    assert r3.call("SPOP", "nope") is None
    assert r3.last_raw == b"_\r\n"
    r3.call("SSCAN", "s{t}", "0")
    assert r3.last_raw.startswith(b"*2\r\n$1\r\n0\r\n*2\r\n")


def test_resp2_nulls(raw):
    raw.call("SPOP", "nope")
    assert raw.last_raw == b"$-1\r\n"
    raw.call("SRANDMEMBER", "nope")
    assert raw.last_raw == b"$-1\r\n"
    raw.call("SRANDMEMBER", "nope", "5")
    assert raw.last_raw == b"*0\r\n"
    raw.call("SPOP", "nope", "5")
    assert raw.last_raw == b"*0\r\n"


def test_wrongtype(raw):
    raw.call("SET", "str{t}", "x")
    raw.call("SADD", "s{t}", "a")
    for cmd in (["SADD", "str{t}", "a"], ["SREM", "str{t}", "a"],
                ["SCARD", "str{t}"], ["SMEMBERS", "str{t}"],
                ["SISMEMBER", "str{t}", "a"], ["SMISMEMBER", "str{t}", "a"],
                ["SPOP", "str{t}"], ["SPOP", "str{t}", "2"],
                ["SRANDMEMBER", "str{t}"], ["SRANDMEMBER", "str{t}", "-2"],
                ["SINTER", "s{t}", "str{t}"], ["SUNION", "s{t}", "str{t}"],
                ["SDIFF", "s{t}", "str{t}"], ["SINTER", "nope{t}", "str{t}"],
                ["SINTERCARD", "2", "s{t}", "str{t}"],
                ["SUNIONSTORE", "d{t}", "s{t}", "str{t}"],
                ["SSCAN", "str{t}", "0"],
                ["SMOVE", "str{t}", "s{t}", "a"],
                ["SMOVE", "s{t}", "str{t}", "a"]):
        assert err(raw.call(*cmd)) == WRONGTYPE, cmd
    assert raw.call("GET", "str{t}") == "x"
    assert raw.call("SMEMBERS", "s{t}") == ["a"]
    # A missing source never looks at the destination's type.
    assert raw.call("SMOVE", "nope{t}", "str{t}", "a") == 0
    # A STORE form overwrites a destination of any type.
    assert raw.call("SUNIONSTORE", "str{t}", "s{t}") == 1
    assert raw.call("TYPE", "str{t}") == "set"


def test_algebra(raw):
    raw.call("SADD", "a{t}", "1", "2", "3", "4")
    raw.call("SADD", "b{t}", "3", "4", "5")
    raw.call("SADD", "c{t}", "4", "5", "6")
    assert sorted(raw.call("SINTER", "a{t}", "b{t}")) == ["3", "4"]
    assert raw.call("SINTER", "a{t}", "b{t}", "c{t}") == ["4"]
    assert raw.call("SINTER", "a{t}", "nope{t}") == []
    assert sorted(raw.call("SUNION", "a{t}", "nope{t}", "c{t}")) == [
        "1", "2", "3", "4", "5", "6"]
    assert sorted(raw.call("SDIFF", "a{t}", "b{t}")) == ["1", "2"]
    assert raw.call("SDIFF", "a{t}", "a{t}") == []
    assert raw.call("SDIFF", "nope{t}", "a{t}") == []
    assert sorted(raw.call("SDIFF", "a{t}", "nope{t}")) == ["1", "2", "3", "4"]
    assert sorted(raw.call("SINTER", "a{t}", "a{t}")) == ["1", "2", "3", "4"]
    assert raw.call("SINTERCARD", "2", "a{t}", "b{t}") == 2
    assert raw.call("SINTERCARD", "2", "a{t}", "b{t}", "LIMIT", "1") == 1
    assert raw.call("SINTERCARD", "2", "a{t}", "b{t}", "LIMIT", "0") == 2
    assert raw.call("SINTERCARD", "1", "nope{t}") == 0
    assert raw.call("SINTERSTORE", "d{t}", "a{t}", "b{t}") == 2
    assert sorted(raw.call("SMEMBERS", "d{t}")) == ["3", "4"]
    assert raw.call("SDIFFSTORE", "d{t}", "d{t}", "c{t}") == 1  # dst = src
    assert raw.call("SMEMBERS", "d{t}") == ["3"]
    assert raw.call("SUNIONSTORE", "u{t}", "a{t}", "c{t}") == 6
    raw.call("EXPIRE", "u{t}", "100")
    assert raw.call("SINTERSTORE", "u{t}", "a{t}", "nope{t}") == 0
    assert raw.call("EXISTS", "u{t}") == 0  # an empty result deletes dst
    assert raw.call("SUNIONSTORE", "u{t}", "a{t}") == 4
    assert raw.call("TTL", "u{t}") == -1


def test_crossslot(raw):
    msg = "CROSSSLOT Keys in request don't hash to the same slot"
    raw.call("SADD", "a", "1")
    for cmd in (["SINTER", "a", "b"], ["SUNIONSTORE", "a", "b"],
                ["SMOVE", "a", "b", "1"], ["SINTERCARD", "2", "a", "b"]):
        rep = raw.call(*cmd)
        if isinstance(rep, RespError):  # Redis standalone has no slots
            assert err(rep) == msg


def test_sintercard_errors(raw):
    raw.call("SADD", "a{t}", "1")
    assert err(raw.call("SINTERCARD", "0", "a{t}")) == \
        "ERR numkeys should be greater than 0"
    assert err(raw.call("SINTERCARD", "x", "a{t}")) == \
        "ERR numkeys should be greater than 0"
    assert err(raw.call("SINTERCARD", "-9223372036854775808", "a{t}")) == \
        "ERR numkeys should be greater than 0"
    assert err(raw.call("SINTERCARD", "3", "a{t}", "b{t}")) == \
        "ERR Number of keys can't be greater than number of args"
    assert err(raw.call("SINTERCARD", "1", "a{t}", "LIMIT", "-1")) == \
        "ERR LIMIT can't be negative"
    assert err(raw.call("SINTERCARD", "1", "a{t}", "LIMIT", "x")) == \
        "ERR LIMIT can't be negative"
    assert err(raw.call("SINTERCARD", "1", "a{t}", "LIMIT")) == SYNTAX
    assert err(raw.call("SINTERCARD", "1", "a{t}", "FOO", "1")) == SYNTAX


def test_smove(raw):
    raw.call("SADD", "a{t}", "x", "y")
    raw.call("SADD", "b{t}", "y")
    assert raw.call("SMOVE", "a{t}", "b{t}", "x") == 1
    assert raw.call("SMOVE", "a{t}", "b{t}", "x") == 0
    assert raw.call("SMOVE", "a{t}", "b{t}", "y") == 1  # already in dst
    assert raw.call("EXISTS", "a{t}") == 0
    assert raw.call("SCARD", "b{t}") == 2
    assert raw.call("SMOVE", "b{t}", "b{t}", "y") == 1
    assert raw.call("SMOVE", "b{t}", "b{t}", "z") == 0
    assert raw.call("SMOVE", "b{t}", "new{t}", "y") == 1
    assert raw.call("SMEMBERS", "new{t}") == ["y"]


def test_spop(raw):
    members = [str(i) for i in range(20)]
    raw.call("SADD", "s", *members)
    one = raw.call("SPOP", "s")
    assert one in members
    got = raw.call("SPOP", "s", "5")
    assert len(got) == 5 and len(set(got)) == 5 and one not in got
    assert raw.call("SCARD", "s") == 14
    rest = raw.call("SMEMBERS", "s")
    assert sorted([one] + got + rest, key=int) == members
    assert raw.call("SPOP", "s", "0") == []
    assert sorted(raw.call("SPOP", "s", "100"), key=int) == sorted(rest,
                                                                   key=int)
    assert raw.call("EXISTS", "s") == 0
    raw.call("SADD", "s", "a")
    assert err(raw.call("SPOP", "s", "-1")) == POSITIVE
    assert err(raw.call("SPOP", "s", "x")) == POSITIVE
    assert err(raw.call("SPOP", "s", "-9223372036854775808")) == POSITIVE
    assert err(raw.call("SPOP", "s", "1", "2")) == SYNTAX
    assert raw.call("SMEMBERS", "s") == ["a"]


def test_srandmember(raw):
    members = [str(i) for i in range(10)]
    raw.call("SADD", "s", *members)
    assert raw.call("SRANDMEMBER", "s") in members
    got = raw.call("SRANDMEMBER", "s", "5")
    assert len(got) == 5 and len(set(got)) == 5 and set(got) <= set(members)
    assert sorted(raw.call("SRANDMEMBER", "s", "50"), key=int) == members
    rep = raw.call("SRANDMEMBER", "s", "-50")
    assert len(rep) == 50 and set(rep) <= set(members)
    assert raw.call("SRANDMEMBER", "s", "0") == []
    assert raw.call("SCARD", "s") == 10
    assert err(raw.call("SRANDMEMBER", "s", "-9223372036854775808")) == (
        "ERR value is out of range, value must between "
        "-9223372036854775807 and 9223372036854775807")
    assert err(raw.call("SRANDMEMBER", "s", "x")) == NOTINT
    assert err(raw.call("SRANDMEMBER", "s", "1", "2")) == SYNTAX
    assert raw.call("SRANDMEMBER", "s", "9223372036854775807") != []


@pytest.mark.partkv_only
def test_srandmember_huge_negative_refused(raw):
    raw.call("SADD", "s", "a")
    assert err(raw.call("SRANDMEMBER", "s", "-9223372036854775807")).startswith(
        "ERR value is out of range")
    assert raw.call("PING") == "PONG"


def test_random_is_uniform(raw):
    """Every member comes up about equally often (chi-square, 9 degrees of
    freedom: 27.9 is p = 0.001)."""
    raw.call("SADD", "s", *[str(i) for i in range(10)])
    counts = {str(i): 0 for i in range(10)}
    for m in raw.call("SRANDMEMBER", "s", "-5000"):
        counts[m] += 1
    chi = sum((c - 500) ** 2 / 500 for c in counts.values())
    assert chi < 27.9, counts
    counts = {str(i): 0 for i in range(10)}
    for _ in range(1000):
        for m in raw.call("SRANDMEMBER", "s", "3"):
            counts[m] += 1
    chi = sum((c - 300) ** 2 / 300 for c in counts.values())
    assert chi < 27.9, counts


def test_sscan(raw):
    members = ["m%03d" % i for i in range(300)] + ["", "x", "\x00"]
    raw.call("SADD", "s", *members)
    seen, cur = [], "0"
    while True:
        cur, got = raw.call("SSCAN", "s", cur, "COUNT", "7")
        seen += got
        if cur == "0":
            break
    assert sorted(seen) == sorted(members)  # each exactly once
    cur, got = raw.call("SSCAN", "s", "0", "MATCH", "m29*", "COUNT", "1000")
    assert cur == "0" and sorted(got) == ["m29%d" % i for i in range(10)]
    assert raw.call("SSCAN", "nope", "0") == ["0", []]
    assert raw.call("SSCAN", "nope", "0", "COUNT", "x") == ["0", []]
    assert err(raw.call("SSCAN", "s", "x")) == "ERR invalid cursor"
    assert err(raw.call("SSCAN", "s", "-1x")) == "ERR invalid cursor"
    assert err(raw.call("SSCAN", "s", "18446744073709551616")) == \
        "ERR invalid cursor"
    assert err(raw.call("SSCAN", "s", "0", "COUNT", "0")) == SYNTAX
    assert err(raw.call("SSCAN", "s", "0", "COUNT", "x")) == NOTINT
    assert err(raw.call("SSCAN", "s", "0", "COUNT")) == SYNTAX
    assert err(raw.call("SSCAN", "s", "0", "TYPE", "set")) == SYNTAX


def test_sscan_stable_under_writes(raw):
    """Members present for the whole scan come back, whatever is added or
    removed between calls."""
    keep = ["k%04d" % i for i in range(0, 400, 2)]
    raw.call("SADD", "s", *keep)
    seen, cur, n = set(), "0", 0
    while True:
        cur, got = raw.call("SSCAN", "s", cur, "COUNT", "5")
        seen.update(got)
        raw.call("SADD", "s", "k%04d" % (2 * n + 1), "a%d" % n, "z%d" % n)
        raw.call("SREM", "s", "a%d" % (n - 1))
        n += 1
        if cur == "0":
            break
    assert set(keep) <= seen


def test_arity_and_long_members(raw):
    for cmd in (["SADD", "s"], ["SREM", "s"], ["SCARD"], ["SMEMBERS"],
                ["SISMEMBER", "s"], ["SMISMEMBER", "s"], ["SMOVE", "a", "b"],
                ["SINTER"], ["SINTERSTORE", "d"], ["SINTERCARD", "1"],
                ["SSCAN", "s"], ["SPOP"], ["SRANDMEMBER"]):
        assert err(raw.call(*cmd)).startswith(
            "ERR wrong number of arguments"), cmd


def test_long_member(raw):
    """A member of any length (test_longkeys.py has more)."""
    raw.call("SADD", "s", "a")
    assert raw.call("SADD", "s", "b", "x" * 600) == 2
    assert sorted(raw.call("SMEMBERS", "s")) == ["a", "b", "x" * 600]
    assert raw.call("SISMEMBER", "s", "x" * 600) == 1
    assert raw.call("SISMEMBER", "s", "x" * 599) == 0


def test_model(raw):
    """Random operations on a few sets against Python sets."""
    rnd = random.Random(7)
    keys = ["k%d{t}" % i for i in range(4)]
    model = {k: set() for k in keys}
    pool = ["m%d" % i for i in range(30)]
    for _ in range(600):
        op = rnd.randrange(7)
        k, k2 = rnd.choice(keys), rnd.choice(keys)
        if op == 0:
            ms = rnd.sample(pool, rnd.randrange(1, 5))
            assert raw.call("SADD", k, *ms) == len(set(ms) - model[k])
            model[k] |= set(ms)
        elif op == 1:
            ms = rnd.sample(pool, rnd.randrange(1, 5))
            assert raw.call("SREM", k, *ms) == len(set(ms) & model[k])
            model[k] -= set(ms)
        elif op == 2:
            m = rnd.choice(pool)
            moved = raw.call("SMOVE", k, k2, m)
            assert moved == (m in model[k])
            if moved and k != k2:
                model[k].discard(m)
                model[k2].add(m)
        elif op == 3:
            got = raw.call("SPOP", k, str(rnd.randrange(0, 4)))
            assert set(got) <= model[k] and len(got) == len(set(got))
            model[k] -= set(got)
        elif op == 4:
            ks = rnd.sample(keys, rnd.randrange(1, 4))
            want = {"SINTER": set.intersection, "SUNION": set.union,
                    "SDIFF": lambda a, *b: a.difference(*b)}
            for cmd, f in want.items():
                assert set(raw.call(cmd, *ks)) == f(*[model[x] for x in ks])
        elif op == 5:
            ks = rnd.sample(keys, rnd.randrange(1, 3))
            cmd = rnd.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"])
            sets = [model[x] for x in ks]
            res = {"SINTERSTORE": lambda: set.intersection(*sets),
                   "SUNIONSTORE": lambda: set.union(*sets),
                   "SDIFFSTORE": lambda: sets[0].difference(*sets[1:])}[cmd]()
            assert raw.call(cmd, k, *ks) == len(res)
            model[k] = set(res)
        else:
            assert raw.call("SCARD", k) == len(model[k])
        for x in keys:
            assert raw.call("EXISTS", x) == (1 if model[x] else 0)
    for x in keys:
        assert set(raw.call("SMEMBERS", x)) == model[x]
