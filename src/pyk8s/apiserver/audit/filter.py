"""Auditing of every API request (upstream's WithAuditInit, WithAudit and WithFailedAuthenticationAudit).

APIServer._entry hands each request to Auditor.serve when a policy is given; the hooks are:
authenticated() once the user is known (policy evaluated, RequestReceived written),
record_authorization() from the authorizer call, on_response_prepare() when a streamed answer
starts (ResponseStarted of watches, logs, exec and proxies), and serve()'s end
(ResponseComplete, or Panic). A request rejected before authentication succeeded gets
upstream's one ResponseStarted event with an empty user. Without a policy only the Audit-Id
header is answered (upstream answers it always), for a random UUID or the client's own.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import orjson
from aiohttp import web

from ..authn import anonymous_user
from ..authz import RequestAttributes
from ..codec import decode_body
from ..request import parse_path
from .event import MAX_USER_AGENT, legacy_line, micro_time, new_audit_id, request_verb, source_ips, user_info
from .logbackend import LogBackend
from .policy import LEVEL_ORDER, Attributes, Policy

__all__ = ["Auditor", "AuditRequest", "record_authorization", "add_annotation", "on_response_prepare",
           "set_audit_id_header", "KEY"]

log = logging.getLogger("pyk8s.apiserver.audit")
KEY = "pyk8s.audit"  # the request's AuditRequest (request[KEY]); None without a policy
_current: ContextVar[AuditRequest | None] = ContextVar("pyk8s_audit", default=None)
_METADATA, _REQUEST, _REQUEST_RESPONSE = LEVEL_ORDER["Metadata"], LEVEL_ORDER["Request"], \
    LEVEL_ORDER["RequestResponse"]
# upstream's BasicLongRunningRequestCheck(watch, proxy verbs; attach, exec, proxy, log, portforward)
_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_DECISION, _REASON = "authorization.k8s.io/decision", "authorization.k8s.io/reason"


def _client_audit_id(request: Any) -> str | None:
    """The request's Audit-ID header, kept as given (upstream does not truncate it)."""
    return request.headers.get("Audit-ID") or None


_NOT_A_HEADER_VALUE = re.compile("[^\x20-\x7e\x80-\xff]")  # controls and what Latin-1 cannot carry


def set_audit_id_header(request: Any, resp: web.StreamResponse, audited: bool = True) -> None:
    """Audit-Id: the client's Audit-ID when it can be a header value again, else the audit event's
    ID or a new one (upstream's WithAuditInit, on every answer). audited=False: no Auditor runs,
    so the request has no event to look up (the server's path without a policy)."""
    given = request.headers.get("Audit-ID")
    if given:
        if _NOT_A_HEADER_VALUE.search(given) is None:
            resp.headers["Audit-Id"] = given
        return
    ar = request.get(KEY) if audited else None
    resp.headers["Audit-Id"] = ar.audit_id if ar is not None else new_audit_id()


class AuditRequest:
    """One request's audit event while it is served."""

    __slots__ = ("auditor", "audit_id", "received_ns", "request", "level", "omit_stages", "omit_managed_fields", "base",
                 "user", "annotations", "long_running", "started", "authenticated", "panic")

    def __init__(self, auditor: Auditor, request: Any) -> None:
        self.auditor = auditor
        self.audit_id = _client_audit_id(request) or new_audit_id()
        self.received_ns = time.time_ns()
        self.request = request
        self.level = -1  # not yet evaluated; 0 (None): not audited
        self.omit_stages: frozenset[str] = frozenset()
        self.omit_managed_fields = False
        self.base: dict[str, Any] = {}
        self.user: Any = None  # the user the request is served as
        self.annotations: dict[str, str] | None = None
        self.long_running = False
        self.started = False  # ResponseStarted written (or omitted) for a long-running request
        self.authenticated = False
        self.panic: BaseException | None = None


def record_authorization(allowed: bool, reason: str) -> None:
    """The authorizer's answer, as upstream's WithAuthorization annotates the event (the first wins)."""
    ar = _current.get()
    if ar is None or ar.level < _METADATA:
        return
    if ar.annotations is None:
        ar.annotations = {}
    ann = ar.annotations
    if _DECISION not in ann:
        ann[_DECISION] = "allow" if allowed else "forbid"
        ann[_REASON] = reason


