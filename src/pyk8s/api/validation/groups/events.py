"""events.k8s.io/v1 Event validation on its own wire form, as upstream's ValidateEventCreate
and ValidateEventUpdate for requests in events.k8s.io/v1 (the strict variant).

Upstream validates the internal (core) Event, so the legacy checks name the internal
fields (`involvedObject`, `message`, `reportingController`) while the strict ones name
the events.k8s.io fields (`deprecatedCount`, `series.count`, ...); kept that way here.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, invalid, required
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain
from ._common import as_dict, go_generic, semantic_equal

__all__ = ["validate_event", "validate_event_update", "VALIDATORS", "UPDATE_VALIDATORS"]

_LIMIT = 128
_NOTE_LIMIT = 1024


def _legacy(ev: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    ns = str((ev.get("metadata") or {}).get("namespace") or "")
    regarding = as_dict(ev.get("regarding"))
    rns = regarding.get("namespace") or ""
    if not ev.get("eventTime"):
        if (not rns and ns not in ("", "default")) or (rns and ns != rns):
            errs.append(invalid("involvedObject.namespace", rns, "does not match event.namespace"))
    else:
        if not rns and ns not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", rns, "does not match event.namespace"))
        rc = ev.get("reportingController") or ""
        if not rc:
            errs.append(required("reportingController"))
        errs += [invalid("reportingController", rc, m) for m in is_qualified_name(rc)]
        for f, limit in (("reportingInstance", _LIMIT), ("action", _LIMIT), ("reason", _LIMIT)):
            v = ev.get(f) or ""
            if not v:
                errs.append(required(f))
            if len(v) > limit:
                errs.append(invalid(f, "", f"can have at most {limit} characters"))
        if len(ev.get("note") or "") > _NOTE_LIMIT:
            errs.append(invalid("message", "", f"can have at most {_NOTE_LIMIT} characters"))
    errs += [invalid("namespace", ns, m) for m in is_dns1123_subdomain(ns)]
    return errs


def _series(ev: dict[str, Any]) -> list[FieldError]:
    series = ev.get("series")
    if not isinstance(series, dict):
        return []
    errs: list[FieldError] = []
    if (series.get("count") or 0) < 2:
        errs.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(required("series.lastObservedTime"))
    return errs


def validate_event(ev: dict[str, Any]) -> list[FieldError]:
    errs = _legacy(ev)
    errs += validate_object_meta(ev, True, name_is_dns_subdomain)
    errs += _series(ev)
    if not ev.get("eventTime"):
        errs.append(required("eventTime"))
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {ev.get('type') or ''}"))
    for f in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        if ev.get(f):
            errs.append(invalid(f, "", "needs to be unset"))
    src = as_dict(ev.get("deprecatedSource"))
    if src.get("component") or src.get("host"):
        errs.append(invalid("deprecatedSource", "", "needs to be unset"))
    return errs


# wire field -> the internal field name upstream's immutability errors use
_IMMUTABLE = (("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"),
              ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
              ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"), ("type", "type"),
              ("eventTime", "eventTime"), ("action", "action"), ("related", "related"),
              ("reportingController", "reportingController"), ("reportingInstance", "reportingInstance"))


def validate_event_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = _legacy(new)
    errs += validate_object_meta_update(new, old)
    if not semantic_equal(new.get("series"), old.get("series")):
        errs += _series(new)
    for wire, internal in _IMMUTABLE:
        nv = new.get(wire)
        if not semantic_equal(nv, old.get(wire)):
            shown = nv if isinstance(nv, (str, int)) and not isinstance(nv, bool) else GoValue(go_generic(nv))
            errs.append(invalid(internal, shown, "field is immutable"))
    return errs


VALIDATORS = {("events.k8s.io", "Event"): validate_event}
UPDATE_VALIDATORS = {("events.k8s.io", "Event"): validate_event_update}
