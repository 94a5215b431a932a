"""The DefaultIngressClass admission plugin, as upstream's (on by default): an Ingress created
with neither `spec.ingressClassName` nor the deprecated `kubernetes.io/ingress.class`
annotation gets the IngressClass annotated `ingressclass.kubernetes.io/is-default-class: "true"`;
with several such classes, the newest (creation time, then the lower name), as upstream has
chosen since 1.25 instead of refusing. Updates are left alone."""

from __future__ import annotations

from typing import Any

from ..api.resources import Resource
from .rest import RequestContext, RestStorage

__all__ = ["default_ingress_class", "choose_default"]

DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


async def default_ingress_class(rest: RestStorage, res: Resource, op: str, ing: dict[str, Any],
                                old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != ("networking.k8s.io", "Ingress") or op != "CREATE":
        return
    spec = ing.get("spec") or {}
    if spec.get("ingressClassName") is not None:
        return
    if LEGACY_CLASS_ANNOTATION in ((ing.get("metadata") or {}).get("annotations") or {}):
        return
    classes = rest.registry.get("networking.k8s.io", "v1", "ingressclasses")
    assert classes is not None
    name = choose_default((await rest.cache_for(classes)).list(None))
    if name is not None:
        ing.setdefault("spec", {})["ingressClassName"] = name


def choose_default(classes: list[dict[str, Any]]) -> str | None:
    """The default IngressClass's name: of those annotated default, the newest, the lower name on a tie."""
    defaults = [c for c in classes
                if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    if not defaults:
        return None
    # RFC 3339 UTC timestamps of one format sort as text
    newest = max(c["metadata"].get("creationTimestamp") or "" for c in defaults)
    return min(c["metadata"]["name"] for c in defaults if (c["metadata"].get("creationTimestamp") or "") == newest)
