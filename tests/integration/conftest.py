"""Shared fixtures: where the partkv binary is."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def partkv():
    path = os.environ.get("PARTKV", os.path.join(ROOT, "build", "partkv"))
    assert os.access(path, os.X_OK), "build partkv first (make)"

    def run(*args, check=True, timeout=300):
        p = subprocess.run([path, *args], capture_output=True, text=True,
                           timeout=timeout)
        if check:
            assert p.returncode == 0, p.stderr
        return p
    return run


# ---------------------------------------------------------------------------
# Server fixtures (tests/integration/server.py).  PARTKV_TEST_TARGET=redis
# runs the same tests against redis-server to validate the expectations;
# tests marked partkv_only are skipped there.
# ---------------------------------------------------------------------------
import server as pkserver  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "partkv_only: partkv-specific, skipped when "
        "PARTKV_TEST_TARGET=redis")
    config.addinivalue_line(
        "markers", "slow: a long test (seconds of throttled moves); still "
        "part of make test, select alone with -m slow")
    config.addinivalue_line(
        "markers", "long_fault: a long fault schedule; run by make "
        "test-faults, left out of make test (-m 'not long_fault')")


def pytest_sessionfinish(session, exitstatus):
    pkserver.sweep_owned()


def pytest_collection_modifyitems(config, items):
    if pkserver.target() != "redis":
        return
    skip = pytest.mark.skip(reason="partkv-only (PARTKV_TEST_TARGET=redis)")
    for item in items:
        if "partkv_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def target():
    """'partkv' or 'redis' (env PARTKV_TEST_TARGET)."""
    return pkserver.target()


@pytest.fixture
def server_factory(target):
    """make(**opts) -> started pkserver.Server; every server made is stopped
    by PID at teardown.  A server that exited although nobody stopped it
    (Server.stop/kill) and the test did not expect it (srv.expect_exit =
    True) fails the teardown with its logs: that catches crashes."""
    if target == "partkv":
        path = pkserver.partkv_path()
        assert os.access(path, os.X_OK), "build partkv first (make)"
    made = []

    def make(start=True, **opts):
        s = pkserver.Server(kind=target, **opts)
        s.expect_exit = False
        made.append(s)
        if start:
            s.start()
        return s
    yield make
    crashed = []
    for s in made:
        if (s.proc is not None and not s.expect_exit
                and not s.stopped_by_us and not s.alive()):
            crashed.append("%r exited with %s\n%s"
                           % (s, s.proc.returncode, s.logs()))
        s.cleanup()
    assert not crashed, "server died during the test:\n" + "\n".join(crashed)


@pytest.fixture
def server(server_factory):
    """A fresh server on an ephemeral port in a temporary directory."""
    return server_factory()


@pytest.fixture
def r(server):
    """redis.Redis (RESP2) with decode_responses=True."""
    c = server.client()
    yield c
    c.close()


@pytest.fixture
def rb(server):
    """redis.Redis (RESP2) returning bytes."""
    c = server.client(decode_responses=False)
    yield c
    c.close()


@pytest.fixture
def raw(server):
    """Raw RESP2 client: replies as sent, errors as pkserver.RespError."""
    c = server.raw(proto=2)
    yield c
    c.close()


@pytest.fixture
def r3(server):
    """Raw RESP3 client (python3-redis 4.3.4 has no protocol=3): HELLO 3
    already sent; replies keep their RESP3 types (pkserver.Map, Double...)."""
    c = server.raw(proto=3)
    yield c
    c.close()


# ---------------------------------------------------------------------------
# Cluster fixtures (tests/integration/cluster.py): `partkv cluster up`.
# ---------------------------------------------------------------------------
import cluster as pkcluster  # noqa: E402


@pytest.fixture
def cluster_factory():
    """make(**opts) -> started pkcluster.Cluster (opts: nodes, base_port,
    replicas, secret, dir; start=False to only build it).  Every cluster
    made is stopped at teardown (SIGTERM to the `cluster up` PID, then
    SIGKILL of any node PID of its own that is left), and its temp dir
    removed."""
    path = pkserver.partkv_path()
    assert os.access(path, os.X_OK), "build partkv first (make)"
    made = []

    def make(start=True, **opts):
        c = pkcluster.Cluster(**opts)
        made.append(c)
        if start:
            c.start()
        return c
    yield make
    for c in made:
        c.cleanup()
