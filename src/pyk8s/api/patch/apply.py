"""Server-side apply and managed fields (metadata.managedFields), as kube-apiserver's field
manager does them.

`server_side_apply` handles a PATCH with content type application/apply-patch+yaml;
`update_managed_fields` records the manager of every other write (create, update, and the
other patch types) with operation Update. Both follow upstream's layering:

  * managers are keyed by (manager, operation, apiVersion for Update, subresource); entries
    are written sorted by operation, time, manager, apiVersion, subresource;
  * an Update manager owns what it added or changed (compared with the live object);
    fields it removed leave every manager; a manager's time changes only when it changed
    something; at most 10 Update managers are kept (older ones merge into
    "ancient-changes");
  * an apply merges the configuration into the live object (associative lists by key,
    atomic lists and maps replaced), takes ownership of exactly the configuration's fields,
    and removes fields this manager applied before and no longer applies, unless another
    manager owns them; a change to a field another manager owns is a conflict (409) unless
    `force`, which moves the ownership;
  * apiVersion, kind and the server-set metadata (name, namespace, uid, resourceVersion,
    generation, creationTimestamp, ...) are never owned; the reset fields of the resource
    (status on the main resource, spec on /status) are excluded;
  * `managedFields: []` or `[{}]` in an update resets tracking; managedFields supplied in
    an update are taken as the new base (that is how kubectl migrates client-side-apply
    ownership, see `kubectl_migrate_managed_fields_patch`);
  * for manager "kubectl", conflicts on fields that the live object's
    kubectl.kubernetes.io/last-applied-configuration annotation holds with their live values
    are allowed (the client-side to server-side apply upgrade), and that annotation is kept
    in step with the applied configuration.

Defaulting, validation, admission and storage are the caller's job (run defaulting on the
result of `server_side_apply`; call `update_managed_fields` after defaulting the new object,
before admission), mirroring where upstream calls its field manager.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from pyk8s.api.errors import StatusError

from ._common import bad_request, deepcopy_json, go_equal, go_json, go_q, raw_error
from ._schema import MAP, TypeNode, type_for_gvk, type_for_schema, zero_object
from ._typed import (
    TypedError,
    changed_map_fields_v1,
    compare,
    ensure_named_fields,
    merge,
    remove_items,
    to_field_set,
)
from .fieldpath import PE, FieldSet, FieldsV1Error, _pe_fields_key, path_string

__all__ = [
    "server_side_apply",
    "update_managed_fields",
    "managed_fields_entries",
    "manager_from_user_agent",
    "decode_managed_fields",
    "apply_conflict_error",
    "upgrade_managed_fields",
    "upgrade_managed_fields_patch",
    "find_fields_owners",
    "kubectl_migrate_managed_fields_patch",
    "LAST_APPLIED_ANNOTATION",
    "MAX_UPDATE_MANAGERS",
]

_log = logging.getLogger(__name__)

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
_ANCIENT = "ancient-changes"
_BEFORE_FIRST_APPLY = "before-first-apply"
_CURRENT_OPERATION = "current-operation"
_KUBECTL = "kubectl"
_TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_FIELD_MANAGER_MAX_LENGTH = 128

# Never owned by anyone (stripMetaManager).
_STRIP = FieldSet.from_paths([
    (("f", "apiVersion"),),
    (("f", "kind"),),
    (("f", "metadata"),),
    (("f", "metadata"), ("f", "name")),
    (("f", "metadata"), ("f", "namespace")),
    (("f", "metadata"), ("f", "creationTimestamp")),
    (("f", "metadata"), ("f", "selfLink")),
    (("f", "metadata"), ("f", "uid")),
    (("f", "metadata"), ("f", "clusterName")),
    (("f", "metadata"), ("f", "generation")),
    (("f", "metadata"), ("f", "managedFields")),
    (("f", "metadata"), ("f", "resourceVersion")),
])

_SERVER_METADATA = ("creationTimestamp", "uid", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")

_LAST_APPLIED_PATH = FieldSet.from_paths([
    (("f", "metadata"), ("f", "annotations"), ("f", LAST_APPLIED_ANNOTATION)),
])


# ---------------------------------------------------------------------------------------------
# Managed fields model


@dataclass
class _VS:
    """A manager's versioned field set."""

    set: FieldSet
    api_version: str
    applied: bool
    # (the set as decoded, its FieldsV1 as read) when that FieldsV1 is what to_fields_v1
    # writes for it: while the manager keeps that very set, encoding reuses the FieldsV1
    wire: tuple[FieldSet, bytes] | None = None


@dataclass
class _Managed:
    fields: dict[str, _VS]
    times: dict[str, str | None]

    def copy(self) -> _Managed:
        return _Managed(dict(self.fields), dict(self.times))


class _DecodeError(ValueError):
    pass


@functools.lru_cache(maxsize=4096)
def _manager_id(manager: str, operation: str, api_version: str, subresource: str) -> str:
    entry: dict[str, Any] = {}
    if manager:
        entry["manager"] = manager
    if operation:
        entry["operation"] = operation
    if api_version and operation != "Apply":
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return go_json(entry, sort_keys=False)


