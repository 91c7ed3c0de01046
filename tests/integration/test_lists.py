"""Lists with python3-redis and raw RESP2/RESP3: every list command, Redis
7.0's replies and error texts, hostile arguments, and the blocking forms
(wake-up by another client, FIFO order, timeouts, BLMOVE, a closed waiter).
PARTKV_TEST_TARGET=redis runs the same expectations against redis-server."""
import threading
import time

import pytest
import redis

from server import RespError

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_push_pop_range(r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "z") == 4
    assert r.lrange("l", 0, -1) == ["z", "a", "b", "c"]
    assert r.lrange("l", -100, 100) == ["z", "a", "b", "c"]
    assert r.lrange("l", 2, 1) == []
    assert r.lrange("l", -2, -1) == ["b", "c"]
    assert r.llen("l") == 4
    assert r.lindex("l", 0) == "z"
    assert r.lindex("l", -1) == "c"
    assert r.lindex("l", 4) is None
    assert r.lindex("l", -5) is None
    assert r.lpop("l") == "z"
    assert r.rpop("l") == "c"
    assert r.lpop("l", 5) == ["a", "b"]
    assert r.exists("l") == 0  # the last pop deletes the key
    assert r.lpop("l") is None
    assert r.lpop("l", 2) is None
    assert r.lpushx("l", "x") == 0
    assert r.rpushx("l", "x") == 0
    assert r.exists("l") == 0
    r.rpush("l", "a")
    assert r.lpushx("l", "b", "c") == 3
    assert r.rpushx("l", "d") == 4
    assert r.lrange("l", 0, -1) == ["c", "b", "a", "d"]
    assert r.lpop("l", 0) == []
    assert r.type("l") == "list"


def test_lset_ltrim_lrem_linsert(r):
    r.rpush("l", "a", "b", "c", "b", "a")
    assert r.lset("l", 1, "B") is True
    assert r.lset("l", -1, "A") is True
    assert r.lrange("l", 0, -1) == ["a", "B", "c", "b", "A"]
    with pytest.raises(redis.ResponseError, match="^index out of range$"):
        r.lset("l", 5, "x")
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.lset("nokey", 0, "x")
    assert r.linsert("l", "before", "c", "X") == 6
    assert r.linsert("l", "after", "c", "Y") == 7
    assert r.linsert("l", "after", "nothere", "Y") == -1
    assert r.linsert("nokey", "after", "a", "Y") == 0
    assert r.lrange("l", 0, -1) == ["a", "B", "X", "c", "Y", "b", "A"]
    r.rpush("r", "x", "a", "x", "b", "x", "c", "x")
    assert r.lrem("r", -2, "x") == 2
    assert r.lrange("r", 0, -1) == ["x", "a", "x", "b", "c"]
    assert r.lrem("r", 1, "x") == 1
    assert r.lrange("r", 0, -1) == ["a", "x", "b", "c"]
    assert r.lrem("r", 0, "x") == 1
    assert r.lrem("r", 0, "nothere") == 0
    assert r.ltrim("r", 1, -1) is True
    assert r.lrange("r", 0, -1) == ["b", "c"]
    assert r.ltrim("r", 5, 10) is True
    assert r.exists("r") == 0
    assert r.ltrim("nokey", 0, 1) is True


