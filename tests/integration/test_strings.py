"""Redis 7.0's string and bit commands beyond GET/SET/INCR: SETNX SETEX
PSETEX GETSET GETEX MSETNX INCRBYFLOAT SETRANGE GETRANGE SUBSTR SETBIT GETBIT
BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO LCS, and SET's options, with the
exact replies and error texts in RESP2 and RESP3, hostile arguments
included (huge offsets, overflow, negative ranges, wrong types).

Run the same file against redis-server with PARTKV_TEST_TARGET=redis."""
import time

import pytest

import server as pkserver
from server import RespError

WRONGTYPE = ("WRONGTYPE Operation against a key holding the wrong kind of "
             "value")
NOTINT = "ERR value is not an integer or out of range"
NOTFLOAT = "ERR value is not a valid float"
NANINF = "ERR increment would produce NaN or Infinity"
SYNTAX = "ERR syntax error"
TOOBIG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
BADOFF = "ERR bit offset is not an integer or out of range"
BADBIT = "ERR bit is not an integer or out of range"
BADTYPE = ("ERR Invalid bitfield type. Use something like i16 u8. Note that "
           "u64 is not supported but i64 is.")
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
MAXBITS = 512 * 1024 * 1024 * 8


def arity(cmd):
    return "ERR wrong number of arguments for '%s' command" % cmd


def expire_err(cmd):
    return "ERR invalid expire time in '%s' command" % cmd


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


@pytest.fixture
def rb(server):
    """Raw RESP2 client returning bytes (values here are binary)."""
    c = server.raw(proto=2, decode=False)
    yield c
    c.close()


# ------------------------------------------------------------- SET family

def test_setnx_setex_psetex(raw):
    assert raw.call("SETNX", "k", "a") == 1
    assert raw.last_raw == b":1\r\n"
    assert raw.call("SETNX", "k", "b") == 0
    assert raw.call("GET", "k") == "a"
    assert raw.call("SETEX", "e", "100", "v") == "OK"
    assert 98 <= raw.call("TTL", "e") <= 100
    assert raw.call("PSETEX", "p", "100000", "v") == "OK"
    assert 98000 <= raw.call("PTTL", "p") <= 100000
    for cmd in ("SETEX", "PSETEX"):
        for bad in ("0", "-1"):
            assert err(raw.call(cmd, "e", bad, "v")) == \
                expire_err(cmd.lower())
        assert err(raw.call(cmd, "e", "abc", "v")) == NOTINT
        assert err(raw.call(cmd, "e", "1")) == arity(cmd.lower())
    assert err(raw.call("SETEX", "e", "9223372036854775807", "v")) == \
        expire_err("setex")
    assert raw.call("GET", "e") == "v"
    raw.call("HSET", "h", "f", "v")
    assert raw.call("SETNX", "h", "x") == 0
    assert raw.call("SETEX", "h", "10", "x") == "OK"  # overwrites any type
    assert raw.call("TYPE", "h") == "string"


def test_getset(raw):
    assert raw.call("GETSET", "k", "a") is None
    raw.call("EXPIRE", "k", "100")
    assert raw.call("GETSET", "k", "b") == "a"
    assert raw.call("TTL", "k") == -1  # GETSET drops the TTL
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("GETSET", "h", "x")) == WRONGTYPE
    assert raw.call("TYPE", "h") == "hash"


