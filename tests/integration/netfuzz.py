"""A network fuzzer for one live partkv node: many connections sending
random and mutated RESP -- valid commands from a seed list, truncated,
with huge, negative or malformed lengths, bad type bytes, deep nesting,
random bytes, a valid AUTH or HELLO and then garbage, pipelined mixes,
connections reset mid-frame.  Replies are read and thrown away; what is
checked is the node: it must stay up, answer PING on a fresh connection
at the end, print no AddressSanitizer, LeakSanitizer or UBSan report, and
stop cleanly on SIGTERM.  Its RSS before and after (all connections
closed) is reported and must come back near where it began.

Runs take turns: a node without a password; one with --requirepass; a
cluster of one node (`partkv cluster up --nodes 1`) that is also sent
PK.REPL PUSH frames with the cluster secret, as a leader sends its
followers partition snapshots and log records -- here mutated from
fuzz/seeds/fuzz_part_stream; a node with ACL users (--aclfile, the
default user off) whose connections log in as users of every kind and
are also sent ACL commands; and a node with a TLS port
(--tls-auth-clients optional), where most connections fuzz inside TLS
sessions (with and without a client certificate) and the others send
mutated ClientHellos, random bytes and plain RESP to the TLS port.
Seeded: the seed is printed, and --seed replays a run's frames (timing
still differs).

    /usr/bin/python3 tests/integration/netfuzz.py --duration 3600 \\
        --partkv build/asan/partkv

tests/integration/test_netfuzz.py runs a short version under make test.
"""
import argparse
import os
import random
import selectors
import shutil
import socket
import ssl
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as pkcluster  # noqa: E402
import server as pkserver  # noqa: E402
import tlscerts  # noqa: E402

PASSWORD = "fuzz-secret"
# The users of the acl runs: admin may do anything (the end's PING logs
# in as admin, and no frame names it); app1 is a tenant held to app1:*;
# reader may read every key.  The default user is off.
ACL_FILE = """user default off
user admin on >adminpw ~* &* +@all
user app1 on >app1pw ~app1:* %R~shared:* +@all -@dangerous
user reader on >readpw ~* +@read +@connection
"""
ACL_LOGINS = [["admin", "adminpw"], ["app1", "app1pw"],
              ["reader", "readpw"], ["app1", "wrong"], ["nobody", "x"]]
SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
             "runtime error", "UndefinedBehaviorSanitizer")
# Whatever the node's anonymous RSS may grow by from before to after: the
# allocator keeps some of what it had (seen: 20-70 MB after a minute),
# and ASan's allocator and quarantine more (seen: up to 100 MB).
RSS_SLACK_KB = 128 * 1024
RSS_SLACK_ASAN_KB = 256 * 1024
# The heap the node holds with every connection closed, against the
# same before the fuzzing: its bounded logs (ACL LOG, SLOWLOG), names and
# counters may stay.
HEAP_SLACK_KB = 8 * 1024


def is_asan(path):
    with open(path, "rb") as f:
        return b"__asan_init" in f.read()

