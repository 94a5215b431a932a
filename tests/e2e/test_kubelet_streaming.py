"""The kubelet's streaming server end to end: logs, exec, attach and port-forward into real runc containers.

One module-wide world: a real `pyk8s server` (its CA signs the kubelet's serving cert
and the clients' certs), a runc sandbox with busybox containers, and a KubeletServer on
its own event-loop thread whose pod_lookup maps the pod "web" to those containers. The
Node object points at that KubeletServer, so the real kubectl of every installed
version goes kubectl -> API server -> kubelet. Raw clients (aiohttp WebSocket, our SPDY
session in client mode) talk to the kubelet directly to pin the wire protocols.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import glob
import json
import logging
import os
import random
import re
import select
import shutil
import socket
import ssl
import stat
import struct
import subprocess
import threading
import time
import urllib.request
import uuid
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pyk8s.kubelet.images.store import ImageStore
from pyk8s.kubelet.runtime.cni import CNI, bridge_conflist
from pyk8s.kubelet.runtime.interface import ContainerConfig, SandboxConfig
from pyk8s.kubelet.runtime.runc import RuncRuntime
from pyk8s.kubelet.server import KubeletServer, runtime_pod_lookup, server_tls_context
from pyk8s.kubelet.streaming import spdy
from tests.cluster import Cluster, kubectl_binaries, raw_request
from tests.conftest import require, require_binary
from tests.e2e.imagebuild import import_busybox
from tests.e2e.podnet import reserve_pod_net
from tests.e2e.terminal import Terminal

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-streaming"), pytest.mark.timeout(180)]

NS, POD = "default", "web"
APP_SCRIPT = ("mkdir -p /www && echo hello-pf > /www/index.html && httpd -p 127.0.0.1:8080 -h /www && "
              "(nc -ll -p 9000 -e cat &) ; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
# stdout and stderr are separate pipes: the pause keeps their order in the log deterministic
STATIC_SCRIPT = "echo to-stderr >&2; sleep 0.3; for i in $(seq 1 10); do echo line $i; done; exec sleep 100000"


def _requirements() -> None:
    require("root", os.geteuid() == 0)
    require_binary("runc")
    require_binary("iptables")
    require("CNI plugins in /usr/lib/cni", all(os.path.exists(f"/usr/lib/cni/{p}") for p in
                                                ("bridge", "host-local", "loopback", "portmap")))


class LoopThread:
    """An event loop on its own thread: the kubelet server and the runtime live there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kubelet-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class ProtocolLog(logging.Handler):
    """Records which protocol each session used (the server logs it at debug level)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _issue(pki_dir: str, cn: str, orgs: list[str], server: bool, sans: list[str] = ()) -> tuple[bytes, bytes]:
    from pyk8s import pki

    ca = x509.load_pem_x509_certificate(open(os.path.join(pki_dir, "ca.crt"), "rb").read())
    ca_key = serialization.load_pem_private_key(open(os.path.join(pki_dir, "ca.key"), "rb").read(), None)
    key = pki.new_ec_key()
    cert = pki.issue_leaf(ca, ca_key, pki.x509_name(cn, orgs), key, server=server, sans=list(sans))
    return pki.certificate_pem(cert), pki.private_key_pem(key)


class World:
    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.cluster: Cluster | None = None
        self.loop = LoopThread()
        self.protolog = ProtocolLog()
        tag = uuid.uuid4().hex[:8]
        self.bridge = f"pk{tag}"
        self.runc_root = f"/run/pyk8s/test-{tag}"
        self.pod_net = reserve_pod_net(range(100, 251))  # no other test's bridge or route in this /16
        prefix = f"{self.pod_net.prefix}.{random.randint(0, 255)}"
        conf = bridge_conflist(f"{prefix}.0/24", name=f"pyk8s-{tag}", bridge=self.bridge,
                               data_dir=os.path.join(tmp, "cni"))
        self.store = ImageStore(os.path.join(tmp, "images"))
        self.store.unpack(import_busybox(self.store, tmp))
        self.rt = RuncRuntime(os.path.join(tmp, "kubelet"), image_store=self.store, cni=CNI(conf),
                              runc_root=self.runc_root)
        self.current: dict[str, str] = {}
        self.previous: dict[str, str] = {}
        self.pod: dict[str, Any] = {}
        self.others: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
        self.server: KubeletServer | None = None
        self.node = f"streaming-{tag}"

    # ---- containers

    async def _setup_containers(self) -> None:
        uid = str(uuid.uuid4())
        self.sid = await self.rt.create_sandbox(SandboxConfig(uid=uid, name=POD, namespace=NS))
        self.uid = uid

        async def start(name: str, script: str, attempt: int = 0) -> str:
            cid = await self.rt.create_container(self.sid, ContainerConfig(
                name=name, image="busybox:e2e", command=["sh", "-c", script], attempt=attempt))
            await self.rt.start_container(cid)
            return cid

        first = await start("app", "echo first run; sleep 0.2; echo first err >&2; exit 3")
        await self.rt.wait_exit(first, 15)
        self.previous["app"] = first
        self.current["app"] = await start("app", APP_SCRIPT, attempt=1)
        self.current["static"] = await start("static", STATIC_SCRIPT)
        await asyncio.sleep(0.5)  # httpd and nc listening, static's lines written

    async def start_container(self, name: str, script: str) -> str:
        cid = await self.rt.create_container(self.sid, ContainerConfig(name=name, image="busybox:e2e",
                                                                       command=["sh", "-c", script]))
        await self.rt.start_container(cid)
        self.current[name] = cid
        self.pod["spec"]["containers"].append({"name": name, "image": "busybox:e2e"})
        return cid

    def lookup(self, namespace: str, name: str) -> Any:
        if namespace == NS and name in self.others:
            pod, current = self.others[name]
            return pod, dict(current), {}
        if (namespace, name) != (NS, POD):
            return None
        return self.pod, dict(self.current), dict(self.previous)

    def add_pod(self, name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
        """Another pod in the API and in a sandbox of its own: its containers (k8s specs with `command`) run as given,
        stdin/stdinOnce/tty included."""
        current: dict[str, str] = {}

        async def start_all() -> None:
            sid = await self.rt.create_sandbox(SandboxConfig(uid=str(uuid.uuid4()), name=name, namespace=NS))
            for c in containers:
                cid = await self.rt.create_container(sid, ContainerConfig(
                    name=c["name"], image="busybox:e2e", command=c["command"], tty=bool(c.get("tty")),
                    stdin=bool(c.get("stdin")), stdin_once=bool(c.get("stdinOnce"))))
                await self.rt.start_container(cid)
                current[c["name"]] = cid

        self.loop.run(start_all())
        c = self.cluster
        assert c is not None
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
               "spec": {"nodeName": self.node, "automountServiceAccountToken": False,
                        "containers": [{"image": "busybox:e2e", **x} for x in containers]}}
        r = raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods", pod)
        assert r.status == 201, r.body
        cstat = [{"name": x["name"], "ready": True, "restartCount": 0, "image": "busybox:e2e", "imageID": "",
                  "containerID": f"runc://{current[x['name']]}", "started": True,
                  "state": {"running": {"startedAt": _now()}}} for x in containers]
        r = raw_request(c, "PATCH", f"/api/v1/namespaces/{NS}/pods/{name}/status",
                        {"status": {"phase": "Running", "containerStatuses": cstat, "podIP": "127.0.0.1"}},
                        headers={"Content-Type": "application/merge-patch+json"})
        assert r.status == 200, r.body
        self.others[name] = (r.json(), current)
        return r.json()

    # ---- TLS

    def setup_tls(self) -> None:
        assert self.cluster is not None
        pki = os.path.join(self.cluster.data_dir, "pki")
        self.ca_path = os.path.join(pki, "ca.crt")
        d = os.path.join(self.tmp, "certs")
        os.makedirs(d, exist_ok=True)
        for name, (crt, key) in {
            "kubelet": _issue(pki, "kubelet", [], True, ["127.0.0.1", "localhost"]),
            "node": _issue(pki, f"system:node:{self.node}", ["system:nodes"], False),
        }.items():
            open(os.path.join(d, f"{name}.crt"), "wb").write(crt)
            open(os.path.join(d, f"{name}.key"), "wb").write(key)
        self.server_ctx = server_tls_context(os.path.join(d, "kubelet.crt"), os.path.join(d, "kubelet.key"),
                                             self.ca_path)
        self.admin_ctx = self.client_ctx(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.node_ctx = self.client_ctx(os.path.join(d, "node.crt"), os.path.join(d, "node.key"))
        self.anon_ctx = self.client_ctx(None, None)

    def client_ctx(self, crt: str | None, key: str | None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_path)
        ctx.check_hostname = False
        if crt:
            ctx.load_cert_chain(crt, key)
        return ctx

    # ---- API objects

    def create_objects(self) -> None:
        c = self.cluster
        assert c is not None
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node}}
        r = raw_request(c, "POST", "/api/v1/nodes", node)
        assert r.status == 201, r.body
        status = {"status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": self.node}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.server.port}},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test",
                            "lastHeartbeatTime": _now(), "lastTransitionTime": _now()}]}}
        r = raw_request(c, "PATCH", f"/api/v1/nodes/{self.node}/status", status,
                        headers={"Content-Type": "application/merge-patch+json"})
        assert r.status == 200, r.body
        # no controller-manager here (it would judge our hand-made node): the default service account by hand
        r = raw_request(c, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        assert r.status in (201, 409), r.body
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NS},
               "spec": {"nodeName": self.node, "automountServiceAccountToken": False, "containers": [
                   {"name": "app", "image": "busybox:e2e"}, {"name": "static", "image": "busybox:e2e"}]}}
        r = raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods", pod)
        assert r.status == 201, r.body
        self.pod = r.json()
        cstat = [
            {"name": "app", "ready": True, "restartCount": 1, "image": "busybox:e2e", "imageID": "",
             "containerID": f"runc://{self.current['app']}", "started": True,
             "state": {"running": {"startedAt": _now()}},
             "lastState": {"terminated": {"exitCode": 3, "reason": "Error", "startedAt": _now(), "finishedAt": _now(),
                                          "containerID": f"runc://{self.previous['app']}"}}},
            {"name": "static", "ready": True, "restartCount": 0, "image": "busybox:e2e", "imageID": "",
             "containerID": f"runc://{self.current['static']}", "started": True,
             "state": {"running": {"startedAt": _now()}}},
        ]
        r = raw_request(c, "PATCH", f"/api/v1/namespaces/{NS}/pods/{POD}/status",
                        {"status": {"phase": "Running", "containerStatuses": cstat, "podIP": "127.0.0.1"}},
                        headers={"Content-Type": "application/merge-patch+json"})
        assert r.status == 200, r.body
        self.pod = r.json()

    # ---- lifecycle

    def start(self) -> None:
        self.cluster = Cluster(os.path.join(self.tmp, "server"), extra_args=["--disable", "controller-manager",
                                                                           "--disable", "scheduler"])
        self.cluster.start()
        self.setup_tls()
        self.loop.run(self._setup_containers())
        lg = logging.getLogger("pyk8s.kubelet")
        lg.addHandler(self.protolog)
        lg.setLevel(logging.DEBUG)

        async def serve() -> KubeletServer:
            s = KubeletServer(self.rt, self.lookup, self.server_ctx, port=0, host="127.0.0.1")
            await s.start()
            return s

        self.server = self.loop.run(serve())
        self.create_objects()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            logging.getLogger("pyk8s.kubelet").removeHandler(self.protolog)
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.loop.run(self.server.stop(), 30)

        async def clean() -> None:
            for c in await self.rt.list_containers():
                with contextlib.suppress(Exception):
                    await self.rt.remove_container(c.id)
            for sb in await self.rt.list_sandboxes():
                with contextlib.suppress(Exception):
                    await self.rt.remove_sandbox(sb.id)

        with contextlib.suppress(Exception):
            self.loop.run(clean(), 60)
        self.loop.close()
        # whatever is still mounted under our temp dir (rootfs, shm) would keep pytest from removing it
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f if line.split()[4].startswith(self.tmp + "/")]
        for mp in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", mp], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.pod_net.release()
        if os.path.isdir(self.runc_root):
            for cid in os.listdir(self.runc_root):
                subprocess.run(["runc", "--root", self.runc_root, "delete", "--force", cid], capture_output=True)
            shutil.rmtree(self.runc_root, ignore_errors=True)
        if self.cluster is not None:
            self.cluster.stop()

    @property
    def base(self) -> str:
        assert self.server is not None
        return f"https://127.0.0.1:{self.server.port}"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    _requirements()
    w = World(str(tmp_path_factory.mktemp("streaming")))
    try:
        w.start()
        yield w
    finally:
        w.stop()


# ============================================================================ raw clients


async def http_get(w: World, path: str, ctx: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as s, s.get(w.base + path, ssl=ctx or w.admin_ctx) as r:
        return r.status, await r.read()


async def ws_session(w: World, path: str, protocols: list[str], ctx: ssl.SSLContext | None = None):
    s = aiohttp.ClientSession()
    try:
        ws = await s.ws_connect(w.base + path, protocols=protocols, ssl=ctx or w.admin_ctx, autoping=True)
    except BaseException:
        await s.close()
        raise
    return s, ws


async def ws_collect(ws: aiohttp.ClientWebSocketResponse, b64: bool = False, timeout: float = 20) -> dict[int, bytes]:
    """Every channel's bytes until the server closes the connection."""
    out: dict[int, bytes] = {}
    async with asyncio.timeout(timeout):
        async for msg in ws:
            if b64:
                assert msg.type == aiohttp.WSMsgType.TEXT
                ch, data = int(msg.data[0]), base64.b64decode(msg.data[1:])
            else:
                assert msg.type == aiohttp.WSMsgType.BINARY
                ch, data = msg.data[0], msg.data[1:]
            out[ch] = out.get(ch, b"") + data
    assert ws.close_code == 1000
    return out


