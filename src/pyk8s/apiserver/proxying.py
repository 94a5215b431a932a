"""Subresources served by the node's kubelet (log, exec, attach, portforward) and proxies.

The API server finds the pod's node, then forwards the request to that kubelet's
endpoint from Node.status.daemonEndpoints, as upstream does.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from . import appkeys
from .request import RequestInfo
from .rest import RequestContext


async def handle(h: Any, request: web.Request, res: Resource, ns: str | None, info: RequestInfo,
                 ctx: RequestContext) -> web.StreamResponse:
    if res.group_kind == ("", "Pod") and info.subresource in ("log", "exec", "attach", "portforward", "proxy"):
        pod = await h.rest.get(res, ns, info.name)
        node = (pod.get("spec") or {}).get("nodeName")
        if info.subresource == "log":
            containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
            want = request.query.get("container")
            if not want and len(containers) > 1:
                raise E.new_bad_request(
                    f"a container name must be specified for pod {info.name}, choose one of: [{' '.join(containers)}]")
            if want and want not in containers and want not in [
                    c["name"] for key in ("initContainers", "ephemeralContainers")
                    for c in (pod.get("spec") or {}).get(key) or []]:
                raise E.new_bad_request(f"container {want} is not valid for pod {info.name}")
            if not node:
                raise E.new_bad_request(f"pod {info.name} does not have a host assigned")
        elif not node:
            raise E.new_bad_request(f"pod {info.name} does not have a host assigned")
        kubelet = request.app.get(appkeys.KUBELET_PROXY)
        if kubelet is None:
            raise E.new_service_unavailable(f"no kubelet endpoint is known for node {node}")
        return await kubelet(h, request, pod, node, info, ctx)
    raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
