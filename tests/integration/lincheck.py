#!/usr/bin/env python3
"""Linearizability checker for single-key register histories (stdlib only).

History format
--------------
A history is a list of operations ("ops"), each by one client on one key:

  id      int, unique in the history
  client  any JSON value naming the client / connection
  op      "set" (writes `value`), "del" (writes nil) or "get" (reads)
  key     str or bytes
  value   the value a set wrote
  output  the value a get returned; None (JSON null) for nil
  call    time.monotonic_ns() taken before the request was sent
  ret     time.monotonic_ns() taken after the reply arrived; None when the
          outcome is unknown
  status  "ok"      completed, outcome known
          "fail"    definitely did not take effect: dropped by the checker
          "info"    unknown outcome (error / timeout / reset after sending):
                    a write may take effect at any time after `call`, its
                    return time is +infinity (as in Jepsen / Porcupine); a
                    get with unknown outcome says nothing and is dropped
          "pending" invoked, never completed: treated as "info"

Values compare as Redis bulk strings: str is UTF-8 encoded, int / float
become their decimal text, bytes are kept.  On disk (History.save / load,
the CLI) a history is JSON lines, one op per line with the fields above;
bytes values / keys are written {"b": text} (valid UTF-8) or {"hex": ...}.
Blank lines and lines starting with '#' are ignored.

Command line: lincheck.py HISTORY.jsonl [--initial V] [--timeout S] prints
a summary; exit status 0 linearizable, 1 violation, 2 bad usage or input,
3 unknown (search budget exhausted).

Algorithm
---------
The history is split by key (linearizability is compositional, so each key
is an independent register) and each key is searched with Wing & Gong's
algorithm as improved by Lowe and Porcupine: call and return events are
sorted by time (a call before a return at equal times, i.e. touching
intervals count as concurrent) into a doubly linked list; an op may be
linearized next iff its call entry precedes the first remaining return
entry; linearizing "lifts" its call and return entries out of the list and
backtracking "unlifts" them (dancing links, LIFO).  A cache of explored
configurations (bitset of linearized ops as a Python int, register value)
prunes repeated states.  The search is an explicit stack, no recursion.
It stops at a budget (timeout_s, max_steps, max_states) with UNKNOWN.

Register-specific reductions, each sound and complete (checked against
brute force in test_lincheck.py):
  * a get that reads the current value is linearized at once, with no
    alternative tried (moving a read earlier, to a point where it is
    enabled and reads the same value, keeps a linearization valid);
  * the value must not change while gets of it remain to be linearized
    and no write of it remains;
  * an unknown-outcome write is kept out of the list and only linearized
    right before a get that returns its value (the earliest-invoked such
    write); one not used so is "after everything", i.e. had no effect.
    Any linearization can be rearranged that way, and it avoids the 2^k
    blow-up of k pending writes.

Before the search, static checks (each a proof of violation) report the
common anomalies directly and clearly: a get of a value no set wrote, a
get of a value whose writes were all invoked after it returned, and a get
of a value overwritten before it was invoked (some op of another value
ran entirely after every write of the value and before the get).  When
the search fails, the explanation names the op at whose return the
deepest search got stuck, the values the register could hold there, and
the window of ops around it.

Cost: a valid history is typically checked in near-linear time (3000 ops,
16 concurrent clients, unique values: < 0.1 s).  A violation the static
checks miss is refuted by exploring every reachable configuration before
it, exponential in concurrency (3000 ops: ~0.4 s with 16 clients, ~5 s
with 24, ~30 s with 32); few distinct values (values reused by many
writes) also make the search slower.  Prefer unique values per write.
"""
import bisect
import json
import sys
import threading
import time

__all__ = ["History", "Op", "CheckResult", "KeyResult", "check",
           "load", "OK", "VIOLATION", "UNKNOWN"]

OK = "ok"
VIOLATION = "violation"
UNKNOWN = "unknown"

OPS = ("set", "get", "del")
PRECHECKS = True      # static checks before the search (tests turn it off)
STATUSES = ("ok", "fail", "info", "pending")


# ---------------------------------------------------------------------------
# Ops and the recorder
# ---------------------------------------------------------------------------