def _entry_id(entry: dict[str, Any]) -> str:
    return _manager_id(str(entry.get("manager") or ""), str(entry.get("operation") or ""),
                       str(entry.get("apiVersion") or ""), str(entry.get("subresource") or ""))


def _decode(entries: Any) -> _Managed:
    m = _Managed({}, {})
    if entries is None:
        return m
    if not isinstance(entries, list):
        raise _DecodeError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise _DecodeError(f"managed fields entry {i} must be an object")
        if e.get("operation") not in ("Apply", "Update"):
            raise _DecodeError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise _DecodeError("apiVersion must not be empty")
        ft = e.get("fieldsType") or ""
        if ft == "":
            raise _DecodeError(f"missing fieldsType in managed fields entry {i}")
        if ft != "FieldsV1":
            raise _DecodeError(f'invalid fieldsType "{ft}" in managed fields entry {i}')
        mid = _entry_id(e)
        try:
            fs, wire = _decode_set(e.get("fieldsV1"))
        except FieldsV1Error as err:
            raise _DecodeError(f"error decoding versioned set: {err}") from None
        m.fields[mid] = _VS(fs, str(e["apiVersion"]), e["operation"] == "Apply", wire)
        m.times[mid] = e.get("time")
    return m


def decode_managed_fields(entries: Any) -> dict[str, dict[str, Any]]:
    """Decode wire managedFields into {manager identifier: {"fields": FieldSet,
    "apiVersion": str, "applied": bool, "time": str|None}} (raises ValueError)."""
    m = _decode(entries)
    # copies: the decoded sets are memoised and shared, the caller may change its own
    return {mid: {"fields": vs.set.copy(), "apiVersion": vs.api_version, "applied": vs.applied,
                  "time": m.times.get(mid)} for mid, vs in m.fields.items()}


# Decoded field sets by their FieldsV1's JSON bytes. Most writes of an object read back the
# entries the previous write produced (Lease renewals, heartbeats, a pod's status patches),
# so encoding seeds this too. Bounded by the bytes of the keys (a set takes ~10x its JSON).
_SETS: OrderedDict[bytes, tuple[FieldSet, tuple[FieldSet, bytes] | None]] = OrderedDict()
_SETS_MAX_BYTES = 1 << 20
_sets_bytes = 0


def _decode_set(raw: Any) -> tuple[FieldSet, tuple[FieldSet, bytes] | None]:
    """FieldSet.from_fields_v1(raw) (shared: never change it), and (it, raw's JSON) when raw is
    exactly what to_fields_v1 writes for it."""
    try:
        key = orjson.dumps(raw) if isinstance(raw, dict) else None
    except TypeError:  # not JSON orjson writes
        key = None
    if key is not None:
        hit = _SETS.get(key)
        if hit is not None:
            _SETS.move_to_end(key)
            return hit
    fs, canonical = FieldSet.decode_fields_v1(raw)
    if key is None:
        return fs, None
    wire = (fs, key) if canonical else None
    _remember(key, fs, wire)
    return fs, wire


def _remember(key: bytes, fs: FieldSet, wire: tuple[FieldSet, bytes] | None) -> None:
    global _sets_bytes
    if key in _SETS or len(key) > _SETS_MAX_BYTES // 64:
        return
    _SETS[key] = (fs, wire)
    _sets_bytes += len(key)
    while _sets_bytes > _SETS_MAX_BYTES:
        old, _ = _SETS.popitem(last=False)
        _sets_bytes -= len(old)


@functools.lru_cache(maxsize=4096)
def _ident(mid: str) -> dict[str, Any]:
    """A manager identifier's fields (memoised; read only)."""
    return json.loads(mid)


def _unix(t: str | None) -> float:
    if not t:
        return 0.0
    if type(t) is str:
        return _unix_str(t)
    return _unix_str.__wrapped__(t)


@functools.lru_cache(maxsize=4096)
def _unix_str(t: str) -> float:
    try:
        return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() // 1
    except ValueError:
        return 0.0


def _entry(mid: str, applied: bool, api_version: str, t: str | None, fields_v1: dict[str, Any]) -> dict[str, Any]:
    """One wire managedFields entry."""
    ident = _ident(mid)
    entry: dict[str, Any] = {}
    if ident.get("manager"):
        entry["manager"] = ident["manager"]
    op = "Apply" if applied else ident.get("operation", "")
    if op:
        entry["operation"] = op
    if api_version:
        entry["apiVersion"] = api_version
    if t:
        entry["time"] = t
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = fields_v1
    if ident.get("subresource"):
        entry["subresource"] = ident["subresource"]
    return entry


def _fields_v1(vs: _VS) -> dict[str, Any]:
    wire = vs.wire
    if wire is not None and wire[0] is vs.set:
        return orjson.loads(wire[1])  # a copy of what was read: the same bytes, key order kept
    fields_v1 = vs.set.to_fields_v1()
    key = orjson.dumps(fields_v1)
    _remember(key, vs.set, (vs.set, key))  # what the object's next write will read
    return fields_v1


