"""Keyspace commands with Redis 7.0's replies and error texts: KEYS,
RANDOMKEY, RENAME, RENAMENX, COPY, FLUSHDB, EXPIREAT, PEXPIREAT, EXPIRETIME,
PEXPIRETIME, PERSIST, TOUCH, UNLINK, OBJECT, TIME, DUMP, RESTORE -- and
hostile RESTORE payloads, which must fail and leave the server serving.

Run the same file against redis-server with PARTKV_TEST_TARGET=redis (the
DUMP payload formats differ, so tests only restore what the same server
dumped; partkv_only tests craft partkv payloads)."""
import ctypes
import struct
import time

import pytest

from server import RespError

NOTINT = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
NOKEY = "ERR no such key"
BUSY = "BUSYKEY Target key name already exists."
BADPAYLOAD = "ERR DUMP payload version or checksum are wrong"
BADTTL = "ERR Invalid TTL value, must be >= 0"
NOLFU = ("ERR An LFU maxmemory policy is not selected, access frequency not "
         "tracked. Please note that when switching between policies at "
         "runtime LRU and LFU data will take some time to adjust.")


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


@pytest.fixture
def rawb(server):
    """Raw RESP2 client returning bytes (DUMP payloads are binary)."""
    c = server.raw(proto=2, decode=False)
    yield c
    c.close()


# --------------------------------------------------------------------- KEYS

def test_keys(raw):
    assert raw.call("KEYS", "*") == []
    for k in ("key_x", "key_y", "key_z", "foo_a", "foo_b", "foo_c"):
        raw.call("SET", k, "hello")
    raw.call("HSET", "hash", "f", "v")
    raw.call("ZADD", "zs", "1", "m")
    assert sorted(raw.call("KEYS", "foo*")) == ["foo_a", "foo_b", "foo_c"]
    assert sorted(raw.call("KEYS", "*")) == sorted(
        ["key_x", "key_y", "key_z", "foo_a", "foo_b", "foo_c", "hash", "zs"])
    assert sorted(raw.call("KEYS", "key_[xy]")) == ["key_x", "key_y"]
    assert raw.call("KEYS", "k?y_z") == ["key_z"]
    assert raw.call("KEYS", "nomatch*") == []
    assert raw.last_raw == b"*0\r\n"
    # Redis's regression: a pathological pattern ends quickly.
    raw.call("SET", "a" * 40, "1")
    t0 = time.monotonic()
    assert raw.call("KEYS", "a*" * 20 + "b") == []
    assert time.monotonic() - t0 < 2
    assert raw.call("KEYS", "a" * 40) == ["a" * 40]
    assert err(raw.call("KEYS")) == \
        "ERR wrong number of arguments for 'keys' command"


def test_keys_skips_expired(raw):
    raw.call("SET", "gone", "v", "PX", "30")
    raw.call("SET", "kept", "v")
    time.sleep(0.06)
    assert raw.call("KEYS", "*") == ["kept"]


# ---------------------------------------------------------------- RANDOMKEY

def test_randomkey(raw, r3):
    assert raw.call("RANDOMKEY") is None
    assert raw.last_raw == b"$-1\r\n"
    assert r3.call("RANDOMKEY") is None
    assert r3.last_raw == b"_\r\n"
    raw.call("SET", "x", "10")
    raw.call("DEL", "x")
    assert raw.call("RANDOMKEY") is None
    names = ["foo", "bar", "{t}a", "{t}b", "h"]
    for k in names[:-1]:
        raw.call("SET", k, "v")
    raw.call("HSET", "h", "f", "v")
    seen = set()
    for _ in range(300):
        seen.add(raw.call("RANDOMKEY"))
    assert seen == set(names)


def test_randomkey_only_live_keys(raw):
    raw.call("SET", "gone", "v", "PX", "20")
    raw.call("SET", "kept", "v")
    time.sleep(0.05)
    for _ in range(20):
        assert raw.call("RANDOMKEY") == "kept"


