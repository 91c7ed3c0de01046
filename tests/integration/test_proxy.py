"""partkv as a routing tier: `partkv proxy --cluster HOST:PORT` and nodes
started with `--route forward`.  A plain (non-cluster) Redis client talks
to one endpoint and sees one keyspace; every keyed command is forwarded
to the node owning its slot and the reply relayed in order.

Also measures how fast a map change (a new epoch written into the
coordinator) reaches every node and the proxy: nodes poll the coordinator
every 50 ms, the proxy polls a node's CLUSTER INFO / CLUSTER SLOTS every
50 ms, so the design target is 100 ms.  Run with -s to see the figures.

Every process is started here on 127.0.0.1 and stopped by its PID.
"""
import os
import random
import signal
import subprocess
import threading
import time

import pytest
import redis

import cluster as pkcluster
import server as pkserver
from cluster import (MAP_KEY, Proxy, crc32c, keyslot, kv_dict,
                     pmap_epoch, pmap_with_epoch, redis_cli,
                     slot_owner_ports, wait_until)
from server import RespError

pytestmark = pytest.mark.partkv_only

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = "ERR value is not an integer or out of range"


def pyerr(msg):
    """The text redis-py 4.3.4 gives a ResponseError for error reply msg
    (it strips a leading "ERR ")."""
    return msg[4:] if msg.startswith("ERR ") else msg


def token():
    return "%08x" % random.getrandbits(32)


def plain(host, port, **kw):
    """A plain (non-cluster) redis.Redis."""
    kw.setdefault("decode_responses", True)
    kw.setdefault("socket_timeout", 20)
    kw.setdefault("socket_connect_timeout", 5)
    return redis.Redis(host=host, port=port, **kw)


# ---------------------------------------------------------------------------
# fixtures: one cluster, one proxy, one joined forward-mode node
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cl():
    assert os.access(pkserver.partkv_path(), os.X_OK), \
        "build partkv first (make)"
    c = pkcluster.Cluster(nodes=3, base_port=0, replicas=1,
                          secret="px-%032x" % random.getrandbits(128))
    try:
        c.start()
        c.wait_serving()
        yield c
        assert c.alive(), "cluster up exited early:\n" + c.logs()
        rc = c.stop()
        assert rc == 0, "cluster up exit %r after SIGTERM\n%s" % (
            rc, c.logs())
        assert not c.leftover_nodes()
    finally:
        c.cleanup()


def wait_map(port, nodes, timeout=5.0):
    """Waits until CLUSTER SLOTS on port returns a map whose masters are
    exactly the cluster's nodes; returns the reply."""
    want = sorted(n.port for n in nodes)

    def ready():
        try:
            with pkserver.RespClient("127.0.0.1", port, timeout=2) as c:
                rep = c.call("CLUSTER", "SLOTS")
        except OSError:
            return None
        if not isinstance(rep, list) or not rep:
            return None
        masters = sorted({run[2][1] for run in rep})
        covered = sum(run[1] - run[0] + 1 for run in rep)
        return rep if masters == want and covered == 16384 else None
    rep, waited = wait_until(ready, timeout, 0.01)
    assert rep, "no full map on port %d after %.1fs" % (port, waited)
    return rep


@pytest.fixture(scope="module")
def proxy(cl):
    p = Proxy("%s:%d" % (cl.nodes[0].host, cl.nodes[0].port))
    try:
        p.start()
        wait_map(p.port, cl.nodes)
        yield p
        assert p.alive(), "proxy died during the tests\n" + p.logs()
        rc = p.stop()
        assert rc == 0, "proxy exit %r after SIGTERM\n%s" % (rc, p.logs())
    finally:
        p.cleanup()


@pytest.fixture(scope="module")
def fwd(cl):
    """An extra node joined to the cluster with --route forward: it
    registers with the coordinator but owns nothing in the map."""
    s = pkserver.Server(kind="partkv", extra=[
        "--join", cl.nodes[0].addr, "--cluster-secret", cl.secret,
        "--route", "forward"])
    try:
        s.start()
        wait_map(s.port, cl.nodes)
        yield s
        assert s.alive(), "forward node died during the tests\n" + s.logs()
        rc = s.stop()
        assert rc == 0, "forward node exit %r after SIGTERM\n%s" % (
            rc, s.logs())
    finally:
        s.cleanup()


