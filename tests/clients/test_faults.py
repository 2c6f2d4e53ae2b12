"""Faults (testing.virt-apiserver.io/v1alpha1) as the Python `kubernetes` client meets them: a 429
with Retry-After retried after it on a GET (urllib3's default Retry) and raised as ApiException on
a create, retried under `client_go_retries` (kubernetes/client/rest.py: GET and HEAD, as
client-go), and a dropped connection retried by urllib3's Retry until it gives up."""

import json
import time

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from conftest import wait_for

GROUP, VERSION, PLURAL = "testing.virt-apiserver.io", "v1alpha1", "faults"


def api(base, **settings):
    conf = client.Configuration(host=base)
    for k, v in settings.items():
        setattr(conf, k, v)
    return client.ApiClient(conf)


def add_fault(base, name, spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Fault", "metadata": {"name": name}, "spec": spec}
    return client.CustomObjectsApi(api(base)).create_cluster_custom_object(GROUP, VERSION, PLURAL, body)


def fault_status(base, name):
    f = client.CustomObjectsApi(api(base)).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    return f.get("status", {})


def test_a_429_to_a_get_is_retried_after_its_retry_after(server):
    # urllib3's default Retry honours Retry-After on 413, 429 and 503 for idempotent methods
    # (urllib3/util/retry.py is_retry, RETRY_AFTER_STATUS_CODES).
    add_fault(server, "throttle", {
        "match": {"verbs": ["list"], "resources": ["configmaps"]},
        "times": 1,
        "action": {"status": {"code": 429, "retryAfterSeconds": 2}},
    })
    started = time.monotonic()
    assert client.CoreV1Api(api(server)).list_namespaced_config_map("default").items == []
    assert time.monotonic() - started >= 2.0
    assert wait_for(lambda: fault_status(server, "throttle").get("fired") == 1)


def test_a_429_to_a_create_is_raised_with_its_retry_after(server):
    add_fault(server, "throttle-create", {
        "match": {"verbs": ["create"], "resources": ["configmaps"]},
        "times": 1,
        "action": {"status": {"code": 429, "retryAfterSeconds": 2}},
    })
    core = client.CoreV1Api(api(server))
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    e = raised.value
    assert e.status == 429
    assert e.headers["Retry-After"] == "2"
    status = json.loads(e.body)
    assert status["reason"] == "TooManyRequests"
    assert status["details"]["retryAfterSeconds"] == 2
    # times: 1 — the create sent again is answered.
    assert core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}}).metadata.name == "cm"


def test_client_go_retries_wait_out_a_429(server):
    core = client.CoreV1Api(api(server))
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    add_fault(server, "throttle-get", {
        "match": {"verbs": ["get"], "names": ["cm"]},
        "times": 2,
        "action": {"status": {"code": 429, "retryAfterSeconds": 1}},
    })
    retrying = client.CoreV1Api(api(server, client_go_retries=True))
    started = time.monotonic()
    got = retrying.read_namespaced_config_map("cm", "default")
    assert got.metadata.name == "cm"
    assert time.monotonic() - started >= 2.0, "two Retry-After waits of 1 s"
    assert wait_for(lambda: fault_status(server, "throttle-get").get("fired") == 2)


def test_a_dropped_connection_is_retried_by_urllib3_then_raised(server):
    core = client.CoreV1Api(api(server))
    add_fault(server, "drop-once", {"match": {"verbs": ["list"], "resources": ["secrets"]},
                                    "times": 1, "action": {"drop": {}}})
    # urllib3's default Retry (3) re-sends a GET whose connection broke: the drop goes unseen.
    assert core.list_namespaced_secret("default").items == []
    add_fault(server, "drop-always", {"match": {"verbs": ["list"], "resources": ["services"]},
                                      "action": {"drop": {}}})
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_service("default")
    # The first try and urllib3's three retries.
    assert wait_for(lambda: fault_status(server, "drop-always").get("fired") == 4)
