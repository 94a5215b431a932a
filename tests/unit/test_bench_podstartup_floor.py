"""bench/podstartup_floor's pure parts: the /proc/stat busy sum, the subnet it picks, the plugin configs it feeds."""
from __future__ import annotations

import pytest
from bench.podstartup_floor import busy_seconds, chain_confs, free_subnet

from pyk8s.kubelet.runtime.cni import bridge_conflist


def test_busy_leaves_out_idle_iowait_and_guest() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = "cpu  100 20 30 5000 70 4 6 10 50 8"
    assert busy_seconds(line, 100) == pytest.approx((100 + 20 + 30 + 4 + 6 + 10) / 100)


def test_subnet_skips_what_is_routed_here() -> None:
    in_use = ["10.244.0.0/24", "192.0.2.2/24", "10.252.7.1/32", "127.0.0.0/8"]
    assert free_subnet(in_use, ("10.252.0.0/16", "10.253.0.0/16")) == "10.253.0.0/16"
    assert free_subnet(["fd00::/8"], ("10.252.0.0/16",)) == "10.252.0.0/16"  # IPv6 routes never clash
    with pytest.raises(RuntimeError):
        free_subnet(["10.0.0.0/8"], ("10.252.0.0/16",))


def test_chain_confs_as_the_kubelet_passes_them() -> None:
    conflist = bridge_conflist("10.252.0.0/16", name="pflr1", bridge="pflr1", data_dir="/tmp/x")
    confs = chain_confs(conflist, ("bridge", "portmap"))
    assert [c["type"] for c in confs] == ["bridge", "portmap"]
    assert all(c["name"] == "pflr1" and c["cniVersion"] == conflist["cniVersion"] for c in confs)
    assert confs[0]["ipam"]["dataDir"] == "/tmp/x"
    confs[0]["prevResult"] = {}
    assert "prevResult" not in conflist["plugins"][0]  # the list itself is left as it was