def test_lpos(r):
    r.rpush("l", "a", "b", "c", "1", "2", "3", "c", "c")
    assert r.lpos("l", "c") == 2
    assert r.lpos("l", "c", rank=2) == 6
    assert r.lpos("l", "c", rank=-1) == 7
    assert r.lpos("l", "c", count=0) == [2, 6, 7]
    assert r.lpos("l", "c", rank=-1, count=2) == [7, 6]
    assert r.lpos("l", "c", maxlen=3) == 2
    assert r.lpos("l", "c", rank=2, maxlen=3) is None
    assert r.lpos("l", "x") is None
    assert r.lpos("l", "x", count=2) == []
    assert r.lpos("nokey", "x") is None
    assert r.lpos("nokey", "x", count=1) == []
    with pytest.raises(redis.ResponseError, match="RANK can't be zero: use 1 "
                       "to start from the first match, 2 from the second ... "
                       "or use negative to start from the end of the list"):
        r.lpos("l", "c", rank=0)
    with pytest.raises(redis.ResponseError, match="^COUNT can't be negative$"):
        r.lpos("l", "c", count=-1)
    with pytest.raises(redis.ResponseError, match="^MAXLEN can't be negative"):
        r.lpos("l", "c", maxlen=-1)
    # RANK -2^63: Redis 7.0 negates it into itself, which counts every
    # match from the tail and lets no COUNT stop the walk.
    assert r.execute_command("LPOS", "l", "c", "RANK",
                             "-9223372036854775808") == 7
    assert r.execute_command("LPOS", "l", "c", "RANK", "-9223372036854775808",
                             "COUNT", "1") == [7, 6, 2]
    assert r.execute_command("LPOS", "l", "c", "RANK",
                             "9223372036854775807") is None
    with pytest.raises(redis.ResponseError, match="^syntax error"):
        r.execute_command("LPOS", "l", "c", "RANK")


def test_lmove_rpoplpush(r):
    r.rpush("{t}s", "1", "2", "3")
    assert r.lmove("{t}s", "{t}d", "RIGHT", "LEFT") == "3"
    assert r.lmove("{t}s", "{t}d", "LEFT", "RIGHT") == "1"
    assert r.lrange("{t}d", 0, -1) == ["3", "1"]
    assert r.rpoplpush("{t}s", "{t}d") == "2"
    assert r.exists("{t}s") == 0
    assert r.lmove("{t}s", "{t}d", "LEFT", "LEFT") is None
    assert r.rpoplpush("{t}d", "{t}d") == "1"  # rotation
    assert r.lrange("{t}d", 0, -1) == ["1", "2", "3"]
    with pytest.raises(redis.ResponseError, match="^syntax error"):
        r.lmove("{t}d", "{t}s", "UP", "LEFT")
    r.set("{t}str", "x")
    with pytest.raises(redis.ResponseError, match="^" + WRONGTYPE):
        r.lmove("{t}d", "{t}str", "LEFT", "LEFT")
    with pytest.raises(redis.ResponseError, match="^" + WRONGTYPE):
        r.rpoplpush("{t}str", "{t}d")
    assert r.lrange("{t}d", 0, -1) == ["1", "2", "3"]


def test_lmpop(r):
    r.rpush("{t}b", "1", "2", "3")
    assert r.execute_command("LMPOP", "2", "{t}a", "{t}b", "LEFT") == [
        "{t}b", ["1"]]
    assert r.execute_command("LMPOP", "2", "{t}a", "{t}b", "RIGHT", "COUNT",
                             "10") == ["{t}b", ["3", "2"]]
    assert r.execute_command("LMPOP", "2", "{t}a", "{t}b", "LEFT") is None
    for args, msg in [
            (["0", "{t}a", "LEFT"], "^numkeys should be greater than 0$"),
            (["a", "{t}a", "LEFT"], "^numkeys should be greater than 0$"),
            (["5", "{t}a", "LEFT"], "^syntax error"),
            (["1", "{t}a", "UP"], "^syntax error"),
            (["1", "{t}a", "LEFT", "COUNT"], "^syntax error"),
            (["1", "{t}a", "LEFT", "COUNT", "1", "COUNT", "2"],
             "^syntax error"),
            (["1", "{t}a", "LEFT", "COUNT", "0"],
             "^count should be greater than 0$"),
            (["1", "{t}a", "LEFT", "COUNT", "-9223372036854775808"],
             "^count should be greater than 0$")]:
        with pytest.raises(redis.ResponseError, match=msg):
            r.execute_command("LMPOP", *args)


