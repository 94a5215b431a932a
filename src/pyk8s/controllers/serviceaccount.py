"""ServiceAccount controller: a `default` ServiceAccount in every active namespace, recreated if deleted."""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller

DEFAULT_SA = "default"


class ServiceAccountController(Controller):
    name = "serviceaccount"

    def setup(self) -> None:
        self.namespaces = self.ctx.informer("namespaces")
        self.sas = self.ctx.informer("serviceaccounts")
        self.namespaces.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n))
        self.sas.add_handlers(on_delete=lambda o: self.queue.add(o["metadata"].get("namespace", "")))

    def enqueue(self, obj: Any) -> None:  # keyed by namespace name
        self.queue.add(obj if isinstance(obj, str) else obj["metadata"]["name"])

    async def sync(self, ns: str) -> None:
        nso = self.namespaces.get(ns)
        if nso is None or (nso.get("status") or {}).get("phase") == "Terminating" \
                or nso["metadata"].get("deletionTimestamp"):
            return
        if self.sas.get(f"{ns}/{DEFAULT_SA}") is not None:
            return
        try:
            await self.client.create(GVRS["serviceaccounts"],
                                     {"apiVersion": "v1", "kind": "ServiceAccount",
                                      "metadata": {"name": DEFAULT_SA, "namespace": ns}}, ns)
        except StatusError as e:
            if e.code not in (409, 403, 404):  # exists, or the namespace went away meanwhile
                raise
