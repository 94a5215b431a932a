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

As upstream's UpgradeAwareHandler with its rewriting transport: `.../proxy` without a path
is redirected (301) to `.../proxy/` for GET and HEAD; the target learns the path the client
asked in `X-Forwarded-Uri`; links in `text/html` answers and a redirect's `Location` are
moved under the proxy prefix (proxy_transport.py); CORS headers of the target are dropped;
and a connection upgrade (WebSocket, SPDY) is sent on and spliced once the target switches
protocols (upgrade_splice.py), authorized as the method's verb on `*/proxy` like any other
proxied request (a WebSocket's GET needs `get`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from . import appkeys
from .proxy_transport import rewrite_body, rewrite_url
from .request import RequestInfo
from .upgrade_splice import hostport, is_upgrade, splice

__all__ = ["handle", "split_scheme_name_port", "is_proxyable_ip"]

ADDRESS_NOT_ALLOWED = "address not allowed"
# hop-by-hop headers (RFC 7230 6.1) and the credentials the API server consumed
_DROP_REQUEST = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                           "te", "trailer", "transfer-encoding", "upgrade", "host", "authorization", "content-length",
                           "impersonate-user", "impersonate-group", "impersonate-uid"))
_DROP_RESPONSE = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer",
                            "transfer-encoding", "upgrade", "content-length",
                            # upstream's corsRemovingTransport
                            "access-control-allow-credentials", "access-control-allow-headers",
                            "access-control-allow-methods", "access-control-allow-origin"))
# an upgrade carries its own Connection/Upgrade headers on; the API server's credentials stay here
_DROP_UPGRADE = frozenset(("host", "authorization", "content-length", "impersonate-user", "impersonate-group",
                           "impersonate-uid", "proxy-authorization"))
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


def _split_proxy_path(path: str, info: RequestInfo) -> tuple[str, str]:
    """(the prefix up to `.../NAME/proxy`, the path after it, kept as sent: a trailing slash
    matters to the target)."""
    marker = f"/{info.name}/proxy"
    i = path.find(marker)
    if i < 0:
        return path, ""
    return path[:i + len(marker)], path[i + len(marker):]


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
    prefix, rest = _split_proxy_path(request.path, info)  # (info.path has lost a trailing slash)
    if not rest and request.method in ("GET", "HEAD"):
        # upstream's proxyRedirectsforRootPath (issue 4958): a page's relative links need the slash
        q = request.query_string
        return web.Response(status=301, headers={"Location": prefix + "/" + ("?" + q if q else "")})
    if res.kind == "Pod":
        base, ctx = await _pod_location(h, ns, scheme, name, port)
    elif res.kind == "Service":
        base, ctx = await _service_location(h, ns, info.name, scheme, name, port)
    else:
        base, ctx = await _node_location(h, request, scheme, name, port)
    if is_upgrade(request.headers):
        return await _upgrade(request, base, rest or "/", ctx)
    return await _forward(request, base, prefix, rest or "/", ctx)


def _forwarded_for(request: web.Request) -> str | None:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if not peer:
        return None
    prior = request.headers.get("X-Forwarded-For")
    return f"{prior}, {peer[0]}" if prior else str(peer[0])


async def _forward(request: web.Request, base: str, prefix: str, rest: str,
                   ctx: ssl.SSLContext | None) -> web.StreamResponse:
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
    if (xff := _forwarded_for(request)) is not None:
        headers["X-Forwarded-For"] = xff
    headers["X-Forwarded-Uri"] = prefix + rest  # the path the client asked for
    body = await request.read() if request.can_read_body else None
    query = request.query_string
    target = base + rest + ("?" + query if query else "")
    backend_host = base.split("://", 1)[1]
    request_host = request.headers.get("Host", "")

    def rewrite(url: str) -> str:
        return rewrite_url(url, backend_host, request_host, prefix)

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
            if "Location" in resp.headers:
                resp.headers["Location"] = rewrite(resp.headers["Location"])
            elif up.headers.get("Content-Type", "").split(";", 1)[0].strip() == "text/html":
                return await _rewritten(request, resp, await up.read(), up.headers.get("Content-Encoding", ""),
                                        rewrite)
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
            except (TimeoutError, aiohttp.ClientError, OSError):
                return resp  # the target went away mid-answer: the client sees the body end early
            await resp.write_eof()
            return resp


async def _rewritten(request: web.Request, resp: web.StreamResponse, body: bytes, encoding: str,
                     rewrite: Any) -> web.StreamResponse:
    try:
        new = rewrite_body(body, encoding, rewrite)
    except ValueError as e:  # upstream fails the request when the page does not decode
        raise E.StatusError(500, "", str(e), {}) from None
    out = body if new is None else new
    resp.content_length = len(out)
    await resp.prepare(request)
    await resp.write(out)
    await resp.write_eof()
    return resp


async def _upgrade(request: web.Request, base: str, rest: str, ctx: ssl.SSLContext | None) -> web.StreamResponse:
    """Send the upgrade on as the client sent it (less our credentials) and splice on 101."""
    u = urlsplit(base)
    host, port = u.hostname or "", u.port or (443 if u.scheme == "https" else 80)
    query = request.query_string
    lines = [f"{request.method} {rest}{'?' + query if query else ''} HTTP/1.1",
             f"Host: {request.headers.get('Host') or hostport(host, port)}"]
    lines += [f"{k}: {v}" for k, v in request.headers.items()
              if k.lower() not in _DROP_UPGRADE and k.lower() != "x-forwarded-for"]
    if (xff := _forwarded_for(request)) is not None:
        lines.append(f"X-Forwarded-For: {xff}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def refused(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> web.StreamResponse:
        if status < 400:
            raise E.StatusError(500, "", f"invalid upgrade response: status code {status}", {})
        answer = web.Response(status=status, reason=reason, body=body)  # the target's refusal, as it was
        for k, v in headers:
            if k.lower() not in _DROP_RESPONSE:
                answer.headers.add(k, v)
        answer.force_close()
        return answer

    return await splice(request, host, port, ctx, head, lambda k: k not in ("content-length", "transfer-encoding"),
                        refused)
