"""The device manager on its own, with a real v1beta1 plugin over real unix sockets (no kubelet, no
root): the grace period after a plugin goes away, and a restart from the checkpoint before and after
the plugin registers again (upstream: devicemanager's manager_test for GetCapacity and checkpoints)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time

import pytest

from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2 as pb
from pyk8s.deviceplugin.manager import DeviceManager
from tests.e2e.example_device_plugin import ExamplePlugin

pytestmark = [pytest.mark.xdist_group("device-manager"), pytest.mark.timeout(60)]

RES = "example.com/dev"


def _answer(ids: list[str]) -> pb.ContainerAllocateResponse:
    return pb.ContainerAllocateResponse(envs={"IDS": ",".join(ids)})


def _pod(uid: str, n: int) -> dict:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {RES: str(n)}}}]}}


async def _until(pred, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_grace_then_zero_and_restart_from_checkpoint() -> None:
    d = tempfile.mkdtemp(prefix="dm-", dir="/tmp")
    plugin_dir = os.path.join(d, "device-plugins")
    active = {"pod-a"}

    async def run() -> None:
        m = DeviceManager(plugin_dir, lambda: set(active), grace=0.5)
        await m.start()
        # the plugin has its own thread and loop; starting it waits for this loop's Register answer
        plugin = await asyncio.to_thread(ExamplePlugin(plugin_dir, RES, ["d0", "d1", "d2"], _answer).start)
        try:
            await _until(lambda: m.capacity() == ({RES: "3"}, {RES: "3"}))
            assert await m.admit(_pod("pod-a", 2)) is None
            assert plugin.allocate_calls == [["d0", "d1"]]  # no preference offered: the lowest IDs
            opts = await m.run_options("pod-a", "c")
            assert opts.envs == {"IDS": "d0,d1"}

            # the kubelet restarts: nothing allocatable until the plugin registers again, pod-a keeps d0, d1
            await m.stop()
            m2 = DeviceManager(plugin_dir, lambda: set(active), grace=0.5)
            await m2.start()
            assert m2.capacity() == ({RES: "0"}, {RES: "0"})
            assert m2.container_devices("pod-a", "c") == {RES: ["d0", "d1"]}
            # (no await since start: the plugin cannot have registered yet) a known resource with no devices
            assert await m2.admit(_pod("early", 1)) == (
                "UnexpectedAdmissionError", "Allocate failed due to requested number of devices unavailable for "
                "example.com/dev. Requested: 1, Available: 0, which is unexpected")
            await _until(lambda: m2.capacity() == ({RES: "3"}, {RES: "3"}))  # re-registered (kubelet.sock is new)
            assert (await m2.run_options("pod-a", "c")).envs == {"IDS": "d0,d1"}  # from the checkpoint, no new Allocate
            assert plugin.allocate_calls == [["d0", "d1"]]
            assert await m2.admit(_pod("pod-b", 2)) == (
                "UnexpectedAdmissionError", "Allocate failed due to requested number of devices unavailable for "
                "example.com/dev. Requested: 2, Available: 1, which is unexpected")
            active.discard("pod-a")  # pod-a finished: its devices go back at the next admission
            active.add("pod-b")
            assert await m2.admit(_pod("pod-b", 2)) is None
            assert m2.container_devices("pod-b", "c") == {RES: ["d0", "d1"]}

            # the plugin goes away: capacity stays with 0 allocatable, then after the grace period both are 0
            await asyncio.to_thread(plugin.stop)
            await _until(lambda: m2.capacity() == ({RES: "3"}, {RES: "0"}), 5)
            await asyncio.sleep(0.6)
            assert m2.capacity() == ({RES: "0"}, {RES: "0"})
            await m2.stop()
        finally:
            await asyncio.to_thread(plugin.stop)

    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(d, ignore_errors=True)