def test_set_options_like_redis(raw):
    # an option may repeat; the last time wins
    assert raw.call("SET", "k", "v", "EX", "10", "EX", "200") == "OK"
    assert raw.call("TTL", "k") > 100
    assert raw.call("SET", "k", "v", "NX", "NX") is None
    assert raw.call("SET", "k", "v", "GET", "GET") == "v"
    for bad in (("PX", "100", "EX", "10"), ("KEEPTTL", "EX", "10"),
                ("EX", "10", "KEEPTTL"), ("NX", "XX"), ("PERSIST",),
                ("EX",), ("EXAT", "1", "PXAT", "1")):
        assert err(raw.call("SET", "k", "v", *bad)) == SYNTAX, bad
    # syntax is checked before the number
    assert err(raw.call("SET", "k", "v", "EX", "abc", "BOGUS")) == SYNTAX
    assert err(raw.call("SET", "k", "v", "EX", "abc")) == NOTINT
    for opt, v in (("EX", "0"), ("PX", "-1"), ("EXAT", "0"),
                   ("EX", "9223372036854775807"),
                   ("PX", "9223372036854775807")):
        assert err(raw.call("SET", "k", "v", opt, v)) == expire_err("set")
    assert raw.call("SET", "k", "v", "KEEPTTL", "KEEPTTL") == "OK"
    # an absolute time in the past leaves the key deleted
    assert raw.call("SET", "k", "v", "EXAT", "1") == "OK"
    assert raw.call("EXISTS", "k") == 0
    assert raw.call("SET", "k", "v", "PXAT", "1", "GET") is None
    # GET on another type: WRONGTYPE before NX/XX decide anything
    raw.call("HSET", "h", "f", "v")
    for opts in (("GET",), ("NX", "GET"), ("XX", "GET")):
        assert err(raw.call("SET", "h", "x", *opts)) == WRONGTYPE
    assert raw.call("TYPE", "h") == "hash"
    # KEEPTTL keeps it, a plain SET drops it
    raw.call("SET", "t", "v", "EX", "100")
    assert raw.call("SET", "t", "w", "XX", "KEEPTTL") == "OK"
    assert raw.call("TTL", "t") > 0


def test_getex(raw):
    raw.call("SET", "k", "v")
    assert raw.call("GETEX", "k") == "v"
    assert raw.call("TTL", "k") == -1
    assert raw.call("GETEX", "k", "EX", "100") == "v"
    assert 98 <= raw.call("TTL", "k") <= 100
    assert raw.call("GETEX", "k", "PX", "50000") == "v"
    assert raw.call("PTTL", "k") <= 50000
    assert raw.call("GETEX", "k", "EXAT", str(int(time.time()) + 1000)) == \
        "v"
    assert raw.call("TTL", "k") > 900
    assert raw.call("GETEX", "k", "PXAT",
                    str(int(time.time() * 1000) + 500000)) == "v"
    assert raw.call("GETEX", "k", "PERSIST") == "v"
    assert raw.call("TTL", "k") == -1
    assert raw.call("GETEX", "k", "PERSIST", "PERSIST") == "v"
    # a past absolute time answers the value and deletes the key
    assert raw.call("GETEX", "k", "EXAT", "1") == "v"
    assert raw.call("EXISTS", "k") == 0
    assert raw.call("GETEX", "nokey") is None
    raw.call("SET", "k", "v")
    for bad in (("EX", "10", "PX", "10"), ("PERSIST", "EX", "10"),
                ("KEEPTTL",), ("NX",), ("GET",), ("EX",), ("BOGUS",)):
        assert err(raw.call("GETEX", "k", *bad)) == SYNTAX, bad
    for bad in ("0", "-1", "9223372036854775807"):
        assert err(raw.call("GETEX", "k", "EX", bad)) == expire_err("getex")
    assert err(raw.call("GETEX", "k", "EX", "abc")) == NOTINT
    # Redis looks the key up before it reads the number
    assert raw.call("GETEX", "nokey", "EX", "abc") is None
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("GETEX", "h", "EX", "abc")) == WRONGTYPE
    assert err(raw.call("GETEX")) == arity("getex")
    assert raw.call("TTL", "k") == -1


