"""CertificateSigningRequests end to end, through the real kubectl: the requester's identity in the
spec, `kubectl certificate approve|deny`, the csrsigning controller's certificates (signed by the
cluster CA, accepted for client auth), its signers' rules (a `Failed` condition with upstream's
message), and the admission checks an attacker meets (forged identity, pre-approval, approving or
signing without `approve`/`sign` on the signer, system:masters client certificates).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cluster import Cluster, kubectl_binaries, raw_request
from tests.integration.test_daemonset import get_json, wait_for
from tests.integration.test_rbac_escalation import AsServiceAccount

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("certificates")

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _request(key: Any, cn: str, orgs: tuple[str, ...] = (), dns: tuple[str, ...] = (), ips: tuple[str, ...] = (),
             emails: tuple[str, ...] = ()) -> str:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)] + [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                                                            for o in orgs]
    b = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i))
                                                                      for i in ips]
    names += [x509.RFC822Name(e) for e in emails]
    if names:
        b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
    pem = b.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    return base64.b64encode(pem).decode()


def _csr(name: str, request: str, signer: str, usages: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": request, "signerName": signer, "usages": usages, **spec}}


def _create(c: Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("create", "-f", "-", input=json.dumps(obj))


def _issued(c: Cluster, name: str) -> x509.Certificate:
    raw = wait_for(lambda: get_json(c, "csr", name).get("status", {}).get("certificate"), what=f"certificate of {name}")
    return x509.load_pem_x509_certificate(base64.b64decode(raw))


def _failed(c: Cluster, name: str) -> dict[str, Any]:
    def cond() -> dict[str, Any] | None:
        conds = get_json(c, "csr", name).get("status", {}).get("conditions") or []
        return next((x for x in conds if x["type"] == "Failed"), None)

    return wait_for(cond, what=f"Failed condition of {name}")


def _ca(c: Cluster) -> x509.Certificate:
    return x509.load_pem_x509_certificate(Path(c.data_dir, "pki", "ca.crt").read_bytes())


def _kubeconfig_for(c: Cluster, cert: x509.Certificate, key: Any, path: Path) -> Path:
    """The admin kubeconfig with another client certificate."""
    kc = yaml.safe_load(Path(c.kubeconfig).read_text())
    kc["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode(),
        "client-key-data": base64.b64encode(key.private_bytes(serialization.Encoding.PEM,
                                                              serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption())).decode()}
    path.write_text(yaml.safe_dump(kc))
    return path


def test_create_takes_the_requesters_identity_and_no_status(cluster):
    """A client cannot name someone else (username/groups/uid/extra) nor create an approved CSR."""
    obj = _csr("forged", _request(_key(), "forged"), "kubernetes.io/kube-apiserver-client", ["client auth"],
               username="system:kube-controller-manager", uid="1234", groups=["system:masters"],
               extra={"x": ["y"]})
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Forged"}],
                     "certificate": ""}
    _create(cluster, obj)
    got = get_json(cluster, "csr", "forged")
    assert got["spec"]["username"] == "admin"
    assert got["spec"]["groups"] == ["system:masters", "system:authenticated"]
    assert "uid" not in got["spec"]
    assert "x" not in (got["spec"].get("extra") or {})
    assert not (got.get("status") or {}).get("conditions")


def test_approve_issues_a_client_certificate_that_authenticates(cluster, tmp_path):
    key = _key()
    _create(cluster, _csr("alice", _request(key, "alice", ("devs",)), "kubernetes.io/kube-apiserver-client",
                          ["digital signature", "client auth"], expirationSeconds=3600))
    assert "alice approved" in cluster.kubectl("certificate", "approve", "alice").stdout
    cert = _issued(cluster, "alice")
    ca = _ca(cluster)
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "O=devs,CN=alice"
    # a short-lived certificate (< 8 h): backdated 5 minutes, its end not
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(seconds=3600 + 300)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    # the API server accepts it: kubectl with it is alice of group devs
    path = _kubeconfig_for(cluster, cert, key, tmp_path / "alice.kubeconfig")
    env = dict(os.environ, KUBECONFIG=str(path), HOME=cluster.home)
    who = subprocess.run([list(kubectl_binaries().values())[-1], "auth", "whoami", "-o", "json"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert who.returncode == 0, who.stderr
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == "alice"
    assert "devs" in info["groups"]


def test_requested_duration_is_capped_and_floored(cluster):
    """expirationSeconds above the signer's maximum (a year) gets a year; the API refuses < 600."""
    _create(cluster, _csr("decade", _request(_key(), "decade"), "kubernetes.io/kube-apiserver-client",
                          ["client auth"], expirationSeconds=10 * 365 * 24 * 3600))
    cluster.kubectl("certificate", "approve", "decade")
    cert = _issued(cluster, "decade")
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(days=365)
    r = cluster.kubectl("create", "-f", "-", check=False, input=json.dumps(
        _csr("blink", _request(_key(), "blink"), "kubernetes.io/kube-apiserver-client", ["client auth"],
             expirationSeconds=599)))
    assert "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds" in r.stderr


