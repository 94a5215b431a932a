"""A real kubelet pulling `image: busybox` (imagePullPolicy Always by defaulting) offline through a mirror.

Without a mirror the pull fails as upstream reports it (ErrImagePull, ImagePullBackOff, a
`Failed to pull image "busybox"` event); once `pyk8s image registry` runs a local registry
mirroring docker.io (written into the node's registries.yaml, which the kubelet rereads)
and `pyk8s image build busybox` has pushed there, the same spec runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pyk8s.kubelet.images.store import ImageStore
from tests.conftest import require_binary
from tests.e2e.kubelet_harness import Env, requirements
from tests.e2e.registry import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-registry-mirror"), pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    require_binary("docker-registry")
    require_binary("busybox")
    e = Env(str(tmp_path_factory.mktemp("kubelet-mirror")))
    try:
        yield e.start()
    finally:
        e.stop()
        pid = os.path.join(e.data, "registry", "registry.pid")
        if os.path.exists(pid):
            with open(pid) as f:
                os.kill(int(f.read()), 15)


def _image(data_dir: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyk8s.cli.main", "image", "--data-dir", data_dir, *args],
                          capture_output=True, text=True, timeout=120)


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}


def test_always_pull_fails_offline_then_runs_from_the_local_mirror(env):
    created = env.create(_pod("no-mirror"))
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "Always"

    def waiting_reason(p: dict) -> bool:
        st = (p.get("status") or {}).get("containerStatuses") or []
        return bool(st) and (st[0].get("state") or {}).get("waiting", {}).get("reason") in ("ErrImagePull",
                                                                                          "ImagePullBackOff")

    env.wait_pod("no-mirror", waiting_reason, 60)
    failed = env.wait(lambda: [e["message"] for e in env.events("no-mirror") if e["reason"] == "Failed"
                               and e["message"].startswith('Failed to pull image "busybox"')], 30,
                      "a Failed to pull image event")
    # containerd's wording, which upstream's kubelet passes on
    assert failed[0].startswith('Failed to pull image "busybox": failed to pull and unpack image '
                                '"docker.io/library/busybox:latest": failed to resolve reference '
                                '"docker.io/library/busybox:latest": failed to do request: Get '
                                '"https://registry-1.docker.io/v2/library/busybox/manifests/latest": '), failed
    env.wait(lambda: any(e["reason"] == "BackOff" and 'Back-off pulling image "busybox"' in e["message"]
                         for e in env.events("no-mirror")), 60, "a Back-off pulling image event")

    port = free_port()
    r = _image(env.data, "registry", "--address", f"127.0.0.1:{port}")  # writes the node's registries.yaml
    assert r.returncode == 0, r.stderr
    # built elsewhere and pushed: the node's own store never holds busybox:latest, so the pod needs the mirror
    elsewhere = os.path.join(env.base, "builder")
    r = _image(elsewhere, "build", "busybox")
    assert r.returncode == 0, r.stderr
    r = _image(elsewhere, "push", "busybox", f"127.0.0.1:{port}")
    assert r.returncode == 0, r.stderr
    node_images = ImageStore(os.path.join(env.data, "images"))
    assert node_images.get("busybox:latest") is None

    env.create(_pod("with-mirror"))
    env.wait_running("with-mirror", 90)
    assert node_images.get("busybox:latest") is not None
    assert any(e["reason"] == "Pulled" for e in env.events("with-mirror"))


def test_agent_logs_its_registration_klog_style(env):
    """v0 says the node registered, with klog's header and upstream's wording."""
    import re

    pattern = (r'^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ kubelet node\.py:\d+\] "Successfully registered node" '
               f'node="{env.node}"$')
    assert any(re.match(pattern, line.strip()) for line in env.agent.output), "".join(env.agent.output[-30:])
