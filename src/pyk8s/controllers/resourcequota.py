"""ResourceQuota controller: keeps status.hard (from spec.hard) and status.used (what the
namespace's objects use now) of every quota (upstream's pkg/controller/resourcequota).

Recomputed when a quota changes, when objects it counts are created, deleted or change
their usage, and every 5 minutes (`resource_quota_sync_period`). Objects of kinds the
controller has no informer for (count/<resource>.<group> of any other resource) are
counted with a live list. The admission half, which refuses creates beyond the hard
limits, is apiserver/quota_admission.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api.errors import StatusError
from ..api.quantity import Quantity
from ..client import Informer
from ..quota.usage import format_usage, kind_of_resource, matches_quota, quantities, usage
from .base import GVRS, Controller, split_key
from .nodelifecycle import option

log = logging.getLogger("pyk8s.controllers.resourcequota")

__all__ = ["ResourceQuotaController"]

# kinds with a shared informer: (group, plural) -> GVRS name
_INFORMED = {(g, p): name for name, (g, _v, p) in GVRS.items()}
_ALWAYS = ("pods", "services", "persistentvolumeclaims", "configmaps", "secrets", "replicationcontrollers")


class ResourceQuotaController(Controller):
    name = "resourcequota"
    workers = 5  # upstream's --concurrent-resource-quota-syncs
    component = "resourcequota-controller"

    def setup(self) -> None:
        self.period = option(self.ctx, "resource_quota_sync_period", 300.0)
        self.quotas = self.ctx.informer("resourcequotas")
        self.quotas.add_handlers(on_add=self.enqueue, on_update=self._quota_updated, on_delete=None)
        self.informers: dict[tuple[str, str], Informer] = {}
        for plural in _ALWAYS:
            self._watch(("", plural), start=False)
        self._discovered: dict[tuple[str, str], tuple[str, str, str]] = {}

    def _quota_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # our own status writes come back here: only spec changes (or a lost status) need a sync
        if old.get("spec") != new.get("spec") or (new.get("status") or {}).get("hard") != _canonical(
                (new.get("spec") or {}).get("hard")):
            self.enqueue(new)

    def _watch(self, gp: tuple[str, str], start: bool = True) -> Informer | None:
        inf = self.informers.get(gp)
        if inf is not None:
            return inf
        name = _INFORMED.get(gp)
        if name is None:
            return None
        inf = self.ctx.informer(name)
        plural, group = gp[1], gp[0]
        inf.add_handlers(on_add=lambda o: self._object_changed(o, plural, group),
                         on_update=lambda o, n: self._object_updated(o, n, plural, group),
                         on_delete=lambda o: self._object_changed(o, plural, group))
        self.informers[gp] = inf
        if start:
            inf.start()  # a kind first named by a quota after the informers started
        return inf

    def _object_changed(self, obj: dict[str, Any], plural: str, group: str) -> None:
        ns = (obj.get("metadata") or {}).get("namespace")
        if not ns:
            return
        for q in self.quotas.list(ns):
            if matches_quota(q, plural, group, obj):
                self.enqueue(q)

    def _object_updated(self, old: dict[str, Any], new: dict[str, Any], plural: str, group: str) -> None:
        if not self.quotas.list((new.get("metadata") or {}).get("namespace") or ""):
            return  # no quota in the namespace: nothing to recount (the common case, at every pod status write)
        if usage(plural, group, old) != usage(plural, group, new) or _scope_fields(old) != _scope_fields(new):
            self._object_changed(new, plural, group)
            self._object_changed(old, plural, group)

    async def run(self) -> None:
        async def resync() -> None:
            while True:
                await asyncio.sleep(self.period)
                for q in self.quotas.list():
                    self.enqueue(q)

        t = asyncio.create_task(resync())
        try:
            await super().run()
        finally:
            t.cancel()

    # ---- sync ---------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        quota = self.quotas.get(key)
        if quota is None:
            return
        ns, _ = split_key(key)
        hard = _canonical((quota.get("spec") or {}).get("hard"))
        names = list(hard)
        kinds: set[tuple[str, str]] = set()
        for n in names:
            k = kind_of_resource(n)
            kinds.add((k[1], k[0]) if k is not None else ("", "pods"))
        used: dict[str, Quantity] = {n: Quantity.from_int(0) for n in names}
        for group, plural in sorted(kinds):
            objs = await self._objects(group, plural, ns or "")
            for o in objs:
                if not matches_quota({"spec": quota.get("spec"), "status": {"hard": hard}}, plural, group, o):
                    continue
                for r, q in usage(plural, group, o).items():
                    if r in used:
                        used[r] = used[r] + q
        new_status = {"hard": hard, "used": format_usage(used)}
        st = quota.get("status") or {}
        if st.get("hard") == new_status["hard"] and _canonical(st.get("used")) == new_status["used"]:
            return
        body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": dict(quota["metadata"]),
                "spec": quota.get("spec"), "status": new_status}
        try:
            await self.client.update(GVRS["resourcequotas"], body, sub="status")
        except StatusError as e:
            if e.code != 404:
                raise

    async def _objects(self, group: str, plural: str, ns: str) -> list[dict[str, Any]]:
        inf = self._watch((group, plural))
        if inf is not None:
            if not inf.synced.is_set():
                await inf.wait_synced(30)
            return inf.list(ns)
        gvr = await self._gvr(group, plural)
        if gvr is None:
            return []
        items: list[dict[str, Any]] = []
        cont = None
        while True:
            page = await self.client.list(gvr, ns, limit=500, continue_=cont)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items

    async def _gvr(self, group: str, plural: str) -> tuple[str, str, str] | None:
        """The preferred version serving plural.group (for count/<resource>.<group> of other kinds)."""
        gvr = self._discovered.get((group, plural))
        if gvr is not None:
            return gvr
        if not group:
            version = "v1"
        else:
            try:
                g = await self.client.request("GET", f"/apis/{group}")
            except StatusError:
                return None
            version = (g.get("preferredVersion") or {}).get("version") or ""
        try:
            rl = await self.client.request("GET", f"/api/{version}" if not group else f"/apis/{group}/{version}")
        except StatusError:
            return None
        if not any(r.get("name") == plural and r.get("namespaced") for r in rl.get("resources") or []):
            return None
        self._discovered[(group, plural)] = (group, version, plural)
        return self._discovered[(group, plural)]


def _canonical(rl: dict[str, Any] | None) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(quantities(rl).items())}


def _scope_fields(obj: dict[str, Any]) -> Any:
    spec = obj.get("spec") or {}
    return (spec.get("activeDeadlineSeconds"), spec.get("priorityClassName"))

