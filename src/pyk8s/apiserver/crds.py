"""CustomResourceDefinitions: serve custom resources as soon as their CRD is stored.

Plays the apiextensions-apiserver's controllers in-process: registers each served
version in the registry (discovery, OpenAPI, handlers follow the registry), sets the
NamesAccepted/Established conditions, and on CRD deletion removes every custom object
before releasing the `customresourcecleanup.apiextensions.k8s.io` finalizer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from ..api.timefmt import now_rfc3339
from . import kindhooks
from .bootstrap import mark_local_api_service_available
from .rest import RequestContext

log = logging.getLogger("pyk8s.crds")

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def _storage_schema(crd: dict[str, Any]) -> dict[str, Any] | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return (v.get("schema") or {}).get("openAPIV3Schema")
    return None


# upstream's autoregister label: "true" for APIServices kept in sync with CRDs ("onstart" for built-ins)
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"


class CRDManager:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.registry = server.registry
        self.rest = server.rest
        self.crd_res = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        self._served: dict[str, list[tuple[str, str, str]]] = {}  # crd name -> [(group, version, plural)]
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        cache = await self.rest.cache_for(self.crd_res)
        for crd in cache.list(None):
            self._register(crd)
            self._queue.put_nowait(crd["metadata"]["name"])
        cache.listeners.append(self._on_event)
        self.rest.mutating.append(self._admit)
        self._task = asyncio.create_task(self._worker(), name="crd-controller")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    def _admit(self, rest: Any, res: Resource, op: str, obj: dict[str, Any], old: Any, ctx: RequestContext) -> None:
        if res.group_kind == ("apiextensions.k8s.io", "CustomResourceDefinition") and op == "CREATE":
            fins = obj["metadata"].setdefault("finalizers", [])
            if CLEANUP_FINALIZER not in fins:
                fins.append(CLEANUP_FINALIZER)

    def _on_event(self, ce: Any) -> None:
        name = ce.obj["metadata"]["name"]
        if ce.type == "DELETED":
            self._unregister(name)
        else:
            self._register(ce.obj)
        self._queue.put_nowait(name)

    # ---- registry -------------------------------------------------------------------------
    def _register(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = spec.get("group", "")
        storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), None)
        if not group or not names.get("plural") or not names.get("kind") or storage is None:
            return
        self._unregister(name, keep_kind_hooks=True)
        served = []
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        # preferred version: as upstream, by version priority (v2 > v1 > v1beta1 ...)
        versions.sort(key=lambda v: _version_priority(v["name"]), reverse=True)
        for i, v in enumerate(versions):
            subs: dict[str, str] = {}
            sr = v.get("subresources") or {}
            if "status" in sr:
                subs["status"] = names["kind"]
            if "scale" in sr:
                subs["scale"] = "Scale"
            r = Resource(
                group, v["name"], names["plural"], names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=list(names.get("shortNames") or []),
                categories=list(names.get("categories") or []),
                singular=names.get("singular") or names["kind"].lower(),
                subresources=subs, storage_version=storage, preferred=(i == 0), crd=crd,
                deprecation_warning=_deprecation_warning(v, spec) if v.get("deprecated") else "",
            )
            self.registry.add(r)
            served.append((group, v["name"], names["plural"]))
        self._served[name] = served
        schema = _storage_schema(crd)
        gk = (group, names["kind"])
        if schema is not None:
            try:
                from ..api.schema import structural
            except ImportError:  # pragma: no cover
                return

            def default(obj: dict[str, Any], _s=schema) -> None:
                structural.apply_defaults(_s, obj)

            namespaced = spec.get("scope", "Namespaced") == "Namespaced"
            from ..api.schema.celrules import RuleSet

            rules = RuleSet.build(schema)  # x-kubernetes-validations, compiled once per CRD generation

            def validate(obj: dict[str, Any], _s=schema, _ns=namespaced, _old: dict[str, Any] | None = None) -> list:
                errs = kindhooks.validate_generic(obj, _ns)
                body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
                sub = {k: v for k, v in _s.items()}
                props = dict(sub.get("properties") or {})
                for k in ("apiVersion", "kind", "metadata"):
                    props.pop(k, None)
                sub["properties"] = props
                if "required" in sub:
                    sub["required"] = [r for r in sub["required"] if r not in ("apiVersion", "kind", "metadata")]
                errs += structural.validate_structural(sub, body, "")
                # as upstream, CEL rules run only over an object the schema accepts
                return errs + (rules.validate(obj, _old) if rules is not None and not errs else [])

            def validate_update(new: dict[str, Any], old: dict[str, Any]) -> list:
                return validate(new, _old=old) + kindhooks.validate_generic_update(new, old)

            kindhooks.DEFAULTERS[gk] = default
            kindhooks.VALIDATORS[gk] = validate
            kindhooks.UPDATE_VALIDATORS[gk] = validate_update

    def _unregister(self, crd_name: str, keep_kind_hooks: bool = False) -> None:
        for g, v, p in self._served.pop(crd_name, []):
            r = self.registry.get(g, v, p)
            if r is not None and not keep_kind_hooks:
                for table in (kindhooks.DEFAULTERS, kindhooks.VALIDATORS, kindhooks.UPDATE_VALIDATORS):
                    table.pop((g, r.kind), None)
            self.registry.remove(g, v, p)

    # ---- controller -----------------------------------------------------------------------
    async def _worker(self) -> None:
        while True:
            name = await self._queue.get()
            try:
                await self._sync(name)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("syncing CRD %s", name)
                await asyncio.sleep(1)
                self._queue.put_nowait(name)

    async def _sync(self, name: str) -> None:
        crd = await self.rest.get_current(self.crd_res, None, name)
        if crd is None:
            return
        ctx = RequestContext(field_manager="kube-apiserver")
        if crd["metadata"].get("deletionTimestamp"):
            await self._cleanup(crd, ctx)
            await self._sync_api_services(ctx)
            return
        await self._sync_api_services(ctx)
        spec = crd.get("spec") or {}
        want = {
            "acceptedNames": {k: v for k, v in (spec.get("names") or {}).items()},
            "storedVersions": sorted({*((crd.get("status") or {}).get("storedVersions") or []),
                                      *[v["name"] for v in spec.get("versions") or [] if v.get("storage")]}),
        }
        st = crd.get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        if st.get("acceptedNames") == want["acceptedNames"] and conds.get("Established", {}).get("status") == "True" \
                and st.get("storedVersions") == want["storedVersions"]:
            return

        def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
            assert cur is not None
            s = cur.setdefault("status", {})
            s["acceptedNames"] = want["acceptedNames"]
            s["storedVersions"] = want["storedVersions"]
            now = now_rfc3339()
            s["conditions"] = [
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
                 "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted"},
            ]
            return cur

        await self.rest.update(self.crd_res, None, name, mutate, ctx, subresource="status", retry_on_conflict=True)

    async def _sync_api_services(self, ctx: RequestContext) -> None:
        """As upstream's crdregistration controller: one local APIService per group version that some live CRD
        serves (kubectl get apiservices lists them), removed when no CRD serves it any more."""
        api_res = self.registry.get("apiregistration.k8s.io", "v1", "apiservices")
        if api_res is None:
            return
        served: set[tuple[str, str]] = set()
        for crd in (await self.rest.cache_for(self.crd_res)).list(None):
            if crd["metadata"].get("deletionTimestamp"):
                continue
            spec = crd.get("spec") or {}
            served.update((spec.get("group", ""), v["name"]) for v in spec.get("versions") or [] if v.get("served"))
        existing = {o["metadata"]["name"]: o for o in (await self.rest.cache_for(api_res)).list(None)
                    if (o["metadata"].get("labels") or {}).get(AUTOMANAGED_LABEL) == "true"}
        for group, version in sorted(served):
            name = f"{version}.{group}"
            if name in existing:
                continue
            obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                   "metadata": {"name": name, "labels": {AUTOMANAGED_LABEL: "true"}},
                   # CRD groups sort after the built-in ones, as upstream's
                   "spec": {"group": group, "version": version, "groupPriorityMinimum": 1000,
                            "versionPriority": 100}}
            try:
                await self.rest.create(api_res, None, obj, ctx)
            except E.StatusError as e:
                if e.code != 409:
                    raise
                continue
            await mark_local_api_service_available(self.rest, api_res, name, ctx)
        for name, obj in existing.items():
            spec = obj.get("spec") or {}
            if (spec.get("group", ""), spec.get("version", "")) not in served:
                try:
                    await self.rest.delete(api_res, None, name, {}, ctx)
                except E.StatusError as e:
                    if e.code != 404:
                        raise

    async def _cleanup(self, crd: dict[str, Any], ctx: RequestContext) -> None:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        prefix = f"/registry/{group}/{plural}/"
        store = self.rest.store
        res = await store.range(prefix)
        for kv in res.kvs:
            try:
                await store.delete(kv.key)
            except Exception:
                pass
        self.server.caches.drop(prefix)
        name = crd["metadata"]["name"]

        def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
            assert cur is not None
            cur["metadata"]["finalizers"] = [f for f in cur["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
            return cur

        try:
            await self.rest.update(self.crd_res, None, name, mutate, ctx, retry_on_conflict=True)
        except E.StatusError as e:
            if e.code != 404:
                raise


def _deprecation_warning(v: dict[str, Any], spec: dict[str, Any]) -> str:
    """The version's deprecationWarning, or upstream's default: it is deprecated, and the newest
    served version that is not (and is newer than it) is the one to use."""
    if v.get("deprecationWarning") is not None:
        return str(v["deprecationWarning"])
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    msg = f"{group}/{v['name']} {kind} is deprecated"
    mine = _version_priority(v["name"])
    newer = [o["name"] for o in spec.get("versions") or []
             if o.get("served", True) and not o.get("deprecated") and _version_priority(o["name"]) > mine]
    if newer:
        msg += f"; use {group}/{max(newer, key=_version_priority)} {kind}"
    return msg


def _version_priority(v: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by number (upstream's CompareKubeAwareVersionStrings)."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (0, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor)
