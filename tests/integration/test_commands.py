"""Every command of DESIGN.md §4 (except the cluster family) with the exact
replies Redis 7 sends.  `raw` keeps replies as sent (errors as RespError
with their full text); `r` is python3-redis (RESP2, decode_responses).

Run the same file against redis-server with PARTKV_TEST_TARGET=redis."""
import os
import socket
import time

import pytest
import redis

import server as pkserver
from server import RespError

WRONGTYPE = ("WRONGTYPE Operation against a key holding the wrong kind of "
             "value")
NOTINT = "ERR value is not an integer or out of range"
OVERFLOW = "ERR increment or decrement would overflow"
NOTFLOAT = "ERR value is not a valid float"
SYNTAX = "ERR syntax error"


def arity(cmd):
    return "ERR wrong number of arguments for '%s' command" % cmd


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


# ---------------------------------------------------------------- connection

def test_ping(raw):
    assert raw.call("PING") == "PONG"
    assert raw.last_raw == b"+PONG\r\n"
    assert raw.call("PING", "hello world") == "hello world"
    assert raw.last_raw == b"$11\r\nhello world\r\n"
    assert err(raw.call("PING", "a", "b")) == arity("ping")
    assert raw.call("ping") == "PONG"  # case-insensitive names


def test_echo(raw):
    assert raw.call("ECHO", "hi") == "hi"
    assert raw.last_raw == b"$2\r\nhi\r\n"
    assert raw.call("ECHO", "") == ""
    assert raw.last_raw == b"$0\r\n\r\n"
    assert err(raw.call("ECHO")) == arity("echo")
    assert err(raw.call("ECHO", "a", "b")) == arity("echo")


def hello_fields(reply):
    if isinstance(reply, dict):
        return dict(reply)
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return dict(zip(reply[0::2], reply[1::2]))


def check_hello(h, proto):
    assert {"server", "version", "proto", "id", "mode", "role",
            "modules"} <= set(h), h
    assert isinstance(h["server"], str) and h["server"]
    assert isinstance(h["version"], str) and h["version"]
    assert h["proto"] == proto
    assert isinstance(h["id"], int)
    assert h["mode"] in ("standalone", "cluster"), h["mode"]
    assert h["role"] == "master"
    assert h["modules"] == []


def test_hello_2(raw):
    rep = raw.call("HELLO", "2")
    assert isinstance(rep, list) and len(rep) == 14, rep
    assert raw.last_raw.startswith(b"*14\r\n")
    h = hello_fields(rep)
    check_hello(h, 2)
    assert h["id"] == raw.call("CLIENT", "ID")


def test_hello_3(raw):
    rep = raw.call("HELLO", "3")
    assert raw.last_raw.startswith(b"%7\r\n"), raw.last_raw[:40]
    assert isinstance(rep, pkserver.Map)
    check_hello(rep, 3)
    # The connection now speaks RESP3: a missing key is '_'.
    assert raw.call("GET", "nosuchkey") is None
    assert raw.last_raw == b"_\r\n"
    # ... and back to RESP2.
    check_hello(hello_fields(raw.call("HELLO", "2")), 2)
    assert raw.call("GET", "nosuchkey") is None
    assert raw.last_raw == b"$-1\r\n"


def test_hello_without_version(raw):
    check_hello(hello_fields(raw.call("HELLO")), 2)


def test_hello_setname(raw):
    h = raw.call("HELLO", "3", "SETNAME", "myconn")
    check_hello(h, 3)
    assert raw.call("CLIENT", "GETNAME") == "myconn"


def test_hello_bad_versions(raw):
    assert err(raw.call("HELLO", "4")) == \
        "NOPROTO unsupported protocol version"
    assert err(raw.call("HELLO", "1")) == \
        "NOPROTO unsupported protocol version"
    assert err(raw.call("HELLO", "abc")) == \
        "ERR Protocol version is not an integer or out of range"
    # still RESP2 and still usable
    assert raw.call("GET", "nosuchkey") is None
    assert raw.last_raw == b"$-1\r\n"


def test_auth_without_password_configured(raw):
    assert err(raw.call("AUTH", "x")) == (
        "ERR AUTH <password> called without any password configured for "
        "the default user. Are you sure your configuration is correct?")


@pytest.fixture
def pwserver(server_factory):
    return server_factory(requirepass="s3cret pw")


def test_auth_required(pwserver):
    with pwserver.raw(auth=False) as c:
        assert err(c.call("GET", "k")) == "NOAUTH Authentication required."
        assert err(c.call("SET", "k", "v")) == \
            "NOAUTH Authentication required."
        assert err(c.call("AUTH", "wrong")) == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        assert err(c.call("AUTH", "default", "wrong")) == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        assert err(c.call("GET", "k")) == "NOAUTH Authentication required."
        assert c.call("AUTH", "s3cret pw") == "OK"
        assert c.last_raw == b"+OK\r\n"
        assert c.call("SET", "k", "v") == "OK"
        assert c.call("GET", "k") == "v"
    with pwserver.raw(auth=False) as c:
        assert c.call("AUTH", "default", "s3cret pw") == "OK"
        assert c.call("GET", "k") == "v"
        # RESET logs the connection out again.
        assert c.call("RESET") == "RESET"
        assert err(c.call("GET", "k")) == "NOAUTH Authentication required."
    # python3-redis with password=...
    c = pwserver.client()
    assert c.get("k") == "v"
    c.close()
    with pytest.raises((redis.AuthenticationError, redis.ResponseError)):
        pwserver.client(password="nope").ping()


def test_hello_auth(pwserver):
    with pwserver.raw(auth=False) as c:
        e = err(c.call("HELLO", "3"))
        assert e.startswith("NOAUTH HELLO must be called with the client "
                            "already authenticated"), e
        assert err(c.call("HELLO", "3", "AUTH", "default", "bad")) == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        h = c.call("HELLO", "3", "AUTH", "default", "s3cret pw")
        check_hello(h, 3)
        assert c.call("GET", "nokey") is None
        assert c.last_raw == b"_\r\n"


def test_select(raw):
    assert raw.call("SELECT", "0") == "OK"
    assert raw.last_raw == b"+OK\r\n"
    assert isinstance(raw.call("SELECT", "1"), RespError)
    assert isinstance(raw.call("SELECT", "abc"), RespError)
    assert err(raw.call("SELECT")) == arity("select")
    assert raw.call("PING") == "PONG"


def test_quit(server):
    c = server.raw()
    c.send("QUIT")
    assert c.read() == "OK"
    assert c.closed_by_peer(5.0)
    c.close()
    with server.raw() as c:
        assert c.call("PING") == "PONG"


def test_reset(raw):
    raw.call("HELLO", "3")
    assert raw.call("CLIENT", "SETNAME", "before") == "OK"
    assert raw.call("RESET") == "RESET"
    assert raw.last_raw == b"+RESET\r\n"
    assert raw.call("CLIENT", "GETNAME") is None
    assert raw.last_raw == b"$-1\r\n"  # back to RESP2


