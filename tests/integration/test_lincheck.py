"""Self-test of lincheck.py (no server needed).

Tests of histories that must fail run twice: with the static prechecks
("pre") and with the search alone ("search"), so both are exercised."""
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest

import lincheck
from lincheck import History, Op, check, OK, VIOLATION, UNKNOWN

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(params=[True, False], ids=["pre", "search"])
def prechecks(request, monkeypatch):
    monkeypatch.setattr(lincheck, "PRECHECKS", request.param)
    return request.param


def H(*rows, key="k"):
    """Ops from rows (client, op, value, call, ret[, status]): value is what
    a set wrote or what a get returned; ret None means unknown outcome."""
    ops = []
    for i, row in enumerate(rows):
        client, op, value, call, ret = row[:5]
        status = row[5] if len(row) > 5 else ("ok" if ret is not None
                                              else "info")
        ops.append(Op(i, client, op, key,
                      value if op == "set" else None,
                      value if op == "get" else None, call, ret, status))
    return ops


def assert_violation(ops, **kw):
    r = check(ops, **kw)
    assert r.verdict == VIOLATION, r.summary()
    assert not r
    v = r.violations[0]
    assert v.explanation and v.window, r.summary()
    return r


def assert_ok(ops, **kw):
    r = check(ops, **kw)
    assert r.verdict == OK, r.summary()
    assert r
    return r


# ---------------------------------------------------------------------------
# Known-bad histories
# ---------------------------------------------------------------------------

def test_stale_read(prechecks):
    r = assert_violation(H(("a", "set", "v1", 0, 10),
                           ("a", "set", "v2", 20, 30),
                           ("b", "get", "v1", 40, 50)))
    v = r.violations[0]
    assert v.key == "k"
    assert "get 2" in v.explanation and "'v2'" in v.explanation
    assert [o.id for o in v.window] == [0, 1, 2]


def test_stale_read_among_concurrent_noise(prechecks):
    # A reader concurrent with the v2 write may see v1, one after it not.
    assert_violation(H(("a", "set", "v1", 0, 10),
                       ("a", "set", "v2", 20, 30),
                       ("c", "get", "v1", 15, 35),
                       ("d", "get", "v2", 25, 45),
                       ("b", "get", "v1", 40, 50)))


def test_lost_write(prechecks):
    # Acknowledged set, a later read sees the value from before it.
    assert_violation(H(("a", "set", "v1", 0, 10),
                       ("b", "get", None, 20, 30)))
    assert_violation(H(("a", "set", "v0", 0, 5),
                       ("a", "set", "v1", 10, 20),
                       ("c", "get", "v0", 12, 18),
                       ("b", "get", "v0", 25, 30)))


def test_read_of_value_never_written(prechecks):
    r = assert_violation(H(("a", "set", "v1", 0, 10),
                           ("b", "get", "zz", 5, 15)))
    assert "get 1" in r.violations[0].explanation
    assert "'zz'" in r.violations[0].explanation
    if prechecks:
        assert "no set" in r.violations[0].explanation


def test_failed_write_is_not_a_write(prechecks):
    assert_violation(H(("a", "set", "v9", 0, 10, "fail"),
                       ("b", "get", "v9", 20, 30)))


def test_non_monotonic_reads(prechecks):
    # v2 is written concurrently; a reader saw it, a later reader must too.
    assert_violation(H(("a", "set", "v1", 0, 10),
                       ("a", "set", "v2", 20, 100),
                       ("b", "get", "v2", 30, 40),
                       ("c", "get", "v1", 50, 60)))


def test_non_monotonic_reads_with_unknown_write(prechecks):
    assert_violation(H(("a", "set", "v1", 0, 10),
                       ("a", "set", "v2", 20, None),
                       ("b", "get", "v2", 30, 40),
                       ("c", "get", "v1", 50, 60)))
    # An unknown-outcome write seen once cannot be undone by nothing.
    assert_violation(H(("a", "set", "v1", 0, None),
                       ("b", "get", "v1", 10, 20),
                       ("c", "get", None, 30, 40)))


def test_read_from_the_future(prechecks):
    assert_violation(H(("b", "get", "v1", 0, 10),
                       ("a", "set", "v1", 20, 30)))
    # Same with an unknown-outcome write invoked after the read returned.
    assert_violation(H(("b", "get", "v1", 0, 10),
                       ("a", "set", "v1", 20, None)))


