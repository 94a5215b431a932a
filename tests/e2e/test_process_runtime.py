"""The process fallback runtime: chrooted busybox processes in user+mount+pid namespaces, same interface."""

from __future__ import annotations

import asyncio
import os

import pytest

from pyk8s.kubelet.images.store import ImageStore
from pyk8s.kubelet.runtime.choose import select_runtime
from pyk8s.kubelet.runtime.interface import EXITED, RUNNING, ContainerConfig, SandboxConfig
from tests.conftest import require, require_binary
from tests.e2e.imagebuild import import_busybox

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def test_process_runtime_runs_logs_stops_and_readopts(tmp_path, caplog):
    require_binary("unshare")
    require_binary("nsenter")
    require("root (layer unpacking makes whiteout devices)", os.geteuid() == 0)
    store = ImageStore(str(tmp_path / "images"))
    import_busybox(store, str(tmp_path))

    async def go():
        rt = select_runtime(str(tmp_path / "data"), force="process", image_store=store)
        assert rt.name == "process"
        assert "PROCESS runtime" in caplog.text  # the loud warning
        sid = await rt.create_sandbox(SandboxConfig(uid="u-1", name="fallback"))
        cid = await rt.create_container(sid, ContainerConfig(
            name="c", image="busybox:e2e", command=["sh", "-c", "echo pid=$$; ls /bin/busybox; echo E=$E; exit 4"],
            env=[("E", "x")]))
        await rt.start_container(cid)
        st = await rt.wait_exit(cid, 10)
        assert (st.state, st.exit_code, st.reason) == (EXITED, 4, "Error")
        log = open(st.log_path).read()
        assert " stdout F pid=1\n" in log and "stdout F /bin/busybox" in log and "E=x" in log

        long = await rt.create_container(sid, ContainerConfig(name="l", image="busybox:e2e",
                                                              command=["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.05; done"]))
        await rt.start_container(long)
        await asyncio.sleep(0.3)
        rt2 = select_runtime(str(tmp_path / "data"), force="process", image_store=store)
        assert (await rt2.container_status(long)).state == RUNNING
        res = await rt2.exec_sync(long, ["cat", "/etc/hostname"])
        assert res.exit_code == 0 and res.stdout.strip() == os.uname().nodename.encode()
        await rt2.stop_container(long, 5)
        assert (await rt2.container_status(long)).exit_code == 0
        await rt2.remove_sandbox(sid)
        assert await rt2.list_containers() == []

    asyncio.run(go())