def test_client(raw):
    assert raw.call("CLIENT", "GETNAME") is None
    assert raw.call("CLIENT", "SETNAME", "conn-1") == "OK"
    assert raw.call("CLIENT", "GETNAME") == "conn-1"
    cid = raw.call("CLIENT", "ID")
    assert isinstance(cid, int) and cid > 0
    assert raw.call("CLIENT", "ID") == cid
    info = raw.call("CLIENT", "INFO")
    assert isinstance(info, str)
    fields = dict(kv.split("=", 1) for kv in info.split())
    assert fields["id"] == str(cid)
    assert fields["name"] == "conn-1"
    assert "addr" in fields
    assert isinstance(raw.call("CLIENT", "SETNAME", "has space"), RespError)
    assert raw.call("CLIENT", "GETNAME") == "conn-1"
    # a different connection has a different id
    with pkserver.RespClient(raw.sock.getpeername()[0],
                             raw.sock.getpeername()[1]) as other:
        assert other.call("CLIENT", "ID") != cid


def test_container_subcommand_errors(raw):
    """Redis 7.0 checks a container's subcommand and its arity before the
    command runs, with these texts."""
    assert err(raw.call("CLIENT", "KILL")) == (
        "ERR wrong number of arguments for 'client|kill' command")
    assert err(raw.call("CLIENT", "SETNAME")) == (
        "ERR wrong number of arguments for 'client|setname' command")
    assert err(raw.call("CLIENT", "ID", "x")) == (
        "ERR wrong number of arguments for 'client|id' command")
    assert err(raw.call("CLIENT", "NOSUCH")) == (
        "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.")
    assert err(raw.call("CLIENT", "UNBLOCK", "1", "2", "3")) == (
        "ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. "
        "Try CLIENT HELP.")
    assert raw.call("CLIENT", "HELP")[0].startswith("CLIENT <subcommand>")
    assert err(raw.call("CLUSTER", "KEYSLOT")) == (
        "ERR wrong number of arguments for 'cluster|keyslot' command")
    assert err(raw.call("CLUSTER", "GETKEYSINSLOT", "1")) == (
        "ERR wrong number of arguments for 'cluster|getkeysinslot' command")
    if pkserver.target() == "partkv":  # Redis: "cluster support disabled"
        assert raw.call("CLUSTER", "KEYSLOT", "foo") == 12182
    assert err(raw.call("MEMORY", "NOSUCH")) == (
        "ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP.")


def test_client_kill_and_list_filters(server, raw):
    """CLIENT KILL in both forms and CLIENT LIST's filters, with Redis
    7.0's replies and error texts."""
    def conn(name):
        c = server.raw(proto=2)
        assert c.call("CLIENT", "SETNAME", name) == "OK"
        return c, c.call("CLIENT", "ID"), c.call("CLIENT", "INFO")

    a, aid, ainfo = conn("ka")
    b, bid, binfo = conn("kb")
    me = raw.call("CLIENT", "ID")
    assert " cmd=client|info " in ainfo  # a container's subcommand shown
    assert " cmd=client|list " in raw.call("CLIENT", "LIST", "ID", str(me))
    listed = raw.call("CLIENT", "LIST", "ID", str(aid), str(bid))
    assert sorted(l.split()[0] for l in listed.splitlines()) == sorted(
        ["id=%d" % aid, "id=%d" % bid])
    assert "id=%d " % me in raw.call("CLIENT", "LIST", "TYPE", "normal")
    assert raw.call("CLIENT", "LIST", "TYPE", "pubsub") == ""
    assert err(raw.call("CLIENT", "LIST", "TYPE", "bogus")) == (
        "ERR Unknown client type 'bogus'")
    assert raw.call("CLIENT", "LIST", "ID", "0") == ""
    assert err(raw.call("CLIENT", "LIST", "ID", "x")) == (
        "ERR Invalid client ID")
    assert err(raw.call("CLIENT", "LIST", "FOO")) == "ERR syntax error"
    # The old form: an address, +OK or no such client.
    addr = dict(kv.split("=", 1) for kv in ainfo.split())["addr"]
    assert raw.call("CLIENT", "KILL", addr) == "OK"
    assert err(raw.call("CLIENT", "KILL", addr)) == "ERR No such client"
    with pytest.raises((pkserver.ConnectionClosed, OSError)):
        a.call("PING")  # closed
    # The new form: filters, the count killed; SKIPME yes by default.
    assert raw.call("CLIENT", "KILL", "ID", str(bid)) == 1
    assert raw.call("CLIENT", "KILL", "ID", str(bid)) == 0
    assert raw.call("CLIENT", "KILL", "ID", str(me)) == 0
    assert err(raw.call("CLIENT", "KILL", "ID", "0")) == (
        "ERR client-id should be greater than 0")
    assert err(raw.call("CLIENT", "KILL", "TYPE", "x")) == (
        "ERR Unknown client type 'x'")
    assert err(raw.call("CLIENT", "KILL", "USER", "nobody")) == (
        "ERR No such user 'nobody'")
    assert err(raw.call("CLIENT", "KILL", "SKIPME", "maybe")) == (
        "ERR syntax error")
    assert err(raw.call("CLIENT", "KILL", "ID")) == "ERR No such client"
    assert err(raw.call("CLIENT", "KILL", "ID", "1", "TYPE")) == (
        "ERR syntax error")
    c, cid, _ = conn("kc")
    d, did, _ = conn("kd")
    assert raw.call("CLIENT", "KILL", "USER", "default", "TYPE",
                    "normal") == 2
    assert raw.call("PING") == "PONG"  # skipped itself
    assert raw.call("CLIENT", "NO-EVICT", "on") == "OK"
    # SKIPME no: the caller too, after its reply.
    assert raw.call("CLIENT", "KILL", "ID", str(me), "SKIPME", "no") == 1
    with pytest.raises((pkserver.ConnectionClosed, OSError)):
        raw.call("PING")
    for x in (a, b, c, d):
        x.close()


# ------------------------------------------------------------------- COMMAND

SECTION4 = """PING ECHO HELLO AUTH SELECT QUIT RESET COMMAND CLIENT INFO CONFIG
DBSIZE SCAN TYPE GET SET GETDEL MGET MSET DEL EXISTS INCR INCRBY DECR DECRBY
APPEND STRLEN EXPIRE PEXPIRE TTL PTTL PERSIST HSET HGET HMGET HDEL HGETALL
HLEN HEXISTS HINCRBY ZADD ZREM ZSCORE ZCARD ZRANGE ZRANGEBYSCORE ZREVRANGE
ZRANGEBYLEX""".split()  # the cluster family is tested elsewhere


def test_command_count_and_list(raw):
    n = raw.call("COMMAND", "COUNT")
    assert isinstance(n, int)
    table = raw.call("COMMAND")
    assert isinstance(table, list)
    assert n == len(table)
    names = {e[0].lower() for e in table}
    missing = [c for c in SECTION4 if c.lower() not in names]
    assert not missing, "COMMAND lacks %s" % missing
    for e in table:
        assert len(e) >= 6, e
        assert isinstance(e[1], int) and isinstance(e[2], list)
        assert all(isinstance(x, int) for x in e[3:6]), e