def test_hostile_counts_and_types(r):
    r.rpush("l", "a", "b")
    for bad in ["-1", "x", "-9223372036854775808", "99999999999999999999"]:
        with pytest.raises(redis.ResponseError,
                           match="^value is out of range, must be positive$"):
            r.execute_command("LPOP", "l", bad)
    assert r.execute_command("RPOP", "l", "9223372036854775807") == ["b", "a"]
    r.rpush("l", "a", "b")
    for cmd in (["LINDEX", "l", "x"], ["LRANGE", "l", "0", "x"],
                ["LTRIM", "l", "x", "1"], ["LREM", "l", "x", "a"],
                ["LSET", "l", "1.5", "v"]):
        with pytest.raises(redis.ResponseError,
                           match="^value is not an integer or out of range$"):
            r.execute_command(*cmd)
    assert r.execute_command("LRANGE", "l", "-9223372036854775808",
                             "9223372036854775807") == ["a", "b"]
    assert r.execute_command("LINDEX", "l", "-9223372036854775808") is None
    assert r.execute_command("LREM", "l", "-9223372036854775808", "a") == 1
    with pytest.raises(redis.ResponseError, match="^syntax error"):
        r.execute_command("LINSERT", "l", "middle", "a", "b")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("LPOP", "l", "1", "2")
    r.set("s", "x")
    for cmd in (["LPUSH", "s", "a"], ["RPUSHX", "s", "a"], ["LPOP", "s"],
                ["LLEN", "s"], ["LRANGE", "s", "0", "1"], ["LINDEX", "s", "0"],
                ["LSET", "s", "0", "a"], ["LREM", "s", "0", "a"],
                ["LTRIM", "s", "0", "1"], ["LPOS", "s", "a"],
                ["LINSERT", "s", "before", "a", "b"], ["BLPOP", "s", "0"]):
        with pytest.raises(redis.ResponseError, match="^" + WRONGTYPE):
            r.execute_command(*cmd)
    assert r.get("s") == "x"


def test_resp3_nulls(r3):
    assert r3.call("LPOP", "nokey") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("LPOP", "nokey", "2") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("LMPOP", "1", "nokey", "LEFT") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("BLPOP", "nokey", "0.01") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("BLMOVE", "nokey", "nokey", "LEFT", "LEFT", "0.01") is None
    assert r3.last_raw == b"_\r\n"
    r3.call("RPUSH", "l", "a", "b")
    assert r3.call("LMPOP", "1", "l", "LEFT", "COUNT", "5") == ["l",
                                                               ["a", "b"]]
    assert r3.last_raw == b"*2\r\n$1\r\nl\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"


def test_resp2_null_array(raw):
    assert raw.call("BLPOP", "nokey", "0.01") is None
    assert raw.last_raw == b"*-1\r\n"
    # Redis 7.0 times every blocked list command out with a null array.
    assert raw.call("BRPOPLPUSH", "nokey", "x", "0.01") is None
    assert raw.last_raw == b"*-1\r\n"
    assert raw.call("BLMOVE", "nokey", "x", "LEFT", "LEFT", "0.01") is None
    assert raw.last_raw == b"*-1\r\n"
    assert raw.call("LPOP", "nokey", "1") is None
    assert raw.last_raw == b"*-1\r\n"


def test_timeout_errors(r):
    for bad in ["x", "", "1x", " 1", "nan"]:
        with pytest.raises(redis.ResponseError,
                           match="^timeout is not a float or out of range$"):
            r.execute_command("BLPOP", "k", bad)
    for bad in ["-1", "-0.5", "inf", "9223372036854775807"]:
        with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
            r.execute_command("BLPOP", "k", bad)
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        r.execute_command("BLMOVE", "k", "d", "LEFT", "LEFT", "-1")
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        r.execute_command("BLMPOP", "-1", "1", "k", "LEFT")


def blocked_count(r):
    return r.info("clients")["blocked_clients"]


def wait_blocked(r, n):
    for _ in range(200):
        if blocked_count(r) == n:
            return
        time.sleep(0.01)
    raise AssertionError("blocked_clients never reached %d" % n)


def in_thread(fn):
    out = {}

    def run():
        try:
            out["v"] = fn()
        except Exception as e:  # surfaced by the test
            out["e"] = e
    t = threading.Thread(target=run)
    t.start()
    return t, out


