"""Representative commands over RESP3 (HELLO 3), checked against the exact
bytes Redis 7 sends.  `r3` is a raw client (python3-redis 4.3.4 has no
RESP3); last_raw is the exact reply."""
import pytest

import server as pkserver
from server import Double, Map, RespError


def test_hello3_map(r3):
    h = r3.call("HELLO", "3")
    assert r3.last_raw.startswith(b"%7\r\n")
    assert isinstance(h, Map)
    assert h["proto"] == 3
    assert b"$5\r\nproto\r\n:3\r\n" in r3.last_raw
    assert b"$7\r\nmodules\r\n*0\r\n" in r3.last_raw
    assert isinstance(h["id"], int)
    assert h["id"] == r3.call("CLIENT", "ID")
    assert h["role"] == "master"


def test_simple_replies(r3):
    assert r3.call("PING") == "PONG"
    assert r3.last_raw == b"+PONG\r\n"
    assert r3.call("SET", "k", "v") == "OK"
    assert r3.last_raw == b"+OK\r\n"
    assert r3.call("GET", "k") == "v"
    assert r3.last_raw == b"$1\r\nv\r\n"
    assert r3.call("ECHO", "x") == "x"
    assert r3.last_raw == b"$1\r\nx\r\n"
    assert r3.call("TYPE", "k") == "string"
    assert r3.last_raw == b"+string\r\n"


def test_null(r3):
    assert r3.call("GET", "nope") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("HGET", "nope", "f") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("ZSCORE", "nope", "m") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("SET", "k", "v", "NX") == "OK"
    assert r3.call("SET", "k", "v", "NX") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("GETDEL", "nope") is None
    assert r3.last_raw == b"_\r\n"
    assert r3.call("MGET", "k", "nope") == ["v", None]
    assert r3.last_raw == b"*2\r\n$1\r\nv\r\n_\r\n"
    assert r3.call("HMGET", "nope", "a") == [None]
    assert r3.last_raw == b"*1\r\n_\r\n"
    assert r3.call("CLIENT", "GETNAME") is None
    assert r3.last_raw == b"_\r\n"


def test_integers(r3):
    r3.call("SET", "k", "v")
    assert r3.call("EXISTS", "k", "k", "nope") == 2
    assert r3.last_raw == b":2\r\n"
    assert r3.call("INCR", "n") == 1
    assert r3.last_raw == b":1\r\n"
    assert r3.call("DBSIZE") == 2
    assert r3.last_raw == b":2\r\n"
    assert r3.call("TTL", "k") == -1
    assert r3.last_raw == b":-1\r\n"
    assert r3.call("DEL", "k") == 1
    assert r3.last_raw == b":1\r\n"


def test_hgetall_map(r3):
    assert r3.call("HSET", "h", "a", "1", "b", "2") == 2
    rep = r3.call("HGETALL", "h")
    assert isinstance(rep, Map)
    assert rep == {"a": "1", "b": "2"}
    assert r3.last_raw.startswith(b"%2\r\n")
    assert r3.call("HGETALL", "nope") == {}
    assert r3.last_raw == b"%0\r\n"


def test_zscore_double(r3):
    r3.call("ZADD", "z", "1.5", "a", "2", "b", "-inf", "lo", "inf", "hi")
    v = r3.call("ZSCORE", "z", "a")
    assert isinstance(v, Double) and v == 1.5
    assert r3.last_raw == b",1.5\r\n"
    assert r3.call("ZSCORE", "z", "b") == 2.0
    assert r3.last_raw == b",2\r\n"
    assert r3.call("ZSCORE", "z", "lo") == float("-inf")
    assert r3.last_raw == b",-inf\r\n"
    assert r3.call("ZSCORE", "z", "hi") == float("inf")
    assert r3.last_raw == b",inf\r\n"
    v = r3.call("ZADD", "z", "INCR", "1", "a")
    assert isinstance(v, Double) and v == 2.5
    assert r3.last_raw == b",2.5\r\n"
    assert r3.call("ZADD", "z", "NX", "INCR", "1", "a") is None
    assert r3.last_raw == b"_\r\n"


def test_zrange_withscores_pairs(r3):
    r3.call("ZADD", "z", "1", "a", "2.5", "b", "3", "c")
    rep = r3.call("ZRANGE", "z", "0", "-1", "WITHSCORES")
    assert rep == [["a", 1.0], ["b", 2.5], ["c", 3.0]]
    assert all(isinstance(p[1], Double) for p in rep)
    assert r3.last_raw == (b"*3\r\n*2\r\n$1\r\na\r\n,1\r\n"
                           b"*2\r\n$1\r\nb\r\n,2.5\r\n"
                           b"*2\r\n$1\r\nc\r\n,3\r\n")
    assert r3.call("ZRANGEBYSCORE", "z", "2", "+inf", "WITHSCORES") == \
        [["b", 2.5], ["c", 3.0]]
    assert r3.call("ZREVRANGE", "z", "0", "0", "WITHSCORES") == [["c", 3.0]]
    assert r3.call("ZRANGE", "z", "0", "-1") == ["a", "b", "c"]
    assert r3.last_raw == b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert r3.call("ZRANGE", "nope", "0", "-1", "WITHSCORES") == []
    assert r3.last_raw == b"*0\r\n"


def test_config_get_map(r3):
    rep = r3.call("CONFIG", "GET", "save")
    assert isinstance(rep, Map) and set(rep) == {"save"}
    assert r3.last_raw.startswith(b"%1\r\n$4\r\nsave\r\n")
    rep = r3.call("CONFIG", "GET", "maxmemory")
    assert isinstance(rep, Map) and set(rep) == {"maxmemory"}
    assert r3.call("CONFIG", "GET", "nosuch") == {}
    assert r3.last_raw == b"%0\r\n"


def test_info_verbatim(server, r3):
    text = r3.call("INFO", "server")
    assert isinstance(text, pkserver.Verbatim), r3.last_raw[:20]
    assert text.format == "txt"
    assert "# Server" in text
    assert ("process_id:%d\r\n" % server.pid) in text


def test_errors(r3):
    r3.call("HSET", "h", "f", "v")
    e = r3.call("GET", "h")
    assert isinstance(e, RespError)
    assert r3.last_raw == (b"-WRONGTYPE Operation against a key holding the "
                           b"wrong kind of value\r\n")
    e = r3.call("GET")
    assert e.message == "ERR wrong number of arguments for 'get' command"


def test_scan_resp3(r3):
    for i in range(20):
        r3.call("SET", "k%d" % i, "v")
    seen, cursor = set(), "0"
    for _ in range(1000):
        cursor, keys = r3.call("SCAN", cursor, "COUNT", "5")
        seen.update(keys)
        if cursor == "0":
            break
    assert seen == {"k%d" % i for i in range(20)}


def test_pipelined_resp3(r3):
    cmds = []
    for i in range(200):
        cmds.append(("SET", "k%d" % i, str(i)))
        cmds.append(("GET", "k%d" % i))
        cmds.append(("GET", "nope%d" % i))
    r3.send_raw(b"".join(pkserver.encode_command(*c) for c in cmds))
    for i in range(200):
        assert r3.read() == "OK"
        assert r3.read() == str(i)
        assert r3.read() is None
        assert r3.last_raw == b"_\r\n"


@pytest.mark.partkv_only
def test_pk_partitions_resp3(r3):
    r3.call("SET", "a", "1")
    rep = r3.call("PK.PARTITIONS")
    assert not isinstance(rep, RespError), rep
