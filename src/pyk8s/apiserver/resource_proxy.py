"""The `proxy` subresources of nodes, services and pods, as upstream's ResourceLocation + proxy handler.

`/api/v1/nodes/[SCHEME:]NAME[:PORT]/proxy/PATH` reaches the node's kubelet (with the API
server's kubelet client certificate when no other port is named),
`/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH` a ready endpoint of the
Service whose address belongs to a pod, and `/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH`
the pod's IP; every HTTP method is forwarded, with its query and body. RBAC sees the method's
verb on `nodes/proxy`, `services/proxy`, `pods/proxy`, as upstream.

As upstream (proxyutil.IsProxyableIP / IsProxyableHostname), a target that is not a global
unicast address (loopback, link-local, unspecified, multicast) is refused with 400
`address not allowed`: the API server must not become a way into its own host's services.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
import ssl
from typing import Any

import aiohttp
from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from . import appkeys
from .request import RequestInfo

__all__ = ["handle", "split_scheme_name_port", "is_proxyable_ip"]

ADDRESS_NOT_ALLOWED = "address not allowed"
# hop-by-hop headers (RFC 7230 6.1) and the credentials the API server consumed
_DROP_REQUEST = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                           "te", "trailer", "transfer-encoding", "upgrade", "host", "authorization", "content-length",
                           "impersonate-user", "impersonate-group", "impersonate-uid"))
_DROP_RESPONSE = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer",
                            "transfer-encoding", "upgrade", "content-length"))
TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10.0)
_insecure: ssl.SSLContext | None = None


def split_scheme_name_port(id_: str) -> tuple[str, str, str] | None:
    """upstream's utilnet.SplitSchemeNamePort: `name`, `name:port` or `scheme:name:port`."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in ("", "http", "https"):
        return None
    return scheme, name, port


def is_proxyable_ip(ip: str) -> bool:
    """Only global unicast addresses may be proxied to (upstream's isProxyableIP)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return not (addr.is_loopback or addr.is_link_local or addr.is_unspecified or addr.is_multicast
                or (isinstance(addr, ipaddress.IPv4Address) and addr == ipaddress.IPv4Address("255.255.255.255")))


async def _check_hostname(host: str) -> None:
    """upstream's IsProxyableHostname: every address the name resolves to must be proxyable."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as e:
        raise E.new_bad_request(str(e)) from None
    if not infos:
        raise E.new_bad_request("No addresses for hostname")
    for info in infos:
        if not is_proxyable_ip(str(info[4][0])):
            raise E.new_bad_request(ADDRESS_NOT_ALLOWED)


def _join(host: str, port: int | str | None) -> str:
    h = f"[{host}]" if ":" in host else host
    return f"{h}:{port}" if port else h


def _remainder(info: RequestInfo) -> str:
    """The path after `.../NAME/proxy`, kept as sent (a trailing slash matters to the target)."""
    marker = f"/{info.name}/proxy"
    i = info.path.find(marker)
    rest = info.path[i + len(marker):] if i >= 0 else ""
    return rest or "/"


async def _pod_location(h: Any, ns: str | None, scheme: str, name: str, port: str) -> tuple[str, ssl.SSLContext | None]:
    pod = await h.rest.get(h.registry.get("", "v1", "pods"), ns, name)
    ip = (pod.get("status") or {}).get("podIP") or ""
    if not is_proxyable_ip(ip):
        raise E.new_bad_request(ADDRESS_NOT_ALLOWED)
    if not port:  # as upstream: the first declared container port
        port = next((str(c["ports"][0].get("containerPort")) for c in (pod.get("spec") or {}).get("containers") or []
                     if c.get("ports")), "")
    scheme = scheme or "http"
    return f"{scheme}://{_join(ip, port)}", _insecure_ssl() if scheme == "https" else None


async def _pod_ips(h: Any, ns: str | None, name: str) -> set[str]:
    try:
        pod = await h.rest.get(h.registry.get("", "v1", "pods"), ns, name)
    except E.StatusError:
        return set()
    st = pod.get("status") or {}
    return {str(p.get("ip")) for p in st.get("podIPs") or []} | {str(st.get("podIP"))}


