"""Which PersistentVolume a claim binds: upstream's pkg/controller/volume/persistentvolume/index.go.

Pure functions over wire-form dicts. As upstream:
- volumes are grouped by their access modes; the groups holding every mode the claim asks
  for are tried with the fewest modes first, and the first group with a match answers;
- inside a group the smallest volume of enough capacity wins;
- a volume pre-bound to the claim (claimRef names it) wins over any other in its group;
- with delayed binding (WaitForFirstConsumer) only pre-bound volumes match here: the
  scheduler binds the others once it picked the pod's node.
"""

from __future__ import annotations

from typing import Any

from ..api.labels import SelectorParseError, selector_from_label_selector
from ..api.quantity import Quantity, parse_quantity
from ..api.storage_classes import BETA_STORAGE_CLASS

__all__ = ["claim_class", "volume_class", "find_matching_volume", "check_volume_satisfies_claim",
           "is_volume_bound_to_claim", "storage_request", "storage_capacity"]

Obj = dict[str, Any]


def _md(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _spec(o: Obj) -> Obj:
    return o.get("spec") or {}


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName ("" = none)."""
    ann = _md(claim).get("annotations") or {}
    if BETA_STORAGE_CLASS in ann:
        return str(ann[BETA_STORAGE_CLASS])
    return str(_spec(claim).get("storageClassName") or "")


def volume_class(pv: Obj) -> str:
    ann = _md(pv).get("annotations") or {}
    if BETA_STORAGE_CLASS in ann:
        return str(ann[BETA_STORAGE_CLASS])
    return str(_spec(pv).get("storageClassName") or "")


def storage_request(claim: Obj) -> Quantity:
    req = ((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage")
    return parse_quantity(req) if req is not None else Quantity()


def storage_capacity(pv: Obj) -> Quantity | None:
    cap = (_spec(pv).get("capacity") or {}).get("storage")
    return parse_quantity(cap) if cap is not None else None


def is_volume_bound_to_claim(pv: Obj, claim: Obj) -> bool:
    """The volume's claimRef names this claim (and its UID, when the claimRef has one)."""
    ref = _spec(pv).get("claimRef")
    if not ref:
        return False
    md = _md(claim)
    if ref.get("name") != md.get("name") or (ref.get("namespace") or "") != (md.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == md.get("uid")


def _mode(o: Obj) -> str:
    return str(_spec(o).get("volumeMode") or "Filesystem")


def _selector_matches(claim: Obj, pv: Obj) -> bool:
    sel = _spec(claim).get("selector")
    if sel is None:
        return True
    try:
        return selector_from_label_selector(sel).matches(_md(pv).get("labels") or {})
    except SelectorParseError:
        return False


def check_volume_satisfies_claim(pv: Obj, claim: Obj) -> str | None:
    """checkVolumeSatisfyClaim, for a claim naming its volume: upstream's reason it cannot bind, or None."""
    cap = storage_capacity(pv)
    if cap is None or cap.cmp(storage_request(claim)) < 0:
        return "requested PV is too small"
    if volume_class(pv) != claim_class(claim):
        return "storageClassName does not match"
    if _mode(pv) != _mode(claim):
        return "incompatible volumeMode"
    if not set(_spec(claim).get("accessModes") or ()) <= set(_spec(pv).get("accessModes") or ()):
        return "incompatible accessMode"
    return None


def find_matching_volume(claim: Obj, volumes: list[Obj], delay_binding: bool) -> Obj | None:
    """findBestMatchForClaim: the volume this claim should bind, or None."""
    wanted = frozenset(_spec(claim).get("accessModes") or ())
    groups: dict[frozenset[str], list[Obj]] = {}
    for pv in volumes:
        modes = frozenset(_spec(pv).get("accessModes") or ())
        if wanted <= modes:
            groups.setdefault(modes, []).append(pv)
    request = storage_request(claim)
    cls = claim_class(claim)
    for modes in sorted(groups, key=len):
        best: Obj | None = None
        best_cap: Quantity | None = None
        for pv in sorted(groups[modes], key=lambda v: _md(v).get("name", "")):
            cap = storage_capacity(pv)
            if cap is None or cap.cmp(request) < 0:
                continue
            if _mode(pv) != _mode(claim) or _md(pv).get("deletionTimestamp"):
                continue
            if is_volume_bound_to_claim(pv, claim):
                return pv  # pre-bound by the user: the claim gets it whatever else fits
            if delay_binding:
                continue  # the scheduler binds once it picked the node
            if (pv.get("status") or {}).get("phase") != "Available" or _spec(pv).get("claimRef"):
                continue
            if not _selector_matches(claim, pv) or volume_class(pv) != cls:
                continue
            if best_cap is None or best_cap.cmp(cap) > 0:
                best, best_cap = pv, cap
        if best is not None:
            return best
    return None