def test_command_info(raw):
    rep = raw.call("COMMAND", "INFO", "get", "set", "mget", "mset", "nosuch")
    assert len(rep) == 5
    get, set_, mget, mset, nosuch = rep
    assert nosuch is None
    assert get[0] == "get" and get[1] == 2 and get[3:6] == [1, 1, 1]
    assert "readonly" in get[2]
    assert set_[0] == "set" and set_[1] == -3 and set_[3:6] == [1, 1, 1]
    assert "write" in set_[2]
    assert mget[0] == "mget" and mget[1] == -2 and mget[3:6] == [1, -1, 1]
    assert mset[0] == "mset" and mset[1] == -3 and mset[3:6] == [1, -1, 2]
    # every §4 command is described
    rep = raw.call("COMMAND", "INFO", *SECTION4)
    assert [e is not None for e in rep] == [True] * len(SECTION4), \
        [c for c, e in zip(SECTION4, rep) if e is None]


def test_command_docs(raw):
    rep = raw.call("COMMAND", "DOCS", "get")
    assert not isinstance(rep, RespError), rep


# ---------------------------------------------------------------------- INFO

def parse_info(text):
    sections, cur = {}, None
    for line in text.split("\r\n"):
        if not line:
            continue
        if line.startswith("# "):
            cur = line[2:].strip()
            sections[cur] = {}
        else:
            assert cur is not None, "INFO line before any section: %r" % line
            k, _, v = line.partition(":")
            assert _, "INFO line without ':' %r" % line
            sections[cur][k] = v
    return sections


def test_info(server, raw):
    raw.call("SET", "a", "1")
    raw.call("SET", "b", "2")
    raw.call("HSET", "h", "f", "v")
    text = raw.call("INFO")
    assert isinstance(text, str)
    s = parse_info(text)
    for name in ("Server", "Clients", "Memory", "Persistence", "Stats",
                 "Keyspace"):
        assert name in s, "INFO lacks # %s: %s" % (name, list(s))
    assert int(s["Server"]["process_id"]) == server.pid
    assert int(s["Server"]["tcp_port"]) == server.port
    assert int(s["Clients"]["connected_clients"]) >= 1
    assert "used_memory" in s["Memory"]
    ks = dict(kv.split("=") for kv in s["Keyspace"]["db0"].split(","))
    assert int(ks["keys"]) == 3
    # one section
    only = parse_info(raw.call("INFO", "server"))
    assert list(only) == ["Server"]
    assert int(only["Server"]["tcp_port"]) == server.port
    # python3-redis parses it too
    c = server.client()
    assert c.info("server")["process_id"] == server.pid
    assert c.info()["tcp_port"] == server.port
    c.close()


def test_info_used_memory_is_the_heap(server, raw):
    """used_memory counts what the node holds on its heap, as Redis's
    counts its allocator's: a client's half-sent 8 MB argument is in it
    while the client waits, and is gone once it leaves."""
    def used():
        return int(parse_info(raw.call("INFO", "memory"))["Memory"]
                   ["used_memory"])

    def wait_for(ok):
        deadline = time.monotonic() + 10
        while not ok(used()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return used()

    base = used()
    big = 8 << 20
    with socket.create_connection((server.host, server.port)) as s:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (big + 1))
        s.sendall(b"x" * big)
        held = wait_for(lambda u: u >= base + big * 3 // 4)
        assert held >= base + big * 3 // 4, (base, held)
    after = wait_for(lambda u: u <= base + big // 4)
    assert after <= base + big // 4, (base, held, after)


def test_info_keyspace_empty(raw):
    s = parse_info(raw.call("INFO", "keyspace"))
    assert s == {"Keyspace": {}}


@pytest.mark.partkv_only
def test_info_partitions(raw):
    for i in range(50):
        raw.call("SET", "pk%d" % i, "v")
    text = raw.call("INFO", "partitions")
    assert isinstance(text, str)
    assert "# Partitions" in text, text[:500]
    s = parse_info(text)
    assert s["Partitions"], "empty # Partitions section"


@pytest.mark.partkv_only
def test_pk_partitions(raw):
    for i in range(50):
        raw.call("SET", "pk%d" % i, "v")
    rep = raw.call("PK.PARTITIONS")
    assert not isinstance(rep, RespError), rep
    assert rep, "PK.PARTITIONS returned nothing"


# -------------------------------------------------------------------- CONFIG

def test_config_get(server, raw, r):
    for name in ("save", "appendonly", "maxmemory"):
        rep = raw.call("CONFIG", "GET", name)
        assert isinstance(rep, list) and len(rep) == 2, (name, rep)
        assert rep[0] == name
        assert isinstance(rep[1], str)
    assert raw.call("CONFIG", "GET", "appendonly")[1] in ("yes", "no")
    assert raw.call("CONFIG", "GET", "maxmemory")[1].isdigit()
    # redis-benchmark pipelines exactly these two
    raw.send_raw(pkserver.encode_command("CONFIG", "GET", "save")
                 + pkserver.encode_command("CONFIG", "GET", "appendonly"))
    assert raw.read()[0] == "save"
    assert raw.read()[0] == "appendonly"
    assert raw.call("CONFIG", "GET", "nosuchparameter") == []
    d = r.config_get("maxmemory")
    assert set(d) == {"maxmemory"}


# --------------------------------------------------------------- keyspace

def test_dbsize_type_flushall(raw):
    assert raw.call("DBSIZE") == 0
    raw.call("SET", "s", "v")
    raw.call("HSET", "h", "f", "v")
    raw.call("ZADD", "z", "1", "m")
    assert raw.call("DBSIZE") == 3
    assert raw.call("TYPE", "s") == "string"
    assert raw.last_raw == b"+string\r\n"
    assert raw.call("TYPE", "h") == "hash"
    assert raw.call("TYPE", "z") == "zset"
    assert raw.call("TYPE", "nothing") == "none"
    assert raw.last_raw == b"+none\r\n"
    assert raw.call("FLUSHALL") == "OK"
    assert raw.call("DBSIZE") == 0
    assert raw.call("GET", "s") is None
    assert raw.call("HGETALL", "h") == []
    assert raw.call("TYPE", "z") == "none"


def scan_all(raw, *opts):
    seen, cursor, rounds = [], "0", 0
    while True:
        rep = raw.call("SCAN", cursor, *opts)
        assert isinstance(rep, list) and len(rep) == 2, rep
        cursor, keys = rep
        assert isinstance(cursor, str) and cursor.isdigit(), cursor
        seen.extend(keys)
        rounds += 1
        assert rounds < 100000
        if cursor == "0":
            return seen, rounds


def test_scan(raw, r):
    strings = {"user:%d" % i for i in range(300)}
    hashes = {"hash:%d" % i for i in range(100)}
    zsets = {"zset:%d" % i for i in range(50)}
    p = r.pipeline(transaction=False)
    for k in strings:
        p.set(k, "v")
    for k in hashes:
        p.hset(k, "f", "v")
    for k in zsets:
        p.zadd(k, {"m": 1})
    p.execute()
    everything = strings | hashes | zsets

    seen, rounds = scan_all(raw, "COUNT", "50")
    assert set(seen) == everything
    assert rounds > 1  # COUNT 50 over 450 keys takes several calls

    seen, _ = scan_all(raw)
    assert set(seen) == everything

    seen, _ = scan_all(raw, "MATCH", "user:1*", "COUNT", "100")
    assert set(seen) == {k for k in strings if k.startswith("user:1")}

    seen, _ = scan_all(raw, "TYPE", "hash", "COUNT", "1000")
    assert set(seen) == hashes
    seen, _ = scan_all(raw, "TYPE", "zset", "MATCH", "zset:1?")
    assert set(seen) == {"zset:%d" % i for i in range(10, 20)}
    seen, _ = scan_all(raw, "TYPE", "string")
    assert set(seen) == strings

    assert set(r.scan_iter(match="hash:*", count=7)) == hashes
    assert set(r.scan_iter(_type="zset")) == zsets
    assert err(raw.call("SCAN", "abc")) == "ERR invalid cursor"


def test_scan_empty(raw):
    assert raw.call("SCAN", "0") == ["0", []]


# ------------------------------------------------------------------ strings

def test_get_set(raw):
    assert raw.call("GET", "k") is None
    assert raw.last_raw == b"$-1\r\n"
    assert raw.call("SET", "k", "v1") == "OK"
    assert raw.last_raw == b"+OK\r\n"
    assert raw.call("GET", "k") == "v1"
    assert raw.call("SET", "k", "v2") == "OK"
    assert raw.call("GET", "k") == "v2"
    assert raw.call("SET", "empty", "") == "OK"
    assert raw.call("GET", "empty") == ""
    assert raw.last_raw == b"$0\r\n\r\n"
    assert err(raw.call("GET")) == arity("get")
    assert err(raw.call("GET", "a", "b")) == arity("get")
    assert err(raw.call("SET", "k")) == arity("set")


def test_set_nx_xx(raw):
    assert raw.call("SET", "k", "a", "XX") is None
    assert raw.last_raw == b"$-1\r\n"
    assert raw.call("GET", "k") is None
    assert raw.call("SET", "k", "a", "NX") == "OK"
    assert raw.call("SET", "k", "b", "NX") is None
    assert raw.call("GET", "k") == "a"
    assert raw.call("SET", "k", "c", "XX") == "OK"
    assert raw.call("GET", "k") == "c"
    assert err(raw.call("SET", "k", "d", "NX", "XX")) == SYNTAX
    assert err(raw.call("SET", "k", "d", "BOGUS")) == SYNTAX
    assert raw.call("GET", "k") == "c"


def test_set_get_option(raw):
    assert raw.call("SET", "k", "one", "GET") is None
    assert raw.call("SET", "k", "two", "GET") == "one"
    assert raw.call("GET", "k") == "two"
    assert raw.call("SET", "k", "three", "NX", "GET") == "two"
    assert raw.call("GET", "k") == "two"
    assert raw.call("SET", "new", "x", "XX", "GET") is None
    assert raw.call("GET", "new") is None
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("SET", "h", "x", "GET")) == WRONGTYPE
    assert raw.call("TYPE", "h") == "hash"
    # plain SET overwrites any type
    assert raw.call("SET", "h", "x") == "OK"
    assert raw.call("TYPE", "h") == "string"


def test_set_ex_px(raw):
    assert raw.call("SET", "k", "v", "EX", "100") == "OK"
    assert 98 <= raw.call("TTL", "k") <= 100
    assert raw.call("SET", "k", "v", "PX", "50000") == "OK"
    assert 48000 <= raw.call("PTTL", "k") <= 50000
    assert raw.call("SET", "k", "v") == "OK"
    assert raw.call("TTL", "k") == -1  # SET clears the TTL
    assert raw.call("SET", "k", "v", "ex", "10", "nx") is None
    assert raw.call("SET", "k", "v2", "XX", "EX", "10") == "OK"
    assert 8 <= raw.call("TTL", "k") <= 10
    assert err(raw.call("SET", "k", "v", "EX", "0")) == \
        "ERR invalid expire time in 'set' command"
    assert err(raw.call("SET", "k", "v", "EX", "-5")) == \
        "ERR invalid expire time in 'set' command"
    assert err(raw.call("SET", "k", "v", "PX", "0")) == \
        "ERR invalid expire time in 'set' command"
    assert err(raw.call("SET", "k", "v", "EX", "abc")) == NOTINT
    assert err(raw.call("SET", "k", "v", "EX")) == SYNTAX
    assert err(raw.call("SET", "k", "v", "EX", "10", "PX", "100")) == SYNTAX
    assert raw.call("GET", "k") == "v2"


def test_getdel(raw):
    raw.call("SET", "k", "v")
    assert raw.call("GETDEL", "k") == "v"
    assert raw.call("GETDEL", "k") is None
    assert raw.call("EXISTS", "k") == 0
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("GETDEL", "h")) == WRONGTYPE
    assert raw.call("EXISTS", "h") == 1