def _encode(m: _Managed) -> list[dict[str, Any]] | None:
    if not m.fields:
        return None
    entries = [_entry(mid, vs.applied, vs.api_version, m.times.get(mid), _fields_v1(vs))
               for mid, vs in m.fields.items()]
    entries.sort(key=lambda e: (e.get("operation", ""), _unix(e.get("time")), e.get("manager", ""),
                                e.get("apiVersion", ""), e.get("subresource", "")))
    return entries


def _is_reset(mf: Any) -> bool:
    if mf is None or not isinstance(mf, list):
        return False
    if len(mf) == 0:
        return True
    return len(mf) == 1 and mf[0] == {}


def _strip(fields: dict[str, _VS], mid: str) -> None:
    vs = fields.get(mid)
    if vs is None:
        return
    s = vs.set.difference(_STRIP)
    if s.empty():
        del fields[mid]
    else:
        fields[mid] = _VS(s, vs.api_version, vs.applied, vs.wire)


def _cap(m: _Managed, limit: int = MAX_UPDATE_MANAGERS) -> None:
    updaters = [mid for mid, vs in m.fields.items() if not vs.applied]
    if len(updaters) <= limit:
        return
    updaters.sort(key=lambda mid: (_unix(m.times.get(mid)), mid))
    first_by_version: dict[str, str] = {}
    length = len(updaters)
    for mid in updaters:
        if length <= limit:
            break
        vs = m.fields[mid]
        t = m.times.get(mid)
        bucket = _manager_id(_ANCIENT, "Update", vs.api_version, "")
        first = first_by_version.get(vs.api_version)
        if first is None:
            first_by_version[vs.api_version] = mid
            continue
        if bucket not in m.fields:
            m.fields[bucket] = m.fields.pop(first)
        m.fields[bucket] = _VS(vs.set.union(m.fields[bucket].set), vs.api_version, vs.applied, m.fields[bucket].wire)
        del m.fields[mid]
        length -= 1
        m.times[bucket] = t


# ---------------------------------------------------------------------------------------------
# Context


@dataclass
class _Ctx:
    t: TypeNode
    version: str
    kind: str
    group: str
    subresource: str
    ignored: FieldSet
    now: str
    builtin: bool

    @property
    def gvk(self) -> str:
        g, _, v = self.version.rpartition("/")
        return f"{g}/{v}, Kind={self.kind}"


def _now(now: Any) -> str:
    if now is None:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(now, datetime):
        if now.tzinfo is not None:
            now = now.astimezone(UTC)
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(now)


def _context(obj: dict[str, Any], api_version: str | None, kind: str | None, schema: dict[str, Any] | None,
             subresource: str, reset_fields: Any, now: Any) -> _Ctx:
    version = api_version or str(obj.get("apiVersion") or "")
    kind = kind or str(obj.get("kind") or "")
    group, _, ver = version.rpartition("/")
    t = None if schema is not None else type_for_gvk(group, ver, kind)
    builtin = t is not None
    if t is None:
        t = type_for_schema(schema)
    if reset_fields is None:
        if subresource == "status":
            paths: list[tuple[str, ...]] = [("spec",)]
        elif not subresource and builtin and t.kind == MAP and t.has_field("status"):
            paths = [("status",)]
        else:
            paths = []
    else:
        paths = [tuple(p) if not isinstance(p, str) else tuple(p.split(".")) for p in reset_fields]
    return _Ctx(t, version, kind, group, subresource, _ignored_set(tuple(paths)), _now(now), builtin)


@functools.lru_cache(maxsize=256)
def _ignored_set(paths: tuple[tuple[str, ...], ...]) -> FieldSet:
    """The reset fields' set (memoised per write: FieldSets are values once built)."""
    return FieldSet.from_paths([tuple(("f", x) for x in p) for p in paths if p])


@functools.lru_cache(maxsize=1024)
def _builtin_zero(version: str, kind: str) -> dict[str, Any]:
    """zero_object of a built-in kind, memoised per write: shared, so only ever compared with."""
    group, _, ver = version.rpartition("/")
    t = type_for_gvk(group, ver, kind)
    assert t is not None
    return zero_object(t, version, kind)


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict) and "managedFields" in md:
        obj = dict(obj)
        md = dict(md)
        md.pop("managedFields", None)
        obj["metadata"] = md
    return obj


def _drop_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


# ---------------------------------------------------------------------------------------------
# structured-merge-diff's Updater


