"""Extender configuration (validated as upstream), a non-ignorable extender's failure, and the preempt verb."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pyk8s.scheduler.config import parse_config
from pyk8s.scheduler.extender_cycle import interested_extenders, schedule_with_extenders
from pyk8s.scheduler.scheduler import Scheduler

from ._fixtures import node, pod

API = "kubescheduler.config.k8s.io/v1"


@pytest.mark.parametrize("extenders,error", [
    ([{"filterVerb": "f"}], "extenders[0].urlPrefix: Required value"),
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": -1}],
     "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
     "only one extender can implement bind, found 2"),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "a/b"}, {"name": "a/b"}]}],
     'extenders[0].managedResources[1].name: Invalid value: "a/b": duplicate extender managed resource name'),
    ([{"urlPrefix": "http://x", "httpTimeout": "soon"}], 'httpTimeout: invalid duration "soon"'),
])
def test_invalid_extender_config(extenders: list, error: str) -> None:
    with pytest.raises(ValueError, match=None) as e:
        parse_config({"apiVersion": API, "extenders": extenders})
    assert error in str(e.value)


def test_ignored_by_scheduler_resources_are_not_checked_by_node_resources_fit() -> None:
    cfg = parse_config({"apiVersion": API, "extenders": [
        {"urlPrefix": "http://x", "managedResources": [{"name": "example.com/w", "ignoredByScheduler": True}]}]})
    assert cfg.extenders[0].http_timeout == 5.0
    assert "example.com/w" in cfg.profiles[0].plugin_args["NodeResourcesFit"]["ignoredResources"]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_failing_non_ignorable_extender_fails_the_cycle_with_its_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/ext"
    s = Scheduler({"apiVersion": API, "extenders": [
        {"urlPrefix": url, "filterVerb": "filter", "managedResources": [{"name": "example.com/w"}]}]})
    s.on_node_add(node("n1", extra={"example.com/w": "1"}))
    p = pod("w", requests={"example.com/w": "1"})
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/w": "1"}
    s.on_pod_add(p)
    s.on_pod_add(pod("plain"))

    async def run() -> list:
        out = []
        for _ in range(2):
            qpi = s.queue.pop()
            exts = interested_extenders(s, qpi)
            out.append((qpi.pod_info.name, len(exts),
                        await schedule_with_extenders(s, qpi, exts) if exts else s.schedule(qpi)))
        for e in s.extenders:
            await e.close()
        return out

    got = {name: (n, d) for name, n, d in asyncio.run(run())}
    assert got["plain"][0] == 0 and got["plain"][1].node == "n1"
    d = got["w"][1]
    assert d.node is None and d.reason == "SchedulerError"
    assert d.message.startswith(f'Post "{url}/filter": '), d.message


class _PreemptExtender:
    """An extender serving only preemptVerb that vetoes node n2; the args it got are kept."""

    def __init__(self) -> None:
        self.args: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.args.append(args)
                keep = {n: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                            "NumPDBViolations": v["NumPDBViolations"]}
                        for n, v in (args["NodeNameToVictims"] or {}).items() if n != "n2"}
                body = json.dumps({"NodeNameToMetaVictims": keep}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ext"


def _widget_pod(name: str, priority: int, node_name: str = "") -> dict:
    p = pod(name, requests={"example.com/w": "1"}, node_name=node_name, priority=priority)
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/w": "1"}
    return p


def test_the_preempt_verb_narrows_preemption_candidates() -> None:
    """Without the extender the victim of priority 0 on n2 would go (the lower-priority victim wins);
    the extender vetoes n2, so n1 is nominated with its own victim."""
    ext = _PreemptExtender()
    s = Scheduler({"apiVersion": API, "extenders": [
        {"urlPrefix": ext.url, "preemptVerb": "preempt", "managedResources": [{"name": "example.com/w"}]}]})
    for n in ("n1", "n2"):
        s.on_node_add(node(n, extra={"example.com/w": "1"}))
    s.on_pod_add(_widget_pod("low-1", 10, "n1"))
    s.on_pod_add(_widget_pod("low-2", 0, "n2"))
    s.on_pod_add(_widget_pod("high", 1000))

    async def run() -> object:
        qpi = s.queue.pop()
        d = await schedule_with_extenders(s, qpi, interested_extenders(s, qpi))
        for e in s.extenders:
            await e.close()
        return d

    try:
        d = asyncio.run(run())
    finally:
        ext.server.shutdown()
    assert d.node is None and d.nominated_node == "n1" and [v.name for v in d.victims] == ["low-1"]
    sent = ext.args[0]
    assert sent["NodeNameToMetaVictims"] is None and sent["Pod"]["metadata"]["name"] == "high"
    assert {n: [p["metadata"]["name"] for p in v["Pods"]] for n, v in sent["NodeNameToVictims"].items()} == {
        "n1": ["low-1"], "n2": ["low-2"]}


def _https_filter_extender(tmp_path: Any) -> tuple[ThreadingHTTPServer, str, str]:
    """An HTTPS extender whose filter keeps every node; returns (server, url, its CA as caData)."""
    import base64
    import ssl

    from pyk8s.pki import self_signed_serving_cert

    chain, key = self_signed_serving_cert("127.0.0.1", ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(chain)
    (tmp_path / "tls.key").write_bytes(key)
    ca = b"-----BEGIN CERTIFICATE-----" + chain.split(b"-----BEGIN CERTIFICATE-----")[2]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:
            args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"Nodes": args["Nodes"], "FailedNodes": {}, "Error": ""}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"https://127.0.0.1:{srv.server_address[1]}/ext", base64.b64encode(ca).decode()


@pytest.mark.parametrize("tls,ok", [({"caData": "CA"}, True), ({"insecure": True}, True), ({}, False),
                                    ({"caData": "CA", "serverName": "wrong.example"}, False)])
def test_https_extender_verifies_its_certificate_unless_insecure(tmp_path: Any, tls: dict, ok: bool) -> None:
    srv, url, ca = _https_filter_extender(tmp_path)
    tls = {k: (ca if v == "CA" else v) for k, v in tls.items()}
    s = Scheduler({"apiVersion": API, "extenders": [
        {"urlPrefix": url, "filterVerb": "filter", "enableHTTPS": True, "tlsConfig": tls,
         "managedResources": [{"name": "example.com/w"}]}]})
    s.on_node_add(node("n1", extra={"example.com/w": "1"}))
    s.on_pod_add(_widget_pod("w", 0))

    async def run() -> Any:
        qpi = s.queue.pop()
        d = await schedule_with_extenders(s, qpi, interested_extenders(s, qpi))
        for e in s.extenders:
            await e.close()
        return d

    try:
        d = asyncio.run(run())
    finally:
        srv.shutdown()
    if ok:
        assert d.node == "n1"
    else:  # a certificate nobody vouches for: the cycle fails, as any non-ignorable extender error
        assert d.node is None and d.reason == "SchedulerError" and "certificate verify failed" in d.message, d.message
