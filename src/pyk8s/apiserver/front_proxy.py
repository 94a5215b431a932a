"""The front proxy's PKI and the requestheader configuration aggregated API servers read.

As kubeadm's `front-proxy-ca` and `front-proxy-client`: a CA of its own (never the cluster
CA, so a cluster client certificate can never pass for the aggregator) signs the one client
certificate the API server presents when it proxies to an aggregated API server, and the
identity it vouches for travels in the `X-Remote-*` headers. Upstream's
`kube-system/extension-apiserver-authentication` ConfigMap tells aggregated servers which CA
and names to trust for those headers (`requestheader-*`) and which CA signs ordinary client
certificates (`client-ca-file`). Keys are 0600 in the private data dir.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datadir import ensure_private_file, write_atomic
from ..pki import certificate_pem, issue_leaf, new_ca, new_ec_key, private_key_pem, x509_name
from .certs import _issued_by, _load_cert, _locked, _needs_renewal

__all__ = ["FrontProxy", "ensure_front_proxy", "authentication_configmap", "CLIENT_CN", "USERNAME_HEADERS",
           "GROUP_HEADERS", "EXTRA_HEADER_PREFIXES", "CONFIGMAP_NAME", "CONFIGMAP_NAMESPACE"]

CLIENT_CN = "front-proxy-client"  # kubeadm's name, the only one in requestheader-allowed-names
USERNAME_HEADERS = ["X-Remote-User"]
GROUP_HEADERS = ["X-Remote-Group"]
EXTRA_HEADER_PREFIXES = ["X-Remote-Extra-"]
CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"
CA_VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class FrontProxy:
    ca_cert_path: Path
    client_cert_path: Path
    client_key_path: Path

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert_path.read_bytes()

    def client_context(self, ca_bundle: bytes | None, insecure: bool) -> ssl.SSLContext:
        """TLS to an aggregated server: its serving certificate checked against ca_bundle (or not,
        with insecureSkipTLSVerify), the front-proxy client certificate presented."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_bundle:
            ctx.load_verify_locations(cadata=ca_bundle.decode("ascii", "replace"))
        else:
            ctx.load_default_certs()  # upstream: the system roots when the APIService names no CA
        ctx.load_cert_chain(str(self.client_cert_path), str(self.client_key_path))
        return ctx


def ensure_front_proxy(pki_dir: str | Path) -> FrontProxy:
    """Create (first start) or load front-proxy-ca.{crt,key} and front-proxy-client.{crt,key}."""
    d = Path(pki_dir)
    fp = FrontProxy(d / "front-proxy-ca.crt", d / "front-proxy-client.crt", d / "front-proxy-client.key")
    ca_key_path = d / "front-proxy-ca.key"
    with _locked(d):
        for key in (ca_key_path, fp.client_key_path):
            ensure_private_file(key)
        new = not (fp.ca_cert_path.exists() and ca_key_path.exists())
        if new:
            ca_cert, ca_key = new_ca("front-proxy-ca", CA_VALIDITY)
            write_atomic(ca_key_path, private_key_pem(ca_key), 0o600)
            write_atomic(fp.ca_cert_path, certificate_pem(ca_cert), 0o644)
        else:
            from cryptography.hazmat.primitives import serialization

            ca_cert = _load_cert(fp.ca_cert_path)
            loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
            ca_key = loaded  # type: ignore[assignment]
        ok = (not new and fp.client_cert_path.exists() and fp.client_key_path.exists()
              and _issued_by(_load_cert(fp.client_cert_path), ca_cert)
              and not _needs_renewal(_load_cert(fp.client_cert_path)))
        if not ok:
            leaf_key = new_ec_key()
            cert = issue_leaf(ca_cert, ca_key, x509_name(CLIENT_CN), leaf_key, server=False)  # type: ignore[arg-type]
            write_atomic(fp.client_key_path, private_key_pem(leaf_key), 0o600)
            write_atomic(fp.client_cert_path, certificate_pem(cert), 0o644)
    return fp


def authentication_configmap(client_ca_pem: bytes, front: FrontProxy) -> dict[str, Any]:
    """kube-system/extension-apiserver-authentication as kube-apiserver writes it."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE},
        "data": {
            "client-ca-file": client_ca_pem.decode(),
            "requestheader-allowed-names": json.dumps([CLIENT_CN]),
            "requestheader-client-ca-file": front.ca_pem.decode(),
            "requestheader-extra-headers-prefix": json.dumps(EXTRA_HEADER_PREFIXES),
            "requestheader-group-headers": json.dumps(GROUP_HEADERS),
            "requestheader-username-headers": json.dumps(USERNAME_HEADERS),
            # v1.32+: the uid travels too
            "requestheader-uid-headers": json.dumps(["X-Remote-Uid"]),
        },
    }
