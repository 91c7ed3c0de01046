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
