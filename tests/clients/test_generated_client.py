"""A client generated from our /openapi/v2 by a real generator (openapi-generator, Python target):
create, get, list, patch and delete a VirtualMachine, every answer parsed by the generated models."""

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

import pytest


def generator():
    exe = os.environ.get("OPENAPI_GENERATOR_CLI") or shutil.which("openapi-generator-cli")
    if not exe:
        pytest.fail("openapi-generator-cli is missing: run the README's test command, which installs it")
    return exe


@pytest.fixture()
def virtclient(server):
    """Generates the client from the running server's document and imports it."""
    out = tempfile.mkdtemp(prefix="virtclient-")
    spec = os.path.join(out, "spec.json")
    with urllib.request.urlopen(server + "/openapi/v2") as resp, open(spec, "wb") as f:
        f.write(resp.read())
    run = subprocess.run(
        [generator(), "generate", "-i", spec, "-g", "python", "-o", os.path.join(out, "client"),
         "--package-name", "virtclient"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    sys.path.insert(0, os.path.join(out, "client"))
    try:
        mod = importlib.import_module("virtclient")
        yield mod
    finally:
        sys.path.remove(os.path.join(out, "client"))
        for name in [m for m in sys.modules if m == "virtclient" or m.startswith("virtclient.")]:
            del sys.modules[name]
        shutil.rmtree(out, ignore_errors=True)


def test_generated_client_crud(server, virtclient):
    conf = virtclient.Configuration(host=server)
    # The namespace first, through the generated core/v1 API, as against a real cluster.
    core = virtclient.CoreV1Api(virtclient.ApiClient(conf))
    ns = core.create_core_v1_namespace(
        virtclient.IoK8sApiCoreV1Namespace.from_dict(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gen"}}
        )
    )
    assert isinstance(ns, virtclient.IoK8sApiCoreV1Namespace)
    assert ns.status.phase == "Active"
    api = virtclient.KubevirtIoV1Api(virtclient.ApiClient(conf))
    vm = virtclient.IoKubevirtV1VirtualMachine.from_dict(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "gen-vm", "labels": {"app": "gen"}},
            "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}},
        }
    )
    created = api.create_kubevirt_io_v1_namespaced_virtual_machine("gen", vm)
    assert isinstance(created, virtclient.IoKubevirtV1VirtualMachine)
    assert created.metadata.name == "gen-vm" and created.metadata.uid
    assert created.metadata.generation == 1

    got = api.read_kubevirt_io_v1_namespaced_virtual_machine("gen-vm", "gen")
    assert got.metadata.resource_version == created.metadata.resource_version

    listed = api.list_kubevirt_io_v1_namespaced_virtual_machine("gen", label_selector="app=gen")
    assert isinstance(listed, virtclient.IoKubevirtV1VirtualMachineList)
    assert [i.metadata.name for i in listed.items] == ["gen-vm"]
    assert listed.metadata.resource_version

    everywhere = api.list_kubevirt_io_v1_virtual_machine_for_all_namespaces()
    assert [i.metadata.namespace for i in everywhere.items] == ["gen"]

    patched = api.patch_kubevirt_io_v1_namespaced_virtual_machine(
        "gen-vm",
        "gen",
        {"metadata": {"labels": {"patched": "yes"}}},
        _content_type="application/merge-patch+json",
    )
    assert isinstance(patched, virtclient.IoKubevirtV1VirtualMachine)
    assert patched.metadata.labels == {"app": "gen", "patched": "yes"}

    status = api.delete_kubevirt_io_v1_namespaced_virtual_machine("gen-vm", "gen")
    assert isinstance(status, virtclient.IoK8sApimachineryPkgApisMetaV1Status)
    assert status.status == "Success"
    assert status.details.name == "gen-vm"

    with pytest.raises(virtclient.exceptions.NotFoundException) as e:
        api.read_kubevirt_io_v1_namespaced_virtual_machine("gen-vm", "gen")
    assert e.value.status == 404
