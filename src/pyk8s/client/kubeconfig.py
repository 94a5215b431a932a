"""Writing and reading kubeconfig files (the format kubectl and client-go use).

`write_kubeconfig` produces a single-cluster/single-user file with embedded data
(`certificate-authority-data`, `client-certificate-data`, ...). `load_kubeconfig` reads any
ordinary kubeconfig (file references resolved relative to the kubeconfig's directory, as
kubectl does) into a `KubeConfig` our own components use to connect.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from ..datadir import write_atomic

__all__ = ["KubeConfig", "KubeconfigError", "write_kubeconfig", "load_kubeconfig"]


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used (missing context/cluster/user, unreadable data)."""


def _b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    ca_pem: bytes | str | None,
    client_cert_pem: bytes | str | None = None,
    client_key_pem: bytes | str | None = None,
    token: str | None = None,
    cluster_name: str = "pyk8s",
    user: str = "admin",
    context: str = "pyk8s",
    namespace: str | None = None,
) -> None:
    """Write a standard kubeconfig (mode 0600, atomically: readers never see a partial file)."""
    if (client_cert_pem is None) != (client_key_pem is None):
        raise ValueError("client_cert_pem and client_key_pem must be given together")
    cluster: dict[str, Any] = {"server": server_url}
    if ca_pem:
        cluster["certificate-authority-data"] = _b64(ca_pem)
    user_entry: dict[str, Any] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        user_entry["client-certificate-data"] = _b64(client_cert_pem)
        user_entry["client-key-data"] = _b64(client_key_pem)
    if token:
        user_entry["token"] = token
    ctx: dict[str, Any] = {"cluster": cluster_name, "user": user}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
        "preferences": {},
        "users": [{"name": user, "user": user_entry}],
    }
    write_atomic(path, yaml.safe_dump(doc, sort_keys=False, default_flow_style=False).encode())


@dataclass
class KubeConfig:
    """What a client needs to reach the API server, resolved from one kubeconfig context."""

    server: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    client_cert_file: str | None = None
    client_cert_data: bytes | None = None
    client_key_file: str | None = None
    client_key_data: bytes | None = None
    token: str | None = None
    insecure: bool = False
    namespace: str = "default"
    tls_server_name: str | None = None
    context: str = ""
    cluster: str = ""
    user: str = ""

    @property
    def has_client_cert(self) -> bool:
        return bool(self.client_cert_file or self.client_cert_data) and bool(
            self.client_key_file or self.client_key_data
        )

    @property
    def server_hostname(self) -> str | None:
        """The name TLS should verify (tls-server-name overrides the URL's host)."""
        return self.tls_server_name or urlsplit(self.server).hostname

    def ca_pem(self) -> bytes | None:
        if self.ca_data:
            return self.ca_data
        if self.ca_file:
            return Path(self.ca_file).read_bytes()
        return None

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def ssl_client_context(self) -> ssl.SSLContext | None:
        """An SSLContext for https servers (None for plain http)."""
        if urlsplit(self.server).scheme != "https":
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx.load_verify_locations(cadata=self.ca_data.decode("ascii"))
        elif self.ca_file:
            ctx.load_verify_locations(cafile=self.ca_file)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self.has_client_cert:
            self._load_client_cert(ctx)
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        # embedded data wins over a file reference, as in client-go
        if (
            self.client_cert_data is None
            and self.client_key_data is None
            and self.client_cert_file
            and self.client_key_file
        ):
            ctx.load_cert_chain(self.client_cert_file, self.client_key_file)
            return
        # ssl can only load a cert chain from files: stage embedded data in a private temp dir
        # and remove it at once (the context keeps its own copy).
        tmp = tempfile.mkdtemp(prefix="pyk8s-kc-")
        try:
            cert = Path(tmp, "client.crt")
            key = Path(tmp, "client.key")
            for p, data, src in (
                (cert, self.client_cert_data, self.client_cert_file),
                (key, self.client_key_data, self.client_key_file),
            ):
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data if data is not None else Path(src or "").read_bytes())
            ctx.load_cert_chain(str(cert), str(key))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _named(items: Any, name: str, what: str, field_name: str) -> dict[str, Any]:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            v = item.get(field_name)
            return v if isinstance(v, dict) else {}
    raise KubeconfigError(f'{what} "{name}" not found in kubeconfig')


def _decode(value: Any, key: str) -> bytes | None:
    if value in (None, ""):
        return None
    try:
        return base64.b64decode(value, validate=False)
    except (ValueError, TypeError) as e:
        raise KubeconfigError(f"illegal base64 data in {key}: {e}") from e


def _resolve(base: Path, p: Any) -> str | None:
    if not p:
        return None
    path = Path(os.path.expanduser(str(p)))
    return str(path if path.is_absolute() else base / path)


def load_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> KubeConfig:
    """Resolve `context` (default: current-context) of a kubeconfig file."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise KubeconfigError(f"cannot read kubeconfig {p}: {e}") from e
    except yaml.YAMLError as e:
        raise KubeconfigError(f"cannot parse kubeconfig {p}: {e}") from e
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {p} is not a mapping")
    base = p.resolve().parent
    ctx_name = context or doc.get("current-context") or ""
    if not ctx_name:
        raise KubeconfigError("current-context is not set")
    ctx = _named(doc.get("contexts"), ctx_name, "context", "context")
    cluster_name = str(ctx.get("cluster") or "")
    user_name = str(ctx.get("user") or "")
    cluster = _named(doc.get("clusters"), cluster_name, "cluster", "cluster")
    user: dict[str, Any] = _named(doc.get("users"), user_name, "user", "user") if user_name else {}
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f'cluster "{cluster_name}" has no server')
    token = user.get("token") or None
    if not token and user.get("tokenFile"):
        token_path = _resolve(base, user["tokenFile"])
        try:
            token = Path(token_path or "").read_text(encoding="utf-8").strip() or None
        except OSError as e:
            raise KubeconfigError(f"cannot read tokenFile: {e}") from e
    return KubeConfig(
        server=str(server).rstrip("/"),
        ca_file=_resolve(base, cluster.get("certificate-authority")),
        ca_data=_decode(cluster.get("certificate-authority-data"), "certificate-authority-data"),
        client_cert_file=_resolve(base, user.get("client-certificate")),
        client_cert_data=_decode(user.get("client-certificate-data"), "client-certificate-data"),
        client_key_file=_resolve(base, user.get("client-key")),
        client_key_data=_decode(user.get("client-key-data"), "client-key-data"),
        token=token,
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        namespace=str(ctx.get("namespace") or "default"),
        tls_server_name=cluster.get("tls-server-name") or None,
        context=ctx_name,
        cluster=cluster_name,
        user=user_name,
    )