# ------------------------------------------------------------ RENAME family

def test_rename(raw):
    raw.call("SET", "mykey{t}", "hello")
    assert raw.call("RENAME", "mykey{t}", "mykey1{t}") == "OK"
    assert raw.last_raw == b"+OK\r\n"
    assert raw.call("RENAME", "mykey1{t}", "mykey2{t}") == "OK"
    assert raw.call("GET", "mykey2{t}") == "hello"
    assert raw.call("EXISTS", "mykey{t}", "mykey1{t}") == 0
    # over an existing key
    raw.call("SET", "mykey{t}", "a")
    raw.call("SET", "mykey2{t}", "b")
    assert raw.call("RENAME", "mykey2{t}", "mykey{t}") == "OK"
    assert raw.call("GET", "mykey{t}") == "b"
    assert raw.call("EXISTS", "mykey2{t}") == 0
    assert err(raw.call("RENAME", "nokey{t}", "foobar{t}")) == NOKEY
    # the same key
    raw.call("SET", "same", "foo")
    assert raw.call("RENAME", "same", "same") == "OK"
    assert raw.call("GET", "same") == "foo"
    assert raw.call("RENAMENX", "same", "same") == 0
    raw.call("DEL", "same")
    assert err(raw.call("RENAME", "same", "same")) == NOKEY
    assert err(raw.call("RENAMENX", "same", "same")) == NOKEY
    assert err(raw.call("RENAME", "a")) == \
        "ERR wrong number of arguments for 'rename' command"


def test_renamenx(raw):
    raw.call("SET", "mykey{t}", "foobar")
    assert raw.call("RENAMENX", "mykey{t}", "mykey2{t}") == 1
    assert raw.call("GET", "mykey2{t}") == "foobar"
    assert raw.call("EXISTS", "mykey{t}") == 0
    raw.call("SET", "mykey{t}", "foo")
    assert raw.call("RENAMENX", "mykey{t}", "mykey2{t}") == 0
    assert raw.call("GET", "mykey{t}") == "foo"
    assert raw.call("GET", "mykey2{t}") == "foobar"
    assert err(raw.call("RENAMENX", "none{t}", "x{t}")) == NOKEY


def test_rename_ttl(raw):
    raw.call("SET", "mykey{t}", "foo")
    raw.call("EXPIRE", "mykey{t}", "100")
    raw.call("RENAME", "mykey{t}", "mykey2{t}")
    assert 95 < raw.call("TTL", "mykey2{t}") <= 100
    # the destination's TTL is not inherited
    raw.call("SET", "mykey{t}", "foo")
    raw.call("SET", "mykey3{t}", "bar")
    raw.call("EXPIRE", "mykey3{t}", "100")
    raw.call("RENAME", "mykey{t}", "mykey3{t}")
    assert raw.call("TTL", "mykey3{t}") == -1
    # an expired source is missing
    raw.call("SET", "short{t}", "v", "PX", "20")
    time.sleep(0.05)
    assert err(raw.call("RENAME", "short{t}", "other{t}")) == NOKEY


def test_rename_every_type(raw):
    """Outside cluster mode, keys of any partitions."""
    raw.call("HSET", "h", "a", "1", "b", "2")
    raw.call("ZADD", "z", "1", "x", "2.5", "y")
    raw.call("SET", "s", "str")
    assert raw.call("RENAME", "h", "h-renamed") == "OK"
    assert raw.call("HGETALL", "h-renamed") == ["a", "1", "b", "2"]
    assert raw.call("HLEN", "h-renamed") == 2
    assert raw.call("RENAME", "z", "s") == "OK"
    assert raw.call("TYPE", "s") == "zset"
    assert raw.call("ZRANGE", "s", "0", "-1", "WITHSCORES") == \
        ["x", "1", "y", "2.5"]
    assert raw.call("DBSIZE") == 2
    assert sorted(raw.call("KEYS", "*")) == ["h-renamed", "s"]


