"""Salting of write-hot sets and HyperLogLogs (pk_salted.h), on 3 nodes
with 3 copies in forward mode: SADD and PFADD write one random part;
SREM removes from every part; SISMEMBER, SMISMEMBER, SMEMBERS and SCARD
answer on the union and PFCOUNT merges the parts' registers exactly;
folding back merges a set part by union and an HLL part by register max;
concurrent SADDs through salting and folding lose no member; keys of
other types are refused."""
import random
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


def parts_of(c, key):
    """The stored parts of key (sub-keys) on the nodes."""
    return [k for k in raw_keys(c) if k.endswith(b"\x00salt\x00" +
                                                 key.encode())]


def wait_parts(c, key, n):
    """Waits until every node's map salts key into n parts (0: none)."""
    ok, waited = pkcluster.wait_until(
        lambda: all(salted_parts(c, key, i) == n
                    for i in range(len(c.nodes))), 10, interval=0.1)
    assert ok, "%s not in %d parts everywhere after %.1fs" % (key, n, waited)


def check_set(rs, key, model):
    """Every node answers the union as the model set says."""
    probe = sorted(model)[:5] + ["absent-1", "absent-2"]
    for r in rs:
        assert r.smembers(key) == model
        assert r.scard(key) == len(model)
        assert r.smismember(key, probe) == [int(m in model) for m in probe]
        for m in probe[:3]:
            assert r.sismember(key, m) == (m in model)
        assert r.exists(key) == (1 if model else 0)
        assert r.type(key) == ("set" if model else "none")


