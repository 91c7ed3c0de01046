"""Hostile and random argument vectors for every command in the node's
COMMAND table: wrong types, huge and negative numbers, -2^63, empty
strings, binary bytes, far too many arguments.  Each reply must be one
well-formed RESP reply (an error or a value, checked by a strict parser
here, not the lenient client), the connection must stay in step (a PING
pipelined behind every command answers PONG), and the node must never
crash.

Seeded and bounded: PARTKV_FUZZ_SEED=N replays a run (the seed is printed
and named in every failure), PARTKV_FUZZ_SECONDS (default 6) bounds the
time.  Under `make check` the node is the ASan build, so a memory error
is a crash here.  Runs against redis-server too (PARTKV_TEST_TARGET=redis),
which validates the harness rather than the expectations."""
import os
import random
import socket
import time

import pytest

# Commands that would stop the node or leave the connection in a mode
# where replies are no longer one per command.
SKIP = {"shutdown", "quit", "monitor", "sync", "psync", "subscribe",
        "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe",
        "sunsubscribe", "debug", "failover", "replicaof", "slaveof",
        "save", "bgsave", "bgrewriteaof", "module", "acl", "eval",
        "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script",
        "migrate", "pfselftest"}
# Commands that may legitimately wait (a zero or huge timeout among the
# random arguments): a reply late by BLOCK_S is not a failure; the
# connection is replaced.
BLOCKING = {"blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin",
            "bzpopmax", "bzmpop", "wait", "waitaof", "xread", "xreadgroup"}
BLOCK_S = 0.5

NUMBERS = ["0", "1", "-1", "2", "-2", "3", "10", "100", "-100",
           "9223372036854775807", "-9223372036854775808",
           "9223372036854775808", "-9223372036854775809",
           "18446744073709551615", "18446744073709551616", "4294967295",
           "4294967296", "2147483647", "2147483648", "-2147483649",
           "1e308", "1e309", "-1e309", "inf", "-inf", "+inf", "nan",
           "1.5", "-0", "0x10", " 1", "1 ", "01", "+1", "0.0000001",
           "(1", "(-inf", "[a", "(a", "-", "+", "[", "(", "17179869184"]
WORDS = ["get", "set", "help", "list", "flush", "info", "count", "ex", "px",
         "exat", "pxat", "nx", "xx", "gt", "lt", "ch", "incr", "keepttl",
         "persist", "withscores", "limit", "byscore", "bylex", "rev",
         "match", "type", "left", "right", "before", "after", "store",
         "by", "asc", "desc", "alpha", "weights", "aggregate", "sum", "min",
         "max", "numkeys", "rank", "maxlen", "id", "setname", "getname",
         "async", "sync", "keys", "getkeys", "docs", "resetstat", "save",
         "hash-max-listpack-entries", "list-max-ziplist-size", "*",
         "appendfsync", "yes", "no", "string", "hash", "zset", "set",
         "idletime", "freq", "encoding", "withvalues", "len", "idx",
         "minmatchlen", "withmatchlen", "fields", "replace", "db", "auth",
         "setinfo", "lib-name", "3", "2", "noack", "block", "streams"]
# Keys of every type, made before each round (where the type exists).
KEYS = ["str", "num", "h", "z", "l", "s", "missing", "{str}x", ""]
# CONFIG SET of these could lock the test out of the node.
UNSAFE_CONFIG = {"maxclients", "protected-mode", "bind", "port",
                 "requirepass", "proto-max-bulk-len",
                 "client-query-buffer-limit", "timeout",
                 "client-output-buffer-limit"}


class BadReply(Exception):
    pass


