"""`pyk8s server --client-ca-file FILE`, as kube-apiserver's flag: a client certificate signed by
that CA authenticates (CN the user, O the groups), besides those of the cluster CA; one signed by
any other CA still does not; an expired or not yet valid one (of either CA) gets 401 Unauthorized,
as kube-apiserver answers it. Checked with the real kubectl (`auth whoami`, a read) and the official
client."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.cluster import REPO, Cluster, kubectl_binaries

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("client-ca-file")


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _client(ca: x509.Certificate, ca_key: Any, user: str, group: str,
            valid: tuple[dt.timedelta, dt.timedelta] = (dt.timedelta(minutes=-5), dt.timedelta(days=1))
            ) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, group),
                                     x509.NameAttribute(NameOID.COMMON_NAME, user)]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + valid[0]).not_valid_after(now + valid[1])
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, str, str]]:
    d = tmp_path_factory.mktemp("client-ca")
    ext_ca, ext_key = _ca("external-ca")
    other_ca, other_key = _ca("other-ca")
    ca_file = d / "external-ca.crt"
    ca_file.write_bytes(ext_ca.public_bytes(serialization.Encoding.PEM))
    c = Cluster(str(d / "data"), extra_args=["--client-ca-file", str(ca_file)])
    c.start()
    c.ext_ca = (ext_ca, ext_key)  # type: ignore[attr-defined]
    from pyk8s.client.kubeconfig import write_kubeconfig

    with open(os.path.join(c.data_dir, "pki", "ca.crt"), "rb") as f:
        cluster_ca = f.read()
    paths = []
    for name, (ca, key) in (("ext", (ext_ca, ext_key)), ("other", (other_ca, other_key))):
        cert, pkey = _client(ca, key, f"{name}-user", f"{name}-group")
        p = str(d / f"{name}.conf")
        write_kubeconfig(p, c.url, cluster_ca, cert, pkey, user=f"{name}-user")
        paths.append(p)
    yield c, paths[0], paths[1]
    c.stop()


def _kubectl(c: Cluster, kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=c.home)
    return subprocess.run([list(kubectl_binaries().values())[-1], *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_certificate_of_the_extra_ca_authenticates(setup: tuple[Cluster, str, str]) -> None:
    c, ext, _ = setup
    r = _kubectl(c, ext, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
    assert r.returncode == 0, r.stderr
    assert r.stdout == 'ext-user ["ext-group","system:authenticated"]'
    r = _kubectl(c, ext, "get", "pods")
    assert r.returncode == 1
    assert 'User "ext-user" cannot list resource "pods"' in r.stderr  # authenticated, then RBAC
    assert c.kubectl("get", "ns", "default", "-o", "name").stdout.strip() == "namespace/default"  # the admin still works


def test_certificate_of_another_ca_does_not(setup: tuple[Cluster, str, str]) -> None:
    c, _, other = setup
    r = _kubectl(c, other, "auth", "whoami")
    # the TLS handshake refuses the certificate (Go's server: "tls: bad certificate"; here the
    # connection ends), so nothing is answered for other-user
    assert r.returncode == 1 and "other-user" not in r.stdout, r.stdout


@pytest.mark.parametrize("valid", [(dt.timedelta(days=-30), dt.timedelta(seconds=-1)),
                                   (dt.timedelta(hours=1), dt.timedelta(days=1))], ids=["expired", "not-yet-valid"])
@pytest.mark.parametrize("issuer", ["cluster", "external"])
def test_certificate_out_of_its_validity_is_unauthorized(setup: tuple[Cluster, str, str], tmp_path: Any,
                                                          valid: tuple[dt.timedelta, dt.timedelta],
                                                          issuer: str) -> None:
    """An old admin certificate (O=system:masters) after its notAfter, or one before its notBefore,
    authenticates nobody: 401, not a dropped connection and not the admin."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    from pyk8s.client.kubeconfig import write_kubeconfig

    c, ext, _ = setup
    pki = os.path.join(c.data_dir, "pki")
    with open(os.path.join(pki, "ca.crt"), "rb") as f:
        cluster_ca = f.read()
    if issuer == "cluster":
        with open(os.path.join(pki, "ca.key"), "rb") as f:
            ca, ca_key = x509.load_pem_x509_certificate(cluster_ca), serialization.load_pem_private_key(f.read(), None)
    else:
        ca, ca_key = c.ext_ca  # type: ignore[attr-defined]
    cert, key = _client(ca, ca_key, "old-admin", "system:masters", valid)
    path = str(tmp_path / "old.conf")
    write_kubeconfig(path, c.url, cluster_ca, cert, key, user="old-admin")
    r = _kubectl(c, path, "get", "secrets", "-A")
    assert (r.returncode, r.stderr.strip()) == (1, "error: You must be logged in to the server (Unauthorized)"), \
        r.stderr
    cfg = client.Configuration()
    config.load_kube_config(path, client_configuration=cfg)
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(client.ApiClient(cfg)).list_namespace()
    assert ei.value.status == 401
    assert json.loads(ei.value.body)["reason"] == "Unauthorized"


def test_a_remembered_certificate_is_refused_once_it_expires(setup: tuple[Cluster, str, str], tmp_path: Any) -> None:
    """The server remembers a certificate's user between requests; that must end at its notAfter,
    not up to a minute later (an expired node or admin certificate kept working)."""
    import time

    from pyk8s.client.kubeconfig import write_kubeconfig

    c, _, _ = setup
    pki = os.path.join(c.data_dir, "pki")
    with open(os.path.join(pki, "ca.crt"), "rb") as f:
        cluster_ca = f.read()
    with open(os.path.join(pki, "ca.key"), "rb") as f:
        ca, ca_key = x509.load_pem_x509_certificate(cluster_ca), serialization.load_pem_private_key(f.read(), None)
    cert, key = _client(ca, ca_key, "short-lived", "system:masters", (dt.timedelta(minutes=-5), dt.timedelta(seconds=6)))
    not_after = x509.load_pem_x509_certificate(cert).not_valid_after_utc.timestamp()
    path = str(tmp_path / "short.conf")
    write_kubeconfig(path, c.url, cluster_ca, cert, key, user="short-lived")
    r = _kubectl(c, path, "get", "ns", "default", "-o", "name")
    assert r.returncode == 0 and time.time() < not_after, r.stderr  # it worked, and was remembered
    time.sleep(max(0.0, not_after - time.time()) + 1.5)  # its own expiry: nothing to poll for
    r = _kubectl(c, path, "get", "ns", "default", "-o", "name")
    assert (r.returncode, r.stderr.strip()) == (1, "error: You must be logged in to the server (Unauthorized)"), \
        (r.stdout, r.stderr)


def test_unreadable_file_refuses_to_start(tmp_path: object) -> None:
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path), "--port", "0",
                        "--disable-agent", "--client-ca-file", "/nonexistent/ca.crt"],
                       capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert r.returncode == 1
    assert 'unable to load client CA file "/nonexistent/ca.crt": No such file or directory' in r.stderr, r.stderr
