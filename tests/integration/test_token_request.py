"""TokenRequest (serviceaccounts/token) binding and lifetime, as upstream's TokenREST in v1.33.

The kubelet's kube-api-access token (3607 s, the API's audience, pod-bound) is extended to a year
with a `warnafter` claim; a pod-bound token names the pod's node; Secret- and Node-bound tokens
die with their object, and so does a pod-bound token with its pod; what cannot be bound is refused with upstream's messages.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request

pytestmark = pytest.mark.xdist_group("token_request")

NS = "default"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
YEAR = 365 * 24 * 3600


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def create(c: Cluster, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    r = raw_request(c, "POST", path, obj)
    assert r.status == 201, r.body[:500]
    return r.json()


def request_token(c: Cluster, sa: str, ref: dict[str, Any] | None = None, seconds: int = 3607,
                  audiences: list[str] | None = None, audit_id: str = "") -> tuple[int, dict[str, Any]]:
    spec: dict[str, Any] = {"expirationSeconds": seconds}
    if ref is not None:
        spec["boundObjectRef"] = ref
    if audiences is not None:
        spec["audiences"] = audiences
    r = raw_request(c, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/{sa}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
                    {"Audit-ID": audit_id} if audit_id else None)
    return r.status, r.json()


def whoami(c: Cluster, token: str, audit_id: str = "") -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}", **({"Audit-ID": audit_id} if audit_id else {})}
    r = raw_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, headers, auth=False)
    return r.status, r.json()


def pod_ref(p: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One server for the module, with every request in its audit log (Metadata level)."""
    tmp = tmp_path_factory.mktemp("token-request")
    (tmp / "policy.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    c = Cluster(str(tmp / "data"), ["--audit-policy-file", str(tmp / "policy.yaml"),
                                    "--audit-log-path", str(tmp / "audit.log"),
                                    "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"])
    c.audit_log = tmp / "audit.log"  # type: ignore[attr-defined]
    c.start()
    yield c
    c.stop()


def audit_annotations(c: Cluster, audit_id: str) -> dict[str, str]:
    """The annotations of the request's ResponseComplete event, once the log has it."""
    log: Path = c.audit_log  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines() if log.exists() else []:
            ev = json.loads(line)
            if ev["auditID"] == audit_id and ev["stage"] == "ResponseComplete":
                return ev.get("annotations") or {}
        time.sleep(0.05)
    raise AssertionError(f"no audit event {audit_id}")


