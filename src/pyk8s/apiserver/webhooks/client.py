"""The HTTPS client admission webhooks are called with, as upstream's webhook ClientManager.

TLS only: the serving certificate is verified against `clientConfig.caBundle` (the system roots
when it is empty) for the URL's host, or `<service>.<namespace>.svc` for a Service reference. A
Service is dialled at a ready endpoint of its EndpointSlices (the aggregator's resolver): our API
server runs outside the pod network, where `<svc>.<ns>.svc` does not resolve. No client
certificate or token is presented unless the AdmissionConfiguration's kubeConfigFile names one
for the server (credentials.py). Connections are pooled per server; TLS contexts are cached per CA bundle.

Failures carry Go's error text (`Post "<url>": context deadline exceeded`, `tls: failed to
verify certificate: x509: certificate signed by unknown authority`), as the dispatcher quotes
them in `failed calling webhook "<name>": failed to call webhook: ...`.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from .credentials import Credentials, resolve

__all__ = ["CallError", "WebhookClient", "MAX_RESPONSE_BYTES"]

# the most a webhook may answer: an AdmissionReview holds at most a patch of an object (objects are
# at most 3 MiB here), so a bigger body is a misbehaving (or hostile) webhook, not kept in memory
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class CallError(Exception):
    """A webhook that could not be called or answered no AdmissionReview: Go's error text."""