def q(**params: Any) -> str:
    from urllib.parse import urlencode

    items = []
    for k, v in params.items():
        for x in (v if isinstance(v, list) else [v]):
            items.append((k, x))
    return urlencode(items)


async def spdy_connect(w: World, method: str, path: str, protocols: list[str],
                       ctx: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], spdy.Session | bytes]:
    """POST an upgrade to SPDY/3.1; (status, headers, session) or (status, headers, body) on refusal."""
    reader, writer = await asyncio.open_connection("127.0.0.1", w.server.port, ssl=ctx or w.admin_ctx)
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{w.server.port}", "Connection: Upgrade",
            "Upgrade: SPDY/3.1", "Content-Length: 0"] + [f"X-Stream-Protocol-Version: {p}" for p in protocols]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    await writer.drain()
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    if status != 101:
        body = await reader.read(65536)
        writer.close()
        return status, headers, body
    sess = spdy.Session(spdy.StreamsConn(reader, writer), server=False)
    sess.start()
    return status, headers, sess


async def read_all(stream: spdy.Stream, timeout: float = 20) -> bytes:
    out = b""
    async with asyncio.timeout(timeout):
        while True:
            d = await stream.read()
            if not d:
                return out
            out += d


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ============================================================================ logs


def test_logs_raw(world):
    base = f"/containerLogs/{NS}/{POD}"

    async def go():
        st, body = await http_get(world, f"{base}/static")
        lines = [f"line {i}" for i in range(1, 11)]
        assert (st, body.decode()) == (200, "to-stderr\n" + "\n".join(lines) + "\n")
        assert (await http_get(world, f"{base}/static?tailLines=3"))[1] == b"line 8\nline 9\nline 10\n"
        assert (await http_get(world, f"{base}/static?tailLines=0"))[1] == b""
        assert (await http_get(world, f"{base}/static?stream=Stderr"))[1] == b"to-stderr\n"
        assert (await http_get(world, f"{base}/static?limitBytes=13"))[1] == b"to-stderr\nlin"
        st, body = await http_get(world, f"{base}/static?timestamps=true&tailLines=1")
        assert re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line 10\n", body), body
        future = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert (await http_get(world, f"{base}/static?sinceTime={future}"))[1] == b""
        assert (await http_get(world, f"{base}/static?sinceSeconds=3600"))[1].count(b"\n") == 11
        # previous: the first attempt of app; the current one's log is the ticking one
        assert (await http_get(world, f"{base}/app?previous=true"))[1] == b"first run\nfirst err\n"
        st, body = await http_get(world, f"{base}/static?previous=true")
        assert (st, body) == (400, b'previous terminated container "static" in pod "web" not found')
        assert (await http_get(world, f"{base}/app?tailLines=1"))[1].startswith(b"tick ")
        # errors
        assert (await http_get(world, f"{base}/nope"))[0] == 404
        assert (await http_get(world, f"/containerLogs/{NS}/other/static"))[0] == 404
        st, body = await http_get(world, f"{base}/static?sinceSeconds=5&sinceTime={future}")
        assert st == 400 and b"at most one of" in body
        # authentication and authorization: a client certificate of the cluster CA, in system:masters
        assert (await http_get(world, f"{base}/static", world.anon_ctx))[0] == 401
        assert (await http_get(world, f"{base}/static", world.node_ctx))[0] == 403
        assert (await http_get(world, "/healthz", world.anon_ctx)) == (200, b"ok")

    run(go())