def test_violation_on_one_key_only(prechecks):
    ops = (H(("a", "set", "x1", 0, 10), ("b", "get", "x1", 20, 30), key="x")
           + H(("a", "set", "y1", 0, 10), ("b", "get", None, 20, 30),
               key="y"))
    for i, o in enumerate(ops):
        o.id = i
    r = check(ops)
    assert r.verdict == VIOLATION
    assert r.keys["x"].verdict == OK
    assert r.keys["y"].verdict == VIOLATION
    assert [v.key for v in r.violations] == ["y"]
    assert "key 'y'" in r.summary()


# ---------------------------------------------------------------------------
# Known-good histories
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("first,second", [("v1", "v2"), ("v2", "v1")])
def test_concurrent_writes_either_order(first, second):
    assert_ok(H(("a", "set", "v1", 0, 100),
                ("b", "set", "v2", 10, 90),
                ("c", "get", first, 20, 30),
                ("d", "get", second, 40, 50),
                ("c", "get", second, 95, 110)))


@pytest.mark.parametrize("seen", [None, "v1", "v2"])
def test_read_concurrent_with_writes(seen):
    assert_ok(H(("a", "set", "v1", 0, 50),
                ("b", "set", "v2", 10, 60),
                ("c", "get", seen, 5, 70)))


def test_touching_intervals_are_concurrent():
    # An op returning at the very time another is invoked may still be
    # linearized after it.
    assert_ok(H(("a", "set", "v1", 0, 10), ("b", "get", None, 10, 20)))
    assert_ok(H(("a", "set", "v1", 0, 10), ("b", "set", "v2", 10, 20),
                ("c", "get", "v1", 30, 40)))
    assert_ok(H(("a", "set", "v1", 0, 10), ("b", "set", "v2", 20, 30),
                ("c", "get", "v1", 30, 40)))
    assert_ok(H(("b", "get", "v1", 0, 10), ("a", "set", "v1", 10, 20)))


@pytest.mark.parametrize("reads", [("v2", "v2"), ("v1", "v1"),
                                   ("v1", "v2")])
def test_unknown_write_took_effect_or_not(reads):
    assert_ok(H(("a", "set", "v1", 0, 10),
                ("a", "set", "v2", 20, None),
                ("b", "get", reads[0], 30, 40),
                ("c", "get", reads[1], 50, 60)))


def test_unknown_write_taking_effect_much_later():
    assert_ok(H(("a", "set", "v1", 0, None),
                ("b", "get", None, 10, 20),
                ("b", "set", "v2", 30, 40),
                ("b", "get", "v2", 50, 60),
                ("c", "get", "v1", 1000, 1010),
                ("c", "get", "v1", 1020, 1030)))


def test_many_unknown_writes_of_one_value(prechecks):
    rows = [("w%d" % i, "set", "same", i, None) for i in range(40)]
    rows += [("r", "get", "same", 100 + 20 * i, 110 + 20 * i)
             for i in range(5)]
    rows.append(("r", "get", None, 1000, 1010))
    assert_violation(H(*rows))
    rows[-1] = ("r", "get", "same", 1000, 1010)
    assert_ok(H(*rows))


def test_nil_reads_before_any_write():
    assert_ok(H(("b", "get", None, 0, 5),
                ("a", "set", "v1", 10, 20),
                ("c", "get", None, 12, 18),
                ("b", "get", "v1", 30, 40)))


def test_failed_and_unknown_reads_are_dropped():
    assert_ok(H(("a", "set", "v1", 0, 10),
                ("b", "get", None, 20, 30, "fail"),
                ("b", "get", None, 40, None, "info"),
                ("b", "get", "v1", 50, 60)))


def test_del_writes_nil(prechecks):
    assert_ok(H(("a", "set", "v1", 0, 10), ("a", "del", None, 20, 30),
                ("b", "get", None, 40, 50)))
    assert_violation(H(("a", "set", "v1", 0, 10),
                       ("a", "del", None, 20, 30),
                       ("b", "get", "v1", 40, 50)))


def test_initial_value_and_value_normalisation(prechecks):
    ops = H(("b", "get", b"init", 0, 5), ("a", "set", 7, 10, 20),
            ("b", "get", b"7", 30, 40))
    assert_ok(ops, initial="init")
    assert_ok(ops, initial={"k": b"init", "other": "x"})
    assert_violation(ops)


def test_empty_history():
    r = check([])
    assert r.verdict == OK and r.keys == {}


# ---------------------------------------------------------------------------
# Randomized: simulated executions with true linearization points
# ---------------------------------------------------------------------------

