"""Pipelining: replies come back in order, per connection, also when several
connections pipeline at once."""
import random
import threading

import server as pkserver


def mixed_commands(prefix, n, seed):
    """n commands and the replies (RESP2, decoded) Redis gives them."""
    rnd = random.Random(seed)
    strings, counters, hashes, zsets = {}, {}, {}, {}
    cmds, want = [], []
    for i in range(n):
        op = rnd.choice(("SET", "INCR", "GET", "HSET", "ZADD", "GETM"))
        if op == "SET":
            k = "%s:s%d" % (prefix, rnd.randrange(50))
            v = "v%d" % i
            strings[k] = v
            cmds.append(("SET", k, v))
            want.append("OK")
        elif op == "INCR":
            k = "%s:c%d" % (prefix, rnd.randrange(10))
            counters[k] = counters.get(k, 0) + 1
            cmds.append(("INCR", k))
            want.append(counters[k])
        elif op == "GET":
            k = "%s:s%d" % (prefix, rnd.randrange(50))
            cmds.append(("GET", k))
            want.append(strings.get(k))
        elif op == "GETM":
            k = "%s:c%d" % (prefix, rnd.randrange(10))
            cmds.append(("GET", k))
            want.append(str(counters[k]) if k in counters else None)
        elif op == "HSET":
            k = "%s:h%d" % (prefix, rnd.randrange(5))
            f = "f%d" % rnd.randrange(100)
            h = hashes.setdefault(k, {})
            want.append(0 if f in h else 1)
            h[f] = str(i)
            cmds.append(("HSET", k, f, str(i)))
        else:
            k = "%s:z%d" % (prefix, rnd.randrange(5))
            m = "m%d" % rnd.randrange(100)
            z = zsets.setdefault(k, {})
            want.append(0 if m in z else 1)
            z[m] = i
            cmds.append(("ZADD", k, str(i), m))
    return cmds, want, (strings, counters, hashes, zsets)


def run_pipeline(c, cmds, chunk=2000):
    """Send everything at once (in chunks, without reading), then read."""
    out = []
    data = b"".join(pkserver.encode_command(*cmd) for cmd in cmds)
    c.send_raw(data)
    for _ in cmds:
        out.append(c.read())
    return out


def check_final_state(c, state):
    strings, counters, hashes, zsets = state
    for k, v in strings.items():
        assert c.call("GET", k) == v
    for k, v in counters.items():
        assert c.call("GET", k) == str(v)
    for k, h in hashes.items():
        assert c.call("HLEN", k) == len(h)
        rep = c.call("HGETALL", k)
        assert dict(zip(rep[0::2], rep[1::2])) == h
    for k, z in zsets.items():
        want = sorted(z, key=lambda m: (z[m], m))
        assert c.call("ZRANGE", k, "0", "-1") == want


def test_pipeline_10000(server):
    cmds, want, state = mixed_commands("p", 10000, seed=1)
    with server.raw(timeout=30) as c:
        got = run_pipeline(c, cmds)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g == w, "reply %d to %r: got %r want %r" % (
                i, cmds[i], g, w)
        check_final_state(c, state)


def test_pipeline_python_client(r):
    cmds, want, _ = mixed_commands("py", 10000, seed=2)
    p = r.pipeline(transaction=False)
    for cmd in cmds:
        p.execute_command(*cmd)
    got = p.execute()
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        # python3-redis turns SET's OK into True
        if w == "OK":
            assert g is True, (i, cmds[i], g)
        else:
            assert g == w, (i, cmds[i], g, w)


def test_concurrent_pipelines(server):
    nthreads, n = 8, 3000
    errors = []

    def worker(t):
        try:
            cmds, want, state = mixed_commands("t%d" % t, n, seed=100 + t)
            with server.raw(timeout=60) as c:
                # several rounds so that the threads interleave
                for lo in range(0, n, 500):
                    got = run_pipeline(c, cmds[lo:lo + 500])
                    for i, (g, w) in enumerate(zip(got, want[lo:lo + 500])):
                        if g != w:
                            errors.append("thread %d reply %d to %r: got %r "
                                          "want %r" % (t, lo + i,
                                                       cmds[lo + i], g, w))
                            return
                check_final_state(c, state)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("thread %d: %r" % (t, e))

    threads = [threading.Thread(target=worker, args=(t,), daemon=True)
               for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
        assert not th.is_alive(), "worker hung"
    assert not errors, errors[:5]


def test_pipeline_with_errors_in_between(server):
    cmds = []
    want = []
    for i in range(1000):
        cmds.append(("SET", "k%d" % i, "x"))
        want.append("OK")
        cmds.append(("INCR", "k%d" % i))
        want.append(pkserver.RespError(
            "ERR value is not an integer or out of range"))
        cmds.append(("NOSUCHCMD", "a"))
        want.append(pkserver.RespError(
            "ERR unknown command 'NOSUCHCMD', with args beginning with: "
            "'a' "))
        cmds.append(("GET",))
        want.append(pkserver.RespError(
            "ERR wrong number of arguments for 'get' command"))
        cmds.append(("ECHO", str(i)))
        want.append(str(i))
    with server.raw(timeout=30) as c:
        got = run_pipeline(c, cmds)
    assert got == want


def test_inline_pipeline(server):
    """Inline commands pipelined (redis-cli / telnet style)."""
    with server.raw() as c:
        c.send_raw(b"".join(b"SET i%d %d\r\nINCR i%d\r\n" % (i, i, i)
                            for i in range(500)) + b"PING\r\n")
        for i in range(500):
            assert c.read() == "OK"
            assert c.read() == i + 1
        assert c.read() == "PONG"