def test_logs_follow_raw(world):
    async def go():
        async with aiohttp.ClientSession() as s:
            url = f"{world.base}/containerLogs/{NS}/{POD}/app?follow=true&tailLines=1"
            async with s.get(url, ssl=world.admin_ctx) as r:
                assert r.status == 200
                seen = b""
                async with asyncio.timeout(10):
                    while seen.count(b"tick") < 4:
                        seen += await r.content.readany()
                nums = [int(x) for x in re.findall(rb"tick (\d+)", seen)]
                assert nums == list(range(nums[0], nums[0] + len(nums))), seen  # in order, none lost

    run(go())


def test_logs_follow_ends_with_container(world):
    async def go():
        cid = await world.start_container("brief", "echo one; sleep 1; echo two")
        async with aiohttp.ClientSession() as s:
            url = f"{world.base}/containerLogs/{NS}/{POD}/brief?follow=true"
            async with s.get(url, ssl=world.admin_ctx) as r:
                async with asyncio.timeout(15):
                    body = await r.read()  # returns once the container has exited
        assert body == b"one\ntwo\n"
        return cid

    world.loop.run(go())


# ============================================================================ exec over WebSocket


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io",
                                      "channel.k8s.io", "base64.channel.k8s.io"])
def test_exec_websocket(world, protocol):
    b64 = "base64" in protocol
    json_status = protocol.startswith(("v4", "v5"))

    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "echo out; echo err >&2; exit 7"],
                                               stdout="1", stderr="1")
        s, ws = await ws_session(world, path, [protocol])
        async with s:
            assert ws.protocol == protocol
            got = await ws_collect(ws, b64)
        assert got[1] == b"out\n" and got[2] == b"err\n"
        if json_status:
            assert json.loads(got[3]) == {
                "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                "message": "command terminated with non-zero exit code: command 'sh -c echo out; echo err >&2; "
                           "exit 7' exited with 7: ",
                "details": {"causes": [{"reason": "ExitCode", "message": "7"}]}}
        else:
            assert got[3].startswith(b"command terminated with non-zero exit code")
        # success
        path = f"/exec/{NS}/{POD}/static?" + q(command=["true"], stdout="true")
        s, ws = await ws_session(world, path, [protocol])
        async with s:
            got = await ws_collect(ws, b64)
        assert got.get(3, b"") == (b'{"metadata":{},"status":"Success"}' if json_status else b"")

    run(go())