class _Conflicts(Exception):
    def __init__(self, conflicts: list[tuple[str, tuple[PE, ...]]]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


def _exclude(fs: FieldSet, ignored: FieldSet) -> FieldSet:
    return fs.recursive_difference(ignored) if not ignored.empty() else fs


def _smd_update(ctx: _Ctx, old: dict[str, Any], new: dict[str, Any], managers: dict[str, _VS], workflow: str,
                force: bool, diff: tuple[FieldSet, FieldSet, FieldSet] | None = None,
                ) -> tuple[dict[str, _VS], tuple[FieldSet, FieldSet, FieldSet]]:
    added, modified, removed = diff if diff is not None else compare(old, new, ctx.t)
    if not any(mid != workflow for mid in managers):
        # nobody else owns fields (every create): no conflicts to find, nobody loses fields
        return {mid: vs for mid, vs in managers.items() if not vs.set.empty()}, (added, modified, removed)
    ex_added, ex_modified, ex_removed = (_exclude(added, ctx.ignored), _exclude(modified, ctx.ignored),
                                         _exclude(removed, ctx.ignored))
    changed = ex_modified.union(ex_added)
    conflicts: dict[str, FieldSet] = {}
    for mid, vs in managers.items():
        if mid == workflow:
            continue
        c = vs.set.intersection(changed)
        if not c.empty():
            conflicts[mid] = c
    if conflicts and not force:
        listed: list[tuple[str, tuple[PE, ...]]] = []
        for mid in sorted(conflicts):
            listed.extend((mid, p) for p in conflicts[mid].iter_paths())
        raise _Conflicts(listed)
    out: dict[str, _VS] = {}
    for mid, vs in managers.items():
        s = vs.set
        if mid != workflow:
            if mid in conflicts:
                s = s.difference(conflicts[mid])
            if not ex_removed.empty():
                s = s.difference(ex_removed)
        if not s.empty():
            out[mid] = _VS(s, vs.api_version, vs.applied, vs.wire)
    return out, (added, modified, removed)


def _smd_update_manager(ctx: _Ctx, live: dict[str, Any], new: dict[str, Any], managers: dict[str, _VS],
                        mid: str, diff: tuple[FieldSet, FieldSet, FieldSet] | None = None) -> dict[str, _VS]:
    managers, (added, modified, removed) = _smd_update(ctx, live, new, managers, mid, True, diff)
    prev = managers.get(mid)
    s = (prev.set if prev else FieldSet()).union(modified).union(added).difference(removed)
    s = _exclude(s, ctx.ignored)
    if s.empty():
        managers.pop(mid, None)
    else:
        managers[mid] = _VS(s, ctx.version, False, prev.wire if prev else None)
    return managers


def _prune(ctx: _Ctx, merged: dict[str, Any], managers: dict[str, _VS], last: _VS | None) -> dict[str, Any]:
    if last is None or last.set.empty():
        return merged
    t = ctx.t
    last_e = ensure_named_fields(last.set, t)
    pruned = remove_items(merged, last_e, t) or {}
    managed = FieldSet()
    for vs in managers.values():
        managed = managed.union(vs.set)
    merged_e = ensure_named_fields(to_field_set(merged, t, strict=False), t)
    pruned_e = ensure_named_fields(to_field_set(pruned, t, strict=False), t)
    managed_e = ensure_named_fields(managed, t)
    pruned = remove_items(merged, merged_e.difference(pruned_e.union(managed_e)), t) or {}
    pruned_e = ensure_named_fields(to_field_set(pruned, t, strict=False), t)
    return remove_items(merged, merged_e.difference(pruned_e).intersection(last_e), t) or {}


def _smd_apply(ctx: _Ctx, live: dict[str, Any], config: dict[str, Any], config_set: FieldSet,
               managers: dict[str, _VS], mid: str, force: bool) -> tuple[dict[str, Any] | None, dict[str, _VS]]:
    new = merge(live, config, ctx.t, drop_null=ctx.builtin)
    last = managers.get(mid)
    managers = dict(managers)
    managers[mid] = _VS(_exclude(config_set, ctx.ignored), ctx.version, True)
    new = _prune(ctx, new, managers, last)
    managers, _ = _smd_update(ctx, live, new, managers, mid, force)
    if go_equal(live, new):
        return None, managers
    return new, managers


# ---------------------------------------------------------------------------------------------
# Field manager layers


def _update_chain(ctx: _Ctx, live: dict[str, Any], new: dict[str, Any], managed: _Managed, manager: str) -> _Managed:
    """capManagers(buildManagerInfo(managedFieldsUpdater(stripMeta(structuredMerge)))).Update"""
    mid = _manager_id(manager, "Update", ctx.version, ctx.subresource)
    before = managed.fields.get(mid)
    if before is not None:
        diff = compare(live, new, ctx.t)
        same = _owned_change(ctx, diff, managed, mid, before)
        if same is not None:
            return same
        fields = _smd_update_manager(ctx, live, new, dict(managed.fields), _CURRENT_OPERATION, diff)
    else:
        fields = _smd_update_manager(ctx, live, new, dict(managed.fields), _CURRENT_OPERATION)
    _strip(fields, _CURRENT_OPERATION)
    times = dict(managed.times)
    vs = fields.pop(_CURRENT_OPERATION, None)
    if vs is not None:
        prev = fields.get(mid)
        s = vs.set.union(prev.set) if prev else vs.set
        before = managed.fields.get(mid)
        if before is not None and s == before.set:
            # the manager changed only what it owned already (Lease renewals, heartbeats):
            # its set as read, whose FieldsV1 encoding can reuse
            s = before.set
        fields[mid] = _VS(s, vs.api_version, False, before.wire if before else None)
        times[mid] = ctx.now
    m = _Managed(fields, times)
    _cap(m)
    return m


def _owned_change(ctx: _Ctx, diff: tuple[FieldSet, FieldSet, FieldSet], managed: _Managed, mid: str,
                  before: _VS) -> _Managed | None:
    """What _update_chain gives when the write only changed fields `mid` owns already and nobody
    else owns (a Lease renewal, a heartbeat, a status patch by its usual writer), worked out
    without the set algebra: every manager keeps its set and `mid`'s time moves if anything
    changed. None when that does not follow (fields removed, shared, new to `mid`, never-owned
    fields, empty sets to drop, too many managers): the general path decides then."""
    added, modified, removed = diff
    if not removed.empty():
        return None
    changed = _exclude(modified.union(added), ctx.ignored)
    if not _disjoint(changed, _STRIP) or not _subset(changed, before.set):
        return None
    updaters = 0
    for other, vs in managed.fields.items():
        if vs.set.empty():
            return None
        if not vs.applied:
            updaters += 1
        if other != mid and not _disjoint(changed, vs.set):
            return None
    if updaters > MAX_UPDATE_MANAGERS:
        return None
    fields = dict(managed.fields)
    fields[mid] = _VS(before.set, ctx.version, False, before.wire)
    times = dict(managed.times)
    if not changed.empty():
        times[mid] = ctx.now
    return _Managed(fields, times)


def _subset(a: FieldSet, b: FieldSet) -> bool:
    """Every path of `a` is a path of `b` (walks `a` only)."""
    if not a.members <= b.members:
        return False
    for pe, c in a.children.items():
        bc = b.children.get(pe)
        if bc is None:
            if not c.empty():
                return False
        elif not _subset(c, bc):
            return False
    return True


def _disjoint(a: FieldSet, b: FieldSet) -> bool:
    """No path in both (walks the smaller side's levels only)."""
    if not a.members.isdisjoint(b.members):
        return False
    ac, bc = a.children, b.children
    if len(bc) < len(ac):
        ac, bc = bc, ac
    for pe, c in ac.items():
        other = bc.get(pe)
        if other is not None and not _disjoint(c, other):
            return False
    return True


def _typed_patch_error(ctx: _Ctx, config: dict[str, Any], err: TypedError) -> StatusError:
    raw = config.get("metadata")
    md: dict[str, Any] = raw if isinstance(raw, dict) else {}
    ns = md.get("namespace") or ""
    name = md.get("name") or ""
    av = str(config.get("apiVersion") or "")
    g, _, v = av.rpartition("/")
    gvk = f"{g}/{v}, Kind={config.get('kind') or ''}"
    return raw_error(f"failed to create typed patch object ({ns}/{name}; {gvk}): {err}")


def _apply_inner(ctx: _Ctx, live: dict[str, Any], config: dict[str, Any], config_set: FieldSet,
                 managed: _Managed, manager: str, force: bool) -> tuple[dict[str, Any], _Managed]:
    # skipNonApplied: an object nobody tracks yet gets its current fields attributed first.
    if not managed.fields:
        empty = _builtin_zero(ctx.version, ctx.kind) if ctx.builtin else {
            "apiVersion": ctx.version, "kind": ctx.kind, "metadata": {}}
        managed = _update_chain(ctx, empty, live, managed, _BEFORE_FIRST_APPLY)
    mid = _manager_id(manager, "Apply", ctx.version, ctx.subresource)
    new, fields = _smd_apply(ctx, live, config, config_set, managed.fields, mid, force)
    _strip(fields, mid)
    times = dict(managed.times)
    if new is not None:
        times[mid] = ctx.now
    else:
        new = live
    return new, _Managed(fields, times)


def _allowed_from_last_applied(ctx: _Ctx, live: dict[str, Any]) -> FieldSet | None:
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != ctx.version:
        return None
    try:
        fs = to_field_set(last, ctx.t, strict=True)
    except TypedError:
        return None
    added, modified, removed = compare(last, live, ctx.t)
    return fs.difference(modified).difference(added).difference(removed)


def _build_last_applied(config: dict[str, Any]) -> str:
    obj = deepcopy_json(config)
    md = obj.get("metadata")
    if isinstance(md, dict) and isinstance(md.get("annotations"), dict):
        md["annotations"].pop(LAST_APPLIED_ANNOTATION, None)
    return go_json(obj) + "\n"


def _set_last_applied(obj: dict[str, Any], value: str) -> None:
    md = obj.setdefault("metadata", {})
    annotations = dict(md.get("annotations") or {})
    annotations[LAST_APPLIED_ANNOTATION] = value
    total = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if total > _TOTAL_ANNOTATION_SIZE_LIMIT:
        annotations.pop(LAST_APPLIED_ANNOTATION, None)
    md["annotations"] = annotations


def _print_manager(mid: str) -> str:
    try:
        ident = json.loads(mid)
    except ValueError:
        return go_q(mid)
    s = go_q(str(ident.get("manager", "")))
    if ident.get("subresource"):
        s = f"{s} with subresource {go_q(ident['subresource'])}"
    if ident.get("operation") == "Update":
        return f"{s} using {ident.get('apiVersion', '')}"
    return s


def apply_conflict_error(conflicts: list[tuple[str, tuple[PE, ...]]]) -> StatusError:
    """The 409 of a failed apply, worded as upstream's NewConflictError. `conflicts` holds
    (manager identifier, path) pairs."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(mid)}",
               "field": path_string(path)} for mid, path in conflicts]
    if len(conflicts) == 1:
        mid, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_print_manager(mid)}: {path_string(path)}"
    else:
        by_manager: dict[str, list[tuple[PE, ...]]] = {}
        for mid, path in conflicts:
            by_manager.setdefault(mid, []).append(path)
        lines: list[str] = []
        for mid in sorted(by_manager):
            lines.append(f"conflicts with {_print_manager(mid)}:")
            lines.extend(f"- {path_string(p)}" for p in by_manager[mid])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def server_side_apply(current: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool = False,
                      api_version: str | None = None, now: Any = None, schema: dict[str, Any] | None = None, *,
                      kind: str | None = None, subresource: str = "",
                      reset_fields: Any = None) -> dict[str, Any]:
    """Apply `applied` (the decoded apply configuration) for `manager` to `current` (None
    to create) and return the resulting object with its managedFields.

    `api_version` is the request's group/version (default: the configuration's); `kind`
    the resource's kind (default: current's, else the configuration's). `schema` is a custom
    resource's openAPIV3Schema (its x-kubernetes-list-type/map-type drive merging); without
    one a kind that has no built-in definition is treated as free-form. `reset_fields` lists
    the top-level paths (tuples or dotted strings) this endpoint ignores; by default `status`
    on the main resource of built-in kinds and `spec` on the status subresource.

    Raises StatusError: 400 for a wrong apiVersion/kind or a configuration carrying
    metadata.managedFields, 409 on conflicts, 500 for a configuration that does not fit the
    schema (as upstream's "failed to create typed patch object")."""
    if not isinstance(applied, dict):
        raise bad_request("error decoding YAML: the apply configuration must be an object")
    if not manager:
        raise StatusError(
            422, "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            {"group": "meta.k8s.io", "kind": "PatchOptions",
             "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
                         "field": "fieldManager"}]})
    if kind is None:
        kind = str((current or {}).get("kind") or applied.get("kind") or "")
    expected_version = api_version or str(applied.get("apiVersion") or "")
    cfg_version = str(applied.get("apiVersion") or "")
    cfg_kind = str(applied.get("kind") or "")
    if cfg_version != expected_version or cfg_kind != kind:
        g, _, v = cfg_version.rpartition("/")
        raise bad_request(f"invalid object type: {g}/{v}, Kind={cfg_kind}")
    cmd = applied.get("metadata")
    if isinstance(cmd, dict) and cmd.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")

    ctx = _context(applied, expected_version, kind, schema, subresource, reset_fields, now)
    if current is None:
        live = zero_object(ctx.t, ctx.version, ctx.kind) if ctx.builtin else {}
        live_entries = None
    else:
        live = deepcopy_json(current)
        live_entries = (live.get("metadata") or {}).get("managedFields")
        live = _without_managed_fields(live)
    try:
        managed = _decode(live_entries)
    except _DecodeError as e:
        raise raw_error(f"failed to decode managed fields: {e}") from None

    config = deepcopy_json(applied)
    try:
        config_set = to_field_set(config, ctx.t, strict=True)
    except TypedError as e:
        raise _typed_patch_error(ctx, config, e) from None

    try:
        try:
            obj, result = _apply_inner(ctx, live, config, config_set, managed, manager, force)
        except _Conflicts as c:
            # lastAppliedManager: kubectl's first server-side apply may take over what its
            # client-side apply set, as recorded in the last-applied annotation.
            if manager != _KUBECTL:
                raise
            allowed = _allowed_from_last_applied(ctx, live)
            if allowed is None:
                raise
            remaining = [(mid, p) for mid, p in c.conflicts if not allowed.has(p)]
            if remaining:
                raise _Conflicts(remaining) from None
            obj, result = _apply_inner(ctx, live, config, config_set, managed, manager, True)
    except _Conflicts as c:
        raise apply_conflict_error(c.conflicts) from None

    obj = deepcopy_json(obj)
    if manager == _KUBECTL:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if isinstance(annotations, dict) and annotations.get(LAST_APPLIED_ANNOTATION):
            _set_last_applied(obj, _build_last_applied(applied))
    if current is not None:
        # A configuration carrying `creationTimestamp: null` (kubectl's dry-run output does)
        # changes the object, as upstream counts it, but the registry keeps the server-set
        # metadata; restore it here too so callers cannot lose it.
        live_md = live.get("metadata") or {}
        out_md = obj.get("metadata")
        if isinstance(out_md, dict):
            for key in _SERVER_METADATA:
                if key in live_md and out_md.get(key) is None:
                    out_md[key] = deepcopy_json(live_md[key])
    if ctx.builtin:
        if current is None:
            # The typed empty object's nulls (creationTimestamp, unset required lists) are
            # absent on the wire.
            obj = _drop_nulls(obj)
        for top in ("spec", "status"):
            if top not in obj and isinstance(live.get(top), dict):
                obj[top] = {}
    _put_managed(obj, result)
    return obj