def test_mget_mset(raw):
    assert raw.call("MSET", "a", "1", "b", "2", "c", "3") == "OK"
    assert raw.last_raw == b"+OK\r\n"
    raw.call("HSET", "h", "f", "v")
    assert raw.call("MGET", "a", "nope", "c", "h", "b") == \
        ["1", None, "3", None, "2"]
    assert raw.last_raw == (b"*5\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$-1\r\n"
                            b"$1\r\n2\r\n")
    assert raw.call("MSET", "a", "x", "a", "y") == "OK"
    assert raw.call("GET", "a") == "y"  # last one wins
    assert err(raw.call("MSET", "a")) == arity("mset")
    assert err(raw.call("MSET", "a", "1", "b")) == arity("mset")
    assert err(raw.call("MGET")) == arity("mget")
    raw.call("SET", "t", "v", "EX", "100")
    raw.call("MSET", "t", "w")
    assert raw.call("TTL", "t") == -1


def test_del_exists(raw):
    raw.call("MSET", "a", "1", "b", "2")
    raw.call("HSET", "h", "f", "v")
    raw.call("ZADD", "z", "1", "m")
    assert raw.call("EXISTS", "a") == 1
    assert raw.call("EXISTS", "a", "a", "a", "nope", "b") == 4
    assert raw.call("EXISTS", "h", "z", "nope") == 2
    assert raw.call("EXISTS", "nope") == 0
    assert raw.last_raw == b":0\r\n"
    assert raw.call("DEL", "a", "nope", "h", "z", "a") == 3
    assert raw.call("EXISTS", "a", "h", "z") == 0
    assert raw.call("HGETALL", "h") == []
    assert raw.call("ZCARD", "z") == 0
    assert raw.call("DEL", "b") == 1
    assert raw.call("DEL", "b") == 0
    assert err(raw.call("DEL")) == arity("del")
    assert err(raw.call("EXISTS")) == arity("exists")


def test_incr_decr(raw):
    assert raw.call("INCR", "n") == 1
    assert raw.last_raw == b":1\r\n"
    assert raw.call("INCR", "n") == 2
    assert raw.call("INCRBY", "n", "40") == 42
    assert raw.call("DECR", "n") == 41
    assert raw.call("DECRBY", "n", "50") == -9
    assert raw.call("INCRBY", "n", "-1") == -10
    assert raw.call("GET", "n") == "-10"
    assert raw.call("DECRBY", "new", "5") == -5
    assert raw.call("DECR", "new2") == -1
    raw.call("SET", "s", "100")
    assert raw.call("INCR", "s") == 101
    raw.call("SET", "t", "7", "EX", "100")
    assert raw.call("INCR", "t") == 8
    assert raw.call("TTL", "t") > 0  # INCR keeps the TTL


