"""TLS: clients on --tls-port (redis-cli --tls, python3-redis ssl=True,
ioredis tls), client certificates (--tls-auth-clients), reloading the
files on SIGHUP, and a cluster whose nodes talk mutual TLS
(`cluster up --tls`, --tls-cluster yes) that a node without a certificate
of its CA cannot join or call.  Certificates are made with the openssl
command (make test installs it)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis

import server as pkserver
from cluster import Cluster, Proxy
from etcd import Etcd
from tlscerts import make_ca, make_cert, tls_port

NPM = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "build", "npm", "node_modules")


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="partkv-tls-")
    make_ca(d, "ca")
    make_cert(d, "node", "ca")
    make_ca(d, "other")          # another CA, and a cert it signed
    make_cert(d, "stranger", "other")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def p(d, name):
    return os.path.join(d, name)


def tls_node(certs, auth="no", extra=()):
    s = pkserver.Server(kind="partkv", extra=[
        "--tls-port", "0", "--tls-cert-file", p(certs, "node.crt"),
        "--tls-key-file", p(certs, "node.key"),
        "--tls-ca-cert-file", p(certs, "ca.crt"),
        "--tls-auth-clients", auth, *extra])
    s.start()
    s.tls_port = tls_port(s)
    return s


def tls_client(certs, port, cert=None, **kw):
    kw.update(host="127.0.0.1", port=port, ssl=True,
              ssl_ca_certs=p(certs, "ca.crt"), socket_timeout=10)
    if cert:
        kw.update(ssl_certfile=p(certs, cert + ".crt"),
                  ssl_keyfile=p(certs, cert + ".key"))
    return redis.Redis(**kw)


def cli(certs, port, *args, cert=None):
    a = ["redis-cli", "--tls", "--cacert", p(certs, "ca.crt"), "-p",
         str(port)]
    if cert:
        a += ["--cert", p(certs, cert + ".crt"), "--key",
              p(certs, cert + ".key")]
    return subprocess.run(a + list(args), capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


def test_clients_over_tls(certs):
    s = tls_node(certs)
    try:
        r = cli(certs, s.tls_port, "SET", "k", "v")
        assert r.stdout.strip() == "OK", r.stderr
        assert cli(certs, s.tls_port, "GET", "k").stdout.strip() == "v"
        c = tls_client(certs, s.tls_port)
        big = os.urandom(1 << 20)  # many records each way
        assert c.set("big", big) and c.get("big") == big
        pipe = c.pipeline(transaction=False)
        for i in range(2000):
            pipe.incr("n")
        assert pipe.execute()[-1] == 2000
        # The plain port serves the same data; plaintext on the TLS port
        # gets nothing.
        assert s.client().get("k") == "v"
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=s.tls_port, socket_timeout=5).ping()
        assert c.ping()
    finally:
        s.stop()


def test_client_certificates(certs):
    s = tls_node(certs, auth="yes")
    try:
        assert tls_client(certs, s.tls_port, cert="node").ping()
        with pytest.raises(redis.ConnectionError):
            tls_client(certs, s.tls_port).ping()
        with pytest.raises(redis.ConnectionError):
            tls_client(certs, s.tls_port, cert="stranger").ping()
        # The refusals are logged, with the reason.
        assert "certificate" in open(s._errpath).read()
    finally:
        s.stop()
    s = tls_node(certs, auth="optional")
    try:
        assert tls_client(certs, s.tls_port).ping()
        assert tls_client(certs, s.tls_port, cert="node").ping()
        with pytest.raises(redis.ConnectionError):
            tls_client(certs, s.tls_port, cert="stranger").ping()
    finally:
        s.stop()


def test_sighup_reloads_certificates(certs):
    d = tempfile.mkdtemp(prefix="partkv-tls-reload-")
    try:
        for f in ("node.crt", "node.key", "ca.crt"):
            shutil.copy(p(certs, f), p(d, f))
        s = tls_node(d)
        try:
            old = tls_client(certs, s.tls_port)
            assert old.set("a", "1")
            # New files from the other CA: open connections stay, new ones
            # see the new certificate.
            shutil.copy(p(certs, "stranger.crt"), p(d, "node.crt"))
            shutil.copy(p(certs, "stranger.key"), p(d, "node.key"))
            os.kill(s.pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            while "TLS files reloaded" not in open(s._errpath).read():
                assert time.monotonic() < deadline, s.logs()
                time.sleep(0.05)
            assert old.get("a") == b"1"
            with pytest.raises(redis.ConnectionError):
                tls_client(certs, s.tls_port).ping()  # trusts only ca
            other = redis.Redis(port=s.tls_port, ssl=True,
                                ssl_ca_certs=p(certs, "other.crt"),
                                socket_timeout=10)
            assert other.get("a") == b"1"
            # Unreadable files: the old ones stay.
            with open(p(d, "node.key"), "w") as f:
                f.write("not a key\n")
            os.kill(s.pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            while "not reloaded" not in open(s._errpath).read():
                assert time.monotonic() < deadline, s.logs()
                time.sleep(0.05)
            assert other.ping() and old.ping()
            assert redis.Redis(port=s.tls_port, ssl=True,
                               ssl_ca_certs=p(certs, "other.crt"),
                               socket_timeout=10).ping()
        finally:
            s.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bad_tls_flags_exit_2(certs):
    exe = pkserver.partkv_path()
    for args, want in (
            (["--tls-port", "0"], "--tls-cert-file"),
            (["--tls-port", "0", "--tls-cert-file", "x", "--tls-key-file",
              "y", "--tls-auth-clients", "maybe"], "--tls-auth-clients"),
            (["--tls-cluster", "yes"], "--tls-port")):
        r = subprocess.run([exe, "server", "--dir", tempfile.gettempdir()] +
                           args, capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and want in r.stderr, (args, r.stderr)
    # Files that do not load: a one-line reason, exit 1.
    d = tempfile.mkdtemp(prefix="partkv-tls-bad-")
    try:
        r = subprocess.run([exe, "server", "--port", "0", "--dir", d,
                            "--tls-port", "0", "--tls-cert-file",
                            p(certs, "node.crt"), "--tls-key-file",
                            p(certs, "stranger.key")],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 1 and "TLS" in r.stderr, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


class TlsCluster(Cluster):
    """`cluster up --tls`: its node ports are TLS ports."""

    def __init__(self, **kw):
        kw.setdefault("extra", [])
        kw["extra"] = ["--tls"] + list(kw["extra"])
        super().__init__(**kw)

    def files(self):
        return {k: os.path.join(self.dir, "tls", f) for k, f in
                (("ca", "ca.crt"), ("node", "node.crt"), ("key", "node.key"))}

    def rc(self):
        from redis.cluster import RedisCluster
        n = self.nodes[0]
        return RedisCluster(host=n.host, port=n.port, ssl=True,
                            ssl_ca_certs=self.files()["ca"],
                            socket_timeout=10)


@pytest.fixture(scope="module")
def tcl():
    c = TlsCluster(nodes=3, replicas=3)
    c.start()
    yield c
    c.stop()


def test_cluster_clients_over_tls(tcl):
    rc = tcl.rc()
    for i in range(300):
        rc.set("t:%d" % i, i)
    assert sum(int(rc.get("t:%d" % i)) for i in range(300)) == 44850
    # Replication runs over TLS: every write reaches both followers.
    n = tcl.nodes[0]
    c = redis.Redis(host=n.host, port=n.port, ssl=True,
                    ssl_ca_certs=tcl.files()["ca"], socket_timeout=10)
    k = next("t:%d" % i for i in range(300)
             if c.cluster("keyslot", "t:%d" % i) <= 5460)
    c.set(k, "x")
    assert c.execute_command("WAIT", 2, 2000) == 2
    r = subprocess.run(["redis-cli", "--tls", "--cacert", tcl.files()["ca"],
                        "-c", "-p", str(n.port), "GET", "t:7"],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "7", r.stderr


IOREDIS_TLS_JS = r"""
const fs = require("fs");
const Redis = require("ioredis");
const [host, ps, ca] = process.argv.slice(-3);
(async () => {
  const c = new Redis.Cluster([{host, port: +ps}],
      {redisOptions: {tls: {ca: fs.readFileSync(ca)}}});
  await new Promise((ok, bad) => { c.once("ready", ok); c.once("error", bad); });
  for (let i = 0; i < 100; i++) await c.set("io:" + i, "v" + i);
  let bad = 0;
  for (let i = 0; i < 100; i++) if ((await c.get("io:" + i)) !== "v" + i) bad++;
  console.log(JSON.stringify({masters: c.nodes("master").length, bad}));
  c.disconnect();
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


@pytest.mark.skipif(not os.path.isdir(os.path.join(NPM, "ioredis")),
                    reason="ioredis not installed (scripts/deps.sh)")
def test_ioredis_over_tls(tcl):
    n = tcl.nodes[0]
    r = subprocess.run(["node", "-e", IOREDIS_TLS_JS, n.host, str(n.port),
                        tcl.files()["ca"]], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, NODE_PATH=NPM))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {
        "masters": 3, "bad": 0}


def plain_port(tcl, n):
    c = redis.Redis(host=n.host, port=n.port, ssl=True,
                    ssl_ca_certs=tcl.files()["ca"], socket_timeout=10)
    return int(c.info("server")["tcp_port"])


def test_internal_calls_need_a_cluster_certificate(tcl, certs):
    n = tcl.nodes[0]
    # The secret alone, in plaintext or over TLS without a certificate,
    # opens nothing.
    c = redis.Redis(host=n.host, port=plain_port(tcl, n), socket_timeout=10)
    # (redis-py raises -NOAUTH as AuthenticationError, the prefix cut.)
    with pytest.raises(redis.AuthenticationError, match="PK.AUTH needs TLS"):
        c.execute_command("PK.AUTH", tcl.secret)
    with pytest.raises(redis.AuthenticationError, match="needs PK.AUTH"):
        c.execute_command("PK.REPL", "STEPPED")
    t = redis.Redis(host=n.host, port=n.port, ssl=True,
                    ssl_ca_certs=tcl.files()["ca"], socket_timeout=10)
    with pytest.raises(redis.AuthenticationError, match="PK.AUTH needs TLS"):
        t.execute_command("PK.AUTH", tcl.secret)
    # A certificate of another CA is refused at the handshake.
    with pytest.raises(redis.ConnectionError):
        redis.Redis(host=n.host, port=n.port, ssl=True,
                    ssl_ca_certs=tcl.files()["ca"],
                    ssl_certfile=p(certs, "stranger.crt"),
                    ssl_keyfile=p(certs, "stranger.key"),
                    socket_timeout=10).ping()
    # With the cluster's certificate it is a node.
    f = tcl.files()
    ok = redis.Redis(host=n.host, port=n.port, ssl=True, ssl_ca_certs=f["ca"],
                     ssl_certfile=f["node"], ssl_keyfile=f["key"],
                     socket_timeout=10)
    assert ok.execute_command("PK.AUTH", tcl.secret) in (b"OK", "OK", True)


@pytest.mark.parametrize("cert,ca,why", [
    ("stranger", "ca", "alert"),          # we trust them; they refuse us
    ("stranger", "other", "certificate"),  # we do not trust their node
])
def test_node_without_a_valid_certificate_cannot_join(tcl, certs, cert, ca,
                                                      why):
    n = tcl.nodes[0]
    s = pkserver.Server(kind="partkv", extra=[
        "--tls-port", "0", "--tls-cert-file", p(certs, cert + ".crt"),
        "--tls-key-file", p(certs, cert + ".key"),
        "--tls-ca-cert-file",
        tcl.files()["ca"] if ca == "ca" else p(certs, ca + ".crt"),
        "--tls-cluster", "yes", "--cluster-secret", tcl.secret,
        "--join", n.addr])
    s.start()
    try:
        deadline = time.monotonic() + 15
        while "cannot reach the coordinator" not in open(s._errpath).read():
            assert time.monotonic() < deadline, s.logs()
            time.sleep(0.1)
        err = open(s._errpath).read()
        assert why in err, err
        c = redis.Redis(host=n.host, port=n.port, ssl=True,
                        ssl_ca_certs=tcl.files()["ca"], socket_timeout=10,
                        decode_responses=True)
        assert c.execute_command("CLUSTER", "INFO").count(
            "cluster_known_nodes:3") == 1
    finally:
        s.stop()


def etcd_tls(certs):
    """One etcd member on https that requires client certificates."""
    e = Etcd(1)
    plain = e.argv

    def argv(m):
        a = [x.replace("http://127.0.0.1:%d" % m["client"],
                       "https://127.0.0.1:%d" % m["client"])
             for x in plain(m)]
        return a + ["--cert-file", p(certs, "node.crt"), "--key-file",
                    p(certs, "node.key"), "--trusted-ca-file",
                    p(certs, "ca.crt"), "--client-cert-auth"]
    e.argv = argv
    e.start_member(0)
    return e


def registered(node, secret):
    """The node entries in the coordinator, as the node reads them."""
    with node.raw() as c:
        assert c.call("PK.AUTH", secret) == "OK"
        r = c.call("PK.COORD", "RANGE", "/partkv/default/nodes/")
    return r[1] if isinstance(r, list) else []


def test_etcd_over_tls_with_client_certificates(certs):
    """etcds://: the node presents its certificate to an etcd that
    requires one; a node without one is refused and says so."""
    e = etcd_tls(certs)
    url = "etcds://127.0.0.1:%d" % e.members[0]["client"]
    try:
        s = tls_node(certs, extra=["--coordinator", url,
                                   "--cluster-secret", "s"])
        try:
            deadline = time.monotonic() + 20
            while not registered(s, "s"):
                assert time.monotonic() < deadline, s.logs()
                time.sleep(0.2)
        finally:
            s.stop()
        s = pkserver.Server(kind="partkv", extra=[
            "--coordinator", url, "--cluster-secret", "s"])
        s.start()
        try:
            time.sleep(2)
            assert registered(s, "s") == []
        finally:
            s.stop()
    finally:
        e.stop()


def test_proxy_and_tools_over_tls(tcl):
    """A proxy in front of a TLS cluster (mutual TLS to the nodes, TLS to
    its clients, the cluster secret over it: an ACL user made on the
    proxy reaches the nodes), and the partkv tools with
    PARTKV_TLS_CA_CERT_FILE."""
    f = tcl.files()
    n = tcl.nodes[0]
    px = Proxy(n.addr, extra=[
        "--tls-port", "0", "--tls-cert-file", f["node"], "--tls-key-file",
        f["key"], "--tls-ca-cert-file", f["ca"], "--tls-cluster", "yes",
        "--tls-auth-clients", "no", "--cluster-secret", tcl.secret])
    px.start()
    try:
        port = tls_port(px)
        c = redis.Redis(port=port, ssl=True, ssl_ca_certs=f["ca"],
                        socket_timeout=10)
        deadline = time.monotonic() + 10
        while True:  # until the proxy holds the map
            try:
                assert c.mset({"px:%d" % i: i for i in range(50)})
                break
            except redis.ResponseError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert c.mget(["px:%d" % i for i in range(50)]) == [
            str(i).encode() for i in range(50)]
        c.execute_command("ACL", "SETUSER", "tp", "on", ">pw", "+@all",
                          "~px:*")
        host, nport = n.addr.rsplit(":", 1)
        node = redis.Redis(host=host, port=int(nport), ssl=True,
                           ssl_ca_certs=f["ca"], socket_timeout=10)
        deadline = time.monotonic() + 10
        while "tp" not in node.acl_users():
            assert time.monotonic() < deadline, px.logs()
            time.sleep(0.1)
        u = redis.Redis(port=port, ssl=True, ssl_ca_certs=f["ca"],
                        username="tp", password="pw", socket_timeout=10)
        assert u.get("px:7") == b"7"
        with pytest.raises(redis.exceptions.NoPermissionError):
            u.get("other")
        u.close()
        node.close()
    finally:
        px.stop()
    exe = pkserver.partkv_path()
    r = subprocess.run([exe, "cluster", "status", "--cluster", n.addr],
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PARTKV_TLS_CA_CERT_FILE=f["ca"]))
    assert r.returncode == 0 and "3 nodes (3 up)" in r.stdout, r.stderr
    r = subprocess.run([exe, "cluster", "status", "--cluster", n.addr],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
