"""A node joins with a bootstrap token only (no admin kubeconfig), in its own network namespace: discovery
through the signed cluster-info, its CSR auto-approved, Ready as system:node:<name> under the Node
authorizer and NodeRestriction, its pods running, its client certificate rotated before it expires; and what
a bootstrap or node identity must not get away with."""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import stat
import time
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from pyk8s import bootstraptoken as bt
from pyk8s.client.kubeconfig import load_kubeconfig, write_kubeconfig
from tests.cluster import Cluster, raw_request
from tests.e2e.kubelet_harness import busybox_pod
from tests.e2e.netns_cluster import NetnsCluster

pytestmark = pytest.mark.xdist_group("node_bootstrap")

TOKEN = "nbtest.0123456789abcdef"
SIGNING = 30  # seconds: the node renews its client certificate 21-27 s after getting it


def _with_token(nc: NetnsCluster) -> None:
    """Node 0 joins with --server and the token only; the token Secret is made just before (as kubeadm token create)."""
    agent = nc.agents[0]

    def connection_args() -> list[str]:
        r = raw_request(nc.cluster, "POST", "/api/v1/namespaces/kube-system/secrets", bt.bootstrap_secret(TOKEN))
        assert r.status == 201, r.body[:300]
        return ["--server", nc.cluster.url, "--token", TOKEN]

    agent.connection_args = connection_args  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def nc(tmp_path_factory: pytest.TempPathFactory) -> Any:
    c = NetnsCluster(tmp_path_factory.mktemp("nodeboot"), nodes=1,
                     server_args=["--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
                                  "--cluster-signing-duration", f"{SIGNING}s"],
                     # a node identity lists no EndpointSlices, pods or policies: those components have their own
                     agent_args=["--disable-proxy", "--disable-network-policy", "--flannel-backend", "none"])
    _with_token(c)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _node_files(nc: NetnsCluster) -> tuple[str, str]:
    d = nc.agents[0].data_dir
    return os.path.join(d, "kubelet.conf"), os.path.join(d, "pki", "kubelet-client-current.pem")


def _cert(path: str) -> x509.Certificate:
    with open(path, "rb") as f:
        return x509.load_pem_x509_certificate(f.read())


