"""parse_path: what a URL names, the same answer from its memo, and immutable (one instance is shared)."""

from __future__ import annotations

import dataclasses

import pytest

from pyk8s.apiserver import request as R

CASES = {
    "/": {},
    "/healthz": {},
    "/api": {"prefix": "api"},
    "/api/v1": {"prefix": "api", "version": "v1"},
    "/apis/apps": {"prefix": "apis", "group": "apps"},
    "/apis/apps/v1": {"prefix": "apis", "group": "apps", "version": "v1"},
    "/api/v1/pods": {"prefix": "api", "version": "v1", "is_resource": True, "resource": "pods"},
    "/api/v1/namespaces/ns/pods/p/status": {"prefix": "api", "version": "v1", "is_resource": True,
                                            "namespace": "ns", "resource": "pods", "name": "p",
                                            "subresource": "status"},
    "/api/v1/namespaces/ns/pods/p/proxy/a/b": {"prefix": "api", "version": "v1", "is_resource": True,
                                               "namespace": "ns", "resource": "pods", "name": "p",
                                               "subresource": "proxy", "parts": ("a", "b")},
    "/api/v1/namespaces/ns": {"prefix": "api", "version": "v1", "is_resource": True, "resource": "namespaces",
                              "name": "ns"},
    "/api/v1/namespaces/ns/finalize": {"prefix": "api", "version": "v1", "is_resource": True,
                                       "resource": "namespaces", "name": "ns", "subresource": "finalize"},
    "/api/v1/watch": {"prefix": "api", "version": "v1", "legacy_watch": True},
    "/apis/apps/v1/watch/namespaces/ns/deployments": {"prefix": "apis", "group": "apps", "version": "v1",
                                                      "is_resource": True, "legacy_watch": True,
                                                      "namespace": "ns", "resource": "deployments"},
}


@pytest.mark.parametrize("path", sorted(CASES))
def test_paths(path: str) -> None:
    R._PARSED.clear()
    want = R.RequestInfo(path=path, **CASES[path])
    assert R._parse(path) == want
    first = R.parse_path(path)
    assert first == want and R.parse_path(path) is first  # remembered, and the same answer
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.name = "x"  # type: ignore[misc]


def test_memo_stays_bounded() -> None:
    R._PARSED.clear()
    for i in range(5000):
        R.parse_path(f"/api/v1/namespaces/n/pods/p{i}")
    R.parse_path("/api/v1/" + "x" * 600)
    assert len(R._PARSED) <= 4096 and "/api/v1/" + "x" * 600 not in R._PARSED
