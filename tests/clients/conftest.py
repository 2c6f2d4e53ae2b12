"""Shared fixtures for the Python client suites: a real virt-apiserver on an ephemeral port."""

import os
import subprocess
import tempfile
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def server_binary():
    path = os.environ.get("VIRT_APISERVER_BIN", os.path.join(REPO, "target", "debug", "virt-apiserver"))
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: build it first (cargo build), or run the README's test command")
    return path


def run_server(*args):
    """Starts the server with a temporary database and `args`; yields its base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [server_binary(), "--listen", "127.0.0.1:0", "--database", os.path.join(tmp, "virt.db"), *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            line = proc.stdout.readline().strip()
            assert line.startswith("listening on "), line
            yield line[len("listening on "):]
        finally:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture()
def server():
    """A pure API server (nothing moves objects)."""
    yield from run_server()


@pytest.fixture()
def simulating_server():
    """A server whose simulated runtime moves VMs as KubeVirt would, at five times the speed."""
    yield from run_server("--simulate", "--simulate-speed", "0.2")


def wait_for(predicate, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