def _enc(v):
    """A value or key -> JSON."""
    if isinstance(v, (bytes, bytearray)):
        try:
            return {"b": bytes(v).decode("utf-8")}
        except UnicodeDecodeError:
            return {"hex": bytes(v).hex()}
    return v


def _dec(v):
    if isinstance(v, dict):
        if "b" in v:
            return v["b"].encode("utf-8")
        if "hex" in v:
            return bytes.fromhex(v["hex"])
        raise ValueError("bad encoded value %r" % (v,))
    return v


def _norm(v):
    """The value as Redis would return it (bytes), None for nil."""
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, bool):
        return b"1" if v else b"0"
    if isinstance(v, (int, float)):
        return repr(v).encode()
    return repr(v).encode()


class Op:
    """One operation; see the module docstring for the fields."""
    __slots__ = ("id", "client", "op", "key", "value", "output", "call",
                 "ret", "status")

    def __init__(self, id, client, op, key, value=None, output=None,
                 call=0, ret=None, status="ok"):
        if op not in OPS:
            raise ValueError("op must be one of %s, not %r" % (OPS, op))
        if status not in STATUSES:
            raise ValueError("status must be one of %s, not %r"
                             % (STATUSES, status))
        self.id = id
        self.client = client
        self.op = op
        self.key = key
        self.value = value
        self.output = output
        self.call = call
        self.ret = ret
        self.status = status

    def copy(self):
        return Op(self.id, self.client, self.op, self.key, self.value,
                  self.output, self.call, self.ret, self.status)

    def to_dict(self):
        return {"id": self.id, "client": self.client, "op": self.op,
                "key": _enc(self.key), "value": _enc(self.value),
                "output": _enc(self.output), "call": self.call,
                "ret": self.ret, "status": self.status}

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            raise ValueError("an op must be a JSON object, not %r" % (d,))
        try:
            return cls(d["id"], d.get("client"), d["op"], _dec(d["key"]),
                       _dec(d.get("value")), _dec(d.get("output")),
                       d["call"], d.get("ret"), d.get("status", "ok"))
        except KeyError as e:
            raise ValueError("op %r lacks field %s" % (d, e)) from None

    def __eq__(self, other):
        return (isinstance(other, Op)
                and all(getattr(self, f) == getattr(other, f)
                        for f in self.__slots__))

    __hash__ = None

    def describe(self, t0=0):
        """'#12 c3 get -> 'v1' [1.234 .. 1.240 ms] ok' (times from t0)."""
        if self.op == "set":
            what = "set(%r)" % (self.value,)
        elif self.op == "del":
            what = "del"
        elif self.status == "ok":
            what = "get -> %s" % ("nil" if self.output is None
                                  else repr(self.output))
        else:
            what = "get"
        ret = ("inf" if self.ret is None
               else "%.3f" % ((self.ret - t0) / 1e6))
        return "#%s %s %s [%.3f .. %s ms] %s" % (
            self.id, self.client, what, (self.call - t0) / 1e6, ret,
            self.status)

    def __repr__(self):
        return "Op(%s)" % self.describe()