@pytest.mark.parametrize("bad", ["abc", "1.5", " 1", "1 ", "", "010",
                                 "99999999999999999999", "0x10", "+"])
def test_incr_not_integer(raw, bad):
    raw.call("SET", "k", bad)
    assert err(raw.call("INCR", "k")) == NOTINT
    assert err(raw.call("DECR", "k")) == NOTINT
    assert err(raw.call("INCRBY", "k", "1")) == NOTINT
    assert raw.call("GET", "k") == bad


def test_incrby_bad_increment(raw):
    raw.call("SET", "k", "5")
    for bad in ("abc", "1.0", "", "9223372036854775808"):
        assert err(raw.call("INCRBY", "k", bad)) == NOTINT
        assert err(raw.call("DECRBY", "k", bad)) == NOTINT
    assert raw.call("GET", "k") == "5"
    assert err(raw.call("INCR")) == arity("incr")
    assert err(raw.call("INCRBY", "k")) == arity("incrby")


def test_incr_overflow(raw):
    raw.call("SET", "k", "9223372036854775807")
    assert err(raw.call("INCR", "k")) == OVERFLOW
    assert err(raw.call("INCRBY", "k", "1")) == OVERFLOW
    assert raw.call("DECR", "k") == 9223372036854775806
    raw.call("SET", "k", "-9223372036854775808")
    assert err(raw.call("DECR", "k")) == OVERFLOW
    assert err(raw.call("DECRBY", "k", "1")) == OVERFLOW
    assert err(raw.call("INCRBY", "k", "-1")) == OVERFLOW
    assert raw.call("GET", "k") == "-9223372036854775808"
    raw.call("SET", "m", "1")
    assert raw.call("INCRBY", "m", "9223372036854775806") == \
        9223372036854775807
    assert raw.call("INCRBY", "z", "-9223372036854775808") == \
        -9223372036854775808


def test_incr_wrongtype(raw):
    raw.call("HSET", "h", "f", "1")
    for cmd in (("INCR", "h"), ("DECR", "h"), ("INCRBY", "h", "1"),
                ("DECRBY", "h", "1"), ("GET", "h"), ("APPEND", "h", "x"),
                ("STRLEN", "h")):
        assert err(raw.call(*cmd)) == WRONGTYPE, cmd


def test_append_strlen(raw):
    assert raw.call("STRLEN", "k") == 0
    assert raw.call("APPEND", "k", "hello") == 5
    assert raw.call("APPEND", "k", " world") == 11
    assert raw.call("GET", "k") == "hello world"
    assert raw.call("STRLEN", "k") == 11
    assert raw.call("APPEND", "k", "") == 11
    raw.call("SET", "n", "10")
    assert raw.call("APPEND", "n", "5") == 3
    assert raw.call("INCR", "n") == 106
    assert raw.call("STRLEN", "n") == 3
    raw.call("SET", "e", "v", "EX", "100")
    raw.call("APPEND", "e", "w")
    assert raw.call("TTL", "e") > 0  # APPEND keeps the TTL
    assert raw.call("STRLEN", "\u00e9") == 0
    raw.call("SET", "u", "\u00e9\u00e9")
    assert raw.call("STRLEN", "u") == 4  # bytes, not characters


def test_expire_ttl_persist(raw):
    assert raw.call("TTL", "k") == -2
    assert raw.call("PTTL", "k") == -2
    assert raw.call("EXPIRE", "k", "100") == 0
    assert raw.call("PERSIST", "k") == 0
    raw.call("SET", "k", "v")
    assert raw.call("TTL", "k") == -1
    assert raw.call("PTTL", "k") == -1
    assert raw.call("PERSIST", "k") == 0
    assert raw.call("EXPIRE", "k", "100") == 1
    assert raw.last_raw == b":1\r\n"
    assert 99 <= raw.call("TTL", "k") <= 100
    assert 98000 <= raw.call("PTTL", "k") <= 100000
    assert raw.call("PEXPIRE", "k", "5500") == 1
    assert 4000 <= raw.call("PTTL", "k") <= 5500
    assert raw.call("TTL", "k") in (5, 6)  # rounded, as Redis does
    assert raw.call("PERSIST", "k") == 1
    assert raw.call("TTL", "k") == -1
    assert raw.call("GET", "k") == "v"
    # expire on hashes and sorted sets too
    raw.call("HSET", "h", "f", "v")
    raw.call("ZADD", "z", "1", "m")
    assert raw.call("EXPIRE", "h", "50") == 1
    assert raw.call("PEXPIRE", "z", "50000") == 1
    assert 0 < raw.call("TTL", "h") <= 50
    assert 0 < raw.call("PTTL", "z") <= 50000
    # zero / negative timeouts delete at once
    assert raw.call("EXPIRE", "k", "0") == 1
    assert raw.call("EXISTS", "k") == 0
    assert raw.call("PEXPIRE", "h", "-1") == 1
    assert raw.call("EXISTS", "h") == 0
    assert raw.call("HGETALL", "h") == []
    assert raw.call("EXPIRE", "z", "-100") == 1
    assert raw.call("ZCARD", "z") == 0
    # bad arguments
    raw.call("SET", "k", "v")
    assert err(raw.call("EXPIRE", "k", "abc")) == NOTINT
    assert err(raw.call("EXPIRE", "k", "1.5")) == NOTINT
    assert err(raw.call("EXPIRE", "k", "9223372036854775807")) == \
        "ERR invalid expire time in 'expire' command"
    assert err(raw.call("PEXPIRE", "k", "9223372036854775807")) == \
        "ERR invalid expire time in 'pexpire' command"
    assert err(raw.call("EXPIRE", "k")) == arity("expire")
    assert err(raw.call("TTL")) == arity("ttl")
    assert raw.call("TTL", "k") == -1


# ------------------------------------------------------------------- hashes

def test_hset_hget(raw):
    assert raw.call("HSET", "h", "a", "1", "b", "2", "c", "3") == 3
    assert raw.call("HSET", "h", "a", "10", "d", "4") == 1
    assert raw.call("HGET", "h", "a") == "10"
    assert raw.call("HGET", "h", "zz") is None
    assert raw.call("HGET", "nokey", "a") is None
    assert raw.call("HMGET", "h", "a", "nope", "d") == ["10", None, "4"]
    assert raw.call("HMGET", "nokey", "a", "b") == [None, None]
    assert raw.call("HLEN", "h") == 4
    assert raw.call("HLEN", "nokey") == 0
    assert raw.call("HEXISTS", "h", "b") == 1
    assert raw.call("HEXISTS", "h", "nope") == 0
    assert raw.call("HEXISTS", "nokey", "b") == 0
    rep = raw.call("HGETALL", "h")
    assert len(rep) == 8
    assert dict(zip(rep[0::2], rep[1::2])) == \
        {"a": "10", "b": "2", "c": "3", "d": "4"}
    assert raw.call("HGETALL", "nokey") == []
    assert raw.last_raw == b"*0\r\n"
    assert err(raw.call("HSET", "h", "f")) == arity("hset")
    assert err(raw.call("HSET", "h", "f", "v", "g")) == arity("hset")
    assert err(raw.call("HGET", "h")) == arity("hget")
    assert err(raw.call("HMGET", "h")) == arity("hmget")


