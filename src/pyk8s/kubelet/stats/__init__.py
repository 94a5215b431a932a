"""The kubelet's stats endpoints: the Summary API and the resource and cAdvisor metrics.

    GET /stats/summary[?only_cpu_and_memory=true]   stats/v1alpha1 Summary (JSON)
    GET /metrics/resource                           resource metrics (Prometheus text)
    GET /metrics/cadvisor                           cAdvisor's per-cgroup metrics (Prometheus text)

`add_routes` puts them on a kubelet server's application; who may call them is the
server's business (`pyk8s.kubelet.auth`: nodes/stats and nodes/metrics).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from . import resource_metrics
from .summary import SummaryProvider, with_rfc3339_times

__all__ = ["SummaryProvider", "add_routes", "SummarySource"]

log = logging.getLogger("pyk8s.kubelet.stats")

# what a summary comes from: a real kubelet's provider, or the simulator's node (request -> summary); the
# readings' `time`s are epoch floats, turned into metav1.Time strings for JSON
SummarySource = Callable[[web.Request, bool], Awaitable[dict[str, Any]]]
MetricsSource = Callable[[web.Request], Awaitable[bytes]]


def add_routes(app: web.Application, summary: SummarySource, cadvisor: MetricsSource | None = None) -> None:
    async def stats_summary(request: web.Request) -> web.Response:
        only = request.query.get("only_cpu_and_memory", "").lower() == "true"
        try:
            doc = await summary(request, only)
        except Exception as e:  # noqa: BLE001 - upstream answers 500 with the error
            log.exception("stats summary failed")
            return web.Response(status=500, text=f"Internal Error: failed to get node info: {e}\n")
        return web.Response(body=orjson.dumps(with_rfc3339_times(doc), option=orjson.OPT_INDENT_2),
                            content_type="application/json")

    async def metrics_resource(request: web.Request) -> web.Response:
        try:
            doc: dict[str, Any] | None = await summary(request, True)
        except Exception:  # noqa: BLE001 - reported as scrape_error 1, as upstream
            log.exception("resource metrics failed")
            doc = None
        body = resource_metrics.render(resource_metrics.families(doc))
        return web.Response(body=body, headers={"Content-Type": resource_metrics.CONTENT_TYPE})

    app.router.add_get("/stats/summary", stats_summary)
    app.router.add_get("/metrics/resource", metrics_resource)
    if cadvisor is not None:
        async def metrics_cadvisor(request: web.Request) -> web.Response:
            return web.Response(body=await cadvisor(request), headers={"Content-Type": resource_metrics.CONTENT_TYPE})

        app.router.add_get("/metrics/cadvisor", metrics_cadvisor)


def provider_routes(app: web.Application, provider: SummaryProvider) -> None:
    """The routes of a real kubelet, served from its SummaryProvider."""
    from .cadvisor_metrics import render_cadvisor

    async def summary(_r: web.Request, only: bool) -> dict[str, Any]:
        return await provider.summary(only)

    async def cadvisor(_r: web.Request) -> bytes:
        return await render_cadvisor(provider)

    add_routes(app, summary, cadvisor)
