"""The fault harness: partkv nodes and etcd members each on their own
loopback address, iptables rules that cut the links between them, node
processes killed / stopped by PID, and clients whose histories the
lost-write and linearizability checkers read.

Addresses.  Everything runs in the host network namespace.  A test session
picks one 127.0.K.0/24 (K random, never 0, so 127.0.0.1 is never touched):
etcd members on 127.0.K.10-12, partkv nodes on 127.0.K.21-24.  A node
started with --bind 127.0.K.2x listens there and opens every outgoing
connection from there (links, agent, controller, etcd requests), so the
traffic between two nodes, or between a node and etcd, is told apart by
its two addresses.  Clients connect from 127.0.0.1, which no rule names:
they always reach every node, as a client on the far side of a network
partition would.

Links.  A cut is a DROP rule in the INPUT chain (on loopback every packet
crosses INPUT once, after OUTPUT): `-s A -d B` drops what A sends to B --
silently, as a lost packet, with no error to the sender (a DROP in OUTPUT
can surface to the sending socket as EPERM, which a real network never
does).  A two-way cut is both rules; a one-way cut only one.  Every rule
carries `-m comment --comment partkv-fault-<pytest pid>`; heal() deletes
exactly the rules with that comment, and the `net` fixture heals at
teardown whatever happened.  Packet loss uses `-m statistic --mode random`
(netem, for delay and loss, is checked for and is absent here: see
netem_status()).

Map.  `partkv cluster up` only binds 127.0.0.1.  The harness runs it once
against the test's etcd to create the map (the core planner, node ids in
each node's --dir), SIGKILLs it and its nodes by PID, and starts the same
node directories by hand with `partkv server --bind 127.0.K.2x --port
<same port>`: each node's agent, registering again, finds its id in the
map with another address and records the new one (ensure_member in
src/server/pk_agent.c), so the map ends with the 127.0.K.2x addresses.

Nothing here signals a process by name: nodes, etcd members and the
bootstrap `cluster up` are signalled by the PIDs this module started.
"""
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import redis

import pmap
import server as pkserver
from cluster import Cluster, free_port_block, keyslot, wait_until
from fetcd import HostEtcd
from replfault import SlotClient, counts_dict

IPTABLES = shutil.which("iptables") or "/usr/sbin/iptables"
READY_RE = re.compile(r"^partkv: ready on (\S+):(\d+) pid (\d+)\s*$", re.M)
TAG = "partkv-fault-%d" % os.getpid()

LONG = os.environ.get("PARTKV_FAULT_LONG", "") not in ("", "0")