def test_hdel(raw):
    raw.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert raw.call("HDEL", "h", "a", "nope", "a") == 1
    assert raw.call("HDEL", "h", "b", "c") == 2
    assert raw.call("EXISTS", "h") == 0  # last field gone: key gone
    assert raw.call("TYPE", "h") == "none"
    assert raw.call("HDEL", "h", "x") == 0
    assert err(raw.call("HDEL", "h")) == arity("hdel")


def test_hincrby(raw):
    assert raw.call("HINCRBY", "h", "n", "5") == 5
    assert raw.call("HINCRBY", "h", "n", "-7") == -2
    assert raw.call("HGET", "h", "n") == "-2"
    raw.call("HSET", "h", "s", "abc", "big", "9223372036854775807")
    assert err(raw.call("HINCRBY", "h", "s", "1")) == \
        "ERR hash value is not an integer"
    assert err(raw.call("HINCRBY", "h", "n", "x")) == NOTINT
    assert err(raw.call("HINCRBY", "h", "big", "1")) == OVERFLOW
    assert raw.call("HGET", "h", "big") == "9223372036854775807"


def test_hash_wrongtype(raw):
    raw.call("SET", "s", "v")
    for cmd in (("HSET", "s", "f", "v"), ("HGET", "s", "f"),
                ("HMGET", "s", "f"), ("HDEL", "s", "f"), ("HGETALL", "s"),
                ("HLEN", "s"), ("HEXISTS", "s", "f"),
                ("HINCRBY", "s", "f", "1")):
        assert err(raw.call(*cmd)) == WRONGTYPE, cmd
    assert raw.call("GET", "s") == "v"


def test_hash_many_fields(r):
    fields = {"f%04d" % i: "v%d" % i for i in range(2000)}
    assert r.hset("big", mapping=fields) == 2000
    assert r.hlen("big") == 2000
    assert r.hgetall("big") == fields
    assert r.hmget("big", ["f0000", "f1999", "nope"]) == ["v0", "v1999",
                                                         None]


# --------------------------------------------------------------- sorted sets

def test_zadd_basic(raw):
    assert raw.call("ZADD", "z", "1", "a", "2", "b", "3", "c") == 3
    assert raw.call("ZADD", "z", "10", "a", "4", "d") == 1
    assert raw.call("ZCARD", "z") == 4
    assert raw.call("ZSCORE", "z", "a") == "10"
    assert raw.last_raw == b"$2\r\n10\r\n"
    assert raw.call("ZSCORE", "z", "nope") is None
    assert raw.call("ZSCORE", "nokey", "a") is None
    assert raw.call("ZCARD", "nokey") == 0
    raw.call("ZADD", "z", "1.5", "half", "-inf", "lo", "+inf", "hi")
    assert raw.call("ZSCORE", "z", "half") == "1.5"
    assert raw.call("ZSCORE", "z", "lo") == "-inf"
    assert raw.call("ZSCORE", "z", "hi") == "inf"
    raw.call("ZADD", "z", "-0.25", "neg")
    assert raw.call("ZSCORE", "z", "neg") == "-0.25"
    raw.call("ZADD", "z", "1e3", "sci")
    assert raw.call("ZSCORE", "z", "sci") == "1000"
    assert err(raw.call("ZADD", "z", "nan", "x")) == NOTFLOAT
    assert err(raw.call("ZADD", "z", "abc", "x")) == NOTFLOAT
    assert err(raw.call("ZADD", "z", "1", "x", "2")) == SYNTAX
    assert err(raw.call("ZADD", "z", "1")) == arity("zadd")
    assert raw.call("ZSCORE", "z", "x") is None


def test_zadd_nx_xx(raw):
    raw.call("ZADD", "z", "1", "a")
    assert raw.call("ZADD", "z", "NX", "5", "a", "2", "b") == 1
    assert raw.call("ZSCORE", "z", "a") == "1"
    assert raw.call("ZSCORE", "z", "b") == "2"
    assert raw.call("ZADD", "z", "XX", "5", "a", "3", "c") == 0
    assert raw.call("ZSCORE", "z", "a") == "5"
    assert raw.call("ZSCORE", "z", "c") is None
    assert raw.call("ZADD", "nokey", "XX", "1", "a") == 0
    assert raw.call("EXISTS", "nokey") == 0
    assert err(raw.call("ZADD", "z", "NX", "XX", "1", "a")) == \
        "ERR XX and NX options at the same time are not compatible"


def test_zadd_gt_lt_ch(raw):
    raw.call("ZADD", "z", "5", "a", "5", "b")
    assert raw.call("ZADD", "z", "GT", "3", "a", "7", "b", "1", "c") == 1
    assert raw.call("ZSCORE", "z", "a") == "5"
    assert raw.call("ZSCORE", "z", "b") == "7"
    assert raw.call("ZSCORE", "z", "c") == "1"  # GT still adds new members
    assert raw.call("ZADD", "z", "LT", "3", "a", "9", "b") == 0
    assert raw.call("ZSCORE", "z", "a") == "3"
    assert raw.call("ZSCORE", "z", "b") == "7"
    # CH counts changed + added
    assert raw.call("ZADD", "z", "CH", "4", "a", "7", "b", "1", "d") == 2
    assert raw.call("ZADD", "z", "GT", "CH", "10", "a", "1", "b") == 1
    assert raw.call("ZADD", "z", "XX", "CH", "11", "a", "1", "zz") == 1
    assert err(raw.call("ZADD", "z", "GT", "LT", "1", "a")) == \
        "ERR GT, LT, and/or NX options at the same time are not compatible"
    assert err(raw.call("ZADD", "z", "GT", "NX", "1", "a")) == \
        "ERR GT, LT, and/or NX options at the same time are not compatible"


def test_zadd_incr(raw):
    assert raw.call("ZADD", "z", "INCR", "2.5", "a") == "2.5"
    assert raw.call("ZADD", "z", "INCR", "2.5", "a") == "5"
    assert raw.call("ZADD", "z", "INCR", "-10", "a") == "-5"
    assert raw.call("ZADD", "z", "NX", "INCR", "1", "a") is None
    assert raw.last_raw == b"$-1\r\n"
    assert raw.call("ZADD", "z", "XX", "INCR", "1", "new") is None
    assert raw.call("ZADD", "z", "XX", "INCR", "1", "a") == "-4"
    assert raw.call("ZADD", "z", "GT", "INCR", "-1", "a") is None
    assert raw.call("ZSCORE", "z", "a") == "-4"
    assert err(raw.call("ZADD", "z", "INCR", "1", "a", "2", "b")) == \
        "ERR INCR option supports a single increment-element pair"
    raw.call("ZADD", "z", "inf", "i")
    assert err(raw.call("ZADD", "z", "INCR", "-inf", "i")) == \
        "ERR resulting score is not a number (NaN)"


def test_zrem(raw):
    raw.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    assert raw.call("ZREM", "z", "a", "nope", "a") == 1
    assert raw.call("ZCARD", "z") == 2
    assert raw.call("ZREM", "z", "b", "c") == 2
    assert raw.call("EXISTS", "z") == 0
    assert raw.call("ZREM", "z", "b") == 0
    assert err(raw.call("ZREM", "z")) == arity("zrem")


