"""Start/stop a partkv (or, for validation, a redis-server) process, and a
tiny RESP2/RESP3 client over a raw socket.

Never kills anything by name: a Server only ever signals the PID of the
process it started itself.

Target: env PARTKV_TEST_TARGET=partkv (default) or redis.  Binaries: env
PARTKV (default <repo>/build/partkv) and REDIS_SERVER (default
/usr/bin/redis-server).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

READY_RE = re.compile(r"^partkv: ready on (\S+):(\d+) pid (\d+)\s*$")


def target():
    t = os.environ.get("PARTKV_TEST_TARGET", "partkv").strip().lower()
    if t not in ("partkv", "redis"):
        raise ValueError("PARTKV_TEST_TARGET must be partkv or redis")
    return t


# Servers and clusters that made their own temporary directory: a test
# that only stops one (or fails before it cleans up) leaves it to
# sweep_owned() at the end of the session (conftest.py).
_OWNED = {}


def own(thing):
    """Notes thing (a Server or a Cluster that made its directory) for
    sweep_owned()."""
    _OWNED[id(thing)] = thing


def disown(thing):
    """thing cleaned up: sweep_owned() has nothing left to do for it."""
    _OWNED.pop(id(thing), None)


def sweep_owned():
    """cleanup() of everything own() noted and not yet cleaned up: stops
    what still runs (by PID) and removes its directory."""
    while _OWNED:
        _OWNED.popitem()[1].cleanup()


def partkv_path():
    return os.environ.get("PARTKV", os.path.join(ROOT, "build", "partkv"))


def redis_path():
    return os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")


def free_port():
    """A currently free TCP port on 127.0.0.1 (for redis, which cannot
    report the port it got from --port 0)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def rss_kb(pid):
    """VmRSS of a process in kB, or None if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class ServerError(Exception):
    pass


class Process:
    """What Server and cluster.Cluster share: a child in self.proc whose
    output a thread (self._drain) reads, and its exit status."""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout):
        """Wait for exit; return the exit status or None on timeout."""
        if self.proc is None:
            return self.returncode
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._drain is not None:
            self._drain.join(2.0)
        return self.returncode


class Server(Process):
    """One server process on 127.0.0.1.

    opts (partkv flag names): fsync, requirepass, proto_max_bulk_len,
    protected_mode, bind.  For redis they are translated (fsync X turns on
    the AOF with appendfsync X, so persistence tests can run on both).
    extra: additional raw arguments (target specific).
    """

    def __init__(self, kind=None, dir=None, port=0, fsync=None,
                 requirepass=None, proto_max_bulk_len=None,
                 protected_mode=None, bind="127.0.0.1", extra=(),
                 ready_timeout=15.0):
        self.kind = kind or target()
        self._own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="partkv-it-")
        if self._own_dir:
            own(self)
        self.port = port
        self.host = "127.0.0.1"
        self.fsync = fsync
        self.requirepass = requirepass
        self.proto_max_bulk_len = proto_max_bulk_len
        self.protected_mode = protected_mode
        self.bind = bind
        self.extra = list(extra)
        self.ready_timeout = ready_timeout
        self.proc = None
        self.pid = None
        self.returncode = None
        self.starts = 0
        self._out_lines = []
        self._drain = None
        self.stopped_by_us = False

    # -- command line -----------------------------------------------------
    def argv(self):
        if self.kind == "partkv":
            a = [partkv_path(), "server", "--port", str(self.port),
                 "--dir", self.dir]
            if self.bind:
                a += ["--bind", self.bind]
            if self.fsync:
                a += ["--fsync", self.fsync]
            if self.requirepass is not None:
                a += ["--requirepass", self.requirepass]
            if self.proto_max_bulk_len is not None:
                a += ["--proto-max-bulk-len", str(self.proto_max_bulk_len)]
            if self.protected_mode is not None:
                a += ["--protected-mode", self.protected_mode]
            return a + self.extra
        a = [redis_path(), "--port", str(self.port), "--dir", self.dir,
             "--save", "", "--daemonize", "no", "--logfile", "",
             "--databases", "1"]
        if self.bind:
            a += ["--bind", self.bind]
        if self.fsync:
            a += ["--appendonly", "yes", "--appendfsync", self.fsync]
        else:
            a += ["--appendonly", "no"]
        if self.requirepass is not None:
            a += ["--requirepass", self.requirepass]
        if self.proto_max_bulk_len is not None:
            a += ["--proto-max-bulk-len", str(self.proto_max_bulk_len)]
        if self.protected_mode is not None:
            a += ["--protected-mode", self.protected_mode]
        return a + self.extra

    # -- lifecycle --------------------------------------------------------
    def start(self):
        if self.proc is not None and self.proc.poll() is None:
            raise ServerError("already running")
        if self.kind == "redis" and not self.port:
            self.port = free_port()
        self.returncode = None
        self.stopped_by_us = False
        self._out_lines = []
        self._errpath = os.path.join(self.dir, "server.stderr.%d"
                                     % self.starts)
        errf = open(self._errpath, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=errf, cwd=self.dir,
                start_new_session=True)
        finally:
            errf.close()
        self.pid = self.proc.pid
        self.starts += 1
        ready = threading.Event()
        info = {}
        self._drain = threading.Thread(target=self._drain_stdout,
                                       args=(self.proc, ready, info),
                                       daemon=True)
        self._drain.start()
        try:
            if self.kind == "partkv":
                self._wait_partkv_ready(ready, info)
            else:
                self._wait_redis_ready(ready)
        except BaseException:
            self.kill()
            raise
        return self

    def _drain_stdout(self, proc, ready, info):
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._out_lines.append(line)
            if not ready.is_set():
                m = READY_RE.match(line)
                if self.kind == "redis" and "Ready to accept connections" \
                        in line:
                    ready.set()
                elif m:
                    info["host"], info["port"], info["pid"] = (
                        m.group(1), int(m.group(2)), int(m.group(3)))
                    ready.set()
        proc.stdout.close()

    def _wait_partkv_ready(self, ready, info):
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if ready.wait(0.05):
                break
            if self.proc.poll() is not None:
                time.sleep(0.1)  # let the drain thread catch up
                if ready.is_set():
                    break
                raise ServerError("server exited with %s before ready\n%s"
                                  % (self.proc.returncode, self.logs()))
        else:
            raise ServerError("no ready line within %.0fs\n%s"
                              % (self.ready_timeout, self.logs()))
        if info["pid"] != self.proc.pid:
            raise ServerError("ready line pid %d != child pid %d"
                              % (info["pid"], self.proc.pid))
        if self.port and info["port"] != self.port:
            raise ServerError("asked for port %d, ready line says %d"
                              % (self.port, info["port"]))
        self.port = info["port"]
        self.host = info["host"] if info["host"] not in (
            "0.0.0.0", "::", "*") else "127.0.0.1"

    def _wait_redis_ready(self, ready):
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if not ready.wait(0.05):
                if self.proc.poll() is not None:
                    raise ServerError("redis exited with %s before ready\n%s"
                                      % (self.proc.returncode, self.logs()))
                continue
            if self.proc.poll() is not None:
                raise ServerError("redis exited with %s before ready\n%s"
                                  % (self.proc.returncode, self.logs()))
            try:
                with socket.create_connection((self.host, self.port),
                                              timeout=1.0) as s:
                    s.sendall(b"PING\r\n")
                    data = s.recv(256)
                if data and not data.startswith(b"-LOADING"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise ServerError("redis not ready within %.0fs\n%s"
                          % (self.ready_timeout, self.logs()))


    def stop(self, timeout=10.0):
        """SIGTERM, then SIGKILL after timeout; returns the exit status
        (negative = killed by that signal)."""
        if self.proc is None:
            return self.returncode
        self.stopped_by_us = True
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if self.wait(timeout) is None:
                self.kill()
        return self.wait(timeout)

    def kill(self):
        """SIGKILL by PID, and reap."""
        if self.proc is None:
            return self.returncode
        self.stopped_by_us = True
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return self.wait(10.0)

    def restart(self, kill=False):
        """Stop (SIGTERM, or SIGKILL with kill=True) and start again on the
        same dir and port."""
        if kill:
            self.kill()
        else:
            self.stop()
        return self.start()

    def cleanup(self):
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            disown(self)

    # -- diagnostics ------------------------------------------------------
    def logs(self, limit=4000):
        out = "\n".join(self._out_lines)[-limit:]
        err = ""
        try:
            with open(self._errpath, "rb") as f:
                err = f.read().decode("utf-8", "replace")[-limit:]
        except (OSError, AttributeError):
            pass
        return "--- stdout ---\n%s\n--- stderr ---\n%s" % (out, err)

    def rss_kb(self):
        return rss_kb(self.pid)

    # -- clients ----------------------------------------------------------
    def client(self, **kw):
        import redis
        kw.setdefault("decode_responses", True)
        kw.setdefault("socket_timeout", 15)
        kw.setdefault("socket_connect_timeout", 5)
        if self.requirepass is not None:
            kw.setdefault("password", self.requirepass)
        return redis.Redis(host=self.host, port=self.port, **kw)

    def raw(self, proto=2, auth=True, **kw):
        c = RespClient(self.host, self.port, **kw)
        if proto == 3:
            args = ["HELLO", "3"]
            if auth and self.requirepass is not None:
                args += ["AUTH", "default", self.requirepass]
            rep = c.call(*args)
            if isinstance(rep, RespError):
                c.close()
                raise rep
        elif auth and self.requirepass is not None:
            rep = c.call("AUTH", self.requirepass)
            if isinstance(rep, RespError):
                c.close()
                raise rep
        return c

    def __repr__(self):
        return "<Server %s pid=%s port=%s dir=%s>" % (
            self.kind, self.pid, self.port, self.dir)


# ---------------------------------------------------------------------------
# RESP2/RESP3 client over a raw socket
# ---------------------------------------------------------------------------

class RespError(Exception):
    """An error reply.  str(e) / e.message is the full text after '-' (or
    the blob of '!'), including the code (ERR, WRONGTYPE, ...)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __eq__(self, other):
        return isinstance(other, RespError) and self.message == other.message

    def __hash__(self):
        return hash(self.message)

    def __repr__(self):
        return "RespError(%r)" % self.message