# ------------------------------------------------------------------- COPY

def test_copy(raw):
    raw.call("SET", "mykey{t}", "foobar")
    assert raw.call("COPY", "mykey{t}", "mynewkey{t}") == 1
    assert raw.call("GET", "mynewkey{t}") == "foobar"
    assert raw.call("DBSIZE") == 2
    raw.call("SET", "mykey2{t}", "hello")
    assert raw.call("COPY", "mykey2{t}", "mynewkey{t}") == 0
    assert raw.call("GET", "mynewkey{t}") == "foobar"
    assert raw.call("COPY", "mykey2{t}", "mynewkey{t}", "REPLACE") == 1
    assert raw.call("GET", "mynewkey{t}") == "hello"
    assert raw.call("COPY", "mykey2{t}", "mynewkey{t}", "DB", "0",
                    "replace") == 1
    # independent of its source
    raw.call("SET", "mynewkey{t}", "hoge")
    assert raw.call("GET", "mykey2{t}") == "hello"
    assert raw.call("COPY", "nokey{t}", "x{t}") == 0
    assert err(raw.call("COPY", "mykey{t}", "mykey{t}")) == \
        "ERR source and destination objects are the same"
    assert err(raw.call("COPY", "mykey{t}", "n{t}", "DB", "notanumber")) == \
        NOTINT
    assert err(raw.call("COPY", "mykey{t}", "n{t}", "DB", "1")) == \
        "ERR DB index is out of range"
    assert err(raw.call("COPY", "mykey{t}", "n{t}", "DB", "-1")) == \
        "ERR DB index is out of range"
    assert err(raw.call("COPY", "mykey{t}", "n{t}", "DB")) == SYNTAX
    assert err(raw.call("COPY", "mykey{t}", "n{t}", "BOGUS")) == SYNTAX
    assert raw.call("EXISTS", "n{t}") == 0


def test_copy_ttl_and_types(raw):
    raw.call("SET", "mykey{t}", "foobar", "EX", "100")
    assert raw.call("COPY", "mykey{t}", "mynewkey{t}", "REPLACE") == 1
    assert 0 < raw.call("TTL", "mynewkey{t}") <= 100
    raw.call("SET", "mykey{t}", "foobar")
    assert raw.call("COPY", "mykey{t}", "mynewkey{t}", "REPLACE") == 1
    assert raw.call("TTL", "mynewkey{t}") == -1
    fields = []
    for i in range(300):
        fields += ["f%d" % i, "v%d" % i]
    raw.call("HSET", "h", *fields)
    assert raw.call("COPY", "h", "h2") == 1
    raw.call("DEL", "h")
    assert raw.call("HLEN", "h2") == 300
    assert raw.call("HGET", "h2", "f299") == "v299"
    raw.call("ZADD", "z", "1", "a", "-1", "b")
    assert raw.call("COPY", "z", "z2") == 1
    raw.call("ZADD", "z", "5", "c")
    assert raw.call("ZRANGE", "z2", "0", "-1", "WITHSCORES") == \
        ["b", "-1", "a", "1"]


# ------------------------------------------------------------ FLUSHDB etc.

def test_flushdb(raw):
    raw.call("SET", "a", "1")
    raw.call("HSET", "h", "f", "v")
    assert raw.call("FLUSHDB") == "OK"
    assert raw.call("DBSIZE") == 0
    raw.call("SET", "a", "1")
    assert raw.call("FLUSHDB", "ASYNC") == "OK"
    assert raw.call("FLUSHDB", "sync") == "OK"
    assert raw.call("DBSIZE") == 0
    assert err(raw.call("FLUSHDB", "now")) == SYNTAX
    assert err(raw.call("FLUSHDB", "sync", "async")) == SYNTAX


def test_touch_unlink(raw):
    raw.call("SET", "a", "1")
    raw.call("HSET", "b", "f", "v")
    assert raw.call("TOUCH", "a", "b", "c", "a") == 3
    assert raw.call("UNLINK", "a", "b", "c") == 2
    assert raw.call("DBSIZE") == 0
    assert raw.call("UNLINK", "a") == 0
    assert err(raw.call("TOUCH")) == \
        "ERR wrong number of arguments for 'touch' command"