@pytest.fixture
def pr(proxy):
    c = plain(proxy.host, proxy.port)
    yield c
    c.close()


@pytest.fixture
def fr(fwd):
    c = plain(fwd.host, fwd.port)
    yield c
    c.close()


def owners(cl):
    """slot -> port of its master, from node 0."""
    with cl.nodes[0].raw() as c:
        return slot_owner_ports(c.execute("CLUSTER", "SLOTS"))


def node_by_port(cl, port):
    return next(n for n in cl.nodes if n.port == port)


def dbsizes(cl):
    out = []
    for n in cl.nodes:
        with n.raw() as c:
            out.append(c.execute("DBSIZE"))
    return out


def keys_per_node(cl, prefix, count):
    """{node index: [count keys 'prefix:<i>' owned by that node]}."""
    own = owners(cl)
    out = {n.index: [] for n in cl.nodes}
    i = 0
    while any(len(v) < count for v in out.values()):
        k = "%s:%d" % (prefix, i)
        idx = node_by_port(cl, own[keyslot(k)]).index
        if len(out[idx]) < count:
            out[idx].append(k)
        i += 1
    return out


# ---------------------------------------------------------------------------
# shared checks, run against the proxy and against the forward-mode node
# ---------------------------------------------------------------------------

def check_keyspace(cl, client, nkeys):
    """nkeys SET/GET through client; they land on their owners, spread
    over all nodes."""
    t = token()
    keys = ["ks%s:%d" % (t, i) for i in range(nkeys)]
    before = dbsizes(cl)
    for i, k in enumerate(keys):
        assert client.set(k, "val-%d" % i) is True, k
    for i, k in enumerate(keys):
        got = client.get(k)
        assert got == "val-%d" % i, (k, got)
    after = dbsizes(cl)
    delta = [a - b for a, b in zip(after, before)]
    assert all(d > 0 for d in delta), "per-node DBSIZE deltas %r" % delta
    assert sum(delta) == nkeys, "per-node DBSIZE deltas %r (sum %d != %d)" \
        % (delta, sum(delta), nkeys)
    # each key lives on its owner (read there directly, no redirect)
    own = owners(cl)
    by_port = {}
    for i, k in enumerate(keys):
        by_port.setdefault(own[keyslot(k)], []).append((k, "val-%d" % i))
    assert len(by_port) == len(cl.nodes)
    for port, kvs in by_port.items():
        n = node_by_port(cl, port)
        with n.client() as c:
            pipe = c.pipeline(transaction=False)
            for k, _ in kvs:
                pipe.get(k)
            got = pipe.execute()
        assert got == [v for _, v in kvs], "node %d lacks its keys" % n.index
        assert delta[n.index] == len(kvs), (n.index, delta, len(kvs))
    return delta


