"""The binary's contract that harnesses in other languages build on (the README's Go example
follows these steps exactly): start with `--listen 127.0.0.1:0`, read the address from the first
stdout line, get a kubeconfig from the `kubeconfig` subcommand, load it as a client library loads
a cluster's, and stop the server with SIGTERM."""

import re
import signal
import subprocess

import yaml
from kubernetes import client, config

from conftest import server_binary


def test_a_test_starts_the_binary_and_builds_a_client_from_its_kubeconfig(tmp_path):
    proc = subprocess.Popen([server_binary(), "--listen", "127.0.0.1:0", "--database", ":memory:"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        m = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))\n", first)
        assert m, first
        url = m.group(1)
        assert int(m.group(2)) > 0

        out = subprocess.run([server_binary(), "kubeconfig", "--server", url],
                             check=True, capture_output=True, text=True)
        kubeconfig = yaml.safe_load(out.stdout)
        assert kubeconfig["clusters"][0]["cluster"]["server"] == url
        assert kubeconfig["current-context"]
        path = tmp_path / "kubeconfig"
        path.write_text(out.stdout)

        conf = client.Configuration()
        config.load_kube_config(config_file=str(path), client_configuration=conf)
        with client.ApiClient(conf) as api:
            names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert "default" in names
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