def add_annotation(key: str, value: str) -> None:
    """An annotation on the current request's event, as upstream's audit.AddAuditAnnotation: the first
    value of a key stays; kept even before the policy decided the level (authentication runs first)."""
    ar = _current.get()
    if ar is None:
        return
    if ar.annotations is None:
        ar.annotations = {}
    ar.annotations.setdefault(key, value)


def audited_at(level: str) -> bool:
    """Whether the current request's event is written at level or above (what an annotation with
    request content, as the webhooks' patch annotation, needs)."""
    ar = _current.get()
    return ar is not None and ar.level >= LEVEL_ORDER[level]


async def on_response_prepare(request: Any, resp: web.StreamResponse) -> None:
    """aiohttp's on_response_prepare: a streamed answer's headers are going out."""
    if "Audit-Id" not in resp.headers:
        set_audit_id_header(request, resp)
    ar = request.get(KEY)
    if ar is not None:
        ar.auditor.started(ar, resp)


class Auditor:
    """Evaluates the policy for each request and writes its events to the backend."""

    def __init__(self, policy: Policy, backend: LogBackend, fmt: str = "json") -> None:
        self.policy = policy
        self.backend = backend
        self.legacy = fmt == "legacy"

    def open(self) -> None:
        self.backend.open(asyncio.get_running_loop())

    def close(self) -> None:
        self.backend.close()

    # ---- the request's life -----------------------------------------------------------------
    async def serve(self, request: Any, inner: Callable[[Any], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        ar = AuditRequest(self, request)
        request[KEY] = ar
        token = _current.set(ar)
        resp: web.StreamResponse | None = None
        try:
            resp = await inner(request)
            if not resp.prepared:
                set_audit_id_header(request, resp)
            return resp
        finally:
            _current.reset(token)
            try:
                await self._finish(ar, resp)
            except Exception:  # an audit bug must not turn an answer into a failure
                log.exception("audit event for %s failed", request.path_qs)

    def authenticated(self, request: Any, path: str, user: Any) -> None:
        """The request's user is known (None: a public path without credentials, as anonymous)."""
        ar: AuditRequest | None = request.get(KEY)
        if ar is None:
            return
        ar.authenticated = True
        ar.user = user
        # the policy looks at the authenticated user, not an impersonated one (upstream's audit
        # filter runs before impersonation); the impersonation code keeps the former there
        self._evaluate(ar, path, request.get("pyk8s.impersonator") or user, anonymous_if_none=True)
        if ar.level > 0:
            self._emit(ar, "RequestReceived", None)

    def panicked(self, request: Any, err: BaseException) -> None:
        ar: AuditRequest | None = request.get(KEY)
        if ar is not None:
            ar.panic = err

    def started(self, ar: AuditRequest, resp: web.StreamResponse) -> None:
        """A streamed answer's headers go out: ResponseStarted for long-running requests."""
        if ar.level <= 0 or not ar.long_running or ar.started:
            return
        ar.started = True
        self._emit(ar, "ResponseStarted", {"metadata": {}, "code": resp.status})

    # ---- events -----------------------------------------------------------------------------
    def _evaluate(self, ar: AuditRequest, path: str, user: Any, anonymous_if_none: bool) -> None:
        req = ar.request
        info = parse_path(path)
        verb = request_verb(req.method, info.name, info.is_resource, info.legacy_watch,
                            req.query.get("watch") if info.is_resource and not info.name else None)
        if user is None and anonymous_if_none:  # a public path without credentials: upstream's anonymous
            user = ar.user = anonymous_user()
        namespace = info.namespace or ""
        if info.resource == "namespaces" and info.name:
            namespace = info.name  # upstream's RequestInfo: /namespaces/foo is in namespace foo
        attrs = Attributes(None if user is None else user.name, user.groups if user is not None else (),
                           RequestAttributes(verb, info.group, info.resource, info.subresource, info.name,
                                             namespace, info.is_resource, path))
        d = self.policy.evaluate(attrs)
        ar.level = LEVEL_ORDER[d.level]
        if not ar.level:
            return
        ar.omit_stages = d.omit_stages
        ar.omit_managed_fields = d.omit_managed_fields
        ar.long_running = verb in ("watch", "proxy") or info.subresource in _LONG_RUNNING_SUBRESOURCES
        ua = req.headers.get("User-Agent", "")
        if len(ua) > MAX_USER_AGENT:
            ua = ua[:MAX_USER_AGENT] + "...TRUNCATED"
        base: dict[str, Any] = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": d.level, "auditID": ar.audit_id,
            "stage": "", "requestURI": _request_uri(req), "verb": verb, "user": user_info(user),
            "sourceIPs": source_ips(req.headers, _remote(req)), "userAgent": ua,
        }
        if info.is_resource:
            ref = {"resource": info.resource, "namespace": namespace, "name": info.name, "apiGroup": info.group,
                   "apiVersion": info.version, "subresource": info.subresource}
            base["objectRef"] = {k: v for k, v in ref.items() if v}
        ar.base = base

    def _emit(self, ar: AuditRequest, stage: str, status: dict[str, Any] | None,
              request_object: Any = None, response_object: Any = None) -> None:
        if stage in ar.omit_stages:
            return
        ev = dict(ar.base)
        ev["stage"] = stage
        imp = ar.request.get("pyk8s.impersonator")
        if imp is not None and ar.user is not None and stage != "RequestReceived":
            # upstream's impersonation filter runs after the audit filter: user stays the
            # authenticated one, and the later stages name the impersonated one too
            ev["user"], ev["impersonatedUser"] = user_info(imp), user_info(_effective_user(ar, imp))
            ev = _reorder(ev)
        if status is not None:
            ev["responseStatus"] = status
        if request_object is not None:
            ev["requestObject"] = request_object
        if response_object is not None:
            ev["responseObject"] = response_object
        ev["requestReceivedTimestamp"] = micro_time(ar.received_ns)
        ev["stageTimestamp"] = ev["requestReceivedTimestamp"] if stage == "RequestReceived" \
            else micro_time(time.time_ns())
        if ar.annotations:
            ev["annotations"] = dict(ar.annotations)
        if self.legacy:
            self.backend.write(legacy_line(ev, ar.received_ns).encode() + b"\n")
        else:
            try:
                line = orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE)
            except TypeError:  # header bytes that are not UTF-8 (a crafted Audit-ID or User-Agent)
                line = orjson.dumps(_valid_utf8(ev), option=orjson.OPT_APPEND_NEWLINE)
            self.backend.write(line)

    async def _finish(self, ar: AuditRequest, resp: web.StreamResponse | None) -> None:
        if not ar.authenticated:
            if resp is None or resp.status != 401:
                return
            # failed authentication: one ResponseStarted event, user empty (WithFailedAuthenticationAudit)
            self._evaluate(ar, _path(ar.request), None, anonymous_if_none=False)
            if ar.level > 0:
                self._emit(ar, "ResponseStarted", _response_status(resp),
                           response_object=self._response_object(ar, resp))
            return
        if ar.level <= 0:
            return
        if ar.panic is not None:
            self._emit(ar, "Panic", {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {ar.panic}",
                                     "reason": "InternalError", "code": 500})
            return
        if resp is None:  # the client went away before an answer: upstream's faked status
            status: dict[str, Any] = {"metadata": {}, "status": "Success", "message": "Connection closed early",
                                      "code": 200}
        else:
            status = _response_status(resp)
        if ar.long_running and not ar.started:
            ar.started = True
            self._emit(ar, "ResponseStarted", status)
        req_obj = await self._request_object(ar) if ar.level >= _METADATA else None
        resp_obj = self._response_object(ar, resp) if resp is not None and not resp.prepared else None
        self._emit(ar, "ResponseComplete", status, req_obj, resp_obj)

    async def _request_object(self, ar: AuditRequest) -> Any:
        """The request body (create, update, patch, delete options) as JSON; at Metadata level only
        its name, uid and resourceVersion fill objectRef, as upstream's LogRequestObject does."""
        req = ar.request
        if req.method not in ("POST", "PUT", "PATCH", "DELETE") or \
                (ar.annotations or {}).get(_DECISION) != "allow":
            return None
        body = await req.read() if req.can_read_body else b""
        if not body:
            return None
        try:
            obj = decode_body(body, req.headers.get("Content-Type", "application/json"))
        except Exception:
            return None  # the request was refused for its body; nothing to log
        if req.method != "PATCH" and isinstance(obj, dict) and "objectRef" in ar.base:
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                ref = dict(ar.base["objectRef"])
                for key, src in (("namespace", "namespace"), ("name", "name"), ("uid", "uid"),
                                 ("resourceVersion", "resourceVersion")):
                    if not ref.get(key) and isinstance(meta.get(src), str) and meta[src]:
                        ref[key] = meta[src]
                ar.base["objectRef"] = _ordered_ref(ref)
        if ar.level < _REQUEST:
            return None
        return _without_managed_fields(obj) if ar.omit_managed_fields else obj

    def _response_object(self, ar: AuditRequest, resp: web.StreamResponse) -> Any:
        if ar.level < _REQUEST_RESPONSE:
            return None
        body = getattr(resp, "body", None)
        if not isinstance(body, (bytes, bytearray)) or not body:
            return None
        ct = (resp.content_type or "").lower()
        try:
            if ct == "application/json":
                if not ar.omit_managed_fields:
                    return orjson.Fragment(bytes(body))  # written as the client got it
                obj = orjson.loads(body)
            elif ct == "application/vnd.kubernetes.protobuf":
                from ...api import protobuf

                obj = protobuf.decode(bytes(body))
            elif ct == "application/yaml":
                import yaml

                obj = yaml.safe_load(body)
            else:
                return None  # text (logs, health): upstream logs only API objects
        except Exception:
            return None
        return _without_managed_fields(obj) if ar.omit_managed_fields else obj


