"""The RuntimeClass admission plug-in (upstream's plugin/pkg/admission/runtimeclass, on by
default): a pod created with `spec.runtimeClassName` must name an existing RuntimeClass
(node.k8s.io/v1); the class's `overhead.podFixed` becomes the pod's `spec.overhead` (a pod that
brings a different one is refused), its `scheduling.nodeSelector` is merged into the pod's (a
key the pod sets to another value is refused) and its tolerations merged into the pod's. The
validating half refuses a pod whose overhead no longer matches its class's (or that has an
overhead without a class giving one), whatever later mutating steps did. Only creates: a pod's
runtimeClassName, overhead and (mostly) scheduling fields are immutable."""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.quantity import QuantityError, parse_quantity
from ..api.resources import Resource
from .rest import RequestContext, RestStorage
from .tolerations import merge_tolerations

__all__ = ["admit", "validate"]


def _applies(res: Resource, op: str, ctx: RequestContext) -> bool:
    return res.group_kind == ("", "Pod") and op == "CREATE" and not ctx.subresource


def _forbidden(pod: dict[str, Any], msg: str) -> E.StatusError:
    return E.new_forbidden("pods", (pod.get("metadata") or {}).get("name", ""), msg)


async def _runtime_class(rest: RestStorage, pod: dict[str, Any]) -> dict[str, Any] | None:
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if name is None:
        return None
    rc_res = rest.registry.get("node.k8s.io", "v1", "runtimeclasses")
    assert rc_res is not None
    rc = await rest.get_current(rc_res, None, name)
    if rc is None:
        raise _forbidden(pod, f'pod rejected: RuntimeClass "{name}" not found')
    return rc


def _same_resources(a: Any, b: Any) -> bool:
    """Semantic equality of two resource lists (quantities compared by value; nil equals empty)."""
    a, b = a or {}, b or {}
    if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
        return False
    try:
        return all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except (QuantityError, ValueError, TypeError):
        return False


def _pod_fixed(rc: dict[str, Any] | None) -> Any:
    """The class's overhead, or None where it defines none."""
    overhead = (rc or {}).get("overhead")
    return None if overhead is None else (overhead.get("podFixed") or {})


async def admit(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if not _applies(res, op, ctx):
        return
    rc = await _runtime_class(rest, pod)
    if rc is None:
        return
    spec = pod.setdefault("spec", {})
    fixed = _pod_fixed(rc)
    if fixed is not None:
        if spec.get("overhead") and not _same_resources(fixed, spec["overhead"]):
            raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        spec["overhead"] = dict(fixed)
    scheduling = rc.get("scheduling")
    if scheduling is None:
        return
    rc_selector: dict[str, str] = scheduling.get("nodeSelector") or {}
    selector = spec.get("nodeSelector")
    if selector is None:
        selector = dict(rc_selector) if rc_selector else None
    else:
        for key, value in rc_selector.items():
            if key in selector and selector[key] != value:
                raise _forbidden(pod, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                      f"pod.spec.nodeSelector[{key}] = {selector[key]}")
            selector[key] = value
    if selector is not None:
        spec["nodeSelector"] = selector
    merged = merge_tolerations(spec.get("tolerations") or [], scheduling.get("tolerations") or [])
    if merged:
        spec["tolerations"] = merged


async def validate(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                   old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if not _applies(res, op, ctx):
        return
    fixed = _pod_fixed(await _runtime_class(rest, pod))
    overhead = (pod.get("spec") or {}).get("overhead")
    if fixed is not None:
        if not _same_resources(fixed, overhead):
            raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    elif overhead is not None:
        raise _forbidden(pod, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