def test_msetnx(raw):
    assert raw.call("MSETNX", "a{t}", "1", "b{t}", "2") == 1
    assert raw.call("MSETNX", "a{t}", "x", "c{t}", "3") == 0
    assert raw.call("MGET", "a{t}", "b{t}", "c{t}") == ["1", "2", None]
    assert raw.call("MSETNX", "d{t}", "1", "d{t}", "2") == 1
    assert raw.call("GET", "d{t}") == "2"
    raw.call("HSET", "h{t}", "f", "v")
    assert raw.call("MSETNX", "h{t}", "x", "e{t}", "y") == 0
    assert raw.call("EXISTS", "e{t}") == 0
    # keys of any slot on a single node
    assert raw.call("MSETNX", "p", "1", "q", "2", "r", "3") == 1
    assert raw.call("MGET", "p", "q", "r") == ["1", "2", "3"]
    assert err(raw.call("MSETNX", "a")) == arity("msetnx")
    assert err(raw.call("MSETNX", "a", "1", "b")) == arity("msetnx")


# ------------------------------------------------------------ INCRBYFLOAT

@pytest.mark.parametrize("start,by,want", [
    (None, "3", "3"), ("10.50", "0.1", "10.6"), ("10", "-10", "0"),
    ("1", "5.0e3", "5001"), (None, "1.5e-10", "0.00000000015"),
    ("5", "-0.5", "4.5"), ("0.1", "0.2", "0.3"),
    ("17179869184", "1.5", "17179869185.5"), ("1", "0x10", "17"),
    ("-0", "0", "0")])
def test_incrbyfloat(raw, start, by, want):
    if start is not None:
        raw.call("SET", "f", start)
    assert raw.call("INCRBYFLOAT", "f", by) == want
    assert raw.call("GET", "f") == want


def test_incrbyfloat_errors(raw):
    raw.call("SET", "f", "1.5", "EX", "100")
    assert raw.call("INCRBYFLOAT", "f", "1") == "2.5"
    assert raw.call("TTL", "f") > 0  # keeps the TTL
    for bad in ("abc", "", " 1", "1 ", "nan", "1.5.5"):
        assert err(raw.call("INCRBYFLOAT", "f", bad)) == NOTFLOAT, bad
    assert err(raw.call("INCRBYFLOAT", "f", "inf")) == NANINF
    assert err(raw.call("INCRBYFLOAT", "f", "-inf")) == NANINF
    for bad in ("abc", " 1", "1\x002"):
        raw.call("SET", "s", bad)
        assert err(raw.call("INCRBYFLOAT", "s", "1")) == NOTFLOAT
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("INCRBYFLOAT", "h", "abc")) == WRONGTYPE
    assert raw.call("GET", "f") == "2.5"


def test_incrbyfloat_resp3(r3):
    # a bulk string in both protocols
    assert r3.call("INCRBYFLOAT", "f", "1.25") == "1.25"
    assert r3.last_raw == b"$4\r\n1.25\r\n"


# ------------------------------------------------------ SETRANGE GETRANGE

def test_setrange(rb):
    rb.call("SET", "k", "hello")
    assert rb.call("SETRANGE", "k", "1", "ipp") == 5
    assert rb.call("GET", "k") == b"hippo"
    assert rb.call("SETRANGE", "k", "8", "!") == 9
    assert rb.call("GET", "k") == b"hippo\0\0\0!"
    assert rb.call("SETRANGE", "n", "3", "x") == 4
    assert rb.call("GET", "n") == b"\0\0\0x"
    # setting nothing: no key made, no length check
    assert rb.call("SETRANGE", "none", "536870912000", "") == 0
    assert rb.call("EXISTS", "none") == 0
    assert rb.call("SETRANGE", "k", "536870912000", "") == 9
    assert err(rb.call("SETRANGE", "k", "-1", "x")) == \
        "ERR offset is out of range"
    assert err(rb.call("SETRANGE", "k", "abc", "x")) == NOTINT
    for off in ("536870912", "536870911" + "0", "9223372036854775807"):
        assert err(rb.call("SETRANGE", "k", off, "x")) == TOOBIG
    assert err(rb.call("SETRANGE", "k", "536870911", "xy")) == \
        TOOBIG
    rb.call("HSET", "h", "f", "v")
    assert err(rb.call("SETRANGE", "h", "0", "x")) == WRONGTYPE
    assert err(rb.call("SETRANGE", "h", "0", "")) == WRONGTYPE
    assert rb.call("GET", "k") == b"hippo\0\0\0!"


