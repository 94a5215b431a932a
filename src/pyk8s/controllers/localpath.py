"""The built-in local-path driver (`pyk8s.io/local-path`), k3s's local-path-provisioner under our name.

A volume is a directory `<root>/pvc-<uid>_<namespace>_<name>` on one node, served as a `hostPath`
(type DirectoryOrCreate) PersistentVolume, or a `local` one with the class parameter
`volumeType: local`, with node affinity on that node's `kubernetes.io/hostname`. The controller
side does no disk work; the contract with the node (docs/storage.md):
- root: the Node's `storage.pyk8s.io/local-path-root` annotation (the kubelet sets it), else the
  class parameter `nodePath`, else /var/lib/pyk8s/storage;
- create: the kubelet makes the directory when it mounts the volume (DirectoryOrCreate);
- delete: a PV of policy Delete carries the finalizer `storage.pyk8s.io/local-path-cleanup` from its
  creation (as upstream's external-provisioner finalizer, so a PV deleted before its claim still gets
  its data removed). Once the PV is deleted and not Bound, the node's kubelet removes the directory,
  then the finalizer. A simulated node (no disk) gets no finalizer; for a Node that no longer exists,
  or a PV turned to Retain, the provisioner removes it;
- expand: a directory has no size of its own, so growing is the PV's capacity only, with no
  file-system step on the node.
"""

from __future__ import annotations

import posixpath
from typing import Any

from .volume_driver import CreatedVolume, CreateVolumeRequest

__all__ = ["LocalPathDriver", "PROVISIONER", "CLEANUP_FINALIZER", "ROOT_ANNOTATION", "DEFAULT_ROOT",
           "volume_dir"]

PROVISIONER = "pyk8s.io/local-path"
CLEANUP_FINALIZER = "storage.pyk8s.io/local-path-cleanup"
ROOT_ANNOTATION = "storage.pyk8s.io/local-path-root"
DEFAULT_ROOT = "/var/lib/pyk8s/storage"
SIM_LABEL = "node.pyk8s.io/simulated"


def volume_dir(root: str, pv_name: str, claim: dict[str, Any]) -> str:
    md = claim.get("metadata") or {}
    return posixpath.join(root, f"{pv_name}_{md.get('namespace', '')}_{md.get('name', '')}")


class LocalPathDriver:
    name = PROVISIONER

    def __init__(self, nodes: Any) -> None:
        self.nodes = nodes  # the node informer: where volumes go, and whether their node still exists

    async def create_volume(self, req: CreateVolumeRequest) -> CreatedVolume:
        node = req.node
        if node is None:
            raise ValueError("configuration error, no node was specified")
        md = node.get("metadata") or {}
        root = (md.get("annotations") or {}).get(ROOT_ANNOTATION) or req.parameters.get("nodePath") or DEFAULT_ROOT
        path = volume_dir(root, req.name, req.claim)
        hostname = (md.get("labels") or {}).get("kubernetes.io/hostname") or md.get("name", "")
        affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}]}]}}
        if req.parameters.get("volumeType", "hostPath").lower() == "local":
            source: dict[str, Any] = {"local": {"path": path}}
        else:
            source = {"hostPath": {"path": path, "type": "DirectoryOrCreate"}}
        simulated = (md.get("labels") or {}).get(SIM_LABEL) == "true"
        return CreatedVolume(capacity=req.capacity, source=source, node_affinity=affinity,
                             finalizers=[] if simulated else [CLEANUP_FINALIZER])

    def _node_of(self, pv: dict[str, Any]) -> dict[str, Any] | None:
        terms = ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
                 .get("nodeSelectorTerms") or [])
        for term in terms:
            for e in term.get("matchExpressions") or ():
                if e.get("key") == "kubernetes.io/hostname" and e.get("values"):
                    want = e["values"][0]
                    for n in self.nodes.list():
                        nmd = n.get("metadata") or {}
                        if (nmd.get("labels") or {}).get("kubernetes.io/hostname", nmd.get("name")) == want:
                            return n
        return None

    async def delete_volume(self, pv: dict[str, Any]) -> bool:
        # the node's kubelet removes the directory, then the finalizer; a Node that is gone has nothing left
        return self._node_of(pv) is None

    async def controller_expand_volume(self, pv: dict[str, Any], capacity: str) -> tuple[str, bool]:
        return capacity, False
