"""`pyk8s server`'s own node enforces policies with its own identity, and `--disable network-policy`
turns that off. The server (with its in-process kubelet) runs inside a network namespace of its
own, so its table, its kubelet port and its bridge never touch the host's."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.cluster import REPO, newest_kubectl
from tests.conftest import require, require_binary

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("netpol-server"), pytest.mark.timeout(120)]


class NetnsServer:
    def __init__(self, *args: str) -> None:
        self.tag = uuid.uuid4().hex[:8]
        self.netns = f"netpol-srv-{self.tag}"
        self.data = tempfile.mkdtemp(prefix="pyk8s-netpol-srv-")
        self.args = args
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.bridge, self.runc_root = f"pk{self.tag[:6]}", f"/run/pyk8s/netpol-srv-{self.tag}"

    def ns(self, *cmd: str, input: str | None = None, check: bool = True) -> str:
        r = subprocess.run(["nsenter", f"--net=/run/netns/{self.netns}", *cmd], capture_output=True, text=True,
                           input=input, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"{cmd}: {r.stdout}{r.stderr}")
        return r.stdout

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return self.ns(newest_kubectl(), "--kubeconfig", os.path.join(self.data, "kubeconfig.yaml"), *args,
                       input=input)

    def start(self) -> NetnsServer:
        subprocess.run(["ip", "netns", "add", self.netns], check=True)
        self.ns("ip", "link", "set", "lo", "up")
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYK8S_AGENT_CNI_BRIDGE=self.bridge,
                   PYK8S_AGENT_RUNC_ROOT=self.runc_root)
        self.proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{self.netns}", sys.executable, "-m", "pyk8s.cli",
                                      "server", "--data-dir", self.data, "--port", "0", *self.args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
                                     env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in self.proc.stdout:
            self.lines.append(line)
            if "kubeconfig:" in line or time.monotonic() > deadline:
                break
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout or []), daemon=True).start()
        return self

    def table(self) -> str:
        return self.ns("nft", "-j", "list", "map", "inet", "pyk8s-netpol", "ingress-pods", check=False)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        # the pods' sandboxes (network namespaces under /run/netns), removed inside this namespace
        code = ("import sys; from tests.e2e.kubelet_harness import force_cleanup; "
                "force_cleanup(sys.argv[1], sys.argv[2], sys.argv[3])")
        subprocess.run(["nsenter", f"--net=/run/netns/{self.netns}", sys.executable, "-c", code,
                        os.path.join(self.data, "agent"), self.bridge, self.runc_root],
                       capture_output=True, cwd=str(REPO), timeout=60)
        subprocess.run(["ip", "netns", "del", self.netns], check=False)
        shutil.rmtree(self.runc_root, ignore_errors=True)
        shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture
def server_factory() -> Iterator[type[NetnsServer]]:
    require("root", os.geteuid() == 0)
    for b in ("ip", "nft", "nsenter", "runc"):
        require_binary(b)
    made: list[NetnsServer] = []

    class Made(NetnsServer):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            made.append(self)

    yield Made
    for s in made:
        s.stop()


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
       "spec": {"nodeName": socket.gethostname().lower(),
                "containers": [{"name": "c", "image": "never-pulled.invalid/none:1"}],
                "terminationGracePeriodSeconds": 0}}


def _isolated_ips(s: NetnsServer) -> list[str]:
    out = s.table()
    if not out:
        return []
    doc = json.loads(out)
    m = next(x["map"] for x in doc["nftables"] if "map" in x)
    return [e[0] for e in m.get("elem") or []]


def test_server_node_enforces_with_its_own_identity_and_can_be_disabled(server_factory: type[NetnsServer]) -> None:
    on, off = server_factory().start(), server_factory("--disable", "network-policy").start()
    for s in (on, off):
        s.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny"},
            "spec": {"podSelector": {}}}))
    on.kubectl("apply", "-f", "-", input=json.dumps(POD))
    # the image never arrives, but the sandbox (and so the pod's address) does; the controller
    # lists pods and policies as system:pyk8s:network-policy
    deadline = time.monotonic() + 30
    while True:
        ip = on.kubectl("get", "pod", "web", "-o", "jsonpath={.status.podIP}").strip()
        if ip and _isolated_ips(on) == [ip]:
            break
        assert time.monotonic() < deadline, "".join(on.lines[-30:]) + on.table()
        time.sleep(0.2)
    assert off.ns("nft", "list", "tables", check=False).count("pyk8s-netpol") == 0
    assert re.search(r"sync failed|forbidden", "".join(on.lines), re.I) is None, "".join(on.lines[-30:])
