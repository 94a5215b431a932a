"""Bootstrap tokens, as k8s.io/cluster-bootstrap: the Secret format, expiry and the detached JWS.

A bootstrap token `<id>.<secret>` lives in the kube-system Secret `bootstrap-token-<id>` of type
`bootstrap.kubernetes.io/token`. The API server authenticates it (apiserver/bootstrap_token_auth.py),
the tokencleaner controller deletes it once expired, and the bootstrapsigner controller signs the
kube-public/cluster-info kubeconfig with it, so that a joining node holding only the token can
check the CA it is given (`verify_detached`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

SECRET_TYPE = "bootstrap.kubernetes.io/token"
SECRET_PREFIX = "bootstrap-token-"
NAMESPACE = "kube-system"
TOKEN_ID_KEY = "token-id"
TOKEN_SECRET_KEY = "token-secret"
EXPIRATION_KEY = "expiration"
USAGE_AUTHENTICATION = "usage-bootstrap-authentication"
USAGE_SIGNING = "usage-bootstrap-signing"
EXTRA_GROUPS_KEY = "auth-extra-groups"
USER_PREFIX = "system:bootstrap:"
DEFAULT_GROUP = "system:bootstrappers"
# kubeadm's group for the tokens it makes; the server binds it as kubeadm does (bootstrap_token_policy.py)
KUBEADM_GROUP = "system:bootstrappers:kubeadm:default-node-token"

CLUSTER_INFO_NAMESPACE = "kube-public"
CLUSTER_INFO = "cluster-info"
KUBECONFIG_KEY = "kubeconfig"
JWS_PREFIX = "jws-kubeconfig-"

TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
_ID_RE = re.compile(r"^[a-z0-9]{6}$")
_GROUP_RE = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def parse_token(token: str) -> tuple[str, str] | None:
    """(id, secret) of a well-formed token, None for anything else."""
    m = TOKEN_RE.match(token)
    return (m.group(1), m.group(2)) if m else None


def generate_token() -> str:
    """A fresh random `<6>.<16>` token, as `kubeadm token generate`."""
    return ".".join("".join(secrets.choice(_ALPHABET) for _ in range(n)) for n in (6, 16))


def secret_data(secret: Mapping[str, Any], key: str) -> str:
    """A Secret's data value as text ('' when absent or undecodable)."""
    raw = (secret.get("data") or {}).get(key)
    if not isinstance(raw, str):
        return ""
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def token_id_from_secret_name(name: str) -> str | None:
    if not name.startswith(SECRET_PREFIX):
        return None
    tid = name[len(SECRET_PREFIX):]
    return tid if _ID_RE.match(tid) else None


def time_remaining(secret: Mapping[str, Any], now: dt.datetime) -> tuple[float | None, bool]:
    """(seconds left, expired): no expiration never expires; an unparseable one counts as expired."""
    text = secret_data(secret, EXPIRATION_KEY)
    if not text:
        return None, False
    try:
        exp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None, True
    if exp.tzinfo is None:  # RFC 3339 requires an offset
        return None, True
    left = (exp - now).total_seconds()
    return (0.0, True) if left <= 0 else (left, False)


def groups(secret: Mapping[str, Any]) -> list[str]:
    """system:bootstrappers plus the token's auth-extra-groups, sorted; ValueError for a bad group."""
    out = {DEFAULT_GROUP}
    for g in secret_data(secret, EXTRA_GROUPS_KEY).split(","):
        g = g.strip()
        if not g:
            continue
        if not _GROUP_RE.match(g):
            raise ValueError(f"group {g!r} does not match the pattern {_GROUP_RE.pattern!r}")
        out.add(g)
    return sorted(out)


def is_bootstrap_secret(secret: Mapping[str, Any]) -> bool:
    meta = secret.get("metadata") or {}
    return (secret.get("type") == SECRET_TYPE and meta.get("namespace") == NAMESPACE
            and token_id_from_secret_name(str(meta.get("name") or "")) is not None)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def detached_signature(content: str, token_id: str, token_secret: str) -> str:
    """The compact JWS (HS256, kid=<token id>) of content with its payload left out: `<header>..<sig>`."""
    header = _b64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    signing_input = f"{header}.{_b64url(content.encode())}".encode()
    sig = hmac.new(token_secret.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}..{_b64url(sig)}"


def verify_detached(detached: str, content: str, token_id: str, token_secret: str) -> bool:
    return hmac.compare_digest(detached.encode(), detached_signature(content, token_id, token_secret).encode())


def bootstrap_secret(token: str, expiration: dt.datetime | None = None, usages: tuple[str, ...] = (
        "authentication", "signing"), extra_groups: tuple[str, ...] = (KUBEADM_GROUP,),
        description: str = "") -> dict[str, Any]:
    """The Secret for a token, as `kubeadm token create` writes it."""
    parsed = parse_token(token)
    if parsed is None:
        raise ValueError(f'the bootstrap token "{token}" was not of the form "[a-z0-9]{{6}}.[a-z0-9]{{16}}"')
    tid, tsecret = parsed
    data = {TOKEN_ID_KEY: tid, TOKEN_SECRET_KEY: tsecret}
    if expiration is not None:
        data[EXPIRATION_KEY] = expiration.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for u in usages:
        data[f"usage-bootstrap-{u}"] = "true"
    if extra_groups:
        data[EXTRA_GROUPS_KEY] = ",".join(extra_groups)
    if description:
        data["description"] = description
    return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
            "metadata": {"name": SECRET_PREFIX + tid, "namespace": NAMESPACE},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}