async def _service_location(h: Any, ns: str | None, id_: str, scheme: str, name: str,
                            port: str) -> tuple[str, ssl.SSLContext | None]:
    svc = await h.rest.get(h.registry.get("", "v1", "services"), ns, name)
    spec = svc.get("spec") or {}
    scheme = scheme or "http"
    if spec.get("type") == "ExternalName":
        if not port:
            raise E.new_bad_request(f"no port specified for ExternalName service {name!r}".replace("'", '"'))
        return f"{scheme}://{_join(spec.get('externalName', ''), port)}", _insecure_ssl() if scheme == "https" else None
    port_name = port
    if port.isdigit():  # a port number names the Service port declaring it
        found = next((p for p in spec.get("ports") or [] if str(p.get("port")) == port), None)
        if found is None:
            raise E.new_service_unavailable(f'no service port {port} found for service "{name}"')
        port_name = found.get("name") or ""
    try:
        eps = await h.rest.get(h.registry.get("", "v1", "endpoints"), ns, name)
    except E.StatusError as e:
        if e.code == 404:
            raise E.new_service_unavailable(f'no endpoints available for service "{name}"') from None
        raise
    subsets = eps.get("subsets") or []
    if not subsets:
        raise E.new_service_unavailable(f'no endpoints available for service "{name}"')
    start = random.randrange(len(subsets))
    for i in range(len(subsets)):
        ss = subsets[(start + i) % len(subsets)]
        addrs = ss.get("addresses") or []
        for p in ss.get("ports") or []:
            if (p.get("name") or "") != port_name or not addrs:
                continue
            seed = random.randrange(len(addrs))
            for t in range(len(addrs)):
                a = addrs[(seed + t) % len(addrs)]
                # as upstream's isValidAddress: only an address that is its target pod's IP
                ref = a.get("targetRef") or {}
                if ref.get("kind") != "Pod" or a.get("ip") not in await _pod_ips(h, ref.get("namespace") or ns,
                                                                                  ref.get("name", "")):
                    continue
                if not is_proxyable_ip(a.get("ip", "")):
                    raise E.new_bad_request(ADDRESS_NOT_ALLOWED)
                return (f"{scheme}://{_join(a['ip'], p.get('port'))}",
                        _insecure_ssl() if scheme == "https" else None)
    raise E.new_service_unavailable(f'no endpoints available for service "{id_}"')


async def _node_location(h: Any, request: web.Request, scheme: str, name: str,
                         port: str) -> tuple[str, ssl.SSLContext | None]:
    from .kubelet_proxy import KubeletProxy

    node = await h.rest.get(h.registry.get("", "v1", "nodes"), None, name)
    host, kport = KubeletProxy.kubelet_endpoint(node)
    await _check_hostname(host)
    if not port or port == str(kport):
        kubelet = request.app.get(appkeys.KUBELET_PROXY)
        owner = getattr(kubelet, "__self__", None)  # the KubeletProxy whose bound handle the app holds
        ctx = owner.client_ssl() if owner is not None else _insecure_ssl()
        return f"https://{_join(host, kport)}", ctx
    scheme = scheme or "http"
    return f"{scheme}://{_join(host, port)}", _insecure_ssl() if scheme == "https" else None


def _insecure_ssl() -> ssl.SSLContext:
    """Upstream's proxy transport does not verify the serving certificates of pods and services."""
    global _insecure
    if _insecure is None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        _insecure = ctx
    return _insecure


async def handle(h: Any, request: web.Request, res: Resource, ns: str | None, info: RequestInfo) -> web.StreamResponse:
    what = {"Node": "node", "Service": "service", "Pod": "pod"}.get(res.kind, "")
    parsed = split_scheme_name_port(info.name)
    if parsed is None:
        raise E.new_bad_request(f'invalid {what} request "{info.name}"')
    scheme, name, port = parsed
    if res.kind == "Pod":
        base, ctx = await _pod_location(h, ns, scheme, name, port)
    elif res.kind == "Service":
        base, ctx = await _service_location(h, ns, info.name, scheme, name, port)
    else:
        base, ctx = await _node_location(h, request, scheme, name, port)
    return await _forward(request, base + _remainder(info), ctx)


async def _forward(request: web.Request, url: str, ctx: ssl.SSLContext | None) -> web.StreamResponse:
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if peer:
        prior = request.headers.get("X-Forwarded-For")
        headers["X-Forwarded-For"] = f"{prior}, {peer[0]}" if prior else str(peer[0])
    body = await request.read() if request.can_read_body else None
    query = request.query_string
    target = url + ("?" + query if query else "")
    async with aiohttp.ClientSession(timeout=TIMEOUT, auto_decompress=False) as session:
        try:
            up = await session.request(request.method, target, headers=headers, data=body, ssl=ctx or False,
                                       allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            # upstream's proxy error responder: 503 naming the dial error
            raise E.new_service_unavailable(f"error trying to reach service: {e}") from None
        async with up:
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in _DROP_RESPONSE:
                    resp.headers.add(k, v)
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
            except (TimeoutError, aiohttp.ClientError, OSError):
                return resp  # the target went away mid-answer: the client sees the body end early
            await resp.write_eof()
            return resp
