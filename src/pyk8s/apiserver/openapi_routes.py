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
            # kubectl 1.27/1.28 insist on the protobuf form before `replace`
            # answered as "...v2.v1.0+protobuf": Go's mime parser rejects the "@" of the Accept form
            return _bytes(request, _v2_protobuf(server), "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        body = openapi.openapi_v2(reg)
        return _bytes(request, body)
    if path == "/openapi/v3":
        import orjson

        return web.Response(body=orjson.dumps(openapi.openapi_v3_index(reg)), content_type="application/json")
    if path.startswith("/openapi/v3/"):
        gv = path[len("/openapi/v3/"):]
        doc = openapi.openapi_v3_doc(reg, gv)
        if doc is None:
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        resp = _bytes(request, doc)
        if request.query.get("hash"):
            resp.headers["Cache-Control"] = "public, immutable"
        return resp
    raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})


_pb_cache: dict[int, tuple[int, bytes]] = {}


def _v2_protobuf(server: Any) -> bytes:
    import orjson

    from ..api.schema import openapi
    from ..api.schema.openapi_pb import document_bytes

    gen = server.registry.generation
    hit = _pb_cache.get(id(server))
    if hit is None or hit[0] != gen:
        hit = (gen, document_bytes(orjson.loads(openapi.openapi_v2(server.registry))))
        _pb_cache[id(server)] = hit
    return hit[1]


def _bytes(request: web.Request, body: bytes, content_type: str = "application/json") -> web.StreamResponse:
    etag = '"' + hashlib.sha512(body).hexdigest()[:64].upper() + '"'
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers={"ETag": etag})
    return web.Response(body=body, headers={"Content-Type": content_type, "ETag": etag})
