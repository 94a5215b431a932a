"""`pyk8s server --flannel-backend`: the kubelet inside the server runs flannel too (off by default)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.kubelet_harness import busybox_pod, requirements
from tests.e2e.test_kubelet_inprocess import InProcess

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-flannel-inprocess"), pytest.mark.timeout(90)]


def test_server_flannel_backend_reaches_the_in_process_kubelet(tmp_path: Any) -> None:
    requirements()
    env = InProcess(str(tmp_path))
    env.cluster.extra_args += ["--flannel-backend", "host-gw"]
    try:
        env.start()
        node = env.node_obj()
        ann = node["metadata"]["annotations"]
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert ann["flannel.alpha.coreos.com/public-ip"] == internal
        assert (ann["flannel.alpha.coreos.com/backend-type"], ann["flannel.alpha.coreos.com/backend-data"]) == \
            ("host-gw", "null")
        env.create(busybox_pod("mtu", "cat /sys/class/net/eth0/mtu; sleep 3600"))
        env.wait_running("mtu", 30)
        with open(f"/sys/class/net/{_uplink(internal)}/mtu") as f:
            uplink_mtu = f.read().strip()
        env.wait_log("mtu", "c", lambda lines: lines == [uplink_mtu])  # host-gw: no encapsulation to make room for
    finally:
        env.stop()


def _uplink(addr: str) -> str:
    import json
    import subprocess

    links = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, check=True).stdout)
    return next(link["ifname"] for link in links if any(a.get("local") == addr for a in link.get("addr_info") or []))