@pytest.fixture
def zs(raw):
    # scores chosen so that ties are ordered by member
    raw.call("ZADD", "z", "1", "a", "2", "b", "2", "bb", "3", "c", "4", "d",
             "5", "e", "-1", "neg")
    # all-equal scores for lex ranges
    raw.call("ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0",
             "e", "0", "f", "0", "ab")
    return raw


def test_zrange_index(zs):
    raw = zs
    assert raw.call("ZRANGE", "z", "0", "-1") == \
        ["neg", "a", "b", "bb", "c", "d", "e"]
    assert raw.call("ZRANGE", "z", "1", "2") == ["a", "b"]
    assert raw.call("ZRANGE", "z", "-2", "-1") == ["d", "e"]
    assert raw.call("ZRANGE", "z", "5", "100") == ["d", "e"]
    assert raw.call("ZRANGE", "z", "3", "1") == []
    assert raw.call("ZRANGE", "z", "100", "200") == []
    assert raw.call("ZRANGE", "nokey", "0", "-1") == []
    assert raw.call("ZRANGE", "z", "0", "1", "WITHSCORES") == \
        ["neg", "-1", "a", "1"]
    assert raw.last_raw == b"*4\r\n$3\r\nneg\r\n$2\r\n-1\r\n$1\r\na\r\n$1\r\n1\r\n"
    assert raw.call("ZRANGE", "z", "0", "2", "REV") == ["e", "d", "c"]
    assert raw.call("ZRANGE", "z", "0", "1", "REV", "WITHSCORES") == \
        ["e", "5", "d", "4"]
    assert raw.call("ZRANGE", "z", "-1", "-1", "REV") == ["neg"]
    assert err(raw.call("ZRANGE", "z", "a", "1")) == NOTINT
    assert err(raw.call("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1")) == (
        "ERR syntax error, LIMIT is only supported in combination with "
        "either BYSCORE or BYLEX")
    assert err(raw.call("ZRANGE", "z", "0")) == arity("zrange")


def test_zrange_byscore(zs):
    raw = zs
    assert raw.call("ZRANGE", "z", "2", "4", "BYSCORE") == \
        ["b", "bb", "c", "d"]
    assert raw.call("ZRANGE", "z", "(2", "4", "BYSCORE") == ["c", "d"]
    assert raw.call("ZRANGE", "z", "2", "(4", "BYSCORE") == ["b", "bb", "c"]
    assert raw.call("ZRANGE", "z", "(1", "(2", "BYSCORE") == []
    assert raw.call("ZRANGE", "z", "-inf", "+inf", "BYSCORE") == \
        ["neg", "a", "b", "bb", "c", "d", "e"]
    assert raw.call("ZRANGE", "z", "-inf", "1", "BYSCORE", "WITHSCORES") == \
        ["neg", "-1", "a", "1"]
    assert raw.call("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "2",
                    "3") == ["b", "bb", "c"]
    assert raw.call("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "5",
                    "-1") == ["d", "e"]
    assert raw.call("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0",
                    "0") == []
    # REV: max first
    assert raw.call("ZRANGE", "z", "4", "2", "BYSCORE", "REV") == \
        ["d", "c", "bb", "b"]
    assert raw.call("ZRANGE", "z", "+inf", "(3", "BYSCORE", "REV", "LIMIT",
                    "1", "1", "WITHSCORES") == ["d", "4"]
    assert raw.call("ZRANGE", "z", "2", "4", "BYSCORE", "REV") == []
    assert err(raw.call("ZRANGE", "z", "a", "b", "BYSCORE")) == \
        "ERR min or max is not a float"


def test_zrange_bylex(zs):
    raw = zs
    assert raw.call("ZRANGE", "lex", "-", "+", "BYLEX") == \
        ["a", "ab", "b", "c", "d", "e", "f"]
    assert raw.call("ZRANGE", "lex", "[b", "[d", "BYLEX") == ["b", "c", "d"]
    assert raw.call("ZRANGE", "lex", "(b", "(d", "BYLEX") == ["c"]
    assert raw.call("ZRANGE", "lex", "[a", "(b", "BYLEX") == ["a", "ab"]
    assert raw.call("ZRANGE", "lex", "-", "+", "BYLEX", "LIMIT", "1",
                    "2") == ["ab", "b"]
    assert raw.call("ZRANGE", "lex", "+", "[e", "BYLEX", "REV") == ["f", "e"]
    assert raw.call("ZRANGE", "lex", "+", "-", "BYLEX", "REV", "LIMIT",
                    "0", "3") == ["f", "e", "d"]
    assert err(raw.call("ZRANGE", "lex", "a", "c", "BYLEX")) == \
        "ERR min or max not valid string range item"
    assert err(raw.call("ZRANGE", "lex", "[a", "[c", "BYLEX",
                        "WITHSCORES")) == (
        "ERR syntax error, WITHSCORES not supported in combination with "
        "BYLEX")


def test_zrangebyscore(zs):
    raw = zs
    assert raw.call("ZRANGEBYSCORE", "z", "2", "3") == ["b", "bb", "c"]
    assert raw.call("ZRANGEBYSCORE", "z", "(2", "+inf") == ["c", "d", "e"]
    assert raw.call("ZRANGEBYSCORE", "z", "-inf", "(1") == ["neg"]
    assert raw.call("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1",
                    "2") == ["a", "b"]
    assert raw.call("ZRANGEBYSCORE", "z", "1", "2", "WITHSCORES") == \
        ["a", "1", "b", "2", "bb", "2"]
    assert raw.call("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES",
                    "LIMIT", "4", "10") == ["c", "3", "d", "4", "e", "5"]
    assert raw.call("ZRANGEBYSCORE", "z", "(5", "+inf") == []
    assert raw.call("ZRANGEBYSCORE", "z", "3", "1") == []
    assert raw.call("ZRANGEBYSCORE", "nokey", "-inf", "+inf") == []
    assert err(raw.call("ZRANGEBYSCORE", "z", "x", "1")) == \
        "ERR min or max is not a float"
    assert err(raw.call("ZRANGEBYSCORE", "z", "1")) == arity("zrangebyscore")


def test_zrevrange(zs):
    raw = zs
    assert raw.call("ZREVRANGE", "z", "0", "2") == ["e", "d", "c"]
    assert raw.call("ZREVRANGE", "z", "0", "-1") == \
        ["e", "d", "c", "bb", "b", "a", "neg"]
    assert raw.call("ZREVRANGE", "z", "0", "0", "WITHSCORES") == ["e", "5"]
    assert raw.call("ZREVRANGE", "z", "-1", "-1") == ["neg"]
    assert raw.call("ZREVRANGE", "nokey", "0", "-1") == []


