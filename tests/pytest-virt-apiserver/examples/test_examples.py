"""The plugin's examples, as a user's tests read: retry loops against a 409 and a 429 a Fault
makes the server answer, and a list-then-watch informer (client-go's reflector, written with the
Python client's `watch.Watch`) kept whole across each way a Fault cuts a watch."""

import threading
import time

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def label_with_retry(core, namespace, name, key):
    """client-go's RetryOnConflict: read, change, write; on 409 read again. Returns the attempts."""
    for attempt in range(1, 6):
        cm = core.read_namespaced_config_map(name, namespace)
        cm.metadata.labels = {**(cm.metadata.labels or {}), key: "yes"}
        try:
            core.replace_namespaced_config_map(name, namespace, cm)
            return attempt
        except ApiException as e:
            if e.status != 409:
                raise
    raise AssertionError("still conflicting after 5 attempts")


def test_a_retry_loop_survives_a_conflict(kube_api_client, namespace, fault):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "settings"}})
    fault({"match": {"verbs": ["update"], "namespaces": [namespace]}, "times": 1,
           "action": {"status": {"code": 409, "reason": "Conflict"}}})
    assert label_with_retry(core, namespace, "settings", "tuned") == 2
    assert core.read_namespaced_config_map("settings", namespace).metadata.labels == {"tuned": "yes"}


def test_a_retry_loop_waits_out_a_429(virt_apiserver, kube_api_client, namespace, fault):
    core = client.CoreV1Api(kube_api_client)
    name = fault({"match": {"verbs": ["create"], "namespaces": [namespace]}, "times": 2,
                  "action": {"status": {"code": 429, "retryAfterSeconds": 1}}})
    started, throttled = time.monotonic(), 0
    while True:
        try:
            core.create_namespaced_config_map(namespace, {"metadata": {"name": "patient"}})
            break
        except ApiException as e:
            if e.status != 429:
                raise
            throttled += 1
            time.sleep(int(e.headers["Retry-After"]))
    assert throttled == 2
    assert time.monotonic() - started >= 2.0
    deadline = time.monotonic() + 5
    while virt_apiserver.fault_status(name).get("fired") != 2:
        assert time.monotonic() < deadline, virt_apiserver.fault_status(name)
        time.sleep(0.1)


class Informer:
    """List, then watch from the list's resourceVersion; on 410 list again, on a broken
    connection watch again from the last resourceVersion seen."""

    def __init__(self, core, namespace):
        self.core, self.namespace = core, namespace
        self.names, self.lists, self.errors = set(), 0, []

    def run_until(self, wanted, on_listed, timeout=20):
        deadline, rv = time.monotonic() + timeout, None
        while not wanted <= self.names:
            assert time.monotonic() < deadline, (self.names, self.errors)
            if rv is None:
                listing = self.core.list_namespaced_config_map(self.namespace)
                self.names = {cm.metadata.name for cm in listing.items}
                rv = listing.metadata.resource_version
                self.lists += 1
                on_listed()
            w = watch.Watch()
            try:
                for ev in w.stream(self.core.list_namespaced_config_map, self.namespace,
                                   resource_version=rv, timeout_seconds=10):
                    obj = ev["object"]
                    rv = obj.metadata.resource_version
                    if ev["type"] == "DELETED":
                        self.names.discard(obj.metadata.name)
                    else:
                        self.names.add(obj.metadata.name)
                    if wanted <= self.names:
                        w.stop()
            except ApiException as e:
                assert e.status == 410, e
                self.errors.append("410")
                rv = None
            except urllib3.exceptions.ProtocolError as e:
                self.errors.append("broken")
                rv = w.resource_version or rv


# What the Python client shows its caller of each cut (kubernetes/watch/watch.py, with
# `timeout_seconds` set, so it retries nothing itself): `end` is the stream's end (watch again
# from the last version), `errorEvent` and `expired` an ApiException 410 (list again), `goaway`
# a broken connection (watch again).
@pytest.mark.parametrize("cut,errors", [("end", []), ("errorEvent", ["410"]), ("expired", ["410"]),
                                        ("goaway", ["broken"])])
def test_an_informer_stays_whole_across_a_watch_cut(virt_apiserver, kube_api_client, namespace, fault,
                                                     cut, errors):
    core = client.CoreV1Api(kube_api_client)
    name = fault({"match": {"verbs": ["watch"], "namespaces": [namespace]}, "times": 1,
                  "action": {"watch": {"cut": cut, "afterEvents": 1}}})
    wanted = {"a", "b", "c"}

    def make():
        for n in sorted(wanted):
            time.sleep(0.2)
            core.create_namespaced_config_map(namespace, {"metadata": {"name": n}})

    writer = threading.Thread(target=make)
    informer = Informer(core, namespace)
    informer.run_until(wanted, on_listed=lambda: writer.is_alive() or writer.ident or writer.start())
    writer.join()
    assert informer.errors == errors
    assert informer.lists == 1 + errors.count("410")
    deadline = time.monotonic() + 5
    while virt_apiserver.fault_status(name).get("fired") != 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