def _request_as(c: Cluster, kubeconfig: str, method: str, path: str, body: Any,
                content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    """One request with the client certificate of a kubeconfig (the node's own)."""
    ctx = load_kubeconfig(kubeconfig).ssl_client_context()
    ctx.check_hostname = False
    u = urlparse(c.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=10)
    conn.request(method, path, json.dumps(body), {"Content-Type": content_type})
    r = conn.getresponse()
    out = r.status, json.loads(r.read())
    conn.close()
    return out


def _whoami_with(c: Cluster, kubeconfig: str) -> tuple[int, dict[str, Any]]:
    return _request_as(c, kubeconfig, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                       {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})


def test_node_joins_with_token_only(nc: NetnsCluster) -> None:
    node = nc.node_names[0]
    kubeconfig, pem = _node_files(nc)
    for path in (kubeconfig, pem):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    cert = _cert(pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"system:node:{node}"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    # the CA the node trusts is the one it discovered, and it is the cluster's
    with open(os.path.join(nc.cluster.data_dir, "pki", "ca.crt"), "rb") as f:
        ca = f.read()
    kc = yaml.safe_load(open(kubeconfig))
    assert base64.b64decode(kc["clusters"][0]["cluster"]["certificate-authority-data"]) == ca
    status, review = _whoami_with(nc.cluster, kubeconfig)
    assert status == 201, review
    assert review["status"]["userInfo"]["username"] == f"system:node:{node}"
    # its first CSR came from the bootstrap identity and was auto-approved as upstream's (nodeclient)
    csrs = nc.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
    first = [c for c in csrs if c["spec"]["username"] == "system:bootstrap:nbtest"]
    assert first, [c["spec"]["username"] for c in csrs]
    approved = [x for x in first[0]["status"]["conditions"] if x["type"] == "Approved"]
    assert approved and approved[0]["reason"] == "AutoApproved"
    assert "system:bootstrappers" in first[0]["spec"]["groups"]
    # the Node registered and its lease is renewed by the node itself
    lease = nc.wait(lambda: nc.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"), 20,
                    "the node's lease")
    assert lease["spec"]["holderIdentity"] == node
    # and its pods run, with what the Node authorizer lets it read for them: their Secret, ConfigMap and
    # service account token (a TokenRequest by the node)
    nc.api("POST", "/api/v1/namespaces/default/secrets", {"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "joined-s"}, "data": {"k": base64.b64encode(b"from-secret").decode()}})
    nc.api("POST", "/api/v1/namespaces/default/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "joined-c"}, "data": {"k": "from-configmap"}})
    script = ("cat /s/k; echo; cat /c/k; echo; test -s /var/run/secrets/kubernetes.io/serviceaccount/token "
              "&& echo token; sleep 3600")
    pod = busybox_pod("joined", script, nodeName=node,
                      volumes=[{"name": "s", "secret": {"secretName": "joined-s"}},
                               {"name": "c", "configMap": {"name": "joined-c"}}])
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "s", "mountPath": "/s"}, {"name": "c", "mountPath": "/c"}]
    nc.create(pod)
    nc.wait_running("joined", timeout=60)
    nc.wait(lambda: nc.kubectl("logs", "joined").split() == ["from-secret", "from-configmap", "token"], 20,
            "the pod's volumes")
    # the node's events reach the API too
    nc.wait(lambda: any(e.get("reason") == "Started" for e in nc.events("joined")), 20, "the kubelet's events")


def test_client_certificate_rotated_and_old_one_refused(nc: NetnsCluster) -> None:
    node = nc.node_names[0]
    kubeconfig, pem = _node_files(nc)
    old_conf = os.path.join(nc.base, "old-kubelet.conf")
    with open(kubeconfig, "rb") as f:
        data = f.read()
    with open(os.path.join(nc.base, "old-kubelet.conf"), "wb") as f:
        f.write(data)
    old = _cert(pem)
    nc.wait(lambda: any(f"rotated the client certificate of node {node}" in line for line in nc.agents[0].output),
            SIGNING + 20, "the client certificate rotated")
    assert _cert(pem).serial_number != old.serial_number
    # renewed by the node as itself (selfnodeclient)
    csrs = nc.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
    renewals = [c for c in csrs if c["spec"]["username"] == f"system:node:{node}"]
    assert renewals and any(x["type"] == "Approved" for x in renewals[0]["status"]["conditions"])
    # the node keeps working with the new certificate: its lease is renewed after the rotation
    before = nc.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")["spec"]["renewTime"]
    nc.wait(lambda: nc.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")["spec"]
            ["renewTime"] != before, 30, "a lease renewal after the rotation")
    assert nc.node_ready()
    # an expired certificate is 401 Unauthorized
    wait = old.not_valid_after_utc.timestamp() - time.time()
    if wait > 0:
        time.sleep(wait + 1)  # the old certificate's own expiry: nothing to poll for
    status, body = _whoami_with(nc.cluster, old_conf)
    assert status == 401 and body.get("reason") == "Unauthorized", (status, body)
    # the node saw the pods change after the rotation: its watches came back with the new certificate
    nc.delete_pod("joined", grace=0)
    nc.wait_gone("joined", timeout=30)
    with open("/tmp/nodeboot-agent.log", "w") as f:
        f.write("".join(nc.agents[0].output))


def test_node_identity_confined_to_its_own_objects(nc: NetnsCluster) -> None:
    kubeconfig, _ = _node_files(nc)
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "nb-other", "labels": {"a": "b"}}}
    nc.api("POST", "/api/v1/nodes", other)
    status, body = _request_as(nc.cluster, kubeconfig, "PATCH", "/api/v1/nodes/nb-other",
                               {"metadata": {"labels": {"a": "evil"}}}, "application/merge-patch+json")
    assert status == 403, body
    assert nc.get("/api/v1/nodes/nb-other")["metadata"]["labels"]["a"] == "b"


def _csr(cn: str, orgs: list[str], sans: list[str] | None = None) -> str:
    from cryptography.hazmat.primitives import hashes, serialization

    from pyk8s.pki import new_ec_key, x509_name

    b = x509.CertificateSigningRequestBuilder().subject_name(x509_name(cn, orgs))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(s) for s in sans]), critical=False)
    return base64.b64encode(b.sign(new_ec_key(), hashes.SHA256()).public_bytes(serialization.Encoding.PEM)).decode()


