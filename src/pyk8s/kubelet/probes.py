"""Container probes (startup, readiness, liveness) and lifecycle hook handlers, with upstream's defaults and messages.

One asyncio task per (container, probe kind) runs the probe every periodSeconds once
initialDelaySeconds have passed since the container started. A result only flips after
failureThreshold consecutive failures (or successThreshold successes); every failure
is an `Unhealthy` event. Readiness starts as failed, liveness as passed, and neither
runs before the startup probe has passed. A liveness or startup failure puts the worker
on hold: the pod worker restarts the container, which gets a fresh worker.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger("pyk8s.kubelet.probes")

USER_AGENT = "kube-probe/1.33"
MAX_BODY = 10 * 1024

SUCCESS, FAILURE, WARNING = "success", "failure", "warning"


def resolve_port(port: Any, container: dict[str, Any]) -> int:
    if isinstance(port, int):
        return port
    s = str(port)
    if s.isdigit():
        return int(s)
    for p in container.get("ports") or []:
        if p.get("name") == s:
            return int(p["containerPort"])
    raise ValueError(f"couldn't find port: {s} in {container.get('name')}")


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def http_get(h: dict[str, Any], container: dict[str, Any], pod_ip: str, timeout: float) -> tuple[str, str]:
    scheme = (h.get("scheme") or "HTTP").lower()
    host = h.get("host") or pod_ip
    port = resolve_port(h.get("port", 80), container)
    path = h.get("path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{_hostport(host, port)}{path}"
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    for hd in h.get("httpHeaders") or []:
        name = hd.get("name", "")
        if name.lower() == "host":
            headers["Host"] = hd.get("value", "")
        else:
            headers[name] = hd.get("value", "")
    conn = aiohttp.TCPConnector(ssl=False, force_close=True)
    try:
        async with aiohttp.ClientSession(connector=conn) as s:
            async with s.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                             allow_redirects=True, max_redirects=10) as r:
                body = (await r.content.read(MAX_BODY)).decode(errors="replace")
                if 200 <= r.status < 400:
                    if r.history and any(x.url.host != host for x in r.history):
                        return WARNING, f"Probe terminated redirects, Response body: {body}"
                    return SUCCESS, body
                return FAILURE, f"HTTP probe failed with statuscode: {r.status}"
    except TimeoutError:
        return FAILURE, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    except aiohttp.ClientConnectorError as e:
        return FAILURE, f'Get "{url}": dial tcp {_hostport(host, port)}: connect: {_errno_text(e.os_error)}'
    except aiohttp.ClientError as e:
        return FAILURE, f'Get "{url}": {e}'


def _errno_text(e: OSError | None) -> str:
    if e is None:
        return "connection failed"
    return {111: "connection refused", 113: "no route to host", 101: "network is unreachable"}.get(
        e.errno or 0, (e.strerror or str(e)).lower())


async def tcp_socket(t: dict[str, Any], container: dict[str, Any], pod_ip: str, timeout: float) -> tuple[str, str]:
    host = t.get("host") or pod_ip
    port = resolve_port(t.get("port"), container)
    addr = _hostport(host, port)
    try:
        _, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return FAILURE, f"dial tcp {addr}: i/o timeout"
    except OSError as e:
        return FAILURE, f"dial tcp {addr}: connect: {_errno_text(e)}"
    w.close()
    try:
        await w.wait_closed()
    except OSError:
        pass
    return SUCCESS, ""


_GRPC_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _health_status(msg: bytes) -> int:
    """Field 1 (varint) of grpc.health.v1.HealthCheckResponse."""
    i = 0
    while i < len(msg):
        key = msg[i]
        i += 1
        if key == 0x08:
            val, shift = 0, 0
            while i < len(msg):
                b = msg[i]
                i += 1
                val |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    return val
        break
    return 0


async def grpc_check(g: dict[str, Any], pod_ip: str, timeout: float) -> tuple[str, str]:
    import grpc  # grpcio comes with the etcd client; imported lazily (slow import)

    port = int(g.get("port", 0))
    target = _hostport(pod_ip, port)
    service = g.get("service") or ""
    req = (b"\x0a" + _varint(len(service.encode())) + service.encode()) if service else b""
    start = time.monotonic()
    async with grpc.aio.insecure_channel(target) as ch:
        try:
            await asyncio.wait_for(ch.channel_ready(), timeout)
        except TimeoutError:
            return FAILURE, f'timeout: failed to connect service "{target}" within {timeout:g}s: context deadline exceeded'
        call = ch.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda x: x,
                              response_deserializer=lambda x: x)
        try:
            resp = await call(req, timeout=max(0.01, timeout - (time.monotonic() - start)),
                              metadata=(("user-agent", USER_AGENT),))
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return FAILURE, f"timeout: health rpc did not complete within {timeout:g}s"
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return FAILURE, "this server does not implement the grpc health protocol (grpc.health.v1.Health): " \
                                f"{e.details()}"
            return FAILURE, f"rpc error: code = {e.code().name.title().replace('_', '')} desc = {e.details()}"
    st = _health_status(resp)
    if st != 1:
        return FAILURE, f'service unhealthy (responded with "{_GRPC_STATUS.get(st, str(st))}")'
    return SUCCESS, ""


async def exec_probe(runtime: Any, container_id: str, cmd: list[str], timeout: float) -> tuple[str, str]:
    from .runtime.interface import RuntimeError_

    try:
        r = await runtime.exec_sync(container_id, cmd, timeout)
    except RuntimeError_ as e:
        return FAILURE, str(e)
    out = (r.stdout + r.stderr).decode(errors="replace")
    if r.timed_out:
        return FAILURE, f"command {shlex.join(cmd)!r} timed out"
    if r.exit_code != 0:
        return FAILURE, out
    return SUCCESS, out


async def run_handler(h: dict[str, Any], container: dict[str, Any], container_id: str, pod_ip: str, runtime: Any,
                      timeout: float) -> tuple[str, str]:
    """One probe or lifecycle handler: exec, httpGet, tcpSocket, grpc or sleep."""
    if h.get("exec") is not None:
        return await exec_probe(runtime, container_id, list(h["exec"].get("command") or []), timeout)
    if h.get("httpGet") is not None:
        return await http_get(h["httpGet"], container, pod_ip, timeout)
    if h.get("tcpSocket") is not None:
        return await tcp_socket(h["tcpSocket"], container, pod_ip, timeout)
    if h.get("grpc") is not None:
        return await grpc_check(h["grpc"], pod_ip, timeout)
    if h.get("sleep") is not None:
        await asyncio.sleep(min(float(h["sleep"].get("seconds", 0)), timeout))
        return SUCCESS, ""
    return FAILURE, "missing probe handler"


# ---------------------------------------------------------------------------- probe workers


@dataclass
class ProbeSpec:
    period: float
    timeout: float
    initial_delay: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, p: dict[str, Any]) -> ProbeSpec:
        return cls(float(p.get("periodSeconds") or 10), float(p.get("timeoutSeconds") or 1),
                   float(p.get("initialDelaySeconds") or 0), int(p.get("successThreshold") or 1),
                   int(p.get("failureThreshold") or 3))


KIND_NAMES = {"startup": "Startup", "readiness": "Readiness", "liveness": "Liveness"}


class ProbeManager:
    """Runs probe workers and keeps their results, keyed by container ID."""

    def __init__(self, runtime: Any, recorder: Callable[[dict[str, Any], str, str, str, str], None],
                 on_change: Callable[[str], None]) -> None:
        self.runtime = runtime
        self.record = recorder  # (pod, type, reason, message, field_path)
        self.on_change = on_change  # pod uid
        self.readiness: dict[str, bool] = {}
        self.liveness_failed: dict[str, str] = {}  # container id -> failed probe kind ("liveness"/"startup")
        self.started: dict[str, bool] = {}
        self._workers: dict[tuple[str, str, str], tuple[str, asyncio.Task[None]]] = {}  # (uid, name, kind) -> (cid, task)

    def sync(self, pod: dict[str, Any], running: dict[str, tuple[str, float]], pod_ip: str,
             get_pod: Callable[[], dict[str, Any]]) -> None:
        """Make workers match the pod's running containers: name -> (container id, startedAt)."""
        uid = pod["metadata"]["uid"]
        spec = pod.get("spec") or {}
        wanted: set[tuple[str, str, str]] = set()
        containers = list(spec.get("containers") or []) + [c for c in spec.get("initContainers") or []
                                                             if c.get("restartPolicy") == "Always"]
        for c in containers:
            name = c["name"]
            if name not in running:
                continue
            cid, started_at = running[name]
            for kind in ("startup", "readiness", "liveness"):
                probe = c.get(f"{kind}Probe")
                if not probe:
                    continue
                key = (uid, name, kind)
                wanted.add(key)
                cur = self._workers.get(key)
                if cur is not None and cur[0] == cid:
                    continue
                if cur is not None:
                    cur[1].cancel()
                if kind == "readiness":
                    self.readiness.setdefault(cid, False)
                if kind == "startup":
                    self.started.setdefault(cid, False)
                task = asyncio.create_task(self._worker(uid, c, cid, started_at, kind, probe, pod_ip, get_pod),
                                           name=f"probe-{kind}-{name}")
                self._workers[key] = (cid, task)
        for key in [k for k in self._workers if k[0] == uid and k not in wanted]:
            self._workers.pop(key)[1].cancel()

    def stop_pod(self, uid: str) -> None:
        for key in [k for k in self._workers if k[0] == uid]:
            self._workers.pop(key)[1].cancel()

    def forget_container(self, cid: str) -> None:
        self.readiness.pop(cid, None)
        self.liveness_failed.pop(cid, None)
        self.started.pop(cid, None)

    async def stop(self) -> None:
        for _cid, t in self._workers.values():
            t.cancel()
        self._workers.clear()

    async def _worker(self, uid: str, c: dict[str, Any], cid: str, started_at: float, kind: str,
                      probe: dict[str, Any], pod_ip: str, get_pod: Callable[[], dict[str, Any]]) -> None:
        spec = ProbeSpec.of(probe)
        last, run = "", 0
        try:
            await asyncio.sleep(max(0.0, started_at + spec.initial_delay - time.time()))
            while True:
                if kind != "startup" and not self.started.get(cid, True):
                    await asyncio.sleep(spec.period)  # liveness/readiness wait for the startup probe
                    continue
                if kind == "startup" and self.started.get(cid):
                    return
                try:
                    result, output = await run_handler(probe, c, cid, pod_ip, self.runtime, spec.timeout)
                except Exception as e:  # noqa: BLE001 - a probe error counts as a failure, as upstream
                    result, output = FAILURE, str(e)
                if result == WARNING:
                    self.record(get_pod(), "Warning", "ProbeWarning", f"{KIND_NAMES[kind]} probe warning: {output}",
                                f"spec.containers{{{c['name']}}}")
                    result = SUCCESS
                if result == FAILURE:
                    self.record(get_pod(), "Warning", "Unhealthy", f"{KIND_NAMES[kind]} probe failed: {output}".rstrip(),
                                f"spec.containers{{{c['name']}}}")
                run = run + 1 if result == last else 1
                last = result
                threshold = spec.success_threshold if result == SUCCESS else spec.failure_threshold
                if run >= threshold:
                    if self._store(uid, cid, kind, result == SUCCESS) and kind != "readiness" and result == FAILURE:
                        return  # on hold: the container gets restarted and a new worker starts
                await asyncio.sleep(spec.period)
        except asyncio.CancelledError:
            pass

    def _store(self, uid: str, cid: str, kind: str, ok: bool) -> bool:
        changed = False
        if kind == "readiness":
            changed = self.readiness.get(cid) != ok
            self.readiness[cid] = ok
        elif kind == "startup":
            if ok:
                changed = not self.started.get(cid)
                self.started[cid] = True
            else:
                changed = self.liveness_failed.get(cid) != "startup"
                self.liveness_failed[cid] = "startup"
        elif not ok:
            changed = self.liveness_failed.get(cid) != "liveness"
            self.liveness_failed[cid] = "liveness"
        if changed:
            self.on_change(uid)
        return changed or not ok