@pytest.mark.parametrize("cmd", ["GETRANGE", "SUBSTR"])
def test_getrange(raw, cmd):
    raw.call("SET", "k", "This is a string")
    for start, end, want in ((0, 3, "This"), (-3, -1, "ing"), (0, -1,
                             "This is a string"), (10, 5, ""),
                             (5, 100000, "is a string"), (-100, 2, "Thi"),
                             (-1, -5, ""), (-5, -5, "t"), (100, 200, ""),
                             (-9223372036854775808, 9223372036854775807,
                              "This is a string")):
        assert raw.call(cmd, "k", str(start), str(end)) == want, (start, end)
    assert raw.call(cmd, "none", "0", "-1") == ""
    assert raw.last_raw == b"$0\r\n\r\n"
    raw.call("SET", "n", "12345")
    assert raw.call(cmd, "n", "1", "2") == "23"
    assert err(raw.call(cmd, "k", "a", "1")) == NOTINT
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call(cmd, "h", "0", "1")) == WRONGTYPE
    assert err(raw.call(cmd, "k", "0")) == arity(cmd.lower())


def test_append_limits(raw):
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("APPEND", "h", "x")) == WRONGTYPE
    assert raw.call("APPEND", "k", "") == 0
    assert raw.call("EXISTS", "k") == 1  # APPEND creates even when empty


# ------------------------------------------------------------- bits

def test_setbit_getbit(rb):
    assert rb.call("SETBIT", "b", "7", "1") == 0
    assert rb.call("SETBIT", "b", "7", "1") == 1
    assert rb.call("GET", "b") == b"\x01"
    assert rb.call("SETBIT", "b", "7", "0") == 1
    assert rb.call("SETBIT", "z", "100", "0") == 0
    assert rb.call("STRLEN", "z") == 13
    assert rb.call("GETBIT", "b", "7") == 0
    assert rb.call("GETBIT", "b", "10000000") == 0
    assert rb.call("GETBIT", "none", "3") == 0
    rb.call("SET", "n", "1")  # '1' is 0x31
    assert [rb.call("GETBIT", "n", str(i)) for i in range(8)] == \
        [0, 0, 1, 1, 0, 0, 0, 1]
    for off in ("-1", str(MAXBITS), "abc", "9223372036854775808"):
        assert err(rb.call("SETBIT", "b", off, "1")) == BADOFF
        assert err(rb.call("GETBIT", "b", off)) == BADOFF
    for bit in ("2", "-1", "a", ""):
        assert err(rb.call("SETBIT", "b", "1", bit)) == BADBIT
    rb.call("HSET", "h", "f", "v")
    assert err(rb.call("SETBIT", "h", "1", "1")) == WRONGTYPE
    assert err(rb.call("GETBIT", "h", "1")) == WRONGTYPE


@pytest.mark.slow
def test_setbit_last_bit(rb):
    # the highest offset allowed makes a 512 MB string (about 1.5 GB of
    # memory while it is written: value, META record, LMDB pages)
    assert rb.call("SETBIT", "big", str(MAXBITS - 1), "1") == 0
    assert rb.call("STRLEN", "big") == 512 * 1024 * 1024
    assert rb.call("GETBIT", "big", str(MAXBITS - 1)) == 1
    assert rb.call("BITCOUNT", "big") == 1
    assert rb.call("BITPOS", "big", "1") == MAXBITS - 1
    rb.call("DEL", "big")


