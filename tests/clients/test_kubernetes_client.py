"""The Python `kubernetes` client (PyPI) against the real server: DynamicClient CRUD,
`watch.Watch().stream` with a resource_version, and a watch following a simulated VM to Running."""

import threading

from kubernetes import client, dynamic, watch
from kubernetes.dynamic.exceptions import NotFoundError

NS = "py"


def api(base):
    conf = client.Configuration(host=base)
    return client.ApiClient(conf)


def create_namespace(base, name):
    """Makes namespace `name`, as a client of a real cluster must before it puts anything there."""
    made = client.CoreV1Api(api(base)).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name))
    )
    assert made.status.phase == "Active"
    assert made.spec.finalizers == ["kubernetes"]


def vm(name, labels=None):
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}},
    }


def test_dynamic_client_crud(server):
    create_namespace(server, NS)
    dyn = dynamic.DynamicClient(api(server))
    vms = dyn.resources.get(api_version="kubevirt.io/v1", kind="VirtualMachine")
    assert vms.namespaced and vms.name == "virtualmachines"

    created = vms.create(body=vm("py-vm", {"app": "py"}), namespace=NS)
    assert created.metadata.name == "py-vm"
    assert created.metadata.uid
    assert created.metadata.generation == 1

    got = vms.get(name="py-vm", namespace=NS)
    assert got.metadata.resourceVersion == created.metadata.resourceVersion
    assert got.spec.runStrategy == "Halted"

    listed = vms.get(namespace=NS, label_selector="app=py")
    assert [i.metadata.name for i in listed.items] == ["py-vm"]
    assert listed.kind == "VirtualMachineList"

    patched = vms.patch(
        name="py-vm",
        namespace=NS,
        body={"spec": {"runStrategy": "Always"}},
        content_type="application/merge-patch+json",
    )
    assert patched.spec.runStrategy == "Always"
    assert int(patched.metadata.resourceVersion) > int(created.metadata.resourceVersion)
    assert patched.metadata.generation == 2

    # Another version of the same group reads the same object.
    old = dyn.resources.get(api_version="kubevirt.io/v1alpha3", kind="VirtualMachine")
    assert old.get(name="py-vm", namespace=NS).apiVersion == "kubevirt.io/v1alpha3"

    status = vms.delete(name="py-vm", namespace=NS)
    assert status.kind == "Status" and status.status == "Success"
    try:
        vms.get(name="py-vm", namespace=NS)
        raise AssertionError("the deleted object is still there")
    except NotFoundError as e:
        assert e.status == 404


def test_watch_stream_from_a_resource_version(server):
    create_namespace(server, NS)
    core = api(server)
    custom = client.CustomObjectsApi(core)
    first = custom.create_namespaced_custom_object("kubevirt.io", "v1", NS, "virtualmachines", vm("w1"))
    rv = first["metadata"]["resourceVersion"]

    seen = []
    done = threading.Event()

    def consume():
        w = watch.Watch()
        for event in w.stream(
            custom.list_namespaced_custom_object,
            "kubevirt.io",
            "v1",
            NS,
            "virtualmachines",
            resource_version=rv,
            timeout_seconds=10,
        ):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 3:
                w.stop()
        done.set()

    t = threading.Thread(target=consume)
    t.start()
    # Changes after `rv` only: w1 itself (created at rv) is not replayed.
    custom.create_namespaced_custom_object("kubevirt.io", "v1", NS, "virtualmachines", vm("w2"))
    custom.patch_namespaced_custom_object(
        "kubevirt.io", "v1", NS, "virtualmachines", "w2", {"metadata": {"labels": {"x": "y"}}}
    )
    custom.delete_namespaced_custom_object("kubevirt.io", "v1", NS, "virtualmachines", "w2")
    assert done.wait(15), seen
    t.join()
    assert seen == [("ADDED", "w2"), ("MODIFIED", "w2"), ("DELETED", "w2")]


def test_watch_follows_a_simulated_vm_to_running(simulating_server):
    create_namespace(simulating_server, "sim")
    custom = client.CustomObjectsApi(api(simulating_server))
    body = vm("runs")
    body["spec"]["runStrategy"] = "Always"
    created = custom.create_namespaced_custom_object("kubevirt.io", "v1", "sim", "virtualmachines", body)

    # Each printableStatus once, in the order the watch delivers them, until Running.
    seen = []
    w = watch.Watch()
    for event in w.stream(
        custom.list_namespaced_custom_object,
        "kubevirt.io",
        "v1",
        "sim",
        "virtualmachines",
        field_selector="metadata.name=runs",
        resource_version=created["metadata"]["resourceVersion"],
        timeout_seconds=30,
    ):
        status = event["object"].get("status", {}).get("printableStatus")
        if status and (not seen or seen[-1] != status):
            seen.append(status)
        if status == "Running":
            w.stop()
    assert seen == ["Starting", "Running"], seen
    got = custom.get_namespaced_custom_object("kubevirt.io", "v1", "sim", "virtualmachines", "runs")
    assert got["status"]["ready"] is True
    assert got["status"]["created"] is True