def note(msg):
    """A line for the report: printed (seen with -s) and appended to
    $PARTKV_FAULT_REPORT when set."""
    line = "fault-report: %s" % msg
    print(line)
    path = os.environ.get("PARTKV_FAULT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


# ---------------------------------------------------------------------------
# iptables
# ---------------------------------------------------------------------------

def _ipt(*args, check=True):
    p = subprocess.run([IPTABLES, "-w", *args], capture_output=True,
                       text=True, timeout=30)
    if check and p.returncode != 0:
        raise RuntimeError("iptables %s: %s" % (" ".join(args),
                                                p.stderr.strip()))
    return p


def iptables_status():
    """(usable, why): iptables present and allowed to list and change the
    filter table (tried with a rule naming 127.0.0.250 only, removed at
    once)."""
    if not os.access(IPTABLES, os.X_OK):
        return False, "%s is not installed (scripts/deps.sh installs it)" \
            % IPTABLES
    spec = ["INPUT", "-s", "127.0.0.250", "-d", "127.0.0.251", "-m",
            "comment", "--comment", TAG + "-probe", "-j", "DROP"]
    try:
        p = _ipt("-I", *spec, check=False)
        if p.returncode != 0:
            return False, "iptables cannot add a rule: %s" % p.stderr.strip()
        _ipt("-D", *spec, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return False, "iptables: %s" % e
    return True, "ok"


def _tags_in_rules():
    p = _ipt("-S", "INPUT", check=False)
    out = []
    for line in p.stdout.splitlines():
        args = shlex.split(line)
        if "--comment" in args:
            out.append((args, args[args.index("--comment") + 1]))
    return out


def sweep_dead_runs():
    """Deletes partkv-fault-<pid> rules left by a run whose pytest process
    is gone (a run killed before its teardown).  Rules of live runs are
    left alone."""
    for args, tag in _tags_in_rules():
        m = re.match(r"^partkv-fault-(\d+)(-probe)?$", tag)
        if not m or int(m.group(1)) == os.getpid():
            continue
        if os.path.exists("/proc/%s" % m.group(1)):
            continue
        _ipt("-D", *args[1:], check=False)


def pick_subnet():
    """'127.0.K.' for a K that no rule mentions and where nothing listens
    on the addresses the harness uses."""
    rules = _ipt("-S", "INPUT", check=False).stdout if os.access(
        IPTABLES, os.X_OK) else ""
    rnd = random.Random()
    for _ in range(200):
        k = rnd.randrange(2, 250)
        prefix = "127.0.%d." % k
        if prefix in rules:
            continue
        return prefix
    raise RuntimeError("no free 127.0.K.0/24")


class Net:
    """DROP rules between the test's addresses, all tagged TAG.  Each call
    adds or deletes its rules in one iptables-restore --noflush
    transaction, so an isolation or a heal is one atomic step."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.log = []

    def _own(self, ip):
        assert ip.startswith(self.prefix) and ip != "127.0.0.1", ip

    def _spec(self, src, dst, loss=None):
        self._own(src)
        self._own(dst)
        spec = ["INPUT", "-s", src, "-d", dst]
        if loss is not None:
            spec += ["-m", "statistic", "--mode", "random", "--probability",
                     "%.3f" % loss]
        return spec + ["-m", "comment", "--comment", TAG, "-j", "DROP"]

    def _restore(self, lines):
        if not lines:
            return
        text = "*filter\n" + "".join(l + "\n" for l in lines) + "COMMIT\n"
        p = subprocess.run([IPTABLES + "-restore", "-w", "--noflush"],
                           input=text, capture_output=True, text=True,
                           timeout=30)
        if p.returncode != 0:
            raise RuntimeError("iptables-restore: %s\n%s"
                               % (p.stderr.strip(), text))

    def drop(self, pairs, loss=None):
        """Drops what src sends to dst for every (src, dst) in pairs (loss:
        that fraction of it), all at once."""
        self._restore(["-I " + " ".join(shlex.quote(a)
                                        for a in self._spec(s, d, loss))
                       for s, d in pairs])
        self.log.append("drop %s%s" % (
            ", ".join("%s->%s" % p for p in pairs),
            "" if loss is None else " (%.0f%% loss)" % (loss * 100)))

    def cut(self, a, b, loss=None):
        self.drop([(a, b), (b, a)], loss)

    def isolate(self, a, others, loss=None):
        """Cuts a from every address in others, both ways."""
        pairs = []
        for o in others:
            pairs += [(a, o), (o, a)]
        self.drop(pairs, loss)

    def partition(self, side_a, side_b, loss=None):
        """Cuts every address of side_a from every one of side_b."""
        pairs = []
        for a in side_a:
            for b in side_b:
                pairs += [(a, b), (b, a)]
        self.drop(pairs, loss)

    def rules(self):
        return [args for args, tag in _tags_in_rules() if tag == TAG]

    def heal(self):
        """Deletes every rule carrying TAG (whoever added it), at once."""
        rules = self.rules()
        if rules:
            self._restore(["-D " + " ".join(shlex.quote(a)
                                            for a in args[1:])
                           for args in rules])
            self.log.append("heal")
        left = self.rules()
        for args in left:  # one by one, if the batch failed
            _ipt("-D", *args[1:], check=False)
        left = self.rules()
        assert not left, "iptables rules left: %r" % left


def netem_status():
    """(available, why).  Tried in a throwaway network namespace (unshare
    -n), so the host's lo is never touched."""
    if not shutil.which("tc"):
        return False, "tc is not installed"
    try:
        p = subprocess.run(
            ["unshare", "-n", "sh", "-c",
             "ip link set lo up && tc qdisc add dev lo root netem delay 1ms"],
            capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return False, "cannot try netem: %s" % e
    if p.returncode != 0:
        return False, "tc qdisc ... netem: %s" % (p.stderr.strip() or
                                                  "rc %d" % p.returncode)
    return True, "ok"


# ---------------------------------------------------------------------------
# nodes and the cluster
# ---------------------------------------------------------------------------

class FNode:
    """One `partkv server --bind HOST --port PORT --dir DIR` process."""

    def __init__(self, cl, index, host, port, dir):
        self.cl = cl
        self.index = index
        self.host = host
        self.port = port
        self.dir = dir
        self.proc = None
        self.stopped = False
        self.starts = 0
        self.log = os.path.join(cl.root, "node-%d.log" % index)

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def argv(self):
        return [pkserver.partkv_path(), "server", "--port", str(self.port),
                "--bind", self.host, "--dir", self.dir, "--cluster-secret",
                self.cl.secret, "--coordinator",
                "etcd://" + self.cl.etcd.endpoints,
                "--acks", self.cl.acks] + list(self.cl.extra)

    def start(self, timeout=15.0):
        assert not self.alive(), "node %d already runs" % self.index
        with open(self.log, "ab") as f:
            f.write(b"--- start %d ---\n" % self.starts)
            # Flushed before the child writes to the same file: else its
            # ready line can land before the marker, cut at start_at.
            f.flush()
            start_at = f.tell()
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=f, stderr=f,
                                         start_new_session=True)
        self.starts += 1
        self.stopped = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log, "rb") as f:
                f.seek(start_at)
                text = f.read().decode("utf-8", "replace")
            for m in READY_RE.finditer(text):
                if int(m.group(3)) == self.proc.pid:
                    return self
            if self.proc.poll() is not None:
                raise AssertionError("node %d exited %s before ready:\n%s"
                                     % (self.index, self.proc.returncode,
                                        text[-3000:]))
            time.sleep(0.02)
        raise AssertionError("node %d not ready in %.0fs" % (self.index,
                                                             timeout))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)
            return True
        return False

    def kill9(self):
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)
        self.stopped = False

    def sigstop(self):
        if self.signal(signal.SIGSTOP):
            self.stopped = True

    def sigcont(self):
        self.signal(signal.SIGCONT)
        self.stopped = False

    def client(self, timeout=1.0):
        return redis.Redis(host=self.host, port=self.port,
                           socket_timeout=timeout,
                           socket_connect_timeout=timeout,
                           decode_responses=True, retry_on_timeout=False)

    def call(self, *args, timeout=1.0):
        """The reply, or the exception."""
        r = self.client(timeout)
        try:
            return r.execute_command(*args)
        except Exception as e:
            return e
        finally:
            r.close()

    def logs(self, limit=3000):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")[-limit:]
        except OSError:
            return ""

    def __repr__(self):
        return "<FNode %d %s pid %s>" % (self.index, self.addr, self.pid)