def test_exec_websocket_stdin_v5(world):
    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "wc -c; cat /nonexistent 2>/dev/null; exit 0"],
                                               stdin="1", stdout="1", stderr="1")
        s, ws = await ws_session(world, path, ["v5.channel.k8s.io"])
        async with s:
            payload = os.urandom(300_000)
            for i in range(0, len(payload), 32768):
                await ws.send_bytes(b"\x00" + payload[i:i + 32768])
            await ws.send_bytes(b"\xff\x00")  # v5 CLOSE of stdin: wc sees EOF
            got = await ws_collect(ws)
        assert got[1].strip() == b"300000"
        assert got[3] == b'{"metadata":{},"status":"Success"}'

    run(go())


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io",
                                      "channel.k8s.io", "base64.channel.k8s.io"])
def test_exec_websocket_stdin_text_and_binary_frames(world, protocol):
    """Upstream's kubelet reads a frame's payload whatever its opcode: stdin in text frames is not dropped."""
    b64 = "base64" in protocol

    def frame(data: bytes) -> bytes:
        return b"0" + base64.b64encode(data) if b64 else b"\x00" + data

    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "head -c 12"], stdin="1", stdout="1")
        s, ws = await ws_session(world, path, [protocol])
        async with s:
            await ws.send_str(frame(b"text-").decode())
            await ws.send_bytes(frame(b"bin-"))
            await ws.send_str(frame(b"end").decode())
            got = await ws_collect(ws, b64)
        assert got[1] == b"text-bin-end"

    run(go())


def test_python_client_interactive_exec(world):
    """The official client's interactive exec writes stdin as text frames and reads the answers back."""
    from kubernetes import client
    from kubernetes.stream import stream

    api = client.CoreV1Api(world.cluster.api_client())
    ws = stream(api.connect_get_namespaced_pod_exec, POD, NS, container="static", command=["sh"],
                stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
    try:
        ws.write_stdin("echo hello-$((6*7))\n")
        out = ""
        deadline = time.monotonic() + 20
        while "hello-42" not in out and time.monotonic() < deadline:
            ws.update(timeout=1)
            out += ws.read_stdout(timeout=0.1) if ws.peek_stdout() else ""
        assert "hello-42\n" in out
        ws.write_stdin("exit 5\n")
        ws.run_forever(timeout=20)
        assert ws.returncode == 5
    finally:
        ws.close()


def test_exec_websocket_tty_resize(world):
    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "read x; stty size; echo got:$x"],
                                               stdin="1", stdout="1", tty="1")
        s, ws = await ws_session(world, path, ["v5.channel.k8s.io"])
        async with s:
            await ws.send_bytes(b"\x04" + json.dumps({"Width": 123, "Height": 45}).encode())
            await asyncio.sleep(0.3)
            await ws.send_bytes(b"\x00hello\r")
            got = await ws_collect(ws)
        out = got[1].replace(b"\r\n", b"\n")
        assert b"45 123\n" in out and b"got:hello\n" in out, out
        assert b"hello" in out.split(b"45 123")[0]  # the terminal echoed the input
        assert got[3] == b'{"metadata":{},"status":"Success"}'

    run(go())


