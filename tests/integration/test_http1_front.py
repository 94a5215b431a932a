"""The API server's HTTP/1.1 front (apiserver/http1.py), byte by byte over real TLS connections.

Plain requests are answered by our own protocol; watches, chunked bodies, malformed or
oversized requests are handed to aiohttp with what was read so far. These tests pin the
wire behaviour of both paths and of the hand-over on a connection already in use.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from urllib.parse import urlparse

import pytest

from tests.cluster import Cluster, raw_request

CM = "/api/v1/namespaces/default/configmaps"


class Conn:
    """One raw TLS connection with the admin client certificate."""

    def __init__(self, c: Cluster) -> None:
        from pyk8s.client.kubeconfig import load_kubeconfig

        u = urlparse(c.url)
        ctx = load_kubeconfig(c.kubeconfig).ssl_client_context()
        raw = socket.create_connection((u.hostname, u.port), timeout=10)
        self.s = ctx.wrap_socket(raw, server_hostname=u.hostname)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def _fill(self) -> bool:
        chunk = self.s.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        """One whole response (Content-Length or chunked framing)."""
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), "connection closed before a response"
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        if headers.get("transfer-encoding") == "chunked":
            return status, headers, b""  # the caller reads the stream with chunk()
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            assert self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def chunk(self) -> bytes:
        while b"\r\n" not in self.buf:
            assert self._fill()
        size, rest = self.buf.split(b"\r\n", 1)
        n = int(size, 16)
        while len(rest) < n + 2:
            assert self._fill()
            size, rest = self.buf.split(b"\r\n", 1)
        self.buf = rest[n + 2:]
        return rest[:n]

    def closed(self) -> bool:
        try:
            return not self._fill()
        except (ConnectionError, ssl.SSLError):
            return True

    def close(self) -> None:
        self.s.close()


def req(method: str, path: str, body: bytes = b"", extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n{extra}"
    if body or method in ("POST", "PUT", "PATCH"):
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def cm(name: str, labels: dict[str, str] | None = None) -> bytes:
    return json.dumps({"metadata": {"name": name, "labels": labels or {}}, "data": {"k": "v"}}).encode()


@pytest.fixture
def conn(cluster: Cluster):
    c = Conn(cluster)
    yield c
    c.close()


def test_pipelined_requests_are_answered_in_order(conn: Conn) -> None:
    conn.send(req("POST", CM, cm("pipe-a")) + req("GET", f"{CM}/pipe-a") + req("DELETE", f"{CM}/pipe-a")
              + req("GET", f"{CM}/pipe-a"))
    codes = [conn.response()[0] for _ in range(4)]
    assert codes == [201, 200, 200, 404]


def test_request_in_small_pieces(conn: Conn) -> None:
    data = req("POST", CM, cm("pieces"))
    for i in range(0, len(data), 7):
        conn.send(data[i:i + 7])
        time.sleep(0.001)
    status, headers, body = conn.response()
    assert status == 201, body
    assert json.loads(body)["metadata"]["name"] == "pieces"
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(body))
    assert "GMT" in headers["date"]


def test_connection_close_is_honoured(conn: Conn) -> None:
    conn.send(req("GET", "/version", extra="Connection: close\r\n"))
    status, headers, _ = conn.response()
    assert status == 200 and headers.get("connection") == "close"
    assert conn.closed()


def test_query_decoding_matches_aiohttp(cluster: Cluster, conn: Conn) -> None:
    for name, app in (("q-a", "a"), ("q-b", "b"), ("q-c", "c")):
        assert raw_request(cluster, "POST", CM, {"metadata": {"name": name, "labels": {"app": app}}}).status == 201
    # '+' is a space and %XX is decoded, as Go's url.Values.Encode writes selectors
    conn.send(req("GET", f"{CM}?labelSelector=app+in+%28a%2Cb%29"))
    status, _, body = conn.response()
    assert status == 200
    assert sorted(i["metadata"]["name"] for i in json.loads(body)["items"]) == ["q-a", "q-b"]


def test_watch_after_plain_requests_on_one_connection(cluster: Cluster, conn: Conn) -> None:
    conn.send(req("GET", CM))
    status, _, body = conn.response()
    assert status == 200
    rv = json.loads(body)["metadata"]["resourceVersion"]
    conn.send(req("GET", f"{CM}?watch=1&resourceVersion={rv}&timeoutSeconds=5"))
    status, headers, _ = conn.response()
    assert status == 200 and headers.get("transfer-encoding") == "chunked"
    assert raw_request(cluster, "POST", CM, {"metadata": {"name": "watched"}}).status == 201
    event = json.loads(conn.chunk())
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "watched"
    # the watch ends at its timeout; aiohttp keeps serving the connection afterwards
    while conn.chunk():
        pass
    conn.send(req("GET", f"{CM}/watched"))
    assert conn.response()[0] == 200


def test_chunked_body_is_handed_to_aiohttp(conn: Conn) -> None:
    body = cm("chunked")
    conn.send(f"POST {CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Transfer-Encoding: chunked\r\n\r\n".encode()
              + b"%x\r\n" % len(body[:10]) + body[:10] + b"\r\n"
              + b"%x\r\n" % len(body[10:]) + body[10:] + b"\r\n0\r\n\r\n")
    status, _, reply = conn.response()
    assert status == 201, reply


def test_malformed_request_gets_aiohttp_400(conn: Conn) -> None:
    conn.send(b"GET /version HTTP/1.1\r\nHost x\r\n\r\n")
    status, _, _ = conn.response()
    assert status == 400


def test_oversized_body_gets_413_and_nothing_is_stored(cluster: Cluster, conn: Conn) -> None:
    big = json.dumps({"metadata": {"name": "huge"}, "data": {"k": "x" * (5 * 1024 * 1024)}}).encode()
    try:
        conn.send(req("POST", CM, big))
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass  # answered and closed before the whole body was read
    status, _, body = conn.response()
    assert status == 413
    assert json.loads(body)["message"] == "Request entity too large: limit is 3145728"
    assert raw_request(cluster, "GET", f"{CM}/huge").status == 404


def test_oversized_chunked_body_gets_413(cluster: Cluster, conn: Conn) -> None:
    big = json.dumps({"metadata": {"name": "huge2"}, "data": {"k": "x" * (5 * 1024 * 1024)}}).encode()
    try:
        conn.send(f"POST {CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode() + b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass
    status, _, body = conn.response()
    assert status == 413
    assert json.loads(body)["reason"] == "RequestEntityTooLarge"
    assert raw_request(cluster, "GET", f"{CM}/huge2").status == 404


def test_many_connections_and_keep_alive(cluster: Cluster) -> None:
    conns = [Conn(cluster) for _ in range(20)]
    try:
        for round_ in range(3):
            for i, c in enumerate(conns):
                c.send(req("POST", CM, cm(f"ka-{round_}-{i}")))
            assert all(c.response()[0] == 201 for c in conns)
    finally:
        for c in conns:
            c.close()
    names = {i["metadata"]["name"] for i in raw_request(cluster, "GET", CM).json()["items"]}
    assert {f"ka-{r}-{i}" for r in range(3) for i in range(20)} <= names
