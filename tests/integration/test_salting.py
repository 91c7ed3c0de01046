"""Salting of write-hot counters (pk_salted.h), on 3 nodes with 3 copies in
forward mode: PK.SALT splits a counter into parts led by different nodes;
INCR and friends answer the total and GET reads it from every node;
PK.UNSALT folds the parts back without losing an increment; a command
that cannot be split waits for the fold and then runs as Redis runs it;
concurrent increments through salting and folding are all counted; and a
key written above --hot-key-writes is salted by itself, then folded back
once the load stops."""
import threading
import time

import pytest
import redis

import cluster as pkcluster
import pmap

pytestmark = pytest.mark.partkv_only


@pytest.fixture(scope="module")
def sc3():
    yield from pkcluster.serving(pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hotkeys-sample", "1",
               "--hot-key-writes", "0"]))


def hotkeys(node):
    """PK.HOTKEYS of a node as a list of dicts."""
    out = []
    for e in node.client(decode_responses=False).execute_command(
            "PK.HOTKEYS", "COUNT", "128"):
        out.append({e[i].decode(): e[i + 1] for i in range(0, len(e), 2)})
    return out


def salted_parts(c, key, node=0):
    """Parts of key in a node's map (0: not salted)."""
    buf = c.nodes[node].client(decode_responses=False).execute_command(
        "PK.MAP")
    e = pmap.decode(buf)["salts"].get(key.encode())
    return e["parts"] if e else 0


def raw_keys(c):
    """The keys KEYS lists on the nodes, salted parts included (a
    connection with PK.RAWKEYS)."""
    out = set()
    for nd in c.nodes:
        r = nd.client(decode_responses=False)
        r.execute_command("PK.AUTH", c.secret)
        r.execute_command("PK.RAWKEYS")
        out |= set(r.keys("*"))
    return out


def retry(fn, tries=50):
    """fn(), again after a TRYAGAIN (as cluster clients do)."""
    for i in range(tries):
        try:
            return fn()
        except redis.ResponseError as e:
            if "TRYAGAIN" not in str(e) or i == tries - 1:
                raise
            time.sleep(0.05)


def test_salt_spreads_writes_and_reads_the_total(sc3):
    c = sc3
    rs = [nd.client() for nd in c.nodes]
    rs[0].set("ctr", 10)
    assert rs[1].execute_command("PK.SALT", "ctr", 4) == "OK"
    total = 10
    for i in range(400):
        total += 1
        assert rs[i % 3].incr("ctr") == total  # the total, as Redis says
    assert rs[2].incrby("ctr", 5) == total + 5
    assert rs[0].decrby("ctr", 6) == total - 1
    assert rs[1].decr("ctr") == total - 2
    total -= 2
    assert [r.get("ctr") for r in rs] == [str(total)] * 3
    assert rs[0].type("ctr") == "string" and rs[1].exists("ctr") == 1
    # The parts' writes ran on every node (part 0 and one part here, one
    # part on each other node): each node's tracker saw some.
    time.sleep(1.1)
    writers = [nd for nd in c.nodes
               if any(b"ctr" in e["key"] and float(e["writes_per_sec"]) > 0
                      for e in hotkeys(nd))]
    assert len(writers) == 3, [hotkeys(nd) for nd in c.nodes]
    assert salted_parts(c, "ctr") == 4
    assert max(int(e["salted"]) for nd in c.nodes for e in hotkeys(nd)
               if e["key"] == b"ctr") == 4
    stored = raw_keys(c)
    parts = [k for k in stored if k.endswith(b"\x00salt\x00ctr")]
    assert len(parts) == 3, stored
    # Clients see the key, never its parts.
    listed = set().union(*(set(nd.client().keys("*")) for nd in c.nodes))
    assert "ctr" in listed and not [k for k in listed if "salt" in k]
    assert not [k for nd in c.nodes for k in nd.client().scan_iter()
                if "\x00" in k]

    # Folded back: one key, the same value, the parts gone.
    assert rs[2].execute_command("PK.UNSALT", "ctr") == "OK"
    assert [r.get("ctr") for r in rs] == [str(total)] * 3
    assert rs[0].incr("ctr") == total + 1
    stored = raw_keys(c)
    assert not [k for k in stored if b"\x00salt" in k], stored


def test_totals_under_pipelined_writers(sc3):
    """Three clients, one per node, send pipelines of INCRs of one salted
    counter at once.  Each reply is the total at some moment between its
    pipeline's send and its answer: at least every INCR answered before
    the pipeline was sent, plus its own, and at most every INCR sent
    before its answer.  (A node reads the other parts once per group
    commit while their partitions' logs stand still; a stale read would
    answer too little.)"""
    c = sc3
    assert retry(lambda: c.nodes[0].client().execute_command(
        "PK.SALT", "piped", 4)) == "OK"
    lock = threading.Lock()
    sent, done, events = [0], [], []   # done: answer times, one per INCR

    def writer(i):
        r = c.nodes[i].client()
        for _ in range(60):
            pipe = r.pipeline(transaction=False)
            for _ in range(20):
                pipe.incr("piped")
            with lock:
                t0 = time.monotonic()
                before = len(done)
                sent[0] += 20
            replies = pipe.execute()
            with lock:
                t1 = time.monotonic()
                done.extend([t1] * 20)
                events.append((t0, before, sent[0], replies))
    ths = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    assert len(done) == 3 * 60 * 20
    for t0, before, upto, replies in events:
        for v in replies:
            assert before < v <= upto, (before, v, upto)
    assert int(c.nodes[1].client().get("piped")) == len(done)


