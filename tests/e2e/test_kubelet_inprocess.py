"""`pyk8s server` runs a kubelet for this machine in its own process, as `make run` does."""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from tests.cluster import Cluster
from tests.e2e.kubelet_harness import Env, busybox_pod, force_cleanup, import_images, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc"), pytest.mark.timeout(90)]


class ServerWithKubelet(Cluster):
    """tests.cluster.Cluster minus its --disable-agent."""

    def start(self, timeout: float = 30.0) -> ServerWithKubelet:
        import subprocess

        real = subprocess.Popen

        def popen(cmd: list[str], *a: object, **kw: object) -> subprocess.Popen[str]:
            return real([c for c in cmd if c != "--disable-agent"], *a, **kw)  # type: ignore[call-overload]

        subprocess.Popen = popen  # type: ignore[assignment,misc]
        try:
            super().start(timeout)
        finally:
            subprocess.Popen = real  # type: ignore[misc]
        return self


class InProcess(Env):
    """A server with its built-in kubelet (no --disable-agent): node name = hostname, data in <data-dir>/agent."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.node = socket.gethostname().lower()
        self.data = os.path.join(base, "server", "agent")
        tag = uuid.uuid4().hex[:8]
        self.bridge, self.runc_root = f"pk{tag}", f"/run/pyk8s/e2e-{tag}"
        self.cluster = ServerWithKubelet(os.path.join(base, "server"), extra_args=["--cluster-cidr", f"{self.net}.0.0/16"],
                               env={"PYK8S_AGENT_CNI_BRIDGE": self.bridge, "PYK8S_AGENT_RUNC_ROOT": self.runc_root})

    def start(self, images: tuple[str, ...] = ("busybox:e2e",)) -> InProcess:
        import_images(self.data, images)
        self.cluster.start(60)
        self.wait(self.node_ready, 60, "node Ready")
        return self

    def stop(self) -> None:
        try:
            if self.cluster.proc and self.cluster.proc.poll() is None:
                self.delete_all_pods()
        finally:
            self.cluster.stop()
            force_cleanup(self.data, self.bridge, self.runc_root)


def test_server_runs_a_kubelet(tmp_path):
    requirements()
    env = InProcess(str(tmp_path))
    try:
        try:
            env.start()
        except Exception:
            print("".join(getattr(env.cluster, "output", [])[-60:]))
            raise
        node = env.node_obj()
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.1"
        assert {m["manager"] for m in node["metadata"].get("managedFields") or []} >= {"kubelet"}
        env.create(busybox_pod("inproc", "echo in-process kubelet; sleep 3600"))
        p = env.wait_running("inproc", 30)
        assert p["spec"]["nodeName"] == env.node
        env.wait_log("inproc", "c", lambda ls: "in-process kubelet" in ls)
    finally:
        env.stop()
