"""MULTI / EXEC / DISCARD / WATCH / UNWATCH with Redis 7.0's replies, in
RESP2 and RESP3, through python3-redis pipelines (transaction=True) and a
raw client; and, on a 3-node `partkv cluster up`, queue-time MOVED and
CROSSSLOT, and followers that show all of an EXEC or none of it.
PARTKV_TEST_TARGET=redis runs the single-server tests against Redis."""
import threading
import time

import pytest
import redis

from cluster import keyslot, wait_until
from server import RespError

EXECABORT = "EXECABORT Transaction discarded because of previous errors."


def test_pipeline_transaction(r):
    p = r.pipeline(transaction=True)
    p.set("a", "1").incr("a").get("a").hset("h", "f", "v").exists("a", "h")
    assert p.execute() == [True, 2, "2", 1, 2]


def test_runtime_error_others_run(r):
    r.set("s", "x")
    p = r.pipeline(transaction=True)
    p.set("a", "1").hset("s", "f", "v").incr("a")
    res = p.execute(raise_on_error=False)
    assert res[0] is True and res[2] == 2
    assert isinstance(res[1], redis.exceptions.ResponseError)
    assert str(res[1]).startswith("WRONGTYPE")
    assert r.get("a") == "2" and r.get("s") == "x"


def test_replies_raw(raw):
    assert raw.call("EXEC") == RespError("ERR EXEC without MULTI")
    assert raw.call("DISCARD") == RespError("ERR DISCARD without MULTI")
    assert raw.call("MULTI") == "OK"
    assert raw.call("MULTI") == RespError("ERR MULTI calls can not be nested")
    assert raw.call("WATCH", "x") == RespError(
        "ERR WATCH inside MULTI is not allowed")
    assert raw.call("SET", "a", "1") == "QUEUED"
    assert raw.last_raw == b"+QUEUED\r\n"
    assert raw.call("GET", "a") == "QUEUED"
    assert raw.call("PING") == "QUEUED"
    # Neither the nested MULTI nor WATCH marked the transaction.
    assert raw.call("EXEC") == ["OK", "1", "PONG"]
    assert raw.last_raw == b"*3\r\n+OK\r\n$1\r\n1\r\n+PONG\r\n"
    assert raw.call("MULTI") == "OK"
    assert raw.call("EXEC") == []
    assert raw.last_raw == b"*0\r\n"


def test_queue_errors_abort(raw):
    raw.call("DEL", "a")
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "a", "1") == "QUEUED"
    assert raw.call("SET") == RespError(
        "ERR wrong number of arguments for 'set' command")
    assert raw.call("NOSUCHCMD", "x").message.startswith(
        "ERR unknown command 'NOSUCHCMD'")
    assert raw.call("INCR", "a") == "QUEUED"
    assert raw.call("EXEC") == RespError(EXECABORT)
    assert raw.call("GET", "a") is None
    # The MULTI state is gone.
    assert raw.call("EXEC") == RespError("ERR EXEC without MULTI")
    assert raw.call("MULTI") == "OK"
    assert raw.call("SHUTDOWN").message.startswith(
        "ERR Command not allowed inside a transaction")
    assert raw.call("EXEC") == RespError(EXECABORT)
    assert raw.call("PING") == "PONG"


def test_discard_and_reset(raw):
    raw.call("SET", "a", "0")
    assert raw.call("MULTI") == "OK"
    assert raw.call("INCR", "a") == "QUEUED"
    assert raw.call("DISCARD") == "OK"
    assert raw.call("GET", "a") == "0"
    assert raw.call("MULTI") == "OK"
    assert raw.call("INCR", "a") == "QUEUED"
    assert raw.call("RESET") == "RESET"
    assert raw.call("EXEC") == RespError("ERR EXEC without MULTI")
    assert raw.call("GET", "a") == "0"


def test_watch_touched_by_other_client(server, raw):
    other = server.client()
    raw.call("SET", "k", "1")
    assert raw.call("WATCH", "k") == "OK"
    other.set("k", "2")
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "k", "3") == "QUEUED"
    assert raw.call("EXEC") is None
    assert raw.last_raw == b"*-1\r\n"
    assert raw.call("GET", "k") == "2"
    # After a failed EXEC nothing is watched any more.
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "k", "4") == "QUEUED"
    assert raw.call("EXEC") == ["OK"]
    other.close()


