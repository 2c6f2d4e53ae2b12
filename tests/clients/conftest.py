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


@pytest.fixture()
def server():
    """Starts the server with a temporary database; yields its base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [server_binary(), "--listen", "127.0.0.1:0", "--database", os.path.join(tmp, "virt.db")],
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


def wait_for(predicate, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
