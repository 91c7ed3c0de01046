#!/usr/bin/python3
"""bench/index-check.py: FT.SEARCH against a brute-force model at scale.

Starts a 3-node cluster (--replicas 3) in a temp dir, creates an index of
three fields, writes N hashes (default 1,000,000) to their leaders, all
pipelined at once (half before FT.CREATE, built in the background, half
after; what a leader that moved meanwhile refuses goes again through a
cluster client), then runs Q random queries (default 1,000) -- tags, numeric ranges
with exclusive and infinite bounds, words, AND, OR, NOT -- each from a
random node, and compares the total and a sorted page with a model that
evaluates the same query over the data written, by set algebra.  Prints
the mismatches (none expected) and exits 1 if there are any.

With --global the index is GLOBAL (partitioned by value, fed from the
outboxes): every query is asked with CONSISTENT, and the nodes each query
asked are counted from INFO search on the nodes.

    bench/index-check.py [-n N] [-q Q] [--global] [--partkv PATH] [--seed S]
"""
import argparse
import bisect
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from cluster import keyslot  # noqa: E402  (CRC16 slots, as clients hash)

TAGS = ["t%02d" % i for i in range(50)]
WORDS = ["w%03d" % i for i in range(1000)]


def doc(rng, i):
    return {"tag": ",".join(rng.sample(TAGS, rng.choice((1, 1, 2)))),
            "n": str(rng.randrange(10 ** 7)),
            "body": " ".join(rng.choice(WORDS) for _ in range(3))}


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Model:
    def __init__(self):
        self.tag, self.word, self.nums, self.n = {}, {}, [], {}

    def add(self, i, d):
        self.n[i] = int(d["n"])
        for t in d["tag"].split(","):
            self.tag.setdefault(t, set()).add(i)
        for w in d["body"].split():
            self.word.setdefault(w, set()).add(i)
        self.nums.append((int(d["n"]), i))

    def freeze(self):
        self.nums.sort()
        self.keys = [n for n, _ in self.nums]

    def rng_set(self, lo, hi, lx, hx):
        a = bisect.bisect_right(self.keys, lo) if lx else \
            bisect.bisect_left(self.keys, lo)
        b = bisect.bisect_left(self.keys, hi) if hx else \
            bisect.bisect_right(self.keys, hi)
        return {i for _, i in self.nums[a:b]}


def leaf(rng, m):
    """A random leaf: (query text, model set)."""
    k = rng.randrange(3)
    if k == 0:
        ts = rng.sample(TAGS, rng.choice((1, 2)))
        s = set().union(*(m.tag.get(t, set()) for t in ts))
        return "@tag:{%s}" % "|".join(ts), s
    if k == 1:
        lo = rng.randrange(10 ** 7)
        hi = lo + rng.choice((1000, 100000, 3000000))
        lx, hx = rng.random() < 0.5, rng.random() < 0.5
        los = "-inf" if rng.random() < 0.1 else ("(" if lx else "") + str(lo)
        his = "+inf" if rng.random() < 0.1 else ("(" if hx else "") + str(hi)
        s = m.rng_set(float("-inf") if los == "-inf" else lo,
                      float("inf") if his == "+inf" else hi,
                      lx and los != "-inf", hx and his != "+inf")
        return "@n:[%s %s]" % (los, his), s
    w = rng.choice(WORDS)
    return "@body:%s" % w, m.word.get(w, set())


def query(rng, m):
    a, sa = leaf(rng, m)
    op = rng.randrange(4)
    if op == 0:
        return a, sa
    b, sb = leaf(rng, m)
    if op == 1:
        return "%s %s" % (a, b), sa & sb
    if op == 2:
        return "(%s) | (%s)" % (a, b), sa | sb
    return "%s -%s" % (a, b), sa - sb


def start_cluster(partkv, work):
    out = open(os.path.join(work, "cluster.out"), "w")
    p = subprocess.Popen([partkv, "cluster", "up", "--nodes", "3",
                          "--base-port", "0", "--dir",
                          os.path.join(work, "data"), "--replicas", "3"],
                         stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True)
    for _ in range(600):
        text = open(os.path.join(work, "cluster.out")).read()
        if "\nready" in text:
            ports = [int(l.split()[2].split(":")[1]) for l in text.splitlines()
                     if l.startswith("  node ")]
            return p, ports
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit("cluster did not start:\n" + open(
        os.path.join(work, "cluster.out")).read())