class Conn:
    """A socket with a strict RESP2/RESP3 reader."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.pos = 0

    def close(self):
        self.sock.close()

    def send(self, *cmds):
        out = []
        for args in cmds:
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("reply late")
        self.sock.settimeout(left)
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the node closed the connection")
        self.buf = self.buf[self.pos:] + data
        self.pos = 0

    def _line(self, deadline):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 2
                if b"\n" in line or b"\r" in line:
                    raise BadReply("CR or LF inside a line: %r" % line)
                return line
            self._fill(deadline)

    def _exact(self, n, deadline):
        while len(self.buf) - self.pos < n + 2:
            self._fill(deadline)
        data = self.buf[self.pos:self.pos + n]
        if self.buf[self.pos + n:self.pos + n + 2] != b"\r\n":
            raise BadReply("bulk of %d bytes not ended by CRLF" % n)
        self.pos += n + 2
        return data

    @staticmethod
    def _int(s, what):
        txt = s.decode("latin-1")
        body = txt[1:] if txt.startswith("-") else txt
        if not body.isdigit() or (len(body) > 1 and body[0] == "0"):
            raise BadReply("bad %s %r" % (what, s))
        v = int(txt)
        if not -2 ** 63 <= v < 2 ** 63:
            raise BadReply("%s out of range %r" % (what, s))
        return v

    def read(self, timeout=10.0, depth=0):
        return self._value(time.monotonic() + timeout, depth)

    def _value(self, deadline, depth):
        if depth > 64:
            raise BadReply("nesting deeper than 64")
        line = self._line(deadline)
        if not line:
            raise BadReply("empty reply line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return ("simple", rest)
        if t == b"-":
            if not rest or not rest.split(b" ")[0].isupper():
                raise BadReply("error without an upper-case code: %r" % line)
            return ("error", rest)
        if t == b":":
            return ("int", self._int(rest, "integer"))
        if t in (b"$", b"=", b"!"):
            n = self._int(rest, "length")
            if n == -1 and t == b"$":
                return ("null", None)
            if n < 0:
                raise BadReply("negative length %r" % line)
            data = self._exact(n, deadline)
            if t == b"=" and (len(data) < 4 or data[3:4] != b":"):
                raise BadReply("verbatim without a format: %r" % data[:8])
            return ("bulk", data)
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = self._int(rest, "count")
            if n == -1 and t == b"*":
                return ("null", None)
            if n < 0:
                raise BadReply("negative count %r" % line)
            if t in (b"%", b"|"):
                n *= 2
            items = [self._value(deadline, depth + 1) for _ in range(n)]
            if t == b"|":  # an attribute precedes the real reply
                return self._value(deadline, depth)
            return ("agg", items)
        if t == b"_":
            if rest:
                raise BadReply("null with a body %r" % line)
            return ("null", None)
        if t == b"#":
            if rest not in (b"t", b"f"):
                raise BadReply("bad boolean %r" % line)
            return ("bool", rest == b"t")
        if t == b",":
            txt = rest.decode("latin-1").lower()
            try:
                float(txt)
            except ValueError:
                raise BadReply("bad double %r" % line)
            return ("double", txt)
        if t == b"(":
            body = rest[1:] if rest[:1] == b"-" else rest
            if not body.isdigit():
                raise BadReply("bad big number %r" % line)
            return ("big", rest)
        raise BadReply("unknown reply type %r" % line[:16])


def command_table(c):
    c.send([b"COMMAND"])
    kind, entries = c.read(timeout=10)
    assert kind == "agg"
    table = []
    for kind, e in entries:
        name = e[0][1].decode().lower()
        flags = {f[1].decode() for f in e[2][1]}
        table.append((name, e[1][1], flags))
    return table


def rand_arg(rng):
    r = rng.random()
    if r < 0.25:
        return rng.choice(NUMBERS).encode()
    if r < 0.45:
        w = rng.choice(WORDS)
        return (w.upper() if rng.random() < 0.3 else w).encode()
    if r < 0.65:
        return rng.choice(KEYS).encode()
    if r < 0.72:
        return b""
    if r < 0.82:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24)))
    if r < 0.86:
        return b"\x00\r\n$-1\r\n*3\r\n"
    if r < 0.89:
        return b"x" * rng.choice([512, 4096, 65536])
    return str(rng.randrange(-10 ** 6, 10 ** 6)).encode()


def rand_args(rng, name, arity):
    r = rng.random()
    if r < 0.1:
        n = rng.randrange(40, 300)  # far too many
    elif r < 0.4:
        n = abs(arity) - 1 + (rng.randrange(0, 3) if arity < 0 else 0)
    else:
        n = rng.randrange(0, 9)
    args = [rand_arg(rng) for _ in range(max(0, n))]
    if name == "config":
        args = [a for a in args if a.decode("latin-1").lower()
                not in UNSAFE_CONFIG]
    if name == "client" and args and args[0].lower() in (
            b"kill", b"pause", b"no-evict", b"reply"):
        args[0] = b"getname"
    return [name.encode()] + args


def make_keys(c, names):
    setup = [[b"DEL"] + [k.encode() for k in KEYS if k],
             [b"SET", b"str", b"hello"], [b"SET", b"num", b"42"],
             [b"HSET", b"h", b"f", b"v", b"n", b"5"],
             [b"ZADD", b"z", b"1", b"a", b"2.5", b"b"],
             [b"RPUSH", b"l", b"a", b"b", b"3"],
             [b"SADD", b"s", b"a", b"1"]]
    cmds = [s for s in setup if s[0].decode().lower() in names]
    c.send(*cmds)
    for _ in cmds:
        c.read()


def test_cmd_fuzz(server):
    seed = int(os.environ.get("PARTKV_FUZZ_SEED")
               or random.SystemRandom().randrange(1 << 32))
    seconds = float(os.environ.get("PARTKV_FUZZ_SECONDS") or "6")
    print("test_cmd_fuzz: PARTKV_FUZZ_SEED=%d" % seed)
    rng = random.Random(seed)
    c = Conn(server.host, server.port)
    table = command_table(c)
    names = {n for n, _, _ in table}
    cmds = sorted((n, a, f) for n, a, f in table
                  if n not in SKIP and not n.startswith("pk."))
    assert cmds, "COMMAND listed nothing"
    deadline = time.monotonic() + seconds
    sent = rounds = 0
    last = None
    history = []  # the last commands sent, for a failure's message
    while time.monotonic() < deadline and sent < 500000:
        rounds += 1
        make_keys(c, names)
        for name, arity, flags in cmds:
            if time.monotonic() >= deadline:
                break
            args = rand_args(rng, name, arity)
            last = args
            history = (history + [[a[:40] + (b"...%d" % len(a)
                                               if len(a) > 40 else b"")
                                   for a in args[:8]]])[-6:]
            what = "seed %d, command %r (before it: %r)" % (
                seed, history[-1], history[:-1])
            c.send(args, [b"PING"])
            sent += 1
            blocking = name in BLOCKING or "blocking" in flags
            try:
                c.read(timeout=BLOCK_S if blocking else 10)
                pong = c.read(timeout=10)
            except socket.timeout:
                assert blocking, "no reply in 10 s: " + what
                c.close()
                c = Conn(server.host, server.port)
                continue
            except ConnectionError:
                pytest.fail("connection closed (alive: %s): %s"
                            % (server.alive(), what))
            except BadReply as e:
                pytest.fail("malformed reply (%s): %s" % (e, what))
            if pong == ("simple", b"QUEUED"):  # the command opened MULTI
                c.send([b"DISCARD"])
                c.read()
                continue
            assert pong == ("simple", b"PONG"), (
                "out of step (PING answered %r): %s" % (pong, what))
        # A blocked command's connection may be late: a fresh one per
        # round keeps one stuck reply from hiding the others.
        if rounds % 5 == 0:
            c.close()
            c = Conn(server.host, server.port)
    assert server.alive(), "node died (seed %d, last %r)" % (seed, last)
    c.close()
    c = Conn(server.host, server.port)
    c.send([b"PING"])
    assert c.read() == ("simple", b"PONG"), "seed %d" % seed
    c.close()
    print("test_cmd_fuzz: %d commands of %d kinds in %d rounds"
          % (sent, len(cmds), rounds))


# Argument tails tried after a too-long key: ranges by rank, score and
# lex, counts, members and values.
LONG_KEY_TAILS = [[], [b"0", b"-1"], [b"-inf", b"+inf"], [b"-", b"+"],
                  [b"(1", b"(-9223372036854775809"], [b"a", b"1"],
                  [b"1", b"a"], [b"f", b"v"], [b"0", b"100", b"count", b"5"]]


def test_long_keys(server):
    """Every key command with a key longer than LMDB can store (partkv
    reads such a key as missing): a well-formed reply, no crash.  A zset
    range read once copied an unset prefix for such a key."""
    c = Conn(server.host, server.port)
    table = command_table(c)
    c.send([b"COMMAND", b"INFO"] + [n.encode() for n, _, _ in table])
    _, infos = c.read()
    key = b"k" * 600
    for (name, arity, _), (_, info) in zip(table, infos):
        if name in SKIP or name.startswith("pk.") or info[3][1] < 1:
            continue
        for tail in LONG_KEY_TAILS:
            args = [name.encode(), key] + tail
            what = "%s %r" % (name, tail)
            c.send(args, [b"PING"])
            try:
                c.read(timeout=BLOCK_S if name in BLOCKING else 10)
                assert c.read() == ("simple", b"PONG"), what
            except socket.timeout:
                assert name in BLOCKING, "no reply: " + what
                c.close()
                c = Conn(server.host, server.port)
            except (ConnectionError, BadReply) as e:
                pytest.fail("%s: %s" % (e, what))
    assert server.alive()
    c.close()