_REF_ORDER = ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource")
_EVENT_ORDER = ("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "impersonatedUser",
                "sourceIPs", "userAgent", "objectRef")


def _ordered_ref(ref: dict[str, str]) -> dict[str, str]:
    return {k: ref[k] for k in _REF_ORDER if ref.get(k)}


def _reorder(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: ev[k] for k in _EVENT_ORDER if k in ev}


def _effective_user(ar: AuditRequest, impersonator: Any) -> Any:
    """The impersonated user: the one authenticated() saw, unless that was the impersonator."""
    if ar.user is not impersonator:
        return ar.user
    ctx = ar.request.get("pyk8s.ctx")
    return getattr(ctx, "user", None)


def _path(req: Any) -> str:
    path: str = req.path
    return path.rstrip("/") if len(path) > 1 and path.endswith("/") else path


def _request_uri(req: Any) -> str:
    """The request target as sent (Go's URL.RequestURI())."""
    raw = getattr(req, "raw_path", None)
    return str(raw) if raw else str(req.path_qs)


def _remote(req: Any) -> str | None:
    t = req.transport
    if t is None:
        return "127.0.0.1"  # an in-process component (loopback): upstream's loopback client dials localhost
    peer = t.get_extra_info("peername")
    if isinstance(peer, (tuple, list)) and peer:
        return str(peer[0])
    return "127.0.0.1"


