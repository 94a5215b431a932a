"""Bootstrap tokens end to end against a real `pyk8s server`: the authenticator, the tokencleaner and the
bootstrapsigner (its JWS checked here with an independent HMAC), and what a token may not do."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, hmac

from pyk8s import bootstraptoken as bt
from pyk8s.client.kubeconfig import write_kubeconfig
from tests.cluster import Cluster, raw_request
from tests.ha_helper import wait_for

pytestmark = pytest.mark.xdist_group("bootstrap_tokens")

SECRETS = "/api/v1/namespaces/kube-system/secrets"
CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info"


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def token_secret(tid: str, secret: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": bt.SECRET_TYPE,
            "metadata": {"name": f"bootstrap-token-{tid}", "namespace": "kube-system"},
            "data": {k: b64(v) for k, v in {"token-id": tid, "token-secret": secret, **data}.items()}}


def create(c: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    r = raw_request(c, "POST", SECRETS, obj)
    assert r.status == 201, r.body[:400]
    return r.json()


def whoami(c: Cluster, token: str) -> tuple[int, dict[str, Any]]:
    r = raw_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                    {"Authorization": f"Bearer {token}"}, auth=False)
    return r.status, r.json()


def until(what: Callable[[], Any], timeout: float = 20.0) -> Any:
    return wait_for(what, timeout, "condition", interval=0.05)


def assert_unauthorized(c: Cluster, token: str) -> None:
    status, body = whoami(c, token)
    assert status == 401, body
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["message"] == "Unauthorized"


def test_valid_token_authenticates_with_its_groups(cluster: Cluster) -> None:
    create(cluster, token_secret("abcdef", "0123456789abcdef", **{
        "usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:worker,"
                                                                         "system:bootstrappers:kubeadm:default-node-token"}))
    status, body = whoami(cluster, "abcdef.0123456789abcdef")
    assert status == 201, body
    info = body["status"]["userInfo"]
    assert info["username"] == "system:bootstrap:abcdef"
    assert info["groups"] == ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token",
                              "system:bootstrappers:worker", "system:authenticated"]


def test_wrong_secret_and_malformed_tokens_are_401(cluster: Cluster) -> None:
    create(cluster, token_secret("wrongs", "0123456789abcdef", **{"usage-bootstrap-authentication": "true"}))
    assert whoami(cluster, "wrongs.0123456789abcdef")[0] == 201
    assert_unauthorized(cluster, "wrongs.0123456789abcdee")  # one character off
    assert_unauthorized(cluster, "wrongs.0123456789ABCDEF")  # not the token alphabet
    assert_unauthorized(cluster, "nosuch.0123456789abcdef")  # no Secret


def test_usage_type_id_and_groups_are_checked(cluster: Cluster) -> None:
    create(cluster, token_secret("nousag", "0123456789abcdef", **{"usage-bootstrap-signing": "true"}))
    assert_unauthorized(cluster, "nousag.0123456789abcdef")
    create(cluster, token_secret("falses", "0123456789abcdef", **{"usage-bootstrap-authentication": "false"}))
    assert_unauthorized(cluster, "falses.0123456789abcdef")
    opaque = token_secret("opaque", "0123456789abcdef", **{"usage-bootstrap-authentication": "true"})
    create(cluster, {**opaque, "type": "Opaque"})
    assert_unauthorized(cluster, "opaque.0123456789abcdef")
    # a token-id that differs from the Secret's name
    create(cluster, {**token_secret("idmism", "0123456789abcdef", **{"usage-bootstrap-authentication": "true"}),
                     "metadata": {"name": "bootstrap-token-other1", "namespace": "kube-system"}})
    assert_unauthorized(cluster, "other1.0123456789abcdef")
    # a token may not put its holder in a privileged group
    create(cluster, token_secret("master", "0123456789abcdef", **{
        "usage-bootstrap-authentication": "true", "auth-extra-groups": "system:masters"}))
    assert_unauthorized(cluster, "master.0123456789abcdef")


def test_expired_token_refused_and_cleaned(cluster: Cluster) -> None:
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    create(cluster, token_secret("expire", "0123456789abcdef", **{
        "usage-bootstrap-authentication": "true", "expiration": soon}))
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    create(cluster, token_secret("keeper", "0123456789abcdef", **{
        "usage-bootstrap-authentication": "true", "expiration": later}))
    assert whoami(cluster, "expire.0123456789abcdef")[0] == 201
    # the tokencleaner deletes it once expired
    until(lambda: raw_request(cluster, "GET", f"{SECRETS}/bootstrap-token-expire").status == 404, 15)
    assert_unauthorized(cluster, "expire.0123456789abcdef")
    assert raw_request(cluster, "GET", f"{SECRETS}/bootstrap-token-keeper").status == 200
    assert whoami(cluster, "keeper.0123456789abcdef")[0] == 201


def test_deleted_token_is_401(cluster: Cluster) -> None:
    create(cluster, token_secret("delete", "0123456789abcdef", **{"usage-bootstrap-authentication": "true"}))
    assert whoami(cluster, "delete.0123456789abcdef")[0] == 201
    assert raw_request(cluster, "DELETE", f"{SECRETS}/bootstrap-token-delete").status == 200
    until(lambda: whoami(cluster, "delete.0123456789abcdef")[0] == 401)


def test_token_may_not_read_secrets(cluster: Cluster) -> None:
    create(cluster, token_secret("reader", "0123456789abcdef", **{
        "usage-bootstrap-authentication": "true", "auth-extra-groups": bt.KUBEADM_GROUP}))
    r = raw_request(cluster, "GET", SECRETS, headers={"Authorization": "Bearer reader.0123456789abcdef"}, auth=False)
    assert r.status == 403
    assert r.json()["message"] == ('secrets is forbidden: User "system:bootstrap:reader" cannot list resource '
                                   '"secrets" in API group "" in the namespace "kube-system"')
    # through the real kubectl, with only the token
    kc = os.path.join(cluster.data_dir, "reader.conf")
    with open(os.path.join(cluster.data_dir, "pki", "ca.crt"), "rb") as f:
        write_kubeconfig(kc, cluster.url, f.read(), token="reader.0123456789abcdef", user="reader")
    out = cluster.kubectl("--kubeconfig", kc, "get", "secrets", "-n", "kube-system", check=False)
    assert out.returncode == 1 and "Forbidden" in out.stderr
    # what a bootstrapping node needs it may do: create CSRs (system:node-bootstrapper)
    out = cluster.kubectl("--kubeconfig", kc, "auth", "can-i", "create", "certificatesigningrequests", check=False)
    assert out.stdout.strip() == "yes"
    out = cluster.kubectl("--kubeconfig", kc, "auth", "can-i", "get", "nodes", check=False)
    assert out.stdout.strip() == "no"


def _independent_jws_check(detached: str, content: str, tid: str, secret: str) -> bool:
    """RFC 7515 detached compact serialisation, verified without our implementation."""
    header64, payload, sig64 = detached.split(".")
    assert payload == ""  # detached: the content travels separately
    header = json.loads(base64.urlsafe_b64decode(header64 + "=" * (-len(header64) % 4)))
    assert header == {"alg": "HS256", "kid": tid}
    content64 = base64.urlsafe_b64encode(content.encode()).rstrip(b"=").decode()
    mac = hmac.HMAC(secret.encode(), hashes.SHA256())
    mac.update(f"{header64}.{content64}".encode())
    try:
        mac.verify(base64.urlsafe_b64decode(sig64 + "=" * (-len(sig64) % 4)))
    except Exception:  # noqa: BLE001 - InvalidSignature
        return False
    return True


def test_cluster_info_is_public_and_signed(cluster: Cluster) -> None:
    r = raw_request(cluster, "GET", CLUSTER_INFO, auth=False)  # anonymous, as kubeadm join's discovery
    assert r.status == 200, r.body[:300]
    import yaml

    kc = yaml.safe_load(r.json()["data"]["kubeconfig"])
    ca = base64.b64decode(kc["clusters"][0]["cluster"]["certificate-authority-data"])
    with open(os.path.join(cluster.data_dir, "pki", "ca.crt"), "rb") as f:
        assert ca == f.read()
    assert kc["clusters"][0]["cluster"]["server"].startswith("https://")
    # anonymous may read nothing else there
    assert raw_request(cluster, "GET", "/api/v1/namespaces/kube-public/configmaps", auth=False).status == 403

    create(cluster, token_secret("signer", "fedcba9876543210", **{"usage-bootstrap-signing": "true"}))
    create(cluster, token_secret("nosign", "fedcba9876543210", **{"usage-bootstrap-authentication": "true"}))
    data = until(lambda: (d := raw_request(cluster, "GET", CLUSTER_INFO, auth=False).json()["data"])
                 .get("jws-kubeconfig-signer") and d)
    assert _independent_jws_check(data["jws-kubeconfig-signer"], data["kubeconfig"], "signer", "fedcba9876543210")
    assert not _independent_jws_check(data["jws-kubeconfig-signer"], data["kubeconfig"], "signer", "fedcba9876543211")
    assert "jws-kubeconfig-nosign" not in data
    # a forged entry is removed, and so is the token's once the token goes
    r = raw_request(cluster, "PATCH", CLUSTER_INFO, {"data": {"jws-kubeconfig-forged": "x..y"}},
                    {"Content-Type": "application/merge-patch+json"})
    assert r.status == 200
    until(lambda: "jws-kubeconfig-forged" not in raw_request(cluster, "GET", CLUSTER_INFO).json()["data"])
    assert raw_request(cluster, "DELETE", f"{SECRETS}/bootstrap-token-signer").status == 200
    until(lambda: "jws-kubeconfig-signer" not in raw_request(cluster, "GET", CLUSTER_INFO).json()["data"])


def test_expired_token_not_authenticated_by_clock() -> None:
    """The authenticator's own expiry check, apart from the cleaner (which deletes expired tokens at once)."""
    from pyk8s.apiserver.bootstrap_token_auth import BootstrapTokenAuthenticator

    secret = token_secret("clockt", "0123456789abcdef", **{"usage-bootstrap-authentication": "true",
                                                          "expiration": "2030-01-01T00:00:00Z"})
    secret["metadata"]["namespace"] = "kube-system"
    store = {("kube-system", "bootstrap-token-clockt"): secret}
    for now, ok in ((dt.datetime(2029, 12, 31, 23, 59, 59, tzinfo=dt.UTC), True),
                    (dt.datetime(2030, 1, 1, 0, 0, 0, tzinfo=dt.UTC), False)):
        a = BootstrapTokenAuthenticator(lambda ns, n: store.get((ns, n)), clock=lambda now=now: now)
        assert (a.authenticate_token("clockt.0123456789abcdef") is not None) is ok
    secret["data"]["expiration"] = b64("not a time")
    a = BootstrapTokenAuthenticator(lambda ns, n: store.get((ns, n)))
    assert a.authenticate_token("clockt.0123456789abcdef") is None


def test_disabled_node_bootstrap_and_token_auth(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`--disable node-bootstrap`: no cluster-info, no kubeadm bindings; `--enable-bootstrap-token-auth=false`:
    a valid token Secret authenticates nobody."""
    c = Cluster(str(tmp_path_factory.mktemp("no-nodeboot")),
                ["--disable", "node-bootstrap", "--enable-bootstrap-token-auth=false"]).start()
    try:
        assert raw_request(c, "GET", CLUSTER_INFO).status == 404
        crb = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:node-autoapprove-bootstrap"
        assert raw_request(c, "GET", crb).status == 404
        create(c, token_secret("offtok", "0123456789abcdef", **{"usage-bootstrap-authentication": "true"}))
        assert_unauthorized(c, "offtok.0123456789abcdef")
    finally:
        c.stop()
