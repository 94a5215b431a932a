"""Requests without credentials (`--anonymous-auth`, upstream's anonymous authenticator).

Answers are pinned to ../shared/reference/upstream-observed-safety.md: anonymous GET /api is
403 "forbidden: User \"system:anonymous\" cannot get path \"/api\"" with details {}, anonymous
GET /api/v1/namespaces is 403 naming the resource, /version is 200. The bootstrap policy opens
/healthz, /livez, /readyz and /version to everyone (system:public-info-viewer) and nothing else.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.cluster import Cluster

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("anonymous-auth")


def anonymous(cluster: Cluster, path: str, headers: dict[str, str] | None = None,
              method: str = "GET") -> tuple[int, Any]:
    """A request with no client certificate (and no token unless headers bring one)."""
    ctx = ssl.create_default_context(cafile=os.path.join(cluster.data_dir, "pki", "ca.crt"))
    u = urlparse(cluster.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        try:
            return r.status, json.loads(body)
        except ValueError:
            return r.status, body.decode()
    finally:
        conn.close()


def _forbidden_path(path: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'forbidden: User "system:anonymous" cannot get path "{path}"', "reason": "Forbidden",
            "details": {}, "code": 403}


@pytest.mark.parametrize("path,beneath", [("/version", "/version/openapi"), ("/version/", "/versions"),
                                          ("/healthz", "/healthz/ping"), ("/livez", "/livez/ping"),
                                          ("/readyz", "/readyz/informer-sync")])
def test_anonymous_reaches_public_info_only(cluster, path, beneath):
    """The exact paths of system:public-info-viewer, not what lies beneath them."""
    status, body = anonymous(cluster, path)
    assert status == 200, body
    if path.startswith("/version"):
        assert body["gitVersion"].startswith("v1.33.")
    else:
        assert body == "ok"
    assert anonymous(cluster, beneath) == (403, _forbidden_path(beneath))


@pytest.mark.parametrize("path", ["/api", "/apis", "/openapi/v2", "/openapi/v3", "/healthz/ping", "/readyz/ping",
                                  "/", "/metrics", "/.well-known/openid-configuration"])
def test_anonymous_is_forbidden_other_paths(cluster, path):
    assert anonymous(cluster, path) == (403, _forbidden_path(path.rstrip("/") or "/"))


RESOURCES = [
    ("/api/v1/namespaces",
     'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the '
     "cluster scope", {"kind": "namespaces"}),
    ("/api/v1/namespaces/default/secrets",
     'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" in the namespace '
     '"default"', {"kind": "secrets"}),
    ("/api/v1/namespaces/kube-system",
     'namespaces "kube-system" is forbidden: User "system:anonymous" cannot get resource "namespaces" in API group "" '
     'in the namespace "kube-system"', {"name": "kube-system", "kind": "namespaces"}),
    ("/apis/apps/v1/deployments?watch=1",
     'deployments.apps is forbidden: User "system:anonymous" cannot watch resource "deployments" in API group "apps" '
     "at the cluster scope", {"group": "apps", "kind": "deployments"}),
]


@pytest.mark.parametrize("path,message,details", RESOURCES, ids=["list-ns", "secrets", "get-ns", "watch"])
def test_anonymous_resource_requests_are_forbidden(cluster, path, message, details):
    status, body = anonymous(cluster, path)
    assert (status, body["reason"], body["message"], body["details"]) == (403, "Forbidden", message, details)


def test_anonymous_cannot_review_itself_or_write(cluster):
    status, body = anonymous(cluster, "/api/v1/namespaces/default/configmaps", method="POST",
                             headers={"Content-Type": "application/json"})
    assert status == 403
    assert body["message"] == ('configmaps is forbidden: User "system:anonymous" cannot create resource "configmaps" '
                               'in API group "" in the namespace "default"')


@pytest.mark.parametrize("path,anonymous_status", [("/healthz", 200), ("/version", 200), ("/api/v1/namespaces", 403),
                                                   ("/api", 403)])
def test_bad_credentials_are_401_not_anonymous(cluster, path, anonymous_status):
    """A credential that fails is not the absence of one: 401 even where anonymous would pass."""
    status, body = anonymous(cluster, path, {"Authorization": "Bearer not-a-token"})
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    # no bearer token at all (upstream's bearer authenticator passes these by): anonymous
    for auth in (None, "Bearer ", "Basic YWRtaW46YWRtaW4="):
        assert anonymous(cluster, path, {"Authorization": auth} if auth else None)[0] == anonymous_status, auth


def test_anonymous_auth_false_is_401_everywhere(tmp_path):
    """With --anonymous-auth=false no path answers a request without credentials (API workers too)."""
    c = Cluster(str(tmp_path / "data"), ["--anonymous-auth=false"], datastore="sqlite-workers").start()
    try:
        for path in ("/version", "/healthz", "/livez", "/readyz", "/api", "/api/v1/namespaces", "/openapi/v2"):
            status, body = anonymous(c, path)
            assert (status, body["reason"]) == (401, "Unauthorized"), path
        assert c.kubectl("get", "--raw", "/readyz").stdout == "ok"  # the admin still is
    finally:
        c.stop()