def test_exec_errors(world):
    async def go():
        base = f"/exec/{NS}/{POD}"
        st, body = await http_get(world, f"{base}/nope?command=ls&stdout=1")
        assert (st, body) == (500, b'container not found ("nope")')
        st, body = await http_get(world, f"{base}/static?command=ls")
        assert (st, body) == (400, b"you must specify at least 1 of stdin, stdout, stderr")
        st, body = await http_get(world, f"/exec/{NS}/other/static?command=ls&stdout=1")
        assert st == 404
        st, body = await http_get(world, f"{base}/static?command=ls&stdout=1")  # neither WebSocket nor SPDY
        assert st == 400 and body.startswith(b"unable to upgrade: missing upgrade headers")
        st, hdrs, body = await spdy_connect(world, "POST", f"{base}/static?command=ls&stdout=1", ["v9.channel.k8s.io"])
        assert st == 403 and b"unable to negotiate protocol" in body
        with pytest.raises(aiohttp.WSServerHandshakeError) as ei:
            await ws_session(world, f"{base}/static?command=ls&stdout=1", ["v9.channel.k8s.io"])
        assert ei.value.status == 403
        # a command that is not there: runc's complaint on stderr and its exit code
        path = f"{base}/static?" + q(command=["/no/such"], stdout="1", stderr="1")
        s, ws = await ws_session(world, path, ["v5.channel.k8s.io"])
        async with s:
            got = await ws_collect(ws)
        assert b"no such file" in got.get(2, b"").lower()
        assert json.loads(got[3])["reason"] == "NonZeroExitCode"

    run(go())


# ============================================================================ exec over SPDY


@pytest.mark.parametrize("version", ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"])
def test_exec_spdy(world, version):
    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "cat; echo err >&2; exit 5"],
                                               stdin="1", stdout="1", stderr="1")
        st, hdrs, sess = await spdy_connect(world, "POST", path, [version, "channel.k8s.io"])
        assert st == 101 and hdrs["x-stream-protocol-version"] == version
        assert hdrs["upgrade"] == "SPDY/3.1"
        err = await sess.open_stream({"streamType": "error"})
        stdin = await sess.open_stream({"streamType": "stdin"})
        out = await sess.open_stream({"streamType": "stdout"})
        errout = await sess.open_stream({"streamType": "stderr"})
        await asyncio.wait_for(stdin.replied.wait(), 5)
        await sess.ping()
        await stdin.write(b"spdy-input\n" * 1000)
        await stdin.close()
        o, e, status = await asyncio.gather(read_all(out), read_all(errout), read_all(err))
        await sess.close()
        assert o == b"spdy-input\n" * 1000 and e == b"err\n"
        if version == "v4.channel.k8s.io":
            assert json.loads(status)["details"]["causes"] == [{"reason": "ExitCode", "message": "5"}]
        else:
            assert status.startswith(b"command terminated with non-zero exit code")

    run(go())


def test_exec_spdy_tty(world):
    async def go():
        path = f"/exec/{NS}/{POD}/static?" + q(command=["sh", "-c", "read x; stty size; exit 2"],
                                               stdin="1", stdout="1", tty="1")
        st, hdrs, sess = await spdy_connect(world, "POST", path, ["v4.channel.k8s.io"])
        err = await sess.open_stream({"streamType": "error"})
        stdin = await sess.open_stream({"streamType": "stdin"})
        out = await sess.open_stream({"streamType": "stdout"})
        resize = await sess.open_stream({"streamType": "resize"})
        await resize.write(b'{"Width":99,"Height":11}')
        await asyncio.sleep(0.3)
        await stdin.write(b"x\r")
        o, status = await asyncio.gather(read_all(out), read_all(err))
        await sess.close()
        assert b"11 99" in o
        assert json.loads(status)["details"]["causes"][0]["message"] == "2"

    run(go())


# ============================================================================ attach


def test_attach_websocket_and_spdy(world):
    async def go():
        # a live container: output from now on
        path = f"/attach/{NS}/{POD}/app?stdout=1&stderr=1"
        s, ws = await ws_session(world, path, ["v5.channel.k8s.io"])
        async with s:
            seen = b""
            async with asyncio.timeout(10):
                while seen.count(b"tick") < 3:
                    msg = await ws.receive()
                    assert msg.type == aiohttp.WSMsgType.BINARY
                    if msg.data[0] == 1:
                        seen += msg.data[1:]
            await ws.close()
        assert b"first run" not in seen
        # a container that exits: attach ends with it, successfully
        await world.start_container("short", "sleep 1; echo bye; echo bye-err >&2")
        st, hdrs, sess = await spdy_connect(world, "POST", f"/attach/{NS}/{POD}/short?stdout=1&stderr=1",
                                            ["v4.channel.k8s.io"])
        err = await sess.open_stream({"streamType": "error"})
        out = await sess.open_stream({"streamType": "stdout"})
        errout = await sess.open_stream({"streamType": "stderr"})
        o, e, status = await asyncio.gather(read_all(out), read_all(errout), read_all(err))
        await sess.close()
        assert (o, e, status) == (b"bye\n", b"bye-err\n", b'{"metadata":{},"status":"Success"}')

    world.loop.run(go())


# ============================================================================ port-forward


HTTP_GET = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"


def test_portforward_spdy(world):
    async def go():
        st, hdrs, sess = await spdy_connect(world, "POST", f"/portForward/{NS}/{POD}", ["portforward.k8s.io"])
        assert st == 101 and hdrs["x-stream-protocol-version"] == "portforward.k8s.io"

        async def one(port: int, rid: int, send: bytes) -> tuple[bytes, bytes]:
            err = await sess.open_stream({"streamType": "error", "port": str(port), "requestID": str(rid)})
            await err.close()  # kubectl half-closes the error stream at once
            data = await sess.open_stream({"streamType": "data", "port": str(port), "requestID": str(rid)})
            await data.write(send)
            await data.close()
            return await read_all(data), await read_all(err)

        # httpd listens on the pod's 127.0.0.1 only: reached inside the pod's network namespace
        (body, err), (echo, err2), (nothing, refused) = await asyncio.gather(
            one(8080, 0, HTTP_GET), one(9000, 1, b"ping-pong\n"), one(9999, 2, b"x"))
        await sess.close()
        assert b"200 OK" in body and body.endswith(b"hello-pf\n") and err == b""
        assert echo == b"ping-pong\n" and err2 == b""
        assert nothing == b"" and refused.startswith(b"error forwarding port 9999 to pod ")
        assert b"connection refused" in refused

    run(go())