def _put_managed(obj: dict[str, Any], m: _Managed) -> None:
    entries = _encode(m)
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = obj["metadata"] = {}
    if entries is None:
        md.pop("managedFields", None)
    else:
        md["managedFields"] = entries


def update_managed_fields(old: dict[str, Any] | None, new: dict[str, Any], manager: str, operation: str = "Update",
                          api_version: str | None = None, now: Any = None, *, schema: dict[str, Any] | None = None,
                          kind: str | None = None, subresource: str = "", reset_fields: Any = None) -> dict[str, Any]:
    """Record `manager` (operation Update) for a write that turned `old` (None on create)
    into `new`; return a copy of `new` with metadata.managedFields set.

    As upstream, managedFields present in `new` are taken as the base (so clients can edit
    them, and `[]` or `[{}]` resets them), otherwise the live object's are used; an object
    that is not tracked yet starts being tracked only on create; on subresources the
    request's managedFields are ignored. Never raises for schema problems: like upstream's
    UpdateNoErrors it then keeps the live object's managedFields."""
    entries = managed_fields_entries(old, new, manager, operation, api_version, now, schema=schema, kind=kind,
                                     subresource=subresource, reset_fields=reset_fields)
    result = deepcopy_json(new)
    result_md = result.get("metadata")
    if not isinstance(result_md, dict):
        return result
    if entries is None:
        result_md.pop("managedFields", None)
    else:
        result_md["managedFields"] = entries
    return result


