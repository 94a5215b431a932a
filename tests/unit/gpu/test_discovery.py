"""GPU discovery: the fake spec, and the NVML path against nvidia-ml-py's documented API.

NVML is a third-party C library this machine has no driver for, so its Python functions
are replaced with ones that behave as NVML documents (errors are `NVMLError` subclasses
picked by error code; `nvmlDeviceGetMemoryInfo(h).total` in bytes).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from pyk8s.gpu import discovery
from pyk8s.gpu.discovery import GPU, discover, parse_fake_spec

GiB = 1 << 30


def test_fake_spec_parses_count_and_memory() -> None:
    assert parse_fake_spec("2x16Gi") == (2, 16 * GiB)
    assert parse_fake_spec("8X80G") == (8, 80 * 10**9)


@pytest.mark.parametrize(
    "spec",
    ["", "2", "x16Gi", "0x16Gi", "-1x16Gi", "2x0", "2x-16Gi", "2x1.5", "2xfoo", "100000x16Gi", "2x16Gi;rm"],
)
def test_fake_spec_rejects_bad_input(spec: str) -> None:
    with pytest.raises(ValueError, match="invalid fake GPU spec"):
        parse_fake_spec(spec)


def test_fake_gpus_have_deterministic_uuids_per_node() -> None:
    gpus = discover("2x16Gi", node="node-a")
    assert gpus == [
        GPU(0, "GPU-fake-node-a-0", "Simulated GPU", 16 * GiB, 0),
        GPU(1, "GPU-fake-node-a-1", "Simulated GPU", 16 * GiB, 1),
    ]
    assert discover("2x16Gi", node="node-a") == gpus
    assert {g.uuid for g in discover("2x16Gi", node="node-b")}.isdisjoint(g.uuid for g in gpus)


def test_fake_gpus_name_the_node_from_the_downward_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "worker-7")
    assert discover("1x8Gi")[0].uuid == "GPU-fake-worker-7-0"


class FakeNVML:
    """Two devices as NVML reports them; calls recorded."""

    def __init__(self, devices: list[dict[str, Any]], init_error: int | None = None) -> None:
        self.devices = devices
        self.init_error = init_error
        self.calls: list[str] = []

    def install(self, mp: pytest.MonkeyPatch) -> None:
        def init() -> None:
            self.calls.append("init")
            if self.init_error is not None:
                raise pynvml.NVMLError(self.init_error)

        def prop(key: str) -> Any:
            def get(handle: int) -> Any:
                dev = self.devices[handle]
                if "error" in dev and key != "uuid":  # a lost GPU still names its UUID
                    raise pynvml.NVMLError(dev["error"])
                return dev[key]

            return get

        mp.setattr(pynvml, "nvmlInit", init)
        mp.setattr(pynvml, "nvmlShutdown", lambda: self.calls.append("shutdown"))
        mp.setattr(pynvml, "nvmlDeviceGetCount", lambda: len(self.devices))
        mp.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: i)
        mp.setattr(pynvml, "nvmlDeviceGetUUID", prop("uuid"))
        mp.setattr(pynvml, "nvmlDeviceGetName", prop("name"))
        mp.setattr(pynvml, "nvmlDeviceGetMemoryInfo", lambda h: SimpleNamespace(total=prop("memory")(h)))
        mp.setattr(pynvml, "nvmlDeviceGetMinorNumber", prop("minor"))


H200 = {"uuid": "GPU-2b7c1a0e-1111-2222-3333-444455556666", "name": "NVIDIA H200", "memory": 150754820096, "minor": 3}


def test_nvml_devices_are_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    # nvidia-ml-py >= 11 returns str; older bindings returned bytes: both are read.
    second = {"uuid": b"GPU-aaaa", "name": b"NVIDIA H100 80GB HBM3", "memory": 85520809984, "minor": 0}
    nvml = FakeNVML([H200, second])
    nvml.install(monkeypatch)
    assert discover() == [
        GPU(0, H200["uuid"], "NVIDIA H200", 150754820096, 3),
        GPU(1, "GPU-aaaa", "NVIDIA H100 80GB HBM3", 85520809984, 0),
    ]
    assert nvml.calls == ["init", "shutdown"]


@pytest.mark.parametrize(
    "code", [pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED, pynvml.NVML_ERROR_NO_PERMISSION]
)
def test_no_library_or_driver_means_no_real_gpus(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    FakeNVML([H200], init_error=code).install(monkeypatch)
    assert discover() == []


def test_a_lost_gpu_is_unhealthy_and_one_without_uuid_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    lost = {"uuid": "GPU-lost", "error": pynvml.NVML_ERROR_GPU_IS_LOST}
    nvml = FakeNVML([lost, H200])
    nvml.install(monkeypatch)
    gpus = discover()
    assert [(g.uuid, g.healthy) for g in gpus] == [("GPU-lost", False), (H200["uuid"], True)]
    monkeypatch.setattr(
        pynvml, "nvmlDeviceGetUUID", lambda h: (_ for _ in ()).throw(pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN))
    )
    assert discover() == []
    assert nvml.calls.count("shutdown") == 2


def test_the_fake_spec_wins_over_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeNVML([H200]).install(monkeypatch)
    assert [g.uuid for g in discover("1x16Gi", node="n")] == ["GPU-fake-n-0"]
    assert discovery.discover_nvml()[0].name == "NVIDIA H200"
