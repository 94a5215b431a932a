"""The answer to a request that reaches a shutting-down API server, byte for byte as upstream's
WithRetryAfter filter writes it (k8s.io/apiserver/pkg/server/filters/with_retry_after.go): 429,
`Retry-After: 5`, `Connection: close`, and http.Error's plain-text body."""
from __future__ import annotations

from pyk8s.apiserver.http1 import serialize
from pyk8s.apiserver.shutdown import retry_after_response


def test_shutting_down_answer_on_the_wire() -> None:
    head, _, body = serialize(retry_after_response(), keep_alive=False).partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert lines[0] == "HTTP/1.1 429 Too Many Requests"
    assert headers["retry-after"] == "5"
    assert headers["connection"] == "close"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert body == b"The apiserver is shutting down, please try again later.\n"
    assert headers["content-length"] == str(len(body))