def test_blpop_woken_by_push(server, r):
    assert r.blpop(["{t}a", "{t}b"], timeout=0.05) is None
    r.rpush("{t}b", "ready")
    assert r.blpop(["{t}a", "{t}b"], timeout=1) == ("{t}b", "ready")
    c = server.client()
    t, out = in_thread(lambda: c.blpop(["{t}a", "{t}b"], timeout=5))
    wait_blocked(r, 1)
    r.lpush("{t}b", "x")
    t.join(5)
    assert out.get("v") == ("{t}b", "x")
    assert blocked_count(r) == 0
    assert r.exists("{t}b") == 0
    c.close()


def test_fifo_two_waiters(server, r):
    c1, c2 = server.client(), server.client()
    t1, o1 = in_thread(lambda: c1.brpop("q", timeout=5))
    wait_blocked(r, 1)
    t2, o2 = in_thread(lambda: c2.brpop("q", timeout=5))
    wait_blocked(r, 2)
    r.rpush("q", "first", "second")
    t1.join(5)
    t2.join(5)
    # The oldest waiter is served first; BRPOP takes from the tail.
    assert o1.get("v") == ("q", "second")
    assert o2.get("v") == ("q", "first")
    c1.close()
    c2.close()


def test_timeout_and_fraction(r):
    t0 = time.time()
    assert r.blpop("nokey", timeout=0.2) is None
    assert 0.15 < time.time() - t0 < 2
    assert r.execute_command("BLMPOP", "0.05", "1", "nokey", "LEFT") is None
    assert blocked_count(r) == 0


def test_blmove_and_chain(server, r):
    c1, c2 = server.client(), server.client()
    t1, o1 = in_thread(lambda: c1.blmove("{t}src", "{t}mid", 5, "LEFT",
                                         "RIGHT"))
    wait_blocked(r, 1)
    t2, o2 = in_thread(lambda: c2.blpop("{t}mid", timeout=5))
    wait_blocked(r, 2)
    r.rpush("{t}src", "v")
    t1.join(5)
    t2.join(5)
    assert o1.get("v") == "v"
    # The move made {t}mid ready: the BLPOP waiter took the element.
    assert o2.get("v") == ("{t}mid", "v")
    assert r.exists("{t}src", "{t}mid") == 0
    c1.close()
    c2.close()


def test_blmpop_count(server, r):
    c = server.client()
    t, out = in_thread(lambda: c.execute_command(
        "BLMPOP", "5", "2", "{t}a", "{t}b", "RIGHT", "COUNT", "2"))
    wait_blocked(r, 1)
    r.rpush("{t}b", "1", "2", "3")
    t.join(5)
    assert out.get("v") == ["{t}b", ["3", "2"]]
    assert r.lrange("{t}b", 0, -1) == ["1"]
    c.close()


def test_wrongtype_while_blocked_skipped(server, r):
    # Redis 7.0 serves only lists: a key turned into a string is skipped,
    # the waiter keeps waiting.
    c = server.client()
    t, out = in_thread(lambda: c.blpop("k", timeout=5))
    wait_blocked(r, 1)
    r.set("k", "str")
    time.sleep(0.1)
    assert blocked_count(r) == 1
    r.delete("k")
    r.rpush("k", "v")
    t.join(5)
    assert out.get("v") == ("k", "v")
    c.close()


def test_closed_waiter_removed(server, r):
    raw = server.raw(proto=2)
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    raw.close()
    wait_blocked(r, 0)
    r.rpush("k", "v")
    assert r.lrange("k", 0, -1) == ["v"]  # nobody took it


def test_pipeline_after_blocked(server, r):
    # Commands pipelined behind a blocking one wait for it, in order.
    raw = server.raw(proto=2)
    raw.send("BLPOP", "k", "5")
    raw.send("PING")
    wait_blocked(r, 1)
    r.rpush("k", "v")
    assert raw.read() == ["k", "v"]
    assert raw.read() == "PONG"
    raw.close()
