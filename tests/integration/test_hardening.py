"""Hardening against clients that are not trusted (issue 19, item 3), as
Redis 7.0 does it: the limits on connections that have not authenticated,
maxclients, and per-class output buffer limits; and partkv's own case,
internal PK.* frames from a peer that has not presented the cluster
secret.

Texts are Redis 7.0.15's (networking.c, config.c).  Run the file against
redis-server with PARTKV_TEST_TARGET=redis to check the expectations; the
partkv_only tests are about PK.* commands."""
import socket
import time

import pytest

import server as pkserver
from server import RespError

PASS = "hardening-pw"
SECRET = "hardening-secret"
P = "ERR Protocol error: "
NOAUTH = "NOAUTH Authentication required."


def mbulk(*args):
    return pkserver.encode_command(*args)


def send_quietly(c, data):
    """Send; the server may close early (that is the point) -> False."""
    try:
        c.send_raw(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


def expect_refused(srv, data, text, auth=False):
    """data on a fresh connection: one error reply with text, then the
    server closes the connection."""
    with srv.raw(timeout=5, auth=auth) as c:
        send_quietly(c, data)
        rep = c.read()
        assert isinstance(rep, RespError), "expected an error, got %r" % (
            rep,)
        assert rep.message == text
        assert c.closed_by_peer(5.0), "connection still open after %r" % (
            text,)


def assert_open(c):
    assert c.call("PING") in ("PONG", RespError(NOAUTH))


@pytest.fixture
def locked(server_factory):
    """A server with requirepass."""
    return server_factory(requirepass=PASS)


# -- item 1: limits while not authenticated -------------------------------

def test_unauth_multibulk_length(locked):
    expect_refused(locked, b"*11\r\n", P + "unauthenticated multibulk length")
    # A count that is invalid anyway says so first, as in Redis.
    expect_refused(locked, b"*3000000000\r\n", P + "invalid multibulk length")


def test_unauth_bulk_length(locked):
    expect_refused(locked, b"*2\r\n$3\r\nGET\r\n$16385\r\n",
                   P + "unauthenticated bulk length")
    expect_refused(locked, b"*1\r\n$999999999999\r\n",
                   P + "invalid bulk length")


def test_unauth_limits_are_inclusive(locked):
    """10 elements and 16384 bytes pass the parser and get NOAUTH, on a
    connection that stays open."""
    with locked.raw(auth=False) as c:
        assert c.call(*(["MSET"] + ["k"] * 8 + ["v"])) == RespError(NOAUTH)
        assert c.call("SET", "k", "x" * 16384) == RespError(NOAUTH)
        assert c.call("AUTH", PASS) == "OK"
        assert c.call("STRLEN", "k") == 0


def test_unauth_inline_has_only_the_inline_limit(locked):
    """Redis 7.0 has no unauthenticated limit for inline requests: a line
    is bounded by the 64 KiB inline limit whoever sends it."""
    with locked.raw(auth=False) as c:
        c.send_raw(b" ".join([b"MSET"] + [b"k", b"v"] * 15) + b"\r\n")
        assert c.read() == RespError(NOAUTH)
        c.send_raw(b"GET " + b"k" * 30000 + b"\r\n")
        assert c.read() == RespError(NOAUTH)
    expect_refused(locked, b"GET " + b"k" * 70000,
                   P + "too big inline request")


def test_auth_lifts_the_limits_for_the_next_command(locked):
    """AUTH pipelined with a large write in one send: the write is parsed
    after AUTH ran, so it passes."""
    big = "v" * 100000
    with locked.raw(auth=False) as c:
        c.send_raw(mbulk("AUTH", PASS) + mbulk("SET", "big", big) +
                   mbulk(*(["MSET"] + ["a", "1"] * 8)))
        assert c.read() == "OK"
        assert c.read() == "OK"
        assert c.read() == "OK"
        assert c.call("STRLEN", "big") == len(big)


def test_hello_auth_lifts_the_limits(locked):
    with locked.raw(auth=False) as c:
        c.send_raw(mbulk("HELLO", "2", "AUTH", "default", PASS) +
                   mbulk("SET", "big", "v" * 50000))
        assert isinstance(c.read(), list)
        assert c.read() == "OK"


def test_wrong_password_keeps_the_limits(locked):
    with locked.raw(auth=False, timeout=5) as c:
        assert c.call("AUTH", "nope").message.startswith("WRONGPASS")
        send_quietly(c, b"*11\r\n")
        assert c.read() == RespError(P + "unauthenticated multibulk length")
        assert c.closed_by_peer(5.0)


def test_reset_brings_the_limits_back(locked):
    with locked.raw(auth=False, timeout=5) as c:
        assert c.call("AUTH", PASS) == "OK"
        assert c.call("SET", "k", "x" * 20000) == "OK"
        assert c.call("RESET") == "RESET"
        send_quietly(c, mbulk("SET", "k", "x" * 20000))
        assert c.read() == RespError(P + "unauthenticated bulk length")
        assert c.closed_by_peer(5.0)


def test_no_password_no_limits(server):
    """Without a password every connection is authenticated (Redis: the
    default user is nopass), so only the general limits apply."""
    with server.raw() as c:
        assert c.call(*(["MSET"] + ["k", "v"] * 20)) == "OK"
        assert c.call("SET", "k", "x" * 200000) == "OK"


def test_hostile_header_is_dropped_at_once(locked):
    """A huge declared bulk is refused at its header: the server closes
    the connection instead of reading the 100 MB that would follow, and
    other clients go on.  (The parser's memory: tests/unit/test_resp.c;
    RSS under 1,000 such connections: bench/hostile-conns.py.)"""
    with locked.raw(auth=False, timeout=5) as c:
        sent = 0
        chunk = b"x" * 65536
        ok = send_quietly(c, b"*2\r\n$3\r\nGET\r\n$100000000\r\n")
        t0 = time.monotonic()
        while ok and sent < 100000000 and time.monotonic() - t0 < 10:
            ok = send_quietly(c, chunk)
            sent += len(chunk) if ok else 0
        assert not ok, "the server read %d bytes of the body" % sent
        assert sent < 8 << 20  # socket buffers, not the server's
    with locked.raw() as c:
        assert c.call("PING") == "PONG"


# -- item 2: maxclients ---------------------------------------------------

def test_maxclients_flag(server_factory):
    srv = server_factory(extra=["--maxclients", "1"])
    with srv.raw() as a:
        assert a.call("PING") == "PONG"
        s = socket.create_connection((srv.host, srv.port), timeout=5)
        try:
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
            assert data == b"-ERR max number of clients reached\r\n"
            assert s.recv(256) == b""
        finally:
            s.close()
        assert a.call("PING") == "PONG"


# -- item 4: internal frames from a peer without the cluster secret ---------

def pk_repl_push_header(n):
    """The start of a PK.REPL PUSH frame whose last argument is n bytes."""
    return (b"*4\r\n$7\r\nPK.REPL\r\n$4\r\nPUSH\r\n$1\r\n0\r\n$%d\r\n" % n)


@pytest.fixture
def secret(server_factory):
    return server_factory(extra=["--cluster-secret", SECRET])


@pytest.mark.partkv_only
def test_internal_frame_refused_at_header(secret):
    """Without PK.AUTH, a large PK.REPL frame is refused once its name and
    the big length are in, and the body is never read."""
    expect_refused(secret, pk_repl_push_header(50 << 20) + b"r" * 1000,
                   P + "unauthenticated bulk length")
    with secret.raw(timeout=5) as c:
        sent, ok = 0, send_quietly(c, pk_repl_push_header(50 << 20))
        while ok and sent < 50 << 20:
            ok = send_quietly(c, b"r" * 65536)
            sent += 65536 if ok else 0
        assert not ok and sent < 8 << 20, "the server read %d bytes" % sent
    # Many arguments are refused at the name too.
    expect_refused(secret, b"*12\r\n$7\r\nPK.REPL\r\n",
                   P + "unauthenticated multibulk length")
    expect_refused(secret, b"*3\r\n$7\r\npk.move\r\n$1\r\nx\r\n$20000\r\n",
                   P + "unauthenticated bulk length")


@pytest.mark.partkv_only
def test_internal_small_frame_gets_noauth(secret):
    """A small frame is answered as before, and the client may go on."""
    with secret.raw() as c:
        rep = c.call("PK.REPL", "PUSH", "0", "abc")
        assert rep == RespError("NOAUTH PK.REPL needs PK.AUTH with the "
                                "cluster secret")
        # Public commands, PK.* or not, are not limited.
        assert c.call("SET", "k", "x" * 100000) == "OK"
        assert c.call("PING") == "PONG"


@pytest.mark.partkv_only
def test_internal_frame_after_pk_auth_passes(secret):
    """A peer that presented the secret sends large frames, pipelined right
    after PK.AUTH as pk_link does."""
    with secret.raw() as c:
        c.send_raw(mbulk("PK.AUTH", SECRET) +
                   pk_repl_push_header(200000) + b"r" * 200000 + b"\r\n")
        assert c.read() == "OK"
        rep = c.read()  # parsed whole: what PK.REPL says of a lone node
        assert rep == RespError("TRYAGAIN this node has no map yet")


@pytest.mark.partkv_only
def test_internal_frame_with_password_and_secret(server_factory):
    srv = server_factory(requirepass=PASS,
                         extra=["--cluster-secret", SECRET])
    expect_refused(srv, pk_repl_push_header(1 << 20),
                   P + "unauthenticated bulk length")
    with srv.raw(auth=False) as c:
        c.send_raw(mbulk("PK.AUTH", SECRET) +
                   pk_repl_push_header(100000) + b"r" * 100000 + b"\r\n")
        assert c.read() == "OK"
        assert c.read() == RespError("TRYAGAIN this node has no map yet")


@pytest.mark.partkv_only
def test_no_password_no_secret_parses_internal_frames(server):
    """No password and no secret: every connection is authenticated, as in
    Redis, so a large PK.REPL frame is read whole and then refused by the
    command (no one can present a secret that is not set)."""
    with server.raw() as c:
        c.send_raw(pk_repl_push_header(100000) + b"r" * 100000 + b"\r\n")
        rep = c.read()
        assert isinstance(rep, RespError)
        assert rep.message.startswith("NOAUTH PK.REPL")
        assert c.call("PING") == "PONG"


# -- item 3: client-output-buffer-limit -------------------------------------

OBUF = "client-output-buffer-limit"
OBUF_DEFAULT = ("normal 0 0 0 slave 268435456 67108864 60 "
                "pubsub 33554432 8388608 60")


def obuf_failed(why):
    return ("ERR CONFIG SET failed (possibly related to argument '%s') - %s"
            % (OBUF, why))


def get_obuf(c):
    rep = c.call("CONFIG", "GET", OBUF)
    assert rep[0] == OBUF
    return rep[1]


def test_obuf_config_default_and_set(raw):
    assert get_obuf(raw) == OBUF_DEFAULT
    assert raw.call("CONFIG", "SET", OBUF, "replica 1mb 512kb 10") == "OK"
    assert get_obuf(raw) == ("normal 0 0 0 slave 1048576 524288 10 "
                             "pubsub 33554432 8388608 60")
    assert raw.call("CONFIG", "SET", OBUF,
                    "NORMAL 1k 2kb 3 slave 4m 5gb 6 pubsub 7 8b 9") == "OK"
    assert get_obuf(raw) == ("normal 1000 2048 3 slave 4000000 5368709120 6 "
                             "pubsub 7 8 9")
    # "" names no class and changes nothing.
    assert raw.call("CONFIG", "SET", OBUF, "") == "OK"
    assert raw.call("CONFIG", "SET", OBUF, OBUF_DEFAULT) == "OK"
    assert get_obuf(raw) == OBUF_DEFAULT
    assert raw.call("CONFIG", "GET", "client-output-*") == [OBUF,
                                                           OBUF_DEFAULT]


@pytest.mark.parametrize("value,why", [
    ("normal 0 0", "Wrong number of arguments in buffer limit "
     "configuration."),
    ("normal 0 0 0 pubsub", "Wrong number of arguments in buffer limit "
     "configuration."),
    ("master 0 0 0", "Invalid client class specified in buffer limit "
     "configuration."),
    ("normal 0 0 0 nobody 0 0 0", "Invalid client class specified in "
     "buffer limit configuration."),
    ("normal x 0 0", "Error in hard, soft or soft_seconds setting in "
     "buffer limit configuration."),
    ("normal 0 -1 0", "Error in hard, soft or soft_seconds setting in "
     "buffer limit configuration."),
    ("normal 0 0 -1", "Error in hard, soft or soft_seconds setting in "
     "buffer limit configuration."),
    ("normal 0 0 1s", "Error in hard, soft or soft_seconds setting in "
     "buffer limit configuration."),
    ("normal 1tb 0 0", "Error in hard, soft or soft_seconds setting in "
     "buffer limit configuration."),
])
def test_obuf_config_errors(raw, value, why):
    assert raw.call("CONFIG", "SET", OBUF, value) == RespError(
        obuf_failed(why))
    assert get_obuf(raw) == OBUF_DEFAULT  # all or nothing


def test_obuf_flag(server_factory):
    srv = server_factory(extra=["--" + OBUF, "normal 1mb 256kb 5 pubsub 0 0 0"])
    with srv.raw() as c:
        assert get_obuf(c) == ("normal 1048576 262144 5 slave 268435456 "
                               "67108864 60 pubsub 0 0 0")


@pytest.mark.partkv_only
def test_obuf_flag_refused(partkv):
    p = partkv("server", "--" + OBUF, "normal 1mb", check=False, timeout=30)
    assert p.returncode == 2
    assert "Wrong number of arguments in buffer limit" in p.stderr


def client_ids(c):
    out = c.call("CLIENT", "LIST")
    return {int(f.split("=", 1)[1]) for line in out.splitlines()
            for f in line.split() if f.startswith("id=")}


def flood(srv, n=400):
    """A client that sends n GETs of a 100 kB value and reads nothing;
    returns it and its id."""
    c = srv.raw(timeout=5)
    cid = c.call("CLIENT", "ID")
    c.send_raw(mbulk("GET", "big") * n)
    return c, cid


def assert_logged(srv):
    deadline = time.monotonic() + 5
    while "for overcoming of output buffer limits." not in srv.logs(100000):
        assert time.monotonic() < deadline, srv.logs()
        time.sleep(0.1)


def wait_gone(admin, cid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cid not in client_ids(admin):
            return True
        time.sleep(0.1)
    return False


def test_obuf_hard_limit_closes_a_client_that_never_reads(server, raw):
    assert raw.call("CONFIG", "SET", OBUF, "normal 256kb 0 0") == "OK"
    assert raw.call("SET", "big", "x" * 100000) == "OK"
    c, cid = flood(server)
    try:
        assert wait_gone(raw, cid, 10), "client %d still listed" % cid
        assert c.closed_by_peer(10)
        assert_logged(server)
    finally:
        c.close()
    assert raw.call("PING") == "PONG"


def test_obuf_soft_limit_closes_after_its_seconds(server, raw):
    assert raw.call("CONFIG", "SET", OBUF, "normal 0 256kb 1") == "OK"
    assert raw.call("SET", "big", "x" * 100000) == "OK"
    c, cid = flood(server)
    t0 = time.monotonic()
    try:
        time.sleep(0.5)
        assert cid in client_ids(raw)  # over the soft limit, not for long
        assert wait_gone(raw, cid, 10), "client %d still listed" % cid
        assert time.monotonic() - t0 > 1.0
        assert_logged(server)
    finally:
        c.close()


def test_obuf_default_limits_keep_a_slow_reader(server, raw):
    """normal 0 0 0: a client that does not read for a while is held back
    (backpressure), not closed, and then gets every reply."""
    assert raw.call("SET", "big", "x" * 100000) == "OK"
    c, cid = flood(server, n=200)
    try:
        time.sleep(2.5)
        assert cid in client_ids(raw)
        for _ in range(200):
            assert len(c.read()) == 100000
        assert c.call("PING") == "PONG"
    finally:
        c.close()


def test_obuf_limit_spares_a_client_that_reads(server, raw):
    """With a limit, a client that reads its replies as they come is
    never over it."""
    assert raw.call("CONFIG", "SET", OBUF, "normal 1mb 512kb 1") == "OK"
    assert raw.call("SET", "big", "x" * 100000) == "OK"
    with server.raw() as c:
        for _ in range(300):
            assert len(c.call("GET", "big")) == 100000


@pytest.mark.partkv_only
def test_obuf_node_links_are_replica_class(server_factory):
    """A connection that presented the cluster secret (another node) has
    the replica class's limits: a limit for normal clients spares it."""
    srv = server_factory(extra=["--cluster-secret", SECRET])
    with srv.raw() as admin:
        assert admin.call("CONFIG", "SET", OBUF, "normal 256kb 0 0") == "OK"
        assert admin.call("SET", "big", "x" * 100000) == "OK"
        node = srv.raw(timeout=10)
        try:
            assert node.call("PK.AUTH", SECRET) == "OK"
            cid = node.call("CLIENT", "ID")
            node.send_raw(mbulk("GET", "big") * 200)
            time.sleep(1.5)
            assert cid in client_ids(admin)
            for _ in range(200):
                assert len(node.read()) == 100000
        finally:
            node.close()
        c, cid = flood(srv)
        try:
            assert wait_gone(admin, cid, 10)
        finally:
            c.close()
