"""TLS bootstrapping and client-certificate rotation for `pyk8s agent --server URL --token <id>.<secret>`.

As `kubeadm join` discovery plus the kubelet's bootstrap (pkg/kubelet/certificate/bootstrap) and
certificate manager (client-go util/certificate):

1. discovery: kube-public/cluster-info is read without trusting the server yet; its kubeconfig must carry
   a `jws-kubeconfig-<id>` entry that the token's secret verifies (bootstrapsigner), which proves that
   whoever holds the token published that CA; the server is then reached with that CA only;
2. a CSR (signer kubernetes.io/kube-apiserver-client-kubelet, CN system:node:<name>, O system:nodes, a new
   ECDSA P-256 key) is created as system:bootstrap:<id> and waited for (the csrapproving controller
   approves it for the kubeadm token group);
3. key and certificate go to <data-dir>/pki/kubelet-client-current.pem and <data-dir>/kubelet.conf (0600);
   from then on the agent is system:node:<name>, and a restart reuses them while they are valid;
4. `CertificateRotator` renews the certificate as the node itself at 70-90% of its lifetime (jittered as
   client-go's), swaps it into the live client and closes its connections, as upstream's kubelet does.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import logging
import os
import random
import ssl
import time
from dataclasses import dataclass

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from .. import bootstraptoken as bt
from ..api.errors import StatusError
from ..client import Client
from ..client.kubeconfig import write_kubeconfig
from ..client.tasks import cancel
from ..datadir import ensure_private_dir, write_atomic
from ..pki import certificate_pem, new_ec_key, private_key_pem, x509_name

# The kubelet's request/response connections to the API server (its watches are not bounded: one per referenced
# ConfigMap/Secret). Upstream's kubelet multiplexes everything over one HTTP/2 connection; without a bound, a burst
# of 100 pod starts opened ~100 TLS connections at once, a handshake each on the kubelet's and the server's loop.
API_CONNECTIONS = 16

log = logging.getLogger("pyk8s.kubelet")

CSRS = ("certificates.k8s.io", "v1", "certificatesigningrequests")
CONFIGMAPS = ("", "v1", "configmaps")
KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
CLIENT_USAGES = ["digital signature", "client auth"]  # an ECDSA key: no key encipherment, as upstream's kubelet
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
SERVING_USAGES = ["digital signature", "server auth"]


class BootstrapError(Exception):
    """Why the node could not get its certificate (said to the user, the agent exits)."""


@dataclass
class NodeCredentialPaths:
    kubeconfig: str
    pem: str  # key and certificate together, as upstream's kubelet-client-current.pem
    ca: str

    @classmethod
    def under(cls, data_dir: str) -> NodeCredentialPaths:
        pki = os.path.join(data_dir, "pki")
        return cls(os.path.join(data_dir, "kubelet.conf"), os.path.join(pki, "kubelet-client-current.pem"),
                   os.path.join(pki, "ca.crt"))


def _insecure_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def discover(server: str, token: str, ca_file: str | None = None) -> tuple[str, bytes]:
    """(server URL, CA PEM) from cluster-info, verified with the token's JWS."""
    parsed = bt.parse_token(token)
    if parsed is None:
        raise BootstrapError(f'the bootstrap token "{token[:6]}..." was not of the form '
                             '"[a-z0-9]{6}.[a-z0-9]{16}"')
    tid, tsecret = parsed
    ctx = ssl.create_default_context(cafile=ca_file) if ca_file else _insecure_context()
    if ca_file:
        ctx.check_hostname = False  # the CA is what is pinned; the URL may name any of the server's addresses
    anon = Client(server, ctx, user_agent="pyk8s-agent/bootstrap", pool_size=0)
    try:
        cm = await anon.get(CONFIGMAPS, bt.CLUSTER_INFO, bt.CLUSTER_INFO_NAMESPACE)
    except (StatusError, OSError) as e:
        raise BootstrapError(f"cannot read the {bt.CLUSTER_INFO_NAMESPACE}/{bt.CLUSTER_INFO} ConfigMap: {e}") from e
    finally:
        await anon.close()
    data = cm.get("data") or {}
    content, sig = data.get(bt.KUBECONFIG_KEY), data.get(bt.JWS_PREFIX + tid)
    if not isinstance(content, str):
        raise BootstrapError(f"there is no {bt.KUBECONFIG_KEY} key in the {bt.CLUSTER_INFO} ConfigMap")
    if not isinstance(sig, str):
        raise BootstrapError(f"token id {tid!r} is invalid for this cluster or it has expired: there is no JWS "
                             f"signed token in the {bt.CLUSTER_INFO} ConfigMap")
    if not bt.verify_detached(sig, content, tid, tsecret):
        raise BootstrapError("failed to verify JWS signature of received cluster info object, can't trust this "
                             "API Server")
    try:
        kc = yaml.safe_load(content)
        cluster = kc["clusters"][0]["cluster"]
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
        x509.load_pem_x509_certificate(ca_pem)
    except (yaml.YAMLError, KeyError, IndexError, TypeError, ValueError) as e:
        raise BootstrapError(f"the {bt.CLUSTER_INFO} kubeconfig has no usable cluster CA: {e}") from e
    return server, ca_pem