# Commands of every family; never ones that stop the node, change its
# configuration or password, or block every client (CLIENT PAUSE).
SEEDS = [
    ["PING"], ["PING", "hello"], ["ECHO", "x"], ["SET", "k", "v"],
    ["SET", "k", "v", "EX", "100", "NX"], ["GET", "k"], ["GETDEL", "k"],
    ["INCR", "n"], ["INCRBY", "n", "-5"], ["INCRBYFLOAT", "f", "1.5"],
    ["APPEND", "k", "tail"], ["SETRANGE", "k", "3", "zz"],
    ["GETRANGE", "k", "0", "-1"], ["MSET", "a", "1", "b", "2"],
    ["MGET", "a", "b", "c"], ["DEL", "a", "b"], ["EXISTS", "k"],
    ["EXPIRE", "k", "100"], ["PEXPIRE", "k", "1"], ["TTL", "k"],
    ["PERSIST", "k"], ["TYPE", "k"], ["RENAME", "k", "k2"],
    ["COPY", "k2", "k3"], ["DUMP", "k3"], ["OBJECT", "ENCODING", "k3"],
    ["HSET", "h", "f", "v", "g", "w"], ["HGETALL", "h"],
    ["HINCRBY", "h", "c", "3"], ["HSCAN", "h", "0", "COUNT", "5"],
    ["LPUSH", "l", "a", "b", "c"], ["LRANGE", "l", "0", "-1"],
    ["LPOS", "l", "a"], ["LINSERT", "l", "BEFORE", "a", "z"],
    ["LMOVE", "l", "l2", "LEFT", "RIGHT"], ["BLPOP", "nol", "0.01"],
    ["SADD", "s", "a", "b", "c"], ["SMEMBERS", "s"], ["SPOP", "s"],
    ["SINTERSTORE", "s2", "s", "s"], ["SRANDMEMBER", "s", "-5"],
    ["ZADD", "z", "1", "a", "2", "b"], ["ZRANGE", "z", "0", "-1",
                                         "WITHSCORES"],
    ["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "1"],
    ["ZRANGEBYLEX", "z", "-", "+"], ["ZUNIONSTORE", "z2", "2", "z", "z"],
    ["ZINCRBY", "z", "1.5", "c"], ["ZPOPMIN", "z"],
    ["SETBIT", "bits", "100", "1"], ["BITCOUNT", "bits"],
    ["BITFIELD", "bits", "INCRBY", "i5", "100", "1"],
    ["BITOP", "AND", "b2", "bits", "bits"],
    ["PFADD", "hll", "a", "b"], ["PFCOUNT", "hll"],
    ["PFMERGE", "hll2", "hll"], ["SORT", "l", "ALPHA", "LIMIT", "0", "2"],
    ["SCAN", "0", "MATCH", "*", "COUNT", "10"], ["KEYS", "*"], ["DBSIZE"],
    ["RANDOMKEY"], ["LCS", "a", "b"], ["MULTI"], ["EXEC"], ["DISCARD"],
    ["WATCH", "k"], ["UNWATCH"], ["SELECT", "0"], ["HELLO", "3"],
    ["HELLO", "2"], ["CLIENT", "SETNAME", "fz"], ["CLIENT", "INFO"],
    ["CLIENT", "LIST"], ["COMMAND", "COUNT"], ["COMMAND", "INFO", "get"],
    ["INFO"], ["INFO", "keyspace"], ["TIME"], ["MEMORY", "USAGE", "k"],
    ["FT.CREATE", "idx", "ON", "HASH", "SCHEMA", "f", "TEXT"],
    ["FT.SEARCH", "idx", "hello | (a -b)"], ["FT._LIST"],
    ["RESTORE", "r", "0", "\x00\x01x\x0b\x00junkjunk"],
    ["PK.MAP"], ["PK.PARTITIONS"], ["PK.REPL", "PUSH", "1", "1", "x"],
    ["AUTH", "wrong"], ["AUTH", "default", "wrong"], ["QUIT"],
    ["RESET"], ["FLUSHDB"], ["CLIENT", "KILL", "TYPE", "normal"],
    ["CLIENT", "NO-EVICT", "on"], ["CLIENT", "REPLY", "OFF"],
    ["CLIENT", "REPLY", "SKIP"], ["CLIENT", "TRACKING", "on"],
    ["SET", "big", "x" * 200000], ["LRANGE", "l", "0", "-1"],
    ["GETEX", "big", "PERSIST"], ["WAIT", "1", "10"],
    ["BZPOPMIN", "noz", "0.01"], ["BLMOVE", "l", "l", "LEFT", "LEFT", "0"],
    ["HELLO", "3", "SETNAME", "x"], ["FUNCTION", "LIST"],
    # Clients blocked, woken and gone (the keys q* are pushed to by
    # others), and killed by id.
    ["BLPOP", "q1", "q2", "0"], ["BRPOPLPUSH", "q2", "q1", "0"],
    ["BLMPOP", "0", "2", "q1", "q2", "LEFT"], ["BZPOPMIN", "qz", "0"],
    ["BZMPOP", "1", "1", "qz", "MIN"], ["LPUSH", "q1", "x", "y"],
    ["RPUSH", "q2", "z"], ["ZADD", "qz", "1", "m", "2", "n"],
    ["CLIENT", "KILL", "ID", "7"], ["CLIENT", "KILL", "ID", "40"],
    ["CLIENT", "UNBLOCK", "9"], ["CLIENT", "UNBLOCK", "30", "ERROR"],
    # An index kept up to date while keys change under it.
    ["FT.CREATE", "i2", "ON", "HASH", "PREFIX", "1", "h", "SCHEMA", "f",
     "TEXT", "g", "TAG", "n", "NUMERIC", "SORTABLE"],
    ["HSET", "h1", "f", "hello world", "g", "a,b", "n", "5"],
    ["HSET", "h2", "f", "hello", "g", "b", "n", "-1e300"],
    ["FT.SEARCH", "i2", "@n:[1 10] @g:{a|b}", "SORTBY", "n", "LIMIT", "0",
     "5"],
    ["FT.AGGREGATE", "i2", "*", "GROUPBY", "1", "@g", "REDUCE", "COUNT",
     "0", "AS", "c", "SORTBY", "2", "@c", "DESC"],
    ["FT.INFO", "i2"], ["FT.DROPINDEX", "i2"], ["DEL", "h1", "h2"],
    ["FT.ALTER", "i2", "SCHEMA", "ADD", "m", "TEXT"],
]
# Sent as well in the acl runs: ACL edits and queries, logins, and keys
# inside and outside app1's patterns.  u1-u3 come and go; admin is never
# named.
ACL_SEEDS = [
    ["ACL", "SETUSER", "u1", "on", ">p1", "~u1:*", "+get", "+set"],
    ["ACL", "SETUSER", "u1", "reset"], ["ACL", "SETUSER", "u1", "off"],
    ["ACL", "SETUSER", "u2", "on", "nopass", "%R~*", "%W~u2:*", "+@all",
     "-@admin", "&ch*"],
    ["ACL", "SETUSER", "u2", "(~x:* +get)", "(%W~y:* +@write)"],
    ["ACL", "SETUSER", "u2", "clearselectors", "resetkeys", "allkeys"],
    ["ACL", "SETUSER", "u3", "on", "#" + "a" * 64, "<p1", "-@all",
     "+client|setname", "+config|get", "-debug"],
    ["ACL", "SETUSER", "app1", "-@write"],
    ["ACL", "SETUSER", "app1", "+@all", "-@dangerous"],
    ["ACL", "SETUSER", "app1", "resetpass", ">app1pw"],
    ["ACL", "DELUSER", "u1", "u2", "u3"], ["ACL", "GETUSER", "app1"],
    ["ACL", "GETUSER", "u2"], ["ACL", "LIST"], ["ACL", "USERS"],
    ["ACL", "WHOAMI"], ["ACL", "CAT"], ["ACL", "CAT", "write"],
    ["ACL", "DRYRUN", "app1", "GET", "app2:x"],
    ["ACL", "DRYRUN", "u2", "SET", "u2:a", "1"], ["ACL", "LOG"],
    ["ACL", "LOG", "3"], ["ACL", "LOG", "RESET"], ["ACL", "GENPASS", "33"],
    ["ACL", "SAVE"], ["ACL", "LOAD"], ["ACL", "HELP"],
    ["AUTH", "app1", "app1pw"], ["AUTH", "u1", "p1"], ["AUTH", "u2", "x"],
    ["AUTH", "reader", "readpw"], ["HELLO", "3", "AUTH", "app1", "app1pw"],
    ["GET", "app2:x"], ["SET", "app1:a", "1"], ["GET", "shared:y"],
    ["SET", "shared:y", "1"], ["MSET", "app1:b", "1", "app2:b", "2"],
    ["COPY", "app1:a", "app2:a"], ["RENAME", "app1:a", "app2:a"],
    ["HSET", "app1:h", "f", "hello"], ["HSET", "app2:h", "f", "hello"],
    ["FT.CREATE", "ai", "ON", "HASH", "SCHEMA", "f", "TEXT"],
    ["FT.SEARCH", "ai", "hello"], ["KEYS", "*"], ["SCAN", "0"],
    ["RANDOMKEY"], ["FLUSHALL"], ["CONFIG", "SET", "maxclients", "100"],
    ["CLIENT", "KILL", "USER", "app1"],
]
NUMBERS = [b"-1", b"-2", b"0", b"1", b"2147483647", b"2147483648",
           b"4294967296", b"9223372036854775807", b"9223372036854775808",
           b"-9223372036854775808", b"99999999999999999999", b"", b"+5",
           b"1e3", b" 3", b"0x10", b"3 ", b"536870912", b"536870913",
           b"1099511627776"]
TYPES = b"+-:$*_,#!=%~>(|."


def resp(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode("latin-1")
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def inline(args):
    return b" ".join(a.encode("latin-1") for a in args) + b"\r\n"


_HELLOS = {}


def client_hello(version):
    """The first flight of a TLS client of that highest version, made
    without a socket (memory BIOs)."""
    if version not in _HELLOS:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.maximum_version = version
        out = ssl.MemoryBIO()
        obj = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="localhost")
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        _HELLOS[version] = out.read()
    return _HELLOS[version]


def part_stream_seeds():
    """Snapshots and log records from fuzz/seeds/fuzz_part_stream (behind
    their mode byte, and a log record behind its u16 length)."""
    d = os.path.join(pkserver.ROOT, "fuzz", "seeds", "fuzz_part_stream")
    snaps, recs = [], []
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            b = f.read()
        if name.startswith("snap-"):
            snaps.append(b[1:])
        elif name.startswith("log-0"):
            recs.append(b[3:])
    return snaps, recs


class Frames:
    """The generator of hostile input, from one seeded Random.  With a
    cluster secret, also PK.REPL PUSH frames as a leader sends them to
    its followers, their snapshots and log records mutated."""

    def __init__(self, rng, logins, secret=None, seeds=SEEDS):
        self.rng = rng
        self.logins = logins
        self.secret = secret
        self.seeds = seeds
        self.epoch = 1
        if secret is not None:
            self.snaps, self.recs = part_stream_seeds()

    def cmd(self):
        return list(self.rng.choice(self.seeds))

    def valid(self):
        return resp(self.cmd())

    def truncated(self):
        f = self.valid()
        return f[:self.rng.randrange(len(f))]

    def bad_length(self):
        f = bytearray(self.valid())
        marks = [i for i, c in enumerate(f) if c in b"$*"]
        i = self.rng.choice(marks)
        j = f.index(b"\r\n", i)
        return bytes(f[:i + 1]) + self.rng.choice(NUMBERS) + bytes(f[j:])

    def bad_type(self):
        f = bytearray(self.valid())
        i = self.rng.choice([0] + [i + 2 for i in range(len(f) - 2)
                                   if f[i:i + 2] == b"\r\n"][:-1])
        f[i] = self.rng.choice(TYPES) if self.rng.random() < 0.7 \
            else self.rng.randrange(256)
        return bytes(f)

    def flipped(self):
        f = bytearray(self.valid())
        for _ in range(self.rng.randint(1, 4)):
            i = self.rng.randrange(len(f))
            op = self.rng.randrange(4)
            if op == 0:
                f[i] ^= 1 << self.rng.randrange(8)
            elif op == 1:
                f[i:i] = self.rng.choice([b"\r\n", b"\r", b"\n", b"\x00",
                                          b"\r\n\r\n", b" "])
            elif op == 2:
                del f[i]
            else:
                f[i] = self.rng.randrange(256)
        return bytes(f)

    def nested(self):
        depth = self.size([2, 8, 64, 1000], [10000, 100000])
        head = self.rng.choice([b"*1\r\n", b"*2\r\n", b"*-1\r\n", b">1\r\n",
                                b"%1\r\n"])
        return head * depth + self.valid()

    def random_bytes(self):
        return self.rng.randbytes(self.size([1, 2, 7, 64, 1024], [65536]))

    def size(self, small, large):
        """One of small mostly, one of large one time in 16."""
        return self.rng.choice(large if self.rng.random() < 1 / 16
                               else small)

    def long_inline(self):
        n = self.size([100, 1000, 4096], [65535, 65536, 70000, 1 << 20])
        end = self.rng.choice([b"", b"\r\n", b"\n"])
        return b"GET " + b"a" * n + end

    def big_bulk(self):
        n = self.size([1, 100, 1 << 10, 1 << 14], [1 << 16, 1 << 20, 4 << 20])
        sent = self.rng.choice([n, n - 1, n // 2, 0])
        return (b"*3\r\n$3\r\nSET\r\n$2\r\nbk\r\n$%d\r\n" % n
                + b"x" * sent + self.rng.choice([b"\r\n", b"", b"xx"]))

    def many_args(self):
        n = self.rng.choice([3, 1000, 1 << 20, 1 << 31])
        k = self.rng.randint(0, 50)
        return (b"*%d\r\n$4\r\nMSET\r\n" % n
                + b"$1\r\na\r\n" * k)

    def inline_cmd(self):
        f = inline(self.cmd())
        if self.rng.random() < 0.3:
            f = f.replace(b" ", self.rng.choice([b"  ", b"\t", b" \"",
                                                 b"'", b"\\x"]))
        return f

    def login(self):
        """AUTH or HELLO AUTH with one of the logins (right or wrong)."""
        if not self.logins:
            return resp(["AUTH", "nopass"])
        who = self.rng.choice(self.logins)
        if self.rng.random() < 0.5:
            return resp(["AUTH", *who])
        return resp(["HELLO", "3", "AUTH", *(["default"] + who)[-2:]])

    def auth_then(self):
        return self.login() + self.any_bad()

    def multi_mix(self):
        body = b"".join(self.pick()() for _ in range(self.rng.randint(1, 5)))
        return resp(["MULTI"]) + body + resp([self.rng.choice(
            ["EXEC", "DISCARD", "EXEC"])])

    def pipelined(self):
        return b"".join(self.pick()() for _ in range(self.rng.randint(2, 12)))

    def well_behaved(self):
        """Mostly valid commands, for the connections that live long
        enough to reach MULTI, WATCH, RESP3, blocking and big replies."""
        if self.rng.random() < 0.05:
            return self.pick()()
        return self.rng.choice([self.valid, self.valid, self.valid,
                                self.inline_cmd, self.valid_multi])()

    def valid_multi(self):
        body = b"".join(self.valid() for _ in range(self.rng.randint(0, 5)))
        return resp(["MULTI"]) + body + resp([self.rng.choice(
            ["EXEC", "DISCARD", "EXEC"])])

    def mutated(self, b):
        b = bytearray(b)
        for _ in range(self.rng.randint(0, 6)):
            if not b:
                break
            i = self.rng.randrange(len(b))
            op = self.rng.randrange(4)
            if op == 0:
                b[i] = self.rng.randrange(256)
            elif op == 1:
                del b[i:i + self.rng.randint(1, 8)]
            elif op == 2:
                b[i:i] = self.rng.randbytes(self.rng.randint(1, 8))
            else:
                b[i:i] = b[self.rng.randrange(len(b)):][:16]
        return bytes(b)

    def push(self):
        """PK.REPL PUSH leader mapepoch n (kind part epoch seq data)*n:
        hellos, log records, snapshots, commit positions, releases."""
        if self.rng.random() < 0.02:
            self.epoch += 1
        args = ["PK.REPL", "PUSH", str(self.rng.choice([0, 0, 1, 7])),
                str(self.rng.choice([1, 1, 2, 0, 100])), "0"]
        n = self.rng.choice([1, 1, 1, 2, 5])
        for _ in range(n):
            kind = self.rng.choice("HALLLSSCR" if self.rng.random() < 0.95
                                   else "XF")
            data = self.mutated(self.rng.choice(
                self.snaps if kind == "S" else self.recs))
            args += [kind, str(self.rng.choice([9, 9, 9, 0, 1, 16383,
                                                16384])),
                     str(self.epoch if self.rng.random() < 0.9
                         else self.rng.choice([0, 1, self.epoch + 1])),
                     str(self.rng.choice([0, 1, 2, 3, 7, 100])),
                     data.decode("latin-1")]
        args[4] = str(n if self.rng.random() < 0.95 else n + 1)
        return resp(["PK.AUTH", self.secret]) + resp(args)

    def hello_bytes(self):
        """What a TLS port is sent before any handshake: a ClientHello
        (of TLS 1.2 or 1.3, mutated or cut short mostly), random bytes
        or plain RESP."""
        r = self.rng.random()
        if r < 0.7:
            h = client_hello(self.rng.choice([ssl.TLSVersion.TLSv1_2,
                                              ssl.TLSVersion.TLSv1_3]))
            if self.rng.random() < 0.8:
                h = self.mutated(h)
            if self.rng.random() < 0.3:
                h = h[:self.rng.randrange(1, len(h))]
            return h
        if r < 0.85:
            return self.random_bytes()
        return self.pick()()

    def any_bad(self):
        return self.rng.choice([self.truncated, self.bad_length,
                                self.bad_type, self.flipped, self.nested,
                                self.random_bytes])()

    def pick(self):
        if self.secret is not None and self.rng.random() < 0.3:
            return self.push
        return self.rng.choice([
            self.valid, self.valid, self.valid, self.truncated,
            self.bad_length, self.bad_length, self.bad_type, self.flipped,
            self.flipped, self.nested, self.random_bytes, self.long_inline,
            self.big_bulk, self.many_args, self.inline_cmd, self.auth_then,
            self.auth_then, self.multi_mix, self.pipelined])


class Stats:
    def __init__(self):
        self.frames = 0
        self.sent = 0
        self.received = 0
        self.opened = 0
        self.closed_by_node = 0
        self.resets = 0
        self.handshakes = 0
        self.handshakes_cut = 0
        self.indexes = 0  # FT indexes dropped at the end
        self.anon_fuzzed = None  # RssAnon before they were


def sanitizer_report(text):
    for m in SANITIZER:
        if m in text:
            return m
    return None


def stderr_of(node):
    try:
        with open(node._errpath, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def anon_kb(pid):
    """RssAnon of a process in kB (its heap and stacks, not the LMDB map
    pages that VmRSS also counts), or None if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def call(host, port, login, args, timeout=10.0, tls=None):
    """One command on a fresh connection (after AUTH login when there is
    one, in TLS with a TlsFiles); returns the reply's bytes (a bulk
    reply's whole payload)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        if tls is not None:
            s = tls.context(True).wrap_socket(s, server_hostname="localhost")
        if login:
            s.sendall(resp(["AUTH", *login]))
            if not s.recv(64).startswith(b"+OK"):
                return b"AUTH refused"
        s.sendall(resp(args))
        rep = s.recv(65536)
        if rep.startswith(b"$") and b"\r\n" in rep:
            want = len(rep.split(b"\r\n", 1)[0]) + 2 + \
                int(rep[1:rep.index(b"\r\n")]) + 2
            while len(rep) < want:
                more = s.recv(65536)
                if not more:
                    break
                rep += more
        return rep


def ping(host, port, login, timeout=10.0, tls=None):
    return call(host, port, login, ["PING"], timeout, tls)


def heap_kb(node, login):
    """INFO's used_memory in kB -- the bytes malloc handed out and did not
    get back -- less what a hosted coordinator keeps of its recent events
    (coordinator_history_bytes, bounded); None when the node does not
    answer."""
    try:
        rep = call(node.host, node.port, login, ["INFO", "memory"])
    except OSError:
        return None
    f = dict(line.split(b":", 1) for line in rep.split(b"\r\n")
             if b":" in line)
    if b"used_memory" not in f:
        return None
    return (int(f[b"used_memory"]) -
            int(f.get(b"coordinator_history_bytes", b"0"))) // 1024


class TlsFiles:
    """A CA and a node certificate in a temporary directory, the node's
    TLS flags, and client contexts with and without a certificate."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="partkv-netfuzz-tls-")
        tlscerts.make_ca(self.dir, "ca")
        tlscerts.make_cert(self.dir, "node", "ca")
        self.port = None
        self._ctx = {}

    def path(self, name):
        return os.path.join(self.dir, name)

    def flags(self):
        return ["--tls-port", "0", "--tls-cert-file", self.path("node.crt"),
                "--tls-key-file", self.path("node.key"),
                "--tls-ca-cert-file", self.path("ca.crt"),
                "--tls-auth-clients", "optional"]

    def context(self, with_cert):
        if with_cert not in self._ctx:
            c = ssl.create_default_context(cafile=self.path("ca.crt"))
            if with_cert:
                c.load_cert_chain(self.path("node.crt"),
                                  self.path("node.key"))
            self._ctx[with_cert] = c
        return self._ctx[with_cert]

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def drop_indexes(host, port, login, timeout=120.0):
    """Drops every FT index the fuzzing made (a cluster node keeps a few
    MB per index, up to 256 of them, which the heap and RSS after would
    otherwise count), as login ([password] or [user, password]); returns
    how many, or None if some were still listed at the timeout (edits
    wait for the map, and the fuzzing may have queued many: under ASan
    one DROPINDEX has waited more than 30 s)."""
    import redis
    user, password = (None, None) if not login else \
        (None, login[0]) if len(login) == 1 else login
    r = redis.Redis(host=host, port=port, username=user, password=password,
                    socket_timeout=timeout)
    dropped = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            names = r.execute_command("FT._LIST")
            if not names:
                return dropped
            for n in names:
                try:
                    r.execute_command("FT.DROPINDEX", n)
                    dropped += 1
                except redis.ResponseError:
                    pass
            time.sleep(0.2)
        return None
    except redis.RedisError:
        return None
    finally:
        r.close()


class PeerNode:
    """A cluster of one node (`partkv cluster up --nodes 1`), seen as a
    pkserver.Server: the node leads every partition and takes PK.REPL
    from whoever has the cluster secret."""

    def __init__(self):
        self.cl = pkcluster.Cluster(
            nodes=1, replicas=None,
            base_port=pkcluster.free_port_block(1))
        self.secret = self.cl.secret

    def start(self):
        self.cl.start()
        n = self.cl.nodes[0]
        self.host, self.port, self.pid = n.host, n.port, n.pid
        self._errpath = self.cl._errpath
        self.proc = self.cl.proc
        return self

    def alive(self):
        return self.cl.alive() and self.cl.node_alive(self.pid)

    def rss_kb(self):
        return pkserver.rss_kb(self.pid)

    def stop(self, timeout=30.0):
        return self.cl.stop(timeout)

    def logs(self, limit=4000):
        return self.cl.logs(limit)

    def cleanup(self):
        self.cl.cleanup()


class Fuzzer:
    """conns connections to node, opened again when closed.  With tls
    (a TlsFiles), connection i is: i % 8 == 7, a plain socket to the TLS
    port sent what comes before a handshake (Frames.hello_bytes); i % 8
    == 6, the plain port; the others TLS sessions, with a client
    certificate when i is even."""

    def __init__(self, node, rng, logins, conns, stats, secret=None,
                 seeds=SEEDS, tls=None):
        self.node = node
        self.rng = rng
        self.logins = logins
        self.frames = Frames(rng, logins, secret, seeds)
        self.tls = tls
        self.sel = selectors.DefaultSelector()
        self.socks = [None] * conns
        self.pending = [b""] * conns  # the rest of a frame sent in parts
        self.stats = stats

    def kind(self, i):
        if self.tls is None or i % 8 == 6:
            return "plain"
        return "hello" if i % 8 == 7 else "tls"

    def open(self, i):
        kind = self.kind(i)
        port = self.node.port if kind == "plain" else self.tls.port
        s = socket.create_connection((self.node.host, port), timeout=5)
        if kind == "tls":
            # Handshakes, blocking.  A fuzzed CLIENT KILL may close it
            # meanwhile: counted, and the end's PING over TLS tells
            # whether TLS still works.
            try:
                s = self.tls.context(i % 2 == 0).wrap_socket(
                    s, server_hostname="localhost")
            except OSError:
                s.close()
                self.stats.handshakes_cut += 1
                return
            self.stats.handshakes += 1
        s.setblocking(False)
        self.socks[i] = s
        # One connection in 16 never reads: its replies pile up in the
        # node (backpressure, output buffers).
        if i % 16 != 15:
            self.sel.register(s, selectors.EVENT_READ, i)
        self.stats.opened += 1
        if self.logins and kind != "hello" and self.rng.random() < 0.7:
            self.send(i, resp(["AUTH", *self.rng.choice(self.logins)]))

    def frame(self, i):
        if self.kind(i) == "hello":
            return self.frames.hello_bytes()
        if i % 4 == 0:
            return self.frames.well_behaved()
        return self.frames.pick()()

    def close(self, i, reset=False):
        s = self.socks[i]
        if s is None:
            return
        if i % 16 != 15:
            self.sel.unregister(s)
        if reset:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            self.stats.resets += 1
        s.close()
        self.socks[i] = None
        self.pending[i] = b""

    def send(self, i, data):
        """Sends what the socket takes now; the rest is dropped (the
        node sees a frame cut short, which is a case of its own)."""
        s = self.socks[i]
        if s is None:
            return
        try:
            self.stats.sent += s.send(data)
        except (BlockingIOError, InterruptedError):
            pass
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
            # OpenSSL wants the same bytes again, first.
            self.pending[i] = data + self.pending[i]
        except OSError:
            self.close(i)
            self.stats.closed_by_node += 1

    def drain(self, timeout=0.0):
        for key, _ in self.sel.select(timeout):
            i = key.data
            try:
                while True:
                    d = self.socks[i].recv(1 << 16)
                    if not d:
                        self.close(i)
                        self.stats.closed_by_node += 1
                        break
                    self.stats.received += len(d)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                pass
            except OSError:
                self.close(i)
                self.stats.closed_by_node += 1

    def run(self, deadline, max_frames):
        while time.monotonic() < deadline and \
                self.stats.frames < max_frames:
            i = self.rng.randrange(len(self.socks))
            if self.socks[i] is None:
                try:
                    self.open(i)
                except OSError:
                    if not self.node.alive():
                        return
                    raise
            if self.rng.random() < 0.01:
                self.close(i, reset=self.rng.random() < 0.5)
                continue
            if self.pending[i]:
                data, self.pending[i] = self.pending[i], b""
            else:
                data = self.frame(i)
                self.stats.frames += 1
            # A frame in parts, the others sent between them (not in TLS:
            # a write OpenSSL could not finish must come again whole).
            if len(data) > 1 and self.rng.random() < 0.2 and \
                    self.kind(i) != "tls":
                cut = self.rng.randrange(1, len(data))
                data, self.pending[i] = data[:cut], data[cut:]
            self.send(i, data)
            if self.stats.frames % 16 == 0:
                self.drain()
            if self.stats.frames % 1024 == 0 and not self.node.alive():
                return
        self.drain(0.2)

    def close_all(self):
        for i in range(len(self.socks)):
            self.close(i)


def start_node(mode, tls):
    """The node of a run of that mode, not yet started, and the logins
    its fuzzer may use (a right one first)."""
    if mode == "peer":
        return PeerNode(), None
    if mode == "requirepass":
        return pkserver.Server(kind="partkv", requirepass=PASSWORD), \
            [[PASSWORD], ["wrong"]]
    if mode == "acl":
        node = pkserver.Server(kind="partkv")
        path = os.path.join(node.dir, "users.acl")
        with open(path, "w") as f:
            f.write(ACL_FILE)
        node.extra = ["--aclfile", path]
        return node, ACL_LOGINS
    if mode == "tls":
        return pkserver.Server(kind="partkv", extra=tls.flags()), None
    return pkserver.Server(kind="partkv"), None


def one_run(partkv, seconds, max_frames, conns, mode, seed, log):
    """One node, fuzzed for seconds; mode is one of MODES.  Returns a
    list of failures (empty: passed) and a dict of figures."""
    rng = random.Random(seed)
    stats = Stats()
    failures = []
    old_env = os.environ.get("ASAN_OPTIONS")
    # A small quarantine so that RSS after says something under ASan;
    # leaks are looked for at exit.
    os.environ["ASAN_OPTIONS"] = (old_env + ":" if old_env else "") + \
        "quarantine_size_mb=16:detect_leaks=1"
    old_bin = os.environ.get("PARTKV")
    os.environ["PARTKV"] = partkv
    tls = TlsFiles() if mode == "tls" else None
    node, logins = start_node(mode, tls)
    login = logins[0] if logins else None
    try:
        node.start()
        if tls is not None:
            tls.port = tlscerts.tls_port(node)
    finally:
        for k, v in (("ASAN_OPTIONS", old_env), ("PARTKV", old_bin)):
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    fz = Fuzzer(node, rng, logins, conns, stats,
                getattr(node, "secret", None),
                SEEDS + ACL_SEEDS if mode == "acl" else SEEDS, tls)
    try:
        time.sleep(0.2)
        rss0, anon0 = node.rss_kb(), anon_kb(node.pid)
        heap0 = heap_kb(node, login)
        t0 = time.monotonic()
        fz.run(t0 + seconds, max_frames)
        elapsed = time.monotonic() - t0
        fz.close_all()
        if not node.alive():
            failures.append("node died (exit %s) after %d frames"
                            % (node.proc.returncode, stats.frames))
        else:
            time.sleep(1.0)
            for port in [node.port] + ([tls.port] if tls else []):
                try:
                    rep = ping(node.host, port, login,
                               tls=tls if port != node.port else None)
                except OSError as e:
                    rep = repr(e).encode()
                if not rep.startswith(b"+PONG"):
                    failures.append("PING after fuzzing answered %r"
                                    % rep[:80])
            if tls is not None and stats.handshakes == 0:
                failures.append("no TLS handshake went through (%d cut)"
                                % stats.handshakes_cut)
            if not failures:
                stats.anon_fuzzed = anon_kb(node.pid)
                stats.indexes = drop_indexes(node.host, node.port, login)
                if stats.indexes:
                    time.sleep(2.0)  # the tick frees what dropped ones held
                try:
                    rep = ping(node.host, node.port, login)
                except OSError as e:
                    rep = repr(e).encode()
                if not rep.startswith(b"+PONG"):
                    failures.append("PING after dropping the indexes "
                                    "answered %r" % rep[:80])
        rss1, anon1 = node.rss_kb(), anon_kb(node.pid)
        heap1 = heap_kb(node, login) if node.alive() else None
        slack = RSS_SLACK_ASAN_KB if is_asan(partkv) else RSS_SLACK_KB
        # Indexes still there (not all dropped in time) hold their memory.
        if anon0 and anon1 and anon1 - anon0 > slack and \
                stats.indexes is not None:
            failures.append("RssAnon grew from %d kB to %d kB"
                            % (anon0, anon1))
        if heap0 is None or heap1 is None:
            log("netfuzz: the heap was not measured (INFO memory "
                "unanswered)")
        elif heap1 - heap0 > HEAP_SLACK_KB and stats.indexes is not None:
            failures.append("the heap (INFO used_memory) grew from %d kB "
                            "to %d kB" % (heap0, heap1))
        if node.alive():
            rc = node.stop(timeout=30.0)
            if rc != 0:
                failures.append("SIGTERM: exit status %s" % rc)
        err = stderr_of(node)
        m = sanitizer_report(err)
        if m:
            i = err.index(m)
            failures.append("sanitizer report (%s):\n%s"
                            % (m, err[max(0, i - 200):i + 4000]))
        fig = {"seed": seed, "mode": mode,
               "seconds": round(elapsed, 1), "frames": stats.frames,
               "sent_kb": stats.sent // 1024,
               "received_kb": stats.received // 1024,
               "connections": stats.opened,
               "closed_by_node": stats.closed_by_node,
               "resets": stats.resets, "handshakes": stats.handshakes,
               "handshakes_cut": stats.handshakes_cut, "indexes_dropped": stats.indexes,
               "anon_before_drop_kb": stats.anon_fuzzed,
               "rss_before_kb": rss0,
               "rss_after_kb": rss1, "anon_before_kb": anon0,
               "anon_after_kb": anon1, "heap_before_kb": heap0,
               "heap_after_kb": heap1}
        log("netfuzz: %s" % " ".join("%s=%s" % kv for kv in fig.items()))
        if failures:
            log("netfuzz: node output:\n%s" % node.logs(8000))
        return failures, fig
    finally:
        fz.close_all()
        node.cleanup()
        if tls is not None:
            tls.cleanup()


MODES = ("plain", "requirepass", "peer", "acl", "tls")


def run(partkv, seconds, runs=len(MODES), conns=64, max_frames=10 ** 9,
        seed=None, log=print, modes=MODES):
    """runs runs of seconds each, taking modes in turn (by default every
    kind); returns the failures of all."""
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 32)
    failures = []
    for r in range(runs):
        mode = modes[r % len(modes)]
        f, _ = one_run(partkv, seconds, max_frames, conns, mode, seed + r,
                       log)
        f = ["run %d (seed %d, %s): %s" % (r, seed + r, mode, x) for x in f]
        for x in f:  # at once: a long run may be cut short
            log("netfuzz: FAIL " + x)
        failures += f
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partkv", default=os.path.join(
        pkserver.ROOT, "build", "asan", "partkv"),
        help="the node's binary (default build/asan/partkv)")
    ap.add_argument("--duration", type=float, default=60.0,
                    help="seconds in all, split between the runs")
    ap.add_argument("--runs", type=int, default=len(MODES),
                    help="nodes started one after another, taking the "
                    "modes in turn (default %d)" % len(MODES))
    ap.add_argument("--modes", default=",".join(MODES),
                    help="the kinds of run to take in turn (default %s)"
                    % ",".join(MODES))
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--frames", type=int, default=10 ** 9,
                    help="at most this many frames per run")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    if not os.access(a.partkv, os.X_OK):
        sys.exit("netfuzz: no %s (make BUILD=build/asan ... all, see "
                 "the README)" % a.partkv)
    seed = a.seed if a.seed is not None else \
        random.SystemRandom().randrange(1 << 32)
    print("netfuzz: %s, %d runs of %.0f s, seed %d"
          % (a.partkv, a.runs, a.duration / a.runs, seed), flush=True)
    modes = a.modes.split(",")
    if not modes or any(m not in MODES for m in modes):
        sys.exit("netfuzz: --modes takes %s" % ",".join(MODES))
    failures = run(os.path.abspath(a.partkv), a.duration / a.runs, a.runs,
                   a.conns, a.frames, seed,
                   log=lambda s: print(s, flush=True), modes=modes)
    for f in failures:
        print("FAIL " + f)
    print("netfuzz: %s" % ("FAILED" if failures else "passed"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