def managed_fields_entries(old: dict[str, Any] | None, new: dict[str, Any], manager: str,
                           operation: str = "Update", api_version: str | None = None, now: Any = None, *,
                           schema: dict[str, Any] | None = None, kind: str | None = None, subresource: str = "",
                           reset_fields: Any = None) -> list[dict[str, Any]] | None:
    """The metadata.managedFields update_managed_fields sets on its copy of `new` (None: none),
    without copying the object (the API server's write path needs only the entries)."""
    if operation != "Update":
        raise ValueError(f"update_managed_fields records Update operations, not {operation!r}")
    if kind is None:
        kind = str(new.get("kind") or (old or {}).get("kind") or "")
    ctx = _context(new, api_version, kind, schema, subresource, reset_fields, now)
    new_md = new.get("metadata")
    if not isinstance(new_md, dict):
        return None
    new_entries = new_md.get("managedFields")
    live_entries = ((old or {}).get("metadata") or {}).get("managedFields")

    if subresource:
        managed = _decode_or_empty(live_entries)
    elif _is_reset(new_entries):
        managed = _Managed({}, {})
    else:
        try:
            managed = _decode(new_entries)
        except _DecodeError:
            managed = _Managed({}, {})
        if not managed.fields:
            managed = _decode_or_empty(live_entries)
    view = _without_managed_fields(new)  # compared, never changed

    is_create = old is None or not ((old.get("metadata") or {}).get("uid"))
    if not managed.fields and not is_create:
        # skipNonApplied: updates do not start tracking an untracked object.
        return None
    if old is None:
        live = _builtin_zero(ctx.version, ctx.kind) if ctx.builtin else {}
    else:
        live = _without_managed_fields(old)
    try:
        if old is None and not managed.fields and not ctx.ignored.children:
            return _created_entries(ctx, live, view, manager)
        m = _update_chain(ctx, live, view, managed, manager)
    except Exception:  # noqa: BLE001 - UpdateNoErrors: never fail the write over bookkeeping
        _log.exception("[SHOULD NOT HAPPEN] failed to update managedFields for %s %s; kept the live ones",
                       ctx.gvk, (new_md.get("namespace") or "") + "/" + str(new_md.get("name") or ""))
        return deepcopy_json(live_entries) if live_entries is not None else None
    return _encode(m)