class WebhookClient:
    def __init__(self, server: Any, credentials: dict[str, Credentials] | None = None) -> None:
        self.server = server
        self.credentials = credentials or {}
        self._contexts: dict[tuple[bytes, Credentials | None], ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    def context(self, ca_bundle: bytes, creds: Credentials | None = None) -> ssl.SSLContext:
        ctx = self._contexts.get((ca_bundle, creds))
        if ctx is None:
            if len(self._contexts) > 64:
                self._contexts.clear()
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            if ca_bundle:
                try:
                    ctx.load_verify_locations(cadata=ca_bundle.decode("ascii", "replace"))
                except (ssl.SSLError, ValueError):
                    pass  # no usable CA: every certificate is then signed by an unknown authority
            else:
                ctx.load_default_certs()
            if creds is not None:
                creds.apply(ctx)
            self._contexts[(ca_bundle, creds)] = ctx
        return ctx

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                auto_decompress=True, connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def target(self, client_config: dict[str, Any], timeout: int) -> tuple[str, str, str, int]:
        """(the URL Go would name, the URL to dial, the TLS server name, ...port) for a clientConfig."""
        q = f"?timeout={timeout}s"
        svc = client_config.get("service")
        if svc:
            ns, name = svc.get("namespace") or "", svc.get("name") or ""
            port = int(svc.get("port") or 443)
            path = svc.get("path") or ""
            host = f"{name}.{ns}.svc"
            shown = f"https://{host}:{port}{path or ''}{q}"
            from ..aggregator import APIServiceRef, EndpointError

            ref = APIServiceRef({"metadata": {"name": ""},
                                 "spec": {"service": {"namespace": ns, "name": name, "port": port}}})
            agg = getattr(self.server, "aggregator", None)
            if agg is None:
                raise CallError(f'Post "{shown}": dial tcp: lookup {host}: no such host')
            try:
                addr, eport = agg.endpoint(ref)
            except EndpointError as e:
                raise CallError(f'Post "{shown}": {e.message}') from None
            hp = f"[{addr}]:{eport}" if ":" in addr else f"{addr}:{eport}"
            return shown, f"https://{hp}{path or '/'}{q}", host, port
        url = str(client_config.get("url") or "")
        u = urlsplit(url)
        shown = f"{url}{q}"
        return shown, shown, u.hostname or "", u.port or 443

    async def _send(self, url: str, data: bytes, ctx: ssl.SSLContext, server_name: str,
                    shown: str, authorization: str) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        if authorization:
            headers["Authorization"] = authorization
        async with self.session().post(url, data=data, ssl=ctx, server_hostname=server_name or None,
                                       allow_redirects=False, headers=headers) as resp:
            return resp.status, await _read_limited(resp, shown)

    async def post(self, client_config: dict[str, Any], body: dict[str, Any], timeout: int) -> dict[str, Any]:
        """POST body to the webhook; its decoded JSON answer, or CallError with Go's text."""
        shown, url, server_name, port = self.target(client_config, timeout)
        creds = resolve(self.credentials, server_name, port)
        ca = client_config.get("caBundle") or ""
        try:
            ca_bytes = base64.b64decode(ca, validate=True) if isinstance(ca, str) and ca else b""
        except ValueError:
            ca_bytes = b"\0"  # (validation keeps these out) trusts nothing rather than the system roots
        ctx = self.context(ca_bytes, creds)
        data = orjson.dumps(body)
        # a Task of its own: the request's first step may run outside one (eager_start.py), where
        # aiohttp's timers refuse to work; wait_for cancels it at the deadline
        call = asyncio.get_running_loop().create_task(self._send(url, data, ctx, server_name, shown,
                                                                     creds.authorization if creds else ""))
        try:
            status, raw = await asyncio.wait_for(call, timeout)
        except TimeoutError:
            raise CallError(f'Post "{shown}": context deadline exceeded') from None
        except aiohttp.ClientConnectorCertificateError as e:
            raise CallError(f'Post "{shown}": tls: failed to verify certificate: {_x509(e.certificate_error)}') \
                from None
        except aiohttp.ClientSSLError as e:
            raise CallError(f'Post "{shown}": remote error: tls: {getattr(e, "strerror", None) or e}') from None
        except aiohttp.ClientConnectorError as e:
            raise CallError(f'Post "{shown}": dial tcp {e.host}:{e.port}: connect: '
                            f'{(e.strerror or str(e)).lower()}') from None
        except aiohttp.ClientError as e:
            raise CallError(f'Post "{shown}": {e or type(e).__name__}') from None
        if not 200 <= status < 300:
            raise CallError(_status_error(status, raw))
        try:
            out = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise CallError(f"couldn't get version/kind; json parse error: {e}") from None
        if not isinstance(out, dict):
            raise CallError("couldn't get version/kind; json parse error: json: cannot unmarshal "
                            f"{type(out).__name__} into Go value of type struct")
        return out


async def _read_limited(resp: aiohttp.ClientResponse, shown: str) -> bytes:
    if (resp.content_length or 0) > MAX_RESPONSE_BYTES:
        raise CallError(f'Post "{shown}": the response body is larger than {MAX_RESPONSE_BYTES} bytes')
    buf = bytearray()
    async for chunk in resp.content.iter_chunked(65536):
        buf += chunk
        if len(buf) > MAX_RESPONSE_BYTES:
            raise CallError(f'Post "{shown}": the response body is larger than {MAX_RESPONSE_BYTES} bytes')
    return bytes(buf)


def _x509(err: BaseException) -> str:
    code = getattr(err, "verify_code", 0)
    msg = str(getattr(err, "verify_message", "") or err)
    if code == 62 or "hostname mismatch" in msg or "IP address mismatch" in msg:
        return "x509: certificate is not valid for the requested name"
    if code == 10 or "expired" in msg:
        return "x509: certificate has expired or is not yet valid"
    return "x509: certificate signed by unknown authority"


def _status_error(status: int, raw: bytes) -> str:
    """What client-go's rest client makes of a non-2xx answer: the Status it carries, or Go's text."""
    try:
        st = orjson.loads(raw)
    except orjson.JSONDecodeError:
        st = None
    if isinstance(st, dict) and st.get("kind") == "Status" and st.get("message"):
        return str(st["message"])
    text = raw[:512].decode("utf-8", "replace").strip()
    if status >= 500:
        return f'an error on the server ("{text}") has prevented the request from succeeding'
    return f"the server responded with the status code {status} but did not return more information"
