"""The dashboard's HTTP server: the front-end, sign-in, and the API passthrough.

kubeconfig mode: `GET /?secret=<printed at start>` exchanges the access secret for a session
cookie (as Jupyter's token), then redirects to `/` so the secret leaves the address bar. token
mode: the page posts a bearer token to /dashboard/login, checked with a SelfSubjectReview; the
session keeps it server-side. Either way /api and /apis need a session.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from . import assets
from .errors import status_response
from .guard import add_security_headers, allowed_hosts, guard_middleware
from .proxy import proxy_request
from .session import COOKIE, Session, SessionStore
from .upstream import Upstream
from .watchmux import watch_mux

__all__ = ["DashboardConfig", "DashboardServer"]

log = logging.getLogger("pyk8s.dashboard")

SELF_SUBJECT_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
MAX_TOKEN = 16 * 1024


@dataclass
class DashboardConfig:
    address: str = "127.0.0.1"
    port: int = 9090
    auth: str = "kubeconfig"  # or "token"


class DashboardServer:
    def __init__(self, config: DashboardConfig, upstream: Upstream) -> None:
        if config.auth not in ("kubeconfig", "token"):
            raise ValueError(f"unknown --auth {config.auth!r} (kubeconfig or token)")
        self.config = config
        self.upstream = upstream
        self.sessions = SessionStore()
        # kubeconfig mode's access secret: whoever holds it acts with the kubeconfig's identity
        self.secret = secrets.token_urlsafe(32)
        self.port = config.port
        self._hosts: frozenset[str] = frozenset()
        self._runner: web.AppRunner | None = None

    @property
    def cookie(self) -> str:
        # cookies ignore ports: one name per port, so two dashboards on one machine keep theirs
        return f"{COOKIE}-{self.port}"

    @property
    def url(self) -> str:
        host = self.config.address if self.config.address not in ("0.0.0.0", "::") else "127.0.0.1"
        base = f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/"
        return base + (f"?secret={self.secret}" if self.config.auth == "kubeconfig" else "")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[guard_middleware(lambda: self._hosts)], client_max_size=8 * 1024 * 1024)
        app.on_response_prepare.append(add_security_headers)
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name:[A-Za-z0-9._-]+}", assets.static_file)
        app.router.add_get("/dashboard/session", self._session_info)
        app.router.add_post("/dashboard/login", self._login)
        app.router.add_post("/dashboard/logout", self._logout)
        app.router.add_get("/dashboard/watch", self._watch)
        for prefix in ("/api", "/apis"):
            app.router.add_route("*", prefix, self._proxy)
            app.router.add_route("*", prefix + "/{tail:.*}", self._proxy)
        app.router.add_get("/version", self._proxy)
        return app

    async def start(self) -> None:
        await self.upstream.start()
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.address, self.config.port)
        await site.start()
        server = getattr(site, "_server", None)
        if self.config.port == 0 and server is not None and server.sockets:
            self.port = int(server.sockets[0].getsockname()[1])
        self._hosts = allowed_hosts(self.config.address, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        await self.upstream.close()

    # ---- sessions

    def _session(self, request: web.Request) -> Session | None:
        return self.sessions.get(request.cookies.get(self.cookie))

    def _set_cookie(self, resp: web.StreamResponse, session: Session) -> None:
        resp.set_cookie(self.cookie, session.id, httponly=True, samesite="Strict", path="/",
                        max_age=int(self.sessions.ttl))

    async def _index(self, request: web.Request) -> web.StreamResponse:
        given = request.query.get("secret")
        if given is not None:
            if self.config.auth != "kubeconfig" or not hmac.compare_digest(given.encode(), self.secret.encode()):
                return status_response(401, "Unauthorized", "the access secret is not this dashboard's: open the "
                                       "URL `pyk8s dashboard` printed at start")
            resp = web.Response(status=303, headers={"Location": "/", "Cache-Control": "no-store"})
            self._set_cookie(resp, self.sessions.create())
            return resp
        return assets.index()

    async def _self_subject_review(self, session: Session) -> tuple[int, dict[str, Any]]:
        """POST a SelfSubjectReview as this session's user: (HTTP status, the API's answer)."""
        assert self.upstream.client is not None
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   **self.upstream.credentials(session)}
        async with self.upstream.client.post(self.upstream.url(SELF_SUBJECT_REVIEW), data=json.dumps(body),
                                             headers=headers, server_hostname=self.upstream.server_hostname) as resp:
            try:
                answer = json.loads(await resp.read())
            except ValueError:
                answer = {}
            return resp.status, answer if isinstance(answer, dict) else {}

    async def _session_info(self, request: web.Request) -> web.StreamResponse:
        """Who the page acts as ({"mode", "user"}), or 401 with how to sign in."""
        session = self._session(request)
        if session is None:
            hint = ("paste a bearer token to sign in" if self.config.auth == "token"
                    else "open the URL with ?secret= that `pyk8s dashboard` printed at start")
            resp = status_response(401, "Unauthorized", f"not signed in: {hint}")
            resp.headers["X-Pyk8s-Dashboard-Auth"] = self.config.auth
            return resp
        if not session.user:
            try:
                code, answer = await self._self_subject_review(session)
            except aiohttp.ClientError as e:
                return status_response(503, "ServiceUnavailable", f"the API server cannot be reached: {e}")
            review = answer.get("status")
            if code in (200, 201) and isinstance(review, dict) and isinstance(review.get("userInfo"), dict):
                session.user = dict(review["userInfo"])
        return web.json_response({"mode": self.config.auth, "user": session.user},
                                 headers={"Cache-Control": "no-store"})

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if self.config.auth != "token":
            return status_response(400, "BadRequest", "this dashboard signs in with its kubeconfig, not tokens")
        try:
            data = await request.json()
        except ValueError:
            data = None
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token.strip() or len(token) > MAX_TOKEN or any(
                c in token.strip() for c in "\r\n "):
            return status_response(400, "BadRequest", "a bearer token is required")
        candidate = Session("", token.strip())
        try:
            code, answer = await self._self_subject_review(candidate)
        except aiohttp.ClientError as e:
            return status_response(503, "ServiceUnavailable", f"the API server cannot be reached: {e}")
        if code == 401:
            return status_response(401, "Unauthorized", str(answer.get("message") or "Unauthorized"))
        if code not in (200, 201, 403):  # 403: authenticated, but may not review itself
            return status_response(code if code >= 400 else 502, str(answer.get("reason") or "InternalError"),
                                   str(answer.get("message") or f"the API server answered {code}"))
        review = answer.get("status") if code != 403 else None  # a 403's "status" is the Status' "Failure"
        user = review.get("userInfo") if isinstance(review, dict) else None
        session = self.sessions.create(token.strip(), user if isinstance(user, dict) else {})
        resp = web.json_response({"mode": "token", "user": session.user}, headers={"Cache-Control": "no-store"})
        self._set_cookie(resp, session)
        return resp

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        self.sessions.delete(request.cookies.get(self.cookie))
        resp = web.json_response({}, headers={"Cache-Control": "no-store"})
        resp.del_cookie(self.cookie, path="/")
        return resp

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        session = self._session(request)
        if session is None:
            return status_response(401, "Unauthorized", "not signed in to the dashboard")
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return status_response(400, "BadRequest", "/dashboard/watch is a WebSocket")
        return await watch_mux(request, self.upstream, session)

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        session = self._session(request)
        if session is None:
            return status_response(401, "Unauthorized", "not signed in to the dashboard")
        return await proxy_request(request, self.upstream, session)
