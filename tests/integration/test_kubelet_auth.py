"""The kubelet port's delegated authn/authz (pyk8s.kubelet.auth) against a real API server: TokenReview and
SubjectAccessReview answers and how long they are believed (tokens 2 min, allowed 5 min, denied 30 s)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from pyk8s.client import Client
from pyk8s.kubelet.auth import KubeletAuth
from tests.cluster import raw_request

pytestmark = [pytest.mark.xdist_group("kubelet-auth"), pytest.mark.timeout(120)]

NODE = "auth-node"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _api(cluster: Any, method: str, path: str, body: Any = None) -> Any:
    r = raw_request(cluster, method, path, body)
    assert r.status < 400, (method, path, r.status, r.body[:300])
    return r.json()


def _token(cluster: Any, sa: str) -> str:
    return str(_api(cluster, "POST", f"/api/v1/namespaces/default/serviceaccounts/{sa}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})["status"]["token"])


def _grant(cluster: Any, sa: str, sub: str) -> None:
    _api(cluster, "POST", f"{RBAC}/clusterroles", {"metadata": {"name": f"auth-{sa}"}, "rules": [
        {"apiGroups": [""], "resources": [sub], "verbs": ["get"]}]})
    _api(cluster, "POST", f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": f"auth-{sa}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"auth-{sa}"},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "default"}]})


def _status(resp: Any) -> int:
    return 200 if resp is None else int(resp.status)


def _check(auth: KubeletAuth, path: str, token: str | None = None, cert: dict[str, Any] | None = None) -> Any:
    req = make_mocked_request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
    return auth.check(req, cert, NODE)


def test_reviews_and_their_cache_times(cluster):
    for sa in ("late", "revoked", "doomed"):
        _api(cluster, "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": sa}})
    _grant(cluster, "revoked", "nodes/stats")
    _grant(cluster, "doomed", "nodes/stats")
    late, revoked, doomed = (_token(cluster, sa) for sa in ("late", "revoked", "doomed"))

    async def main() -> None:
        clock = Clock()
        client = Client.from_kubeconfig(cluster.kubeconfig)
        try:
            auth = KubeletAuth(client, clock=clock)
            # denied: believed 30 s, even once the grant exists
            assert _status(await _check(auth, "/stats/summary", late)) == 403
            _grant(cluster, "late", "nodes/stats")
            clock.now += 29
            assert _status(await _check(auth, "/stats/summary", late)) == 403
            clock.now += 2
            assert _status(await _check(auth, "/stats/summary", late)) == 200
            # allowed: believed 5 minutes after the grant is gone
            assert _status(await _check(auth, "/stats/summary", revoked)) == 200
            _api(cluster, "DELETE", f"{RBAC}/clusterrolebindings/auth-revoked")
            clock.now += 299
            assert _status(await _check(auth, "/stats/summary", revoked)) == 200
            # (the token review, 2 minutes, expired meanwhile and is asked again: the account still exists)
            clock.now += 2
            assert _status(await _check(auth, "/stats/summary", revoked)) == 403
            # a token: believed 2 minutes after its service account is deleted, then 401
            concurrent = await asyncio.gather(*(_check(auth, "/stats/summary", doomed) for _ in range(10)))
            assert [_status(r) for r in concurrent] == [200] * 10
            _api(cluster, "DELETE", "/api/v1/namespaces/default/serviceaccounts/doomed")
            clock.now += 119
            assert _status(await _check(auth, "/stats/summary", doomed)) == 200
            clock.now += 2 + 300  # past the token's and the decision's time
            assert _status(await _check(auth, "/stats/summary", doomed)) == 401
            # the subresource is part of the question: stats does not open metrics
            assert _status(await _check(auth, "/metrics/resource", late)) == 403
        finally:
            await client.close()

    asyncio.run(main())


def test_masters_pass_without_asking_and_no_credentials_never():
    async def main() -> None:
        auth = KubeletAuth(client=None)  # no API server at all: nothing may need one
        masters = {"subject": ((("commonName", "kube-apiserver-kubelet-client"),),
                               (("organizationName", "system:masters"),))}
        assert await _check(auth, "/exec/ns/p/c", cert=masters) is None
        refused = await _check(auth, "/stats/summary")
        assert (refused.status, refused.text) == (401, "Unauthorized\n")
        refused = await _check(auth, "/stats/summary", token="x")  # the review fails: not authenticated
        assert refused.status == 401

    asyncio.run(main())
