"""PK.RANGE start end [LIMIT n] [WITHVALUES] [REV]: ordered key-range reads
within one partition -- the compound key of the seeds ({sensor:17}:day ...
under one hash tag is one partition's sequential read).

Standalone: the sensor example, paging with the continuation through 5000
keys, WITHVALUES, REV, binary and long keys, errors.  Cluster (3 nodes,
redirect mode and forward mode): a tag-bounded range on any node, MOVED
from the others, CROSSSLOT for bounds in two slots, refusal of bounds
without a key.  The one expectation about Redis (the bad-bound error text,
ZRANGEBYLEX's) also runs against redis-server."""
import os
import random
import time

import pytest
import redis

import cluster as pkcluster
import server as pkserver
from server import RespError

BADRANGE = "ERR min or max not valid string range item"
BADLIMIT = "ERR LIMIT must be a positive integer"
NOKEY = ("ERR PK.RANGE needs a key bound in cluster mode: put the keys "
         "under one hash tag")
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"

only = pytest.mark.partkv_only


def pkrange(r, *args):
    return r.execute_command("PK.RANGE", *args)


def read_all(r, start, end, *opts, rev=False):
    """Every page of a range joined; checks each continuation."""
    out, pages = [], 0
    while True:
        args = [start, end, *opts] + (["REV"] if rev else [])
        cont, items = pkrange(r, *args)
        pages += 1
        out += items
        if cont in ("", b""):
            return out, pages
        last = items[-1]
        assert cont == (b"(" + last if isinstance(last, bytes)
                        else "(" + last)
        # forward or REV, the continuation is the next start
        start = cont


def test_bad_bound_text_is_zrangebylex(r):
    """The error text partkv uses is Redis's own (runs against Redis)."""
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("ZRANGEBYLEX", "z", "a", "[b")
    assert str(e.value) == BADRANGE[len("ERR "):] or \
        str(e.value) == BADRANGE


# ---------------------------------------------------------------- standalone

def sensor_key(s, day, hour):
    return "{sensor:%d}:2026-11-%02dT%02d:00" % (s, day, hour)


@only
def test_compound_key_one_day(r):
    keys = [sensor_key(s, d, h) for s in (1, 2, 17, 170) for d in
            range(1, 6) for h in range(24)]
    random.Random(1).shuffle(keys)
    p = r.pipeline(transaction=False)
    for k in keys:
        p.set(k, "t-" + k)
    p.execute()
    cont, items = pkrange(r, "[{sensor:17}:2026-11-03", "({sensor:17}:2026-11-04")
    assert cont == ""
    assert items == [sensor_key(17, 3, h) for h in range(24)]
    # the whole sensor, in order; another sensor's keys never mix in
    cont, items = pkrange(r, "[{sensor:17}:", "({sensor:17};")
    assert cont == ""
    assert items == sorted(k for k in keys if k.startswith("{sensor:17}:"))
    # the last 5 readings of one sensor: one REV read
    cont, items = pkrange(r, "({sensor:17};", "[{sensor:17}:", "LIMIT", 5,
                          "REV")
    assert items == [sensor_key(17, 5, h) for h in (23, 22, 21, 20, 19)]
    assert cont == "(" + sensor_key(17, 5, 19)


@only
def test_paging_5000(r):
    keys = ["k%05d" % i for i in range(5000)]
    others = ["j", "k", "l", "k99999x"]
    shuffled = keys + others
    random.Random(2).shuffle(shuffled)
    p = r.pipeline(transaction=False)
    for k in shuffled:
        p.set(k, k)
    p.execute()
    got, pages = read_all(r, "(k", "[k5", "LIMIT", 100)
    assert got == keys
    assert pages == 50  # the look-ahead ends the 50th page with ""
    got, pages = read_all(r, "[k5", "(k", "LIMIT", 100, rev=True)
    assert got == keys[::-1]
    # the default page is 1000 keys
    cont, items = pkrange(r, "-", "+")
    assert len(items) == 1000 and cont == "(" + items[-1]
    assert items == sorted(shuffled)[:1000]


@only
def test_withvalues_types_expiry(r):
    r.set("a1", "one")
    r.hset("a2", "f", "v")
    r.zadd("a3", {"m": 1})
    r.set("a4", "")
    r.set("a5", "gone", px=30)
    r.set("b", "out")
    time.sleep(0.1)
    cont, items = pkrange(r, "[a", "(b", "WITHVALUES")
    assert cont == ""
    assert items == ["a1", "one", "a2", None, "a3", None, "a4", ""]
    cont, items = pkrange(r, "[a", "(b", "WITHVALUES", "LIMIT", 1)
    assert (cont, items) == ("(a1", ["a1", "one"])
    cont, items = pkrange(r, "[a", "(b", "LIMIT", 3, "WITHVALUES", "REV")
    assert items == []  # REV: start is the high bound
    cont, items = pkrange(r, "(b", "[a", "LIMIT", 3, "WITHVALUES", "REV")
    assert items == ["a4", "", "a3", None, "a2", None]
    assert cont == "(a2"


