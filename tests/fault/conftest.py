"""Fixtures of the fault harness (see faultlib.py): the session's
127.0.K.0/24, the iptables rules (healed at teardown, also when the test
failed), and clusters stopped by PID at teardown."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, HERE)

import faultlib  # noqa: E402
import server as pkserver  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    pkserver.sweep_owned()


@pytest.fixture(scope="session")
def subnet():
    if faultlib.iptables_status()[0]:
        faultlib.sweep_dead_runs()
    prefix = faultlib.pick_subnet()
    faultlib.note("session %s: addresses %s0/24, iptables tag %s"
                  % ("long" if faultlib.LONG else "short", prefix,
                     faultlib.TAG))
    return prefix


@pytest.fixture(scope="session")
def iptables_ok():
    ok, why = faultlib.iptables_status()
    if not ok:
        faultlib.note("iptables unusable (%s): link faults skipped" % why)
    return ok, why


@pytest.fixture
def net(subnet, iptables_ok):
    """A faultlib.Net; skips the test when iptables cannot be used.  Every
    rule of this run is deleted at teardown."""
    ok, why = iptables_ok
    if not ok:
        pytest.skip("iptables unusable: %s" % why)
    n = faultlib.Net(subnet)
    yield n
    n.heal()


@pytest.fixture
def fcluster(subnet, request):
    """make(**kw) -> a started faultlib.FaultCluster, cleaned up (nodes
    and etcd members SIGKILLed by PID, dirs removed) at teardown, after
    this run's iptables rules are deleted (whatever the order in which the
    test named the fixtures)."""
    made = []

    def make(**kw):
        c = faultlib.FaultCluster(subnet, **kw)
        made.append(c)
        c.start()
        return c
    yield make
    if "net" in request.fixturenames:
        faultlib.Net(subnet).heal()
    for c in made:
        c.cleanup()