class SimpleString(str):
    """+OK style reply (compares equal to the plain str)."""


class Double(float):
    """RESP3 ',' reply."""


class BigNumber(int):
    """RESP3 '(' reply."""


class Verbatim(str):
    """RESP3 '=' reply; .format is the 3-letter format (txt, mkd)."""
    format = "txt"


class Map(dict):
    """RESP3 '%' reply (keys made hashable: lists become tuples)."""


class RespSet(list):
    """RESP3 '~' reply (kept as a list: order as sent)."""


class Push(list):
    """RESP3 '>' reply."""


class ConnectionClosed(Exception):
    pass


def encode_command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, bytes):
            b = a
        elif isinstance(a, str):
            b = a.encode()
        elif isinstance(a, (int, float)):
            b = repr(a).encode() if isinstance(a, float) else b"%d" % a
        else:
            raise TypeError("bad argument %r" % (a,))
        out.append(b"$%d\r\n" % len(b))
        out.append(b)
        out.append(b"\r\n")
    return b"".join(out)


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _hashable(x)) for k, x in v.items())
    return v


class RespClient:
    """Blocking client: call(*args) returns the reply, with error replies
    returned as RespError objects (not raised).  last_raw holds the exact
    bytes of the last top-level reply read."""

    def __init__(self, host, port, timeout=10.0, decode=True,
                 connect_timeout=5.0):
        self.sock = socket.create_connection((host, port),
                                             timeout=connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.decode = decode
        self.buf = bytearray()
        self.pos = 0
        self.last_raw = b""

    # -- io ---------------------------------------------------------------
    def settimeout(self, t):
        self.sock.settimeout(t)

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode_command(*args))

    def call(self, *args):
        self.send(*args)
        return self.read()

    def execute(self, *args):
        rep = self.call(*args)
        if isinstance(rep, RespError):
            raise rep
        return rep

    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionClosed("server closed the connection")
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + n])
        if self.buf[self.pos + n:self.pos + n + 2] != b"\r\n":
            raise ValueError("bulk not terminated by CRLF")
        self.pos += n + 2
        return data

    def _str(self, b):
        return b.decode("utf-8", "surrogateescape") if self.decode else b

    def read(self):
        """Read one top-level reply (attributes are skipped)."""
        start = self.pos
        try:
            v = self._value()
        except BaseException:
            self.pos = start
            raise
        self.last_raw = bytes(self.buf[start:self.pos])
        del self.buf[:self.pos]
        self.pos = 0
        return v

    def _value(self):
        line = self._line()
        if not line:
            raise ValueError("empty reply line")
        t, rest = chr(line[0]), line[1:]
        if t == "+":
            return SimpleString(rest.decode("utf-8", "surrogateescape"))
        if t == "-":
            return RespError(rest.decode("utf-8", "surrogateescape"))
        if t == ":":
            return int(rest)
        if t == "$":
            n = int(rest)
            return None if n < 0 else self._str(self._exact(n))
        if t == "*":
            n = int(rest)
            return None if n < 0 else [self._value() for _ in range(n)]
        if t == "_":
            return None
        if t == ",":
            s = rest.decode().lower()
            return Double(float(s))
        if t == "#":
            return rest == b"t"
        if t == "!":
            return RespError(self._exact(int(rest)).decode(
                "utf-8", "surrogateescape"))
        if t == "=":
            data = self._exact(int(rest)).decode("utf-8", "surrogateescape")
            v = Verbatim(data[4:])
            v.format = data[:3]
            return v
        if t == "(":
            return BigNumber(int(rest))
        if t == "%":
            m = Map()
            for _ in range(int(rest)):
                k = self._value()
                m[_hashable(k)] = self._value()
            return m
        if t == "~":
            return RespSet(self._value() for _ in range(int(rest)))
        if t == ">":
            return Push(self._value() for _ in range(int(rest)))
        if t == "|":
            for _ in range(int(rest)):
                self._value()
                self._value()
            return self._value()
        raise ValueError("unknown RESP type byte %r in %r" % (t, line[:80]))

    def recv_some(self, timeout):
        """Whatever bytes arrive within timeout (b'' if the peer closed,
        None if nothing arrived)."""
        if len(self.buf) > self.pos:
            data = bytes(self.buf[self.pos:])
            del self.buf[:]
            self.pos = 0
            return data
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1 << 16)
        except socket.timeout:
            return None
        except ConnectionResetError:
            return b""
        finally:
            self.sock.settimeout(old)

    def closed_by_peer(self, timeout=5.0):
        """True if the server closes the connection within timeout (any
        bytes still arriving are discarded)."""
        deadline = time.monotonic() + timeout
        old = self.sock.gettimeout()
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.sock.settimeout(left)
                try:
                    data = self.sock.recv(1 << 16)
                except socket.timeout:
                    return False
                except (ConnectionResetError, BrokenPipeError):
                    return True
                if not data:
                    return True
        finally:
            try:
                self.sock.settimeout(old)
            except OSError:
                pass

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
