"""Resource handlers: the REST verbs, lists, watches and subresources over HTTP (aiohttp).

The request path is resolved once (request.py), the representation negotiated once
(negotiation.py); everything kind-specific is delegated to rest.py and the kind tables.
"""

from __future__ import annotations

import asyncio
import base64
import posixpath
import random
import time
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from ..api import errors as E
from ..api.resources import Registry, Resource
from ..profiling import profile_from_env
from ..storage import CompactedError, FutureRevisionError
from . import dryrun, tables
from .appkeys import PF_HEADERS, PF_WATCH_INITIALIZED
from .codec import JSON_TYPES, decode_body, encode, media_type, unrecognized
from .jsonwire import dumps as json_dumps
from .jsonwire import go_escape
from .listsnapshot import Snapshot
from .negotiation import Output, output_for
from .query_params import parse_bool, parse_int64, parse_resource_version
from .request import RequestInfo
from .rest import RequestContext, RestStorage, deep_copy
from .selectors import build_predicate
from .warning_headers import add_warnings
from .watchcache import ADDED, BOOKMARK, TooOldError

__all__ = ["ResourceHandler"]

# (items, the list's resourceVersion, key of the last item when more follow, remainingItemCount)
_ListPage = tuple[list[dict[str, Any]], int, str | None, int | None]


profile_from_env()  # PYK8S_PROFILE: see pyk8s.profiling

META_V1 = "meta.k8s.io/v1"
DEFAULT_LIST_LIMIT_CACHE = 0


_bool = parse_bool  # query parameter bools convert as upstream's


def status_response(err: E.StatusError, out: Output | None = None) -> web.Response:
    body, ct = encode(err.status(), out if out and not out.as_kind else None)
    headers = dict(err.headers)
    return web.Response(body=body, status=err.code, content_type=ct.split(";")[0], headers=headers)