def test_bitcount(raw):
    raw.call("SET", "s", "foobar")
    for args, want in (((), 26), (("0", "0"), 4), (("1", "1"), 6),
                       (("1", "-2"), 18), (("-2", "-1"), 7),
                       (("5", "30", "BIT"), 17), (("0", "-1", "bit"), 26),
                       (("-5", "-1", "BIT"), 2), (("-1", "-3"), 0),
                       (("0", "-1", "BYTE"), 26), (("100", "200"), 0),
                       (("-9223372036854775808", "9223372036854775807"), 26)):
        assert raw.call("BITCOUNT", "s", *args) == want, args
    assert err(raw.call("BITCOUNT", "s", "0")) == SYNTAX
    assert err(raw.call("BITCOUNT", "s", "0", "1", "BOGUS")) == SYNTAX
    assert err(raw.call("BITCOUNT", "s", "0", "1", "BIT", "x")) == SYNTAX
    assert err(raw.call("BITCOUNT", "s", "a", "1")) == NOTINT
    # a missing key answers 0 before its arguments are looked at
    assert raw.call("BITCOUNT", "none", "a", "b") == 0
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("BITCOUNT", "h")) == WRONGTYPE


def test_bitpos(rb):
    rb.call("SET", "p", b"\xff\xf0\x00")
    for args, want in ((("0",), 12), (("1",), 0), (("1", "2"), -1),
                       (("0", "0", "0"), -1), (("0", "-1"), 16),
                       (("1", "7", "15", "BIT"), 7),
                       (("0", "7", "15", "BIT"), 12),
                       (("0", "0", "-1", "byte"), 12)):
        assert rb.call("BITPOS", "p", *args) == want, args
    rb.call("SET", "f", b"\xff\xff")
    assert rb.call("BITPOS", "f", "0") == 16  # zeros after the end
    assert rb.call("BITPOS", "f", "0", "1") == 16
    assert rb.call("BITPOS", "f", "0", "0", "-1") == -1  # not with an end
    assert rb.call("BITPOS", "f", "0", "0", "-1", "BIT") == -1
    assert rb.call("BITPOS", "none", "0") == 0
    assert rb.call("BITPOS", "none", "1") == -1
    assert rb.call("BITPOS", "none", "1", "bogus") == -1
    assert err(rb.call("BITPOS", "f", "2")) == \
        "ERR The bit argument must be 1 or 0."
    assert err(rb.call("BITPOS", "f", "a")) == NOTINT
    assert err(rb.call("BITPOS", "f", "1", "0", "1", "BOGUS")) == \
        SYNTAX
    assert err(rb.call("BITPOS", "f", "1", "0", "1", "BIT", "x")) == \
        SYNTAX
    rb.call("HSET", "h", "f", "v")
    assert err(rb.call("BITPOS", "h", "0")) == WRONGTYPE


