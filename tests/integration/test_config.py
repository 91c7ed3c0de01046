"""CONFIG GET / SET / HELP / RESETSTAT with Redis 7.0's parameter names,
aliases, validation and error texts, as Redis's own test harness uses them
(start_server overrides: CONFIG GET, then CONFIG SET and back).

Run the same file against redis-server with PARTKV_TEST_TARGET=redis."""
import socket

import pytest

from server import RespError

SYNTAX = "ERR syntax error"


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


def failed(name, why):
    return ("ERR CONFIG SET failed (possibly related to argument '%s') - %s"
            % (name, why))


def unknown(name):
    return ("ERR Unknown option or number of arguments for CONFIG SET - '%s'"
            % name)


def get(raw, pattern):
    rep = raw.call("CONFIG", "GET", pattern)
    return dict(zip(rep[0::2], rep[1::2]))


# Parameters describing Redis's memory layouts: accepted and reported.
LAYOUT = [
    ("hash-max-listpack-entries", "hash-max-ziplist-entries", "512", "7"),
    ("hash-max-listpack-value", "hash-max-ziplist-value", "64", "9"),
    ("zset-max-listpack-entries", "zset-max-ziplist-entries", "128", "3"),
    ("zset-max-listpack-value", "zset-max-ziplist-value", "64", "11"),
    ("list-max-listpack-size", "list-max-ziplist-size", "-2", "5"),
]


@pytest.mark.parametrize("name,alias,default,new", LAYOUT)
def test_layout_params_alias(raw, name, alias, default, new):
    assert get(raw, name) == {name: default}
    assert get(raw, alias) == {alias: default}
    assert raw.call("CONFIG", "SET", alias, new) == "OK"
    assert get(raw, name) == {name: new}
    assert get(raw, alias) == {alias: new}
    assert raw.call("CONFIG", "SET", name, default) == "OK"
    assert get(raw, alias) == {alias: default}


def test_accepted_params(raw):
    for name, value in [("list-compress-depth", "2"),
                        ("set-max-intset-entries", "1000"),
                        ("lazyfree-lazy-user-del", "yes"),
                        ("lazyfree-lazy-expire", "yes"),
                        ("busy-reply-threshold", "10"),
                        ("sanitize-dump-payload", "clients"),
                        ("maxmemory-policy", "allkeys-lru"),
                        ("save", "")]:
        assert raw.call("CONFIG", "SET", name, value) == "OK", name
        assert get(raw, name) == {name: value}
    # lua-time-limit is busy-reply-threshold's alias.
    assert get(raw, "lua-time-limit") == {"lua-time-limit": "10"}
    assert raw.call("CONFIG", "SET", "LazyFree-Lazy-Expire", "NO") == "OK"
    assert get(raw, "lazyfree-lazy-expire") == {"lazyfree-lazy-expire": "no"}


def test_save_normalized(raw):
    assert raw.call("CONFIG", "SET", "save", "100 10 50 5") == "OK"
    assert get(raw, "save") == {"save": "100 10 50 5"}
    # Split at single spaces; an empty token reads as 0.
    assert raw.call("CONFIG", "SET", "save", "100 ") == "OK"
    assert get(raw, "save") == {"save": "100 0"}
    assert raw.call("CONFIG", "SET", "save", "100 10 50 5") == "OK"
    for bad in ["100", "0 1", "1 -1", "x 1", "1 2 3", "100  10 50 5"]:
        assert err(raw.call("CONFIG", "SET", "save", bad)) == failed(
            "save", "Invalid save parameters"), bad
    assert get(raw, "save") == {"save": "100 10 50 5"}
    assert raw.call("CONFIG", "SET", "save", "") == "OK"
    assert get(raw, "save") == {"save": ""}


def test_memory_units(raw):
    name = "hash-max-listpack-value"
    for value, want in [("1mb", 1 << 20), ("1MB", 1 << 20), ("2k", 2000),
                        ("3kb", 3072), ("1g", 10 ** 9), ("1gb", 1 << 30),
                        ("5b", 5), ("7", 7)]:
        assert raw.call("CONFIG", "SET", name, value) == "OK", value
        assert get(raw, name) == {name: str(want)}
    for bad in ["-1", "1x", "1.5mb", "mb1", " 1"]:
        assert err(raw.call("CONFIG", "SET", name, bad)) == failed(
            name, "argument must be a memory value"), bad
    assert get(raw, name) == {name: "7"}