def _created_entries(ctx: _Ctx, zero: dict[str, Any], new: dict[str, Any], manager: str) -> list[dict[str, Any]] | None:
    """_encode(_update_chain(ctx, zero, new, no managers, manager)) for a create, in one walk:
    with no managers yet the only entry is compare(zero, new)'s added and modified fields (less
    the reset fields and the never-owned ones), written straight as FieldsV1 (a pod create
    spent ~40% of its managedFields time building and emitting the FieldSets)."""
    skip = {pe[1] for pe in ctx.ignored.members}  # top-level reset fields (no nested ones here)
    fields_v1 = changed_map_fields_v1(zero, new, ctx.t, skip)
    if fields_v1 is None:
        return None
    _difference_fields_v1(fields_v1, _STRIP)
    if not fields_v1:
        return None
    mid = _manager_id(manager, "Update", ctx.version, ctx.subresource)
    return [_entry(mid, False, ctx.version, ctx.now, fields_v1)]


def _difference_fields_v1(fields_v1: dict[str, Any], fs: FieldSet) -> None:
    """FieldSet.difference on the FieldsV1 form, in place: `fields_v1` less the paths of `fs`
    (a node leaves, what is owned below it stays)."""
    for pe, sub_fs in fs.children.items():
        key = _pe_fields_key(pe)
        sub = fields_v1.get(key)
        if sub:
            _difference_fields_v1(sub, sub_fs)
            if not sub:  # not owned itself, nothing owned below it left
                del fields_v1[key]
            elif len(sub) == 1 and "." in sub:  # owned, nothing below: a leaf
                fields_v1[key] = {}
    for pe in fs.members:
        key = _pe_fields_key(pe)
        sub = fields_v1.get(key)
        if sub is None:
            continue
        if not sub:
            del fields_v1[key]
        else:
            sub.pop(".", None)


