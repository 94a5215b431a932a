"""Authentication and authorization on the kubelet's port, as upstream's kubelet with
`--authentication-token-webhook --authorization-mode=Webhook` (pkg/kubelet/server/auth.go).

Who: a client certificate the serving context verified against the cluster CA (user = CN,
groups = O), else a bearer token checked by a TokenReview against the API server (results
cached 2 minutes, upstream's --authentication-token-webhook-cache-ttl); anyone else gets 401.
What: a SubjectAccessReview for verb (from the HTTP method) on `nodes/<subresource>` named
after the node, the subresource from the path: /stats -> stats, /metrics -> metrics,
/logs -> log, /spec -> spec, everything else (exec, attach, containerLogs, portForward, ...)
-> proxy. Allowed answers are cached 5 minutes, denied ones 30 seconds (upstream's
--authorization-webhook-cache-*-ttl). system:masters is allowed by every API server
authorizer, so its members (the API server's kubelet-client certificate) pass without asking.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

log = logging.getLogger("pyk8s.kubelet.auth")

TOKENREVIEWS = ("authentication.k8s.io", "v1", "tokenreviews")
SARS = ("authorization.k8s.io", "v1", "subjectaccessreviews")
TOKEN_TTL = 120.0
ALLOWED_TTL = 300.0
DENIED_TTL = 30.0
_CACHE_MAX = 10_000
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_SUBPATHS = (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log"), ("/spec", "spec"))


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


def cert_user(cert: dict[str, Any]) -> UserInfo:
    from .server import _peer_groups

    cn, orgs = _peer_groups(cert)
    return UserInfo(cn, groups=(*orgs, "system:authenticated"))


def request_attributes(method: str, path: str) -> tuple[str, str]:
    """(verb, subresource of nodes) the request needs, as upstream's kubelet maps them."""
    verb = _VERBS.get(method.upper(), method.lower())
    for prefix, sub in _SUBPATHS:
        if path == prefix or path.startswith(prefix + "/"):
            return verb, sub
    return verb, "proxy"


def _bearer(request: web.Request) -> str | None:
    h = request.headers.get("Authorization", "")
    scheme, _, token = h.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


class _TTLCache:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._d: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        v = self._d.get(key)
        if v is None:
            return None
        if v[0] <= self.clock():
            del self._d[key]
            return None
        return v[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if len(self._d) >= _CACHE_MAX:  # a flood of distinct tokens must not grow memory without bound
            now = self.clock()
            for k in [k for k, (exp, _) in self._d.items() if exp <= now]:
                del self._d[k]
            if len(self._d) >= _CACHE_MAX:
                self._d.clear()
        self._d[key] = (self.clock() + ttl, value)


class KubeletAuth:
    """Checks a request to a node's kubelet port; `check` returns None to let it through, else the refusal."""

    def __init__(self, client: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self._tokens = _TTLCache(clock)
        self._decisions = _TTLCache(clock)
        self._inflight: dict[Any, asyncio.Future[Any]] = {}

    async def authenticate(self, request: web.Request, cert: dict[str, Any] | None) -> UserInfo | None:
        if cert:
            return cert_user(cert)
        token = _bearer(request)
        if token is None:
            return None
        cached = self._tokens.get(token)
        if cached is not None:
            return cached or None
        user = await self._once(("token", token), lambda: self._review_token(token))
        return user or None

    async def _review_token(self, token: str) -> UserInfo | bool:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        out = await self.client.create(TOKENREVIEWS, review)  # an error (API down) is not cached: raises
        status = out.get("status") or {}
        if not status.get("authenticated"):
            self._tokens.put(token, False, TOKEN_TTL)
            return False
        u = status.get("user") or {}
        user = UserInfo(u.get("username", ""), u.get("uid", ""), tuple(u.get("groups") or ()),
                        tuple(sorted((k, tuple(v)) for k, v in (u.get("extra") or {}).items())))
        self._tokens.put(token, user, TOKEN_TTL)
        return user

    async def authorize(self, user: UserInfo, verb: str, subresource: str, node: str) -> bool:
        if "system:masters" in user.groups:
            return True
        key = (user, verb, subresource, node)
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached)
        return bool(await self._once(key, lambda: self._review_access(key)))

    async def _review_access(self, key: tuple[UserInfo, str, str, str]) -> bool:
        user, verb, subresource, node = key
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "resourceAttributes": {"verb": verb, "version": "v1", "resource": "nodes",
                                                       "subresource": subresource, "name": node}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        out = await self.client.create(SARS, {"apiVersion": "authorization.k8s.io/v1",
                                              "kind": "SubjectAccessReview", "spec": spec})
        allowed = bool((out.get("status") or {}).get("allowed"))
        self._decisions.put(key, allowed, ALLOWED_TTL if allowed else DENIED_TTL)
        return allowed

    async def _once(self, key: Any, make: Callable[[], Any]) -> Any:
        """One review in flight per key: a burst of scrapes with one token asks the API server once."""
        fut = self._inflight.get(key)
        if fut is not None:
            try:
                return await asyncio.shield(fut)
            except asyncio.CancelledError:
                if not fut.cancelled():
                    raise  # this request was cancelled
                # the request that asked went away mid-review: ask again for this one
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result = await make()
        except asyncio.CancelledError:
            fut.cancel()
            raise
        except Exception as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: waiters re-raise it, nobody else needs to
            raise
        else:
            fut.set_result(result)
            return result
        finally:
            if self._inflight.get(key) is fut:
                del self._inflight[key]

    async def check(self, request: web.Request, cert: dict[str, Any] | None, node: str) -> web.Response | None:
        try:
            user = await self.authenticate(request, cert)
        except Exception as e:  # noqa: BLE001 - the API server could not answer: not authenticated
            log.warning("kubelet authentication (TokenReview) failed: %s", e)
            user = None
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        verb, sub = request_attributes(request.method, request.path)
        try:
            ok = await self.authorize(user, verb, sub, node)
        except Exception as e:  # noqa: BLE001
            log.warning("kubelet authorization (SubjectAccessReview) failed: %s", e)
            return web.Response(status=500, text=f"Authorization error (user={user.name}, verb={verb}, "
                                                 f"resource=nodes, subresource(s)=[{sub}])\n")
        if not ok:
            return web.Response(status=403, text=f"Forbidden (user={user.name}, verb={verb}, resource=nodes, "
                                                 f"subresource(s)=[{sub}])\n")
        return None