def pipe(port, cmds):
    """Sends cmds to port at once (as redis-cli --pipe does) and reads a
    reply each: the indexes of those answered with an error, and the
    errors' texts."""
    s = socket.create_connection(("127.0.0.1", port))
    t = threading.Thread(target=s.sendall, args=(b"".join(cmds),))
    t.start()
    f = s.makefile("rb")
    bad, texts = [], {}
    for i in range(len(cmds)):
        line = f.readline()
        if line.startswith(b"-"):
            bad.append(i)
            texts[line[:60]] = texts.get(line[:60], 0) + 1
        elif line.startswith(b"$"):  # not HSET's, but read it whole
            f.read(int(line[1:]) + 2)
    t.join()
    s.close()
    return bad, texts


def load(ports, rng, lo, hi, m):
    r = redis.Redis(port=ports[0])
    owner = {}
    for a, b, master, *_ in r.execute_command("CLUSTER SLOTS"):
        for s in range(a, b + 1):
            owner[s] = master[1]
    by_port, args = {}, {}
    for i in range(lo, hi):
        d = doc(rng, i)
        m.add(i, d)
        key = "doc:%d" % i
        a = ("HSET", key, "tag", d["tag"], "n", d["n"], "body", d["body"])
        port = owner[keyslot(key.encode())]
        by_port.setdefault(port, []).append(resp(*a))
        args.setdefault(port, []).append(a)
    # A leader that changed during the load answers MOVED (or TRYAGAIN):
    # those writes go again through a cluster client, which follows.
    retry = []
    for port, cmds in by_port.items():
        bad, texts = pipe(port, cmds)
        if bad:
            print("load to %d: %d errors %r; sent again" % (port, len(bad),
                                                           texts))
        retry += [args[port][i] for i in bad]
    if retry:
        rc = redis.RedisCluster(host="127.0.0.1", port=ports[0])
        for a in retry:
            rc.execute_command(*a)
        rc.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("-q", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--global", dest="glob", action="store_true")
    ap.add_argument("--partkv", default=os.path.join(ROOT, "build", "partkv"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="partkv-index-check-")
    proc = None
    try:
        proc, ports = start_cluster(a.partkv, work)
        time.sleep(5)  # leaders settle (a load sent to an old one: MOVED)
        m = Model()
        t0 = time.time()
        load(ports, rng, 0, a.n // 2, m)
        r0 = redis.Redis(port=ports[0], decode_responses=True)
        r0.execute_command("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1",
                           "doc:", *(["GLOBAL"] if a.glob else []), "SCHEMA",
                           "tag", "TAG", "n", "NUMERIC", "SORTABLE", "body",
                           "TEXT")
        load(ports, rng, a.n // 2, a.n, m)
        print("loaded %d hashes in %.1f s" % (a.n, time.time() - t0))
        m.freeze()
        t0 = time.time()
        while True:
            info = r0.execute_command("FT.INFO", "idx")
            d = dict(zip(info[::2], info[1::2]))
            if float(d["percent_indexed"]) == 1.0:
                break
            time.sleep(0.5)
        print("built: %s documents, %.1f s after the load"
              % (d["num_docs"], time.time() - t0))
        while a.glob and int(d["global_lag_records"]) > 0:
            time.sleep(0.5)
            info = r0.execute_command("FT.INFO", "idx")
            d = dict(zip(info[::2], info[1::2]))
        if a.glob:
            print("global entries applied %.1f s after the load"
                  % (time.time() - t0))
        clients = [redis.Redis(port=p, decode_responses=True) for p in ports]
        asked0 = sum(c.info("search")["search_query_nodes"] for c in clients)
        extra = ["CONSISTENT"] if a.glob else []
        bad, lat = 0, []
        for _ in range(a.q):
            q, want = query(rng, m)
            c = rng.choice(clients)
            t0 = time.perf_counter()
            res = c.execute_command("FT.SEARCH", "idx", q, "NOCONTENT",
                                    "SORTBY", "n", "ASC", "LIMIT", "0", "10",
                                    *extra)
            lat.append(time.perf_counter() - t0)
            exp = ["doc:%d" % i for i in sorted(
                want, key=lambda i: (m.n[i], "doc:%d" % i))[:10]]
            if res[0] != len(want) or res[1:] != exp:
                bad += 1
                print("MISMATCH %r: total %d want %d, page %r want %r"
                      % (q, res[0], len(want), res[1:4], exp[:3]))
        lat.sort()
        asked = sum(c.info("search")["search_query_nodes"]
                    for c in clients) - asked0
        print("%d queries, %d mismatches; latency p50 %.1f ms, p99 %.1f ms; "
              "%.2f nodes asked per query%s"
              % (a.q, bad, lat[len(lat) // 2] * 1e3,
                 lat[int(len(lat) * 0.99)] * 1e3, asked / a.q,
                 " (CONSISTENT's rounds included)" if a.glob else ""))
        return 1 if bad else 0
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
