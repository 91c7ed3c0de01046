"""index-lag.py: how far a global index trails its writes, under a paced
write load (bench/index.sh runs it; needs python3-redis).

Three processes for SECONDS each, so that none waits on another's
interpreter lock:

  load    open-loop HSETs of doc:<random> (the shape of index.sh's
          redis-benchmark load) at RATE per second in all, spread over
          CONNS connections per node; every 5 ms it sends what is due by
          then, so the offered rate holds whatever the replies do;
  probe   from 1 s in until 1 s before the end: HSET doc:probe<i> tag
          <unique value>, the time of the acknowledgement, then FT.SEARCH
          idx @tag:{<value>} NOCONTENT (no CONSISTENT) every 2 ms, on
          another node, until the document is there; lag = the reply that
          shows it - the acknowledgement (so it includes one query's
          round trip); then 0-10 ms of rest and the next probe;
  sample  FT.INFO idx about every SAMPLE_MS (each interval drawn from
          0.5-1.5 times it) over the same span: global_lag_ms (the age of
          the oldest outbox record, the largest over the nodes) and
          global_lag_records.  FT.INFO reads every entry of the index on
          every node, so it is not free: keep SAMPLE_MS well above its
          latency.

Prints one line on stdout:
  rate_target rate_acked issued errors probes lag_p50 lag_p99 lag_max
  timeouts info_p50 info_p99 info_max records_max
(rate_acked: the HSETs acknowledged within the SECONDS, per second; "-"
for a quantile with no samples) and detail on stderr.  Exits 1 when a
process failed (its error on stderr).

  /usr/bin/python3 bench/index-lag.py --ports P0,P1,P2 --rate 8000 \
      [--seconds 15] [--conns 16] [--sample-ms 1000] [--probes 0|1]
"""
import argparse
import multiprocessing as mp
import os
import random
import selectors
import signal
import socket
import sys
import time

import redis

TICK = 0.005
POLL = 0.002
PROBE_TIMEOUT = 30.0


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def pct(v, p):
    """The p-quantile of v (p = 1: the largest), None when v is empty."""
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def fmt(x, digits=1):
    return "-" if x is None else "%.*f" % (digits, x)


