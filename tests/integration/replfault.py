"""Helpers for the replication and fault tests: a small cluster-aware
client that records every operation in a lincheck.History, node PIDs by
port, and the kill / stop schedule.

The client follows -MOVED (the command did not run) and nothing else: any
other error, a timeout or a dropped connection leaves a write's outcome
unknown (History.info) and a read failed (History.fail), so the histories
say exactly what the cluster acknowledged.
"""
import os
import random
import signal
import socket
import threading
import time

import redis

from cluster import keyslot


class SlotClient:
    """One connection per node, the slot table from CLUSTER SLOTS."""

    def __init__(self, ports, timeout=3.0):
        self.ports = list(ports)
        self.timeout = timeout
        self.owner = {}
        self.conns = {}
        self.refresh()

    def conn(self, port):
        c = self.conns.get(port)
        if c is None:
            c = redis.Redis(port=port, socket_timeout=self.timeout,
                            socket_connect_timeout=1.0, decode_responses=True,
                            retry_on_timeout=False)
            self.conns[port] = c
        return c

    def drop(self, port):
        c = self.conns.pop(port, None)
        if c is not None:
            c.close()

    def refresh(self):
        for p in random.sample(self.ports, len(self.ports)):
            try:
                slots = self.conn(p).execute_command("CLUSTER", "SLOTS")
            except Exception:
                self.drop(p)
                continue
            for start, end, master, *_ in slots:
                for s in range(start, end + 1):
                    self.owner[s] = master[1]
            return True
        return False

    def port_of(self, key):
        p = self.owner.get(keyslot(key))
        return p if p is not None else random.choice(self.ports)

    def call(self, *args):
        """Runs args on the key's owner.  Returns ("ok", reply),
        ("error", text) or ("unknown", text); last_port is the node whose
        reply it returns (after any MOVED): who acknowledged a write."""
        key = args[1]
        port = self.port_of(key)
        for _ in range(6):
            self.last_port = port
            try:
                return "ok", self.conn(port).execute_command(*args)
            except redis.exceptions.ResponseError as e:
                msg = str(e)
                if msg.startswith("MOVED"):
                    port = int(msg.rsplit(":", 1)[1])
                    self.owner[keyslot(key)] = port
                    continue
                return "error", msg
            except (redis.exceptions.ConnectionError,
                    redis.exceptions.TimeoutError, socket.error) as e:
                self.drop(port)
                self.refresh()
                return "unknown", str(e)
        return "error", "too many redirects"

    def close(self):
        for p in list(self.conns):
            self.drop(p)


def run_worker(history, ports, keys, stop, client_id, counts, rng,
               write_ratio=0.5, pause=0.0):
    """Random SET (unique values) and GET on keys until stop is set."""
    cl = SlotClient(ports)
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
                time.sleep(0.02)
            elif pause:
                time.sleep(pause)
    finally:
        cl.close()


def node_pid(port, timeout=2.0):
    """process_id from INFO server of the node on port, or None."""
    try:
        r = redis.Redis(port=port, socket_timeout=timeout,
                        socket_connect_timeout=timeout)
        try:
            return int(r.info("server")["process_id"])
        finally:
            r.close()
    except Exception:
        return None


def is_ours(pid, marker):
    """The PID still runs a partkv whose command line names marker."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def signal_node(pid, sig, marker):
    if pid and is_ours(pid, marker):
        try:
            os.kill(pid, sig)
            return True
        except ProcessLookupError:
            pass
    return False


def counts_dict():
    return {"acked": 0, "unknown": 0, "errors": 0, "reads": 0}


class Workers:
    """n worker threads over keys, with one shared History."""

    def __init__(self, history, ports, keys, n=4, seed=1, **kw):
        self.stop = threading.Event()
        self.counts = [counts_dict() for _ in range(n)]
        self.threads = [
            threading.Thread(target=run_worker, daemon=True,
                             args=(history, ports, keys, self.stop, i,
                                   self.counts[i], random.Random(seed + i)),
                             kwargs=kw)
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


def wait_all_served(ports, keys, timeout=30.0):
    """Until a GET of every key succeeds through a SlotClient."""
    deadline = time.monotonic() + timeout
    cl = SlotClient(ports)
    try:
        while time.monotonic() < deadline:
            res = {k: cl.call("GET", k) for k in keys}
            if all(st == "ok" for st, _ in res.values()):
                return True
            time.sleep(0.1)
            cl.refresh()
        print("not served:", {k: (v, keyslot(k), cl.port_of(k))
                              for k, v in res.items() if v[0] != "ok"})
        return False
    finally:
        cl.close()


def final_reads(history, ports, keys, client_id=1000):
    """Reads every key once more into the history; returns {key: value}."""
    cl = SlotClient(ports)
    out = {}
    try:
        for k in keys:
            h = history.invoke(client_id, "get", k)
            st, rep = cl.call("GET", k)
            if st == "ok":
                history.ok(h, rep)
                out[k] = rep
            else:
                history.fail(h)
    finally:
        cl.close()
    return out


def lost_writes(history, finals):
    """Acknowledged writes that the final read cannot explain: the key's
    final value is neither the value of its last acknowledged write nor
    that of a write that may have taken effect after it -- one that was
    still running when it began, or one whose outcome is unknown (which may
    take effect at any time after its call).  Also values nobody wrote.
    Returns a list of text lines."""
    bad = []
    by_key = {}
    for op in history.ops():
        if op.op == "set":
            by_key.setdefault(op.key, []).append(op)
    for key, final in finals.items():
        writes = by_key.get(key, [])
        written = {w.value for w in writes}
        if final is not None and final not in written:
            bad.append("%s: final value %r was never written" % (key, final))
            continue
        acked = [w for w in writes if w.status == "ok"]
        if not acked:
            continue
        last = max(acked, key=lambda w: w.ret)
        later = {w.value for w in writes
                 if w is not last and (w.ret is None or w.ret > last.call)}
        if final != last.value and final not in later:
            bad.append("%s: acknowledged %r lost (final %r)"
                       % (key, last.value, final))
    return bad