def simulate(seed, n_ops=300, n_clients=8, keys=("k",), p_write=0.4,
             p_del=0.03, p_info=0.05, p_fail_read=0.02):
    """A concurrent execution on registers: each client runs ops one after
    another, each op takes effect at a random point of its interval (an
    unknown-outcome write: maybe never, maybe long after the client gave
    up).  Write values are unique."""
    rng = random.Random(seed)
    free = [0] * n_clients
    raw = []                                # (lin point or None, op)
    for i in range(n_ops):
        c = min(range(n_clients), key=lambda j: (free[j], j)) \
            if rng.random() < 0.5 else rng.randrange(n_clients)
        call = free[c] + rng.randint(0, 30)
        ret = call + rng.randint(1, 120)
        free[c] = ret
        key = rng.choice(keys)
        lin = rng.randint(call, ret)
        x = rng.random()
        if x < p_write:
            op = Op(i, "c%d" % c, "set", key, "v%d" % i, None, call, ret)
            if rng.random() < p_info / p_write:
                op.status, op.ret = "info", None
                lin = (None if rng.random() < 0.4
                       else call + rng.randint(0, 600))
        elif x < p_write + p_del:
            op = Op(i, "c%d" % c, "del", key, None, None, call, ret)
        else:
            op = Op(i, "c%d" % c, "get", key, None, None, call, ret)
            if rng.random() < p_fail_read:
                op.status = "fail"
        raw.append((lin, op))
    state = {}
    for lin, op in sorted((r for r in raw if r[0] is not None),
                          key=lambda r: r[0]):
        if op.op == "set":
            state[op.key] = op.value
        elif op.op == "del":
            state.pop(op.key, None)
        elif op.status == "ok":
            op.output = state.get(op.key)
    return [op for _lin, op in raw]


def reads(ops):
    return [o for o in ops if o.op == "get" and o.status == "ok"]


@pytest.mark.parametrize("seed", range(12))
def test_random_valid_histories_pass(seed):
    ops = simulate(seed, n_clients=2 + seed)
    assert_ok(ops, timeout_s=10)


def test_random_multi_key_history_passes():
    assert_ok(simulate(99, n_ops=1500, n_clients=12,
                       keys=("a", "b", "c", "d")), timeout_s=10)


@pytest.mark.parametrize("seed", range(12))
def test_random_corrupted_never_written(seed, prechecks):
    ops = simulate(seed, n_clients=2 + seed)
    r = random.Random(seed).choice(reads(ops))
    r.output = "never-written"
    assert_violation(ops, timeout_s=10)


@pytest.mark.parametrize("seed", range(12))
def test_random_corrupted_read_from_the_future(seed, prechecks):
    # A get returning the (unique) value of a write invoked after the get
    # returned: no linearization allows it.
    ops = simulate(seed, n_clients=2 + seed)
    rng = random.Random(seed)
    cands = [(r, w) for r in reads(ops) for w in ops
             if w.op == "set" and w.call > r.ret]
    r, w = rng.choice(cands)
    r.output = w.value
    assert_violation(ops, timeout_s=10)


@pytest.mark.parametrize("seed", range(12))
def test_random_corrupted_stale_read(seed, prechecks):
    # get returns w1's value although w1 -> w2 -> get in real time.
    ops = simulate(seed, n_clients=2 + seed)
    rng = random.Random(seed)
    writes = [o for o in ops if o.op != "get" and o.status == "ok"]
    cands = []
    for r in reads(ops):
        w2s = [w for w in writes if w.ret < r.call]
        if not w2s:
            continue
        w2_call = max(w.call for w in w2s)
        w1s = [w for w in writes if w.op == "set" and w.ret < w2_call]
        if w1s:
            cands.append((r, rng.choice(w1s)))
    r, w1 = rng.choice(cands)
    r.output = w1.value
    assert_violation(ops, timeout_s=10)


def test_big_concurrent_history_is_fast():
    # A few thousand ops on one key, 16 concurrent clients, unknown writes.
    ops = simulate(2024, n_ops=3000, n_clients=16)
    assert sum(o.status == "info" for o in ops) > 50
    t = time.monotonic()
    assert_ok(ops, timeout_s=15)
    assert time.monotonic() - t < 8