def _response_status(resp: web.StreamResponse) -> dict[str, Any]:
    """responseStatus: the code, and a returned Status object's bounded fields (LogResponseObject)."""
    status: dict[str, Any] = {"metadata": {}}
    body = getattr(resp, "body", None)
    if isinstance(body, (bytes, bytearray)) and body[:16] == b'{"kind":"Status"':
        try:
            s = orjson.loads(body)
        except orjson.JSONDecodeError:
            s = None
        if isinstance(s, dict):
            for key in ("status", "message", "reason", "details"):
                if s.get(key):
                    status[key] = s[key]
    status["code"] = resp.status
    return status


def _valid_utf8(v: Any) -> Any:
    """Invalid UTF-8 (surrogate-escaped bytes) as U+FFFD, as Go's JSON encoder writes it: an event
    is never lost to the bytes a client chose."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(v, dict):
        return {_valid_utf8(k): _valid_utf8(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_valid_utf8(x) for x in v]
    if isinstance(v, orjson.Fragment):
        return v
    return v


def _without_managed_fields(obj: Any) -> Any:
    """A copy without metadata.managedFields, of an object or of each item of a list."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [_without_managed_fields(i) for i in items]
    rows = out.get("rows")  # a Table's rows carry their objects
    if isinstance(rows, list):
        out["rows"] = [{**r, "object": _without_managed_fields(r.get("object"))} if isinstance(r, dict) else r
                       for r in rows]
    return out
