"""Memory held for hostile connections: the RSS a node gains per
connection with HOSTILE_CONNS (1000) connections of one kind open at once,
for partkv and, in the same run as the anchor, redis-server.

Each case starts a fresh server (with requirepass unless the case says
nopass), waits until its RSS settles, opens the connections, lets each do
its part for HOSTILE_HOLD (5) seconds, then reads VmRSS and the server's
connected_clients (INFO, from a connection made before the baseline).
Kinds:
  idle    connects and sends nothing;
  mbulk   sends "*1000000\\r\\n", a huge multibulk count, and waits;
  bulk    sends "*2\\r\\n$3\\r\\nSET\\r\\n$100000000\\r\\n" (a 100 MB bulk,
          under proto-max-bulk-len) and 64 KiB of its body, and waits;
  drip    sends "*3\\r\\n$3\\r\\nSET\\r\\n$1\\r\\nk\\r\\n$16384\\r\\n" and then
          one byte of the body per second (within the unauthenticated
          limits, so the connection stays open).
Without a password (nopass) every connection is authenticated: the same
kinds then show what the unauthenticated limits save.

Environment: PARTKV (binary, default build/partkv), REDIS_SERVER
(default redis-server), HOSTILE_CONNS, HOSTILE_HOLD, HOSTILE_KINDS
(comma list), HOSTILE_AUTH (pass,nopass).  Raises RLIMIT_NOFILE to its
hard limit.  Prints only.
"""
import os
import resource
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
if "PARTKV" not in os.environ:
    os.environ["PARTKV"] = os.path.join(HERE, "..", "build", "partkv")

from server import RespClient, Server  # noqa: E402

N = int(os.environ.get("HOSTILE_CONNS", "1000"))
HOLD = float(os.environ.get("HOSTILE_HOLD", "5"))
KINDS = os.environ.get("HOSTILE_KINDS", "idle,mbulk,bulk,drip").split(",")
AUTHS = os.environ.get("HOSTILE_AUTH", "pass,nopass").split(",")
PASS = "hostile-bench-pw"

FIRST = {
    "idle": b"",
    "mbulk": b"*1000000\r\n",
    "bulk": b"*2\r\n$3\r\nSET\r\n$100000000\r\n" + b"x" * 65536,
    "drip": b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16384\r\n",
}


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * N + 64:
        sys.exit("hostile-conns: ulimit -n %d is too low for %d connections"
                 % (soft, N))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle(pid, timeout=20.0):
    """RSS once it stops moving (partkv faults its map in after start)."""
    last, still = rss_kb(pid), 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and still < 3:
        time.sleep(0.5)
        now = rss_kb(pid)
        still = still + 1 if abs(now - last) < 64 else 0
        last = now
    return last


def send_quietly(s, data):
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def connected(admin):
    info = admin.call("INFO", "clients")
    for line in info.splitlines():
        if line.startswith("connected_clients:"):
            return int(line.split(":")[1]) - 1  # not admin itself
    return -1


def run_case(kind, server_kind, auth):
    srv = Server(kind=server_kind,
                 requirepass=PASS if auth == "pass" else None,
                 extra=["--maxclients", str(N + 100)])
    srv.start()
    socks = []
    try:
        admin = srv.raw(timeout=10)
        base = settle(srv.pid)
        for _ in range(N):
            s = socket.create_connection((srv.host, srv.port), timeout=5)
            s.setblocking(False)
            socks.append(s)
        t0 = time.monotonic()
        for s in socks:
            if FIRST[kind]:
                s.setblocking(True)
                s.settimeout(0.5)
                send_quietly(s, FIRST[kind])
                s.setblocking(False)
        peak = rss_kb(srv.pid)
        while time.monotonic() - t0 < HOLD:
            time.sleep(1.0)
            if kind == "drip":
                for s in socks:
                    send_quietly(s, b"x")
            peak = max(peak, rss_kb(srv.pid))
        time.sleep(0.3)
        end = rss_kb(srv.pid)
        peak = max(peak, end)
        still = connected(admin)
        admin.close()
    finally:
        for s in socks:
            s.close()
        srv.stop()
        srv.cleanup()
    return {"base": base, "end": end, "peak": peak, "open": still}


def main():
    raise_nofile()
    print("hostile-conns: %d connections per case, held %.0f s; RSS in kB, "
          "per connection in bytes ((end - base) / conns)" % (N, HOLD))
    print("%-7s %-7s %-6s %6s %9s %9s %9s %10s %10s" % (
        "server", "auth", "kind", "open", "base", "end", "peak",
        "per_conn", "peak_conn"))
    for auth in AUTHS:
        for kind in KINDS:
            for server_kind in ("partkv", "redis"):
                r = run_case(kind, server_kind, auth)
                print("%-7s %-7s %-6s %6d %9d %9d %9d %10.0f %10.0f" % (
                    server_kind, auth, kind, r["open"], r["base"], r["end"],
                    r["peak"], (r["end"] - r["base"]) * 1024.0 / N,
                    (r["peak"] - r["base"]) * 1024.0 / N), flush=True)


if __name__ == "__main__":
    main()