def test_bitop(rb):
    rb.call("SET", "a{t}", b"\x0f\xf0\x55")
    rb.call("SET", "b{t}", b"\xff\x0f")
    assert rb.call("BITOP", "AND", "d{t}", "a{t}", "b{t}") == 3
    assert rb.call("GET", "d{t}") == b"\x0f\x00\x00"
    assert rb.call("BITOP", "or", "d{t}", "a{t}", "b{t}", "none{t}") == 3
    assert rb.call("GET", "d{t}") == b"\xff\xff\x55"
    assert rb.call("BITOP", "XOR", "d{t}", "a{t}", "b{t}") == 3
    assert rb.call("GET", "d{t}") == b"\xf0\xff\x55"
    assert rb.call("BITOP", "NOT", "d{t}", "a{t}") == 3
    assert rb.call("GET", "d{t}") == b"\xf0\x0f\xaa"
    assert rb.call("BITOP", "AND", "d{t}", "a{t}", "none{t}") == 3
    assert rb.call("GET", "d{t}") == b"\0\0\0"
    # the destination may be a source, and loses its TTL and old type
    rb.call("EXPIRE", "a{t}", "100")
    assert rb.call("BITOP", "OR", "a{t}", "a{t}", "b{t}") == 3
    assert rb.call("TTL", "a{t}") == -1
    rb.call("HSET", "h{t}", "f", "v")
    assert rb.call("BITOP", "OR", "h{t}", "b{t}") == 2
    assert rb.call("TYPE", "h{t}") == "string"
    # an empty result deletes the destination
    assert rb.call("BITOP", "AND", "d{t}", "none{t}", "none2{t}") == 0
    assert rb.call("EXISTS", "d{t}") == 0
    rb.call("HSET", "h2{t}", "f", "v")
    rb.call("SET", "d{t}", "keep")
    assert err(rb.call("BITOP", "AND", "d{t}", "a{t}", "h2{t}")) == \
        WRONGTYPE
    assert rb.call("GET", "d{t}") == b"keep"
    assert err(rb.call("BITOP", "NOT", "d{t}", "a{t}", "b{t}")) == \
        "ERR BITOP NOT must be called with a single source key."
    assert err(rb.call("BITOP", "NAND", "d{t}", "a{t}")) == SYNTAX
    assert err(rb.call("BITOP", "AND", "d{t}")) == arity("bitop")
    # keys of any slot on a single node
    rb.call("SET", "x", b"\x01")
    rb.call("SET", "y", b"\x02")
    assert rb.call("BITOP", "OR", "z", "x", "y") == 1
    assert rb.call("GET", "z") == b"\x03"


def test_bitfield(raw):
    assert raw.call("BITFIELD", "f", "SET", "i8", "0", "100") == [0]
    assert raw.call("BITFIELD", "f", "GET", "i8", "0", "GET", "u4", "0",
                    "GET", "i4", "4") == [100, 6, 4]
    assert raw.call("BITFIELD", "f", "INCRBY", "i8", "0", "100") == [-56]
    assert raw.call("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i8", "0",
                    "-100", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-1",
                    "OVERFLOW", "WRAP", "INCRBY", "i8", "0", "-1") == \
        [-128, None, 127]
    assert raw.call("BITFIELD", "f", "SET", "u8", "#1", "255", "GET", "u8",
                    "8", "INCRBY", "u8", "#1", "10") == [0, 255, 9]
    assert raw.call("BITFIELD", "f", "OVERFLOW", "SAT", "SET", "u8", "0",
                    "-1", "OVERFLOW", "FAIL", "SET", "u8", "0", "-1") == \
        [127, None]
    assert raw.call("BITFIELD", "f", "GET", "u8", "0") == [255]
    assert raw.call("BITFIELD", "g", "SET", "i64", "0",
                    "-9223372036854775808", "INCRBY", "i64", "0", "-1",
                    "OVERFLOW", "SAT", "INCRBY", "i64", "0", "1",
                    "OVERFLOW", "FAIL", "INCRBY", "i64", "0",
                    "9223372036854775807") == \
        [0, 9223372036854775807, 9223372036854775807, None]
    assert raw.call("BITFIELD", "g", "GET", "u63", "1", "GET", "i64",
                    "0") == [9223372036854775807, 9223372036854775807]
    # only GETs: a missing key reads zeros and is not created
    assert raw.call("BITFIELD", "none", "GET", "i8", "100") == [0]
    assert raw.call("EXISTS", "none") == 0
    assert raw.call("BITFIELD", "none") == []
    # a failing write still makes (or pads) the string, as Redis does
    assert raw.call("BITFIELD", "p", "OVERFLOW", "FAIL", "INCRBY", "u2",
                    "100", "5") == [None]
    assert raw.call("STRLEN", "p") == 13