def test_validation_errors(raw):
    assert err(raw.call("CONFIG", "SET", "lazyfree-lazy-expire",
                        "maybe")) == failed(
        "lazyfree-lazy-expire", "argument must be 'yes' or 'no'")
    assert err(raw.call("CONFIG", "SET", "set-max-intset-entries",
                        "abc")) == failed(
        "set-max-intset-entries",
        "argument couldn't be parsed into an integer")
    assert err(raw.call("CONFIG", "SET", "set-max-intset-entries",
                        "-1")) == failed(
        "set-max-intset-entries",
        "argument must be between 0 and 9223372036854775807 inclusive")
    assert err(raw.call("CONFIG", "SET", "list-compress-depth",
                        "-9223372036854775808")) == failed(
        "list-compress-depth",
        "argument must be between 0 and 2147483647 inclusive")
    assert err(raw.call("CONFIG", "SET", "list-max-ziplist-size",
                        "99999999999")) == failed(
        "list-max-ziplist-size",
        "argument must be between -2147483648 and 2147483647 inclusive")
    assert err(raw.call("CONFIG", "SET", "maxmemory-policy", "lru")) == \
        failed("maxmemory-policy",
               "argument(s) must be one of the following: volatile-lru, "
               "volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, "
               "allkeys-lfu, allkeys-random, noeviction")
    # The error names the spelling used, in lower case.
    assert err(raw.call("CONFIG", "SET", "ZSET-max-ziplist-entries",
                        "x")) == failed(
        "zset-max-ziplist-entries",
        "argument couldn't be parsed into an integer")
    assert err(raw.call("CONFIG", "SET", "proto-max-bulk-len",
                        "1000")) == failed(
        "proto-max-bulk-len",
        "argument must be between 1048576 and 9223372036854775807 "
        "inclusive")


def test_unknown_and_arity(raw):
    assert err(raw.call("CONFIG", "SET", "no-such-param", "1")) == \
        unknown("no-such-param")
    assert err(raw.call("CONFIG", "SET", "a", "b", "c")) == SYNTAX
    assert err(raw.call("CONFIG", "SET", "a")) == \
        "ERR wrong number of arguments for 'config|set' command"
    assert err(raw.call("CONFIG", "GET")) == \
        "ERR wrong number of arguments for 'config|get' command"
    assert err(raw.call("CONFIG", "NOPE")) == \
        "ERR unknown subcommand 'NOPE'. Try CONFIG HELP."
    assert raw.call("CONFIG", "GET", "no-such-param") == []


def test_set_is_atomic(raw):
    assert raw.call("CONFIG", "SET", "list-compress-depth", "1",
                    "set-max-intset-entries", "10") == "OK"
    assert get(raw, "list-compress-depth") == {"list-compress-depth": "1"}
    assert get(raw, "set-max-intset-entries") == {
        "set-max-intset-entries": "10"}
    # A bad value anywhere: nothing is set.
    assert err(raw.call("CONFIG", "SET", "list-compress-depth", "4",
                        "set-max-intset-entries", "x")) == failed(
        "set-max-intset-entries",
        "argument couldn't be parsed into an integer")
    assert get(raw, "list-compress-depth") == {"list-compress-depth": "1"}
    # An unknown name, even after a good pair: nothing is set.
    assert err(raw.call("CONFIG", "SET", "list-compress-depth", "4",
                        "bogus", "1")) == unknown("bogus")
    assert get(raw, "list-compress-depth") == {"list-compress-depth": "1"}
    # The same parameter twice.
    assert err(raw.call("CONFIG", "SET", "hash-max-listpack-entries", "1",
                        "HASH-max-listpack-entries", "2")) == failed(
        "HASH-max-listpack-entries", "duplicate parameter")
    assert get(raw, "hash-max-listpack-entries") == {
        "hash-max-listpack-entries": "512"}
    # A name and its alias are not duplicates in Redis 7.0: the last wins.
    assert raw.call("CONFIG", "SET", "hash-max-listpack-entries", "1",
                    "hash-max-ziplist-entries", "2") == "OK"
    assert get(raw, "hash-max-listpack-entries") == {
        "hash-max-listpack-entries": "2"}


def test_get_patterns(raw):
    d = get(raw, "*max-*-entries*")
    for name in ["hash-max-listpack-entries", "set-max-intset-entries",
                 "zset-max-listpack-entries"]:
        assert name in d
    # Several patterns, one answer per parameter.
    rep = raw.call("CONFIG", "GET", "maxclients", "max*", "maxclients")
    names = rep[0::2]
    assert names.count("maxclients") == 1
    assert "maxmemory" in names
    d = get(raw, "list-*")
    assert d["list-compress-depth"] == "0"
    assert d["list-max-listpack-size"] == "-2"