# ----------------------------------------------------------------- expiry

def test_expireat(raw):
    raw.call("SET", "x", "foo")
    assert raw.call("EXPIREAT", "x", str(int(time.time()) + 15)) == 1
    assert 13 <= raw.call("TTL", "x") <= 15
    now_ms = int(time.time() * 1000)
    assert raw.call("PEXPIREAT", "x", str(now_ms + 200000)) == 1
    assert raw.call("PEXPIRETIME", "x") == now_ms + 200000
    assert raw.call("EXPIRETIME", "x") == (now_ms + 200000 + 500) // 1000
    assert raw.call("EXPIREAT", "nokey", "100") == 0
    # in the past: deleted
    assert raw.call("EXPIREAT", "x", "1") == 1
    assert raw.call("EXISTS", "x") == 0
    raw.call("SET", "x", "foo")
    assert raw.call("PEXPIREAT", "x", "-9223372036854770000") == 1
    assert raw.call("TTL", "x") == -2
    raw.call("SET", "x", "foo")
    assert raw.call("PEXPIREAT", "x", "9223372036854770000") == 1
    assert raw.call("PEXPIRETIME", "x") == 9223372036854770000
    assert raw.call("EXPIREAT", "x", "0") == 1
    assert raw.call("EXISTS", "x") == 0


def test_expire_errors(raw):
    raw.call("SET", "foo", "bar")
    e = "ERR invalid expire time in '%s' command"
    for cmd, v in (("EXPIRE", "9223370399119966"),
                   ("EXPIRE", "9223372036854776"),
                   ("EXPIRE", "-9223372036854776"),
                   ("EXPIRE", "-9999999999999999"),
                   ("PEXPIRE", "9223372036854770000"),
                   ("EXPIREAT", "9223372036854776"),
                   ("EXPIREAT", "-9223372036854776")):
        assert err(raw.call(cmd, "foo", v)) == e % cmd.lower()
    assert raw.call("TTL", "foo") == -1
    assert err(raw.call("EXPIREAT", "foo", "")) == NOTINT
    assert err(raw.call("PEXPIREAT", "foo", "1.5")) == NOTINT
    # options are parsed before the time, as Redis does
    assert err(raw.call("EXPIREAT", "foo", "abc", "BOGUS")) == \
        "ERR Unsupported option BOGUS"
    assert err(raw.call("PEXPIREAT", "foo", "abc", "NX", "XX")) == \
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    assert err(raw.call("EXPIREAT", "foo", "abc", "GT", "LT")) == \
        "ERR GT and LT options at the same time are not compatible"
    # PEXPIRE accepts the smallest integer (it only deletes)
    assert raw.call("PEXPIRE", "foo", "-9223372036854775808") == 1
    assert raw.call("EXISTS", "foo") == 0


def test_expireat_options(raw):
    t = int(time.time())
    raw.call("SET", "k", "v")
    assert raw.call("EXPIREAT", "k", str(t + 100), "XX") == 0
    assert raw.call("EXPIREAT", "k", str(t + 100), "GT") == 0
    assert raw.call("EXPIREAT", "k", str(t + 100), "NX") == 1
    assert raw.call("EXPIREAT", "k", str(t + 200), "NX") == 0
    assert raw.call("EXPIREAT", "k", str(t + 50), "GT") == 0
    assert raw.call("EXPIREAT", "k", str(t + 200), "GT") == 1
    assert raw.call("EXPIREAT", "k", str(t + 300), "LT") == 0
    assert raw.call("EXPIREAT", "k", str(t + 150), "LT", "XX") == 1
    assert raw.call("EXPIRETIME", "k") == t + 150
    assert raw.call("PEXPIREAT", "k", str((t + 120) * 1000), "xx") == 1
    assert raw.call("PEXPIRETIME", "k") == (t + 120) * 1000
    # LT on a key without TTL: no TTL counts as infinite
    raw.call("SET", "p", "v")
    assert raw.call("PEXPIREAT", "p", str((t + 100) * 1000), "LT") == 1
    assert raw.call("PERSIST", "p") == 1
    assert raw.call("PERSIST", "p") == 0
    assert raw.call("PERSIST", "nokey") == 0
    assert raw.call("PEXPIRETIME", "p") == -1
    # a time in the past that fails its condition leaves the key
    assert raw.call("EXPIREAT", "k", "1", "GT") == 0
    assert raw.call("EXISTS", "k") == 1
    assert raw.call("EXPIREAT", "k", "1", "LT") == 1
    assert raw.call("EXISTS", "k") == 0


