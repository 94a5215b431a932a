"""`pyk8s agent --server URL1,URL2` keeps its node when the API server it talks to dies.

Two API servers on one etcd (tests/ha_helper.py), a real agent (the process runtime: no runc or
pod network needed) given both URLs with a shared static token. The first server is killed
(-9) under the running agent: the agent's requests and watches move to the second server (its
watch resumes from the last resourceVersion it saw), so a pod bound to the node afterwards is
started, a deleted one is stopped, and the node stays Ready with its Lease renewed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import REPO, Cluster, raw_request
from tests.conftest import require, require_binary
from tests.e2e.kubelet_harness import free_kubelet_port, import_images
from tests.etcd_helper import EtcdCluster
from tests.ha_helper import ADMIN_TOKEN, HAControlPlane, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-agent-failover"), pytest.mark.timeout(150)]

NODE = "ha-failover-node"



def phase(c: Cluster, name: str) -> str | None:
    r = raw_request(c, "GET", f"/api/v1/namespaces/default/pods/{name}")
    return r.json()["status"].get("phase") if r.status == 200 else None


def node_ready(c: Cluster) -> bool:
    r = raw_request(c, "GET", f"/api/v1/nodes/{NODE}")
    return r.status == 200 and any(x["type"] == "Ready" and x["status"] == "True"
                                   for x in (r.json().get("status") or {}).get("conditions", []))


def lease_renewed(c: Cluster) -> str:
    r = raw_request(c, "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}")
    return r.json()["spec"]["renewTime"] if r.status == 200 else ""


def sleeper(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 1, "containers": [
        {"name": "c", "image": "busybox:e2e", "command": ["sleep", "1000"]}]}}


def test_agent_moves_to_the_next_api_server_when_its_server_is_killed(tmp_path: Path):
    require("root (user namespaces, image layers)", os.geteuid() == 0)
    require_binary("unshare")
    require_binary("nsenter")
    data = tmp_path / "agent"
    data.mkdir()
    import_images(str(data))
    with EtcdCluster(tmp_path / "etcd", 1) as etcd, \
            HAControlPlane(tmp_path / "ha", etcd.endpoint, 2, extra_args=["--disable", "scheduler"]) as ha:
        a, b = ha.servers
        log_path = tmp_path / "agent.log"
        cmd = [sys.executable, "-m", "pyk8s.cli", "agent", "--server", f"{a.url},{b.url}", "--token", ADMIN_TOKEN,
               "--certificate-authority", os.path.join(a.data_dir, "pki", "ca.crt"), "--node-name", NODE,
               "--data-dir", str(data), "--runtime", "process", "--cni-bridge", "pkhafo0",
               "--runc-root", f"/run/pyk8s/ha-failover-{os.getpid()}", "--v", "1", "--port", str(free_kubelet_port()),
               "--disable-network-policy", "--disable-proxy"]  # on the host's network: no nftables table there
        with open(log_path, "w") as log:
            agent = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            wait_for(lambda: node_ready(b), 40, "the node Ready")
            assert raw_request(b, "POST", "/api/v1/namespaces/default/pods", body=sleeper("before")).status == 201
            wait_for(lambda: phase(b, "before") == "Running", 30, "the first pod Running")

            a.kill9()
            renewed = lease_renewed(b)
            # a pod bound after the kill reaches the agent only through its watch on the other server
            assert raw_request(b, "POST", "/api/v1/namespaces/default/pods", body=sleeper("after")).status == 201
            wait_for(lambda: phase(b, "after") == "Running", 40, "the pod bound after the kill Running")
            r = raw_request(b, "DELETE", "/api/v1/namespaces/default/pods/before")
            assert r.status in (200, 202)
            wait_for(lambda: raw_request(b, "GET", "/api/v1/namespaces/default/pods/before").status == 404, 40,
                     "the deleted pod stopped and removed by the agent")
            wait_for(lambda: lease_renewed(b) != renewed, 25, "the node Lease renewed through the other server")
            assert node_ready(b)
            assert "unavailable; using " + b.url in log_path.read_text()
        finally:
            raw_request(b, "DELETE", "/api/v1/namespaces/default/pods/after")
            try:
                wait_for(lambda: raw_request(b, "GET", "/api/v1/namespaces/default/pods/after").status == 404, 30,
                         "clean-up")
            finally:
                agent.terminate()
                try:
                    agent.wait(20)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()
