"""Namespace controller: empties a terminating namespace of all its content, then finalizes it.

As upstream's namespaced-resources deleter: discover every namespaced resource that can be
listed and deleted, delete collections, report progress in status conditions, and remove
the `kubernetes` finalizer once nothing remains.
"""

from __future__ import annotations

import logging
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import now_rfc3339
from .base import GVRS, Controller

log = logging.getLogger("pyk8s.controllers.namespace")

FINALIZER = "kubernetes"


class NamespaceController(Controller):
    name = "namespace"
    workers = 2

    def setup(self) -> None:
        self.namespaces = self.ctx.informer("namespaces")
        self.namespaces.add_handlers(
            on_add=self._maybe, on_update=lambda o, n: self._maybe(n))

    def _maybe(self, ns: dict[str, Any]) -> None:
        if ns["metadata"].get("deletionTimestamp"):
            self.queue.add(ns["metadata"]["name"])

    async def _resources(self) -> list[tuple[str, str, str]]:
        """(group, version, plural) of every namespaced resource that supports list and deletecollection."""
        out: list[tuple[str, str, str]] = []
        gvs = [("", "v1")]
        groups = await self.client.request("GET", "/apis")
        for g in groups.get("groups") or []:
            pv = g.get("preferredVersion") or (g.get("versions") or [{}])[0]
            gvs.append((g["name"], pv["version"]))
        for group, version in gvs:
            path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
            try:
                rl = await self.client.request("GET", path)
            except StatusError:
                continue
            for r in rl.get("resources") or []:
                if "/" in r["name"] or not r.get("namespaced"):
                    continue
                verbs = set(r.get("verbs") or [])
                if {"list", "deletecollection"} <= verbs:
                    out.append((group, version, r["name"]))
        return out

    async def sync(self, name: str) -> None:
        ns = self.namespaces.get(name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        resources = await self._resources()
        remaining: dict[str, int] = {}
        finalizers_remaining: dict[str, int] = {}
        failures: list[str] = []
        # events last: upstream deletes them after everything else so they describe the deletion
        resources.sort(key=lambda gvr: gvr[2] == "events")
        for gvr in resources:
            try:
                lst = await self.client.list(gvr, name)
            except StatusError as e:
                failures.append(f"{gvr[2]}: {e.message}")
                continue
            items = lst.get("items") or []
            if not items:
                continue
            pending = [i for i in items if not i["metadata"].get("deletionTimestamp")]
            if pending:
                try:
                    await self.client.request("DELETE", _collection(gvr, name), {"propagationPolicy": "Background"})
                except StatusError as e:
                    failures.append(f"{gvr[2]}: {e.message}")
                lst = await self.client.list(gvr, name)
                items = lst.get("items") or []
            if items:
                res_name = gvr[2] + (f".{gvr[0]}" if gvr[0] else "")
                remaining[res_name] = len(items)
                for i in items:
                    for f in i["metadata"].get("finalizers") or []:
                        finalizers_remaining[f] = finalizers_remaining.get(f, 0) + 1
        await self._set_conditions(ns, remaining, finalizers_remaining, failures)
        if remaining or failures:
            self.queue.add_after(name, 2.0 if remaining else 5.0)
            return
        # read it fresh: the status write above moved its resourceVersion past the informer's copy
        ns = await self.client.get_or_none(GVRS["namespaces"], name)
        if ns is None:
            return
        spec_fins = [f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != FINALIZER]
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                "resourceVersion": ns["metadata"]["resourceVersion"]}, "spec": {"finalizers": spec_fins}}
        try:
            await self.client.request("PUT", f"/api/v1/namespaces/{name}/finalize", body)
        except StatusError as e:
            if e.code == 404:
                return
            raise

    async def _set_conditions(self, ns: dict[str, Any], remaining: dict[str, int],
                              finalizers: dict[str, int], failures: list[str]) -> None:
        now = now_rfc3339()

        def cond(typ: str, status: str, reason: str, message: str) -> dict[str, Any]:
            return {"type": typ, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}

        conds = [
            cond("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered", "All resources successfully discovered"),
            cond("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions",
                 "All legacy kube types successfully parsed"),
            cond("NamespaceDeletionContentFailure", "True" if failures else "False",
                 "ContentDeletionFailed" if failures else "ContentDeleted",
                 ("Failed to delete all resource types, " + str(len(failures)) + " remaining: " + ", ".join(failures))
                 if failures else "All content successfully deleted, may be waiting on finalization"),
            cond("NamespaceContentRemaining", "True" if remaining else "False",
                 "SomeResourcesRemain" if remaining else "ContentRemoved",
                 ("Some resources are remaining: " + ", ".join(f"{k} has {v} resource instances"
                                                              for k, v in sorted(remaining.items())))
                 if remaining else "All content successfully removed"),
            cond("NamespaceFinalizersRemaining", "True" if finalizers else "False",
                 "SomeFinalizersRemain" if finalizers else "ContentHasNoFinalizers",
                 ("Some content in the namespace has finalizers remaining: " + ", ".join(
                     f"{k} in {v} resource instances" for k, v in sorted(finalizers.items())))
                 if finalizers else "All content-preserving finalizers finished"),
        ]
        old = {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or []}
        for c in conds:
            o = old.get(c["type"])
            if o and o.get("status") == c["status"]:
                c["lastTransitionTime"] = o.get("lastTransitionTime", now)
        if [(c["type"], c["status"], c["message"]) for c in conds] == \
                [(o.get("type"), o.get("status"), o.get("message")) for o in (ns.get("status") or {}).get("conditions") or []]:
            return
        try:
            await self.client.patch(GVRS["namespaces"], ns["metadata"]["name"],
                                    {"status": {"phase": "Terminating", "conditions": conds}}, sub="status")
        except StatusError as e:
            if e.code != 404:
                raise


def _collection(gvr: tuple[str, str, str], ns: str) -> str:
    from ..client.rest import resource_path

    return resource_path(gvr, ns)
