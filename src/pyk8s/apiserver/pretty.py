"""Indented JSON for people: `?pretty=true`, and curl, wget and browsers by default.

Upstream's content negotiation (isPrettyPrint) indents JSON answers when the query says
`pretty=<true>` or, with no `pretty` in the query, when the User-Agent starts with `curl`,
`Wget` or `Mozilla/5.0`; its pretty serializer is MarshalIndent with two spaces and no
trailing newline. Every other client gets the compact body untouched: the server's entry
point calls indent_if_wanted on every answer, whose check is a query and a header lookup,
and only the few pretty answers pay for a re-encode.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

__all__ = ["wants_pretty", "indent_if_wanted"]

_HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")
_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))  # Go's strconv.ParseBool


def wants_pretty(request: Any) -> bool:
    q = request.query
    if "pretty" in q:
        v = q.get("pretty", "")
        if v:  # `?pretty` alone falls back to the agent rule, as upstream's
            return v in _TRUE
    ua = request.headers.get("User-Agent")
    return ua is not None and ua.startswith(_HUMAN_AGENTS)


def _indent(resp: web.Response) -> None:
    body = resp.body
    if not isinstance(body, (bytes, bytearray)) or not body:
        return
    if not resp.headers.get("Content-Type", "").startswith("application/json"):
        return
    try:
        resp.body = orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)
    except orjson.JSONDecodeError:
        return


def indent_if_wanted(request: Any, resp: web.StreamResponse) -> None:
    """Indent a JSON answer (not yet sent) for the requests that want it (wants_pretty). On every
    answer: the common case (no `pretty`, an agent not in the list) is two lookups, no call."""
    if not isinstance(resp, web.Response):
        return
    if "pretty" not in request.query:
        ua = request.headers.get("User-Agent")
        if ua is None or not ua.startswith(_HUMAN_AGENTS):
            return
    if wants_pretty(request):
        _indent(resp)