@only
def test_rev_and_bounds(r):
    for k in ("a", "b", "c", "d"):
        r.set(k, k)
    assert pkrange(r, "[c", "[a", "REV") == ["", ["c", "b", "a"]]
    assert pkrange(r, "(c", "(a", "rev") == ["", ["b"]]
    assert pkrange(r, "+", "-", "REV", "LIMIT", 2) == ["(c", ["d", "c"]]
    assert pkrange(r, "[a", "[c") == ["", ["a", "b", "c"]]
    assert pkrange(r, "(a", "(c") == ["", ["b"]]
    assert pkrange(r, "[c", "[a") == ["", []]
    assert pkrange(r, "(b", "(b") == ["", []]
    assert pkrange(r, "[b", "[b") == ["", ["b"]]
    assert pkrange(r, "+", "+") == ["", []]
    assert pkrange(r, "-", "(a") == ["", []]


@only
def test_binary_and_long_keys(rb):
    head = b"L" * 120 + b"\x00" * 10 + b"h" * 100
    keys = {b"", b"\x00", b"\x00\xff", b"\xff", b"x\x00y", b"x\x00"}
    rnd = random.Random(3)
    for i in range(60):
        # long keys (over 230 bytes) sharing their head, and shorter
        # keys that extend the same first bytes: their store order is not
        # byte order, PK.RANGE's is
        cut = rnd.randrange(100, len(head))
        keys.add(head[:cut] + bytes(rnd.choice(b"\x00ab\xff")
                                    for _ in range(rnd.randrange(0, 120))))
    for k in keys:
        rb.set(k, b"v" + k[:5])
    want = sorted(keys)
    cont, items = pkrange(rb, b"-", b"+", b"LIMIT", 1000)
    assert cont == b"" and items == want
    for limit in (1, 3, 7):
        got, _ = read_all(rb, b"-", b"+", b"LIMIT", limit)
        assert got == want
        got, _ = read_all(rb, b"+", b"-", b"LIMIT", limit, rev=True)
        assert got == want[::-1]
    lo, hi = want[20], want[45]
    got, _ = read_all(rb, b"(" + lo, b"[" + hi, b"LIMIT", 4)
    assert got == want[21:46]
    cont, items = pkrange(rb, b"[\x00", b"[\x00\xff", b"WITHVALUES")
    assert items == [b"\x00", b"v\x00", b"\x00\xff", b"v\x00\xff"]


@only
def test_errors(raw):
    def err(*args):
        rep = raw.call("PK.RANGE", *args)
        assert isinstance(rep, RespError), rep
        return rep.message
    for bad in ("a", "", "{x", "++", "-a"):
        assert err(bad, "+") == BADRANGE
        assert err("-", bad) == BADRANGE
    for n in ("0", "-1", "x", "1.5", "-9223372036854775808"):
        assert err("-", "+", "LIMIT", n) == BADLIMIT
    assert err("-", "+", "LIMIT") == "ERR syntax error"
    assert err("-", "+", "BOGUS") == "ERR syntax error"
    assert err("-", "+", "WITHSCORES") == "ERR syntax error"
    assert err() == "ERR wrong number of arguments for 'pk.range' command"
    assert err("-") == "ERR wrong number of arguments for 'pk.range' command"
    # no-key bounds are fine outside a cluster
    assert raw.call("PK.RANGE", "-", "+") == ["", []]
    # COMMAND GETKEYS gives the keys without "[" / "("
    assert raw.call("COMMAND", "GETKEYS", "PK.RANGE", "[{t}a", "(b",
                    "LIMIT", "5") == ["{t}a", "b"]
    info = raw.call("COMMAND", "INFO", "PK.RANGE")[0]
    assert info[0] == "pk.range" and info[1] == -3
    assert "readonly" in info[2]


# ---------------------------------------------------------------- clusters

def cluster_fixture(extra=()):
    """A module's cluster: yielded, then stopped cleanly (asserted)."""
    assert os.access(pkserver.partkv_path(), os.X_OK), "build partkv first"
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, base_port=0, replicas=1,
        secret="r-%032x" % random.getrandbits(128), extra=list(extra)))


@pytest.fixture(scope="module")
def cl():
    yield from cluster_fixture()


@pytest.fixture(scope="module")
def fcl():
    yield from cluster_fixture(["--route", "forward"])


