"""Defences of a dashboard on a local port that any web page the user visits can send requests to.

- DNS rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1 reaches us as
  a same-origin request, but its Host header still says evil.example; only the loopback names
  (and the address we listen on) with our port are served, as `kubectl proxy --accept-hosts`.
- CSRF: a cross-site form or fetch cannot set a custom header without a CORS preflight (which we
  never grant), so every state-changing request needs `X-Pyk8s-Dashboard: 1`; browsers always
  send Origin on WebSocket upgrades and cross-origin requests, which must be our own origin.
  (SameSite=Strict alone is not enough: another port on 127.0.0.1 is the same *site*.)
- Framing and injected scripts: Content-Security-Policy with scripts only from our own files,
  frame-ancestors 'none' and X-Frame-Options DENY; no Referer leaves the page (the access
  secret is in the first URL).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware

from .errors import status_response

__all__ = ["CSRF_HEADER", "add_security_headers", "allowed_hosts", "guard_middleware", "SECURITY_HEADERS"]

CSRF_HEADER = "X-Pyk8s-Dashboard"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# style-src allows inline styles: xterm.js's DOM renderer writes its theme into <style> elements;
# scripts stay our own files only
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def allowed_hosts(address: str, port: int) -> frozenset[str]:
    """The Host header values we answer: the loopback names and the listen address, with our port."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if address not in ("0.0.0.0", "::", ""):
        names.add(f"[{address}]" if ":" in address else address)
    return frozenset(f"{n}:{port}" for n in names)


def _origin_ok(origin: str, host: str) -> bool:
    return origin == f"http://{host}"


def guard_middleware(hosts: Callable[[], Iterable[str]]) -> Middleware:
    """`hosts()`: the allowed Host values (known once the port is bound)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = (request.headers.get("Host") or "").lower()
        if host not in hosts():
            # as kubectl proxy's answer to a Host outside --accept-hosts
            return status_response(403, "Forbidden", f"host {host!r} is not allowed: use http://127.0.0.1 "
                                   "or http://localhost with this dashboard's port")
        origin = request.headers.get("Origin")
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if origin is not None and not _origin_ok(origin, host):  # "null" (sandboxed frames, files) too
            return status_response(403, "Forbidden", f"cross-origin request from {origin!r} refused")
        if upgrade and origin is None:
            return status_response(403, "Forbidden", "WebSocket upgrade without an Origin header refused")
        if request.method not in SAFE_METHODS and request.headers.get(CSRF_HEADER) != "1":
            return status_response(403, "Forbidden", f"request without the {CSRF_HEADER}: 1 header refused "
                                   "(cross-site request forgery protection)")
        return await handler(request)

    return guard


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every answer, streamed ones included, gets SECURITY_HEADERS."""
    response.headers.update(SECURITY_HEADERS)
