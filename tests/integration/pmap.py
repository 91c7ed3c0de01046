"""The partition map as PK.MAP returns it (src/core/pk_pmap_codec.c,
format 1), decoded for tests that need the range scheme's bounds and
leaders without going through the CLI.  Only what tests read: nodes'
addresses, per partition its replicas (leader first), bounds and flags,
and the salt table (salted keys: parts, folding, tags); the checksum is not verified (the node does that)."""
import struct

STICKY, MERGING = 0x01, 0x02
SCHEME_RANGE = 2


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, n):
        b = self.buf[self.pos:self.pos + n]
        assert len(b) == n, "map too short"
        self.pos += n
        return b

    def be(self, n):
        return int.from_bytes(self.take(n), "big")

    def vu(self):
        v = 0
        while True:
            b = self.be(1)
            v = v << 7 | (b & 0x7F)
            if not b & 0x80:
                return v

    def s8(self):
        return self.take(self.be(1)).decode()


def decode(buf):
    """{"epoch", "scheme", "nodes": [addr], "parts": [{"id", "replicas",
    "leader_epoch", "lo", "hi", "flags", "retired"}], "salts": {key: {"parts", "folding",
    "tags"}}}"""
    r = _Reader(buf)
    assert r.take(4) == b"PKMP" and r.be(2) == 1
    flags = r.be(2)
    epoch = r.be(8)
    scheme, _hash, _repl, _res = r.take(4)
    nnodes, nparts = r.be(4), r.be(4)
    nodes = []
    for _ in range(nnodes):
        r.be(1)
        struct.unpack(">d", r.take(8))
        r.s8()
        nodes.append(r.s8())
        r.s8()
    parts = []
    for p in range(nparts):
        f = r.be(1)
        nrep, nlrn = f & 7, (f >> 3) & 7
        if f & 0x40:
            r.take(5)
        lepoch = r.vu()
        reps = [r.be(2) for _ in range(nrep)]
        [r.be(2) for _ in range(nlrn)]
        lo = hi = None
        pflags = 0
        if scheme == SCHEME_RANGE:
            lo = r.take(r.vu())
            if f & 0x80:
                hi = r.take(r.vu())
            if flags & 1:
                pflags = r.be(1)
        parts.append({"id": p, "replicas": reps, "leader_epoch": lepoch,
                      "lo": lo, "hi": hi,
                      "flags": pflags, "retired": hi is not None and lo == hi})
    salts = {}
    if flags & 2:
        for _ in range(r.vu()):
            key = r.take(r.vu())
            n, state = r.be(1), r.be(1)
            salts[key] = {"parts": n, "folding": state == 1,
                          "tags": [r.vu() for _ in range(n - 1)]}
    return {"epoch": epoch, "scheme": scheme, "nodes": nodes, "parts": parts,
            "salts": salts}


def ranges(m):
    """The live ranges in key order: [(lo, hi or None, leader addr)]."""
    out = [(p["lo"], p["hi"],
            m["nodes"][p["replicas"][0]] if p["replicas"] else None)
           for p in m["parts"] if not p["retired"]]
    return sorted(out, key=lambda x: x[0])


def owner(rs, key):
    """The leader address of the range holding key (bytes) in ranges()."""
    for lo, hi, addr in rs:
        if lo <= key and (hi is None or key < hi):
            return addr
    return None
