"""Resource quantities and pod/node resource arithmetic as the scheduler sees them.

Kept local to the scheduler (a small exact parser on ``Fraction``) so the scheduler does not
depend on the API package's quantity type; results are the integers upstream's
``framework.Resource`` holds: cpu in millicores, everything else in base units, each rounded
up as ``Quantity.MilliValue()`` / ``Quantity.Value()`` do.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

__all__ = [
    "CPU",
    "MEMORY",
    "EPHEMERAL_STORAGE",
    "PODS",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "NON_MISSING_DEFAULTS",
    "parse_quantity",
    "quantity_to_int",
    "is_scalar_resource_name",
    "is_extended_resource_name",
    "pod_requests",
    "node_allocatable",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# As upstream pkg/scheduler/util: requests assumed for scoring when a container sets none.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_MISSING_DEFAULTS: Mapping[str, Fraction] = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QTY = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


@lru_cache(maxsize=4096)
def _parse_str(s: str) -> Fraction:
    m = _QTY.match(s.strip())
    if m is None or (not m.group(2) and not m.group(3)):
        raise ValueError(f"quantities must match the regular expression: {s!r}")
    sign, whole, frac, exp, suffix = m.groups()
    num = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if exp:
        num *= Fraction(10) ** int(exp[1:])
    elif suffix:
        num *= _BINARY.get(suffix) or _DECIMAL[suffix]
    return -num if sign == "-" else num


def parse_quantity(v: Any) -> Fraction:
    """Exact value of a quantity given as a string ("100m", "1Gi", "1e3") or a number."""
    if isinstance(v, bool):
        raise ValueError(f"not a quantity: {v!r}")
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        return Fraction(str(v))
    return _parse_str(str(v))


def _ceil(f: Fraction) -> int:
    return math.ceil(f)


def quantity_to_int(resource: str, v: Any | Fraction) -> int:
    """cpu as MilliValue, any other resource as Value (both round up, as upstream)."""
    f = v if isinstance(v, Fraction) else parse_quantity(v)
    return _ceil(f * 1000) if resource == CPU else _ceil(f)


def is_extended_resource_name(name: str) -> bool:
    # As upstream v1helper.IsExtendedResourceName: domain-prefixed, not kubernetes.io/, not requests.*
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_scalar_resource_name(name: str) -> bool:
    """hugepages-*, attachable-volumes-*, extended and prefixed-native resources (upstream IsScalarResourceName)."""
    return name.startswith("hugepages-") or name.startswith("attachable-volumes-") or "/" in name


def _known(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)


def _container_requests(c: Mapping[str, Any], non_missing: Mapping[str, Fraction] | None) -> dict[str, Fraction]:
    reqs = ((c.get("resources") or {}).get("requests")) or {}
    out = {k: parse_quantity(v) for k, v in reqs.items() if _known(k)}
    if non_missing:
        for k, v in non_missing.items():
            if k not in reqs:
                out[k] = v
    return out


def _add(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def _max_into(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def pod_requests(spec: Mapping[str, Any], non_missing: Mapping[str, Fraction] | None = None) -> dict[str, int]:
    """A pod's effective requests, as upstream resourcehelper.PodRequests (v1.33).

    Containers are summed; init containers run one at a time so the pod needs the max of each
    (plus the sidecars started before it); sidecars (init containers with restartPolicy
    Always) keep running and are added to the sum; overhead is added last. ``non_missing``
    fills requests a container leaves out (the scheduler's scoring defaults).
    """
    reqs: dict[str, Fraction] = {}
    for c in spec.get("containers") or ():
        _add(reqs, _container_requests(c, non_missing))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or ():
        r = _container_requests(c, non_missing)
        if c.get("restartPolicy") == "Always":
            _add(reqs, r)
            _add(sidecars, r)
            effective = dict(sidecars)
        else:
            effective = dict(r)
            _add(effective, sidecars)
        _max_into(init_max, effective)
    _max_into(reqs, init_max)
    overhead = spec.get("overhead")
    if overhead:
        _add(reqs, {k: parse_quantity(v) for k, v in overhead.items() if _known(k)})
    return {k: quantity_to_int(k, v) for k, v in reqs.items()}


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """The node's allocatable as scheduler integers (pods as a count); capacity if allocatable is unset."""
    status = node.get("status") or {}
    alloc = status.get("allocatable")
    if alloc is None:
        alloc = status.get("capacity") or {}
    out: dict[str, int] = {}
    for k, v in alloc.items():
        if k == PODS or _known(k):
            try:
                out[k] = quantity_to_int(k, v)
            except ValueError:
                continue
    return out
