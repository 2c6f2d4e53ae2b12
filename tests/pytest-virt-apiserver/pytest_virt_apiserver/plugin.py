"""pytest fixtures for tests against virt-apiserver.

- `virt_apiserver` (session): one server for the session, started with the flags of
  `--virt-apiserver-arg` (repeatable) or the `virt_apiserver_args` ini option, e.g. `--simulate`;
- `kube_api_client`: a `kubernetes.client.ApiClient` for it;
- `namespace`: a fresh namespace per test, deleted after it;
- `fault`: `fault(spec, name=None)` adds a Fault that is deleted when the test ends.
"""

import itertools
import re

import kubernetes
import pytest

from pytest_virt_apiserver.server import start


def pytest_addoption(parser):
    parser.addoption("--virt-apiserver-arg", action="append", default=[],
                     help="a flag for the session's virt-apiserver (repeatable)")
    parser.addini("virt_apiserver_args", "flags for the session's virt-apiserver", type="args", default=[])


@pytest.fixture(scope="session")
def virt_apiserver(pytestconfig):
    args = [*pytestconfig.getini("virt_apiserver_args"), *pytestconfig.getoption("virt_apiserver_arg")]
    server = start(*args)
    yield server
    server.stop()


@pytest.fixture()
def kube_api_client(virt_apiserver):
    with virt_apiserver.api_client() as api:
        yield api


_serial = itertools.count()


def _name(request):
    """A DNS label from the test's name, unique in the session."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:50].strip("-")
    return f"{base}-{next(_serial)}"


@pytest.fixture()
def namespace(kube_api_client, request):
    """A namespace of the test's own, named after it."""
    name = _name(request)
    core = kubernetes.client.CoreV1Api(kube_api_client)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


@pytest.fixture()
def fault(virt_apiserver, request):
    """`fault(spec, name=None)`: a Fault in force until the test ends."""
    made = []

    def add(spec, name=None):
        name = name or _name(request)
        virt_apiserver.add_fault(name, spec)
        made.append(name)
        return name

    yield add
    for name in made:
        try:
            virt_apiserver.remove_fault(name)
        except kubernetes.client.ApiException as e:
            if e.status != 404:
                raise