def _decode_or_empty(entries: Any) -> _Managed:
    try:
        return _decode(entries)
    except _DecodeError:
        return _Managed({}, {})


def manager_from_user_agent(field_manager: str | None, user_agent: str | None) -> str:
    """The manager name upstream records when a request names no fieldManager: the
    user agent up to its first "/", without unprintable characters, at most 128 bytes."""
    if field_manager:
        return field_manager
    prefix = (user_agent or "").split("/", 1)[0]
    if prefix.isprintable() and len(prefix) * 4 <= _FIELD_MANAGER_MAX_LENGTH:  # the usual case: as it is
        return prefix
    out = []
    size = 0
    for ch in prefix:
        if not ch.isprintable():
            continue
        n = len(ch.encode("utf-8"))
        if size + n > _FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# kubectl's client-side to server-side apply migration (k8s.io/client-go/util/csaupgrade)


def find_fields_owners(entries: list[dict[str, Any]], operation: str, fields: FieldSet) -> list[dict[str, Any]]:
    """Entries of `operation` whose field set contains all of `fields`."""
    out = []
    for e in entries or []:
        if e.get("operation") != operation:
            continue
        try:
            fs = FieldSet.from_fields_v1(e.get("fieldsV1"))
        except FieldsV1Error:
            continue
        if fields.difference(fs).empty():
            out.append(e)
    return out


def _upgraded(entries: list[dict[str, Any]], csa: str, ssa: str, subresource: str) -> list[dict[str, Any]]:
    entries = [dict(e) for e in entries]

    def find(pred: Any) -> int:
        return next((i for i, e in enumerate(entries) if pred(e)), -1)

    def is_csa(e: dict[str, Any]) -> bool:
        return e.get("manager") == csa and e.get("operation") == "Update" and (e.get("subresource") or "") == subresource

    idx = find(lambda e: e.get("manager") == ssa and e.get("operation") == "Apply"
               and (e.get("subresource") or "") == subresource)
    if idx < 0:
        idx = find(is_csa)
        if idx < 0:
            return entries
        entries[idx]["operation"] = "Apply"
        entries[idx]["manager"] = ssa
    target = entries[idx]
    combined = FieldSet.from_fields_v1(target.get("fieldsV1"))
    other = find(lambda e: is_csa(e) and e.get("apiVersion") == target.get("apiVersion"))
    if other >= 0:
        combined = combined.union(FieldSet.from_fields_v1(entries[other].get("fieldsV1")))
    target["fieldsType"] = "FieldsV1"
    target["fieldsV1"] = combined.to_fields_v1()
    return [e for e in entries if not is_csa(e)]


def upgrade_managed_fields(entries: list[dict[str, Any]] | None, csa_managers: Any, ssa_manager: str,
                           subresource: str = "") -> list[dict[str, Any]] | None:
    """csaupgrade.UpgradeManagedFields on wire entries: fold the Update entries of the
    client-side-apply managers into `ssa_manager`'s Apply entry (creating it from the most
    recent such entry if needed)."""
    if entries is None:
        return None
    out = deepcopy_json(entries)
    for csa in sorted(csa_managers):
        out = _upgraded(out, csa, ssa_manager, subresource)
    return out


def upgrade_managed_fields_patch(obj: dict[str, Any], csa_managers: Any, ssa_manager: str,
                                 subresource: str = "") -> list[dict[str, Any]] | None:
    """The JSON patch kubectl sends to migrate ownership (None when nothing changes)."""
    md = obj.get("metadata") or {}
    entries = md.get("managedFields")
    upgraded = upgrade_managed_fields(entries, csa_managers, ssa_manager, subresource)
    if upgraded is None or go_equal(upgraded, entries):
        return None
    return [
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": md.get("resourceVersion", "")},
    ]


def kubectl_migrate_managed_fields_patch(obj: dict[str, Any], ssa_manager: str = _KUBECTL) -> list[dict[str, Any]] | None:
    """What `kubectl apply --server-side` sends after its apply when the object was managed
    client-side: the Update managers owning the last-applied annotation are upgraded."""
    owners = find_fields_owners((obj.get("metadata") or {}).get("managedFields") or [], "Update", _LAST_APPLIED_PATH)
    names = {e.get("manager", "") for e in owners}
    return upgrade_managed_fields_patch(obj, names, ssa_manager)
