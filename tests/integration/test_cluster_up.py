"""`partkv cluster up` as a supervisor: --acks and --replace-after reach
every node; a node that dies (SIGKILL here) is started again with the same
argv -- same port, same --dir, so it comes back with its data -- after a
delay that doubles while it keeps dying soon after its start; SIGTERM
stops every node, restarted ones included, and exits 0.

Node PIDs are taken from `INFO server` (process_id) on each node's port and
only ever signalled after /proc/<pid>/cmdline shows this cluster's data
directory.  Every wait is bounded.
"""
import os
import re
import signal
import tempfile
import time

import pytest

import cluster as pkcluster
from cluster import wait_until

pytestmark = pytest.mark.partkv_only

RESTART_RE = re.compile(
    r"^partkv cluster: node (?P<index>\d+) \(port (?P<port>\d+), "
    r"pid (?P<old>\d+)\) died \((?P<why>killed by signal \d+|exited with "
    r"status \d+)\); restarted as pid (?P<new>\d+)$", re.M)

# The summary line carries "acks X, " before the mode only when --acks is
# given.  (For a cluster.py whose SUMMARY_RE does not know it yet, the
# test that passes --acks swaps this one in.)
if "(?P<acks>" in pkcluster.SUMMARY_RE.pattern:
    SUMMARY_ACKS_RE = pkcluster.SUMMARY_RE
else:
    SUMMARY_ACKS_RE = re.compile(pkcluster.SUMMARY_RE.pattern.replace(
        r"(?P<mode>", r"(?:acks (?P<acks>leader|quorum|all), )?(?P<mode>",
        1))

RESTART_WAIT = 10.0     # seconds a restarted node gets to answer PING


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def pid_on(port):
    """process_id from INFO server on 127.0.0.1:port, None if no answer."""
    import redis
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2,
                    socket_connect_timeout=1, decode_responses=True)
    try:
        if not c.ping():
            return None
        return int(c.info("server")["process_id"])
    except (redis.exceptions.RedisError, OSError, KeyError, ValueError):
        return None
    finally:
        c.close()


def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().split(b"\0")[:-1]


def sigkill_node(c, index):
    """SIGKILLs node index (PID from INFO server, checked to be ours);
    returns (pid, time of the kill)."""
    node = c.nodes[index]
    pid = pid_on(node.port)
    assert pid is not None, "node %d on port %d does not answer\n%s" % (
        index, node.port, c.logs())
    assert c.node_alive(pid), "pid %d on port %d is not one of %s's nodes" % (
        pid, node.port, c.dir)
    os.kill(pid, signal.SIGKILL)
    return pid, time.monotonic()


def wait_restarted(c, index, old_pid, t_kill, timeout=RESTART_WAIT):
    """Waits until a new PID answers on node index's port; returns (pid,
    seconds since the kill).  The new PID is recorded on the Node and for
    the cluster's orphan cleanup."""
    node = c.nodes[index]

    def new_pid():
        p = pid_on(node.port)
        return p if p is not None and p != old_pid else None
    pid, _ = wait_until(new_pid, timeout, 0.01)
    took = time.monotonic() - t_kill
    assert pid, "node %d (port %d) not back %.1fs after pid %d was killed" \
        "\n%s" % (index, node.port, took, old_pid, c.logs())
    node.pid = pid
    c._all_node_pids.add(pid)
    return pid, took


def restart_lines(c):
    return [m.groupdict() for m in RESTART_RE.finditer(c.stderr_text())]


def wait_restart_line(c, old_pid, new_pid, timeout=5.0):
    """The stderr line reporting old_pid's death and new_pid."""
    def find():
        for d in restart_lines(c):
            if int(d["old"]) == old_pid and int(d["new"]) == new_pid:
                return d
        return None
    d, _ = wait_until(find, timeout)
    assert d, "no restart line for %d -> %d\n%s" % (old_pid, new_pid,
                                                    c.logs())
    return d


def fill(c, prefix, count=300):
    """count keys through RedisCluster; returns {key: value}."""
    data = {"%s:%d" % (prefix, i): "v%d-%s" % (i, prefix)
            for i in range(count)}
    rc = c.rc()
    try:
        for k, v in data.items():
            assert rc.set(k, v)
    finally:
        rc.close()
    return data


def read_back(c, data, timeout=10.0):
    """Reads every key with a fresh RedisCluster until all match (the
    restarted node may need a moment to serve the map again); returns the
    keys that still differ."""
    wrong = dict(data)

    def check():
        rc = None
        try:
            rc = c.rc()
            for k in list(wrong):
                if rc.get(k) == wrong[k]:
                    del wrong[k]
        except Exception:       # a node not serving yet: try again
            pass
        finally:
            if rc is not None:
                rc.close()
        return not wrong
    wait_until(check, timeout, 0.1)
    return wrong


@pytest.fixture
def cl(cluster_factory):
    """3 nodes on a free block of fixed ports (so a restart's argv is the
    first start's, byte for byte), one replica per partition (so the keys
    of a node live only in its --dir)."""
    c = cluster_factory(nodes=3, base_port=pkcluster.free_port_block(3),
                        replicas=1)
    c.wait_serving()
    return c