def summarize(view):
    """{leader address: slots} of a sorted CLUSTER SLOTS view ({leader:
    ranges} of a range view)."""
    out = {}
    for a, b, addr in view:
        n = b - a + 1 if isinstance(a, int) else 1
        out[addr] = out.get(addr, 0) + n
    return out


class FaultCluster:
    """n partkv nodes (R = n, --acks quorum by default) and an etcd of
    etcd_members members, each on its own address in prefix (127.0.K.).

    presplit (comma-separated keys) makes it a range-scheme cluster in
    forward mode, split there: its views (slots(), owner()) are then
    ranges [(lo, hi, leader port)] from PK.MAP instead of slot ranges
    from CLUSTER SLOTS, and extra goes to `cluster up` as well as to each
    node."""

    def __init__(self, prefix, n=3, etcd_members=1, acks="quorum",
                 replicas=None, spare=1, extra=(), presplit=None):
        self.prefix = prefix
        self.n = n
        self.acks = acks
        self.replicas = replicas or n
        self.spare = spare
        self.presplit = presplit
        self.boot_extra = [] if presplit is None else \
            ["--scheme", "range", "--presplit-keys", presplit] + list(extra)
        self.extra = list(extra) + ([] if presplit is None else
                                    ["--route", "forward"])
        self.root = tempfile.mkdtemp(prefix="partkv-fault-")
        self.secret = "f-%032x" % random.getrandbits(128)
        self.etcd = HostEtcd([prefix + str(10 + i)
                              for i in range(etcd_members)])
        self.nodes = []      # the n nodes of the map
        self.extra_nodes = []  # nodes added later (add_node)
        self.base = None
        self.boot_s = None

    # -- lifecycle --------------------------------------------------------
    def start(self):
        t0 = time.monotonic()
        self.etcd.start()
        self.base = free_port_block(self.n + self.spare)
        boot = Cluster(nodes=self.n, base_port=self.base,
                       replicas=self.replicas, secret=self.secret,
                       dir=self.root,
                       extra=["--coordinator", "etcd://" + self.etcd.endpoints,
                              "--acks", self.acks] + self.boot_extra)
        try:
            boot.start()
        finally:
            # The map is in etcd now; the nodes held nothing yet.  SIGKILL
            # (cluster up's clean stop takes seconds), node PIDs reaped.
            boot.kill()
        pids = [n.pid for n in boot.nodes]
        ok, _ = wait_until(lambda: not any(boot.node_alive(p) for p in pids),
                           10.0)
        assert ok, "bootstrap nodes survived SIGKILL"
        for i in range(self.n):
            self.nodes.append(FNode(self, i, self.prefix + str(21 + i),
                                    self.base + i,
                                    os.path.join(boot.dir, "node-%d" % i)))
        for nd in self.nodes:
            nd.start()
        self.wait_serving()
        self.boot_s = time.monotonic() - t0
        return self

    def add_node(self):
        """Starts node n+len(extra_nodes) on the next address and spare
        port; its agent adds it to the map."""
        i = self.n + len(self.extra_nodes)
        assert i < self.n + self.spare, "no spare port"
        d = os.path.join(self.root, "data", "node-%d" % i)
        os.makedirs(d, exist_ok=True)
        nd = FNode(self, i, self.prefix + str(21 + i), self.base + i, d)
        self.extra_nodes.append(nd)
        nd.start()
        return nd

    def all_nodes(self):
        return self.nodes + self.extra_nodes

    def cleanup(self):
        for nd in self.all_nodes():
            try:
                nd.sigcont()
                nd.kill9()
            except Exception:
                pass
        try:
            self.etcd.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- views --------------------------------------------------------------
    def hosts(self):
        """{port: host} of every node (the clients' address book: the
        ports are distinct, so CLUSTER SLOTS / MOVED ports name a node)."""
        return {nd.port: nd.host for nd in self.all_nodes()}

    def by_port(self, port):
        return next(nd for nd in self.all_nodes() if nd.port == port)

    def slots(self, via=None):
        """CLUSTER SLOTS of one live, running node (via, else the first
        that answers), as [(start, end, leader port)], or None.  On the
        range scheme: its map's ranges, [(lo, hi, leader port)]."""
        for nd in ([via] if via else self.all_nodes()):
            if not nd.alive() or nd.stopped:
                continue
            if self.presplit is not None:
                view = self.range_view(nd)
                if view is not None:
                    return view
                continue
            rep = nd.call("CLUSTER", "SLOTS", timeout=1.0)
            if isinstance(rep, list):
                return [(s, e, m[1]) for s, e, m, *_ in rep]
        return None

    def range_view(self, nd):
        """nd's map as [(lo, hi, leader port)] in key order, or None."""
        r = redis.Redis(host=nd.host, port=nd.port, socket_timeout=1.0,
                        socket_connect_timeout=1.0)
        try:
            buf = r.execute_command("PK.MAP")
            return [(lo, hi, int(a.rsplit(":", 1)[1]) if a else None)
                    for lo, hi, a in pmap.ranges(pmap.decode(buf))]
        except Exception:
            return None
        finally:
            r.close()

    def owner(self, view, key):
        """The leader port of key in a view of slots()."""
        if self.presplit is not None:
            k = key.encode() if isinstance(key, str) else key
            return next((p for lo, hi, p in view or ()
                         if lo <= k and (hi is None or k < hi)), None)
        s = keyslot(key)
        return next((p for a, b, p in view or () if a <= s <= b), None)

    def leader_port(self, key, via=None):
        return self.owner(self.slots(via), key)

    def leaders(self, via=None):
        """Ports that lead at least one slot."""
        return {p for _, _, p in self.slots(via) or ()}

    def wait_serving(self, timeout=30.0, balanced=True):
        """Until every running node says cluster_state:ok and names only
        the nodes' own addresses in CLUSTER SLOTS, all the same view; and
        (balanced) every node of the map leads something."""
        ours = {nd.addr for nd in self.all_nodes()}
        why = ["-"]

        def ready():
            views = {}
            for nd in self.all_nodes():
                if not nd.alive() or nd.stopped:
                    continue
                info = nd.call("CLUSTER", "INFO")
                if not (isinstance(info, str) and
                        info.startswith("cluster_state:ok")):
                    why[0] = "%s: CLUSTER INFO %r" % (nd.addr,
                                                      str(info)[:80])
                    return False
                if self.presplit is not None:
                    rep = self.range_view(nd)
                    view = [(lo, hi, self.by_port(p).addr if p else None)
                            for lo, hi, p in rep or ()]
                else:
                    rep = nd.call("CLUSTER", "SLOTS")
                    view = sorted((s, e, "%s:%d" % (m[0], m[1]))
                                  for s, e, m, *_ in rep) \
                        if isinstance(rep, list) else None
                if not isinstance(rep, list):
                    why[0] = "%s: no view %r" % (nd.addr, rep)
                    return False
                if any(a not in ours for _, _, a in view):
                    why[0] = "%s: names another address" % nd.addr
                    return False
                views[nd.addr] = view
            if not views:
                why[0] = "no node runs"
                return False
            first = next(iter(views.values()))
            differ = [a for a, v in views.items() if v != first]
            if differ:
                why[0] = "views differ: %s" % "; ".join(
                    "%s leads %s" % (a, summarize(v))
                    for a, v in views.items())
                return False
            if balanced:
                led = {a for _, _, a in first}
                idle = [nd.addr for nd in self.nodes if nd.addr not in led]
                if idle:
                    why[0] = "%s lead nothing: %s" % (idle, summarize(first))
                    return False
            return True
        ok, waited = wait_until(ready, timeout, 0.1)
        assert ok, "cluster not serving after %.1fs (%s)\n%s" % (
            waited, why[0], self.logs())
        return waited

    def diagnose(self, keys=()):
        """Text for a liveness finding: per node its CLUSTER SLOTS view
        (slots per leader), its partitions stuck 'stepped' (PK.REPL
        STEPPED: led in its map, but a follower was fenced at a newer
        epoch), its followers' promise states (INFO replication), and for
        each key its slot, the leader each node names and a GET's reply."""
        out = []
        for nd in self.all_nodes():
            if not nd.alive():
                rc = nd.proc.returncode if nd.proc is not None else None
                out.append("%s: NOT RUNNING (pid %s exit status %s); last "
                           "lines of its output: %s" % (
                               nd.addr, nd.pid, rc, " | ".join(
                                   nd.logs(1500).splitlines()[-12:])))
                continue
            if nd.stopped:
                out.append("%s: stopped (SIGSTOP)" % nd.addr)
                continue
            sl = self.slots(nd)
            view = summarize(sl) if isinstance(sl, list) else sl
            r = nd.client(2.0)
            try:
                r.execute_command("PK.AUTH", self.secret)
                st = r.execute_command("PK.REPL", "STEPPED")
            except Exception as e:
                st = e
            finally:
                r.close()
            stepped = ("%d (%s%s)" % (len(st), st[:8],
                                      "..." if len(st) > 8 else "")
                       if isinstance(st, list) else repr(st))
            info = nd.call("INFO", "replication")
            slaves = ", ".join("%s:%s %s" % (v["ip"], v["port"], v["state"])
                               for k, v in sorted(info.items())
                               if k.startswith("slave")) \
                if isinstance(info, dict) else repr(info)
            nodes = nd.call("CLUSTER", "NODES")
            epoch = max((int(l.split()[6]) for l in nodes.splitlines()
                         if l.strip()), default=None) \
                if isinstance(nodes, str) else None
            out.append("%s: map epoch %s, leads per its map %s; stepped %s; "
                       "followers %s" % (nd.addr, epoch, view, stepped,
                                         slaves or "none"))
        for k in keys:
            names = {nd.port: self.owner(self.slots(nd), k)
                     for nd in self.all_nodes()
                     if nd.alive() and not nd.stopped}
            ldr = next((p for p in names.values() if p), None)
            rep = self.by_port(ldr).call("GET", k) if ldr else None
            out.append("key %s slot %d: leader per node %s; GET at %s: %r"
                       % (k, keyslot(k), names, ldr, rep))
        return "\n".join(out)

    def logs(self):
        return "\n".join("--- node %d %s ---\n%s" % (nd.index, nd.addr,
                                                    nd.logs(1500))
                         for nd in self.all_nodes())