def _server_context(ca_pem: bytes) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    ctx.check_hostname = False  # trust rests on the discovered CA; the serving certificate covers the server's IPs
    return ctx


def client_csr(node: str) -> tuple[bytes, bytes]:
    """(CSR PEM, key PEM) for the node's client certificate."""
    key = new_ec_key()
    req = (x509.CertificateSigningRequestBuilder().subject_name(x509_name(f"system:node:{node}", ["system:nodes"]))
           .sign(key, hashes.SHA256()))
    return req.public_bytes(serialization.Encoding.PEM), private_key_pem(key)


async def request_certificate(client: Client, csr_pem: bytes, signer: str, usages: list[str],
                              timeout: float = 900.0) -> bytes:
    """Create a CSR and wait for its certificate; BootstrapError when denied or failed."""
    obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"generateName": "csr-"},
           "spec": {"request": base64.b64encode(csr_pem).decode(), "signerName": signer, "usages": usages}}
    try:
        created = await client.create(CSRS, obj)
    except StatusError as e:
        raise BootstrapError(f"cannot create certificate signing request: {e}") from e
    name = created["metadata"]["name"]
    deadline = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < deadline:
        csr = await client.get(CSRS, name)
        status = csr.get("status") or {}
        for c in status.get("conditions") or []:
            if c.get("type") in ("Denied", "Failed"):
                raise BootstrapError(f"certificate signing request {name} is {c['type'].lower()}: "
                                     f"{c.get('reason', '')} {c.get('message', '')}".rstrip())
        if status.get("certificate"):
            return base64.b64decode(status["certificate"])
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
    raise BootstrapError(f"timed out waiting for certificate signing request {name} to be signed")


def _valid_pem(path: str, now: float) -> tuple[bytes, bytes] | None:
    """(cert PEM, key PEM) from a kubelet-client-current.pem still valid at now, else None."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        cert = x509.load_pem_x509_certificate(raw)
        key = serialization.load_pem_private_key(raw, None)
    except (OSError, ValueError, TypeError):
        return None
    if cert.not_valid_after_utc.timestamp() <= now:
        return None
    return certificate_pem(cert), private_key_pem(key)  # type: ignore[arg-type]


def store(paths: NodeCredentialPaths, server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, node: str) -> None:
    ensure_private_dir(os.path.dirname(paths.pem))
    write_atomic(paths.pem, key_pem + cert_pem, 0o600)
    write_atomic(paths.ca, ca_pem, 0o644)
    write_kubeconfig(paths.kubeconfig, server, ca_pem, cert_pem, key_pem, user=f"system:node:{node}",
                     cluster_name="default-cluster", context="default-context")


def client_for(server: str, ca_pem: bytes, pem_path: str, user_agent: str) -> Client:
    ctx = _server_context(ca_pem)
    ctx.load_cert_chain(pem_path)
    return Client(server, ctx, user_agent=user_agent, pool_size=0, request_connections=API_CONNECTIONS)


async def bootstrap(server: str, token: str, node: str, data_dir: str, ca_file: str | None,
                    user_agent: str) -> tuple[Client, NodeCredentialPaths]:
    """The node's own client: from a still valid certificate of an earlier run, else by TLS bootstrapping."""
    ensure_private_dir(data_dir)
    paths = NodeCredentialPaths.under(data_dir)
    have = _valid_pem(paths.pem, time.time())
    if have is not None and os.path.exists(paths.ca):
        with open(paths.ca, "rb") as f:
            ca_pem = f.read()
        log.info("using the node's client certificate %s", paths.pem)
        return client_for(server, ca_pem, paths.pem, user_agent), paths
    server, ca_pem = await discover(server, token, ca_file)
    boot = Client(server, _server_context(ca_pem), token=token, user_agent=user_agent, pool_size=0)
    try:
        csr_pem, key_pem = client_csr(node)
        cert_pem = await request_certificate(boot, csr_pem, KUBELET_CLIENT_SIGNER, CLIENT_USAGES)
    finally:
        await boot.close()
    store(paths, server, ca_pem, cert_pem, key_pem, node)
    print(f"pyk8s agent: node {node} got its client certificate by TLS bootstrapping ({paths.pem})", flush=True)
    return client_for(server, ca_pem, paths.pem, user_agent), paths