def check_types(cl, client):
    """Hashes, zsets, INCR, EXPIRE/TTL on keys owned by each node."""
    t = token()
    ks = keys_per_node(cl, "ty%s" % t, 5)
    for idx, (h, z, ctr, e, p) in ks.items():
        assert client.hset(h, mapping={"a": "1", "b": "2", "n": str(idx)}) \
            == 3
        assert client.hincrby(h, "a", 10) == 11
        assert client.hgetall(h) == {"a": "11", "b": "2", "n": str(idx)}
        assert client.hdel(h, "b") == 1
        assert client.hmget(h, "a", "b", "n") == ["11", None, str(idx)]
        assert client.hlen(h) == 2
        assert client.type(h) == "hash"

        assert client.zadd(z, {"x": 1, "y": 2.5, "z": -3}) == 3
        assert client.zadd(z, {"x": 3}) == 0
        assert client.zscore(z, "y") == 2.5
        assert client.zrange(z, 0, -1, withscores=True) == [
            ("z", -3.0), ("y", 2.5), ("x", 3.0)]
        assert client.zrangebyscore(z, 0, 10) == ["y", "x"]
        assert client.zrem(z, "z") == 1
        assert client.zcard(z) == 2
        assert client.type(z) == "zset"

        assert client.incr(ctr) == 1
        assert client.incrby(ctr, 41) == 42
        assert client.decr(ctr) == 41
        assert client.get(ctr) == "41"

        assert client.set(e, "v") is True
        assert client.ttl(e) == -1
        assert client.expire(e, 100) is True
        assert 98 <= client.ttl(e) <= 100
        assert 98000 <= client.pttl(e) <= 100000
        assert client.persist(e) is True
        assert client.ttl(e) == -1
        assert client.ttl(p) == -2
        assert client.set(p, "gone", px=150) is True
        assert client.get(p) == "gone"
        assert client.exists(p) == 1

        # the owner holds the same state
        with cl.nodes[idx].raw() as c:
            assert c.call("HGET", h, "a") == "11"
            assert c.call("ZCARD", z) == 2
            assert c.call("GET", ctr) == "41"
            assert c.call("TTL", e) == -1
    time.sleep(0.3)
    for idx, (_, _, _, _, p) in ks.items():
        assert client.get(p) is None, "key %s (node %d) did not expire" % (
            p, idx)
        assert client.exists(p) == 0


def mixed_ops(rng, prefix, n):
    """n (method, args, expected reply) over string, counter, hash and zset
    keys spread over every node, plus keyless PING/ECHO that the
    forwarding server answers itself, interleaved."""
    strs, ctrs, hsh, zs = {}, {}, {}, {}
    ops = []
    for i in range(n):
        op = i % 20
        sk = "%s:s%d" % (prefix, rng.randrange(400))
        ck = "%s:c%d" % (prefix, rng.randrange(60))
        hk = "%s:h%d" % (prefix, rng.randrange(40))
        zk = "%s:z%d" % (prefix, rng.randrange(40))
        if op in (0, 1, 10):
            v = "v%d" % i
            ops.append(("set", (sk, v), True))
            strs[sk] = v
        elif op in (2, 11, 12):
            ops.append(("get", (sk,), strs.get(sk)))
        elif op in (3, 13):
            ctrs[ck] = ctrs.get(ck, 0) + 1
            ops.append(("incr", (ck,), ctrs[ck]))
        elif op in (4, 14):
            f = "f%d" % rng.randrange(7)
            d = hsh.setdefault(hk, {})
            ops.append(("hset", (hk, f, "x%d" % i), 0 if f in d else 1))
            d[f] = "x%d" % i
        elif op == 5:
            f = "f%d" % rng.randrange(7)
            ops.append(("hget", (hk, f), hsh.get(hk, {}).get(f)))
        elif op in (6, 15):
            m = "m%d" % rng.randrange(9)
            d = zs.setdefault(zk, {})
            ops.append(("zadd", (zk, {m: float(i)}), 0 if m in d else 1))
            d[m] = float(i)
        elif op == 16:
            m = "m%d" % rng.randrange(9)
            ops.append(("zscore", (zk, m), zs.get(zk, {}).get(m)))
        elif op == 7:
            ops.append(("ping", (), True))
        elif op == 8:
            ops.append(("exists", (sk,), 1 if sk in strs else 0))
        elif op == 9:
            ops.append(("echo", ("e%d" % i,), "e%d" % i))
        elif op == 17:
            ops.append(("strlen", (sk,), len(strs.get(sk, ""))))
        elif op == 18:
            ops.append(("hlen", (hk,), len(hsh.get(hk, {}))))
        else:  # 19
            ops.append(("delete", (sk,), 1 if sk in strs else 0))
            strs.pop(sk, None)
    return ops


