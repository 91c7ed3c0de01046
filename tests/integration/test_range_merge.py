"""Range merges: `partkv range merge` (the right neighbour first moving
to the same leader when it must), sticky bounds (`range split`, presplit)
that automatic merges keep until `range unsplit`, and the automatic merges
of cold neighbours after --merge-delay.  Every check reads the whole key
space back in order against a model."""
import json
import random
import threading
import time

import pytest
import redis

import cluster as pkcluster
from test_range_scheme import (Writer, client, full_read, model_range,
                               range_list)

pytestmark = pytest.mark.partkv_only


@pytest.fixture(scope="module")
def rmerge():
    """Three nodes, R = 3, five sticky ranges, merges after 2 s cold."""
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, base_port=0, replicas=3,
        secret="mg-%032x" % random.getrandbits(128),
        extra=["--scheme", "range", "--presplit-keys", "d,h,m,r",
               "--split-qps", "1000", "--split-size", "4000000",
               "--merge-delay", "2"]))


@pytest.fixture(scope="module")
def keys(rmerge):
    keys = sorted(b"%s%04d" % (bytes([ch]), i) for ch in b"acfhjmpsw"
                  for i in range(300))
    r = client(rmerge.nodes[0], decode=False)
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.set(k, k)
    assert all(pipe.execute())
    return keys


def edit_cli(c, verb, key):
    return pkcluster.partkv_cli("range", verb, key, "--cluster",
                                c.nodes[0].addr, "--secret", c.secret,
                                timeout=120)


def rows_of(c):
    p = range_list(c.nodes[0], "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def bounds(c):
    return [x["lo"] for x in rows_of(c)]


def check_counts(c, got):
    """Each range's key count on its leader matches the keys read."""
    for x in rows_of(c):
        lo = b"-" if x["lo"] is None else b"[" + x["lo"].encode()
        hi = b"+" if x["hi"] is None else b"(" + x["hi"].encode()
        assert x.get("keys") == len(model_range(got, lo, hi)), x


def test_manual_merges_under_writes(rmerge, keys):
    """Two merges while a writer runs (one of them of ranges with different
    leaders, which co-locates first): no acknowledged write is lost, every
    key reads once and in order, and the counts per range match."""
    c = rmerge
    assert bounds(c) == [None, "d", "h", "m", "r"]
    assert all(x["sticky"] for x in rows_of(c)[1:])
    with Writer(c.nodes[1], b"acfhjmpsw") as acked:
        for key in ("a", "m"):
            p = edit_cli(c, "merge", key)
            assert p.returncode == 0, p.stdout + p.stderr
    assert len(acked) > 100
    assert bounds(c) == [None, "h", "m"]
    got = full_read(c.nodes[2])
    assert got is not None and got == sorted(set(got))
    missing = (set(keys) | set(acked)) - set(got)
    assert not missing, sorted(missing)[:5]
    check_counts(c, got)
    # Every replica agrees per range (R = 3: all hold all).
    def counts(nd):
        return {e[1]: e[3] for e in
                client(nd).execute_command("PK.PARTITIONS")}
    ok, _ = pkcluster.wait_until(
        lambda: counts(c.nodes[0]) == counts(c.nodes[1]) == counts(c.nodes[2]),
        30, interval=0.5)
    assert ok, [counts(n) for n in c.nodes]


def test_merge_refusals(rmerge):
    c = rmerge
    p = edit_cli(c, "merge", "zz")  # the last range
    assert p.returncode == 1 and "right neighbour" in p.stderr
    p = edit_cli(c, "unsplit", "k")  # no bound there
    assert p.returncode == 1 and "no range starts" in p.stderr
    p = pkcluster.partkv_cli("range", "merge", "--cluster", c.nodes[0].addr)
    assert p.returncode == 2
    with pytest.raises(redis.AuthenticationError, match="PK.AUTH"):
        client(c.nodes[0]).execute_command("PK.MERGE", "a")


def test_sticky_until_unsplit_then_merged(rmerge):
    """A manual split is sticky: cold for far longer than --merge-delay it
    stays; once unsplit, the cold neighbours merge by themselves."""
    c = rmerge
    before = full_read(c.nodes[0])
    p = edit_cli(c, "split", "k")
    assert p.returncode == 0, p.stdout + p.stderr
    assert bounds(c) == [None, "h", "k", "m"]
    time.sleep(8)  # four merge delays, every range cold
    assert bounds(c) == [None, "h", "k", "m"]
    p = edit_cli(c, "unsplit", "k")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not next(x for x in rows_of(c) if x["lo"] == "k")["sticky"]
    ok, waited = pkcluster.wait_until(lambda: bounds(c) == [None, "h", "m"],
                                      40, interval=0.5)
    assert ok, (bounds(c), waited)
    got = full_read(c.nodes[1])
    assert got == before
    check_counts(c, got)


def test_hot_neighbours_do_not_merge(rmerge):
    """Neighbours whose load, summed, is over half of --split-qps do not
    merge, however long they have been split."""
    c = rmerge
    p = edit_cli(c, "split", "p")
    assert p.returncode == 0, p.stdout + p.stderr
    assert edit_cli(c, "unsplit", "p").returncode == 0
    stop = threading.Event()

    errors = []

    def reader():  # ~600+ reads/s on [p, +inf): over 1000 / 2
        r = client(c.nodes[0], decode=False)
        while not stop.is_set():
            pipe = r.pipeline(transaction=False)
            for i in range(50):
                pipe.get(b"p%04d" % i)
            try:
                pipe.execute()
            except redis.RedisError as e:  # TRYAGAIN: a leader change
                errors.append(str(e))
            time.sleep(0.02)
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        time.sleep(8)
        assert "p" in bounds(c), (errors[:5], c.logs()[-3000:])
    finally:
        stop.set()
        th.join(10)
    ok, _ = pkcluster.wait_until(lambda: "p" not in bounds(c), 40,
                                 interval=0.5)
    assert ok, bounds(c)
