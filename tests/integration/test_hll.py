"""HyperLogLog commands: counts and bytes as redis-server 7.0 produces
them (the numbers below were taken from redis-server), type and
corruption errors.  Run against Redis with PARTKV_TEST_TARGET=redis."""
import hashlib

from server import RespError

NOTHLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
INVALID = "INVALIDOBJ Corrupted HLL object detected"
WRONGTYPE = ("WRONGTYPE Operation against a key holding the wrong kind of "
             "value")


def err(reply):
    assert isinstance(reply, RespError), "expected an error, got %r" % (
        reply,)
    return reply.message


def test_pfadd_pfcount(raw):
    assert raw.call("PFADD", "h") == 1  # creates
    assert raw.call("PFADD", "h") == 0
    assert raw.call("PFCOUNT", "h") == 0
    assert raw.call("PFADD", "h", "a", "b", "c") == 1
    assert raw.call("PFADD", "h", "a") == 0
    assert raw.call("PFCOUNT", "h") == 3
    assert raw.call("PFCOUNT", "nope") == 0
    assert raw.call("TYPE", "h") == "string"
    assert raw.call("PFADD", "e", "") == 1


def test_bytes_match_redis(rb):
    rb.pfadd("h", "a", "b", "c")
    assert rb.get("h") == (b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                           b"\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ")
    assert rb.pfcount("h") == 3
    assert rb.get("h")[8:16] == b"\x03" + b"\x00" * 7  # the cached count


def test_counts_match_redis(rb):
    r = rb
    for i in range(1, 6):
        r.pfadd("big{t}", *range(i * 1000, i * 1000 + 3000))
    assert r.pfcount("big{t}") == 6988
    assert r.strlen("big{t}") == 12304  # promoted to dense
    r.pfadd("h{t}", "a", "b", "c")
    assert r.pfmerge("m{t}", "big{t}", "h{t}")
    assert r.pfcount("m{t}") == 6993
    assert hashlib.md5(r.get("m{t}")).hexdigest() == \
        "5f67347dfaa2337a4bcf9f8b1b5fb963"
    assert r.pfcount("big{t}", "h{t}", "nope{t}") == 6993


def test_pfmerge(raw):
    raw.call("PFADD", "a{t}", "1", "2", "3")
    raw.call("PFADD", "b{t}", "3", "4")
    assert raw.call("PFMERGE", "d{t}", "a{t}", "b{t}") == "OK"
    assert raw.call("PFCOUNT", "d{t}") == 4
    assert raw.call("PFMERGE", "d{t}") == "OK"
    assert raw.call("PFCOUNT", "d{t}") == 4
    assert raw.call("PFMERGE", "new{t}") == "OK"
    assert raw.call("PFCOUNT", "new{t}") == 0
    raw.call("EXPIRE", "d{t}", "100")
    raw.call("PFADD", "d{t}", "x")
    assert raw.call("TTL", "d{t}") > 0  # PFADD keeps the expiry


def test_type_errors(raw):
    raw.call("SET", "s{t}", "not an hll at all")
    raw.call("SADD", "set{t}", "a")
    for cmd in (["PFADD", "s{t}", "a"], ["PFCOUNT", "s{t}"],
                ["PFMERGE", "d{t}", "s{t}"], ["PFMERGE", "s{t}", "d{t}"],
                ["PFCOUNT", "d{t}", "s{t}"]):
        assert err(raw.call(*cmd)) == NOTHLL, cmd
    assert err(raw.call("PFADD", "set{t}", "a")) == WRONGTYPE
    assert err(raw.call("PFCOUNT", "set{t}")) == WRONGTYPE
    assert raw.call("GET", "s{t}") == "not an hll at all"
    raw.call("SET", "short{t}", "HYLL")
    assert err(raw.call("PFCOUNT", "short{t}")) == NOTHLL


def test_corruption(rb):
    rb.pfadd("h", "a", "b", "c")
    rb.append("h", b"hello")  # sparse runs past 16384 registers
    assert err_of(rb, "h") == INVALID
    rb.delete("h")
    rb.pfadd("h", "a", "b", "c")
    v = rb.get("h")
    rb.set("h", b"0123" + v[4:])  # broken magic
    assert err_of(rb, "h") == NOTHLL
    rb.set("h", v[:4] + b"x" + v[5:])  # unknown encoding
    assert err_of(rb, "h") == NOTHLL
    rb.set("h", v[:4] + b"\x00" + v[5:])  # dense of the wrong length
    assert err_of(rb, "h") == NOTHLL
    rb.set("h", v[:-3])  # sparse runs short of 16384 registers
    assert err_of(rb, "h") == INVALID
    assert rb.ping()


def test_fuzzed_values_never_crash(rb):
    import random
    rnd = random.Random(3)
    rb.pfadd("src", *range(500))
    good = rb.get("src")
    for _ in range(300):
        v = bytearray(good)
        for _ in range(rnd.randrange(1, 6)):
            v[rnd.randrange(len(v))] = rnd.randrange(256)
        rb.set("h", bytes(v))
        try:
            rb.pfcount("h")
            rb.pfadd("h", "x")
        except Exception:
            pass
    assert rb.ping()


def err_of(rb, key):
    try:
        rb.pfcount(key)
    except Exception as e:  # redis.ResponseError
        return str(e)
    raise AssertionError("no error")
