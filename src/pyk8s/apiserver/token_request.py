"""What a TokenRequest (serviceaccounts/token) binds its token to, and for how long, as upstream's TokenREST.

- `boundObjectRef` names a Pod, Secret or Node of the request's namespace (cluster for a Node); the
  token then carries its name and UID and dies with it (authn.py checks them on every request). A
  Pod must run as the requested ServiceAccount; a UID that differs from the live object's is a
  Conflict (the object was deleted and re-created). Anything else is refused, as upstream.
- A pod-bound token also names the pod's node (ServiceAccountTokenPodNodeInfo, GA in v1.32): name
  and UID, or the name alone while the Node object does not exist.
- Extended expiry (kube-apiserver's --service-account-extend-token-expiration, on by default): the
  kubelet asks for 3607 s for the kube-api-access volume; such a pod-bound token for the API
  server's own audience is issued for a year with a `warnafter` claim at 3607 s, so that clients
  that never re-read the file keep working while the server can tell they are stale.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from ..api import errors as E
from ..api.validation.names import validate_path_segment_name

__all__ = ["Binding", "resolve_binding", "lifetime", "credential_id", "WARN_ONLY_BOUND_TOKEN_EXPIRATION",
           "EXPIRATION_EXTENSION", "ISSUED_CREDENTIAL_ID_ANNOTATION"]

WARN_ONLY_BOUND_TOKEN_EXPIRATION = 3607  # upstream's serviceaccount.WarnOnlyBoundTokenExpirationSeconds
EXPIRATION_EXTENSION = 365 * 24 * 3600  # upstream's serviceaccount.ExpirationExtensionSeconds

# the TokenRequest's audit event names the token it issued (ServiceAccountTokenJTI)
ISSUED_CREDENTIAL_ID_ANNOTATION = "authentication.kubernetes.io/issued-credential-id"

_BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


@dataclass
class Binding:
    """The objects a token is bound to, as {name, uid} references (empty when unbound)."""

    pod: dict[str, str] | None = None
    secret: dict[str, str] | None = None
    node: dict[str, str] | None = None


def _ref(obj: dict[str, Any]) -> dict[str, str]:
    md = obj["metadata"]
    return {"name": md["name"], "uid": md.get("uid", "")}


def _gvk(api_version: str, kind: str) -> tuple[str, str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version, kind


async def resolve_binding(rest: Any, registry: Any, ns: str | None, sa_name: str,
                          ref: dict[str, Any] | None) -> Binding:
    """The live objects `ref` names (with the pod's node); StatusError as upstream for what cannot be bound."""
    if not ref:
        return Binding()
    group, version, kind = _gvk(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
    plural = _BINDABLE.get(kind) if group == "" else None
    if plural is None:
        raise E.new_bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    name = str(ref.get("name") or "")
    # the store's key function, as upstream's NamespaceKeyFunc / NoNamespaceKeyFunc answer
    if not name:
        raise E.new_bad_request("Name parameter required.")
    if msgs := validate_path_segment_name(name):
        raise E.new_bad_request(f'Name parameter invalid: "{name}": {";".join(msgs)}')
    res = registry.get("", "v1", plural)
    obj = await rest.get(res, None if kind == "Node" else ns, name)  # NotFound as a GET of it would answer
    if kind == "Pod" and sa_name != ((obj.get("spec") or {}).get("serviceAccountName") or "default"):
        raise E.new_bad_request(f'cannot bind token for serviceaccount "{sa_name}" to pod running with '
                                "different serviceaccount name.")
    if ref.get("uid") and ref["uid"] != obj["metadata"].get("uid"):
        raise E.new_conflict(kind, name, f"the UID in the bound object reference ({ref['uid']}) does not match "
                                         "the UID in record. The object might have been deleted and then recreated")
    if kind == "Secret":
        return Binding(secret=_ref(obj))
    if kind == "Node":
        return Binding(node=_ref(obj))
    binding = Binding(pod=_ref(obj))
    node_name = (obj.get("spec") or {}).get("nodeName")
    if node_name:
        node = await rest.get_current(registry.get("", "v1", "nodes"), None, node_name)
        binding.node = _ref(node) if node is not None else {"name": node_name}
    return binding


def lifetime(requested: int, binding: Binding, audiences: list[str], api_audiences: list[str]) -> tuple[int, int | None]:
    """(seconds the token is valid, seconds after which its use is flagged as stale or None)."""
    if (binding.pod is not None and requested == WARN_ONLY_BOUND_TOKEN_EXPIRATION
            and set(audiences) <= set(api_audiences)):  # upstream's isKubeAudiences: only the API server's own
        return EXPIRATION_EXTENSION, requested
    return requested, None


def credential_id(token: str) -> str:
    """`JTI=<jti>` of a JWT this server signed, as upstream's CredentialIDForJTI (empty without a jti)."""
    payload = token.split(".")[1]
    jti = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))).get("jti")
    return f"JTI={jti}" if jti else ""