def rotation_deadline(cert: x509.Certificate, received: float, rng: random.Random | None = None) -> float:
    """When to renew: 70-90% into the certificate's life, jittered as client-go's certificate manager.

    The life counts from when we received it at the earliest: signers backdate notBefore by 5 minutes,
    which would make a short-lived certificate due at once."""
    start = max(cert.not_valid_before_utc.timestamp(), received)
    total = cert.not_valid_after_utc.timestamp() - start
    return start + total * (0.7 + 0.2 * (rng or random).random())


class CertificateRotator:
    """Renews the node's client certificate before it expires, as the node (selfnodeclient)."""

    what = "client"

    def __init__(self, client: Client, paths: NodeCredentialPaths, server: str, node: str) -> None:
        self.client, self.paths, self.server, self.node = client, paths, server, node
        self.pem = paths.pem
        self._task: asyncio.Task[None] | None = None
        self.rotations = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self.what}-cert-rotation")

    async def stop(self) -> None:
        await cancel(self._task)

    def _current(self) -> tuple[x509.Certificate, float] | None:
        try:
            with open(self.pem, "rb") as f:
                cert = x509.load_pem_x509_certificate(f.read())
            return cert, os.stat(self.pem).st_mtime
        except (OSError, ValueError):
            return None  # none yet: get one now

    async def _run(self) -> None:
        backoff = 1.0
        while True:
            current = self._current()
            if current is not None:
                cert, received = current
                wait = rotation_deadline(cert, received) - time.time()
                log.info("%s certificate expires %s, rotation in %.0fs", self.what, cert.not_valid_after_utc,
                         max(wait, 0))
                if wait > 0:
                    await asyncio.sleep(wait)
            try:
                await self.rotate()
                backoff = 1.0
            except (BootstrapError, StatusError, OSError) as e:
                log.warning("%s certificate rotation failed (retrying in %.0fs): %s", self.what, backoff, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 60.0)

    async def _request(self) -> tuple[bytes, bytes]:
        csr_pem, key_pem = client_csr(self.node)
        return await request_certificate(self.client, csr_pem, KUBELET_CLIENT_SIGNER, CLIENT_USAGES), key_pem

    async def _install(self, cert_pem: bytes, key_pem: bytes) -> None:
        with open(self.paths.ca, "rb") as f:
            ca_pem = f.read()
        store(self.paths, self.server, ca_pem, cert_pem, key_pem, self.node)
        assert self.client.ssl_context is not None
        self.client.ssl_context.load_cert_chain(self.paths.pem)  # new connections present the new certificate
        await self.client.reset_connections()

    async def rotate(self) -> None:
        cert_pem, key_pem = await self._request()
        await self._install(cert_pem, key_pem)
        self.rotations += 1
        serial = x509.load_pem_x509_certificate(cert_pem).serial_number
        print(f"pyk8s agent: rotated the {self.what} certificate of node {self.node} (serial {serial})", flush=True)


class ServingCertificateManager(CertificateRotator):
    """Port 10250's certificate from the kubelet-serving signer (the node's name and IPs), renewed like the
    client one and swapped into the live TLS context: upstream's kubelet with serverTLSBootstrap."""

    what = "serving"

    def __init__(self, client: Client, data_dir: str, node: str, addresses: list[str],
                 tls_context: ssl.SSLContext) -> None:
        super().__init__(client, NodeCredentialPaths.under(data_dir), "", node)
        self.pem = os.path.join(data_dir, "pki", "kubelet-server-current.pem")
        self.addresses, self.tls_context = addresses, tls_context
        if _valid_pem(self.pem, time.time()) is not None:
            tls_context.load_cert_chain(self.pem)  # an earlier run's, still valid

    async def _request(self) -> tuple[bytes, bytes]:
        key = new_ec_key()
        names = [x509.IPAddress(ipaddress.ip_address(a)) if _is_ip(a) else x509.DNSName(a) for a in self.addresses]
        req = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509_name(f"system:node:{self.node}", ["system:nodes"]))
               .add_extension(x509.SubjectAlternativeName(names), critical=False).sign(key, hashes.SHA256()))
        cert_pem = await request_certificate(self.client, req.public_bytes(serialization.Encoding.PEM),
                                             KUBELET_SERVING_SIGNER, SERVING_USAGES)
        return cert_pem, private_key_pem(key)

    async def _install(self, cert_pem: bytes, key_pem: bytes) -> None:
        write_atomic(self.pem, key_pem + cert_pem, 0o600)
        self.tls_context.load_cert_chain(self.pem)  # new TLS handshakes on port 10250 present it


def _is_ip(a: str) -> bool:
    try:
        ipaddress.ip_address(a)
        return True
    except ValueError:
        return False


__all__ = ["BootstrapError", "NodeCredentialPaths", "bootstrap", "discover", "CertificateRotator",
           "rotation_deadline", "request_certificate", "client_csr", "ServingCertificateManager"]
