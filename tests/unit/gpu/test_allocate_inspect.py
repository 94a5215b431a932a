"""Pure parts of the GPU plugin and of `pyk8s gpu inspect`: which pod an Allocate is for (gpushare's
rule), gpu-mem device IDs, the env a share gets, the driver's libraries from `ldconfig -p`, and the
inspect tables."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from pyk8s.gpu import driver
from pyk8s.gpu.allocate import candidate_pod, mem_device_gpu, mem_device_ids, share_env
from pyk8s.gpu.discovery import fake_gpus
from pyk8s.gpu.inspect import collect, render, render_details


def pod(name: str, gib: int, node: str = "n1", idx: str | None = "0", assigned: str = "false", t: int = 5,
        phase: str = "Pending", deleting: bool = False) -> dict[str, Any]:
    ann = {"ALIYUN_COM_GPU_MEM_ASSIGNED": assigned, "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(t),
           "ALIYUN_COM_GPU_MEM_POD": str(gib), "ALIYUN_COM_GPU_MEM_DEV": "16"}
    if idx is not None:
        ann["ALIYUN_COM_GPU_MEM_IDX"] = idx
    md: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"u-{name}", "annotations": ann}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": md, "spec": {"nodeName": node, "containers": [
        {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": str(gib)}}}]}, "status": {"phase": phase}}


def test_candidate_is_the_oldest_unassigned_pod_of_that_size_on_this_node() -> None:
    pods = [pod("newer", 4, t=9), pod("older", 4, t=3), pod("other-size", 8, t=1), pod("done", 4, assigned="true", t=1),
            pod("elsewhere", 4, node="n2", t=1), pod("no-idx", 4, idx=None, t=1), pod("bad-idx", 4, idx="x", t=1),
            pod("running", 4, phase="Running", t=1), pod("going", 4, deleting=True, t=1)]
    assert candidate_pod(pods, "n1", 4)["metadata"]["name"] == "older"
    assert candidate_pod(pods, "n1", 8)["metadata"]["name"] == "other-size"
    assert candidate_pod(pods, "n1", 2) is None


def test_gpu_mem_devices_are_one_per_gib_named_as_gpushare() -> None:
    gpus = fake_gpus("2x2Gi", "n1")
    ids = mem_device_ids(gpus)
    assert ids == [("GPU-fake-n1-0-_-0", 0), ("GPU-fake-n1-0-_-1", 0), ("GPU-fake-n1-1-_-0", 1), ("GPU-fake-n1-1-_-1", 1)]
    assert mem_device_gpu("GPU-fake-n1-1-_-1") == "GPU-fake-n1-1"


def test_share_env() -> None:
    assert share_env(pod("p", 6, idx="1"), "GPU-x", 6) == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-x", "ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "6",
        "ALIYUN_COM_GPU_MEM_CONTAINER": "6", "ALIYUN_COM_GPU_MEM_DEV": "16"}


LDCONFIG = """\
5 libs found in cache `/etc/ld.so.cache'
\tlibnvidia-ml.so.1 (libc6) => /usr/lib/i386-linux-gnu/libnvidia-ml.so.1
\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
"""


def test_driver_libraries_come_from_the_loader_cache_64_bit_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver.shutil, "which", lambda name: "/sbin/ldconfig" if name == "ldconfig" else None)
    monkeypatch.setattr(driver.subprocess, "run",
                        lambda *a, **kw: subprocess.CompletedProcess(a, 0, stdout=LDCONFIG, stderr=""))
    monkeypatch.setattr(driver.os.path, "exists", lambda p: False)
    monkeypatch.setattr(driver.os.path, "realpath", lambda p: p + ".580")
    assert driver.driver_mounts() == [
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1.580"),
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1.580")]


def test_no_device_nodes_for_simulated_gpus(tmp_path: Any) -> None:
    (tmp_path / "nvidia0").write_text("")  # a plain file is not a device node
    assert driver.gpu_device(0, str(tmp_path)) is None and driver.control_devices(str(tmp_path)) == []


def node(name: str, count: int = 2, gib: int = 16) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {
        "capacity": {"aliyun.com/gpu-mem": str(count * gib), "aliyun.com/gpu-count": str(count)},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}


def test_inspect_counts_active_shares_per_gpu() -> None:
    pods = [pod("a", 4, phase="Running", assigned="true"), pod("b", 12, idx="1"), pod("c", 8, phase="Succeeded"),
            pod("d", 2, idx="7"), pod("e", 3, node="n2")]
    gpus = collect([node("n1"), node("n2"), {"metadata": {"name": "cpu"}, "status": {"capacity": {"cpu": "4"}}}], pods)
    assert [(g.name, g.used) for g in gpus] == [("n1", [4, 12]), ("n2", [3, 0])]
    out = render(gpus).splitlines()
    assert out[0].split() == ["NAME", "IPADDRESS", "GPU0(Allocated/Total)", "GPU1(Allocated/Total)", "GPU", "Memory(GiB)"]
    assert out[1].split() == ["n1", "10.0.0.1", "4/16", "12/16", "16/32"]
    assert out[-1] == "19/64 (29%)"
    details = render_details(gpus)
    rows = [line.split() for line in details.splitlines()]
    assert ["a", "ns", "4", "0"] in rows and ["b", "ns", "0", "12"] in rows and ["e", "ns", "3", "0"] in rows
