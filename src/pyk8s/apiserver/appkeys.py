"""Typed keys of what the API server keeps on its aiohttp Application (aiohttp's AppKey: string
keys work too, but warn and lose the types)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

SERVER: web.AppKey[Any] = web.AppKey("pyk8s.server", object)
AUTHENTICATOR: web.AppKey[Any] = web.AppKey("pyk8s.authenticator", object)
AUTHORIZER: web.AppKey[Any] = web.AppKey("pyk8s.authorizer", object)
API_AUDIENCE: web.AppKey[str] = web.AppKey("pyk8s.api_audience", str)
TOKEN_SIGNER: web.AppKey[Any] = web.AppKey("pyk8s.token_signer", object)
KUBELET_PROXY: web.AppKey[Any] = web.AppKey("pyk8s.kubelet_proxy", object)

# Per-request items (request[...]) that API Priority and Fairness (flowcontrol.py) leaves for the
# watch handler: a callable to run once the watch's initial events are out (its seat goes back),
# and the classification headers to add to the streamed answer.
PF_WATCH_INITIALIZED = "pyk8s.pf.watch_initialized"
PF_HEADERS = "pyk8s.pf.headers"
# Set by loopback.py on the requests of the server's in-process components: APF serves them at
# the exempt level, as upstream's loopback client (system:apiserver, in system:masters) is
LOOPBACK = "pyk8s.loopback"
