"""The credentials the API server presents to webhooks, as upstream's AuthenticationInfoResolver.

`--admission-control-config-file` (an AdmissionConfiguration) may give the ValidatingAdmissionWebhook
and MutatingAdmissionWebhook plug-ins a WebhookAdmissionConfiguration whose `kubeConfigFile` (an
absolute path) holds one `users` entry per webhook server, named by its host: `host:port`, `host`
(port 443), `*.domain` (any host under it) or `*` (any). An entry gives a client certificate
(`client-certificate[-data]`, `client-key[-data]`), a bearer token (`token`, `tokenFile`) or
basic auth (`username`, `password`). Without one the server presents nothing.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Credentials", "load", "resolve"]

_ADMISSION_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1")
_WEBHOOK_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1")
_PLUGINS = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")


@dataclass(frozen=True)
class Credentials:
    cert_chain: tuple[str, str] | None = None  # (certificate file, key file)
    authorization: str = ""  # the Authorization header

    def apply(self, ctx: ssl.SSLContext) -> None:
        if self.cert_chain is not None:
            ctx.load_cert_chain(*self.cert_chain)


def _read(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: {e}") from None


def _material(user: dict[str, Any], file_key: str, data_key: str, base: str, keep: str) -> str | None:
    """A file path for PEM given inline (written 0600 into a private directory) or by path."""
    if user.get(data_key):
        fd, p = tempfile.mkstemp(prefix="webhook-cred-", dir=keep)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(user[data_key]))
        return p
    if user.get(file_key):
        return os.path.join(base, user[file_key])
    return None


def _credentials(user: dict[str, Any], base: str, keep: str) -> Credentials:
    cert = _material(user, "client-certificate", "client-certificate-data", base, keep)
    key = _material(user, "client-key", "client-key-data", base, keep)
    auth = ""
    if user.get("token"):
        auth = f"Bearer {user['token']}"
    elif user.get("tokenFile"):
        with open(os.path.join(base, user["tokenFile"]), encoding="utf-8") as f:
            auth = f"Bearer {f.read().strip()}"
    elif user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password') or ''}".encode()).decode()
        auth = f"Basic {basic}"
    return Credentials((cert, key) if cert and key else None, auth)


def load(admission_config_file: str | None) -> dict[str, Credentials]:
    """host key -> credentials from the webhook plug-ins' kubeConfigFile ({} without one).
    A bad file is a ValueError (the server does not start), as upstream's."""
    if not admission_config_file:
        return {}
    doc = _read(admission_config_file)
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionConfiguration" \
            or doc.get("apiVersion") not in _ADMISSION_VERSIONS:
        raise ValueError(f"{admission_config_file}: expected kind AdmissionConfiguration")
    kubeconfig = ""
    for plugin in doc.get("plugins") or []:
        if not isinstance(plugin, dict) or plugin.get("name") not in _PLUGINS:
            continue
        cfg = plugin.get("configuration")
        if cfg is None and plugin.get("path"):
            cfg = _read(os.path.join(os.path.dirname(os.path.abspath(admission_config_file)), plugin["path"]))
        if not isinstance(cfg, dict) or cfg.get("kind") != "WebhookAdmissionConfiguration" \
                or cfg.get("apiVersion") not in _WEBHOOK_VERSIONS:
            raise ValueError(f"{admission_config_file}: {plugin['name']}: expected kind WebhookAdmissionConfiguration")
        path = str(cfg.get("kubeConfigFile") or "")
        if path and not os.path.isabs(path):
            raise ValueError(f"{admission_config_file}: kubeConfigFile {path!r} must be an absolute file path")
        if path and kubeconfig and path != kubeconfig:
            raise ValueError(f"{admission_config_file}: the webhook plug-ins name different kubeConfigFiles")
        kubeconfig = kubeconfig or path
    if not kubeconfig:
        return {}
    kc = _read(kubeconfig)
    base = os.path.dirname(kubeconfig)
    keep = tempfile.mkdtemp(prefix="pyk8s-webhook-creds-")  # 0700: inline keys written for ssl's loader
    atexit.register(shutil.rmtree, keep, True)
    out: dict[str, Credentials] = {}
    for entry in (kc or {}).get("users") or []:
        if isinstance(entry, dict) and entry.get("name") and isinstance(entry.get("user"), dict):
            out[str(entry["name"])] = _credentials(entry["user"], base, keep)
    return out


def resolve(creds: dict[str, Credentials], host: str, port: int) -> Credentials | None:
    """The entry for host:port, looked up as upstream's resolver does: `host:port`, then `*.parent:port`
    wildcards from the nearest; for port 443 the same without the port; then `*`."""
    if not creds:
        return None
    for target in (f"{host}:{port}", host if port == 443 else None):
        if target is None:
            continue
        if target in creds:
            return creds[target]
        steps = target.split(".")
        for i in range(1, len(steps)):
            w = "*." + ".".join(steps[i:])
            if w in creds:
                return creds[w]
    return creds.get("*")
