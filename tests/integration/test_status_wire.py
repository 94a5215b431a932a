"""JSON answers byte for byte as kube-apiserver v1.33 writes them.

Upstream encodes every JSON answer with Go's json.Encoder: a trailing "\\n", HTML
characters escaped inside strings, and Status fields in the struct's order (kind,
apiVersion, metadata, status, message, reason, details, code), empty ones omitted except
metadata. Clients and conformance-style tests compare 404 and 409 bodies exactly, so we
check both HTTP paths: our own HTTP/1 front and aiohttp (a chunked body is handed to it).
"""

from __future__ import annotations

import json

import pytest

from tests.cluster import Cluster
from tests.integration.test_http1_front import CM, Conn, req

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("status-wire")


def _cm(name: str, data: dict[str, str] | None = None) -> bytes:
    return json.dumps({"metadata": {"name": name}, "data": data or {"k": "v"}}).encode()


def _chunked_post(path: str, body: bytes) -> bytes:
    """A POST with a chunked body: our HTTP/1 front hands such a connection to aiohttp."""
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode() + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


NOT_FOUND = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
             b'"message":"configmaps \\"wire-nope\\" not found","reason":"NotFound",'
             b'"details":{"name":"wire-nope","kind":"configmaps"},"code":404}\n')
ALREADY_EXISTS = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                  b'"message":"configmaps \\"wire-dup\\" already exists","reason":"AlreadyExists",'
                  b'"details":{"name":"wire-dup","kind":"configmaps"},"code":409}\n')
NO_RESOURCE = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
               b'"message":"the server could not find the requested resource","reason":"NotFound",'
               b'"details":{},"code":404}\n')


def test_not_found_and_already_exists_bodies_are_upstreams_bytes(cluster: Cluster) -> None:
    """Our own HTTP/1 front: 404, 409 and the generic 404 as upstream's serializer writes them."""
    conn = Conn(cluster)
    try:
        conn.send(req("GET", f"{CM}/wire-nope"))
        status, headers, body = conn.response()
        assert (status, body) == (404, NOT_FOUND)
        assert headers["content-type"] == "application/json"
        conn.send(req("POST", CM, _cm("wire-dup")) + req("POST", CM, _cm("wire-dup")))
        assert conn.response()[0] == 201
        assert conn.response()[:3:2] == (409, ALREADY_EXISTS)
        conn.send(req("GET", "/api/v1/namespaces/default/nosuchthings"))
        assert conn.response()[:3:2] == (404, NO_RESOURCE)
    finally:
        conn.close()


def test_aiohttp_path_writes_the_same_bytes(cluster: Cluster) -> None:
    """A chunked body moves the connection to aiohttp: the 409 and the 404 after it are the same bytes."""
    conn = Conn(cluster)
    try:
        conn.send(_chunked_post(CM, _cm("wire-dup2")))
        assert conn.response()[0] == 201
        conn.send(_chunked_post(CM, _cm("wire-dup2")))
        status, _, body = conn.response()
        assert status == 409
        assert body == ALREADY_EXISTS.replace(b"wire-dup", b"wire-dup2")
        conn.send(req("GET", f"{CM}/wire-nope"))
        assert conn.response()[:3:2] == (404, NOT_FOUND)
    finally:
        conn.close()


def test_objects_lists_and_tables_end_with_a_newline(cluster: Cluster) -> None:
    conn = Conn(cluster)
    try:
        conn.send(req("POST", CM, _cm("wire-obj")))
        status, _, created = conn.response()
        assert status == 201 and created.endswith(b"}\n") and created.count(b"\n") == 1
        for path, accept in ((f"{CM}/wire-obj", "application/json"), (CM, "application/json"),
                             (CM, "application/json;as=Table;v=v1;g=meta.k8s.io"),
                             ("/api/v1/namespaces/default/pods?limit=1", "application/json"),
                             ("/api", "application/json"), ("/apis/apps/v1", "application/json")):
            conn.send(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n".encode())
            status, _, body = conn.response()
            assert status == 200, (path, body)
            assert body.endswith(b"}\n") and body.count(b"\n") == 1, (path, body[-40:])
            json.loads(body)
    finally:
        conn.close()


def test_html_characters_are_escaped_as_go_does(cluster: Cluster) -> None:
    """Go's json.Encoder writes <, >, & and U+2028 as \\u escapes; a client comparing bytes sees the same."""
    conn = Conn(cluster)
    try:
        value = "<b>&amp;\u2028"
        conn.send(req("POST", CM, _cm("wire-html", {"h": value})))
        status, _, created = conn.response()
        assert status == 201
        assert b'"h":"\\u003cb\\u003e\\u0026amp;\\u2028"' in created
        conn.send(req("GET", CM))
        status, _, listed = conn.response()
        assert b'"h":"\\u003cb\\u003e\\u0026amp;\\u2028"' in listed
        assert json.loads(listed)["items"][[i["metadata"]["name"] for i in json.loads(listed)["items"]]
                                           .index("wire-html")]["data"]["h"] == value
        conn.send(req("GET", f"{CM}/wire-<x>"))
        status, _, body = conn.response()
        assert status == 404 and b'\\"wire-\\u003cx\\u003e\\" not found' in body
    finally:
        conn.close()


def test_python_client_reads_the_escaped_answers(cluster: Cluster) -> None:
    from kubernetes import client

    api = client.CoreV1Api(cluster.api_client())
    api.create_namespaced_config_map("default", {"metadata": {"name": "wire-client"}, "data": {"x": "a<b>&c"}})
    assert api.read_namespaced_config_map("wire-client", "default").data == {"x": "a<b>&c"}
    try:
        api.read_namespaced_config_map("wire-client-none", "default")
    except client.ApiException as e:
        assert e.status == 404 and e.body.endswith("}\n")
        assert json.loads(e.body)["details"] == {"name": "wire-client-none", "kind": "configmaps"}
    else:
        raise AssertionError("no 404")


def test_too_large_resource_version_is_upstreams_504(cluster: Cluster) -> None:
    """storage.NewTooLargeResourceVersionError: "Timeout: " prefix and the ResourceVersionTooLarge cause
    that client-go's reflector looks for (IsTooLargeResourceVersionError) before it falls back."""
    conn = Conn(cluster)
    try:
        conn.send(req("GET", f"{CM}?resourceVersion=99999999"))
        status, _, body = conn.response()
    finally:
        conn.close()
    assert status == 504
    got = json.loads(body)
    current = got["message"].rsplit(" ", 1)[1]
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"Timeout: Too large resource version: 99999999, current: ' + current.encode()
                    + b'","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge",'
                    b'"message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}\n')
