"""vncdotool (PyPI) on a simulated VM's screen through the project's `vnc` bridge (the
`virt-apiserver vnc` subcommand, as `virtctl vnc --proxy-only`): it connects to 127.0.0.1:<port>,
logs in on tty1 by keyboard, captures the screen; `vnc/screenshot` answers the same 720x400 PNG."""

import io
import json
import os
import subprocess
import tempfile
import time

import requests
from kubernetes import client
from PIL import Image
from vncdotool import api as vnc

from conftest import server_binary, wait_for

NS = "pyvnc"
SUB = f"/apis/subresources.kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/vm1"

VM = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1"},
    "spec": {
        "runStrategy": "Always",
        "template": {
            "spec": {
                "domain": {"devices": {}, "resources": {"requests": {"memory": "128Mi"}}},
                "volumes": [
                    {"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}},
                    {
                        "name": "cloudinit",
                        "cloudInitNoCloud": {"userData": "#cloud-config\nuser: fedora\npassword: fedora-pw\n"},
                    },
                ],
            }
        },
    },
}


def running_vm(base):
    conf = client.Configuration(host=base)
    api = client.ApiClient(conf)
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    client.CustomObjectsApi(api).create_namespaced_custom_object("kubevirt.io", "v1", NS, "virtualmachines", VM)

    def running():
        vmi = requests.get(f"{base}/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/vm1").json()
        if vmi.get("kind") != "VirtualMachineInstance":
            return False
        conds = vmi.get("status", {}).get("conditions", [])
        return vmi.get("status", {}).get("phase") == "Running" and any(
            c["type"] == "AgentConnected" for c in conds
        )

    wait_for(running, timeout=30)


def type_text(screen, text):
    """Types `text` key by key, as vncdotool's `type` command does."""
    for c in text:
        screen.keyPress(c)


def users(base):
    return [u["userName"] for u in requests.get(f"{base}{SUB}/userlist").json()["items"]]


def test_vncdotool_logs_in_and_captures_the_screen_through_the_bridge(simulating_server):
    base = simulating_server
    running_vm(base)
    bridge = subprocess.Popen(
        [server_binary(), "vnc", "--server", base, "-n", NS, "vm1"], stdout=subprocess.PIPE, text=True
    )
    try:
        port = json.loads(bridge.stdout.readline())["port"]
        screen = vnc.connect(f"127.0.0.1::{port}")
        try:
            # Typed while the guest still boots, keys reach no getty: Ctrl-C, then try again.
            def logged_in():
                screen.keyPress("ctrl-c")
                type_text(screen, "fedora")
                screen.keyPress("enter")
                type_text(screen, "fedora-pw")
                screen.keyPress("enter")
                time.sleep(0.3)
                return users(base) == ["fedora"]

            wait_for(logged_in, timeout=30)
            type_text(screen, "uname -a")
            screen.keyPress("enter")
            time.sleep(0.3)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "screen.png")
                screen.captureScreen(path)
                captured = Image.open(path).convert("RGB")
                assert captured.size == (720, 400)
                # The server's screenshot is the same screen, pixel for pixel.
                shot = requests.get(f"{base}{SUB}/vnc/screenshot", params={"moveCursor": "true"})
                assert shot.status_code == 200
                assert shot.headers["Content-Type"] == "image/png"
                png = Image.open(io.BytesIO(shot.content))
                assert (png.format, png.size) == ("PNG", (720, 400))
                assert png.convert("RGB").tobytes() == captured.tobytes()
                # Text is on it: lit pixels in the light grey of the VGA palette.
                assert b"\xaa\xaa\xaa" in captured.tobytes()
            type_text(screen, "exit")
            screen.keyPress("enter")
            wait_for(lambda: users(base) == [], timeout=10)
        finally:
            screen.disconnect()
    finally:
        bridge.kill()
        bridge.wait(timeout=10)
        vnc.shutdown()
