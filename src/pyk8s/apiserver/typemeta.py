"""An object's kind and apiVersion: what a write may carry, and what the store may hold.

A row stored under a resource's key prefix is that resource's storage kind in its storage
version, always: everything that reads it (GET, the watch cache, conversions, the
controllers) relies on it. Upstream gets this from its typed decoding (a body is decoded into
the endpoint's Go type, so a foreign kind fails to convert); ours are dicts, so the store
write checks it (`check_storable`), each patch type answers a changed kind as upstream does
(`after_patch`), and rows written before that check existed are reported at start and served
under their resource's kind so they can be read and deleted (`repair_cached`).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from ..api import errors as E
from ..api.resources import Registry, Resource

__all__ = ["check_storable", "after_patch", "decode_error", "repair_cached", "repair_stored"]

log = logging.getLogger(__name__)

# where upstream's scheme for built-in kinds is defined; its decode errors name it
_LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def decode_error(registry: Registry, res: Resource, api_version: str, kind: str) -> str:
    """What upstream's decoder says when a body of (api_version, kind) is decoded into res's kind:
    an unknown kind for that version, or a known kind that does not convert into res's."""
    group, version = _split(api_version)
    if not version or registry.by_kind(group, kind, version) is None:
        return f'no kind "{kind}" is registered for version "{api_version}" in scheme "{_LEGACY_SCHEME}"'
    internal = res.group.split(".")[0] if res.group else "core"  # the internal Go package's name
    return f"converting ({version}.{kind}) to ({internal}.{res.kind}): unknown conversion"


def check_storable(registry: Registry, res: Resource, obj: dict[str, Any]) -> None:
    """The last check before a row is written: res is the storage resource. A missing kind or
    apiVersion is the resource's (as upstream's decoder defaults them); another one is refused
    as upstream's decoder refuses it, whichever path built the object."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if kind == res.kind and api_version == res.api_version:
        return
    if kind in (None, "") and api_version in (None, "", res.api_version) \
            or api_version in (None, "") and kind == res.kind:
        obj["kind"] = res.kind
        obj["apiVersion"] = res.api_version
        return
    if not isinstance(kind, (str, type(None))) or not isinstance(api_version, (str, type(None))):
        raise E.new_bad_request("couldn't get version/kind; json parse error: json: cannot unmarshal into Go "
                                "struct field .kind of type string")  # (as handlers.check_object)
    av = api_version or res.api_version
    k = kind or res.kind
    raise E.new_bad_request(f'{k} in version "{_split(av)[1]}" cannot be handled as a {res.kind}: '
                            + decode_error(registry, res, av, k))


def after_patch(registry: Registry, res: Resource, patched: dict[str, Any], strategic: bool) -> dict[str, Any]:
    """A patched object's kind and apiVersion, as upstream's patcher treats them (res: the served resource).

    A strategic merge patch is applied to the typed object, whose kind and version are the
    endpoint's: a changed kind or apiVersion is ignored. JSON and merge patches are applied to
    the JSON, which is then decoded: a missing kind or version defaults to the endpoint's,
    another version of the same kind converts, anything else is refused (422, field `patch`)."""
    kind = patched.get("kind")
    api_version = patched.get("apiVersion")
    if kind == res.kind and api_version == res.api_version:
        return patched
    if strategic or (kind in (None, "") and api_version in (None, "")):
        patched["kind"] = res.kind
        patched["apiVersion"] = res.api_version
        return patched
    if kind in (None, ""):
        kind = patched["kind"] = res.kind
    if api_version in (None, ""):
        api_version = patched["apiVersion"] = res.api_version
    if isinstance(kind, str) and isinstance(api_version, str):
        group, version = _split(api_version)
        if kind == res.kind and group == res.group and registry.get(group, version, res.resource) is not None:
            if res.crd is not None:  # custom resources convert by apiVersion alone (strategy None)
                patched["apiVersion"] = res.api_version
                return patched
            from ..api.conversion import ConversionError, convert

            try:
                return convert(patched, res.api_version)
            except ConversionError:
                pass
        detail = decode_error(registry, res, api_version, kind)
    else:  # not strings: what Go's decoder says of the type meta
        detail = "json: cannot unmarshal into Go struct field .kind of type string"
    value = orjson.dumps(patched).decode()
    raise E.new_invalid("", "", [E.FieldError("patch", "Invalid", value, detail)])


async def repair_stored(registry: Registry, rest: Any) -> list[str]:
    """At start, once the CRDs are registered: load the custom resources' caches (the built-ins'
    are loaded already) and repair_cached every one."""
    for r in registry.all():
        if r.crd is not None:
            await rest.cache_for(r)
    return repair_cached(registry, rest.caches)


def repair_cached(registry: Registry, caches: Any) -> list[str]:
    """At start: report every cached row whose kind or apiVersion is not its resource's (written
    before the store checked them), and serve it under its resource's, so that it can be read,
    rewritten or deleted. The store keeps the row as it is until a client rewrites or deletes it.
    Returns the keys found."""
    found: list[str] = []
    seen: set[str] = set()
    for r in registry.all():
        if r.virtual:
            continue
        sr = registry.storage_resource(r)
        prefix = sr.key_prefix()
        if prefix in seen:
            continue
        seen.add(prefix)
        cache = caches.caches.get(prefix)
        if cache is None:
            continue
        kind, api_version = sr.kind, sr.api_version
        for key, obj in cache.objects.items():
            if obj.get("kind") == kind and obj.get("apiVersion") == api_version:
                continue
            log.warning("stored object %s has apiVersion %r and kind %r, not %s %s (written by an earlier "
                        "version that did not check them): served as %s %s; delete or replace it",
                        key, obj.get("apiVersion"), obj.get("kind"), api_version, kind, api_version, kind)
            obj["kind"] = kind
            obj["apiVersion"] = api_version
            found.append(key)
    return found
