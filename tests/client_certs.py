"""A kubeconfig's client certificate and key as files (0600), for clients that take files (ssl contexts)."""

from __future__ import annotations

import base64
import os

import yaml


def cert_files(kubeconfig: str, d: str) -> tuple[str, str]:
    with open(kubeconfig) as f:
        user = yaml.safe_load(f)["users"][0]["user"]
    out = []
    for key, name in (("client-certificate-data", "client.crt"), ("client-key-data", "client.key")):
        p = os.path.join(d, name)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(user[key]))
        out.append(p)
    return out[0], out[1]