def test_portforward_websocket(world):
    async def go():
        s, ws = await ws_session(world, f"/portForward/{NS}/{POD}?port=9000&port=8080", ["v4.channel.k8s.io"])
        async with s:
            firsts = {}
            while len(firsts) < 4:
                msg = await ws.receive()
                firsts[msg.data[0]] = msg.data[1:]
            assert firsts == {0: struct.pack("<H", 9000), 1: struct.pack("<H", 9000),
                              2: struct.pack("<H", 8080), 3: struct.pack("<H", 8080)}
            await ws.send_bytes(b"\x00echo me\n")
            await ws.send_bytes(b"\x02" + HTTP_GET)
            got: dict[int, bytes] = {}
            async with asyncio.timeout(10):
                while b"echo me\n" not in got.get(0, b"") or b"hello-pf" not in got.get(2, b""):
                    msg = await ws.receive()
                    got[msg.data[0]] = got.get(msg.data[0], b"") + msg.data[1:]
            await ws.close()

    run(go())


def test_portforward_spdy_over_websocket(world):
    """kubectl 1.30+'s tunnel: a SPDY session inside WebSocket binary messages."""

    class Tunnel:
        def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
            self.ws = ws

        async def read(self) -> bytes:
            msg = await self.ws.receive()
            return bytes(msg.data) if msg.type == aiohttp.WSMsgType.BINARY else b""

        async def write(self, data: bytes) -> None:
            await self.ws.send_bytes(data)

        async def close(self) -> None:
            await self.ws.close()

    async def go():
        s, ws = await ws_session(world, f"/portForward/{NS}/{POD}", ["SPDY/3.1+portforward.k8s.io"])
        async with s:
            assert ws.protocol == "SPDY/3.1+portforward.k8s.io"
            sess = spdy.Session(Tunnel(ws), server=False)
            sess.start()
            err = await sess.open_stream({"streamType": "error", "port": "9000", "requestID": "0"})
            data = await sess.open_stream({"streamType": "data", "port": "9000", "requestID": "0"})
            await data.write(b"through the tunnel\n")
            await data.close()
            assert await read_all(data) == b"through the tunnel\n"
            assert await read_all(err) == b""
            await sess.close()

    run(go())


# ============================================================================ through the API server, with kubectl


def _versions() -> list[str]:
    return list(kubectl_binaries()) or ["none"]


def _kubectl(world: World, version: str) -> str:
    bins = kubectl_binaries()
    require(f"kubectl {version}", version in bins)
    return bins[version]


def _env(world: World) -> dict[str, str]:
    env = dict(os.environ, KUBECONFIG=world.cluster.kubeconfig, HOME=world.cluster.home)
    env.pop("KUBECTL_EXTERNAL_DIFF", None)
    return env


def _run(world: World, version: str, *args: str, input: bytes | None = None, timeout: float = 60):
    return subprocess.run([_kubectl(world, version), *args], input=input, capture_output=True,
                          env=_env(world), timeout=timeout)


def _protocols_since(world: World, mark: int) -> list[str]:
    return [ln for ln in world.protolog.lines[mark:] if " over " in ln]


@pytest.mark.parametrize("version", _versions())
def test_kubectl_exec(world, version):
    mark = len(world.protolog.lines)
    r = _run(world, version, "exec", POD, "-c", "static", "--", "sh", "-c", "echo hi; echo err >&2; exit 3")
    assert r.returncode == 3, r.stderr
    assert r.stdout == b"hi\n"
    assert b"err\n" in r.stderr and b"command terminated with exit code 3" in r.stderr
    used = _protocols_since(world, mark)
    minor = int(version.split(".")[1])
    # 1.30+ speak WebSocket v5 by default; older ones SPDY
    assert any(("websocket v5.channel.k8s.io" if minor >= 30 else "spdy v4.channel.k8s.io") in ln for ln in used), used
    # stdin, and a default container (the first one) with kubectl's notice
    r = _run(world, version, "exec", "-i", POD, "-c", "static", "--", "sh", "-c", "tr a-z A-Z", input=b"shout\n")
    assert (r.returncode, r.stdout) == (0, b"SHOUT\n"), r.stderr
    r = _run(world, version, "exec", POD, "-c", "nope", "--", "true")
    assert r.returncode != 0 and b"container nope is not valid for pod web" in r.stderr


@pytest.mark.parametrize("version", _versions())
def test_kubectl_exec_tty(world, version):
    """`kubectl exec -it` on a real terminal: the window size reaches the container, input is echoed."""
    kubectl = _kubectl(world, version)
    term = Terminal([kubectl, "exec", "-it", POD, "-c", "static", "--", "sh", "-c",
                     "echo ready; read x; stty size; echo got:$x"], _env(world), rows=33, cols=111)
    try:
        term.read_until(b"ready")
        term.type(b"typed\r")
        assert term.wait() == 0, term.out
        assert b"33 111" in term.out and b"got:typed" in term.out, term.out
    finally:
        term.close()


def test_kubectl_exec_tty_starts_at_the_clients_size(world):
    """The command's first look at its terminal already sees the client's size: runc creates the
    console at it (a process spec's consoleSize), not at 0x0 until its first resize."""
    for _ in range(3):
        term = Terminal([_kubectl(world, _versions()[-1]), "exec", "-it", POD, "-c", "static", "--",
                         "stty", "size"], _env(world), rows=41, cols=97)
        try:
            assert term.wait() == 0, term.out
            assert b"41 97" in term.out, term.out
        finally:
            term.close()
    # the size came with the process spec runc read (not by a resize after the start), kept private
    cid = world.current["static"]
    sizes = []
    for path in glob.glob(world.rt._c_path(cid, "exec-*.json")):  # this test's, and earlier tests' of the last minute
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(path) as f:
            sizes.append(json.load(f)["consoleSize"])
    assert sizes.count({"height": 41, "width": 97}) == 3, sizes


