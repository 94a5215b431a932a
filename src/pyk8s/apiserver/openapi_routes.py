"""/openapi/v2 and /openapi/v3: documents built from the v1.33 definitions (pyk8s.api.schema.openapi)."""

from __future__ import annotations

import hashlib
from typing import Any

from aiohttp import web

from ..api import errors as E


def serve(server: Any, request: web.Request, path: str) -> web.StreamResponse:
    from ..api.schema import openapi

    reg = server.registry
    if path == "/openapi/v2":
        accept = request.headers.get("Accept", "")
        if "protobuf" in accept and "json" not in accept:
            # JSON only: kubectl tolerates a 404 for the protobuf form and uses /openapi/v3
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        body = openapi.openapi_v2(reg)
        return _bytes(request, body)
    if path == "/openapi/v3":
        import orjson

        return web.Response(body=orjson.dumps(openapi.openapi_v3_index(reg)), content_type="application/json")
    if path.startswith("/openapi/v3/"):
        gv = path[len("/openapi/v3/"):]
        body = openapi.openapi_v3_doc(reg, gv)
        if body is None:
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        resp = _bytes(request, body)
        if request.query.get("hash"):
            resp.headers["Cache-Control"] = "public, immutable"
        return resp
    raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})


def _bytes(request: web.Request, body: bytes) -> web.StreamResponse:
    etag = '"' + hashlib.sha512(body).hexdigest()[:64].upper() + '"'
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers={"ETag": etag})
    return web.Response(body=body, headers={"Content-Type": "application/json", "ETag": etag})