def test_bitfield_errors(raw):
    raw.call("SET", "f", "x")
    for t in ("u64", "i65", "i0", "u0", "x8", "i", "I8", "i-1", "i8x"):
        assert err(raw.call("BITFIELD", "f", "GET", t, "0")) == BADTYPE, t
    for off in ("-1", str(MAXBITS), "#-1", "#536870912", "a",
                "#9223372036854775807", "#"):
        assert err(raw.call("BITFIELD", "f", "GET", "i8", off)) == BADOFF, \
            off
    assert raw.call("BITFIELD", "f", "GET", "i8", "#536870911") == [0]
    assert raw.call("BITFIELD", "f", "GET", "i8", str(MAXBITS - 1)) == [0]
    assert err(raw.call("BITFIELD", "f", "OVERFLOW", "BOGUS", "GET", "i8",
                        "0")) == "ERR Invalid OVERFLOW type specified"
    for bad in (("BOGUS",), ("GET", "i8"), ("SET", "i8", "0"),
                ("INCRBY", "i8", "0"), ("OVERFLOW",)):
        assert err(raw.call("BITFIELD", "f", *bad)) == SYNTAX, bad
    assert err(raw.call("BITFIELD", "f", "SET", "i8", "0", "abc")) == NOTINT
    assert err(raw.call("BITFIELD", "f", "INCRBY", "i8", "0",
                        "9223372036854775808")) == NOTINT
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("BITFIELD", "h", "GET", "i8", "0")) == WRONGTYPE
    assert err(raw.call("BITFIELD", "h", "SET", "i8", "0", "1")) == WRONGTYPE
    assert err(raw.call("BITFIELD")) == arity("bitfield")
    assert raw.call("GET", "f") == "x"


def test_bitfield_ro(raw):
    raw.call("BITFIELD", "f", "SET", "u8", "0", "200")
    assert raw.call("BITFIELD_RO", "f", "GET", "u8", "0", "GET", "i8",
                    "0") == [200, -56]
    assert raw.call("BITFIELD_RO", "f") == []
    assert err(raw.call("BITFIELD_RO", "f", "SET", "u8", "0", "1")) == \
        "ERR BITFIELD_RO only supports the GET subcommand"
    assert err(raw.call("BITFIELD_RO", "f", "INCRBY", "u8", "0", "1")) == \
        "ERR BITFIELD_RO only supports the GET subcommand"
    raw.call("HSET", "h", "f", "v")
    assert err(raw.call("BITFIELD_RO", "h", "GET", "u8", "0")) == WRONGTYPE
    assert raw.call("BITFIELD", "f", "GET", "u8", "0") == [200]


def test_bitfield_resp3(r3):
    assert r3.call("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0",
                   "5", "GET", "u2", "0") == [None, 0]
    assert r3.last_raw == b"*2\r\n_\r\n:0\r\n"


# ------------------------------------------------------------------ LCS

def test_lcs(raw):
    raw.call("SET", "a{t}", "ohmytext")
    raw.call("SET", "b{t}", "mynewtext")
    assert raw.call("LCS", "a{t}", "b{t}") == "mytext"
    assert raw.call("LCS", "a{t}", "b{t}", "LEN") == 6
    assert raw.call("LCS", "a{t}", "b{t}", "IDX") == \
        ["matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len", 6]
    assert raw.call("LCS", "a{t}", "b{t}", "IDX", "WITHMATCHLEN") == \
        ["matches", [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]], "len", 6]
    assert raw.call("LCS", "a{t}", "b{t}", "IDX", "MINMATCHLEN", "4",
                    "WITHMATCHLEN") == \
        ["matches", [[[4, 7], [5, 8], 4]], "len", 6]
    assert raw.call("LCS", "a{t}", "b{t}", "IDX", "MINMATCHLEN", "-5") == \
        ["matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len", 6]
    assert raw.call("LCS", "a{t}", "none{t}") == ""
    assert raw.call("LCS", "none{t}", "none2{t}", "IDX") == \
        ["matches", [], "len", 0]
    assert raw.call("LCS", "a{t}", "a{t}", "IDX") == \
        ["matches", [[[0, 7], [0, 7]]], "len", 8]
    assert err(raw.call("LCS", "a{t}", "b{t}", "LEN", "IDX")) == \
        "ERR If you want both the length and indexes, please just use IDX."
    assert err(raw.call("LCS", "a{t}", "b{t}", "BOGUS")) == SYNTAX
    assert err(raw.call("LCS", "a{t}", "b{t}", "MINMATCHLEN")) == SYNTAX
    assert err(raw.call("LCS", "a{t}", "b{t}", "MINMATCHLEN", "x")) == NOTINT
    raw.call("HSET", "h{t}", "f", "v")
    # the type is checked before the options
    assert err(raw.call("LCS", "a{t}", "h{t}", "BOGUS")) == \
        "ERR The specified keys must contain string values"
    assert err(raw.call("LCS", "a{t}")) == arity("lcs")
    raw.call("SET", "x", "abcd")
    raw.call("SET", "y", "xbcy")
    assert raw.call("LCS", "x", "y") == "bc"  # any two slots on one node