def test_float_increments_and_delete(sc3):
    c = sc3
    r = c.nodes[0].client()
    assert r.execute_command("PK.SALT", "fctr", 2) == "OK"
    vals = [float(r.incrbyfloat("fctr", 0.25)) for _ in range(8)]
    assert vals[-1] == 2.0
    for _ in range(20):  # whichever part it lands on: the total is whole
        r.incr("fctr")
    assert r.get("fctr") == "22"
    assert r.incrby("fctr", -19) == 3
    assert r.get("fctr") == "3"
    assert retry(lambda: r.delete("fctr")) == 1
    assert r.get("fctr") is None and r.exists("fctr") == 0
    assert r.incr("fctr") == 1
    assert r.execute_command("PK.UNSALT", "fctr") == "OK"
    assert r.get("fctr") == "1"


def test_unsplittable_commands_fold_first(sc3):
    c = sc3
    r = c.nodes[1].client()
    assert r.execute_command("PK.SALT", "sctr", 2) == "OK"
    for _ in range(20):
        r.incr("sctr")
    assert r.append("sctr", "0") == 3  # folded, then run: "20" + "0"
    assert r.get("sctr") == "200"
    assert r.execute_command("PK.SALT", "sctr", 2) == "OK"
    r.incr("sctr")
    # MULTI is not forwarded: the transaction goes to the key's leader.
    m = pmap.decode(c.nodes[0].client(decode_responses=False)
                    .execute_command("PK.MAP"))
    part = m["parts"][pkcluster.keyslot("sctr")]
    host, port = m["nodes"][part["replicas"][0]].rsplit(":", 1)
    lr = redis.Redis(host=host, port=int(port), decode_responses=True)
    pipe = lr.pipeline(transaction=True)
    pipe.incr("sctr")
    with pytest.raises(redis.ResponseError) as ei:
        pipe.execute()
    assert "TRYAGAIN" in str(ei.value) or "discarded" in str(ei.value)
    ok, waited = pkcluster.wait_until(
        lambda: salted_parts(c, "sctr") == 0, 10, interval=0.2)
    assert ok, "still salted after %.1fs" % waited
    pipe = lr.pipeline(transaction=True)
    pipe.incr("sctr")
    assert pipe.execute() == [202]


def test_multikey_commands_fold_a_later_salted_key(sc3):
    """A salted key that is not a command's first key is folded back before
    the command runs: DEL of two keys leaves no part behind, and MGET reads
    the whole total."""
    c = sc3
    r = c.nodes[2].client()
    r.set("{mk}a", "x")
    r.set("{mk}b", 5)
    assert r.execute_command("PK.SALT", "{mk}b", 4) == "OK"
    for _ in range(40):
        r.incr("{mk}b")
    assert retry(lambda: r.mget("{mk}a", "{mk}b")) == ["x", "45"]
    ok, waited = pkcluster.wait_until(
        lambda: salted_parts(c, "{mk}b") == 0, 10, interval=0.1)
    assert ok, "still salted after %.1fs" % waited
    assert r.execute_command("PK.SALT", "{mk}b", 4) == "OK"
    for _ in range(40):
        r.incr("{mk}b")
    assert retry(lambda: r.delete("{mk}a", "{mk}b")) == 2
    assert r.get("{mk}b") is None
    assert not [k for k in raw_keys(c) if b"mk" in k], raw_keys(c)


def test_refusals(sc3):
    r = sc3.nodes[0].client()
    r.rpush("alist", "a")
    with pytest.raises(redis.ResponseError, match="are salted"):
        r.execute_command("PK.SALT", "alist", 2)
    with pytest.raises(redis.ResponseError, match="power of two"):
        r.execute_command("PK.SALT", "n3", 3)
    with pytest.raises(redis.ResponseError, match="not salted"):
        r.execute_command("PK.UNSALT", "never-salted")
    assert r.execute_command("PK.SALT", "twice", 2) == "OK"
    with pytest.raises(redis.ResponseError, match="salted already"):
        r.execute_command("PK.SALT", "twice", 2)
    assert r.execute_command("PK.UNSALT", "twice") == "OK"


def test_no_increment_lost_through_salting_and_folding(sc3):
    """Three clients, one per node, INCR one key while it is salted and
    folded back five times; every acknowledged INCR is in the total, and
    every INCR that failed is reported (none is expected)."""
    c = sc3
    stop = threading.Event()
    acked, failed = [0, 0, 0], [[], [], []]

    def writer(i):
        r = c.nodes[i].client()
        while not stop.is_set():
            try:
                r.incr("race")
                acked[i] += 1
            except redis.RedisError as e:
                failed[i].append(str(e))
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
    errors = sum(failed, [])
    value = int(admin.get("race"))
    assert sum(acked) <= value <= sum(acked) + len(errors), (acked, errors)
    assert not [e for e in errors if "TRYAGAIN" not in e], errors
    assert sum(acked) > 300


