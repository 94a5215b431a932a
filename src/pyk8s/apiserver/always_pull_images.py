"""The AlwaysPullImages admission plug-in (upstream's plugin/pkg/admission/alwayspullimages,
off by default): every container, init container and ephemeral container of a pod gets
`imagePullPolicy: Always`, so a pod cannot use an image some other tenant pulled onto the
node without the credentials to pull it. Creates, and updates that bring an image the pod did
not have before, through the pod or its ephemeralcontainers subresource (an update that only
keeps images is left alone, as upstream's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from .rest import RequestContext, RestStorage

__all__ = ["admit", "validate"]

_KINDS = ("initContainers", "containers", "ephemeralContainers")


def _containers(pod: dict[str, Any] | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, container) for each container of the pod, in upstream's visiting order."""
    spec = (pod or {}).get("spec") or {}
    for kind in _KINDS:
        for i, c in enumerate(spec.get(kind) or []):
            if isinstance(c, dict):
                yield f"spec.{kind}[{i}]", c


def _applies(res: Resource, op: str, pod: dict[str, Any], old: dict[str, Any] | None,
             ctx: RequestContext) -> bool:
    # the ephemeralcontainers subresource too: a debug container must not run a cached image either
    if res.group_kind != ("", "Pod") or ctx.subresource not in ("", "ephemeralcontainers") \
            or op not in ("CREATE", "UPDATE"):
        return False
    if op == "UPDATE":
        before = {c.get("image") for _, c in _containers(old)}
        return any(c.get("image") not in before for _, c in _containers(pod))
    return True


def admit(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
          old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if _applies(res, op, pod, old, ctx):
        for _, c in _containers(pod):
            c["imagePullPolicy"] = "Always"


def validate(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
             old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if not _applies(res, op, pod, old, ctx):
        return
    for path, c in _containers(pod):
        if c.get("imagePullPolicy") != "Always":
            raise E.new_forbidden("pods", (pod.get("metadata") or {}).get("name", ""),
                                  f'{path}.imagePullPolicy: Unsupported value: "{c.get("imagePullPolicy") or ""}": '
                                  'supported values: "Always"')