# ---------------------------------------------------------------------------
# clients
# ---------------------------------------------------------------------------

class HostSlotClient(SlotClient):
    """replfault.SlotClient with each node reached at its own address: the
    slot table and MOVED name ports, and hosts ({port: host}, or a
    function returning it, asked again for a port it lacks: a node added
    later) maps a port to its node's address."""

    def __init__(self, hosts, timeout=1.5):
        self._hosts = hosts if callable(hosts) else (lambda: dict(hosts))
        self.hosts = self._hosts()
        super().__init__(sorted(self.hosts), timeout=timeout)

    def conn(self, port):
        c = self.conns.get(port)
        if c is None:
            if port not in self.hosts:
                self.hosts = self._hosts()
            c = redis.Redis(host=self.hosts.get(port, "127.0.0.1"), port=port,
                            socket_timeout=self.timeout,
                            socket_connect_timeout=1.0,
                            decode_responses=True, retry_on_timeout=False)
            self.conns[port] = c
        return c


def run_worker(history, make_client, keys, stop, client_id, counts, rng,
               write_ratio=0.5, errors=None, acked_by=None):
    """replfault.run_worker over a HostSlotClient: random SET (unique
    values) and GET until stop is set, every op in history.  errors (a
    dict) counts the replies that were not OK by their first word;
    acked_by (a dict) maps the history index of every acknowledged SET to
    the port of the node that acknowledged it."""
    cl = make_client()
    seq = 0
    try:
        while not stop.is_set():
            key = rng.choice(keys)
            if rng.random() < write_ratio:
                seq += 1
                value = "c%d-%d" % (client_id, seq)
                h = history.invoke(client_id, "set", key, value)
                st, rep = cl.call("SET", key, value)
                if st == "ok" and rep is True:
                    history.ok(h)
                    counts["acked"] += 1
                    if acked_by is not None:
                        acked_by[h] = cl.last_port
                else:
                    history.info(h)
                    counts["unknown" if st == "unknown" else "errors"] += 1
            else:
                h = history.invoke(client_id, "get", key)
                st, rep = cl.call("GET", key)
                if st == "ok":
                    history.ok(h, rep)
                    counts["reads"] += 1
                else:
                    history.fail(h)
            if st != "ok":
                if errors is not None:
                    word = "%s %s" % (st, str(rep).split(" ")[0][:40])
                    errors[word] = errors.get(word, 0) + 1
                time.sleep(0.02)
    finally:
        cl.close()