def test_watch_cases(server, raw):
    other = server.client()
    raw.call("SET", "k", "1")
    # Not modified: EXEC runs; one of five watched keys modified: fails.
    assert raw.call("WATCH", "k") == "OK"
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == ["PONG"]
    assert raw.call("WATCH", "a", "b", "k", "c", "d") == "OK"
    other.append("k", "x")
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") is None
    # This client's own write after WATCH counts too.
    raw.call("WATCH", "k")
    raw.call("SET", "k", "own")
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") is None
    # A write that changes nothing touches nothing (DEL of a missing key).
    raw.call("WATCH", "missing")
    assert other.delete("missing") == 0
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == ["PONG"]
    # EXPIRE touches.
    raw.call("WATCH", "k")
    other.expire("k", 100)
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") is None
    other.close()


def test_unwatch_and_discard_clear(server, raw):
    other = server.client()
    raw.call("SET", "x", "30")
    assert raw.call("WATCH", "x") == "OK"
    other.set("x", "40")
    assert raw.call("UNWATCH") == "OK"
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == ["PONG"]
    assert raw.call("UNWATCH") == "OK"  # nothing watched: fine too
    # DISCARD clears the dirty flag and unwatches.
    raw.call("WATCH", "x")
    other.set("x", "10")
    raw.call("MULTI")
    raw.call("DISCARD")
    raw.call("MULTI")
    raw.call("INCR", "x")
    assert raw.call("EXEC") == [11]
    raw.call("WATCH", "x")
    raw.call("MULTI")
    raw.call("DISCARD")
    other.set("x", "1")
    raw.call("MULTI")
    raw.call("INCR", "x")
    assert raw.call("EXEC") == [2]
    other.close()


def test_watch_expiry(server, raw):
    raw.call("SET", "e", "v", "PX", "300")
    assert raw.call("WATCH", "e") == "OK"
    time.sleep(0.5)
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") is None
    # A key already expired when WATCHed does not fail EXEC.
    raw.call("SET", "e2", "v", "PX", "1")
    time.sleep(0.05)
    raw.call("WATCH", "e2")
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == ["PONG"]


def test_flushall_touches_existing_keys_only(server, raw):
    other = server.client()
    raw.call("SET", "x", "1")
    raw.call("WATCH", "x")
    other.flushall()
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") is None
    raw.call("DEL", "x")
    raw.call("WATCH", "x")
    other.flushall()
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == ["PONG"]
    other.close()


def test_resp3(server):
    c = server.raw(proto=3)
    other = server.client()
    c.call("SET", "k", "1")
    c.call("WATCH", "k")
    other.set("k", "2")
    c.call("MULTI")
    c.call("GET", "k")
    assert c.call("EXEC") is None
    assert c.last_raw == b"_\r\n"
    c.call("MULTI")
    c.call("GET", "k")
    c.call("GET", "nope")
    c.call("HSET", "k", "f", "v")
    assert c.call("EXEC")[:2] == ["2", None]
    assert c.last_raw.startswith(b"*3\r\n$1\r\n2\r\n_\r\n-WRONGTYPE")
    c.call("MULTI")
    c.call("SET")
    assert c.call("EXEC") == RespError(EXECABORT)
    c.close()
    other.close()


