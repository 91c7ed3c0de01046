"""A short run of the network fuzzer (netfuzz.py) against the node under
test: five nodes one after another -- without a password, with
--requirepass, a cluster of one that is also sent PK.REPL PUSH frames
(mutated partition snapshots and log records), one with ACL users that
is also sent ACL commands, and one with a TLS port (fuzzed inside TLS
sessions, and sent mutated ClientHellos) -- 64 connections of random and
mutated RESP each.  Every node must survive,
answer PING afterwards, print no sanitizer report and stop cleanly on
SIGTERM; its RSS must come back near where it began.

The node is $PARTKV: the plain build under make test (a crash is caught,
a quiet memory error is not), the ASan+UBSan build under make check.
PARTKV_NETFUZZ_SECONDS (default 1) is the length of each run,
PARTKV_NETFUZZ_SEED=N replays one (the seed is printed and named in every
failure).  The long run is netfuzz.py itself (see the README)."""
import os
import random

import pytest

import netfuzz
import server as pkserver


@pytest.mark.partkv_only
def test_netfuzz():
    path = pkserver.partkv_path()
    assert os.access(path, os.X_OK), "build partkv first (make)"
    seed = int(os.environ.get("PARTKV_NETFUZZ_SEED")
               or random.SystemRandom().randrange(1 << 32))
    seconds = float(os.environ.get("PARTKV_NETFUZZ_SECONDS") or "1")
    print("test_netfuzz: PARTKV_NETFUZZ_SEED=%d" % seed)
    failures = netfuzz.run(path, seconds, conns=64, seed=seed)
    assert not failures, "\n".join(failures)