def test_expiretime(raw):
    assert raw.call("EXPIRETIME", "x") == -2
    assert raw.call("PEXPIRETIME", "x") == -2
    raw.call("SET", "x", "v")
    assert raw.call("EXPIRETIME", "x") == -1
    assert raw.call("PEXPIRETIME", "x") == -1
    t = int(time.time()) + 100
    raw.call("SET", "x", "v", "EXAT", str(t))
    assert raw.call("EXPIRETIME", "x") == t
    assert raw.call("PEXPIRETIME", "x") == t * 1000
    raw.call("HSET", "h", "f", "v")
    raw.call("PEXPIRE", "h", "100000")
    assert raw.call("PEXPIRETIME", "h") > int(time.time() * 1000) + 90000


# ----------------------------------------------------------------- OBJECT

def test_object(raw, r3):
    raw.call("SET", "int", "12345")
    raw.call("SET", "neg", "-9223372036854775808")
    raw.call("SET", "lead0", "0123")
    raw.call("SET", "emb", "x" * 44)
    raw.call("SET", "rawv", "x" * 45)
    assert raw.call("OBJECT", "ENCODING", "int") == "int"
    assert raw.call("OBJECT", "encoding", "neg") == "int"
    assert raw.call("OBJECT", "ENCODING", "lead0") == "embstr"
    assert raw.call("OBJECT", "ENCODING", "emb") == "embstr"
    assert raw.call("OBJECT", "ENCODING", "rawv") == "raw"
    assert raw.call("OBJECT", "ENCODING", "nokey") is None
    assert raw.last_raw == b"$-1\r\n"
    assert r3.call("OBJECT", "ENCODING", "nokey") is None
    assert r3.last_raw == b"_\r\n"
    assert raw.call("OBJECT", "REFCOUNT", "rawv") == 1
    assert raw.call("OBJECT", "REFCOUNT", "nokey") is None
    assert raw.call("OBJECT", "IDLETIME", "rawv") == 0
    assert raw.call("OBJECT", "IDLETIME", "nokey") is None
    assert err(raw.call("OBJECT", "FREQ", "rawv")) == NOLFU
    assert raw.call("OBJECT", "FREQ", "nokey") is None
    assert err(raw.call("OBJECT", "BOGUS", "rawv")) == \
        "ERR unknown subcommand 'BOGUS'. Try OBJECT HELP."
    assert err(raw.call("OBJECT", "ENCODING")) == \
        "ERR wrong number of arguments for 'object|encoding' command"
    assert err(raw.call("OBJECT", "Freq", "a", "b")) == \
        "ERR wrong number of arguments for 'object|freq' command"
    assert err(raw.call("OBJECT", "HELP", "x")) == \
        "ERR wrong number of arguments for 'object|help' command"
    assert err(raw.call("OBJECT")) == \
        "ERR wrong number of arguments for 'object' command"
    help_ = raw.call("OBJECT", "HELP")
    assert help_[0] == ("OBJECT <subcommand> [<arg> [value] [opt] ...]. "
                        "Subcommands are:")
    assert help_[-2:] == ["HELP", "    Prints this help."]
    assert len(help_) == 15
    assert raw.last_raw.startswith(b"*15\r\n+OBJECT")