def test_optimistic_increments(server):
    """WATCH/MULTI/EXEC retry loops of several clients lose no update."""
    server.client().set("n", 0)
    per, nthreads = 60, 4
    errors = []

    def worker():
        c = server.client()
        try:
            for _ in range(per):
                while True:
                    with c.pipeline(transaction=True) as p:
                        try:
                            p.watch("n")
                            v = int(p.get("n"))
                            p.multi()
                            p.set("n", v + 1)
                            p.execute()
                            break
                        except redis.WatchError:
                            continue
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            c.close()
    ts = [threading.Thread(target=worker) for _ in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert server.client().get("n") == str(per * nthreads)


def test_no_interleaving(server):
    """An EXEC's commands run back to back: another client's INCRs never
    land between its SET and its GET."""
    stop = threading.Event()

    def hammer():
        c = server.client()
        while not stop.is_set():
            c.incr("t")
        c.close()
    t = threading.Thread(target=hammer)
    t.start()
    try:
        r = server.client()
        for i in range(200):
            p = r.pipeline(transaction=True)
            p.set("t", 1000000 * (i + 1)).get("t").get("t")
            res = p.execute()
            assert res[1] == res[2] == str(1000000 * (i + 1))
    finally:
        stop.set()
        t.join()


# ---------------------------------------------------------------------------
# cluster
# ---------------------------------------------------------------------------

def _key_led_by(c, port, prefix):
    for i in range(100000):
        k = "%s%d" % (prefix, i)
        if c.node_for_slot(keyslot(k)).port == port:
            return k
    raise AssertionError("no key led by %d" % port)


@pytest.mark.partkv_only
def test_cluster_multi(cluster_factory):
    c = cluster_factory(nodes=3, replicas=3, extra=["--acks", "quorum"])
    c.wait_serving()
    lead = c.nodes[0]
    tag = _key_led_by(c, lead.port, "t")
    away = _key_led_by(c, c.nodes[1].port, "a")
    raw = lead.raw()
    # Queue time: another node's key is MOVED, another slot CROSSSLOT;
    # both abort the transaction.
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "{%s}:1" % tag, "x") == "QUEUED"
    moved = raw.call("SET", away, "x")
    assert isinstance(moved, RespError)
    assert moved.message == "MOVED %d %s" % (keyslot(away),
                                             c.nodes[1].addr)
    assert raw.call("EXEC") == RespError(EXECABORT)
    other = _key_led_by(c, lead.port, "o")
    if keyslot(other) != keyslot(tag):
        assert raw.call("MULTI") == "OK"
        assert raw.call("SET", "{%s}:1" % tag, "x") == "QUEUED"
        assert raw.call("SET", other, "x") == RespError(
            "CROSSSLOT Keys in request don't hash to the same slot")
        assert raw.call("EXEC") == RespError(EXECABORT)
    assert raw.call("GET", "{%s}:1" % tag) is None
    raw.close()

    # Followers show all of an EXEC or none of it: rounds of EXECs of
    # many writes to one slot, read back whole by READONLY MGETs.
    n = 200
    keys = ["{%s}:%d" % (tag, i) for i in range(n)]
    r = lead.client()
    followers = [nd for nd in c.nodes if nd.port != lead.port]
    readers = []
    for f in followers:
        fr = f.client()
        fr.execute_command("READONLY")
        readers.append(fr)
    seen = set()
    for rnd in range(1, 31):
        p = r.pipeline(transaction=True)
        for k in keys:
            p.set(k, "r%d" % rnd)
        p.hset("{%s}:h" % tag, "round", rnd)
        res = p.execute()
        assert all(res[:n]) and res[n] == (1 if rnd == 1 else 0)
        for fr in readers:
            vals = fr.mget(keys)
            assert len(set(vals)) == 1, vals  # never half an EXEC
            seen.add(vals[0])
    assert r.execute_command("WAIT", 2, 5000) == 2
    for fr in readers:
        assert fr.mget(keys) == ["r30"] * n
        assert fr.hget("{%s}:h" % tag, "round") == "30"
    # WATCH on the leader, a write by another client: EXEC fails.
    with r.pipeline(transaction=True) as p:
        p.watch(keys[0])
        lead.client().set(keys[0], "changed")
        p.multi()
        p.set(keys[0], "mine")
        with pytest.raises(redis.WatchError):
            p.execute()
    # A follower's READONLY transaction of reads runs there.
    fr = readers[0]

    def caught_up():
        return fr.get(keys[0]) == "changed"
    assert wait_until(caught_up, 5.0)[0]
    p = fr.pipeline(transaction=True)
    p.get(keys[0]).get(keys[1])
    assert p.execute() == ["changed", "r30"]
    for x in readers + [r]:
        x.close()
