"""The kubelet's HTTPS server (port 10250): container logs, exec, attach and port-forward.

The API server reaches it for pods/log, pods/exec, pods/attach and pods/portforward
with the same paths upstream's kubelet serves:

    GET       /containerLogs/{ns}/{pod}/{container}?follow&previous&timestamps&sinceSeconds&sinceTime&tailLines&limitBytes
    GET|POST  /exec/{ns}/{pod}[/{uid}]/{container}?command=..&stdin&stdout&stderr&tty
    GET|POST  /attach/{ns}/{pod}[/{uid}]/{container}?stdin&stdout&stderr&tty
    GET|POST  /portForward/{ns}/{pod}[/{uid}][?port=..]

Streams are WebSocket (channel.k8s.io subprotocols) or SPDY/3.1 upgrades; see
`pyk8s.kubelet.streaming`. Which pods exist and which containers they run is asked of
the agent through `pod_lookup(namespace, name)`, which returns the pod object, its
current container IDs by name and its previous (last terminated) container IDs by name,
or None. With a TLS context that verifies client certificates, every request but
/healthz must present one the context trusts, and `authorize` (default: the cert's
groups include system:masters, as the API server's kubelet-client cert does) must accept it.
Given `auth` (`pyk8s.kubelet.auth.KubeletAuth`, what the agent passes), certificates or bearer
tokens and a SubjectAccessReview on nodes/<subresource> decide instead, as upstream's webhook
modes; the agent adds the stats routes (`pyk8s.kubelet.stats`) to `app`.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .runtime.interface import RUNNING, ContainerRuntime, RuntimeError_
from .streaming import logs as L
from .streaming import portforward as PF
from .streaming import remotecommand as RC
from .streaming import spdy
from .streaming.channels import EXEC_PROTOCOLS, PORTFORWARD_PROTOCOLS, protocol_refusal

log = logging.getLogger("pyk8s.kubelet.server")

PodLookupResult = tuple[dict[str, Any], dict[str, str], dict[str, str]]
PodLookup = Callable[[str, str], "PodLookupResult | None | Awaitable[PodLookupResult | None]"]


def _peer_groups(cert: dict[str, Any]) -> tuple[str, list[str]]:
    cn, orgs = "", []
    for rdn in cert.get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                cn = v
            elif k == "organizationName":
                orgs.append(v)
    return cn, orgs


def default_authorize(cert: dict[str, Any]) -> bool:
    _, groups = _peer_groups(cert)
    return "system:masters" in groups


def server_tls_context(cert_file: str, key_file: str, client_ca_file: str) -> ssl.SSLContext:
    """A serving context that asks for (and verifies against `client_ca_file`) a client certificate."""
    from ..tlsdefaults import harden_server_context

    ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    ctx.load_cert_chain(cert_file, key_file)
    ctx.load_verify_locations(cafile=client_ca_file)
    ctx.verify_mode = ssl.CERT_OPTIONAL  # /healthz stays reachable without one; everything else checks
    return ctx


def runtime_pod_lookup(runtime: ContainerRuntime,
                       get_pod: Callable[[str, str], dict[str, Any] | None | Awaitable[dict[str, Any] | None]]
                       ) -> Callable[[str, str], Awaitable[PodLookupResult | None]]:
    """A pod_lookup from what the runtime runs: the pod object from `get_pod`, its containers found by the
    pod UID their sandboxes carry; per name the newest attempt is current and the one before it previous."""

    async def lookup(namespace: str, name: str) -> PodLookupResult | None:
        pod = get_pod(namespace, name)
        if inspect.isawaitable(pod):
            pod = await pod
        if pod is None:
            return None
        uid = (pod.get("metadata") or {}).get("uid")
        by_name: dict[str, list[Any]] = {}
        for sb in await runtime.list_sandboxes():
            if sb.config.uid != uid:
                continue
            for c in await runtime.list_containers(sb.id):
                by_name.setdefault(c.name, []).append(c)
        current: dict[str, str] = {}
        previous: dict[str, str] = {}
        for cname, found in by_name.items():
            found.sort(key=lambda c: (c.attempt, c.created_at), reverse=True)
            current[cname] = found[0].id
            if len(found) > 1:
                previous[cname] = found[1].id
        return pod, current, previous

    return lookup


class KubeletServer:
    def __init__(self, runtime: ContainerRuntime, pod_lookup: PodLookup, tls_context: ssl.SSLContext | None,
                 port: int = 10250, *, host: str = "0.0.0.0",
                 authorize: Callable[[dict[str, Any]], bool] | None = default_authorize,
                 stream_creation_timeout: float = 30.0, auth: Any = None, node_name: str = "") -> None:
        self.runtime = runtime
        # a pyk8s.kubelet.auth.KubeletAuth (tokens and certs, SubjectAccessReviews) replaces `authorize`
        self.auth = auth
        self.node_name = node_name
        self.pod_lookup = pod_lookup
        self.tls_context = tls_context
        self.host = host
        self.port = port
        self.authorize = authorize
        self.stream_creation_timeout = stream_creation_timeout
        self._runner: web.AppRunner | None = None
        self._active: set[RC.Streams] = set()
        self._sessions: set[Any] = set()
        # built here so the agent can add its own routes (stats, pods, ...) before start()
        self.app = web.Application(middlewares=[self._auth_middleware], handler_args={"max_field_size": 65536})
        r = self.app.router
        r.add_get("/healthz", self._healthz)
        r.add_get("/containerLogs/{ns}/{pod}/{container}", self._container_logs)
        for verb in ("exec", "attach"):
            for path in (f"/{verb}/{{ns}}/{{pod}}/{{container}}", f"/{verb}/{{ns}}/{{pod}}/{{uid}}/{{container}}"):
                r.add_route("GET", path, self._remote_command)
                r.add_route("POST", path, self._remote_command)
        for path in ("/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"):
            r.add_route("GET", path, self._port_forward)
            r.add_route("POST", path, self._port_forward)

    # ---- lifecycle

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False, shutdown_timeout=5.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls_context, reuse_address=True)
        await site.start()
        if self.port == 0:
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        log.info("kubelet server listening on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        # end live sessions first: their handlers would otherwise hold shutdown for their whole life
        for s in list(self._active):
            s.gone.set()
        for sess in list(self._sessions):
            with contextlib.suppress(Exception):
                await sess.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- plumbing

    @web.middleware
    async def _auth_middleware(self, request: web.Request,
                               handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        ctx = self.tls_context
        if self.auth is not None and ctx is not None and request.path != "/healthz":
            sslobj = request.transport.get_extra_info("ssl_object") if request.transport else None
            refused = await self.auth.check(request, sslobj.getpeercert() if sslobj is not None else None,
                                            self.node_name)
            if refused is not None:
                return refused
        elif ctx is not None and ctx.verify_mode != ssl.CERT_NONE and request.path != "/healthz":
            sslobj = request.transport.get_extra_info("ssl_object") if request.transport else None
            cert = sslobj.getpeercert() if sslobj is not None else None
            if not cert:
                return web.Response(status=401, text="Unauthorized")
            if self.authorize is not None and not self.authorize(cert):
                cn, groups = _peer_groups(cert)
                return web.Response(status=403, text=f"Forbidden (user={cn}, groups={groups}, "
                                                     f"path={request.path})")
        return await handler(request)

    async def _lookup(self, ns: str, name: str) -> PodLookupResult | None:
        r = self.pod_lookup(ns, name)
        if inspect.isawaitable(r):
            r = await r
        return r  # type: ignore[return-value]

    async def _running(self, cid: str) -> bool:
        try:
            return (await self.runtime.container_status(cid)).state == RUNNING
        except RuntimeError_:
            return False

    @staticmethod
    def _uid_mismatch(request: web.Request, pod: dict[str, Any]) -> bool:
        uid = request.match_info.get("uid")
        return bool(uid) and uid != (pod.get("metadata") or {}).get("uid")

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    # ---- logs

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        ns, name, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        try:
            opts = L.LogOptions.from_query(request.query)
        except ValueError as e:
            return web.Response(status=400, text=str(e))
        found = await self._lookup(ns, name)
        if found is None:
            return web.Response(status=404, text=f'pod "{name}" does not exist\n')
        pod, current, previous = found
        spec = pod.get("spec") or {}
        names = {c.get("name") for key in ("containers", "initContainers", "ephemeralContainers")
                 for c in spec.get(key) or []}
        if container not in names:
            return web.Response(status=404, text=f'container "{container}" not found in pod "{name}"\n')
        cid, err = self._log_container(pod, name, container, current, previous, opts.previous)
        if cid is None:
            return web.Response(status=400, text=err)
        try:
            path = self.runtime.container_log_path(cid)
        except RuntimeError_:
            which = "previous terminated container" if opts.previous else "container"
            return web.Response(status=400, text=f'{which} "{container}" in pod "{name}" not found')
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)

        async def running() -> bool:
            return await self._running(cid)  # type: ignore[arg-type]

        try:
            await L.stream_log(path, opts, resp.write, running if opts.follow else None)
            await resp.write_eof()
        except (ConnectionError, OSError):
            pass  # the client went away mid-stream
        return resp

    @staticmethod
    def _log_container(pod: dict[str, Any], name: str, container: str, current: dict[str, str],
                       previous: dict[str, str], want_previous: bool) -> tuple[str | None, str]:
        """Which container's log to read, as upstream's validateContainerLogStatus decides (or why none)."""
        if want_previous:
            cid = previous.get(container)
            if not cid:
                return None, f'previous terminated container "{container}" in pod "{name}" not found'
            return cid, ""
        cid = current.get(container) or previous.get(container)
        if cid:
            return cid, ""
        status = pod.get("status") or {}
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            for cs in status.get(key) or []:
                if cs.get("name") != container:
                    continue
                waiting = (cs.get("state") or {}).get("waiting")
                if waiting:
                    reason = waiting.get("reason", "")
                    if reason == "ErrImagePull":
                        reason = "image can't be pulled"
                    elif reason == "ImagePullBackOff":
                        reason = "trying and failing to pull image"
                    return None, f'container "{container}" in pod "{name}" is waiting to start: {reason}'
                if (cs.get("state") or {}).get("terminated"):
                    return None, f'container "{container}" in pod "{name}" is terminated'
        return None, f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'

    # ---- exec and attach

    async def _open_streams(self, request: web.Request, opts: RC.Options) -> tuple[web.StreamResponse, RC.Streams | None]:
        if RC.is_websocket(request):
            why = protocol_refusal(request.headers.get("Sec-WebSocket-Protocol", ""), EXEC_PROTOCOLS)
            if why:
                return web.Response(status=403, text=why), None
            ws, streams = await RC.open_websocket(request, opts)
            return ws, streams
        protocol, err = RC.negotiate_spdy(request, RC.SPDY_PROTOCOLS)
        if err is not None:
            return err, None
        err = RC.spdy_upgrade_error(request)
        if err is not None:
            return err, None
        assert protocol is not None
        return await RC.open_spdy(request, opts, protocol, self.stream_creation_timeout)

    async def _remote_command(self, request: web.Request) -> web.StreamResponse:
        verb = request.path.split("/", 2)[1]
        ns, name, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        try:
            opts = RC.Options.from_query(request.query)
        except RC.StreamOptionsError as e:
            return web.Response(status=400, text=str(e))
        cmd = request.query.getall("command", [])
        if verb == "exec" and not cmd:
            return web.Response(status=400, text="you must specify a command to execute")
        found = await self._lookup(ns, name)
        if found is None or self._uid_mismatch(request, found[0]):
            return web.Response(status=404, text="pod does not exist")
        pod, current, _ = found
        cid = current.get(container)
        if not cid or not await self._running(cid):
            return web.Response(status=500, text=f'container not found ("{container}")')
        if verb == "exec":
            try:
                self.runtime.exec_command(cid, cmd, opts.tty)  # fails early (500) where the runtime cannot exec
            except (NotImplementedError, RuntimeError_) as e:
                return web.Response(status=500, text=f"error executing command in container: {e}")
            sized = "console_size" in inspect.signature(self.runtime.exec_command).parameters

            def argv_for(size: tuple[int, int] | None) -> list[str]:
                # a runtime that takes the initial terminal size starts the command at it (no 0x0 window)
                if sized and size is not None:
                    return self.runtime.exec_command(cid, cmd, opts.tty, console_size=size)  # type: ignore[call-arg]
                return self.runtime.exec_command(cid, cmd, opts.tty)
        else:
            try:
                log_path = self.runtime.container_log_path(cid)
            except RuntimeError_:
                return web.Response(status=500, text=f'container not found ("{container}")')
        resp, streams = await self._open_streams(request, opts)
        if streams is None:
            return resp
        log.debug("%s %s/%s/%s over %s %s", verb, ns, name, container,
                  "websocket" if isinstance(streams, RC.WSStreams) else "spdy", streams.protocol)
        self._active.add(streams)
        try:
            status: dict[str, Any] | None = None
            if verb == "exec":
                status = await RC.run_command(argv_for, streams, cmd)
            else:
                sock = getattr(self.runtime, "attach_socket", lambda _c: "")(cid)
                if sock:
                    status = await RC.run_attach_shim(streams, sock)
                if status is None and (sock or (hasattr(self.runtime, "attach_socket")
                                                and _has_stdin_or_tty(pod, container))):
                    # its shim is gone: it exited since we looked. An error, as upstream's runtime gives, so
                    # kubectl falls back to the logs (following the log from its end would show nothing)
                    status = RC.internal_error_status(
                        "error attaching to container: container is in CONTAINER_EXITED state")
                if status is None:  # a runtime (or an older shim) without an attach socket: follow the log
                    status = await RC.run_attach(streams, log_path, lambda: self._running(cid))  # type: ignore[arg-type]
            await streams.write_status(status)
        except Exception as e:  # the client must still learn how it ended
            log.exception("%s in %s/%s/%s failed", verb, ns, name, container)
            await streams.write_status(RC.internal_error_status(f"error executing command in container: {e}"))
        finally:
            self._active.discard(streams)
            await streams.finish()
        return resp

    # ---- port-forward

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        ns, name = request.match_info["ns"], request.match_info["pod"]
        found = await self._lookup(ns, name)
        if found is None or self._uid_mismatch(request, found[0]):
            return web.Response(status=404, text="pod does not exist")
        pod, current, _ = found
        sandbox_id, netns = "", ""
        for cid in current.values():
            try:
                st = await self.runtime.container_status(cid)
                sb = await self.runtime.sandbox_status(st.sandbox_id)
            except RuntimeError_:
                continue
            sandbox_id, netns = sb.id, sb.netns_path
            break
        if not sandbox_id:
            return web.Response(status=500, text=f'failed to find sandbox for pod "{name}"')
        if (pod.get("spec") or {}).get("hostNetwork"):
            netns = ""
        describe = f"{sandbox_id}, uid "

        async def dial(port: int) -> Any:
            return await PF.dial_localhost(port, netns, sandbox_id)

        if RC.is_websocket(request):
            offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
            if PF.TUNNEL_PROTOCOL in offered:
                ws = web.WebSocketResponse(protocols=(PF.TUNNEL_PROTOCOL,), autoping=True,
                                           max_msg_size=32 * 1024 * 1024)
                await ws.prepare(request)
                log.debug("portForward %s/%s over websocket %s", ns, name, PF.TUNNEL_PROTOCOL)
                session = spdy.Session(PF.WSTunnel(ws), server=True)
                return await self._serve_spdy(ws, session, dial, describe)
            try:
                ports = PF.parse_ports(request.query.getall("port", []) + request.query.getall("ports", []))
                if not ports:
                    raise ValueError('query parameter "port" is required')
            except ValueError as e:
                return web.Response(status=400, text=str(e))
            why = protocol_refusal(request.headers.get("Sec-WebSocket-Protocol", ""), PORTFORWARD_PROTOCOLS)
            if why:
                return web.Response(status=403, text=why)
            ws = web.WebSocketResponse(protocols=PORTFORWARD_PROTOCOLS, autoping=True)
            await ws.prepare(request)
            log.debug("portForward %s/%s over websocket %s", ns, name, ws.ws_protocol or "")
            await PF.serve_websocket(ws, ports, dial, describe)
            return ws
        protocol, err = RC.negotiate_spdy(request, (PF.PORTFORWARD_V1,))
        if err is not None:
            return err
        err = RC.spdy_upgrade_error(request)
        if err is not None:
            return err
        resp, session = await RC.upgrade_spdy(request, protocol or "")
        log.debug("portForward %s/%s over spdy %s", ns, name, protocol or "")
        return await self._serve_spdy(resp, session, dial, describe)

    async def _serve_spdy(self, resp: web.StreamResponse, session: Any, dial: Any, describe: str) -> web.StreamResponse:
        if not session._reader:
            session.start()
        self._sessions.add(session)
        try:
            await PF.serve_spdy(session, dial, describe, self.stream_creation_timeout)
        finally:
            self._sessions.discard(session)
        return resp


def _has_stdin_or_tty(pod: dict[str, Any], container: str) -> bool:
    """Whether the shim serves this container an attach socket while it runs."""
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if c.get("name") == container:
                return bool(c.get("stdin") or c.get("tty"))
    return False