def test_set_through_salt_and_fold(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    model = {"m%d" % i for i in range(20)}
    rs[0].sadd("tags", *model)
    assert rs[1].execute_command("PK.SALT", "tags", 4) == "OK"
    wait_parts(c, "tags", 4)
    check_set(rs, "tags", model)
    rng = random.Random(7)
    for i in range(600):
        r = rs[i % 3]
        if rng.random() < 0.7:
            ms = ["m%d" % rng.randrange(200)
                  for _ in range(rng.choice([1, 1, 3]))]
            # The reply counts what was new to the part written: at most
            # what is new to the union... and at least that.
            new = len(set(ms) - model)
            got = retry(lambda: r.sadd("tags", *ms))
            assert new <= got <= len(set(ms)), (ms, got)
            model |= set(ms)
        else:
            ms = ["m%d" % rng.randrange(200)
                  for _ in range(rng.choice([1, 1, 4]))]
            want = len(set(ms) & model)
            assert retry(lambda: r.srem("tags", *ms)) == want, ms
            model -= set(ms)
        if i % 150 == 0:
            check_set(rs, "tags", model)
    check_set(rs, "tags", model)
    assert len(parts_of(c, "tags")) >= 2  # the writes spread
    # Clients see the key, never its parts.
    listed = set().union(*(set(nd.client().keys("*")) for nd in c.nodes))
    assert "tags" in listed and not [k for k in listed if "salt" in k]

    assert rs[2].execute_command("PK.UNSALT", "tags") == "OK"
    wait_parts(c, "tags", 0)
    check_set(rs, "tags", model)
    assert not [k for k in raw_keys(c) if b"\x00salt" in k]
    assert rs[0].sadd("tags", "after-fold") == 1
    model.add("after-fold")
    check_set(rs, "tags", model)


def test_set_delete_and_unsplittable_commands(sc3):
    c = sc3
    r = c.nodes[0].client()
    r.sadd("dset", "a", "b")
    assert r.execute_command("PK.SALT", "dset", 2) == "OK"
    for i in range(40):
        retry(lambda: r.sadd("dset", "x%d" % i))
    assert r.scard("dset") == 42
    assert retry(lambda: r.delete("dset")) == 1
    assert r.smembers("dset") == set() and r.exists("dset") == 0
    assert r.type("dset") == "none"
    for i in range(10):
        retry(lambda: r.sadd("dset", "y%d" % i))
    # SPOP cannot be split: it waits for the fold, then runs as Redis does.
    assert r.spop("dset") in {"y%d" % i for i in range(10)}
    wait_parts(c, "dset", 0)
    assert r.scard("dset") == 9
    # INCR of a salted set: folded first, then Redis' WRONGTYPE.
    assert r.execute_command("PK.SALT", "dset", 2) == "OK"
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.incr("dset")
    assert r.scard("dset") == 9


def test_hll_salted_equals_unsalted_twin(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].pfadd("visitors", "seed")
    rs[0].pfadd("{visitors}twin", "seed")
    assert rs[1].execute_command("PK.SALT", "visitors", 4) == "OK"
    assert rs[0].type("visitors") == "string"
    rng = random.Random(11)
    for i in range(500):
        els = ["u%d" % rng.randrange(30000) for _ in range(rng.choice(
            [1, 5, 40]))]
        got = retry(lambda: rs[i % 3].pfadd("visitors", *els))
        assert got in (0, 1)
        rs[(i + 1) % 3].pfadd("{visitors}twin", *els)
        if i % 100 == 0:
            want = rs[0].pfcount("{visitors}twin")
            assert [r.pfcount("visitors") for r in rs] == [want] * 3
    want = rs[0].pfcount("{visitors}twin")
    assert want > 5000
    assert [r.pfcount("visitors") for r in rs] == [want] * 3
    assert len(parts_of(c, "visitors")) >= 2
    assert rs[2].execute_command("PK.UNSALT", "visitors") == "OK"
    assert [r.pfcount("visitors") for r in rs] == [want] * 3
    # The folded value is one HLL again: merged with the twin it adds
    # nothing.
    assert rs[0].pfcount("visitors", "{visitors}twin") == want
    assert not [k for k in raw_keys(c) if b"\x00salt" in k]


def test_refusals(sc3):
    r = sc3.nodes[0].client()
    r.rpush("alist", "a", "b")
    with pytest.raises(redis.ResponseError,
                       match="only strings.*sets and HyperLogLogs"):
        r.execute_command("PK.SALT", "alist", 2)
    assert salted_parts(sc3, "alist") == 0


def test_no_member_lost_through_salting_and_folding(sc3):
    """Three clients, one per node, SADD distinct members to one set
    while it is salted and folded back five times, and SREM some of
    their own, each retried after TRYAGAIN until it goes; the set is
    exactly what they added and did not remove."""
    c = sc3
    stop = threading.Event()
    added, removed, failed = [set(), set(), set()], [set(), set(), set()], []
    tries = [0]

    def again(fn):
        while True:
            try:
                return fn()
            except redis.ResponseError as e:
                if "TRYAGAIN" not in str(e):
                    raise
                tries[0] += 1
                time.sleep(0.01)

    def writer(i):
        r = c.nodes[i].client()
        n = 0
        try:
            while not stop.is_set():
                m = "w%d-%d" % (i, n)
                again(lambda: r.sadd("race", m))
                added[i].add(m)
                n += 1
                if n % 7 == 0:
                    gone = "w%d-%d" % (i, n - 3)
                    again(lambda: r.srem("race", gone))
                    removed[i].add(gone)
        except redis.RedisError as e:
            failed.append(str(e))
    ths = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for t in ths:
        t.start()
    admin = c.nodes[2].client()
    try:
        for parts in (4, 2, 4, 2, 4):
            time.sleep(0.4)
            assert admin.execute_command("PK.SALT", "race", parts) == "OK"
            time.sleep(0.6)
            assert admin.execute_command("PK.UNSALT", "race") == "OK"
    finally:
        stop.set()
        for t in ths:
            t.join(15)
    assert not failed, failed
    want = set().union(*added) - set().union(*removed)
    got = admin.smembers("race")
    assert got == want, (len(got - want), len(want - got))
    assert sum(len(a) for a in added) > 200
    print("%d members added, %d TRYAGAIN retried" % (
        sum(len(a) for a in added), tries[0]))


def test_hot_set_salted_then_folded_by_itself():
    """--hot-key-writes 300: a set SADDed faster than that is salted
    without being asked, then folded back once the load stops, with
    every member kept."""
    gen = pkcluster.serving(pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hotkeys-sample", "1",
               "--hot-key-writes", "300", "--hot-key-time", "1",
               "--unsalt-after", "2"]))
    c = next(gen)
    stop, count, errors = threading.Event(), [0], []

    def load():
        r = c.nodes[0].client()
        while not stop.is_set():
            # A batch whose SADDs met TRYAGAIN goes again whole (adding a
            # member twice changes nothing), so the set is v0..count-1.
            while True:
                pipe = r.pipeline(transaction=False)
                for k in range(50):
                    pipe.sadd("seen:today", "v%d" % (count[0] + k))
                try:
                    pipe.execute()
                    break
                except redis.ResponseError as e:
                    if "TRYAGAIN" not in str(e):
                        errors.append(str(e))
                        return
            count[0] += 50
    th = threading.Thread(target=load, daemon=True)
    th.start()
    try:
        ok, waited = pkcluster.wait_until(
            lambda: salted_parts(c, "seen:today") >= 2, 20, interval=0.2)
        assert ok, "not salted after %.1fs" % waited
        time.sleep(1.5)
    finally:
        stop.set()
        th.join(15)
    assert not errors, errors
    r = c.nodes[1].client()
    assert r.scard("seen:today") == count[0]
    ok, waited = pkcluster.wait_until(
        lambda: salted_parts(c, "seen:today") == 0, 30, interval=0.5)
    assert ok, "still salted %.1fs after the load stopped" % waited
    assert r.scard("seen:today") == count[0]
    assert r.smembers("seen:today") == {"v%d" % i for i in range(count[0])}
    for _ in gen:
        pass
