"""A real etcd (Debian's etcd-server) for the tests: one member, or three,
on free loopback ports, in a temp dir, stopped by PID.

`make test` installs etcd-server; without it these tests fail (they do not
skip): the etcd backend is part of what is tested.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

ETCD = os.environ.get("PARTKV_ETCD", "/usr/bin/etcd")


_given = set()


def free_port():
    """A port free on 127.0.0.1 now, below the Linux ephemeral range: a
    port-0 bind or an outgoing connection elsewhere in the run (a node, a
    client) once took an ephemeral one before etcd bound it ("address
    already in use").  Never the same one twice in a run."""
    rnd = random.Random()
    for _ in range(500):
        p = rnd.randrange(20000, 32000)
        if p in _given:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        _given.add(p)
        return p
    raise RuntimeError("no free port below 32000 for etcd")


class Etcd:
    """n members; client URLs in .endpoints ("127.0.0.1:port,...")."""

    def __init__(self, n=1):
        assert os.access(ETCD, os.X_OK), \
            "%s is not installed (make test installs etcd-server)" % ETCD
        self.root = tempfile.mkdtemp(prefix="partkv-etcd-")
        self.members = []
        for i in range(n):
            self.members.append({"name": "m%d" % i, "client": free_port(),
                                 "peer": free_port(), "proc": None})
        self.cluster = ",".join("%s=http://127.0.0.1:%d" % (m["name"], m["peer"])
                                for m in self.members)
        self.endpoints = ",".join("127.0.0.1:%d" % m["client"]
                                  for m in self.members)

    def argv(self, m):
        return [ETCD, "--name", m["name"],
                "--data-dir", os.path.join(self.root, m["name"]),
                "--listen-client-urls", "http://127.0.0.1:%d" % m["client"],
                "--advertise-client-urls", "http://127.0.0.1:%d" % m["client"],
                "--listen-peer-urls", "http://127.0.0.1:%d" % m["peer"],
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:%d" % m["peer"],
                "--initial-cluster", self.cluster,
                "--initial-cluster-state", "new",
                "--election-timeout", "500", "--heartbeat-interval", "50",
                "--logger", "zap", "--log-level", "error"]

    def start_member(self, i):
        m = self.members[i]
        log = open(os.path.join(self.root, "%s.log" % m["name"]), "ab")
        m["proc"] = subprocess.Popen(self.argv(m), stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()

    def start(self, timeout=20.0):
        for i in range(len(self.members)):
            self.start_member(i)
        return self.wait_ready(timeout)

    def healthy(self, i):
        m = self.members[i]
        try:
            with urllib.request.urlopen(
                    "http://127.0.0.1:%d/health" % m["client"],
                    timeout=1.0) as r:
                return b'"true"' in r.read()
        except Exception:
            return False

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(self.healthy(i) for i in range(len(self.members))
                   if self.alive(i)):
                return True
            time.sleep(0.1)
        raise AssertionError("etcd did not become healthy: %s" % self.logs())

    def alive(self, i):
        p = self.members[i]["proc"]
        return p is not None and p.poll() is None

    def signal_member(self, i, sig):
        p = self.members[i]["proc"]
        if p is not None and p.poll() is None:
            os.kill(p.pid, sig)

    def kill_member(self, i):
        self.signal_member(i, signal.SIGKILL)
        p = self.members[i]["proc"]
        if p is not None:
            p.wait(10)

    def logs(self):
        out = []
        for m in self.members:
            path = os.path.join(self.root, "%s.log" % m["name"])
            try:
                with open(path, errors="replace") as f:
                    out.append(f.read()[-2000:])
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        for i in range(len(self.members)):
            self.signal_member(i, signal.SIGTERM)
        for m in self.members:
            p = m["proc"]
            if p is not None:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
