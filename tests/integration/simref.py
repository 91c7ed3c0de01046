"""An independent Python implementation of SEED-EXPERIMENTS.md.

It shares no code with partkv: the test compares `partkv sim reference
--json` with what this module computes from the same definitions, figure
for figure.
"""
import bisect
import hashlib
import math

KEYS = ["P-2026-%06d" % i for i in range(1, 100001)]
RING_NODES = ["inv-bcn", "inv-vlc", "inv-gir", "inv-lle"]


def md5_64(s):
    return int.from_bytes(hashlib.md5(s.encode()).digest()[:8], "big")


HASHES = [md5_64(k) for k in KEYS]


def deviation(counts):
    mean = sum(counts) / len(counts)
    var = sum((c - mean) ** 2 for c in counts) / len(counts)
    return 100.0 * math.sqrt(var) / mean


def moved(a, b):
    return 100.0 * sum(1 for x, y in zip(a, b) if x != y) / len(a)


class Ring:
    def __init__(self, nodes, vnodes, weights=None):
        seen = {}
        for n in nodes:
            w = (weights or {}).get(n, 1.0)
            for i in range(max(1, int(vnodes * w))):
                p = md5_64("%s#%d" % (n, i))
                if p not in seen:
                    seen[p] = n
        self.points = sorted(seen)
        self.owner = [seen[p] for p in self.points]

    def lookup(self, h):
        i = bisect.bisect_right(self.points, h)
        return self.owner[i % len(self.points)]


def counts(owners, nodes):
    return [sum(1 for o in owners if o == n) for n in nodes]


def hrw_top(nodes, key, r):
    scored = sorted(nodes, key=lambda n: -md5_64("%s|%s" % (n, key)))
    return scored[:r]


def reference():
    out = {}
    out["modn"] = []
    for a, b in [(4, 5), (5, 6), (10, 11), (4, 8)]:
        out["modn"].append({"from": a, "to": b, "moved_pct": moved(
            [h % a for h in HASHES], [h % b for h in HASHES])})
    out["ring"] = []
    for v in [1, 10, 150, 500, 1000]:
        ring = Ring(RING_NODES, v)
        c = counts([ring.lookup(h) for h in HASHES], RING_NODES)
        out["ring"].append({"vnodes": v, "points": len(ring.points),
                            "counts": c, "deviation_pct": deviation(c)})
    def owners(ring):
        return [ring.lookup(h) for h in HASHES]

    base = owners(Ring(RING_NODES, 150))
    added = RING_NODES + ["inv-tar"]
    after = owners(Ring(added, 150))
    out["ring_add"] = {"moved_pct": moved(base, after),
                       "counts": counts(after, added)}
    left = [n for n in RING_NODES if n != "inv-vlc"]
    after = owners(Ring(left, 150))
    out["ring_remove"] = {"moved_pct": moved(base, after),
                          "counts": counts(after, left)}
    wn = ["inv-bcn", "inv-vlc", "inv-gir"]
    ring = Ring(wn, 150, {"inv-bcn": 2.0})
    c = counts([ring.lookup(h) for h in HASHES], wn)
    out["weighted"] = {"counts": c, "points": len(ring.points)}
    n5 = ["n%d" % i for i in range(1, 6)]
    n6 = n5 + ["n6"]
    top5 = [hrw_top(n5, k, 3) for k in KEYS]
    top6 = [hrw_top(n6, k, 3) for k in KEYS]
    c = counts([t[0] for t in top5], n5)
    out["rendezvous"] = {
        "counts": c, "deviation_pct": deviation(c),
        "moved_pct": moved([t[0] for t in top5], [t[0] for t in top6]),
        "replica_set_changed_pct": 100.0 * sum(
            1 for a, b in zip(top5, top6) if set(a) != set(b)) / len(KEYS)}
    out["few_keys"] = [{"key": k, "partition": md5_64(k) % 4} for k in
                       ["P-2026-%06d" % i for i in range(123, 127)]]
    return out
