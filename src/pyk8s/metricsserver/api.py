"""metrics.k8s.io/v1beta1 as metrics-server serves it: NodeMetrics and PodMetrics, get and list.

`/apis/metrics.k8s.io/v1beta1/nodes[/NAME]`, `/pods`, `/namespaces/NS/pods[/NAME]`, with
labelSelector (the node's or pod's labels), fieldSelector (metadata.name, and
metadata.namespace for pods), and Table output when asked (metrics-server's columns).
Usage: cpu in nanocores, memory as a binary-SI quantity; `window` a Go duration.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from ..api import errors as E
from ..api import fields, labels
from ..api.quantity import canonical, parse_quantity
from ..api.timefmt import format_time
from .storage import Usage

__all__ = ["GROUP", "VERSION", "resource_list", "node_metrics", "pod_metrics", "go_duration", "cpu_quantity",
           "memory_quantity", "MetricsAPI"]

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
GV = f"{GROUP}/{VERSION}"


def resource_list() -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
        {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]}]}


def api_group() -> dict[str, Any]:
    v = {"groupVersion": GV, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [v], "preferredVersion": v}


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for a non-negative duration."""
    ns = int(round(seconds * 1e9))
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, div in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= div:
                return f"{ns / div:.9f}".rstrip("0").rstrip(".") + unit
    h, rem = divmod(ns, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    s = f"{rem / 1e9:.9f}".rstrip("0").rstrip(".") + "s"
    if h:
        return f"{h}h{m}m{s}"
    if m:
        return f"{m}m{s}"
    return s


def cpu_quantity(nanocores: int) -> str:
    return canonical(f"{nanocores}n")


def memory_quantity(n: int) -> str:
    """resource.NewQuantity(n, BinarySI): Ki/Mi/Gi... when a multiple of 1024, plain bytes otherwise."""
    return canonical(f"{n // 1024}Ki") if n and n % 1024 == 0 else str(n)


def _meta(obj: dict[str, Any] | None, name: str, namespace: str | None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace is not None:
        md["namespace"] = namespace
    md["creationTimestamp"] = format_time(time.time())  # as metrics-server: the time of the answer
    lbl = ((obj or {}).get("metadata") or {}).get("labels")
    if lbl:
        md["labels"] = dict(lbl)
    return md


def node_metrics(node: dict[str, Any] | None, name: str, u: Usage) -> dict[str, Any]:
    return {"kind": "NodeMetrics", "apiVersion": GV, "metadata": _meta(node, name, None),
            "timestamp": format_time(u.timestamp), "window": go_duration(u.window),
            "usage": {"cpu": cpu_quantity(u.cpu_nanocores), "memory": memory_quantity(u.memory_bytes)}}


def pod_metrics(pod: dict[str, Any] | None, ns: str, name: str, containers: dict[str, Usage]) -> dict[str, Any]:
    first = next(iter(containers.values()))
    return {"kind": "PodMetrics", "apiVersion": GV, "metadata": _meta(pod, name, ns),
            "timestamp": format_time(max(u.timestamp for u in containers.values())),
            "window": go_duration(first.window),
            "containers": [{"name": c, "usage": {"cpu": cpu_quantity(u.cpu_nanocores),
                                                 "memory": memory_quantity(u.memory_bytes)}}
                           for c, u in sorted(containers.items())]}


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _table(items: list[dict[str, Any]], pods: bool) -> dict[str, Any]:
    cols = [{"name": "Name", "type": "string", "format": "name", "description": "Name of the resource"},
            {"name": "CPU", "type": "string", "format": "", "description": "CPU usage"},
            {"name": "Memory", "type": "string", "format": "", "description": "Memory usage"},
            {"name": "Window", "type": "string", "format": "", "description": "Interval over which usage is "
                                                                              "measured"}]
    rows = []
    for it in items:
        if pods:
            cpu = sum(_nanos(c["usage"]["cpu"]) for c in it["containers"])
            mem = sum(_bytes(c["usage"]["memory"]) for c in it["containers"])
            usage = (cpu_quantity(cpu), memory_quantity(mem))
        else:
            usage = (it["usage"]["cpu"], it["usage"]["memory"])
        rows.append({"cells": [it["metadata"]["name"], *usage, it["window"]],
                     "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                "metadata": it["metadata"]}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": cols, "rows": rows}


def _nanos(q: str) -> int:
    return parse_quantity(q).nanos


def _bytes(q: str) -> int:
    return parse_quantity(q).to_int()


class MetricsAPI:
    """Answers from the storage and the node and pod informers of the metrics server."""

    def __init__(self, storage: Any, nodes: Any, pods: Any) -> None:
        self.storage = storage
        self.nodes = nodes
        self.pods = pods

    def list_nodes(self, label_selector: str, field_selector: str) -> list[dict[str, Any]]:
        ls, fs = labels.parse(label_selector), fields.parse(field_selector)
        out = []
        for name, u in sorted(self.storage.nodes().items()):
            node = self.nodes.get(name)
            lbl = ((node or {}).get("metadata") or {}).get("labels") or {}
            if node is None or not ls.matches(lbl) or not fs.matches({"metadata.name": name}):
                continue  # as metrics-server: only nodes the API still has
            out.append(node_metrics(node, name, u))
        return out

    def list_pods(self, ns: str | None, label_selector: str, field_selector: str) -> list[dict[str, Any]]:
        ls, fs = labels.parse(label_selector), fields.parse(field_selector)
        out = []
        for (pns, name), containers in sorted(self.storage.pods().items()):
            if ns is not None and pns != ns:
                continue
            pod = self.pods.get(f"{pns}/{name}")
            lbl = ((pod or {}).get("metadata") or {}).get("labels") or {}
            if pod is None or not ls.matches(lbl) or not fs.matches({"metadata.name": name, "metadata.namespace": pns}):
                continue
            out.append(pod_metrics(pod, pns, name, containers))
        return out

    def serve(self, request: web.Request, ns: str | None, resource: str, name: str) -> web.Response:
        q = request.query
        if resource == "nodes":
            if name:
                got = self.list_nodes("", f"metadata.name={name}")
                if not got:
                    raise E.new_not_found("nodemetrics", name, GROUP)
                return _json(request, got[0], False)
            items = self.list_nodes(q.get("labelSelector", ""), q.get("fieldSelector", ""))
            return _json(request, {"kind": "NodeMetricsList", "apiVersion": GV, "metadata": {}, "items": items},
                         False, items)
        if name:
            assert ns is not None
            got = self.list_pods(ns, "", f"metadata.name={name}")
            if not got:
                raise E.new_not_found("podmetrics", f"{ns}/{name}", GROUP)
            return _json(request, got[0], True)
        items = self.list_pods(ns, q.get("labelSelector", ""), q.get("fieldSelector", ""))
        return _json(request, {"kind": "PodMetricsList", "apiVersion": GV, "metadata": {}, "items": items}, True, items)


def _json(request: web.Request, body: dict[str, Any], pods: bool, items: list[dict[str, Any]] | None = None
          ) -> web.Response:
    if _wants_table(request):
        body = _table(items if items is not None else [body], pods)
    return web.Response(body=orjson.dumps(body), content_type="application/json")
