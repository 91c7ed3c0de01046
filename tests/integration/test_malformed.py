"""Bad input on raw sockets (DESIGN.md §5).  Each case sends bytes and
expects either an error reply with Redis's exact text followed by the
server closing the connection, or a defined non-error outcome.  After
every case a fresh client gets PONG and a key written before is intact."""
import random
import socket
import struct
import threading
import time

import pytest

import server as pkserver
from server import RespClient, RespError

SENTINEL = ("sentinel", "still-here")


@pytest.fixture
def srv(server):
    with server.raw() as c:
        assert c.call("SET", *SENTINEL) == "OK"
    yield server
    assert_healthy(server)


def assert_healthy(server):
    assert server.alive(), "server died:\n" + server.logs()
    with server.raw(timeout=5) as c:
        assert c.call("PING") == "PONG"
        assert c.call("GET", SENTINEL[0]) == SENTINEL[1]


def send_quietly(c, data):
    """Send; the server may close early (that's allowed) -> False."""
    try:
        c.send_raw(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


def expect_error_and_close(server, data, *texts):
    """Send data on a fresh connection; the reply must be one of the error
    texts (full text, as sent after '-'), then the connection must close."""
    with server.raw(timeout=5) as c:
        send_quietly(c, data)
        try:
            rep = c.read()
        except (pkserver.ConnectionClosed, ConnectionResetError):
            pytest.fail("connection closed without the error reply %r"
                        % (texts,))
        assert isinstance(rep, RespError), "expected error, got %r" % (rep,)
        assert rep.message in texts, "got %r, want one of %r" % (
            rep.message, texts)
        assert c.closed_by_peer(5.0), "connection not closed after %r" % (
            rep.message,)


P = "ERR Protocol error: "

ERROR_CASES = [
    ("negative bulk length", b"*1\r\n$-5\r\n", [P + "invalid bulk length"]),
    ("bulk length -1", b"*2\r\n$3\r\nGET\r\n$-1\r\n",
     [P + "invalid bulk length"]),
    ("huge bulk length", b"*2\r\n$3\r\nGET\r\n$600000000\r\n",
     [P + "invalid bulk length"]),
    ("int64 overflow bulk length", b"*1\r\n$99999999999999999999\r\n",
     [P + "invalid bulk length"]),
    ("non-numeric bulk length", b"*1\r\n$abc\r\n",
     [P + "invalid bulk length"]),
    ("empty bulk length", b"*1\r\n$\r\n", [P + "invalid bulk length"]),
    ("bulk length with trailing junk", b"*1\r\n$4x\r\nPING\r\n",
     [P + "invalid bulk length"]),
    ("non-numeric multibulk length", b"*abc\r\n",
     [P + "invalid multibulk length"]),
    ("huge multibulk length", b"*3000000000\r\n",
     [P + "invalid multibulk length"]),
    ("int64 overflow multibulk length", b"*99999999999999999999\r\n",
     [P + "invalid multibulk length"]),
    ("integer instead of bulk", b"*1\r\n:5\r\n", [P + "expected '$', got ':'"]),
    ("simple string instead of bulk", b"*2\r\n$3\r\nGET\r\n+k\r\n",
     [P + "expected '$', got '+'"]),
    ("deep nesting", b"*1\r\n" * 10000, [P + "expected '$', got '*'"]),
    ("70 KB of digits in a multibulk length line", b"*" + b"9" * 70000,
     # Redis: no CRLF within 64 KB.  Rejecting the over-long number as
     # soon as it cannot be a valid length is an acceptable alternative.
     [P + "too big mbulk count string", P + "invalid multibulk length"]),
    ("70 KB of digits in a bulk length line", b"*1\r\n$" + b"9" * 70000,
     [P + "too big bulk count string", P + "invalid bulk length"]),
    ("unbalanced quotes", b'SET "foo\r\n', [P + "unbalanced quotes in request"]),
    ("unbalanced single quotes", b"SET 'foo bar\r\n",
     [P + "unbalanced quotes in request"]),
    ("closing quote not followed by space", b'SET "a"b c\r\n',
     [P + "unbalanced quotes in request"]),
    ("70 KB inline line", b"A" * 70000, [P + "too big inline request"]),
]


@pytest.mark.parametrize("name,data,texts", ERROR_CASES,
                         ids=[c[0] for c in ERROR_CASES])
def test_protocol_error(srv, name, data, texts):
    expect_error_and_close(srv, data, *texts)


def test_error_after_good_commands(srv):
    """Replies to the commands before the bad frame arrive first."""
    with srv.raw(timeout=5) as c:
        c.send_raw(b"*1\r\n$4\r\nPING\r\nECHO hi\r\n*1\r\n$-3\r\n")
        assert c.read() == "PONG"
        assert c.read() == "hi"
        rep = c.read()
        assert rep == RespError(P + "invalid bulk length")
        assert c.closed_by_peer(5.0)


def test_inline_lf_only(srv):
    with srv.raw(timeout=5) as c:
        c.send_raw(b"PING\n")
        assert c.read() == "PONG"
        c.send_raw(b"SET lf value\nGET lf\n")
        assert c.read() == "OK"
        assert c.read() == "value"
        c.send_raw(b"  ECHO   spaced  \r\n")
        assert c.read() == "spaced"


def test_empty_lines_and_empty_multibulk(srv):
    with srv.raw(timeout=5) as c:
        c.send_raw(b"\r\n\n\r\n*0\r\nPING\r\n")
        assert c.read() == "PONG"
        assert c.recv_some(0.3) is None  # nothing else was sent back


def test_negative_multibulk_length(srv):
    """Redis ignores '*-1' (a null array is no command); erroring and
    closing is also acceptable.  Either way the server stays up."""
    with srv.raw(timeout=5) as c:
        send_quietly(c, b"*-1\r\n*-10\r\nPING\r\n")
        try:
            rep = c.read()
        except (pkserver.ConnectionClosed, ConnectionResetError):
            return
        if isinstance(rep, RespError):
            assert rep.message == P + "invalid multibulk length"
            assert c.closed_by_peer(5.0)
        else:
            assert rep == "PONG"


def test_nul_bytes_inline(srv):
    """A raw NUL inside an inline command.  Redis finds the line end with
    strchr() and so never sees this line (it waits); a server may also
    take the NUL as data, or answer a protocol error and close.  It must
    not crash and must keep serving others."""
    with srv.raw(timeout=5, decode=False) as c:
        send_quietly(c, b"SET nul a\x00b\r\n")
        data = c.recv_some(1.0)
        if data is None:
            return  # Redis's behaviour: still waiting for a line end
        if data.startswith(b"-"):
            assert data.startswith(b"-ERR Protocol error"), data
            assert c.closed_by_peer(5.0)
            return
        assert data == b"+OK\r\n", data
        assert c.call("GET", "nul") == b"a\x00b"
        assert c.call("STRLEN", "nul") == 3


def test_inline_quoted_escapes(srv):
    with srv.raw(timeout=5, decode=False) as c:
        c.send_raw(b'SET q "x\\x00y\\r\\n z"\r\nGET q\r\n')
        assert c.read() == "OK"
        assert c.read() == b"x\x00y\r\n z"
        c.send_raw(b"SET 'single quoted' 'it\\'s'\r\nGET 'single quoted'\r\n")
        assert c.read() == "OK"
        assert c.read() == b"it's"


def test_nul_bytes_bulk(srv):
    with srv.raw(timeout=5, decode=False) as c:
        assert c.call(b"SET", b"\x00k\x00", b"\x00\x00\r\n\x00") == "OK"
        assert c.call(b"GET", b"\x00k\x00") == b"\x00\x00\r\n\x00"
        assert c.call(b"GET", b"\x00k") is None
        # a command name with a NUL is just an unknown command
        rep = c.call(b"GE\x00T", b"x")
        assert isinstance(rep, RespError)
        assert rep.message.startswith("ERR unknown command")


def test_length_that_lies_waits(srv):
    """Declares 10 bytes, sends 3: the server must wait for the rest."""
    with srv.raw(timeout=5) as c:
        c.send_raw(b"*1\r\n$10\r\nabc")
        assert c.recv_some(0.5) is None, "server answered an incomplete frame"
        assert srv.alive()
        c.send_raw(b"defghij\r\n")
        rep = c.read()
        assert rep == RespError(
            "ERR unknown command 'abcdefghij', with args beginning with: ")


def test_length_that_lies_then_new_command(srv):
    """Declares 10, sends 3, then a whole new command: the new command's
    bytes are (part of) the bulk.  Whatever the reply, the server must not
    crash; the client then closes."""
    with srv.raw(timeout=5) as c:
        send_quietly(c, b"*1\r\n$10\r\nabc*1\r\n$4\r\nPING\r\n")
        c.recv_some(0.5)
        assert srv.alive()


def test_bulk_not_terminated_by_crlf(srv):
    """Redis does not check the CRLF after a bulk (it skips 2 bytes); a
    stricter server may answer a protocol error and close instead."""
    with srv.raw(timeout=5) as c:
        send_quietly(c, b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n")
        try:
            rep = c.read()
        except (pkserver.ConnectionClosed, ConnectionResetError):
            return
        if isinstance(rep, RespError):
            assert rep.message.startswith("ERR Protocol error"), rep
            assert c.closed_by_peer(5.0)
        else:
            assert rep == "PONG"


def test_partial_frames_then_close(srv):
    frames = [b"*3\r\n$3\r\nSET\r\n$1\r\nk", b"*2\r\n$3\r\nGET", b"*",
              b"*1\r\n$100\r\n" + b"x" * 50, b"SET a \"unfinished"]
    for f in frames:
        with srv.raw(timeout=5) as c:
            c.send_raw(f)
    for f in frames:  # also with RST instead of FIN
        c = srv.raw(timeout=5)
        c.send_raw(f)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                          b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.close()
    time.sleep(0.2)


def test_random_garbage(srv):
    rnd = random.Random(1234)
    for i in range(40):
        n = rnd.choice((1, 10, 100, 5000))
        data = bytes(rnd.randrange(256) for _ in range(n))
        if i % 4 == 0:
            data = b"*" + data
        elif i % 4 == 1:
            data = b"*2\r\n$" + data
        with srv.raw(timeout=5) as c:
            send_quietly(c, data)
            c.recv_some(0.05)
    time.sleep(0.2)


def test_proto_max_bulk_len(server_factory, target):
    # redis refuses a proto-max-bulk-len under 1 MB, partkv under 1024
    limit = 1024 if target == "partkv" else 1 << 20
    s = server_factory(proto_max_bulk_len=limit)
    with s.raw(timeout=5) as c:
        assert c.call("SET", "ok", "x" * limit) == "OK"
        assert c.call("STRLEN", "ok") == limit
    with s.raw(timeout=5) as c:
        send_quietly(c, pkserver.encode_command("SET", "k", "y" * 2 * limit))
        rep = c.read()
        assert rep == RespError(P + "invalid bulk length"), rep
        assert c.closed_by_peer(5.0)
    with s.raw(timeout=5) as c:
        assert c.call("STRLEN", "ok") == limit
        assert c.call("EXISTS", "k") == 0


# ------------------------------------------------------------- slow clients

def test_slow_loris(srv):
    """50 connections each dribble one byte every 100 ms for 2 s; other
    clients are still served promptly, and the slow commands complete."""
    n = 50
    cmds = [pkserver.encode_command("SET", "slow%d" % i, "v%d" % i)
            for i in range(n)]
    conns = [srv.raw(timeout=5) for _ in range(n)]
    stop = threading.Event()
    sent = [0] * n

    def dribble():
        while not stop.is_set():
            for i, c in enumerate(conns):
                if sent[i] < len(cmds[i]) - 1:
                    c.send_raw(cmds[i][sent[i]:sent[i] + 1])
                    sent[i] += 1
            stop.wait(0.1)

    th = threading.Thread(target=dribble, daemon=True)
    th.start()
    worst = 0.0
    try:
        with srv.raw(timeout=5) as fast:
            t_end = time.monotonic() + 2.0
            i = 0
            while time.monotonic() < t_end:
                t0 = time.monotonic()
                assert fast.call("PING") == "PONG"
                assert fast.call("SET", "fast%d" % i, "x") == "OK"
                assert fast.call("GET", "fast%d" % i) == "x"
                worst = max(worst, time.monotonic() - t0)
                i += 1
                time.sleep(0.02)
            # a brand-new connection too
            t0 = time.monotonic()
            assert_healthy(srv)
            worst = max(worst, time.monotonic() - t0)
    finally:
        stop.set()
        th.join(5)
    assert worst < 0.5, "a normal client waited %.3f s" % worst
    assert min(sent) >= 15  # they really were partial for ~2 s
    for i, c in enumerate(conns):
        c.send_raw(cmds[i][sent[i]:])
    for c in conns:
        assert c.read() == "OK"
        c.close()
    with srv.raw() as c:
        assert c.call("GET", "slow49") == "v49"


def test_client_that_never_reads(server_factory, target):
    """A client pipelines 200k GETs of a 10 KB value and never reads the
    2 GB of replies.  The server keeps serving others, its memory stays
    bounded, and it comes back near the baseline once that client is
    gone."""
    extra = []
    if target == "redis":
        # Redis buffers normal clients' replies without limit by default;
        # configured like this it disconnects the hog instead.
        extra = ["--client-output-buffer-limit", "normal 64mb 16mb 5"]
    s = server_factory(extra=extra)
    with s.raw() as c:
        c.call("SET", *SENTINEL)
        c.call("SET", "big", "v" * 10240)
    base = s.rss_kb()
    peak = base
    get = pkserver.encode_command("GET", "big")
    batch = get * 1000
    total = 200000
    hog = socket.create_connection((s.host, s.port), timeout=5)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.settimeout(0.2)
    state = {"sent": 0, "blocked": 0.0, "closed": False}
    done = threading.Event()

    def pump():
        view, off = memoryview(batch), 0
        try:
            while state["sent"] < total and not done.is_set():
                try:
                    k = hog.send(view[off:])
                except socket.timeout:
                    state["blocked"] += 0.2
                    if state["blocked"] > 3.0:
                        return  # the server stopped reading: backpressure
                    continue
                off += k
                if off == len(batch):
                    off = 0
                    state["sent"] += 1000
        except OSError:
            state["closed"] = True  # the server dropped us: also fine
        finally:
            done.set()

    th = threading.Thread(target=pump, daemon=True)
    th.start()
    worst = 0.0
    deadline = time.monotonic() + 15.0
    with s.raw(timeout=5) as other:
        while not done.is_set() and time.monotonic() < deadline:
            t0 = time.monotonic()
            assert other.call("PING") == "PONG"
            assert other.call("GET", SENTINEL[0]) == SENTINEL[1]
            worst = max(worst, time.monotonic() - t0)
            rss = s.rss_kb()
            assert rss is not None, "server died:\n" + s.logs()
            peak = max(peak, rss)
            time.sleep(0.05)
        # keep watching a little after the hog stopped sending
        for _ in range(10):
            peak = max(peak, s.rss_kb())
            time.sleep(0.05)
        done.set()
        th.join(5)
        growth_mb = (peak - base) / 1024.0
        assert growth_mb < 200, "RSS grew by %.0f MB (base %d kB)" % (
            growth_mb, base)
        assert worst < 1.0, "others waited %.2f s while the hog pumped" % (
            worst,)
        hog.close()
        # memory back near the baseline once the hog is gone
        t_end = time.monotonic() + 10.0
        while time.monotonic() < t_end:
            if s.rss_kb() - base < 64 * 1024:
                break
            time.sleep(0.1)
        after = s.rss_kb()
        assert (after - base) < 64 * 1024, \
            "RSS %d kB vs baseline %d kB after the hog left" % (after, base)
        assert other.call("PING") == "PONG"
    assert_healthy(s)
    print("hog: sent %d GETs, closed=%s, peak growth %.1f MB, others' worst "
          "latency %.3f s" % (state["sent"], state["closed"], growth_mb,
                              worst))


def test_client_reset_while_replies_flow(srv):
    """Clients that pipeline large replies and reset the connection (RST,
    unread data) while the server writes: a write to a reset socket fails
    with EPIPE, which must cost that connection only -- not the process
    (SIGPIPE is ignored, as in redis-server)."""
    with srv.raw() as c:
        assert c.call("SET", "big", "x" * 256 * 1024) == "OK"
    req = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 64
    for _ in range(30):
        s = socket.create_connection((srv.host, srv.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.sendall(req)
        s.recv(1)  # the server is writing replies now
        s.close()  # RST: the rest of its writes hit a reset socket
        time.sleep(0.01)
    assert srv.alive(), "server died:\n" + srv.logs()
    with open("/proc/%d/status" % srv.pid) as f:
        ign = next(int(l.split()[1], 16) for l in f if l.startswith("SigIgn"))
    assert ign & (1 << (13 - 1)), "SIGPIPE not ignored (SigIgn %x)" % ign
