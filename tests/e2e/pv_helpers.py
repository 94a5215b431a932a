"""PersistentVolume fixtures for the e2e tests: PVs, claims, and the PV controller's binding writes."""

from __future__ import annotations

from typing import Any

from tests.e2e.kubelet_harness import Env

MERGE = {"Content-Type": "application/merge-patch+json"}
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"


def affinity(node: str) -> dict[str, Any]:
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}


def make_pv(env: Env, name: str, path: str, node: str, cls: str, claim: str | None = None, local_path: bool = False,
        kind: str = "local") -> None:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                            "persistentVolumeReclaimPolicy": "Delete", "nodeAffinity": affinity(node)}
    spec[kind] = {"path": path} if kind == "local" else {"path": path, "type": "DirectoryOrCreate"}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    md: dict[str, Any] = {"name": name}
    if local_path:
        md["annotations"] = {"pv.kubernetes.io/provisioned-by": "pyk8s.io/local-path"}
    env.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": md, "spec": spec})


def make_pvc(env: Env, name: str, cls: str, volume: str = "") -> None:
    env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls, "volumeName": volume,
                         "resources": {"requests": {"storage": "1Gi"}}}})


def bind(env: Env, claim: str, pv: str) -> None:
    """What the PV controller would do: both sides point at each other, both Bound."""
    env.api("PATCH", f"/api/v1/persistentvolumes/{pv}", {"spec": {"claimRef": {"namespace": "default", "name": claim}}},
            MERGE)
    env.api("PATCH", f"/api/v1/persistentvolumes/{pv}/status", {"status": {"phase": "Bound"}}, MERGE)
    env.api("PATCH", f"{PVCS}/{claim}", {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                                         "spec": {"volumeName": pv}}, MERGE)
    env.api("PATCH", f"{PVCS}/{claim}/status", {"status": {"phase": "Bound"}}, MERGE)


def claim_vol(claim: str, read_only: bool = False) -> list[dict[str, Any]]:
    return [{"name": "d", "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}}]


def scheduling_message(env: Env, pod: str) -> str:
    def msg() -> str | None:
        return next((e["message"] for e in env.events(pod) if e["reason"] == "FailedScheduling"), None)
    return str(env.wait(msg, 20, f"FailedScheduling of {pod}"))
