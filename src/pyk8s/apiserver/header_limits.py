"""The request head limit, as upstream's HTTP server applies it: 431 past 1 MiB.

kube-apiserver serves with Go's net/http and MaxHeaderBytes of 1 MiB; Go reads up to
4096 bytes past it and answers a longer request line plus headers with a plain-text
`431 Request Header Fields Too Large` and closes the connection. http1.py enforces the
same total on every connection before it answers or hands it over; on connections aiohttp
already owns (after a watch or an upgrade) aiohttp's own parser limits apply: the request
line up to the same total, each header line up to MAX_FIELD_BYTES, and too long a line
answers 431 too rather than aiohttp's 400.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web, web_protocol
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong

__all__ = ["MAX_HEADER_BYTES", "MAX_FIELD_BYTES", "RESPONSE_431", "handler_factory"]

MAX_HEADER_BYTES = (1 << 20) + 4096  # Go's MaxHeaderBytes (1 MiB) plus the 4096 bytes it reads beyond
MAX_FIELD_BYTES = 64 * 1024  # one header line, on connections aiohttp parses
_TEXT = b"431 Request Header Fields Too Large"
# Go's answer, byte for byte (it closes the connection after it)
RESPONSE_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
                b"Connection: close\r\n\r\n" + _TEXT)


class _RequestHandler(web_protocol.RequestHandler):
    """aiohttp's connection handler, answering a head over its limits with 431 as Go does."""

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if isinstance(exc, LineTooLong) or (isinstance(exc, BadHttpMessage) and "Too many headers" in str(exc)):
            resp = web.Response(status=431, body=_TEXT, content_type="text/plain", charset="utf-8")
            resp.force_close()
            return resp
        return super().handle_error(request, status, exc, message)


def handler_factory(server: web.Server) -> Any:
    """A protocol factory like aiohttp's web.Server, making handlers that answer 431."""
    kwargs = dict(server._kwargs)

    def make() -> _RequestHandler:
        return _RequestHandler(server, loop=server._loop, **kwargs)

    return make