@pytest.mark.partkv_only
def test_object_encoding_aggregates(raw):
    """partkv names the encodings Redis uses for large aggregates."""
    raw.call("HSET", "h", "f", "v")
    raw.call("ZADD", "z", "1", "m")
    assert raw.call("OBJECT", "ENCODING", "h") == "hashtable"
    assert raw.call("OBJECT", "ENCODING", "z") == "skiplist"
    assert raw.call("OBJECT", "REFCOUNT", "h") == 1


# ------------------------------------------------------------------- TIME

def test_time(raw, r3):
    for c in (raw, r3):
        s, us = c.call("TIME")
        assert abs(int(s) - time.time()) < 5
        assert 0 <= int(us) < 1000000
    assert raw.last_raw.startswith(b"*2\r\n$")
    assert err(raw.call("TIME", "x")) == \
        "ERR wrong number of arguments for 'time' command"


# ---------------------------------------------------------- DUMP / RESTORE

def test_dump_restore(rawb):
    rawb.call("SET", "foo", "bar")
    enc = rawb.call("DUMP", "foo")
    assert isinstance(enc, bytes) and len(enc) > 10
    rawb.call("DEL", "foo")
    assert rawb.call("RESTORE", "foo", "0", enc) == "OK"
    assert rawb.call("TTL", "foo") == -1
    assert rawb.call("GET", "foo") == b"bar"
    assert err(rawb.call("RESTORE", "foo", "0", enc)) == BUSY
    assert err(rawb.call("RESTORE", "foo", "0", b"...")) == BUSY
    rawb.call("SET", "foo", "bar2")
    enc2 = rawb.call("DUMP", "foo")
    assert rawb.call("RESTORE", "foo", "0", enc, "REPLACE") == "OK"
    assert rawb.call("GET", "foo") == b"bar"
    assert rawb.call("RESTORE", "foo", "0", enc2, "replace") == "OK"
    assert rawb.call("GET", "foo") == b"bar2"
    assert rawb.call("DUMP", "nonexisting") is None
    # TTLs
    rawb.call("DEL", "foo")
    assert rawb.call("RESTORE", "foo", "5000", enc) == "OK"
    assert 3000 <= rawb.call("PTTL", "foo") <= 5000
    rawb.call("DEL", "foo")
    assert rawb.call("RESTORE", "foo", "2569591501", enc) == "OK"
    assert 2569591501 - 3000 <= rawb.call("PTTL", "foo") <= 2569591501
    now = int(time.time() * 1000)
    assert rawb.call("RESTORE", "foo", str(now + 3000), enc, "ABSTTL",
                     "REPLACE") == "OK"
    assert 2000 <= rawb.call("PTTL", "foo") <= 3100
    # ABSTTL in the past: OK, and the key is gone
    assert rawb.call("RESTORE", "foo", str(now - 3000), enc, "ABSTTL",
                     "REPLACE") == "OK"
    assert rawb.call("EXISTS", "foo") == 0
    # IDLETIME / FREQ are accepted
    assert rawb.call("RESTORE", "foo", "0", enc, "IDLETIME", "1000") == "OK"
    assert rawb.call("RESTORE", "foo", "0", enc, "FREQ", "100",
                     "REPLACE") == "OK"
    assert rawb.call("GET", "foo") == b"bar"


