"""Failover time: from a leader's death to the first acknowledged write to
one of its partitions, p50 and p99 over FAILOVER_ROUNDS rounds.

Each round picks a node that leads partitions (not node 0, which hosts
the embedded coordinator), a key it leads, and either
  stop: SIGSTOP (the node is dead to everyone; the controller fails its
        partitions over once its 1.5 s lease runs out), SIGCONT afterwards;
  kill: kill -9 (`cluster up` restarts it after 200 ms; whichever comes
        first, the restart or a failover, serves the key again).
A writer with a 0.2 s socket timeout retries SET on the key (following
MOVED) every 10 ms; the time is from the signal to its first OK.  Between
rounds the node is back and has its share of leaderships again.

Environment: PARTKV (binary), FAILOVER_ROUNDS (20), FAILOVER_KIND
(stop|kill|both, default both).  Prints only.
"""
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from cluster import Cluster, wait_until  # noqa: E402
from replfault import SlotClient, node_pid, signal_node  # noqa: E402


def leaders(c):
    try:
        with c.nodes[0].raw() as raw:
            slots = raw.execute("CLUSTER", "SLOTS")
    except Exception:
        return {}
    out = {}
    for start, _, master, *_ in slots:
        out.setdefault(master[1], start)
    return out


def key_in(c, port):
    from cluster import keyslot
    for i in range(200000):
        k = "fo%d" % i
        if c.node_for_slot(keyslot(k)).port == port:
            return k
    return None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    rounds = int(os.environ.get("FAILOVER_ROUNDS", "20"))
    kind = os.environ.get("FAILOVER_KIND", "both")
    if rounds < 1 or kind not in ("stop", "kill", "both"):
        print("failover: FAILOVER_ROUNDS >= 1, FAILOVER_KIND stop|kill|both",
              file=sys.stderr)
        return 2
    kinds = ["stop", "kill"] if kind == "both" else [kind]
    root = tempfile.mkdtemp(prefix="partkv-failover-")
    c = Cluster(nodes=3, replicas=3, dir=root, extra=["--acks", "quorum"])
    c.start()
    c.wait_serving()
    cl = SlotClient([n.port for n in c.nodes], timeout=0.2)
    times = {k: [] for k in kinds}
    rng = random.Random(1)
    try:
        for i in range(rounds * len(kinds)):
            k = kinds[i % len(kinds)]
            ok, _ = wait_until(lambda: len(leaders(c)) == 3, 30.0, 0.2)
            cands = [n for n in c.nodes[1:] if n.port in leaders(c)]
            if not ok or not cands:
                print("leaders not balanced; stopping early")
                break
            n = rng.choice(cands)
            key = key_in(c, n.port)
            pid = node_pid(n.port)
            sig = signal.SIGSTOP if k == "stop" else signal.SIGKILL
            t0 = time.monotonic()
            signal_node(pid, sig, c.dir)
            took = None
            while time.monotonic() - t0 < 15:
                st, rep = cl.call("SET", key, "r%d" % i)
                if st == "ok" and rep is True:
                    took = time.monotonic() - t0
                    break
                time.sleep(0.01)
                cl.refresh()
            if k == "stop":
                signal_node(pid, signal.SIGCONT, c.dir)
            times[k].append(took if took is not None else float("inf"))
            print("round %2d %-4s port %d: %.3f s" % (i, k, n.port,
                                                     times[k][-1]))
            sys.stdout.flush()
    finally:
        cl.close()
        c.stop()
        c.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    for k, xs in times.items():
        if xs:
            print("%s: %d rounds, p50 %.2f s, p99 %.2f s, max %.2f s"
                  % ({"stop": "SIGSTOP (failover)",
                      "kill": "kill -9 (restart or failover)"}[k], len(xs),
                     statistics.median(xs), pct(xs, 99), max(xs)))
    print("target: writes to a killed leader's partitions succeed again "
          "within 3 s (p99)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
