"""A stand-in for the PersistentVolume controller in tests whose pods use claims, for clusters
without the control plane's storage half (no ``local-path`` StorageClass): the scheduler's
VolumeBinding keeps pods with unbound Immediate claims out, as upstream, so these tests need
their claims bound. Each claim without a volume gets a PV (hostPath under a temp dir, never
touched on simulated nodes) pre-bound to it, and both are brought to Bound as the controller
would. With a ``local-path`` class present it does nothing: the real flow binds the claims.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.cluster import Cluster, raw_request

MERGE = {"Content-Type": "application/merge-patch+json"}


class ClaimBinder:
    def __init__(self, cluster: Cluster, namespace: str = "default", interval: float = 0.1) -> None:
        self.cluster = cluster
        self.ns = namespace
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pv-standin")
        self.bound: list[str] = []

    def start(self) -> ClaimBinder:
        if raw_request(self.cluster, "GET", "/apis/storage.k8s.io/v1/storageclasses/local-path").status == 200:
            return self  # the control plane's binder and provisioner are there
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _api(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return raw_request(self.cluster, method, path, body, headers)

    def _run(self) -> None:
        base = f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims"
        while not self._stop.is_set():
            r = self._api("GET", base)
            for c in (r.json().get("items") or []) if r.status == 200 else []:
                md, spec = c["metadata"], c.get("spec") or {}
                if spec.get("volumeName") or md.get("deletionTimestamp"):
                    continue
                pv = f"standin-{md['uid']}"
                self._api("POST", "/api/v1/persistentvolumes", {
                    "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                    "spec": {"capacity": (spec.get("resources") or {}).get("requests") or {"storage": "1Gi"},
                             "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                             "storageClassName": spec.get("storageClassName") or "",
                             "persistentVolumeReclaimPolicy": "Retain",
                             "hostPath": {"path": f"/tmp/pyk8s-standin/{pv}"},
                             "claimRef": {"namespace": self.ns, "name": md["name"], "uid": md["uid"]}}})
                self._api("PATCH", f"/api/v1/persistentvolumes/{pv}/status", {"status": {"phase": "Bound"}}, MERGE)
                self._api("PATCH", f"{base}/{md['name']}", {"metadata": {"annotations": {
                    "pv.kubernetes.io/bind-completed": "yes"}}, "spec": {"volumeName": pv}}, MERGE)
                self._api("PATCH", f"{base}/{md['name']}/status", {"status": {"phase": "Bound"}}, MERGE)
                self.bound.append(md["name"])
            time.sleep(self.interval)
