"""pods/log, pods/exec, pods/attach and pods/portforward: the API server's leg to the pod's kubelet.

As upstream: the kubelet is found from the Node object (an address from
status.addresses, the port from status.daemonEndpoints.kubeletEndpoint.Port), and the
API server authenticates to it with a client certificate of the cluster CA
(CN=kube-apiserver-kubelet-client, O=system:masters). The kubelet's serving certificate
is not verified, which is upstream's default without --kubelet-certificate-authority.

Logs are a plain GET of /containerLogs/... whose body is streamed back as it comes.
exec/attach/portforward are connection upgrades (WebSocket, SPDY/3.1, or kubectl's
SPDY-over-WebSocket tunnel): the same upgrade request goes to the kubelet, and once it
answers 101 the answer is relayed and the two connections are spliced byte for byte, so
the API server needs no knowledge of the streaming protocols. A kubelet that refuses
the upgrade has its answer relayed as is (kubectl falls back from WebSocket to SPDY on that).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import web

from ..api import errors as E
from .upgrade_splice import CONNECT_TIMEOUT, MAX_ERROR_BODY, hostport, splice

log = logging.getLogger("pyk8s.apiserver.kubelet")

DEFAULT_KUBELET_PORT = 10250
ADDRESS_PREFERENCE = ("InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS")
# request headers an upgrade needs end to end
UPGRADE_HEADERS = ("upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol",
                   "sec-websocket-extensions", "x-stream-protocol-version", "user-agent", "origin")
UPGRADE_RESPONSE_HEADERS = ("upgrade", "connection", "sec-websocket-accept", "sec-websocket-protocol",
                            "sec-websocket-extensions", "x-stream-protocol-version")


def make(server: Any) -> Any:
    """The callable proxying.handle calls: `(h, request, pod, node_name, info, ctx) -> response`."""
    return KubeletProxy(server).handle


def _truthy(v: str | None) -> bool:
    return (v or "").lower() in ("1", "true", "t")


class KubeletProxy:
    def __init__(self, server: Any) -> None:
        self.server = server
        self._ssl: ssl.SSLContext | None = None

    # ---- connection to the kubelet

    def client_ssl(self) -> ssl.SSLContext:
        if self._ssl is None:
            from ..pki import issue_client_cert

            pki = self.server.pki
            crt, key = os.path.join(pki.dir, "apiserver-kubelet-client.crt"), os.path.join(pki.dir, "apiserver-kubelet-client.key")
            cert_pem, key_pem = issue_client_cert(pki, "kube-apiserver-kubelet-client", ["system:masters"])
            for path, data, mode in ((key, key_pem, 0o600), (crt, cert_pem, 0o644)):
                fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(path + ".tmp", path)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.load_cert_chain(crt, key)
            ctx.set_alpn_protocols(["http/1.1"])
            self._ssl = ctx
        return self._ssl

    @staticmethod
    def kubelet_endpoint(node: dict[str, Any]) -> tuple[str, int]:
        status = node.get("status") or {}
        addrs: dict[str, str] = {}
        for a in status.get("addresses") or []:
            addrs.setdefault(a.get("type"), a.get("address"))
        host = next((addrs[t] for t in ADDRESS_PREFERENCE if addrs.get(t)), None)
        if not host:
            raise E.new_bad_request(f"no preferred addresses found; known addresses: "
                                    f"{[a.get('address') for a in status.get('addresses') or []]}")
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or DEFAULT_KUBELET_PORT
        return host, int(port)

    # ---- entry

    async def handle(self, h: Any, request: web.Request, pod: dict[str, Any], node_name: str, info: Any,
                     ctx: Any) -> web.StreamResponse:
        nodes = h.registry.get("", "v1", "nodes")
        node = await h.rest.get(nodes, None, node_name)
        host, port = self.kubelet_endpoint(node)
        meta = pod.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        q = request.query
        sub = info.subresource
        if sub == "log":
            return await self._logs(request, host, port, ns, name, self._container(pod, q.get("container", "")))
        if sub in ("exec", "attach"):
            container = self._container(pod, q.get("container", ""))
            params: list[tuple[str, str]] = []
            for flag in ("stdin", "stdout", "stderr", "tty"):
                if _truthy(q.get(flag)):
                    params.append((flag, "1"))
            if sub == "exec":
                params += [("command", c) for c in q.getall("command", [])]
            path = f"/{sub}/{quote(ns)}/{quote(name)}/{quote(container)}"
            return await self._upgrade(request, host, port, path, params)
        if sub == "portforward":
            # the API's `ports` is the kubelet's `port`, as upstream's PortForwardLocation rewrites it
            params = [("port", p) for v in q.getall("ports", []) for p in v.split(",") if p.strip()]
            return await self._upgrade(request, host, port, f"/portForward/{quote(ns)}/{quote(name)}", params)
        raise E.new_service_unavailable(f"pods/{sub} is not supported")

    @staticmethod
    def _container(pod: dict[str, Any], want: str) -> str:
        spec = pod.get("spec") or {}
        containers = [c["name"] for c in spec.get("containers") or []]
        name = (pod.get("metadata") or {}).get("name", "")
        if not want:
            if len(containers) == 1:
                return containers[0]
            inits = [c["name"] for c in spec.get("initContainers") or []]
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            if inits:
                msg += f" or one of the init containers: [{' '.join(inits)}]"
            raise E.new_bad_request(msg)
        valid = set(containers) | {c["name"] for key in ("initContainers", "ephemeralContainers")
                                   for c in spec.get(key) or []}
        if want not in valid:
            raise E.new_bad_request(f"container {want} is not valid for pod {name}")
        return want

    # ---- logs

    @staticmethod
    def _log_params(q: Any, name: str) -> list[tuple[str, str]]:
        errs: list[E.FieldError] = []
        ints: dict[str, int] = {}
        for key in ("sinceSeconds", "tailLines", "limitBytes"):
            v = q.get(key)
            if v in (None, ""):
                continue
            try:
                ints[key] = int(v)
            except ValueError:
                raise E.new_bad_request(f'{key}: strconv.ParseInt: parsing "{v}": invalid syntax') from None
        if ints.get("tailLines", 0) < 0:
            errs.append(E.FieldError("tailLines", "Invalid", ints["tailLines"], "must be greater than or equal to 0"))
        if "limitBytes" in ints and ints["limitBytes"] < 1:
            errs.append(E.FieldError("limitBytes", "Invalid", ints["limitBytes"], "must be greater than 0"))
        if "sinceSeconds" in ints:
            if q.get("sinceTime"):
                errs.append(E.FieldError("", "Forbidden", detail="at most one of `sinceTime` or `sinceSeconds` may be specified"))
            if ints["sinceSeconds"] < 1:
                errs.append(E.FieldError("sinceSeconds", "Invalid", ints["sinceSeconds"], "must be greater than 0"))
        if errs:
            raise E.new_invalid("PodLogOptions", name, errs)
        params: list[tuple[str, str]] = []
        for flag in ("follow", "previous", "timestamps"):
            if _truthy(q.get(flag)):
                params.append((flag, "true"))
        for key, value in ints.items():
            params.append((key, str(value)))
        for key in ("sinceTime", "stream"):
            if q.get(key):
                params.append((key, q[key]))
        return params

    async def _logs(self, request: web.Request, host: str, port: int, ns: str, name: str,
                    container: str) -> web.StreamResponse:
        params = self._log_params(request.query, name)
        url = f"https://{hostport(host, port)}/containerLogs/{quote(ns)}/{quote(name)}/{quote(container)}"
        if params:
            url += "?" + urlencode(params)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, connect=CONNECT_TIMEOUT)
        try:
            session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        except Exception as e:  # pragma: no cover - aiohttp setup
            raise E.new_internal_error(e) from e
        async with session:
            try:
                r = await session.get(url, ssl=self.client_ssl())
            except (TimeoutError, aiohttp.ClientError, OSError) as e:
                raise E.new_service_unavailable(f"error trying to reach service: {e}") from e
            async with r:
                if not 200 <= r.status <= 206:
                    body = (await r.content.read(MAX_ERROR_BODY)).decode("utf-8", "replace")
                    if r.status == 400:
                        raise E.new_bad_request(body)
                    if r.status == 404:
                        raise E.new_not_found("pods", name)
                    if r.status == 500:
                        raise E.StatusError(500, "InternalError", f"Internal error occurred: {body}",
                                            {"causes": [{"message": body}]})
                    raise E.new_generic(r.status, "Unknown", body or f"the server responded with the status code "
                                                                      f"{r.status} but did not return more information")
                resp = web.StreamResponse(status=200, headers={"Content-Type": r.headers.get("Content-Type", "text/plain")})
                resp.enable_chunked_encoding()
                await resp.prepare(request)
                gone = asyncio.get_running_loop().create_task(_client_gone(request))
                try:
                    while True:
                        read = asyncio.ensure_future(r.content.readany())
                        await asyncio.wait({read, gone}, return_when=asyncio.FIRST_COMPLETED)
                        if not read.done():
                            read.cancel()
                            break
                        chunk = read.result()
                        if not chunk:
                            break
                        await resp.write(chunk)
                    await resp.write_eof()
                except (TimeoutError, ConnectionError, OSError, aiohttp.ClientError):
                    pass  # either side went away mid-stream
                finally:
                    gone.cancel()
                return resp

    # ---- upgrades

    async def _upgrade(self, request: web.Request, host: str, port: int, path: str,
                       params: list[tuple[str, str]]) -> web.StreamResponse:
        target = path + ("?" + urlencode(params) if params else "")
        lines = [f"{request.method} {target} HTTP/1.1", f"Host: {hostport(host, port)}"]
        for k, v in request.headers.items():
            if k.lower() in UPGRADE_HEADERS:
                lines.append(f"{k}: {v}")
        if request.method in ("POST", "PUT"):
            lines.append("Content-Length: 0")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        async def relay(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> web.StreamResponse:
            # relay the refusal (kubectl's WebSocket attempt falls back to SPDY on it)
            refusal = web.Response(status=status, reason=reason, body=body)
            for k, v in headers:
                if k.lower() in ("content-type", "x-accepted-stream-protocol-versions"):
                    refusal.headers.add(k, v)
            refusal.force_close()
            return refusal

        return await splice(request, host, port, self.client_ssl(), head,
                            lambda k: k in UPGRADE_RESPONSE_HEADERS, relay)


async def _client_gone(request: web.Request) -> None:
    while request.transport is not None and not request.transport.is_closing():
        await asyncio.sleep(1.0)
