"""The API server's /metrics and /metrics/slis: upstream's apiserver_* families.

Every answered request is counted in `serve` (wrapped around APIServer._serve_request): a
parse_path lookup (cached per path), one tuple key and a dict update per family. Series
labels come only from what the registry serves (an unknown resource, version or subresource
is counted with empty labels), so a client cannot mint series by inventing paths.
Measured with bench/api (`--disable metrics` turns the wrapper off): see docs/metrics.md.

Scrape-time families read the server's own state: objects per watch cache
(apiserver_storage_objects), API Priority and Fairness' levels, in-flight counts.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..metrics.core import Hist, component_registry, exponential, histogram_family
from .request import RequestInfo, parse_path

__all__ = ["APIServerMetrics", "REQUEST_BUCKETS", "ROUTED", "SLI_PATHS", "install"]

ROUTED = "pyk8s.routed"  # request key: (RequestInfo, verb) as server._route resolved them

# upstream's apiserver_request_duration_seconds and etcd_request_duration_seconds buckets
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0,
                   8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
SIZE_BUCKETS = exponential(1000, 10.0, 8)  # 1 KB .. 10 GB, as upstream
ADMISSION_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5)
SLI_PATHS = ("/metrics/slis",)
_VERBS = {"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT", "patch": "PATCH",
          "delete": "DELETE", "deletecollection": "DELETECOLLECTION"}
_CONNECT = frozenset({"exec", "attach", "portforward", "proxy"})
_LONG_RUNNING = frozenset({"exec", "attach", "portforward", "proxy", "log"})
_SUBRESOURCES = frozenset({"status", "scale", "log", "exec", "attach", "portforward", "proxy", "binding",
                           "eviction", "ephemeralcontainers", "resize", "approval", "finalize", "token"})
_NON_RESOURCE = frozenset({"/", "/api", "/apis", "/healthz", "/livez", "/readyz", "/version", "/metrics",
                           "/metrics/slis", "/openapi/v2", "/openid/v1/jwks",
                           "/.well-known/openid-configuration"})
_APPLY = "application/apply-patch+yaml"
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_SIZE_LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component")
_LR_LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component")


class _Series:
    """The counts of one label set (_LABELS): answers by status code, the duration histogram and, for
    GET and LIST, the response sizes. The request path finds it once per request (memoised) and
    updates it with no tuple or string built."""

    __slots__ = ("labels", "codes", "durations", "sizes", "long_running")

    def __init__(self, labels: tuple[str, ...], long_running: tuple[str, ...] | None) -> None:
        self.labels = labels
        self.codes: dict[int, int] = {}
        self.durations = Hist(REQUEST_BUCKETS)
        self.sizes = Hist(SIZE_BUCKETS) if labels[0] in ("GET", "LIST") else None
        self.long_running = long_running  # its apiserver_longrunning_requests key


class APIServerMetrics:
    """The counters the request path feeds and the collector that renders them on scrape."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.series: dict[tuple[str, ...], _Series] = {}  # by labels
        self.longrunning: dict[tuple[str, ...], int] = {}
        self.inflight = [0, 0]  # readOnly, mutating
        self.auth_failures = 0  # 401s; every other answer is an authentication success
        self.watch_events: dict[tuple[str, str, str], int] = {}
        self.etcd: dict[tuple[str, str], Hist] = {}
        self.admission: dict[tuple[str, str, str], Hist] = {}  # (type, operation, rejected)
        self._memo: dict[tuple[str, ...], _Series] = {}
        self.registry = component_registry()
        self.registry.register(_Collector(self))
        self.slis = CollectorRegistry(auto_describe=False)
        self.slis.register(_SLICollector(self))

    # ---- the request path -------------------------------------------------------------------
    def instrument(self, inner: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        inflight, longrunning, perf_counter = self.inflight, self.longrunning, time.perf_counter

        async def serve(request: web.Request) -> web.StreamResponse:
            t0 = perf_counter()
            kind = 0 if request.method == "GET" else 1
            inflight[kind] += 1
            try:
                resp = await inner(request)
            finally:
                # what server._route found (absent when authentication failed before it)
                series = request.get(ROUTED)
                if series is None:
                    series = self._series(parse_path(request.path), "", request)
                lr = series.long_running
                if lr is None:
                    inflight[kind] -= 1
                else:
                    longrunning[lr] -= 1
            series.durations.observe(perf_counter() - t0)
            code = resp.status
            codes = series.codes
            codes[code] = codes.get(code, 0) + 1
            if code == 401:
                self.auth_failures += 1
            sizes = series.sizes
            if sizes is not None and type(resp) is web.Response:
                body = resp.body
                sizes.observe(len(body) if type(body) is bytes else (resp.content_length or 0))
            return resp

        return serve

    def routed(self, request: web.Request, info: RequestInfo, verb: str) -> None:
        """server._route resolved the request: its series, and a long-running one (a watch, exec, logs...)
        moves from apiserver_current_inflight_requests to apiserver_longrunning_requests."""
        series = request[ROUTED] = self._series(info, verb, request)
        lr = series.long_running
        if lr is not None:
            self.longrunning[lr] = self.longrunning.get(lr, 0) + 1
            self.inflight[0 if request.method == "GET" else 1] -= 1

    def _series(self, info: RequestInfo, verb: str, request: web.Request) -> _Series:
        method = request.method
        dry_run = "All" if method != "GET" and info.is_resource and request.query.get("dryRun") == "All" else ""
        if verb == "patch" and request.headers.get("Content-Type") == _APPLY:
            verb = "apply"
        # memoised on strings (their hashes are cached), not on the RequestInfo: hashing its fields costs more
        memo: tuple[str, ...] = (verb, dry_run, info.group, info.version, info.resource, info.subresource,
                                 "n" if info.name else "", "ns" if info.namespace else "") \
            if info.is_resource else (method, info.path)
        hit = self._memo.get(memo)
        if hit is not None:
            return hit
        labels = self._labels_for(info, verb, method, dry_run)
        series = self.series.get(labels)
        if series is None:
            long_running = verb == "watch" or (info.is_resource and info.subresource in _LONG_RUNNING)
            series = self.series[labels] = _Series(labels, labels[:1] + labels[2:] if long_running else None)
        if len(self._memo) > 8192:  # unknown paths are memoised one by one: bounded
            self._memo.clear()
        self._memo[memo] = series
        return series

    def _labels_for(self, info: RequestInfo, verb: str, method: str, dry_run: str) -> tuple[str, ...]:
        if not info.is_resource:
            p = info.path.rstrip("/") or "/"
            sub = p if p in _NON_RESOURCE or p.startswith(("/healthz/", "/livez/", "/readyz/", "/openapi/v3")) \
                or self._discovery_path(info) else "other"
            return (method if method in _VERBS.values() or method == "HEAD" else "other",
                    dry_run, "", "", "", sub, "", "apiserver")
        res = self.server.registry.get(info.group, info.version, info.resource)
        if res is None:  # not served: no labels a client could choose
            return (method, dry_run, "", "", "", "other", "", "apiserver")
        sub = info.subresource if info.subresource in _SUBRESOURCES else ("" if not info.subresource else "other")
        v = "CONNECT" if sub in _CONNECT else ("APPLY" if verb == "apply" else _VERBS.get(verb, method))
        # upstream's CleanScope: a named object or a create is "resource"
        scope = "resource" if info.name or verb == "create" else ("namespace" if info.namespace else "cluster")
        return (v, dry_run, info.group, info.version, info.resource, sub, scope, "apiserver")

    def _discovery_path(self, info: RequestInfo) -> bool:
        reg = self.server.registry
        if info.prefix == "api":
            return not info.version or info.version == "v1"
        if info.prefix == "apis" and info.group:
            return info.group in reg.groups() and (not info.version or info.version in reg.versions(info.group))
        return False

    # ---- counts other parts feed -------------------------------------------------------------
    def attach(self, handler: Any, rest: Any) -> None:
        """Count the handler's watch events and time the storage layer's admission chains, as
        upstream's apiserver_admission_step_admission_duration_seconds (type admit or validate)."""
        handler.metrics = self
        run_chain = rest._admit
        steps = self.admission

        async def timed(chain: list[Any], res: Any, op: str, *args: Any) -> None:
            t0 = time.perf_counter()
            rejected = "true"
            try:
                await run_chain(chain, res, op, *args)
                rejected = "false"
            finally:
                k = ("admit" if chain is rest.mutating else "validate", op, rejected)
                h = steps.get(k)
                if h is None:
                    h = steps[k] = Hist(ADMISSION_BUCKETS)
                h.observe(time.perf_counter() - t0)

        rest._admit = timed

    def watch_counter(self, res: Any) -> Callable[[int], None]:
        """What a watch calls with the number of events it has just written."""
        k = (res.group, res.version, res.resource)
        d = self.watch_events

        def sent(n: int) -> None:
            if n:
                d[k] = d.get(k, 0) + n

        return sent

    def storage_objects(self) -> Iterator[tuple[str, int]]:
        srv = self.server
        if srv.caches is None:
            return
        seen: set[str] = set()
        for r in srv.registry.all():
            if r.virtual:
                continue
            prefix = srv.registry.storage_resource(r).key_prefix()
            if prefix in seen:
                continue
            seen.add(prefix)
            c = srv.caches.caches.get(prefix)
            if c is not None:
                yield (f"{r.resource}.{r.group}" if r.group else r.resource), len(c.objects)

    # ---- serving ------------------------------------------------------------------------------
    def response(self, request: web.Request, slis: bool = False) -> web.Response:
        from ..metrics.core import exposition

        body, ct = exposition(self.slis if slis else self.registry, request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": ct})


class _Collector:
    def __init__(self, m: APIServerMetrics) -> None:
        self.m = m

    def collect(self) -> Iterator[Metric]:
        m = self.m
        c = CounterMetricFamily("apiserver_request", "Counter of apiserver requests broken out for each verb, "
                                "dry run value, group, version, resource, scope, component, and HTTP response code.",
                                labels=[*_LABELS, "code"])
        series = list(m.series.values())
        for sr in series:
            for code, n in list(sr.codes.items()):
                c.add_metric([*sr.labels, str(code)], n)
        yield c
        yield histogram_family("apiserver_request_duration_seconds", "Response latency distribution in seconds "
                               "for each verb, dry run value, group, version, resource, subresource, scope and "
                               "component.", _LABELS, [(sr.labels, sr.durations) for sr in series if sr.codes])
        yield histogram_family("apiserver_response_sizes", "Response size distribution in bytes for each group, "
                               "version, verb, resource, subresource, scope and component.", _SIZE_LABELS,
                               [(sr.labels[:1] + sr.labels[2:], sr.sizes) for sr in series
                                if sr.sizes is not None and sr.sizes.counts != [0] * len(sr.sizes.counts)])
        g = GaugeMetricFamily("apiserver_current_inflight_requests", "Number of requests currently being served "
                              "by this apiserver, per request kind (long-running requests excluded).",
                              labels=["request_kind"])
        g.add_metric(["readOnly"], m.inflight[0])
        g.add_metric(["mutating"], m.inflight[1])
        yield g
        g = GaugeMetricFamily("apiserver_longrunning_requests", "Gauge of all active long-running apiserver "
                              "requests broken out by verb, group, version, resource, scope and component.",
                              labels=list(_LR_LABELS))
        for k, n in list(m.longrunning.items()):
            g.add_metric(list(k), n)
        yield g
        g = GaugeMetricFamily("apiserver_storage_objects", "Number of stored objects at the time of last check "
                              "split by kind.", labels=["resource"])
        for name, n in m.storage_objects():
            g.add_metric([name], n)
        yield g
        c = CounterMetricFamily("apiserver_watch_events", "Number of events sent in watch clients",
                                labels=["group", "version", "resource"])
        for k, n in list(m.watch_events.items()):
            c.add_metric(list(k), n)
        yield c
        yield histogram_family("etcd_request_duration_seconds", "Etcd request latency in seconds for each "
                               "operation and object type.", ("operation", "type"), list(m.etcd.items()))
        yield histogram_family("apiserver_admission_step_admission_duration_seconds", "Admission sub-step "
                               "latency histogram in seconds, broken out for each operation and API resource and "
                               "step type (validate or admit).", ("type", "operation", "rejected"),
                               list(m.admission.items()))
        c = CounterMetricFamily("authentication_attempts", "Counter of authenticated attempts.", labels=["result"])
        total = sum(n for sr in series for n in list(sr.codes.values()))
        c.add_metric(["success"], total - m.auth_failures)
        c.add_metric(["failure"], m.auth_failures)
        yield c
        yield from _flowcontrol(m.server)


def _flowcontrol(server: Any) -> Iterator[Metric]:
    fc: Any = getattr(server, "flowcontrol", None)
    stats = getattr(fc, "stats", None)
    if stats is None:
        return
    c = CounterMetricFamily("apiserver_flowcontrol_dispatched_requests", "Number of requests executed by API "
                            "Priority and Fairness subsystem", labels=["flow_schema", "priority_level"])
    for (fs, pl), n in list(stats.dispatched.items()):
        c.add_metric([fs, pl], n)
    yield c
    c = CounterMetricFamily("apiserver_flowcontrol_rejected_requests", "Number of requests rejected by API "
                            "Priority and Fairness subsystem", labels=["flow_schema", "priority_level", "reason"])
    for (fs, pl, reason), n in list(stats.rejected.items()):
        c.add_metric([fs, pl, reason], n)
    yield c
    g = GaugeMetricFamily("apiserver_flowcontrol_current_executing_requests", "Number of requests in initial "
                          "(for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness "
                          "subsystem", labels=["flow_schema", "priority_level"])
    for (fs, pl), n in list(stats.executing.items()):
        g.add_metric([fs, pl], n)
    yield g
    g = GaugeMetricFamily("apiserver_flowcontrol_current_inqueue_requests", "Number of requests currently "
                          "pending in queues of the API Priority and Fairness subsystem", labels=["priority_level"])
    g2 = GaugeMetricFamily("apiserver_flowcontrol_nominal_limit_seats", "Nominal number of execution seats "
                           "configured for each priority level", labels=["priority_level"])
    for name, level in sorted(fc.dispatcher.levels.items()):
        g.add_metric([name], level.waiting)
        g2.add_metric([name], level.nominal)
    yield g
    yield g2


class _SLICollector:
    """/metrics/slis: the component's health checks as upstream's kubernetes_healthcheck families."""

    def __init__(self, m: APIServerMetrics) -> None:
        self.m = m

    def collect(self) -> Iterator[Metric]:
        g = GaugeMetricFamily("kubernetes_healthcheck", "This metric records the result of a single healthcheck.",
                              labels=["name", "type"])
        ok = 1 if getattr(self.m.server, "started_at", None) else 0
        for kind in ("livez", "readyz", "healthz"):
            for name in ("ping", "etcd"):
                g.add_metric([name, kind], ok)
        yield g


def install(server: Any) -> APIServerMetrics:
    """Count the server's requests and storage calls; called once its store is open."""
    from ..storage.instrumented import InstrumentedStore

    m = server.metrics = APIServerMetrics(server)
    reg = server.registry
    types: dict[str, str] = {}
    for r in reg.all():
        if not r.virtual:
            sr = reg.storage_resource(r)
            seg = sr.key_prefix()[10:].partition("/")[0]
            types.setdefault(seg, f"{sr.resource}.{sr.group}" if sr.group else sr.resource)
    server.store = InstrumentedStore(server.store, m.etcd, REQUEST_BUCKETS, lambda seg: types.get(seg, seg))
    server._serve_request = m.instrument(server._serve_request)
    return m
