"""Root CA publisher: the `kube-root-ca.crt` ConfigMap in every namespace, kept equal to the cluster CA."""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller

NAME = "kube-root-ca.crt"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)


class RootCACertPublisher(Controller):
    name = "root-ca-cert-publisher"

    def setup(self) -> None:
        self.namespaces = self.ctx.informer("namespaces")
        self.configmaps = self.ctx.informer("configmaps")
        self.namespaces.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n))
        self.configmaps.add_handlers(
            on_update=lambda o, n: self._cm(n), on_delete=lambda o: self._cm(o))

    def enqueue(self, obj: Any) -> None:
        self.queue.add(obj if isinstance(obj, str) else obj["metadata"]["name"])

    def _cm(self, cm: dict[str, Any]) -> None:
        if cm["metadata"].get("name") == NAME:
            self.queue.add(cm["metadata"].get("namespace", ""))

    async def sync(self, ns: str) -> None:
        nso = self.namespaces.get(ns)
        if nso is None or nso["metadata"].get("deletionTimestamp") or not self.ctx.root_ca:
            return
        ca = self.ctx.root_ca.decode()
        cur = self.configmaps.get(f"{ns}/{NAME}")
        want = {"ca.crt": ca}
        gvr = GVRS["configmaps"]
        try:
            if cur is None:
                await self.client.create(gvr, {"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": NAME, "namespace": ns,
                                                            "annotations": {"kubernetes.io/description": DESCRIPTION}},
                                               "data": want}, ns)
            elif cur.get("data") != want:
                await self.client.patch(gvr, NAME, {"data": want}, ns)
        except StatusError as e:
            if e.code not in (409, 403, 404):
                raise
