"""Garbage collector: deletes dependents whose owners are gone, and carries out foreground
and orphan deletion (upstream's pkg/controller/garbagecollector).

Every deletable resource found through discovery gets a metadata-only informer feeding
the ownerReference graph (garbagecollector_graph). Work items are graph nodes:

- attempt-to-delete: look the object up live; if it is waiting for its dependents
  (foregroundDeletion finalizer) remove the finalizer once no blocking dependent is left;
  otherwise classify its owners by live GETs as solid, dangling (absent or uid mismatch)
  or waiting-for-dependents and delete it when no owner is solid.
- attempt-to-orphan: strip the owner's reference from every dependent, then remove the
  owner's `orphan` finalizer.

Discovery is repeated every 30 s (and soon after a CRD changes) so custom resources join.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api.errors import StatusError
from ..client import Informer, strip_managed_fields
from .base import Controller, ControllerContext
from .garbagecollector_graph import FOREGROUND, ORPHAN, Graph, Identity, Node
from .garbagecollector_metadata import APIResource, Discovery, MetadataClient, discover

log = logging.getLogger("pyk8s.controllers.garbagecollector")

__all__ = ["GarbageCollector"]

RESYNC_PERIOD = 30.0


class _Virtual(Exception):
    """The item is gone: a virtual delete event was processed instead."""


class _ClusterScopedWithNamespacedOwner(Exception):
    """A cluster-scoped object names a namespaced owner: never resolvable, never retried."""


class GarbageCollector(Controller):
    name = "garbagecollector"
    workers = 8
    component = "garbage-collector-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.graph = Graph(self._enqueue_delete, self._enqueue_orphan, self._report_invalid_namespace)
        self.discovery: Discovery | None = None
        self.monitors: dict[tuple[str, str, str], Informer] = {}
        self._rediscover = asyncio.Event()

    # ---- wiring -------------------------------------------------------------------------
    def setup(self) -> None:
        try:
            crds = self.ctx.informer("customresourcedefinitions")
        except KeyError:
            return
        crds.add_handlers(on_add=lambda o: self._rediscover.set(),
                          on_update=lambda o, n: self._rediscover.set(),
                          on_delete=lambda o: self._rediscover.set())

    def _enqueue_delete(self, node: Node) -> None:
        self.queue.add(("delete", node))

    def _enqueue_orphan(self, node: Node) -> None:
        self.queue.add(("orphan", node))

    def _report_invalid_namespace(self, dep: Node, owner_uid: str) -> None:
        ref = next((r for r in dep.owners if r.get("uid") == owner_uid), None)
        if ref is None:
            return
        bad = Identity.of_ref(ref, dep.identity.namespace)
        i = dep.identity
        obj = {"apiVersion": i.api_version, "kind": i.kind,
               "metadata": {"name": i.name, "namespace": i.namespace, "uid": i.uid}}
        self.recorder.event(obj, "Warning", "OwnerRefInvalidNamespace",
                            f'ownerRef {bad} does not exist in namespace "{i.namespace}"')

    async def _sync_monitors(self) -> None:
        """Start an informer for every deletable resource discovery lists; stop those gone."""
        disc = await discover(self.client)
        self.discovery = disc
        wanted = {r.gvr: r for r in disc.deletable}
        for gvr in [g for g in self.monitors if g not in wanted]:
            await self.monitors.pop(gvr).stop()
        for gvr, res in wanted.items():
            if gvr in self.monitors:
                continue
            # the graph reads owners, finalizers and deletion: no managedFields kept (memory)
            inf = Informer(MetadataClient(self.client, res), gvr, transform=strip_managed_fields)  # type: ignore[arg-type]
            inf.add_handlers(on_add=self.graph.on_add, on_update=self.graph.on_update,
                             on_delete=self.graph.on_delete)
            self.monitors[gvr] = inf
            inf.start()

    async def run(self) -> None:
        while True:
            try:
                await self._sync_monitors()
                break
            except Exception as e:  # the API may still be starting
                log.debug("garbagecollector: discovery failed: %s", e)
                await asyncio.sleep(1.0)
        try:
            await asyncio.wait_for(asyncio.gather(*(m.synced.wait() for m in self.monitors.values())), 60)
        except TimeoutError:
            log.warning("garbagecollector: timed out waiting for the dependency graph to sync")
        resync = asyncio.create_task(self._resync_loop())
        try:
            await super().run()
        finally:
            resync.cancel()
            for m in self.monitors.values():
                await m.stop()

    async def _resync_loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._rediscover.wait(), RESYNC_PERIOD)
                await asyncio.sleep(1.0)  # let a burst of CRD changes settle
            except TimeoutError:
                pass
            self._rediscover.clear()
            try:
                await self._sync_monitors()
            except Exception as e:
                log.debug("garbagecollector: rediscovery failed: %s", e)

    # ---- lookups ------------------------------------------------------------------------
    async def _resource(self, api_version: str, kind: str) -> APIResource:
        res = self.discovery.resolve(api_version, kind) if self.discovery else None
        if res is None:
            self.discovery = await discover(self.client)
            res = self.discovery.resolve(api_version, kind)
        if res is None:
            raise StatusError(404, "NotFound", f"unable to get REST mapping for {api_version}/{kind}")
        return res

    async def _get(self, ident: Identity) -> tuple[APIResource, dict[str, Any] | None]:
        res = await self._resource(ident.api_version, ident.kind)
        return res, await MetadataClient(self.client, res).get(ident.namespace or None, ident.name)

    # ---- work ---------------------------------------------------------------------------
    async def sync(self, key: Any) -> None:
        action, node = key
        if action == "orphan":
            try:
                await self._orphan(node)
            except _Virtual:
                pass
            return
        if not node.observed:
            current = self.graph.nodes.get(node.identity.uid)
            if current is not node:
                return  # replaced or removed since it was queued
        try:
            await self._attempt_to_delete(node)
        except (_Virtual, _ClusterScopedWithNamespacedOwner):
            return
        if not node.observed:
            # exists, but no informer has shown it yet: look again later (upstream issue 56121)
            self.queue.add_rate_limited(key)

    async def _attempt_to_delete(self, item: Node) -> None:
        if item.being_deleted and not item.deleting_dependents:
            return  # a one-way trip: its dependents are handled once it is gone
        res, latest = await self._get(item.identity)
        if latest is None or latest["metadata"].get("uid") != item.identity.uid:
            self.graph.remove(item.identity, virtual=True)
            raise _Virtual()
        if item.deleting_dependents:
            await self._process_deleting_dependents(item)
            return
        refs = latest["metadata"].get("ownerReferences") or []
        if not refs:
            return
        solid, dangling, waiting = await self._classify(item, refs)
        if solid:
            if not dangling and not waiting:
                return
            # stale references would pin waiting owners in foreground deletion forever
            drop = {r["uid"] for r in dangling + waiting}
            await self._patch_owner_refs(res, item, lambda rs: [r for r in rs if r.get("uid") not in drop])
            return
        if waiting and item.dependents:
            if any(d.deleting_dependents for d in item.dependents):
                # break a possible cycle of foreground deletions: stop blocking our owners
                await self._patch_owner_refs(res, item, lambda rs: [{**r, "blockOwnerDeletion": False}
                                                                     if r.get("blockOwnerDeletion") else r for r in rs])
            await self._delete(res, item, latest, "Foreground")
            return
        fins = latest["metadata"].get("finalizers") or []
        policy = "Orphan" if ORPHAN in fins else "Foreground" if FOREGROUND in fins else "Background"
        await self._delete(res, item, latest, policy)

    async def _classify(self, item: Node, refs: list[dict[str, Any]]) -> tuple[
            list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        solid, dangling, waiting = [], [], []
        for ref in refs:
            owner = await self._live_owner(item, ref)
            if owner is None:
                dangling.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and FOREGROUND in (owner["metadata"].get("finalizers") or []):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _live_owner(self, item: Node, ref: dict[str, Any]) -> dict[str, Any] | None:
        """The owner as the API has it now, or None if it is absent (missing, or another uid)."""
        cluster_key = Identity.of_ref(ref, "")
        ns_key = Identity.of_ref(ref, item.identity.namespace)
        if cluster_key in self.graph.absent or ns_key in self.graph.absent:
            return None
        res = await self._resource(ref.get("apiVersion", ""), ref.get("kind", ""))
        if res.namespaced and not item.identity.namespace:
            raise _ClusterScopedWithNamespacedOwner()
        key = ns_key if res.namespaced else cluster_key
        owner = await MetadataClient(self.client, res).get(item.identity.namespace if res.namespaced else None,
                                                           ref.get("name", ""))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            self.graph.absent.add(key)
            return None
        return owner

    async def _process_deleting_dependents(self, item: Node) -> None:
        blocking = item.blocking_dependents()
        if not blocking:
            await self._remove_finalizer(item, FOREGROUND)
            return
        for d in blocking:
            if not d.deleting_dependents:
                self._enqueue_delete(d)

    async def _orphan(self, owner: Node) -> None:
        uid = owner.identity.uid
        errors = []
        for dep in list(owner.dependents):
            try:
                res = await self._resource(dep.identity.api_version, dep.identity.kind)
                await self._patch_owner_refs(res, dep, lambda rs: [r for r in rs if r.get("uid") != uid])
            except _Virtual:
                continue
            except StatusError as e:
                if e.code != 404:
                    errors.append(e)
        if errors:
            raise errors[0]
        await self._remove_finalizer(owner, ORPHAN)

    # ---- writes -------------------------------------------------------------------------
    async def _delete(self, res: APIResource, item: Node, latest: dict[str, Any], policy: str) -> None:
        md = latest["metadata"]
        pre = {"uid": item.identity.uid, "resourceVersion": md.get("resourceVersion")}
        ns = item.identity.namespace or None
        for _ in range(2):
            try:
                await self.client.delete(res.gvr, item.identity.name, ns, propagation=policy, preconditions=pre)
                return
            except StatusError as e:
                if e.code == 404:
                    self.graph.remove(item.identity, virtual=True)
                    raise _Virtual() from None
                if e.code != 409:
                    raise
            # as upstream: a conflict only matters if the owner references changed meanwhile
            _, cur = await self._get(item.identity)
            if cur is None or cur["metadata"].get("uid") != item.identity.uid:
                self.graph.remove(item.identity, virtual=True)
                raise _Virtual()
            if (cur["metadata"].get("ownerReferences") or []) != (md.get("ownerReferences") or []):
                self._enqueue_delete(item)
                return
            pre = {"uid": item.identity.uid}

    async def _patch_owner_refs(self, res: APIResource, item: Node, edit: Any) -> None:
        """Rewrite ownerReferences with a merge patch guarded by resourceVersion (works for every kind)."""
        for _ in range(5):
            _, cur = await self._get(item.identity)
            if cur is None or cur["metadata"].get("uid") != item.identity.uid:
                self.graph.remove(item.identity, virtual=True)
                raise _Virtual()
            refs = cur["metadata"].get("ownerReferences") or []
            new = edit(refs)
            if new == refs:
                return
            patch = {"metadata": {"ownerReferences": new or None, "uid": item.identity.uid,
                                  "resourceVersion": cur["metadata"]["resourceVersion"]}}
            try:
                await self.client.patch(res.gvr, item.identity.name, patch, item.identity.namespace or None)
                return
            except StatusError as e:
                if e.code == 404:
                    self.graph.remove(item.identity, virtual=True)
                    raise _Virtual() from None
                if e.code != 409:
                    raise
        raise StatusError(409, "Conflict", f"could not update ownerReferences of {item.identity}")

    async def _remove_finalizer(self, item: Node, fin: str) -> None:
        for _ in range(5):
            res, cur = await self._get(item.identity)
            if cur is None or cur["metadata"].get("uid") != item.identity.uid:
                self.graph.remove(item.identity, virtual=True)
                raise _Virtual()
            fins = cur["metadata"].get("finalizers") or []
            if fin not in fins:
                return
            patch = {"metadata": {"finalizers": [f for f in fins if f != fin] or None,
                                  "resourceVersion": cur["metadata"]["resourceVersion"]}}
            try:
                await self.client.patch(res.gvr, item.identity.name, patch, item.identity.namespace or None)
                return
            except StatusError as e:
                if e.code == 404:
                    return
                if e.code != 409:
                    raise
        raise StatusError(409, "Conflict", f"could not remove finalizer {fin} from {item.identity}")