def fill_sensors(rc, tag):
    mine = ["{%s}:2026-11-%02dT%02d" % (tag, d, h) for d in (1, 2, 3)
            for h in range(0, 24, 3)]
    others = ["{%s-x}:2026-11-01" % tag, "%s:2026-11-01" % tag,
              "{%s}" % tag[:-1]] + ["o%s-%d" % (tag, i) for i in range(200)]
    for k in mine + others:
        rc.set(k, k)
    return sorted(mine)


def call_following_moved(cl, node, *args):
    """PK.RANGE on node; a MOVED is followed once, to the owner."""
    with node.raw() as c:
        rep = c.call(*args)
    if isinstance(rep, RespError) and rep.message.startswith("MOVED "):
        addr = rep.message.split()[2]
        owner = next(n for n in cl.nodes if n.addr == addr)
        assert owner is not node
        with owner.raw() as c:
            rep = c.call(*args)
        return rep, True
    return rep, False


@only
def test_cluster_tag_range_any_node(cl):
    rc = cl.rc()
    try:
        mine = fill_sensors(rc, "sensor:17")
    finally:
        rc.close()
    moved = 0
    for node in cl.nodes:
        rep, m = call_following_moved(
            cl, node, "PK.RANGE", "[{sensor:17}:2026-11-02",
            "({sensor:17}:2026-11-03")
        moved += m
        assert rep == ["", [k for k in mine if "-11-02T" in k]], (node, rep)
        # one key bound: the range is cut to that key's slot
        rep, _ = call_following_moved(cl, node, "PK.RANGE",
                                      "[{sensor:17}:", "+")
        assert rep == ["", mine], (node, rep)
        rep, _ = call_following_moved(cl, node, "PK.RANGE",
                                      "({sensor:17}:2026-11-01T06", "-",
                                      "REV", "LIMIT", 100)
        assert rep == ["", mine[:2][::-1]], (node, rep)
        # paging through the slot
        rep, _ = call_following_moved(cl, node, "PK.RANGE", "-",
                                      "[{sensor:17}:2026-11-09",
                                      "LIMIT", 5)
        assert rep == ["(" + mine[4], mine[:5]], (node, rep)
    assert moved == 2  # two of the three nodes do not own the slot


@only
def test_cluster_crossslot_and_nokey(cl):
    for node in cl.nodes:
        with node.raw() as c:
            rep = c.call("PK.RANGE", "[{a}1", "[{b}2")
            assert rep == RespError(CROSSSLOT), rep
            # "[" / "(" are not part of the key: "[a" and "(a" hash as
            # "a" (without hash tag, "[a" itself would be another slot)
            rep = c.call("PK.RANGE", "[foo", "(foo", "REV")
            assert not (isinstance(rep, RespError) and
                        rep.message.startswith("CROSSSLOT")), rep
            for args in (("-", "+"), ("+", "-", "REV"), ("-", "-")):
                rep = c.call("PK.RANGE", *args)
                assert rep == RespError(NOKEY), (args, rep)
            # a bad bound: the owner of the other bound's slot says so
            rep = c.call("PK.RANGE", "x", "[{a}1")
            assert rep == RespError(BADRANGE) or \
                rep.message.startswith("MOVED "), rep


@only
def test_forward_mode_tag_range(fcl):
    rc = fcl.nodes[0].client()
    try:
        # forward mode: a plain client writes through any node
        mine = fill_sensors(rc, "sensor:42")
    finally:
        rc.close()
    for node in fcl.nodes:
        r = node.client()
        try:
            cont, items = pkrange(r, "[{sensor:42}:2026-11-03",
                                  "[{sensor:42}:2026-11-03T99")
            assert cont == ""
            assert items == [k for k in mine if "-11-03T" in k]
            got, _ = read_all(r, "[{sensor:42}:", "+", "LIMIT", 4)
            assert got == mine
            with pytest.raises(redis.ResponseError) as e:
                pkrange(r, "[{a}1", "[{b}2")
            assert str(e.value).startswith("CROSSSLOT")
            with pytest.raises(redis.ResponseError) as e:
                pkrange(r, "-", "+")
            assert "needs a key bound" in str(e.value)
        finally:
            r.close()


@only
def test_resp3(r3):
    r3.call("SET", "a", "1")
    r3.call("HSET", "b", "f", "v")
    assert r3.call("PK.RANGE", "-", "+", "WITHVALUES") == ["", ["a", "1",
                                                               "b", None]]
    assert r3.last_raw == b"*2\r\n$0\r\n\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n" \
        b"$1\r\nb\r\n_\r\n"


@only
def test_in_multi(r):
    r.mset({"m1": "a", "m2": "b", "n": "c"})
    p = r.pipeline(transaction=True)
    p.set("m3", "x")
    p.execute_command("PK.RANGE", "[m", "(n", "WITHVALUES")
    assert p.execute() == [True, ["", ["m1", "a", "m2", "b", "m3", "x"]]]