def test_kubelet_serving_certificate(cluster):
    _create(cluster, _csr("serving-ok", _request(_key(), "system:node:n1", ("system:nodes",), dns=("n1.local",),
                                                 ips=("10.0.0.7",)),
                          "kubernetes.io/kubelet-serving", ["digital signature", "server auth"]))
    cluster.kubectl("certificate", "approve", "serving-ok")
    cert = _issued(cluster, "serving-ok")
    cert.verify_directly_issued_by(_ca(cluster))
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["n1.local"]
    assert [str(i) for i in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.7"]
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.digital_signature and not ku.key_encipherment


@pytest.mark.parametrize("name,cn,orgs,sans,signer,usages,message", [
    ("serving-org", "system:node:n1", ("evil",), {"dns": ("n1",)}, "kubernetes.io/kubelet-serving",
     ["digital signature", "server auth"], "subject organization is not system:nodes"),
    ("serving-cn", "admin", ("system:nodes",), {"dns": ("n1",)}, "kubernetes.io/kubelet-serving",
     ["digital signature", "server auth"], "subject common name does not begin with system:node:"),
    ("serving-nosan", "system:node:n1", ("system:nodes",), {}, "kubernetes.io/kubelet-serving",
     ["digital signature", "server auth"], "DNS or IP subjectAltName is required"),
    ("serving-email", "system:node:n1", ("system:nodes",), {"dns": ("n1",), "emails": ("a@b.c",)},
     "kubernetes.io/kubelet-serving", ["digital signature", "server auth"], "Email subjectAltNames are not allowed"),
    ("serving-client", "system:node:n1", ("system:nodes",), {"dns": ("n1",)}, "kubernetes.io/kubelet-serving",
     ["digital signature", "client auth"], "usages did not match [digital signature key encipherment server auth]"),
    ("kubelet-usages", "system:node:n1", ("system:nodes",), {}, "kubernetes.io/kube-apiserver-client-kubelet",
     ["server auth"], "usages did not match [client auth digital signature key encipherment]"),
    ("kubelet-dns", "system:node:n1", ("system:nodes",), {"dns": ("n1",)},
     "kubernetes.io/kube-apiserver-client-kubelet", ["digital signature", "client auth"],
     "DNS subjectAltNames are not allowed"),
    ("kubelet-masters", "system:node:n1", ("system:masters",), {}, "kubernetes.io/kube-apiserver-client-kubelet",
     ["digital signature", "client auth"], "subject organization is not system:nodes"),
    ("client-server", "bob", (), {}, "kubernetes.io/kube-apiserver-client", ["client auth", "server auth"],
     "invalid usage for client certificate: server auth"),
    ("client-none", "bob", (), {}, "kubernetes.io/kube-apiserver-client", ["digital signature"],
     "missing required usage for client certificate: client auth"),
])
def test_signer_refuses_what_its_rules_forbid(cluster, name, cn, orgs, sans, signer, usages, message):
    _create(cluster, _csr(name, _request(_key(), cn, orgs, **sans), signer, usages))
    cluster.kubectl("certificate", "approve", name)
    cond = _failed(cluster, name)
    assert cond["status"] == "True"
    assert cond["reason"] == "SignerValidationFailure"
    assert cond["message"] == message
    assert not get_json(cluster, "csr", name)["status"].get("certificate")


def test_kubelet_client_certificate(cluster):
    _create(cluster, _csr("kubelet-ok", _request(_key(), "system:node:n2", ("system:nodes",)),
                          "kubernetes.io/kube-apiserver-client-kubelet", ["digital signature", "client auth"]))
    cluster.kubectl("certificate", "approve", "kubelet-ok")
    cert = _issued(cluster, "kubelet-ok")
    assert cert.subject.rfc4514_string() == "O=system:nodes,CN=system:node:n2"


def test_denied_and_unknown_signers_get_no_certificate(cluster):
    _create(cluster, _csr("denied", _request(_key(), "denied"), "kubernetes.io/kube-apiserver-client",
                          ["client auth"]))
    cluster.kubectl("certificate", "deny", "denied")
    _create(cluster, _csr("other", _request(_key(), "other"), "example.com/signer", ["client auth"]))
    cluster.kubectl("certificate", "approve", "other")
    # a CSR approved after both: once it is issued, the controller has been past the others
    _create(cluster, _csr("marker", _request(_key(), "marker"), "kubernetes.io/kube-apiserver-client",
                          ["client auth"]))
    cluster.kubectl("certificate", "approve", "marker")
    _issued(cluster, "marker")
    for name in ("denied", "other"):
        status = get_json(cluster, "csr", name)["status"]
        assert not status.get("certificate")
        assert [c["type"] for c in status["conditions"]] == (["Denied"] if name == "denied" else ["Approved"])
    row = cluster.kubectl("get", "csr", "denied", "--no-headers").stdout.split()
    assert row[-1] == "Denied"


def test_status_and_main_writes_cannot_approve_or_change_the_spec(cluster):
    _create(cluster, _csr("sneaky", _request(_key(), "sneaky"), "kubernetes.io/kube-apiserver-client",
                          ["client auth"]))
    cur = raw_request(cluster, "GET", f"{CSR_PATH}/sneaky").json()
    cur["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "ViaStatus",
                                     "message": "", "lastUpdateTime": "2020-01-01T00:00:00Z"}]}
    r = raw_request(cluster, "PUT", f"{CSR_PATH}/sneaky/status", cur)
    assert r.status == 200, r.body
    assert not (r.json().get("status") or {}).get("conditions")
    cur = raw_request(cluster, "GET", f"{CSR_PATH}/sneaky").json()
    cur["spec"]["usages"] = ["client auth", "server auth"]
    cur["spec"]["username"] = "system:admin"
    cur["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "ViaMain", "message": ""}]}
    r = raw_request(cluster, "PUT", f"{CSR_PATH}/sneaky", cur)
    assert r.status == 200, r.body
    got = r.json()
    assert got["spec"]["usages"] == ["client auth"] and got["spec"]["username"] == "admin"
    assert not (got.get("status") or {}).get("conditions")
    # the approval subresource sets conditions (timestamps filled in), and nothing else
    cur = raw_request(cluster, "GET", f"{CSR_PATH}/sneaky").json()
    cur["status"] = {"conditions": [{"type": "Denied", "status": "True", "reason": "No", "message": "no"}],
                     "certificate": base64.b64encode(b"junk").decode()}
    r = raw_request(cluster, "PUT", f"{CSR_PATH}/sneaky/approval", cur)
    assert r.status == 200, r.body
    st = r.json()["status"]
    assert "certificate" not in st
    assert st["conditions"][0]["lastTransitionTime"] and st["conditions"][0]["lastUpdateTime"]


def test_kube_apiserver_client_for_system_masters_is_forbidden(cluster):
    r = cluster.kubectl("create", "-f", "-", check=False, input=json.dumps(
        _csr("root", _request(_key(), "root", ("system:masters",)), "kubernetes.io/kube-apiserver-client",
             ["client auth"])))
    assert r.returncode != 0
    assert ('certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
            'kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed') in r.stderr


@pytest.fixture(scope="module")
def approver(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> AsServiceAccount:
    """A ServiceAccount that may write CSRs, their approval and status, but approve/sign only for
    example.com signers."""
    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: ServiceAccount
metadata: {name: csr-approver, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-approver}
rules:
- apiGroups: [certificates.k8s.io]
  resources: [certificatesigningrequests, certificatesigningrequests/approval, certificatesigningrequests/status]
  verbs: [create, get, list, watch, update, patch]
- apiGroups: [certificates.k8s.io]
  resources: [signers]
  resourceNames: [example.com/*]
  verbs: [approve, sign]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: csr-approver}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approver}
subjects: [{kind: ServiceAccount, name: csr-approver, namespace: default}]
""")
    return AsServiceAccount(cluster, "csr-approver", tmp_path_factory.mktemp("csr-approver"))


def test_approving_needs_approve_on_the_signer(cluster, approver):
    sa = approver
    sa.ok("create", "-f", "-", input=json.dumps(
        _csr("by-sa", _request(_key(), "by-sa"), "kubernetes.io/kube-apiserver-client", ["client auth"])))
    got = get_json(cluster, "csr", "by-sa")
    assert got["spec"]["username"] == "system:serviceaccount:default:csr-approver"
    assert "system:serviceaccounts:default" in got["spec"]["groups"]
    assert got["spec"]["uid"]
    err = sa.refused("certificate", "approve", "by-sa")
    assert ('certificatesigningrequests.certificates.k8s.io "by-sa" is forbidden: user not permitted to approve '
            'requests with signerName "kubernetes.io/kube-apiserver-client"') in err
    # a signer of its domain (example.com/*): approve, and sign (status.certificate) too
    sa.ok("create", "-f", "-", input=json.dumps(
        _csr("by-sa-own", _request(_key(), "by-sa-own"), "example.com/signer", ["client auth"])))
    sa.ok("certificate", "approve", "by-sa-own")
    ca_pem = Path(cluster.data_dir, "pki", "ca.crt").read_bytes()  # any certificate will do for the check
    cur = raw_request(cluster, "GET", f"{CSR_PATH}/by-sa-own").json()
    cur["status"]["certificate"] = base64.b64encode(ca_pem).decode()
    r = sa.run("replace", "--subresource=status", "-f", "-", input=json.dumps(cur))
    assert r.returncode == 0, r.stderr
    # but not for a signer outside its domain
    sa.ok("create", "-f", "-", input=json.dumps(
        _csr("by-sa-other", _request(_key(), "by-sa-other"), "other.org/signer", ["client auth"])))
    cluster.kubectl("certificate", "approve", "by-sa-other")
    cur = raw_request(cluster, "GET", f"{CSR_PATH}/by-sa-other").json()
    cur["status"]["certificate"] = base64.b64encode(ca_pem).decode()
    err = sa.refused("replace", "--subresource=status", "-f", "-", input=json.dumps(cur))
    assert ('certificatesigningrequests.certificates.k8s.io "by-sa-other" is forbidden: user not permitted to sign '
            'requests with signerName "other.org/signer"') in err


def test_controller_manager_process_signs_too(tmp_path):
    """`pyk8s server --controller-manager-process`: the child gets the CA through
    --cluster-signing-cert-file/--cluster-signing-key-file."""
    c = Cluster(str(tmp_path / "data"), ["--controller-manager-process"]).start()
    try:
        _create(c, _csr("proc", _request(_key(), "proc"), "kubernetes.io/kube-apiserver-client", ["client auth"]))
        c.kubectl("certificate", "approve", "proc")
        _issued(c, "proc").verify_directly_issued_by(_ca(c))
        assert oct(os.stat(Path(c.data_dir, "pki", "ca.key")).st_mode & 0o777) == "0o600"
    finally:
        c.stop()


def _as_node(c: Cluster, tmp: Path, name: str) -> tuple[Any, Path]:
    """A node's client certificate (through the CSR flow, approved by the admin) and its kubeconfig."""
    key = _key()
    _create(c, _csr(f"{name}-first", _request(key, f"system:node:{name}", ("system:nodes",)),
                    "kubernetes.io/kube-apiserver-client-kubelet", ["digital signature", "client auth"]))
    c.kubectl("certificate", "approve", f"{name}-first")
    cert = _issued(c, f"{name}-first")
    return key, _kubeconfig_for(c, cert, key, tmp / f"{name}.kubeconfig")


def _approval(c: Cluster, name: str) -> dict[str, Any] | None:
    conds = get_json(c, "csr", name).get("status", {}).get("conditions") or []
    return next((x for x in conds if x["type"] == "Approved"), None)


def test_node_client_renewal_is_auto_approved_once_permitted(cluster, tmp_path):
    """upstream's csrapproving: a node's CSR for its own client certificate is approved when the
    node may create certificatesigningrequests/selfnodeclient (kubeadm binds that to system:nodes);
    a CSR naming another node needs nodeclient, which it lacks, and stays pending."""
    _, kubeconfig = _as_node(cluster, tmp_path, "n9")
    cluster.kubectl("create", "clusterrolebinding", "nodes-create-csrs", "--clusterrole=system:node-bootstrapper",
                    "--group=system:nodes")
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), HOME=cluster.home)
    binary = list(kubectl_binaries().values())[-1]

    def as_node(obj: dict[str, Any]) -> None:
        r = subprocess.run([binary, "create", "-f", "-"], input=json.dumps(obj), capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 0, r.stderr

    usages = ["digital signature", "client auth"]
    as_node(_csr("n9-renew", _request(_key(), "system:node:n9", ("system:nodes",)),
                 "kubernetes.io/kube-apiserver-client-kubelet", usages))
    as_node(_csr("n9-for-n10", _request(_key(), "system:node:n10", ("system:nodes",)),
                 "kubernetes.io/kube-apiserver-client-kubelet", usages))
    assert get_json(cluster, "csr", "n9-renew")["spec"]["username"] == "system:node:n9"
    cluster.kubectl("create", "clusterrolebinding", "nodes-renew", "--group=system:nodes",
                    "--clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient")
    cond = wait_for(lambda: _approval(cluster, "n9-renew"), what="auto-approval of n9-renew")
    assert cond["reason"] == "AutoApproved"
    assert cond["message"] == "Auto approving self kubelet client certificate after SubjectAccessReview."
    assert _issued(cluster, "n9-renew").subject.rfc4514_string() == "O=system:nodes,CN=system:node:n9"
    assert _approval(cluster, "n9-for-n10") is None
    assert not get_json(cluster, "csr", "n9-for-n10").get("status", {}).get("certificate")


def test_cleaner_deletes_long_denied_csrs_when_it_runs(tmp_path):
    """The csrcleaner runs at start and then hourly: a CSR denied more than an hour ago (its
    Denied condition's lastUpdateTime, which a client may set) is gone after a restart; a fresh
    pending one stays."""
    c = Cluster(str(tmp_path / "data")).start()
    try:
        _create(c, _csr("stale", _request(_key(), "stale"), "kubernetes.io/kube-apiserver-client", ["client auth"]))
        _create(c, _csr("fresh", _request(_key(), "fresh"), "kubernetes.io/kube-apiserver-client", ["client auth"]))
        cur = raw_request(c, "GET", f"{CSR_PATH}/stale").json()
        two_hours_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        cur["status"] = {"conditions": [{"type": "Denied", "status": "True", "reason": "Old", "message": "",
                                         "lastUpdateTime": two_hours_ago}]}
        r = raw_request(c, "PUT", f"{CSR_PATH}/stale/approval", cur)
        assert r.status == 200, r.body
        assert r.json()["status"]["conditions"][0]["lastUpdateTime"] == two_hours_ago
        c.stop()
        c.start()
        wait_for(lambda: raw_request(c, "GET", f"{CSR_PATH}/stale").status == 404, what="stale CSR cleaned")
        assert raw_request(c, "GET", f"{CSR_PATH}/fresh").status == 200
    finally:
        c.stop()