# ---------------------------------------------------------------------------
# option checking
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--acks", "bogus"],
    ["--acks", ""],
    ["--acks", "Quorum"],
    ["--acks"],
    ["--replace-after", "-1"],
    ["--replace-after", "x"],
    ["--replace-after", ""],
    ["--replace-after", "1.5"],
    ["--replace-after", "31536001"],
    ["--replace-after", "99999999999999999999999"],
    ["--replace-after"],
])
def test_bad_acks_or_replace_after(partkv, args):
    with tempfile.TemporaryDirectory(prefix="partkv-cu-") as root:
        data = os.path.join(root, "data")
        p = partkv("cluster", "up", "--nodes", "1", "--base-port", "0",
                   "--dir", data, *args, check=False, timeout=10)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert p.stdout == "", p.stdout
        assert p.stderr.count("\n") == 1 and p.stderr.endswith("\n"), \
            p.stderr
        assert p.stderr.startswith("partkv cluster up: "), p.stderr
        assert args[0] in p.stderr, p.stderr
        assert not os.path.exists(data), "started although the options " \
            "were bad"


def test_acks_and_replace_after_reach_every_node(cluster_factory,
                                                 monkeypatch):
    monkeypatch.setattr(pkcluster, "SUMMARY_RE", SUMMARY_ACKS_RE)
    c = cluster_factory(nodes=3, base_port=0, replicas=1,
                        extra=["--acks", "all", "--replace-after", "45"])
    m = SUMMARY_ACKS_RE.match(c.summary["line"])
    assert m and m.group("acks") == "all", c.summary["line"]
    for n in c.nodes:
        argv = cmdline(n.pid)
        i = argv.index(b"--acks")
        assert argv[i + 1] == b"all", argv
        i = argv.index(b"--replace-after")
        assert argv[i + 1] == b"45", argv
    # A restart keeps the flags, and pins the port the node got from 0.
    old, t = sigkill_node(c, 2)
    new, _ = wait_restarted(c, 2, old, t)
    argv = cmdline(new)
    assert argv[argv.index(b"--acks") + 1] == b"all", argv
    assert argv[argv.index(b"--replace-after") + 1] == b"45", argv
    assert argv[argv.index(b"--port") + 1] == b"%d" % c.nodes[2].port, argv
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()


def test_summary_without_acks_is_unchanged(cluster_factory):
    c = cluster_factory(nodes=1, base_port=0, replicas=1)
    assert "acks" not in c.summary["line"], c.summary["line"]
    assert b"--acks" not in cmdline(c.nodes[0].pid)
    assert b"--replace-after" not in cmdline(c.nodes[0].pid)


# ---------------------------------------------------------------------------
# supervision
# ---------------------------------------------------------------------------

def test_killed_node_restarts_with_its_data(cl):
    c = cl
    pids = [pid_on(n.port) for n in c.nodes]
    assert pids == [n.pid for n in c.nodes], (pids, c.nodes)
    data = fill(c, "kr")
    victim = c.nodes[1]
    with victim.client() as r:
        on_victim = r.dbsize()
    assert on_victim > 0, "no key landed on node 1"
    argv = cmdline(victim.pid)

    old, t = sigkill_node(c, 1)
    new, took = wait_restarted(c, 1, old, t)
    assert took >= 0.2, "restarted %.3fs after the kill: no delay" % took
    assert not c.node_alive(old)
    assert cmdline(new) == argv, "restarted with another argv"
    d = wait_restart_line(c, old, new)
    assert d == {"index": "1", "port": str(victim.port), "old": str(old),
                 "why": "killed by signal 9", "new": str(new)}, d

    c.wait_serving(timeout=10.0)
    with victim.client() as r:
        assert r.dbsize() == on_victim
    wrong = read_back(c, data)
    assert not wrong, "%d keys lost or wrong after the restart, e.g. %r" % (
        len(wrong), sorted(wrong)[:5])
    # The other nodes were left alone; writes work everywhere again.
    assert [pid_on(n.port) for n in c.nodes] == [pids[0], new, pids[2]]
    more = fill(c, "kr2", 100)
    assert not read_back(c, more)
    assert c.alive()
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()


def test_coordinator_node_restarts(cl):
    """Node 0 hosts the embedded coordinator; the others --join it."""
    c = cl
    data = fill(c, "kc")
    old, t = sigkill_node(c, 0)
    new, _ = wait_restarted(c, 0, old, t)
    wait_restart_line(c, old, new)
    c.wait_serving(timeout=10.0)
    assert not read_back(c, data)
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()


