"""The binary's contract, which any language's harness can follow (the README shows it in Go):

- `virt-apiserver --listen 127.0.0.1:0 --database :memory:` serves on an ephemeral port with
  nothing on disk, and its first stdout line is `listening on <scheme>://<host>:<port>`;
- `virt-apiserver kubeconfig --server URL` prints a kubeconfig for that URL (a warning about the
  missing credentials goes to stderr);
- SIGTERM stops it as it stops kube-apiserver.
"""

import os
import shutil
import subprocess
import tempfile
import threading

import kubernetes

FAULTS = ("testing.virt-apiserver.io", "v1alpha1", "faults")


def binary():
    """`VIRT_APISERVER_BIN`, else `virt-apiserver` on PATH."""
    path = os.environ.get("VIRT_APISERVER_BIN") or shutil.which("virt-apiserver")
    if not path or not os.path.exists(path):
        raise RuntimeError("virt-apiserver not found: set VIRT_APISERVER_BIN or put it on PATH")
    return path


class Server:
    """A running virt-apiserver: its URL, a kubeconfig file for it, clients, Faults and reset."""

    def __init__(self, proc, url, workdir):
        self.proc, self.url, self._workdir = proc, url, workdir
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        out = subprocess.run([binary(), "kubeconfig", "--server", url],
                             check=True, capture_output=True, text=True).stdout
        with open(self.kubeconfig, "w") as f:
            f.write(out)

    def api_client(self):
        """A `kubernetes.client.ApiClient` configured from the server's kubeconfig, as
        `kubernetes.config.load_kube_config` configures one for a cluster."""
        conf = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=self.kubeconfig, client_configuration=conf)
        return kubernetes.client.ApiClient(conf)

    def add_fault(self, name, spec):
        """Creates the Fault `name` with `spec`; it acts on the next matching request."""
        body = {"apiVersion": f"{FAULTS[0]}/{FAULTS[1]}", "kind": "Fault",
                "metadata": {"name": name}, "spec": spec}
        return kubernetes.client.CustomObjectsApi(self.api_client()).create_cluster_custom_object(*FAULTS, body)

    def remove_fault(self, name):
        kubernetes.client.CustomObjectsApi(self.api_client()).delete_cluster_custom_object(*FAULTS, name)

    def fault_status(self, name):
        """The Fault's `status` (`matched`, `fired`, `lastFiredTime`), written within a second."""
        f = kubernetes.client.CustomObjectsApi(self.api_client()).get_cluster_custom_object(*FAULTS, name)
        return f.get("status", {})

    def reset(self):
        """Puts the store back to its fixtures (`POST /reset`); older watches end, informers relist."""
        self.api_client().call_api("/reset", "POST", response_type="object", _return_http_data_only=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self._workdir, ignore_errors=True)


def start(*args):
    """Starts `virt-apiserver` with `args` (e.g. `--simulate`) on an ephemeral port and an
    in-memory database; returns once it listens."""
    workdir = tempfile.mkdtemp(prefix="virt-apiserver-")
    proc = subprocess.Popen([binary(), "--listen", "127.0.0.1:0", "--database", ":memory:", *args],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError(f"virt-apiserver did not start (exit {proc.poll()}): {line!r}")
    # The rest of stdout is drained so the server never blocks on a full pipe.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return Server(proc, line[len("listening on "):], workdir)