@pytest.fixture(scope="module")
def objs(cluster: Cluster) -> dict[str, Any]:
    for sa in ("robot", "other"):
        create(cluster, f"/api/v1/namespaces/{NS}/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}})
    node = create(cluster, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tr-node"}})

    def pod(name: str, sa: str, node_name: str) -> dict[str, Any]:
        return create(cluster, f"/api/v1/namespaces/{NS}/pods",
                      {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"serviceAccountName": sa, "nodeName": node_name,
                                "containers": [{"name": "c", "image": "busybox"}]}})

    return {"node": node, "pod": pod("tr-pod", "robot", "tr-node"), "ghost": pod("tr-ghost", "robot", "no-such-node"),
            "other": pod("tr-other", "other", "tr-node")}


def test_kube_api_access_token_is_extended_with_warnafter_and_names_the_node(cluster: Cluster, objs: Any) -> None:
    status, tr = request_token(cluster, "robot", pod_ref(objs["pod"]), audit_id="kube-api-access")
    assert status == 201, tr
    c = claims(tr["status"]["token"])
    assert c["exp"] - c["iat"] == YEAR and c["kubernetes.io"]["warnafter"] == c["iat"] + 3607
    # the answer shows the lifetime asked for, by which the kubelet refreshes the token, as upstream
    assert tr["spec"]["expirationSeconds"] == 3607
    created = datetime.fromisoformat(tr["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
    expires = datetime.fromisoformat(tr["status"]["expirationTimestamp"].replace("Z", "+00:00")).timestamp()
    assert expires - created == 3607 and abs(created - c["iat"]) <= 1
    assert audit_annotations(cluster, "kube-api-access")["authentication.kubernetes.io/issued-credential-id"] == \
        f"JTI={c['jti']}"
    # the API server's audience named explicitly is its own too
    status, tr = request_token(cluster, "robot", pod_ref(objs["pod"]), audiences=[API_AUDIENCE])
    assert claims(tr["status"]["token"])["exp"] - claims(tr["status"]["token"])["iat"] == YEAR
    node = objs["node"]["metadata"]
    assert c["kubernetes.io"]["node"] == {"name": "tr-node", "uid": node["uid"]}
    assert c["kubernetes.io"]["pod"] == {"name": "tr-pod", "uid": objs["pod"]["metadata"]["uid"]}
    status, review = whoami(cluster, tr["status"]["token"])
    extra = review["status"]["userInfo"]["extra"]
    assert status == 201 and extra["authentication.kubernetes.io/node-name"] == ["tr-node"]
    assert extra["authentication.kubernetes.io/node-uid"] == [node["uid"]]
    # a node that does not exist (yet) is named without a UID
    status, tr = request_token(cluster, "robot", pod_ref(objs["ghost"]))
    assert status == 201 and claims(tr["status"]["token"])["kubernetes.io"]["node"] == {"name": "no-such-node"}
    # only that shape is extended: another lifetime, another audience, or no pod
    for seconds, audiences, bound in ((3600, None, True), (3607, ["vault"], True), (3607, None, False)):
        status, tr = request_token(cluster, "robot", pod_ref(objs["pod"]) if bound else None, seconds, audiences)
        assert status == 201, tr
        c = claims(tr["status"]["token"])
        assert c["exp"] - c["iat"] == seconds and "warnafter" not in c["kubernetes.io"], (seconds, audiences, bound)


def test_what_cannot_be_bound_is_refused(cluster: Cluster, objs: Any) -> None:
    status, st = request_token(cluster, "robot", pod_ref(objs["other"]))
    assert (status, st["reason"]) == (400, "BadRequest")
    assert st["message"] == 'cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.'
    stale = dict(pod_ref(objs["pod"]), uid="00000000-0000-0000-0000-000000000000")
    status, st = request_token(cluster, "robot", stale)
    assert (status, st["reason"]) == (409, "Conflict")
    assert st["message"] == ('Operation cannot be fulfilled on Pod "tr-pod": the UID in the bound object reference '
                             "(00000000-0000-0000-0000-000000000000) does not match the UID in record. The object "
                             "might have been deleted and then recreated")
    status, st = request_token(cluster, "robot", {"apiVersion": "v1", "kind": "ConfigMap", "name": "kube-root-ca.crt"})
    assert (status, st["message"]) == (400, "cannot bind token to object of type /v1, Kind=ConfigMap")
    status, st = request_token(cluster, "robot", {"apiVersion": "v1", "kind": "Pod", "name": "missing"})
    assert (status, st["reason"], st["message"]) == (404, "NotFound", 'pods "missing" not found')
    status, st = request_token(cluster, "robot", {"kind": "Pod"})
    assert (status, st["reason"], st["message"]) == (400, "BadRequest", "Name parameter required.")
    status, st = request_token(cluster, "robot", {"apiVersion": "v1", "kind": "Secret", "name": "../x"})
    assert (status, st["message"]) == (400, """Name parameter invalid: "../x": may not contain '/'""")


@pytest.mark.parametrize("kind", ["Secret", "Node"])
def test_secret_and_node_bound_tokens_die_with_their_object(cluster: Cluster, objs: Any, kind: str) -> None:
    if kind == "Secret":
        obj = create(cluster, f"/api/v1/namespaces/{NS}/secrets",
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tr-secret"}})
        path = f"/api/v1/namespaces/{NS}/secrets/tr-secret"
    else:
        obj = create(cluster, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tr-gone"}})
        path = "/api/v1/nodes/tr-gone"
    md = obj["metadata"]
    status, tr = request_token(cluster, "robot", {"apiVersion": "v1", "kind": kind, "name": md["name"],
                                                  "uid": md["uid"]}, 3600)
    assert status == 201, tr
    token = tr["status"]["token"]
    assert claims(token)["kubernetes.io"][kind.lower()] == {"name": md["name"], "uid": md["uid"]}
    assert whoami(cluster, token)[0] == 201
    assert raw_request(cluster, "DELETE", path).status == 200
    status, st = whoami(cluster, token)
    assert (status, st["reason"]) == (401, "Unauthorized")


def test_pod_bound_token_dies_with_its_pod_even_when_the_name_comes_back(cluster: Cluster, objs: Any) -> None:
    """A token bound to a pod authenticates nobody once the pod is gone (401), and a new pod of the
    same name (another uid) does not bring it back."""
    def doomed() -> dict[str, Any]:
        return create(cluster, f"/api/v1/namespaces/{NS}/pods",
                      {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tr-doomed"},
                       "spec": {"serviceAccountName": "robot", "nodeName": "tr-node",
                                "containers": [{"name": "c", "image": "busybox"}]}})

    p = doomed()
    status, tr = request_token(cluster, "robot", pod_ref(p), 3600)
    assert status == 201, tr
    token = tr["status"]["token"]
    assert whoami(cluster, token)[0] == 201
    path = f"/api/v1/namespaces/{NS}/pods/tr-doomed"
    assert raw_request(cluster, "DELETE", path, {"gracePeriodSeconds": 0}).status == 200
    assert raw_request(cluster, "GET", path).status == 404
    status, st = whoami(cluster, token)
    assert (status, st["reason"], st["message"]) == (401, "Unauthorized", "Unauthorized")
    doomed()
    status, st = whoami(cluster, token)
    assert (status, st["reason"]) == (401, "Unauthorized")
    assert raw_request(cluster, "DELETE", path, {"gracePeriodSeconds": 0}).status == 200


def test_an_extended_token_used_past_warnafter_is_flagged_in_the_audit_log(cluster: Cluster, objs: Any) -> None:
    """As upstream: a client still using a kube-api-access token after its requested 3607 s is let in, and its
    request's audit event carries authentication.k8s.io/stale-token."""
    from cryptography.hazmat.primitives import serialization

    from pyk8s.apiserver.authn import issue_service_account_token

    status, fresh = request_token(cluster, "robot", pod_ref(objs["pod"]))
    assert status == 201
    assert whoami(cluster, fresh["status"]["token"], "fresh-token")[0] == 201
    assert "authentication.k8s.io/stale-token" not in audit_annotations(cluster, "fresh-token")

    # the same token as the server issued it 4000 s ago (signed with its key: the clock cannot be turned back)
    key = serialization.load_pem_private_key(Path(cluster.data_dir, "pki", "sa.key").read_bytes(), None)
    c = claims(fresh["status"]["token"])
    old, _ = issue_service_account_token(key, NS, "robot", c["kubernetes.io"]["serviceaccount"]["uid"],  # type: ignore[arg-type]
                                         c["aud"], YEAR, c["kubernetes.io"]["pod"],
                                         bound_node=c["kubernetes.io"]["node"], warn_after_seconds=3607,
                                         now=time.time() - 4000)
    status, review = whoami(cluster, old, "stale-token")
    assert status == 201 and review["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"
    note = audit_annotations(cluster, "stale-token")["authentication.k8s.io/stale-token"]
    prefix = "subject: system:serviceaccount:default:robot, seconds after warning threshold: "
    assert note.startswith(prefix) and 393 <= int(note[len(prefix):]) <= 460, note


def node_token_request(c: Cluster, node: str, ns: str, sa: str, ref: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
    """A TokenRequest made with a kubelet's client certificate (system:node:<node>, group system:nodes)."""
    import http.client
    import ssl
    import types
    from urllib.parse import urlparse

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from pyk8s.pki import issue_client_cert

    pki = Path(c.data_dir, "pki")
    ca = types.SimpleNamespace(ca_cert=x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes()),
                               ca_key=serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None))
    cert, key = issue_client_cert(ca, f"system:node:{node}", ["system:nodes"])  # type: ignore[arg-type]
    (pki.parent / "node.crt").write_bytes(cert)
    (pki.parent / "node.key").write_bytes(key)
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki.parent / "node.crt"), str(pki.parent / "node.key"))
    u = urlparse(c.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
    spec: dict[str, Any] = {"expirationSeconds": 3607, **({"boundObjectRef": ref} if ref else {})}
    conn.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token",
                 json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
                 {"Content-Type": "application/json"})
    r = conn.getresponse()
    out = r.status, json.loads(r.read())
    conn.close()
    return out


def test_a_kubelet_gets_tokens_only_for_its_own_pods(cluster: Cluster, objs: Any) -> None:
    """Node authorizer and NodeRestriction, as upstream: a node mints a token only for a ServiceAccount one of
    its pods runs as, bound to such a pod by UID; never another namespace's or node's, never unbound."""
    status, tr = node_token_request(cluster, "tr-node", NS, "robot", pod_ref(objs["pod"]))
    assert status == 201 and claims(tr["status"]["token"])["kubernetes.io"]["pod"]["name"] == "tr-pod", tr
    status, st = node_token_request(cluster, "tr-node", "kube-system", "default", None)
    assert status == 403 and st["message"] == (
        'serviceaccounts "default" is forbidden: User "system:node:tr-node" cannot create resource '
        '"serviceaccounts/token" in API group "" in the namespace "kube-system": '
        "no relationship found between node 'tr-node' and this object"), st
    refused = [(None, "node requested token not bound to a pod"),
               (dict(pod_ref(objs["pod"]), uid=""), "node requested token with a pod binding without a uid"),
               (pod_ref(objs["ghost"]), "node requested token bound to a pod scheduled on a different node"),
               ({"apiVersion": "v1", "kind": "Secret", "name": "x", "uid": "u"},
                "node requested token not bound to a pod")]
    for ref, why in refused:
        status, st = node_token_request(cluster, "tr-node", NS, "robot", ref)
        assert (status, st["message"]) == (403, f'serviceaccounts "robot" is forbidden: {why}'), ref


def test_without_extension_the_kube_api_access_token_lasts_what_was_asked(tmp_path: Path) -> None:
    """--service-account-extend-token-expiration=false: 3607 s and no warnafter (API workers answer it too)."""
    c = Cluster(str(tmp_path / "data"), ["--service-account-extend-token-expiration=false"],
                datastore="sqlite-workers")
    c.start()
    try:
        create(c, f"/api/v1/namespaces/{NS}/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}})
        pod = create(c, f"/api/v1/namespaces/{NS}/pods",
                     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                      "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "busybox"}]}})
        for _ in range(4):  # more than once: each worker answers some
            status, tr = request_token(c, "robot", pod_ref(pod))
            assert status == 201, tr
            cl = claims(tr["status"]["token"])
            assert cl["exp"] - cl["iat"] == 3607 and "warnafter" not in cl["kubernetes.io"]
    finally:
        c.stop()