class ResourceHandler:
    def __init__(self, rest: RestStorage, registry: Registry, bookmark_interval: float = 60.0) -> None:
        self.rest = rest
        self.registry = registry
        self.bookmark_interval = bookmark_interval
        self.min_request_timeout = 1800.0
        self.metrics: Any = None  # apiserver/metrics.py: watch events sent

    # ---- conversion between the served version and the stored one --------------------------
    def _storage_api_version(self, res: Resource) -> str:
        sr = self.registry.storage_resource(res)
        return sr.api_version

    def to_storage(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        sv = self._storage_api_version(res)
        if sv == res.api_version:
            return obj
        if res.crd is not None:  # conversion strategy None: only apiVersion changes
            return {**obj, "apiVersion": sv}
        from ..api.conversion import convert

        return convert(obj, sv)

    def from_storage(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("apiVersion", res.api_version) == res.api_version:
            return obj
        if res.crd is not None:
            return {**obj, "apiVersion": res.api_version}
        from ..api.conversion import convert

        return convert(obj, res.api_version)

    # ---- entry --------------------------------------------------------------------------
    async def handle(self, request: web.Request, info: RequestInfo, res: Resource, ctx: RequestContext) -> web.StreamResponse:
        ctx.resource = res  # (admission webhooks' requestKind: the version asked for, not the stored one)
        if info.subresource == "proxy" and "proxy" in res.subresources and info.name:
            # every method, any media type: forwarded to the node, service or pod
            from . import resource_proxy

            return await resource_proxy.handle(self, request, res, info.namespace if res.namespaced else None, info)
        q = request.query
        out = output_for(request.headers.get("Accept"))
        if out is None:
            raise E.new_not_acceptable(
                "only the following media types are accepted: application/json, application/yaml, "
                "application/vnd.kubernetes.protobuf"
            )
        m = request.method
        sub = info.subresource
        if sub and sub not in res.subresources:
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        ctx.subresource = sub
        if res.namespaced and info.namespace is None and (info.name or m in ("POST",)):
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        ns = info.namespace if res.namespaced else None
        if m == "GET" and res.virtual:
            from . import virtual

            if not virtual.readable(res) or (not info.name and (info.legacy_watch or _bool(q.get("watch")))):
                raise E.new_method_not_supported(res.resource, "watch" if not info.name else "get", res.group)
            obj, warnings = virtual.read(res, info.name or None)
            if info.name:
                return self.respond(obj, out, res, warnings=warnings)
            if out.as_kind == "Table":
                obj = tables.table_for(obj["items"], res, out, obj["metadata"], include_object=q.get("includeObject"))
            body, ct = encode(obj, out)
            resp = web.Response(body=body, headers={"Content-Type": ct})
            add_warnings(resp.headers, warnings)
            return resp
        if m == "GET":
            if not info.name:
                if info.legacy_watch or _bool(q.get("watch")):
                    return await self.watch(request, res, ns, out)
                return await self.list(request, res, ns, out)
            if sub in ("", "status", "ephemeralcontainers"):  # (pods/ephemeralcontainers reads the Pod, as upstream)
                rv = q.get("resourceVersion")
                if rv:
                    parse_resource_version(rv)  # (a 400 for one that is not a number)
                obj = await self.rest.get(res, ns, info.name, consistent=rv != "0")
                return self.respond(self.from_storage(res, obj), out, res)
            if sub == "scale":
                from . import subresources

                return self.respond(await subresources.get_scale(self, res, ns, info.name), out, None)
            from . import subresources

            return await subresources.get_other(self, request, res, ns, info, out, ctx)
        if m == "POST":
            if info.name:
                from . import subresources

                return await subresources.post(self, request, res, ns, info, out, ctx)
            return await self.create(request, res, ns, out, ctx)
        if m == "PUT":
            if not info.name:
                raise E.new_method_not_supported(res.resource, "update", res.group)
            return await self.update(request, res, ns, info.name, out, ctx)
        if m == "PATCH":
            if not info.name:
                raise E.new_method_not_supported(res.resource, "patch", res.group)
            return await self.patch(request, res, ns, info.name, out, ctx)
        if m == "DELETE":
            if not info.name:
                return await self.delete_collection(request, res, ns, out, ctx)
            return await self.delete(request, res, ns, info.name, out, ctx)
        raise E.new_method_not_supported(res.resource, m.lower(), res.group)

    # ---- encoding -----------------------------------------------------------------------
    def respond(self, obj: dict[str, Any], out: Output, res: Resource | None, status: int = 200,
                warnings: list[str] | None = None) -> web.Response:
        if out.as_kind == "Table" and res is not None:
            obj = tables.table_for([obj], res, out, None, include_object=None)
        elif out.as_kind.startswith("PartialObjectMetadata") and res is not None:
            obj = tables.partial(obj, out.version)
        body, ct = encode(obj, out)
        resp = web.Response(body=body, status=status)
        resp.headers["Content-Type"] = ct
        if warnings:
            add_warnings(resp.headers, warnings)
        return resp

    # ---- read the body ------------------------------------------------------------------
    async def read_object(self, request: web.Request, res: Resource, ctx: RequestContext) -> dict[str, Any]:
        body = await request.read()
        ct = request.headers.get("Content-Type", "application/json")
        obj = decode_body(body, ct, res.kind)
        if not isinstance(obj, dict):
            raise unrecognized(res.kind, not_an_object(obj), body)
        if ctx.field_validation != "Ignore" and media_type(ct) in JSON_TYPES:
            self.check_duplicates(body, obj, res, ctx)
        return self.check_object(obj, res, ctx)

    @staticmethod
    def check_duplicates(body: bytes, obj: dict[str, Any], res: Resource, ctx: RequestContext) -> None:
        """Repeated keys, as upstream's strict decoding reports them (before anything changes obj)."""
        from .duplicate_fields import duplicate_fields

        dups = duplicate_fields(body, obj)
        if not dups:
            return
        if ctx.field_validation == "Strict":
            detail = ", ".join(f'duplicate field "{d}"' for d in dups)
            raise E.new_bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                                    f"strict decoding error: {detail}")
        ctx.warnings.extend(f'duplicate field "{d}"' for d in dups)

    def check_object(self, obj: Any, res: Resource, ctx: RequestContext) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise E.new_bad_request(not_an_object(obj))
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if kind is not None and not isinstance(kind, str) or api_version is not None and not isinstance(api_version, str):
            raise E.new_bad_request("couldn't get version/kind; json parse error: json: cannot unmarshal into Go struct field .kind of type string")
        if api_version and api_version != res.api_version:
            # as upstream: a body in another version of the same group is converted; another group is refused
            grp = api_version.split("/")[0] if "/" in api_version else ""
            other = self.registry.get(grp, api_version.split("/")[-1], res.resource) if grp == res.group else None
            if other is None:
                raise E.new_bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API version ({res.api_version})"
                )
        if kind and kind != res.kind and not ctx.subresource:
            v = api_version.split("/")[-1] if api_version else res.version
            raise E.new_bad_request(
                f'{kind} in version "{v}" cannot be handled as a {res.kind}: converting ({v}.{kind}) to '
                f"({res.group or 'core'}.{res.kind}): unknown conversion"
            )
        if not kind:
            obj["kind"] = res.kind
        if not api_version:
            obj["apiVersion"] = res.api_version
        md = obj.get("metadata")
        if md is not None and not isinstance(md, dict):
            raise E.new_bad_request(
                f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: json: cannot unmarshal '
                f"{_json_type(md)} into Go struct field {res.kind}.metadata of type v1.ObjectMeta"
            )
        self.check_fields(obj, res, ctx)
        return obj

    def check_fields(self, obj: dict[str, Any], res: Resource, ctx: RequestContext) -> None:
        """Strict decoding: unknown fields per fieldValidation (Strict/Warn/Ignore); wrong types always fail."""
        from . import fieldcheck

        fieldcheck.check(obj, res, ctx)

    # ---- create -------------------------------------------------------------------------
    async def create(self, request: web.Request, res: Resource, ns: str | None, out: Output, ctx: RequestContext):
        if "create" not in res.verbs:
            raise E.new_method_not_supported(res.resource, "create", res.group)
        obj = await self.read_object(request, res, ctx)
        if res.virtual:
            from . import virtual

            result = await virtual.create(self, request, res, ns, obj, ctx)
            return self.respond(result, out, None, 201)
        stored = self.to_storage(res, obj)
        # a JSON body in the storage version holds plain JSON values only: the watch cache may keep
        # the created object itself (respond only reads it; from_storage converts into a new one)
        share = stored is obj and media_type(request.headers.get("Content-Type", "application/json")) in JSON_TYPES
        created = await self.rest.create(self.registry.storage_resource(res), ns, stored, ctx, share=share)
        return self.respond(self.from_storage(res, created), out, res, 201, ctx.warnings)

    # ---- update -------------------------------------------------------------------------
    async def update(self, request: web.Request, res: Resource, ns: str | None, name: str, out: Output,
                     ctx: RequestContext, sub: str | None = None):
        sub = ctx.subresource if sub is None else sub
        if sub == "scale":
            from . import subresources

            return self.respond(await subresources.put_scale(self, request, res, ns, name, ctx), out, None)
        obj = await self.read_object(request, res, ctx)
        if not (obj.get("metadata") or {}).get("name"):  # as upstream's checkName, before any lookup
            raise E.new_bad_request(f"the name of the object ({name} based on URL) was undeterminable: "
                                    "name must be provided")
        new = self.to_storage(res, obj)

        def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
            return deep_copy(new)

        allow_create = res.group_kind in _CREATE_ON_UPDATE
        share = new is obj and media_type(request.headers.get("Content-Type", "application/json")) in JSON_TYPES
        result, created = await self.rest.update(self.registry.storage_resource(res), ns, name, mutate, ctx,
                                                 subresource=sub, allow_create=allow_create, share=share)
        return self.respond(self.from_storage(res, result), out, res, 201 if created else 200, ctx.warnings)

    # ---- patch --------------------------------------------------------------------------
    async def patch(self, request: web.Request, res: Resource, ns: str | None, name: str, out: Output,
                    ctx: RequestContext):
        from . import patching

        obj, created = await patching.patch(self, request, res, ns, name, ctx)
        if ctx.subresource == "scale":  # a Scale is autoscaling/v1 whatever the parent's version
            return self.respond(obj, out, None, 200, ctx.warnings)
        return self.respond(self.from_storage(res, obj), out, res, 201 if created else 200, ctx.warnings)

    # ---- delete -------------------------------------------------------------------------
    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if request.can_read_body:
            body = await request.read()
            if body.strip():
                o = decode_body(body, request.headers.get("Content-Type", "application/json"))
                if not isinstance(o, dict):
                    raise E.new_bad_request(not_an_object(o))  # (upstream's decoder error, there a 500)
                from ..api.schema import strict

                type_errs, _ = strict.check_fields("", "v1", "DeleteOptions", o)
                if type_errs:
                    raise E.new_bad_request(type_errs[0])
                opts.update(o)
        q = request.query
        if "gracePeriodSeconds" in q:
            opts["gracePeriodSeconds"] = parse_int64(q["gracePeriodSeconds"])
        if "propagationPolicy" in q:
            opts["propagationPolicy"] = q["propagationPolicy"]
        if "orphanDependents" in q:
            opts["orphanDependents"] = _bool(q["orphanDependents"])
        pp = opts.get("propagationPolicy")
        if pp is not None and pp not in ("Orphan", "Background", "Foreground"):
            raise E.new_invalid("DeleteOptions", "", [E.FieldError(
                "propagationPolicy", "NotSupported", pp, valid_values=["Foreground", "Background", "Orphan", "nil"])])
        return opts

    async def delete(self, request: web.Request, res: Resource, ns: str | None, name: str, out: Output,
                     ctx: RequestContext):
        if "delete" not in res.verbs:
            raise E.new_method_not_supported(res.resource, "delete", res.group)
        opts = await self._delete_options(request)
        dryrun.from_delete_options(opts, ctx)
        obj, deleted_now = await self.rest.delete(self.registry.storage_resource(res), ns, name, opts, ctx)
        status = 200 if deleted_now else 202 if obj.get("metadata", {}).get("deletionTimestamp") and not deleted_now else 200
        if status == 202 and res.group_kind == ("", "Pod"):
            status = 200  # upstream answers 200 for graceful pod deletion
        return self.respond(self.from_storage(res, obj), out, res, status)

    async def delete_collection(self, request: web.Request, res: Resource, ns: str | None, out: Output,
                                ctx: RequestContext):
        if "deletecollection" not in res.verbs:
            raise E.new_method_not_supported(res.resource, "deletecollection", res.group)
        q = request.query
        opts = await self._delete_options(request)
        dryrun.from_delete_options(opts, ctx)
        pred = build_predicate(res.group_kind, q.get("labelSelector", ""), q.get("fieldSelector", ""))
        cache = await self.rest.cache_for(res)
        items = [o for o in cache.list(ns) if pred is None or pred(o)]
        deleted = []
        for o in items:
            md = o["metadata"]
            try:
                d, _ = await self.rest.delete(self.registry.storage_resource(res),
                                              md.get("namespace") if res.namespaced else None, md["name"], opts, ctx)
                deleted.append(self.from_storage(res, d))
            except E.StatusError as e:
                if e.code != 404:
                    raise
        lst = {"kind": f"{res.kind}List", "apiVersion": res.api_version,
               "metadata": {"resourceVersion": str(self.rest.store.revision)}, "items": deleted}
        body, ct = encode(lst, out if not out.as_kind else None)
        return web.Response(body=body, headers={"Content-Type": ct})

    # ---- list ---------------------------------------------------------------------------
    async def list(self, request: web.Request, res: Resource, ns: str | None, out: Output) -> web.StreamResponse:
        if "list" not in res.verbs:
            raise E.new_method_not_supported(res.resource, "list", res.group)
        q = request.query
        pred = build_predicate(res.group_kind, q.get("labelSelector", ""), q.get("fieldSelector", ""))
        limit = _int_param(q, "limit")
        cont = q.get("continue", "")
        rv = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        if match and match not in ("NotOlderThan", "Exact"):
            raise E.new_bad_request(f"resourceVersionMatch: Unsupported value: \"{match}\": supported values: \"Exact\", \"NotOlderThan\"")
        if match and not rv:
            raise E.new_invalid("ListOptions", "", [E.FieldError("resourceVersionMatch", "Forbidden", detail="resourceVersionMatch is forbidden unless resourceVersion is provided")])
        if cont and rv:
            raise E.new_invalid("ListOptions", "", [E.FieldError("resourceVersion", "Forbidden", detail="specifying resource version is not allowed when using continue")])
        cache = await self.rest.cache_for(res)
        next_key: str | None = None
        remaining: int | None = None
        snapshots = self.rest.list_from_cache_snapshot  # upstream's ListFromCacheSnapshot gate
        prefix = self.registry.storage_resource(res).key_prefix(ns if res.namespaced else None)
        if cont:
            rev, start = _decode_continue(cont, res, ns, self.registry)
            try:
                items, list_rev, next_key, remaining = await self._page_at(
                    res, ns, pred, limit, start, rev, cache.snapshot_at(rev) if snapshots else None, prefix)
            except CompactedError:
                raise E.StatusError(410, "Expired", _CONTINUE_EXPIRED) from None
            except FutureRevisionError as fe:  # a forged token's revision: as upstream's etcd3 store answers it
                raise E.new_timeout(f"Too large resource version: {fe.requested}, current: {fe.current}", 1) from None
        elif (rv and match == "Exact") or (rv and rv != "0" and limit and not match):
            rev_n = parse_resource_version(rv)
            if rev_n >= 1 << 63:  # past any store's revisions (etcd's are int64): never asked of the store
                raise E.new_timeout(f"Too large resource version: {rev_n}, current: {self.rest.store.revision}", 1)
            try:
                items, list_rev, next_key, remaining = await self._page_at(
                    res, ns, pred, limit, None, rev_n, cache.snapshot_at(rev_n) if snapshots else None, prefix)
            except CompactedError:
                raise E.new_resource_expired("The resourceVersion for the provided list is too old.") from None
            except FutureRevisionError as fe:
                raise E.new_too_large_resource_version(fe.requested, fe.current) from None
        else:
            if rv and rv != "0":
                want = parse_resource_version(rv)
                if want > self.rest.store.revision:
                    raise E.new_too_large_resource_version(want, self.rest.store.revision)
            if rv != "0":  # "0" is any state the cache has: no round trip to the store (upstream's semantics)
                await self.rest.fresh()
            if rv == "0" or not limit or cache.count(ns) <= limit:
                # the watch cache ignores limit for resourceVersion=0, as upstream's
                objs = cache.list(ns)
                items = [o for o in objs if pred(o)] if pred is not None else objs
                items.sort(key=_sort_key)
                list_rev = cache.rev
            elif snapshots:
                # the first page of a paged list: its snapshot serves the continue tokens
                snap = cache.snapshot()
                list_rev = cache.rev
                items, next_key, remaining = snap.page(prefix, None, limit, pred)
            else:
                items, list_rev, next_key, remaining = await self.rest.list_from_store(res, ns, pred, limit, None, 0)
        items = [self.from_storage(res, o) for o in items] if self._storage_api_version(res) != res.api_version else items
        meta: dict[str, Any] = {"resourceVersion": str(list_rev)}
        if next_key is not None:
            meta["continue"] = _encode_continue(list_rev, next_key, res, ns, self.registry)
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if out.as_kind == "Table":
            include = request.query.get("includeObject", "Metadata")
            body_obj = tables.table_for(items, res, out, meta, include_object=include)
            body, ct = encode(body_obj, out)
            return web.Response(body=body, headers={"Content-Type": ct})
        if out.as_kind.startswith("PartialObjectMetadata"):
            body_obj = {"kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{out.version}",
                        "metadata": meta, "items": [tables.partial(o, out.version) for o in items]}
            body, ct = encode(body_obj, out)
            return web.Response(body=body, headers={"Content-Type": ct})
        if out.format == "json":
            # lists are the hot path: concatenate item encodings rather than building one big dict
            head = orjson.dumps({"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta})
            body = go_escape(head[:-1] + b',"items":[' + b",".join(orjson.dumps(o) for o in items) + b"]}\n")
            return web.Response(body=body, headers={"Content-Type": "application/json"})
        lst = {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta, "items": items}
        body, ct = encode(lst, out)
        return web.Response(body=body, headers={"Content-Type": ct})

    async def _page_at(self, res: Resource, ns: str | None, pred: Callable[[dict[str, Any]], bool] | None,
                       limit: int, start: str | None, rev: int, snap: Snapshot | None,
                       prefix: str) -> _ListPage:
        """A page of the list at rev: cut from its snapshot while one is kept, else read from the store."""
        if snap is not None:
            items, next_key, remaining = snap.page(prefix, start, limit, pred)
            return items, rev, next_key, remaining
        return await self.rest.list_from_store(res, ns, pred, limit, start, rev)

    # ---- watch --------------------------------------------------------------------------
    async def watch(self, request: web.Request, res: Resource, ns: str | None, out: Output) -> web.StreamResponse:
        if "watch" not in res.verbs:
            raise E.new_method_not_supported(res.resource, "watch", res.group)
        q = request.query
        pred = build_predicate(res.group_kind, q.get("labelSelector", ""), q.get("fieldSelector", ""))
        rv = q.get("resourceVersion", "")
        bookmarks = _bool(q.get("allowWatchBookmarks"))
        send_initial = q.get("sendInitialEvents")
        match = q.get("resourceVersionMatch", "")
        if send_initial is not None:
            if match != "NotOlderThan":
                raise E.new_invalid("ListOptions", "", [E.FieldError(
                    "resourceVersionMatch", "Forbidden",
                    detail="sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")])
            if _bool(send_initial) and not bookmarks:
                raise E.new_invalid("ListOptions", "", [E.FieldError(
                    "allowWatchBookmarks", "Forbidden", detail="sendInitialEvents requires allowWatchBookmarks=true")])
        timeout = float(parse_int64(q["timeoutSeconds"])) if q.get("timeoutSeconds") \
            else self.min_request_timeout * (1 + random.random())
        cache = await self.rest.cache_for(res)
        convert = self._storage_api_version(res) != res.api_version
        initial: list[dict[str, Any]] = []
        want_initial = (not rv or rv == "0") if send_initial is None else _bool(send_initial)
        if rv and rv != "0":
            since = parse_resource_version(rv)
            if since > self.rest.store.revision:
                raise E.new_too_large_resource_version(since, self.rest.store.revision)
        else:
            if rv != "0":
                await self.rest.fresh()
            since = cache.rev
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = out.content_type
        resp.headers["Cache-Control"] = "no-cache, private"
        ctx = request.get("pyk8s.ctx")
        add_warnings(resp.headers, ctx.warnings if ctx is not None else ())  # e.g. a deprecated CRD version's
        resp.enable_chunked_encoding()
        resp.headers.update(request.get(PF_HEADERS) or {})  # API Priority and Fairness' classification
        try:
            if want_initial:
                objs = cache.list(ns)
                initial = sorted((o for o in objs if pred is None or pred(o)), key=_sort_key)
                since = cache.rev
            watcher, _ = cache.watch(ns, pred, since)
        except TooOldError as e:
            await resp.prepare(request)
            err = E.StatusError(410, "Expired", f"too old resource version: {e.requested} ({e.oldest})")
            await resp.write(json_dumps({"type": "ERROR", "object": err.status()}))
            return resp
        await resp.prepare(request)
        enc = _WatchEncoder(self, res, out, convert)
        deadline = time.monotonic() + timeout
        try:
            if initial:
                await resp.write(b"".join(enc.line(ADDED, o) for o in initial))
            if want_initial and send_initial is not None:
                await resp.write(enc.bookmark(since, initial_end=True))
            initialized = request.get(PF_WATCH_INITIALIZED)
            if initialized is not None:
                initialized()  # APF holds a watch's seat only until it is set up, as upstream
            sent = self.metrics.watch_counter(res) if self.metrics is not None else _count_nothing
            sent(len(initial))  # apiserver_watch_events_total, as events are written
            flush = _direct_sink(request, resp, watcher, sent) \
                if not convert and not out.as_kind and out.format == "json" else _nothing
            last_bookmark = time.monotonic()
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                wait = min(left, self.bookmark_interval) if bookmarks else left
                try:
                    batch = await watcher.next_batch(wait)
                except EOFError:
                    break
                flush()  # what the sink holds goes before anything this task writes
                if batch:
                    await resp.write(b"".join(enc.event(t, ce) for t, ce in batch))
                    sent(len(batch))
                    since = batch[-1][1].rev
                elif bookmarks and time.monotonic() - last_bookmark >= self.bookmark_interval - 0.01:
                    await resp.write(enc.bookmark(max(since, cache.rev)))
                    last_bookmark = time.monotonic()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            watcher.stop()
            flush()
        return resp


# A watcher whose connection holds more than this much unsent data gets its events queued
# (and its task waits for the connection to drain) instead of written directly.
_DIRECT_MAX_BUFFER = 256 * 1024


def _nothing() -> None:
    return None


def _count_nothing(n: int) -> None:
    return None


def _direct_sink(request: web.Request, resp: web.StreamResponse, watcher: Any,
                 sent: Callable[[int], None]) -> Callable[[], None]:
    """Let the watch cache write this watch's JSON events straight to the connection; returns the
    function that writes out what the sink holds.

    Every watcher of a resource gets the same serialised bytes (CacheEvent.json_line, or
    json_chunk ready framed for a lone event), and fan-out costs no task wake-up per watcher
    per event. The sink gathers the events that
    arrive in one turn of the loop (a commit batch brings many) and writes them as one chunk
    with one transport write: each write is a TLS record and a send(2), which had cost more
    than the events' encoding. Events reach the connection in order: the sink is only used
    while nothing is queued for the watcher, it writes out what it holds before refusing an
    event, and the task calls the returned flush before it writes anything itself.
    """
    writer = getattr(resp, "_payload_writer", None)
    transport = request.transport
    if writer is None or transport is None or not getattr(writer, "chunked", False) \
            or getattr(writer, "_compress", None) is not None or not hasattr(writer, "send_headers"):
        return _nothing
    writer.send_headers()  # aiohttp holds the headers back until the first body write
    held: list[Any] = []  # CacheEvents
    loop = asyncio.get_running_loop()

    def flush() -> None:
        if not held:
            return
        sent(len(held))
        if len(held) == 1:
            data = held[0].json_chunk()
        else:  # one chunk for them all: one size line to write and for the client to parse
            body = b"".join(ce.json_line() for ce in held)
            data = b"%x\r\n%b\r\n" % (len(body), body)
        held.clear()
        if not transport.is_closing():
            transport.write(data)

    def sink(ce: Any) -> bool:
        if transport.is_closing() or transport.get_write_buffer_size() > _DIRECT_MAX_BUFFER:
            flush()
            return False
        if not held:
            loop.call_soon(flush)
        elif len(held) >= 256:  # a large batch goes out in parts (the flush already due takes the rest)
            flush()
        held.append(ce)
        return True

    watcher.sink = sink
    return flush


class _WatchEncoder:
    """Encodes watch events in the negotiated representation; JSON events reuse shared encodings."""

    def __init__(self, h: ResourceHandler, res: Resource, out: Output, convert: bool) -> None:
        self.h, self.res, self.out, self.convert = h, res, out, convert
        self.first_table = True

    def _obj(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.convert:
            obj = self.h.from_storage(self.res, obj)
        if self.out.as_kind == "Table":
            t = tables.table_for([obj], self.res, self.out, {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                                 include_object="Metadata", headers=self.first_table)
            self.first_table = False
            return t
        if self.out.as_kind.startswith("PartialObjectMetadata"):
            return tables.partial(obj, self.out.version)
        return obj

    def line(self, typ: str, obj: dict[str, Any]) -> bytes:
        return json_dumps({"type": typ, "object": self._obj(obj)})

    def event(self, typ: str, ce: Any) -> bytes:
        if typ == ce.type and not self.convert and not self.out.as_kind:
            return ce.json_line()
        return self.line(typ, ce.obj)

    def bookmark(self, rev: int, initial_end: bool = False) -> bytes:
        md: dict[str, Any] = {"resourceVersion": str(rev)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj: dict[str, Any] = {"kind": self.res.kind, "apiVersion": self.res.api_version, "metadata": md}
        if self.out.as_kind == "Table":
            obj = {"kind": "Table", "apiVersion": f"meta.k8s.io/{self.out.version}", "metadata": md,
                   "columnDefinitions": None, "rows": None}
        return json_dumps({"type": BOOKMARK, "object": obj})


# Kinds whose PUT creates a missing object (upstream's AllowCreateOnUpdate).
_CREATE_ON_UPDATE = {("", "Endpoints"), ("coordination.k8s.io", "Lease"), ("", "Event"), ("events.k8s.io", "Event"),
                     ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
                     ("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
                     ("discovery.k8s.io", "EndpointSlice")}

_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def _sort_key(o: dict[str, Any]) -> tuple[str, str]:
    md = o.get("metadata") or {}
    return (md.get("namespace", ""), md.get("name", ""))


def _int_param(q: Any, name: str) -> int:
    v = q.get(name)
    if not v:
        return 0
    return max(parse_int64(v), 0)


def not_an_object(v: Any) -> str:
    """Upstream's error for a body that is not a JSON object, where it looks for apiVersion and kind."""
    return (f"couldn't get version/kind; json parse error: json: cannot unmarshal {_json_type(v)} into Go value of "
            'type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')


def _json_type(v: Any) -> str:
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return "object"


def _encode_continue(rev: int, last_key: str, res: Resource, ns: str | None, registry: Registry) -> str:
    prefix = registry.storage_resource(res).key_prefix(ns if res.namespaced else None)
    start = last_key[len(prefix):] + "\x00"
    return base64.urlsafe_b64encode(orjson.dumps({"v": META_V1, "rv": rev, "start": start})).decode().rstrip("=")


def _decode_continue(token: str, res: Resource, ns: str | None, registry: Registry) -> tuple[int, str]:
    try:
        pad = "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(token + pad))
        if data.get("v") != META_V1:
            raise ValueError("unsupported version")
        rev = int(data["rv"])
        start = str(data["start"])
    except Exception:
        raise E.new_bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)") from None
    if not 0 < rev < 1 << 63 or not start:  # upstream's token holds an int64
        raise E.new_bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    # as upstream, against path traversal: the start key must be a clean path below the list's prefix
    # ("../", "./", "//" or a trailing "/" never name an object), so a page never leaves the prefix
    rooted = start if start.startswith("/") else "/" + start
    if posixpath.normpath(rooted) != rooted or rooted.startswith("//"):
        raise E.new_bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    prefix = registry.storage_resource(res).key_prefix(ns if res.namespaced else None)
    key = prefix + rooted[1:].rstrip("\x00")
    return rev, key