def test_quick_deaths_back_off(cl):
    """Each death within a few seconds of the node's start doubles the
    delay (200, 400, 800 ms ...); a death after a quiet while starts at
    200 ms again."""
    c = cl
    data = fill(c, "kb", 100)
    took = []
    pid = c.nodes[2].pid
    for _ in range(3):
        old, t = sigkill_node(c, 2)         # at once after the restart
        pid, s = wait_restarted(c, 2, old, t)
        wait_restart_line(c, old, pid)
        took.append(s)
    for s, delay in zip(took, (0.2, 0.4, 0.8)):
        assert s >= delay, "restart delays %r, want at least 0.2/0.4/0.8" \
            % (took,)
    lines = restart_lines(c)
    assert [d["index"] for d in lines] == ["2"] * 3, lines
    # After 5 s up the node counts as healthy: the next delay is 200 ms.
    time.sleep(5.5)
    old, t = sigkill_node(c, 2)
    pid, s = wait_restarted(c, 2, old, t)
    assert 0.2 <= s < took[2], "delay did not reset: %.3fs after %r" % (
        s, took)
    c.wait_serving(timeout=10.0)
    assert not read_back(c, data)
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()


def test_sigterm_stops_every_node(cl):
    c = cl
    old, t = sigkill_node(c, 1)
    wait_restarted(c, 1, old, t)
    pids = [pid_on(n.port) for n in c.nodes]
    assert all(pids), pids
    t0 = time.monotonic()
    assert c.stop() == 0, c.logs()
    assert time.monotonic() - t0 < 10, "stopping took %.1fs" % (
        time.monotonic() - t0)
    for pid in pids:
        assert not c.node_alive(pid), pid
    assert not c.leftover_nodes()
    for n in c.nodes:
        assert pid_on(n.port) is None, n


def test_no_restart_while_stopping(cl):
    """A node killed just before SIGTERM reaches `cluster up` stays dead:
    the restart (due 200 ms later) must not happen during the shutdown."""
    c = cl
    ports = [n.port for n in c.nodes]
    old, _ = sigkill_node(c, 2)
    os.kill(c.proc.pid, signal.SIGTERM)
    assert c.wait(15.0) == 0, c.logs()
    assert not c.leftover_nodes()
    assert not [d for d in restart_lines(c) if int(d["old"]) == old], \
        c.logs()
    for p in ports:
        assert pid_on(p) is None, p


def test_restarted_node_dies_with_cluster_up(cl):
    """PR_SET_PDEATHSIG also holds for a restarted node: SIGKILL of
    `cluster up` takes it down too."""
    c = cl
    old, t = sigkill_node(c, 0)
    new, _ = wait_restarted(c, 0, old, t)
    pids = [pid_on(n.port) for n in c.nodes]
    assert new in pids and all(pids), pids
    os.kill(c.proc.pid, signal.SIGKILL)
    assert c.wait(10.0) == -signal.SIGKILL
    left, _ = wait_until(lambda: not [p for p in pids if c.node_alive(p)],
                         10.0)
    assert left, "nodes outlived cluster up: %r" % (
        [p for p in pids if c.node_alive(p)],)


def test_redis_cli_sees_the_restarted_node(cl):
    """A plain `redis-cli -c` reads, through node 0, what it wrote to a key
    of the node that was killed and restarted."""
    c = cl
    with c.nodes[0].raw() as r:
        key = next(k for k in ("rc:%d" % i for i in range(5000))
                   if c.node_for_slot(r.call("CLUSTER", "KEYSLOT", k))
                   .index == 2)
    p = pkcluster.redis_cli("-c", "-p", str(c.nodes[0].port), "set", key,
                            "before")
    assert p.stdout.strip() == "OK", p
    old, t = sigkill_node(c, 2)
    wait_restarted(c, 2, old, t)
    c.wait_serving(timeout=10.0)
    p = pkcluster.redis_cli("-c", "-p", str(c.nodes[0].port), "get", key)
    assert p.stdout.strip() == "before", (p, c.logs())
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()


def test_port_taken_by_someone_else(cl):
    """While another process listens on a dead node's port, `cluster up`
    does not start a second process on that node's --dir (it would only
    fail to listen, after opening the store); it tries again later and
    restarts the node once the port is free."""
    import socket
    c = cl
    node = c.nodes[1]
    node_dir = os.path.join(c.dir, "node-1").encode()
    old, t = sigkill_node(c, 1)
    squat = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squat.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        def bound():        # the killed node's socket goes at its exit
            try:
                squat.bind(("127.0.0.1", node.port))
                return True
            except OSError:
                return False
        ok, _ = wait_until(bound, 0.15, 0.001)
        assert ok and time.monotonic() - t < 0.2, \
            "could not take port %d before the restart was due" % node.port
        squat.listen(16)
        taken = "node 1 (port %d, pid %d) died (killed by signal 9); its " \
            "port is taken, next try in" % (node.port, old)
        ok, _ = wait_until(lambda: c.stderr_text().count(taken) >= 2, 5.0)
        assert ok, c.logs()
        for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
            try:
                argv = cmdline(pid)
            except OSError:
                continue
            assert not (b"server" in argv and node_dir in argv), \
                "pid %d runs node 1's --dir while its port is taken" % pid
    finally:
        squat.close()
    new, _ = wait_restarted(c, 1, old, t, timeout=10.0)
    wait_restart_line(c, old, new)
    assert c.stop() == 0, c.logs()
    assert not c.leftover_nodes()