class Workers:
    """n worker threads over keys, one shared History (as
    replfault.Workers, on a HostSlotClient)."""

    def __init__(self, history, hosts_fn, keys, n=4, seed=1, timeout=1.5):
        self.stop = threading.Event()
        self.counts = [counts_dict() for _ in range(n)]
        self.errors = [{} for _ in range(n)]
        self.acked_by = {}  # history index of an acked SET -> port

        def make():
            return HostSlotClient(hosts_fn, timeout=timeout)
        self.threads = [
            threading.Thread(target=run_worker, daemon=True,
                             args=(history, make, keys, self.stop, i,
                                   self.counts[i], random.Random(seed + i)),
                             kwargs={"errors": self.errors[i],
                                     "acked_by": self.acked_by})
            for i in range(n)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self, timeout=30.0):
        self.stop.set()
        for t in self.threads:
            t.join(timeout)
        total = counts_dict()
        for c in self.counts:
            for k in total:
                total[k] += c[k]
        return total

    def error_kinds(self):
        """{"unknown Timeout" / "error TRYAGAIN" ...: count} over all
        workers."""
        out = {}
        for e in self.errors:
            for k, v in e.items():
                out[k] = out.get(k, 0) + v
        return out


def wait_all_served(hosts, keys, timeout=30.0, op_timeout=1.0):
    """Until a GET of every key succeeds (replfault.wait_all_served; the
    deadline is kept also when GETs time out)."""
    deadline = time.monotonic() + timeout
    cl = HostSlotClient(hosts, timeout=op_timeout)
    res = {}
    try:
        while time.monotonic() < deadline:
            for k in keys:
                if res.get(k, ("",))[0] != "ok" and \
                        time.monotonic() < deadline:
                    res[k] = cl.call("GET", k)
            if all(res.get(k, ("",))[0] == "ok" for k in keys):
                return True
            time.sleep(0.1)
            cl.refresh()
        print("not served:", {k: (v, keyslot(k), cl.port_of(k))
                              for k, v in res.items() if v[0] != "ok"})
        return False
    finally:
        cl.close()


