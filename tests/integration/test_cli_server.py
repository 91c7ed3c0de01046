"""`partkv server` as a process: flags, the ready line, signals, protected
mode."""
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import server as pkserver
from server import RespError


def run_server_expect_exit(args, timeout=10):
    """Run `partkv server ARGS`; it must exit by itself within timeout."""
    p = subprocess.Popen([pkserver.partkv_path(), "server", *args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=10)
        pytest.fail("partkv server %s did not exit (it should refuse)"
                    % " ".join(args))
    return p.returncode, out.decode(errors="replace"), \
        err.decode(errors="replace")


@pytest.fixture
def tmpdir_path():
    d = tempfile.mkdtemp(prefix="partkv-cli-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


BAD_FLAGS = [
    ["--port", "abc"],
    ["--port", "70000"],
    ["--port", "-1"],
    ["--port", ""],
    ["--port"],
    ["--fsync", "sometimes"],
    ["--fsync"],
    ["--nosuch"],
    ["--nosuch", "value"],
    ["--protected-mode", "maybe"],
    ["--proto-max-bulk-len", "abc"],
    ["--proto-max-bulk-len", "-5"],
    ["--bind", "not an address"],
    ["stray-positional"],
]


@pytest.mark.partkv_only
@pytest.mark.parametrize("bad", BAD_FLAGS, ids=[" ".join(b) or "empty"
                                                for b in BAD_FLAGS])
def test_bad_flags_exit_2(tmpdir_path, bad):
    # the bad flag goes last so that it is not hidden by a later good one
    args = ["--dir", tmpdir_path]
    if bad[0] != "--port":
        args += ["--port", "0"]
    rc, out, err = run_server_expect_exit(args + bad)
    assert rc == 2, "exit %s for %s; stderr %r" % (rc, bad, err)
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].strip(), \
        "want one stderr line, got %r" % err
    assert "ready on" not in out


@pytest.mark.partkv_only
def test_dir_is_a_file(tmpdir_path):
    path = os.path.join(tmpdir_path, "plainfile")
    with open(path, "w") as f:
        f.write("not a directory\n")
    rc, out, err = run_server_expect_exit(["--port", "0", "--dir", path])
    assert rc == 2, (rc, err)
    assert len(err.strip("\n").split("\n")) == 1 and err.strip(), err
    assert "ready on" not in out
    with open(path) as f:
        assert f.read() == "not a directory\n"  # left alone


@pytest.mark.partkv_only
def test_dir_in_use(server):
    """A second node on a running node's --dir refuses to start (LMDB
    would let both open it), and the first keeps its data and serves."""
    c = server.client()
    c.set("k", "v")
    rc, out, err = run_server_expect_exit(["--port", "0", "--dir",
                                           server.dir])
    assert rc == 1, (rc, err)
    assert "another partkv process has it open" in err, err
    assert "ready on" not in out
    assert c.get("k") == "v"
    c.close()


@pytest.mark.partkv_only
def test_ready_line(server):
    lines = [ln for ln in server._out_lines if ln.strip()]
    assert len(lines) >= 1
    m = pkserver.READY_RE.match(lines[0])
    assert m, lines[0]
    assert m.group(1) == "127.0.0.1"
    assert int(m.group(2)) == server.port > 0
    assert int(m.group(3)) == server.pid
    assert re.fullmatch(r"partkv: ready on 127\.0\.0\.1:\d+ pid \d+",
                        lines[0])


@pytest.mark.partkv_only
def test_port_0_gives_distinct_ports(server_factory):
    a, b = server_factory(), server_factory()
    assert a.port != b.port
    for s in (a, b):
        with s.raw() as c:
            assert c.call("PING") == "PONG"


def test_port_in_use_fails(server, server_factory):
    other = server_factory(start=False, port=server.port)
    other.expect_exit = True
    with pytest.raises(pkserver.ServerError):
        other.start()
    assert other.proc.returncode not in (None, 0)
    with server.raw() as c:
        assert c.call("PING") == "PONG"


def test_sigterm_clean_exit_and_data_persisted(server_factory):
    s = server_factory(fsync="everysec")
    c = s.client()
    for i in range(500):
        c.set("key%d" % i, "value%d" % i)
    c.hset("h", mapping={"a": "1"})
    c.zadd("z", {"m": 3})
    c.incrby("n", 41)
    c.close()
    idle = s.raw()  # an open connection must not block the shutdown
    t0 = time.monotonic()
    assert s.stop(timeout=10) == 0, s.logs()
    assert time.monotonic() - t0 < 5
    idle.close()
    s.start()
    c = s.client()
    assert c.dbsize() == 503
    assert c.get("key499") == "value499"
    assert c.hgetall("h") == {"a": "1"}
    assert c.zscore("z", "m") == 3
    assert c.incr("n") == 42
    c.close()


@pytest.mark.partkv_only
def test_sigterm_persists_with_fsync_no(server_factory):
    """Even with --fsync no, a clean shutdown loses nothing."""
    s = server_factory(fsync="no")
    c = s.client()
    c.mset({"x%d" % i: str(i) for i in range(300)})
    c.close()
    assert s.stop() == 0
    s.start()
    c = s.client()
    assert c.get("x299") == "299"
    c.close()


@pytest.mark.partkv_only
@pytest.mark.parametrize("mode", ["always", "everysec", "no"])
def test_fsync_modes_serve(server_factory, mode):
    s = server_factory(fsync=mode)
    c = s.client()
    c.set("k", "v")
    assert c.get("k") == "v"
    c.close()


def test_sigterm_under_load(server_factory):
    s = server_factory(fsync="everysec")
    busy = s.raw(timeout=10)
    busy.send_raw(b"".join(pkserver.encode_command("SET", "b%d" % i, "v")
                           for i in range(20000)))
    time.sleep(0.05)
    assert s.stop(timeout=10) == 0, s.logs()
    busy.close()


# -------------------------------------------------------------- protected mode

def _local_nonloopback_ipv4():
    """A non-loopback IPv4 address of this host that we can bind to."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "up"],
                             capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for m in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        addr = m.group(1)
        if ipaddress.ip_address(addr).is_loopback:
            continue
        s = socket.socket()
        try:
            s.bind((addr, 0))
            return addr
        except OSError:
            continue
        finally:
            s.close()
    return None


@pytest.fixture
def nonloopback_addr():
    """A local non-loopback address: an existing one, else (as root) one
    on a dummy interface (or a veth pair) created for the test and removed
    after it.  A client connecting to it has it as source address, so the
    server sees a non-loopback peer."""
    addr = None
    if not os.environ.get("PARTKV_TEST_FORCE_DUMMY"):
        addr = _local_nonloopback_ipv4()
    if addr:
        yield addr
        return
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("no non-loopback address, and not root")
    name = "pkt%d" % (os.getpid() % 100000)
    addr = "198.18.%d.1" % (os.getpid() % 250 + 1)
    made = False
    try:
        # a dummy interface if the kernel has it, else a veth pair
        for kind in (["type", "dummy"],
                     ["type", "veth", "peer", "name", name + "p"]):
            p = subprocess.run(["ip", "link", "add", name, *kind],
                               capture_output=True, text=True, timeout=10)
            if p.returncode == 0:
                made = True
                break
        if not made:
            pytest.skip("cannot create an interface: %s" % p.stderr.strip())
        for cmd in (["ip", "addr", "add", addr + "/32", "dev", name],
                    ["ip", "link", "set", name, "up"]):
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=10)
            if p.returncode != 0:
                pytest.skip("%s: %s" % (" ".join(cmd), p.stderr.strip()))
        yield addr
    finally:
        if made:
            subprocess.run(["ip", "link", "del", name], capture_output=True,
                           timeout=10)


def _ping_from(addr, port, auth=None):
    """Connect to addr:port (source address = addr) and PING; return the
    reply, or 'CLOSED' if the server closed without replying."""
    c = pkserver.RespClient(addr, port, timeout=5)
    try:
        assert c.sock.getsockname()[0] == addr
        if auth is not None:
            rep = c.call("AUTH", auth)
            if rep != "OK":
                return rep
        try:
            rep = c.call("PING")
        except (pkserver.ConnectionClosed, ConnectionResetError):
            return "CLOSED"
        if isinstance(rep, RespError) and rep.message.startswith("DENIED"):
            rep.closed = c.closed_by_peer(5.0)
        return rep
    finally:
        c.close()


def test_bind_any_serves_loopback(server_factory):
    s = server_factory(bind="0.0.0.0")
    for host in ("127.0.0.1", "127.0.0.2"):
        with pkserver.RespClient(host, s.port, timeout=5) as c:
            assert c.call("PING") == "PONG"
            assert c.call("SET", "k", host) == "OK"


def test_protected_mode_refuses_nonloopback(server_factory,
                                            nonloopback_addr):
    s = server_factory(bind="0.0.0.0")
    rep = _ping_from(nonloopback_addr, s.port)
    assert rep != "PONG", "protected mode let %s in" % nonloopback_addr
    if rep != "CLOSED":
        assert isinstance(rep, RespError), rep
        assert rep.message.startswith("DENIED"), rep.message
        assert rep.closed, "connection left open after DENIED"
    with pkserver.RespClient("127.0.0.1", s.port, timeout=5) as c:
        assert c.call("PING") == "PONG"


def test_protected_mode_off_serves_nonloopback(server_factory,
                                               nonloopback_addr):
    s = server_factory(bind="0.0.0.0", protected_mode="no")
    assert _ping_from(nonloopback_addr, s.port) == "PONG"


def test_password_lifts_protected_mode(server_factory, nonloopback_addr):
    s = server_factory(bind="0.0.0.0", requirepass="pw")
    rep = _ping_from(nonloopback_addr, s.port)
    assert isinstance(rep, RespError)
    assert rep.message == "NOAUTH Authentication required."
    assert _ping_from(nonloopback_addr, s.port, auth="pw") == "PONG"


def test_bind_loopback_not_reachable_elsewhere(server, nonloopback_addr):
    with pytest.raises(OSError):
        socket.create_connection((nonloopback_addr, server.port),
                                 timeout=3).close()
