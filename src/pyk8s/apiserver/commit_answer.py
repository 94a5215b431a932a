"""A write the store has acknowledged is never answered 500.

Once RestStorage has stored a write it records the stored object on the request's context
(`RequestContext.committed`). Building the answer can still fail after that (a conversion
back to the served version, table printing, encoding, a header the HTTP layer refuses); both
HTTP layers (server._entry for the handler's part, http1 for serialising) then answer from
here instead of with a 500 that would tell the client its write failed when it did not: the
write's status code and the stored object as plain JSON, or, for the subresources whose
answer is a Status (binding, eviction), a Success Status. The failure is logged, as a bug.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from .jsonwire import dumps as json_dumps

__all__ = ["after_failure"]

log = logging.getLogger(__name__)

# subresources whose POST answers a Status rather than the object written
_STATUS_ANSWERS = frozenset({"binding", "eviction"})


def after_failure(request: Any, where: str) -> web.Response | None:
    """The answer for a request whose write was stored before building its answer failed, or
    None when nothing was stored (the failure is then the request's, answered as usual)."""
    ctx = request.get("pyk8s.ctx")
    committed = getattr(ctx, "committed", None)
    if committed is None:
        return None
    obj, code = committed
    if request.method == "POST":  # a create, or a subresource's POST (binding, eviction): 201 either way
        code = 201
    log.exception("building the answer to %s %s failed in %s after its write was stored; answering %d "
                  "with the stored object", request.method, request.path_qs, where, code)
    body = b""
    if getattr(ctx, "subresource", "") not in _STATUS_ANSWERS:
        try:
            body = json_dumps(obj)
        except Exception:  # (the stored object was encoded once already: this is not expected)
            body = b""
    if not body:
        body = json_dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                             "code": code})
    return web.Response(body=body, status=code, content_type="application/json")
