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


def node_info():
    """Every field the client's V1NodeSystemInfo requires, as a kubelet reports them."""
    return client.V1NodeSystemInfo(
        architecture="amd64",
        boot_id="b0",
        container_runtime_version="containerd://1.7.24",
        kernel_version="6.1.0",
        kube_proxy_version="v1.32.0",
        kubelet_version="v1.32.0",
        machine_id="m0",
        operating_system="linux",
        os_image="Debian GNU/Linux 12",
        system_uuid="u0",
    )


def test_typed_clients_list_and_watch_the_world_kinds(server):
    """CoreV1Api, StorageV1Api and DiscoveryV1Api on kube's own kinds, deserialized into the
    client's models (which refuse a node without its nodeInfo fields)."""
    create_namespace(server, NS)
    core = client.CoreV1Api(api(server))
    seen = []
    done = threading.Event()

    def consume():
        w = watch.Watch()
        for event in w.stream(core.list_node, timeout_seconds=10):
            node = event["object"]
            seen.append((event["type"], node.metadata.name, node.status and node.status.node_info))
            if len(seen) == 2:
                w.stop()
        done.set()

    t = threading.Thread(target=consume)
    t.start()
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="node01")))
    status = client.V1NodeStatus(
        node_info=node_info(),
        addresses=[client.V1NodeAddress(type="InternalIP", address="192.168.66.101")],
        conditions=[client.V1NodeCondition(type="Ready", status="True")],
    )
    core.patch_node_status("node01", {"status": api(server).sanitize_for_serialization(status)})
    assert done.wait(15), seen
    t.join()
    assert [(kind, name) for kind, name, _ in seen] == [("ADDED", "node01"), ("MODIFIED", "node01")]
    assert seen[1][2].kubelet_version == "v1.32.0"
    nodes = core.list_node()
    assert [n.metadata.name for n in nodes.items] == ["node01"]
    assert nodes.items[0].status.addresses[0].address == "192.168.66.101"

    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
        spec=client.V1PodSpec(
            node_name="node01",
            containers=[
                client.V1Container(
                    name="c",
                    image="busybox",
                    resources=client.V1ResourceRequirements(requests={"cpu": "1", "memory": "64Mi"}),
                )
            ],
        ),
    )
    core.create_namespaced_pod(NS, pod)
    pods = core.list_namespaced_pod(NS, field_selector="spec.nodeName=node01")
    assert [p.metadata.name for p in pods.items] == ["web"]
    assert pods.items[0].spec.containers[0].resources.requests == {"cpu": "1", "memory": "64Mi"}

    svc = client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(
            selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)]
        ),
    )
    core.create_namespaced_service(NS, svc)
    assert core.read_namespaced_service("web", NS).spec.ports[0].target_port == 8080
    # Beside the server's own default/kubernetes Service, as kube-apiserver's.
    listed = [(s.metadata.namespace, s.metadata.name) for s in core.list_service_for_all_namespaces().items]
    assert listed == [("default", "kubernetes"), (NS, "web")], listed

    claim = client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name="disk"),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
        ),
    )
    core.create_namespaced_persistent_volume_claim(NS, claim)
    assert [c.metadata.name for c in core.list_namespaced_persistent_volume_claim(NS).items] == ["disk"]

    storage = client.StorageV1Api(api(server))
    storage.create_storage_class(
        client.V1StorageClass(metadata=client.V1ObjectMeta(name="local"), provisioner="kubernetes.io/no-provisioner")
    )
    assert [c.provisioner for c in storage.list_storage_class().items] == ["kubernetes.io/no-provisioner"]

    discovery = client.DiscoveryV1Api(api(server))
    discovery.create_namespaced_endpoint_slice(
        NS,
        client.V1EndpointSlice(
            metadata=client.V1ObjectMeta(name="web-abc", labels={"kubernetes.io/service-name": "web"}),
            address_type="IPv4",
            endpoints=[client.V1Endpoint(addresses=["10.244.0.5"])],
        ),
    )
    slices = discovery.list_namespaced_endpoint_slice(NS, label_selector="kubernetes.io/service-name=web")
    # The endpoint-slice controller's own slice for the Service beside this one, which reads
    # (no pod has an address yet) as a placeholder with no endpoints.
    by_name = {s.metadata.name: s for s in slices.items}
    assert by_name["web-abc"].endpoints[0].addresses == ["10.244.0.5"]
    placeholder = [s for name, s in by_name.items() if name != "web-abc"]
    assert len(placeholder) == 1 and placeholder[0].endpoints == [], by_name