def test_hot_counter_salted_then_folded_by_itself():
    """--hot-key-writes 300: a counter INCRed faster than that for over
    --hot-key-time is salted without being asked; once the load stops it
    is folded back after --unsalt-after, every increment kept."""
    gen = pkcluster.serving(pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hotkeys-sample", "1",
               "--hot-key-writes", "300", "--hot-key-time", "1",
               "--unsalt-after", "2"]))
    c = next(gen)
    stop, count = threading.Event(), [0]

    def load():
        r = c.nodes[0].client()
        while not stop.is_set():
            pipe = r.pipeline(transaction=False)
            for _ in range(50):
                pipe.incr("celebrity:likes")
            pipe.execute()
            count[0] += 50
    th = threading.Thread(target=load, daemon=True)
    th.start()
    try:
        t0 = time.monotonic()
        ok, waited = pkcluster.wait_until(
            lambda: salted_parts(c, "celebrity:likes") >= 2, 20, interval=0.2)
        assert ok, "not salted after %.1fs: %r" % (
            waited, [hotkeys(nd)[:3] for nd in c.nodes])
        salted_after = time.monotonic() - t0
        time.sleep(1.5)  # a while salted, under load
    finally:
        stop.set()
        th.join(15)
    r = c.nodes[1].client()
    assert int(r.get("celebrity:likes")) == count[0]
    # Folded back after --unsalt-after (2 s) once the rate drops.
    ok, waited = pkcluster.wait_until(
        lambda: salted_parts(c, "celebrity:likes") == 0, 30, interval=0.5)
    assert ok, "still salted %.1fs after the load stopped" % waited
    assert int(r.get("celebrity:likes")) == count[0]
    print("salted %.2fs after the load began" % salted_after)
    assert salted_after < 10, salted_after
    assert "salted" in c.stderr_text() and "folded back" in c.stderr_text()
    # Hot again: salted again; a command that cannot be split (GETRANGE)
    # folds it back, and the same load does not salt it again (COOL_MS).
    stop.clear()
    th = threading.Thread(target=load, daemon=True)
    th.start()
    try:
        ok, waited = pkcluster.wait_until(
            lambda: salted_parts(c, "celebrity:likes") >= 2, 20, interval=0.2)
        assert ok, "not salted again after %.1fs" % waited
        assert retry(lambda: r.getrange("celebrity:likes", 0, 0)) != ""
        ok, waited = pkcluster.wait_until(
            lambda: salted_parts(c, "celebrity:likes") == 0, 10, interval=0.1)
        assert ok, "not folded for GETRANGE after %.1fs" % waited
        for _ in range(20):  # 4 s under the load that salted it
            assert salted_parts(c, "celebrity:likes") == 0, \
                "salted again right after a fold for a command"
            time.sleep(0.2)
    finally:
        stop.set()
        th.join(15)
    assert int(r.get("celebrity:likes")) == count[0]
    for _ in gen:
        pass


def test_local_incr_reply():
    """--salted-incr-reply local: INCR answers its part's value (at most
    the total), and GET still reads the total."""
    gen = pkcluster.serving(pkcluster.Cluster(
        nodes=3, replicas=3,
        extra=["--route", "forward", "--hot-key-writes", "0",
               "--salted-incr-reply", "local"]))
    c = next(gen)
    rs = [nd.client() for nd in c.nodes]
    assert rs[0].execute_command("PK.SALT", "lctr", 4) == "OK"
    replies = [retry(lambda: rs[i % 3].incr("lctr")) for i in range(300)]
    assert all(1 <= v <= i + 1 for i, v in enumerate(replies))
    assert max(replies) < 300  # the parts share the increments
    assert [r.get("lctr") for r in rs] == ["300"] * 3
    assert rs[1].execute_command("PK.UNSALT", "lctr") == "OK"
    assert rs[2].incr("lctr") == 301
    for _ in gen:
        pass


def test_through_the_proxy(sc3):
    """partkv proxy sends a salted key's commands to its partition's
    leader, which runs them on the parts."""
    c = sc3
    n = c.nodes[0]
    px = pkcluster.Proxy("%s:%d" % (n.host, n.port))
    try:
        px.start()
        raw = redis.Redis(host=px.host, port=px.port, socket_timeout=10)
        ok, waited = pkcluster.wait_until(
            lambda: raw.execute_command("PK.MAP"), 10)
        r = redis.Redis(host=px.host, port=px.port, socket_timeout=10,
                        decode_responses=True)
        assert ok, "the proxy has no map after %.1fs" % waited
        assert n.client().execute_command("PK.SALT", "pctr", 4) == "OK"
        for i in range(1, 101):
            assert retry(lambda: r.incr("pctr")) == i
        assert r.get("pctr") == "100"
        assert c.nodes[2].client().get("pctr") == "100"
    finally:
        px.stop()
