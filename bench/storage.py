"""Pods with persistent volumes against the same pods with emptyDir (the ceiling), on one real node.

One `pyk8s server` and one `pyk8s agent` (runc) on this machine; BENCH_STORAGE_PODS (default
100) busybox pods are created at once, each mounting a volume and writing to it; the time that
counts is from creation to the last pod's container started (seen by a watch). Passes:

- emptyDir: the pods alone (the ceiling: nothing to wait for);
- claims: per pod a PersistentVolumeClaim created at the same moment as its pod. With a
  ``local-path`` StorageClass in the cluster (the control plane's provisioner), the claims are
  dynamic: WaitForFirstConsumer, the scheduler's VolumeBinding, provisioning, binding, then the
  kubelet's mount. Without it (this branch alone), each claim names a pre-created local-path PV
  and the bench makes the PV controller's writes itself (claimRef, Bound on both sides) right
  after creating the claim, so the figure then covers the scheduler and the kubelet only.

The figure is the ratio emptyDir / claims time to the last pod started (1.0 = volumes cost nothing).
In the dynamic mode a last figure times the reclaim: the N claims deleted at once until every PV
is gone, which (policy Delete) waits for the node's clean-up to remove each directory first.

Measured 2026-11-27 15:09 UTC, 2 shared cores (other work running), pre-bound mode, 100 pods:
emptyDir all started in 11.5 s (p50 6.4 s), claims 13.5 s (p50 8.5 s): ratio 0.85x; the claim pass
also pays the bench's 4 API writes per claim (the PV controller's part) on the same cores.

Measured 2026-11-27 15:55 UTC, same machine (load average 4-8 from other work), dynamic mode (the
real binder, local-path provisioner, VolumeBinding and the node's clean-up), 100 pods, two runs:
emptyDir 6.7 s / 7.5 s to all started (p50 4.0 / 4.3 s), claims 6.7 s / 8.4 s (p50 3.9 / 4.6 s):
ratio 1.00x and 0.89x; 100 claims deleted to all PVs and directories gone: 0.9 s / 0.7 s.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from .one_node import one_node, runc_skip_reason
from .report import percentile, row

N = int(os.environ.get("BENCH_STORAGE_PODS", "100"))
NS = "default"
PODS = ("", "v1", "pods")
PVCS = ("", "v1", "persistentvolumeclaims")
PVS = ("", "v1", "persistentvolumes")
SCS = ("storage.k8s.io", "v1", "storageclasses")
MERGE = "merge"


def _pod(name: str, volume: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"bench": "storage"}},
            "spec": {"terminationGracePeriodSeconds": 1, "volumes": [{"name": "v", **volume}], "containers": [{
                "name": "c", "image": "busybox:e2e", "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "command": ["sh", "-c", "echo x > /v/f; trap 'exit 0' TERM; while true; do sleep 1; done"]}]}}


def _claim(name: str, cls: str, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                            "resources": {"requests": {"storage": "64Mi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def _started(p: dict[str, Any]) -> bool:
    cs = (p.get("status") or {}).get("containerStatuses") or []
    return bool(cs) and all((c.get("state") or {}).get("running") for c in cs)


async def _burst(c: Any, prefix: str, make: Any) -> list[float]:
    """Create N pods (and whatever ``make`` creates with each) at once; per pod, creation to started."""
    created: dict[str, float] = {}
    started: dict[str, float] = {}
    done = asyncio.Event()
    rv = (await c.list(PODS, NS))["metadata"]["resourceVersion"]

    async def watch() -> None:
        async for ev in c.watch(PODS, NS, rv, timeout_seconds=600, label_selector="bench=storage"):
            obj = ev.get("object") or {}
            name = (obj.get("metadata") or {}).get("name", "")
            if name.startswith(prefix) and name not in started and _started(obj):
                started[name] = time.time()
                if len(started) == N:
                    done.set()
                    return

    w = asyncio.create_task(watch())
    await asyncio.sleep(0.3)

    async def one(i: int) -> None:
        name = f"{prefix}{i:03d}"
        created[name] = time.time()
        await make(name, i)

    await asyncio.gather(*(one(i) for i in range(N)))
    try:
        await asyncio.wait_for(done.wait(), 600)
    finally:
        w.cancel()
    return [started[n] - created[n] for n in started]


async def _delete_all(c: Any) -> None:
    for p in (await c.list(PODS, NS, label_selector="bench=storage"))["items"]:
        await c.delete(PODS, p["metadata"]["name"], NS)
    while (await c.list(PODS, NS, label_selector="bench=storage"))["items"]:
        await asyncio.sleep(0.2)


async def run(env: Any, base: str) -> dict[str, Any]:
    from pyk8s.client import Client

    from .podstartup import _wait_default_service_account

    c = Client.from_kubeconfig(env.cluster.kubeconfig, pool_size=2 * N + 8, timeout=120)
    await _wait_default_service_account(c)
    out: dict[str, Any] = {}

    async def empty(name: str, i: int) -> None:
        await c.create(PODS, _pod(name, {"emptyDir": {}}), NS)

    out["empty"] = await _burst(c, "ed-", empty)
    await _delete_all(c)
    dynamic = await c.get_or_none(SCS, "local-path") is not None
    out["dynamic"] = dynamic
    if not dynamic:  # pre-created local-path PVs, one per claim, on this node
        for i in range(N):
            await c.create(PVS, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {
                "name": f"bench-pv-{i:03d}", "annotations": {"pv.kubernetes.io/provisioned-by": "pyk8s.io/local-path"}},
                "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                         "storageClassName": "bench-prebound", "persistentVolumeReclaimPolicy": "Retain",
                         "claimRef": {"namespace": NS, "name": f"pv-{i:03d}"},
                         "hostPath": {"path": os.path.join(base, "volumes", f"pv-{i:03d}"), "type": "DirectoryOrCreate"},
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                             {"key": "kubernetes.io/hostname", "operator": "In", "values": [env.node]}]}]}}}})

    async def claimed(name: str, i: int) -> None:
        if dynamic:
            await c.create(PVCS, _claim(name, "local-path"), NS)
        else:
            pv = f"bench-pv-{i:03d}"
            await c.create(PVCS, _claim(name, "bench-prebound", pv), NS)
            # the PV controller's writes, as it would make them for a pre-bound pair
            await c.patch(PVS, pv, {"status": {"phase": "Bound"}}, sub="status", patch_type=MERGE)
            await c.patch(PVCS, name, {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}}},
                          NS, patch_type=MERGE)
            await c.patch(PVCS, name, {"status": {"phase": "Bound"}}, NS, sub="status", patch_type=MERGE)
        await c.create(PODS, _pod(name, {"persistentVolumeClaim": {"claimName": name}}), NS)

    out["claims"] = await _burst(c, "pv-", claimed)
    await _delete_all(c)
    if dynamic:  # the reclaim: claims deleted at once until the node removed every directory and the PVs went
        t0 = time.time()
        await asyncio.gather(*(c.delete(PVCS, f"pv-{i:03d}", NS) for i in range(N)))
        while any((p.get("spec") or {}).get("storageClassName") == "local-path" for p in (await c.list(PVS))["items"]):
            await asyncio.sleep(0.1)
        out["reclaim"] = time.time() - t0
    await c.close()
    return out


def main() -> None:
    reason = runc_skip_reason()
    if reason:
        print(f"  skipped: runc cannot run pods here ({reason})")
        return
    with one_node("pyk8s-bench-storage-", ["--max-pods", str(max(110, N + 10))]) as env:
        r = asyncio.run(run(env, env.base))
    kind = "dynamic local-path claims" if r["dynamic"] else "pre-bound local-path PVs (no provisioner in this cluster)"
    print(f"  ({N} busybox pods created at once on one node, each writing to its volume; {os.cpu_count()} cores; "
          f"claims: {kind})")
    e, v = r["empty"], r["claims"]
    for q in (50, 99):
        row(f"emptyDir pods: creation to started p{q}", percentile(e, q), "s")
        row(f"claim pods: claim+pod creation to started p{q}", percentile(v, q), "s")
    row(f"all {N} started, emptyDir (the ceiling)", max(e), "s")
    # ratio = emptyDir time / claims time: 1.0 means the volumes cost nothing
    row(f"all {N} started, with claims", max(v), "s", max(e), "emptyDir", higher_is_better=False)
    if "reclaim" in r:
        row(f"{N} claims deleted to every PV and directory gone (the node's clean-up)", r["reclaim"], "s")


if __name__ == "__main__":
    main()
