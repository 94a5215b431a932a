"""Claims to Bound: N claims bound to N static PersistentVolumes, and N local-path claims provisioned on
a simulated node (PV created by the provisioner, then bound), against creating N ConfigMaps on the same
server in the same run (the API's write floor, 32 requests in flight).

A bind is four writes one after the other (the PV's claimRef, its phase, the claim's volumeName and
annotations, its phase), by one claim worker as upstream's (two workers picked the same Available
volume and conflicted: 25.6 against 47.8 claims/s here), so a ratio near 0.25 would be the writes'
own limit; provisioning adds the PV's creation and the provisioner's events. Measured here (2 shared
cores, 200 claims): floor 335 creates/s, static 47.8 claims/s (0.14x), local-path 28.8 claims/s (0.09x).

    .venv/bin/python -m bench storage_binding
    BENCH_STORAGE_CLAIMS=500 .venv/bin/python -m bench storage_binding
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from .report import row

N = int(os.environ.get("BENCH_STORAGE_CLAIMS", "200"))
PV = ("", "v1", "persistentvolumes")
PVC = ("", "v1", "persistentvolumeclaims")
CM = ("", "v1", "configmaps")
NODES = ("", "v1", "nodes")


def _claim(name: str, cls: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                     "resources": {"requests": {"storage": "1Gi"}}}}


async def _all(coros: list[Any], limit: int = 32) -> None:
    sem = asyncio.Semaphore(limit)

    async def one(c: Any) -> None:
        async with sem:
            await c

    await asyncio.gather(*(one(c) for c in coros))


async def _wait_bound(c: Any, ns: str, timeout: float = 300) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = (await c.list(PVC, ns))["items"]
        if len(items) == N and all((i.get("status") or {}).get("phase") == "Bound" for i in items):
            return True
        await asyncio.sleep(0.2)
    return False


async def run(kubeconfig: str) -> dict[str, float]:
    from pyk8s.client import Client

    c = Client.from_kubeconfig(kubeconfig, timeout=120)
    out: dict[str, float] = {}
    try:
        for ns in ("floor", "static", "dynamic"):
            await c.create(("", "v1", "namespaces"), {"metadata": {"name": ns}})
        t = time.monotonic()
        await _all([c.create(CM, {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}}, "floor") for i in range(N)])
        out["floor"] = time.monotonic() - t
        await _all([c.create(PV, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"bench-pv-{i}"},
                                  "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                           "storageClassName": "bench", "hostPath": {"path": f"/tmp/bench-{i}"}}})
                    for i in range(N)])
        await asyncio.sleep(1.0)  # the PVs Available
        t = time.monotonic()
        await _all([c.create(PVC, _claim(f"c-{i}", "bench"), "static") for i in range(N)])
        out["static"] = time.monotonic() - t if await _wait_bound(c, "static") else float("nan")
        await c.create(NODES, {"metadata": {"name": "bench-sim", "labels": {"node.pyk8s.io/simulated": "true",
                                                                            "kubernetes.io/hostname": "bench-sim"}}})
        await asyncio.sleep(0.5)
        sel = {"volume.kubernetes.io/selected-node": "bench-sim"}
        t = time.monotonic()
        await _all([c.create(PVC, _claim(f"d-{i}", "local-path", sel), "dynamic") for i in range(N)])
        out["dynamic"] = time.monotonic() - t if await _wait_bound(c, "dynamic") else float("nan")
    finally:
        await c.close()
    return out


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="pyk8s-bench-storage-")
    cl = Cluster(d).start(60)
    try:
        r = asyncio.run(run(cl.kubeconfig))
    finally:
        cl.stop()
        shutil.rmtree(d, ignore_errors=True)
    print(f"  (one server process with controllers; {N} claims each; {os.cpu_count()} cores)")
    row(f"{N} ConfigMaps created (floor)", N / r["floor"], "obj/s")
    row(f"{N} claims bound to static PVs", N / r["static"], "claims/s", N / r["floor"], "ConfigMap creates")
    row(f"{N} local-path claims provisioned+bound", N / r["dynamic"], "claims/s", N / r["floor"], "ConfigMap creates")