def run_pipeline(client, ops, chunk=None):
    """Runs ops as one (or several, of chunk ops) non-transactional
    pipelines; returns the first mismatch as a string, or None."""
    chunk = chunk or len(ops)
    for base in range(0, len(ops), chunk):
        part = ops[base:base + chunk]
        pipe = client.pipeline(transaction=False)
        for name, args, _ in part:
            getattr(pipe, name)(*args)
        got = pipe.execute(raise_on_error=False)
        if len(got) != len(part):
            return "%d replies for %d commands" % (len(got), len(part))
        for j, ((name, args, want), g) in enumerate(zip(part, got)):
            if g != want:
                return ("reply %d (%s %r): got %r, want %r; next replies %r"
                        % (base + j, name, args, g, want, got[j + 1:j + 4]))
    return None


def check_pipeline(cl, client, n):
    t = token()
    ops = mixed_ops(random.Random(t), "pl%s" % t, n)
    own = owners(cl)
    touched = {own[keyslot(args[0])] for name, args, _ in ops
               if name not in ("ping", "echo")}
    assert touched == {nd.port for nd in cl.nodes}
    err = run_pipeline(client, ops)
    assert err is None, err


def check_concurrent_pipelines(cl, host, port, nthreads, nops, rounds):
    """nthreads clients, each pipelining its own keys at the same time
    (a barrier starts each round together); every one must get its own
    replies, in order."""
    errors = []
    barrier = threading.Barrier(nthreads)
    t = token()

    def worker(w):
        try:
            c = plain(host, port)
            rng = random.Random("%s-%d" % (t, w))
            ops = mixed_ops(rng, "cc%s-%d" % (t, w), nops * rounds)
            for r in range(rounds):
                barrier.wait(30)
                err = run_pipeline(c, ops[r * nops:(r + 1) * nops])
                if err:
                    errors.append("thread %d round %d: %s" % (w, r, err))
                    barrier.abort()
                    return
            c.close()
        except threading.BrokenBarrierError:
            pass
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("thread %d: %r" % (w, e))
            barrier.abort()

    ths = [threading.Thread(target=worker, args=(w,)) for w in range(nthreads)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    assert not any(th.is_alive() for th in ths), "worker threads hung"
    assert not errors, "\n".join(errors)


def check_errors_relayed(cl, client, host, port):
    t = token()
    ks = keys_per_node(cl, "er%s" % t, 1)
    for idx, (k,) in ks.items():
        assert client.set(k, "text") is True
        with pytest.raises(redis.ResponseError) as ei:
            client.hset(k, "f", "v")
        assert str(ei.value) == WRONGTYPE, (idx, str(ei.value))
        with pytest.raises(redis.ResponseError) as ei:
            client.zadd(k, {"m": 1})
        assert str(ei.value) == WRONGTYPE, (idx, str(ei.value))
        with pytest.raises(redis.ResponseError) as ei:
            client.incr(k)
        assert str(ei.value) == pyerr(NOT_INT), (idx, str(ei.value))
        # byte for byte what the owner itself sends
        with pkserver.RespClient(host, port) as via, \
                cl.nodes[idx].raw() as own:
            for args in (("HGET", k, "f"), ("ZSCORE", k, "m"),
                         ("INCR", k), ("GET",), ("SET", k),
                         ("NOSUCHCMD", k, "b")):
                a, b = via.call(*args), own.call(*args)
                assert isinstance(a, RespError) and a == b, (args, a, b)
                assert via.last_raw == own.last_raw, (args, via.last_raw,
                                                      own.last_raw)
    # unknown command: Redis 7 text
    with pkserver.RespClient(host, port) as via:
        rep = via.call("NOSUCHCMD", "a", "b")
        assert rep == RespError("ERR unknown command 'NOSUCHCMD', with args "
                                "beginning with: 'a' 'b' "), rep
        rep = via.call("GET")
        assert rep == RespError("ERR wrong number of arguments for 'get' "
                                "command"), rep
        # the connection stays usable
        assert via.call("PING") == "PONG"
    with pytest.raises(redis.ResponseError) as ei:
        client.execute_command("NOSUCHCMD", "x")
    assert str(ei.value).startswith("unknown command 'NOSUCHCMD'") or \
        str(ei.value).startswith("ERR unknown command"), str(ei.value)
    # errors keep their place in a pipeline spanning all nodes
    pipe = client.pipeline(transaction=False)
    want = []
    for idx, (k,) in ks.items():
        pipe.get(k)
        want.append("text")
        pipe.hset(k, "f", "v")
        want.append(WRONGTYPE)
        pipe.incr(k)
        want.append(NOT_INT)
        pipe.execute_command("NOSUCHCMD", k)
        want.append("unknown")
        pipe.echo("after-%d" % idx)
        want.append("after-%d" % idx)
    got = pipe.execute(raise_on_error=False)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if w in (WRONGTYPE, NOT_INT):
            assert isinstance(g, redis.ResponseError) and \
                str(g) == pyerr(w), (i, g)
        elif w == "unknown":
            assert isinstance(g, redis.ResponseError) and \
                "unknown command" in str(g), (i, g)
        else:
            assert g == w, (i, g, w)


def check_keyless(client, pid, port):
    assert client.ping() is True
    assert client.echo("hello") == "hello"
    info = client.info()
    assert info["cluster_enabled"] == 1, info.get("cluster_enabled")
    # answered by this process itself, not forwarded
    assert info["process_id"] == pid, (info["process_id"], pid)
    assert info["tcp_port"] == port, (info["tcp_port"], port)
    assert client.info("cluster") == {"cluster_enabled": 1}
    with pkserver.RespClient("127.0.0.1", port) as c:
        ci = c.call("CLUSTER", "INFO")
    assert isinstance(ci, str) and ci.startswith("cluster_state:ok\r\n"), ci


# ---------------------------------------------------------------------------
# partkv proxy: command line and lifecycle
# ---------------------------------------------------------------------------

BAD_PROXY_ARGS = [
    [],
    ["--port", "0"],
    ["--port", "abc", "--cluster", "127.0.0.1:7000"],
    ["--port", "70000", "--cluster", "127.0.0.1:7000"],
    ["--port", "-1", "--cluster", "127.0.0.1:7000"],
    ["--port", "", "--cluster", "127.0.0.1:7000"],
    ["--cluster"],
    ["--cluster", "127.0.0.1:7000", "--port"],
    ["--cluster", "no-port-here"],
    ["--bogus", "x", "--cluster", "127.0.0.1:7000"],
]


@pytest.mark.parametrize("args", BAD_PROXY_ARGS,
                         ids=[" ".join(a) or "none" for a in BAD_PROXY_ARGS])
def test_proxy_bad_flags(args):
    p = subprocess.run([pkserver.partkv_path(), "proxy", *args],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    assert p.stdout == "", p.stdout
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), repr(p.stderr)
    assert lines[0].startswith("partkv proxy: "), lines[0]


@pytest.mark.parametrize("seed", ["127.0.0.1:abc", "127.0.0.1:0",
                                  "127.0.0.1:99999", ":7000"])
def test_proxy_bad_cluster_address(seed):
    """--cluster must name HOST:PORT with a port in 1..65535 (as
    `partkv server --join` checks)."""
    px = Proxy(seed, ready_timeout=3)
    try:
        p = subprocess.Popen(px.argv(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        hung = False
        try:
            out, err = p.communicate(timeout=1.5)
        except subprocess.TimeoutExpired:
            hung = True
            os.kill(p.pid, signal.SIGKILL)
            out, err = p.communicate(timeout=5)
        assert not hung, ("partkv proxy --cluster %s did not refuse the "
                          "address: still running after 1.5 s (stdout %r, "
                          "stderr %r)" % (seed, out, err))
        assert p.returncode == 2, (seed, p.returncode, out, err)
        assert len(err.splitlines()) == 1, repr(err)
    finally:
        px.cleanup()


def test_proxy_ready_line_and_sigterm(cl):
    """Ready line names the port and pid; any node can be the seed (here
    node 2); SIGTERM with clients connected exits 0."""
    p = Proxy(cl.nodes[2].addr)
    try:
        p.start()  # parses "partkv: ready on HOST:PORT pid PID", checks pid
        assert p.port > 0 and p.port not in [n.port for n in cl.nodes]
        line = [l for l in p._out_lines if l.startswith("partkv: ready")]
        assert line == ["partkv: ready on 127.0.0.1:%d pid %d"
                        % (p.port, p.pid)], p._out_lines
        wait_map(p.port, cl.nodes)
        c = plain(p.host, p.port)
        t = token()
        ks = keys_per_node(cl, "sg%s" % t, 3)
        for idx, keys in ks.items():
            for k in keys:
                assert c.set(k, k) is True
        for idx, keys in ks.items():
            with cl.nodes[idx].raw() as own:
                for k in keys:
                    assert own.call("GET", k) == k
        # owns nothing: not in the map it serves
        slots = c.execute_command("CLUSTER", "SLOTS")
        ports = {nd[1] for run in slots for nd in run[2:]}
        assert ports == {n.port for n in cl.nodes}, slots
        nodes_txt = c.execute_command("CLUSTER", "NODES")
        assert str(p.port) not in str(nodes_txt), nodes_txt
        idle = plain(p.host, p.port)
        assert idle.ping() is True
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGTERM)
        rc = p.wait(10)
        p.stopped_by_us = True
        assert rc == 0, "proxy exit %r after SIGTERM\n%s" % (rc, p.logs())
        assert time.monotonic() - t0 < 5
        with pytest.raises(redis.ConnectionError):
            idle.ping()
        c.close()
        idle.close()
    finally:
        p.cleanup()


def test_proxy_without_cluster_reports_down():
    """A proxy whose seed does not answer stays up, and a keyed command
    gets an error reply (no hang, no crash)."""
    dead = pkserver.free_port()
    p = Proxy("127.0.0.1:%d" % dead)
    try:
        p.start()
        with pkserver.RespClient(p.host, p.port, timeout=5) as c:
            assert c.call("PING") == "PONG"
            rep = c.call("GET", "somekey")
            assert isinstance(rep, RespError), rep
            assert rep.message.startswith("CLUSTERDOWN"), rep
            rep = c.call("SET", "somekey", "v")
            assert isinstance(rep, RespError), rep
        assert p.alive()
        assert p.stop() == 0, p.logs()
    finally:
        p.cleanup()


# ---------------------------------------------------------------------------
# 1. one keyspace through the proxy
# ---------------------------------------------------------------------------

def test_proxy_3000_keys_one_keyspace(cl, proxy, pr):
    delta = check_keyspace(cl, pr, 3000)
    print("\nproxy: 3000 keys -> per-node DBSIZE deltas %r" % (delta,))


def test_proxy_hash_zset_incr_expire(cl, proxy, pr):
    check_types(cl, pr)


def test_proxy_pipeline_5000_in_order(cl, proxy, pr):
    check_pipeline(cl, pr, 5000)


def test_proxy_concurrent_pipelines(cl, proxy):
    check_concurrent_pipelines(cl, proxy.host, proxy.port, nthreads=8,
                               nops=1500, rounds=3)


def test_proxy_keyless_answered_locally(cl, proxy, pr):
    check_keyless(pr, proxy.pid, proxy.port)
    assert pr.execute_command("CLUSTER", "MYID") not in \
        [n.id for n in cl.nodes]
    # DBSIZE is not forwarded: the proxy holds nothing itself
    with pkserver.RespClient(proxy.host, proxy.port) as c:
        rep = c.call("DBSIZE")
        assert isinstance(rep, RespError) or rep == 0, rep


def test_proxy_same_slot_multikey(cl, proxy, pr):
    t = token()
    for i in range(3):
        tag = "{mk%s-%d}" % (t, i)
        a, b, c = tag + "a", tag + "b", tag + "c"
        assert pr.mset({a: "1", b: "2"}) is True
        assert pr.mget(a, b, c) == ["1", "2", None]
        assert pr.delete(a, b, c) == 2
    # keys of different nodes in one command: either the right answer or
    # a CROSSSLOT error, never a partial one
    ks = keys_per_node(cl, "xs%s" % t, 1)
    keys = [v[0] for v in ks.values()]
    for k in keys:
        pr.set(k, k)
    with pkserver.RespClient(proxy.host, proxy.port) as c:
        rep = c.call("MGET", *keys)
        assert rep == keys or (isinstance(rep, RespError) and
                               rep.message.startswith("CROSSSLOT")), rep
        print("\nproxy: MGET over 3 nodes -> %r" % (rep,))
        # A key of another type is nil in MGET, as in Redis.
        pr.delete(keys[1])
        pr.hset(keys[1], "f", "v")
        rep = c.call("MGET", *keys)
        assert rep == [keys[0], None, keys[2]] or isinstance(rep, RespError)


# ---------------------------------------------------------------------------
# 2. errors are relayed
# ---------------------------------------------------------------------------

def test_proxy_errors_relayed(cl, proxy, pr):
    check_errors_relayed(cl, pr, proxy.host, proxy.port)


# ---------------------------------------------------------------------------
# 3. node forward mode (an extra node joined with --route forward)
# ---------------------------------------------------------------------------

def test_nodes_redirect_by_default(cl):
    """`cluster up` nodes answer MOVED (no -c: the redirect is printed)."""
    t = token()
    own = owners(cl)
    ks = keys_per_node(cl, "rd%s" % t, 1)
    for idx, (k,) in ks.items():
        wrong = cl.nodes[(idx + 1) % 3]
        p = redis_cli("-p", str(wrong.port), "get", k)
        want = "MOVED %d 127.0.0.1:%d" % (keyslot(k), own[keyslot(k)])
        assert p.stdout.strip() == want, (p.stdout, p.stderr)


def test_forward_node_joined_owns_nothing(cl, fwd):
    with fwd.raw() as c:
        myid = c.execute("CLUSTER", "MYID")
        assert myid not in [n.id for n in cl.nodes]
        slots = c.execute("CLUSTER", "SLOTS")
        assert {nd[1] for run in slots for nd in run[2:]} == \
            {n.port for n in cl.nodes}
        assert c.execute("DBSIZE") == 0
    with cl.coord() as co:
        rev, kvs = co.execute("PK.COORD", "RANGE", pkcluster.NODES_PREFIX)
        regs = {kv[0]: kv[1] for kv in kvs}
    assert regs.get(pkcluster.NODES_PREFIX + myid) == "127.0.0.1:%d" \
        % fwd.port, regs


def test_forward_node_plain_redis_cli(cl, fwd):
    t = token()
    ks = keys_per_node(cl, "fc%s" % t, 1)
    for idx, (k,) in ks.items():
        p = redis_cli("-p", str(fwd.port), "set", k, "via-fwd")
        assert p.stdout.strip() == "OK", (p.stdout, p.stderr)
        p = redis_cli("-p", str(fwd.port), "get", k)
        assert p.stdout.strip() == "via-fwd", (p.stdout, p.stderr)
        with cl.nodes[idx].raw() as c:
            assert c.call("GET", k) == "via-fwd"


def test_forward_node_500_keys(cl, fwd, fr):
    delta = check_keyspace(cl, fr, 500)
    print("\nforward node: 500 keys -> per-node DBSIZE deltas %r" % (delta,))
    with fwd.raw() as c:
        assert c.execute("DBSIZE") == 0


def test_forward_node_types(cl, fwd, fr):
    check_types(cl, fr)


def test_forward_node_pipeline(cl, fwd, fr):
    check_pipeline(cl, fr, 1000)


def test_forward_node_concurrent_pipelines(cl, fwd):
    check_concurrent_pipelines(cl, fwd.host, fwd.port, nthreads=4,
                               nops=500, rounds=2)


def test_forward_node_keyless(cl, fwd, fr):
    check_keyless(fr, fwd.pid, fwd.port)


def test_forward_node_errors_relayed(cl, fwd, fr):
    check_errors_relayed(cl, fr, fwd.host, fwd.port)


# ---------------------------------------------------------------------------
# 4. map change propagation
# ---------------------------------------------------------------------------

def test_crc32c_vector():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def current_epoch(c):
    info = c.call("CLUSTER", "INFO")
    for line in info.split("\r\n"):
        if line.startswith("cluster_current_epoch:"):
            return int(line.split(":", 1)[1])
    raise AssertionError("no cluster_current_epoch in %r" % info)


def pct(sorted_ms, p):
    """Nearest-rank percentile."""
    i = max(0, min(len(sorted_ms) - 1,
                   int(-(-p * len(sorted_ms) // 100)) - 1))
    return sorted_ms[i]


def test_map_change_propagation(cl, proxy, fwd):
    """Bump the map's epoch in the coordinator (CAS on its mod_revision)
    and time until every node, the proxy (and the forward node) report it
    in CLUSTER INFO.  20 rounds, polled every 2 ms."""
    rounds = 20
    co = cl.nodes[0].raw(decode=False)
    assert co.call("PK.AUTH", cl.secret) == "OK"
    targets = [("node%d" % n.index, n.raw()) for n in cl.nodes]
    targets.append(("proxy", pkserver.RespClient(proxy.host, proxy.port)))
    targets.append(("fwd", pkserver.RespClient(fwd.host, fwd.port)))
    asserted = [name for name, _ in targets if name != "fwd"]
    samples = []          # max over asserted targets, ms
    per = {name: [] for name, _ in targets}
    rng = random.Random()
    try:
        for r in range(rounds):
            rev, kv = co.execute("PK.COORD", "GET", MAP_KEY)
            d = kv_dict(kv)
            epoch = pmap_epoch(d["value"])
            # Every target holds the coordinator's epoch before the round
            # (a fixture made just before may still be converging).
            deadline = time.monotonic() + 3.0
            for name, c in targets:
                while (got := current_epoch(c)) != epoch and \
                        time.monotonic() < deadline:
                    time.sleep(0.005)
                assert got == epoch, "%s shows epoch %d before round %d, " \
                    "coordinator has %d" % (name, got, r, epoch)
            new = pmap_with_epoch(d["value"], epoch + 1)
            assert len(new) == len(d["value"])
            time.sleep(rng.uniform(0, 0.05))  # random phase vs the polls
            t0 = time.monotonic()
            rep = co.call("PK.COORD", "CAS", MAP_KEY, d["mod_rev"], new, 0)
            assert isinstance(rep, list) and rep[0] > d["mod_rev"], rep
            pending = dict(targets)
            while pending:
                now = time.monotonic() - t0
                for name in list(pending):
                    e = current_epoch(pending[name])
                    if e == epoch + 1:
                        per[name].append((time.monotonic() - t0) * 1000)
                        del pending[name]
                    else:
                        assert e == epoch, (name, e, epoch)
                if now > 3.0:
                    pytest.fail("round %d: epoch %d not seen by %s after "
                                "3 s" % (r, epoch + 1, sorted(pending)))
                if pending:
                    time.sleep(0.002)
            samples.append(max(per[name][-1] for name in asserted))
        # the proxy shows the new epoch as config epoch too
        with pkserver.RespClient(proxy.host, proxy.port) as c:
            lines = c.call("CLUSTER", "NODES").strip("\n").split("\n")
        assert all(l.split(" ")[6] == str(epoch + 1) for l in lines), lines
        # and still forwards
        k = "after-epoch-%s" % token()
        with plain(proxy.host, proxy.port) as c:
            assert c.set(k, "1") is True and c.get(k) == "1"
    finally:
        co.close()
        for _, c in targets:
            c.close()

    s = sorted(samples)
    print("\nmap change propagation, %d rounds (all 3 nodes + proxy), ms: "
          "p50 %.1f  p99 %.1f  max %.1f  min %.1f"
          % (rounds, pct(s, 50), pct(s, 99), s[-1], s[0]))
    for name, _ in targets:
        v = sorted(per[name])
        print("  %-6s p50 %6.1f  p99 %6.1f  max %6.1f"
              % (name, pct(v, 50), pct(v, 99), v[-1]))
    print("  rounds: " + " ".join("%.0f" % x for x in samples))
    # Speed is reported, not asserted (the house rule: a loaded 2-core
    # machine once took 393 ms for one round where the p50 was 38 ms); the
    # 3 s bound above is the liveness check.