def test_restore_errors(rawb):
    rawb.call("SET", "src", "v")
    enc = rawb.call("DUMP", "src")
    assert err(rawb.call("RESTORE", "k", "-1", enc)) == BADTTL
    assert err(rawb.call("RESTORE", "k", "abc", enc)) == NOTINT
    assert err(rawb.call("RESTORE", "k", "0", b"...", "invalid-option")) \
        == SYNTAX
    assert err(rawb.call("RESTORE", "k", "0", enc, "IDLETIME", "-1")) == \
        "ERR Invalid IDLETIME value, must be >= 0"
    assert err(rawb.call("RESTORE", "k", "0", enc, "IDLETIME", "x")) == \
        NOTINT
    assert err(rawb.call("RESTORE", "k", "0", enc, "FREQ", "256")) == \
        "ERR Invalid FREQ value, must be >= 0 and <= 255"
    assert err(rawb.call("RESTORE", "k", "0", enc, "FREQ", "1",
                         "IDLETIME", "1")) == SYNTAX
    assert err(rawb.call("RESTORE", "k", "0", enc, "IDLETIME")) == SYNTAX
    assert err(rawb.call("RESTORE", "k", "0", b"")) == BADPAYLOAD
    assert err(rawb.call("RESTORE", "k", "0", b"garbage")) == BADPAYLOAD
    assert err(rawb.call("RESTORE", "k", "0")) == \
        "ERR wrong number of arguments for 'restore' command"
    assert rawb.call("EXISTS", "k") == 0


def test_dump_restore_types(rawb):
    fields = []
    for i in range(200):
        fields += [b"f%d" % i, b"\x00v\xff%d" % i]
    rawb.call("HSET", "h", *fields)
    rawb.call("ZADD", "z", "1.5", "a", "-inf", "b", "3", "c")
    rawb.call("SET", "big", b"x" * (3 << 20))
    for k in (b"h", b"z", b"big"):
        enc = rawb.call("DUMP", k)
        assert rawb.call("RESTORE", k + b"-copy", "0", enc) == "OK"
        assert rawb.call("DUMP", k + b"-copy") == enc
    assert rawb.call("HLEN", "h-copy") == 200
    assert rawb.call("HGET", "h-copy", "f7") == b"\x00v\xff7"
    assert rawb.call("ZRANGE", "z-copy", "0", "-1", "WITHSCORES") == \
        [b"b", b"-inf", b"a", b"1.5", b"c", b"3"]
    assert rawb.call("ZSCORE", "z-copy", "a") == b"1.5"
    assert rawb.call("STRLEN", "big-copy") == 3 << 20