def test_big_concurrent_violation_is_found(prechecks):
    ops = simulate(7, n_ops=2000, n_clients=16)
    rs = reads(ops)
    r = rs[len(rs) * 3 // 4]
    w = next(w for w in ops if w.op == "set" and w.call > r.ret)
    r.output = w.value
    res = assert_violation(ops, timeout_s=15)
    if prechecks:
        assert "get %d" % r.id in res.violations[0].explanation


# ---------------------------------------------------------------------------
# Cross-checks against independent, naive checkers
# ---------------------------------------------------------------------------

def _effective(ops):
    return [o for o in ops if o.status != "fail"
            and not (o.op == "get" and o.status != "ok")]


def _val(o):
    return lincheck._norm(o.value if o.op == "set" else o.output)


def brute_force(ops, init=None):
    """Every permutation of the completed ops plus any subset of the
    unknown-outcome writes, checked against real time and the register."""
    ops = _effective(ops)
    fin = [o for o in ops if o.status == "ok"]
    unk = [o for o in ops if o.status != "ok"]
    for k in range(len(unk) + 1):
        for sub in itertools.combinations(unk, k):
            use = fin + list(sub)
            for perm in itertools.permutations(use):
                pos = {id(o): i for i, o in enumerate(perm)}
                if any(a.ret is not None and a.ret < b.call
                       and pos[id(a)] > pos[id(b)] for a in use for b in use):
                    continue
                s = lincheck._norm(init)
                for o in perm:
                    if o.op != "get":
                        s = _val(o)
                    elif _val(o) != s:
                        break
                else:
                    return True
    return False


def memo_search(ops, init=None):
    """Plain memoized DFS over (set of linearized ops, value): an op is
    enabled once every op that returned before its call is linearized;
    unknown-outcome writes are optional."""
    ops = _effective(ops)
    n = len(ops)
    fin = frozenset(i for i, o in enumerate(ops) if o.status == "ok")
    preds = [frozenset(j for j, p in enumerate(ops)
                       if p.status == "ok" and p.ret < o.call) for o in ops]
    seen = set()
    stack = [(frozenset(), lincheck._norm(init))]
    while stack:
        done, s = stack.pop()
        if fin <= done:
            return True
        if (done, s) in seen:
            continue
        seen.add((done, s))
        for i in range(n):
            if i in done or not preds[i] <= done:
                continue
            if ops[i].op == "get":
                if _val(ops[i]) == s:
                    stack.append((done | {i}, s))
            else:
                stack.append((done | {i}, _val(ops[i])))
    return False


def tiny_history(rng):
    """2-6 ops on one key, few values (repeats allowed), random outputs."""
    vals = ["a", "b", "c"][:rng.randint(1, 3)]
    ops = []
    for i in range(rng.randint(2, 6)):
        call = rng.randint(0, 30)
        ret = call + rng.randint(0, 15)
        x = rng.random()
        if x < 0.5:
            o = Op(i, "c", "set" if x < 0.45 else "del", "k",
                   rng.choice(vals) if x < 0.45 else None, None, call, ret)
            if rng.random() < 0.3:
                o.status, o.ret = "info", None
        else:
            o = Op(i, "c", "get", "k", None, rng.choice(vals + [None]),
                   call, ret)
            if rng.random() < 0.05:
                o.status = "fail"
        ops.append(o)
    return ops


def test_agrees_with_brute_force(prechecks):
    rng = random.Random(12345)
    verdicts = {True: 0, False: 0}
    for _ in range(700):
        ops = tiny_history(rng)
        init = rng.choice([None, None, "a"])
        want = brute_force(ops, init)
        got = check(ops, initial=init)
        verdicts[want] += 1
        assert (got.verdict == OK) == want, (ops, init, got.summary())
    assert min(verdicts.values()) > 150, verdicts


def test_agrees_with_memoized_search_on_mutated_histories(prechecks):
    # Simulated histories (up to 40 ops, 7 clients, many unknown writes)
    # with some reads changed to another written value: a mix of valid
    # and subtly invalid histories.
    verdicts = {True: 0, False: 0}
    for seed in range(500):
        rng = random.Random(seed)
        ops = simulate(seed, n_ops=rng.randint(5, 40),
                       n_clients=rng.randint(2, 7), p_info=0.15, p_del=0.05)
        vals = [o.value for o in ops if o.op == "set"] + [None]
        for o in reads(ops):
            if rng.random() < 0.15:
                o.output = rng.choice(vals)
        want = memo_search(ops)
        got = check(ops)
        verdicts[want] += 1
        assert (got.verdict == OK) == want, (seed, got.summary())
    assert min(verdicts.values()) > 100, verdicts


# ---------------------------------------------------------------------------
# Budget
# ---------------------------------------------------------------------------

def test_budget_exhausted_is_unknown_not_ok():
    ops = simulate(5, n_ops=3000, n_clients=16)
    assert check(ops, timeout_s=15).verdict == OK
    for kw in ({"timeout_s": 0}, {"timeout_s": 1e-9}, {"max_steps": 50},
               {"max_states": 10}):
        r = check(ops, **kw)
        assert r.verdict == UNKNOWN, (kw, r.summary())
        assert not r and not r.ok
        assert r.unknowns and r.unknowns[0].key == "k"
        assert "UNKNOWN" in r.summary()


def test_violation_wins_over_unknown():
    ops = (simulate(5, n_ops=500, n_clients=8, keys=("a",))
           + H(("a", "set", "y1", 0, 10), ("b", "get", "zz", 20, 30),
               key="y"))
    r = check(ops, max_steps=20)
    assert r.keys["a"].verdict == UNKNOWN
    assert r.keys["y"].verdict == VIOLATION
    assert r.verdict == VIOLATION


# ---------------------------------------------------------------------------
# Recorder, persistence, CLI
# ---------------------------------------------------------------------------

def test_recorder_is_thread_safe():
    h = History()
    reg = {}
    lock = threading.Lock()
    n_threads, n_each = 8, 300

    def worker(t):
        rng = random.Random(t)
        for i in range(n_each):
            key = rng.choice("ab")
            if rng.random() < 0.5:
                v = "t%d-%d" % (t, i)
                hd = h.invoke("t%d" % t, "set", key, v)
                with lock:
                    reg[key] = v
                h.ok(hd)
            else:
                hd = h.invoke("t%d" % t, "get", key)
                with lock:
                    v = reg.get(key)
                h.ok(hd, v)
    ts = [threading.Thread(target=worker, args=(t,))
          for t in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ops = h.ops()
    assert len(ops) == len(h) == n_threads * n_each
    assert len({o.id for o in ops}) == len(ops)
    assert all(o.status == "ok" and o.ret >= o.call for o in ops)
    assert_ok(h, timeout_s=15)


def test_recorder_states_and_misuse():
    h = History()
    a = h.invoke("c", "set", "k", "v1")
    b = h.invoke("c", "get", "k")
    c = h.invoke("c", "get", "k")
    d = h.invoke("c", "set", "k", "v2")     # never completed: pending
    h.info(a)
    h.ok(b, "v1")
    h.fail(c)
    ops = h.ops()
    assert [o.status for o in ops] == ["info", "ok", "fail", "pending"]
    assert ops[0].ret is None and ops[1].output == "v1"
    assert ops[3].status == "pending" and d == 3
    with pytest.raises(ValueError):
        h.ok(a)
    with pytest.raises(ValueError):
        h.invoke("c", "incr", "k")
    assert h.check()


def test_save_load_round_trip(tmp_path):
    h = History()
    for key in ("k", b"\xffbin"):
        h.ok(h.invoke("c1", "set", key, "v1"))
        h.ok(h.invoke("c1", "set", key, b"\x00\xfe"))
        h.ok(h.invoke("c2", "get", key), b"\x00\xfe")
        h.info(h.invoke("c2", "set", key, "v3"))
        h.fail(h.invoke("c3", "get", key))
        h.ok(h.invoke("c3", "del", key))
        h.ok(h.invoke("c3", "get", key), None)
    h.invoke("c4", "get", "k")                      # pending
    p = tmp_path / "h.jsonl"
    h.save(str(p))
    lines = p.read_text().splitlines()
    assert len(lines) == len(h)
    assert all(isinstance(json.loads(line), dict) for line in lines)
    h2 = lincheck.load(str(p))
    assert h2.ops() == h.ops()
    assert check(h2).verdict == check(h).verdict == OK
    # A loaded history keeps recording with fresh ids.
    hd = h2.invoke("c5", "get", "k")
    assert h2.ops()[hd].id == len(h)


def _cli(*args):
    return subprocess.run(
        [sys.executable, os.path.join(HERE, "lincheck.py"), *args],
        capture_output=True, text=True, timeout=60)


def test_cli_exit_codes(tmp_path):
    good = tmp_path / "good.jsonl"
    History(simulate(3, n_ops=200, n_clients=4)).save(str(good))
    p = _cli(str(good))
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("OK")

    bad = tmp_path / "bad.jsonl"
    History(H(("a", "set", "v1", 0, 10), ("a", "set", "v2", 20, 30),
              ("b", "get", "v1", 40, 50))).save(str(bad))
    p = _cli(str(bad))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "VIOLATION" in p.stdout and "'v1'" in p.stdout

    assert _cli().returncode == 2
    assert _cli(str(tmp_path / "missing.jsonl")).returncode == 2
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{not json\n")
    assert _cli(str(junk)).returncode == 2

    p = _cli(str(good), "--timeout", "0")
    assert p.returncode == 3 and "UNKNOWN" in p.stdout
