"""Generic REST storage: the verbs every resource shares, as upstream's registry/generic.Store.

Kind-specific behaviour comes from the tables in kindhooks (defaulting, validation) and
from the admission chain; this module never branches on a kind's name except through
those tables and a few upstream-wide rules (graceful deletion of pods, namespaces'
finalize flow) that live in strategies.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..api import errors as E
from ..api.resources import Registry, Resource
from ..api.timefmt import now_rfc3339
from ..storage import ConflictError, KeyExistsError, KeyNotFoundError, KeyValue, Store, StoreError
from . import kindhooks, namespace_lifecycle, nesting, strategies, typemeta
from .objectmeta import GENERATION_KINDS, generate_name, new_uid, spec_changed, strip_for_compare
from .watchcache import CacheSet, ResourceCache, decode

__all__ = ["RestStorage", "RequestContext", "deep_copy"]


def deep_copy(obj: Any) -> Any:
    # orjson round trip is several times faster than copy.deepcopy for JSON-shaped data
    return orjson.loads(orjson.dumps(obj))


MAX_OBJECT_BYTES = int(1.5 * 1024 * 1024)  # etcd's default request size limit, which upstream inherits


def encode_for_store(obj: dict[str, Any]) -> bytes:
    md = obj.get("metadata")
    if md and "resourceVersion" in md:
        md = dict(md)
        del md["resourceVersion"]
        obj = dict(obj)
        obj["metadata"] = md
    try:
        data = orjson.dumps(obj)
    except orjson.JSONEncodeError as e:  # nested past what orjson encodes (a patch can build that)
        if "Recursion limit" not in str(e):
            raise E.new_bad_request(f"unable to encode the object: {e}") from None  # a YAML value JSON has not
        data = b""
    if not data or nesting.exceeds(obj, data):
        # a request that decoded within the limit and was patched past it: refused as a decode would be
        raise E.new_bad_request(nesting.too_deep(nesting.deep_char(obj)))
    if len(data) > MAX_OBJECT_BYTES:
        # etcd's refusal, in upstream's words; upstream passes it on as a 500, but the object is the client's
        raise E.new_request_entity_too_large("etcdserver: request is too large")
    return data


@dataclass
class RequestContext:
    """Who asks and how: what admission and field managers need."""

    user: Any = None  # authn.UserInfo
    field_manager: str = ""
    dry_run: bool = False
    field_validation: str = "Strict"
    warnings: list[str] = field(default_factory=list)
    user_agent: str = ""
    subresource: str = ""
    verb: str = ""  # the request's authorization verb ("create" for a POST): what upstream's RequestInfo says
    # the Resource (version) the request named; admission gets the storage one (webhooks' requestKind)
    resource: Any = None
    # (stored object, status code) once the store acknowledged a write: see commit_answer
    committed: tuple[dict[str, Any], int] | None = None


# Admission plug-ins: (resource, operation, new, old, ctx) -> None; raise StatusError to refuse.
AdmissionFn = Callable[["RestStorage", Resource, str, dict[str, Any], dict[str, Any] | None, RequestContext], Any]


class RestStorage:
    def __init__(self, store: Store, caches: CacheSet, registry: Registry) -> None:
        self.store = store
        self.caches = caches
        self.registry = registry
        self.mutating: list[AdmissionFn] = []
        self.validating: list[AdmissionFn] = []
        # admission of what writes no object of the request's own kind: a DELETE (the stored object),
        # and the eviction and token subresources' CREATE (the stored pod, the TokenRequest):
        # fn(rest, res, op, namespace, name, obj, ctx)
        self.other_admission: list[Callable[..., Any]] = []
        self.managed_fields: Callable[..., Any] | None = None
        # keys whose stored value an update must rewrite even unchanged (storage/transforming.py)
        self.stale_keys: set[str] | None = None
        # whether store.revision is authoritative (the store does not ask a cluster for it)
        self._local_revision = type(store).current_revision is Store.current_revision
        # --feature-gates=ListFromCacheSnapshot: paged lists from watch cache snapshots (listsnapshot.py)
        self.list_from_cache_snapshot = True
        try:
            from ..api.patch.apply import managed_fields_entries

            self.managed_fields = managed_fields_entries
        except ImportError:  # pragma: no cover - until the patch package lands
            pass

    # ---- helpers ------------------------------------------------------------------------
    async def cache_for(self, res: Resource) -> ResourceCache:
        sr = self.registry.storage_resource(res)
        return await self.caches.ensure(sr.key_prefix())

    async def fresh(self) -> None:
        """Wait until the caches hold every write a consistent read must see."""
        if self._local_revision:  # the embedded store fed the caches before acknowledging: at once
            rev = self.store.revision
            if rev > self.caches.rev:  # (almost never: no coroutine for the common case)
                await self.caches.wait_fresh(rev)
            return
        try:
            await self.caches.wait_fresh(await self.store.current_revision())
        except StoreError as e:
            raise E.new_internal_error(e) from None
        except TimeoutError:
            raise E.new_timeout("the watch cache did not catch up with the store in time", 1) from None

    def _not_found(self, res: Resource, name: str) -> E.StatusError:
        return E.new_not_found(res.resource, name, res.group)

    async def get_current(self, res: Resource, namespace: str | None, name: str,
                          consistent: bool = True) -> dict[str, Any] | None:
        """The object as the cache has it; `consistent` waits until the cache holds every acknowledged write
        (resourceVersion=0 reads skip that, as upstream's "any" semantics, and so work without etcd's quorum)."""
        # the cache exists once loaded (every built-in at start): no coroutine for the common case
        cache = self.caches.caches.get(self.registry.storage_resource(res).key_prefix()) or await self.cache_for(res)
        if consistent:
            await self.fresh()
        return cache.objects.get(res.key(namespace, name))

    async def get(self, res: Resource, namespace: str | None, name: str, consistent: bool = True) -> dict[str, Any]:
        obj = await self.get_current(res, namespace, name, consistent)
        if obj is None:
            raise self._not_found(res, name)
        return obj

    async def check_namespace(self, res: Resource, namespace: str | None, creating: bool, name: str = "") -> None:
        """NamespaceLifecycle: the namespace must exist, and not be terminating for creates."""
        if not res.namespaced or not namespace:
            return
        ns_res = self.registry.get("", "v1", "namespaces")
        assert ns_res is not None
        ns = await self.get_current(ns_res, None, namespace)
        if ns is None:
            raise E.new_not_found("namespaces", namespace)
        if creating and (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise E.StatusError(
                403,
                "Forbidden",
                f'{res.qualified} "{name}" is forbidden: unable to create new content in namespace {namespace} '
                "because it is being terminated",
                {"name": name, "group": res.group, "kind": res.resource,
                 "causes": [{"reason": "NamespaceTerminating",
                             "message": f"namespace {namespace} is being terminated",
                             "field": "metadata.namespace"}]},
            )

    def _record_managers(self, obj: dict[str, Any], old: dict[str, Any] | None, ctx: RequestContext,
                         res: Resource, operation: str = "Update") -> None:
        if self.managed_fields is None or not ctx.field_manager:
            return
        entries = self.managed_fields(old, obj, ctx.field_manager, operation, res.group_version, now_rfc3339(),
                                      kind=res.kind, subresource=ctx.subresource,
                                      reset_fields=["status"] if res.crd is not None and "status" in res.subresources
                                      else None)
        md = obj.setdefault("metadata", {})
        if entries:
            md["managedFields"] = entries
        else:
            md.pop("managedFields", None)

    async def _admit(self, chain: list[AdmissionFn], res: Resource, op: str, obj: dict[str, Any],
                     old: dict[str, Any] | None, ctx: RequestContext) -> None:
        for fn in chain:
            r = fn(self, res, op, obj, old, ctx)
            if hasattr(r, "__await__"):
                await r

    async def admit_other(self, res: Resource, op: str, namespace: str | None, name: str, obj: dict[str, Any],
                          ctx: RequestContext) -> None:
        for fn in self.other_admission:
            r = fn(self, res, op, namespace, name, obj, ctx)
            if hasattr(r, "__await__"):
                await r

    async def _write(self, res: Resource, key: str, obj: dict[str, Any], share: bool,
                     expected: int | None) -> KeyValue:
        """Encode obj and store it: a create when expected is None, else an update over that
        revision. With share the watch cache keeps obj itself rather than decode the stored bytes
        (obj must hold no resourceVersion: decode puts it last). Every write passes here: nothing
        is stored with a kind or apiVersion other than its storage resource's."""
        typemeta.check_storable(self.registry, res, obj)
        data = encode_for_store(obj)
        if share:
            self.caches.hand_over(key, data, obj)
        try:
            if expected is None:
                return await self.store.create(key, data)
            return await self.store.update(key, data, expected)
        finally:
            if share:
                self.caches.take_back(key, data)

    # ---- create -------------------------------------------------------------------------
    async def create(self, res: Resource, namespace: str | None, obj: dict[str, Any], ctx: RequestContext,
                     *, share: bool = False) -> dict[str, Any]:
        """share: obj holds only what orjson.loads gives (it round-trips through JSON unchanged), and the
        caller will not change the result: the watch cache may then keep it rather than decode it again."""
        ctx.committed = None  # (a request's earlier write does not stand for this one)
        gk = res.group_kind
        md = obj.setdefault("metadata", {})
        if md is None:
            md = obj["metadata"] = {}
        if res.namespaced:
            if md.get("namespace") and namespace and md["namespace"] != namespace:
                raise E.new_bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            if namespace:
                md["namespace"] = namespace
        else:
            md.pop("namespace", None)
        # system fields are the server's
        for k in ("uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            md.pop(k, None)
        md["creationTimestamp"] = now_rfc3339()
        md["uid"] = new_uid()
        if gk in GENERATION_KINDS or res.crd is not None:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        if not md.get("name") and md.get("generateName"):
            md["name"] = generate_name(md["generateName"])
            generated = True
        else:
            generated = False
        strategies.prepare_for_create(res, obj)
        fn = kindhooks.DEFAULTERS.get(gk)
        if fn is not None:
            fn(obj)
        sfn = kindhooks.STATUS_ON_CREATE.get(gk)
        if sfn is not None:
            sfn(obj)
        await self.check_namespace(res, namespace, creating=True, name=md.get("name") or "")
        await self._admit(self.mutating, res, "CREATE", obj, None, ctx)
        errs = kindhooks.validate_create(gk, obj, res.namespaced)
        if errs:
            raise E.new_invalid(res.kind, md.get("name") or md.get("generateName", ""), errs, res.group)
        await self._admit(self.validating, res, "CREATE", obj, None, ctx)
        self._record_managers(obj, None, ctx, res)
        if ctx.dry_run:
            typemeta.check_storable(self.registry, res, obj)  # as _write would
            return obj
        for attempt in range(8):
            key = res.key(namespace, md["name"])
            # (a resourceVersion in the object would sit elsewhere than decode puts it)
            handed = share and "resourceVersion" not in md
            try:
                kv = await self._write(res, key, obj, handed, None)
            except KeyExistsError:
                if generated and attempt < 7:
                    md["name"] = generate_name(md["generateName"])
                    continue
                raise E.new_already_exists(res.resource, md["name"], res.group) from None
            except StoreError as e:
                raise E.new_internal_error(e) from None
            md["resourceVersion"] = str(kv.mod_revision)
            ctx.committed = (obj, 201)
            return obj
        raise AssertionError("unreachable")

    # ---- update -------------------------------------------------------------------------
    async def update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        mutate: Callable[[dict[str, Any] | None], Any],
        ctx: RequestContext,
        *,
        subresource: str = "",
        precondition_rv: str | None = None,
        allow_create: bool = False,
        retry_on_conflict: bool = False,
        share: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Read-modify-write: `mutate(copy_of_current)` returns the new object.

        Returns (object, created). Conflicts on the stored revision are retried when the
        caller's change does not depend on a resourceVersion (patches); otherwise 409.
        share: as for create, the new object holds only plain JSON values and the caller will not
        change the result, so the watch cache may keep it rather than decode the write again.
        """
        ctx.committed = None
        gk = res.group_kind
        for _ in range(20):
            cur = await self.get_current(res, namespace, name)
            if cur is None:
                if not allow_create:
                    raise self._not_found(res, name)
                new = mutate(None)
                return await self.create(res, namespace, new, ctx, share=share), True
            old = cur
            new = mutate(deep_copy(cur))
            if hasattr(new, "__await__"):
                new = await new
            nmd = new.setdefault("metadata", {})
            omd = old["metadata"]
            rv = nmd.get("resourceVersion")
            if precondition_rv is not None:
                rv = precondition_rv
            if rv and rv != omd.get("resourceVersion"):
                from .query_params import parse_resource_version

                parse_resource_version(str(rv))  # one that is not a resourceVersion at all is bad input, not a conflict
                raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group)
            if nmd.get("name") not in (None, "", name):
                raise E.new_bad_request(
                    f"the name of the object ({nmd.get('name')}) does not match the name on the URL ({name})"
                )
            nmd["name"] = name
            if res.namespaced:
                if nmd.get("namespace") and nmd["namespace"] != namespace:
                    raise E.new_bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request"
                    )
                nmd["namespace"] = namespace
            # system fields stay the server's
            for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
                if k in omd:
                    if k == "uid" and nmd.get("uid") and nmd["uid"] != omd["uid"]:
                        continue  # validation reports the change
                    nmd[k] = omd[k]
                else:
                    nmd.pop(k, None)
            strategies.prepare_for_update(res, new, old, subresource)
            if subresource in ("", "ephemeralcontainers"):  # (the body of pods/ephemeralcontainers is a Pod)
                fn = kindhooks.DEFAULTERS.get(gk)
                if fn is not None:
                    fn(new)
            # a /scale write goes through the main resource's strategy upstream, so it bumps the generation too
            if (gk in GENERATION_KINDS or res.crd is not None) and subresource in (None, "", "scale") \
                    and spec_changed(new, old):
                nmd["generation"] = int(omd.get("generation") or 1) + 1
            await self._admit(self.mutating, res, "UPDATE", new, old, ctx)
            # binding sets spec.nodeName, which a pod update may not: upstream's BindingREST skips update validation
            errs = [] if subresource == "binding" else kindhooks.validate_update(gk, new, old, res.namespaced,
                                                                                 subresource)
            if errs:
                raise E.new_invalid(res.kind, name, errs, res.group)
            await self._admit(self.validating, res, "UPDATE", new, old, ctx)
            if subresource != "binding":  # upstream's BindingREST writes storage directly: no managedFields entry
                self._record_managers(new, old, ctx, res)
            if strip_for_compare(new) == strip_for_compare(old) and not (
                    self.stale_keys and res.key(namespace, name) in self.stale_keys):
                return old, False  # no-op: no write, same resourceVersion (as upstream, unless stored stale)
            # the last finalizer gone from an object being deleted: the object goes (as upstream)
            if nmd.get("deletionTimestamp") and not nmd.get("finalizers") and strategies.finalized(res, new):
                if ctx.dry_run:
                    return new, False
                try:
                    kv = await self.store.delete(res.key(namespace, name), int(omd["resourceVersion"]))
                except ConflictError:
                    if retry_on_conflict:
                        continue
                    raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group) from None
                except KeyNotFoundError:
                    raise self._not_found(res, name) from None
                nmd["resourceVersion"] = str(kv.mod_revision)
                ctx.committed = (new, 200)
                return new, False
            if ctx.dry_run:
                typemeta.check_storable(self.registry, res, new)  # as _write would
                return new, False
            key = res.key(namespace, name)
            if share:
                # the cache's decode puts resourceVersion last in metadata: so does the write's own object
                nmd.pop("resourceVersion", None)
            try:
                kv = await self._write(res, key, new, share, int(omd["resourceVersion"]))
            except ConflictError:
                if retry_on_conflict or precondition_rv is None and not rv:
                    continue
                raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group) from None
            except KeyNotFoundError:
                raise self._not_found(res, name) from None
            except StoreError as e:
                raise E.new_internal_error(e) from None
            nmd["resourceVersion"] = str(kv.mod_revision)
            ctx.committed = (new, 200)
            return new, False
        raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group)

    # ---- delete -------------------------------------------------------------------------
    async def delete(
        self, res: Resource, namespace: str | None, name: str, options: dict[str, Any], ctx: RequestContext
    ) -> tuple[dict[str, Any], bool]:
        """Returns (object, deleted_now). Graceful deletion and finalizers keep the object for now."""
        namespace_lifecycle.admit_delete(res, name)
        ctx.committed = None
        for _ in range(20):
            cur = await self.get_current(res, namespace, name)
            if cur is None:
                raise self._not_found(res, name)
            if ctx.subresource != "eviction":  # an eviction was admitted before its budget was spent
                await self.admit_other(res, "DELETE", namespace, name, cur, ctx)
            pre = options.get("preconditions") or {}
            md = cur["metadata"]
            if pre.get("uid") and pre["uid"] != md.get("uid"):
                raise E.new_conflict(
                    res.resource, name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {md.get('uid')}",
                    res.group,
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
                raise E.new_conflict(
                    res.resource, name,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {md.get('resourceVersion')}",
                    res.group,
                )
            new = deep_copy(cur)
            keep = strategies.begin_delete(res, new, options)
            if keep:
                if strip_for_compare(new) == strip_for_compare(cur):
                    return cur, False
                if ctx.dry_run:
                    return new, False
                # the cached object's copy plus the deletion's fields: the cache may keep it (see update)
                key = res.key(namespace, name)
                new["metadata"].pop("resourceVersion", None)
                try:
                    kv = await self._write(res, key, new, True, int(md["resourceVersion"]))
                except ConflictError:
                    continue
                except KeyNotFoundError:
                    raise self._not_found(res, name) from None
                new["metadata"]["resourceVersion"] = str(kv.mod_revision)
                ctx.committed = (new, 200)
                return new, False
            if ctx.dry_run:
                return cur, True
            try:
                kv = await self.store.delete(res.key(namespace, name), int(md["resourceVersion"]))
            except ConflictError:
                continue
            except KeyNotFoundError:
                raise self._not_found(res, name) from None
            out = dict(cur)
            out["metadata"] = dict(md, resourceVersion=str(kv.mod_revision))
            ctx.committed = (out, 200)
            return out, True
        raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group)

    # ---- lists --------------------------------------------------------------------------
    async def list_from_store(
        self,
        res: Resource,
        namespace: str | None,
        predicate: Callable[[dict[str, Any]], bool] | None,
        limit: int,
        continue_key: str | None,
        revision: int,
    ) -> tuple[list[dict[str, Any]], int, str | None, int | None]:
        """A consistent page read from the store at a revision: (items, revision, next_key, remaining)."""
        sr = self.registry.storage_resource(res)
        prefix = sr.key_prefix(namespace if res.namespaced else None)
        items: list[dict[str, Any]] = []
        start = continue_key
        rev = revision
        while True:
            want = max(limit - len(items), 1) if limit else 0
            page = await self.store.range(prefix, revision=rev, limit=want if predicate is None else max(want, 256),
                                          start_after=start, count=predicate is None and bool(limit))
            rev = page.revision
            for kv in page.kvs:
                obj = decode(kv.value, kv.mod_revision)
                start = kv.key
                if predicate is None or predicate(obj):
                    items.append(obj)
                    if limit and len(items) >= limit:
                        break
            if limit and len(items) >= limit:
                last_key = start
                if last_key == page.kvs[-1].key and not page.more:
                    return items, rev, None, None
                remaining = None
                if predicate is None and page.count >= 0:  # counted from this page's start, as etcd's
                    remaining = page.count - len(items)
                return items, rev, last_key, remaining
            if not page.more:
                return items, rev, None, None
