"""API Priority and Fairness: the request filter (upstream's WithPriorityAndFairness) and, with
--enable-priority-and-fairness=false, the plain in-flight limit (WithMaxInFlightLimit).

Every request after authentication (and impersonation), before authorization, is classified
by the FlowSchemas (lowest matchingPrecedence first, then name) into a flow and a priority
level (flowcontrol_match.py), and runs once its level gives it seats (flowcontrol_queues.py);
the answer carries the UIDs of both in X-Kubernetes-PF-FlowSchema-UID and
X-Kubernetes-PF-PriorityLevel-UID. A refused request (queue full, or waited longer than a
quarter of upstream's 60 s request timeout) gets 429 TooManyRequests with Retry-After;
upstream writes the same message as plain text, we write it as a Status.

Long-running requests other than watches (exec, attach, port-forward, proxy, logs) are not
held (upstream skips them); a watch holds its seat only until its initial events are sent.
A LIST takes one seat per 100 objects of the resource (at most 10), as upstream's work
estimator does, so a flood of large lists cannot fill a level with cheap seats.

Cost on the request path: the classification is cached per (user, groups, verb, API group,
resource, namespace); with a free seat the request takes it without queuing.

The FlowSchema and PriorityLevelConfiguration objects come from the watch cache: a change
takes effect with the next request. Missing mandatory objects (exempt, catch-all) are used
from the built-in configuration, as upstream does.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from multidict import CIMultiDict, istr

from ..api import errors as E
from . import flowcontrol_bootstrap as bootstrap
from .appkeys import LOOPBACK, PF_HEADERS, PF_WATCH_INITIALIZED
from .flowcontrol_match import CompiledFlowSchema, Digest, compile_flow_schema, distinguisher_of
from .flowcontrol_queues import Dispatcher, PriorityLevel, Ticket
from .request import RequestInfo

__all__ = ["FlowControl", "MaxInFlight", "FLOW_SCHEMA_UID_HEADER", "PRIORITY_LEVEL_UID_HEADER", "make"]

FLOW_SCHEMA_UID_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
TOO_MANY_REQUESTS = "Too many requests, please try again later."
REQUEST_TIMEOUT = 60.0  # upstream's --request-timeout default; requests wait in queues for a quarter of it
OBJECTS_PER_SEAT, MAX_SEATS = 100, 10  # upstream's list work estimate
# the subresources (and the legacy /api/v1/proxy/... resource) upstream's long-running check names
_LONG_RUNNING = frozenset({"exec", "attach", "portforward", "proxy", "log"})
_NON_MUTATING = frozenset({"get", "list", "watch"})
_ANONYMOUS = ("system:anonymous", ("system:unauthenticated",))


class _LoopbackUser:
    """Whom APF classifies the server's in-process requests as: upstream's loopback identity."""

    name = "system:apiserver"
    groups = ("system:masters", "system:authenticated")


_LOOPBACK_USER = _LoopbackUser()
_GROUP = bootstrap.GROUP

# the rest of the chain: (request, path, user, what the path names, the request's verb)
Inner = Callable[[web.Request, str, Any, RequestInfo, str], Awaitable[web.StreamResponse]]


def _long_running(info: RequestInfo) -> bool:
    """exec, attach, port-forward, proxy and logs: upstream's filters do not hold them. Decided on
    what the URL names, not on its text (a namespace called "proxy-x" is no proxy request)."""
    return info.is_resource and (info.subresource in _LONG_RUNNING or info.resource == "proxy")


def _user_of(user: Any) -> tuple[str, tuple[str, ...]]:
    if user is None:
        return _ANONYMOUS
    return user.name, tuple(user.groups)


class _Flow:
    """A cached classification: schema, level, flow hash and the response headers."""

    __slots__ = ("schema", "level", "flow_hash", "headers", "answer_headers", "stat_key")

    def __init__(self, schema: CompiledFlowSchema, level: PriorityLevel, flow_hash: int) -> None:
        self.schema = schema
        self.level = level
        self.flow_hash = flow_hash
        self.headers = {FLOW_SCHEMA_UID_HEADER: schema.uid, PRIORITY_LEVEL_UID_HEADER: level.uid}
        self.stat_key = (schema.name, level.name)
        # the same, ready for an answer's CIMultiDict: updating from one is half the cost of a dict
        self.answer_headers = CIMultiDict((istr(k), v) for k, v in self.headers.items())


class FlowStats:
    """Counts by (flow schema, priority level), rendered on scrape."""

    __slots__ = ("dispatched", "executing", "rejected")

    def __init__(self) -> None:
        self.dispatched: dict[tuple[str, str], int] = {}
        self.executing: dict[tuple[str, str], int] = {}
        self.rejected: dict[tuple[str, str, str], int] = {}


def _watch_release(ticket: Ticket, executing: dict[tuple[str, str], int], key: tuple[str, str]) -> Callable[[], None]:
    """A watch's seat and its count in current_executing_requests end once it is initialised, as upstream's."""
    counted = [True]

    def release() -> None:
        ticket.release()
        if counted[0]:
            counted[0] = False
            executing[key] -= 1

    return release


class FlowControl:
    def __init__(self, server: Any, server_concurrency: int, queue_wait: float = REQUEST_TIMEOUT / 4) -> None:
        self.server = server
        self.server_concurrency = server_concurrency
        self.queue_wait = queue_wait
        self.dispatcher = Dispatcher()
        self.stats = FlowStats()  # apiserver_flowcontrol_* (apiserver/metrics.py)
        self.schemas: list[CompiledFlowSchema] = []
        self._cache: dict[tuple[Any, ...], _Flow] = {}
        self._dirty = True
        self._fs_cache: Any = None
        self._pl_cache: Any = None
        # names the catch-all level, which always exists (the built-in one when its object does not)
        self._catch_all = compile_flow_schema(next(o for o in bootstrap.MANDATORY_FLOW_SCHEMAS
                                                   if o["metadata"]["name"] == "catch-all"))

    def start(self) -> None:
        """Follow the configuration objects in the watch cache."""
        s = self.server
        for plural in ("flowschemas", "prioritylevelconfigurations"):
            r = s.registry.get(_GROUP, "v1", plural)
            cache = s.caches.caches[s.registry.storage_resource(r).key_prefix()]
            cache.listeners.append(self._changed)
            if plural == "flowschemas":
                self._fs_cache = cache
            else:
                self._pl_cache = cache

    def _changed(self, _event: Any) -> None:
        self._dirty = True

    def _configure(self) -> None:
        self._dirty = False
        self._cache.clear()
        pls = {o["metadata"]["name"]: o for o in self._pl_cache.objects.values()} if self._pl_cache else {}
        fss = {o["metadata"]["name"]: o for o in self._fs_cache.objects.values()} if self._fs_cache else {}
        for o in bootstrap.MANDATORY_PRIORITY_LEVELS:
            pls.setdefault(o["metadata"]["name"], o)
        for o in bootstrap.MANDATORY_FLOW_SCHEMAS:
            fss.setdefault(o["metadata"]["name"], o)
        self.dispatcher.configure([(name, str(o["metadata"].get("uid", "")), o.get("spec") or {})
                                   for name, o in sorted(pls.items())], self.server_concurrency)
        levels = self.dispatcher.levels
        # a FlowSchema naming no existing level is dangling: it matches nothing (upstream)
        schemas = [compile_flow_schema(o) for o in fss.values()]
        self.schemas = sorted((fs for fs in schemas if fs.level in levels), key=lambda fs: (fs.precedence, fs.name))

    # ---- classification -------------------------------------------------------------------
    def _classify(self, d: Digest) -> _Flow:
        for fs in self.schemas:
            if fs.matches(d):
                break
        else:  # only when catch-all was edited to match less or name a missing level: the built-in one
            fs = self._catch_all
        level = self.dispatcher.levels[fs.level]
        return _Flow(fs, level, hash((fs.name, distinguisher_of(fs, d))) & 0xFFFFFFFFFFFFFFFF)

    def _flow(self, user: Any, info: RequestInfo, path: str, verb: str) -> _Flow:
        if self._dirty:
            self._configure()
        name, groups = _user_of(user)
        if info.is_resource:
            ns = info.namespace or (info.name if info.resource == "namespaces" else "") or ""
            key: tuple[Any, ...] = (name, groups, verb, info.group, info.resource, info.subresource, ns)
        else:
            ns = ""
            key = (name, groups, verb, path)
        flow = self._cache.get(key)
        if flow is None:
            resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
            flow = self._classify(Digest(name, groups, verb, info.is_resource, info.group, resource, ns, path))
            if len(self._cache) > 20000:
                self._cache.clear()
            self._cache[key] = flow
        return flow

    def _seats(self, info: RequestInfo, query: Any, level: PriorityLevel) -> int:
        """A LIST's seats: one per OBJECTS_PER_SEAT objects it reads (upstream's list work estimate)."""
        if level.exempt:
            return 1
        s = self.server
        r = s.registry.get(info.group, info.version, info.resource)
        cache = s.caches.caches.get(s.registry.storage_resource(r).key_prefix()) if r is not None else None
        if cache is None:
            return 1
        n = len(cache.objects)
        limit = query.get("limit", "")
        if limit.isdigit() and 0 < int(limit) < n:
            n = int(limit)
        return max(1, min(MAX_SEATS, level.max_seats(), math.ceil(n / OBJECTS_PER_SEAT)))

    # ---- the filter -----------------------------------------------------------------------
    async def serve(self, request: web.Request, path: str, user: Any, info: RequestInfo, verb: str,
                    inner: Inner) -> web.StreamResponse:
        """The filter: `info` and `verb` as server._route computed them (request.request_verb)."""
        if info.is_resource and (info.subresource in _LONG_RUNNING or info.resource == "proxy"):  # _long_running
            return await inner(request, path, user, info, verb)  # not held, as upstream
        # the server's in-process components (loopback.py) are exempt, as upstream's loopback client
        flow = self._flow(_LOOPBACK_USER if request.get(LOOPBACK) else user, info, path, verb)
        level = flow.level
        seats = self._seats(info, request.query, level) if verb == "list" else 1
        # with a free seat and nobody waiting (the common case) the seat is taken at once: no queue, no Future
        ticket = None if level.waiting else level.try_start(seats)
        if ticket is None:  # others wait already, or no seat is free: join the queues, served in turn
            ticket = await self._wait(flow, seats)
            t = request.transport
            if t is not None and t.is_closing():
                # its client left while it was queued: upstream's request context is cancelled and
                # the request never runs; neither does ours (a create is not made)
                ticket.release()
                raise E.new_too_many_requests(TOO_MANY_REQUESTS, level.retry_after.value)
        hdrs = flow.headers
        stats, fk = self.stats, flow.stat_key
        stats.dispatched[fk] = stats.dispatched.get(fk, 0) + 1
        stats.executing[fk] = stats.executing.get(fk, 0) + 1
        release = ticket.release
        if verb == "watch":
            release = _watch_release(ticket, stats.executing, fk)
            request[PF_WATCH_INITIALIZED] = release
            request[PF_HEADERS] = hdrs
        try:
            resp = await inner(request, path, user, info, verb)
        except E.StatusError as e:
            e.headers.update(hdrs)
            raise
        finally:
            release()
            if verb != "watch":
                stats.executing[fk] -= 1
        if not resp.prepared:
            resp.headers.update(flow.answer_headers)
        return resp

    async def _wait(self, flow: _Flow, seats: int) -> Ticket:
        level = flow.level
        fut = level.enqueue(flow.flow_hash, seats, self.queue_wait)
        ticket = None
        if fut is not None:
            try:
                ticket = await fut
            except BaseException:  # the client went away (cancelled): leave the queue
                level.cancel(fut)
                raise
        if ticket is None:
            # upstream's reasons: no room in the queues, or waited too long in one
            rk = (*flow.stat_key, "time-out" if fut is not None else "queue-full")
            self.stats.rejected[rk] = self.stats.rejected.get(rk, 0) + 1
            level.retry_after.record()
            err = E.new_too_many_requests(TOO_MANY_REQUESTS, level.retry_after.value)
            err.headers.update(flow.headers)
            raise err
        return ticket


class MaxInFlight:
    """--enable-priority-and-fairness=false: upstream's WithMaxInFlightLimit. Read-only and
    mutating requests each have a limit (0: none); over it, 429 with Retry-After: 1, except
    for system:masters (always answered). Long-running requests, watches included, are not counted."""

    def __init__(self, read_only: int, mutating: int) -> None:
        self.limits = (read_only, mutating)
        self.in_flight = [0, 0]

    async def serve(self, request: web.Request, path: str, user: Any, info: RequestInfo, verb: str,
                    inner: Inner) -> web.StreamResponse:
        if verb == "watch" or _long_running(info):
            return await inner(request, path, user, info, verb)
        kind = 0 if verb in _NON_MUTATING else 1
        limit = self.limits[kind]
        if not limit:
            return await inner(request, path, user, info, verb)
        if self.in_flight[kind] >= limit:
            if user is not None and "system:masters" in user.groups:
                return await inner(request, path, user, info, verb)
            raise E.new_too_many_requests(TOO_MANY_REQUESTS, 1)
        self.in_flight[kind] += 1
        try:
            return await inner(request, path, user, info, verb)
        finally:
            self.in_flight[kind] -= 1


def make(server: Any) -> FlowControl | MaxInFlight:
    """The filter the server's configuration asks for."""
    cfg = server.config
    if cfg.enable_priority_and_fairness:
        fc = FlowControl(server, cfg.max_requests_inflight + cfg.max_mutating_requests_inflight)
        fc.start()
        return fc
    return MaxInFlight(cfg.max_requests_inflight, cfg.max_mutating_requests_inflight)