def test_get_harness_params(raw):
    """What the harness and clients read."""
    d = get(raw, "*")
    for name in ["save", "appendonly", "maxmemory", "maxclients",
                 "proto-max-bulk-len", "port", "databases", "timeout"]:
        assert name in d, name


def test_maxclients_takes_effect(server, raw):
    assert raw.call("CONFIG", "SET", "maxclients", "2") == "OK"
    assert get(raw, "maxclients") == {"maxclients": "2"}
    a = server.raw(proto=2)
    try:
        assert a.call("PING") == "PONG"
        s = socket.create_connection((server.host, server.port), timeout=5)
        try:
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
            assert data.startswith(b"-ERR max number of clients reached")
        finally:
            s.close()
    finally:
        a.close()
    assert raw.call("CONFIG", "SET", "maxclients", "10000") == "OK"


def test_proto_max_bulk_len_takes_effect(server, raw):
    assert raw.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == "OK"
    assert get(raw, "proto-max-bulk-len") == {"proto-max-bulk-len":
                                              "1048576"}
    c = server.raw(proto=2)
    try:
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
        assert "invalid bulk length" in err(c.read())
    finally:
        c.close()
    assert raw.call("CONFIG", "SET", "proto-max-bulk-len",
                    "10000000000") == "OK"
    assert raw.call("CONFIG", "SET", "client-query-buffer-limit",
                    "10000000000") == "OK"
    # The largest values allowed: new connections still work.
    big = "9223372036854775807"
    assert raw.call("CONFIG", "SET", "proto-max-bulk-len", big,
                    "client-query-buffer-limit", big) == "OK"
    assert get(raw, "proto-max-bulk-len") == {"proto-max-bulk-len": big}
    c = server.raw(proto=2)
    try:
        assert c.call("PING") == "PONG"
    finally:
        c.close()


@pytest.mark.partkv_only
def test_immutable(raw):
    for name, value in [("port", "1"), ("appendfsync", "always"),
                        ("appendonly", "yes"), ("databases", "16"),
                        ("maxmemory", "100mb"), ("dir", "/tmp"),
                        ("timeout", "10")]:
        before = get(raw, name)
        assert err(raw.call("CONFIG", "SET", name, value)) == failed(
            name, "can't set immutable config"), name
        assert get(raw, name) == before


def test_immutable_redis_too(raw):
    assert err(raw.call("CONFIG", "SET", "databases", "16")) == failed(
        "databases", "can't set immutable config")


def test_help_and_resetstat(raw):
    rep = raw.call("CONFIG", "HELP")
    assert rep[0] == ("CONFIG <subcommand> [<arg> [value] [opt] ...]. "
                      "Subcommands are:")
    assert "SET <directive> <value>" in rep
    assert rep[-2:] == ["HELP", "    Prints this help."]
    assert raw.call("CONFIG", "RESETSTAT") == "OK"


def test_resp3_map(r3):
    r3.call("CONFIG", "SET", "list-compress-depth", "3")
    rep = r3.call("CONFIG", "GET", "list-compress-depth")
    assert dict(rep) == {"list-compress-depth": "3"}


def test_python_redis(r):
    assert r.config_set("hash-max-ziplist-entries", 64)
    assert r.config_get("hash-max-ziplist-entries") == {
        "hash-max-ziplist-entries": "64"}
    assert r.config_get("hash-max-listpack-*") == {
        "hash-max-listpack-entries": "64",
        "hash-max-listpack-value": "64"}


def test_memory_usage(raw):
    """The harness's memory_usage helper (tests/support/util.tcl) calls
    MEMORY USAGE at the top of a hash test group."""
    raw.call("DEL", "mu")
    assert raw.call("MEMORY", "USAGE", "mu") is None
    raw.call("HSET", "mu", "a", "1", "b", "2")
    assert raw.call("MEMORY", "USAGE", "mu") > 0
    assert raw.call("MEMORY", "USAGE", "mu", "SAMPLES", "0") > 0
    assert err(raw.call("MEMORY", "USAGE", "mu", "SAMPLES")) == SYNTAX
    assert err(raw.call("MEMORY", "USAGE", "mu", "SAMPLES", "x")) == \
        "ERR value is not an integer or out of range"
    assert err(raw.call("MEMORY", "USAGE", "mu", "SAMPLES", "-1")) == SYNTAX
    assert err(raw.call("MEMORY", "USAGE")) == \
        "ERR wrong number of arguments for 'memory|usage' command"
    assert err(raw.call("MEMORY", "NOPE")) == \
        "ERR unknown subcommand 'NOPE'. Try MEMORY HELP."