@pytest.mark.parametrize("version", _versions())
def test_kubectl_logs(world, version):
    r = _run(world, version, "logs", POD, "-c", "static", "--tail=2")
    assert (r.returncode, r.stdout) == (0, b"line 9\nline 10\n"), r.stderr
    r = _run(world, version, "logs", POD, "-c", "app", "--previous")
    assert r.stdout == b"first run\nfirst err\n", r.stderr
    r = _run(world, version, "logs", POD, "-c", "static", "--previous")
    assert r.returncode != 0
    assert b'previous terminated container "static" in pod "web" not found' in r.stderr
    r = _run(world, version, "logs", POD, "-c", "static", "--timestamps", "--tail=1")
    assert re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line 10\n", r.stdout), r.stdout
    # follow: the last line, then new ones as they come; killed once we have seen enough
    p = subprocess.Popen([_kubectl(world, version), "logs", "-f", "--tail=1", POD, "-c", "app"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(world))
    try:
        lines: list[bytes] = []
        deadline = time.monotonic() + 20
        assert p.stdout is not None
        while len(lines) < 4 and time.monotonic() < deadline:
            lines.append(p.stdout.readline())
        assert all(ln.startswith(b"tick ") for ln in lines), lines
        nums = [int(ln.split()[1]) for ln in lines]
        assert nums == list(range(nums[0], nums[0] + 4))
    finally:
        p.kill()
        p.wait(10)


@pytest.mark.parametrize("version", _versions())
def test_kubectl_port_forward(world, version):
    mark = len(world.protolog.lines)
    p = subprocess.Popen([_kubectl(world, version), "port-forward", f"pod/{POD}", ":8080", ":9000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(world))
    try:
        assert p.stdout is not None
        ports = []
        deadline = time.monotonic() + 20
        while len(ports) < 2 and time.monotonic() < deadline:
            line = p.stdout.readline().decode()
            m = re.search(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
            if m:
                ports.append(int(m.group(1)))
        assert len(ports) == 2, p.stderr.read1() if p.stderr else b""
        for _ in range(3):  # several connections over the one session
            with urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/", timeout=10) as r:
                assert r.read() == b"hello-pf\n"
        with socket.create_connection(("127.0.0.1", ports[1]), timeout=10) as s:
            s.sendall(b"echo via kubectl\n")
            assert s.recv(100) == b"echo via kubectl\n"
        assert p.poll() is None
    finally:
        p.kill()
        p.wait(10)
    used = _protocols_since(world, mark)
    minor = int(version.split(".")[1])
    want = "websocket SPDY/3.1+portforward.k8s.io" if minor >= 31 else "spdy portforward.k8s.io"
    assert any(want in ln for ln in used), used


@pytest.mark.parametrize("version", _versions())
def test_kubectl_cp(world, version, tmp_path):
    src = tmp_path / "in.bin"
    data = os.urandom(200_000)
    src.write_bytes(data)
    dest = f"/tmp/cp-{version}.bin"
    r = _run(world, version, "cp", str(src), f"{NS}/{POD}:{dest}", "-c", "static")
    assert r.returncode == 0, r.stderr
    back = tmp_path / "out.bin"
    r = _run(world, version, "cp", f"{NS}/{POD}:{dest}", str(back), "-c", "static")
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == data


@pytest.mark.parametrize("version", _versions())
def test_kubectl_attach(world, version):
    p = subprocess.Popen([_kubectl(world, version), "attach", POD, "-c", "app"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(world))
    try:
        assert p.stdout is not None
        lines = []
        deadline = time.monotonic() + 20
        while len(lines) < 3 and time.monotonic() < deadline:
            ln = p.stdout.readline()
            if ln.startswith(b"tick "):
                lines.append(ln)
        assert len(lines) == 3
    finally:
        p.kill()
        p.wait(10)


def _read_until(p: subprocess.Popen, want: bytes, timeout: float = 20) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    assert p.stdout is not None
    os.set_blocking(p.stdout.fileno(), False)
    while want not in out and time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 0.2)
        if r:
            chunk = p.stdout.read()
            if not chunk and p.poll() is not None:
                break
            out += chunk or b""
    assert want in out, (out, p.stderr.read() if p.stderr else b"")
    return out


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_kubectl_attach_stdin(world, version):
    """`kubectl attach -i` to a `stdin: true` container: input reaches the container's stdin, which stays open
    across clients (no stdinOnce), over SPDY (1.27) and WebSocket v5 (1.33)."""
    minor = version.split(".")[1]
    name = f"stdin-{minor}"
    world.add_pod(name, [{"name": "reader", "stdin": True,
                          "command": ["sh", "-c", "while read l; do echo got:$l; echo err:$l >&2; done; echo stdin-eof"]}])
    mark = len(world.protolog.lines)
    for word in ("one", "two"):  # two clients in turn: the second finds stdin still open
        p = subprocess.Popen([_kubectl(world, version), "attach", "-i", name, "-c", "reader"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(world))
        try:
            time.sleep(0.3)  # give kubectl time to set up its streams, as a user would
            assert p.stdin is not None
            p.stdin.write(word.encode() + b"\n")
            p.stdin.flush()
            out = _read_until(p, f"got:{word}".encode())
            assert b"stdin-eof" not in out
        finally:
            p.kill()
            p.wait(10)
    used = _protocols_since(world, mark)
    assert any(("websocket v5.channel.k8s.io" if minor == "33" else "spdy v4.channel.k8s.io") in ln for ln in used)
    st = world.loop.run(world.rt.container_status(world.others[name][1]["reader"]))
    assert st.state == "running"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_kubectl_attach_tty_stdin_once(world, version):
    """`kubectl attach -it` on a real terminal to a `tty: true, stdin: true, stdinOnce: true` container (what
    `kubectl run -it` makes): the shell's prompt and echo come back, the window size and its changes reach it, and
    `exit` ends the container and the session."""
    minor = version.split(".")[1]
    name = f"tty-{minor}"
    world.add_pod(name, [{"name": "shell", "stdin": True, "stdinOnce": True, "tty": True, "command": ["sh"]}])
    term = Terminal([_kubectl(world, version), "attach", "-it", name, "-c", "shell"], _env(world), rows=33, cols=111)
    try:
        term.read_until(b"If you don't see a command prompt, try pressing enter.")
        term.type(b"\r")
        term.read_until(b"# ")
        term.type(b"stty size; tty\r")
        term.read_until(b"33 111")
        term.read_until(b"/dev/pts/")
        term.resize(40, 120)
        time.sleep(0.5)  # kubectl sends the new size on SIGWINCH
        term.type(b"stty size\r")
        term.read_until(b"40 120")
        term.type(b"exit\r")
        assert term.wait() == 0, term.out
    finally:
        term.close()
    st = world.loop.run(world.rt.wait_exit(world.others[name][1]["shell"], 15))
    assert st.state == "exited" and st.exit_code == 0


# ============================================================================ the official Python client, API errors


def test_python_client_exec_and_portforward(world):
    from kubernetes import client
    from kubernetes.stream import portforward, stream

    api = client.CoreV1Api(world.cluster.api_client())
    out = stream(api.connect_get_namespaced_pod_exec, POD, NS, container="static",
                 command=["sh", "-c", "echo from-python"], stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "from-python\n"
    ws = stream(api.connect_get_namespaced_pod_exec, POD, NS, container="static", command=["sh", "-c", "exit 4"],
                stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=20)
    assert ws.returncode == 4
    # port-forward over WebSocket channels (the API's ?ports= becomes the kubelet's ?port=)
    pf = portforward(api.connect_get_namespaced_pod_portforward, POD, NS, ports="9000")
    try:
        sock = pf.socket(9000)
        sock.settimeout(10)
        sock.sendall(b"python pf\n")
        got = b""
        while not got.endswith(b"\n"):
            got += sock.recv(100)
        assert got == b"python pf\n"
        sock.close()
    finally:
        pf.close()


def test_api_errors(world):
    c = world.cluster
    base = f"/api/v1/namespaces/{NS}/pods/{POD}"
    r = raw_request(c, "GET", f"{base}/log?container=static&tailLines=-1")
    assert r.status == 422 and r.json()["message"] == (
        'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0')
    r = raw_request(c, "GET", f"{base}/log")
    assert r.status == 400 and "a container name must be specified for pod web" in r.json()["message"]
    r = raw_request(c, "GET", f"{base}/log?container=static&previous=true")
    assert (r.status, r.json()["reason"]) == (400, "BadRequest")
    assert r.json()["message"] == 'previous terminated container "static" in pod "web" not found'
    r = raw_request(c, "GET", f"{base}/log?container=static&tailLines=2")
    assert (r.status, r.body, r.headers["Content-Type"]) == (200, b"line 9\nline 10\n", "text/plain")
    r = raw_request(c, "POST", f"{base}/exec?command=ls&stdout=true")
    assert r.status == 400 and r.json()["message"] == (
        "a container name must be specified for pod web, choose one of: [app static]")
    # what the kubelet refuses reaches the client as the kubelet said it
    r = raw_request(c, "POST", f"{base}/exec?command=ls&container=static&stdout=true")
    assert r.status == 400 and r.body.startswith(b"unable to upgrade: missing upgrade headers")
    # a pod the kubelet does not run: its refusal, through the API server, after kubectl's WebSocket->SPDY fallback
    ghost = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ghost", "namespace": NS},
             "spec": {"nodeName": world.node, "automountServiceAccountToken": False,
                      "containers": [{"name": "c", "image": "busybox:e2e"}]}}
    assert raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods", ghost).status == 201
    try:
        r = c.kubectl("exec", "ghost", "--", "true", check=False, timeout=30)
        assert r.returncode == 1 and "pod does not exist" in r.stderr, r.stderr
        r = c.kubectl("logs", "ghost", check=False, timeout=30)
        assert r.returncode == 1 and 'pods "ghost" not found' in r.stderr, r.stderr
    finally:
        raw_request(c, "DELETE", f"/api/v1/namespaces/{NS}/pods/ghost?gracePeriodSeconds=0")
    # a pod on a node that is not there
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lost", "namespace": NS},
           "spec": {"nodeName": "no-such-node", "automountServiceAccountToken": False,
                    "containers": [{"name": "c", "image": "busybox:e2e"}]}}
    assert raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods", pod).status == 201
    try:
        r = raw_request(c, "GET", f"/api/v1/namespaces/{NS}/pods/lost/log")
        assert (r.status, r.json()["message"]) == (404, 'nodes "no-such-node" not found')
    finally:
        raw_request(c, "DELETE", f"/api/v1/namespaces/{NS}/pods/lost?gracePeriodSeconds=0")


def test_runtime_pod_lookup(world):
    """The lookup an agent can use: containers found through the runtime by the pod's UID."""
    pod = {"metadata": {"name": POD, "namespace": NS, "uid": world.uid}, "spec": world.pod["spec"]}
    lookup = runtime_pod_lookup(world.rt, lambda ns, name: pod if (ns, name) == (NS, POD) else None)
    got = world.loop.run(lookup(NS, POD))
    assert got[0] is pod
    assert got[1]["app"] == world.current["app"] and got[1]["static"] == world.current["static"]
    assert got[2] == {"app": world.previous["app"]}
    assert world.loop.run(lookup(NS, "other")) is None