def test_bootstrap_csr_with_extra_sans_or_usages_not_approved(nc: NetnsCluster) -> None:
    token = "nbatck.0123456789abcdef"
    assert raw_request(nc.cluster, "POST", "/api/v1/namespaces/kube-system/secrets",
                       bt.bootstrap_secret(token)).status == 201
    kc = os.path.join(nc.base, "attacker.conf")
    with open(os.path.join(nc.cluster.data_dir, "pki", "ca.crt"), "rb") as f:
        write_kubeconfig(kc, nc.cluster.url, f.read(), token=token, user="attacker")
    names = []
    for name, req, usages in (
            ("nb-sans", _csr("system:node:nb-x", ["system:nodes"], ["evil.example.com"]),
             ["digital signature", "client auth"]),
            ("nb-usage", _csr("system:node:nb-x", ["system:nodes"]),
             ["digital signature", "client auth", "server auth"]),
            ("nb-masters", _csr("system:node:nb-x", ["system:nodes", "system:masters"]),
             ["digital signature", "client auth"])):
        obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
               "spec": {"request": req, "signerName": "kubernetes.io/kube-apiserver-client-kubelet", "usages": usages}}
        nc.cluster.kubectl("--kubeconfig", kc, "create", "-f", "-", input=yaml.safe_dump(obj))
        names.append(name)
    # a legitimate request made at the same time is approved, so the approver has looked at them all
    ok = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "nb-ok"},
          "spec": {"request": _csr("system:node:nb-y", ["system:nodes"]),
                   "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                   "usages": ["digital signature", "client auth"]}}
    nc.cluster.kubectl("--kubeconfig", kc, "create", "-f", "-", input=yaml.safe_dump(ok))
    csr_path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/"
    nc.wait(lambda: (nc.get(csr_path + "nb-ok") or {}).get("status", {}).get("certificate"), 20, "nb-ok issued")
    for name in names:
        conds = (nc.get(csr_path + name) or {}).get("status", {}).get("conditions") or []
        assert not any(c["type"] == "Approved" for c in conds), (name, conds)
    # nor may the token approve its own requests
    out = nc.cluster.kubectl("--kubeconfig", kc, "certificate", "approve", "nb-sans", check=False)
    assert out.returncode != 0 and "forbidden" in out.stderr.lower()


def _serving_cert(nc: NetnsCluster) -> x509.Certificate | None:
    """Port 10250's certificate if the cluster CA verifies it, else None (the self-signed one)."""
    import socket

    ctx = ssl.create_default_context(cafile=os.path.join(nc.cluster.data_dir, "pki", "ca.crt"))
    ctx.check_hostname = False
    try:
        with socket.create_connection((nc.node_ips[0], 10250), timeout=5) as raw, \
                ctx.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    except (ssl.SSLError, OSError):
        return None
    return x509.load_der_x509_certificate(der) if der else None


def test_serving_certificate_signed_for_the_nodes_own_names(nc: NetnsCluster) -> None:
    node, ip = nc.node_names[0], nc.node_ips[0]
    cert = nc.wait(lambda: _serving_cert(nc), 30, "port 10250 serving a cluster-CA certificate")
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == [ip]
    assert san.get_values_for_type(x509.DNSName) == [node]
    csrs = nc.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
    serving = [c for c in csrs if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
               and c["spec"]["username"] == f"system:node:{node}"]
    assert serving and serving[0]["status"]["conditions"][0]["reason"] == "AutoApproved"
    pem = os.path.join(nc.agents[0].data_dir, "pki", "kubelet-server-current.pem")
    assert stat.S_IMODE(os.stat(pem).st_mode) == 0o600


def _serving_csr(name: str, cn: str, ips: list[str], dns: list[str]) -> str:
    import ipaddress

    from cryptography.hazmat.primitives import hashes, serialization

    from pyk8s.pki import new_ec_key, x509_name

    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.DNSName(d) for d in dns]
    req = (x509.CertificateSigningRequestBuilder().subject_name(x509_name(cn, ["system:nodes"]))
           .add_extension(x509.SubjectAlternativeName(names), critical=False).sign(new_ec_key(), hashes.SHA256()))
    return yaml.safe_dump({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                           "metadata": {"name": name},
                           "spec": {"request": base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode(),
                                    "signerName": "kubernetes.io/kubelet-serving",
                                    "usages": ["digital signature", "server auth"]}})


def test_node_serving_csr_for_foreign_names_not_approved(nc: NetnsCluster) -> None:
    node, ip = nc.node_names[0], nc.node_ips[0]
    kubeconfig, _ = _node_files(nc)
    bad = {"sv-foreign-ip": (f"system:node:{node}", [ip, "10.9.9.9"], [node]),
           "sv-foreign-dns": (f"system:node:{node}", [ip], [node, "kubernetes.default.svc"]),
           "sv-other-node": ("system:node:nb-other", [ip], [node])}
    for name, (cn, ips, dns) in bad.items():
        nc.cluster.kubectl("--kubeconfig", kubeconfig, "create", "-f", "-", input=_serving_csr(name, cn, ips, dns))
    nc.cluster.kubectl("--kubeconfig", kubeconfig, "create", "-f", "-",
                       input=_serving_csr("sv-own", f"system:node:{node}", [ip], [node]))
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/"
    nc.wait(lambda: (nc.get(path + "sv-own") or {}).get("status", {}).get("certificate"), 20, "sv-own issued")
    for name in bad:
        conds = (nc.get(path + name) or {}).get("status", {}).get("conditions") or []
        assert not any(c["type"] == "Approved" for c in conds), (name, conds)