def test_zrangebylex(zs):
    raw = zs
    assert raw.call("ZRANGEBYLEX", "lex", "-", "+") == \
        ["a", "ab", "b", "c", "d", "e", "f"]
    assert raw.call("ZRANGEBYLEX", "lex", "[aa", "(c") == ["ab", "b"]
    assert raw.call("ZRANGEBYLEX", "lex", "(a", "[b") == ["ab", "b"]
    assert raw.call("ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "2", "2") == \
        ["b", "c"]
    assert raw.call("ZRANGEBYLEX", "lex", "[z", "+") == []
    assert err(raw.call("ZRANGEBYLEX", "lex", "a", "+")) == \
        "ERR min or max not valid string range item"


def test_zset_python_client(r):
    r.zadd("scores", {"alice": 3.5, "bob": 1, "carol": 2})
    assert r.zrange("scores", 0, -1, withscores=True) == \
        [("bob", 1.0), ("carol", 2.0), ("alice", 3.5)]
    assert r.zscore("scores", "alice") == 3.5
    assert r.zrangebyscore("scores", "(1", "+inf") == ["carol", "alice"]
    assert r.zrevrange("scores", 0, 0) == ["alice"]


def test_zset_many_members(r):
    members = {"m%05d" % i: float(i % 97) for i in range(3000)}
    r.zadd("big", members)
    assert r.zcard("big") == 3000
    want = sorted(members, key=lambda m: (members[m], m))
    assert r.zrange("big", 0, -1) == want
    assert r.zrange("big", 0, 9, desc=True) == want[::-1][:10]
    got = r.zrangebyscore("big", 10, 10)
    assert got == [m for m in want if members[m] == 10]


def test_zset_wrongtype(raw):
    raw.call("SET", "s", "v")
    for cmd in (("ZADD", "s", "1", "m"), ("ZREM", "s", "m"),
                ("ZSCORE", "s", "m"), ("ZCARD", "s"),
                ("ZRANGE", "s", "0", "-1"),
                ("ZRANGEBYSCORE", "s", "-inf", "+inf"),
                ("ZREVRANGE", "s", "0", "-1"),
                ("ZRANGEBYLEX", "s", "-", "+")):
        assert err(raw.call(*cmd)) == WRONGTYPE, cmd
    raw.call("ZADD", "z", "1", "m")
    assert err(raw.call("HGET", "z", "m")) == WRONGTYPE
    assert err(raw.call("GET", "z")) == WRONGTYPE


# -------------------------------------------------------------- errors

def test_wrong_arity_and_unknown(raw):
    assert err(raw.call("GET")) == \
        "ERR wrong number of arguments for 'get' command"
    assert raw.last_raw == \
        b"-ERR wrong number of arguments for 'get' command\r\n"
    assert err(raw.call("FOO", "bar")) == \
        "ERR unknown command 'FOO', with args beginning with: 'bar' "
    assert raw.last_raw == (b"-ERR unknown command 'FOO', with args "
                            b"beginning with: 'bar' \r\n")
    assert err(raw.call("FOO")) == \
        "ERR unknown command 'FOO', with args beginning with: "
    assert err(raw.call("foo", "a", "b")) == \
        "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
    assert raw.call("PING") == "PONG"  # errors do not close the connection


def test_errors_through_python_client(r):
    r.hset("h", "f", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get("h")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND")


# ------------------------------------------------------- binary and big data

def test_binary_safe(rb):
    key = b"k\x00e\r\ny\xff"
    val = bytes(range(256)) * 3 + b"\r\n\x00"
    assert rb.set(key, val)
    assert rb.get(key) == val
    assert rb.strlen(key) == len(val)
    assert rb.exists(key) == 1
    assert rb.get(b"k") is None and rb.get(b"k\x00e") is None
    rb.hset(b"h\x00", b"f\x00\xfe", b"v\x00\r\n")
    assert rb.hget(b"h\x00", b"f\x00\xfe") == b"v\x00\r\n"
    assert rb.hgetall(b"h\x00") == {b"f\x00\xfe": b"v\x00\r\n"}
    rb.zadd(b"z\x00", {b"m\x00a": 1, b"m\x00": 1, b"m": 1, b"\xff": 1})
    assert rb.zrange(b"z\x00", 0, -1) == [b"m", b"m\x00", b"m\x00a",
                                           b"\xff"]
    assert rb.zscore(b"z\x00", b"m\x00a") == 1.0
    assert set(rb.scan_iter()) == {key, b"h\x00", b"z\x00"}
    assert rb.append(key, b"\x00") == len(val) + 1


def test_large_values(rb):
    big = os.urandom(1 << 20)
    assert rb.set(b"big", big)
    assert rb.get(b"big") == big
    assert rb.strlen(b"big") == 1 << 20
    for i in range(4):
        rb.append(b"grow", big)
    assert rb.strlen(b"grow") == 4 << 20
    assert rb.get(b"grow") == big * 4
    rb.hset(b"h", b"f", big)
    assert rb.hget(b"h", b"f") == big
    assert rb.mget([b"big", b"nope"]) == [big, None]


# -------------------------------------------------------------- SHUTDOWN

def test_shutdown(server_factory):
    s = server_factory(fsync="everysec")
    s.expect_exit = True
    with s.raw() as c:
        for i in range(100):
            c.call("SET", "k%d" % i, "v%d" % i)
        c.call("HSET", "h", "f", "v")
        c.call("ZADD", "z", "1.5", "m")
        c.send("SHUTDOWN")
        try:
            rep = c.read()
            pytest.fail("SHUTDOWN replied %r instead of exiting" % (rep,))
        except (pkserver.ConnectionClosed, ConnectionResetError):
            pass
    assert s.wait(15) == 0, s.logs()
    s.start()
    s.expect_exit = False
    with s.raw() as c:
        assert c.call("DBSIZE") == 102
        assert c.call("GET", "k99") == "v99"
        assert c.call("HGET", "h", "f") == "v"
        assert c.call("ZSCORE", "z", "m") == "1.5"


@pytest.mark.partkv_only
def test_shutdown_default_persists(server):
    """partkv persists every acknowledged write, whatever --fsync says."""
    server.expect_exit = True
    with server.raw() as c:
        c.call("SET", "kept", "yes")
        c.send("SHUTDOWN")
        with pytest.raises((pkserver.ConnectionClosed, ConnectionResetError,
                            socket.timeout)):
            c.read()
    assert server.wait(15) == 0
    server.start()
    server.expect_exit = False
    with server.raw() as c:
        assert c.call("GET", "kept") == "yes"


def test_data_survives_restart(server_factory):
    s = server_factory(fsync="always")
    c = s.client()
    c.set("a", "1")
    c.hset("h", mapping={"x": "1", "y": "2"})
    c.zadd("z", {"m": 2.5})
    c.set("t", "v", ex=1000)
    c.close()
    assert s.stop() == 0
    s.start()
    c = s.client()
    assert c.get("a") == "1"
    assert c.hgetall("h") == {"x": "1", "y": "2"}
    assert c.zscore("z", "m") == 2.5
    assert 900 < c.ttl("t") <= 1000
    c.close()


def test_many_connections(server):
    conns = [server.raw() for _ in range(100)]
    try:
        for i, c in enumerate(conns):
            c.send("SET", "c%d" % i, str(i))
        for c in conns:
            assert c.read() == "OK"
        for i, c in enumerate(conns):
            assert c.call("GET", "c%d" % i) == str(i)
    finally:
        for c in conns:
            c.close()
    t0 = time.monotonic()
    with server.raw() as c:
        assert c.call("PING") == "PONG"
    assert time.monotonic() - t0 < 2