class History:
    """Thread-safe recorder.

        h = History()
        t = h.invoke("c1", "set", "k", "v1"); ...; h.ok(t)     # or info(t)
        t = h.invoke("c1", "get", "k"); v = ...; h.ok(t, v)     # or fail(t)
        assert h.check(), h.check().summary()

    Call invoke() right before sending the request and ok/fail/info() right
    after the reply (or error) arrived: both only widen the op's interval,
    which keeps the check sound.  An op never completed counts as "info".
    """

    def __init__(self, ops=None):
        self._lock = threading.Lock()
        self._ops = []
        self._next_id = 0
        for o in ops or ():
            o = o if isinstance(o, Op) else Op.from_dict(o)
            self._ops.append(o)
            if isinstance(o.id, int) and o.id >= self._next_id:
                self._next_id = o.id + 1

    def invoke(self, client, op, key, value=None):
        """Record a call; returns a handle for ok/fail/info."""
        if op not in OPS:
            raise ValueError("op must be one of %s, not %r" % (OPS, op))
        if op == "set" and value is None:
            raise ValueError("set needs a value (use del to write nil)")
        t = time.monotonic_ns()
        with self._lock:
            h = len(self._ops)
            self._ops.append(Op(self._next_id, client, op, key,
                                value if op == "set" else None, None, t,
                                None, "pending"))
            self._next_id += 1
            return h

    def _complete(self, handle, status, output, with_ret):
        t = time.monotonic_ns()
        with self._lock:
            o = self._ops[handle]
            if o.status != "pending":
                raise ValueError("op %r already completed" % (o,))
            o.status = status
            o.ret = t if with_ret else None
            if status == "ok" and o.op == "get":
                o.output = output

    def ok(self, handle, value=None):
        """The op completed; for a get, value is what it read (None = nil)."""
        self._complete(handle, "ok", value, True)

    def fail(self, handle):
        """The op definitely did not take effect (e.g. a read that erred)."""
        self._complete(handle, "fail", None, True)

    def info(self, handle):
        """Unknown outcome: the op may take effect at any time after its
        call (error / timeout / connection reset on a write)."""
        self._complete(handle, "info", None, False)

    def ops(self):
        """A snapshot: copies of the ops recorded so far."""
        with self._lock:
            return [o.copy() for o in self._ops]

    def __len__(self):
        with self._lock:
            return len(self._ops)

    def check(self, initial=None, timeout_s=60.0, max_steps=None,
              max_states=5000000):
        """check(self, ...): see the module function."""
        return check(self, initial=initial, timeout_s=timeout_s,
                     max_steps=max_steps, max_states=max_states)

    def save(self, path):
        """Write the history as JSON lines."""
        ops = self.ops()
        with open(path, "w", encoding="utf-8") as f:
            for o in ops:
                f.write(json.dumps(o.to_dict(), sort_keys=True) + "\n")

    @classmethod
    def load(cls, path):
        """Read a history written by save()."""
        ops = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                try:
                    ops.append(Op.from_dict(json.loads(line)))
                except ValueError as e:
                    raise ValueError("%s:%d: %s" % (path, n, e)) from None
        return cls(ops)


def load(path):
    """History.load(path)."""
    return History.load(path)


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

class KeyResult:
    """Verdict for one key: verdict is OK, VIOLATION or UNKNOWN; for a
    violation, explanation is a short text and window the ops around the
    point where the search failed (for UNKNOWN, why it is unknown)."""

    def __init__(self, key, verdict, explanation="", window=(), n_ops=0,
                 steps=0, elapsed_s=0.0):
        self.key = key
        self.verdict = verdict
        self.explanation = explanation
        self.window = list(window)
        self.n_ops = n_ops
        self.steps = steps
        self.elapsed_s = elapsed_s

    def __repr__(self):
        return "KeyResult(%r, %s, ops=%d, steps=%d)" % (
            self.key, self.verdict, self.n_ops, self.steps)


class CheckResult:
    """Per-key verdicts.  Truthy only when every key is OK: UNKNOWN (search
    budget exhausted) is never silently OK."""

    def __init__(self, keys):
        self.keys = keys            # key -> KeyResult, in history order

    @property
    def verdict(self):
        vs = [r.verdict for r in self.keys.values()]
        if VIOLATION in vs:
            return VIOLATION
        if UNKNOWN in vs:
            return UNKNOWN
        return OK

    @property
    def ok(self):
        return self.verdict == OK

    def __bool__(self):
        return self.ok

    @property
    def violations(self):
        return [r for r in self.keys.values() if r.verdict == VIOLATION]

    @property
    def unknowns(self):
        return [r for r in self.keys.values() if r.verdict == UNKNOWN]

    def summary(self):
        rs = list(self.keys.values())
        n = {v: sum(1 for r in rs if r.verdict == v)
             for v in (OK, VIOLATION, UNKNOWN)}
        lines = ["%s: %d keys, %d ops: %d ok, %d violation, %d unknown" % (
            self.verdict.upper(), len(rs), sum(r.n_ops for r in rs),
            n[OK], n[VIOLATION], n[UNKNOWN])]
        for r in rs:
            if r.verdict == OK:
                continue
            lines.append("key %r: %s (%d ops, %d steps, %.2fs): %s" % (
                r.key, r.verdict.upper(), r.n_ops, r.steps, r.elapsed_s,
                r.explanation))
            if r.window:
                t0 = min(o.call for o in r.window)
                for o in r.window:
                    lines.append("    " + o.describe(t0))
        return "\n".join(lines)

    def __repr__(self):
        return "CheckResult(%s, %d keys)" % (self.verdict, len(self.keys))