def test_restore_hostile(rawb, server):
    """Every truncation and every bit flip of a payload is refused with
    the payload error and writes nothing; the server goes on serving."""
    rawb.call("HSET", "h", "field", "value", "g", "")
    enc = rawb.call("DUMP", "h")
    for n in range(len(enc)):
        assert err(rawb.call("RESTORE", "k", "0", enc[:n])) == BADPAYLOAD
    for i in range(len(enc) * 8):
        b = bytearray(enc)
        b[i // 8] ^= 1 << (i % 8)
        assert err(rawb.call("RESTORE", "k", "0", bytes(b))) == BADPAYLOAD
    assert err(rawb.call("RESTORE", "k", "0", enc + b"x")) == BADPAYLOAD
    assert err(rawb.call("RESTORE", "k", "0", b"\xff" * 100000)) == \
        BADPAYLOAD
    assert rawb.call("EXISTS", "k") == 0
    assert rawb.call("DBSIZE") == 1
    assert rawb.call("RESTORE", "k", "0", enc) == "OK"
    assert rawb.call("HGETALL", "k") == [b"field", b"value", b"g", b""]
    assert rawb.call("PING") == "PONG"


def _xxh3(data):
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def _payload(type_, records, version=1):
    body = bytes([version, type_])
    for sub, val in records:
        body += struct.pack(">H", len(sub)) + sub + \
            struct.pack(">I", len(val)) + val
    return body + struct.pack(">Q", _xxh3(body))


def _meta(type_, count=None, value=b""):
    v = bytes([type_, 0]) + b"\0" * 8
    return (b"\x01", v + (struct.pack(">Q", count) if count is not None
                          else value))


@pytest.mark.partkv_only
def test_restore_crafted(rawb):
    """partkv's own format: valid checksums around bad records are "Bad
    data format"; a good hand-made payload restores."""
    good = _payload(1, [_meta(1, value=b"hello")])
    assert rawb.call("RESTORE", "s", "0", good) == "OK"
    assert rawb.call("GET", "s") == b"hello"
    assert rawb.call("DUMP", "s") == good
    bad = [
        _payload(1, []),
        _payload(2, [_meta(1, value=b"x")]),
        _payload(2, [_meta(2, 2), (b"\x02f", b"v")]),
        _payload(2, [_meta(2, 0)]),
        _payload(2, [_meta(2, 2), (b"\x02f", b"v"), (b"\x02f", b"w")]),
        _payload(2, [_meta(2, 2), (b"\x02g", b"v"), (b"\x02f", b"w")]),
        _payload(2, [(b"\x02f", b"v")]),
        _payload(2, [_meta(2, 1), (b"\x7ff", b"v")]),
        _payload(2, [_meta(2, 1), (b"\x03f", b"v")]),
        _payload(3, [_meta(3, 1), (b"\x03m", b"\x3f\xf0" + b"\0" * 6)]),
        _payload(1, [_meta(1, value=b"x"), (b"\x02f", b"v")]),
        _payload(9, [_meta(9, 1)]),
    ]
    for p in bad:
        assert err(rawb.call("RESTORE", "k", "0", p)) == "ERR Bad data format"
    assert err(rawb.call("RESTORE", "k", "0",
                         _payload(1, [_meta(1, value=b"x")], version=2))) \
        == BADPAYLOAD
    assert rawb.call("EXISTS", "k") == 0
    assert rawb.call("PING") == "PONG"


@pytest.mark.partkv_only
def test_commands_listed(raw):
    for name, arity, first, last in (
            ("rename", 3, 1, 2), ("copy", -3, 1, 2), ("keys", 2, 0, 0),
            ("restore", -4, 1, 1), ("unlink", -2, 1, -1),
            ("touch", -2, 1, -1), ("expireat", -3, 1, 1)):
        info = raw.call("COMMAND", "INFO", name)[0]
        assert info[0] == name and info[1] == arity
        assert (info[3], info[4]) == (first, last)
    assert raw.call("COMMAND", "GETKEYS", "OBJECT", "ENCODING", "k") == ["k"]


# ---------------------------------------------------------------- cluster

@pytest.mark.partkv_only
def test_cluster_keyspace(cluster_factory):
    """In a cluster: RENAME/COPY of keys in two slots answer CROSSSLOT,
    KEYS and RANDOMKEY of a node cover the partitions it leads (followers'
    copies excluded), and RedisCluster's commands work end to end."""
    c = cluster_factory(nodes=3, base_port=0, replicas=1)
    c.wait_serving()
    rc = c.rc()
    names = ["k%d" % i for i in range(60)]
    for k in names:
        rc.set(k, "v")
    rc.set("{u}a", "1", ex=100)
    assert rc.rename("{u}a", "{u}b")
    assert 0 < rc.ttl("{u}b") <= 100
    assert rc.copy("{u}b", "{u}c")
    rc.hset("{u}h", mapping={"f": "v"})
    dump = rc.dump("{u}h")
    rc.restore("{u}h2", 0, dump)
    assert rc.hgetall("{u}h2") == {"f": "v"}
    node = c.node_for_slot(rc.keyslot("{u}b"))
    with node.raw() as n:
        assert n.call("RENAME", "{u}b", "other").message.startswith(
            "CROSSSLOT")
        assert n.call("COPY", "{u}b", "other").message.startswith(
            "CROSSSLOT")
        assert n.call("OBJECT", "ENCODING", "{u}b") == "int"
    every = []
    for nd in c.nodes:
        with nd.raw() as n:
            got = n.call("KEYS", "*")
            every += got
            for k in got:
                assert c.node_for_slot(rc.keyslot(k)).port == nd.port
            if got:
                assert n.call("RANDOMKEY") in got
    assert sorted(every) == sorted(names + ["{u}b", "{u}c", "{u}h",
                                            "{u}h2"])
    rc.close()