class Conn:
    """A non-blocking connection that counts reply lines (an HSET's reply
    is one line: ":N" or "-ERR ...")."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.setblocking(False)
        self.out = bytearray()
        self.carry = b""
        self.issued = self.replies = self.errors = 0
        self.first_error = None

    def flush(self):
        while self.out:
            try:
                n = self.s.send(self.out)
            except BlockingIOError:
                return
            del self.out[:n]

    def take(self):
        try:
            data = self.s.recv(1 << 20)
        except BlockingIOError:
            return
        if not data:
            raise EOFError("a node closed the connection")
        lines = (self.carry + data).split(b"\r\n")
        self.carry = lines.pop()
        self.replies += len(lines)
        for ln in lines:
            if ln.startswith(b"-"):
                self.errors += 1
                if self.first_error is None:
                    self.first_error = ln.decode(errors="replace")


def run_load(ports, rate, seconds, conns, run_id, t0, res):
    rng = random.Random("load" + run_id)
    cs = [Conn(p) for p in ports for _ in range(conns)]
    sel = selectors.DefaultSelector()
    for c in cs:
        sel.register(c.s, selectors.EVENT_READ, c)

    def r12():
        return "%012d" % rng.randrange(1000000)

    def pump(timeout):
        for c in cs:
            c.flush()
        for key, _ in sel.select(timeout):
            key.data.take()

    while time.monotonic() < t0:
        time.sleep(0.001)
    issued, k, nxt = 0, 0, t0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        due = int(rate * (now - t0)) - issued
        for _ in range(due):
            c = cs[k % len(cs)]
            k += 1
            c.out += enc("HSET", "doc:" + r12(), "tag", "t" + r12(), "n",
                         r12(), "body", "w%s common" % r12())
            c.issued += 1
        issued += max(due, 0)
        # Replies until the next tick (a reply must not end the wait).
        nxt = max(nxt + TICK, now)
        while True:
            left = nxt - time.monotonic()
            if left <= 0:
                break
            pump(left)
    t_end = time.monotonic()
    acked_in_time = sum(c.replies for c in cs)
    # The replies still owed: at most 10 s more.
    while sum(c.replies for c in cs) < issued and time.monotonic() < t_end + 10:
        pump(0.01)
    res.put(("load", {
        "issued": issued, "acked_in_time": acked_in_time,
        "acked": sum(c.replies for c in cs),
        "errors": sum(c.errors for c in cs),
        "first_error": next((c.first_error for c in cs if c.first_error), None),
        "elapsed": t_end - t0, "drain": time.monotonic() - t_end}))


def run_probe(ports, seconds, run_id, t0, res):
    rs = [redis.Redis(port=p) for p in ports]
    rng = random.Random(run_id)
    lags, timeouts, i = [], 0, 0
    start, end = t0 + 1.0, t0 + seconds - 1.0
    while time.monotonic() < start:
        time.sleep(0.001)
    while time.monotonic() < end:
        v = "probe%sx%d" % (run_id, i)
        w, q = rs[i % len(rs)], rs[(i + 1) % len(rs)]
        w.execute_command("HSET", "doc:" + v, "tag", v, "n", i,
                          "body", "probe")
        ta = time.perf_counter()
        polls = 0
        while True:
            r = q.execute_command("FT.SEARCH", "idx", "@tag:{%s}" % v,
                                  "NOCONTENT")
            tn = time.perf_counter()
            if r[0] >= 1:
                lags.append((tn - ta) * 1e3)
                break
            if tn - ta > PROBE_TIMEOUT:
                timeouts += 1
                break
            polls += 1
            time.sleep(max(0.0, ta + polls * POLL - time.perf_counter()))
        i += 1
        time.sleep(rng.uniform(0, 0.01))
    res.put(("probe", {"lags": lags, "timeouts": timeouts}))


def run_sample(port, seconds, step, run_id, t0, res):
    r = redis.Redis(port=port)
    ms, recs = [], []
    if step <= 0:
        res.put(("sample", {"ms": ms, "records": recs}))
        return
    # Intervals of step * U(0.5, 1.5): a fixed one would lock onto the
    # nodes' own once-a-second work (the everysec flush) and see the same
    # moment of it every time.
    rng = random.Random("sample" + run_id)
    nxt, end = t0 + 1.0, t0 + seconds - 1.0
    while True:
        time.sleep(max(0.0, nxt - time.monotonic()))
        if time.monotonic() >= end:
            break
        info = r.execute_command("FT.INFO", "idx")
        d = {info[j].decode() if isinstance(info[j], bytes) else info[j]:
             info[j + 1] for j in range(0, len(info) - 1, 2)}
        ms.append(int(d["global_lag_ms"]))
        recs.append(int(d["global_lag_records"]))
        nxt = max(nxt + step * rng.uniform(0.5, 1.5), time.monotonic())
    res.put(("sample", {"ms": ms, "records": recs}))


def child(fn, res, *args):
    try:
        fn(*args, res)
    except Exception as e:  # reported by the parent
        res.put(("error", "%s: %s: %s" % (fn.__name__, type(e).__name__, e)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", required=True, help="node ports, comma-separated")
    ap.add_argument("--rate", type=float, required=True, help="HSETs per second")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--conns", type=int, default=16, help="per node")
    ap.add_argument("--sample-ms", type=float, default=1000.0,
                    help="FT.INFO every so often (0: never)")
    ap.add_argument("--probes", type=int, default=1, help="0: no probe")
    ap.add_argument("--run", default="0", help="a tag for the probe keys")
    ap.add_argument("--tag", default="", help="ignored (for stop-by-pattern)")
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(",")]
    if a.seconds < 4:
        ap.error("--seconds must be at least 4 (1 s either side unsampled)")
    res = mp.Queue()
    t0 = time.monotonic() + 0.5  # everyone connected by then
    procs = [
        mp.Process(target=child, args=(run_load, res, ports, a.rate,
                                       a.seconds, a.conns, a.run, t0)),
        mp.Process(target=child, args=(run_probe, res, ports,
                                       a.seconds if a.probes else 0,
                                       a.run, t0)),
        mp.Process(target=child, args=(run_sample, res, ports[0], a.seconds,
                                       a.sample_ms / 1e3, a.run, t0)),
    ]

    def on_term(signum, frame):
        for p in procs:
            if p.pid:
                os.kill(p.pid, signal.SIGTERM)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    for p in procs:
        p.start()
    got, failed = {}, False
    for _ in procs:
        kind, val = res.get()
        if kind == "error":
            print("index-lag: " + val, file=sys.stderr)
            failed = True
        else:
            got[kind] = val
    for p in procs:
        p.join()
    if failed:
        sys.exit(1)
    ld, pr, sm = got["load"], got["probe"], got["sample"]
    secs = ld["elapsed"]
    print("index-lag: load %d HSETs issued in %.2f s (%.0f/s, target %.0f/s),"
          " %d acked by the end (%.0f/s), all %d acked %.2f s later,"
          " %d errors%s" % (
              ld["issued"], secs, ld["issued"] / secs, a.rate,
              ld["acked_in_time"], ld["acked_in_time"] / secs, ld["acked"],
              ld["drain"], ld["errors"],
              " (first: %s)" % ld["first_error"] if ld["first_error"] else ""),
          file=sys.stderr)
    lags, ms, recs = pr["lags"], sm["ms"], sm["records"]
    st = [fmt(pct(lags, 0.5)), fmt(pct(lags, 0.99)), fmt(pct(lags, 1.0)),
          fmt(pct(ms, 0.5), 0), fmt(pct(ms, 0.99), 0), fmt(pct(ms, 1.0), 0),
          fmt(pct(recs, 1.0), 0)]
    print("index-lag: %d probes, lag ms p50 %s p99 %s max %s, %d timed out"
          " (> %.0f s); FT.INFO global_lag_ms over %d samples: p50 %s p99 %s"
          " max %s, global_lag_records max %s" % (
              len(lags), st[0], st[1], st[2], pr["timeouts"], PROBE_TIMEOUT,
              len(ms), st[3], st[4], st[5], st[6]), file=sys.stderr)
    print("%.0f %.0f %d %d %d %s %s %s %d %s %s %s %s" % (
        a.rate, ld["acked_in_time"] / secs, ld["issued"], ld["errors"],
        len(lags), st[0], st[1], st[2], pr["timeouts"], st[3], st[4], st[5],
        st[6]))

if __name__ == "__main__":
    main()