def test_lcs_too_big(raw):
    raw.call("SETRANGE", "a{t}", "20000", "x")
    raw.call("SETRANGE", "b{t}", "20000", "x")
    assert err(raw.call("LCS", "a{t}", "b{t}")) == (
        "ERR Insufficient memory, transient memory for LCS exceeds "
        "proto-max-bulk-len")


def test_lcs_resp3(r3):
    r3.call("SET", "a{t}", "ohmytext")
    r3.call("SET", "b{t}", "mynewtext")
    rep = r3.call("LCS", "a{t}", "b{t}", "IDX", "MINMATCHLEN", "4")
    assert isinstance(rep, pkserver.Map)
    assert rep == {"matches": [[[4, 7], [5, 8]]], "len": 6}
    assert r3.last_raw.startswith(b"%2\r\n")


def test_python_client(r):
    assert r.setnx("k", "v") is True
    assert r.getex("k", ex=100) == "v"
    assert r.ttl("k") > 0
    assert r.incrbyfloat("f", 2.5) == 2.5
    assert r.setrange("k", 1, "xyz") == 4
    assert r.getrange("k", 0, -1) == "vxyz"
    assert r.setbit("b", 3, 1) == 0
    assert r.bitcount("b") == 1
    assert r.bitpos("b", 1) == 3
    assert r.bitfield("bf").set("u8", 0, 7).get("u8", 0).execute() == [0, 7]
    assert r.msetnx({"m1{t}": "1", "m2{t}": "2"}) is True
    assert r.bitop("OR", "d{t}", "m1{t}", "m2{t}") == 1
    assert r.execute_command("LCS", "m1{t}", "m2{t}") == ""


# ------------------------------------------------------ cluster routing

@pytest.mark.partkv_only
def test_multikey_crossslot(cluster_factory):
    c = cluster_factory(nodes=1, base_port=0, replicas=1)
    with c.nodes[0].raw() as n:
        for args in (("MSETNX", "a", "1", "b", "2"),
                     ("BITOP", "OR", "a", "b"), ("BITOP", "AND", "a{x}",
                                                 "a{x}", "b"),
                     ("LCS", "a", "b")):
            assert n.call(*args) == RespError(CROSSSLOT), args
        # the operation name and LCS's options are not keys
        assert n.call("MSETNX", "a{x}", "1", "b{x}", "2") == 1
        assert n.call("BITOP", "OR", "d{x}", "a{x}", "b{x}") == 1
        assert n.call("LCS", "a{x}", "b{x}", "LEN") == 0
        assert n.call("COMMAND", "GETKEYS", "BITOP", "OR", "d", "a", "b") == \
            ["d", "a", "b"]
        assert n.call("COMMAND", "GETKEYS", "MSETNX", "a", "1", "b", "2") == \
            ["a", "b"]
