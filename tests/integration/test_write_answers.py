"""A stored write is never answered 500, and warnings reach the client as upstream sends them.

Upstream (recorded in /work/shared/reference/upstream-observed-safety.md): a ConfigMap with the
unknown field `名前` is created, 201, with `Warning: 299 - "unknown field \\"名前\\""` in UTF-8.
Here the warning could not be encoded once the object was stored, and the client got a 500
for a write that had happened. Failures while building an answer after the store acknowledged
the write are injected into an in-process server (monkeypatched encoders): the client gets
the write's answer, not a 500.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.apiserver import handlers, http1
from pyk8s.apiserver.server import APIServer, ServerConfig
from pyk8s.cluster import component_client
from tests.cluster import Cluster, raw_request

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("write-answers")

CM = "/api/v1/namespaces/default/configmaps"
CM_GVR = ("", "v1", "configmaps")


@pytest.fixture(scope="module")
def srv(cluster: Cluster) -> Cluster:
    return cluster  # (the module's own server: tests/cluster.py)


def _warnings(headers: Any) -> list[str]:
    # http.client reads header bytes as Latin-1: undo that to see the UTF-8 the server sent
    return [w.encode("latin-1").decode("utf-8") for w in headers.get_all("Warning") or []]


def _chunked_post(c: Cluster, path: str, body: bytes) -> tuple[int, Any, bytes]:
    """A POST with a chunked body: served by aiohttp rather than the HTTP/1 fast path."""
    from pyk8s.client.kubeconfig import load_kubeconfig

    ctx: ssl.SSLContext = load_kubeconfig(c.kubeconfig).ssl_client_context()
    u = urlparse(c.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)

    def chunks() -> Iterator[bytes]:
        yield body[:5]
        yield body[5:]

    conn.request("POST", path, body=chunks(), headers={"Content-Type": "application/json"}, encode_chunked=True)
    r = conn.getresponse()
    out = (r.status, r.headers, r.read())
    conn.close()
    return out


def test_non_latin1_unknown_field_is_created_with_a_utf8_warning(srv: Cluster) -> None:
    want = '299 - "unknown field \\"名前\\""'
    r = raw_request(srv, "POST", CM, json.dumps({"metadata": {"name": "u"}, "名前": 1}, ensure_ascii=False).encode())
    assert r.status == 201, r.body
    assert _warnings(r.headers) == [want]
    status, headers, body = _chunked_post(srv, CM, json.dumps({"metadata": {"name": "u2"}, "名前": 1}).encode())
    assert status == 201, body
    assert _warnings(headers) == [want]
    # kubectl shows it as upstream's does
    manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u3"}, "名前": 1},
                          ensure_ascii=False)
    k = srv.kubectl("create", "--validate=warn", "-f", "-", input=manifest)
    assert 'Warning: unknown field "名前"' in k.stderr and "configmap/u3 created" in k.stdout
    for name in ("u", "u2", "u3"):
        assert raw_request(srv, "GET", f"{CM}/{name}").status == 200


def test_a_warning_that_would_split_the_response_is_dropped(srv: Cluster) -> None:
    """A field name with CR LF: upstream drops a warning with control characters; it must not become a header."""
    body = json.dumps({"metadata": {"name": "crlf"}, "a\r\nX-Injected: yes": 1, "b\x00": 2, "ok-field": 3}).encode()
    r = raw_request(srv, "POST", CM, body)
    assert r.status == 201, r.body
    assert "X-Injected" not in r.headers
    assert _warnings(r.headers) == ['299 - "unknown field \\"ok-field\\""']
    status, headers, _ = _chunked_post(srv, CM, body.replace(b"crlf", b"crlf2"))
    assert status == 201 and "X-Injected" not in headers
    for name in ("crlf", "crlf2"):
        assert raw_request(srv, "GET", f"{CM}/{name}").status == 200


# ---- failures injected after the store acknowledged the write -------------------------------------


def _in_process(tmp: Path, body: Any) -> None:
    async def main() -> None:
        server = APIServer(ServerConfig(data_dir=str(tmp), port=0))
        await server.start()
        client = component_client(server, "admin", ["system:masters"], "test/answers", loopback=False)
        try:
            await body(server, client)
        finally:
            await client.close()
            await server.stop()

    asyncio.run(main())


def test_failure_while_encoding_the_answer_after_commit_answers_the_write(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    real_encode = handlers.encode

    def encode(obj: Any, out: Any) -> Any:  # the handler's answer to any write of a "boom" object fails
        if isinstance(obj, dict) and (obj.get("metadata") or {}).get("name", "").startswith("boom"):
            raise RuntimeError("injected: encoding failed after the write was stored")
        return real_encode(obj, out)

    async def body(server: APIServer, client: Any) -> None:
        monkeypatch.setattr(handlers, "encode", encode)
        created = await client.create(CM_GVR, {"metadata": {"name": "boom-1"}, "data": {"a": "1"}}, "default")
        assert created["metadata"]["name"] == "boom-1" and created["data"] == {"a": "1"}
        assert created["metadata"]["resourceVersion"]
        patched = await client.patch(CM_GVR, "boom-1", {"data": {"a": "2"}}, "default")
        assert patched["data"] == {"a": "2"}
        await client.delete(CM_GVR, "boom-1", "default")
        monkeypatch.setattr(handlers, "encode", real_encode)
        assert await client.get_or_none(CM_GVR, "boom-1", "default") is None
        # a failure before anything was stored is still the 500 it is
        monkeypatch.setattr(handlers, "encode", encode)
        with pytest.raises(StatusError) as e:
            await client.get(CM_GVR, "boom-1", "default")
        assert e.value.code == 404  # (not found before any encoding)
        await client.create(CM_GVR, {"metadata": {"name": "boom-2"}}, "default")
        with pytest.raises(StatusError) as e:
            await client.get(CM_GVR, "boom-2", "default")
        assert e.value.code == 500

    _in_process(tmp_path, body)


def test_failure_while_serialising_the_answer_after_commit_answers_the_write(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real_serialize = http1.serialize
    armed = {"left": 0}

    def serialize(resp: Any, keep_alive: bool) -> bytes:  # the next answer's bytes fail once
        if armed["left"] and resp.status < 400:
            armed["left"] -= 1
            raise ValueError("injected: serialising failed after the write was stored")
        return real_serialize(resp, keep_alive)

    async def body(server: APIServer, client: Any) -> None:
        monkeypatch.setattr(http1, "serialize", serialize)
        armed["left"] = 1
        created = await client.create(CM_GVR, {"metadata": {"name": "late"}, "data": {"a": "1"}}, "default")
        assert created["metadata"]["name"] == "late" and armed["left"] == 0
        armed["left"] = 1
        await client.delete(CM_GVR, "late", "default")
        assert armed["left"] == 0
        # the connection goes on serving
        assert await client.get_or_none(CM_GVR, "late", "default") is None
        # a subresource whose answer is a Status: binding
        await client.create(("", "v1", "serviceaccounts"), {"metadata": {"name": "default"}}, "default")
        await client.create(("", "v1", "pods"), {"metadata": {"name": "p"}, "spec": {
            "schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]}}, "default")
        armed["left"] = 1
        st = await client.request("POST", "/api/v1/namespaces/default/pods/p/binding",
                                  {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                                   "target": {"kind": "Node", "name": "n1"}})
        assert st["kind"] == "Status" and st["status"] == "Success" and st["code"] == 201
        assert (await client.get(("", "v1", "pods"), "p", "default"))["spec"]["nodeName"] == "n1"

    _in_process(tmp_path, body)