# ---------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------

class _KOp:
    """An op as the search sees it."""
    __slots__ = ("op", "bit", "write", "val", "vid", "info", "call", "ret",
                 "ce", "re")


class _Entry:
    __slots__ = ("kop", "is_call", "idx", "prev", "next")


def _lift(o):
    e = o.ce
    e.prev.next = e.next
    if e.next is not None:
        e.next.prev = e.prev
    e = o.re
    if e is not None:
        e.prev.next = e.next
        if e.next is not None:
            e.next.prev = e.prev


def _unlift(o):
    e = o.re
    if e is not None:
        e.prev.next = e
        if e.next is not None:
            e.next.prev = e
    e = o.ce
    e.prev.next = e
    if e.next is not None:
        e.next.prev = e


def _why(kops, values, states):
    """[(value, get that still needed it with no write of it left, or
    None)] for the values the register held at the deepest dead end."""
    out = []
    for s, (bits, ibits) in sorted(states.items()):
        need = None
        if not any(k.write and k.vid == s and not (
                (ibits if k.info else bits) & k.bit) for k in kops):
            need = min((k for k in kops if not k.write and k.vid == s
                        and not bits & k.bit),
                       key=lambda k: k.call, default=None)
        out.append((values[s], need))
    return out


class _Budget(Exception):
    pass