def final_reads(history, hosts, keys, client_id=1000, op_timeout=1.0,
                timeout=15.0):
    """Reads every key once more into the history; returns {key: value}
    (replfault.final_reads).  A GET that fails (a leadership moving back,
    a timeout) is recorded as failed and tried again, until timeout: a key
    missing from the result could not be checked for lost writes."""
    cl = HostSlotClient(hosts, timeout=op_timeout)
    out = {}
    deadline = time.monotonic() + timeout
    try:
        while True:
            for k in keys:
                if k in out:
                    continue
                h = history.invoke(client_id, "get", k)
                st, rep = cl.call("GET", k)
                if st == "ok":
                    history.ok(h, rep)
                    out[k] = rep
                else:
                    history.fail(h)
            if len(out) == len(keys) or time.monotonic() >= deadline:
                return out
            time.sleep(0.2)
            cl.refresh()
    finally:
        cl.close()


# ---------------------------------------------------------------------------
# reading a history
# ---------------------------------------------------------------------------

def acked_in(history, keys, t0_ns, t1_ns, op="set"):
    """Ops on keys acknowledged (status ok) with a return in [t0, t1]."""
    keys = set(keys)
    return [o for o in history.ops()
            if o.op == op and o.status == "ok" and o.key in keys
            and o.ret is not None and t0_ns <= o.ret <= t1_ns]


def failed_in(history, keys, t0_ns, t1_ns):
    """Ops on keys called in [t0, t1] that did not succeed: writes of
    unknown outcome and failed reads (not those still running)."""
    keys = set(keys)
    return [o for o in history.ops()
            if o.key in keys and t0_ns <= o.call <= t1_ns
            and o.status in ("info", "fail")]


def first_ack_after(history, keys, t_ns, op="set"):
    """Seconds from t to the first acknowledged op on keys called after t
    (None if none)."""
    keys = set(keys)
    rets = [o.ret for o in history.ops()
            if o.op == op and o.status == "ok" and o.key in keys
            and o.call >= t_ns and o.ret is not None]
    return (min(rets) - t_ns) / 1e9 if rets else None


def now_ns():
    return time.monotonic_ns()