def _search(kops, init, deadline, max_steps, max_states):
    """-> (ok, steps, stuck): for a violation, stuck = (kop whose return
    the deepest dead end of the search hit, _why(...) there, number of
    completed ops linearized there).  Raises _Budget."""
    # Values -> small ints; 0 is the initial value.
    vids = {init: 0}
    for o in kops:
        o.vid = vids.setdefault(o.val, len(vids))
    values = list(vids)
    pending = [0] * len(vids)   # reads of the value not yet linearized
    writers = [0] * len(vids)   # writes of the value not yet linearized
    for o in kops:
        if o.write:
            writers[o.vid] += 1
        else:
            pending[o.vid] += 1

    # Entries: calls before returns at equal times (touching = concurrent).
    ev = []
    for i, o in enumerate(kops):
        ev.append((o.call, 0, i))
        if not o.info:
            ev.append((o.ret, 1, i))
    ev.sort()
    head = _Entry()
    head.kop = None
    head.is_call = False
    head.idx = -1
    head.prev = None
    prev = head
    for n, (_t, kind, i) in enumerate(ev):
        e = _Entry()
        o = kops[i]
        e.kop = o
        e.is_call = kind == 0
        e.idx = n
        if kind == 0:
            o.ce = e
        else:
            o.re = e
        if o.info:
            continue        # kept out of the list, see info_by_vid
        e.prev = prev
        prev.next = e
        prev = e
    prev.next = None

    # Unknown-outcome writes by value, earliest call first.  They are not
    # in the list (the walk never linearizes them on their own): one is
    # enabled iff its call entry index precedes the first return entry.
    info_by_vid = {}
    for o in sorted((o for o in kops if o.info), key=lambda o: o.ce.idx):
        info_by_vid.setdefault(o.vid, []).append(o)

    # Bitsets: completed ops by call order, so the linearized ones are
    # mostly a prefix that the cache keys shift out; unknown writes apart.
    nf = ni = 0
    for o in sorted(kops, key=lambda o: o.ce.idx):
        if o.info:
            o.bit = 1 << ni
            ni += 1
        else:
            o.bit = 1 << nf
            nf += 1

    # A cache key packs (lowest unlinearized op lo, bits >> lo, ibits,
    # value) into one int: a tuple of ints would take thrice the memory.
    vb = len(vids).bit_length()
    lb = (nf + 1).bit_length()
    remaining = nf
    n_finite = remaining
    state = 0
    bits = 0            # linearized completed ops
    ibits = 0           # unknown-outcome writes that took effect
    cache = set()
    # frame: (ops lifted, state, bits, ibits, remaining, forced, resume)
    stack = []
    steps = 0
    best_depth = -1
    best_op = None
    best_states = {}        # value -> (bits, ibits) there
    new_config = True
    entry = None
    monotonic = time.monotonic
    step_limit = float("inf") if max_steps is None else max_steps
    state_limit = float("inf") if max_states is None else max_states

    while True:
        steps += 1
        if steps > step_limit:
            raise _Budget(steps)
        if steps & 1023 == 1 and (
                (deadline is not None and monotonic() >= deadline)
                or len(cache) > state_limit):
            raise _Budget(steps)
        dead = False
        if new_config:
            if remaining == 0:
                return True, steps, None
            # Gets that read the current value: linearize them now.
            forced = []
            e = head.next
            while e is not None and e.is_call:
                o = e.kop
                if not o.write and o.vid == state:
                    forced.append(o)
                e = e.next
            if forced:
                nb = bits
                for o in forced:
                    nb |= o.bit
                lo = (~nb & (nb + 1)).bit_length() - 1
                key = ((((nb >> lo) << ni | ibits) << vb | state) << lb
                       | lo)
                if key in cache:
                    dead = True
                else:
                    cache.add(key)
                    for o in forced:
                        _lift(o)
                    pending[state] -= len(forced)
                    stack.append((forced, state, bits, ibits, remaining, True,
                                  None))
                    bits = nb
                    remaining -= len(forced)
                    continue
            else:
                new_config = False
                entry = head.next
                # Reads of the current value are still to come and nothing
                # left can write it again: the value must not change.
                frozen = pending[state] > 0 and writers[state] == 0
        if not dead:
            if entry is None or not entry.is_call:
                # The first pending return: this op cannot be linearized
                # in this configuration.
                dead = True
                depth = n_finite - remaining
                if entry is not None:
                    if depth > best_depth:
                        best_depth = depth
                        best_op = entry.kop
                        best_states = {state: (bits, ibits)}
                    elif depth == best_depth and entry.kop is best_op:
                        best_states.setdefault(state, (bits, ibits))
            else:
                o = entry.kop
                if o.write:
                    v = o.vid
                    if not (frozen and v != state):
                        nb = bits | o.bit
                        lo = (~nb & (nb + 1)).bit_length() - 1
                        key = ((((nb >> lo) << ni | ibits) << vb | v) << lb
                               | lo)
                        if key not in cache:
                            cache.add(key)
                            _lift(o)
                            writers[v] -= 1
                            stack.append(([o], state, bits, ibits, remaining,
                                          False, entry))
                            state = v
                            bits = nb
                            remaining -= 1
                            new_config = True
                            continue
                elif not frozen:
                    # A get of another value: an unknown-outcome write of
                    # that value may take effect right before it.
                    v = o.vid
                    cands = info_by_vid.get(v)
                    if cands and writers[v]:
                        f = entry.next
                        while f is not None and f.is_call:
                            f = f.next
                        limit = f.idx if f is not None else len(ev)
                        for w in cands:
                            if w.ce.idx > limit:
                                break
                            if not ibits & w.bit:
                                nb = bits | o.bit
                                nib = ibits | w.bit
                                lo = (~nb & (nb + 1)).bit_length() - 1
                                key = ((((nb >> lo) << ni | nib) << vb | v)
                                       << lb | lo)
                                if key not in cache:
                                    cache.add(key)
                                    _lift(o)
                                    writers[v] -= 1
                                    pending[v] -= 1
                                    stack.append(([w, o], state, bits,
                                                  ibits, remaining, False,
                                                  entry))
                                    state = v
                                    bits = nb
                                    ibits = nib
                                    remaining -= 1
                                    new_config = True
                                break
                        if new_config:
                            continue
                entry = entry.next
                continue
        # Backtrack.
        while True:
            if not stack:
                return False, steps, (best_op, _why(kops, values,
                                                    best_states), best_depth)
            (ops_, state, bits, ibits, remaining, forced,
             resume) = stack.pop()
            for o in reversed(ops_):
                if o.write:
                    writers[o.vid] += 1
                else:
                    pending[o.vid] += 1
                if not o.info:
                    _unlift(o)
            if not forced:
                entry = resume.next
                new_config = False
                frozen = pending[state] > 0 and writers[state] == 0
                break


def _window(ops, stuck, limit=20):
    """Ops around `stuck`: those overlapping it, the last writes that
    completed before it, and (for a get) the writes of the value it read."""
    inf = float("inf")
    sc, sr = stuck.call, (inf if stuck.ret is None else stuck.ret)
    near = [o for o in ops
            if o.call <= sr and (inf if o.ret is None else o.ret) >= sc]
    before = sorted((o for o in ops if o.op != "get" and o.ret is not None
                     and o.ret < sc), key=lambda o: o.ret)[-3:]
    src = []
    if stuck.op == "get":
        v = _norm(stuck.output)
        src = [o for o in ops if o.op != "get" and _norm(o.value) == v]
        src.sort(key=lambda o: abs(o.call - sc))
        src = src[:2]
    seen = set()
    out = []
    for o in [stuck] + src + before + sorted(
            near, key=lambda o: abs(o.call - sc)):
        if id(o) not in seen:
            seen.add(id(o))
            out.append(o)
    out = out[:limit]
    out.sort(key=lambda o: (o.call, o.id if isinstance(o.id, int) else 0))
    return out


def _fmt_state(v):
    if v is None:
        return "nil"
    try:
        return repr(v.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(v)


def _precheck(kops, init):
    """Static, sound checks for the common anomalies, cheaper and clearer
    than a failed search: -> (explanation, [Op]) or None."""
    writers = {}
    for k in kops:
        if k.write:
            writers.setdefault(k.val, []).append(k)
    reads = [k for k in kops if not k.write]

    def near(ws, r):
        return [w.op for w in sorted(ws, key=lambda w: abs(w.call - r.call))
                [:2]]

    # A get of a value nobody wrote.
    for r in reads:
        if r.val != init and r.val not in writers:
            return ("get %s returned %s, a value no set on this key wrote"
                    % (r.op.id, _fmt_state(r.val)), [r.op])
    # A get of a value whose writes were all invoked after it returned.
    for r in reads:
        if r.val != init:
            ws = writers[r.val]
            first = min(ws, key=lambda w: w.call)
            if first.call > r.ret:
                return ("get %s returned %s, but the first write of that "
                        "value (%s %s) was invoked after the get returned"
                        % (r.op.id, _fmt_state(r.val), first.op.op,
                           first.op.id), [r.op, first.op])
    # A get of a value overwritten before it was invoked: some op o (a
    # write of another value, or a get that saw another value) ran entirely
    # after every write of the value (after the start, for the initial
    # value) and before the get.  Prefix maxima of call times, over the
    # completed ops sorted by return time, with the best op of another
    # value kept too.
    inf = float("inf")
    fin = sorted((k for k in kops if not k.info), key=lambda k: k.ret)
    rets = [k.ret for k in fin]
    best = second = None
    b1, b2 = [], []
    for k in fin:
        if best is None or k.call > best.call:
            if best is not None and best.val != k.val:
                second = best
            best = k
        elif k.val != best.val and (second is None or k.call > second.call):
            second = k
        b1.append(best)
        b2.append(second)
    for r in reads:
        i = bisect.bisect_left(rets, r.call) - 1
        if i < 0:
            continue
        o = b1[i] if b1[i].val != r.val else b2[i]
        if o is None:
            continue
        ws = writers.get(r.val, [])
        last = max((inf if w.info else w.ret for w in ws), default=-inf)
        if o.call > last:
            other = "%s %s (which %s %s)" % (
                o.op.op, o.op.id, "wrote" if o.write else "read",
                _fmt_state(o.val))
            if ws:
                expl = ("%s ran entirely after every write of that value "
                        "(%s) and before the get was invoked" % (
                            other, ", ".join("%s %s" % (w.op.op, w.op.id)
                                             for w in ws[:3])))
            else:
                expl = ("that is the initial value, no op writes it, and "
                        "%s completed before the get was invoked" % other)
            return ("get %s returned %s, but %s"
                    % (r.op.id, _fmt_state(r.val), expl),
                    [r.op, o.op] + near(ws, r))
    return None


def _check_key(key, ops, init, deadline, max_steps, max_states):
    t_start = time.monotonic()
    kops = []
    used = []            # the ops the search uses, parallel to kops
    for o in ops:
        if o.status == "fail":
            continue
        info = o.status in ("info", "pending")
        if o.op == "get" and info:
            continue         # a read with unknown outcome says nothing
        if o.status == "ok" and o.ret is None:
            raise ValueError("op %r completed without a return time" % (o,))
        if not info and o.ret < o.call:
            raise ValueError("op %r returns before its call" % (o,))
        k = _KOp()
        k.op = o
        k.bit = 0
        k.write = o.op != "get"
        k.val = _norm(o.value if o.op == "set" else
                      None if o.op == "del" else o.output)
        k.info = info
        k.call = o.call
        k.ret = None if info else o.ret
        k.ce = k.re = None
        kops.append(k)
        used.append(o)
    n = len(kops)

    def result(verdict, expl="", window=(), steps=0):
        return KeyResult(key, verdict, expl, window, n, steps,
                         time.monotonic() - t_start)

    if PRECHECKS:
        pre = _precheck(kops, init)
        if pre is not None:
            expl, window = pre
            window = list({id(o): o for o in window}.values())
            window.sort(key=lambda o: o.call)
            return result(VIOLATION, expl, window)
    if deadline is not None and time.monotonic() >= deadline:
        return result(UNKNOWN, "not checked: time budget exhausted")
    try:
        ok, steps, stuck = _search(kops, init, deadline, max_steps,
                                   max_states)
    except _Budget as b:
        return result(UNKNOWN, "search budget exhausted after %d steps "
                      "(timeout_s, max_steps or max_states)" % b.args[0],
                      (), b.args[0])
    if ok:
        return result(OK, steps=steps)
    op, why, depth = stuck
    if op is None:
        return result(VIOLATION, "no linearization", (), steps)
    o = op.op
    if o.op == "get":
        what = "get %s (returned %s)" % (o.id, _fmt_state(_norm(o.output)))
    elif o.op == "set":
        what = "set %s of %s" % (o.id, _fmt_state(_norm(o.value)))
    else:
        what = "del %s" % o.id
    held = []
    extra = []
    for v, need in why:
        if need is None:
            held.append(_fmt_state(v))
        else:
            held.append("%s (which get %s still had to read, with no write "
                        "of it left)" % (_fmt_state(v), need.op.id))
            extra.append(need.op)
    expl = ("%s cannot be linearized: the deepest search (%d of %d "
            "completed ops linearized) reached its return with the register "
            "holding %s" % (what, depth, sum(1 for k in kops if not k.info),
                            " or ".join(held)))
    window = _window(used, o)
    for e in extra[:2]:
        if all(e is not w for w in window):
            window.append(e)
    window.sort(key=lambda w: w.call)
    return result(VIOLATION, expl, window, steps)


def check(history_ops, initial=None, timeout_s=60.0, max_steps=None,
          max_states=5000000):
    """Check a history (a History, or an iterable of Op / op dicts).

    initial: the value every key holds before the history (None = nil), or
    a dict key -> initial value (missing keys: nil).  timeout_s: wall-clock
    budget for the whole check (None = unlimited); max_steps: search steps
    per key; max_states: cached configurations per key, which bounds the
    memory (roughly 100 bytes each; None = unlimited).  Keys left when the
    budget runs out, or whose search it cut short, get UNKNOWN.  Returns a
    CheckResult."""
    if isinstance(history_ops, History):
        ops = history_ops.ops()
    else:
        ops = [o if isinstance(o, Op) else Op.from_dict(o)
               for o in history_ops]
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    by_key = {}
    for o in ops:
        by_key.setdefault(o.key, []).append(o)
    res = {}
    for key, kops in by_key.items():
        init = initial.get(key) if isinstance(initial, dict) else initial
        res[key] = _check_key(key, kops, _norm(init), deadline, max_steps,
                              max_states)
    return CheckResult(res)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(
        description="Check a register history (JSON lines) for "
        "linearizability.  Exit 0: linearizable, 1: violation, 2: bad "
        "usage or input, 3: unknown (search budget exhausted).")
    p.add_argument("history", help="JSON-lines history (History.save)")
    p.add_argument("--initial", default=None,
                   help="initial value of every key (default nil)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="search budget in seconds (default 60)")
    a = p.parse_args(argv)
    try:
        h = History.load(a.history)
    except (OSError, ValueError) as e:
        print("lincheck: %s" % e, file=sys.stderr)
        return 2
    try:
        r = check(h, initial=a.initial, timeout_s=a.timeout)
    except ValueError as e:
        print("lincheck: %s" % e, file=sys.stderr)
        return 2
    print(r.summary())
    return {OK: 0, VIOLATION: 1, UNKNOWN: 3}[r.verdict]


if __name__ == "__main__":
    sys.exit(main())
